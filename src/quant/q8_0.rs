//! Q8_0: 32 values per block, 8 bits each, one f16 scale; value = q·d. A
//! weight type and the activation type of Q4_0, Q5_0, Q8_0 and IQ4_NL.

use super::{c_f32_to_i32, c_roundf, f16_to_f32, f32_to_f16, Block, QK};
use crate::ggml_type::GgmlType;

/// ggml's `block_q8_0`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ8_0 {
    /// scale (f16)
    pub d: [u8; 2],
    /// quants (i8 stored as u8)
    pub qs: [u8; QK],
}
const _: () = assert!(std::mem::size_of::<BlockQ8_0>() == 34);
const _: () = assert!(std::mem::size_of::<BlockQ8_0>() == GgmlType::Q8_0.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ8_0 {
    const TYPE: GgmlType = GgmlType::Q8_0;
}

impl BlockQ8_0 {
    #[inline]
    pub fn q(&self, j: usize) -> i8 {
        self.qs[j] as i8
    }
}

pub fn dequantize_row(blocks: &[BlockQ8_0], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK)) {
        let d = f16_to_f32(b.d);
        for (j, v) in y.iter_mut().enumerate() {
            *v = b.q(j) as i32 as f32 * d;
        }
    }
}

/// Scale and inverse scale of a block with absolute maximum `amax`
/// (shared with Q8_1 and the SIMD activation quantizers).
#[inline]
pub fn scale_of(amax: f32) -> (f32, f32) {
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    (d, id)
}

/// ggml's `quantize_row_q8_0_ref`; also the scalar activation quantizer.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ8_0]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK)) {
        let amax = x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        let (d, id) = scale_of(amax);
        b.d = f32_to_f16(d);
        for (q, &v) in b.qs.iter_mut().zip(x) {
            *q = c_f32_to_i32(c_roundf(v * id)) as u8;
        }
    }
}
