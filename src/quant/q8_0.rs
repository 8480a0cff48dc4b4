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

/// Scale and inverse scale of ggml-cpu's activation quantizer on x86
/// (`quantize_row_q8_0` / `_q8_1` in arch/x86/quants.c, which the reference
/// library runs on the CPUs minfer is measured on): `d = amax/127` and
/// `id = 127/amax`, not `1/d` as in the `_ref` quantizer.
#[inline]
pub fn act_scale_of(amax: f32) -> (f32, f32) {
    (amax / 127.0, if amax != 0.0 { 127.0 / amax } else { 0.0 })
}

/// One activation as ggml-cpu's x86 quantizer converts it: `x·id` rounded
/// half to even (`_mm256_round_ps`), then converted as `cvtps2dq` does
/// (anything outside i32, NaN included, becomes i32::MIN).
#[inline]
#[allow(clippy::neg_cmp_op_on_partial_ord, reason = "`!(x < max)` is meant: it is true for NaN too")]
pub fn act_convert(v: f32, id: f32) -> i32 {
    let r = (v * id).round_ties_even();
    if !(r.abs() < 2_147_483_648.0) {
        return i32::MIN;
    }
    r as i32
}

/// The stored quant: the converted value saturated to i8 (the packs
/// instructions).
#[inline]
pub fn act_saturate(c: i32) -> i8 {
    c.clamp(-128, 127) as i8
}

/// The activation quantizer (scalar definition of the SIMD ones): ggml-cpu's
/// x86 `quantize_row_q8_0`, so that int8 dots see the reference's inputs.
pub fn quantize_row_act(x: &[f32], blocks: &mut [BlockQ8_0]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK)) {
        let amax = x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        let (d, id) = act_scale_of(amax);
        b.d = f32_to_f16(d);
        for (q, &v) in b.qs.iter_mut().zip(x) {
            *q = act_saturate(act_convert(v, id)) as u8;
        }
    }
}

/// ggml's `quantize_row_q8_0_ref` (weights: llama_model_quantize).
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
