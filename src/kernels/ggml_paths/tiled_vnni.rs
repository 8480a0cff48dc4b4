//! Row-block kernels of the tiled k-quant path (`tiled.rs`), laid out as the
//! reference's `tiled_run_micro_vnni_8x16`: 8 weight rows × one group of
//! tokens per step, the tokens in the i32 lanes of a register. Two sets share
//! one body (generic over [`Lanes`], instantiated in a `#[target_feature]`
//! entry point each):
//!
//! - [`Vnni`] (AVX-512 VNNI): 16 tokens per 512-bit register, `vpdpbusd`.
//! - [`Avx2`] (plain AVX2): 8 tokens per 256-bit register, `vpdpbusd`
//!   emulated by `vpmaddubsw` + `vpmaddwd` (exact for the types whose values
//!   are small enough, see [`i16_sums`]; not IQ4_XS, which keeps the per-row
//!   tile kernel `tiled::avx2_tile` on this set).
//!
//! Per call the activations are transposed once into tiles holding, for 4
//! consecutive elements k, the group's tokens' quants (biased to unsigned,
//! `a + 128`), so that one dot step with 4 broadcast weight bytes adds 4
//! products to each token's sum; each block of 8 rows is unpacked once
//! (signed values, scales and minimums as i32) and serves every token group.
//! Per output and super-block the integer sums are those of the scalar
//! definition (exact):
//!
//! ```text
//! s1 = Σ_g scale_g · Σ_{k∈g} w_k·a_k  = Σ_g scale_g · Σ_{k∈g} w_k·(a_k+128) − 128·Σ_g scale_g·Σ_{k∈g} w_k
//! s2 = Σ_g min_g · bsum_g                         (types with a minimum)
//! ```
//!
//! (the correction, a per-row constant, is formed at unpack; the i32
//! arithmetic wraps, so only the final sums need to fit, and they do), and
//! the fold is [`super::tiled::TiledFold`]'s in super-block order, one token
//! per f32 lane: `r = cvt(s1)·d`, `r = fnmadd(dmin, cvt(s2), r)` (types with
//! a minimum; for the others it leaves `r` as it is), `out = fma(r, da, out)`.

use std::arch::x86_64::*;

use super::super::dispatch::{assert_rows_out, RowsFn};
use super::super::x86_avx2::{WIq, WIq4Xs, WK, WQ2K, WQ3K, WQ4K, WQ5K, WQ6K};
use crate::ggml_type::GgmlType;
use crate::quant::QK_K;
use crate::quant::{iq1, iq2, iq3};

/// Weight rows per step.
const RB: usize = 8;
/// Bytes of a Q8_K block: d (f32), 256 quants, 16 bsums (i16).
const Q8K_BYTES: usize = 292;

/// The row-block kernel on plain AVX2 (+FMA, F16C) for weight type `ty`
/// (the Q8_K-paired types but IQ4_XS, see [`i16_sums`]; the IQ1–IQ3 types'
/// values are at most 62): the same bits as [`vnni_rows`]'.
pub fn avx2_rows(ty: GgmlType) -> Option<RowsFn> {
    use GgmlType::*;
    Some(match ty {
        Q2_K => rows_avx2::<WQ2K>,
        Q3_K => rows_avx2::<WQ3K>,
        Q4_K => rows_avx2::<WQ4K>,
        Q5_K => rows_avx2::<WQ5K>,
        Q6_K => rows_avx2::<WQ6K>,
        IQ2_XXS => rows_avx2::<WIq<iq2::BlockIq2Xxs>>,
        IQ2_XS => rows_avx2::<WIq<iq2::BlockIq2Xs>>,
        IQ2_S => rows_avx2::<WIq<iq2::BlockIq2S>>,
        IQ3_XXS => rows_avx2::<WIq<iq3::BlockIq3Xxs>>,
        IQ3_S => rows_avx2::<WIq<iq3::BlockIq3S>>,
        IQ1_S => rows_avx2::<WIq<iq1::BlockIq1S>>,
        IQ1_M => rows_avx2::<WIq<iq1::BlockIq1M>>,
        _ => return None,
    })
}

