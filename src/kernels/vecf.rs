//! f32 vector operations of the forward pass (softmax, SwiGLU, the
//! flash-attention inner loops) with the reference's exact numerics.
//!
//! Why this exists: the reference is ggml built with `-march=native`; on the
//! x86-64 machines minfer is measured against that means its AVX-512 code.
//! Quantized models re-quantize every activation to int8, so a last-bit
//! difference anywhere upstream turns into a different int8 value and grows
//! layer by layer. These functions therefore reproduce, lane by lane, what
//! ggml's AVX-512 paths compute:
//! - [`expf`]: `ggml_v_expf` (vec.h, AVX-512 variant: the polynomial
//!   includes the `+1` term and the result is `scalef(j, n)`).
//! - [`softmax_sum`]: `ggml_vec_soft_max_f32` (exp of `x - max` per element,
//!   sums of 16 lanes reduced as GCC's `_mm512_reduce_add_ps`, accumulated
//!   in f64).
//! - [`swiglu`]: `ggml_vec_swiglu_f32` (`x / (1 + expf(-x)) * g` over
//!   groups of 16, libm `expf` for a tail).
//! - [`gemv_tile_rows`] / [`axpy_tile_rows`]: `simd_gemm` as the tiled flash
//!   attention calls it: every output element is one fused multiply-add
//!   chain in order (several query rows at once, each as alone).
//! - [`dot_f16`], [`mad_f16`], [`scale_f16`]: `ggml_vec_dot_f16` (4 × 16
//!   accumulators, tree reduction, f64 result), `ggml_vec_mad_f16` and
//!   `ggml_vec_scale_f16` (f32 arithmetic rounded to f16 after each step),
//!   on values already rounded to f16 and held in f32.
//!
//! Each function has a scalar definition (`f32::mul_add` is a fused
//! multiply-add) and, on x86-64 with AVX2+FMA+F16C, a SIMD one with the same
//! results lane for lane; `MINFER_NO_AVX2=1` forces the scalar ones.

/// Columns of a flash-attention tile (GGML_FA_TILE_KV) and the width of the
/// tile functions below.
pub const TILE: usize = 64;

/// Whether the SIMD versions run (the AVX2 kernel set is in use).
#[inline]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn use_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static ON: OnceLock<bool> = OnceLock::new();
        *ON.get_or_init(|| super::kernels().name.starts_with("avx2"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the exp-based kernels use AVX-512's `vscalefps` (the AVX2+VNNI
/// kernel set is in use, which requires AVX-512 VL, and the CPU has
/// AVX-512 F): the same results as the AVX2 emulation, in fewer steps.
#[inline]
#[cfg(target_arch = "x86_64")]
pub(crate) fn use_avx512() -> bool {
    use std::sync::OnceLock;
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| super::kernels().name == "avx2-vnni" && is_x86_feature_detected!("avx512f"))
}

const EXP_SHIFT: f32 = 12582912.0; // 0x1.8p23
fn c(bits: u32) -> f32 {
    f32::from_bits(bits)
}
const LOG2E: u32 = 0x3fb8_aa3b; // 0x1.715476p+0
const LN2_HI: u32 = 0x3f31_7200; // 0x1.62e4p-1
const LN2_LO: u32 = 0x35bf_be8e; // 0x1.7f7d1cp-20
const P5: u32 = 0x3c07_2010; // 0x1.0e4020p-7
const P4: u32 = 0x3d2b_9f17; // 0x1.573e2ep-5
const P3: u32 = 0x3e2a_af33; // 0x1.555e66p-3
const P2: u32 = 0x3eff_fedb; // 0x1.fffdb6p-2
const P1: u32 = 0x3f7f_fff6; // 0x1.ffffecp-1

/// e^x as ggml_v_expf's AVX-512 variant computes it (max error ~1.5 ulp;
/// below -87 it goes through the subnormals to 0, above 88.7 to +inf).
pub fn expf(x: f32) -> f32 {
    let z = x.mul_add(c(LOG2E), EXP_SHIFT);
    let n = z - EXP_SHIFT;
    let b = (-n).mul_add(c(LN2_LO), (-n).mul_add(c(LN2_HI), x));
    if n.abs() > 192.0 {
        return if n <= 0.0 { 0.0 } else { f32::INFINITY };
    }
    let u = b * b;
    let j = c(P5).mul_add(b, c(P4)).mul_add(u, c(P3).mul_add(b, c(P2))).mul_add(u, c(P1).mul_add(b, 1.0));
    scalef(j, n)
}

/// `j * 2^n` rounded once (vscalefps), for integral |n| ≤ 192: exact in
/// f64, then one rounding to f32 (which also handles subnormals and
/// overflow as the instruction does).
#[inline]
fn scalef(j: f32, n: f32) -> f32 {
    let p = f64::from_bits(((n as i64 + 1023) as u64) << 52);
    (f64::from(j) * p) as f32
}

/// Sum of 16 lanes as GCC's `_mm512_reduce_add_ps`: halves added, then
/// quarters, then lanes (0+2)+(1+3).
#[inline]
pub(crate) fn reduce16(v: &[f32; 16]) -> f32 {
    let mut t3 = [0f32; 8];
    for i in 0..8 {
        t3[i] = v[8 + i] + v[i];
    }
    let mut t6 = [0f32; 4];
    for i in 0..4 {
        t6[i] = t3[4 + i] + t3[i];
    }
    (t6[0] + t6[2]) + (t6[1] + t6[3])
}

/// ggml_vec_soft_max_f32 for a row of [`TILE`] values: `row[i] =
/// expf(row[i] - max)`, returning their sum (per 16 lanes in f32, then f64).
pub fn softmax_sum(row: &mut [f32; TILE], max: f32) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: use_avx2() checked AVX2, FMA and F16C on this CPU.
        return unsafe {
            if use_avx512() {
                avx512::softmax_sum(row, max)
            } else {
                avx2::softmax_sum(row, max)
            }
        };
    }
    let mut sum = 0f64;
    for group in row.chunks_exact_mut(16) {
        for v in group.iter_mut() {
            *v = expf(*v - max);
        }
        sum += f64::from(reduce16(&*<&mut [f32; 16]>::try_from(group).expect("16 lanes")));
    }
    sum
}

/// ggml_vec_soft_max_f32 over a whole row: `row[i] = expf(row[i] - max)`,
/// returning their sum: per group of 16 lanes ([`expf`], the lanes reduced
/// as `_mm512_reduce_add_ps`, added to an f64 sum), then a tail by libm
/// `expf` added one by one in f64.
pub fn soft_max(row: &mut [f32], max: f32) -> f64 {
    let body = row.len() / 16 * 16;
    let mut sum = 0f64;
    for group in row[..body].chunks_exact_mut(16) {
        sum += f64::from(soft_max16(group.try_into().expect("16 lanes"), max));
    }
    for v in &mut row[body..] {
        *v = (*v - max).exp();
        sum += f64::from(*v);
    }
    sum
}

