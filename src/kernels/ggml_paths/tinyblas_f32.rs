//! Emulation of the reference's products of F32 matrices with f32 inputs
//! (`ggml_compute_forward_mul_mat`, F32's `vec_dot_type` is F32, so the
//! activations are used as they are). On this AVX-512 build it runs
//!
//! - llamafile's `tinyBLAS<16, __m512, __m512, float, float, float>`
//!   (`llamafile/sgemm.cpp`) when `llamafile_sgemm` takes the shape: `n ≥ 2`
//!   activation rows, `k % 16 == 0`, `m % 4 == 0` output rows ([`runs`]).
//!   Every output element has its own 16-lane accumulator: lane `i` is the
//!   fused multiply-add chain of elements `i, i+16, i+32, …` in order, and
//!   the result is `hsum` = GCC's `_mm512_reduce_add_ps`
//!   ([`vecf::reduce16`]). The tile shapes and the thread split only decide
//!   who computes an element, not how.
//! - else `ggml_vec_dot_f32` per output, whose AVX-512 code (as GCC 12
//!   compiled it, `-march=native`) keeps 4 × 16 fused lanes over steps of
//!   64, reduces them `(s0+s2)+(s1+s3)` then by `reduce16` into an f32, and
//!   adds the `n % 64` leftovers in order: blocks of 16, then one of 8, as
//!   a rounded product added to the sum (GCC vectorised the products), and
//!   the last `n % 8` fused (`vfmadd231ss`).
//!
//! Weights and activations are read straight from their bytes (any
//! alignment); the AVX2 versions give the scalar definitions' bits.

use super::super::dispatch::TileFn;
use crate::ggml_type::GgmlType;
use crate::kernels::vecf::reduce16;

/// Elements per tinyBLAS step (the f32 lanes of a `__m512`).
pub const KN: usize = 16;

/// Whether `llamafile_sgemm` runs tinyBLAS<16> for an F32 product of `m`
/// output rows, `n` activation rows and `k` columns.
pub fn runs(m: usize, n: usize, k: usize) -> bool {
    n >= 2 && k.is_multiple_of(KN) && m.is_multiple_of(4)
}

#[inline]
fn f32_at(b: &[u8], i: usize) -> f32 {
    f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
}

/// One tinyBLAS<16> output: `w · x` over `n` elements (`n % 16 == 0`),
/// `w` and `x` little-endian f32 bytes.
pub fn sgemm_dot(n: usize, w: &[u8], x: &[u8]) -> f32 {
    let mut acc = [0f32; KN];
    for l in (0..n).step_by(KN) {
        for (i, a) in acc.iter_mut().enumerate() {
            *a = f32_at(w, l + i).mul_add(f32_at(x, l + i), *a);
        }
    }
    reduce16(&acc)
}

/// `ggml_vec_dot_f32` of `n` elements (see the module doc).
pub fn vec_dot(n: usize, w: &[u8], x: &[u8]) -> f32 {
    let np = n & !63;
    let mut acc = [[0f32; 16]; 4];
    for l in (0..np).step_by(64) {
        for (j, aj) in acc.iter_mut().enumerate() {
            for (i, a) in aj.iter_mut().enumerate() {
                *a = f32_at(w, l + 16 * j + i).mul_add(f32_at(x, l + 16 * j + i), *a);
            }
        }
    }
    let mut r = [0f32; 16];
    for (i, ri) in r.iter_mut().enumerate() {
        *ri = (acc[0][i] + acc[2][i]) + (acc[1][i] + acc[3][i]);
    }
    vec_dot_tail(n, np, w, x, reduce16(&r))
}

/// The leftovers of `ggml_vec_dot_f32` from element `np` on, added to `sum`
/// (its loops of 16, then 8 rounded products, then the fused rest: the order
/// of [`crate::kernels::vecf::dot_f32_tail`]).
#[inline]
fn vec_dot_tail(n: usize, np: usize, w: &[u8], x: &[u8], sum: f32) -> f32 {
    crate::kernels::vecf::dot_f32_tail(np, n, sum, |k| f32_at(w, k), |k| f32_at(x, k))
}

/// Which of the two reference paths a product of float weights takes (F32
/// and BF16).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FloatPath {
    TinyBlas,
    VecDot,
}

/// A dot of `n` elements: weight row bytes, activation row bytes (f32).
pub(super) type DotFn = fn(n: usize, w: &[u8], x: &[u8]) -> f32;

