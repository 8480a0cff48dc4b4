//! Q5_K: as Q4_K with a fifth bit per quant in `qh`; value = d·sc·q − dmin·m,
//! q in 0..=31.

use super::k_helpers::{get_scale_min_k4, quantize_kx_superblock, quantize_kx_superblock_impl, KBlock};
use super::{f16_to_f32, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `block_q5_K`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ5K {
    pub d: [u8; 2],
    pub dmin: [u8; 2],
    /// 8 6-bit scales and 8 6-bit mins, packed (see `get_scale_min_k4`)
    pub scales: [u8; 12],
    /// fifth bits: bit 2c of byte l → element 64·c + l, bit 2c+1 → 64·c + 32 + l
    pub qh: [u8; QK_K / 8],
    /// low nibbles, packed as in Q4_K
    pub qs: [u8; QK_K / 2],
}
const _: () = assert!(std::mem::size_of::<BlockQ5K>() == 176);
const _: () = assert!(std::mem::size_of::<BlockQ5K>() == GgmlType::Q5_K.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ5K {
    const TYPE: GgmlType = GgmlType::Q5_K;
}

impl BlockQ5K {
    /// The 256 quants (0..=31) in element order.
    #[inline]
    pub fn quants(&self) -> [i8; QK_K] {
        let mut q = [0i8; QK_K];
        for c in 0..4 {
            for l in 0..32 {
                let b = self.qs[32 * c + l];
                let h = self.qh[l];
                q[64 * c + l] = ((b & 0xF) | (((h >> (2 * c)) & 1) << 4)) as i8;
                q[64 * c + 32 + l] = ((b >> 4) | (((h >> (2 * c + 1)) & 1) << 4)) as i8;
            }
        }
        q
    }

    pub fn unpack(&self) -> KBlock {
        let mut k = KBlock::ZERO;
        k.q = self.quants();
        for j in 0..8 {
            let (s, m) = get_scale_min_k4(j, &self.scales);
            k.scales[2 * j] = s as i16;
            k.scales[2 * j + 1] = s as i16;
            k.mins[2 * j] = m as i16;
            k.mins[2 * j + 1] = m as i16;
        }
        k.d = f16_to_f32(self.d);
        k.dmin = f16_to_f32(self.dmin);
        k
    }
}

pub fn dequantize_row(blocks: &[BlockQ5K], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        let min = f16_to_f32(b.dmin);
        let q = b.quants();
        for j in 0..8 {
            let (s, m) = get_scale_min_k4(j, &b.scales);
            let d1 = d * s as f32;
            let m1 = min * m as f32;
            for i in 32 * j..32 * j + 32 {
                y[i] = d1 * q[i] as f32 - m1;
            }
        }
    }
}

/// ggml's `quantize_row_q5_K_ref`.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ5K]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK_K)) {
        pack(b, quantize_kx_superblock(x, 31, -0.5, 15));
    }
}

/// ggml's `quantize_row_q5_K_impl` with an importance matrix's weights `qw`
/// (one per element of the row `x`).
pub fn quantize_row_impl(x: &[f32], qw: &[f32], blocks: &mut [BlockQ5K]) {
    for (i, (b, x)) in blocks.iter_mut().zip(x.chunks_exact(QK_K)).enumerate() {
        pack(b, quantize_kx_superblock_impl(x, &qw[QK_K * i..QK_K * i + QK_K], 31, true));
    }
}

/// Writes a quantized super-block: (d, dmin, packed scales, quants 0..=31).
fn pack(b: &mut BlockQ5K, (d, dmin, scales, l): ([u8; 2], [u8; 2], [u8; 12], [u8; QK_K])) {
    b.d = d;
    b.dmin = dmin;
    b.scales = scales;
    b.qh = [0; QK_K / 8];
    let (mut m1, mut m2) = (1u8, 2u8);
    for c in 0..4 {
        for j in 0..32 {
            let mut l1 = l[64 * c + j];
            if l1 > 15 {
                l1 -= 16;
                b.qh[j] |= m1;
            }
            let mut l2 = l[64 * c + 32 + j];
            if l2 > 15 {
                l2 -= 16;
                b.qh[j] |= m2;
            }
            b.qs[32 * c + j] = l1 | (l2 << 4);
        }
        m1 = m1.wrapping_shl(2);
        m2 = m2.wrapping_shl(2);
    }
}
