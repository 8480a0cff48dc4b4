//! Row-block kernels ([`RowsFn`]) for the repacked path (`repack.rs`) on
//! AVX-512 VNNI (256-bit vectors): 8 weight rows per step, as the
//! reference's own `ggml_gemm_*_8x8` interleave them.
//!
//! Per group of 8 rows, each weight block is unpacked once per call into an
//! interleaved scratch tile: for every 32-element chunk and every 4-element
//! group of it, one vector holds those 4 quants (as u8) of each of the 8
//! rows, one 32-bit lane per row. For every token, `vpdpbusd` of such a
//! vector with the broadcast of the token's 4 activation bytes then adds the
//! 8 rows' products into the 8 lanes: the rows' integer block sums, with no
//! horizontal sums. The float operations per output are exactly those of
//! `repack.rs` in its order (lanes = rows):
//!
//! - Q4_0, IQ4_NL, per 32-block: `acc = fma((float)isum, dw·da, acc)`, the
//!   product `dw·da` one `vmulps` of the rows' scales and the token's.
//!   The weights are signed: the tile holds `w + 128` (u8) and each sum
//!   starts from `−128·Σa` of the activation block (exact integers). Two
//!   8-row groups per step where there are 16 rows, so that each activation
//!   broadcast serves 16 rows (~1.16× the speed of one group).
//! - Q4_K, Q2_K: gemm tokens (the first `nt − nt % 4`) per piece (Q4_K: 64
//!   elements, Q2_K: 128), gemv tokens per super-block:
//!   `acc = fma(isum, d·da, acc)`, `accm = fma(imin, dmin·da, accm)`, result
//!   `acc − accm`; `isum` is Σ scale·Σq·a (`vpmulld` of the 32-chunk sums,
//!   or for Q2_K the 16-group sums, by the rows' scales), `imin` Σ min·bsum
//!   (`vpdpwssd` of the rows' two group minimums of a chunk, i16 pairs, by
//!   the activation's two 16-group sums of the chunk).
//!
//! Leftover rows (fewer than 8) run the per-row AVX2 emulation.

use std::arch::x86_64::*;

use super::super::dispatch::{assert_rows_out, RowsFn, TileFn};
use super::super::x86_avx2::{f16_at, k4_scales, q8k_d, transpose8, KRegs, WIq4Nl, WMxfp4, W32, WK, WQ2K, WQ4K, WQ4_0};
use super::repack::{avx2_tile, gemm_rows};
use crate::ggml_type::GgmlType;
use crate::quant::{QK, QK_K};

/// The row-block kernel of the repacked path for `ty`, if there is one.
pub fn vnni_rows(ty: GgmlType) -> Option<RowsFn> {
    use GgmlType::*;
    Some(match ty {
        Q4_0 => rows_b32::<WQ4_0>,
        IQ4_NL => rows_b32::<WIq4Nl>,
        MXFP4 => rows_b32::<WMxfp4>,
        Q4_K => rows_kmin::<WQ4K>,
        Q2_K => rows_kmin::<WQ2K>,
        _ => return None,
    })
}

/// A repacked 32-block type (for its per-row fallback).
trait Repacked: W32 {
    const TYPE: GgmlType;
}
impl Repacked for WQ4_0 {
    const TYPE: GgmlType = GgmlType::Q4_0;
}
impl Repacked for WIq4Nl {
    const TYPE: GgmlType = GgmlType::IQ4_NL;
}
impl Repacked for WMxfp4 {
    const TYPE: GgmlType = GgmlType::MXFP4;
}

/// Tokens per step of the gemm loop: one tile load serves them all. A
/// divisor of 4, so that the gemm tokens (`gemm_rows`) are whole steps.
const T: usize = 4;

