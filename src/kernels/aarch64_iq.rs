//! aarch64 NEON kernels of the reference's x86 `ggml_vec_dot_iq{2_xxs,2_xs,
//! 2_s,3_xxs,3_s,1_s,1_m}_q8_K`, bit-identical to their scalar emulation
//! (`ggml_paths::vec_dot_iq`, whose module doc gives the operations and
//! their order), in the two sets of `aarch64_neon.rs`: plain NEON (`smull`
//! and pairwise adds) and NEON with dotprod (`sdot`).
//!
//! A super-block is decoded once per group of up to 4 tokens ([`Sb`]): per
//! 16 weights, a register of the grid magnitudes (unsigned, ≤ 62: valid
//! i8), a register of byte masks of the negative weights, and the odd
//! integer scale of the 16 (IQ1_M: also the masks of the negative deltas,
//! IQ1_S: the `±scale` of each 32 for the bsums). Per token each register
//! of activations gets the weights' signs as x86's `vpsignb` applies them
//! (`vnegq_s8` wraps, so −(−128) stays −128), its 4-weight dots (exact: the
//! integer lanes) are scaled and summed into 8 i32 lanes: register `r`
//! (weights `16r..16r+16`) puts weights `4k..4k+4` of it in lane
//! `4(r % 2) + k`, which is `(j / 4) % 8` for weight `j`. The 8 lanes are
//! held as two `int32x4_t` (lanes 0–3, 4–7), folded per super-block with
//! `vfmaq_f32` into two `float32x4_t` in the same layout (`acc_l =
//! fma(d, lane_l, acc_l)`, `d = dw·da`), and summed in `hsum_float_8`'s
//! order. The IQ1 terms are the emulation's.
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
use crate::quant::iq1::IQ1S_DELTA;
use crate::quant::iq_grids::{IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS};
use crate::quant::QK_K;

/// Bytes of a Q8_K block (f32 scale, 256 quants, 16 i16 bsums).
const Q8K: usize = 292;

/// How a type adds its IQ1 delta (`Iq::KIND`).
const PLAIN: u8 = 0;
/// IQ1_S: `Σ ±scale·bsum` per super-block, a scalar chain
const IQ1S: u8 = 1;
/// IQ1_M: 8 more lanes of `scale·(±a)`, a second vector chain
const IQ1M: u8 = 2;

// --- the int8 dot: 4 lanes of Σ over 4 consecutive products each

trait Dot {
    /// `acc` plus, in lane `l`, the products `4l .. 4l + 4` of `a` and `b`
    /// (each at most 62·128 in magnitude: exact in every step).
    unsafe fn dot4(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t;
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
            // adjacent pairs (≤ 2·62·128 = 15872: exact in i16), then
            // adjacent pairs of those widened: lane l = products 4l..4l + 4
            vpadalq_s16(acc, vpaddq_s16(lo, hi))
        }
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

/// The f16 of bits `h` as f32.
#[inline(always)]
unsafe fn f16_bits(h: u16) -> f32 {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe { vgetq_lane_f32::<0>(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h)))) }
}

/// The little-endian u16 at `p`.
#[inline(always)]
unsafe fn u16_at(p: *const u8) -> u32 {
    // SAFETY: `p` covers 2 bytes (the caller's contract).
    unsafe { u16::from_le_bytes(std::ptr::read_unaligned(p as *const [u8; 2])) as u32 }
}

/// The little-endian u32 at `p`.
#[inline(always)]
unsafe fn u32_at(p: *const u8) -> u32 {
    // SAFETY: `p` covers 4 bytes (the caller's contract).
    unsafe { u32::from_le_bytes(std::ptr::read_unaligned(p as *const [u8; 4])) }
}

/// The sign byte of 7 stored bits (the low 7 of `i`) and their parity
/// (`ksigns_iq2xs`).
#[inline(always)]
fn ksigns(i: u32) -> u8 {
    KSIGNS_IQ2XS[(i & 127) as usize]
}

/// The odd scale `2s + 1` of a 4-bit field `s`.
#[inline(always)]
fn odd(s: u32) -> i32 {
    2 * (s & 15) as i32 + 1
}

