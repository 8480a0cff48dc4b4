//! Q4_1: 32 weights per block, 4 bits each, f16 scale and f16 minimum;
//! value = q·d + m.

use super::k_helpers::{imatrix_weights, make_qkx3_quants, sum_sq};
use super::{c_f32_to_i32, f16_to_f32, f32_to_f16, Block, QK};
use crate::ggml_type::GgmlType;

/// ggml's `block_q4_1`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ4_1 {
    /// scale (f16)
    pub d: [u8; 2],
    /// minimum (f16)
    pub m: [u8; 2],
    /// nibbles: low nibble of `qs[j]` is element j, high nibble element j+16
    pub qs: [u8; QK / 2],
}
const _: () = assert!(std::mem::size_of::<BlockQ4_1>() == 20);
const _: () = assert!(std::mem::size_of::<BlockQ4_1>() == GgmlType::Q4_1.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ4_1 {
    const TYPE: GgmlType = GgmlType::Q4_1;
}

impl BlockQ4_1 {
    /// The 32 unsigned quants (0..=15), in element order.
    #[inline]
    pub fn unpack(&self) -> [u8; QK] {
        let mut q = [0u8; QK];
        for j in 0..QK / 2 {
            q[j] = self.qs[j] & 0x0F;
            q[j + QK / 2] = self.qs[j] >> 4;
        }
        q
    }
}

pub fn dequantize_row(blocks: &[BlockQ4_1], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK)) {
        let d = f16_to_f32(b.d);
        let m = f16_to_f32(b.m);
        for (v, q) in y.iter_mut().zip(b.unpack()) {
            *v = q as f32 * d + m;
        }
    }
}

/// ggml's `quantize_row_q4_1_ref`.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ4_1]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK)) {
        let mut min = f32::MAX;
        let mut max = -f32::MAX;
        for &v in x {
            if v < min {
                min = v;
            }
            if v > max {
                max = v;
            }
        }
        let d = (max - min) / 15.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        b.d = f32_to_f16(d);
        b.m = f32_to_f16(min);
        for j in 0..QK / 2 {
            let x0 = (x[j] - min) * id;
            let x1 = (x[j + QK / 2] - min) * id;
            let xi0 = (c_f32_to_i32(x0 + 0.5) as i8).min(15) as u8;
            let xi1 = (c_f32_to_i32(x1 + 0.5) as i8).min(15) as u8;
            b.qs[j] = xi0 | (xi1 << 4);
        }
    }
}

/// ggml's `quantize_row_q4_1_impl`: one row `x` with an importance
/// matrix's weights `qw`; each block's scale and minimum come from
/// `make_qkx3_quants` with weights `qw·sqrt(σ² + x²)`.
pub fn quantize_row_impl(x: &[f32], qw: &[f32], blocks: &mut [BlockQ4_1]) {
    let sigma2 = sum_sq(x) / x.len() as f32;
    let mut weight = [0.0f32; QK];
    let (mut l, mut l_aux) = ([0u8; QK], [0u8; QK]);
    for (ib, (b, xb)) in blocks.iter_mut().zip(x.chunks_exact(QK)).enumerate() {
        imatrix_weights(&qw[QK * ib..QK * ib + QK], xb, sigma2, &mut weight);
        let (d, the_min) = make_qkx3_quants(QK, 15, xb, Some(&weight), &mut l, &mut l_aux, -0.9, 0.05, 36, false);
        b.d = f32_to_f16(d);
        b.m = f32_to_f16(-the_min);
        for j in 0..QK / 2 {
            b.qs[j] = l[j] | (l[j + QK / 2] << 4);
        }
    }
}
