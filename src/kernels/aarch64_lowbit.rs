//! aarch64 NEON kernels of the reference's x86 `ggml_vec_dot_q1_0_q8_0`,
//! `ggml_vec_dot_q2_0_q8_0` and `ggml_vec_dot_nvfp4_q8_0` (the low-bit
//! types against Q8_0 activations), bit-identical to their scalar
//! emulations (`ggml_paths::vec_dot_q1q2`, `ggml_paths::vec_dot_nvfp4`,
//! whose module docs give the operations and their order), in the two sets
//! of `aarch64_neon.rs`: plain NEON (pairwise adds, `smull`) and NEON with
//! dotprod (`sdot`).
//!
//! A weight block is decoded once per group of up to 4 tokens; per token
//! the integer sums are exact (any instructions will do) and the float
//! operations are the emulation's, lane for lane:
//!
//! - Q1_0: per activation block 8 i32 lanes, lane `l` the `Σ ±a` of its
//!   elements `4l..4l+4`, held as two `int32x4_t` (lanes 0–3: elements
//!   0–15, lanes 4–7: 16–31). The signs are applied as x86's byte negation
//!   (`vnegq_s8` wraps: −(−128) stays −128) and each 4 summed by
//!   `saddlp`/`sadalp` or an `sdot` against ones. The 8 f32 lanes of the
//!   block chain (`mul`, then `fma` per activation block) and of the
//!   accumulator (`fma` by the weight scale) are two `float32x4_t` in the
//!   same layout, summed at the end in `hsum_float_8`'s order.
//! - Q2_0: the 2-bit fields widened to `q − 1` in element order (a table
//!   lookup of each field's byte, a shift per element), dotted with each
//!   activation block and summed to one exact i32; the generic C's chain
//!   of separate products and sums follows in scalar f32, per token.
//! - NVFP4: the codes looked up in the E2M1 table, per half-block two
//!   registers in element order (sub-blocks `2h`, `2h + 1`); as the
//!   reference's `mul_add_epi8`, `|v|` dotted with the activations carrying
//!   `v`'s sign (wrapping negation, see `vec_dot_nvfp4::signed_product`),
//!   lane `l` products `4l..4l+4`; lanes 0–3 fused with the scale of
//!   sub-block `2h`, 4–7 with that of `2h + 1`, then `hsum_float_8`.
//!
//! # Safety
//! As in `aarch64_neon.rs`: every kernel is `unsafe` (the `TileFn`
//! contract), asserts the bounds of its loads first, and reads through raw
//! pointers with unaligned loads; the dotprod entries are handed out only in
//! the NEON + dotprod set, which `available_sets()` lists only on CPUs with
//! dotprod.

use std::arch::aarch64::*;

use super::dispatch::TileFn;
use crate::ggml_type::GgmlType;
use crate::quant::mxfp4::KVALUES_MXFP4;
use crate::quant::nvfp4::ue4m3_to_f32;

/// Bytes of a Q8_0 block (f16 scale, 32 quants).
const Q8: usize = 34;
/// Bytes of a Q1_0 block (f16 scale, 128 sign bits) and of a Q2_0 one (f16
/// scale, 64 fields of 2 bits).
const Q1Q2: usize = 18;
/// Bytes of an NVFP4 block (4 UE4M3 scales, 64 codes of 4 bits).
const NV: usize = 36;

// --- the int8 sums: 4 lanes of 4 consecutive bytes each

trait Dot {
    /// `acc` plus, in lane `l`, the products `4l .. 4l + 4` of `a` and `b`
    /// (each at most 12·128 in magnitude: exact in every step).
    unsafe fn dot4(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t;
    /// `acc` plus, in lane `l`, the bytes `4l .. 4l + 4` of `a`.
    unsafe fn sum4(acc: int32x4_t, a: int8x16_t) -> int32x4_t;
}

/// Plain NEON: widening multiplies, pairwise adds.
struct Smull;
impl Dot for Smull {
    #[inline(always)]
    unsafe fn dot4(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
        unsafe {
            let lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
            let hi = vmull_high_s8(a, b);
            // adjacent pairs (≤ 2·12·128 = 3072: exact in i16), then
            // adjacent pairs of those widened: lane l = products 4l..4l + 4
            vpadalq_s16(acc, vpaddq_s16(lo, hi))
        }
    }
    #[inline(always)]
    unsafe fn sum4(acc: int32x4_t, a: int8x16_t) -> int32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
        unsafe { vpadalq_s16(acc, vpaddlq_s8(a)) }
    }
}

