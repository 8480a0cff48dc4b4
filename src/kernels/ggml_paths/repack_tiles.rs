//! Q4_0 and IQ4_NL weights interleaved once at model load ("tiles"), as the
//! reference repacks them (`block_q4_0x8`, `block_iq4_nlx8`), and the
//! AVX-512 VNNI kernel over them for every token count ([`TiledFn`]).
//!
//! Layout of a matrix of `rows` (a multiple of 8) rows of `cols` elements
//! (`nb = cols / 32` blocks per row): `rows / 8` groups of 8 rows, each
//! [`group_bytes`] long (a multiple of 64), holding
//!
//! - `qs`: `[nb][4][8 rows][4 bytes]` (`nb · 128` bytes): vector `k` of
//!   block `b` holds, in the 32-bit lane of row `r`, bytes `4k .. 4k + 4` of
//!   that row's block `b` quants; its low nibbles are elements `4k .. 4k + 4`,
//!   its high nibbles elements `16 + 4k .. 16 + 4k + 4` (the file's nibble
//!   order);
//! - `d`: `[nb][8 rows]` the blocks' f16 scales (`nb · 16` bytes);
//!
//! then padding. The tiles are as large as the file's blocks (144 bytes per
//! 8-row block), and a row read back from them equals the file's row
//! ([`read_row`]).
//!
//! The kernel puts 8 rows in the 8 lanes: per block, `vpdpbusd` of the
//! nibbles (as u8; IQ4_NL through its table + 128) with the broadcast of 4
//! activation bytes gives the 8 rows' integer sums, less `off·Σa` (`off` =
//! 8 or 128, added back from each activation block's sum). Then per block,
//! exactly as `repack.rs`: `acc = fma((float)isum, dw·da, acc)`, lanes =
//! rows. The gemm and gemv of the reference have that same order for these
//! types, so one kernel serves every token count.

use crate::ggml_type::GgmlType;
use crate::quant::QK;

/// Bytes of one weight block (f16 scale + 16 bytes of nibbles), both types.
const BLOCK_BYTES: usize = 18;

/// Rows per group (the lanes of one vector).
pub const GROUP_ROWS: usize = 8;

/// Bytes of one 8-row group of `cols`-element rows (64-byte multiple).
pub fn group_bytes(cols: usize) -> usize {
    (cols / QK * (8 * BLOCK_BYTES)).next_multiple_of(64)
}

/// Bytes of the tiles of a `rows`×`cols` matrix of type `ty`, or `None` if
/// the matrix has no tiled layout (other types, rows not a multiple of 8).
pub fn tiles_bytes(ty: GgmlType, rows: usize, cols: usize) -> Option<usize> {
    let ok = matches!(ty, GgmlType::Q4_0 | GgmlType::IQ4_NL) && rows % GROUP_ROWS == 0 && cols % QK == 0 && cols > 0;
    ok.then(|| rows / GROUP_ROWS * group_bytes(cols))
}

/// Interleaves `src` (the file's `rows` rows, row-major) into `dst`
/// (`tiles_bytes` long). Panics on other sizes.
pub fn build(ty: GgmlType, rows: usize, cols: usize, src: &[u8], dst: &mut [u8]) {
    let need = tiles_bytes(ty, rows, cols).expect("a tiled type and shape");
    let nb = cols / QK;
    let rb = nb * BLOCK_BYTES;
    assert!(src.len() >= rows * rb && dst.len() >= need, "repack_tiles::build: buffer sizes");
    let gs = group_bytes(cols);
    for (g, tile) in dst[..need].chunks_exact_mut(gs).enumerate() {
        let (qs, rest) = tile.split_at_mut(nb * 128);
        for r in 0..GROUP_ROWS {
            let row = &src[(g * GROUP_ROWS + r) * rb..][..rb];
            for (b, blk) in row.chunks_exact(BLOCK_BYTES).enumerate() {
                rest[(b * GROUP_ROWS + r) * 2..][..2].copy_from_slice(&blk[..2]);
                for k in 0..4 {
                    qs[b * 128 + k * 32 + r * 4..][..4].copy_from_slice(&blk[2 + 4 * k..][..4]);
                }
            }
        }
        rest[nb * 16..].fill(0);
    }
}