/// `out[t]` for the f32 activation rows `s` bytes apart in `a`: `sgemm` on
/// the tinyBLAS path when `n % kn == 0` (else `llamafile_sgemm` declines),
/// else `vec_dot`.
#[allow(clippy::too_many_arguments)]
pub(super) fn tile_rows(
    path: FloatPath,
    kn: usize,
    sgemm: DotFn,
    vec_dot: DotFn,
    n: usize,
    w: &[u8],
    a: &[u8],
    s: usize,
    out: &mut [f32],
) {
    let f = if path == FloatPath::TinyBlas && n.is_multiple_of(kn) { sgemm } else { vec_dot };
    for (t, o) in out.iter_mut().enumerate() {
        *o = f(n, w, &a[t * s..t * s + 4 * n]);
    }
}

/// The checks of the float row-block kernels (F16, BF16, F32 on AVX-512):
/// the [`crate::kernels::RowsFn`] contract's buffer sizes for weights of
/// `w_bytes` and activation rows of `act_bytes` bytes per element (`what`
/// names the kernel in the message).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub(super) fn check_float_rows(
    what: &str,
    w_bytes: usize,
    act_bytes: usize,
    n: usize,
    w: &[u8],
    ws: usize,
    n_rows: usize,
    a: &[u8],
    s: usize,
    nt: usize,
    out: &[f32],
    os: usize,
) {
    super::super::dispatch::assert_rows_out(n_rows, nt, out.len(), os);
    assert!(w.len() >= (n_rows - 1) * ws + w_bytes * n, "{what} rows kernel: weights too short");
    assert!(a.len() >= (nt - 1) * s + act_bytes * n, "{what} rows kernel: activations too short");
}

/// The walk of the float row-block kernels (F16, BF16 on AVX-512) over
/// `n_rows` weight rows × `nt` tokens: tokens in chunks of `chunk` (every
/// row block runs over a chunk before the next, so its activations stay in
/// L2), rows in blocks of `rm` then one by one, tokens in tiles of `rn` then
/// the rest. `tile(rows, tokens, row0, token0)` computes one tile.
#[cfg(target_arch = "x86_64")]
pub(super) fn walk_tiles(
    n_rows: usize,
    nt: usize,
    chunk: usize,
    rm: usize,
    rn: usize,
    mut tile: impl FnMut(usize, usize, usize, usize),
) {
    walk_row_blocks(n_rows, nt, chunk, rm, |rb, r, t0, end| {
        let mut t = t0;
        while t < end {
            let tb = rn.min(end - t);
            tile(rb, tb, r, t);
            t += tb;
        }
    });
}

/// The row blocks of [`walk_tiles`] in its order: `block(rows, row0,
/// token0, token_end)` for every chunk of tokens and block of rows.
#[cfg(target_arch = "x86_64")]
pub(super) fn walk_row_blocks(
    n_rows: usize,
    nt: usize,
    chunk: usize,
    rm: usize,
    mut block: impl FnMut(usize, usize, usize, usize),
) {
    let mut t0 = 0;
    while t0 < nt {
        let end = t0 + chunk.max(1).min(nt - t0);
        let mut r = 0;
        while r < n_rows {
            let rb = if r + rm <= n_rows { rm } else { 1 };
            block(rb, r, t0, end);
            r += rb;
        }
        t0 = end;
    }
}

/// Defines `tile_any(rb, tb, n, w, ws, a, s, o, os)` for a float row
/// kernel module (with `RM`, `RN` and a const-generic `tile::<RB, TB>` in
/// scope), enabled for `$features`: one tile of [`walk_tiles`], `rb` rows
/// (`RM` or 1) × `tb` tokens (`RN` or one of the `$tb`, by default 1..=5),
/// the full `RM × RN` one by `$full`.
#[cfg(target_arch = "x86_64")]
macro_rules! tile_any_fn {
    ($features:literal, $full:expr) => {
        $crate::kernels::ggml_paths::tinyblas_f32::tile_any_fn!($features, $full, [1, 2, 3, 4, 5]);
    };
    ($features:literal, $full:expr, [$($tb:literal),*]) => {
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = $features)]
        unsafe fn tile_any(rb: usize, tb: usize, n: usize, w: *const u8, ws: usize, a: *const u8, s: usize, o: *mut f32, os: usize) {
            // SAFETY: the caller's tile lies within its buffers.
            unsafe {
                match (rb, tb) {
                    (RM, RN) => $full(n, w, ws, a, s, o, os),
                    $((RM, $tb) => tile::<RM, $tb>(n, w, ws, a, s, o, os),)*
                    (_, RN) => tile::<1, RN>(n, w, ws, a, s, o, os),
                    $((_, $tb) => tile::<1, $tb>(n, w, ws, a, s, o, os),)*
                    _ => unreachable!("tile of {rb} × {tb}"),
                }
            }
        }
    };
}
#[cfg(target_arch = "x86_64")]
pub(super) use tile_any_fn;