/// One group of 16 lanes of [`soft_max`]: the exps, and their reduce16.
fn soft_max16(g: &mut [f32; 16], max: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: use_avx2() checked AVX2, FMA and F16C on this CPU.
        return unsafe {
            if use_avx512() {
                avx512::soft_max16(g, max)
            } else {
                avx2::soft_max16(g, max)
            }
        };
    }
    g.iter_mut().for_each(|v| *v = expf(*v - max));
    reduce16(g)
}

/// ggml_vec_swiglu_f32 in place: `g[i]` becomes `silu(g[i]) * u[i]` with
/// silu(x) = x / (1 + e^-x), e^ by [`expf`] over groups of 16 and by libm
/// for a tail.
pub fn swiglu(g: &mut [f32], u: &[f32]) {
    let n = g.len().min(u.len());
    let body = n / 16 * 16;
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: use_avx2() checked the features; the slices hold `body`.
        unsafe {
            if use_avx512() {
                avx512::swiglu(&mut g[..body], &u[..body])
            } else {
                avx2::swiglu(&mut g[..body], &u[..body])
            }
        };
    } else {
        swiglu_scalar(&mut g[..body], &u[..body]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    swiglu_scalar(&mut g[..body], &u[..body]);
    for i in body..n {
        let x = g[i];
        g[i] = x / (1.0 + (-x).exp()) * u[i];
    }
}

fn swiglu_scalar(g: &mut [f32], u: &[f32]) {
    for (o, &v) in g.iter_mut().zip(u) {
        let x = *o;
        *o = x / (1.0 + expf(-x)) * v;
    }
}

/// `out[r][j] = Σ_k q[r][k]·kt[k][j]` for the `R` query rows of `q`
/// ([R][hd], hd = `q.len() / R`) and the [`TILE`] columns of `kt`
/// ([hd][TILE]), each a fused multiply-add chain over k from 0. The rows
/// are independent (each row's result is the one it has alone); taking
/// several at once reads each K value from memory once for all of them.
pub fn gemv_tile_rows<const R: usize>(q: &[f32], kt: &[f32], out: &mut [[f32; TILE]; R]) {
    let hd = q.len() / R;
    assert!(q.len() == R * hd && kt.len() >= hd * TILE, "gemv_tile_rows: shapes");
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: features checked; q holds R rows of hd, kt hd rows of TILE.
        return unsafe {
            if use_avx512() {
                avx512::gemv_tile_rows::<R>(q, hd, kt, out)
            } else {
                avx2::gemv_tile_rows::<R>(q, hd, kt, out)
            }
        };
    }
    for (qr, o) in q.chunks_exact(hd).zip(out.iter_mut()) {
        *o = [0f32; TILE];
        for (k, &qk) in qr.iter().enumerate() {
            let row = &kt[k * TILE..(k + 1) * TILE];
            for (o, &kv) in o.iter_mut().zip(row) {
                *o = kv.mul_add(qk, *o);
            }
        }
    }
}

/// The scores of one tile scaled and masked, and their maximum:
/// `x[j] = x[j]·scale + 0` where bit j of `visible` is set, `-inf`
/// elsewhere; returns the largest (`-inf` for none). No lane is -0 after
/// the `+ 0`, so the maximum does not depend on the order it is taken in.
pub fn scale_mask_max(x: &mut [f32; TILE], scale: f32, visible: u64) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: use_avx2() checked AVX2 and FMA on this CPU.
        return unsafe { avx2::scale_mask_max(x, scale, visible) };
    }
    let mut max = f32::NEG_INFINITY;
    for (j, v) in x.iter_mut().enumerate() {
        *v = if visible >> j & 1 != 0 { *v * scale + 0.0 } else { f32::NEG_INFINITY };
        if *v > max {
            max = *v;
        }
    }
    max
}

/// `acc[r][d] += Σ_j p[r][j]·v[j][d]` for the `R` rows of `acc`
/// ([R][dv], dv = `acc.len() / R`) over the [`TILE`] rows of `v`
/// ([TILE][dv]), one fused multiply-add chain per (r, d) in order of j.
/// As [`gemv_tile_rows`], the rows are independent and share the loads of `v`.
pub fn axpy_tile_rows<const R: usize>(p: &[[f32; TILE]; R], v: &[f32], acc: &mut [f32]) {
    let dv = acc.len() / R;
    assert!(acc.len() == R * dv && v.len() >= TILE * dv, "axpy_tile_rows: shapes");
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: features checked; v holds TILE rows of dv, acc R rows of dv.
        return unsafe {
            if use_avx512() {
                avx512::axpy_tile_rows::<R>(p, v, acc, dv)
            } else {
                avx2::axpy_tile_rows::<R>(p, v, acc, dv)
            }
        };
    }
    for (pr, a) in p.iter().zip(acc.chunks_exact_mut(dv)) {
        for (j, &pj) in pr.iter().enumerate() {
            for (a, &vv) in a.iter_mut().zip(&v[j * dv..(j + 1) * dv]) {
                *a = vv.mul_add(pj, *a);
            }
        }
    }
}

/// A stored operand of the f16 products: f32 values (already f16-exact),
/// or f16 values (K/V cache rows) converted exactly as they are loaded, so
/// that the same products run in the same order either way.
pub trait F16Input: Copy {
    fn to_f32(self) -> f32;
    /// 8 values at `p` as f32.
    ///
    /// # Safety
    /// 8 values are readable at `p` and the CPU has AVX2 and F16C.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load8(p: *const Self) -> std::arch::x86_64::__m256;
}

impl F16Input for f32 {
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load8(p: *const f32) -> std::arch::x86_64::__m256 {
        // SAFETY: the caller guarantees 8 readable f32 at p.
        unsafe { std::arch::x86_64::_mm256_loadu_ps(p) }
    }
}

impl F16Input for half::f16 {
    #[inline]
    fn to_f32(self) -> f32 {
        half::f16::to_f32(self)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,f16c")]
    unsafe fn load8(p: *const half::f16) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        // SAFETY: the caller guarantees 8 readable f16 at p.
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i)) }
    }
}

/// ggml_vec_dot_f16 on f16-exact values (`x` as f32 or f16): 64 lane
/// accumulators over steps of 64, reduced (0+2, 1+3, then 0+1, then 16
/// lanes), in f64, plus a tail of f32 products summed in f64; returned as
/// f32.
#[inline]
pub fn dot_f16<X: F16Input>(x: &[X], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let np = n & !63;
    #[cfg(target_arch = "x86_64")]
    let mut sum = if use_avx2() {
        // SAFETY: features checked; both slices hold np.
        unsafe { avx2::dot64(&x[..np], &y[..np]) }
    } else {
        dot64_scalar(&x[..np], &y[..np])
    };
    #[cfg(not(target_arch = "x86_64"))]
    let mut sum = dot64_scalar(&x[..np], &y[..np]);
    for i in np..n {
        sum += f64::from(x[i].to_f32() * y[i]);
    }
    sum as f32
}

