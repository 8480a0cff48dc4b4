//! Q2_0: 64 weights per block, 2 bits each, one f16 scale (the largest
//! magnitude); value = (q - 1)·d, q in 0..=3 (so -d, 0, d, 2d).

use super::{c_f32_to_i32, c_roundf, f16_to_f32, f32_to_f16, Block};
use crate::ggml_type::GgmlType;

/// Weights per block (`QK2_0`).
pub const QK2_0: usize = 64;

/// ggml's `block_q2_0`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ2_0 {
    /// scale (f16)
    pub d: [u8; 2],
    /// bits `2(j % 4)..` of byte `j / 4` are element j's q
    pub qs: [u8; QK2_0 / 4],
}
const _: () = assert!(std::mem::size_of::<BlockQ2_0>() == 18);
const _: () = assert!(std::mem::size_of::<BlockQ2_0>() == GgmlType::Q2_0.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ2_0 {
    const TYPE: GgmlType = GgmlType::Q2_0;
}

impl BlockQ2_0 {
    /// Element j's value in units of d: q - 1, in -1..=2.
    #[inline]
    pub fn value(&self, j: usize) -> i32 {
        ((self.qs[j / 4] >> (2 * (j % 4))) & 3) as i32 - 1
    }
}

/// ggml's `dequantize_row_q2_0`.
pub fn dequantize_row(blocks: &[BlockQ2_0], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK2_0)) {
        let d = f16_to_f32(b.d);
        for (j, v) in y.iter_mut().enumerate() {
            *v = b.value(j) as f32 * d;
        }
    }
}

/// ggml's `quantize_row_q2_0_ref`: d = max |x|; q = round(x / d) + 1
/// clamped to 0..=3 (`(int)roundf`: x86's truncating conversion, so NaN
/// gives 0).
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ2_0]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK2_0)) {
        let amax = x.iter().fold(0.0f32, |m, v| if v.abs() > m { v.abs() } else { m });
        let d = amax;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        b.d = f32_to_f16(d);
        b.qs = [0; QK2_0 / 4];
        for (j, &w) in x.iter().enumerate() {
            let q = c_f32_to_i32(c_roundf(w * id)).wrapping_add(1).clamp(0, 3);
            b.qs[j / 4] |= (q as u8) << (2 * (j % 4));
        }
    }
}
