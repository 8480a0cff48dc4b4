//! IQ2_XXS, IQ2_XS and IQ2_S: 2-bit weights on a lattice, in super-blocks of
//! 256 with one f16 scale `d`. Each 8 weights are one entry of a grid of
//! magnitudes (8, 25 or 43) with 8 signs; the value is
//! `d·(0.5 + s)·0.25·grid·±1` for the 4-bit scale `s` of its 32 (IQ2_XXS) or
//! 16 (IQ2_XS, IQ2_S) weights.
//!
//! - IQ2_XXS (66 bytes): per 32 weights two u32 (`qs` as u16s): the first
//!   holds 4 grid indices (one byte each, `iq2xxs_grid`), the second 4 × 7
//!   sign bits (`ksigns_iq2xs`: the 8th is their parity) and `s` in its top
//!   4 bits.
//! - IQ2_XS (74 bytes): per 8 weights one u16: 9 bits of index
//!   (`iq2xs_grid`), 7 sign bits; `scales[ib32]` holds the 16s' two scales.
//! - IQ2_S (82 bytes): per 8 weights an index byte in `qs[0..32]` and 2 high
//!   bits in `qh[ib32]` (`iq2s_grid`, 1024 entries), a whole sign byte in
//!   `qs[32..64]`; `scales` as IQ2_XS.
//!
//! Every index is within its grid by construction, so any bytes are a valid
//! block.

