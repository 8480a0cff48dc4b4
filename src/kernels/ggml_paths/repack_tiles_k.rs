//! Q4_K weights interleaved once at model load ("tiles"), as the reference
//! repacks them (`block_q4_Kx8`), and the kernels over them for every token
//! count on AVX-512 VNNI and plain AVX2 (the Q4_K part of `repack_tiles`,
//! generic over its integer dot `Dot4`).
//!
//! Layout of a matrix of `rows` (a multiple of 8) rows of `cols` elements
//! (`nb = cols / 256` super-blocks per row), in the order the kernel reads
//! it (one linear stream: a first layout with each group's quants in its own
//! 1 KiB region ran the decode at half the per-row kernel's speed): strips
//! of 16 rows (`R` = two 8-row groups; the last strip 8 rows when
//! `rows % 16 == 8`), each `[nb]` super-blocks of `R ·` [`GROUP_BLOCK`]
//! bytes:
//!
//! - `d`, `dmin`: `[R][8 rows]` f16 each;
//! - then per pair `j` of 32-chunks (`2j`, `2j + 1`), 4 pairs:
//!   - `qs`: `[8 k][R][8 rows][4 bytes]`: lane `r` of vector `(k, h)`
//!     holds bytes `4k .. 4k + 4` of the quants `32j ..` of row `8h + r`
//!     (the file's order: low nibbles are elements `4k ..` of chunk `2j`,
//!     high nibbles those of chunk `2j + 1`);
//!   - `sc`: `[2 chunks][R][8 rows]` the 6-bit scales, unpacked (u8);
//!   - `mn`: `[R][8 rows][2 chunks]` the 6-bit minimums (u8; widened to
//!     the i16 pairs of `vpdpwssd`).
//!
//! So a 16-row strip's quant vector `(k, ·)`, a chunk's scales, a pair's
//! minimums and `d`/`dmin` are each one 512-bit operand (lane = row) for
//! the AVX-512 step.
//!
//! 148 bytes per row and super-block (the file's 144 with the 12 packed
//! scale bytes unpacked into 16). A row read back ([`read_row`]) equals the
//! file's row (the 6-bit packing is a bijection on its 96 bits).
//!
//! The kernel puts 8 rows in the 8 lanes, `vpdpbusd` of the nibbles with
//! the broadcast of 4 activation bytes giving each 32-chunk's Σq·a per row,
//! `vpmulld` by the chunk's scales, and `vpdpwssd` of the minimums with the
//! activation's 32-chunk sums (from its 16-group `bsums`); on AVX2 the 8
//! `vpmaddubsw` of a chunk sum add up in i16 (≤ 8·2·15·128 = 30720, exact)
//! for one `vpmaddwd`, and `vpdpwssd` is `vpmaddwd` + `vpaddd`. On AVX-512
//! VNNI a 16-row strip runs as 512-bit vectors (16 rows in the 16 lanes,
//! both groups at once, also for the gemm tokens). The float
//! operations per output are those of `repack.rs` in its order: gemm tokens
//! (the first `nt − nt % 4`) per 64-element piece, gemv tokens per
//! super-block, `acc = fma(isum, d·da, acc)`, `accm = fma(imin, dmin·da,
//! accm)`, result `acc − accm`.

use crate::quant::k_helpers::get_scale_min_k4;
use crate::quant::QK_K;

/// Bytes of one Q4_K super-block in the file.
const BLOCK_BYTES: usize = 144;

/// Bytes of one super-block of one 8-row group in the tiles.
pub const GROUP_BLOCK: usize = 8 * 148;

/// Bytes per group of one chunk pair (quants, scales, minimums).
const PAIR: usize = 256 + 16 + 16;

/// Byte offsets of row `r`'s super-block `b`: (d, dmin, and per chunk pair
/// `j`: its quants' lane of vector `k = 0` (vectors `32 · R` apart), the
/// scale of its chunk `2j` (chunk `2j + 1`: `8 · R` bytes on), the minimum
/// of chunk `2j` (chunk `2j + 1`: the next byte)).
fn block_at(rows: usize, cols: usize, r: usize, b: usize) -> (usize, usize, [(usize, usize, usize); 4]) {
    let s0 = r / 16 * 16;
    let groups = (rows - s0).min(16) / 8;
    let (h, lane) = (r % 16 / 8, r % 8);
    let blk = s0 / 8 * (cols / QK_K) * GROUP_BLOCK + b * groups * GROUP_BLOCK;
    let pairs = std::array::from_fn(|j| {
        let pb = blk + groups * 32 + j * groups * PAIR;
        let sc = pb + groups * 256 + h * 8 + lane;
        (pb + h * 32 + lane * 4, sc, pb + groups * 272 + h * 16 + lane * 2)
    });
    (blk + h * 16 + lane * 2, blk + groups * 16 + h * 16 + lane * 2, pairs)
}

