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
//! `vdpbf16ps` per lane (Intel's pseudo-code, checked against the CPU's
//! own instruction where it has one, `dp_pairs_equal_the_instruction`):
//! with denormal inputs read as zero (DAZ),
//! `acc = fma(w[2i+1], x[2i+1], acc)`, then `acc = fma(w[2i], x[2i], acc)`,
//! each rounded to nearest even with a denormal result flushed to a signed
//! zero (FTZ, tininess after rounding), whatever MXCSR says ([`dp`]).
//!
//! The activations are rounded once per product, as the reference converts
//! them ([`round_act_row`], `ActType::Bf16Rounded`), and held as f32: every
//! kernel rounds what it reads again, which leaves bf16 values unchanged.
//!
//! On CPUs with AVX512_BF16 the matmul runs the row-block kernels of
//! `avx512` ([`avx512_rows`]): the reference's own instruction, so nothing
//! to emulate; the f32 activations are packed to bf16 in registers
//! (`vcvtne2ps2bf16`, exact on bf16 values but for denormals, which it
//! flushes to zeros of their sign: what `vdpbf16ps` reads them as anyway).
//!
//! The AVX2 row kernels read each 32-element step as the even then the odd
//! elements of its pairs 0..8, then of its pairs 8..16, so that lane `i` of
//! each 8-lane vector is a lane of the reference's accumulator: the
//! activations in that layout once per matmul (the packed copy of
//! [`round_act_row`]), each weight row widened in registers (decodes) or
//! once per chunk of tokens (prefills).

#[cfg(target_arch = "x86_64")]
use super::super::dispatch::RowsFn;
use super::super::dispatch::TileFn;
use super::tinyblas_f32::{float_tiles, tile_rows, FloatPath};
use crate::ggml_type::GgmlType;
use crate::kernels::vecf::reduce16;
use crate::quant::{bf16_to_f32, f32_to_bf16};

/// Elements per tinyBLAS step (the bf16 lanes of a `__m512bh`).
pub const KN: usize = 32;