/// Writes the 8 lanes of `v` (lane `r` = row `r`) to `out[r * os]`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
#[inline]
unsafe fn store_rows(v: __m256, out: *mut f32, os: usize) {
    // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, avx512vnni, and `out` cover every
    // offset used here.
    unsafe {
        let mut l = [0f32; 8];
        _mm256_storeu_ps(l.as_mut_ptr(), v);
        for (r, x) in l.iter().enumerate() {
            *out.add(r * os) = *x;
        }
    }
}

/// The 4 activation bytes at `p`, broadcast to every lane.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
#[inline]
unsafe fn bcast4(p: *const u8) -> __m256i {
    // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, avx512vnni, and `p` cover every
    // offset used here.
    unsafe { _mm256_set1_epi32(std::ptr::read_unaligned(p as *const i32)) }
}

/// The per-row fallback of a row-block kernel: rows `[r0, n_rows)` one at a
/// time with the AVX2 emulation `f`.
#[allow(clippy::too_many_arguments)]
unsafe fn leftover_rows(
    f: TileFn,
    n: usize,
    w: &[u8],
    ws: usize,
    r0: usize,
    n_rows: usize,
    a: &[u8],
    s: usize,
    nt: usize,
    out: &mut [f32],
    os: usize,
) {
    // SAFETY: `f` is a `TileFn` of the CPU's set (the caller's contract); row
    // r is within `w` and its `nt` outputs within `out`, so each call gets
    // the `TileFn` contract's shapes.
    unsafe {
        for r in r0..n_rows {
            f(n, &w[r * ws..], a, s, &mut out[r * os..r * os + nt]);
        }
    }
}

// --- 32-blocks (Q4_0, IQ4_NL) × Q8_0

/// `RowsFn` for the repacked 32-block types.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
#[allow(clippy::too_many_arguments)]
unsafe fn rows_b32<U: Repacked>(
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
    // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, avx512vnni, and `w`, `a`, `out`
    // cover every offset used here.
    unsafe {
        assert_rows_out(n_rows, nt, out.len(), os);
        let nb = n / QK;
        let (wp, ap, op) = (w.as_ptr(), a.as_ptr(), out.as_mut_ptr());
        // [nt][nb] per activation block: its f16 scale as f32 and −128·Σa
        let mut da = vec![0f32; nt * nb];
        let mut bias = vec![0i32; nt * nb];
        for t in 0..nt {
            for b in 0..nb {
                let ab = ap.add(t * s + b * 34);
                da[t * nb + b] = f16_at(ab);
                let sum: i32 = (0..QK).map(|i| *ab.add(2 + i) as i8 as i32).sum();
                bias[t * nb + b] = -128 * sum;
            }
        }
        // [nb][R][8 groups] lane r: the group's 4 quants + 128 of row r of the
        // R-th 8-row group; [nb][R] those rows' scales
        let mut tile = vec![_mm256_setzero_si256(); nb * 16];
        let mut dw = vec![_mm256_setzero_ps(); nb * 2];
        let mut r0 = 0;
        // two 8-row groups per step (each activation broadcast serves both),
        // then one
        while r0 + 8 <= n_rows {
            let two = r0 + 16 <= n_rows;
            let groups = if two { 2 } else { 1 };
            pack_b32::<U>(nb, wp.add(r0 * ws), ws, groups, &mut tile, &mut dw);
            let o = op.add(r0 * os);
            let mut t = 0;
            while t + T <= nt {
                let (ap, da, bias, o) = (ap.add(t * s), &da[t * nb..], &bias[t * nb..], o.add(t));
                if two {
                    b32_tokens::<T, 2>(nb, &tile, &dw, ap, s, da, bias, o, os);
                } else {
                    b32_tokens::<T, 1>(nb, &tile, &dw, ap, s, da, bias, o, os);
                }
                t += T;
            }
            while t < nt {
                let (ap, da, bias, o) = (ap.add(t * s), &da[t * nb..], &bias[t * nb..], o.add(t));
                if two {
                    b32_tokens::<1, 2>(nb, &tile, &dw, ap, s, da, bias, o, os);
                } else {
                    b32_tokens::<1, 1>(nb, &tile, &dw, ap, s, da, bias, o, os);
                }
                t += 1;
            }
            r0 += 8 * groups;
        }
        if r0 < n_rows {
            let f = avx2_tile(U::TYPE).expect("repacked type");
            leftover_rows(f, n, w, ws, r0, n_rows, a, s, nt, out, os);
        }
    }
}