/// Interleaves `src` (the file's rows) into `dst`.
pub(super) fn build(rows: usize, cols: usize, src: &[u8], dst: &mut [u8]) {
    let rb = cols / QK_K * BLOCK_BYTES;
    for r in 0..rows {
        for (b, blk) in src[r * rb..(r + 1) * rb].chunks_exact(BLOCK_BYTES).enumerate() {
            let (d, dmin, pairs) = block_at(rows, cols, r, b);
            let groups = (rows - r / 16 * 16).min(16) / 8;
            let vs = 32 * groups; // vectors apart
            dst[d..d + 2].copy_from_slice(&blk[..2]);
            dst[dmin..dmin + 2].copy_from_slice(&blk[2..4]);
            let packed: [u8; 12] = blk[4..16].try_into().expect("12 bytes");
            for c in 0..8 {
                let (s, m) = get_scale_min_k4(c, &packed);
                let (_, sc, mn) = pairs[c / 2];
                dst[sc + 8 * groups * (c % 2)] = s;
                dst[mn + c % 2] = m;
            }
            for (j, &(q, _, _)) in pairs.iter().enumerate() {
                for k in 0..8 {
                    let src = 16 + 32 * j + 4 * k;
                    dst[q + vs * k..q + vs * k + 4].copy_from_slice(&blk[src..src + 4]);
                }
            }
        }
    }
}