/// The 16 bytes of two 8-byte grid entries (weights 0..8, 8..16).
#[inline(always)]
unsafe fn pair(g0: u64, g1: u64) -> int8x16_t {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe { vreinterpretq_s8_u64(vcombine_u64(vcreate_u64(g0), vcreate_u64(g1))) }
}

/// 0xFF in byte `j` (< 8) where bit `j` of `s0`, in byte `8 + j` where bit
/// `j` of `s1` is set.
#[inline(always)]
unsafe fn sign_masks(s0: u8, s1: u8) -> uint8x16_t {
    const BIT: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // load reads `BIT`'s 16 bytes.
    unsafe { vtstq_u8(vcombine_u8(vdup_n_u8(s0), vdup_n_u8(s1)), vld1q_u8(BIT.as_ptr())) }
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

// --- the decoded super-block

/// One super-block as the dot reads it; register `r` holds weights
/// `16r..16r+16`.
struct Sb {
    /// the grid magnitudes (0..=62)
    mag: [int8x16_t; 16],
    /// 0xFF where the weight is negative
    neg: [uint8x16_t; 16],
    /// the odd integer scale of each 16
    sc: [i32; 16],
    /// IQ1_M: 0xFF where the weight's 8 take `−IQ1M_DELTA` (else unused)
    delta: [uint8x16_t; 16],
    /// IQ1_S: the `±scale` of 32-groups 0–3 and 4–7 (else unused)
    bs: [int32x4_t; 2],
    /// the super-block's scale `dw`
    d: f32,
}

impl Sb {
    /// The IQ2/IQ3 form: 8-byte grid entries `g` (magnitudes) and sign
    /// bytes `s` of the 32 groups of 8 weights.
    #[inline(always)]
    unsafe fn grid8(g: &[u64; 32], s: &[u8; 32], sc: [i32; 16], d: f32) -> Sb {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
        unsafe {
            let z = vdupq_n_u8(0);
            let mut b = Sb { mag: [vdupq_n_s8(0); 16], neg: [z; 16], sc, delta: [z; 16], bs: [vdupq_n_s32(0); 2], d };
            for r in 0..16 {
                b.mag[r] = pair(g[2 * r], g[2 * r + 1]);
                b.neg[r] = sign_masks(s[2 * r], s[2 * r + 1]);
            }
            b
        }
    }

    /// The IQ1 form: 8-byte entries `g` of the ternary grid (bytes −1, 0,
    /// 1) of the 32 groups of 8 weights.
    #[inline(always)]
    unsafe fn ternary(g: &[u64; 32], sc: [i32; 16], d: f32) -> Sb {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
        unsafe {
            let z = vdupq_n_u8(0);
            let mut b = Sb { mag: [vdupq_n_s8(0); 16], neg: [z; 16], sc, delta: [z; 16], bs: [vdupq_n_s32(0); 2], d };
            for r in 0..16 {
                let v = pair(g[2 * r], g[2 * r + 1]);
                b.mag[r] = vabsq_s8(v);
                b.neg[r] = vcltzq_s8(v);
            }
            b
        }
    }
}

/// A weight block type of this family: its layout as these kernels read
/// it.
trait Iq {
    /// bytes of a super-block
    const BYTES: usize;
    /// the constant `c` of `vec_dot_iq`'s module doc (IQ2/IQ3 types)
    const C: f32;
    /// `PLAIN`, `IQ1S` or `IQ1M`
    const KIND: u8;
    /// The super-block at `p`, decoded.
    unsafe fn decode(p: *const u8) -> Sb;
}

/// IQ2_XXS (66 bytes: f16 d, per 32 weights 4 index bytes and a u32 of
/// 4 × 7 sign bits and the 4-bit scale).
struct Iq2Xxs;
impl Iq for Iq2Xxs {
    const BYTES: usize = 66;
    const C: f32 = 0.125;
    const KIND: u8 = PLAIN;
    #[inline(always)]
    unsafe fn decode(p: *const u8) -> Sb {
        // SAFETY: `p` covers a block (the caller's contract): every offset
        // read is below 66.
        unsafe {
            let (mut g, mut s, mut sc) = ([0u64; 32], [0u8; 32], [0i32; 16]);
            for ib in 0..8 {
                let (a, b) = (u32_at(p.add(2 + 8 * ib)), u32_at(p.add(6 + 8 * ib)));
                for l in 0..4 {
                    g[4 * ib + l] = IQ2XXS_GRID[((a >> (8 * l)) & 255) as usize];
                    s[4 * ib + l] = ksigns(b >> (7 * l));
                }
                sc[2 * ib] = odd(b >> 28);
                sc[2 * ib + 1] = odd(b >> 28);
            }
            Sb::grid8(&g, &s, sc, f16_at(p))
        }
    }
}

/// IQ2_XS (74 bytes: f16 d, per 8 weights a u16 of 9 index bits and 7
/// sign bits, two 4-bit scales per 32).
struct Iq2Xs;
impl Iq for Iq2Xs {
    const BYTES: usize = 74;
    const C: f32 = 0.125;
    const KIND: u8 = PLAIN;
    #[inline(always)]
    unsafe fn decode(p: *const u8) -> Sb {
        // SAFETY: `p` covers a block (the caller's contract): every offset
        // read is below 74.
        unsafe {
            let (mut g, mut s, mut sc) = ([0u64; 32], [0u8; 32], [0i32; 16]);
            for k in 0..32 {
                let q = u16_at(p.add(2 + 2 * k));
                g[k] = IQ2XS_GRID[(q & 511) as usize];
                s[k] = ksigns(q >> 9);
            }
            for ib in 0..8 {
                let b = *p.add(66 + ib) as u32;
                sc[2 * ib] = odd(b);
                sc[2 * ib + 1] = odd(b >> 4);
            }
            Sb::grid8(&g, &s, sc, f16_at(p))
        }
    }
}

/// IQ2_S (82 bytes: f16 d, 32 index bytes, 32 sign bytes, 8 bytes of
/// 2 high index bits each, two 4-bit scales per 32).
struct Iq2S;
impl Iq for Iq2S {
    const BYTES: usize = 82;
    const C: f32 = 0.125;
    const KIND: u8 = PLAIN;
    #[inline(always)]
    unsafe fn decode(p: *const u8) -> Sb {
        // SAFETY: `p` covers a block (the caller's contract): every offset
        // read is below 82.
        unsafe {
            let (mut g, mut s, mut sc) = ([0u64; 32], [0u8; 32], [0i32; 16]);
            for k in 0..32 {
                let (ib, l) = (k / 4, k % 4);
                let hi = ((*p.add(66 + ib) as usize) << (8 - 2 * l)) & 0x300;
                g[k] = IQ2S_GRID[*p.add(2 + k) as usize | hi];
                s[k] = *p.add(34 + k);
            }
            for ib in 0..8 {
                let b = *p.add(74 + ib) as u32;
                sc[2 * ib] = odd(b);
                sc[2 * ib + 1] = odd(b >> 4);
            }
            Sb::grid8(&g, &s, sc, f16_at(p))
        }
    }
}

/// IQ3_XXS (98 bytes: f16 d, 64 index bytes of 4 weights each, per 32
/// weights a u32 of 4 × 7 sign bits and the 4-bit scale).
struct Iq3Xxs;
impl Iq for Iq3Xxs {
    const BYTES: usize = 98;
    const C: f32 = 0.25;
    const KIND: u8 = PLAIN;
    #[inline(always)]
    unsafe fn decode(p: *const u8) -> Sb {
        // SAFETY: `p` covers a block (the caller's contract): every offset
        // read is below 98.
        unsafe {
            let (mut g, mut s, mut sc) = ([0u64; 32], [0u8; 32], [0i32; 16]);
            for ib in 0..8 {
                let aux = u32_at(p.add(66 + 4 * ib));
                for l in 0..4 {
                    let e = |i: usize| IQ3XXS_GRID[*p.add(2 + 8 * ib + 2 * l + i) as usize] as u64;
                    g[4 * ib + l] = e(0) | (e(1) << 32);
                    s[4 * ib + l] = ksigns(aux >> (7 * l));
                }
                sc[2 * ib] = odd(aux >> 28);
                sc[2 * ib + 1] = odd(aux >> 28);
            }
            Sb::grid8(&g, &s, sc, f16_at(p))
        }
    }
}

/// IQ3_S (110 bytes: f16 d, 64 index bytes, 8 bytes of ninth index
/// bits, 32 sign bytes, a 4-bit scale per 32).
struct Iq3S;
impl Iq for Iq3S {
    const BYTES: usize = 110;
    const C: f32 = 1.0;
    const KIND: u8 = PLAIN;
    #[inline(always)]
    unsafe fn decode(p: *const u8) -> Sb {
        // SAFETY: `p` covers a block (the caller's contract): every offset
        // read is below 110.
        unsafe {
            let (mut g, mut s, mut sc) = ([0u64; 32], [0u8; 32], [0i32; 16]);
            // (bit m of qh[ib] is the ninth bit of the m-th index of 32 ib)
            let index = |m: usize| *p.add(2 + m) as usize | (((*p.add(66 + m / 8) as usize) << (8 - m % 8)) & 256);
            for k in 0..32 {
                g[k] = IQ3S_GRID[index(2 * k)] as u64 | ((IQ3S_GRID[index(2 * k + 1)] as u64) << 32);
                s[k] = *p.add(74 + k);
            }
            for ib in 0..8 {
                let b = *p.add(106 + ib / 2) as u32;
                let v = odd(if ib % 2 == 0 { b } else { b >> 4 });
                sc[2 * ib] = v;
                sc[2 * ib + 1] = v;
            }
            Sb::grid8(&g, &s, sc, f16_at(p))
        }
    }
}

/// IQ1_S (50 bytes: f16 d, 32 index bytes, per 32 weights a u16 of
/// 4 × 3 high index bits, the 3-bit scale and the delta's sign).
struct Iq1S;
impl Iq for Iq1S {
    const BYTES: usize = 50;
    const C: f32 = 1.0;
    const KIND: u8 = IQ1S;
    #[inline(always)]
    unsafe fn decode(p: *const u8) -> Sb {
        // SAFETY: `p` covers a block (the caller's contract): every offset
        // read is below 50; NEON is part of the aarch64 baseline.
        unsafe {
            let (mut g, mut sc, mut bs) = ([0u64; 32], [0i32; 16], [0i32; 8]);
            for ib in 0..8 {
                let qh = u16_at(p.add(34 + 2 * ib));
                for l in 0..4 {
                    let idx = *p.add(2 + 4 * ib + l) as usize | ((((qh >> (3 * l)) & 7) as usize) << 8);
                    g[4 * ib + l] = IQ1S_GRID[idx];
                }
                let v = odd((qh >> 12) & 7);
                sc[2 * ib] = v;
                sc[2 * ib + 1] = v;
                bs[ib] = if qh & 0x8000 != 0 { -v } else { v };
            }
            let mut b = Sb::ternary(&g, sc, f16_at(p));
            b.bs = [vld1q_s32(bs.as_ptr()), vld1q_s32(bs.as_ptr().add(4))];
            b
        }
    }
}

/// IQ1_M (56 bytes: 32 index bytes, per 8 weights a nibble of 3 high
/// index bits and the delta's sign, 4 u16 of 3-bit scales per 16 whose
/// top nibbles make the f16 d).
struct Iq1M;
impl Iq for Iq1M {
    const BYTES: usize = 56;
    const C: f32 = 1.0;
    const KIND: u8 = IQ1M;
    #[inline(always)]
    unsafe fn decode(p: *const u8) -> Sb {
        // SAFETY: `p` covers a block (the caller's contract): every offset
        // read is below 56; NEON is part of the aarch64 baseline.
        unsafe {
            let (mut g, mut dm, mut sc) = ([0u64; 32], [0u8; 32], [0i32; 16]);
            for k in 0..32 {
                let nib = (*p.add(32 + k / 2) >> (4 * (k % 2))) & 15;
                g[k] = IQ1S_GRID[*p.add(k) as usize | (((nib & 7) as usize) << 8)];
                dm[k] = if nib & 8 != 0 { 0xFF } else { 0 };
            }
            let s4 = [u16_at(p.add(48)), u16_at(p.add(50)), u16_at(p.add(52)), u16_at(p.add(54))];
            for (h, v) in sc.iter_mut().enumerate() {
                *v = odd((s4[h / 4] >> (3 * (h % 4))) & 7);
            }
            let d = (s4[0] >> 12) | ((s4[1] >> 8) & 0x00f0) | ((s4[2] >> 4) & 0x0f00) | (s4[3] & 0xf000);
            let mut b = Sb::ternary(&g, sc, f16_bits(d as u16));
            for r in 0..16 {
                b.delta[r] = vcombine_u8(vdup_n_u8(dm[2 * r]), vdup_n_u8(dm[2 * r + 1]));
            }
            b
        }
    }
}

// --- the dot

/// The f32 chains of one token: `acc` (lanes 0–3, 4–7), IQ1_M's `acc2`,
/// IQ1_S's `acc1`.
#[derive(Clone, Copy)]
struct Acc {
    acc: [float32x4_t; 2],
    acc2: [float32x4_t; 2],
    acc1: f32,
}

/// `G` tokens, `s` bytes apart from `a`, against the weight row `w` of `nb`
/// super-blocks: each super-block decoded once for the `G` tokens; `out[t]`
/// the type's final sum of token `t`'s chains.
#[inline(always)]
unsafe fn group<T: Iq, D: Dot, const G: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
    // SAFETY: this fn's contract: `w` covers `nb` blocks of `T`, `a` `G`
    // rows of `nb` Q8_K blocks `s` apart, `out` has `G` elements; NEON is
    // part of the aarch64 baseline, `D`'s features the caller's.
    unsafe {
        let zf = vdupq_n_f32(0.0);
        let mut acc = [Acc { acc: [zf; 2], acc2: [zf; 2], acc1: 0.0 }; G];
        for ib in 0..nb {
            let sb = T::decode(w.add(ib * T::BYTES));
            for (t, c) in acc.iter_mut().enumerate() {
                let ab = a.add(t * s + ib * Q8K);
                let z = vdupq_n_s32(0);
                let (mut lanes, mut lanes2) = ([z; 2], [z; 2]);
                for r in 0..16 {
                    let y = vld1q_s8(ab.add(4 + 16 * r) as *const i8);
                    // vpsignb: −(−128) wraps to −128
                    let ny = vnegq_s8(y);
                    let p = D::dot4(z, sb.mag[r], vbslq_s8(sb.neg[r], ny, y));
                    lanes[r % 2] = vmlaq_n_s32(lanes[r % 2], p, sb.sc[r]);
                    if T::KIND == IQ1M {
                        let p2 = D::dot4(z, vdupq_n_s8(1), vbslq_s8(sb.delta[r], ny, y));
                        lanes2[r % 2] = vmlaq_n_s32(lanes2[r % 2], p2, sb.sc[r]);
                    }
                }
                let da = f32::from_le_bytes(std::ptr::read_unaligned(ab as *const [u8; 4]));
                let d = sb.d * da;
                let dv = vdupq_n_f32(d);
                c.acc[0] = vfmaq_f32(c.acc[0], vcvtq_f32_s32(lanes[0]), dv);
                c.acc[1] = vfmaq_f32(c.acc[1], vcvtq_f32_s32(lanes[1]), dv);
                if T::KIND == IQ1M {
                    c.acc2[0] = vfmaq_f32(c.acc2[0], vcvtq_f32_s32(lanes2[0]), dv);
                    c.acc2[1] = vfmaq_f32(c.acc2[1], vcvtq_f32_s32(lanes2[1]), dv);
                }
                if T::KIND == IQ1S {
                    // Σ ±scale·(bsum 2g + bsum 2g+1) over the 32-groups g
                    let b0 = vpaddlq_s16(vld1q_s16(ab.add(4 + QK_K) as *const i16));
                    let b1 = vpaddlq_s16(vld1q_s16(ab.add(4 + QK_K + 16) as *const i16));
                    let sumi1 = vaddvq_s32(vaddq_s32(vmulq_s32(b0, sb.bs[0]), vmulq_s32(b1, sb.bs[1])));
                    c.acc1 = d.mul_add(sumi1 as f32, c.acc1);
                }
            }
        }
        for (o, c) in out.iter_mut().zip(&acc) {
            *o = match T::KIND {
                IQ1S => IQ1S_DELTA.mul_add(c.acc1, hsum_float_8(c.acc[0], c.acc[1])),
                IQ1M => IQ1S_DELTA.mul_add(hsum_float_8(c.acc2[0], c.acc2[1]), hsum_float_8(c.acc[0], c.acc[1])),
                _ => T::C * hsum_float_8(c.acc[0], c.acc[1]),
            };
        }
    }
}

