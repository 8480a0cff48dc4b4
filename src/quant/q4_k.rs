//! Q4_K: super-blocks of 256 in 8 sub-blocks of 32; 4-bit quants, 6-bit
//! scale and min per sub-block, f16 `d` and `dmin`; value = d·sc·q − dmin·m.

use super::k_helpers::{get_scale_min_k4, quantize_kx_superblock, quantize_kx_superblock_impl, KBlock};
use super::{f16_to_f32, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `block_q4_K`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ4K {
    pub d: [u8; 2],
    pub dmin: [u8; 2],
    /// 8 6-bit scales and 8 6-bit mins, packed (see `get_scale_min_k4`)
    pub scales: [u8; 12],
    /// byte 32·c + l: low nibble element 64·c + l, high nibble 64·c + 32 + l
    pub qs: [u8; QK_K / 2],
}
const _: () = assert!(std::mem::size_of::<BlockQ4K>() == 144);
const _: () = assert!(std::mem::size_of::<BlockQ4K>() == GgmlType::Q4_K.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ4K {
    const TYPE: GgmlType = GgmlType::Q4_K;
}

impl BlockQ4K {
    /// The 256 quants (0..=15) in element order.
    #[inline]
    pub fn quants(&self) -> [i8; QK_K] {
        let mut q = [0i8; QK_K];
        for c in 0..4 {
            for l in 0..32 {
                let b = self.qs[32 * c + l];
                q[64 * c + l] = (b & 0xF) as i8;
                q[64 * c + 32 + l] = (b >> 4) as i8;
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

pub fn dequantize_row(blocks: &[BlockQ4K], out: &mut [f32]) {
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

/// ggml's `quantize_row_q4_K_ref`.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ4K]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK_K)) {
        pack(b, quantize_kx_superblock(x, 15, -1.0, 20));
    }
}

/// ggml's `quantize_row_q4_K_impl` with an importance matrix's weights `qw`
/// (one per element of the row `x`).
pub fn quantize_row_impl(x: &[f32], qw: &[f32], blocks: &mut [BlockQ4K]) {
    for (i, (b, x)) in blocks.iter_mut().zip(x.chunks_exact(QK_K)).enumerate() {
        pack(b, quantize_kx_superblock_impl(x, &qw[QK_K * i..QK_K * i + QK_K], 15, false));
    }
}

/// Writes a quantized super-block: (d, dmin, packed scales, quants 0..=15).
fn pack(b: &mut BlockQ4K, (d, dmin, scales, l): ([u8; 2], [u8; 2], [u8; 12], [u8; QK_K])) {
    b.d = d;
    b.dmin = dmin;
    b.scales = scales;
    for c in 0..4 {
        for i in 0..32 {
            b.qs[32 * c + i] = l[64 * c + i] | (l[64 * c + 32 + i] << 4);
        }
    }
}
