//! aarch64 NEON kernels, in two sets: plain NEON (`smull` + pairwise adds)
//! and NEON with the dotprod extension (`sdot`, through inline asm since its
//! intrinsic is not stable). Both mirror the scalar definitions in
//! `scalar.rs` and are tested against them (under qemu-aarch64 in CI):
//!
//! - 32-blocks: a weight block is unpacked once into two registers of 16 i8
//!   and dotted with up to 4 tokens, each keeping a 4-lane f32 accumulator
//!   (results agree with scalar within f32 rounding).
//! - super-blocks: unpacked once into 16 registers, dotted with up to 4
//!   tokens; exact integer sums folded as the reference's tiled matmul does
//!   (`ggml_paths::tiled`, bit-identical to its scalar definition). Their
//!   per-row dot (`ggml_vec_dot_*_q8_K` order) is the scalar definition.
//! - activation quantizers: byte-identical to scalar, including the x86
//!   conversion of out-of-range values that the reference's bytes reflect.
//!
//! The body functions are `#[inline(always)]` and generic over the int8 dot
//! ([`Smull`] or [`Sdot`]); each entry point instantiates them, the dotprod
//! ones inside a `#[target_feature(enable = "dotprod")]` function.
//!
//! # Safety
//! Every function here is `unsafe` and reads through raw pointers with
//! unaligned loads. The entry points (`TileFn`, `QuantFn`) are called only
//! through `KernelSet` after their shape contract was checked
//! (`dispatch::check_dot_shapes`, `KernelSet::quantize_act`), which keeps
//! every load within `w[..row_bytes]` and `a[t·stride .. t·stride + act_row]`;
//! the sets are handed out only by `available_sets()`, which checks the CPU
//! features first (the statics are crate-private).

use std::arch::aarch64::*;

use super::dispatch::{no_ggml_rows, no_rows, KernelSet, TileFn};
use super::ggml_paths::{self, tiled::TiledFold, Path};
use super::scalar::KFold;
use crate::ggml_type::GgmlType;
use crate::quant::k_helpers::get_scale_min_k4;
use crate::quant::mxfp4::{e8m0_to_f32_half, KVALUES_MXFP4};
use crate::quant::{f32_to_f16, iq4::KVALUES_IQ4NL, q8_0, QK, QK_K};

/// Whether this CPU runs the NEON set (always on aarch64 Linux).
pub fn cpu_ok() -> bool {
    std::arch::is_aarch64_feature_detected!("neon")
}

/// Whether this CPU runs the NEON + dotprod set.
pub fn cpu_ok_dotprod() -> bool {
    cpu_ok() && std::arch::is_aarch64_feature_detected!("dotprod")
}

pub(crate) static SET: KernelSet = KernelSet {
    name: "neon",
    tile,
    ggml,
    rows: no_rows,
    ggml_rows: no_ggml_rows,
    ggml_token_major: super::dispatch::no_ggml_token_major,
    tiled: super::dispatch::no_tiled,
    quant_q8_0,
    quant_q8_1,
    quant_q8_k,
};

pub(crate) static SET_DOTPROD: KernelSet = KernelSet {
    name: "neon-dotprod",
    tile: tile_dp,
    ggml: ggml_dp,
    rows: no_rows,
    ggml_rows: no_ggml_rows,
    ggml_token_major: super::dispatch::no_ggml_token_major,
    tiled: super::dispatch::no_tiled,
    quant_q8_0,
    quant_q8_1,
    quant_q8_k,
};

// --- the int8 dot: 4 lanes of Σ over 4 products each

trait Dot {
    unsafe fn dot(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t;
    /// [`dot`](Self::dot) with lane `l` summing products `4l .. 4l + 4`
    /// (`sdot`'s lanes; `dot` may group them otherwise), for kernels whose
    /// float order follows the lanes. Each product at most 128·127 in
    /// magnitude.
    unsafe fn dot4(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t;
}

/// Plain NEON: widening multiplies, pairwise adds.
struct Smull;
impl Dot for Smull {
    #[inline(always)]
    unsafe fn dot(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
        unsafe {
            let lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
            let hi = vmull_high_s8(a, b);
            vpadalq_s16(vpadalq_s16(acc, lo), hi)
        }
    }
    #[inline(always)]
    unsafe fn dot4(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
        unsafe {
            let lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
            let hi = vmull_high_s8(a, b);
            // adjacent pairs (≤ 2·128·127 = 32512: exact in i16), then
            // adjacent pairs of those widened: lane l = products 4l..4l + 4
            vpadalq_s16(acc, vpaddq_s16(lo, hi))
        }
    }
}

/// The dotprod extension's `sdot`.
struct Sdot;
impl Dot for Sdot {
    #[target_feature(enable = "dotprod")]
    #[inline]
    unsafe fn dot(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
        // SAFETY: this fn's contract: the CPU has dotprod.
        unsafe {
            let mut acc = acc;
            // SAFETY: register-only instruction; the caller runs only on CPUs
            // with dotprod (`cpu_ok_dotprod`).
            std::arch::asm!(
                "sdot {0:v}.4s, {1:v}.16b, {2:v}.16b",
                inout(vreg) acc,
                in(vreg) a,
                in(vreg) b,
                options(pure, nomem, nostack)
            );
            acc
        }
    }
    #[target_feature(enable = "dotprod")]
    #[inline]
    unsafe fn dot4(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
        // SAFETY: this fn's contract: the CPU has dotprod.
        unsafe { Self::dot(acc, a, b) }
    }
}

// --- helpers

#[inline(always)]
unsafe fn f16_at(p: *const u8) -> f32 {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `p` stay within the buffers the caller
    // vouched for (the same contract).
    unsafe {
        let bits = std::ptr::read_unaligned(p as *const u16);
        vgetq_lane_f32::<0>(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(bits))))
    }
}

#[inline(always)]
unsafe fn ld(p: *const u8) -> uint8x16_t {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `p` stay within the buffers the caller
    // vouched for (the same contract).
    unsafe { vld1q_u8(p) }
}

#[inline(always)]
unsafe fn s8(v: uint8x16_t) -> int8x16_t {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe { vreinterpretq_s8_u8(v) }
}

/// 16 packed bytes → (low nibbles, high nibbles): elements 0-15 and 16-31.
#[inline(always)]
unsafe fn nibbles(p: *const u8) -> (uint8x16_t, uint8x16_t) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `p` stay within the buffers the caller
    // vouched for (the same contract), which is what the callees' contracts
    // ask.
    unsafe {
        let v = ld(p);
        (vandq_u8(v, vdupq_n_u8(0x0F)), vshrq_n_u8::<4>(v))
    }
}

