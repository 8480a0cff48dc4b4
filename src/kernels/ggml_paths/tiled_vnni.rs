//! Row-block kernel (AVX-512 VNNI) of the tiled k-quant path (`tiled.rs`),
//! laid out as the reference's `tiled_run_micro_vnni_8x16`: 8 weight rows ×
//! 16 tokens per step, the tokens in the 16 i32 lanes of a 512-bit register.
//!
//! Per call the activations are transposed once into 64-byte tiles holding,
//! for 4 consecutive elements k, the 16 tokens' quants (biased to unsigned,
//! `a + 128`), so that one `vpdpbusd` with 4 broadcast weight bytes adds 4
//! products to each of 16 tokens' sums; each block of 8 rows is unpacked
//! once (signed values, scales and minimums as i32) and serves every token
//! group. Per output and super-block the integer sums are those of the
//! scalar definition (exact):
//!
//! ```text
//! s1 = Σ_g scale_g · Σ_{k∈g} w_k·a_k  = Σ_g scale_g · Σ_{k∈g} w_k·(a_k+128) − 128·Σ_g scale_g·Σ_{k∈g} w_k
//! s2 = Σ_g min_g · bsum_g                         (types with a minimum)
//! ```
//!
//! (the correction, a per-row constant, is formed at unpack; the i32
//! arithmetic wraps, so only the final sums need to fit, and they do), and
//! the fold is [`super::tiled::TiledFold`]'s in super-block order, 16 tokens
//! in the f32 lanes: `r = cvt(s1)·d`, `r = fnmadd(dmin, cvt(s2), r)` (types
//! with a minimum; for the others it leaves `r` as it is), `out = fma(r, da, out)`.

use std::arch::x86_64::*;

use super::super::dispatch::{assert_rows_out, RowsFn};
use super::super::x86_avx2::{WIq4Xs, WK, WQ2K, WQ3K, WQ4K, WQ5K, WQ6K};
use crate::ggml_type::GgmlType;
use crate::quant::QK_K;

/// Tokens per step (the i32 lanes of a 512-bit register).
const TG: usize = 16;
/// Weight rows per step.
const RB: usize = 8;
/// Bytes of a Q8_K block: d (f32), 256 quants, 16 bsums (i16).
const Q8K_BYTES: usize = 292;

/// The row-block kernel on plain AVX2 (+FMA, F16C) for weight type `ty`
/// (the Q8_K-paired types): the same bits as [`vnni_rows`]'.
pub fn avx2_rows(_ty: GgmlType) -> Option<RowsFn> {
    None
}

/// The row-block kernel for weight type `ty` (the Q8_K-paired types).
pub fn vnni_rows(ty: GgmlType) -> Option<RowsFn> {
    use GgmlType::*;
    if !is_x86_feature_detected!("avx512f") {
        return None;
    }
    Some(match ty {
        Q2_K => rows::<WQ2K>,
        Q3_K => rows::<WQ3K>,
        Q4_K => rows::<WQ4K>,
        Q5_K => rows::<WQ5K>,
        Q6_K => rows::<WQ6K>,
        IQ4_XS => rows::<WIq4Xs>,
        _ => return None,
    })
}

/// A call's activations, transposed into groups of 16 tokens (the lanes;
/// tokens past `nt` are zero and their outputs dropped).
struct ActTiles {
    nsb: usize,
    codes: Vec<__m512i>, // [group][sb][64 element quads]: lane l = token l's 4 quants + 128
    bsums: Vec<__m512i>, // [group][sb][16 element groups]: lane l = token l's bsum (i32)
    d: Vec<__m512>,      // [group][sb]: lane l = token l's scale
}

impl ActTiles {
    /// Transposes `nt` Q8_K rows of `nsb` blocks, `s` bytes apart from `a`.
    ///
    /// # Safety
    /// `a` holds the `nt` rows; the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn new(nsb: usize, a: *const u8, s: usize, nt: usize) -> ActTiles {
        let ng = nt.div_ceil(TG);
        let mut t = ActTiles {
            nsb,
            codes: vec![_mm512_setzero_si512(); ng * nsb * 64],
            bsums: vec![_mm512_setzero_si512(); ng * nsb * 16],
            d: vec![_mm512_setzero_ps(); ng * nsb],
        };
        let codes = t.codes.as_mut_ptr() as *mut u32;
        let bsums = t.bsums.as_mut_ptr() as *mut i32;
        let d = t.d.as_mut_ptr() as *mut f32;
        for tok in 0..nt {
            let (g, l) = (tok / TG, tok % TG);
            for sb in 0..nsb {
                let blk = a.add(tok * s + sb * Q8K_BYTES);
                let gs = g * nsb + sb;
                *d.add(gs * TG + l) = std::ptr::read_unaligned(blk as *const f32);
                for kq in 0..64 {
                    let v = std::ptr::read_unaligned(blk.add(4 + 4 * kq) as *const u32);
                    *codes.add((gs * 64 + kq) * TG + l) = v ^ 0x8080_8080;
                }
                for j in 0..16 {
                    let v = std::ptr::read_unaligned(blk.add(260 + 2 * j) as *const i16);
                    *bsums.add((gs * 16 + j) * TG + l) = v as i32;
                }
            }
        }
        t
    }
}