/// ggml_vec_dot_f32: the 64-lane tree of [`dot_f16`] over the first
/// `n & !63` elements, as an f32, then the leftovers added in order in f32
/// as GCC compiled them: those in whole groups of 8 as rounded products
/// (vectorised), the last `n % 8` fused (see `ggml_paths/tinyblas_f32.rs`).
pub fn dot_f32(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let np = n & !63;
    #[cfg(target_arch = "x86_64")]
    let tree = if use_avx2() {
        // SAFETY: features checked; both slices hold np.
        unsafe { avx2::dot64(&x[..np], &y[..np]) }
    } else {
        dot64_scalar(&x[..np], &y[..np])
    };
    #[cfg(not(target_arch = "x86_64"))]
    let tree = dot64_scalar(&x[..np], &y[..np]);
    // exact: the tree's sum is an f32
    dot_f32_tail(np, n, tree as f32, |i| x[i], |i| y[i])
}

/// The leftovers of ggml_vec_dot_f32, elements `np..n` (past its SIMD
/// loop), added to `sum` in order as GCC compiled them: the products of
/// whole groups of 8 rounded (vectorised), the last `(n - np) % 8` fused.
/// `x(i)`, `y(i)` read element i.
#[inline]
pub(crate) fn dot_f32_tail(
    np: usize,
    n: usize,
    mut sum: f32,
    x: impl Fn(usize) -> f32,
    y: impl Fn(usize) -> f32,
) -> f32 {
    let fused = np + (n - np) / 8 * 8;
    for i in np..fused {
        sum += x(i) * y(i);
    }
    for i in fused..n {
        sum = x(i).mul_add(y(i), sum);
    }
    sum
}

pub(crate) fn dot64_scalar<X: F16Input>(x: &[X], y: &[f32]) -> f64 {
    let mut acc = [[0f32; 16]; 4];
    for (xs, ys) in x.chunks_exact(64).zip(y.chunks_exact(64)) {
        for j in 0..4 {
            for l in 0..16 {
                acc[j][l] = xs[16 * j + l].to_f32().mul_add(ys[16 * j + l], acc[j][l]);
            }
        }
    }
    let mut r = [0f32; 16];
    for l in 0..16 {
        r[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    }
    f64::from(reduce16(&r))
}

/// f32 → f16 → f32 with round to nearest even.
#[inline]
pub fn round_f16(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

/// ggml_vec_mad_f16: `acc[i] = f16(v[i]·s + acc[i])` (fused, then rounded;
/// `v` as f32 or f16).
#[inline]
pub fn mad_f16<X: F16Input>(acc: &mut [f32], v: &[X], s: f32) {
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: features checked.
        return unsafe { avx2::mad_f16(acc, v, s) };
    }
    for (a, &x) in acc.iter_mut().zip(v) {
        *a = round_f16(x.to_f32().mul_add(s, *a));
    }
}

/// ggml_vec_scale_f16: `acc[i] = f16(acc[i]·s)`.
#[inline]
pub fn scale_f16(acc: &mut [f32], s: f32) {
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: features checked.
        return unsafe { avx2::scale_f16(acc, s) };
    }
    scale_f16_scalar(acc, s)
}

fn scale_f16_scalar(acc: &mut [f32], s: f32) {
    for a in acc.iter_mut() {
        *a = round_f16(*a * s);
    }
}

/// [`reduce16`] of lanes 0..8 in `lo` and 8..16 in `hi`.
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn avx2_reduce_lo_hi(lo: std::arch::x86_64::__m256, hi: std::arch::x86_64::__m256) -> f32 {
    avx2::reduce_lo_hi(lo, hi)
}