/// Row `r` of a matrix read back from its tiles into `out` (the file's
/// `cols / 32 · 18` bytes).
pub fn read_row(cols: usize, tiles: &[u8], r: usize, out: &mut [u8]) {
    let nb = cols / QK;
    let tile = &tiles[r / GROUP_ROWS * group_bytes(cols)..][..group_bytes(cols)];
    let lane = r % GROUP_ROWS;
    for (b, blk) in out[..nb * BLOCK_BYTES].chunks_exact_mut(BLOCK_BYTES).enumerate() {
        blk[..2].copy_from_slice(&tile[nb * 128 + (b * GROUP_ROWS + lane) * 2..][..2]);
        for k in 0..4 {
            blk[2 + 4 * k..][..4].copy_from_slice(&tile[b * 128 + k * 32 + lane * 4..][..4]);
        }
    }
}

/// The tiled kernel for `ty` (AVX-512 VNNI), if there is one.
#[cfg(target_arch = "x86_64")]
pub fn vnni_tiled(ty: GgmlType) -> Option<super::super::dispatch::TiledFn> {
    Some(match ty {
        GgmlType::Q4_0 => vnni::tiled_b32::<false>,
        GgmlType::IQ4_NL => vnni::tiled_b32::<true>,
        _ => return None,
    })
}

#[cfg(target_arch = "x86_64")]
mod vnni {
    use std::arch::x86_64::*;

    use super::super::super::dispatch::assert_rows_out;
    use super::super::super::x86_avx2::{f16_at, hsum_epi32, loadu};
    use super::{group_bytes, GROUP_ROWS};
    use crate::quant::{iq4::KVALUES_IQ4NL, QK};

    /// Activation blocks per call whose sums live on the stack.
    const STACK_SUMS: usize = 512;

