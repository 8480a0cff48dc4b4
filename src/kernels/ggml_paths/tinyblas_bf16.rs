//! Emulation of the reference's products of BF16 matrices with f32 inputs.
//! `ggml_compute_forward_mul_mat` converts the activations to bf16 first
//! (BF16's `vec_dot_type` is BF16; `ggml_cpu_fp32_to_bf16` rounds to nearest
//! even, NaN quieted: [`crate::quant::f32_to_bf16`]), then, on this
//! `-march=native` build with AVX512_BF16, runs
//!
//! - llamafile's `tinyBLAS<32, __m512, __m512bh, ggml_bf16_t, ggml_bf16_t,
//!   float>` when `llamafile_sgemm` takes the shape: `n ≥ 2` activation
//!   rows, `k % 32 == 0`, `m % 4 == 0` output rows ([`runs`]). Each output
//!   has one 16-lane accumulator; per step of 32 elements `madd` is
//!   `_mm512_dpbf16_ps`, so lane `i` takes the pair `2i, 2i+1`; the result
//!   is `_mm512_reduce_add_ps` ([`vecf::reduce16`]).
//! - else `ggml_vec_dot_bf16` per output: two such accumulators over steps
//!   of 64 (elements 0..32 of a step into `c1`, 32..64 into `c2`), each
//!   reduced to f32 and added in f64 (`0 + c1 + c2`); the `n % 64` leftovers
//!   are f32 products (exact for bf16, no flushing) added in f64 one by one;
//!   the f64 sum is rounded to f32.
//!
//! `vdpbf16ps` per lane (Intel's pseudo-code, checked against this AMD
//! EPYC's instruction on 4.8M random lanes): with denormal inputs read as
//! zero (DAZ), `acc = fma(w[2i+1], x[2i+1], acc)`, then
//! `acc = fma(w[2i], x[2i], acc)`, each rounded to nearest even with a
//! denormal result flushed to a signed zero (FTZ, tininess after rounding),
//! whatever MXCSR says ([`dp`]).
//!
//! The AVX2 versions lay each 32-element step out as its 16 even elements
//! then its 16 odd ones (weights once per call, activations once per token,
//! in a per-thread scratch), so that lane `i` of two 8-lane vectors is lane
//! `i` of the reference's accumulator.

use super::super::dispatch::TileFn;
use crate::ggml_type::GgmlType;
use crate::kernels::vecf::reduce16;
use crate::quant::{bf16_to_f32, f32_to_bf16};

/// Elements per tinyBLAS step (the bf16 lanes of a `__m512bh`).
pub const KN: usize = 32;

/// Whether `llamafile_sgemm` runs tinyBLAS<32> (AVX512_BF16) for a BF16
/// product of `m` output rows, `n` activation rows and `k` columns.
pub fn runs(m: usize, n: usize, k: usize) -> bool {
    n >= 2 && k % KN == 0 && m % 4 == 0
}

#[inline]
fn bf16_at(b: &[u8], i: usize) -> f32 {
    bf16_to_f32([b[2 * i], b[2 * i + 1]])
}

/// Activation element `i` (f32 bytes) as the reference's matmul reads it:
/// rounded to bf16.
#[inline]
fn act_at(x: &[u8], i: usize) -> f32 {
    let v = f32::from_le_bytes([x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]]);
    bf16_to_f32(f32_to_bf16(v))
}

/// A denormal read as a zero of its sign (DAZ).
#[inline]
fn daz(v: f32) -> f32 {
    if v.to_bits() & 0x7f80_0000 == 0 {
        f32::from_bits(v.to_bits() & 0x8000_0000)
    } else {
        v
    }
}

/// One product step of `vdpbf16ps`: `acc + w·x` fused, inputs DAZ, result
/// FTZ (`acc` is never denormal: every value it holds went through here).
#[inline]
pub fn dp(acc: f32, w: f32, x: f32) -> f32 {
    daz(daz(w).mul_add(daz(x), acc))
}