/// The 32 bits at `p` as 2×16 bytes: 0xFF where the bit is set.
#[inline(always)]
unsafe fn bits32(p: *const u8) -> (uint8x16_t, uint8x16_t) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `p` stay within the buffers the caller
    // vouched for (the same contract).
    unsafe {
        let b: [u8; 4] = std::ptr::read_unaligned(p as *const [u8; 4]);
        const M: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
        let m = vld1q_u8(M.as_ptr());
        let lo = vcombine_u8(vdup_n_u8(b[0]), vdup_n_u8(b[1]));
        let hi = vcombine_u8(vdup_n_u8(b[2]), vdup_n_u8(b[3]));
        (vtstq_u8(lo, m), vtstq_u8(hi, m))
    }
}

#[inline(always)]
unsafe fn table() -> int8x16_t {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // load reads KVALUES_IQ4NL's 16 bytes.
    unsafe { vld1q_s8(KVALUES_IQ4NL.as_ptr()) }
}

// --- 32-blocks (× Q8_0, and × Q8_1 with a minimum)

/// A 32-element weight block: its values as 2×16 i8, scale, minimum (0.0
/// for types without one).
trait W32 {
    const BYTES: usize;
    const HAS_MIN: bool;
    unsafe fn load(p: *const u8) -> (int8x16_t, int8x16_t, f32, f32);
}

struct WQ4_0;
impl W32 for WQ4_0 {
    const BYTES: usize = 18;
    const HAS_MIN: bool = false;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> (int8x16_t, int8x16_t, f32, f32) {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let (lo, hi) = nibbles(p.add(2));
            let e = vdupq_n_s8(8);
            (vsubq_s8(s8(lo), e), vsubq_s8(s8(hi), e), f16_at(p), 0.0)
        }
    }
}

struct WQ5_0;
impl W32 for WQ5_0 {
    const BYTES: usize = 22;
    const HAS_MIN: bool = false;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> (int8x16_t, int8x16_t, f32, f32) {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let (lo, hi) = nibbles(p.add(6));
            let (b0, b1) = bits32(p.add(2));
            let f0 = vdupq_n_u8(0xF0);
            // (nibble | bit<<4) - 16 == nibble | (bit ? 0 : 0xF0) as i8
            (s8(vorrq_u8(lo, vbicq_u8(f0, b0))), s8(vorrq_u8(hi, vbicq_u8(f0, b1))), f16_at(p), 0.0)
        }
    }
}

struct WQ8_0;
impl W32 for WQ8_0 {
    const BYTES: usize = 34;
    const HAS_MIN: bool = false;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> (int8x16_t, int8x16_t, f32, f32) {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe { (s8(ld(p.add(2))), s8(ld(p.add(18))), f16_at(p), 0.0) }
    }
}

struct WIq4Nl;
impl W32 for WIq4Nl {
    const BYTES: usize = 18;
    const HAS_MIN: bool = false;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> (int8x16_t, int8x16_t, f32, f32) {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let (lo, hi) = nibbles(p.add(2));
            let t = table();
            (vqtbl1q_s8(t, lo), vqtbl1q_s8(t, hi), f16_at(p), 0.0)
        }
    }
}

struct WMxfp4;
impl W32 for WMxfp4 {
    const BYTES: usize = 17;
    const HAS_MIN: bool = false;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> (int8x16_t, int8x16_t, f32, f32) {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask; the table load reads KVALUES_MXFP4's 16 bytes.
        unsafe {
            let (lo, hi) = nibbles(p.add(1));
            let t = vld1q_s8(KVALUES_MXFP4.as_ptr());
            (vqtbl1q_s8(t, lo), vqtbl1q_s8(t, hi), e8m0_to_f32_half(*p), 0.0)
        }
    }
}

struct WQ4_1;
impl W32 for WQ4_1 {
    const BYTES: usize = 20;
    const HAS_MIN: bool = true;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> (int8x16_t, int8x16_t, f32, f32) {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let (lo, hi) = nibbles(p.add(4));
            (s8(lo), s8(hi), f16_at(p), f16_at(p.add(2)))
        }
    }
}

struct WQ5_1;
impl W32 for WQ5_1 {
    const BYTES: usize = 24;
    const HAS_MIN: bool = true;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> (int8x16_t, int8x16_t, f32, f32) {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let (lo, hi) = nibbles(p.add(8));
            let (b0, b1) = bits32(p.add(4));
            let h = vdupq_n_u8(0x10);
            (s8(vorrq_u8(lo, vandq_u8(b0, h))), s8(vorrq_u8(hi, vandq_u8(b1, h))), f16_at(p), f16_at(p.add(2)))
        }
    }
}

#[inline(always)]
unsafe fn group32<U: W32, D: Dot, const T: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `w`, `a`, `out` stay within the buffers the
    // caller vouched for (the same contract), which is what the callees'
    // contracts ask.
    unsafe {
        // Q8_0 blocks: d, qs[32]; Q8_1 blocks: d, s, qs[32].
        let (ablock, aq) = if U::HAS_MIN { (36, 4) } else { (34, 2) };
        let mut acc = [vdupq_n_f32(0.0); T];
        let mut acc_min = [0f32; T];
        for b in 0..nb {
            let (q0, q1, dw, mw) = U::load(w.add(b * U::BYTES));
            for j in 0..T {
                let ab = a.add(j * s + b * ablock);
                let p = D::dot(
                    D::dot(vdupq_n_s32(0), q0, vld1q_s8(ab.add(aq) as *const i8)),
                    q1,
                    vld1q_s8(ab.add(aq + 16) as *const i8),
                );
                acc[j] = vfmaq_f32(acc[j], vcvtq_f32_s32(p), vdupq_n_f32(dw * f16_at(ab)));
                if U::HAS_MIN {
                    acc_min[j] += mw * f16_at(ab.add(2));
                }
            }
        }
        for j in 0..T {
            out[j] = vaddvq_f32(acc[j]) + acc_min[j];
        }
    }
}

#[inline(always)]
unsafe fn tile32<U: W32, D: Dot>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `w`, `a`, `out` stay within the buffers the
    // caller vouched for (the same contract), which is what the callees'
    // contracts ask.
    unsafe {
        let nb = n / QK;
        let mut t = 0;
        while t + 4 <= out.len() {
            group32::<U, D, 4>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 4]);
            t += 4;
        }
        while t < out.len() {
            group32::<U, D, 1>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 1]);
            t += 1;
        }
    }
}

