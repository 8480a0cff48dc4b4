//! Emulation of the reference's `ggml_vec_dot_iq{2_xxs,2_xs,2_s,3_xxs,3_s,
//! 1_s,1_m}_q8_K` as its x86 build compiles them (`arch/x86/quants.c`, the
//! `__AVX2__` code), which its matmul runs for these types at every token
//! count (they are neither repacked, tiled nor in llamafile's tinyBLAS).
//!
//! Each keeps, per super-block, 8 i32 lanes: lane `l` sums, over the
//! 32-weight groups, `scale·mag·±a` of the group's weights `4l..4l+3`, where
//! `mag` is the weight's grid magnitude (an unsigned byte), `±a` the
//! activation with the weight's sign applied by `_mm256_sign_epi8` (so
//! −(−128) stays −128) and `scale` the odd integer scale of its 16
//! (`quant::iq_expand`). Then, with `d = dw·da`, `acc_l = fma(d, lane_l,
//! acc_l)`, and the result `c·hsum_float_8(acc)`: `c` = 1/8 for the IQ2
//! types (their scales are `(0.5 + s)/4 = (2s + 1)/8`), 1/4 for IQ3_XXS, 1
//! for IQ3_S. The IQ1 types add the `±IQ1S_DELTA` shift of their grid:
//!
//! - IQ1_S: an integer `Σ ±scale·(bsum_{2g} + bsum_{2g+1})` over the
//!   32-groups `g`, folded per super-block as `acc1 = fma(d, that, acc1)`;
//!   the result `fma(IQ1S_DELTA, acc1, hsum_float_8(acc))` (GCC fuses both).
//! - IQ1_M: 8 more lanes of `scale·(±a)` (the delta's sign of each 8
//!   applied to the activation as above) into `acc2` as `acc`; the result
//!   `fma(IQ1M_DELTA, hsum_float_8(acc2), hsum_float_8(acc))`.

use super::super::dispatch::TileFn;
use super::super::scalar::act_row;
use super::vec_dot_k::hsum_float_8;
use crate::ggml_type::GgmlType;
use crate::quant::iq1::{BlockIq1M, BlockIq1S, IQ1S_DELTA};
use crate::quant::iq2::{BlockIq2S, BlockIq2Xs, BlockIq2Xxs};
use crate::quant::iq3::{BlockIq3S, BlockIq3Xxs};
use crate::quant::iq_expand::IqWeights;
use crate::quant::q8_k::BlockQ8K;
use crate::quant::{as_blocks, f16_to_f32, Block, QK_K};

/// The activation `a` with sign `neg` applied as `_mm256_sign_epi8` does.
#[inline]
fn signed(a: u8, neg: bool) -> i32 {
    let a = a as i8;
    (if neg { a.wrapping_neg() } else { a }) as i32
}

/// The 8 i32 lanes of one super-block (see the module doc).
fn lanes(w: &IqWeights, a: &BlockQ8K) -> [i32; 8] {
    let mut lanes = [0i32; 8];
    for j in 0..QK_K {
        let p = w.mag[j] as i32 * signed(a.qs[j], w.is_neg(j));
        lanes[(j / 4) % 8] += w.scale[j / 16] as i32 * p;
    }
    lanes
}

/// IQ1_M's delta lanes: `scale·(±a)` with the sign of each 8's delta.
fn delta_lanes(w: &IqWeights, a: &BlockQ8K) -> [i32; 8] {
    let mut lanes = [0i32; 8];
    for j in 0..QK_K {
        let neg = (w.delta_neg >> (j / 8)) & 1 == 1;
        lanes[(j / 4) % 8] += w.scale[j / 16] as i32 * signed(a.qs[j], neg);
    }
    lanes
}

/// A weight block type of this family: its expansion and `dw`.
trait IqBlock: Block {
    /// The constant `c` of the module doc.
    const C: f32;
    fn expand(&self) -> IqWeights;
    fn d(&self) -> f32;
}