/// The dotprod extension's `sdot` (inline asm: its intrinsic is not
/// stable).
struct Sdot;
impl Dot for Sdot {
    #[target_feature(enable = "dotprod")]
    #[inline]
    unsafe fn dot4(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
        let mut acc = acc;
        // SAFETY: register-only instruction; this fn's contract: the CPU has
        // dotprod (the caller runs only on CPUs with it, `cpu_ok_dotprod`).
        unsafe {
            std::arch::asm!(
                "sdot {0:v}.4s, {1:v}.16b, {2:v}.16b",
                inout(vreg) acc,
                in(vreg) a,
                in(vreg) b,
                options(pure, nomem, nostack)
            );
        }
        acc
    }
    #[target_feature(enable = "dotprod")]
    #[inline]
    unsafe fn sum4(acc: int32x4_t, a: int8x16_t) -> int32x4_t {
        // SAFETY: this fn's contract: the CPU has dotprod; NEON is part of
        // the aarch64 baseline.
        unsafe { Self::dot4(acc, a, vdupq_n_s8(1)) }
    }
}

// --- helpers

/// The f16 at `p` as f32.
#[inline(always)]
unsafe fn f16_at(p: *const u8) -> f32 {
    // SAFETY: `p` covers 2 bytes (the caller's contract); NEON is part of
    // the aarch64 baseline.
    unsafe {
        let bits = std::ptr::read_unaligned(p as *const u16);
        vgetq_lane_f32::<0>(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(bits))))
    }
}

/// ggml's x86 `hsum_float_8` of 8 lanes held as `lo` (0–3) and `hi` (4–7):
/// `((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7))`.
#[inline(always)]
unsafe fn hsum_float_8(lo: float32x4_t, hi: float32x4_t) -> f32 {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe {
        let v = vaddq_f32(lo, hi);
        let h = vadd_f32(vget_low_f32(v), vget_high_f32(v));
        vget_lane_f32::<0>(h) + vget_lane_f32::<1>(h)
    }
}

/// `y` negated (wrapping, as x86's `vpsignb` and byte subtraction: −(−128)
/// stays −128) where `neg` is 0xFF.
#[inline(always)]
unsafe fn neg_where(neg: uint8x16_t, y: int8x16_t) -> int8x16_t {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe { vbslq_s8(neg, vnegq_s8(y), y) }
}

/// The two registers (elements 0–15, 16–31) of the Q8_0 block at `p`, and
/// its scale.
#[inline(always)]
unsafe fn q8_block(p: *const u8) -> (int8x16_t, int8x16_t, f32) {
    // SAFETY: `p` covers a Q8_0 block (the caller's contract); NEON is part
    // of the aarch64 baseline.
    unsafe { (vld1q_s8(p.add(2) as *const i8), vld1q_s8(p.add(18) as *const i8), f16_at(p)) }
}

// --- Q1_0