/// Whether `llamafile_sgemm` runs tinyBLAS<32> (AVX512_BF16) for a BF16
/// product of `m` output rows, `n` activation rows and `k` columns.
pub fn runs(m: usize, n: usize, k: usize) -> bool {
    n >= 2 && k.is_multiple_of(KN) && m.is_multiple_of(4)
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

float_tiles!(BF16);

/// Bytes of an activation row of `n` values for BF16 weights
/// ([`round_act_row`]): the rounded values as f32, their packed copy, and
/// one 32-byte word saying whether the row lies within the AVX2 kernels'
/// bound.
pub const fn act_row_bytes(n: usize) -> usize {
    8 * n + 32
}

/// Smallest magnitude (f32 bits) a nonzero value may have for the AVX2
/// kernels' fma chains to meet no denormal (see `avx2`): 2^-56.
const SAFE_MIN: u32 = 71 << 23;

/// Whether a rounded activation (f32 bits) is 0 or a magnitude in
/// [2^-56, ∞] (not a NaN): the bound of the AVX2 kernels.
fn in_bound(bits: u32) -> bool {
    let m = bits & 0x7fff_ffff;
    m == 0 || (SAFE_MIN..=0x7f80_0000).contains(&m)
}

/// Where element `i` of a row of `n` values lies in its packed copy (and in
/// the AVX2 prefill's widened weight rows): of each whole 32-element step,
/// the 8 even then the 8 odd elements of pairs 0..8 in the first half of
/// the copy (16 values a step, in step order), those of pairs 8..16 in the
/// second; lane `i` of each 8-value vector is lane `i` of its half of
/// `vdpbf16ps`'s accumulator. The last `n % 32` values follow as they are.
/// A kernel that runs one half of the lanes at a time so reads whole cache
/// lines.
const fn packed_index(n: usize, i: usize) -> usize {
    let n32 = n / KN * KN;
    if i >= n32 {
        return i;
    }
    let (step, pair, odd) = (i / KN, i % KN / 2, i % 2);
    (pair / 8) * (n32 / 2) + 16 * step + 8 * odd + pair % 8
}

/// Activations rounded to bf16 as `ggml_cpu_fp32_to_bf16` rounds them (to
/// nearest even, NaN quieted), held as f32: the activation format of BF16
/// weights (`x` n values, `out` [`act_row_bytes`]`(n)` bytes):
///
/// - `out[..4n]`: the rounded values, which every kernel reads;
/// - `out[4n..8n]`: the same values laid out as [`packed_index`] says,
///   which the AVX2 row kernels read: a decode's rows then share one layout
///   per matmul instead of one per kernel call (which had cost ~30 % of the
///   kernel);
/// - `out[8n..8n + 4]`: 1 if every rounded value is within the AVX2
///   kernels' bound ([`in_bound`]), else 0; the rest of the word 0.
pub fn round_act_row(x: &[f32], out: &mut [u8]) {
    let n = x.len();
    assert!(out.len() >= act_row_bytes(n), "round_act_row: output too short");
    let (vals, rest) = out.split_at_mut(4 * n);
    let (packed, word) = rest.split_at_mut(4 * n);
    #[cfg(target_arch = "x86_64")]
    let (done, mut ok) = if crate::kernels::vecf::use_avx2() {
        // SAFETY: AVX2 checked; `vals` and `packed` hold 4 bytes per value.
        unsafe { avx2::round_row(x, vals, packed) }
    } else {
        (0, true)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (done, mut ok) = (0, true);
    for (i, v) in x.iter().enumerate().skip(done) {
        let r = bf16_to_f32(f32_to_bf16(*v));
        ok &= in_bound(r.to_bits());
        let at = packed_index(n, i);
        vals[4 * i..4 * i + 4].copy_from_slice(&r.to_le_bytes());
        packed[4 * at..4 * at + 4].copy_from_slice(&r.to_le_bytes());
    }
    word[..32].fill(0);
    word[0] = u8::from(ok);
}

/// The row-block kernel ([`RowsFn`]) of `path` on plain AVX2
/// (`avx2::rows_tinyblas`, `avx2::rows_vec_dot`), for BF16 weights.
#[cfg(target_arch = "x86_64")]
pub fn avx2_rows(ty: GgmlType, path: FloatPath) -> Option<RowsFn> {
    (ty == GgmlType::BF16).then_some(match path {
        FloatPath::TinyBlas => avx2::rows_tinyblas as RowsFn,
        FloatPath::VecDot => avx2::rows_vec_dot as RowsFn,
    })
}

/// The row-block kernel ([`RowsFn`]) of `path` on AVX512_BF16, where this
/// CPU has it (see `avx512`).
#[cfg(target_arch = "x86_64")]
pub fn avx512_rows(ty: GgmlType, path: FloatPath) -> Option<RowsFn> {
    use std::arch::is_x86_feature_detected as has;
    let cpu = has!("avx512f") && has!("avx512vl") && has!("avx512bf16") && has!("avx2") && has!("fma") && has!("f16c");
    if ty != GgmlType::BF16 || !cpu {
        return None;
    }
    Some(match path {
        FloatPath::TinyBlas => avx512::rows_tinyblas,
        FloatPath::VecDot => avx512::rows_vec_dot,
    })
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! `vdpbf16ps` itself, in the reference's order: tinyBLAS<32> as tiles
    //! of RM weight rows × RN tokens (one 16-lane accumulator per output,
    //! `_mm512_reduce_add_ps`), ggml_vec_dot_bf16 one row at a time (two
    //! accumulators over 64-element steps, then [`vec_dot_tail`]).
    use super::super::tinyblas_f16::avx512::reduce16;
    use super::{vec_dot_tail, KN};
    use std::arch::x86_64::*;

    /// tinyBLAS register tile: RM weight rows × RN tokens = 24 accumulators.
    const RM: usize = 4;
    const RN: usize = 6;

    /// Activation bytes per token chunk: every row block of the call runs
    /// over one chunk of tokens before the next, so the chunk stays in L2.
    const CHUNK_BYTES: usize = 128 * 1024;

    /// 32 bf16 weights at `p`.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bf16")]
    #[inline]
    unsafe fn load_w(p: *const u8) -> __m512bh {
        // SAFETY: the caller guarantees 64 bytes at p; the lanes are bf16 bits.
        unsafe { std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(p.cast())) }
    }

    /// 32 activations at `p` (f32 holding bf16 values) packed to bf16.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bf16")]
    #[inline]
    unsafe fn load_a(p: *const u8) -> __m512bh {
        // SAFETY: the caller guarantees 128 bytes at p.
        let (lo, hi) = unsafe { (_mm512_loadu_ps(p.cast()), _mm512_loadu_ps(p.add(64).cast())) };
        _mm512_cvtne2ps_pbh(hi, lo)
    }

    /// The checks of every kernel here (bf16 weights, f32 activations).
    #[allow(clippy::too_many_arguments)]
    fn check(n: usize, w: &[u8], ws: usize, n_rows: usize, a: &[u8], s: usize, nt: usize, out: &[f32], os: usize) {
        super::super::tinyblas_f32::check_float_rows("bf16", 2, 4, n, w, ws, n_rows, a, s, nt, out, os);
    }

    /// tinyBLAS outputs of rows `RB` × tokens `TB` (`n % 32 == 0`): weight
    /// row `i` at `w + i·ws`, token `j` at `a + j·s` (packed bf16, see
    /// [`pack_acts`]), output at `o + i·os + j`.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bf16")]
    #[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
    unsafe fn tile<const RB: usize, const TB: usize>(
        n: usize,
        w: *const u8,
        ws: usize,
        a: *const u8,
        s: usize,
        o: *mut f32,
        os: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); TB]; RB];
        let mut l = 0;
        while l < n {
            // SAFETY: l + 32 ≤ n: rows hold 2n bytes, tokens 4n (checked by the
            // caller).
            let wv: [__m512bh; RB] = std::array::from_fn(|i| unsafe { load_w(w.add(i * ws + 2 * l)) });
            for j in 0..TB {
                // SAFETY: as above (tokens hold 2n bytes here).
                let av = unsafe { load_w(a.add(j * s + 2 * l)) };
                for i in 0..RB {
                    acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv[i], av);
                }
            }
            l += KN;
        }
        for i in 0..RB {
            for j in 0..TB {
                // SAFETY: output (i, j) is within the caller's block.
                unsafe { *o.add(i * os + j) = reduce16(acc[i][j]) };
            }
        }
    }

    // one tile of the walk
    super::super::tinyblas_f32::tile_any_fn!("avx2,fma,f16c,avx512f,avx512vl,avx512bf16", tile::<RM, RN>);

    /// `RowsFn` of the tinyBLAS path (ggml_vec_dot_bf16's where `n % 32 != 0`,
    /// as the tile kernels).
    ///
    /// # Safety
    /// As [`crate::kernels::RowsFn`]; the CPU has the target features.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bf16")]
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
        let chunk = (CHUNK_BYTES / (4 * n).max(1) / RN * RN).max(RN);
        let (wp, op) = (w.as_ptr(), out.as_mut_ptr());
        // [chunk][n] the chunk's activations as bf16, packed once for all
        // the call's rows (packing them per tile took a `vcvtne2ps2bf16` per
        // 4 `vdpbf16ps`)
        let mut packed = vec![0u8; chunk.min(nt) * 2 * n];
        let mut t0 = 0;
        while t0 < nt {
            let len = chunk.min(nt - t0);
            // SAFETY: tokens t0..t0+len ≤ nt lie within `a` (checked above);
            // `packed` holds `len` rows of 2n bytes.
            unsafe { pack_acts(n, a.as_ptr().add(t0 * s), s, len, &mut packed) };
            let pp = packed.as_ptr();
            super::super::tinyblas_f32::walk_tiles(n_rows, len, len, RM, RN, |rb, tb, r, t| {
                // SAFETY: rows r..r+rb ≤ n_rows and the chunk's tokens
                // t..t+tb ≤ len lie within the buffers checked above.
                unsafe {
                    tile_any(rb, tb, n, wp.add(r * ws), ws, pp.add(t * 2 * n), 2 * n, op.add(r * os + t0 + t), os)
                }
            });
            t0 += len;
        }
    }

    /// `nt` activation rows (`s` bytes apart at `a`, f32 holding bf16
    /// values, `n % 32 == 0`) packed to bf16 into `out` ([nt][n]).
    ///
    /// # Safety
    /// The rows are readable; the CPU has the target features.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bf16")]
    unsafe fn pack_acts(n: usize, a: *const u8, s: usize, nt: usize, out: &mut [u8]) {
        assert!(n.is_multiple_of(KN) && out.len() >= nt * 2 * n, "pack_acts: shapes");
        for t in 0..nt {
            for l in (0..n).step_by(KN) {
                // SAFETY: l + 32 ≤ n values of token t (the caller's rows);
                // 64 bytes at out[2 (t n + l)..] (asserted above).
                unsafe {
                    let v = load_a(a.add(t * s + 4 * l));
                    _mm512_storeu_si512(
                        out.as_mut_ptr().add(2 * (t * n + l)).cast(),
                        std::mem::transmute::<__m512bh, __m512i>(v),
                    );
                }
            }
        }
    }

    /// ggml_vec_dot_bf16 of `R` weight rows (`2n` bytes each, `ws` apart at
    /// `w`) with one token (`4n` bytes at `a`): per row its 2 chains and
    /// tail; the rows' chains interleaved, one activation conversion for all.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bf16")]
    unsafe fn vec_dot<const R: usize>(n: usize, w: &[u8], ws: usize, a: &[u8]) -> [f32; R] {
        assert!(w.len() >= (R - 1) * ws + 2 * n && a.len() >= 4 * n, "vec_dot: shapes");
        let np = n & !63;
        let mut c = [[_mm512_setzero_ps(); 2]; R];
        let (wp, ap) = (w.as_ptr(), a.as_ptr());
        let mut l = 0;
        while l < np {
            // SAFETY: l + 64 ≤ np ≤ n (rows hold 2n bytes, the token 4n;
            // asserted above).
            unsafe {
                let (a1, a2) = (load_a(ap.add(4 * l)), load_a(ap.add(4 * (l + 32))));
                for (r, c) in c.iter_mut().enumerate() {
                    c[0] = _mm512_dpbf16_ps(c[0], load_w(wp.add(r * ws + 2 * l)), a1);
                    c[1] = _mm512_dpbf16_ps(c[1], load_w(wp.add(r * ws + 2 * (l + 32))), a2);
                }
            }
            l += 64;
        }
        // (a loop, not `array::from_fn`: its closure was not inlined)
        let mut out = [0f32; R];
        for (r, (o, c)) in out.iter_mut().zip(&c).enumerate() {
            // SAFETY: `reduce16` needs a subset of this fn's features, which
            // the CPU has (this fn's contract).
            let (s0, s1) = unsafe { (reduce16(c[0]), reduce16(c[1])) };
            *o = vec_dot_tail(n, np, &w[r * ws..r * ws + 2 * n], a, s0, s1);
        }
        out
    }

    super::super::tinyblas_f32::rows_vec_dot_fn!(
        /// `RowsFn` of the ggml_vec_dot_bf16 path, through [`vec_dot`]
        /// (`tinyblas_f32::rows_vec_dot_fn`), the rows 4 at a time.
        ///
        /// # Safety
        /// As [`crate::kernels::RowsFn`]; the CPU has the target features.
        "avx2,fma,f16c,avx512f,avx512vl,avx512bf16"
    );
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The lanes in registers, without the flushing: a product chain can
    //! only meet a denormal (input or result) if some nonzero input has a
    //! magnitude below 2^-56 — otherwise every product of two bf16 values is
    //! a multiple of 2^-126, and so is every rounded sum, so nonzero ones
    //! are normal. The kernel tracks that bound (and NaNs, which it does not
    //! round as `f32_to_bf16`) over the weights and each token's
    //! activations; an output that breaks it is recomputed by the scalar
    //! definition. The activations' even and odd elements come from
    //! `_mm256_shuffle_ps`, whose lane order (pairs 0,1,4,5,2,3,6,7) the
    //! weights take too; the accumulators are put back in order at the end.
    use super::{sgemm_dot, vec_dot, vec_dot_tail, FloatPath, KN};
    use crate::kernels::vecf::avx2_reduce_lo_hi;
    use std::arch::x86_64::*;

    /// [`super::round_act_row`] 32 values at a time, into the values `vals`
    /// and their packed copy `packed`; returns how many it did and whether
    /// they lie within the bound.
    ///
    /// # Safety
    /// AVX2 is available; `vals` and `packed` hold 4 bytes per value of `x`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn round_row(x: &[f32], vals: &mut [u8], packed: &mut [u8]) -> (usize, bool) {
        assert!(vals.len() >= 4 * x.len() && packed.len() >= 4 * x.len(), "round_row: outputs too short");
        let n32 = x.len() / KN * KN;
        let (mut mn, mut mx) = (_mm256_set1_epi32(-1), _mm256_setzero_si256());
        for i in (0..n32).step_by(KN) {
            let mut v = [_mm256_setzero_ps(); 4];
            for (k, v) in v.iter_mut().enumerate() {
                // SAFETY: i + 32 ≤ x.len(), and `vals` holds 4 bytes per value.
                unsafe {
                    let u = _mm256_loadu_si256(x.as_ptr().add(i + 8 * k).cast());
                    let nan = _mm256_cmpgt_epi32(
                        _mm256_and_si256(u, _mm256_set1_epi32(0x7fff_ffff)),
                        _mm256_set1_epi32(0x7f80_0000),
                    );
                    let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(u), _mm256_set1_epi32(1));
                    let rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
                    let quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x0040_0000));
                    let r = _mm256_and_si256(
                        _mm256_blendv_epi8(rounded, quiet, nan),
                        _mm256_set1_epi32(0xffff_0000u32 as i32),
                    );
                    let abs = _mm256_and_si256(r, _mm256_set1_epi32(0x7fff_ffff));
                    mn = _mm256_min_epu32(mn, _mm256_sub_epi32(abs, _mm256_set1_epi32(1)));
                    mx = _mm256_max_epu32(mx, abs);
                    _mm256_storeu_si256(vals.as_mut_ptr().add(4 * (i + 8 * k)).cast(), r);
                    *v = _mm256_castsi256_ps(r);
                }
            }
            // the even and odd elements of pairs 0..8 and 8..16, in pair
            // order: the step's 16 values of each half of the copy
            let p = [
                swap_mid(_mm256_shuffle_ps::<0b10_00_10_00>(v[0], v[1])),
                swap_mid(_mm256_shuffle_ps::<0b11_01_11_01>(v[0], v[1])),
                swap_mid(_mm256_shuffle_ps::<0b10_00_10_00>(v[2], v[3])),
                swap_mid(_mm256_shuffle_ps::<0b11_01_11_01>(v[2], v[3])),
            ];
            for (k, p) in p.iter().enumerate() {
                let at = (k / 2) * (n32 / 2) + i / 2 + 8 * (k % 2);
                // SAFETY: `packed` holds 4 bytes per value, at < n32.
                unsafe { _mm256_storeu_ps(packed.as_mut_ptr().add(4 * at).cast(), *p) };
            }
        }
        (n32, safe32(mn, mx))
    }

    /// Bits of 2^-56, the smallest safe nonzero magnitude.
    const SAFE_MIN: i32 = super::SAFE_MIN as i32;
    const SAFE_MIN_BF16: i16 = (super::SAFE_MIN >> 16) as i16;

    /// Swaps the middle 64-bit quarters: natural pair order ↔ the shuffle's
    /// (the permutation is its own inverse).
    #[target_feature(enable = "avx2")]
    fn swap_mid(v: __m256) -> __m256 {
        _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)))
    }

    /// One 32-element step of weights at `p` (bf16): (even, odd) of pairs
    /// 0..8 and of pairs 8..16, lane `i` pair `i` (natural order); `mn`
    /// keeps the smallest nonzero magnitude − 1 and `mx` the largest (as
    /// u16).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn weights_natural(p: *const u8, mn: &mut __m256i, mx: &mut __m256i) -> [__m256; 4] {
        // SAFETY: this fn's contract: the CPU has avx2, and `p` covers every offset used here.
        unsafe {
            let mut r = [_mm256_setzero_ps(); 4];
            for h in 0..2 {
                // SAFETY: the caller guarantees 64 bytes at p.
                let words = _mm256_loadu_si256(p.add(32 * h) as *const __m256i);
                let abs = _mm256_and_si256(words, _mm256_set1_epi16(0x7fff));
                *mn = _mm256_min_epu16(*mn, _mm256_sub_epi16(abs, _mm256_set1_epi16(1)));
                *mx = _mm256_max_epu16(*mx, abs);
                r[2 * h] = _mm256_castsi256_ps(_mm256_slli_epi32::<16>(words));
                r[2 * h + 1] = _mm256_castsi256_ps(_mm256_and_si256(words, _mm256_set1_epi32(0xffff_0000u32 as i32)));
            }
            r
        }
    }

    /// [`weights_natural`] in the shuffle's lane order (pairs 0,1,4,5,2,3,6,7
    /// in each half), as [`step`] pairs them with its activations.
    #[target_feature(enable = "avx2")]
    unsafe fn weights(p: *const u8, mn: &mut __m256i, mx: &mut __m256i) -> [__m256; 4] {
        // SAFETY: this fn's contract is weights_natural's.
        unsafe {
            let [a, b, c, d] = weights_natural(p, mn, mx);
            [swap_mid(a), swap_mid(b), swap_mid(c), swap_mid(d)]
        }
    }

    /// 8 activations at `p` rounded to bf16 (nearest even), tracking the
    /// smallest nonzero magnitude − 1 and the largest (as u32).
    #[target_feature(enable = "avx2")]
    unsafe fn act8(p: *const u8, mn: &mut __m256i, mx: &mut __m256i) -> __m256 {
        // SAFETY: this fn's contract: the CPU has avx2, and `p` covers every offset used here.
        unsafe {
            // SAFETY: the caller guarantees 32 bytes at p.
            let u = _mm256_loadu_si256(p as *const __m256i);
            let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(u), _mm256_set1_epi32(1));
            let r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
            let r = _mm256_and_si256(r, _mm256_set1_epi32(0xffff_0000u32 as i32));
            let abs = _mm256_and_si256(r, _mm256_set1_epi32(0x7fff_ffff));
            *mn = _mm256_min_epu32(*mn, _mm256_sub_epi32(abs, _mm256_set1_epi32(1)));
            // a NaN input may round to anything: check the input
            *mx = _mm256_max_epu32(*mx, _mm256_and_si256(u, _mm256_set1_epi32(0x7fff_ffff)));
            _mm256_castsi256_ps(r)
        }
    }

    /// One 32-element step of a token: activations at `x`, weights `w`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn step(
        w: &[__m256; 4],
        x: *const u8,
        lo: &mut __m256,
        hi: &mut __m256,
        mn: &mut __m256i,
        mx: &mut __m256i,
    ) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, and `x`, `w` cover every offset used here.
        unsafe {
            // SAFETY: the caller guarantees 128 bytes at x.
            let v = [act8(x, mn, mx), act8(x.add(32), mn, mx), act8(x.add(64), mn, mx), act8(x.add(96), mn, mx)];
            let (e0, o0) =
                (_mm256_shuffle_ps::<0b10_00_10_00>(v[0], v[1]), _mm256_shuffle_ps::<0b11_01_11_01>(v[0], v[1]));
            let (e1, o1) =
                (_mm256_shuffle_ps::<0b10_00_10_00>(v[2], v[3]), _mm256_shuffle_ps::<0b11_01_11_01>(v[2], v[3]));
            // vdpbf16ps: the odd product first
            *lo = _mm256_fmadd_ps(w[0], e0, _mm256_fmadd_ps(w[1], o0, *lo));
            *hi = _mm256_fmadd_ps(w[2], e1, _mm256_fmadd_ps(w[3], o1, *hi));
        }
    }

    /// Whether every tracked value was 0 or in [2^-56, NaN) (u32 lanes).
    #[target_feature(enable = "avx2")]
    fn safe32(mn: __m256i, mx: __m256i) -> bool {
        let lo_ok = _mm256_cmpeq_epi32(_mm256_max_epu32(mn, _mm256_set1_epi32(SAFE_MIN - 1)), mn);
        let hi_ok = _mm256_cmpeq_epi32(_mm256_min_epu32(mx, _mm256_set1_epi32(0x7f80_0000)), mx);
        _mm256_movemask_epi8(_mm256_and_si256(lo_ok, hi_ok)) == -1
    }

    /// The same for u16 lanes (bf16 weights).
    #[target_feature(enable = "avx2")]
    fn safe16(mn: __m256i, mx: __m256i) -> bool {
        let lo_ok = _mm256_cmpeq_epi16(_mm256_max_epu16(mn, _mm256_set1_epi16(SAFE_MIN_BF16 - 1)), mn);
        let hi_ok = _mm256_cmpeq_epi16(_mm256_min_epu16(mx, _mm256_set1_epi16(0x7f80)), mx);
        _mm256_movemask_epi8(_mm256_and_si256(lo_ok, hi_ok)) == -1
    }

    /// Outputs for `T` tokens (activation rows `s` bytes apart at `a`):
    /// tinyBLAS (`sgemm`) or vec_dot_bf16's two accumulators.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn group<const T: usize>(sgemm: bool, n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, and `w`, `a`, `out` cover every offset used here.
        unsafe {
            let nl = if sgemm { n } else { n & !63 };
            let z = _mm256_setzero_ps();
            // [token][accumulator c1/c2][lo/hi]
            let mut acc = [[[z; 2]; 2]; T];
            let ones = _mm256_set1_epi32(-1);
            let (mut wmn, mut wmx) = (ones, _mm256_setzero_si256());
            let mut amn = [ones; T];
            let mut amx = [_mm256_setzero_si256(); T];
            let mut l = 0;
            while l < nl {
                // SAFETY: l + 32 ≤ nl ≤ n values in the weight row and in each
                // of the T activation rows.
                let wv = weights(w.as_ptr().add(2 * l), &mut wmn, &mut wmx);
                // tinyBLAS: one accumulator; vec_dot: c1 for the first 32 of 64
                let c = usize::from(!sgemm && (l / KN) % 2 == 1);
                for j in 0..T {
                    let [lo, hi] = &mut acc[j][c];
                    step(&wv, a.as_ptr().add(j * s + 4 * l), lo, hi, &mut amn[j], &mut amx[j]);
                }
                l += KN;
            }
            let w_ok = safe16(wmn, wmx);
            for j in 0..T {
                let x = &a[j * s..j * s + 4 * n];
                out[j] = if !(w_ok && safe32(amn[j], amx[j])) {
                    // a denormal or a NaN may be on the way: the exact definition
                    if sgemm {
                        sgemm_dot(n, w, x)
                    } else {
                        vec_dot(n, w, x)
                    }
                } else {
                    let r = |c: usize| avx2_reduce_lo_hi(swap_mid(acc[j][c][0]), swap_mid(acc[j][c][1]));
                    if sgemm {
                        r(0)
                    } else {
                        vec_dot_tail(n, nl, w, x, r(0), r(1))
                    }
                };
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile(path: FloatPath, n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: the caller checked that the CPU has avx2, fma (the contract
        // of this `#[target_feature]` fn); the callees' contracts ask no more
        // than this fn's.
        unsafe {
            let sgemm = path == FloatPath::TinyBlas && n.is_multiple_of(KN);
            let mut t = 0;
            while t + 4 <= out.len() {
                group::<4>(sgemm, n, w, &a[t * s..], s, &mut out[t..t + 4]);
                t += 4;
            }
            while t < out.len() {
                group::<1>(sgemm, n, w, &a[t * s..], s, &mut out[t..t + 1]);
                t += 1;
            }
        }
    }

    /// Activation bytes per token chunk of [`rows_tinyblas`]: the chunk's
    /// packed activations stay in L2 while every row block of the call runs
    /// over them...
    const CHUNK_BYTES: usize = 128 * 1024;

    /// ... but for at least this many tokens: each row is widened once per
    /// chunk, which over 4 tokens (8192 columns) cost about what their
    /// products do (`bench_kernels` 2048 × 8192, 1 thread: 14–15 GMAC/s,
    /// 23–26 with 16–32 tokens; a block's 6 rows use each token line 6
    /// times, so it may come from L3).
    const CHUNK_MIN_TOKENS: usize = 32;

    /// tinyBLAS outputs of `RB` weight rows (widened at `wp`, `n` floats
    /// apart, laid out as [`super::packed_index`]) × `TB` tokens (packed
    /// copies at `ap`, `s` bytes apart) into `out[i][j]` (`RB`, `TB` ≤ 2):
    /// per 32-element step the odd then the even products of each half, as
    /// `vdpbf16ps`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    #[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
    unsafe fn block<const RB: usize, const TB: usize>(
        n: usize,
        wp: *const f32,
        ap: *const u8,
        s: usize,
        out: &mut [[f32; 2]],
    ) {
        // SAFETY: the caller's buffers hold RB rows of n floats and TB
        // tokens' packed copies of n floats, s bytes apart.
        unsafe {
            let z = _mm256_setzero_ps();
            let mut acc = [[[z; 2]; TB]; RB];
            let mut l = 0;
            while l < n {
                // the step's vectors: (k / 2) the half, (k % 2) odd
                let at = |k: usize| (k / 2) * (n / 2) + l / 2 + 8 * (k % 2);
                let wv: [[__m256; 4]; RB] =
                    std::array::from_fn(|i| std::array::from_fn(|k| _mm256_loadu_ps(wp.add(i * n + at(k)))));
                for j in 0..TB {
                    let x = ap.add(j * s).cast::<f32>();
                    let (e0, o0, e1, o1) = (
                        _mm256_loadu_ps(x.add(at(0))),
                        _mm256_loadu_ps(x.add(at(1))),
                        _mm256_loadu_ps(x.add(at(2))),
                        _mm256_loadu_ps(x.add(at(3))),
                    );
                    for i in 0..RB {
                        let [lo, hi] = &mut acc[i][j];
                        *lo = _mm256_fmadd_ps(wv[i][0], e0, _mm256_fmadd_ps(wv[i][1], o0, *lo));
                        *hi = _mm256_fmadd_ps(wv[i][2], e1, _mm256_fmadd_ps(wv[i][3], o1, *hi));
                    }
                }
                l += KN;
            }
            for i in 0..RB {
                for j in 0..TB {
                    out[i][j] = avx2_reduce_lo_hi(acc[i][j][0], acc[i][j][1]);
                }
            }
        }
    }

    /// Rows per block of [`block_halves`].
    const HALF_ROWS: usize = 6;

    /// [`block`] for `RB` rows × `TB` tokens (`RB` ≤ 6, `TB` ≤ 2) with one
    /// accumulator per output: the lanes of pairs 0..8 (the first half of
    /// the packed layouts) over all the columns, then those of pairs 8..16,
    /// each lane's chain in order, so the same bits. 12 accumulators of two
    /// chained FMAs a step cover the FMA latency that [`block`]'s 8 just
    /// meet, and a pass reads only its half of each widened row.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    #[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
    unsafe fn block_halves<const RB: usize, const TB: usize>(
        n: usize,
        wp: *const f32,
        ap: *const u8,
        s: usize,
        out: &mut [[f32; 2]],
    ) {
        // SAFETY: the caller's buffers hold RB rows of n floats and TB
        // tokens' packed copies of n floats, s bytes apart.
        unsafe {
            let z = _mm256_setzero_ps();
            let mut lo = [[z; TB]; RB];
            for half in 0..2 {
                let mut acc = [[z; TB]; RB];
                // this half's 16 values a step: 8 even, then 8 odd
                let mut l = half * (n / 2);
                while l < (half + 1) * (n / 2) {
                    // vdpbf16ps: the odd products first
                    for off in [8, 0] {
                        let x: [__m256; TB] =
                            std::array::from_fn(|j| _mm256_loadu_ps(ap.add(j * s).cast::<f32>().add(l + off)));
                        for i in 0..RB {
                            let wv = _mm256_loadu_ps(wp.add(i * n + l + off));
                            for j in 0..TB {
                                acc[i][j] = _mm256_fmadd_ps(wv, x[j], acc[i][j]);
                            }
                        }
                    }
                    l += 16;
                }
                if half == 0 {
                    lo = acc;
                } else {
                    for i in 0..RB {
                        for j in 0..TB {
                            out[i][j] = avx2_reduce_lo_hi(lo[i][j], acc[i][j]);
                        }
                    }
                }
            }
        }
    }

    /// The shapes a row kernel reads: [`super::act_row_bytes`] per token.
    #[allow(clippy::too_many_arguments)]
    fn check_rows(n: usize, w: &[u8], ws: usize, n_rows: usize, a: &[u8], s: usize, nt: usize, out: &[f32], os: usize) {
        super::super::tinyblas_f32::check_float_rows("bf16", 2, 4, n, w, ws, n_rows, a, s, nt, out, os);
        assert!(a.len() >= (nt - 1) * s + super::act_row_bytes(n), "bf16 rows kernel: activations too short");
    }

    /// `RowsFn` of the tinyBLAS path on AVX2 (ggml_vec_dot_bf16's where
    /// `n % 32 != 0`, as [`tile`]). It reads each token's packed copy
    /// ([`super::round_act_row`]), widens each weight row once per chunk of
    /// tokens, then computes 2 rows × 2 tokens at a time (the per-token tile
    /// re-rounded the activations and re-widened the row for every 4 tokens:
    /// ~50 instructions per 32 products). Outputs outside the bound are the
    /// scalar definition's, as in [`group`].
    ///
    /// # Safety
    /// As [`crate::kernels::RowsFn`]; the CPU has AVX2 and FMA.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma")]
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
        check_rows(n, w, ws, n_rows, a, s, nt, out, os);
        if !n.is_multiple_of(KN) {
            for r in 0..n_rows {
                // SAFETY: row r and the nt tokens lie within the checked
                // buffers; out[r·os ..][..nt] is row r's outputs.
                unsafe { tile(FloatPath::TinyBlas, n, &w[r * ws..], a, s, &mut out[r * os..r * os + nt]) };
            }
            return;
        }
        // tokens per chunk: their packed copies stay in L2 while every row
        // pair of the call runs over them
        let chunk = (CHUNK_BYTES / (4 * n).max(1)).max(CHUNK_MIN_TOKENS).min(nt);
        // [HALF_ROWS][n] widened rows
        let mut wide = vec![0f32; HALF_ROWS * n];
        let tok_ok = |t: usize| a[t * s + 8 * n] != 0;
        let mut t0 = 0;
        while t0 < nt {
            let len = chunk.min(nt - t0);
            let mut r = 0;
            while r < n_rows {
                let rb = (n_rows - r).min(HALF_ROWS);
                let mut row_ok = [false; HALF_ROWS];
                for (i, ok) in row_ok[..rb].iter_mut().enumerate() {
                    // SAFETY: row r + i < n_rows holds 2n bytes at
                    // w[(r + i)·ws..] (checked); `wide` HALF_ROWS·n floats.
                    *ok = unsafe { widen_row(n, w.as_ptr().add((r + i) * ws), wide.as_mut_ptr().add(i * n)) };
                }
                let mut t = t0;
                while t < t0 + len {
                    let tb = (t0 + len - t).min(2);
                    // token t's packed copy
                    let ap = a[t * s + 4 * n..].as_ptr();
                    let mut v = [[0f32; 2]; HALF_ROWS];
                    // SAFETY: `wide` holds rb rows; tokens t..t + tb ≤ nt
                    // hold their packed copies, s bytes apart (checked).
                    unsafe {
                        if rb == HALF_ROWS {
                            let wp = wide.as_ptr();
                            match tb {
                                2 => block_halves::<HALF_ROWS, 2>(n, wp, ap, s, &mut v),
                                _ => block_halves::<HALF_ROWS, 1>(n, wp, ap, s, &mut v),
                            }
                        } else {
                            // the last rows of the call, 2 at a time
                            for i in (0..rb).step_by(2) {
                                let (wp, v) = (wide.as_ptr().add(i * n), &mut v[i..]);
                                match ((rb - i).min(2), tb) {
                                    (2, 2) => block::<2, 2>(n, wp, ap, s, v),
                                    (2, _) => block::<2, 1>(n, wp, ap, s, v),
                                    (_, 2) => block::<1, 2>(n, wp, ap, s, v),
                                    _ => block::<1, 1>(n, wp, ap, s, v),
                                }
                            }
                        }
                    }
                    for i in 0..rb {
                        for j in 0..tb {
                            out[(r + i) * os + t + j] = if row_ok[i] && tok_ok(t + j) {
                                v[i][j]
                            } else {
                                // a denormal or a NaN may be on the way: the exact definition
                                let wr = &w[(r + i) * ws..(r + i) * ws + 2 * n];
                                sgemm_dot(n, wr, &a[(t + j) * s..(t + j) * s + 4 * n])
                            };
                        }
                    }
                    t += tb;
                }
                r += rb;
            }
            t0 += len;
        }
    }

    /// Widens the first `np` (a multiple of 32) bf16 weights of one row at
    /// `w` into `d`, laid out as the packed copy of activations
    /// ([`super::packed_index`]); whether they lie within the safe bound.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn widen_row(np: usize, w: *const u8, d: *mut f32) -> bool {
        // SAFETY: the caller's `w` holds 2·np bytes, `d` np floats.
        unsafe {
            let (mut mn, mut mx) = (_mm256_set1_epi16(-1), _mm256_setzero_si256());
            for st in 0..np / KN {
                let wv = weights_natural(w.add(2 * KN * st), &mut mn, &mut mx);
                for (k, v) in wv.iter().enumerate() {
                    _mm256_storeu_ps(d.add((k / 2) * (np / 2) + 16 * st + 8 * (k % 2)), *v);
                }
            }
            safe16(mn, mx)
        }
    }

    /// ggml_vec_dot_bf16's two accumulators (c1 over the first 32 of each
    /// 64 elements, c2 the second; lo/hi halves, lane `i` pair `i`) of `R`
    /// weight rows (`ws` bytes apart at `w`) against one packed token `x`
    /// (of whose copy `np`, a multiple of 64, values are read: the second
    /// half at `h` floats), and whether the rows' weights all
    /// lie within the safe bound (one bound for the `R` rows: an output
    /// outside it is rare, and its row's neighbours' scalar recomputation
    /// gives the same bits). The step is 64 elements so that the four
    /// accumulators of a row are named registers (an index `c` put them on
    /// the stack: a store and a load in every fma chain).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn vec_dot_rows<const R: usize>(
        np: usize,
        w: *const u8,
        ws: usize,
        x: *const f32,
        h: usize,
    ) -> ([[__m256; 4]; R], bool) {
        // SAFETY: the caller's rows hold 2·np bytes, `x` np floats.
        unsafe {
            let z = _mm256_setzero_ps();
            let mut acc = [[z; 4]; R];
            let (mut mn, mut mx) = (_mm256_set1_epi32(-1), _mm256_setzero_si256());
            let mut l = 0;
            while l < np {
                for c in 0..2 {
                    // the step's halves, 16 values each
                    let (lo, hi) = (x.add((l + KN * c) / 2), x.add(h + (l + KN * c) / 2));
                    let (e0, o0, e1, o1) = (
                        _mm256_loadu_ps(lo),
                        _mm256_loadu_ps(lo.add(8)),
                        _mm256_loadu_ps(hi),
                        _mm256_loadu_ps(hi.add(8)),
                    );
                    for (i, acc) in acc.iter_mut().enumerate() {
                        let wv = weights_natural(w.add(i * ws + 2 * (l + KN * c)), &mut mn, &mut mx);
                        // vdpbf16ps: the odd product first
                        acc[2 * c] = _mm256_fmadd_ps(wv[0], e0, _mm256_fmadd_ps(wv[1], o0, acc[2 * c]));
                        acc[2 * c + 1] = _mm256_fmadd_ps(wv[2], e1, _mm256_fmadd_ps(wv[3], o1, acc[2 * c + 1]));
                    }
                }
                l += 2 * KN;
            }
            (acc, safe16(mn, mx))
        }
    }

    /// `RowsFn` of the ggml_vec_dot_bf16 path on AVX2 (decodes: the rows of
    /// a call are the stream segments' rows): each token's packed copy
    /// ([`super::round_act_row`]) against the rows 2 at a time; outputs
    /// outside the bound from the scalar definition, as in [`group`].
    ///
    /// # Safety
    /// As [`crate::kernels::RowsFn`]; the CPU has AVX2 and FMA.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma")]
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
        check_rows(n, w, ws, n_rows, a, s, nt, out, os);
        let np = n & !63;
        for t in 0..nt {
            let x = &a[t * s..t * s + super::act_row_bytes(n)];
            let (tok_ok, packed) = (x[8 * n] != 0, x[4 * n..].as_ptr().cast::<f32>());
            let mut r = 0;
            while r < n_rows {
                let rb = (n_rows - r).min(2);
                let wp = w[r * ws..].as_ptr();
                // SAFETY: rows r..r + rb hold 2n bytes each, `ws` apart
                // (checked); the packed copy n ≥ np floats.
                let (acc, ok): ([[__m256; 4]; 2], bool) = unsafe {
                    if rb == 2 {
                        vec_dot_rows::<2>(np, wp, ws, packed, n / KN * KN / 2)
                    } else {
                        let (a1, o1) = vec_dot_rows::<1>(np, wp, ws, packed, n / KN * KN / 2);
                        ([a1[0], a1[0]], o1)
                    }
                };
                for i in 0..rb {
                    let wr = &w[(r + i) * ws..(r + i) * ws + 2 * n];
                    out[(r + i) * os + t] = if ok && tok_ok {
                        let [c1lo, c1hi, c2lo, c2hi] = acc[i];
                        // SAFETY: AVX2 (this fn's contract).
                        let (r1, r2) = unsafe { (avx2_reduce_lo_hi(c1lo, c1hi), avx2_reduce_lo_hi(c2lo, c2hi)) };
                        vec_dot_tail(n, np, wr, x, r1, r2)
                    } else {
                        // a denormal or a NaN may be on the way: the exact definition
                        vec_dot(n, wr, x)
                    };
                }
                r += rb;
            }
        }
    }

    /// # Safety
    /// The `TileFn` contract (AVX2 and FMA present).
    pub(super) unsafe fn tile_tinyblas(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: the callee asks the `TileFn` contract, which is this fn's.
        unsafe { tile(FloatPath::TinyBlas, n, w, a, s, out) }
    }

    /// # Safety
    /// The `TileFn` contract (AVX2 and FMA present).
    pub(super) unsafe fn tile_vec_dot(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: the callee asks the `TileFn` contract, which is this fn's.
        unsafe { tile(FloatPath::VecDot, n, w, a, s, out) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::dispatch::available_sets;

    fn bf16_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| f32_to_bf16(*x)).collect()
    }

    /// Every kernel of every set gives +0 for each weight row of `rows`
    /// against each token of `tokens`: the definitions, the tile kernels,
    /// and the row-block kernels over all the rows and over each row alone.
    fn assert_all_zero(rows: &[Vec<f32>], tokens: &[Vec<f32>]) {
        let (n, rb) = (rows[0].len(), act_row_bytes(rows[0].len()));
        let mut ab = vec![0u8; tokens.len() * rb];
        for (x, a) in tokens.iter().zip(ab.chunks_exact_mut(rb)) {
            round_act_row(x, a);
        }
        let wbs: Vec<Vec<u8>> = rows.iter().map(|w| bf16_bytes(w)).collect();
        for (r, wr) in wbs.iter().enumerate() {
            for (t, x) in ab.chunks_exact(rb).enumerate() {
                assert_eq!(sgemm_dot(n, wr, x).to_bits(), 0, "sgemm_dot row {r} token {t}");
                assert_eq!(vec_dot(n, wr, x).to_bits(), 0, "vec_dot row {r} token {t}");
            }
        }
        let nt = tokens.len();
        for set in available_sets() {
            for path in [super::super::Path::TinyBlasBf16, super::super::Path::VecDotBf16] {
                let f = (set.ggml)(GgmlType::BF16, path).expect("kernel");
                for wr in &wbs {
                    let mut out = vec![f32::NAN; nt];
                    // SAFETY: n values per row, nt rows `rb` bytes apart; the
                    // set runs on this CPU.
                    unsafe { f(n, wr, &ab, rb, &mut out) };
                    assert!(out.iter().all(|v| v.to_bits() == 0), "{} {path:?}: {out:?}", set.name);
                }
                // the row-block kernels, where the set has them: every row
                // (one block), then each row alone (the AVX2 decode kernel's
                // weight bound is one for its 2-row block)
                let Some(rows_f) = (set.ggml_rows)(GgmlType::BF16, path) else { continue };
                let all = wbs.concat();
                let mut blocks = vec![(all.as_slice(), wbs.len())];
                blocks.extend(wbs.iter().map(|w| (w.as_slice(), 1)));
                for (w, n_rows) in blocks {
                    let mut out = vec![f32::NAN; n_rows * nt];
                    // SAFETY: n_rows rows of n values 2n bytes apart, nt
                    // tokens `rb` bytes apart, outputs [n_rows][nt]; the set
                    // runs on this CPU.
                    unsafe { rows_f(n, w, 2 * n, n_rows, &ab, rb, nt, &mut out, nt) };
                    assert!(out.iter().all(|v| v.to_bits() == 0), "{} rows {path:?} ({n_rows}): {out:?}", set.name);
                }
            }
        }
    }

    #[test]
    fn products_below_the_normal_range_are_flushed_in_every_set() {
        let one = |i: usize, v: f32| {
            let mut r = vec![0f32; 64];
            r[i] = v;
            r
        };
        let big = 2f32.powi(100);
        // 1e-20·1e-20 = 1e-40 is denormal: vdpbf16ps flushes it to 0 (an
        // unflushed chain would end at ~1e-40)
        assert_all_zero(&[one(1, 1e-20)], &[one(1, 1e-20)]);
        // a denormal activation times 2^100 (DAZ reads 0; without, 1.3e-9),
        // beside a row of tiny weights and alone: only the token's bound
        // word sends the second row's outputs to the definition
        assert_all_zero(&[one(3, 1e-20), one(3, big)], &[one(3, 1e-39), one(5, 1.0)]);
        // the same with a denormal weight: only the row's bound does
        assert_all_zero(&[one(3, 1e-39), one(4, 1.0)], &[one(3, big), one(5, 1.0)]);
    }

    #[test]
    fn round_act_row_rounds_like_the_reference_conversion() {
        // ties both ways, values near the top of the range, denormals that
        // round up to the smallest normal, ±0, ±inf and NaNs; 77 values so
        // that the 32-wide loop leaves a tail, specials in the SIMD part
        let specials = [
            1.0 + 2f32.powi(-8),
            1.0 + 3.0 * 2f32.powi(-8),
            -(1.0 + 2f32.powi(-8)),
            f32::MAX,
            f32::from_bits(0x007f_ffff),
            f32::from_bits(0x8000_8001),
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::from_bits(0xff80_0001),
            f32::from_bits(0x7fff_ffff),
        ];
        let plain = |i: usize| (i as f32 - 11.0) * 1.234_567e-2;
        let check = |x: &[f32], want_ok: bool| {
            let n = x.len();
            let mut out = vec![0xa5u8; act_row_bytes(n)];
            round_act_row(x, &mut out);
            let at = |i: usize| u32::from_le_bytes([out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]]);
            for (i, v) in x.iter().enumerate() {
                let want = u32::from(u16::from_le_bytes(f32_to_bf16(*v))) << 16;
                assert_eq!(at(i), want, "{v:e} ({:#010x})", v.to_bits());
                // the packed copy: whole steps laid out, the tail as it is
                let p = packed_index(n, i);
                assert_eq!(at(n + p), want, "packed {i} of {n}");
            }
            assert_eq!(&out[8 * n..], &[[u8::from(want_ok)].as_slice(), &[0; 31]].concat()[..], "bound word");
        };
        let mut x: Vec<f32> = (0..64).map(plain).collect();
        x[3..3 + specials.len()].copy_from_slice(&specials);
        x.extend((0..13).map(plain));
        check(&x, false);
        // within the bound: plain values, zeros, infinities, 2^-56
        let mut x: Vec<f32> = (0..77).map(plain).collect();
        (x[5], x[40], x[70], x[71]) = (f32::INFINITY, -0.0, 2f32.powi(-56), -f32::INFINITY);
        check(&x, true);
        // out of it: one value under 2^-56 (in the SIMD part, in the tail),
        // a NaN in the tail
        for (i, v) in [(33, 2f32.powi(-57)), (75, -1e-30), (76, f32::NAN)] {
            let mut x: Vec<f32> = (0..77).map(plain).collect();
            x[i] = v;
            check(&x, false);
        }
        // every length of the tail
        for n in 0..70 {
            check(&(0..n).map(plain).collect::<Vec<_>>(), true);
        }
        let bad = [0x0000_0001, SAFE_MIN - 0x1_0000, 0x7f80_0001, 0xffc0_0000];
        assert!(bad.iter().all(|b| !in_bound(*b)));
        assert!([0, 0x8000_0000, SAFE_MIN, 0x7f80_0000, 0xff80_0000].iter().all(|b| in_bound(*b)));
    }

    /// The native row kernels (AVX512_BF16's and AVX2's, where the CPU has
    /// them) against the definitions (`sgemm_dot`, `vec_dot`), on values
    /// where the flushing shows: denormal weights and activations, products
    /// below the normal range, NaN and infinity.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn native_row_kernels_give_the_definitions_bits() {
        use crate::kernels::tests::Rng;
        use std::arch::is_x86_feature_detected as has;
        let mut sets = Vec::new();
        if let (Some(tiny), Some(vd)) =
            (avx512_rows(GgmlType::BF16, FloatPath::TinyBlas), avx512_rows(GgmlType::BF16, FloatPath::VecDot))
        {
            sets.push(("avx512_bf16", tiny, vd));
        }
        if has!("avx2") && has!("fma") {
            let (tiny, vd) =
                (avx2_rows(GgmlType::BF16, FloatPath::TinyBlas), avx2_rows(GgmlType::BF16, FloatPath::VecDot));
            sets.push(("avx2", tiny.expect("avx2 tinyblas"), vd.expect("avx2 vec_dot")));
        }
        if sets.is_empty() {
            skip_test!("neither AVX512_BF16 nor AVX2 on this CPU");
            return;
        }
        let mut rng = Rng::new(17);
        let mut value = |special: bool| -> f32 {
            let r = rng.next();
            let v = ((r >> 8) % 20_000) as f32 / 10_000.0 - 1.0;
            if !special {
                return v;
            }
            match r % 16 {
                0 => f32::from_bits(0x0000_4000 | (r as u32 & 0x8000_0000)), // denormal
                1 => 1e-20,                                                  // tiny: products flush
                2 => 3e-19,
                3 => f32::from_bits(0x007f_c000), // rounds up to the smallest normal
                _ => v,
            }
        };
        // cols: 32-steps with and without 64-leftovers, 40 (tinyBLAS
        // declines); every row count to 9 (AVX512_BF16's 4-row and AVX2's
        // 6-row blocks, the segments' 1-4 rows of a decode call), tokens
        // around the 6-token tile and, with 61
        // tokens of 576 and more columns, past the token chunk (1056: its
        // 32-token minimum); in the
        // cases with special values, every third row and token has none, so
        // that the AVX2 kernels' bound meets each operand alone
        let (max_rows, max_nt) = (9, 61);
        for (case, n) in [32, 40, 64, 96, 576, 608, 640, 1056].into_iter().enumerate() {
            let special = case % 2 == 1 || n == 576;
            let ws = 2 * n + 6; // weight rows not packed
            let s = act_row_bytes(n) + 12;
            let mut w = vec![0u8; 1 + (max_rows - 1) * ws + 2 * n];
            for r in 0..max_rows {
                for i in 0..n {
                    let at = 1 + r * ws + 2 * i;
                    w[at..at + 2].copy_from_slice(&f32_to_bf16(value(special && r % 3 != 0)));
                }
            }
            let mut a = vec![0u8; 1 + (max_nt - 1) * s + act_row_bytes(n)];
            for t in 0..max_nt {
                let mut x: Vec<f32> = (0..n).map(|_| value(special && t % 3 != 0)).collect();
                if special && t == 5 {
                    x[3] = f32::NAN;
                }
                if special && t == 6 {
                    x[n - 1] = f32::INFINITY;
                }
                round_act_row(&x, &mut a[1 + t * s..1 + t * s + act_row_bytes(n)]);
            }
            for n_rows in 1..=max_rows {
                for nt in [1, 2, 5, 6, 7, 13, 61] {
                    if nt == 61 && n < 576 {
                        continue;
                    }
                    for (f, tinyblas, set) in
                        sets.iter().flat_map(|&(set, tiny, vd)| [(tiny, n % KN == 0, set), (vd, false, set)])
                    {
                        let os = nt + 3;
                        let mut out = vec![0f32; (n_rows - 1) * os + nt];
                        // SAFETY: the buffers hold n_rows weight rows `ws`
                        // apart, nt activation rows `s` apart and n_rows
                        // output rows `os` apart; the CPU has the features.
                        unsafe { f(n, &w[1..], ws, n_rows, &a[1..], s, nt, &mut out, os) };
                        for r in 0..n_rows {
                            for t in 0..nt {
                                let (wr, x) = (&w[1 + r * ws..1 + r * ws + 2 * n], &a[1 + t * s..1 + t * s + 4 * n]);
                                let want = if tinyblas { sgemm_dot(n, wr, x) } else { vec_dot(n, wr, x) };
                                let got = out[r * os + t];
                                assert!(
                                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                                    "{set}: n={n} rows={n_rows} nt={nt} r={r} t={t} tinyblas={tinyblas}: {got:e} vs {want:e}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// The emulation against this CPU's own `vdpbf16ps`, where it has one.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn dp_pairs_equal_the_instruction() {
        use crate::kernels::tests::Rng;
        if !(std::arch::is_x86_feature_detected!("avx512bf16") && std::arch::is_x86_feature_detected!("avx512f")) {
            eprintln!("no AVX512_BF16 here: nothing to compare with");
            return;
        }
        #[target_feature(enable = "avx512f,avx512bf16")]
        unsafe fn hw(acc: &[f32; 16], w: &[u16; 32], x: &[u16; 32]) -> [f32; 16] {
            use std::arch::x86_64::*;
            let mut r = [0f32; 16];
            // SAFETY: the arrays are 64 bytes each.
            let (wv, xv) = unsafe { (_mm512_loadu_si512(w.as_ptr().cast()), _mm512_loadu_si512(x.as_ptr().cast())) };
            // SAFETY: both are 64 bytes of plain lanes.
            let (wb, xb) =
                unsafe { (std::mem::transmute::<__m512i, __m512bh>(wv), std::mem::transmute::<__m512i, __m512bh>(xv)) };
            // SAFETY: acc holds 16 floats.
            let v = _mm512_dpbf16_ps(unsafe { _mm512_loadu_ps(acc.as_ptr()) }, wb, xb);
            // SAFETY: r holds 16 floats.
            unsafe { _mm512_storeu_ps(r.as_mut_ptr(), v) };
            r
        }
        let mut rng = Rng::new(5);
        for it in 0..20000 {
            // exponents over the whole range every third round (denormals
            // in and out), else near 1
            let mut bits = |wide: bool| -> u16 {
                let r = rng.next();
                let e = if wide { (r >> 8) % 255 } else { 120 + (r >> 8) % 14 };
                ((r & 0x8000) as u16) | ((e as u16) << 7) | ((r >> 20) as u16 & 0x7f)
            };
            let wide = it % 3 == 0;
            let w: [u16; 32] = std::array::from_fn(|_| bits(wide));
            let x: [u16; 32] = std::array::from_fn(|_| bits(wide));
            let acc: [f32; 16] = std::array::from_fn(|i| {
                if i % 4 == 0 {
                    0.0
                } else {
                    f32::from_bits(((bits(wide) as u32) << 16) | 0x1234)
                }
            });
            let acc = acc.map(daz);
            // SAFETY: features checked above.
            let got = unsafe { hw(&acc, &w, &x) };
            for i in 0..16 {
                let f = |b: u16| f32::from_bits((b as u32) << 16);
                let want = dp(dp(acc[i], f(w[2 * i + 1]), f(x[2 * i + 1])), f(w[2 * i]), f(x[2 * i]));
                assert!(
                    got[i].to_bits() == want.to_bits() || (got[i].is_nan() && want.is_nan()),
                    "lane {i}: {} vs {want}",
                    got[i]
                );
            }
        }
    }
}