// --- the reference's x86 paths of the 32-block table and Q4_0 types
// (`ggml_paths::repack` and `ggml_paths::vec_dot_k`: the same bits)

/// ggml's x86 `hsum_float_8` of 8 lanes held as `lo` (0–3) and `hi` (4–7):
/// (l0+l4, l1+l5, l2+l6, l3+l7), then pairs 2 apart, then the two.
#[inline(always)]
unsafe fn hsum_float_8(lo: float32x4_t, hi: float32x4_t) -> f32 {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe {
        let v = vaddq_f32(lo, hi);
        let h = vadd_f32(vget_low_f32(v), vget_high_f32(v));
        vget_lane_f32::<0>(h) + vget_lane_f32::<1>(h)
    }
}

/// The exact integer dot of a weight block (`q0`, `q1`: elements 0–15,
/// 16–31) with the Q8_0 block at `ab`, as 4 lanes: lane `l` sums elements
/// `4l .. 4l + 4` (`q0`) and `16 + 4l ..` (`q1`) apart, in `(lo, hi)`.
#[inline(always)]
unsafe fn block_dot<D: Dot>(q0: int8x16_t, q1: int8x16_t, ab: *const u8) -> (int32x4_t, int32x4_t) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; `ab`
    // covers a Q8_0 block (the caller's contract), which is what the
    // callees' contracts ask.
    unsafe {
        let z = vdupq_n_s32(0);
        (D::dot4(z, q0, vld1q_s8(ab.add(2) as *const i8)), D::dot4(z, q1, vld1q_s8(ab.add(18) as *const i8)))
    }
}

/// The repacked path's gemm/gemv of Q4_0, IQ4_NL and MXFP4 (the scalar
/// `repack::tile_b32_scaled`): per token, per block in order,
/// `acc = fma((float)isum, dw·da, acc)`, the integer sum exact.
#[inline(always)]
unsafe fn repack32<U: W32, D: Dot>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `w`, `a`, `out` stay within the buffers the
    // caller vouched for (the `TileFn` contract), which is what the callees'
    // contracts ask.
    unsafe {
        let nb = n / QK;
        let (w, a) = (w.as_ptr(), a.as_ptr());
        for (t, o) in out.iter_mut().enumerate() {
            let mut acc = 0f32;
            for b in 0..nb {
                let (q0, q1, dw, _) = U::load(w.add(b * U::BYTES));
                let ab = a.add(t * s + b * 34);
                let (lo, hi) = block_dot::<D>(q0, q1, ab);
                let isum = vaddvq_s32(vaddq_s32(lo, hi));
                acc = (isum as f32).mul_add(dw * f16_at(ab), acc);
            }
            *o = acc;
        }
    }
}

/// `ggml_vec_dot_iq4_nl_q8_0` / `ggml_vec_dot_mxfp4_q8_0` on x86 (the
/// scalar `vec_dot_k::lut_pairs`): 8 lanes of 4-element sums (here `lo`:
/// lanes 0–3, `hi`: lanes 4–7) fused into two accumulators, blocks taken in
/// pairs; the two summed, then `hsum_float_8`'s order; a last odd block
/// added as `d · Σ`.
#[inline(always)]
unsafe fn lut_pairs32<U: W32, D: Dot>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `w`, `a`, `out` stay within the buffers the
    // caller vouched for (the `TileFn` contract), which is what the callees'
    // contracts ask.
    unsafe {
        let nb = n / QK;
        let (w, a) = (w.as_ptr(), a.as_ptr());
        for (t, o) in out.iter_mut().enumerate() {
            let at = a.add(t * s);
            let block = |b: usize| {
                let (q0, q1, dw, _) = U::load(w.add(b * U::BYTES));
                let ab = at.add(b * 34);
                let (lo, hi) = block_dot::<D>(q0, q1, ab);
                (lo, hi, f16_at(ab) * dw)
            };
            let mut acc = [[vdupq_n_f32(0.0); 2]; 2];
            let mut ib = 0;
            while ib + 1 < nb {
                for (k, acc) in acc.iter_mut().enumerate() {
                    let (lo, hi, d) = block(ib + k);
                    let d = vdupq_n_f32(d);
                    acc[0] = vfmaq_f32(acc[0], vcvtq_f32_s32(lo), d);
                    acc[1] = vfmaq_f32(acc[1], vcvtq_f32_s32(hi), d);
                }
                ib += 2;
            }
            let both = [vaddq_f32(acc[0][0], acc[1][0]), vaddq_f32(acc[0][1], acc[1][1])];
            let mut sum = hsum_float_8(both[0], both[1]);
            if ib < nb {
                let (lo, hi, d) = block(ib);
                sum += d * vaddvq_s32(vaddq_s32(lo, hi)) as f32;
            }
            *o = sum;
        }
    }
}

// --- the ternary types × Q8_K (`ggml_paths::vec_dot_tq`: the same bits)

/// The trit in the top of each byte: `(q·3) >> 8`.
#[inline(always)]
unsafe fn top_trit(q: uint8x16_t) -> uint8x16_t {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe {
        let three = vdup_n_u8(3);
        let lo = vshrn_n_u16::<8>(vmull_u8(vget_low_u8(q), three));
        let hi = vshrn_n_u16::<8>(vmull_high_u8(q, vdupq_n_u8(3)));
        vcombine_u8(lo, hi)
    }
}