/// `T` tokens, `s` bytes apart from `a`, against the Q1_0 row `w` of `nb`
/// blocks; `out[t]` token `t`'s `ggml_vec_dot_q1_0_q8_0`.
#[inline(always)]
unsafe fn group_q1<D: Dot, const T: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
    // SAFETY: this fn's contract: `w` covers `nb` Q1_0 blocks, `a` `T`
    // rows of `4·nb` Q8_0 blocks `s` apart, `out` has `T` elements; NEON is
    // part of the aarch64 baseline, `D`'s features the caller's.
    unsafe {
        const BIT: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
        // byte `j / 8` of a register's 2 sign bytes at byte j
        const SPREAD: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
        let bit = vld1q_u8(BIT.as_ptr());
        let spread = vld1q_u8(SPREAD.as_ptr());
        let (zf, z) = (vdupq_n_f32(0.0), vdupq_n_s32(0));
        // per token: the accumulator's lanes 0–3, 4–7
        let mut acc = [[zf; 2]; T];
        for ib in 0..nb {
            let wp = w.add(ib * Q1Q2);
            // the 128 sign bits: activation block k's 32 in bytes 4k..4k + 4
            let bits = vld1q_u8(wp.add(2));
            // per token: the block's lanes 0–3, 4–7
            let mut blk = [[zf; 2]; T];
            for k in 0..4 {
                // 0xFF where the bit is clear (the element negated): elements
                // 0–15 and 16–31 of activation block k
                let idx = vaddq_u8(spread, vdupq_n_u8(4 * k as u8));
                let neg0 = vceqzq_u8(vandq_u8(vqtbl1q_u8(bits, idx), bit));
                let neg1 = vceqzq_u8(vandq_u8(vqtbl1q_u8(bits, vaddq_u8(idx, vdupq_n_u8(2))), bit));
                for (t, blk) in blk.iter_mut().enumerate() {
                    let (y0, y1, da) = q8_block(a.add(t * s + (4 * ib + k) * Q8));
                    let l0 = vcvtq_f32_s32(D::sum4(z, neg_where(neg0, y0)));
                    let l1 = vcvtq_f32_s32(D::sum4(z, neg_where(neg1, y1)));
                    let da = vdupq_n_f32(da);
                    // blk = d_a0·s_0, then fma(d_ak, s_k, blk)
                    *blk = if k == 0 {
                        [vmulq_f32(da, l0), vmulq_f32(da, l1)]
                    } else {
                        [vfmaq_f32(blk[0], da, l0), vfmaq_f32(blk[1], da, l1)]
                    };
                }
            }
            let dw = vdupq_n_f32(f16_at(wp));
            for (acc, blk) in acc.iter_mut().zip(&blk) {
                *acc = [vfmaq_f32(acc[0], dw, blk[0]), vfmaq_f32(acc[1], dw, blk[1])];
            }
        }
        for (o, acc) in out.iter_mut().zip(&acc) {
            *o = hsum_float_8(acc[0], acc[1]);
        }
    }
}

// --- Q2_0

/// `T` tokens, `s` bytes apart from `a`, against the Q2_0 row `w` of `nb`
/// blocks; `out[t]` token `t`'s `ggml_vec_dot_q2_0_q8_0` (the generic C).
#[inline(always)]
unsafe fn group_q2<D: Dot, const T: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
    // SAFETY: this fn's contract: `w` covers `nb` Q2_0 blocks, `a` `T`
    // rows of `2·nb` Q8_0 blocks `s` apart, `out` has `T` elements; NEON is
    // part of the aarch64 baseline, `D`'s features the caller's.
    unsafe {
        // element e of a 16: field e % 4 of byte e / 4 (of the register's 4)
        const SPREAD: [u8; 16] = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3];
        const SHIFT: [i8; 16] = [0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6];
        let spread = vld1q_u8(SPREAD.as_ptr());
        let shift = vld1q_s8(SHIFT.as_ptr());
        let (m3, one, z) = (vdupq_n_u8(3), vdupq_n_s8(1), vdupq_n_s32(0));
        let mut sum = [0f32; T];
        for ib in 0..nb {
            let wp = w.add(ib * Q1Q2);
            // the 64 fields: element j in bits 2(j % 4).. of byte j / 4
            let bits = vld1q_u8(wp.add(2));
            // q − 1 (−1..=2) of elements 16r..16r + 16
            let q: [int8x16_t; 4] = std::array::from_fn(|r| {
                let b = vqtbl1q_u8(bits, vaddq_u8(spread, vdupq_n_u8(4 * r as u8)));
                vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshlq_u8(b, shift), m3)), one)
            });
            let mut sumi = [0f32; T];
            for k in 0..2 {
                for (t, sumi) in sumi.iter_mut().enumerate() {
                    let (y0, y1, da) = q8_block(a.add(t * s + (2 * ib + k) * Q8));
                    let isum = vaddvq_s32(D::dot4(D::dot4(z, q[2 * k], y0), q[2 * k + 1], y1));
                    // (a product, then a sum: the generic C's, not fused)
                    *sumi += da * isum as f32;
                }
            }
            let dw = f16_at(wp);
            for (sum, sumi) in sum.iter_mut().zip(sumi) {
                *sum += dw * sumi;
            }
        }
        out[..T].copy_from_slice(&sum);
    }
}