/// `out[t]` = the reference's `ggml_vec_dot_<T>_q8_K` of the weight row
/// `w` (`n / 256` blocks of `T`) and activation row `t` (`n / 256` Q8_K
/// blocks at `a[t·s..]`), as its scalar emulation computes it: tokens in
/// groups of up to 4 sharing each super-block's decoding.
#[inline(always)]
unsafe fn tile_iq<T: Iq, D: Dot>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK_K;
    assert!(w.len() >= nb * T::BYTES && (out.is_empty() || a.len() >= (out.len() - 1) * s + nb * Q8K));
    // SAFETY: the assert above bounds every load (`group` reads blocks
    // `0..nb` of `w` and of each token's row); NEON is part of the aarch64
    // baseline, `D`'s features the caller's (the `TileFn` contract).
    unsafe {
        let mut t = 0;
        while t < out.len() {
            let (ap, o) = (a.as_ptr().add(t * s), &mut out[t..]);
            t += match o.len() {
                1 => {
                    group::<T, D, 1>(nb, w.as_ptr(), ap, s, o);
                    1
                }
                2 => {
                    group::<T, D, 2>(nb, w.as_ptr(), ap, s, o);
                    2
                }
                3 => {
                    group::<T, D, 3>(nb, w.as_ptr(), ap, s, o);
                    3
                }
                _ => {
                    group::<T, D, 4>(nb, w.as_ptr(), ap, s, &mut o[..4]);
                    4
                }
            };
        }
    }
}