/// A ternary super-block's trits (0..=3) in element order, 16 per
/// register, and its scale: TQ1_0 (`ONE`) or TQ2_0.
#[inline(always)]
unsafe fn tq_trits<const ONE: bool>(p: *const u8) -> ([uint8x16_t; 16], f32) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; `p`
    // covers a block (the caller's contract).
    unsafe {
        let mut t = [vdupq_n_u8(0); 16];
        if ONE {
            const POW3: [u8; 5] = [1, 3, 9, 27, 81];
            let (q0, q1, b) = (ld(p), ld(p.add(16)), ld(p.add(32)));
            for (n, &m) in POW3.iter().enumerate() {
                let m = vdupq_n_u8(m);
                // elements 32n.. (qs[0..32]); 160 + 16n.. (qs[32..48])
                t[2 * n] = top_trit(vmulq_u8(q0, m));
                t[2 * n + 1] = top_trit(vmulq_u8(q1, m));
                t[10 + n] = top_trit(vmulq_u8(b, m));
            }
            // elements 240 + 4n + j: qh[j]·3^n
            const QH_POW: [u8; 16] = [1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27];
            let qh = vreinterpretq_u8_u32(vdupq_n_u32(std::ptr::read_unaligned(p.add(48) as *const u32)));
            t[15] = top_trit(vmulq_u8(qh, vld1q_u8(QH_POW.as_ptr())));
            (t, f16_at(p.add(52)))
        } else {
            let m3 = vdupq_n_u8(3);
            for c in 0..2 {
                let (q0, q1) = (ld(p.add(32 * c)), ld(p.add(32 * c + 16)));
                for l in 0..4 {
                    let sh = vdupq_n_s8(-2 * l as i8);
                    t[2 * (4 * c + l)] = vandq_u8(vshlq_u8(q0, sh), m3);
                    t[2 * (4 * c + l) + 1] = vandq_u8(vshlq_u8(q1, sh), m3);
                }
            }
            (t, f16_at(p.add(64)))
        }
    }
}

/// `ggml_vec_dot_tq{1,2}_0_q8_K` (see `ggml_paths::vec_dot_tq`): 8 i32
/// lanes per super-block (here `lo`: lanes 0–3, `hi`: 4–7), fused into 8 f32
/// lanes, summed in `hsum_float_8`'s order.
#[inline(always)]
unsafe fn tile_tq<const ONE: bool, D: Dot>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `w`, `a`, `out` stay within the buffers the
    // caller vouched for (the `TileFn` contract), which is what the callees'
    // contracts ask.
    unsafe {
        let nb = n / QK_K;
        let bytes = if ONE { 54 } else { 66 };
        let (w, a) = (w.as_ptr(), a.as_ptr());
        for (t, o) in out.iter_mut().enumerate() {
            let mut acc = [vdupq_n_f32(0.0); 2];
            for b in 0..nb {
                let (tr, dw) = tq_trits::<ONE>(w.add(b * bytes));
                let ab = a.add(t * s + b * 292);
                let mut lanes = [vdupq_n_s32(0); 2];
                for (c, tc) in tr.iter().enumerate() {
                    let y = vld1q_s8(ab.add(4 + 16 * c) as *const i8);
                    lanes[c % 2] = D::dot4(lanes[c % 2], s8(*tc), y);
                }
                // less bsum[2l] + bsum[2l+1]
                let bs0 = vpaddlq_s16(vld1q_s16(ab.add(4 + QK_K) as *const i16));
                let bs1 = vpaddlq_s16(vld1q_s16(ab.add(4 + QK_K + 16) as *const i16));
                let da = f32::from_le_bytes(std::ptr::read_unaligned(ab as *const [u8; 4]));
                let d = vdupq_n_f32(da * dw);
                acc[0] = vfmaq_f32(acc[0], vcvtq_f32_s32(vsubq_s32(lanes[0], bs0)), d);
                acc[1] = vfmaq_f32(acc[1], vcvtq_f32_s32(vsubq_s32(lanes[1], bs1)), d);
            }
            *o = hsum_float_8(acc[0], acc[1]);
        }
    }
}

// --- super-blocks × Q8_K

/// A super-block unpacked: 16 groups of 16 signed values, their scales and
/// minimums, the super-scales.
struct KRegs {
    q: [int8x16_t; 16],
    sc: [i32; 16],
    mins: [i16; 16],
    has_min: bool,
    d: f32,
    dmin: f32,
}

trait WK {
    const BYTES: usize;
    unsafe fn unpack(p: *const u8) -> KRegs;
}

#[inline(always)]
unsafe fn shr(v: uint8x16_t, k: i8) -> uint8x16_t {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe { vshlq_u8(v, vdupq_n_s8(-k)) }
}

/// Q4_K/Q5_K scales (per group of 16) and minimums.
#[inline(always)]
unsafe fn k4_scales(p: *const u8) -> ([i32; 16], [i16; 16]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `p` stay within the buffers the caller
    // vouched for (the same contract).
    unsafe {
        let packed: [u8; 12] = std::ptr::read_unaligned(p as *const [u8; 12]);
        let mut sc = [0i32; 16];
        let mut mins = [0i16; 16];
        for j in 0..8 {
            let (s, m) = get_scale_min_k4(j, &packed);
            sc[2 * j] = s as i32;
            sc[2 * j + 1] = s as i32;
            mins[2 * j] = m as i16;
            mins[2 * j + 1] = m as i16;
        }
        (sc, mins)
    }
}

struct WQ2K;
impl WK for WQ2K {
    const BYTES: usize = 84;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> KRegs {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let m3 = vdupq_n_u8(3);
            let mut q = [vdupq_n_s8(0); 16];
            for h in 0..2 {
                let v0 = ld(p.add(16 + 32 * h));
                let v1 = ld(p.add(16 + 32 * h + 16));
                for s in 0..4 {
                    q[8 * h + 2 * s] = s8(vandq_u8(shr(v0, 2 * s as i8), m3));
                    q[8 * h + 2 * s + 1] = s8(vandq_u8(shr(v1, 2 * s as i8), m3));
                }
            }
            let raw: [u8; 16] = std::ptr::read_unaligned(p as *const [u8; 16]);
            KRegs {
                q,
                sc: raw.map(|v| (v & 0xF) as i32),
                mins: raw.map(|v| (v >> 4) as i16),
                has_min: true,
                d: f16_at(p.add(80)),
                dmin: f16_at(p.add(82)),
            }
        }
    }
}

struct WQ3K;
impl WK for WQ3K {
    const BYTES: usize = 110;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> KRegs {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let m3 = vdupq_n_u8(3);
            let four = vdupq_n_u8(4);
            let hm = [ld(p), ld(p.add(16))];
            let mut q = [vdupq_n_s8(0); 16];
            for h in 0..2 {
                let v = [ld(p.add(32 + 32 * h)), ld(p.add(48 + 32 * h))];
                for s in 0..4 {
                    let bit = vdupq_n_u8(1u8 << (4 * h + s));
                    for half in 0..2 {
                        let low = vandq_u8(shr(v[half], 2 * s as i8), m3);
                        let set = vtstq_u8(hm[half], bit);
                        q[8 * h + 2 * s + half] = vsubq_s8(s8(low), s8(vbicq_u8(four, set)));
                    }
                }
            }
            let sb: [u8; 12] = std::ptr::read_unaligned(p.add(96) as *const [u8; 12]);
            let mut sc = [0i32; 16];
            for (j, o) in sc.iter_mut().enumerate() {
                let low = if j < 8 { sb[j] & 0xF } else { sb[j - 8] >> 4 };
                let high = (sb[8 + j % 4] >> (2 * (j / 4))) & 3;
                *o = (low | (high << 4)) as i32 - 32;
            }
            KRegs { q, sc, mins: [0; 16], has_min: false, d: f16_at(p.add(108)), dmin: 0.0 }
        }
    }
}