/// `expf8` ([`expf`] on 8 lanes) and the kernels built on it, for one
/// instruction set: `$features` are the target features, `$scalef(j, n)`
/// computes j·2^n (integral |n| ≤ 192) rounded once, as `vscalefps`.
#[cfg(target_arch = "x86_64")]
macro_rules! exp_kernels {
    ($features:literal, $scalef:ident) => {
        /// [`super::expf`] on 8 lanes.
        #[target_feature(enable = $features)]
        pub(super) fn expf8(x: __m256) -> __m256 {
            let r = _mm256_set1_ps(EXP_SHIFT);
            let z = _mm256_fmadd_ps(x, _mm256_set1_ps(c(LOG2E)), r);
            let n = _mm256_sub_ps(z, r);
            let b = _mm256_fnmadd_ps(n, _mm256_set1_ps(c(LN2_LO)), _mm256_fnmadd_ps(n, _mm256_set1_ps(c(LN2_HI)), x));
            let abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0), n);
            let d = _mm256_cmp_ps::<_CMP_GT_OQ>(abs_n, _mm256_set1_ps(192.0));
            let u = _mm256_mul_ps(b, b);
            let j = _mm256_fmadd_ps(
                _mm256_fmadd_ps(
                    _mm256_fmadd_ps(_mm256_set1_ps(c(P5)), b, _mm256_set1_ps(c(P4))),
                    u,
                    _mm256_fmadd_ps(_mm256_set1_ps(c(P3)), b, _mm256_set1_ps(c(P2))),
                ),
                u,
                _mm256_fmadd_ps(_mm256_set1_ps(c(P1)), b, _mm256_set1_ps(1.0)),
            );
            // lanes with |n| > 192 (or NaN) are replaced below
            let res = $scalef(j, _mm256_andnot_ps(d, n));
            let le0 = _mm256_cmp_ps::<_CMP_LE_OQ>(n, _mm256_setzero_ps());
            let alt = _mm256_blendv_ps(_mm256_set1_ps(f32::INFINITY), _mm256_setzero_ps(), le0);
            _mm256_blendv_ps(res, alt, d)
        }

        #[target_feature(enable = $features)]
        pub(super) unsafe fn softmax_sum(row: &mut [f32; TILE], max: f32) -> f64 {
            // SAFETY: the caller checked that the CPU has the set's features
            // ($features, enabled on this fn: its contract); the offsets and
            // accesses through `row` stay within the buffers the caller vouched
            // for (the same contract).
            unsafe {
                let m = _mm256_set1_ps(max);
                let mut sum = 0f64;
                for g in 0..TILE / 16 {
                    let p = row.as_mut_ptr().add(16 * g);
                    // SAFETY: lanes 16g..16g+16 are in the row.
                    let lo = expf8(_mm256_sub_ps(_mm256_loadu_ps(p), m));
                    let hi = expf8(_mm256_sub_ps(_mm256_loadu_ps(p.add(8)), m));
                    _mm256_storeu_ps(p, lo);
                    _mm256_storeu_ps(p.add(8), hi);
                    sum += f64::from(reduce_lo_hi(lo, hi));
                }
                sum
            }
        }

        /// One group of [`super::soft_max`]: the 16 exps, stored, and their reduce16.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn soft_max16(g: &mut [f32; 16], max: f32) -> f32 {
            // SAFETY: the caller checked that the CPU has the set's features
            // ($features, enabled on this fn: its contract); the offsets and
            // accesses through `g` stay within the buffers the caller vouched
            // for (the same contract).
            unsafe {
                let m = _mm256_set1_ps(max);
                let p = g.as_mut_ptr();
                // SAFETY: the group has 16 lanes.
                let lo = expf8(_mm256_sub_ps(_mm256_loadu_ps(p), m));
                let hi = expf8(_mm256_sub_ps(_mm256_loadu_ps(p.add(8)), m));
                _mm256_storeu_ps(p, lo);
                _mm256_storeu_ps(p.add(8), hi);
                reduce_lo_hi(lo, hi)
            }
        }

        #[target_feature(enable = $features)]
        pub(super) unsafe fn swiglu(g: &mut [f32], u: &[f32]) {
            // SAFETY: the caller checked that the CPU has the set's features
            // ($features, enabled on this fn: its contract); the offsets and
            // accesses through `g`, `u` stay within the buffers the caller
            // vouched for (the same contract).
            unsafe {
                let one = _mm256_set1_ps(1.0);
                let n = g.len().min(u.len());
                let mut i = 0;
                while i + 8 <= n {
                    // SAFETY: i + 8 ≤ len of both slices.
                    let x = _mm256_loadu_ps(g.as_ptr().add(i));
                    let e = expf8(_mm256_sub_ps(_mm256_setzero_ps(), x));
                    let s = _mm256_div_ps(x, _mm256_add_ps(one, e));
                    _mm256_storeu_ps(g.as_mut_ptr().add(i), _mm256_mul_ps(s, _mm256_loadu_ps(u.as_ptr().add(i))));
                    i += 8;
                }
                swiglu_scalar(&mut g[i..n], &u[i..n]);
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use std::arch::x86_64::*;

    /// `vscalefps` on AVX2: j·2^n exactly in f64, one rounding to f32.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn scalef_f64(j: __m256, n: __m256) -> __m256 {
        let ni = _mm256_cvtps_epi32(n);
        let bias = _mm256_set1_epi64x(1023);
        let p_lo = _mm256_castsi256_pd(_mm256_slli_epi64::<52>(_mm256_add_epi64(
            _mm256_cvtepi32_epi64(_mm256_castsi256_si128(ni)),
            bias,
        )));
        let p_hi = _mm256_castsi256_pd(_mm256_slli_epi64::<52>(_mm256_add_epi64(
            _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(ni)),
            bias,
        )));
        let lo = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(j)), p_lo));
        let hi = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps::<1>(j)), p_hi));
        _mm256_set_m128(hi, lo)
    }

    exp_kernels!("avx2,fma", scalef_f64);

    /// reduce16 of the 16 lanes (lo = 0..8, hi = 8..16).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn reduce_lo_hi(lo: __m256, hi: __m256) -> f32 {
        let t3 = _mm256_add_ps(hi, lo);
        let t6 = _mm_add_ps(_mm256_extractf128_ps::<1>(t3), _mm256_castps256_ps128(t3));
        let t7 = _mm_shuffle_ps::<0b01_00_11_10>(t6, t6); // lanes 2, 3, 0, 1
        let t8 = _mm_add_ps(t6, t7);
        _mm_cvtss_f32(t8) + _mm_cvtss_f32(_mm_shuffle_ps::<1>(t8, t8))
    }

    /// [`super::gemv_tile_rows`]: per half tile (32 columns, 4 vectors),
    /// each K vector loaded once and multiplied into the R rows' chains.
    ///
    /// # Safety
    /// AVX2 and FMA; `q` holds R rows of `hd`, `kt` hd rows of TILE.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
    pub(super) unsafe fn gemv_tile_rows<const R: usize>(q: &[f32], hd: usize, kt: &[f32], out: &mut [[f32; TILE]; R]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, and `q`, `kt`, `out` cover every offset used here.
        unsafe {
            for half in 0..2 {
                let mut acc = [[_mm256_setzero_ps(); 4]; R];
                for k in 0..hd {
                    // SAFETY: k < hd, so row k of kt and q[r * hd + k] exist.
                    let row = kt.as_ptr().add(k * TILE + 32 * half);
                    let b: [__m256; R] = std::array::from_fn(|r| _mm256_broadcast_ss(&*q.as_ptr().add(r * hd + k)));
                    for c in 0..4 {
                        let kv = _mm256_loadu_ps(row.add(8 * c));
                        for r in 0..R {
                            acc[r][c] = _mm256_fmadd_ps(kv, b[r], acc[r][c]);
                        }
                    }
                }
                for (o, a) in out.iter_mut().zip(&acc) {
                    for (c, x) in a.iter().enumerate() {
                        _mm256_storeu_ps(o.as_mut_ptr().add(32 * half + 8 * c), *x);
                    }
                }
            }
        }
    }

    /// [`super::scale_mask_max`], 8 lanes at a time.
    ///
    /// # Safety
    /// AVX2 is available.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn scale_mask_max(x: &mut [f32; TILE], scale: f32, visible: u64) -> f32 {
        // SAFETY: this fn's contract: the CPU has avx2, fma, and `x` covers every offset used here.
        unsafe {
            let (sv, zero, ninf) = (_mm256_set1_ps(scale), _mm256_setzero_ps(), _mm256_set1_ps(f32::NEG_INFINITY));
            let bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
            let mut max = ninf;
            for c in 0..TILE / 8 {
                let p = x.as_mut_ptr().add(8 * c);
                let bits = _mm256_set1_epi32((visible >> (8 * c)) as i32 & 0xff);
                let seen = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(bits, bit), bit));
                // SAFETY: lanes 8c..8c+8 are in the tile.
                let v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(p), sv), zero);
                let v = _mm256_blendv_ps(ninf, v, seen);
                _mm256_storeu_ps(p, v);
                max = _mm256_max_ps(v, max);
            }
            let m4 = _mm_max_ps(_mm256_castps256_ps128(max), _mm256_extractf128_ps::<1>(max));
            let m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps::<1>(m2, m2)))
        }
    }

    /// [`super::axpy_tile_rows`]: per 32 columns of V (4 vectors), the R
    /// rows' accumulators in registers across the TILE rows of V.
    ///
    /// # Safety
    /// AVX2 and FMA; `v` holds TILE rows of `dv`, `acc` R rows of `dv`.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
    pub(super) unsafe fn axpy_tile_rows<const R: usize>(p: &[[f32; TILE]; R], v: &[f32], acc: &mut [f32], dv: usize) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, and `p`, `v`, `acc` cover every offset used here.
        unsafe {
            let mut d = 0;
            while d + 32 <= dv {
                let a = acc.as_mut_ptr().add(d);
                // SAFETY: columns d..d+32 of each of the R rows of acc.
                let mut x: [[__m256; 4]; R] =
                    std::array::from_fn(|r| std::array::from_fn(|c| _mm256_loadu_ps(a.add(r * dv + 8 * c))));
                for j in 0..TILE {
                    let b: [__m256; R] = std::array::from_fn(|r| _mm256_set1_ps(p[r][j]));
                    // SAFETY: v holds TILE rows of dv.
                    let row = v.as_ptr().add(j * dv + d);
                    for c in 0..4 {
                        let vv = _mm256_loadu_ps(row.add(8 * c));
                        for r in 0..R {
                            x[r][c] = _mm256_fmadd_ps(vv, b[r], x[r][c]);
                        }
                    }
                }
                for (r, xr) in x.iter().enumerate() {
                    for (c, xc) in xr.iter().enumerate() {
                        _mm256_storeu_ps(a.add(r * dv + 8 * c), *xc);
                    }
                }
                d += 32;
            }
            for r in 0..R {
                for dd in d..dv {
                    for (j, &pj) in p[r].iter().enumerate() {
                        acc[r * dv + dd] = v[j * dv + dd].mul_add(pj, acc[r * dv + dd]);
                    }
                }
            }
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn dot64<X: F16Input>(x: &[X], y: &[f32]) -> f64 {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `x`, `y` cover every offset used here.
        unsafe {
            let mut acc = [_mm256_setzero_ps(); 8]; // lanes 0..64
            let mut i = 0;
            while i + 64 <= x.len() {
                for (r, a) in acc.iter_mut().enumerate() {
                    // SAFETY: i + 64 ≤ len of both.
                    *a = _mm256_fmadd_ps(
                        X::load8(x.as_ptr().add(i + 8 * r)),
                        _mm256_loadu_ps(y.as_ptr().add(i + 8 * r)),
                        *a,
                    );
                }
                i += 64;
            }
            // sum[0] += sum[2]; sum[1] += sum[3]; sum[0] += sum[1] (16 lanes each)
            let lo = _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6]));
            let hi = _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7]));
            f64::from(reduce_lo_hi(lo, hi))
        }
    }

    /// [`super::scale_f16`]: the product rounded to f16 by F16C (to nearest
    /// even, as `round_f16`).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn scale_f16(acc: &mut [f32], s: f32) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `acc` covers every offset used here.
        unsafe {
            let b = _mm256_set1_ps(s);
            let n = acc.len();
            let mut i = 0;
            while i + 8 <= n {
                // SAFETY: i + 8 ≤ n.
                let a = acc.as_mut_ptr().add(i);
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_mul_ps(_mm256_loadu_ps(a), b));
                _mm256_storeu_ps(a, _mm256_cvtph_ps(h));
                i += 8;
            }
            for a in &mut acc[i..] {
                *a = round_f16(*a * s);
            }
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn mad_f16<X: F16Input>(acc: &mut [f32], v: &[X], s: f32) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `acc`, `v` cover every offset used here.
        unsafe {
            let n = acc.len().min(v.len());
            let b = _mm256_set1_ps(s);
            let mut i = 0;
            while i + 8 <= n {
                // SAFETY: i + 8 ≤ n.
                let a = acc.as_mut_ptr().add(i);
                let r = _mm256_fmadd_ps(X::load8(v.as_ptr().add(i)), b, _mm256_loadu_ps(a));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(r);
                _mm256_storeu_ps(a, _mm256_cvtph_ps(h));
                i += 8;
            }
            for k in i..n {
                acc[k] = round_f16(v[k].to_f32().mul_add(s, acc[k]));
            }
        }
    }
}