/// Interleaves `R` groups of 8 rows (from `w`, `ws` bytes apart) into
/// `tile` (`[nb][R][8]`) and their scales into `dw` (`[nb][R]`).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
unsafe fn pack_b32<U: W32>(nb: usize, w: *const u8, ws: usize, groups: usize, tile: &mut [__m256i], dw: &mut [__m256]) {
    // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, avx512vnni, and `w`, `tile`, `dw`
    // cover every offset used here.
    unsafe {
        let flip = _mm256_set1_epi8(-128i8); // w ^ 0x80 == w + 128 as u8
        for b in 0..nb {
            for h in 0..groups {
                let mut q = [_mm256_setzero_si256(); 8];
                let mut d = [0f32; 8];
                for r in 0..8 {
                    let (qr, dr) = U::load(w.add((8 * h + r) * ws + b * U::BYTES));
                    q[r] = _mm256_xor_si256(qr, flip);
                    d[r] = dr;
                }
                let i = b * groups + h;
                tile[i * 8..i * 8 + 8].copy_from_slice(&transpose8(&q));
                dw[i] = _mm256_loadu_ps(d.as_ptr());
            }
        }
    }
}

/// `TT` tokens against `R` packed groups of 8 rows (32-block types): row
/// `8h + r` of the step is lane r of group h.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn b32_tokens<const TT: usize, const R: usize>(
    nb: usize,
    tile: &[__m256i],
    dw: &[__m256],
    a: *const u8,
    s: usize,
    da: &[f32],
    bias: &[i32],
    out: *mut f32,
    os: usize,
) {
    // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, avx512vnni, and `a`, `out`,
    // `tile`, `dw`, `da`, `bias` cover every offset used here.
    unsafe {
        assert!(tile.len() >= nb * R * 8 && dw.len() >= nb * R && da.len() >= TT * nb && bias.len() >= TT * nb);
        let (tp, dwp, dap, bp) = (tile.as_ptr(), dw.as_ptr(), da.as_ptr(), bias.as_ptr());
        // per token: its activation row (quants of block 0)
        let aq: [*const u8; TT] = std::array::from_fn(|j| a.add(j * s + 2));
        let mut acc = [[_mm256_setzero_ps(); TT]; R];
        for b in 0..nb {
            let mut isum: [[__m256i; TT]; R] = [std::array::from_fn(|j| _mm256_set1_epi32(*bp.add(j * nb + b))); R];
            for g in 0..8 {
                let wq: [__m256i; R] = std::array::from_fn(|h| *tp.add((b * R + h) * 8 + g));
                for j in 0..TT {
                    let av = bcast4(aq[j].add(b * 34 + 4 * g));
                    for h in 0..R {
                        isum[h][j] = _mm256_dpbusd_epi32(isum[h][j], wq[h], av);
                    }
                }
            }
            for j in 0..TT {
                let daj = _mm256_set1_ps(*dap.add(j * nb + b));
                for h in 0..R {
                    let scale = _mm256_mul_ps(*dwp.add(b * R + h), daj);
                    acc[h][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[h][j]), scale, acc[h][j]);
                }
            }
        }
        for (h, acc) in acc.iter().enumerate() {
            for (j, v) in acc.iter().enumerate() {
                store_rows(*v, out.add(8 * h * os + j), os);
            }
        }
    }
}

// --- Q4_K, Q2_K × Q8_K

