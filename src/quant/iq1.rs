//! IQ1_S and IQ1_M: 1.5- and 1.75-bit weights, in super-blocks of 256. Each 8
//! weights are one entry of `iq1s_grid` (2048 entries of −1, 0, 1) shifted
//! by ±`IQ1S_DELTA` (0.125): value `dl·(grid + delta)`.
//!
//! - IQ1_S (50 bytes): f16 `d`; per 8 weights an index byte in `qs`; per 32
//!   weights a u16 in `qh`: 4 × 3 high index bits, a 3-bit scale `s` (bits
//!   12..14, `dl = d·(2s + 1)`) and the delta's sign (bit 15).
//! - IQ1_M (56 bytes): no `d` field: the f16 scale is the top nibbles of the
//!   4 u16 of `scales`, whose other bits are a 3-bit scale per 16 weights;
//!   per 8 weights an index byte in `qs` and a nibble of `qh` (3 high index
//!   bits, the delta's sign in bit 3).
//!
//! Every index is within the grid by construction, so any bytes are a valid
//! block.

use super::iq_expand::IqWeights;
use super::iq_grids::IQ1S_GRID;
use super::{f16_to_f32, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `IQ1S_DELTA` (and `IQ1M_DELTA`).
pub const IQ1S_DELTA: f32 = 0.125;

/// ggml's `block_iq1_s`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockIq1S {
    pub d: [u8; 2],
    pub qs: [u8; QK_K / 8],
    /// 8 u16, little-endian
    pub qh: [u8; QK_K / 16],
}
const _: () = assert!(std::mem::size_of::<BlockIq1S>() == GgmlType::IQ1_S.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockIq1S {
    const TYPE: GgmlType = GgmlType::IQ1_S;
}

/// ggml's `block_iq1_m`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockIq1M {
    pub qs: [u8; QK_K / 8],
    pub qh: [u8; QK_K / 16],
    /// 4 u16, little-endian
    pub scales: [u8; QK_K / 32],
}
const _: () = assert!(std::mem::size_of::<BlockIq1M>() == GgmlType::IQ1_M.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockIq1M {
    const TYPE: GgmlType = GgmlType::IQ1_M;
}

impl BlockIq1S {
    #[inline]
    fn qh(&self, ib: usize) -> u16 {
        u16::from_le_bytes([self.qh[2 * ib], self.qh[2 * ib + 1]])
    }

    /// The grid index of the 8 weights `8k..8k+8`.
    #[inline]
    pub(crate) fn index(&self, k: usize) -> usize {
        let (ib, l) = (k / 4, k % 4);
        self.qs[k] as usize | ((((self.qh(ib) >> (3 * l)) & 7) as usize) << 8)
    }

    /// The odd scale `2s + 1` of 32-group `ib`.
    #[inline]
    pub fn scale(&self, ib: usize) -> i32 {
        2 * ((self.qh(ib) >> 12) & 7) as i32 + 1
    }

    /// Whether 32-group `ib` takes `−IQ1S_DELTA`.
    #[inline]
    pub fn delta_neg(&self, ib: usize) -> bool {
        self.qh(ib) & 0x8000 != 0
    }

    pub fn expand(&self) -> IqWeights {
        let mut w = IqWeights::ZERO;
        for k in 0..QK_K / 8 {
            w.put8_ternary(8 * k, IQ1S_GRID[self.index(k)]);
        }
        for ib in 0..QK_K / 32 {
            let s = self.scale(ib) as u8;
            w.scale[2 * ib] = s;
            w.scale[2 * ib + 1] = s;
            if self.delta_neg(ib) {
                w.delta_neg |= 15 << (4 * ib);
            }
        }
        w
    }
}

impl BlockIq1M {
    #[inline]
    fn sc(&self, i: usize) -> u16 {
        u16::from_le_bytes([self.scales[2 * i], self.scales[2 * i + 1]])
    }

    /// The super-block's f16 scale, gathered from the top nibbles.
    pub fn d(&self) -> f32 {
        let u =
            (self.sc(0) >> 12) | ((self.sc(1) >> 8) & 0x00f0) | ((self.sc(2) >> 4) & 0x0f00) | (self.sc(3) & 0xf000);
        f16_to_f32(u.to_le_bytes())
    }

    /// The grid index of the 8 weights `8k..8k+8` and whether they take
    /// `−IQ1S_DELTA`.
    #[inline]
    pub(crate) fn entry(&self, k: usize) -> (usize, bool) {
        let nib = (self.qh[k / 2] >> (4 * (k % 2))) & 15;
        (self.qs[k] as usize | (((nib & 7) as usize) << 8), nib & 8 != 0)
    }

    /// The odd scale `2s + 1` of 16-group `h`.
    #[inline]
    pub(crate) fn scale(&self, h: usize) -> i32 {
        let (ib, half) = (h / 2, h % 2);
        2 * ((self.sc(ib / 2) >> (6 * (ib % 2) + 3 * half)) & 7) as i32 + 1
    }

    pub fn expand(&self) -> IqWeights {
        let mut w = IqWeights::ZERO;
        for k in 0..QK_K / 8 {
            let (idx, neg) = self.entry(k);
            w.put8_ternary(8 * k, IQ1S_GRID[idx]);
            w.delta_neg |= (neg as u32) << k;
        }
        for h in 0..QK_K / 16 {
            w.scale[h] = self.scale(h) as u8;
        }
        w
    }
}

/// `y[j] = dl·(grid[j] + delta)` for the 8 weights of one grid entry.
#[inline]
fn put8(y: &mut [f32], dl: f32, grid: u64, delta_neg: bool) {
    let delta = if delta_neg { -IQ1S_DELTA } else { IQ1S_DELTA };
    for (v, g) in y.iter_mut().zip(grid.to_le_bytes()) {
        *v = dl * (g as i8 as f32 + delta);
    }
}

pub fn dequantize_row_s(blocks: &[BlockIq1S], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        for (k, y) in y.chunks_exact_mut(8).enumerate() {
            let ib = k / 4;
            put8(y, d * b.scale(ib) as f32, IQ1S_GRID[b.index(k)], b.delta_neg(ib));
        }
    }
}

pub fn dequantize_row_m(blocks: &[BlockIq1M], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = b.d();
        for (k, y) in y.chunks_exact_mut(8).enumerate() {
            let (idx, neg) = b.entry(k);
            put8(y, d * b.scale(k / 2) as f32, IQ1S_GRID[idx], neg);
        }
    }
}
