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

/// `out[t] = W_row · f16(act[t])` by `dot` (tinyBLAS) or `vecf::dot_f16`
/// (ggml_vec_dot_f16). tinyBLAS needs `n % 16 == 0`; otherwise the
/// reference's `llamafile_sgemm` declines and it runs ggml_vec_dot_f16.
fn tile(path: F16Path, n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let path = if n % KN == 0 { path } else { F16Path::VecDot };
    SCRATCH.with(|sc| {
        let (wf, af) = &mut *sc.borrow_mut();
        wf.clear();
        wf.extend(w[..2 * n].chunks_exact(2).map(|b| f16_to_f32([b[0], b[1]])));
        af.resize(n, 0.0);
        for (t, o) in out.iter_mut().enumerate() {
            let row = &a[t * s..t * s + 4 * n];
            round_row(row, af);
            *o = match path {
                F16Path::TinyBlas => dot(wf, af),
                F16Path::VecDot => vecf::dot_f16(wf, af),
            };
        }
    });
}

/// Little-endian f32 bytes → f32 rounded to f16 (`ggml_cpu_fp32_to_fp16`).
fn round_row(bytes: &[u8], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() {
        // SAFETY: features checked; `bytes` holds 4 * out.len() bytes (the callers slice it so).
        return unsafe { avx2::round_row(bytes, out) };
    }
    for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *o = vecf::round_f16(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
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

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn round_row(bytes: &[u8], out: &mut [f32]) {
        let n = out.len();
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: bytes holds 4n bytes, out n values.
            let v = _mm256_loadu_ps(bytes.as_ptr().add(4 * i) as *const f32);
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
            _mm256_storeu_ps(out.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            i += 8;
        }
        for k in i..n {
            let b = &bytes[4 * k..4 * k + 4];
            out[k] = crate::kernels::vecf::round_f16(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
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
    fn runs_only_where_llamafile_sgemm_takes_the_shape() {
        assert!(runs(576, 2, 576));
        assert!(!runs(576, 1, 576)); // one row: ggml_vec_dot_f16
        assert!(!runs(576, 8, 40)); // k % 16
        assert!(!runs(18, 8, 64)); // m % 4
    }

    #[test]
    fn round_row_rounds_like_the_scalar_conversion() {
        let x: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 1.0001e-3 + if i == 3 { 131008.0 } else { 0.0 }).collect();
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = vec![0f32; x.len()];
        round_row(&bytes, &mut out);
        for (o, v) in out.iter().zip(&x) {
            assert_eq!(o.to_bits(), vecf::round_f16(*v).to_bits());
        }
    }
}