use super::iq_expand::{ksigns, Grid8};
use super::iq_grids::{IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID};
use super::{f16_to_f32, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `block_iq2_xxs`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockIq2Xxs {
    pub d: [u8; 2],
    /// 32 u16, little-endian
    pub qs: [u8; QK_K / 4],
}
const _: () = assert!(std::mem::size_of::<BlockIq2Xxs>() == GgmlType::IQ2_XXS.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockIq2Xxs {
    const TYPE: GgmlType = GgmlType::IQ2_XXS;
}

/// ggml's `block_iq2_xs`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockIq2Xs {
    pub d: [u8; 2],
    /// 32 u16, little-endian
    pub qs: [u8; QK_K / 4],
    pub scales: [u8; QK_K / 32],
}
const _: () = assert!(std::mem::size_of::<BlockIq2Xs>() == GgmlType::IQ2_XS.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockIq2Xs {
    const TYPE: GgmlType = GgmlType::IQ2_XS;
}

/// ggml's `block_iq2_s`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockIq2S {
    pub d: [u8; 2],
    /// 32 index bytes, then 32 sign bytes
    pub qs: [u8; QK_K / 4],
    pub qh: [u8; QK_K / 32],
    pub scales: [u8; QK_K / 32],
}
const _: () = assert!(std::mem::size_of::<BlockIq2S>() == GgmlType::IQ2_S.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockIq2S {
    const TYPE: GgmlType = GgmlType::IQ2_S;
}

#[inline]
fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

#[inline]
fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

impl BlockIq2Xxs {
    /// (grid index, sign byte) of the 8 weights `8l..8l+8` of 32-group `ib`,
    /// and the group's 4-bit scale.
    #[inline]
    fn group(&self, ib: usize) -> ([(usize, u8); 4], u32) {
        let (a, b) = (u32_at(&self.qs, 8 * ib), u32_at(&self.qs, 8 * ib + 4));
        (std::array::from_fn(|l| (((a >> (8 * l)) & 255) as usize, ksigns(b >> (7 * l)))), b >> 28)
    }
}

impl Grid8 for BlockIq2Xxs {
    #[inline]
    fn grid8(&self, k: usize) -> (u64, u8) {
        let (ib, l) = (k / 4, k % 4);
        let (a, b) = (u32_at(&self.qs, 8 * ib), u32_at(&self.qs, 8 * ib + 4));
        (IQ2XXS_GRID[((a >> (8 * l)) & 255) as usize], ksigns(b >> (7 * l)))
    }

    fn scales16(&self) -> [u8; QK_K / 16] {
        std::array::from_fn(|h| (2 * (u32_at(&self.qs, 8 * (h / 2) + 4) >> 28) + 1) as u8)
    }
}

impl BlockIq2Xs {
    /// (grid index, sign byte) of the 8 weights `8k..8k+8`.
    #[inline]
    fn entry(&self, k: usize) -> (usize, u8) {
        let q = u16_at(&self.qs, 2 * k);
        ((q & 511) as usize, ksigns((q >> 9) as u32))
    }
}

impl Grid8 for BlockIq2Xs {
    #[inline]
    fn grid8(&self, k: usize) -> (u64, u8) {
        let (idx, signs) = self.entry(k);
        (IQ2XS_GRID[idx], signs)
    }

    fn scales16(&self) -> [u8; QK_K / 16] {
        scales16(&self.scales)
    }
}

impl BlockIq2S {
    /// (grid index, sign byte) of the 8 weights `8k..8k+8`.
    #[inline]
    fn entry(&self, k: usize) -> (usize, u8) {
        let (ib, l) = (k / 4, k % 4);
        let hi = ((self.qh[ib] as usize) << (8 - 2 * l)) & 0x300;
        (self.qs[k] as usize | hi, self.qs[QK_K / 8 + k])
    }
}

impl Grid8 for BlockIq2S {
    #[inline]
    fn grid8(&self, k: usize) -> (u64, u8) {
        let (idx, signs) = self.entry(k);
        (IQ2S_GRID[idx], signs)
    }

    fn scales16(&self) -> [u8; QK_K / 16] {
        scales16(&self.scales)
    }
}

/// The odd scales of the 16 halves from IQ2_XS/IQ2_S's nibbles.
fn scales16(scales: &[u8; QK_K / 32]) -> [u8; QK_K / 16] {
    std::array::from_fn(|h| {
        let b = scales[h / 2];
        2 * (if h % 2 == 0 { b & 15 } else { b >> 4 }) + 1
    })
}

/// `y[j] = db·grid[j]·±1` for the 8 weights of one grid entry
/// (`dequantize_row_iq2_*`'s expression, in its order).
#[inline]
fn put8(y: &mut [f32], db: f32, grid: u64, signs: u8) {
    for (j, (v, g)) in y.iter_mut().zip(grid.to_le_bytes()).enumerate() {
        *v = db * g as f32 * if (signs >> j) & 1 == 1 { -1.0 } else { 1.0 };
    }
}

pub fn dequantize_row_xxs(blocks: &[BlockIq2Xxs], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let (g, s) = b.group(ib);
            let db = d * (0.5 + s as f32) * 0.25;
            for (&(idx, signs), y) in g.iter().zip(y.chunks_exact_mut(8)) {
                put8(y, db, IQ2XXS_GRID[idx], signs);
            }
        }
    }
}

/// IQ2_XS and IQ2_S: `db` of the 16 that weights `8k..8k+8` are in.
#[inline]
fn db16(d: f32, scales: &[u8; QK_K / 32], k: usize) -> f32 {
    let b = scales[k / 4];
    d * (0.5 + (if k % 4 < 2 { b & 15 } else { b >> 4 }) as f32) * 0.25
}

pub fn dequantize_row_xs(blocks: &[BlockIq2Xs], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        for (k, y) in y.chunks_exact_mut(8).enumerate() {
            let (idx, signs) = b.entry(k);
            put8(y, db16(d, &b.scales, k), IQ2XS_GRID[idx], signs);
        }
    }
}

pub fn dequantize_row_s(blocks: &[BlockIq2S], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        for (k, y) in y.chunks_exact_mut(8).enumerate() {
            let (idx, signs) = b.entry(k);
            put8(y, db16(d, &b.scales, k), IQ2S_GRID[idx], signs);
        }
    }
}