// --- NVFP4

/// `T` tokens, `s` bytes apart from `a`, against the NVFP4 row `w` of `nb`
/// blocks; `out[t]` token `t`'s `ggml_vec_dot_nvfp4_q8_0`.
#[inline(always)]
unsafe fn group_nvfp4<D: Dot, const T: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
    // SAFETY: this fn's contract: `w` covers `nb` NVFP4 blocks, `a` `T`
    // rows of `2·nb` Q8_0 blocks `s` apart, `out` has `T` elements; NEON is
    // part of the aarch64 baseline, `D`'s features the caller's; the table
    // load reads KVALUES_MXFP4's 16 bytes.
    unsafe {
        let table = vld1q_s8(KVALUES_MXFP4.as_ptr());
        let (m4, z, zf) = (vdupq_n_u8(0x0F), vdupq_n_s32(0), vdupq_n_f32(0.0));
        // per token: the accumulator's lanes 0–3, 4–7
        let mut acc = [[zf; 2]; T];
        for ib in 0..nb {
            let x = w.add(ib * NV);
            for h in 0..2 {
                // sub-blocks 2h, 2h + 1: 8 code bytes each, element j's code
                // the low nibble of byte j % 8 (j < 8), else its high one
                let bits = vld1q_u8(x.add(4 + 16 * h));
                let lo = vreinterpretq_u64_s8(vqtbl1q_s8(table, vandq_u8(bits, m4)));
                let hi = vreinterpretq_u64_s8(vqtbl1q_s8(table, vshrq_n_u8::<4>(bits)));
                // the values of elements 0–15 (sub-block 2h) and 16–31
                let v = [vreinterpretq_s8_u64(vzip1q_u64(lo, hi)), vreinterpretq_s8_u64(vzip2q_u64(lo, hi))];
                // |v| (≤ 12) and 0xFF where v < 0: the reference's vpsignb
                let (mag, neg) = (v.map(|v| vabsq_s8(v)), v.map(|v| vcltzq_s8(v)));
                let (w0, w1) = (ue4m3_to_f32(*x.add(2 * h)), ue4m3_to_f32(*x.add(2 * h + 1)));
                for (t, acc) in acc.iter_mut().enumerate() {
                    let (y0, y1, da) = q8_block(a.add(t * s + (2 * ib + h) * Q8));
                    let l0 = vcvtq_f32_s32(D::dot4(z, mag[0], neg_where(neg[0], y0)));
                    let l1 = vcvtq_f32_s32(D::dot4(z, mag[1], neg_where(neg[1], y1)));
                    // acc_l = fma(ue4m3(d)·da, lane_l, acc_l)
                    *acc = [vfmaq_f32(acc[0], vdupq_n_f32(w0 * da), l0), vfmaq_f32(acc[1], vdupq_n_f32(w1 * da), l1)];
                }
            }
        }
        for (o, acc) in out.iter_mut().zip(&acc) {
            *o = hsum_float_8(acc[0], acc[1]);
        }
    }
}

// --- the tile kernels

/// A weight type of this module: its group kernel and shape.
trait LowBit {
    /// weights per block
    const QK: usize;
    /// bytes per block
    const BYTES: usize;
    /// [`group_q1`], [`group_q2`] or [`group_nvfp4`] (the same contract).
    unsafe fn group<D: Dot, const T: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]);
}

struct WQ1_0;
impl LowBit for WQ1_0 {
    const QK: usize = 128;
    const BYTES: usize = Q1Q2;
    #[inline(always)]
    unsafe fn group<D: Dot, const T: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
        // SAFETY: the same contract as this fn's.
        unsafe { group_q1::<D, T>(nb, w, a, s, out) }
    }
}

