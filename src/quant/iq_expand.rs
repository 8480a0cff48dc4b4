//! A super-block of the IQ1/IQ2/IQ3 types as their dot products read it:
//! each weight's grid magnitude and sign, and the odd integer scale of each
//! 16 weights. The reference's x86 kernels (`ggml_vec_dot_iq*_q8_K`) multiply
//! the magnitude as an unsigned byte by the activation with the weight's
//! sign applied to it (`_mm256_sign_epi8`, where −(−128) stays −128), scale
//! each 16's products, and sum them in 8 lanes of 4 consecutive weights;
//! `kernels::ggml_paths::vec_dot_iq` emulates that from this form.

use super::k_helpers::KBlock;
use super::QK_K;

/// One expanded super-block (256 weights).
#[derive(Clone, Copy)]
pub struct IqWeights {
    /// |grid value| of each weight (0..=62)
    pub mag: [u8; QK_K],
    /// bit `j % 64` of word `j / 64`: weight `j` is negative
    pub neg: [u64; 4],
    /// the odd integer scale (2s + 1) of each 16 weights
    pub scale: [u8; QK_K / 16],
    /// IQ1_S/IQ1_M: bit `g` set where the 8 weights `8g..8g+8` take
    /// `-IQ1S_DELTA` (else `+IQ1S_DELTA`)
    pub delta_neg: u32,
}

impl IqWeights {
    pub const ZERO: IqWeights = IqWeights { mag: [0; QK_K], neg: [0; 4], scale: [0; QK_K / 16], delta_neg: 0 };

    #[inline]
    pub fn is_neg(&self, j: usize) -> bool {
        (self.neg[j / 64] >> (j % 64)) & 1 == 1
    }

    /// Puts the 8 bytes of grid entry `grid` at weights `j..j + 8`, negative
    /// where bit `k` of `signs` is set (`kmask_iq2xs`).
    #[inline]
    pub fn put8(&mut self, j: usize, grid: u64, signs: u8) {
        self.mag[j..j + 8].copy_from_slice(&grid.to_le_bytes());
        self.neg[j / 64] |= (signs as u64) << (j % 64);
    }

    /// Puts the 8 values (−1, 0 or 1, as bytes) of IQ1 grid entry `grid`
    /// at weights `j..j + 8`.
    #[inline]
    pub fn put8_ternary(&mut self, j: usize, grid: u64) {
        for (k, v) in grid.to_le_bytes().into_iter().enumerate() {
            let v = v as i8;
            self.mag[j + k] = v.unsigned_abs();
            self.neg[(j + k) / 64] |= ((v < 0) as u64) << ((j + k) % 64);
        }
    }

    /// Puts the 4 bytes of grid entry `grid` at weights `j..j + 4`, negative
    /// where bit `k` of `signs` (4 bits) is set.
    #[inline]
    pub fn put4(&mut self, j: usize, grid: u32, signs: u8) {
        self.mag[j..j + 4].copy_from_slice(&grid.to_le_bytes());
        self.neg[j / 64] |= ((signs & 15) as u64) << (j % 64);
    }
}

/// The IQ2 and IQ3 types: each 8 weights one grid entry of 8 magnitude
/// bytes (IQ3: two entries of 4) and a sign byte.
pub trait Grid8 {
    /// The grid bytes and the sign byte of weights `8k..8k+8` (k < 32).
    fn grid8(&self, k: usize) -> (u64, u8);
    /// The odd scales `2s + 1` of the 16 groups of 16.
    fn scales16(&self) -> [u8; QK_K / 16];

    fn expand(&self) -> IqWeights {
        let mut w = IqWeights::ZERO;
        for k in 0..QK_K / 8 {
            let (g, s) = self.grid8(k);
            w.put8(8 * k, g, s);
        }
        w.scale = self.scales16();
        w
    }
}

/// `SIGN_MASKS[s]`: 0xFF in byte `j` where bit `j` of `s` is set.
static SIGN_MASKS: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut s = 0;
    while s < 256 {
        let mut j = 0;
        while j < 8 {
            if (s >> j) & 1 == 1 {
                t[s] |= 0xFF << (8 * j);
            }
            j += 1;
        }
        s += 1;
    }
    t
};