/// A repacked k-quant with a minimum.
trait RepackedK: WK {
    const TYPE: GgmlType;
    /// 32-chunks per piece the gemm folds (Q4_K: 64 elements, Q2_K: 128)
    const GEMM_P: usize;
    /// the scale changes every 16 elements (Q2_K), not every 32 (Q4_K)
    const PER16: bool;
    /// The super-block at `p`: its registers and its 16 group scales.
    unsafe fn load(p: *const u8) -> (KRegs, [i16; 16]);
}

impl RepackedK for WQ4K {
    const TYPE: GgmlType = GgmlType::Q4_K;
    const GEMM_P: usize = 2;
    const PER16: bool = false;
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn load(p: *const u8) -> (KRegs, [i16; 16]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `p` covers every offset used here.
        unsafe {
            let (s6, _) = k4_scales(p.add(4));
            (WQ4K::unpack(p), std::array::from_fn(|g| s6[g / 2]))
        }
    }
}

impl RepackedK for WQ2K {
    const TYPE: GgmlType = GgmlType::Q2_K;
    const GEMM_P: usize = 4;
    const PER16: bool = true;
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn load(p: *const u8) -> (KRegs, [i16; 16]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `p` covers every offset used here.
        unsafe {
            let raw: [u8; 16] = std::ptr::read_unaligned(p as *const [u8; 16]);
            (WQ2K::unpack(p), std::array::from_fn(|g| (raw[g] & 0xF) as i16))
        }
    }
}

/// One super-block of 8 rows, interleaved: per 32-chunk `c` and 4-group `g`,
/// `q[c][g]` lane r = the 4 quants of row r; `sc[g]` the rows' 16-group
/// scales (i32), `mn[c]` the minimums of the chunk's two groups (two i16 per
/// lane), `d`, `dmin` the rows' super-scales.
#[derive(Clone, Copy)]
struct KTile {
    q: [[__m256i; 8]; 8],
    sc: [__m256i; 16],
    mn: [__m256i; 8],
    d: __m256,
    dmin: __m256,
}

/// `RowsFn` for the repacked k-quants.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
#[allow(clippy::too_many_arguments)]
#[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
unsafe fn rows_kmin<U: RepackedK>(
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
    // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, avx512vnni, and `w`, `a`, `out`
    // cover every offset used here.
    unsafe {
        assert_rows_out(n_rows, nt, out.len(), os);
        let nb = n / QK_K;
        let (wp, ap, op) = (w.as_ptr(), a.as_ptr(), out.as_mut_ptr());
        let n4 = gemm_rows(nt);
        let zero = _mm256_setzero_si256();
        let empty = KTile {
            q: [[zero; 8]; 8],
            sc: [zero; 16],
            mn: [zero; 8],
            d: _mm256_setzero_ps(),
            dmin: _mm256_setzero_ps(),
        };
        let mut tiles = vec![empty; nb]; // [nb]
        let mut r0 = 0;
        while r0 + 8 <= n_rows {
            for (b, kt) in tiles.iter_mut().enumerate() {
                let mut q = [[zero; 8]; 8]; // [chunk][row]
                let (mut sc, mut mn) = ([[zero; 8]; 2], [zero; 8]); // [half][row], [row]
                let (mut d, mut dmin) = ([0f32; 8], [0f32; 8]);
                for r in 0..8 {
                    let (k, s16) = U::load(wp.add((r0 + r) * ws + b * U::BYTES));
                    for c in 0..8 {
                        q[c][r] = k.q[c];
                    }
                    for (h, v) in sc.iter_mut().enumerate() {
                        v[r] = _mm256_cvtepi16_epi32(_mm_loadu_si128(s16.as_ptr().add(8 * h) as *const __m128i));
                    }
                    // the 16 group minimums: dword c = (min_2c, min_2c+1)
                    mn[r] = k.mins;
                    d[r] = k.d;
                    dmin[r] = k.dmin;
                }
                for c in 0..8 {
                    kt.q[c] = transpose8(&q[c]);
                }
                kt.sc[..8].copy_from_slice(&transpose8(&sc[0]));
                kt.sc[8..].copy_from_slice(&transpose8(&sc[1]));
                kt.mn = transpose8(&mn);
                kt.d = _mm256_loadu_ps(d.as_ptr());
                kt.dmin = _mm256_loadu_ps(dmin.as_ptr());
            }
            let o = op.add(r0 * os);
            let mut t = 0;
            while t < n4 {
                // gemm: pieces of GEMM_P chunks
                if U::GEMM_P == 2 {
                    k_tokens::<T, 2, false>(&tiles, ap.add(t * s), s, o.add(t), os);
                } else {
                    k_tokens::<T, 4, true>(&tiles, ap.add(t * s), s, o.add(t), os);
                }
                t += T;
            }
            while t < nt {
                // gemv: one piece per super-block
                if U::PER16 {
                    k_tokens::<1, 8, true>(&tiles, ap.add(t * s), s, o.add(t), os);
                } else {
                    k_tokens::<1, 8, false>(&tiles, ap.add(t * s), s, o.add(t), os);
                }
                t += 1;
            }
            r0 += 8;
        }
        if r0 < n_rows {
            let f = avx2_tile(U::TYPE).expect("repacked type");
            leftover_rows(f, n, w, ws, r0, n_rows, a, s, nt, out, os);
        }
    }
}

