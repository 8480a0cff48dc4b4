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
//! This serves the F16 weight matrices (here as tile kernels) and the
//! attention products of the path without flash attention (K·Q and V·P on
//! the f16 KV cache, `context/attention_mha.rs`), on values already rounded
//! to f16 and held in f32.

use super::super::dispatch::TileFn;
use crate::ggml_type::GgmlType;
use crate::kernels::vecf::{self, reduce16};
use crate::quant::f16_to_f32;
use std::cell::RefCell;

/// Elements per tinyBLAS step (the f32 lanes of a `__m512`).
pub const KN: usize = 16;

/// Whether `llamafile_sgemm` runs tinyBLAS<16> for an F16 product of `m`
/// output rows (rows of the matrix), `n` activation rows and `k` columns.
pub fn runs(m: usize, n: usize, k: usize) -> bool {
    n >= 2 && k % KN == 0 && m % 4 == 0
}

/// One tinyBLAS output: `Σ x[l]·y[l]` as 16 fused chains reduced by
/// `_mm512_reduce_add_ps` (`x.len() == y.len()`, a multiple of 16).
pub fn dot(x: &[f32], y: &[f32]) -> f32 {
    assert!(x.len() == y.len() && x.len() % KN == 0, "tinyBLAS dot: lengths {} and {}", x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() {
        // SAFETY: use_avx2() checked AVX2, FMA and F16C; the lengths are checked above.
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
    let path = if n % KN == 0 { path } else { F16Path::VecDot };
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
            if pre.is_empty() && s % 4 == 0 && whole.len() >= (nt - 1) * (s / 4) + n {
                (whole, s / 4)
            } else {
                af.clear();
                for t in 0..nt {
                    af.extend(a[t * s..t * s + 4 * n].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
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
        for t in t..nt {
            out[t] = match path {
                F16Path::TinyBlas => dot(wf, row(t)),
                F16Path::VecDot => vecf::dot_f16(wf, row(t)),
            };
        }
    });
}

/// [`dot`] of `x` with each of 4 rows `y` (one pass over `x`).
fn dot4(x: &[f32], y: [&[f32]; 4]) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() && y.iter().all(|r| r.len() == x.len()) && x.len() % KN == 0 {
        // SAFETY: use_avx2() checked AVX2 and FMA; the lengths are checked.
        return unsafe { avx2::dot4(x, y) };
    }
    y.map(|r| dot(x, r))
}

/// f16 bytes → f32 (exact).
fn widen_row(bytes: &[u8], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() {
        // SAFETY: features checked; `bytes` holds 2 * out.len() bytes (the caller slices it so).
        return unsafe { avx2::widen_row(bytes, out) };
    }
    for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = f16_to_f32([b[0], b[1]]);
    }
}

/// The activation row `x` rounded to f16 (`ggml_cpu_fp32_to_fp16`: nearest
/// even), written as little-endian f32 into `out` (`4 * x.len()` bytes).
pub fn round_act_row(x: &[f32], out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() {
        // SAFETY: features checked; `out` holds 4 * x.len() bytes (the caller checks).
        return unsafe { avx2::round_row(x, out) };
    }
    for (v, b) in x.iter().zip(out.chunks_exact_mut(4)) {
        b.copy_from_slice(&vecf::round_f16(*v).to_le_bytes());
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use crate::kernels::vecf::avx2_reduce_lo_hi;
    use std::arch::x86_64::*;

    /// [`super::dot_scalar`] with lanes 0..8 in `lo`, 8..16 in `hi`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot(x: &[f32], y: &[f32]) -> f32 {
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

    /// [`dot`] of `x` with 4 rows: per row the same 16 chains and reduction.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot4(x: &[f32], y: [&[f32]; 4]) -> [f32; 4] {
        let mut lo = [_mm256_setzero_ps(); 4];
        let mut hi = [_mm256_setzero_ps(); 4];
        let px = x.as_ptr();
        let mut l = 0;
        while l + 16 <= x.len() {
            // SAFETY: l + 16 ≤ len of x and of every y (checked by the caller).
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

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn round_row(x: &[f32], out: &mut [u8]) {
        let n = x.len();
        assert!(out.len() >= 4 * n, "round_row: output too short");
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: x holds n values, out 4n bytes.
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(x.as_ptr().add(i)));
            _mm256_storeu_ps(out.as_mut_ptr().add(4 * i) as *mut f32, _mm256_cvtph_ps(h));
            i += 8;
        }
        for k in i..n {
            out[4 * k..4 * k + 4].copy_from_slice(&crate::kernels::vecf::round_f16(x[k]).to_le_bytes());
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn widen_row(bytes: &[u8], out: &mut [f32]) {
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

    #[test]
    fn runs_only_where_llamafile_sgemm_takes_the_shape() {
        assert!(runs(576, 2, 576));
        assert!(!runs(576, 1, 576)); // one row: ggml_vec_dot_f16
        assert!(!runs(576, 8, 40)); // k % 16
        assert!(!runs(18, 8, 64)); // m % 4
    }

    #[test]
    fn round_act_row_rounds_like_the_scalar_conversion() {
        let x: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 1.0001e-3 + if i == 3 { 131008.0 } else { 0.0 }).collect();
        let mut out = vec![0u8; 4 * x.len()];
        round_act_row(&x, &mut out);
        for (o, v) in out.chunks_exact(4).zip(&x) {
            assert_eq!(f32::from_le_bytes([o[0], o[1], o[2], o[3]]).to_bits(), vecf::round_f16(*v).to_bits());
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