/// Defines the one-token-at-a-time `RowsFn` `rows_vec_dot` of a float row
/// kernel module (with `check` and a const-generic `vec_dot::<R>(n, w, ws,
/// a) -> [f32; R]` over `R` weight rows `ws` bytes apart in scope), enabled
/// for `$features`: per token, the rows as many at a time as the largest of
/// the `$k` (by default 4; fewer where the accumulators of 4 rows do not
/// fit the registers), the rest by the smaller ones. A decode hands it one
/// row of each of its stream segments (`matmul.rs`,
/// `KernelSet::decode_rows_fn`), whose loads are then in flight together.
#[cfg(target_arch = "x86_64")]
macro_rules! rows_vec_dot_fn {
    ($(#[$doc:meta])* $features:literal) => {
        $crate::kernels::ggml_paths::tinyblas_f32::rows_vec_dot_fn!($(#[$doc])* $features, [1, 2, 3, 4]);
    };
    ($(#[$doc:meta])* $features:literal, [$($k:literal),+]) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = $features)]
        pub(super) unsafe fn rows_vec_dot(n: usize, w: &[u8], ws: usize, n_rows: usize, a: &[u8], s: usize, nt: usize, out: &mut [f32], os: usize) {
            const MAX_ROWS: usize = {
                let mut m = 0;
                $(if $k > m { m = $k; })+
                m
            };
            check(n, w, ws, n_rows, a, s, nt, out, os);
            for t in 0..nt {
                let a = &a[t * s..];
                let mut r = 0;
                while r < n_rows {
                    let k = (n_rows - r).min(MAX_ROWS);
                    let w = &w[r * ws..];
                    let mut v = [0f32; MAX_ROWS];
                    // SAFETY: the CPU has the target features (the
                    // caller's contract); rows r..r + k and token t lie
                    // within the buffers checked above.
                    unsafe {
                        match k {
                            $($k => v[..$k].copy_from_slice(&vec_dot::<$k>(n, w, ws, a)),)+
                            _ => unreachable!("{k} rows"),
                        }
                    }
                    for (j, v) in v[..k].iter().enumerate() {
                        out[(r + j) * os + t] = *v;
                    }
                    r += k;
                }
            }
        }
    };
}
#[cfg(target_arch = "x86_64")]
pub(super) use rows_vec_dot_fn;

/// The kernel lookups of a float type's module (`scalar_tile`,
/// `avx2_tile`) for ggml type `$ty`: the module has `KN`, `sgemm_dot`,
/// `vec_dot` and, on x86-64, `avx2::tile_tinyblas` / `avx2::tile_vec_dot`.
macro_rules! float_tiles {
    ($ty:ident) => {
        fn scalar_tinyblas(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            tile_rows(FloatPath::TinyBlas, KN, sgemm_dot, vec_dot, n, w, a, s, out)
        }
        fn scalar_vec_dot(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
            tile_rows(FloatPath::VecDot, KN, sgemm_dot, vec_dot, n, w, a, s, out)
        }

        /// The scalar kernel for these weights on `path`.
        pub fn scalar_tile(ty: GgmlType, path: FloatPath) -> Option<TileFn> {
            match (ty, path) {
                (GgmlType::$ty, FloatPath::TinyBlas) => Some(scalar_tinyblas),
                (GgmlType::$ty, FloatPath::VecDot) => Some(scalar_vec_dot),
                _ => None,
            }
        }

        /// The AVX2 kernel for these weights on `path`.
        #[cfg(target_arch = "x86_64")]
        pub fn avx2_tile(ty: GgmlType, path: FloatPath) -> Option<TileFn> {
            match (ty, path) {
                (GgmlType::$ty, FloatPath::TinyBlas) => Some(avx2::tile_tinyblas),
                (GgmlType::$ty, FloatPath::VecDot) => Some(avx2::tile_vec_dot),
                _ => None,
            }
        }
    };
}
pub(super) use float_tiles;

float_tiles!(F32);

/// `ggml_vec_dot_f32` of every (row, token) into `out[r · os + t]`, row by
/// row on the AVX2 kernel (the F32 row-block kernels' path where `n % 16 !=
/// 0`, which llamafile declines).
///
/// # Safety
/// As [`crate::kernels::RowsFn`]; the CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn rows_vec_dot(
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
    // SAFETY: the caller's contract (AVX2, FMA; row r within `w`, tokens
    // within `a`, row r's nt outputs at r·os of `out`).
    unsafe {
        check_float_rows("f32", 4, 4, n, w, ws, n_rows, a, s, nt, out, os);
        for r in 0..n_rows {
            avx2::tile_vec_dot(n, &w[r * ws..r * ws + 4 * n], a, s, &mut out[r * os..r * os + nt]);
        }
    }
}

/// The row-block kernel ([`crate::kernels::RowsFn`]) of F32 weights'
/// tinyBLAS path on AVX-512F, where this CPU has it (`tinyblas_f16`'s
/// walk over the rows as they are).
#[cfg(target_arch = "x86_64")]
pub fn avx512_rows(ty: GgmlType) -> Option<super::super::dispatch::RowsFn> {
    (ty == GgmlType::F32 && super::tinyblas_f16::avx512_ok())
        .then_some(super::tinyblas_f16::avx512::rows_tinyblas_f32 as super::super::dispatch::RowsFn)
}

/// [`avx512_rows`] writing the matmul's `[token][row]` output itself.
#[cfg(target_arch = "x86_64")]
pub fn avx512_token_major(ty: GgmlType) -> Option<super::super::dispatch::TokenMajorRowsFn> {
    (ty == GgmlType::F32 && super::tinyblas_f16::avx512_ok()).then_some(
        super::tinyblas_f16::avx512::rows_tinyblas_f32_token_major as super::super::dispatch::TokenMajorRowsFn,
    )
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{vec_dot_tail, KN};
    use crate::kernels::vecf::avx2_reduce_lo_hi;
    use std::arch::x86_64::*;

    /// tinyBLAS outputs for `T` tokens at once (the weights loaded once per
    /// step): lanes 0..8 of token j in `lo[j]`, 8..16 in `hi[j]`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn group_sgemm<const T: usize>(n: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, and `w`, `a`, `out` cover every offset used here.
        unsafe {
            let mut lo = [_mm256_setzero_ps(); T];
            let mut hi = [_mm256_setzero_ps(); T];
            let mut l = 0;
            while l < n {
                // SAFETY (whole loop): l + 16 ≤ n; the weight row holds n values
                // and each of the T activation rows (s bytes apart) n values.
                let wl = _mm256_loadu_ps(w.add(4 * l) as *const f32);
                let wh = _mm256_loadu_ps(w.add(4 * l + 32) as *const f32);
                for j in 0..T {
                    let x = a.add(j * s + 4 * l) as *const f32;
                    lo[j] = _mm256_fmadd_ps(wl, _mm256_loadu_ps(x), lo[j]);
                    hi[j] = _mm256_fmadd_ps(wh, _mm256_loadu_ps(x.add(8)), hi[j]);
                }
                l += KN;
            }
            for j in 0..T {
                out[j] = avx2_reduce_lo_hi(lo[j], hi[j]);
            }
        }
    }

    /// `ggml_vec_dot_f32` of one row pair: 8 vectors of 8 lanes (lanes
    /// 16j..16j+16 of the reference's 4 accumulators in `acc[2j]`,
    /// `acc[2j+1]`).
    #[target_feature(enable = "avx2,fma")]
    unsafe fn vec_dot(n: usize, w: &[u8], x: &[u8]) -> f32 {
        // SAFETY: this fn's contract: the CPU has avx2, fma, and `w`, `x` cover every offset used here.
        unsafe {
            let np = n & !63;
            let mut acc = [_mm256_setzero_ps(); 8];
            let (pw, px) = (w.as_ptr() as *const f32, x.as_ptr() as *const f32);
            let mut l = 0;
            while l < np {
                for (r, v) in acc.iter_mut().enumerate() {
                    // SAFETY: l + 64 ≤ np ≤ n values in both rows.
                    *v = _mm256_fmadd_ps(_mm256_loadu_ps(pw.add(l + 8 * r)), _mm256_loadu_ps(px.add(l + 8 * r)), *v);
                }
                l += 64;
            }
            let lo = _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6]));
            let hi = _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7]));
            vec_dot_tail(n, np, w, x, avx2_reduce_lo_hi(lo, hi))
        }
    }

    /// # Safety
    /// The `TileFn` contract (AVX2 and FMA present).
    pub(super) unsafe fn tile_tinyblas(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: the `TileFn` contract (this fn's): AVX2 and FMA present, and
        // `a` holds `out.len()` rows `s` apart, so each group's rows are
        // within it, as the callees ask.
        unsafe {
            if !n.is_multiple_of(KN) {
                return tile_vec_dot(n, w, a, s, out);
            }
            let mut t = 0;
            while t + 4 <= out.len() {
                group_sgemm::<4>(n, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 4]);
                t += 4;
            }
            while t < out.len() {
                group_sgemm::<1>(n, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 1]);
                t += 1;
            }
        }
    }

    /// # Safety
    /// The `TileFn` contract (AVX2 and FMA present).
    pub(super) unsafe fn tile_vec_dot(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: `vec_dot` asks AVX2 and FMA (this fn's `TileFn` contract)
        // and two rows of n values, which the (checked) slices are.
        unsafe {
            for (t, o) in out.iter_mut().enumerate() {
                *o = vec_dot(n, &w[..4 * n], &a[t * s..t * s + 4 * n]);
            }
        }
    }
}