/// The row-block kernel for weight type `ty` (the Q8_K-paired types).
pub fn vnni_rows(ty: GgmlType) -> Option<RowsFn> {
    use GgmlType::*;
    if !is_x86_feature_detected!("avx512f") {
        return None;
    }
    Some(match ty {
        Q2_K => rows_vnni::<WQ2K>,
        Q3_K => rows_vnni::<WQ3K>,
        Q4_K => rows_vnni::<WQ4K>,
        Q5_K => rows_vnni::<WQ5K>,
        Q6_K => rows_vnni::<WQ6K>,
        IQ4_XS => rows_vnni::<WIq4Xs>,
        IQ2_XXS => rows_vnni::<WIq<iq2::BlockIq2Xxs>>,
        IQ2_XS => rows_vnni::<WIq<iq2::BlockIq2Xs>>,
        IQ2_S => rows_vnni::<WIq<iq2::BlockIq2S>>,
        IQ3_XXS => rows_vnni::<WIq<iq3::BlockIq3Xxs>>,
        IQ3_S => rows_vnni::<WIq<iq3::BlockIq3S>>,
        IQ1_S => rows_vnni::<WIq<iq1::BlockIq1S>>,
        IQ1_M => rows_vnni::<WIq<iq1::BlockIq1M>>,
        _ => return None,
    })
}

/// How many `vpmaddubsw` results (4 elements' quads of a 16-element group)
/// the AVX2 dot adds in i16 before one `vpmaddwd`: 1, 2 or 4 (0: the type
/// does not fit). Exact: a `vpmaddubsw` lane is `u0·w0 + u1·w1` with the
/// activation `0 ≤ u = a + 128 ≤ 255` and `|w| ≤ Q_MAX`, so its magnitude is
/// at most `510·Q_MAX` (no saturation while that is ≤ 32767, i.e.
/// `Q_MAX ≤ 64`), and `k` of them at most `k·510·Q_MAX`, which the i16
/// (wrapping) adds keep exact while it is ≤ 32767: Q6_K (|w| ≤ 32) and Q5_K
/// (≤ 31) 2, Q4_K (≤ 15), Q3_K (≤ 4) and Q2_K (≤ 3) 4, IQ4_XS (≤ 127) 0.
/// The `vpmaddwd` with the group scale (|scale| ≤ 128) is exact in i32.
const fn i16_sums<U: WK>() -> usize {
    match 32767 / (510 * U::Q_MAX) {
        0 => 0,
        1 => 1,
        2 | 3 => 2,
        _ => 4,
    }
}

/// The lanes of one step: `TG` tokens' i32 sums (`I`) and f32 outputs (`F`),
/// and the dot primitives on them. The methods carry their set's target
/// features; the bodies below are `#[inline(always)]` and run inside an
/// entry point that has them.
trait Lanes {
    /// Tokens per step.
    const TG: usize;
    /// The activation bsums are stored as i16 pairs (groups 2j, 2j+1 in one
    /// i32 lane) for `vpmaddwd`, rather than as one i32 per group.
    const PAIRED_BSUMS: bool;
    type I: Copy;
    type F: Copy;
    unsafe fn zero_i() -> Self::I;
    unsafe fn zero_f() -> Self::F;
    unsafe fn set1(v: i32) -> Self::I;
    /// `s + scale · Σ_{kk<4} Σ_{e<4} w[4kk+e]·code_kk[e]`, lane by lane: one
    /// 16-element group of one row (`w`, 16 values) against the 4 element
    /// quads at `codes`.
    unsafe fn group<U: WK>(s: Self::I, codes: *const Self::I, w: *const i8, scale: i32) -> Self::I;
    /// `Σ_g min_g · bsum_g` of one row (`mins`, 16 groups) against the
    /// bsums at `bsums` (one super-block).
    unsafe fn min_sum(bsums: *const Self::I, mins: *const i32) -> Self::I;
    /// The fold of one super-block into `out` (see the module docs).
    unsafe fn fold<const HAS_MIN: bool>(
        s1: Self::I,
        s2: Self::I,
        d: f32,
        dmin: f32,
        da: Self::F,
        out: Self::F,
    ) -> Self::F;
    unsafe fn store(v: Self::F, out: *mut f32);
}