    /// `TiledFn` for Q4_0 (`IQ` false) and IQ4_NL (`IQ` true).
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn tiled_b32<const IQ: bool>(
        n: usize,
        tiles: &[u8],
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: &mut [f32],
        os: usize,
    ) {
        assert_rows_out(n_rows, nt, out.len(), os);
        let nb = n / QK;
        let gs = group_bytes(n);
        let groups = n_rows / GROUP_ROWS;
        assert!(n_rows % GROUP_ROWS == 0 && tiles.len() >= groups * gs, "tiled kernel: tiles too short");
        assert!(a.len() >= (nt - 1) * s + nb * 34, "tiled kernel: activations too short");
        let (tp, ap, op) = (tiles.as_ptr(), a.as_ptr(), out.as_mut_ptr());
        // [nt][nb] −off·Σa of each activation block (the nibbles' offset)
        let off: i32 = if IQ { 128 } else { 8 };
        let mut stack = [0i32; STACK_SUMS];
        let mut heap = Vec::new();
        let bias: &mut [i32] = if nt * nb <= STACK_SUMS {
            &mut stack[..nt * nb]
        } else {
            heap.resize(nt * nb, 0);
            &mut heap
        };
        let ones = _mm256_set1_epi8(1);
        let ones16 = _mm256_set1_epi16(1);
        for t in 0..nt {
            for b in 0..nb {
                let q = loadu(ap.add(t * s + b * 34 + 2));
                let sum = hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(ones, q), ones16));
                bias[t * nb + b] = -off * sum;
            }
        }
        let bp = bias.as_ptr();
        // two groups per step (one activation broadcast serves 16 rows), then one
        let mut g = 0;
        while g < groups {
            let two = g + 2 <= groups;
            let (gp, o) = (tp.add(g * gs), op.add(g * GROUP_ROWS * os));
            let mut t = 0;
            while t + 4 <= nt {
                let (at, bt, ot) = (ap.add(t * s), bp.add(t * nb), o.add(t));
                if two {
                    step::<IQ, 4, 2>(nb, gp, gs, at, s, bt, ot, os);
                } else {
                    step::<IQ, 4, 1>(nb, gp, gs, at, s, bt, ot, os);
                }
                t += 4;
            }
            while t < nt {
                let (at, bt, ot) = (ap.add(t * s), bp.add(t * nb), o.add(t));
                if two {
                    step::<IQ, 1, 2>(nb, gp, gs, at, s, bt, ot, os);
                } else {
                    step::<IQ, 1, 1>(nb, gp, gs, at, s, bt, ot, os);
                }
                t += 1;
            }
            g += if two { 2 } else { 1 };
        }
    }

    /// `TT` tokens against `R` groups of 8 rows (`gs` bytes apart from `gp`):
    /// row `8h + r` is lane `r` of group `h`. `bias` is `[TT][nb]`. With one
    /// token, the low and high nibbles sum in two chains (shorter latency).
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn step<const IQ: bool, const TT: usize, const R: usize>(
        nb: usize,
        gp: *const u8,
        gs: usize,
        a: *const u8,
        s: usize,
        bias: *const i32,
        out: *mut f32,
        os: usize,
    ) {
        let mask = _mm256_set1_epi8(0x0F);
        // IQ4_NL: nibble → table value + 128 (u8)
        let table = if IQ {
            let t = _mm_add_epi8(_mm_loadu_si128(KVALUES_IQ4NL.as_ptr() as *const __m128i), _mm_set1_epi8(-128));
            _mm256_broadcastsi128_si256(t)
        } else {
            _mm256_setzero_si256()
        };
        let zero = _mm256_setzero_si256();
        let mut acc = [[_mm256_setzero_ps(); TT]; R];
        for b in 0..nb {
            let mut lo = [[zero; TT]; R];
            let mut hi = [[zero; TT]; R];
            for j in 0..TT {
                let bj = _mm256_set1_epi32(*bias.add(j * nb + b));
                for l in lo.iter_mut() {
                    l[j] = bj;
                }
            }
            let mut aq = [a; TT]; // per token: block b's quants
            for (j, p) in aq.iter_mut().enumerate() {
                *p = a.add(j * s + b * 34 + 2);
            }
            for k in 0..4 {
                let mut wl = [zero; R];
                let mut wh = [zero; R];
                for h in 0..R {
                    let v = loadu(gp.add(h * gs + b * 128 + k * 32));
                    wl[h] = _mm256_and_si256(v, mask);
                    wh[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
                    if IQ {
                        wl[h] = _mm256_shuffle_epi8(table, wl[h]);
                        wh[h] = _mm256_shuffle_epi8(table, wh[h]);
                    }
                }
                for j in 0..TT {
                    let al = _mm256_set1_epi32(std::ptr::read_unaligned(aq[j].add(4 * k) as *const i32));
                    let ah = _mm256_set1_epi32(std::ptr::read_unaligned(aq[j].add(16 + 4 * k) as *const i32));
                    for h in 0..R {
                        lo[h][j] = _mm256_dpbusd_epi32(lo[h][j], wl[h], al);
                        if TT == 1 {
                            hi[h][j] = _mm256_dpbusd_epi32(hi[h][j], wh[h], ah);
                        } else {
                            lo[h][j] = _mm256_dpbusd_epi32(lo[h][j], wh[h], ah);
                        }
                    }
                }
            }
            for j in 0..TT {
                let daj = _mm256_set1_ps(f16_at(a.add(j * s + b * 34)));
                for h in 0..R {
                    let dw = _mm256_cvtph_ps(_mm_loadu_si128(gp.add(h * gs + nb * 128 + b * 16) as *const __m128i));
                    let isum = if TT == 1 { _mm256_add_epi32(lo[h][j], hi[h][j]) } else { lo[h][j] };
                    acc[h][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, daj), acc[h][j]);
                }
            }
        }
        for (h, acc) in acc.iter().enumerate() {
            for (j, v) in acc.iter().enumerate() {
                let mut l = [0f32; 8];
                _mm256_storeu_ps(l.as_mut_ptr(), *v);
                for (r, x) in l.iter().enumerate() {
                    *out.add((8 * h + r) * os + j) = *x;
                }
            }
        }
    }
}
