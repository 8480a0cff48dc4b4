//! Emulation of the reference's `ggml_vec_dot_tq1_0_q8_K` and
//! `ggml_vec_dot_tq2_0_q8_K` as its x86 build compiles them
//! (`ggml-cpu/arch/x86/quants.c`, the `__AVX2__` code), which its matmul
//! runs for the ternary types at every token count (they are neither
//! repacked, tiled nor in llamafile's tinyBLAS).
//!
//! Per super-block the kernel keeps 8 i32 lanes: lane `l` holds, over the
//! eight 32-element chunks `c`, `Σ t·a` of the chunk's bytes `4l..4l+3`
//! (`t` the unsigned trit 0..=2, TQ2_0's raw 2-bit value), less
//! `bsum[2l] + bsum[2l+1]` (the activations of elements `32l..32l+31`,
//! which turns `t` into `t − 1`). Then per lane
//! `acc_l = fma((float)lane_l, da·dw, acc_l)` (the source's
//! `_mm256_add_ps(_mm256_mul_ps(..), acc)`, which GCC fuses: with the two
//! roundings, 2003 of 16384 logits of a TQ2_0 model differed from the
//! reference's), and the result is `hsum_float_8(acc)`.

use super::super::dispatch::TileFn;
use super::super::scalar::act_row;
use super::vec_dot_k::hsum_float_8;
use crate::ggml_type::GgmlType;
use crate::quant::tq::{BlockTq1_0, BlockTq2_0};
use crate::quant::{as_blocks, f16_to_f32, q8_k, Block, QK_K};

/// The 8 i32 lanes of one super-block of trits `t` against `a`.
fn lanes(t: &[u8; QK_K], a: &q8_k::BlockQ8K) -> [i32; 8] {
    let mut lanes = [0i32; 8];
    for (l, lane) in lanes.iter_mut().enumerate() {
        for c in 0..8 {
            *lane += (32 * c + 4 * l..32 * c + 4 * l + 4).map(|i| t[i] as i32 * a.qs[i] as i8 as i32).sum::<i32>();
        }
        let bsum = |g: usize| i16::from_le_bytes([a.bsums[2 * g], a.bsums[2 * g + 1]]) as i32;
        *lane -= bsum(2 * l) + bsum(2 * l + 1);
    }
    lanes
}

fn tile_tq<B: Block>(
    n: usize,
    w: &[u8],
    a: &[u8],
    s: usize,
    out: &mut [f32],
    unpack: impl Fn(&B) -> ([u8; QK_K], f32),
) {
    let nb = n / QK_K;
    let wb = &as_blocks::<B>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<q8_k::BlockQ8K>(a, s, t, nb);
        let mut acc = [0f32; 8];
        for (bw, ba) in wb.iter().zip(ab) {
            let (trits, dw) = unpack(bw);
            let d = f32::from_le_bytes(ba.d) * dw;
            for (x, lane) in acc.iter_mut().zip(lanes(&trits, ba)) {
                *x = (lane as f32).mul_add(d, *x);
            }
        }
        *o = hsum_float_8(&acc);
    }
}

fn tq1_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_tq(n, w, a, s, out, |b: &BlockTq1_0| (b.trits(), f16_to_f32(b.d)));
}

fn tq2_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_tq(n, w, a, s, out, |b: &BlockTq2_0| (b.trits(), f16_to_f32(b.d)));
}

/// The scalar emulation for `ty`, if it is a ternary type.
pub fn scalar_tile(ty: GgmlType) -> Option<TileFn> {
    match ty {
        GgmlType::TQ1_0 => Some(tq1_0),
        GgmlType::TQ2_0 => Some(tq2_0),
        _ => None,
    }
}

/// The AVX2 emulation for `ty`, if it is a ternary type.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType) -> Option<TileFn> {
    match ty {
        GgmlType::TQ1_0 => Some(avx2::tile::<avx2::Tq1>),
        GgmlType::TQ2_0 => Some(avx2::tile::<avx2::Tq2>),
        _ => None,
    }
}