struct WQ2_0;
impl LowBit for WQ2_0 {
    const QK: usize = 64;
    const BYTES: usize = Q1Q2;
    #[inline(always)]
    unsafe fn group<D: Dot, const T: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
        // SAFETY: the same contract as this fn's.
        unsafe { group_q2::<D, T>(nb, w, a, s, out) }
    }
}

struct WNvfp4;
impl LowBit for WNvfp4 {
    const QK: usize = 64;
    const BYTES: usize = NV;
    #[inline(always)]
    unsafe fn group<D: Dot, const T: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
        // SAFETY: the same contract as this fn's.
        unsafe { group_nvfp4::<D, T>(nb, w, a, s, out) }
    }
}

/// `out[t]` = the reference's `ggml_vec_dot_<L>_q8_0` of the weight row `w`
/// (`n / L::QK` blocks) and activation row `t` (`n / 32` Q8_0 blocks at
/// `a[t·s..]`), as its scalar emulation computes it: tokens in groups of up
/// to 4 sharing each block's decoding.
#[inline(always)]
unsafe fn tile_lowbit<L: LowBit, D: Dot>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / L::QK;
    let arow = n / 32 * Q8;
    assert!(w.len() >= nb * L::BYTES && (out.is_empty() || a.len() >= (out.len() - 1) * s + arow));
    // SAFETY: the assert above bounds every load (`group` reads blocks
    // `0..nb` of `w` and the `n / 32` Q8_0 blocks of each token's row);
    // NEON is part of the aarch64 baseline, `D`'s features the caller's
    // (the `TileFn` contract).
    unsafe {
        let mut t = 0;
        while t < out.len() {
            let (ap, o) = (a.as_ptr().add(t * s), &mut out[t..]);
            t += match o.len() {
                1 => {
                    L::group::<D, 1>(nb, w.as_ptr(), ap, s, o);
                    1
                }
                2 => {
                    L::group::<D, 2>(nb, w.as_ptr(), ap, s, o);
                    2
                }
                3 => {
                    L::group::<D, 3>(nb, w.as_ptr(), ap, s, o);
                    3
                }
                _ => {
                    L::group::<D, 4>(nb, w.as_ptr(), ap, s, &mut o[..4]);
                    4
                }
            };
        }
    }
}

// --- entry points

macro_rules! entries {
    ($($name:ident $dp:ident = $t:ty;)*) => {$(
        /// [`tile_lowbit`] with plain NEON (`TileFn`).
        unsafe fn $name(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            // SAFETY: `tile_lowbit` asks the `TileFn` contract, which is
            // this fn's (plain NEON: the aarch64 baseline).
            unsafe { tile_lowbit::<$t, Smull>(n, w, a, s, out) }
        }
        /// [`tile_lowbit`] with `sdot` (`TileFn` of the dotprod set).
        #[target_feature(enable = "dotprod")]
        unsafe fn $dp(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            // SAFETY: `tile_lowbit` asks the `TileFn` contract, which is
            // this fn's; `Sdot` needs dotprod, enabled here and checked by
            // the caller.
            unsafe { tile_lowbit::<$t, Sdot>(n, w, a, s, out) }
        }
    )*};
}

entries! {
    tile_q1_0 tile_q1_0_dp = WQ1_0;
    tile_q2_0 tile_q2_0_dp = WQ2_0;
    tile_nvfp4 tile_nvfp4_dp = WNvfp4;
}

/// The plain NEON `ggml_vec_dot_*_q8_0` for `ty`, if it is Q1_0, Q2_0 or
/// NVFP4.
pub(crate) fn tile(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        Q1_0 => tile_q1_0,
        Q2_0 => tile_q2_0,
        NVFP4 => tile_nvfp4,
        _ => return None,
    })
}

/// The NEON + dotprod `ggml_vec_dot_*_q8_0` for `ty`, if it is Q1_0, Q2_0
/// or NVFP4 (for the dotprod set only: the CPU must have dotprod).
pub(crate) fn tile_dp(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        Q1_0 => tile_q1_0_dp,
        Q2_0 => tile_q2_0_dp,
        NVFP4 => tile_nvfp4_dp,
        _ => return None,
    })
}