macro_rules! iq_block {
    ($t:ty, $c:expr) => {
        impl IqBlock for $t {
            const C: f32 = $c;
            fn expand(&self) -> IqWeights {
                <$t>::expand(self)
            }
            fn d(&self) -> f32 {
                f16_to_f32(self.d)
            }
        }
    };
}
iq_block!(BlockIq2Xxs, 0.125);
iq_block!(BlockIq2Xs, 0.125);
iq_block!(BlockIq2S, 0.125);
iq_block!(BlockIq3Xxs, 0.25);
iq_block!(BlockIq3S, 1.0);
iq_block!(BlockIq1S, 1.0);

impl IqBlock for BlockIq1M {
    const C: f32 = 1.0;
    fn expand(&self) -> IqWeights {
        BlockIq1M::expand(self)
    }
    fn d(&self) -> f32 {
        BlockIq1M::d(self)
    }
}

/// The IQ2 and IQ3 types.
fn tile_iq<B: IqBlock>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK_K;
    let wb = &as_blocks::<B>(w)[..nb];
    let expanded: Vec<IqWeights> = wb.iter().map(B::expand).collect();
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<BlockQ8K>(a, s, t, nb);
        let mut acc = [0f32; 8];
        for ((x, e), y) in wb.iter().zip(&expanded).zip(ab) {
            let d = x.d() * y.d();
            for (c, l) in acc.iter_mut().zip(lanes(e, y)) {
                *c = d.mul_add(l as f32, *c);
            }
        }
        *o = B::C * hsum_float_8(&acc);
    }
}

fn tile_iq1_s(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK_K;
    let wb = &as_blocks::<BlockIq1S>(w)[..nb];
    let expanded: Vec<IqWeights> = wb.iter().map(BlockIq1S::expand).collect();
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<BlockQ8K>(a, s, t, nb);
        let (mut acc, mut acc1) = ([0f32; 8], 0f32);
        for ((x, e), y) in wb.iter().zip(&expanded).zip(ab) {
            let d = y.d() * f16_to_f32(x.d);
            for (c, l) in acc.iter_mut().zip(lanes(e, y)) {
                *c = d.mul_add(l as f32, *c);
            }
            let sumi1: i32 = (0..QK_K / 32)
                .map(|g| {
                    let bs = y.bsum(2 * g) as i32 + y.bsum(2 * g + 1) as i32;
                    bs * if x.delta_neg(g) { -1 } else { 1 } * x.scale(g)
                })
                .sum();
            acc1 = d.mul_add(sumi1 as f32, acc1);
        }
        *o = IQ1S_DELTA.mul_add(acc1, hsum_float_8(&acc));
    }
}

fn tile_iq1_m(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK_K;
    let wb = &as_blocks::<BlockIq1M>(w)[..nb];
    let expanded: Vec<IqWeights> = wb.iter().map(BlockIq1M::expand).collect();
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<BlockQ8K>(a, s, t, nb);
        let (mut acc1, mut acc2) = ([0f32; 8], [0f32; 8]);
        for ((x, e), y) in wb.iter().zip(&expanded).zip(ab) {
            let d = y.d() * x.d();
            for (c, l) in acc1.iter_mut().zip(lanes(e, y)) {
                *c = d.mul_add(l as f32, *c);
            }
            for (c, l) in acc2.iter_mut().zip(delta_lanes(e, y)) {
                *c = d.mul_add(l as f32, *c);
            }
        }
        *o = IQ1S_DELTA.mul_add(hsum_float_8(&acc2), hsum_float_8(&acc1));
    }
}

/// The scalar emulation for `ty`, if it is an IQ1–IQ3 type.
pub fn scalar_tile(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        IQ2_XXS => tile_iq::<BlockIq2Xxs>,
        IQ2_XS => tile_iq::<BlockIq2Xs>,
        IQ2_S => tile_iq::<BlockIq2S>,
        IQ3_XXS => tile_iq::<BlockIq3Xxs>,
        IQ3_S => tile_iq::<BlockIq3S>,
        IQ1_S => tile_iq1_s,
        IQ1_M => tile_iq1_m,
        _ => return None,
    })
}

/// The AVX2 emulation for `ty`, if it is an IQ1–IQ3 type.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType) -> Option<TileFn> {
    scalar_tile(ty)
}