/// Row `r` read back from the tiles into `out` (the file's bytes).
pub(super) fn read_row(rows: usize, cols: usize, tiles: &[u8], r: usize, out: &mut [u8]) {
    for (b, blk) in out[..cols / QK_K * BLOCK_BYTES].chunks_exact_mut(BLOCK_BYTES).enumerate() {
        let (d, dmin, pairs) = block_at(rows, cols, r, b);
        let groups = (rows - r / 16 * 16).min(16) / 8;
        let vs = 32 * groups;
        blk[..2].copy_from_slice(&tiles[d..d + 2]);
        blk[2..4].copy_from_slice(&tiles[dmin..dmin + 2]);
        let s: [u8; 8] = std::array::from_fn(|c| tiles[pairs[c / 2].1 + 8 * groups * (c % 2)]);
        let m: [u8; 8] = std::array::from_fn(|c| tiles[pairs[c / 2].2 + c % 2]);
        // the inverse of `get_scale_min_k4`
        for j in 0..4 {
            blk[4 + j] = s[j] | (s[j + 4] >> 4) << 6;
            blk[8 + j] = m[j] | (m[j + 4] >> 4) << 6;
            blk[12 + j] = (s[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4;
        }
        for (j, &(q, _, _)) in pairs.iter().enumerate() {
            for k in 0..8 {
                let dst = 16 + 32 * j + 4 * k;
                blk[dst..dst + 4].copy_from_slice(&tiles[q + vs * k..q + vs * k + 4]);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{loadu, q8k_d};
    use super::super::repack::gemm_rows;
    use super::super::repack_tiles::x86::{tiled_entry, Avx2, Dot4, Vnni};
    use super::{GROUP_BLOCK, PAIR};
    use crate::quant::QK_K;

    /// Bytes of one Q8_K activation block.
    const ABLOCK: usize = 292;

    /// i32 of activation chunk sums per call kept on the stack.
    const STACK_SUMS: usize = 512;

    tiled_entry!(
        /// `TiledFn` for Q4_K, AVX-512 VNNI.
        tiled_q4_k_vnni,
        "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni",
        tiled_q4_k::<Vnni>
    );
    tiled_entry!(
        /// `TiledFn` for Q4_K, AVX2.
        tiled_q4_k_avx2,
        "avx2,fma,f16c",
        tiled_q4_k::<Avx2>
    );

    /// The body of the Q4_K `TiledFn`s.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tiled_q4_k<D: Dot4>(
        n: usize,
        tiles: &[u8],
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: *mut f32,
        os: usize,
    ) {
        // SAFETY: this fn's contract: the callers run with target features that cover these instructions, and
        // `out`, `tiles`, `a` cover every offset used here.
        unsafe {
            assert!(n_rows >= 1 && nt >= 1 && os >= n_rows, "tiled kernel: shapes");
            let nb = n / QK_K;
            assert!(
                n_rows.is_multiple_of(8) && tiles.len() >= n_rows / 8 * nb * GROUP_BLOCK,
                "tiled kernel: tiles too short"
            );
            assert!(a.len() >= (nt - 1) * s + nb * ABLOCK, "tiled kernel: activations too short");
            let (tp, ap, op) = (tiles.as_ptr(), a.as_ptr(), out);
            // [nt][nb][4 pairs]: the i16 pair (Σa of chunk 2j, of chunk 2j + 1)
            // from the block's 16-group bsums
            let mut stack = [0i32; STACK_SUMS];
            let mut heap = Vec::new();
            let sums: &mut [i32] = if nt * nb * 4 <= STACK_SUMS {
                &mut stack[..nt * nb * 4]
            } else {
                heap.resize(nt * nb * 4, 0);
                &mut heap
            };
            for t in 0..nt {
                for b in 0..nb {
                    let bs = ap.add(t * s + b * ABLOCK + 260) as *const i16;
                    for j in 0..4 {
                        let c: [i32; 2] = std::array::from_fn(|h| {
                            let g = 4 * j + 2 * h;
                            std::ptr::read_unaligned(bs.add(g)) as i32 + std::ptr::read_unaligned(bs.add(g + 1)) as i32
                        });
                        sums[(t * nb + b) * 4 + j] = (c[0] & 0xFFFF) | (c[1] << 16);
                    }
                }
            }
            let sp = sums.as_ptr();
            let n4 = gemm_rows(nt);
            let mut r0 = 0;
            while r0 < n_rows {
                let groups = if r0 + 16 <= n_rows { 2 } else { 1 };
                let (gp, o) = (tp.add(r0 / 8 * nb * GROUP_BLOCK), op.add(r0));
                let mut t = 0;
                if D::STRIP_ZMM && groups == 2 {
                    // the strip as 512-bit vectors: gemm tokens 4 at a time per
                    // 64-element piece, gemv tokens one at a time per super-block
                    while t < nt {
                        let (at, st, ot) = (ap.add(t * s), sp.add(t * nb * 4), o.add(t * os));
                        if t < n4 {
                            strip_zmm::<4, 2>(nb, gp, at, s, st, ot, os);
                            t += 4;
                        } else {
                            strip_zmm::<1, 8>(nb, gp, at, s, st, ot, os);
                            t += 1;
                        }
                    }
                    r0 += 16;
                    continue;
                }
                // gemm tokens: 4 at a time, one group at a time, 64-element pieces
                while t < n4 {
                    let (at, st) = (ap.add(t * s), sp.add(t * nb * 4));
                    for h in 0..groups {
                        step::<D, 4, 2, 1>(nb, gp, groups, h, at, s, st, o.add(t * os + 8 * h), os);
                    }
                    t += 4;
                }
                // gemv tokens: one at a time, the strip's groups together, per
                // super-block
                while t < nt {
                    let (at, st) = (ap.add(t * s), sp.add(t * nb * 4));
                    if groups == 2 {
                        step::<D, 1, 8, 2>(nb, gp, 2, 0, at, s, st, o.add(t * os), os);
                    } else {
                        step::<D, 1, 8, 1>(nb, gp, 1, 0, at, s, st, o.add(t * os), os);
                    }
                    t += 1;
                }
                r0 += 8 * groups;
            }
        }
    }

    /// `TT` tokens against a 16-row strip at `gp` in 512-bit vectors, row
    /// `r` in lane `r` (lanes 0–7 group 0, 8–15 group 1), folding pieces of
    /// `P` 32-chunks as [`step`] does, with its integer sums and per-output
    /// float operations. `sums` is `[TT][nb][4]`.
    #[inline(always)]
    unsafe fn strip_zmm<const TT: usize, const P: usize>(
        nb: usize,
        gp: *const u8,
        a: *const u8,
        s: usize,
        sums: *const i32,
        out: *mut f32,
        os: usize,
    ) {
        // SAFETY: this fn's contract: the callers run with target features that cover these instructions, and `gp`,
        // `a`, `sums`, `out` cover every offset used here.
        unsafe {
            let mask = _mm512_set1_epi8(0x0F);
            let zero = _mm512_setzero_si512();
            let mut acc = [_mm512_setzero_ps(); TT];
            let mut accm = [_mm512_setzero_ps(); TT];
            for b in 0..nb {
                let bp = gp.add(b * 2 * GROUP_BLOCK); // [2][16] d, [2][16] dmin, [4] pairs
                let ab: [*const u8; TT] = std::array::from_fn(|j| a.add(j * s + b * ABLOCK));
                let da: [__m512; TT] = std::array::from_fn(|j| _mm512_set1_ps(q8k_d(ab[j])));
                let d = _mm512_cvtph_ps(_mm256_loadu_si256(bp as *const __m256i));
                let dmin = _mm512_cvtph_ps(_mm256_loadu_si256(bp.add(32) as *const __m256i));
                let mut p0 = 0;
                while p0 < 4 {
                    // pairs p0 .. p0 + P/2 of chunks: one piece
                    let mut isum = [zero; TT];
                    let mut imin = [zero; TT];
                    for pj in p0..p0 + P / 2 {
                        let pb = bp.add(64 + pj * 2 * PAIR); // [8][64] quants, [2][16] scales, [16][2] minimums
                                                             // 8 dots per sum (each a 32-chunk's Σq·a)
                        let mut slo = [zero; TT];
                        let mut shi = [zero; TT];
                        for k in 0..8 {
                            let v = _mm512_loadu_si512(pb.add(k * 64) as *const __m512i);
                            let wl = _mm512_and_si512(v, mask);
                            let wh = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
                            for j in 0..TT {
                                let q = ab[j].add(4 + 64 * pj + 4 * k);
                                let al = _mm512_set1_epi32(std::ptr::read_unaligned(q as *const i32));
                                let ah = _mm512_set1_epi32(std::ptr::read_unaligned(q.add(32) as *const i32));
                                slo[j] = _mm512_dpbusd_epi32(slo[j], wl, al);
                                shi[j] = _mm512_dpbusd_epi32(shi[j], wh, ah);
                            }
                        }
                        let sl = _mm512_cvtepu8_epi32(_mm_loadu_si128(pb.add(512) as *const __m128i));
                        let sh = _mm512_cvtepu8_epi32(_mm_loadu_si128(pb.add(528) as *const __m128i));
                        let mn = _mm512_cvtepu8_epi16(_mm256_loadu_si256(pb.add(544) as *const __m256i));
                        for j in 0..TT {
                            let x = _mm512_add_epi32(_mm512_mullo_epi32(slo[j], sl), _mm512_mullo_epi32(shi[j], sh));
                            isum[j] = _mm512_add_epi32(isum[j], x);
                            let asum = _mm512_set1_epi32(*sums.add(j * nb * 4 + b * 4 + pj));
                            imin[j] = _mm512_dpwssd_epi32(imin[j], mn, asum);
                        }
                    }
                    for j in 0..TT {
                        let (dd, dm) = (_mm512_mul_ps(d, da[j]), _mm512_mul_ps(dmin, da[j]));
                        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[j]), dd, acc[j]);
                        accm[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin[j]), dm, accm[j]);
                    }
                    p0 += P / 2;
                }
            }
            for j in 0..TT {
                // token j's 16 rows, one store
                _mm512_storeu_ps(out.add(j * os), _mm512_sub_ps(acc[j], accm[j]));
            }
        }
    }

    /// `TT` tokens against `G` groups (from group `h0`) of the strip of
    /// `groups` groups at `gp`, folding pieces of `P` 32-chunks (2: the
    /// gemm's 64 elements; 8: the gemv's super-block). Row `8g + r` of the
    /// step (token j's output at `out + j·os + 8g + r`) is lane `r` of group `h0 + g`.
    /// `sums` is `[TT][nb][4]`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn step<D: Dot4, const TT: usize, const P: usize, const G: usize>(
        nb: usize,
        gp: *const u8,
        groups: usize,
        h0: usize,
        a: *const u8,
        s: usize,
        sums: *const i32,
        out: *mut f32,
        os: usize,
    ) {
        // SAFETY: this fn's contract: the callers run with target features that cover these instructions, and `gp`,
        // `a`, `sums`, `out` cover every offset used here.
        unsafe {
            let mask = _mm256_set1_epi8(0x0F);
            let zero = _mm256_setzero_si256();
            let mut acc = [[_mm256_setzero_ps(); TT]; G];
            let mut accm = [[_mm256_setzero_ps(); TT]; G];
            for b in 0..nb {
                let bp = gp.add(b * groups * GROUP_BLOCK);
                let (dp, dmp) = (bp, bp.add(groups * 16));
                let mut ab = [a; TT];
                let mut da = [_mm256_setzero_ps(); TT];
                for j in 0..TT {
                    ab[j] = a.add(j * s + b * ABLOCK);
                    da[j] = _mm256_set1_ps(q8k_d(ab[j]));
                }
                let mut d = [_mm256_setzero_ps(); G];
                let mut dmin = [_mm256_setzero_ps(); G];
                for g in 0..G {
                    let h = h0 + g;
                    d[g] = _mm256_cvtph_ps(_mm_loadu_si128(dp.add(h * 16) as *const __m128i));
                    dmin[g] = _mm256_cvtph_ps(_mm_loadu_si128(dmp.add(h * 16) as *const __m128i));
                }
                let mut p0 = 0;
                while p0 < 4 {
                    // pairs p0 .. p0 + P/2 of chunks: one piece
                    let mut isum = [[zero; TT]; G];
                    let mut imin = [[zero; TT]; G];
                    for pj in p0..p0 + P / 2 {
                        let pb = bp.add(groups * 32 + pj * groups * PAIR); // the pair's quants
                        let (scp, mnp) = (pb.add(groups * 256), pb.add(groups * 272));
                        // 8 dots per sum (each a 32-chunk's Σq·a)
                        let mut slo = [[D::start(zero); TT]; G];
                        let mut shi = [[D::start(zero); TT]; G];
                        for k in 0..8 {
                            let mut wl = [zero; G];
                            let mut wh = [zero; G];
                            for g in 0..G {
                                let v = loadu(pb.add((k * groups + h0 + g) * 32));
                                wl[g] = _mm256_and_si256(v, mask);
                                wh[g] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
                            }
                            for j in 0..TT {
                                let q = ab[j].add(4 + 64 * pj + 4 * k);
                                let al = _mm256_set1_epi32(std::ptr::read_unaligned(q as *const i32));
                                let ah = _mm256_set1_epi32(std::ptr::read_unaligned(q.add(32) as *const i32));
                                for g in 0..G {
                                    slo[g][j] = D::nib(slo[g][j], wl[g], al);
                                    shi[g][j] = D::nib(shi[g][j], wh[g], ah);
                                }
                            }
                        }
                        for g in 0..G {
                            let h = h0 + g;
                            let sl = _mm256_cvtepu8_epi32(_mm_loadl_epi64(scp.add(h * 8) as *const __m128i));
                            let sh = _mm256_cvtepu8_epi32(_mm_loadl_epi64(scp.add((groups + h) * 8) as *const __m128i));
                            let mn = _mm256_cvtepu8_epi16(_mm_loadu_si128(mnp.add(h * 16) as *const __m128i));
                            for j in 0..TT {
                                let (lo, hi) = (D::end(slo[g][j]), D::end(shi[g][j]));
                                let x = _mm256_add_epi32(_mm256_mullo_epi32(lo, sl), _mm256_mullo_epi32(hi, sh));
                                isum[g][j] = _mm256_add_epi32(isum[g][j], x);
                                let asum = _mm256_set1_epi32(*sums.add(j * nb * 4 + b * 4 + pj));
                                imin[g][j] = D::wss(imin[g][j], mn, asum);
                            }
                        }
                    }
                    for g in 0..G {
                        for j in 0..TT {
                            let (dd, dm) = (_mm256_mul_ps(d[g], da[j]), _mm256_mul_ps(dmin[g], da[j]));
                            acc[g][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[g][j]), dd, acc[g][j]);
                            accm[g][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin[g][j]), dm, accm[g][j]);
                        }
                    }
                    p0 += P / 2;
                }
            }
            for g in 0..G {
                for j in 0..TT {
                    // token j's rows 8g..8g + 8, one store
                    _mm256_storeu_ps(out.add(j * os + 8 * g), _mm256_sub_ps(acc[g][j], accm[g][j]));
                }
            }
        }
    }
}
