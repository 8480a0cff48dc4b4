//! IQ3_XXS and IQ3_S: 3-bit weights on a lattice, in super-blocks of 256 with
//! one f16 scale `d`. Each 4 weights are one entry of a grid of magnitudes,
//! signs per 8 weights.
//!
//! - IQ3_XXS (98 bytes): `qs[0..64]` one index byte per 4 weights
//!   (`iq3xxs_grid`); per 32 weights a u32 at `qs[64 + 4·ib]` with 4 × 7
//!   sign bits (`ksigns_iq2xs`) and the 4-bit scale `s` on top; value
//!   `d·(0.5 + s)·0.5·grid·±1`.
//! - IQ3_S (110 bytes): per 4 weights an index byte in `qs` and a ninth bit
//!   in `qh` (`iq3s_grid`, 512 entries), whole sign bytes in `signs`, a
//!   4-bit scale per 32 weights (two per byte of `scales`); value
//!   `d·(1 + 2s)·grid·±1`.
//!
//! Every index is within its grid by construction, so any bytes are a valid
//! block.

use super::iq_expand::{ksigns, Grid8};
use super::iq_grids::{IQ3S_GRID, IQ3XXS_GRID};
use super::{f16_to_f32, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `block_iq3_xxs`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockIq3Xxs {
    pub d: [u8; 2],
    /// 64 index bytes, then 8 u32 of signs and scales
    pub qs: [u8; 3 * QK_K / 8],
}
const _: () = assert!(std::mem::size_of::<BlockIq3Xxs>() == GgmlType::IQ3_XXS.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockIq3Xxs {
    const TYPE: GgmlType = GgmlType::IQ3_XXS;
}

/// ggml's `block_iq3_s`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockIq3S {
    pub d: [u8; 2],
    pub qs: [u8; QK_K / 4],
    pub qh: [u8; QK_K / 32],
    pub signs: [u8; QK_K / 8],
    pub scales: [u8; QK_K / 64],
}
const _: () = assert!(std::mem::size_of::<BlockIq3S>() == GgmlType::IQ3_S.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockIq3S {
    const TYPE: GgmlType = GgmlType::IQ3_S;
}

impl BlockIq3Xxs {
    /// The sign/scale word of 32-group `ib`.
    #[inline]
    fn aux(&self, ib: usize) -> u32 {
        let i = QK_K / 4 + 4 * ib;
        u32::from_le_bytes([self.qs[i], self.qs[i + 1], self.qs[i + 2], self.qs[i + 3]])
    }
}

impl Grid8 for BlockIq3Xxs {
    #[inline]
    fn grid8(&self, k: usize) -> (u64, u8) {
        let (ib, l) = (k / 4, k % 4);
        let g = |i: usize| IQ3XXS_GRID[self.qs[8 * ib + 2 * l + i] as usize] as u64;
        (g(0) | g(1) << 32, ksigns(self.aux(ib) >> (7 * l)))
    }

    fn scales16(&self) -> [u8; QK_K / 16] {
        std::array::from_fn(|h| (2 * (self.aux(h / 2) >> 28) + 1) as u8)
    }
}

impl BlockIq3S {
    /// The grid index of the 4 weights `4k..4k+4`.
    #[inline]
    fn index(&self, k: usize) -> usize {
        // (qh[ib32] bit m is the ninth bit of the m-th index of its 32)
        let (ib, m) = (k / 8, k % 8);
        self.qs[k] as usize | (((self.qh[ib] as usize) << (8 - m)) & 256)
    }

    /// The 4-bit scale of 32-group `ib`.
    #[inline]
    fn scale(&self, ib: usize) -> u8 {
        let b = self.scales[ib / 2];
        if ib.is_multiple_of(2) {
            b & 15
        } else {
            b >> 4
        }
    }
}

impl Grid8 for BlockIq3S {
    #[inline]
    fn grid8(&self, k: usize) -> (u64, u8) {
        let g = |i: usize| IQ3S_GRID[self.index(2 * k + i)] as u64;
        (g(0) | g(1) << 32, self.signs[k])
    }

    fn scales16(&self) -> [u8; QK_K / 16] {
        std::array::from_fn(|h| 2 * self.scale(h / 2) + 1)
    }
}

/// `y[j] = db·grid[j]·±1` for the 4 weights of one grid entry, negative
/// where bit `j` of `signs` is set (`dequantize_row_iq3_*`'s expression).
#[inline]
fn put4(y: &mut [f32], db: f32, grid: u32, signs: u8) {
    for (j, (v, g)) in y.iter_mut().zip(grid.to_le_bytes()).enumerate() {
        *v = db * g as f32 * if (signs >> j) & 1 == 1 { -1.0 } else { 1.0 };
    }
}

pub fn dequantize_row_xxs(blocks: &[BlockIq3Xxs], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let aux = b.aux(ib);
            let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = ksigns(aux >> (7 * l));
                put4(&mut y[..4], db, IQ3XXS_GRID[b.qs[8 * ib + 2 * l] as usize], signs);
                put4(&mut y[4..], db, IQ3XXS_GRID[b.qs[8 * ib + 2 * l + 1] as usize], signs >> 4);
            }
        }
    }
}

pub fn dequantize_row_s(blocks: &[BlockIq3S], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        for (k, y) in y.chunks_exact_mut(4).enumerate() {
            // d·(1 + 2s) with the integer converted, as the reference
            let db = d * (1 + 2 * b.scale(k / 8) as i32) as f32;
            put4(y, db, IQ3S_GRID[b.index(k)], b.signs[k / 2] >> (4 * (k % 2)));
        }
    }
}