struct WQ4K;
impl WK for WQ4K {
    const BYTES: usize = 144;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> KRegs {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let m4 = vdupq_n_u8(0x0F);
            let mut q = [vdupq_n_s8(0); 16];
            for c in 0..4 {
                let v0 = ld(p.add(16 + 32 * c));
                let v1 = ld(p.add(32 + 32 * c));
                q[4 * c] = s8(vandq_u8(v0, m4));
                q[4 * c + 1] = s8(vandq_u8(v1, m4));
                q[4 * c + 2] = s8(vshrq_n_u8::<4>(v0));
                q[4 * c + 3] = s8(vshrq_n_u8::<4>(v1));
            }
            let (sc, mins) = k4_scales(p.add(4));
            KRegs { q, sc, mins, has_min: true, d: f16_at(p), dmin: f16_at(p.add(2)) }
        }
    }
}

struct WQ5K;
impl WK for WQ5K {
    const BYTES: usize = 176;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> KRegs {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let m4 = vdupq_n_u8(0x0F);
            let b16 = vdupq_n_u8(0x10);
            let qh = [ld(p.add(16)), ld(p.add(32))];
            let mut q = [vdupq_n_s8(0); 16];
            for c in 0..4 {
                let v = [ld(p.add(48 + 32 * c)), ld(p.add(64 + 32 * c))];
                let blo = vdupq_n_u8(1u8 << (2 * c));
                let bhi = vdupq_n_u8(1u8 << (2 * c + 1));
                for half in 0..2 {
                    let lo = vorrq_u8(vandq_u8(v[half], m4), vandq_u8(vtstq_u8(qh[half], blo), b16));
                    let hi = vorrq_u8(vshrq_n_u8::<4>(v[half]), vandq_u8(vtstq_u8(qh[half], bhi), b16));
                    q[4 * c + half] = s8(lo);
                    q[4 * c + 2 + half] = s8(hi);
                }
            }
            let (sc, mins) = k4_scales(p.add(4));
            KRegs { q, sc, mins, has_min: true, d: f16_at(p), dmin: f16_at(p.add(2)) }
        }
    }
}

struct WQ6K;
impl WK for WQ6K {
    const BYTES: usize = 210;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> KRegs {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let m4 = vdupq_n_u8(0x0F);
            let m3 = vdupq_n_u8(3);
            let b32 = vdupq_n_s8(32);
            let mut q = [vdupq_n_s8(0); 16];
            for h in 0..2 {
                for half in 0..2 {
                    let ql0 = ld(p.add(64 * h + 16 * half));
                    let ql1 = ld(p.add(64 * h + 32 + 16 * half));
                    let qh = ld(p.add(128 + 32 * h + 16 * half));
                    let hb = |k: i8| vshlq_n_u8::<4>(vandq_u8(shr(qh, k), m3));
                    let v = [
                        vorrq_u8(vandq_u8(ql0, m4), hb(0)),
                        vorrq_u8(vandq_u8(ql1, m4), hb(2)),
                        vorrq_u8(vshrq_n_u8::<4>(ql0), hb(4)),
                        vorrq_u8(vshrq_n_u8::<4>(ql1), hb(6)),
                    ];
                    for (s, x) in v.iter().enumerate() {
                        q[8 * h + 2 * s + half] = vsubq_s8(s8(*x), b32);
                    }
                }
            }
            let raw: [u8; 16] = std::ptr::read_unaligned(p.add(192) as *const [u8; 16]);
            KRegs {
                q,
                sc: raw.map(|v| v as i8 as i32),
                mins: [0; 16],
                has_min: false,
                d: f16_at(p.add(208)),
                dmin: 0.0,
            }
        }
    }
}

struct WIq4Xs;
impl WK for WIq4Xs {
    const BYTES: usize = 136;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> KRegs {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract), which is what the callees' contracts
        // ask.
        unsafe {
            let t = table();
            let mut q = [vdupq_n_s8(0); 16];
            for ib in 0..8 {
                let (lo, hi) = nibbles(p.add(8 + 16 * ib));
                q[2 * ib] = vqtbl1q_s8(t, lo);
                q[2 * ib + 1] = vqtbl1q_s8(t, hi);
            }
            let h = std::ptr::read_unaligned(p.add(2) as *const u16);
            let l: [u8; 4] = std::ptr::read_unaligned(p.add(4) as *const [u8; 4]);
            let mut sc = [0i32; 16];
            for ib in 0..8 {
                let ls = ((l[ib / 2] >> (4 * (ib % 2))) & 0xF) as i32 | ((((h >> (2 * ib)) & 3) as i32) << 4);
                sc[2 * ib] = ls - 32;
                sc[2 * ib + 1] = ls - 32;
            }
            KRegs { q, sc, mins: [0; 16], has_min: false, d: f16_at(p), dmin: 0.0 }
        }
    }
}

#[inline(always)]
#[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
unsafe fn group_k<U: WK, D: Dot, F: KFold, const T: usize>(
    nb: usize,
    w: *const u8,
    a: *const u8,
    s: usize,
    out: &mut [f32],
) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `w`, `a`, `out` stay within the buffers the
    // caller vouched for (the same contract), which is what the callees'
    // contracts ask.
    unsafe {
        let mut acc = [0f32; T];
        for b in 0..nb {
            let k = U::unpack(w.add(b * U::BYTES));
            let m0 = vld1q_s16(k.mins.as_ptr());
            let m1 = vld1q_s16(k.mins.as_ptr().add(8));
            for j in 0..T {
                let ab = a.add(j * s + b * 292);
                let aq = ab.add(4) as *const i8;
                let mut isum = vdupq_n_s32(0);
                for g in 0..16 {
                    let p = D::dot(vdupq_n_s32(0), k.q[g], vld1q_s8(aq.add(16 * g)));
                    isum = vmlaq_n_s32(isum, p, k.sc[g]);
                }
                let isum = vaddvq_s32(isum);
                let imin = if k.has_min {
                    let b0 = vld1q_s16(ab.add(260) as *const i16);
                    let b1 = vld1q_s16(ab.add(276) as *const i16);
                    let mut m = vmull_s16(vget_low_s16(b0), vget_low_s16(m0));
                    m = vmlal_high_s16(m, b0, m0);
                    m = vmlal_s16(m, vget_low_s16(b1), vget_low_s16(m1));
                    m = vmlal_high_s16(m, b1, m1);
                    vaddvq_s32(m)
                } else {
                    0
                };
                let da = f32::from_le_bytes(std::ptr::read_unaligned(ab as *const [u8; 4]));
                acc[j] = F::fold(acc[j], k.d, k.dmin, da, isum, imin);
            }
        }
        out[..T].copy_from_slice(&acc);
    }
}

