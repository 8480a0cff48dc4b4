//! Q6_K: super-blocks of 256 in 16 groups of 16; 6-bit quants (4 low bits in
//! `ql`, 2 high bits in `qh`), signed 8-bit group scales, f16 `d`;
//! value = d·sc·(q − 32).

use super::k_helpers::{make_qx_quants, KBlock, GROUP_MAX_EPS};
use super::{f16_to_f32, f32_to_f16, nearest_int, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `block_q6_K`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ6K {
    /// low nibbles: half h, byte 64·h + l (l < 64): low nibble element
    /// 128·h + l, high nibble element 128·h + 64 + l
    pub ql: [u8; QK_K / 2],
    /// high 2 bits: half h, byte 32·h + l: bits 2s..2s+2 → element 128·h + 32·s + l
    pub qh: [u8; QK_K / 4],
    /// group scales (i8)
    pub scales: [u8; QK_K / 16],
    pub d: [u8; 2],
}
const _: () = assert!(std::mem::size_of::<BlockQ6K>() == 210);
const _: () = assert!(std::mem::size_of::<BlockQ6K>() == GgmlType::Q6_K.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ6K {
    const TYPE: GgmlType = GgmlType::Q6_K;
}

impl BlockQ6K {
    /// The 256 quants (-32..=31) in element order.
    #[inline]
    pub fn quants(&self) -> [i8; QK_K] {
        let mut q = [0i8; QK_K];
        for h in 0..2 {
            let ql = &self.ql[64 * h..64 * h + 64];
            let qh = &self.qh[32 * h..32 * h + 32];
            let y = &mut q[128 * h..128 * h + 128];
            for l in 0..32 {
                y[l] = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i8 - 32;
                y[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i8 - 32;
                y[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8 - 32;
                y[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8 - 32;
            }
        }
        q
    }

    pub fn unpack(&self) -> KBlock {
        let mut k = KBlock::ZERO;
        k.q = self.quants();
        for (d, &s) in k.scales.iter_mut().zip(&self.scales) {
            *d = s as i8 as i16;
        }
        k.d = f16_to_f32(self.d);
        k
    }
}

pub fn dequantize_row(blocks: &[BlockQ6K], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        let q = b.quants();
        for g in 0..16 {
            let sc = b.scales[g] as i8 as f32;
            for i in 16 * g..16 * g + 16 {
                y[i] = d * sc * q[i] as f32;
            }
        }
    }
}

/// ggml's `quantize_row_q6_K_ref`.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ6K]) {
    quantize_row_impl(x, None, blocks)
}

/// ggml's `quantize_row_q6_K_impl`: with an importance matrix's weights for
/// the row (`qw`, one per element), the groups' scale search weighs by them.
pub fn quantize_row_impl(x: &[f32], qw: Option<&[f32]>, blocks: &mut [BlockQ6K]) {
    for (i, (b, x)) in blocks.iter_mut().zip(x.chunks_exact(QK_K)).enumerate() {
        let mut l = [0i8; QK_K];
        let mut scales = [0.0f32; 16];
        let mut max_scale = 0.0f32;
        let mut max_abs_scale = 0.0f32;
        for ib in 0..16 {
            let w = qw.map(|q| &q[QK_K * i + 16 * ib..QK_K * i + 16 * ib + 16]);
            let scale = make_qx_quants(16, 32, &x[16 * ib..], &mut l[16 * ib..16 * ib + 16], 1, w);
            scales[ib] = scale;
            if scale.abs() > max_abs_scale {
                max_abs_scale = scale.abs();
                max_scale = scale;
            }
        }
        if max_abs_scale < GROUP_MAX_EPS {
            b.ql = [0; QK_K / 2];
            b.qh = [0; QK_K / 4];
            b.scales = [0; 16];
            b.d = f32_to_f16(0.0);
            continue;
        }
        let iscale = -128.0 / max_scale;
        b.d = f32_to_f16(1.0 / iscale);
        for (bs, &s) in b.scales.iter_mut().zip(&scales) {
            *bs = nearest_int(iscale * s).min(127) as i8 as u8;
        }
        for j in 0..16 {
            let d = f16_to_f32(b.d) * b.scales[j] as i8 as f32;
            if d == 0.0 {
                continue;
            }
            for ii in 0..16 {
                let q = nearest_int(x[16 * j + ii] / d).clamp(-32, 31);
                l[16 * j + ii] = (q + 32) as i8;
            }
        }
        for h in 0..2 {
            for i in 0..32 {
                let j = 128 * h + i;
                let (q1, q2, q3, q4) = (l[j] as u8, l[j + 32] as u8, l[j + 64] as u8, l[j + 96] as u8);
                b.ql[64 * h + i] = (q1 & 0xF) | ((q3 & 0xF) << 4);
                b.ql[64 * h + i + 32] = (q2 & 0xF) | ((q4 & 0xF) << 4);
                b.qh[32 * h + i] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
            }
        }
    }
}
