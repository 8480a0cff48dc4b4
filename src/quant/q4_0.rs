//! Q4_0: 32 weights per block, 4 bits each, one f16 scale; value = (q - 8)·d.

use super::k_helpers::{imatrix_weights, make_qx_quants, sum_sq};
use super::{c_f32_to_i32, f16_to_f32, f32_to_f16, Block, QK};
use crate::ggml_type::GgmlType;

/// ggml's `block_q4_0`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ4_0 {
    /// scale (f16)
    pub d: [u8; 2],
    /// nibbles: low nibble of `qs[j]` is element j, high nibble element j+16
    pub qs: [u8; QK / 2],
}
const _: () = assert!(std::mem::size_of::<BlockQ4_0>() == 18);
const _: () = assert!(std::mem::size_of::<BlockQ4_0>() == GgmlType::Q4_0.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ4_0 {
    const TYPE: GgmlType = GgmlType::Q4_0;
}

impl BlockQ4_0 {
    /// The 32 signed quants (-8..=7), in element order.
    #[inline]
    pub fn unpack(&self) -> [i8; QK] {
        let mut q = [0i8; QK];
        for j in 0..QK / 2 {
            q[j] = (self.qs[j] & 0x0F) as i8 - 8;
            q[j + QK / 2] = (self.qs[j] >> 4) as i8 - 8;
        }
        q
    }
}

pub fn dequantize_row(blocks: &[BlockQ4_0], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK)) {
        let d = f16_to_f32(b.d);
        for (v, q) in y.iter_mut().zip(b.unpack()) {
            *v = q as i32 as f32 * d;
        }
    }
}

/// ggml's `quantize_row_q4_0_ref`.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ4_0]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK)) {
        let mut amax = 0.0f32;
        let mut max = 0.0f32;
        for &v in x {
            if amax < v.abs() {
                amax = v.abs();
                max = v;
            }
        }
        let d = max / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        b.d = f32_to_f16(d);
        for j in 0..QK / 2 {
            let x0 = x[j] * id;
            let x1 = x[j + QK / 2] * id;
            let xi0 = (c_f32_to_i32(x0 + 8.5) as i8).min(15) as u8;
            let xi1 = (c_f32_to_i32(x1 + 8.5) as i8).min(15) as u8;
            b.qs[j] = xi0 | (xi1 << 4);
        }
    }
}

/// ggml's `quantize_row_q4_0_impl`: one row `x` with an importance
/// matrix's weights `qw` (one per element); the scale of each block of 32 is
/// searched with weights `qw·sqrt(σ² + x²)`, σ² the row's mean square.
pub fn quantize_row_impl(x: &[f32], qw: &[f32], blocks: &mut [BlockQ4_0]) {
    let sigma2 = sum_sq(x) / x.len() as f32;
    let mut weight = [0.0f32; QK];
    let mut l = [0i8; QK];
    for (ib, (b, xb)) in blocks.iter_mut().zip(x.chunks_exact(QK)).enumerate() {
        imatrix_weights(&qw[QK * ib..QK * ib + QK], xb, sigma2, &mut weight);
        let d = make_qx_quants(QK, 8, xb, &mut l, 1, Some(&weight));
        b.d = f32_to_f16(d);
        for j in 0..QK / 2 {
            b.qs[j] = (l[j] as u8) | ((l[j + QK / 2] as u8) << 4);
        }
    }
}