/// One `vdpbf16ps` lane: the odd element of the pair first.
#[inline]
fn dp_pair(acc: f32, w: &[u8], x: &[u8], e: usize) -> f32 {
    dp(dp(acc, bf16_at(w, e + 1), act_at(x, e + 1)), bf16_at(w, e), act_at(x, e))
}

/// One tinyBLAS<32> output over `n` elements (`n % 32 == 0`): `w` bf16
/// bytes, `x` f32 bytes.
pub fn sgemm_dot(n: usize, w: &[u8], x: &[u8]) -> f32 {
    let mut acc = [0f32; 16];
    for l in (0..n).step_by(KN) {
        for (i, a) in acc.iter_mut().enumerate() {
            *a = dp_pair(*a, w, x, l + 2 * i);
        }
    }
    reduce16(&acc)
}

/// `ggml_vec_dot_bf16` of `n` elements (see the module doc).
pub fn vec_dot(n: usize, w: &[u8], x: &[u8]) -> f32 {
    let np = n & !63;
    let (mut c1, mut c2) = ([0f32; 16], [0f32; 16]);
    for l in (0..np).step_by(64) {
        for i in 0..16 {
            c1[i] = dp_pair(c1[i], w, x, l + 2 * i);
            c2[i] = dp_pair(c2[i], w, x, l + 32 + 2 * i);
        }
    }
    vec_dot_tail(n, np, w, x, reduce16(&c1), reduce16(&c2))
}

/// The end of `ggml_vec_dot_bf16`: the two reduced accumulators and the
/// leftovers from element `np` on, summed in f64.
#[inline]
fn vec_dot_tail(n: usize, np: usize, w: &[u8], x: &[u8], r1: f32, r2: f32) -> f32 {
    let mut sum = 0f64 + f64::from(r1);
    sum += f64::from(r2);
    for k in np..n {
        sum += f64::from(bf16_at(w, k) * act_at(x, k));
    }
    sum as f32
}

/// Which of the two reference paths a BF16 product takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bf16Path {
    TinyBlas,
    VecDot,
}

fn tile_scalar(path: Bf16Path, n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    // tinyBLAS needs k % 32 == 0, else llamafile_sgemm declines
    let sgemm = path == Bf16Path::TinyBlas && n % KN == 0;
    for (t, o) in out.iter_mut().enumerate() {
        let x = &a[t * s..t * s + 4 * n];
        *o = if sgemm { sgemm_dot(n, w, x) } else { vec_dot(n, w, x) };
    }
}

fn scalar_tinyblas(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_scalar(Bf16Path::TinyBlas, n, w, a, s, out)
}
fn scalar_vec_dot(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_scalar(Bf16Path::VecDot, n, w, a, s, out)
}

/// The scalar kernel for BF16 weights on `path`.
pub fn scalar_tile(ty: GgmlType, path: Bf16Path) -> Option<TileFn> {
    match (ty, path) {
        (GgmlType::BF16, Bf16Path::TinyBlas) => Some(scalar_tinyblas),
        (GgmlType::BF16, Bf16Path::VecDot) => Some(scalar_vec_dot),
        _ => None,
    }
}

