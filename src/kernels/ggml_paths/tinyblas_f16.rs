//! Emulation of the reference's products of F16 matrices with f32 inputs:
//! ggml-cpu's `ggml_compute_forward_mul_mat` converts the f32 side to f16
//! (`vec_dot_type` of F16 is F16; `ggml_cpu_fp32_to_fp16` rounds to nearest
//! even) and then, on this AVX-512 build, runs
//!
//! - llamafile's `tinyBLAS<16, __m512, __m512, ggml_fp16_t, ggml_fp16_t,
//!   float>` (`llamafile/sgemm.cpp`) when `llamafile_sgemm` takes the shape:
//!   `n ≥ 2` activation rows, `k % 16 == 0`, and `m % 4 == 0` output rows
//!   (its `matmul` returns false otherwise) — see [`runs`];
//! - else `ggml_vec_dot_f16` per output ([`crate::kernels::vecf::dot_f16`]).
//!
//! tinyBLAS gives every output element its own 16-lane accumulator: lane `i`
//! is the fused multiply-add chain of elements `i, i+16, i+32, …` in order
//! (`madd` = `_mm512_fmadd_ps`), and the result is `hsum` =
//! `_mm512_reduce_add_ps` (GCC: halves, quarters, then (0+2)+(1+3)). The
//! tile shapes (RM × RN, BM, the job split over threads) only decide which
//! thread computes an element, not how, so the result does not depend on
//! them or on the thread count.
//!
//! Kernels: on AVX-512F/VL the matmul runs the row-block kernels of
//! `avx512` ([`avx512_rows`], for every token count), on plain AVX2 those
//! of `avx2` ([`avx2_rows`]). Their ggml_vec_dot_f16 kernels come from one
//! definition (`f16_row_kernels!`, a 16-lane chain as one zmm or two ymm):
//! up to 4 rows per call on AVX-512, one on AVX2 (on the activations' f16
//! copy, [`round_act_row`]), converting the f16 weights in registers.
//! tinyBLAS reads the weights widened to f32, in tiles of weight rows ×
//! tokens: on AVX-512 3 × 8 (a zmm per output) over a panel of rows at a
//! time (in L2, every 8-token tile running over it); on AVX2 6 × 2 (a ymm
//! per output: each chain's lanes 0..8 over all columns, then lanes 8..16,
//! on widened rows and f16 tokens copied into that split layout) over each
//! block of 6 rows once per token chunk. Elsewhere the tile kernel widens each weight
//! row into a scratch row first.
//!
//! This serves the F16 weight matrices (here as tile kernels) and the
//! attention products of the path without flash attention (K·Q and V·P on
//! the f16 KV cache, `context/attention_mha.rs`), on values already rounded
//! to f16 and held in f32.

use super::super::dispatch::TileFn;
#[cfg(target_arch = "x86_64")]
use super::super::dispatch::{RowsFn, TokenMajorRowsFn};
use crate::ggml_type::GgmlType;
use crate::kernels::vecf::{self, reduce16};
use crate::quant::f16_to_f32;
use std::cell::RefCell;

/// Elements per tinyBLAS step (the f32 lanes of a `__m512`).
pub const KN: usize = 16;

/// Whether `llamafile_sgemm` runs tinyBLAS<16> for an F16 product of `m`
/// output rows (rows of the matrix), `n` activation rows and `k` columns.
pub fn runs(m: usize, n: usize, k: usize) -> bool {
    n >= 2 && k.is_multiple_of(KN) && m.is_multiple_of(4)
}

/// One tinyBLAS output: `Σ x[l]·y[l]` as 16 fused chains reduced by
/// `_mm512_reduce_add_ps` (`x.len() == y.len()`, a multiple of 16).
pub fn dot(x: &[f32], y: &[f32]) -> f32 {
    assert!(x.len() == y.len() && x.len().is_multiple_of(KN), "tinyBLAS dot: lengths {} and {}", x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() {
        // SAFETY: use_avx2() checked AVX2, FMA and F16C; the lengths are
        // checked above.
        return unsafe { avx2::dot(x, y) };
    }
    dot_scalar(x, y)
}

fn dot_scalar(x: &[f32], y: &[f32]) -> f32 {
    let mut acc = [0f32; KN];
    for (xs, ys) in x.chunks_exact(KN).zip(y.chunks_exact(KN)) {
        for i in 0..KN {
            acc[i] = xs[i].mul_add(ys[i], acc[i]);
        }
    }
    reduce16(&acc)
}

/// Which of the two reference paths a product of an F16 matrix takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum F16Path {
    TinyBlas,
    VecDot,
}

thread_local! {
    /// Per-thread scratch: one weight row and one activation row as f32.
    static SCRATCH: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// `out[t] = W_row · act[t]` by `dot` (tinyBLAS) or `vecf::dot_f16`
/// (ggml_vec_dot_f16), the activations already rounded to f16
/// ([`ActType::F16Rounded`](crate::kernels::ActType), by [`round_act_row`]
/// once per product). tinyBLAS needs `n % 16 == 0`; otherwise the
/// reference's `llamafile_sgemm` declines and it runs ggml_vec_dot_f16.
fn tile(path: F16Path, n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let path = if n.is_multiple_of(KN) { path } else { F16Path::VecDot };
    SCRATCH.with(|sc| {
        let (wf, af) = &mut *sc.borrow_mut();
        wf.resize(n, 0.0);
        widen_row(&w[..2 * n], wf);
        // the activation rows as f32: in place when the buffer is 4-aligned
        // with whole-value strides (the matmul's always is), else copied
        let nt = out.len();
        // SAFETY: every bit pattern is a valid f32.
        let (pre, whole, _) = unsafe { a.align_to::<f32>() };
        let (acts, st): (&[f32], usize) =
            if pre.is_empty() && s.is_multiple_of(4) && whole.len() >= (nt - 1) * (s / 4) + n {
                (whole, s / 4)
            } else {
                af.clear();
                for t in 0..nt {
                    af.extend(
                        a[t * s..t * s + 4 * n].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    );
                }
                (af, n)
            };
        let row = |t: usize| &acts[t * st..t * st + n];
        let mut t = 0;
        if path == F16Path::TinyBlas {
            while t + 4 <= nt {
                let r = dot4(wf, [row(t), row(t + 1), row(t + 2), row(t + 3)]);
                out[t..t + 4].copy_from_slice(&r);
                t += 4;
            }
        }
        for (t, o) in out.iter_mut().enumerate().skip(t) {
            *o = match path {
                F16Path::TinyBlas => dot(wf, row(t)),
                F16Path::VecDot => vecf::dot_f16(wf, row(t)),
            };
        }
    });
}

/// [`dot`] of `x` with each of 4 rows `y` (one pass over `x`).
fn dot4(x: &[f32], y: [&[f32]; 4]) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() && y.iter().all(|r| r.len() == x.len()) && x.len().is_multiple_of(KN) {
        // SAFETY: use_avx2() checked AVX2 and FMA; the lengths are checked.
        return unsafe { avx2::dot4(x, y) };
    }
    y.map(|r| dot(x, r))
}

/// f16 bytes → f32 (exact).
fn widen_row(bytes: &[u8], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() {
        // SAFETY: features checked; `bytes` holds 2 * out.len() bytes (the
        // caller slices it so).
        return unsafe { avx2::widen_row(bytes, out) };
    }
    for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = f16_to_f32([b[0], b[1]]);
    }
}

/// The activation row `x` rounded to f16 (`ggml_cpu_fp32_to_fp16`: nearest
/// even), written as little-endian f32 into `out[..4n]`, then as f16 into
/// `out[4n..6n]` (`n = x.len()`). The multi-token kernels read the f32 part;
/// the one-row ggml_vec_dot_f16 kernel of decodes reads the f16 copy: half
/// the bytes beside each weight row (decodes ~5 % faster). Its cost is 2n
/// bytes per row of the activation buffer.
pub fn round_act_row(x: &[f32], out: &mut [u8]) {
    let n = x.len();
    assert!(out.len() >= 6 * n, "round_act_row: output too short");
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() {
        // SAFETY: features checked; `out` holds 6 * x.len() bytes (asserted).
        return unsafe { avx2::round_row(x, out) };
    }
    let (f32s, f16s) = out.split_at_mut(4 * n);
    for ((v, b), h) in x.iter().zip(f32s.chunks_exact_mut(4)).zip(f16s.chunks_exact_mut(2)) {
        let v = half::f16::from_f32(*v);
        b.copy_from_slice(&v.to_f32().to_le_bytes());
        h.copy_from_slice(&v.to_le_bytes());
    }
}

fn tile_tinyblas(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile(F16Path::TinyBlas, n, w, a, s, out);
}

fn tile_vec_dot(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile(F16Path::VecDot, n, w, a, s, out);
}