/// 8 weight rows unpacked (rows past the matrix are zero).
struct RowBlock {
    q: Vec<i8>,      // [RB][nsb][256] the values
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

/// The 8 rows of `u` × the 16 tokens of group `g` of `at`, over all
/// super-blocks: `out[r]` lane `l` = output of row r, token l.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
#[inline]
#[allow(clippy::needless_range_loop)] // register arrays by row
unsafe fn block<const HAS_MIN: bool>(u: &RowBlock, at: &ActTiles, g: usize, out: &mut [__m512; RB]) {
    let nsb = at.nsb;
    assert!(at.codes.len() >= (g + 1) * nsb * 64 && at.bsums.len() >= (g + 1) * nsb * 16 && at.d.len() >= (g + 1) * nsb);
    assert!(u.q.len() >= RB * nsb * QK_K && u.scales.len() >= RB * nsb * 16 && u.mins.len() >= RB * nsb * 16);
    let (q, scales, mins) = (u.q.as_ptr(), u.scales.as_ptr(), u.mins.as_ptr());
    for sb in 0..nsb {
        let gs = g * nsb + sb;
        let codes = at.codes.as_ptr().add(gs * 64);
        let mut s1 = [_mm512_setzero_si512(); RB];
        for r in 0..RB {
            s1[r] = _mm512_set1_epi32(u.corr[r * nsb + sb].wrapping_neg());
        }
        for grp in 0..16 {
            let mut acc = [_mm512_setzero_si512(); RB];
            for kk in 0..4 {
                let kq = grp * 4 + kk;
                let c = *codes.add(kq);
                for r in 0..RB {
                    let w4 = std::ptr::read_unaligned(q.add((r * nsb + sb) * QK_K + 4 * kq) as *const i32);
                    acc[r] = _mm512_dpbusd_epi32(acc[r], c, _mm512_set1_epi32(w4));
                }
            }
            for r in 0..RB {
                let sc = _mm512_set1_epi32(*scales.add((r * nsb + sb) * 16 + grp));
                s1[r] = _mm512_add_epi32(s1[r], _mm512_mullo_epi32(acc[r], sc));
            }
        }
        let da = at.d[gs];
        if HAS_MIN {
            let bsums = at.bsums.as_ptr().add(gs * 16);
            let mut s2 = [_mm512_setzero_si512(); RB];
            for grp in 0..16 {
                let bs = *bsums.add(grp);
                for r in 0..RB {
                    let m = _mm512_set1_epi32(*mins.add((r * nsb + sb) * 16 + grp));
                    s2[r] = _mm512_add_epi32(s2[r], _mm512_mullo_epi32(bs, m));
                }
            }
            for r in 0..RB {
                let i = r * nsb + sb;
                let x = _mm512_mul_ps(_mm512_cvtepi32_ps(s1[r]), _mm512_set1_ps(u.d[i]));
                let x = _mm512_fnmadd_ps(_mm512_set1_ps(u.dmin[i]), _mm512_cvtepi32_ps(s2[r]), x);
                out[r] = _mm512_fmadd_ps(x, da, out[r]);
            }
        } else {
            for r in 0..RB {
                let x = _mm512_mul_ps(_mm512_cvtepi32_ps(s1[r]), _mm512_set1_ps(u.d[r * nsb + sb]));
                out[r] = _mm512_fmadd_ps(x, da, out[r]);
            }
        }
    }
}

/// `RowsFn` of the tiled path: blocks of 8 rows × 16 tokens.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
#[allow(clippy::too_many_arguments)]
unsafe fn rows<U: WK>(
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
    assert_rows_out(n_rows, nt, out.len(), os);
    let nsb = n / QK_K;
    let at = ActTiles::new(nsb, a.as_ptr(), s, nt);
    let mut u = RowBlock::new(nsb);
    let mut r = 0;
    while r < n_rows {
        let rh = (n_rows - r).min(RB);
        u.fill::<U>(nsb, w.as_ptr().add(r * ws), ws, rh);
        for g in 0..nt.div_ceil(TG) {
            let mut acc = [_mm512_setzero_ps(); RB];
            if u.has_min {
                block::<true>(&u, &at, g, &mut acc);
            } else {
                block::<false>(&u, &at, g, &mut acc);
            }
            let tl = (nt - g * TG).min(TG);
            for (rr, v) in acc.iter().enumerate().take(rh) {
                let mut lanes = [0f32; TG];
                _mm512_storeu_ps(lanes.as_mut_ptr(), *v);
                let o = (r + rr) * os + g * TG;
                out[o..o + tl].copy_from_slice(&lanes[..tl]);
            }
        }
        r += rh;
    }
}