/// The AVX2 kernel for BF16 weights on `path`.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType, path: Bf16Path) -> Option<TileFn> {
    match (ty, path) {
        (GgmlType::BF16, Bf16Path::TinyBlas) => Some(avx2::tile_tinyblas),
        (GgmlType::BF16, Bf16Path::VecDot) => Some(avx2::tile_vec_dot),
        _ => None,
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{vec_dot_tail, Bf16Path, KN};
    use crate::kernels::vecf::avx2_reduce_lo_hi;
    use std::arch::x86_64::*;
    use std::cell::RefCell;

    thread_local! {
        /// Per-thread scratch: the weight row and one activation row, each
        /// 32-element step as [16 even][16 odd] f32 with DAZ applied.
        static SCRATCH: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    }

    /// Denormal lanes (exponent field 0) to a zero of their sign.
    #[target_feature(enable = "avx2")]
    fn daz(v: __m256i) -> __m256i {
        let zero_exp = _mm256_cmpeq_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7f80_0000)), _mm256_setzero_si256());
        _mm256_andnot_si256(_mm256_and_si256(zero_exp, _mm256_set1_epi32(0x7fff_ffff)), v)
    }

    /// Even and odd elements of 16 f32 (`v0` = 0..8, `v1` = 8..16), each in
    /// order.
    #[target_feature(enable = "avx2")]
    fn deinterleave(v0: __m256i, v1: __m256i) -> (__m256i, __m256i) {
        let (a, b) = (_mm256_castsi256_ps(v0), _mm256_castsi256_ps(v1));
        // per 128-bit half: [a0 a2 b0 b2], then the 64-bit quarters reordered
        let e = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
        let o = _mm256_shuffle_ps::<0b11_01_11_01>(a, b);
        let fix = |v: __m256| _mm256_castpd_si256(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)));
        (fix(e), fix(o))
    }

    /// 16 bf16 weights at `p` → f32 bits (exact), `(0..8, 8..16)`.
    #[target_feature(enable = "avx2")]
    unsafe fn load_w16(p: *const u8) -> (__m256i, __m256i) {
        // SAFETY: the caller guarantees 32 bytes at p.
        let lo = _mm256_cvtepu16_epi32(_mm_loadu_si128(p as *const __m128i));
        let hi = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.add(16) as *const __m128i));
        (_mm256_slli_epi32::<16>(lo), _mm256_slli_epi32::<16>(hi))
    }

    /// 8 f32 activations at `p` rounded to bf16 as `f32_to_bf16` does
    /// (nearest even; a NaN keeps its top bits and is quieted).
    #[target_feature(enable = "avx2")]
    unsafe fn load_act8(p: *const u8) -> __m256i {
        // SAFETY: the caller guarantees 32 bytes at p.
        let u = _mm256_loadu_si256(p as *const __m256i);
        let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(u), _mm256_set1_epi32(1));
        let r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
        let nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fff_ffff)), _mm256_set1_epi32(0x7f80_0000));
        let q = _mm256_or_si256(u, _mm256_set1_epi32(0x0040_0000));
        _mm256_and_si256(_mm256_blendv_epi8(r, q, nan), _mm256_set1_epi32(0xffff_0000u32 as i32))
    }

    /// Lays out the first `nl` (a multiple of 32) weights of `w` as the
    /// kernels read them.
    #[target_feature(enable = "avx2")]
    unsafe fn prep_weights(nl: usize, w: &[u8], out: &mut [f32]) {
        let mut l = 0;
        while l < nl {
            // SAFETY: l + 32 ≤ nl ≤ the row's values; out holds nl floats.
            let (a0, a1) = load_w16(w.as_ptr().add(2 * l));
            let (b0, b1) = load_w16(w.as_ptr().add(2 * l + 32));
            store_step(out.as_mut_ptr().add(l), [daz(a0), daz(a1), daz(b0), daz(b1)]);
            l += KN;
        }
    }

    /// Same for the activations of one token (f32 bytes).
    #[target_feature(enable = "avx2")]
    unsafe fn prep_act(nl: usize, x: &[u8], out: &mut [f32]) {
        let mut l = 0;
        while l < nl {
            // SAFETY: l + 32 ≤ nl ≤ the row's values; out holds nl floats.
            let p = x.as_ptr().add(4 * l);
            let v = [load_act8(p), load_act8(p.add(32)), load_act8(p.add(64)), load_act8(p.add(96))];
            store_step(out.as_mut_ptr().add(l), [daz(v[0]), daz(v[1]), daz(v[2]), daz(v[3])]);
            l += KN;
        }
    }

    /// 32 values in order → [16 even][16 odd] at `o`.
    #[target_feature(enable = "avx2")]
    unsafe fn store_step(o: *mut f32, v: [__m256i; 4]) {
        let (e0, o0) = deinterleave(v[0], v[1]);
        let (e1, o1) = deinterleave(v[2], v[3]);
        // SAFETY: the caller guarantees 32 floats at o.
        _mm256_storeu_si256(o as *mut __m256i, e0);
        _mm256_storeu_si256(o.add(8) as *mut __m256i, e1);
        _mm256_storeu_si256(o.add(16) as *mut __m256i, o0);
        _mm256_storeu_si256(o.add(24) as *mut __m256i, o1);
    }

    /// `vdpbf16ps` half-step on 8 lanes: fused, denormal results flushed.
    #[target_feature(enable = "avx2,fma")]
    fn dp8(acc: __m256, w: __m256, x: __m256) -> __m256 {
        let r = _mm256_fmadd_ps(w, x, acc);
        let abs = _mm256_set1_ps(f32::from_bits(0x7fff_ffff));
        let tiny = _mm256_cmp_ps::<_CMP_LT_OQ>(_mm256_and_ps(r, abs), _mm256_set1_ps(f32::MIN_POSITIVE));
        _mm256_andnot_ps(_mm256_and_ps(tiny, abs), r)
    }

    /// One 32-element step at `w`, `x` (laid out) into the lanes `lo`, `hi`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn step(w: *const f32, x: *const f32, lo: &mut __m256, hi: &mut __m256) {
        // SAFETY: the caller guarantees 32 floats at both.
        let ld = |p: *const f32, k: usize| _mm256_loadu_ps(p.add(k));
        *lo = dp8(dp8(*lo, ld(w, 16), ld(x, 16)), ld(w, 0), ld(x, 0));
        *hi = dp8(dp8(*hi, ld(w, 24), ld(x, 24)), ld(w, 8), ld(x, 8));
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile(path: Bf16Path, n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        let sgemm = path == Bf16Path::TinyBlas && n % KN == 0;
        // elements in the accumulator lanes; the rest are vec_dot's leftovers
        let nl = if sgemm { n } else { n & !63 };
        SCRATCH.with(|sc| {
            let (wf, xf) = &mut *sc.borrow_mut();
            wf.resize(nl, 0.0);
            xf.resize(nl, 0.0);
            prep_weights(nl, w, wf);
            for (t, o) in out.iter_mut().enumerate() {
                let x = &a[t * s..t * s + 4 * n];
                prep_act(nl, x, xf);
                let (pw, px) = (wf.as_ptr(), xf.as_ptr());
                *o = if sgemm {
                    let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
                    for l in (0..nl).step_by(KN) {
                        step(pw.add(l), px.add(l), &mut lo, &mut hi);
                    }
                    avx2_reduce_lo_hi(lo, hi)
                } else {
                    let z = _mm256_setzero_ps();
                    let (mut c1, mut c2) = ([z, z], [z, z]);
                    for l in (0..nl).step_by(64) {
                        let [c1l, c1h] = &mut c1;
                        step(pw.add(l), px.add(l), c1l, c1h);
                        let [c2l, c2h] = &mut c2;
                        step(pw.add(l + 32), px.add(l + 32), c2l, c2h);
                    }
                    let (r1, r2) = (avx2_reduce_lo_hi(c1[0], c1[1]), avx2_reduce_lo_hi(c2[0], c2[1]));
                    vec_dot_tail(n, nl, w, x, r1, r2)
                };
            }
        })
    }

    /// # Safety
    /// The `TileFn` contract (AVX2 and FMA present).
    pub(super) unsafe fn tile_tinyblas(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        tile(Bf16Path::TinyBlas, n, w, a, s, out)
    }

    /// # Safety
    /// The `TileFn` contract (AVX2 and FMA present).
    pub(super) unsafe fn tile_vec_dot(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        tile(Bf16Path::VecDot, n, w, a, s, out)
    }
}