/// The kernel for F16 weights on `path` (the same function serves every
/// kernel set: `dot`, `dot_f16` and the rounding pick their SIMD version at
/// run time, each equal to its scalar definition).
pub fn tile_fn(ty: GgmlType, path: F16Path) -> Option<TileFn> {
    match (ty, path) {
        (GgmlType::F16, F16Path::TinyBlas) => Some(tile_tinyblas),
        (GgmlType::F16, F16Path::VecDot) => Some(tile_vec_dot),
        _ => None,
    }
}

/// The row-block kernel ([`RowsFn`]) of `path` on AVX-512F, where this CPU
/// has it: several rows × several tokens per pass, ggml_vec_dot_f16's
/// converting the weights in registers, tinyBLAS's reading them widened a
/// panel at a time (see `avx512`).
#[cfg(target_arch = "x86_64")]
pub fn avx512_rows(ty: GgmlType, path: F16Path) -> Option<RowsFn> {
    if ty != GgmlType::F16 || !avx512_ok() {
        return None;
    }
    Some(match path {
        F16Path::TinyBlas => avx512::rows_tinyblas,
        F16Path::VecDot => avx512::rows_vec_dot,
    })
}

/// The tinyBLAS kernel of [`avx512_rows`] writing the matmul's
/// `[token][row]` output itself ([`TokenMajorRowsFn`]), where this CPU has
/// AVX-512F.
#[cfg(target_arch = "x86_64")]
pub fn avx512_token_major(ty: GgmlType) -> Option<TokenMajorRowsFn> {
    (ty == GgmlType::F16 && avx512_ok()).then_some(avx512::rows_tinyblas_token_major as TokenMajorRowsFn)
}

#[cfg(target_arch = "x86_64")]
pub(super) fn avx512_ok() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f") && has!("avx512vl") && has!("avx2") && has!("fma") && has!("f16c")
}

/// The tinyBLAS kernel of [`avx2_rows`] writing the matmul's `[token][row]`
/// output itself ([`TokenMajorRowsFn`]), on plain AVX2 (+FMA, F16C).
#[cfg(target_arch = "x86_64")]
pub fn avx2_token_major(ty: GgmlType) -> Option<TokenMajorRowsFn> {
    (ty == GgmlType::F16 && crate::kernels::x86_avx2::cpu_ok())
        .then_some(avx2::rows_tinyblas_token_major as TokenMajorRowsFn)
}

/// The row-block kernel ([`RowsFn`]) of `path` on plain AVX2 (+FMA, F16C):
/// the bits of the scalar definitions, as [`avx512_rows`], from the same
/// code on 8-lane vectors (see `avx2`).
#[cfg(target_arch = "x86_64")]
pub fn avx2_rows(ty: GgmlType, path: F16Path) -> Option<RowsFn> {
    if ty != GgmlType::F16 || !crate::kernels::x86_avx2::cpu_ok() {
        return None;
    }
    Some(match path {
        F16Path::TinyBlas => avx2::rows_tinyblas,
        F16Path::VecDot => avx2::rows_vec_dot,
    })
}