/// The one-token row-block kernel (`RowsFn`, the bits of [`avx2_tile`]) for
/// `ty`, if it is a ternary type: the decode's (`KernelSet::decode_rows_fn`),
/// each activation block loaded once for 4 rows.
#[cfg(target_arch = "x86_64")]
pub fn avx2_rows(ty: GgmlType) -> Option<super::super::dispatch::RowsFn> {
    match ty {
        GgmlType::TQ1_0 => Some(avx2::rows::<avx2::Tq1>),
        GgmlType::TQ2_0 => Some(avx2::rows::<avx2::Tq2>),
        _ => None,
    }
}

/// [`avx2_rows`] with `vpdpbusd` (the bits of [`vnni_tile`]).
#[cfg(target_arch = "x86_64")]
pub fn vnni_rows(ty: GgmlType) -> Option<super::super::dispatch::RowsFn> {
    match ty {
        GgmlType::TQ1_0 => Some(avx2::rows_vnni::<avx2::Tq1>),
        GgmlType::TQ2_0 => Some(avx2::rows_vnni::<avx2::Tq2>),
        _ => None,
    }
}

/// The AVX-512 VNNI emulation for `ty` (`vpdpbusd` gives the same lanes
/// as `vpmaddubsw` + `vpmaddwd`), if it is a ternary type.
#[cfg(target_arch = "x86_64")]
pub fn vnni_tile(ty: GgmlType) -> Option<TileFn> {
    match ty {
        GgmlType::TQ1_0 => Some(avx2::tile_vnni::<avx2::Tq1>),
        GgmlType::TQ2_0 => Some(avx2::tile_vnni::<avx2::Tq2>),
        _ => None,
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{f16_at, hsum_ps, loadu};
    use crate::quant::QK_K;

    /// A ternary super-block unpacked: its trits as 8 vectors of 32 (chunk
    /// `c` = elements `32c..32c+32`), and its scale.
    pub(crate) trait Tq {
        const BYTES: usize;
        unsafe fn unpack(p: *const u8) -> ([__m256i; 8], f32);
    }

    /// TQ2_0: 2-bit fields of `qs`.
    pub(crate) struct Tq2;
    impl Tq for Tq2 {
        const BYTES: usize = 66;
        #[inline(always)]
        unsafe fn unpack(p: *const u8) -> ([__m256i; 8], f32) {
            // SAFETY: runs inside the `#[target_feature]` kernels below (AVX2);
            // `p` covers a block (the caller's contract).
            unsafe {
                let m3 = _mm256_set1_epi8(3);
                let mut t = [_mm256_setzero_si256(); 8];
                for c in 0..2 {
                    let q = loadu(p.add(32 * c));
                    for l in 0..4 {
                        t[4 * c + l] = match l {
                            0 => _mm256_and_si256(q, m3),
                            1 => _mm256_and_si256(_mm256_srli_epi16::<2>(q), m3),
                            2 => _mm256_and_si256(_mm256_srli_epi16::<4>(q), m3),
                            _ => _mm256_and_si256(_mm256_srli_epi16::<6>(q), m3),
                        };
                    }
                }
                (t, f16_at(p.add(64)))
            }
        }
    }

    /// TQ1_0: base-3 digits, each the top bits of the byte times a power of
    /// 3 (the reference's halving-average trick).
    pub(crate) struct Tq1;

    /// Byte-wise `q·3^n mod 256` for n = 0..5, as 8-bit shifts and adds.
    #[inline(always)]
    unsafe fn pow3(q: __m256i) -> [__m256i; 5] {
        // SAFETY: register-only AVX2 (the callers' `#[target_feature]`).
        unsafe {
            let f8 = _mm256_set1_epi8(-8);
            let q3 = _mm256_add_epi8(q, _mm256_add_epi8(q, q));
            let q9 = _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16::<3>(q), f8), q);
            let q27 = _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16::<3>(q3), f8), q3);
            let q81 = _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16::<3>(q9), f8), q9);
            [q, q3, q9, q27, q81]
        }
    }

    /// The trit in the top of each byte: `((q −sat 1) avg ((q −sat 1) avg
    /// 0)) >> 6` (= `(q·3) >> 8`).
    #[inline(always)]
    unsafe fn top_trit(q: __m256i) -> __m256i {
        // SAFETY: register-only AVX2 (the callers' `#[target_feature]`).
        unsafe {
            let s = _mm256_subs_epu8(q, _mm256_set1_epi8(1));
            let s = _mm256_avg_epu8(s, _mm256_avg_epu8(s, _mm256_setzero_si256()));
            _mm256_and_si256(_mm256_srli_epi16::<6>(s), _mm256_set1_epi8(3))
        }
    }

    impl Tq for Tq1 {
        const BYTES: usize = 54;
        #[inline(always)]
        unsafe fn unpack(p: *const u8) -> ([__m256i; 8], f32) {
            // SAFETY: runs inside the `#[target_feature]` kernels below (AVX2);
            // `p` covers a block (the caller's contract).
            unsafe {
                let a = pow3(loadu(p));
                // qs[32..48] in both halves, and qh's 4 bytes times 1, 3, 9, 27
                let b16 = _mm_loadu_si128(p.add(32) as *const __m128i);
                let b = pow3(_mm256_broadcastsi128_si256(b16));
                let qh = u32::from_le_bytes([*p.add(48), *p.add(49), *p.add(50), *p.add(51)]);
                let h = _mm256_mullo_epi16(
                    _mm256_cvtepu8_epi16(_mm_set1_epi32(qh as i32)),
                    _mm256_set_epi16(27, 27, 27, 27, 9, 9, 9, 9, 3, 3, 3, 3, 1, 1, 1, 1),
                );
                let h = _mm256_and_si256(h, _mm256_set1_epi16(0xFF));
                let h = _mm_packus_epi16(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
                let lo_hi = |x: __m256i, y: __m256i| _mm256_blend_epi32::<0xF0>(x, y);
                let t = [
                    top_trit(a[0]),
                    top_trit(a[1]),
                    top_trit(a[2]),
                    top_trit(a[3]),
                    top_trit(a[4]),
                    // elements 160..192: digits 0 and 1 of qs[32..48]
                    top_trit(lo_hi(b[0], b[1])),
                    top_trit(lo_hi(b[2], b[3])),
                    // 224..240: digit 4; 240..256: qh
                    top_trit(_mm256_inserti128_si256::<1>(b[4], h)),
                ];
                (t, f16_at(p.add(52)))
            }
        }
    }

    /// A Q8_K block's quants (8 chunks of 32), `bsum[2l] + bsum[2l+1]` in
    /// lane `l`, and its scale.
    #[inline(always)]
    unsafe fn act(ab: *const u8) -> ([__m256i; 8], __m256i, f32) {
        // SAFETY: runs inside the `#[target_feature]` kernels below (AVX2);
        // `ab` covers a Q8_K block.
        unsafe {
            let y = std::array::from_fn(|c| loadu(ab.add(4 + 32 * c)));
            let bsums = _mm256_madd_epi16(loadu(ab.add(4 + QK_K)), _mm256_set1_epi16(1));
            (y, bsums, f32::from_le_bytes(std::ptr::read_unaligned(ab as *const [u8; 4])))
        }
    }

    /// The 8 lanes of one block's chunks `t` against an activation block's
    /// quants `y` and pair sums `bsums` (`VNNI`: `vpdpbusd`), as the module
    /// doc says.
    #[inline(always)]
    unsafe fn lanes<const VNNI: bool>(t: &[__m256i; 8], y: &[__m256i; 8], bsums: __m256i) -> __m256i {
        // SAFETY: runs inside the `#[target_feature]` kernels below (AVX2;
        // AVX-512 VNNI where `VNNI`); registers only.
        unsafe {
            let ones = _mm256_set1_epi16(1);
            // four chains (the sums are exact integers: any grouping gives
            // the same lanes; one chain of 8 `vpdpbusd` waited on their
            // latency)
            let mut acc = [_mm256_setzero_si256(); 4];
            for (c, (&tc, &yc)) in t.iter().zip(y).enumerate() {
                acc[c % 4] = if VNNI {
                    _mm256_dpbusd_epi32(acc[c % 4], tc, yc)
                } else {
                    // (a pair of products ≤ 2·3·128: exact in i16)
                    _mm256_add_epi32(acc[c % 4], _mm256_madd_epi16(_mm256_maddubs_epi16(tc, yc), ones))
                };
            }
            let sum = _mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]), _mm256_add_epi32(acc[2], acc[3]));
            _mm256_sub_epi32(sum, bsums)
        }
    }

    /// Tokens `T` against one weight row.
    #[inline(always)]
    unsafe fn group<U: Tq, const VNNI: bool, const T: usize>(
        nb: usize,
        w: *const u8,
        a: *const u8,
        s: usize,
        out: &mut [f32],
    ) {
        // SAFETY: as `lanes`; `w` covers `nb` blocks, `a` T tokens `s` apart.
        unsafe {
            let mut acc = [_mm256_setzero_ps(); T];
            for b in 0..nb {
                let (t, dw) = U::unpack(w.add(b * U::BYTES));
                for (j, acc) in acc.iter_mut().enumerate() {
                    let (y, bsums, da) = act(a.add(j * s + b * 292));
                    let l = lanes::<VNNI>(&t, &y, bsums);
                    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(l), _mm256_set1_ps(da * dw), *acc);
                }
            }
            for (o, acc) in out.iter_mut().zip(acc) {
                *o = hsum_ps(acc);
            }
        }
    }

    #[inline(always)]
    unsafe fn body<U: Tq, const VNNI: bool>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: the `TileFn` contract (shapes checked by the caller).
        unsafe {
            let nb = n / QK_K;
            let mut t = 0;
            while t + 4 <= out.len() {
                group::<U, VNNI, 4>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 4]);
                t += 4;
            }
            while t < out.len() {
                group::<U, VNNI, 1>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 1]);
                t += 1;
            }
        }
    }

    /// `R` weight rows `ws` apart against one token: each activation block
    /// loaded once for the `R` rows; every row's operations those of
    /// [`group`] (the same bits).
    #[inline(always)]
    unsafe fn rows_group<U: Tq, const VNNI: bool, const R: usize>(
        nb: usize,
        w: *const u8,
        ws: usize,
        a: *const u8,
        out: *mut f32,
        os: usize,
    ) {
        // SAFETY: as `lanes`; `w` covers R rows of `nb` blocks `ws` apart, `a`
        // one token, `out` R outputs `os` apart (the `RowsFn` contract).
        unsafe {
            let mut acc = [_mm256_setzero_ps(); R];
            for b in 0..nb {
                let (y, bsums, da) = act(a.add(b * 292));
                for (i, acc) in acc.iter_mut().enumerate() {
                    let (t, dw) = U::unpack(w.add(i * ws + b * U::BYTES));
                    let l = lanes::<VNNI>(&t, &y, bsums);
                    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(l), _mm256_set1_ps(da * dw), *acc);
                }
            }
            for (i, acc) in acc.into_iter().enumerate() {
                *out.add(i * os) = hsum_ps(acc);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn rows_body<U: Tq, const VNNI: bool>(
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
        crate::kernels::dispatch::assert_rows_out(n_rows, nt, out.len(), os);
        // SAFETY: the `RowsFn` contract (shapes checked by the caller; the
        // output's extent asserted above).
        unsafe {
            let nb = n / QK_K;
            for t in 0..nt {
                let (at, o) = (a.as_ptr().add(t * s), out.as_mut_ptr().add(t));
                let mut r = 0;
                while r + 4 <= n_rows {
                    rows_group::<U, VNNI, 4>(nb, w.as_ptr().add(r * ws), ws, at, o.add(r * os), os);
                    r += 4;
                }
                while r < n_rows {
                    rows_group::<U, VNNI, 1>(nb, w.as_ptr().add(r * ws), ws, at, o.add(r * os), os);
                    r += 1;
                }
            }
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn rows<U: Tq>(
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
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c and the
        // buffers hold what the shapes say.
        unsafe { rows_body::<U, false>(n, w, ws, n_rows, a, s, nt, out, os) }
    }

    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn rows_vnni<U: Tq>(
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
        // SAFETY: this fn's contract: the CPU has the set's features and the
        // buffers hold what the shapes say.
        unsafe { rows_body::<U, true>(n, w, ws, n_rows, a, s, nt, out, os) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn tile<U: Tq>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c and the
        // buffers hold what the shapes say.
        unsafe { body::<U, false>(n, w, a, s, out) }
    }

    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
    pub(super) unsafe fn tile_vnni<U: Tq>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has the set's features and the
        // buffers hold what the shapes say.
        unsafe { body::<U, true>(n, w, a, s, out) }
    }
}