/// The 8 grid bytes `g` (each 1..=127) negated (two's complement, i8) where
/// bit `j` of `signs` is set: `(g ^ m) + (m & 1)` per byte, which carries
/// into no other byte because no grid byte is 0.
#[inline]
pub fn signed8(g: u64, signs: u8) -> u64 {
    let m = SIGN_MASKS[signs as usize];
    (g ^ m).wrapping_add(m & 0x0101_0101_0101_0101)
}

/// The sign bytes of `ksigns_iq2xs[i]`: 7 stored bits and their parity.
#[inline]
pub fn ksigns(i: u32) -> u8 {
    super::iq_grids::KSIGNS_IQ2XS[(i & 127) as usize]
}

/// A block type of this family as the reference's tiled matmul reads it.
pub trait IqTiled: super::Block {
    /// The largest magnitude of a [`IqTiled::tiled_kblock`] value.
    const Q_MAX: i32;
    /// `tiled_unpack_src0`'s values (signed; IQ1: `8·grid ± 1`, the delta
    /// scaled by 8 into the integers), the 16 scales, and `d` (the block's
    /// scale times the type's constant).
    fn tiled_kblock(&self) -> KBlock;
}

/// The IQ2 and IQ3 types: the signed grid bytes directly, the 16 scales.
fn grid8_kblock<B: Grid8>(b: &B, d: f32) -> KBlock {
    let mut k = KBlock::ZERO;
    for (j, q) in k.q.chunks_exact_mut(8).enumerate() {
        let (g, s) = b.grid8(j);
        for (o, v) in q.iter_mut().zip(signed8(g, s).to_le_bytes()) {
            *o = v as i8;
        }
    }
    for (o, &x) in k.scales.iter_mut().zip(&b.scales16()) {
        *o = x as i16;
    }
    k.d = d;
    k
}

use super::f16_to_f32;
use super::{iq1, iq2, iq3};
// (the constants fold the grids' scale into d: (0.5 + s)/4 = (2s + 1)/8 for
// the IQ2 types, (0.5 + s)/2 for IQ3_XXS, IQ1's delta scaled by 8)
macro_rules! grid8_tiled {
    ($t:ty, $qmax:expr, $c:expr) => {
        impl IqTiled for $t {
            const Q_MAX: i32 = $qmax;
            fn tiled_kblock(&self) -> KBlock {
                grid8_kblock(self, f16_to_f32(self.d) * $c)
            }
        }
    };
}
grid8_tiled!(iq2::BlockIq2Xxs, 43, 0.125);
grid8_tiled!(iq2::BlockIq2Xs, 43, 0.125);
grid8_tiled!(iq2::BlockIq2S, 43, 0.125);
grid8_tiled!(iq3::BlockIq3Xxs, 62, 0.25);
grid8_tiled!(iq3::BlockIq3S, 15, 1.0);

/// IQ1: `8·grid ± 1` for the 8 weights of each grid entry (`(index,
/// delta negative)` of entry `k`), the 16 scales.
fn iq1_kblock(entry: impl Fn(usize) -> (usize, bool), scale16: impl Fn(usize) -> i32, d: f32) -> KBlock {
    let mut k = KBlock::ZERO;
    for (e, q) in k.q.chunks_exact_mut(8).enumerate() {
        let (idx, neg) = entry(e);
        let delta = if neg { -1 } else { 1 };
        for (o, g) in q.iter_mut().zip(super::iq_grids::IQ1S_GRID[idx].to_le_bytes()) {
            *o = 8 * g as i8 + delta;
        }
    }
    for (h, s) in k.scales.iter_mut().enumerate() {
        *s = scale16(h) as i16;
    }
    k.d = d;
    k
}

impl IqTiled for iq1::BlockIq1S {
    const Q_MAX: i32 = 9;
    fn tiled_kblock(&self) -> KBlock {
        iq1_kblock(|e| (self.index(e), self.delta_neg(e / 4)), |h| self.scale(h / 2), f16_to_f32(self.d) * 0.125)
    }
}

impl IqTiled for iq1::BlockIq1M {
    const Q_MAX: i32 = 9;
    fn tiled_kblock(&self) -> KBlock {
        iq1_kblock(|e| self.entry(e), |h| self.scale(h), self.d() * 0.125)
    }
}