/// Super-blocks × Q8_K, folded by `F` (the reference's tiled-matmul fold).
#[inline(always)]
unsafe fn tile_kf<U: WK, D: Dot, F: KFold>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `w`, `a`, `out` stay within the buffers the
    // caller vouched for (the same contract), which is what the callees'
    // contracts ask.
    unsafe {
        let nb = n / QK_K;
        let mut t = 0;
        while t + 4 <= out.len() {
            group_k::<U, D, F, 4>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 4]);
            t += 4;
        }
        while t < out.len() {
            group_k::<U, D, F, 1>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 1]);
            t += 1;
        }
    }
}

#[inline(always)]
unsafe fn tile_k_tiled<U: WK, D: Dot>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // callees' contracts ask no more than this fn's.
    unsafe { tile_kf::<U, D, TiledFold>(n, w, a, s, out) }
}

// --- float weights × f32

trait WF {
    const BYTES: usize;
    unsafe fn load4(p: *const u8) -> float32x4_t;
    fn one(b: &[u8]) -> f32;
}

struct WF32;
impl WF for WF32 {
    const BYTES: usize = 4;
    #[inline(always)]
    unsafe fn load4(p: *const u8) -> float32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract).
        unsafe { vld1q_f32(p as *const f32) }
    }
    fn one(b: &[u8]) -> f32 {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
}

struct WF16;
impl WF for WF16 {
    const BYTES: usize = 2;
    #[inline(always)]
    unsafe fn load4(p: *const u8) -> float32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract).
        unsafe { vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p as *const u16))) }
    }
    fn one(b: &[u8]) -> f32 {
        crate::quant::f16_to_f32([b[0], b[1]])
    }
}

struct WBf16;
impl WF for WBf16 {
    const BYTES: usize = 2;
    #[inline(always)]
    unsafe fn load4(p: *const u8) -> float32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
        // offsets and accesses through `p` stay within the buffers the caller
        // vouched for (the same contract).
        unsafe { vreinterpretq_f32_u32(vshll_n_u16::<16>(vld1_u16(p as *const u16))) }
    }
    fn one(b: &[u8]) -> f32 {
        crate::quant::bf16_to_f32([b[0], b[1]])
    }
}

#[inline(always)]
#[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
unsafe fn group_float<U: WF, const T: usize>(n: usize, w: &[u8], a: *const u8, s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `a`, `w`, `out` stay within the buffers the
    // caller vouched for (the same contract), which is what the callees'
    // contracts ask.
    unsafe {
        let n4 = n / 4 * 4;
        let wp = w.as_ptr();
        let mut acc = [vdupq_n_f32(0.0); T];
        let mut i = 0;
        while i < n4 {
            let wv = U::load4(wp.add(i * U::BYTES));
            for j in 0..T {
                acc[j] = vfmaq_f32(acc[j], wv, vld1q_f32(a.add(j * s + 4 * i) as *const f32));
            }
            i += 4;
        }
        for j in 0..T {
            let mut r = vaddvq_f32(acc[j]);
            for k in n4..n {
                let av = std::ptr::read_unaligned(a.add(j * s + 4 * k) as *const f32);
                r += U::one(&w[k * U::BYTES..]) * av;
            }
            out[j] = r;
        }
    }
}

#[inline(always)]
unsafe fn tile_float<U: WF>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `w`, `a`, `out` stay within the buffers the
    // caller vouched for (the same contract), which is what the callees'
    // contracts ask.
    unsafe {
        let mut t = 0;
        while t + 4 <= out.len() {
            group_float::<U, 4>(n, w, a.as_ptr().add(t * s), s, &mut out[t..t + 4]);
            t += 4;
        }
        while t < out.len() {
            group_float::<U, 1>(n, w, a.as_ptr().add(t * s), s, &mut out[t..t + 1]);
            t += 1;
        }
    }
}

// --- entry points

macro_rules! entries {
    ($($name:ident $dp:ident = $body:ident::<$w:ty>;)*) => {$(
        unsafe fn $name(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            // SAFETY: `$body` asks the `TileFn` contract, which is this fn's
            // (plain NEON: the aarch64 baseline).
            unsafe { $body::<$w, Smull>(n, w, a, s, out) }
        }
        #[target_feature(enable = "dotprod")]
        unsafe fn $dp(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            // SAFETY: `$body` asks the `TileFn` contract, which is this fn's;
            // `Sdot` needs dotprod, enabled here and checked by the caller.
            unsafe { $body::<$w, Sdot>(n, w, a, s, out) }
        }
    )*};
}

entries! {
    tile_q4_0 tile_q4_0_dp = tile32::<WQ4_0>;
    tile_q5_0 tile_q5_0_dp = tile32::<WQ5_0>;
    tile_q8_0 tile_q8_0_dp = tile32::<WQ8_0>;
    tile_iq4_nl tile_iq4_nl_dp = tile32::<WIq4Nl>;
    tile_q4_1 tile_q4_1_dp = tile32::<WQ4_1>;
    tile_q5_1 tile_q5_1_dp = tile32::<WQ5_1>;
    repack_q4_0 repack_q4_0_dp = repack32::<WQ4_0>;
    repack_iq4_nl repack_iq4_nl_dp = repack32::<WIq4Nl>;
    repack_mxfp4 repack_mxfp4_dp = repack32::<WMxfp4>;
    lut_iq4_nl lut_iq4_nl_dp = lut_pairs32::<WIq4Nl>;
    lut_mxfp4 lut_mxfp4_dp = lut_pairs32::<WMxfp4>;
    tiled_q2_k tiled_q2_k_dp = tile_k_tiled::<WQ2K>;
    tiled_q3_k tiled_q3_k_dp = tile_k_tiled::<WQ3K>;
    tiled_q4_k tiled_q4_k_dp = tile_k_tiled::<WQ4K>;
    tiled_q5_k tiled_q5_k_dp = tile_k_tiled::<WQ5K>;
    tiled_q6_k tiled_q6_k_dp = tile_k_tiled::<WQ6K>;
    tiled_iq4_xs tiled_iq4_xs_dp = tile_k_tiled::<WIq4Xs>;
}