// --- entry points

macro_rules! entries {
    ($($name:ident $dp:ident = $t:ty;)*) => {$(
        /// [`tile_iq`] with plain NEON (`TileFn`).
        unsafe fn $name(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            // SAFETY: `tile_iq` asks the `TileFn` contract, which is this
            // fn's (plain NEON: the aarch64 baseline).
            unsafe { tile_iq::<$t, Smull>(n, w, a, s, out) }
        }
        /// [`tile_iq`] with `sdot` (`TileFn` of the dotprod set).
        #[target_feature(enable = "dotprod")]
        unsafe fn $dp(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            // SAFETY: `tile_iq` asks the `TileFn` contract, which is this
            // fn's; `Sdot` needs dotprod, enabled here and checked by the
            // caller.
            unsafe { tile_iq::<$t, Sdot>(n, w, a, s, out) }
        }
    )*};
}

entries! {
    tile_iq2_xxs tile_iq2_xxs_dp = Iq2Xxs;
    tile_iq2_xs tile_iq2_xs_dp = Iq2Xs;
    tile_iq2_s tile_iq2_s_dp = Iq2S;
    tile_iq3_xxs tile_iq3_xxs_dp = Iq3Xxs;
    tile_iq3_s tile_iq3_s_dp = Iq3S;
    tile_iq1_s tile_iq1_s_dp = Iq1S;
    tile_iq1_m tile_iq1_m_dp = Iq1M;
}

/// The plain NEON `ggml_vec_dot_iq*_q8_K` for `ty`, if it is an IQ1–IQ3
/// type.
pub(crate) fn tile(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        IQ2_XXS => tile_iq2_xxs,
        IQ2_XS => tile_iq2_xs,
        IQ2_S => tile_iq2_s,
        IQ3_XXS => tile_iq3_xxs,
        IQ3_S => tile_iq3_s,
        IQ1_S => tile_iq1_s,
        IQ1_M => tile_iq1_m,
        _ => return None,
    })
}

/// The NEON + dotprod `ggml_vec_dot_iq*_q8_K` for `ty`, if it is an
/// IQ1–IQ3 type (for the dotprod set only: the CPU must have dotprod).
pub(crate) fn tile_dp(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        IQ2_XXS => tile_iq2_xxs_dp,
        IQ2_XS => tile_iq2_xs_dp,
        IQ2_S => tile_iq2_s_dp,
        IQ3_XXS => tile_iq3_xxs_dp,
        IQ3_S => tile_iq3_s_dp,
        IQ1_S => tile_iq1_s_dp,
        IQ1_M => tile_iq1_m_dp,
        _ => return None,
    })
}
