//! Q2_K: super-blocks of 256 in 16 groups of 16; 2-bit quants, a 4-bit scale
//! and 4-bit min per group, f16 super-scales `d` and `dmin`;
//! value = d·sc·q − dmin·m.

use super::k_helpers::{imatrix_weights, make_qkx2_quants, make_qkx3_quants, make_qp_quants, sum_sq, KBlock};
use super::{f16_to_f32, f32_to_f16, nearest_int, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `block_q2_K`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ2K {
    /// per group: low nibble scale, high nibble min
    pub scales: [u8; QK_K / 16],
    /// 2-bit quants: byte 32·h + l holds elements 128·h + l + 32·s at bits 2s
    pub qs: [u8; QK_K / 4],
    pub d: [u8; 2],
    pub dmin: [u8; 2],
}
const _: () = assert!(std::mem::size_of::<BlockQ2K>() == 84);
const _: () = assert!(std::mem::size_of::<BlockQ2K>() == GgmlType::Q2_K.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ2K {
    const TYPE: GgmlType = GgmlType::Q2_K;
}

impl BlockQ2K {
    /// The 256 quants (0..=3) in element order.
    #[inline]
    pub fn quants(&self) -> [i8; QK_K] {
        let mut q = [0i8; QK_K];
        for h in 0..2 {
            for s in 0..4 {
                for l in 0..32 {
                    q[128 * h + 32 * s + l] = ((self.qs[32 * h + l] >> (2 * s)) & 3) as i8;
                }
            }
        }
        q
    }

    pub fn unpack(&self) -> KBlock {
        let mut k = KBlock::ZERO;
        k.q = self.quants();
        for g in 0..16 {
            k.scales[g] = (self.scales[g] & 0xF) as i16;
            k.mins[g] = (self.scales[g] >> 4) as i16;
        }
        k.d = f16_to_f32(self.d);
        k.dmin = f16_to_f32(self.dmin);
        k
    }
}

pub fn dequantize_row(blocks: &[BlockQ2K], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        let min = f16_to_f32(b.dmin);
        let q = b.quants();
        for g in 0..16 {
            let sc = b.scales[g];
            let dl = d * (sc & 0xF) as f32;
            let ml = min * (sc >> 4) as f32;
            for i in 16 * g..16 * g + 16 {
                y[i] = dl * q[i] as f32 - ml;
            }
        }
    }
}

/// ggml's `quantize_row_q2_K_ref`.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ2K]) {
    const Q4SCALE: f32 = 15.0;
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK_K)) {
        let mut l = [0u8; QK_K];
        let mut l_aux = [0u8; 16];
        let mut weights = [0.0f32; 16];
        let mut mins = [0.0f32; 16];
        let mut scales = [0.0f32; 16];
        let mut max_scale = 0.0f32;
        let mut max_min = 0.0f32;
        for j in 0..16 {
            let xs = &x[16 * j..16 * j + 16];
            for (w, &v) in weights.iter_mut().zip(xs) {
                *w = v.abs();
            }
            let (s, m) =
                make_qkx2_quants(16, 3, xs, &weights, &mut l[16 * j..16 * j + 16], &mut l_aux, -0.5, 0.1, 15, true);
            scales[j] = s;
            mins[j] = m;
            if s > max_scale {
                max_scale = s;
            }
            if m > max_min {
                max_min = m;
            }
        }
        if max_scale > 0.0 {
            let iscale = Q4SCALE / max_scale;
            for (bs, &s) in b.scales.iter_mut().zip(&scales) {
                *bs = nearest_int(iscale * s) as u8;
            }
            b.d = f32_to_f16(max_scale / Q4SCALE);
        } else {
            b.scales = [0; 16];
            b.d = f32_to_f16(0.0);
        }
        if max_min > 0.0 {
            let iscale = Q4SCALE / max_min;
            for (bs, &m) in b.scales.iter_mut().zip(&mins) {
                let lm = nearest_int(iscale * m);
                *bs |= (lm << 4) as u8;
            }
            b.dmin = f32_to_f16(max_min / Q4SCALE);
        } else {
            b.dmin = f32_to_f16(0.0);
        }
        for j in 0..16 {
            let d = f16_to_f32(b.d) * (b.scales[j] & 0xF) as f32;
            if d == 0.0 {
                continue;
            }
            let dm = f16_to_f32(b.dmin) * (b.scales[j] >> 4) as f32;
            for ii in 0..16 {
                let q = nearest_int((x[16 * j + ii] + dm) / d);
                l[16 * j + ii] = q.clamp(0, 3) as u8;
            }
        }
        pack_quants(b, &l);
    }
}

/// ggml's `quantize_row_q2_K_impl` with an importance matrix's weights `qw`
/// (one per element of the row `x`): each group of 16 gets its scale and
/// minimum from `make_qkx3_quants` with weights `qw·sqrt(σ² + x²)`, and the
/// 4-bit group scales and minimums come from `make_qp_quants`.
pub fn quantize_row_impl(x: &[f32], qw: &[f32], blocks: &mut [BlockQ2K]) {
    for (i, (b, x)) in blocks.iter_mut().zip(x.chunks_exact(QK_K)).enumerate() {
        let qw = &qw[QK_K * i..QK_K * i + QK_K];
        let mut l = [0u8; QK_K];
        let mut l_aux = [0u8; 16];
        let mut weight = [0.0f32; 16];
        let (mut mins, mut scales, mut sw) = ([0.0f32; 16], [0.0f32; 16], [0.0f32; 16]);
        let (mut ls, mut lm) = ([0u8; 16], [0u8; 16]);
        let sigma2 = sum_sq(x) / QK_K as f32;
        for j in 0..16 {
            let xs = &x[16 * j..16 * j + 16];
            imatrix_weights(&qw[16 * j..16 * j + 16], xs, sigma2, &mut weight);
            for &w in &weight {
                sw[j] += w;
            }
            let (s, m) = make_qkx3_quants(
                16,
                3,
                xs,
                Some(&weight),
                &mut l[16 * j..16 * j + 16],
                &mut l_aux,
                -0.9,
                0.05,
                36,
                false,
            );
            scales[j] = s;
            mins[j] = m;
        }
        let dm = make_qp_quants(16, 15, &scales, &mut ls, &sw);
        let mm = make_qp_quants(16, 15, &mins, &mut lm, &sw);
        b.d = f32_to_f16(dm);
        b.dmin = f32_to_f16(mm);
        let (dm, mm) = (f16_to_f32(b.d), f16_to_f32(b.dmin));
        for j in 0..16 {
            b.scales[j] = ls[j] | (lm[j] << 4);
        }
        for j in 0..16 {
            let d = dm * (b.scales[j] & 0xF) as f32;
            if d == 0.0 {
                continue;
            }
            let m = mm * (b.scales[j] >> 4) as f32;
            for ii in 0..16 {
                let q = nearest_int((x[16 * j + ii] + m) / d);
                l[16 * j + ii] = q.clamp(0, 3) as u8;
            }
        }
        pack_quants(b, &l);
    }
}

/// Packs the 256 2-bit quants: byte `32h + i` holds elements `128h + i +
/// 32k` in its bits `2k`.
fn pack_quants(b: &mut BlockQ2K, l: &[u8; QK_K]) {
    for h in 0..2 {
        for i in 0..32 {
            let j = 128 * h + i;
            b.qs[32 * h + i] = l[j] | (l[j + 32] << 2) | (l[j + 64] << 4) | (l[j + 96] << 6);
        }
    }
}