/// The row-block kernels of one instruction set (`avx512`, `avx2`), defined
/// in the invoking module for the target features `$features`. Per output
/// they do the float operations of the scalar definitions ([`dot_scalar`]
/// for tinyBLAS, `vecf::dot64_scalar` and the f64 tail for
/// ggml_vec_dot_f16) in the same order: each 16-lane chain of the
/// reference is `P` vectors of `LANES` lanes (`P · LANES = 16`), each lane
/// its own fused chain, and `reduce` adds the 16 lanes as `reduce16`. Only
/// the loads are shared: one weight load (or f16 → f32 conversion) serves
/// several tokens, one activation load several rows.
///
/// The module has in scope: the vector type `H`, `LANES`, `P`, and for
/// `$features` `zero() -> H`, `load_h(p) -> H` (`LANES` f16 at `p` as f32),
/// `fmadd(a, b, c) -> H` (a·b + c, fused), `add`, `reduce(&[H; P]) -> f32`.
/// It passes the row counts of one ggml_vec_dot call (`$k`) and the doc of
/// `rows_vec_dot`. Each module's own `rows_tinyblas` walks its tinyBLAS
/// tiles over weight rows widened into `WIDENED`.
#[cfg(target_arch = "x86_64")]
macro_rules! f16_row_kernels {
    ($features:literal, [$($k:literal),+], $(#[$doc:meta])*) => {
        /// The checks of every kernel here (f16 weights; activation rows of
        /// f32 then f16 values, `round_act_row`).
        #[allow(clippy::too_many_arguments)]
        fn check(n: usize, w: &[u8], ws: usize, n_rows: usize, a: &[u8], s: usize, nt: usize, out: &[f32], os: usize) {
            $crate::kernels::ggml_paths::tinyblas_f32::check_float_rows("f16", 2, 6, n, w, ws, n_rows, a, s, nt, out, os);
        }

        thread_local! {
            /// Per-thread scratch of `rows_tinyblas`: weight rows widened to
            /// f32, from a cache line (`aligned`: the kernels' 64-byte loads
            /// stay within one line).
            static WIDENED: std::cell::RefCell<$crate::kernels::aligned::AlignedF32> =
                const { std::cell::RefCell::new($crate::kernels::aligned::AlignedF32::new()) };
        }

        /// ggml_vec_dot_f16 of `R` weight rows `ws` bytes apart with one
        /// token: per row 4 chains of 16 lanes over 64-element steps,
        /// (0 + 2) + (1 + 3) per lane, `reduce`, then the `n % 64` leftovers
        /// added in f64 in order. The rows' chains are interleaved and share
        /// each activation conversion; the activations are read from the
        /// row's f16 copy (`round_act_row`), the same values.
        #[target_feature(enable = $features)]
        unsafe fn vec_dot<const R: usize>(n: usize, w: &[u8], ws: usize, a: &[u8]) -> [f32; R] {
            assert!(w.len() >= (R - 1) * ws + 2 * n && a.len() >= 6 * n, "vec_dot: shapes");
            let (w, a) = (w.as_ptr(), a.as_ptr());
            let np = n & !63;
            let mut acc = [[[zero(); P]; 4]; R];
            // SAFETY: the f16 copy starts at 4n of the 6n bytes (asserted).
            let ah = unsafe { a.add(4 * n) };
            let mut l = 0;
            while l < np {
                if R == 1 {
                    // this step's two lines of weights, prefetched ahead as
                    // the tiles' (a decode reads each stream segment's rows
                    // in turn, and one row per call, AVX2's kernel, left the
                    // stream unprefetched far enough ahead: decodes ~1.3×
                    // as fast with the prefetch)
                    // SAFETY: a prefetch does not fault (no access is made).
                    unsafe { $crate::kernels::ggml_paths::repack_tiles::x86::prefetch_ahead(w.wrapping_add(2 * l), 128) };
                }
                for c in 0..4 {
                    for p in 0..P {
                        let e = l + 16 * c + LANES * p;
                        // SAFETY: e + LANES ≤ np ≤ n (rows hold 2n bytes,
                        // the token 4n bytes of f32 then 2n of f16).
                        let av = unsafe { load_h(ah.add(2 * e)) };
                        for (r, acc) in acc.iter_mut().enumerate() {
                            // SAFETY: as above.
                            acc[c][p] = fmadd(unsafe { load_h(w.add(r * ws + 2 * e)) }, av, acc[c][p]);
                        }
                    }
                }
                l += 64;
            }
            // (loops, not `array::from_fn`: its closure was not inlined)
            let mut out = [0f32; R];
            for (r, (o, acc)) in out.iter_mut().zip(&acc).enumerate() {
                let mut v = [zero(); P];
                for (p, v) in v.iter_mut().enumerate() {
                    *v = add(add(acc[0][p], acc[2][p]), add(acc[1][p], acc[3][p]));
                }
                let mut sum = f64::from(reduce(&v));
                for k in np..n {
                    // SAFETY: k < n: row r holds 2n bytes, the token 4n of f32.
                    let (x, y) = unsafe { ([*w.add(r * ws + 2 * k), *w.add(r * ws + 2 * k + 1)], (a.add(4 * k) as *const f32).read_unaligned()) };
                    sum += f64::from(crate::quant::f16_to_f32(x) * y);
                }
                *o = sum as f32;
            }
            out
        }

        $crate::kernels::ggml_paths::tinyblas_f32::rows_vec_dot_fn!($(#[$doc])* $features, [$($k),+]);
    };
}

/// Row-block kernels on AVX-512F (`f16_row_kernels!` on one zmm per
/// 16-lane chain), with their own tinyBLAS walk (`rows_tinyblas`) and
/// 3 × 8 tile (`tile_3x8_part`).
#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    use super::KN;
    use std::arch::x86_64::*;

    /// tinyBLAS register tile: RM weight rows × RN tokens = 24 accumulators
    /// (with 3 weight vectors and an activation, 28 of the 32 registers).
    /// 8 tokens: one row's outputs are reduced together (`reduce16_x8`).
    /// Per step 3 weight vectors come from the panel in L2 and 8 from L1.
    const RM: usize = 3;
    const RN: usize = 8;

    /// One zmm holds a whole 16-lane chain.
    type H = __m512;
    const LANES: usize = 16;
    const P: usize = 1;

    /// `reduce16` of the 16 lanes of `v`: halves, quarters, then
    /// (0 + 2) + (1 + 3) (`_mm512_reduce_add_ps` as GCC emits it).
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    #[inline]
    pub(in crate::kernels::ggml_paths) unsafe fn reduce16(v: __m512) -> f32 {
        let lo = _mm512_castps512_ps256(v);
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
        let t3 = _mm256_add_ps(hi, lo);
        let t6 = _mm_add_ps(_mm256_extractf128_ps::<1>(t3), _mm256_castps256_ps128(t3));
        // u[0] = t6[0] + t6[2], u[1] = t6[1] + t6[3]
        let u = _mm_add_ps(t6, _mm_movehl_ps(t6, t6));
        _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps::<1>(u, u)))
    }

    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    #[inline]
    fn reduce(v: &[H; P]) -> f32 {
        // SAFETY: the features are enabled here.
        unsafe { reduce16(v[0]) }
    }

    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    #[inline]
    fn zero() -> H {
        _mm512_setzero_ps()
    }

    /// 16 f16 values at `p` as f32 (exact).
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    #[inline]
    unsafe fn load_h(p: *const u8) -> H {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, and `p` covers every offset
        // used here.
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i)) }
    }

    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    #[inline]
    unsafe fn load_f(p: *const u8) -> H {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, and `p` covers every offset
        // used here.
        unsafe { _mm512_loadu_ps(p as *const f32) }
    }

    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    #[inline]
    fn fmadd(a: H, b: H, c: H) -> H {
        _mm512_fmadd_ps(a, b, c)
    }

    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    #[inline]
    fn add(a: H, b: H) -> H {
        _mm512_add_ps(a, b)
    }

    f16_row_kernels!(
        "avx2,fma,f16c,avx512f,avx512vl",
        [1, 2, 3, 4],
        /// `RowsFn` of the ggml_vec_dot_f16 path, through [`vec_dot`]
        /// (`tinyblas_f32::rows_vec_dot_fn`). Rows 4 at a time: their loads
        /// in flight together, decodes ran ~10 % faster than one row a call.
        ///
        /// # Safety
        /// As [`crate::kernels::RowsFn`]; the CPU has AVX-512F/VL, AVX2, FMA, F16C.
    );

    /// tinyBLAS outputs of rows `RB` × tokens `TB` (`n % 16 == 0`):
    /// weight row `i` at `w + i·ws` (widened to f32), token `j` at
    /// `a + j·s`, output at `o + i·os + j`; one zmm per output's chains.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    unsafe fn tile<const RB: usize, const TB: usize>(
        n: usize,
        w: *const u8,
        ws: usize,
        a: *const u8,
        s: usize,
        o: *mut f32,
        os: usize,
    ) {
        let mut acc = [[zero(); TB]; RB];
        let mut l = 0;
        while l < n {
            let mut wv = [zero(); RB];
            for (i, wv) in wv.iter_mut().enumerate() {
                // SAFETY: l + 16 ≤ n: widened rows hold 4n bytes (checked
                // by the caller).
                *wv = unsafe { load_f(w.add(i * ws + 4 * l)) };
            }
            for j in 0..TB {
                // SAFETY: as above, tokens hold 4n bytes.
                let av = unsafe { load_f(a.add(j * s + 4 * l)) };
                for (acc, wv) in acc.iter_mut().zip(&wv) {
                    acc[j] = fmadd(*wv, av, acc[j]);
                }
            }
            l += KN;
        }
        for (i, acc) in acc.iter().enumerate() {
            for (j, acc) in acc.iter().enumerate() {
                // SAFETY: output (i, j) is within the caller's block.
                unsafe { *o.add(i * os + j) = reduce16(*acc) };
            }
        }
    }

    // one tile of the walk
    super::super::tinyblas_f32::tile_any_fn!("avx2,fma,f16c,avx512f,avx512vl", tile::<RM, RN>, [1, 2, 3, 4, 5, 6, 7]);

    /// `reduce16` of 8 accumulators at once, the results in order: the same
    /// additions as eight `reduce16`s (each lane pair added in the same
    /// tree: halves, quarters, then (0 + 2) + (1 + 3)), but the vectors are
    /// paired before each step, so 8 outputs take 15 shuffles, a permute and
    /// 8 adds instead of 8 × 7 operations.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    #[inline]
    pub(in crate::kernels::ggml_paths) fn reduce16_x8(v: [__m512; 8]) -> __m256 {
        // halves: [v.q0 + v.q2, v.q1 + v.q3] of two vectors in one (q = 128-bit quarter)
        let halves = |x: __m512, y: __m512| {
            _mm512_add_ps(_mm512_shuffle_f32x4::<0x44>(x, y), _mm512_shuffle_f32x4::<0xEE>(x, y))
        };
        let (h01, h23, h45, h67) = (halves(v[0], v[1]), halves(v[2], v[3]), halves(v[4], v[5]), halves(v[6], v[7]));
        // quarters: the two 4-lane halves of each 8-lane sum, four vectors in one
        let quarters = |x: __m512, y: __m512| {
            _mm512_add_ps(_mm512_shuffle_f32x4::<0x88>(x, y), _mm512_shuffle_f32x4::<0xDD>(x, y))
        };
        let (q0123, q4567) = (quarters(h01, h23), quarters(h45, h67));
        // per 128-bit lane k: [v_k: 0 + 2, 1 + 3, v_(4+k): 0 + 2, 1 + 3]
        let u = _mm512_add_ps(_mm512_shuffle_ps::<0x44>(q0123, q4567), _mm512_shuffle_ps::<0xEE>(q0123, q4567));
        // (0 + 2) + (1 + 3): v_k's sum at element 4k, v_(4+k)'s at 4k + 2
        let s = _mm512_add_ps(u, _mm512_shuffle_ps::<0xB1>(u, u));
        let order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
        _mm512_castps512_ps256(_mm512_permutexvar_ps(order, s))
    }

    /// Bytes of widened (f32) weight rows per panel: the panel stays in L2
    /// while every token tile runs over it.
    const PANEL_BYTES: usize = 384 * 1024;

    /// Columns per part of a full tile: 8 tokens' activations (24 KB) stay
    /// in L1 while the panel's row blocks stream past them.
    const PART_COLS: usize = 768;

    thread_local! {
        /// Per-thread scratch: the saved accumulators of a panel's full
        /// tiles between column parts, [row block][RM][RN] vectors.
        static SAVED: std::cell::RefCell<Vec<__m512>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// The element sizes of a tinyBLAS walk's inputs: F16 weights on
    /// activation rows of f32 then f16 values (`round_act_row`), or F32
    /// weights on f32 activations.
    #[derive(Clone, Copy)]
    struct Kind {
        f32_weights: bool,
        w_bytes: usize,
        a_bytes: usize,
        what: &'static str,
    }
    const F16: Kind = Kind { f32_weights: false, w_bytes: 2, a_bytes: 6, what: "f16" };
    const F32: Kind = Kind { f32_weights: true, w_bytes: 4, a_bytes: 4, what: "f32" };

    /// A tinyBLAS `RowsFn` on AVX-512 for `kind`'s weights: `vec_dot` (the
    /// type's ggml_vec_dot rows kernel) where `n % 16 != 0`, as llamafile
    /// declines those, else [`walk`].
    ///
    /// # Safety
    /// As [`crate::kernels::RowsFn`] (for `vec_dot` too); the CPU has
    /// AVX-512F/VL, AVX2, FMA, F16C.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    unsafe fn rows_of(
        kind: Kind,
        vec_dot: crate::kernels::dispatch::RowsFn,
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: &mut [f32],
        os: usize,
    ) {
        let k = kind;
        super::super::tinyblas_f32::check_float_rows(k.what, k.w_bytes, k.a_bytes, n, w, ws, n_rows, a, s, nt, out, os);
        if !n.is_multiple_of(KN) {
            // SAFETY: the same contract.
            return unsafe { vec_dot(n, w, ws, n_rows, a, s, nt, out, os) };
        }
        // SAFETY: checked above; output (r, t) at r·os + t of `out`.
        unsafe { walk(n, w, ws, n_rows, a, s, nt, Out { p: out.as_mut_ptr(), row: os, token: 1 }, k.f32_weights) }
    }

    /// [`rows_of`] writing `out[t · os + r]` (a
    /// [`crate::kernels::dispatch::TokenMajorRowsFn`]): straight into the
    /// matmul's `[token][row]` output, with no tile to transpose.
    ///
    /// # Safety
    /// As [`crate::kernels::dispatch::TokenMajorRowsFn`] (and [`rows_of`]'s
    /// for `vec_dot`); the CPU has AVX-512F/VL, AVX2, FMA, F16C.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    unsafe fn token_major_of(
        kind: Kind,
        vec_dot: crate::kernels::dispatch::RowsFn,
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: *mut f32,
        os: usize,
    ) {
        assert!(n_rows >= 1 && nt >= 1 && os >= n_rows, "{} rows kernel: output shape", kind.what);
        if !n.is_multiple_of(KN) {
            for t in 0..nt {
                // SAFETY: token t's n_rows outputs are contiguous at t·os
                // (the caller's contract); as a one-token row-major block
                // (stride 1) they are the RowsFn's output.
                unsafe {
                    let o = std::slice::from_raw_parts_mut(out.add(t * os), n_rows);
                    vec_dot(n, w, ws, n_rows, &a[t * s..], s, 1, o, 1)
                };
            }
            return;
        }
        let w_need = (n_rows - 1) * ws + kind.w_bytes * n;
        assert!(w.len() >= w_need && a.len() >= (nt - 1) * s + kind.a_bytes * n, "{} rows kernel: shapes", kind.what);
        // SAFETY: checked above; output (r, t) at t·os + r (the caller's).
        unsafe { walk(n, w, ws, n_rows, a, s, nt, Out { p: out, row: 1, token: os }, kind.f32_weights) }
    }

    /// `RowsFn` of F16's tinyBLAS path on AVX-512 ([`rows_of`]).
    ///
    /// # Safety
    /// As [`crate::kernels::RowsFn`]; the CPU has AVX-512F/VL, AVX2, FMA, F16C.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    pub(super) unsafe fn rows_tinyblas(
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: &mut [f32],
        os: usize,
    ) {
        // SAFETY: the same contract; `rows_vec_dot` is F16's.
        unsafe { rows_of(F16, rows_vec_dot, n, w, ws, n_rows, a, s, nt, out, os) }
    }

    /// [`rows_tinyblas`], token-major ([`token_major_of`]).
    ///
    /// # Safety
    /// As [`crate::kernels::dispatch::TokenMajorRowsFn`]; the CPU has AVX-512F/VL,
    /// AVX2, FMA, F16C.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    pub(super) unsafe fn rows_tinyblas_token_major(
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: *mut f32,
        os: usize,
    ) {
        // SAFETY: the same contract.
        unsafe { token_major_of(F16, rows_vec_dot, n, w, ws, n_rows, a, s, nt, out, os) }
    }

    /// `RowsFn` of F32 weights' tinyBLAS path on AVX-512 ([`rows_of`]): the
    /// walk over the weight rows copied a panel at a time, on the
    /// activations as they are (F32's `vec_dot_type`); the same tiles and
    /// bits as F16's on its widened rows; ggml_vec_dot_f32 where `n % 16 != 0`.
    ///
    /// # Safety
    /// As [`crate::kernels::RowsFn`]; the CPU has AVX-512F/VL, AVX2, FMA, F16C.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    pub(in crate::kernels::ggml_paths) unsafe fn rows_tinyblas_f32(
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: &mut [f32],
        os: usize,
    ) {
        // SAFETY: the same contract (AVX2 and FMA among the features).
        unsafe { rows_of(F32, super::super::tinyblas_f32::rows_vec_dot, n, w, ws, n_rows, a, s, nt, out, os) }
    }

    /// [`rows_tinyblas_f32`], token-major ([`token_major_of`]).
    ///
    /// # Safety
    /// As [`crate::kernels::dispatch::TokenMajorRowsFn`]; the CPU has AVX-512F/VL,
    /// AVX2, FMA, F16C.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    pub(in crate::kernels::ggml_paths) unsafe fn rows_tinyblas_f32_token_major(
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: *mut f32,
        os: usize,
    ) {
        // SAFETY: the same contract.
        unsafe { token_major_of(F32, super::super::tinyblas_f32::rows_vec_dot, n, w, ws, n_rows, a, s, nt, out, os) }
    }

    /// The tinyBLAS walk on AVX-512 (`n % 16 == 0`): the weight rows widened
    /// to f32 (F16) or copied (`f32_weights`) a panel at a time (in L2); per tile of `RN` tokens (in L1)
    /// every `RM`-row block of the panel, the columns in parts where 8
    /// tokens' rows would not fit L1 (SmolLM2's ffn_down, 1536 columns).
    /// Partial tiles (fewer tokens, a panel's last rows) run through a
    /// local row-major block.
    ///
    /// (About as fast as 4 × 6 tiles converting the f16 weights in
    /// registers, and faster than 3 × 8 tiles that way.)
    ///
    /// # Safety
    /// The shapes checked by the callers; every output (r, t) of `out` is
    /// valid for writes; the CPU has the features.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    unsafe fn walk(
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: Out,
        f32_weights: bool,
    ) {
        let panel_rows = (PANEL_BYTES / (4 * n) / RM * RM).max(RM);
        // a full tile's columns in `parts` parts of `part` (a multiple of 16)
        let parts = n.div_ceil(PART_COLS);
        let part = (n / KN).div_ceil(parts) * KN;
        let ap = a.as_ptr();
        WIDENED.with(|wide| {
            SAVED.with(|saved| {
                // wide: [panel rows][n] f32; saved: [row block][RM][RN]
                let (wide, saved) = (&mut *wide.borrow_mut(), &mut *saved.borrow_mut());
                let wide = wide.grown_to(panel_rows.min(n_rows) * n);
                let mut r0 = 0;
                while r0 < n_rows {
                    let pr = panel_rows.min(n_rows - r0);
                    if parts > 1 && saved.len() < pr.div_ceil(RM) * RM * RN {
                        saved.resize(pr.div_ceil(RM) * RM * RN, _mm512_setzero_ps());
                    }
                    for (i, dst) in wide.chunks_exact_mut(n).take(pr).enumerate() {
                        let row = &w[(r0 + i) * ws..];
                        if f32_weights {
                            // (F32 weights: copied, so that the panel's rows
                            // are contiguous and aligned as the tiles read them)
                            for (d, b) in dst.iter_mut().zip(row[..4 * n].chunks_exact(4)) {
                                *d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                            }
                        } else {
                            super::widen_row(&row[..2 * n], dst);
                        }
                    }
                    let wp = wide.as_ptr();
                    let mut t = 0;
                    while t < nt {
                        let tb = RN.min(nt - t);
                        let mut l0 = 0;
                        while l0 < n {
                            // a partial tile runs all columns in one go
                            let l1 = if tb == RN { (l0 + part).min(n) } else { n };
                            // the full tiles: the panel's row blocks in one call
                            let mut r = 0;
                            if tb == RN {
                                let blocks = pr / RM;
                                let save = if parts > 1 { saved.as_mut_ptr() } else { std::ptr::null_mut() };
                                // SAFETY: as below, for rows 0..blocks·RM of the
                                // panel.
                                unsafe {
                                    full_tiles(blocks, l0, l1, n, wp, ap.wrapping_add(t * s), s, save, out.at(r0, t))
                                };
                                r = blocks * RM;
                            }
                            // the partial tiles (fewer tokens, or the panel's
                            // last rows), all columns at once, through a
                            // local row-major block
                            while l0 == 0 && r < pr {
                                let rb = if r + RM <= pr { RM } else { 1 };
                                let (wr, at, o) =
                                    (wp.wrapping_add(r * n) as *const u8, ap.wrapping_add(t * s), out.at(r0 + r, t));
                                let mut block = [0f32; RM * RN];
                                // SAFETY: panel rows r..r+rb ≤ pr (widened, n
                                // f32 each), tokens t..t+tb ≤ nt and outputs
                                // (r0 + r.., t..) lie within the buffers
                                // checked by the caller.
                                unsafe {
                                    tile_any(rb, tb, n, wr, 4 * n, at, s, block.as_mut_ptr(), RN);
                                    for i in 0..rb {
                                        for j in 0..tb {
                                            *o.p.add(i * o.row + j * o.token) = block[i * RN + j];
                                        }
                                    }
                                }
                                r += rb;
                            }
                            l0 = l1;
                        }
                        t += tb;
                    }
                    r0 += pr;
                }
            });
        });
    }

    /// Columns `l0..l1` of the full tiles of `blocks` row blocks of a panel
    /// (`wp`: widened rows, `n` f32 each) and one tile of `RN` tokens at
    /// `a`; outputs from `o` on (written when `l1 == n`), the accumulators
    /// saved in `save` between parts.
    ///
    /// # Safety
    /// As [`walk`] for those rows and tokens; `save` holds RM·RN vectors per
    /// block where `l0 > 0` or `l1 < n`.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    unsafe fn full_tiles(
        blocks: usize,
        l0: usize,
        l1: usize,
        n: usize,
        wp: *const f32,
        a: *const u8,
        s: usize,
        save: *mut __m512,
        o: Out,
    ) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, and `wp`, `a`, `save` cover
        // every offset used here.
        unsafe {
            for b in 0..blocks {
                let acc = if save.is_null() { save } else { save.add(b * RM * RN) };
                tile_3x8_part(
                    l0,
                    l1,
                    wp.add(b * RM * n) as *const u8,
                    4 * n,
                    a,
                    s,
                    acc,
                    l0 == 0,
                    (l1 == n).then_some(o.at(b * RM, 0)),
                );
            }
        }
    }

    /// Where a walk's outputs go: output (row r, token t) at
    /// `p + r·row + t·token` (row-major: `token == 1`; token-major:
    /// `row == 1`).
    #[derive(Clone, Copy)]
    struct Out {
        p: *mut f32,
        row: usize,
        token: usize,
    }

    impl Out {
        /// The outputs from (row r, token t) on.
        fn at(self, r: usize, t: usize) -> Out {
            // SAFETY (of the callers' later writes): the walk only forms
            // offsets of outputs within the caller's block.
            Out { p: self.p.wrapping_add(r * self.row + t * self.token), ..self }
        }

        /// Row i's `v.len()` outputs from token 0.
        ///
        /// # Safety
        /// Those outputs are valid for writes.
        #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
        unsafe fn put_row8(self, i: usize, v: __m256) {
            // SAFETY: the caller checked that the CPU has avx2, fma, f16c,
            // avx512f, avx512vl (the contract of this `#[target_feature]` fn),
            // and that row i's 8 outputs are valid for writes (the same
            // contract).
            unsafe {
                let p = self.p.add(i * self.row);
                if self.token == 1 {
                    _mm256_storeu_ps(p, v);
                } else {
                    let mut x = [0f32; 8];
                    _mm256_storeu_ps(x.as_mut_ptr(), v);
                    for (j, x) in x.into_iter().enumerate() {
                        *p.add(j * self.token) = x;
                    }
                }
            }
        }
    }

    /// Columns `l0..l1` of a 3 × 8 tile ([`tile`] for RM × RN on widened
    /// rows, written out: with an array of accumulators LLVM kept them on
    /// the stack, a load and a store around every FMA): the 24 accumulators
    /// start at zero (`first`) or from `acc` ([row][token], 24 vectors), and
    /// at the end a row's 8 are reduced together ([`reduce16_x8`]) into `o`
    /// (`Some`) or all saved to `acc`. Saving and resuming keeps every lane's
    /// chain in order, so splitting the columns changes no bit.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl")]
    #[inline]
    unsafe fn tile_3x8_part(
        l0: usize,
        l1: usize,
        w: *const u8,
        ws: usize,
        a: *const u8,
        s: usize,
        acc: *mut __m512,
        first: bool,
        o: Option<Out>,
    ) {
        let z = _mm512_setzero_ps();
        let (mut c00, mut c01, mut c02, mut c03, mut c04, mut c05, mut c06, mut c07) = (z, z, z, z, z, z, z, z);
        let (mut c10, mut c11, mut c12, mut c13, mut c14, mut c15, mut c16, mut c17) = (z, z, z, z, z, z, z, z);
        let (mut c20, mut c21, mut c22, mut c23, mut c24, mut c25, mut c26, mut c27) = (z, z, z, z, z, z, z, z);
        macro_rules! each_acc {
            ($f:ident) => {
                $f!(0, c00);
                $f!(1, c01);
                $f!(2, c02);
                $f!(3, c03);
                $f!(4, c04);
                $f!(5, c05);
                $f!(6, c06);
                $f!(7, c07);
                $f!(8, c10);
                $f!(9, c11);
                $f!(10, c12);
                $f!(11, c13);
                $f!(12, c14);
                $f!(13, c15);
                $f!(14, c16);
                $f!(15, c17);
                $f!(16, c20);
                $f!(17, c21);
                $f!(18, c22);
                $f!(19, c23);
                $f!(20, c24);
                $f!(21, c25);
                $f!(22, c26);
                $f!(23, c27);
            };
        }
        if !first {
            macro_rules! resume {
                ($i:expr, $c:ident) => {
                    // SAFETY: acc holds 24 vectors (the caller's scratch).
                    $c = unsafe { _mm512_loadu_ps(acc.add($i) as *const f32) };
                };
            }
            each_acc!(resume);
        }
        let (w, a) = (w as *const f32, a as *const f32);
        let (ws, s) = (ws / 4, s / 4);
        let mut l = l0;
        while l < l1 {
            // SAFETY: l + 16 ≤ l1 ≤ n: the 3 rows (`ws` apart at `w`) and the
            // 8 tokens (`s` apart at `a`) hold n f32 (checked by the caller);
            // the CPU has this fn's features (its contract).
            unsafe {
                let w0 = _mm512_loadu_ps(w.add(l));
                let w1 = _mm512_loadu_ps(w.add(ws + l));
                let w2 = _mm512_loadu_ps(w.add(2 * ws + l));
                macro_rules! token {
                    ($j:expr, $c0:ident, $c1:ident, $c2:ident) => {
                        let av = _mm512_loadu_ps(a.add($j * s + l));
                        $c0 = _mm512_fmadd_ps(w0, av, $c0);
                        $c1 = _mm512_fmadd_ps(w1, av, $c1);
                        $c2 = _mm512_fmadd_ps(w2, av, $c2);
                    };
                }
                token!(0, c00, c10, c20);
                token!(1, c01, c11, c21);
                token!(2, c02, c12, c22);
                token!(3, c03, c13, c23);
                token!(4, c04, c14, c24);
                token!(5, c05, c15, c25);
                token!(6, c06, c16, c26);
                token!(7, c07, c17, c27);
            }
            l += KN;
        }
        match o {
            Some(o) => {
                // SAFETY: the 3 × 8 outputs lie within the caller's block.
                unsafe {
                    o.put_row8(0, reduce16_x8([c00, c01, c02, c03, c04, c05, c06, c07]));
                    o.put_row8(1, reduce16_x8([c10, c11, c12, c13, c14, c15, c16, c17]));
                    o.put_row8(2, reduce16_x8([c20, c21, c22, c23, c24, c25, c26, c27]));
                }
            }
            None => {
                macro_rules! save {
                    ($i:expr, $c:ident) => {
                        // SAFETY: acc holds 24 vectors (the caller's scratch).
                        unsafe { _mm512_storeu_ps(acc.add($i) as *mut f32, $c) };
                    };
                }
                each_acc!(save);
            }
        }
    }
}