macro_rules! tq_entries {
    ($($name:ident $dp:ident = $one:literal;)*) => {$(
        unsafe fn $name(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            // SAFETY: `tile_tq` asks the `TileFn` contract, which is this fn's
            // (plain NEON: the aarch64 baseline).
            unsafe { tile_tq::<$one, Smull>(n, w, a, s, out) }
        }
        #[target_feature(enable = "dotprod")]
        unsafe fn $dp(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            // SAFETY: as above; `Sdot` needs dotprod, enabled here and checked
            // by the caller.
            unsafe { tile_tq::<$one, Sdot>(n, w, a, s, out) }
        }
    )*};
}

tq_entries! {
    tile_tq1_0 tile_tq1_0_dp = true;
    tile_tq2_0 tile_tq2_0_dp = false;
}

/// The reference paths (`ggml_paths`): the tiled k-quant matmul with this
/// set's exact integer sums and the tiled fold; the repacked path of the
/// 32-block types and the table types' `ggml_vec_dot` (`repack32`,
/// `lut_pairs32`); the ternary, IQ1–IQ3 (`aarch64_iq`), Q1_0, Q2_0 and
/// NVFP4 (`aarch64_lowbit`) `ggml_vec_dot`s; the others by their scalar
/// definitions.
fn ggml(ty: GgmlType, path: Path) -> Option<TileFn> {
    use GgmlType::*;
    let fns = [tiled_q2_k, tiled_q3_k, tiled_q4_k, tiled_q5_k, tiled_q6_k, tiled_iq4_xs];
    match (path, ty) {
        // (the IQ1–IQ3 types: the scalar emulation of the tiled path)
        (Path::Tiled, _) => ggml_paths::k_entry(ty, fns).or_else(|| ggml_paths::scalar_tile(ty, path)),
        (Path::Repack, Q4_0) => Some(repack_q4_0),
        (Path::Repack, IQ4_NL) => Some(repack_iq4_nl),
        (Path::Repack, MXFP4) => Some(repack_mxfp4),
        (Path::VecDot, IQ4_NL) => Some(lut_iq4_nl),
        (Path::VecDot, MXFP4) => Some(lut_mxfp4),
        (Path::VecDot, TQ1_0) => Some(tile_tq1_0),
        (Path::VecDot, TQ2_0) => Some(tile_tq2_0),
        (Path::VecDot, IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M) => super::aarch64_iq::tile(ty),
        (Path::VecDot, Q1_0 | Q2_0 | NVFP4) => super::aarch64_lowbit::tile(ty),
        _ => ggml_paths::scalar_tile(ty, path),
    }
}

fn ggml_dp(ty: GgmlType, path: Path) -> Option<TileFn> {
    use GgmlType::*;
    let fns = [tiled_q2_k_dp, tiled_q3_k_dp, tiled_q4_k_dp, tiled_q5_k_dp, tiled_q6_k_dp, tiled_iq4_xs_dp];
    match (path, ty) {
        // (the IQ1–IQ3 types: the scalar emulation of the tiled path)
        (Path::Tiled, _) => ggml_paths::k_entry(ty, fns).or_else(|| ggml_paths::scalar_tile(ty, path)),
        (Path::Repack, Q4_0) => Some(repack_q4_0_dp),
        (Path::Repack, IQ4_NL) => Some(repack_iq4_nl_dp),
        (Path::Repack, MXFP4) => Some(repack_mxfp4_dp),
        (Path::VecDot, IQ4_NL) => Some(lut_iq4_nl_dp),
        (Path::VecDot, MXFP4) => Some(lut_mxfp4_dp),
        (Path::VecDot, TQ1_0) => Some(tile_tq1_0_dp),
        (Path::VecDot, TQ2_0) => Some(tile_tq2_0_dp),
        (Path::VecDot, IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M) => super::aarch64_iq::tile_dp(ty),
        (Path::VecDot, Q1_0 | Q2_0 | NVFP4) => super::aarch64_lowbit::tile_dp(ty),
        _ => ggml_paths::scalar_tile(ty, path),
    }
}

unsafe fn tile_f32(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // callees' contracts ask no more than this fn's.
    unsafe { tile_float::<WF32>(n, w, a, s, out) }
}
unsafe fn tile_f16(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // callees' contracts ask no more than this fn's.
    unsafe { tile_float::<WF16>(n, w, a, s, out) }
}
unsafe fn tile_bf16(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // callees' contracts ask no more than this fn's.
    unsafe { tile_float::<WBf16>(n, w, a, s, out) }
}

fn tile(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        F32 => tile_f32,
        F16 => tile_f16,
        BF16 => tile_bf16,
        Q4_0 => tile_q4_0,
        Q5_0 => tile_q5_0,
        Q8_0 => tile_q8_0,
        IQ4_NL => tile_iq4_nl,
        Q4_1 => tile_q4_1,
        Q5_1 => tile_q5_1,
        MXFP4 => lut_mxfp4,
        TQ1_0 => tile_tq1_0,
        TQ2_0 => tile_tq2_0,
        IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M => return super::aarch64_iq::tile(ty),
        Q1_0 | Q2_0 | NVFP4 => return super::aarch64_lowbit::tile(ty),
        Q2_K | Q3_K | Q4_K | Q5_K | Q6_K | IQ4_XS => return ggml_paths::vec_dot_k::scalar_tile(ty),
        _ => return None,
    })
}

fn tile_dp(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        F32 => tile_f32,
        F16 => tile_f16,
        BF16 => tile_bf16,
        Q4_0 => tile_q4_0_dp,
        Q5_0 => tile_q5_0_dp,
        Q8_0 => tile_q8_0_dp,
        IQ4_NL => tile_iq4_nl_dp,
        Q4_1 => tile_q4_1_dp,
        Q5_1 => tile_q5_1_dp,
        MXFP4 => lut_mxfp4_dp,
        TQ1_0 => tile_tq1_0_dp,
        TQ2_0 => tile_tq2_0_dp,
        IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M => return super::aarch64_iq::tile_dp(ty),
        Q1_0 | Q2_0 | NVFP4 => return super::aarch64_lowbit::tile_dp(ty),
        Q2_K | Q3_K | Q4_K | Q5_K | Q6_K | IQ4_XS => return ggml_paths::vec_dot_k::scalar_tile(ty),
        _ => return None,
    })
}