/// The exp-based kernels on 16 lanes with AVX-512's `vscalefps`, as the
/// reference's `ggml_v_expf` runs on AVX-512 (AVX2 emulates the scaling in
/// f64, `exp_kernels!`); the same operations per lane as `expf8`, so the
/// same bits, at half the instructions. Then the attention tile kernels.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::*;
    use std::arch::x86_64::*;

    /// [`super::expf`] on 16 lanes.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    pub(super) fn expf16(x: __m512) -> __m512 {
        let r = _mm512_set1_ps(EXP_SHIFT);
        let z = _mm512_fmadd_ps(x, _mm512_set1_ps(c(LOG2E)), r);
        let n = _mm512_sub_ps(z, r);
        let b = _mm512_fnmadd_ps(n, _mm512_set1_ps(c(LN2_LO)), _mm512_fnmadd_ps(n, _mm512_set1_ps(c(LN2_HI)), x));
        let abs_n = _mm512_abs_ps(n);
        let d = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(abs_n, _mm512_set1_ps(192.0));
        let u = _mm512_mul_ps(b, b);
        let j = _mm512_fmadd_ps(
            _mm512_fmadd_ps(
                _mm512_fmadd_ps(_mm512_set1_ps(c(P5)), b, _mm512_set1_ps(c(P4))),
                u,
                _mm512_fmadd_ps(_mm512_set1_ps(c(P3)), b, _mm512_set1_ps(c(P2))),
            ),
            u,
            _mm512_fmadd_ps(_mm512_set1_ps(c(P1)), b, _mm512_set1_ps(1.0)),
        );
        // lanes with |n| > 192 are replaced below
        let res = _mm512_scalef_ps(j, _mm512_maskz_mov_ps(!d, n));
        let le0 = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(n, _mm512_setzero_ps());
        let alt = _mm512_mask_blend_ps(le0, _mm512_set1_ps(f32::INFINITY), _mm512_setzero_ps());
        _mm512_mask_blend_ps(d, res, alt)
    }

    /// `reduce16` of the 16 lanes (halves, quarters, (0 + 2) + (1 + 3)).
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    fn reduce16_zmm(v: __m512) -> f32 {
        avx2::reduce_lo_hi(
            _mm512_castps512_ps256(v),
            _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v))),
        )
    }

    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    pub(super) unsafe fn softmax_sum(row: &mut [f32; TILE], max: f32) -> f64 {
        // SAFETY: this fn's contract: the CPU has avx2, fma, avx512f, avx512vl, and `row` covers every offset used
        // here.
        unsafe {
            let m = _mm512_set1_ps(max);
            let mut sum = 0f64;
            for g in 0..TILE / 16 {
                let p = row.as_mut_ptr().add(16 * g);
                // SAFETY: lanes 16g..16g+16 are in the row.
                let e = expf16(_mm512_sub_ps(_mm512_loadu_ps(p), m));
                _mm512_storeu_ps(p, e);
                sum += f64::from(reduce16_zmm(e));
            }
            sum
        }
    }

    /// One group of [`super::soft_max`]: the 16 exps, stored, and their reduce16.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    pub(super) unsafe fn soft_max16(g: &mut [f32; 16], max: f32) -> f32 {
        // SAFETY: this fn's contract: the CPU has avx2, fma, avx512f, avx512vl, and `g` covers every offset used
        // here.
        unsafe {
            let p = g.as_mut_ptr();
            // SAFETY: the group has 16 lanes.
            let e = expf16(_mm512_sub_ps(_mm512_loadu_ps(p), _mm512_set1_ps(max)));
            _mm512_storeu_ps(p, e);
            reduce16_zmm(e)
        }
    }

    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    pub(super) unsafe fn swiglu(g: &mut [f32], u: &[f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, avx512f, avx512vl, and `g`, `u` cover every offset
        // used here.
        unsafe {
            let one = _mm512_set1_ps(1.0);
            let n = g.len().min(u.len());
            let mut i = 0;
            while i + 16 <= n {
                // SAFETY: i + 16 ≤ len of both slices.
                let x = _mm512_loadu_ps(g.as_ptr().add(i));
                let e = expf16(_mm512_sub_ps(_mm512_setzero_ps(), x));
                let s = _mm512_div_ps(x, _mm512_add_ps(one, e));
                _mm512_storeu_ps(g.as_mut_ptr().add(i), _mm512_mul_ps(s, _mm512_loadu_ps(u.as_ptr().add(i))));
                i += 16;
            }
            swiglu_scalar(&mut g[i..n], &u[i..n]);
        }
    }

    /// [`super::gemv_tile_rows`] on 16 lanes: the whole tile (4 vectors)
    /// per pass, each K vector loaded once for the R rows' chains.
    ///
    /// # Safety
    /// AVX-512F; `q` holds R rows of `hd`, `kt` hd rows of TILE.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    #[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
    pub(super) unsafe fn gemv_tile_rows<const R: usize>(q: &[f32], hd: usize, kt: &[f32], out: &mut [[f32; TILE]; R]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, avx512f, avx512vl, and `q`, `kt`, `out` cover every
        // offset used here.
        unsafe {
            let mut acc = [[_mm512_setzero_ps(); 4]; R];
            for k in 0..hd {
                // SAFETY: k < hd, so row k of kt and q[r * hd + k] exist.
                let row = kt.as_ptr().add(k * TILE);
                let b: [__m512; R] = std::array::from_fn(|r| _mm512_set1_ps(*q.as_ptr().add(r * hd + k)));
                for c in 0..4 {
                    let kv = _mm512_loadu_ps(row.add(16 * c));
                    for r in 0..R {
                        acc[r][c] = _mm512_fmadd_ps(kv, b[r], acc[r][c]);
                    }
                }
            }
            for (o, a) in out.iter_mut().zip(&acc) {
                for (c, x) in a.iter().enumerate() {
                    _mm512_storeu_ps(o.as_mut_ptr().add(16 * c), *x);
                }
            }
        }
    }

    /// [`super::axpy_tile_rows`] on 16 lanes: per 64 columns of V (then
    /// per 16), the R rows' accumulators in registers across the TILE rows.
    ///
    /// # Safety
    /// AVX-512F; `v` holds TILE rows of `dv`, `acc` R rows of `dv`.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
    pub(super) unsafe fn axpy_tile_rows<const R: usize>(p: &[[f32; TILE]; R], v: &[f32], acc: &mut [f32], dv: usize) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, avx512f, avx512vl, and `p`, `v`, `acc` cover every
        // offset used here.
        unsafe {
            #[target_feature(enable = "avx2,fma,avx512f,avx512vl")]
            #[inline]
            #[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
            unsafe fn cols<const R: usize, const C: usize>(
                p: &[[f32; TILE]; R],
                v: *const f32,
                a: *mut f32,
                dv: usize,
            ) {
                // SAFETY: this fn's contract: the CPU has avx2, fma, avx512f, avx512vl, and `v`, `a`, `p` cover
                // every offset used here.
                unsafe {
                    // SAFETY (all below): columns d..d+16C of the R rows of acc (at
                    // `a`, rows dv apart) and of the TILE rows of v (at `v`).
                    let mut x: [[__m512; C]; R] =
                        std::array::from_fn(|r| std::array::from_fn(|c| _mm512_loadu_ps(a.add(r * dv + 16 * c))));
                    for j in 0..TILE {
                        let b: [__m512; R] = std::array::from_fn(|r| _mm512_set1_ps(p[r][j]));
                        let row = v.add(j * dv);
                        for c in 0..C {
                            let vv = _mm512_loadu_ps(row.add(16 * c));
                            for r in 0..R {
                                x[r][c] = _mm512_fmadd_ps(vv, b[r], x[r][c]);
                            }
                        }
                    }
                    for (r, xr) in x.iter().enumerate() {
                        for (c, xc) in xr.iter().enumerate() {
                            _mm512_storeu_ps(a.add(r * dv + 16 * c), *xc);
                        }
                    }
                }
            }
            let mut d = 0;
            while d + 64 <= dv {
                cols::<R, 4>(p, v.as_ptr().add(d), acc.as_mut_ptr().add(d), dv);
                d += 64;
            }
            while d + 16 <= dv {
                cols::<R, 1>(p, v.as_ptr().add(d), acc.as_mut_ptr().add(d), dv);
                d += 16;
            }
            for r in 0..R {
                for dd in d..dv {
                    for (j, &pj) in p[r].iter().enumerate() {
                        acc[r * dv + dd] = v[j * dv + dd].mul_add(pj, acc[r * dv + dd]);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX-512 kernel if `wide`, else the AVX2 one.
    ///
    /// # Safety
    /// As the kernel's; AVX-512F where `wide`.
    #[cfg(target_arch = "x86_64")]
    unsafe fn gemv_tile_rows_on<const R: usize>(
        wide: bool,
        q: &[f32],
        hd: usize,
        kt: &[f32],
        out: &mut [[f32; TILE]; R],
    ) {
        // SAFETY: the caller upholds the kernels' contract (this fn's): the
        // CPU has AVX-512F where `wide`, else AVX2 and FMA; the buffer shapes.
        unsafe {
            if wide {
                avx512::gemv_tile_rows::<R>(q, hd, kt, out)
            } else {
                avx2::gemv_tile_rows::<R>(q, hd, kt, out)
            }
        }
    }

    /// As [`gemv_tile_rows_on`], for `axpy_tile_rows`.
    ///
    /// # Safety
    /// As the kernel's; AVX-512F where `wide`.
    #[cfg(target_arch = "x86_64")]
    unsafe fn axpy_tile_rows_on<const R: usize>(
        wide: bool,
        p: &[[f32; TILE]; R],
        v: &[f32],
        acc: &mut [f32],
        dv: usize,
    ) {
        // SAFETY: the caller upholds the kernels' contract (this fn's): the
        // CPU has AVX-512F where `wide`, else AVX2 and FMA; the buffer shapes.
        unsafe {
            if wide {
                avx512::axpy_tile_rows::<R>(p, v, acc, dv)
            } else {
                avx2::axpy_tile_rows::<R>(p, v, acc, dv)
            }
        }
    }

    /// Inputs covering the ranges the callers use, the subnormal and
    /// overflow ends, and the special values.
    fn inputs() -> Vec<f32> {
        let mut v: Vec<f32> = (0..4000).map(|i| -100.0 + i as f32 * 0.0517).collect();
        v.extend([0.0, -0.0, 1e-30, -1e-30, 88.7, 88.8, -87.3, -103.9, -150.0, f32::NEG_INFINITY, f32::INFINITY]);
        let mut s = 0x1234_5678u32;
        for _ in 0..4000 {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            v.push(f32::from_bits(s) % 120.0);
        }
        v.retain(|x| !x.is_nan());
        v
    }

    /// The f16-input dot and mad equal the f32 ones on the converted values,
    /// and `scale_f16` its scalar definition, bit for bit (SIMD or scalar,
    /// whichever this CPU runs), tails included.
    #[test]
    fn f16_input_versions_equal_the_f32_ones() {
        let xs = inputs();
        for n in [7usize, 64, 100, 128, 200, 256] {
            for off in [0usize, 3, 517] {
                let h: Vec<half::f16> = xs[off..off + n].iter().map(|&x| half::f16::from_f32(x / 9.0)).collect();
                let hf: Vec<f32> = h.iter().map(|v| v.to_f32()).collect();
                let y: Vec<f32> = xs[off + 1000..off + 1000 + n].iter().map(|&x| round_f16(x / 31.0)).collect();
                assert_eq!(dot_f16(&h, &y).to_bits(), dot_f16(&hf, &y).to_bits(), "dot n={n} off={off}");
                let mut a: Vec<f32> = xs[off + 2000..off + 2000 + n].iter().map(|&x| round_f16(x / 5.0)).collect();
                let mut b = a.clone();
                mad_f16(&mut a, &h, 0.37);
                mad_f16(&mut b, &hf, 0.37);
                assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()), "mad n={n} off={off}");
                let mut c = a.clone();
                scale_f16(&mut a, 0.0173);
                scale_f16_scalar(&mut c, 0.0173);
                assert!(a.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()), "scale n={n} off={off}");
                // overflow to ±inf and subnormal results
                for f in [7.0e4f32, 1.0e-6] {
                    scale_f16(&mut a, f);
                    scale_f16_scalar(&mut c, f);
                    assert!(a.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()), "scale {f} n={n} off={off}");
                }
            }
        }
    }

    #[test]
    fn expf_is_close_to_libm_and_exact_at_the_ends() {
        for x in inputs() {
            let (a, b) = (expf(x), x.exp());
            if b.is_finite() && b > 1e-37 {
                assert!(((a - b) / b).abs() < 4e-7, "expf({x}) = {a}, libm {b}");
            }
        }
        assert_eq!(expf(f32::NEG_INFINITY), 0.0);
        assert_eq!(expf(f32::INFINITY), f32::INFINITY);
        assert_eq!(expf(0.0), 1.0);
        assert_eq!(expf(-200.0), 0.0);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn simd_versions_equal_the_scalar_definitions_bit_for_bit() {
        if !use_avx2() {
            return;
        }
        let xs = inputs();
        for chunk in xs.chunks_exact(8) {
            let mut out = [0f32; 8];
            // SAFETY: use_avx2() checked the features.
            unsafe {
                std::arch::x86_64::_mm256_storeu_ps(
                    out.as_mut_ptr(),
                    avx2::expf8(std::arch::x86_64::_mm256_loadu_ps(chunk.as_ptr())),
                )
            };
            for (o, &x) in out.iter().zip(chunk) {
                assert_eq!(o.to_bits(), expf(x).to_bits(), "expf8({x})");
            }
        }
        if use_avx512() {
            for chunk in xs.chunks_exact(16) {
                let mut out = [0f32; 16];
                // SAFETY: use_avx512() checked AVX-512 F and VL.
                unsafe {
                    std::arch::x86_64::_mm512_storeu_ps(
                        out.as_mut_ptr(),
                        avx512::expf16(std::arch::x86_64::_mm512_loadu_ps(chunk.as_ptr())),
                    )
                };
                for (o, &x) in out.iter().zip(chunk) {
                    assert_eq!(o.to_bits(), expf(x).to_bits(), "AVX-512 expf16({x})");
                }
            }
        }
        let g: Vec<f32> = xs.iter().map(|x| x / 10.0).collect();
        let u: Vec<f32> = xs.iter().rev().map(|x| x / 7.0).collect();
        let n = g.len() / 16 * 16;
        let (mut a, mut b) = (g[..n].to_vec(), g[..n].to_vec());
        swiglu(&mut a, &u[..n]);
        swiglu_scalar(&mut b, &u[..n]);
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        let mut c = g[..n].to_vec();
        // SAFETY: features checked (the AVX2 one, whichever `swiglu` took).
        unsafe { avx2::swiglu(&mut c, &u[..n]) };
        assert!(c.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));

        // three query rows of 128 at once, and each alone, against the
        // definition: every output its own fused chain in order (the AVX2
        // kernel, and the AVX-512 one where the CPU has it)
        let q: Vec<f32> = (0..3 * 128).map(|i| ((i * 37 % 101) as f32 - 50.0) / 13.0).collect();
        let kt: Vec<f32> = (0..128 * TILE).map(|i| ((i * 53 % 97) as f32 - 48.0) / 17.0).collect();
        let mut o3 = [[0f32; TILE]; 3];
        for wide in [false, true] {
            if wide && !use_avx512() {
                continue;
            }
            // SAFETY: features checked.
            unsafe { gemv_tile_rows_on::<3>(wide, &q, 128, &kt, &mut o3) };
            for (r, o) in o3.iter().enumerate() {
                let mut o1 = [[0f32; TILE]; 1];
                // SAFETY: features checked.
                unsafe { gemv_tile_rows_on::<1>(wide, &q[r * 128..(r + 1) * 128], 128, &kt, &mut o1) };
                let mut o2 = [0f32; TILE];
                for (k, &qk) in q[r * 128..(r + 1) * 128].iter().enumerate() {
                    for j in 0..TILE {
                        o2[j] = kt[k * TILE + j].mul_add(qk, o2[j]);
                    }
                }
                assert_eq!(o.map(f32::to_bits), o2.map(f32::to_bits), "row {r} of 3, wide {wide}");
                assert_eq!(o1[0].map(f32::to_bits), o2.map(f32::to_bits), "row {r} alone, wide {wide}");
            }
        }
        let o1 = o3[0];

        let mut row = o1;
        let mut row2 = o1;
        let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        // SAFETY: features checked.
        let s1 = unsafe { avx2::softmax_sum(&mut row, max) };
        if use_avx512() {
            let mut row3 = o1;
            // SAFETY: use_avx512() checked the features.
            let s3 = unsafe { avx512::softmax_sum(&mut row3, max) };
            assert_eq!(s3.to_bits(), s1.to_bits());
            assert_eq!(row3.map(f32::to_bits), row.map(f32::to_bits));
        }
        let mut s2 = 0f64;
        for g in row2.chunks_exact_mut(16) {
            g.iter_mut().for_each(|v| *v = expf(*v - max));
            s2 += f64::from(reduce16(&*<&mut [f32; 16]>::try_from(g).unwrap()));
        }
        assert_eq!(s1.to_bits(), s2.to_bits());
        assert_eq!(row.map(f32::to_bits), row2.map(f32::to_bits));

        // scale and mask against the definition, for masks with and
        // without visible cells
        for visible in [u64::MAX, 0, 0x0123_4567_89ab_cdef, 1 << 63, 0xffff_0000_0000_0001] {
            let (mut x1, mut x2) = (o3[1], o3[1]);
            // SAFETY: features checked.
            let m1 = unsafe { avx2::scale_mask_max(&mut x1, 0.125, visible) };
            let mut m2 = f32::NEG_INFINITY;
            for (j, v) in x2.iter_mut().enumerate() {
                *v = if visible >> j & 1 == 1 { *v * 0.125 + 0.0 } else { f32::NEG_INFINITY };
                m2 = if *v > m2 { *v } else { m2 };
            }
            assert_eq!(x1.map(f32::to_bits), x2.map(f32::to_bits), "mask {visible:x}");
            assert_eq!(m1.to_bits(), m2.to_bits(), "mask {visible:x}");
        }

        // 72 columns: two 32-column blocks and a tail of 8 (AVX2), a
        // 64-column block and a tail of 8 (AVX-512); 88: 64 + 16 + 8
        let p = [row, o3[1].map(|x| x / 100.0), o3[2].map(|x| -x / 50.0)];
        for dv in [72, 88] {
            let v: Vec<f32> = (0..TILE * dv).map(|i| ((i * 29 % 89) as f32 - 44.0) / 9.0).collect();
            let start: Vec<f32> = (0..3 * dv).map(|i| (i as f32 - 100.0) / 31.0).collect();
            for wide in [false, true] {
                if wide && !use_avx512() {
                    continue;
                }
                let mut a3 = start.clone();
                // SAFETY: features checked.
                unsafe { axpy_tile_rows_on::<3>(wide, &p, &v, &mut a3, dv) };
                for r in 0..3 {
                    let mut a1 = start[r * dv..(r + 1) * dv].to_vec();
                    // SAFETY: features checked.
                    unsafe { axpy_tile_rows_on::<1>(wide, &[p[r]], &v, &mut a1, dv) };
                    let mut a2 = start[r * dv..(r + 1) * dv].to_vec();
                    for (j, &pj) in p[r].iter().enumerate() {
                        for d in 0..dv {
                            a2[d] = v[j * dv + d].mul_add(pj, a2[d]);
                        }
                    }
                    let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&a3[r * dv..(r + 1) * dv]), bits(&a2), "row {r} of 3, {dv} columns, wide {wide}");
                    assert_eq!(bits(&a1), bits(&a2), "row {r} alone, {dv} columns, wide {wide}");
                }
            }
        }

        let x: Vec<f32> = (0..200).map(|i| round_f16((i as f32 - 100.0) / 11.0)).collect();
        let y: Vec<f32> = (0..200).map(|i| round_f16((i as f32 * 3.0 % 50.0 - 25.0) / 7.0)).collect();
        // SAFETY: features checked.
        assert_eq!(unsafe { avx2::dot64(&x[..192], &y[..192]) }, dot64_scalar(&x[..192], &y[..192]));
        let (mut m1, mut m2) = (x.clone(), x.clone());
        // SAFETY: features checked.
        unsafe { avx2::mad_f16(&mut m1, &y, 0.37) };
        for (a, &b) in m2.iter_mut().zip(&y) {
            *a = round_f16(b.mul_add(0.37, *a));
        }
        assert_eq!(m1, m2);
    }

    #[test]
    fn soft_max_groups_of_16_then_a_libm_tail() {
        let mut row: Vec<f32> = (0..70).map(|i| ((i * 37 % 23) as f32 - 11.0) / 3.0).collect();
        row[5] = f32::NEG_INFINITY; // a masked cell: exp 0
        let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let mut want = row.clone();
        let mut sum = 0f64;
        for g in want[..64].chunks_exact_mut(16) {
            g.iter_mut().for_each(|v| *v = expf(*v - max));
            sum += f64::from(reduce16(&*<&mut [f32; 16]>::try_from(g).unwrap()));
        }
        for v in &mut want[64..] {
            *v = (*v - max).exp();
            sum += f64::from(*v);
        }
        let got = soft_max(&mut row, max);
        assert_eq!(got.to_bits(), sum.to_bits());
        assert_eq!(row[5], 0.0);
        assert!(row.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
        #[cfg(target_arch = "x86_64")]
        if use_avx2() {
            let mut g: [f32; 16] = std::array::from_fn(|i| i as f32 * 0.7 - 9.0);
            let mut h = g;
            // SAFETY: use_avx2() checked the features.
            let a = unsafe { avx2::soft_max16(&mut g, 1.5) };
            h.iter_mut().for_each(|v| *v = expf(*v - 1.5));
            assert_eq!(a.to_bits(), reduce16(&h).to_bits());
            assert_eq!(g.map(f32::to_bits), h.map(f32::to_bits));
        }
    }

    #[test]
    fn dot_f32_fuses_only_the_last_leftovers() {
        // a = -(1 + 2^-11), b·b = 1 + 2^-11 + 2^-24: fused, a + b·b = 2^-24;
        // with b·b rounded first (to 1 + 2^-11) it is 0
        let a = -(1.0 + 2f32.powi(-11));
        let b = 1.0 + 2f32.powi(-12);
        // n = 2: both among the last n % 8, fused
        assert_eq!(dot_f32(&[a, b], &[1.0, b]), 2f32.powi(-24));
        // n = 8: a whole group of 8, rounded products
        let mut x = vec![0f32; 8];
        let mut y = vec![0f32; 8];
        (x[0], y[0], x[1], y[1]) = (a, 1.0, b, b);
        assert_eq!(dot_f32(&x, &y), 0.0);
        // n = 66: the two after the 64-lane tree are fused again
        let mut x = vec![0f32; 66];
        let mut y = vec![0f32; 66];
        (x[64], y[64], x[65], y[65]) = (a, 1.0, b, b);
        assert_eq!(dot_f32(&x, &y), 2f32.powi(-24));
    }

    #[test]
    fn dot_f32_adds_its_leftovers_in_f32() {
        // 64 lanes cancel to 0, then the tail: 1e8 + 1 + (-1e8) in f32 is 0
        // (in f64, as dot_f16 sums its tail, it would be 1)
        let mut x = vec![0f32; 67];
        x[64] = 1e8;
        x[65] = 1.0;
        x[66] = -1e8;
        let y = vec![1f32; 67];
        assert_eq!(dot_f32(&x, &y), 0.0);
        assert_eq!(dot_f16(&x, &y), 1.0);
        let x: Vec<f32> = (0..200).map(|i| (i as f32 - 100.0) / 7.0).collect();
        assert_eq!(dot_f32(&x[..128], &x[..128]), dot_f16(&x[..128], &x[..128]));
    }

    #[test]
    fn dot_f16_sums_like_the_reference_tree() {
        // 64 ones and a tail: the tree sums 64 exactly; the tail adds in f64.
        let x = vec![1.0f32; 70];
        assert_eq!(dot_f16(&x, &x), 70.0);
        let mut y = vec![0.0f32; 64];
        y[0] = 1e8;
        y[32] = -1e8;
        y[5] = 1.0;
        // lanes 0 and 32 cancel first (sum[0] + sum[2]) so the 1 survives
        assert_eq!(dot_f16(&vec![1.0; 64], &y), 1.0);
    }
}
