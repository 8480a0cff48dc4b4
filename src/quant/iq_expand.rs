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

/// The sign bytes of `ksigns_iq2xs[i]`: 7 stored bits and their parity.
#[inline]
pub fn ksigns(i: u32) -> u8 {
    super::iq_grids::KSIGNS_IQ2XS[(i & 127) as usize]
}

impl IqWeights {
    /// The block as the reference's tiled matmul unpacks it
    /// (`tiled_unpack_src0`): signed values `±mag` (IQ1: `8·grid ± 1`, the
    /// delta scaled by 8 into the integers), the 16 scales, `d` the block's
    /// scale times the type's constant.
    pub fn kblock(&self, d: f32, iq1: bool) -> KBlock {
        let mut k = KBlock::ZERO;
        for (j, q) in k.q.iter_mut().enumerate() {
            let v = if self.is_neg(j) { -(self.mag[j] as i8) } else { self.mag[j] as i8 };
            *q = if iq1 { 8 * v + if (self.delta_neg >> (j / 8)) & 1 == 1 { -1 } else { 1 } } else { v };
        }
        for (s, &x) in k.scales.iter_mut().zip(&self.scale) {
            *s = x as i16;
        }
        k.d = d;
        k
    }
}