/// AVX-512 VNNI: 16 tokens, `vpdpbusd`.
struct Vnni;
impl Lanes for Vnni {
    const TG: usize = 16;
    const PAIRED_BSUMS: bool = false;
    type I = __m512i;
    type F = __m512;
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn zero_i() -> __m512i {
        _mm512_setzero_si512()
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn zero_f() -> __m512 {
        _mm512_setzero_ps()
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn set1(v: i32) -> __m512i {
        _mm512_set1_epi32(v)
    }
    #[target_feature(enable = "avx512f,avx512vnni")]
    #[inline]
    unsafe fn group<U: WK>(s: __m512i, codes: *const __m512i, w: *const i8, scale: i32) -> __m512i {
        // SAFETY: this fn's contract: the CPU has avx512f, avx512vnni, and `codes`, `w` cover every offset used
        // here.
        unsafe {
            let mut acc = _mm512_setzero_si512();
            for kk in 0..4 {
                let w4 = std::ptr::read_unaligned(w.add(4 * kk) as *const i32);
                acc = _mm512_dpbusd_epi32(acc, *codes.add(kk), _mm512_set1_epi32(w4));
            }
            _mm512_add_epi32(s, _mm512_mullo_epi32(acc, _mm512_set1_epi32(scale)))
        }
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn min_sum(bsums: *const __m512i, mins: *const i32) -> __m512i {
        // SAFETY: this fn's contract: the CPU has avx512f, and `bsums`, `mins` cover every offset used here.
        unsafe {
            let mut s2 = _mm512_setzero_si512();
            for grp in 0..16 {
                s2 = _mm512_add_epi32(s2, _mm512_mullo_epi32(*bsums.add(grp), _mm512_set1_epi32(*mins.add(grp))));
            }
            s2
        }
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn fold<const HAS_MIN: bool>(
        s1: __m512i,
        s2: __m512i,
        d: f32,
        dmin: f32,
        da: __m512,
        out: __m512,
    ) -> __m512 {
        let mut x = _mm512_mul_ps(_mm512_cvtepi32_ps(s1), _mm512_set1_ps(d));
        if HAS_MIN {
            x = _mm512_fnmadd_ps(_mm512_set1_ps(dmin), _mm512_cvtepi32_ps(s2), x);
        }
        _mm512_fmadd_ps(x, da, out)
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn store(v: __m512, out: *mut f32) {
        // SAFETY: this fn's contract: the CPU has avx512f, and `out` covers every offset used here.
        unsafe { _mm512_storeu_ps(out, v) }
    }
}

/// Plain AVX2: 8 tokens, `vpdpbusd` as `vpmaddubsw` (up to [`i16_sums`] of
/// them added in i16) + `vpmaddwd` by the group scale.
struct Avx2;
impl Lanes for Avx2 {
    const TG: usize = 8;
    const PAIRED_BSUMS: bool = true;
    type I = __m256i;
    type F = __m256;
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn zero_i() -> __m256i {
        _mm256_setzero_si256()
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn zero_f() -> __m256 {
        _mm256_setzero_ps()
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn set1(v: i32) -> __m256i {
        _mm256_set1_epi32(v)
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn group<U: WK>(s: __m256i, codes: *const __m256i, w: *const i8, scale: i32) -> __m256i {
        // SAFETY: this fn's contract: the CPU has avx2, and `codes`, `w` cover every offset used here.
        unsafe {
            let k = i16_sums::<U>();
            assert!(k > 0, "weight values too large for vpmaddubsw");
            // (the group scales fit i16: |scale| ≤ 128)
            let sc = _mm256_set1_epi16(scale as i16);
            // (a loop, not a closure: a closure does not inherit the target
            // features, so its intrinsics would not be inlined)
            let mut p = [_mm256_setzero_si256(); 4];
            for (kk, pk) in p.iter_mut().enumerate() {
                let w4 = _mm256_set1_epi32(std::ptr::read_unaligned(w.add(4 * kk) as *const i32));
                *pk = _mm256_maddubs_epi16(*codes.add(kk), w4);
            }
            let mut s = s;
            for c in p.chunks(k) {
                let mut sum = c[0];
                for v in &c[1..] {
                    sum = _mm256_add_epi16(sum, *v);
                }
                s = _mm256_add_epi32(s, _mm256_madd_epi16(sum, sc));
            }
            s
        }
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn min_sum(bsums: *const __m256i, mins: *const i32) -> __m256i {
        // SAFETY: this fn's contract: the CPU has avx2, and `bsums`, `mins` cover every offset used here.
        unsafe {
            // bsums (|·| ≤ 16·128) and minimums (≤ 63) as i16 pairs: vpmaddwd
            // is exact
            let mut s2 = _mm256_setzero_si256();
            for j in 0..8 {
                let m = (*mins.add(2 * j) & 0xFFFF) | (*mins.add(2 * j + 1) << 16);
                s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(*bsums.add(j), _mm256_set1_epi32(m)));
            }
            s2
        }
    }
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn fold<const HAS_MIN: bool>(
        s1: __m256i,
        s2: __m256i,
        d: f32,
        dmin: f32,
        da: __m256,
        out: __m256,
    ) -> __m256 {
        let mut x = _mm256_mul_ps(_mm256_cvtepi32_ps(s1), _mm256_set1_ps(d));
        if HAS_MIN {
            x = _mm256_fnmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(s2), x);
        }
        _mm256_fmadd_ps(x, da, out)
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn store(v: __m256, out: *mut f32) {
        // SAFETY: this fn's contract: the CPU has avx2, and `out` covers every offset used here.
        unsafe { _mm256_storeu_ps(out, v) }
    }
}

/// A call's activations, transposed into groups of `L::TG` tokens (the
/// lanes; tokens past `nt` are zero and their outputs dropped).
struct ActTiles<L: Lanes> {
    nsb: usize,
    codes: Vec<L::I>, // [group][sb][64 element quads]: lane l = token l's 4 quants + 128
    bsums: Vec<L::I>, // [group][sb][BSUM_SLOTS]: lane l = token l's bsums (i32, or i16 pairs)
    d: Vec<L::F>,     // [group][sb]: lane l = token l's scale
}

impl<L: Lanes> ActTiles<L> {
    /// Vectors of bsums per super-block.
    const BSUM_SLOTS: usize = if L::PAIRED_BSUMS { 8 } else { 16 };

    /// Transposes `nt` Q8_K rows of `nsb` blocks, `s` bytes apart from `a`.
    ///
    /// # Safety
    /// `a` holds the `nt` rows; the CPU has `L`'s features.
    #[inline(always)]
    unsafe fn new(nsb: usize, a: *const u8, s: usize, nt: usize) -> ActTiles<L> {
        // SAFETY: this fn's contract: the callers run with target features that cover these instructions, and `a`
        // covers every offset used here.
        unsafe {
            let tg = L::TG;
            assert!(std::mem::size_of::<L::I>() == 4 * tg && std::mem::size_of::<L::F>() == 4 * tg);
            let ng = nt.div_ceil(tg);
            let mut t = ActTiles {
                nsb,
                codes: vec![L::zero_i(); ng * nsb * 64],
                bsums: vec![L::zero_i(); ng * nsb * Self::BSUM_SLOTS],
                d: vec![L::zero_f(); ng * nsb],
            };
            let codes = t.codes.as_mut_ptr() as *mut u32;
            let bsums = t.bsums.as_mut_ptr() as *mut i32;
            let d = t.d.as_mut_ptr() as *mut f32;
            for tok in 0..nt {
                let (g, l) = (tok / tg, tok % tg);
                for sb in 0..nsb {
                    let blk = a.add(tok * s + sb * Q8K_BYTES);
                    let gs = g * nsb + sb;
                    *d.add(gs * tg + l) = std::ptr::read_unaligned(blk as *const f32);
                    for kq in 0..64 {
                        let v = std::ptr::read_unaligned(blk.add(4 + 4 * kq) as *const u32);
                        *codes.add((gs * 64 + kq) * tg + l) = v ^ 0x8080_8080;
                    }
                    for j in 0..16 {
                        let v = std::ptr::read_unaligned(blk.add(260 + 2 * j) as *const i16);
                        if L::PAIRED_BSUMS {
                            let slot = (gs * 8 + j / 2) * tg + l;
                            *(bsums as *mut i16).add(2 * slot + j % 2) = v;
                        } else {
                            *bsums.add((gs * 16 + j) * tg + l) = v as i32;
                        }
                    }
                }
            }
            t
        }
    }
}

/// 8 weight rows unpacked (rows past the matrix are zero).
struct RowBlock {
    q: Vec<i8>,       // [RB][nsb][256] the values
    scales: Vec<i32>, // [RB][nsb][16] per 16-element group
    mins: Vec<i32>,   // [RB][nsb][16] per 16-element group (types with a minimum)
    corr: Vec<i32>,   // [RB][nsb] 128·Σ_g scale_g·Σ_{k∈g} w_k
    d: Vec<f32>,      // [RB][nsb]
    dmin: Vec<f32>,   // [RB][nsb]
    has_min: bool,
}

impl RowBlock {
    fn new(nsb: usize) -> RowBlock {
        RowBlock {
            q: vec![0; RB * nsb * QK_K],
            scales: vec![0; RB * nsb * 16],
            mins: vec![0; RB * nsb * 16],
            corr: vec![0; RB * nsb],
            d: vec![0.0; RB * nsb],
            dmin: vec![0.0; RB * nsb],
            has_min: false,
        }
    }

    /// Unpacks `rows <= RB` rows (`ws` bytes apart from `w`), zeroing the
    /// others.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn fill<U: WK>(&mut self, nsb: usize, w: *const u8, ws: usize, rows: usize) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w` covers every offset used here.
        unsafe {
            assert!(rows <= RB && self.corr.len() == RB * nsb);
            let ones = _mm256_set1_epi8(1);
            for r in 0..RB {
                for sb in 0..nsb {
                    let i = r * nsb + sb;
                    if r >= rows {
                        self.scales[i * 16..i * 16 + 16].fill(0);
                        self.mins[i * 16..i * 16 + 16].fill(0);
                        self.corr[i] = 0;
                        self.d[i] = 0.0;
                        self.dmin[i] = 0.0;
                        continue;
                    }
                    let k = U::unpack(w.add(r * ws + sb * U::BYTES));
                    self.has_min = k.has_min;
                    let mut wsum = _mm256_setzero_si256();
                    for c in 0..8 {
                        _mm256_storeu_si256(self.q.as_mut_ptr().add(i * QK_K + 32 * c) as *mut __m256i, k.q[c]);
                        let mut sc = [0i16; 16];
                        _mm256_storeu_si256(sc.as_mut_ptr() as *mut __m256i, k.sc[c]);
                        self.scales[i * 16 + 2 * c] = sc[0] as i32;
                        self.scales[i * 16 + 2 * c + 1] = sc[8] as i32;
                        // Σ scale·w over the chunk: pair sums of w (exact: u8
                        // ones × i8), times the i16 scale vector
                        wsum = _mm256_add_epi32(wsum, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, k.q[c]), k.sc[c]));
                    }
                    let mut ws8 = [0i32; 8];
                    _mm256_storeu_si256(ws8.as_mut_ptr() as *mut __m256i, wsum);
                    self.corr[i] = ws8.iter().fold(0i32, |acc, v| acc.wrapping_add(*v)).wrapping_mul(128);
                    let mut mins = [0i16; 16];
                    _mm256_storeu_si256(mins.as_mut_ptr() as *mut __m256i, k.mins);
                    for (g, m) in mins.iter().enumerate() {
                        self.mins[i * 16 + g] = if k.has_min { *m as i32 } else { 0 };
                    }
                    self.d[i] = k.d;
                    self.dmin[i] = k.dmin;
                }
            }
        }
    }
}

/// The 8 rows of `u` × the tokens of group `g` of `at`, over all
/// super-blocks: `out[r]` lane `l` = output of row r, token l.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // register arrays by row
unsafe fn block<L: Lanes, U: WK, const HAS_MIN: bool>(u: &RowBlock, at: &ActTiles<L>, g: usize, out: &mut [L::F; RB]) {
    // SAFETY: this fn's contract: the callers run with target features that cover these instructions, and `out`
    // covers every offset used here.
    unsafe {
        let nsb = at.nsb;
        let slots = ActTiles::<L>::BSUM_SLOTS;
        assert!(
            at.codes.len() >= (g + 1) * nsb * 64
                && at.bsums.len() >= (g + 1) * nsb * slots
                && at.d.len() >= (g + 1) * nsb
        );
        assert!(u.q.len() >= RB * nsb * QK_K && u.scales.len() >= RB * nsb * 16 && u.mins.len() >= RB * nsb * 16);
        let (q, scales, mins) = (u.q.as_ptr(), u.scales.as_ptr(), u.mins.as_ptr());
        for sb in 0..nsb {
            let gs = g * nsb + sb;
            let codes = at.codes.as_ptr().add(gs * 64);
            let mut s1 = [L::zero_i(); RB];
            for r in 0..RB {
                s1[r] = L::set1(u.corr[r * nsb + sb].wrapping_neg());
            }
            for grp in 0..16 {
                for r in 0..RB {
                    let i = r * nsb + sb;
                    s1[r] =
                        L::group::<U>(s1[r], codes.add(4 * grp), q.add(i * QK_K + 16 * grp), *scales.add(i * 16 + grp));
                }
            }
            let da = at.d[gs];
            let bsums = at.bsums.as_ptr().add(gs * slots);
            for r in 0..RB {
                let i = r * nsb + sb;
                let s2 = if HAS_MIN { L::min_sum(bsums, mins.add(i * 16)) } else { L::zero_i() };
                out[r] = L::fold::<HAS_MIN>(s1[r], s2, u.d[i], u.dmin[i], da, out[r]);
            }
        }
    }
}

/// `RowsFn` of the tiled path: blocks of 8 rows × `L::TG` tokens.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn rows<L: Lanes, U: WK>(
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
    // SAFETY: this fn's contract: the callers run with target features that cover these instructions, and `w`, `a`,
    // `out` cover every offset used here.
    unsafe {
        assert_rows_out(n_rows, nt, out.len(), os);
        let (nsb, tg) = (n / QK_K, L::TG);
        let at = ActTiles::<L>::new(nsb, a.as_ptr(), s, nt);
        let mut u = RowBlock::new(nsb);
        let mut lanes = [0f32; 16];
        assert!(tg <= lanes.len());
        let mut r = 0;
        while r < n_rows {
            let rh = (n_rows - r).min(RB);
            u.fill::<U>(nsb, w.as_ptr().add(r * ws), ws, rh);
            for g in 0..nt.div_ceil(tg) {
                let mut acc = [L::zero_f(); RB];
                if u.has_min {
                    block::<L, U, true>(&u, &at, g, &mut acc);
                } else {
                    block::<L, U, false>(&u, &at, g, &mut acc);
                }
                let tl = (nt - g * tg).min(tg);
                for (rr, v) in acc.iter().enumerate().take(rh) {
                    L::store(*v, lanes.as_mut_ptr());
                    let o = (r + rr) * os + g * tg;
                    out[o..o + tl].copy_from_slice(&lanes[..tl]);
                }
            }
            r += rh;
        }
    }
}

/// [`rows`] on AVX-512 VNNI.
///
/// # Safety
/// As [`RowsFn`]; the CPU has AVX-512 F, VL and VNNI (`vnni_rows`' caller,
/// the `avx2-vnni` set).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
#[allow(clippy::too_many_arguments)]
unsafe fn rows_vnni<U: WK>(
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
    // SAFETY: the caller checked that the CPU has avx2, fma, f16c, avx512f,
    // avx512vl, avx512vnni (the contract of this `#[target_feature]` fn); the
    // callees' contracts ask no more than this fn's.
    unsafe { rows::<Vnni, U>(n, w, ws, n_rows, a, s, nt, out, os) }
}

/// [`rows`] on plain AVX2.
///
/// # Safety
/// As [`RowsFn`]; the CPU has AVX2, FMA and F16C (the `avx2` set).
#[target_feature(enable = "avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
unsafe fn rows_avx2<U: WK>(
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
    // SAFETY: the caller checked that the CPU has avx2, fma, f16c (the contract
    // of this `#[target_feature]` fn); the callees' contracts ask no more than
    // this fn's.
    unsafe { rows::<Avx2, U>(n, w, ws, n_rows, a, s, nt, out, os) }
}
