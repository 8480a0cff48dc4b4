//! Q1_0: 128 weights per block, one sign bit each, one f16 scale (the mean
//! magnitude); value = ±d (bit set: +d).

use super::{f16_to_f32, f32_to_f16, Block};
use crate::ggml_type::GgmlType;

/// Weights per block (`QK1_0`).
pub const QK1_0: usize = 128;

/// ggml's `block_q1_0`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ1_0 {
    /// scale (f16)
    pub d: [u8; 2],
    /// bit `j % 8` of byte `j / 8` is element j's sign (1: +)
    pub qs: [u8; QK1_0 / 8],
}
const _: () = assert!(std::mem::size_of::<BlockQ1_0>() == 18);
const _: () = assert!(std::mem::size_of::<BlockQ1_0>() == GgmlType::Q1_0.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ1_0 {
    const TYPE: GgmlType = GgmlType::Q1_0;
}

impl BlockQ1_0 {
    /// Whether element `j` is positive.
    #[inline]
    pub fn positive(&self, j: usize) -> bool {
        (self.qs[j / 8] >> (j % 8)) & 1 == 1
    }
}

/// ggml's `dequantize_row_q1_0`.
pub fn dequantize_row(blocks: &[BlockQ1_0], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK1_0)) {
        let d = f16_to_f32(b.d);
        for (j, v) in y.iter_mut().enumerate() {
            *v = if b.positive(j) { d } else { -d };
        }
    }
}

/// ggml's `quantize_row_q1_0_ref`: d = Σ|x| / 128 (summed in order), the
/// sign bit set for x ≥ 0.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ1_0]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK1_0)) {
        let sum_abs = x.iter().fold(0.0f32, |s, v| s + v.abs());
        b.d = f32_to_f16(sum_abs / QK1_0 as f32);
        b.qs = [0; QK1_0 / 8];
        for (j, &v) in x.iter().enumerate() {
            if v >= 0.0 {
                b.qs[j / 8] |= 1 << (j % 8);
            }
        }
    }
}
