//! Q3_K: super-blocks of 256 in 16 groups of 16; 3-bit quants (2 low bits in
//! `qs`, the high bit in `hmask`), signed 6-bit group scales, f16 `d`;
//! value = d·(sc − 32)·(q − 4).

use super::k_helpers::{imatrix_weights, make_q3_quants, make_qx_quants, sum_sq, KBlock};
use super::{f16_to_f32, f32_to_f16, nearest_int, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `block_q3_K`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ3K {
    /// high bits: bit s of byte l is the high bit of element 32·s + l
    pub hmask: [u8; QK_K / 8],
    /// 2 low bits, packed as in Q2_K
    pub qs: [u8; QK_K / 4],
    /// 16 6-bit scales, packed in 12 bytes
    pub scales: [u8; 12],
    pub d: [u8; 2],
}
const _: () = assert!(std::mem::size_of::<BlockQ3K>() == 110);
const _: () = assert!(std::mem::size_of::<BlockQ3K>() == GgmlType::Q3_K.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ3K {
    const TYPE: GgmlType = GgmlType::Q3_K;
}

impl BlockQ3K {
    /// The 16 group scales, -32..=31.
    #[inline]
    pub fn group_scales(&self) -> [i8; 16] {
        let s = &self.scales;
        let mut out = [0i8; 16];
        for (j, o) in out.iter_mut().enumerate() {
            let low = if j < 8 { s[j] & 0xF } else { s[j - 8] >> 4 };
            let high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
            *o = (low | (high << 4)) as i8 - 32;
        }
        out
    }

    /// The 256 quants (-4..=3) in element order.
    #[inline]
    pub fn quants(&self) -> [i8; QK_K] {
        let mut q = [0i8; QK_K];
        for h in 0..2 {
            for s in 0..4 {
                let m = 1u8 << (4 * h + s);
                for l in 0..32 {
                    let low = ((self.qs[32 * h + l] >> (2 * s)) & 3) as i8;
                    let hi = if self.hmask[l] & m != 0 { 0 } else { 4 };
                    q[128 * h + 32 * s + l] = low - hi;
                }
            }
        }
        q
    }

    pub fn unpack(&self) -> KBlock {
        let mut k = KBlock::ZERO;
        k.q = self.quants();
        for (d, s) in k.scales.iter_mut().zip(self.group_scales()) {
            *d = s as i16;
        }
        k.d = f16_to_f32(self.d);
        k
    }
}

pub fn dequantize_row(blocks: &[BlockQ3K], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d_all = f16_to_f32(b.d);
        let q = b.quants();
        let sc = b.group_scales();
        for ((yg, qg), &s) in y.chunks_exact_mut(16).zip(q.chunks_exact(16)).zip(&sc) {
            let dl = d_all * s as f32;
            for (yi, &qi) in yg.iter_mut().zip(qg) {
                *yi = dl * qi as f32;
            }
        }
    }
}

/// ggml's `quantize_row_q3_K_ref`.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ3K]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK_K)) {
        let mut l = [0i8; QK_K];
        let mut scales = [0.0f32; 16];
        let mut max_scale = 0.0f32;
        let mut amax = 0.0f32;
        for (j, sj) in scales.iter_mut().enumerate() {
            *sj = make_q3_quants(16, 4, &x[16 * j..], &mut l[16 * j..16 * j + 16], true);
            let scale = sj.abs();
            if scale > amax {
                amax = scale;
                max_scale = *sj;
            }
        }
        b.scales = [0; 12];
        if max_scale != 0.0 {
            let iscale = -32.0 / max_scale;
            for (j, &s) in scales.iter().enumerate() {
                let mut lv = nearest_int(iscale * s) as i8 as i32;
                lv = lv.clamp(-32, 31) + 32;
                let lv = lv as i8;
                if j < 8 {
                    b.scales[j] = (lv & 0xF) as u8;
                } else {
                    b.scales[j - 8] |= ((lv & 0xF) << 4) as u8;
                }
                let hi = lv >> 4;
                b.scales[j % 4 + 8] |= (hi << (2 * (j / 4))) as u8;
            }
            b.d = f32_to_f16(1.0 / iscale);
        } else {
            b.d = f32_to_f16(0.0);
        }
        requantize_and_pack(b, x, &mut l);
    }
}

/// ggml's `quantize_row_q3_K_impl` with an importance matrix's weights `qw`
/// (one per element of the row `x`): each group of 16 gets its scale from
/// `make_qx_quants` with weights `qw·sqrt(σ² + x²)`, and the 6-bit group
/// scales come from `make_qx_quants` weighted by the groups' weight sums.
pub fn quantize_row_impl(x: &[f32], qw: &[f32], blocks: &mut [BlockQ3K]) {
    for (i, (b, x)) in blocks.iter_mut().zip(x.chunks_exact(QK_K)).enumerate() {
        let qw = &qw[QK_K * i..QK_K * i + QK_K];
        let mut l = [0i8; QK_K];
        let mut weight = [0.0f32; 16];
        let (mut scales, mut sw) = ([0.0f32; 16], [0.0f32; 16]);
        let mut ls = [0i8; 16];
        let sigma2 = 2.0 * sum_sq(x) / QK_K as f32;
        for j in 0..16 {
            let xs = &x[16 * j..16 * j + 16];
            imatrix_weights(&qw[16 * j..16 * j + 16], xs, sigma2, &mut weight);
            let mut sumw = 0.0f32;
            for &w in &weight {
                sumw += w;
            }
            sw[j] = sumw;
            scales[j] = make_qx_quants(16, 4, xs, &mut l[16 * j..16 * j + 16], 1, Some(&weight));
        }
        b.scales = [0; 12];
        let d_block = make_qx_quants(16, 32, &scales, &mut ls, 1, Some(&sw));
        for (j, &lj) in ls.iter().enumerate() {
            let lv = lj as u8;
            if j < 8 {
                b.scales[j] = lv & 0xF;
            } else {
                b.scales[j - 8] |= (lv & 0xF) << 4;
            }
            b.scales[j % 4 + 8] |= (lv >> 4) << (2 * (j / 4));
        }
        b.d = f32_to_f16(d_block);
        requantize_and_pack(b, x, &mut l);
    }
}

/// The quantizers' common end: every group's quants again from the packed
/// scales (-4..=3, stored +4), then the high bits into `hmask` and the low
/// two bits into `qs`.
fn requantize_and_pack(b: &mut BlockQ3K, x: &[f32], l: &mut [i8; QK_K]) {
    let sc = b.group_scales();
    for j in 0..16 {
        let d = f16_to_f32(b.d) * sc[j] as f32;
        if d == 0.0 {
            continue;
        }
        for ii in 0..16 {
            let q = nearest_int(x[16 * j + ii] / d).clamp(-4, 3);
            l[16 * j + ii] = (q + 4) as i8;
        }
    }
    b.hmask = [0; QK_K / 8];
    let mut m = 0usize;
    let mut hm = 1u8;
    for lj in l.iter_mut() {
        if *lj > 3 {
            b.hmask[m] |= hm;
            *lj -= 4;
        }
        m += 1;
        if m == QK_K / 8 {
            m = 0;
            hm = hm.wrapping_shl(1);
        }
    }
    for h in 0..2 {
        for i in 0..32 {
            let j = 128 * h + i;
            b.qs[32 * h + i] = (l[j] | (l[j + 32] << 2) | (l[j + 64] << 4) | (l[j + 96] << 6)) as u8;
        }
    }
}