// --- activation quantizers

/// float → i32 as x86's `cvttss2si`/`cvtss2si` give it for out-of-range
/// values: `i32::MIN` for NaN and |v| >= 2^31 (NEON saturates instead).
#[inline(always)]
unsafe fn x86_range(v: float32x4_t, converted: int32x4_t) -> int32x4_t {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe {
        let ok = vcaltq_f32(v, vdupq_n_f32(2_147_483_648.0));
        vbslq_s32(ok, converted, vdupq_n_s32(i32::MIN))
    }
}

/// The low bytes of 16 i32 (C's `(int8_t)` of an int), in order.
#[inline(always)]
unsafe fn low_bytes(v: [int32x4_t; 4]) -> int8x16_t {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it.
    unsafe {
        let a = vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1]));
        let b = vcombine_s16(vmovn_s32(v[2]), vmovn_s32(v[3]));
        vcombine_s8(vmovn_s16(a), vmovn_s16(b))
    }
}

#[inline(always)]
unsafe fn amax(x: *const f32, n: usize) -> f32 {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `x` stay within the buffers the caller
    // vouched for (the same contract).
    unsafe {
        let mut m = vdupq_n_f32(0.0);
        for k in 0..n / 4 {
            m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x.add(4 * k))));
        }
        vmaxvq_f32(m)
    }
}

/// One block of 32 activations, as ggml-cpu's x86 quantizer makes them (see
/// `q8_0::act_quant`: half to even, x86 conversion, saturating packs), so
/// that every kernel set gives the same bytes; and the scale.
/// Also returns Σ of the converted i32 values (wrapping, before
/// saturation), as Q8_1's block sum takes it (see `q8_1::quantize_row_act`).
#[inline(always)]
unsafe fn q8_block(x: *const f32) -> ([int8x16_t; 2], f32, i32) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `x` stay within the buffers the caller
    // vouched for (the same contract), which is what the callees' contracts
    // ask.
    unsafe {
        let (d, id) = q8_0::act_scale_of(amax(x, QK));
        let mut out = [vdupq_n_s8(0); 2];
        let mut acc = vdupq_n_s32(0);
        for (h, o) in out.iter_mut().enumerate() {
            let mut ints = [vdupq_n_s32(0); 4];
            for (k, iv) in ints.iter_mut().enumerate() {
                let v = vrndnq_f32(vmulq_n_f32(vld1q_f32(x.add(16 * h + 4 * k)), id));
                *iv = x86_range(v, vcvtq_s32_f32(v));
                acc = vaddq_s32(acc, *iv);
            }
            let a = vcombine_s16(vqmovn_s32(ints[0]), vqmovn_s32(ints[1]));
            let b = vcombine_s16(vqmovn_s32(ints[2]), vqmovn_s32(ints[3]));
            *o = vcombine_s8(vqmovn_s16(a), vqmovn_s16(b));
        }
        (out, d, vaddvq_s32(acc))
    }
}

unsafe fn quant_q8_0(x: &[f32], out: &mut [u8]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `x`, `out` stay within the buffers the
    // caller vouched for (the same contract), which is what the callees'
    // contracts ask.
    unsafe {
        for b in 0..x.len() / QK {
            let (q, d, _) = q8_block(x.as_ptr().add(b * QK));
            let o = out.as_mut_ptr().add(b * 34);
            std::ptr::copy_nonoverlapping(f32_to_f16(d).as_ptr(), o, 2);
            vst1q_s8(o.add(2) as *mut i8, q[0]);
            vst1q_s8(o.add(18) as *mut i8, q[1]);
        }
    }
}

unsafe fn quant_q8_1(x: &[f32], out: &mut [u8]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `x`, `out` stay within the buffers the
    // caller vouched for (the same contract), which is what the callees'
    // contracts ask.
    unsafe {
        for b in 0..x.len() / QK {
            let (q, d, sum) = q8_block(x.as_ptr().add(b * QK));
            let o = out.as_mut_ptr().add(b * 36);
            std::ptr::copy_nonoverlapping(f32_to_f16(d).as_ptr(), o, 2);
            std::ptr::copy_nonoverlapping(f32_to_f16(d * sum as f32).as_ptr(), o.add(2), 2);
            vst1q_s8(o.add(4) as *mut i8, q[0]);
            vst1q_s8(o.add(20) as *mut i8, q[1]);
        }
    }
}

unsafe fn quant_q8_k(x: &[f32], out: &mut [u8]) {
    // SAFETY: NEON is part of the aarch64 baseline, so the CPU has it; the
    // offsets and accesses through `x`, `out` stay within the buffers the
    // caller vouched for (the same contract), which is what the callees'
    // contracts ask.
    unsafe {
        for b in 0..x.len() / QK_K {
            let xb = &x[b * QK_K..(b + 1) * QK_K];
            let o = out.as_mut_ptr().add(b * 292);
            let am = amax(xb.as_ptr(), QK_K);
            if am == 0.0 {
                std::ptr::write_bytes(o, 0, 292);
                continue;
            }
            let max = xb.iter().copied().find(|v| v.abs() == am).unwrap_or(am);
            let iscale = -127.0 / max;
            let lim = vdupq_n_s32(127);
            for g in 0..QK_K / 16 {
                let mut ints = [vdupq_n_s32(0); 4];
                for (k, iv) in ints.iter_mut().enumerate() {
                    let v = vmulq_n_f32(vld1q_f32(xb.as_ptr().add(16 * g + 4 * k)), iscale);
                    *iv = vminq_s32(x86_range(v, vcvtnq_s32_f32(v)), lim);
                }
                let q = low_bytes(ints);
                vst1q_s8(o.add(4 + 16 * g) as *mut i8, q);
                let sum = vaddlvq_s8(q);
                std::ptr::copy_nonoverlapping(sum.to_le_bytes().as_ptr(), o.add(260 + 2 * g), 2);
            }
            std::ptr::copy_nonoverlapping((1.0 / iscale).to_le_bytes().as_ptr(), o, 4);
        }
    }
}