/// `TT` tokens against the tiles of 8 rows, folding pieces of `P` 32-chunks;
/// `PER16`: a scale per 16-group (else per chunk).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
#[inline]
unsafe fn k_tokens<const TT: usize, const P: usize, const PER16: bool>(
    tiles: &[KTile],
    a: *const u8,
    s: usize,
    out: *mut f32,
    os: usize,
) {
    // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, avx512f, avx512vl, avx512vnni, and `a`, `out`,
    // `tiles` cover every offset used here.
    unsafe {
        let zero = _mm256_setzero_si256();
        let mut acc = [_mm256_setzero_ps(); TT];
        let mut accm = [_mm256_setzero_ps(); TT];
        for (b, kt) in tiles.iter().enumerate() {
            let ab: [*const u8; TT] = std::array::from_fn(|j| a.add(j * s + b * 292));
            let da: [__m256; TT] = std::array::from_fn(|j| _mm256_set1_ps(q8k_d(ab[j])));
            for c0 in (0..8).step_by(P) {
                let mut isum = [zero; TT];
                let mut imin = [zero; TT];
                for c in c0..c0 + P {
                    // [half][token]: Σ q·a of the chunk's 16-groups (both, unless PER16)
                    let mut chunk = [[zero; TT]; 2];
                    for g in 0..8 {
                        let wq = kt.q[c][g];
                        let h = if PER16 { g / 4 } else { 0 };
                        for (j, v) in chunk[h].iter_mut().enumerate() {
                            *v = _mm256_dpbusd_epi32(*v, wq, bcast4(ab[j].add(4 + 32 * c + 4 * g)));
                        }
                    }
                    for j in 0..TT {
                        isum[j] = _mm256_add_epi32(isum[j], _mm256_mullo_epi32(chunk[0][j], kt.sc[2 * c]));
                        if PER16 {
                            isum[j] = _mm256_add_epi32(isum[j], _mm256_mullo_epi32(chunk[1][j], kt.sc[2 * c + 1]));
                        }
                        // Σ min·bsum of the chunk's two 16-groups (i16 pairs)
                        imin[j] = _mm256_dpwssd_epi32(imin[j], kt.mn[c], bcast4(ab[j].add(260 + 4 * c)));
                    }
                }
                for j in 0..TT {
                    acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_mul_ps(kt.d, da[j]), acc[j]);
                    accm[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin[j]), _mm256_mul_ps(kt.dmin, da[j]), accm[j]);
                }
            }
        }
        for j in 0..TT {
            store_rows(_mm256_sub_ps(acc[j], accm[j]), out.add(j), os);
        }
    }
}
