//! Q8_1: Q8_0 plus `s = d·Σq` (f16); the activation type of Q4_1 and Q5_1,
//! whose minimum term needs the block sum.

use super::{c_f32_to_i32, c_roundf, f16_to_f32, f32_to_f16, q8_0, Block, QK};
use crate::ggml_type::GgmlType;

/// ggml's `block_q8_1`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ8_1 {
    /// scale (f16)
    pub d: [u8; 2],
    /// d · Σ qs (f16)
    pub s: [u8; 2],
    /// quants (i8 stored as u8)
    pub qs: [u8; QK],
}
const _: () = assert!(std::mem::size_of::<BlockQ8_1>() == 36);
const _: () = assert!(std::mem::size_of::<BlockQ8_1>() == GgmlType::Q8_1.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ8_1 {
    const TYPE: GgmlType = GgmlType::Q8_1;
}

/// ggml has no `dequantize_row_q8_1`; this is the obvious one (q·d), used
/// only by tests.
pub fn dequantize_row(blocks: &[BlockQ8_1], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK)) {
        let d = f16_to_f32(b.d);
        for (j, v) in y.iter_mut().enumerate() {
            *v = b.qs[j] as i8 as i32 as f32 * d;
        }
    }
}

/// The activation quantizer (scalar definition of the SIMD ones): ggml-cpu's
/// x86 `quantize_row_q8_1` (see `q8_0::act_scale_of`), with the block sum
/// `s = d·Σ` rounded to f16, where Σ adds the converted i32 values before
/// saturation, wrapping (as `hsum_i32_8` does: it differs from Σq only for
/// blocks whose values overflowed, e.g. denormal-scale blocks).
pub fn quantize_row_act(x: &[f32], blocks: &mut [BlockQ8_1]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK)) {
        let amax = x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        let (d, id) = q8_0::act_scale_of(amax);
        b.d = f32_to_f16(d);
        let mut sum = 0i32;
        for (q, &v) in b.qs.iter_mut().zip(x) {
            let c = q8_0::act_convert(v, id);
            *q = q8_0::act_saturate(c) as u8;
            sum = sum.wrapping_add(c);
        }
        b.s = f32_to_f16(d * sum as f32);
    }
}

/// ggml's `quantize_row_q8_1_ref`.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ8_1]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK)) {
        let amax = x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        let (d, id) = q8_0::scale_of(amax);
        b.d = f32_to_f16(d);
        let mut sum = 0i32;
        for (q, &v) in b.qs.iter_mut().zip(x) {
            let qi = c_f32_to_i32(c_roundf(v * id)) as i8;
            *q = qi as u8;
            sum += qi as i32;
        }
        b.s = f32_to_f16(sum as f32 * d);
    }
}