/// AVX2 kernels: the tile kernel's dots, conversions and roundings, and
/// the row-block kernels (`f16_row_kernels!` on two ymm per 16-lane chain:
/// lanes 0..8, then 8..16).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::KN;
    use crate::kernels::vecf::avx2_reduce_lo_hi;
    use std::arch::x86_64::*;

    /// tinyBLAS register tile: RM weight rows × RN tokens, one ymm per
    /// output (each 16-lane chain runs as two halves, one after the other:
    /// [`tile`]): 12 accumulators, 2 activation vectors and a weight vector
    /// in the 16 registers; per 8-lane step 8 loads serve 12 FMAs, 2 of
    /// them (f16, converted in registers) from L2. (Both halves at once, 3
    /// × 2 tiles of 2 ymm per output: 10 loads for 12, 4 f32 from L2, ran
    /// 5–10 % slower; 4 × 3 about as fast.)
    const RM: usize = 6;
    const RN: usize = 2;

    /// Token chunk, in bytes of f32 activations (the chunk's f16 copy, half
    /// that, stays in L2 while every row block runs over it): each block's
    /// rows are widened once per chunk, so larger chunks widen less (128 KB
    /// ran the 576 × 1536 product ~20 % slower; 512 and 768 KB no faster).
    const CHUNK_BYTES: usize = 256 * 1024;

    /// Columns per part of a half: the 6 rows' part (18 KB of f32 at most)
    /// stays in L1 while the chunk's tokens stream past. (Parts cost: each
    /// saves and reloads every tile's accumulators; 576 columns in parts of
    /// 144 ran ~14 % slower than in one.)
    const PART_HALF: usize = 768;

    type H = __m256;
    const LANES: usize = 8;
    const P: usize = 2;

    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn reduce(v: &[H; P]) -> f32 {
        // SAFETY: the features are enabled here.
        unsafe { avx2_reduce_lo_hi(v[0], v[1]) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn zero() -> H {
        _mm256_setzero_ps()
    }

    /// 8 f16 values at `p` as f32 (exact).
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn load_h(p: *const u8) -> H {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `p` covers every offset used here.
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i)) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn fmadd(a: H, b: H, c: H) -> H {
        _mm256_fmadd_ps(a, b, c)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn add(a: H, b: H) -> H {
        _mm256_add_ps(a, b)
    }

    f16_row_kernels!(
        "avx2,fma,f16c",
        [1],
        /// `RowsFn` of the ggml_vec_dot_f16 path, through [`vec_dot`]
        /// (`tinyblas_f32::rows_vec_dot_fn`), one row at a time: its 8
        /// accumulators cover the FMA latency, and 2 rows' 16 do not fit
        /// the registers (2 rows a call ran 1.3–1.5× slower; reading the
        /// activations' f32 part instead of the f16 copy made no difference).
        ///
        /// # Safety
        /// As [`crate::kernels::RowsFn`]; the CPU has AVX2, FMA, F16C.
    );

    thread_local! {
        /// Per-thread scratch of [`walk`]: a chunk's token rows, f16 in the
        /// split layout ([`split_act_row`]), [chunk][n] f16.
        static SPLIT_ACTS: std::cell::RefCell<crate::kernels::aligned::AlignedBytes> =
            const { std::cell::RefCell::new(crate::kernels::aligned::AlignedBytes::new()) };
        /// Per-thread scratch of [`walk`]: the accumulators of a row
        /// block's tiles between column parts and halves,
        /// [chunk / RN][half][RM][RN].
        static SAVED: std::cell::RefCell<Vec<__m256>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// A row of `n` (`n % 16 == 0`) f16 weights widened (exactly) into the
    /// split layout: `dst[..n/2]` holds lanes 0..8 of every 16-element step
    /// in order, `dst[n/2..]` lanes 8..16 (so each half of a tile reads
    /// whole cache lines).
    ///
    /// # Safety
    /// `src` holds 2n bytes, `dst` n f32; the CPU has AVX2, FMA, F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn split_row(src: *const u8, n: usize, dst: *mut f32) {
        let h = n / 2;
        let mut l = 0;
        while l < n {
            // SAFETY: l + 16 ≤ n: this step's 16 values in src, dst's
            // l/2..l/2 + 8 and h + l/2..h + l/2 + 8.
            unsafe {
                let lo = _mm256_cvtph_ps(_mm_loadu_si128(src.add(2 * l) as *const __m128i));
                let hi = _mm256_cvtph_ps(_mm_loadu_si128(src.add(2 * l + 16) as *const __m128i));
                _mm256_storeu_ps(dst.add(l / 2), lo);
                _mm256_storeu_ps(dst.add(h + l / 2), hi);
            }
            l += KN;
        }
    }

    /// A token's `n` (`n % 16 == 0`) f16 values (the activation row's f16
    /// copy, [`super::round_act_row`]) into the split layout as f16: the
    /// tiles convert them in registers, 2 conversions per 12 FMAs, and read
    /// half the bytes from L2 (f32 tokens ran pp512 ~7–9 % slower).
    ///
    /// # Safety
    /// `src` and `dst` hold 2n bytes; the CPU has AVX2, FMA, F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn split_act_row(src: *const u8, n: usize, dst: *mut u8) {
        let mut l = 0;
        while l < n {
            // SAFETY: l + 16 ≤ n: this step's 32 bytes in src, dst's bytes
            // l..l + 16 and n + l..n + l + 16.
            unsafe {
                let v = _mm256_loadu_si256(src.add(2 * l) as *const __m256i);
                _mm_storeu_si128(dst.add(l) as *mut __m128i, _mm256_castsi256_si128(v));
                _mm_storeu_si128(dst.add(n + l) as *mut __m128i, _mm256_extracti128_si256::<1>(v));
            }
            l += KN;
        }
    }

    /// Elements `l0..l1` (8-lane steps, in order) of the chains of a tile
    /// of RB rows at `w` (f32) × TB tokens at `a` (f16), `n` values apart,
    /// from `c`.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn span<const RB: usize, const TB: usize>(
        mut c: [[__m256; TB]; RB],
        l0: usize,
        l1: usize,
        n: usize,
        w: *const f32,
        a: *const u16,
    ) -> [[__m256; TB]; RB] {
        let mut l = l0;
        while l < l1 {
            // SAFETY: l + 8 ≤ l1 ≤ n: rows hold n f32, tokens n f16 (the
            // caller's contract).
            unsafe {
                let mut av = [_mm256_setzero_ps(); TB];
                for (j, av) in av.iter_mut().enumerate() {
                    *av = _mm256_cvtph_ps(_mm_loadu_si128(a.add(j * n + l) as *const __m128i));
                }
                for (i, c) in c.iter_mut().enumerate() {
                    let wv = _mm256_loadu_ps(w.add(i * n + l));
                    for (c, av) in c.iter_mut().zip(&av) {
                        *c = _mm256_fmadd_ps(wv, *av, *c);
                    }
                }
            }
            l += 8;
        }
        c
    }

    /// Columns `l0..l1` of half `half` (`l1 ≤ n/2`) of a tinyBLAS tile of
    /// RB rows × TB tokens in the split layout, `n` values apart at `w`
    /// (f32) and `a` (f16): half 0 runs lanes 0..8 of every output's chain,
    /// half 1 lanes 8..16, each lane's chain in order, so the bits of
    /// [`super::dot_scalar`]. The accumulators of each half start at zero
    /// (`l0 == 0`) or from `acc` ([half][RB][TB] vectors) and go back there;
    /// at the end of half 1 (`l1 == n/2`) the two halves are reduced and
    /// output (i, j) written to `o + i·orow + j·otok`.
    ///
    /// # Safety
    /// The rows hold n f32, the tokens n f16; `acc` holds 2·RB·TB vectors (half 0's
    /// complete before half 1 ends); the outputs are valid for writes; the
    /// CPU has AVX2, FMA, F16C.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn tile<const RB: usize, const TB: usize>(
        n: usize,
        half: usize,
        l0: usize,
        l1: usize,
        w: *const f32,
        a: *const u16,
        acc: *mut __m256,
        o: *mut f32,
        orow: usize,
        otok: usize,
    ) {
        let h = n / 2;
        let acc = acc as *mut [[__m256; TB]; RB];
        // SAFETY: acc holds both halves' accumulators (the contract).
        let (mine, lo) = unsafe { (acc.add(half), acc) };
        let c = if l0 == 0 {
            [[_mm256_setzero_ps(); TB]; RB]
        } else {
            // SAFETY: as above.
            unsafe { mine.read() }
        };
        // SAFETY: the caller's contract.
        let c = unsafe { span(c, half * h + l0, half * h + l1, n, w, a) };
        if half == 0 || l1 < h {
            // SAFETY: as above.
            unsafe { mine.write(c) };
            return;
        }
        // SAFETY: half 0's accumulators, complete (the contract).
        let lo = unsafe { lo.read() };
        for i in 0..RB {
            for j in 0..TB {
                // SAFETY: output (i, j) is valid for writes (the contract).
                unsafe { *o.add(i * orow + j * otok) = avx2_reduce_lo_hi(lo[i][j], c[i][j]) };
            }
        }
    }

    /// The tinyBLAS walk on AVX2 (`n % 16 == 0`, shapes checked): per
    /// chunk of tokens, their f16 rows in the split layout (`SPLIT_ACTS`); per
    /// block of `RM` weight rows, the rows widened into it (`WIDENED`), then
    /// the first half of the columns over every tile of the chunk, then the
    /// second (each in parts of `PART_HALF`), so only a part of the rows
    /// need stay in L1. Output (r, t) to `o + r·orow + t·otok`.
    ///
    /// # Safety
    /// As [`rows_tinyblas`]; every output valid for writes.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn walk(
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        o: *mut f32,
        orow: usize,
        otok: usize,
    ) {
        let chunk = (CHUNK_BYTES / (4 * n) / RN * RN).max(RN);
        let h = n / 2;
        let part = (h / 8).div_ceil(h.div_ceil(PART_HALF)) * 8;
        let (wp, ap) = (w.as_ptr(), a.as_ptr());
        WIDENED.with(|wide| {
            SPLIT_ACTS.with(|acts| {
                SAVED.with(|saved| {
                    // wide: [RM][n] f32, acts: [chunk][n] f16 (split layout);
                    // saved: [chunk / RN][half][RM][RN] vectors
                    let (mut wide, mut acts, mut saved) = (wide.borrow_mut(), acts.borrow_mut(), saved.borrow_mut());
                    let wide = wide.grown_to(RM * n).as_mut_ptr();
                    let acts = acts.grown_to(chunk.min(nt) * 2 * n).as_mut_ptr();
                    let slots = chunk.min(nt).div_ceil(RN) * 2 * RM * RN;
                    if saved.len() < slots {
                        saved.resize(slots, _mm256_setzero_ps());
                    }
                    let saved = saved.as_mut_ptr();
                    let mut split_t0 = usize::MAX;
                    super::super::tinyblas_f32::walk_row_blocks(n_rows, nt, chunk, RM, |rb, r, t0, end| {
                        // SAFETY: rows r..r + rb ≤ n_rows and tokens
                        // t0..end ≤ nt lie within the buffers checked by the
                        // caller (a token's f16 copy at 4n of its 6n
                        // bytes); the scratch holds RM rows of n f32, a
                        // chunk of tokens of n f16 and their tiles'
                        // accumulators;
                        // the outputs are the caller's.
                        unsafe {
                            if split_t0 != t0 {
                                for t in t0..end {
                                    split_act_row(ap.add(t * s + 4 * n), n, acts.add((t - t0) * 2 * n));
                                }
                                split_t0 = t0;
                            }
                            for i in 0..rb {
                                split_row(wp.add((r + i) * ws), n, wide.add(i * n));
                            }
                            for half in 0..2 {
                                let mut l0 = 0;
                                while l0 < h {
                                    let l1 = (l0 + part).min(h);
                                    let mut t = t0;
                                    while t < end {
                                        let tb = RN.min(end - t);
                                        let a = acts.add((t - t0) * 2 * n) as *const u16;
                                        let acc = saved.add((t - t0) / RN * 2 * RM * RN);
                                        let o = o.add(r * orow + t * otok);
                                        macro_rules! tile {
                                            ($rb:expr, $tb:expr) => {
                                                tile::<$rb, $tb>(n, half, l0, l1, wide, a, acc, o, orow, otok)
                                            };
                                        }
                                        match (rb, tb) {
                                            (RM, RN) => tile!(RM, RN),
                                            (RM, _) => tile!(RM, 1),
                                            (_, RN) => tile!(1, RN),
                                            _ => tile!(1, 1),
                                        }
                                        t += tb;
                                    }
                                    l0 = l1;
                                }
                            }
                        }
                    });
                });
            });
        });
    }

    /// `RowsFn` of the tinyBLAS path ([`walk`]; ggml_vec_dot_f16's where
    /// `n % 16 != 0`, as [`super::tile`]). The weights are widened to f32
    /// a row block at a time: in 6 × 2 tiles a conversion in registers
    /// would serve only 2 tokens' FMAs, and some cores run one `vcvtph2ps`
    /// per cycle (widening first ran ~1.4× as fast as converting in 3 × 2
    /// tiles).
    ///
    /// # Safety
    /// As [`crate::kernels::RowsFn`]; the CPU has AVX2, FMA, F16C.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn rows_tinyblas(
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: &mut [f32],
        os: usize,
    ) {
        if !n.is_multiple_of(KN) {
            // SAFETY: the same contract.
            return unsafe { rows_vec_dot(n, w, ws, n_rows, a, s, nt, out, os) };
        }
        check(n, w, ws, n_rows, a, s, nt, out, os);
        // SAFETY: checked above; output (r, t) at r·os + t of `out`.
        unsafe { walk(n, w, ws, n_rows, a, s, nt, out.as_mut_ptr(), os, 1) }
    }

    /// [`rows_tinyblas`] writing `out[t · os + r]` (a
    /// [`crate::kernels::dispatch::TokenMajorRowsFn`]): each tile's outputs
    /// go straight into the matmul's `[token][row]` output, with no task
    /// tile to transpose (`scatter_tile` took ~5 % of an F16 prefill).
    ///
    /// # Safety
    /// As [`crate::kernels::dispatch::TokenMajorRowsFn`]; the CPU has AVX2,
    /// FMA, F16C.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn rows_tinyblas_token_major(
        n: usize,
        w: &[u8],
        ws: usize,
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: *mut f32,
        os: usize,
    ) {
        assert!(n_rows >= 1 && nt >= 1 && os >= n_rows, "f16 rows kernel: output shape");
        if !n.is_multiple_of(KN) {
            for t in 0..nt {
                // SAFETY: token t's n_rows outputs are contiguous at t·os
                // (the caller's contract); as a one-token row-major block
                // (stride 1) they are the RowsFn's output.
                unsafe {
                    rows_vec_dot(
                        n,
                        w,
                        ws,
                        n_rows,
                        &a[t * s..],
                        s,
                        1,
                        std::slice::from_raw_parts_mut(out.add(t * os), n_rows),
                        1,
                    )
                };
            }
            return;
        }
        assert!(w.len() >= (n_rows - 1) * ws + 2 * n && a.len() >= (nt - 1) * s + 6 * n, "f16 rows kernel: shapes");
        // SAFETY: checked above; output (r, t) at t·os + r (the caller's).
        unsafe { walk(n, w, ws, n_rows, a, s, nt, out, 1, os) }
    }

    /// [`super::dot_scalar`] with lanes 0..8 in `lo`, 8..16 in `hi`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot(x: &[f32], y: &[f32]) -> f32 {
        // SAFETY: this fn's contract: the CPU has avx2, fma, and `x`, `y` cover every offset used here.
        unsafe {
            let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
            let (px, py) = (x.as_ptr(), y.as_ptr());
            let mut l = 0;
            while l + 16 <= x.len() {
                // SAFETY: l + 16 ≤ len of both (checked by the caller).
                lo = _mm256_fmadd_ps(_mm256_loadu_ps(px.add(l)), _mm256_loadu_ps(py.add(l)), lo);
                hi = _mm256_fmadd_ps(_mm256_loadu_ps(px.add(l + 8)), _mm256_loadu_ps(py.add(l + 8)), hi);
                l += 16;
            }
            avx2_reduce_lo_hi(lo, hi)
        }
    }

    /// [`dot`] of `x` with 4 rows: per row the same 16 chains and reduction.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot4(x: &[f32], y: [&[f32]; 4]) -> [f32; 4] {
        // SAFETY: this fn's contract: the CPU has avx2, fma, and `x` covers every offset used here.
        unsafe {
            let mut lo = [_mm256_setzero_ps(); 4];
            let mut hi = [_mm256_setzero_ps(); 4];
            let px = x.as_ptr();
            let mut l = 0;
            while l + 16 <= x.len() {
                // SAFETY: l + 16 ≤ len of x and of every y (checked by the
                // caller).
                let (xl, xh) = (_mm256_loadu_ps(px.add(l)), _mm256_loadu_ps(px.add(l + 8)));
                for j in 0..4 {
                    let py = y[j].as_ptr();
                    lo[j] = _mm256_fmadd_ps(xl, _mm256_loadu_ps(py.add(l)), lo[j]);
                    hi[j] = _mm256_fmadd_ps(xh, _mm256_loadu_ps(py.add(l + 8)), hi[j]);
                }
                l += 16;
            }
            std::array::from_fn(|j| avx2_reduce_lo_hi(lo[j], hi[j]))
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn round_row(x: &[f32], out: &mut [u8]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `x`, `out` cover every offset used here.
        unsafe {
            let n = x.len();
            assert!(out.len() >= 6 * n, "round_row: output too short");
            let mut i = 0;
            while i + 8 <= n {
                // SAFETY: x holds n values, out 6n bytes.
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(x.as_ptr().add(i)));
                _mm256_storeu_ps(out.as_mut_ptr().add(4 * i) as *mut f32, _mm256_cvtph_ps(h));
                _mm_storeu_si128(out.as_mut_ptr().add(4 * n + 2 * i) as *mut __m128i, h);
                i += 8;
            }
            for k in i..n {
                let v = half::f16::from_f32(x[k]);
                out[4 * k..4 * k + 4].copy_from_slice(&v.to_f32().to_le_bytes());
                out[4 * n + 2 * k..4 * n + 2 * k + 2].copy_from_slice(&v.to_le_bytes());
            }
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn widen_row(bytes: &[u8], out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `bytes`, `out` cover every offset used here.
        unsafe {
            let n = out.len();
            assert!(bytes.len() >= 2 * n, "widen_row: input too short");
            let mut i = 0;
            while i + 8 <= n {
                // SAFETY: bytes holds 2n bytes, out n values.
                let h = _mm_loadu_si128(bytes.as_ptr().add(2 * i) as *const __m128i);
                _mm256_storeu_ps(out.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
                i += 8;
            }
            for k in i..n {
                out[k] = crate::quant::f16_to_f32([bytes[2 * k], bytes[2 * k + 1]]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                vecf::round_f16(((s >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 8.0)
            })
            .collect()
    }

    #[test]
    fn dot_is_sixteen_fused_chains_reduced_as_gcc() {
        // lanes 0 and 8 cancel in the first (halves) step, so the 1 in lane 1 survives
        let mut x = vec![0f32; 32];
        let y = vec![1f32; 32];
        x[0] = 1e8;
        x[8] = -1e8;
        x[17] = 1.0;
        assert_eq!(dot(&x, &y), 1.0);
        // a different order (lane 0 + lane 1 first) would lose it
        assert_eq!((1e8f32 + 1.0) - 1e8, 0.0);
        for n in [16, 64, 576, 1536] {
            let (a, b) = (vals(n, 7), vals(n, 9));
            assert_eq!(dot(&a, &b).to_bits(), dot_scalar(&a, &b).to_bits(), "n={n}");
        }
    }

    #[test]
    fn four_token_dots_and_unaligned_activations_give_the_single_dots_bits() {
        let n = 576;
        let w: Vec<u8> = vals(n, 3).iter().flat_map(|v| crate::quant::f32_to_f16(*v)).collect();
        let x: Vec<f32> = vals(7 * n, 5);
        let wf: Vec<f32> = w.chunks_exact(2).map(|b| f16_to_f32([b[0], b[1]])).collect();
        let rows: Vec<&[f32]> = x.chunks_exact(n).collect();
        let four = dot4(&wf, [rows[0], rows[1], rows[2], rows[3]]);
        for j in 0..4 {
            assert_eq!(four[j].to_bits(), dot(&wf, rows[j]).to_bits(), "row {j}");
        }
        // 7 activation rows (a group of 4, then 3 alone), 4-aligned in place
        // and at an odd address (copied), the same bits as one dot per row
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut odd = vec![0u8; bytes.len() + 1];
        odd[1..].copy_from_slice(&bytes);
        for path in [F16Path::TinyBlas, F16Path::VecDot] {
            let mut aligned = [0f32; 7];
            tile(path, n, &w, &bytes, 4 * n, &mut aligned);
            let mut unaligned = [0f32; 7];
            tile(path, n, &w, &odd[1..], 4 * n, &mut unaligned);
            for t in 0..7 {
                let want = if path == F16Path::TinyBlas { dot(&wf, rows[t]) } else { vecf::dot_f16(&wf, rows[t]) };
                assert_eq!(aligned[t].to_bits(), want.to_bits(), "{path:?} token {t}");
                assert_eq!(unaligned[t].to_bits(), want.to_bits(), "{path:?} token {t} unaligned");
            }
        }
    }

    /// ggml_vec_dot_f16 by its scalar definition: the 64-lane tree over the
    /// first `n & !63` elements, the rest added in f64 in order.
    #[cfg(target_arch = "x86_64")]
    fn dot_f16_scalar(x: &[f32], y: &[f32]) -> f32 {
        let np = x.len() & !63;
        let mut sum = vecf::dot64_scalar(&x[..np], &y[..np]);
        for i in np..x.len() {
            sum += f64::from(x[i] * y[i]);
        }
        sum as f32
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_row_kernels_give_the_scalar_definitions_bits() {
        let (Some(tiny), Some(vd)) =
            (avx512_rows(GgmlType::F16, F16Path::TinyBlas), avx512_rows(GgmlType::F16, F16Path::VecDot))
        else {
            skip_test!("no AVX-512F/VL on this CPU");
            return;
        };
        let token_major = avx512_token_major(GgmlType::F16).expect("AVX-512F: a token-major kernel");
        row_kernels_give_the_scalar_definitions_bits(tiny, vd, Some(token_major));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_row_kernels_give_the_scalar_definitions_bits() {
        if !crate::kernels::x86_avx2::cpu_ok() {
            skip_test!("no AVX2/FMA/F16C on this CPU");
            return;
        }
        let (Some(tiny), Some(vd)) =
            (avx2_rows(GgmlType::F16, F16Path::TinyBlas), avx2_rows(GgmlType::F16, F16Path::VecDot))
        else {
            panic!("avx2_rows (F16) gives no kernel on an AVX2 CPU");
        };
        let token_major = avx2_token_major(GgmlType::F16).expect("AVX2: a token-major kernel");
        row_kernels_give_the_scalar_definitions_bits(tiny, vd, Some(token_major));
    }

    /// The tinyBLAS and ggml_vec_dot_f16 row-block kernels `tiny`, `vd`
    /// (which this CPU runs) against the scalar definitions, output by
    /// output; and the token-major tinyBLAS kernel, if any, against them,
    /// leaving the outputs between its rows untouched.
    #[cfg(target_arch = "x86_64")]
    fn row_kernels_give_the_scalar_definitions_bits(tiny: RowsFn, vd: RowsFn, token_major: Option<TokenMajorRowsFn>) {
        // cols: whole 64-steps, 16-steps with a 64-tail (592 = 9·64 + 16),
        // and 40 (not a multiple of 16: tinyBLAS declines, vec_dot runs);
        // every row count to 9 (4-row blocks, vec_dot's 1-4 interleaved
        // rows), tokens around the 6-token tile and,
        // with 61 tokens of 576 columns, across the 54-token chunk
        // (1552 = 97·16 columns: AVX-512 tiles of 8 tokens run in three
        // column parts, of 33, 33 and 31 steps, resumed from saved
        // accumulators)
        let (max_rows, max_nt) = (9, 61);
        for n in [16, 40, 64, 576, 592, 1552] {
            let ws = 2 * n + 6; // weight rows not packed
            let s = 6 * n + 12;
            let wf: Vec<f32> = (0..max_rows)
                .flat_map(|r| {
                    vals(n, 11 + r as u32).into_iter().enumerate().map(move |(i, v)| {
                        if i % 7 == r {
                            vecf::round_f16(v * 1e3)
                        } else {
                            v
                        }
                    })
                })
                .collect();
            // odd addresses: one spare byte in front
            let mut w = vec![0u8; 1 + (max_rows - 1) * ws + 2 * n];
            for (i, v) in wf.iter().enumerate() {
                let at = 1 + (i / n) * ws + 2 * (i % n);
                w[at..at + 2].copy_from_slice(&crate::quant::f32_to_f16(*v));
            }
            // activation rows as `round_act_row` writes them: f32, then f16
            let af: Vec<f32> = vals(max_nt * n, 13).into_iter().map(vecf::round_f16).collect();
            let mut a = vec![0u8; 1 + (max_nt - 1) * s + 6 * n];
            for (t, row) in af.chunks_exact(n).enumerate() {
                round_act_row(row, &mut a[1 + t * s..1 + t * s + 6 * n]);
            }
            for n_rows in 1..=max_rows {
                for nt in [1, 2, 5, 6, 7, 8, 13, 17, 61] {
                    if (nt == 61 && n != 576) || (n == 1552 && nt != 8 && nt != 17) {
                        continue;
                    }
                    for (f, tinyblas) in [(tiny, n % KN == 0), (vd, false)] {
                        let os = nt + 3;
                        let mut out = vec![f32::NAN; (n_rows - 1) * os + nt];
                        // SAFETY: the buffers hold n_rows weight rows `ws`
                        // apart, nt activation rows `s` apart and n_rows
                        // output rows `os` apart; the CPU has the features.
                        unsafe { f(n, &w[1..], ws, n_rows, &a[1..], s, nt, &mut out, os) };
                        for r in 0..n_rows {
                            for t in 0..nt {
                                let (x, y) = (&wf[r * n..(r + 1) * n], &af[t * n..(t + 1) * n]);
                                let want = if tinyblas { dot_scalar(x, y) } else { dot_f16_scalar(x, y) };
                                let got = out[r * os + t];
                                assert_eq!(
                                    got.to_bits(),
                                    want.to_bits(),
                                    "n={n} rows={n_rows} nt={nt} r={r} t={t} tinyblas={tinyblas}: {got} vs {want}"
                                );
                            }
                        }
                    }
                    if let Some(f) = token_major {
                        // [nt][os] with 2 untouched outputs after each token's rows
                        let os = n_rows + 2;
                        let mut out = vec![f32::NAN; nt * os];
                        // SAFETY: as above; out holds nt rows of os ≥ n_rows
                        // outputs.
                        unsafe { f(n, &w[1..], ws, n_rows, &a[1..], s, nt, out.as_mut_ptr(), os) };
                        for t in 0..nt {
                            for r in 0..os {
                                let got = out[t * os + r];
                                if r >= n_rows {
                                    assert!(got.is_nan(), "n={n} rows={n_rows} nt={nt}: gap ({t}, {r}) written");
                                    continue;
                                }
                                let (x, y) = (&wf[r * n..(r + 1) * n], &af[t * n..(t + 1) * n]);
                                let want = if n % KN == 0 { dot_scalar(x, y) } else { dot_f16_scalar(x, y) };
                                assert_eq!(
                                    got.to_bits(),
                                    want.to_bits(),
                                    "token-major n={n} rows={n_rows} nt={nt} r={r} t={t}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn runs_only_where_llamafile_sgemm_takes_the_shape() {
        assert!(runs(576, 2, 576));
        assert!(!runs(576, 1, 576)); // one row: ggml_vec_dot_f16
        assert!(!runs(576, 8, 40)); // k % 16
        assert!(!runs(18, 8, 64)); // m % 4
    }

    #[test]
    fn round_act_row_rounds_like_the_scalar_conversion() {
        let x: Vec<f32> =
            (0..37).map(|i| (i as f32 - 18.0) * 1.0001e-3 + if i == 3 { 131008.0 } else { 0.0 }).collect();
        let n = x.len();
        let mut out = vec![0u8; 6 * n];
        round_act_row(&x, &mut out);
        for (i, v) in x.iter().enumerate() {
            let o = &out[4 * i..4 * i + 4];
            assert_eq!(f32::from_le_bytes([o[0], o[1], o[2], o[3]]).to_bits(), vecf::round_f16(*v).to_bits());
            let h = &out[4 * n + 2 * i..4 * n + 2 * i + 2];
            assert_eq!(h, crate::quant::f32_to_f16(*v), "f16 copy of value {i}");
        }
    }

    #[test]
    fn widen_row_converts_like_the_scalar_conversion() {
        // every f16 bit pattern but NaNs (whose payloads need not agree), at an odd address
        let bits: Vec<u16> = (0..=u16::MAX).filter(|&b| !half::f16::from_bits(b).is_nan()).collect();
        let mut bytes = vec![0u8; 1 + 2 * bits.len()];
        for (i, b) in bits.iter().enumerate() {
            bytes[1 + 2 * i..3 + 2 * i].copy_from_slice(&b.to_le_bytes());
        }
        let mut out = vec![0f32; bits.len()];
        widen_row(&bytes[1..], &mut out);
        for (o, b) in out.iter().zip(&bits) {
            assert_eq!(o.to_bits(), half::f16::from_bits(*b).to_f32().to_bits(), "f16 {b:#06x}");
        }
    }
}
