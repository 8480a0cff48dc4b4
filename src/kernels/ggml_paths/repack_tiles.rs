//! Q4_0, IQ4_NL and MXFP4 weights interleaved once at model load ("tiles"),
//! as the reference repacks them (`block_q4_0x8`, `block_iq4_nlx8`,
//! `block_mxfp4x8`), and the kernels over them for every token count
//! ([`TiledFn`]), on AVX-512 VNNI and on plain AVX2: one body generic over
//! the integer dot ([`x86::Dot4`]), with a 512-bit strip step on AVX-512.
//!
//! Layout of a matrix of `rows` (a multiple of 8) rows of `cols` elements
//! (`nb = cols / 32` blocks per row), in the order the kernel reads it (one
//! linear stream, which the hardware prefetchers follow; separate streams
//! per 8-row group ran at a third of the memory bandwidth): strips of 16
//! rows (two 8-row groups; the last strip 8 rows when `rows % 16 == 8`),
//! each `[nb]` blocks of
//!
//! - `qs`: `[4][R groups][8 rows][4 bytes]` (`R · 128` bytes): vector `k`
//!   of group `h` holds, in the 32-bit lane of its row `r`, bytes
//!   `4k .. 4k + 4` of that row's block quants; the low nibbles are elements
//!   `4k .. 4k + 4`, the high nibbles elements `16 + 4k .. 16 + 4k + 4` (the
//!   file's nibble order). Vector `k` of both groups is 64 contiguous bytes:
//!   one 512-bit vector of the strip's 16 rows, lane = row;
//! - the scales: `[R groups][8 rows]` of the blocks' f16 `d` (Q4_0, IQ4_NL:
//!   `R · 16` bytes, one `vcvtph2ps` to 512 bits for a 16-row strip) or
//!   E8M0 exponent bytes (MXFP4: `R · 8` bytes, widened and turned into
//!   `2^(e − 128)` in the kernel, `e8m0_half_*`).
//!
//! The tiles are exactly as large as the file's blocks (144 or 136 bytes
//! per 8-row block), rows `r0..` (`r0 % 16 == 0`) start at byte
//! [`rows_offset`], and a row read back from them equals the file's row
//! ([`read_row`]).
//!
//! The kernel puts 8 rows in the 8 lanes: per block, `vpdpbusd` of the
//! nibbles (as u8; IQ4_NL and MXFP4 through their table + 128) with the
//! broadcast of 4 activation bytes gives the 8 rows' integer sums, less
//! `off·Σa` (`off` = 8 or 128, added back from each activation block's
//! sum). Then per block, exactly as `repack.rs`: `acc = fma((float)isum,
//! dw·da, acc)`, lanes = rows. The gemm and gemv of the reference have that
//! same order for these types (`gemv_q4_b32_8x8_q8_0_lut_avx` and its gemm
//! for all three), so one kernel serves every token count. On AVX-512 VNNI
//! a 16-row strip is one 512-bit vector (16 rows in the 16 lanes,
//! `x86::strip_zmm`): one broadcast, `vpdpbusd` and fold per 16 rows where
//! the 256-bit step takes two, 6 tokens per step (4 were slower, 8 no
//! faster); the same integer sums and float operations per output.
//!
//! Plain AVX2 has no `vpdpbusd`: `vpmaddubsw` (u8·i8 pairs to i16, which
//! saturate) and `vpmaddwd` by ones (i16 pairs to i32) give the same exact
//! integers where no i16 sum can exceed 32767. Q4_0's nibbles (≤ 15) keep a
//! block's 8 `vpmaddubsw` results in i16 (≤ 8·2·15·128 = 30720) for one
//! `vpmaddwd`; the tables + 128 (up to 241) would saturate, so there the
//! AVX2 dot takes the signed values (`vpmaddubsw(|a|, sign(w, a))`, a pair
//! ≤ 2·128·127) with no offset, widening each product pair to i32.
//! From 16 tokens the table types leave this kernel for
//! `repack_tiles_wide` (the same bits through i16 products, unpacked once
//! per call).
//!
//! Q4_K has its own layout and kernel (`repack_tiles_k`); the functions
//! here dispatch to it.

use crate::ggml_type::GgmlType;
use crate::quant::{QK, QK_K};

/// The tiled 32-block types, as the kernels' const parameter `K`.
pub(super) mod kind {
    pub const Q4_0: u8 = 0;
    pub const IQ4_NL: u8 = 1;
    pub const MXFP4: u8 = 2;
}

/// Bytes of one file block of the tiled 32-block types (scale, then 16
/// bytes of nibbles) and of its scale (Q4_0, IQ4_NL: f16; MXFP4: E8M0).
pub(super) const fn block_bytes(k: u8) -> (usize, usize) {
    if k == kind::MXFP4 {
        (17, 1)
    } else {
        (18, 2)
    }
}

/// The kernels' kind of `ty`, if it is a tiled 32-block type.
fn kind_of(ty: GgmlType) -> Option<u8> {
    Some(match ty {
        GgmlType::Q4_0 => kind::Q4_0,
        GgmlType::IQ4_NL => kind::IQ4_NL,
        GgmlType::MXFP4 => kind::MXFP4,
        _ => return None,
    })
}

/// Rows per group (the lanes of one vector).
pub const GROUP_ROWS: usize = 8;

/// Rows per strip (two groups).
pub const STRIP_ROWS: usize = 16;

/// Bytes of one block of one 8-row group in the tiles of kind `k`.
pub(super) const fn group_block(k: u8) -> usize {
    GROUP_ROWS * block_bytes(k).0
}

/// Byte offset in the tiles of row `r0` (a multiple of 16) of a matrix of
/// `cols` columns of the 32-block kind `k`.
pub(super) fn rows_offset_b32(k: u8, cols: usize, r0: usize) -> usize {
    r0 / GROUP_ROWS * (cols / QK) * group_block(k)
}

/// Byte offset in the tiles of row `r0` (a multiple of 16) of a matrix of
/// type `ty` (Q4_K: `repack_tiles_k`) and `cols` columns.
pub fn rows_offset(ty: GgmlType, cols: usize, r0: usize) -> usize {
    match kind_of(ty) {
        Some(k) => rows_offset_b32(k, cols, r0),
        None => r0 / GROUP_ROWS * (cols / QK_K) * super::repack_tiles_k::GROUP_BLOCK,
    }
}

/// Bytes of the tiles of a `rows`×`cols` matrix of type `ty`, or `None` if
/// the matrix has no tiled layout (other types, rows not a multiple of 8).
pub fn tiles_bytes(ty: GgmlType, rows: usize, cols: usize) -> Option<usize> {
    let block = match ty {
        GgmlType::Q4_0 | GgmlType::IQ4_NL | GgmlType::MXFP4 => QK,
        GgmlType::Q4_K => QK_K,
        _ => return None,
    };
    let ok = rows.is_multiple_of(GROUP_ROWS) && cols.is_multiple_of(block) && cols > 0;
    ok.then(|| rows_offset(ty, cols, rows))
}

/// Where row `r`'s block `b` lives in tiles of kind `k`: (its 4-byte lane
/// of vector 0 of `qs`; the bytes from one vector to the next, `R · 32`;
/// its scale).
fn block_at(k: u8, rows: usize, cols: usize, r: usize, b: usize) -> (usize, usize, usize) {
    let sb = block_bytes(k).1;
    let s0 = r / STRIP_ROWS * STRIP_ROWS;
    let groups = (rows - s0).min(STRIP_ROWS) / GROUP_ROWS; // R of this strip
    let (h, lane) = (r % STRIP_ROWS / GROUP_ROWS, r % GROUP_ROWS);
    let blk = rows_offset_b32(k, cols, s0) + b * groups * group_block(k);
    (blk + h * 32 + lane * 4, groups * 32, blk + groups * 128 + (h * GROUP_ROWS + lane) * sb)
}

/// Interleaves `src` (the file's `rows` rows, row-major) into `dst`
/// (`tiles_bytes` long). Panics on other sizes.
pub fn build(ty: GgmlType, rows: usize, cols: usize, src: &[u8], dst: &mut [u8]) {
    let need = tiles_bytes(ty, rows, cols).expect("a tiled type and shape");
    let rb = ty.row_size(cols as u64).expect("row size") as usize;
    assert!(src.len() >= rows * rb && dst.len() >= need, "repack_tiles::build: buffer sizes");
    let Some(k) = kind_of(ty) else {
        return super::repack_tiles_k::build(rows, cols, src, &mut dst[..need]);
    };
    let (bb, sb) = block_bytes(k);
    // in the tiles' order: one sequential write, 8 or 16 row streams read
    // (a loop over `block_at` per block took most of a load's time)
    let mut o = 0;
    for s0 in (0..rows).step_by(STRIP_ROWS) {
        let n = (rows - s0).min(STRIP_ROWS); // 8 R rows
        let src_rows: Vec<&[u8]> = (s0..s0 + n).map(|r| &src[r * rb..][..rb]).collect();
        for b in 0..cols / QK {
            for j in 0..4 {
                for row in &src_rows {
                    dst[o..o + 4].copy_from_slice(&row[b * bb + sb + 4 * j..][..4]);
                    o += 4;
                }
            }
            for row in &src_rows {
                dst[o..o + sb].copy_from_slice(&row[b * bb..][..sb]);
                o += sb;
            }
        }
    }
    debug_assert_eq!(o, need);
}

/// Row `r` of a `rows`-row matrix of type `ty` read back from its tiles into
/// `out` (the file's bytes of the row).
pub fn read_row(ty: GgmlType, rows: usize, cols: usize, tiles: &[u8], r: usize, out: &mut [u8]) {
    let Some(k) = kind_of(ty) else {
        return super::repack_tiles_k::read_row(rows, cols, tiles, r, out);
    };
    let (bb, sb) = block_bytes(k);
    for (b, blk) in out[..cols / QK * bb].chunks_exact_mut(bb).enumerate() {
        let (q, vs, d) = block_at(k, rows, cols, r, b);
        blk[..sb].copy_from_slice(&tiles[d..d + sb]);
        for j in 0..4 {
            blk[sb + 4 * j..sb + 4 + 4 * j].copy_from_slice(&tiles[q + vs * j..q + vs * j + 4]);
        }
    }
}

/// The tiled kernel for `ty` on plain AVX2 (+FMA, F16C), if there is one
/// (the same bits as the VNNI one and the scalar emulation).
#[cfg(target_arch = "x86_64")]
pub fn avx2_tiled(ty: GgmlType) -> Option<super::super::dispatch::TiledFn> {
    Some(match ty {
        GgmlType::Q4_0 => x86::tiled_b32_avx2::<{ kind::Q4_0 }>,
        GgmlType::IQ4_NL => x86::tiled_b32_avx2::<{ kind::IQ4_NL }>,
        GgmlType::MXFP4 => x86::tiled_b32_avx2::<{ kind::MXFP4 }>,
        GgmlType::Q4_K => super::repack_tiles_k::x86::tiled_q4_k_avx2,
        _ => return None,
    })
}

/// The tiled kernel for `ty` (AVX-512 VNNI), if there is one.
#[cfg(target_arch = "x86_64")]
pub fn vnni_tiled(ty: GgmlType) -> Option<super::super::dispatch::TiledFn> {
    Some(match ty {
        GgmlType::Q4_0 => x86::tiled_b32_vnni::<{ kind::Q4_0 }>,
        GgmlType::IQ4_NL => x86::tiled_b32_vnni::<{ kind::IQ4_NL }>,
        GgmlType::MXFP4 => x86::tiled_b32_vnni::<{ kind::MXFP4 }>,
        GgmlType::Q4_K => super::repack_tiles_k::x86::tiled_q4_k_vnni,
        _ => return None,
    })
}

/// The kernels' bodies, `#[inline(always)]` and generic over the integer
/// dot ([`x86::Dot4`]: [`x86::Vnni`] or [`x86::Avx2`]); each entry point
/// instantiates one inside a function with its target features.
#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{f16_at, hsum_epi32, loadu};
    use super::{block_bytes, group_block, kind, rows_offset_b32, GROUP_ROWS, STRIP_ROWS};
    use crate::quant::{iq4::KVALUES_IQ4NL, mxfp4::KVALUES_MXFP4, QK};

    /// The integer dot of the tiled kernels: per i32 lane (a row), the sum
    /// of the 4 products of weight bytes `w` and activation bytes `a` (i8)
    /// in that lane, `vpdpbusd`'s. Every sum here is exact (the same
    /// integers as the scalar emulation's).
    pub(in super::super) trait Dot4 {
        /// A running sum of one block (or 32-chunk).
        type Sum: Copy;
        /// Tokens per gemm step of Q4_0: 4 where 32 vector registers hold
        /// the step's 8 sums and 8 accumulators (AVX-512VL); 2 in AVX2's 16
        /// (~1.3× the speed of 4, whose accumulators spill; IQ4_NL and Q4_K
        /// keep 4: their dots take more instructions per weight load).
        const Q4_0_TOKENS: usize;
        /// Whether Q4_0's block runs its 4 steps (of 4 bytes per row) as a
        /// loop: on AVX2 LLVM unrolled them, hoisted every step's weights
        /// and broadcasts, and spilled ~60 vectors per block to the stack.
        const Q4_0_ROLLED: bool;
        /// Whether a 16-row strip runs as 512-bit vectors ([`strip_zmm`],
        /// Q4_K's in `repack_tiles_k`): the entry point then has
        /// AVX-512F/BW/VNNI.
        const STRIP_ZMM: bool;
        /// Whether the table types' products from `MIN_TOKENS` tokens run
        /// through i16 (`repack_tiles_wide`): plain AVX2's.
        const WIDE: bool;
        /// The offset the table weights of [`iq_table`](Self::iq_table)
        /// carry: the kernel subtracts `IQ_OFF·Σa`.
        const IQ_OFF: i32;
        /// A 16-entry table (IQ4_NL's or MXFP4's, in both 128-bit halves) as
        /// [`iq`](Self::iq) takes its weights: the values plus `IQ_OFF`.
        unsafe fn iq_table(t: &[i8; 16]) -> __m256i;
        /// A sum starting at `init` (i32 lanes).
        unsafe fn start(init: __m256i) -> Self::Sum;
        /// `s` + the lane sums of nibbles `w` (u8, ≤ 15) times `a`; at most
        /// 8 of these per sum.
        unsafe fn nib(s: Self::Sum, w: __m256i, a: __m256i) -> Self::Sum;
        /// `s` + the lane sums of table weights `w` (from `iq_table`)
        /// times `a`.
        unsafe fn iq(s: Self::Sum, w: __m256i, a: __m256i) -> Self::Sum;
        /// The sum as i32 lanes.
        unsafe fn end(s: Self::Sum) -> __m256i;
        /// `vpdpwssd`: `acc` + per i32 lane the sum of the two i16 products.
        unsafe fn wss(acc: __m256i, a: __m256i, b: __m256i) -> __m256i;
    }

    /// AVX-512 VNNI: `vpdpbusd`, `vpdpwssd` (256-bit here; the 16-row
    /// strips of Q4_0/IQ4_NL in [`strip_zmm`]).
    pub(in super::super) struct Vnni;
    impl Dot4 for Vnni {
        type Sum = __m256i;
        const Q4_0_TOKENS: usize = 4;
        const Q4_0_ROLLED: bool = false;
        const STRIP_ZMM: bool = true;
        const WIDE: bool = false;
        // the table + 128 as u8 (`vpdpbusd` takes unsigned weights)
        const IQ_OFF: i32 = 128;
        #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
        #[inline]
        unsafe fn iq_table(t: &[i8; 16]) -> __m256i {
            // SAFETY: the caller checked that the CPU has avx2, fma, f16c,
            // avx512f, avx512vl, avx512vnni (the contract of this
            // `#[target_feature]` fn); the load reads the table's 16 bytes.
            unsafe {
                let t = _mm_loadu_si128(t.as_ptr() as *const __m128i);
                _mm256_broadcastsi128_si256(_mm_add_epi8(t, _mm_set1_epi8(-128)))
            }
        }
        #[inline(always)]
        unsafe fn start(init: __m256i) -> __m256i {
            init
        }
        #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
        #[inline]
        unsafe fn nib(s: __m256i, w: __m256i, a: __m256i) -> __m256i {
            _mm256_dpbusd_epi32(s, w, a)
        }
        #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
        #[inline]
        unsafe fn iq(s: __m256i, w: __m256i, a: __m256i) -> __m256i {
            _mm256_dpbusd_epi32(s, w, a)
        }
        #[inline(always)]
        unsafe fn end(s: __m256i) -> __m256i {
            s
        }
        #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
        #[inline]
        unsafe fn wss(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
            _mm256_dpwssd_epi32(acc, a, b)
        }
    }

    /// Plain AVX2: `vpmaddubsw` (u8·i8 pairs summed to saturating i16) and
    /// `vpmaddwd` (i16 pairs to i32), exact where the i16 sums cannot
    /// saturate.
    pub(in super::super) struct Avx2;
    impl Dot4 for Avx2 {
        /// (i16 pair sums of the nibble products, i32 lanes of the rest)
        type Sum = (__m256i, __m256i);
        const Q4_0_TOKENS: usize = 2;
        /// (The rolled loop prefilled ~1.25× as fast as the unrolled one;
        /// IQ4_NL, 4 tokens a step, gained nothing from it.)
        const Q4_0_ROLLED: bool = true;
        const STRIP_ZMM: bool = false;
        const WIDE: bool = true;
        // the signed table values (`iq` takes them as they are)
        const IQ_OFF: i32 = 0;
        #[target_feature(enable = "avx2,fma,f16c")]
        #[inline]
        unsafe fn iq_table(t: &[i8; 16]) -> __m256i {
            // SAFETY: the caller checked that the CPU has avx2, fma, f16c (the
            // contract of this `#[target_feature]` fn); the load reads the
            // table's 16 bytes.
            unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr() as *const __m128i)) }
        }
        #[target_feature(enable = "avx2,fma,f16c")]
        #[inline]
        unsafe fn start(init: __m256i) -> (__m256i, __m256i) {
            (_mm256_setzero_si256(), init)
        }
        /// A pair of products is at most 2·15·128 = 3840 in magnitude (w ≤
        /// 15, |a| ≤ 128), so `vpmaddubsw` does not saturate and 8 of its
        /// results (≤ 30720) add up in i16 exactly: one `vpmaddwd` per sum.
        #[target_feature(enable = "avx2,fma,f16c")]
        #[inline]
        unsafe fn nib(s: (__m256i, __m256i), w: __m256i, a: __m256i) -> (__m256i, __m256i) {
            (_mm256_add_epi16(s.0, _mm256_maddubs_epi16(w, a)), s.1)
        }
        /// `vpmaddubsw(|a|, sign(w, a))`: |a| ≤ 128 is exact as u8 (also
        /// for a = −128), ±w (|w| ≤ 127) as i8, so a pair is at most
        /// 2·128·127 = 32512: exact, but two do not fit one i16, so each
        /// widens to i32 at once. (`|w|, sign(a, w)` would turn a = −128
        /// into −128 where w < 0.)
        #[target_feature(enable = "avx2,fma,f16c")]
        #[inline]
        unsafe fn iq(s: (__m256i, __m256i), w: __m256i, a: __m256i) -> (__m256i, __m256i) {
            let p = _mm256_maddubs_epi16(_mm256_abs_epi8(a), _mm256_sign_epi8(w, a));
            (s.0, _mm256_add_epi32(s.1, _mm256_madd_epi16(p, _mm256_set1_epi16(1))))
        }
        #[target_feature(enable = "avx2,fma,f16c")]
        #[inline]
        unsafe fn end(s: (__m256i, __m256i)) -> __m256i {
            _mm256_add_epi32(s.1, _mm256_madd_epi16(s.0, _mm256_set1_epi16(1)))
        }
        #[target_feature(enable = "avx2,fma,f16c")]
        #[inline]
        unsafe fn wss(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
            _mm256_add_epi32(acc, _mm256_madd_epi16(a, b))
        }
    }

    /// A [`TiledFn`](super::super::super::dispatch::TiledFn) entry point:
    /// the `#[inline(always)]` body `$body` compiled with `$features`.
    macro_rules! tiled_entry {
        ($(#[$m:meta])* $name:ident $(<const $c:ident: $ct:ty>)?, $features:literal, $body:expr) => {
            $(#[$m])*
            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)]
            pub(in super::super) unsafe fn $name$(<const $c: $ct>)?(
                n: usize,
                tiles: &[u8],
                n_rows: usize,
                a: &[u8],
                s: usize,
                nt: usize,
                out: *mut f32,
                os: usize,
            ) {
                // SAFETY: `$body` asks this fn's contract (the `TiledFn` one):
                // the CPU has the set's features ($features, enabled here) and
                // `tiles`, `a` and `out` hold what the shapes say.
                unsafe { ($body)(n, tiles, n_rows, a, s, nt, out, os) }
            }
        };
    }
    pub(in super::super) use tiled_entry;

    tiled_entry!(
        /// `TiledFn` for Q4_0, IQ4_NL and MXFP4 (`K`: `kind`), AVX-512 VNNI.
        tiled_b32_vnni<const K: u8>,
        "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni",
        tiled_b32::<Vnni, K>
    );
    tiled_entry!(
        /// `TiledFn` for Q4_0, IQ4_NL and MXFP4 (`K`: `kind`), AVX2.
        tiled_b32_avx2<const K: u8>,
        "avx2,fma,f16c",
        tiled_b32::<Avx2, K>
    );

    /// How far ahead of a one-token step the tiles (and the one-row F16
    /// decode kernel's row, `tinyblas_f16`) are prefetched: decodes ran a
    /// little slower at 1024 and at 4096 bytes.
    const PF_DIST: usize = 2048;

    /// Asks for the `len` bytes `PF_DIST` past `p` (a one-token step's
    /// block) in L1. (The tiles are one linear stream, which the hardware
    /// prefetchers follow, but not far enough ahead of a decode's step.)
    #[inline(always)]
    pub(in crate::kernels::ggml_paths) unsafe fn prefetch_ahead(p: *const u8, len: usize) {
        // SAFETY: a prefetch (SSE: baseline on x86-64) does not fault, even
        // past the tiles' end, and `wrapping_add` forms no out-of-bounds
        // offset.
        unsafe {
            let mut o = 0;
            while o < len {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(PF_DIST + o) as *const i8);
                o += 64;
            }
        }
    }

    /// Activation blocks per call whose sums and scales live on the stack.
    const STACK_SUMS: usize = 512;

    /// Tokens per step of [`strip_zmm`] (the step match covers 1 to 5
    /// tokens, then this many).
    const ZMM_TOKENS: usize = 6;
    const _: () = assert!(ZMM_TOKENS == 6, "the match over the strip's token counts");

    /// Whether kind `K`'s nibbles index a table (IQ4_NL, MXFP4).
    const fn is_table(k: u8) -> bool {
        k != kind::Q4_0
    }

    /// Kind `K`'s table.
    pub(in super::super) fn table_of(k: u8) -> &'static [i8; 16] {
        if k == kind::MXFP4 {
            &KVALUES_MXFP4
        } else {
            &KVALUES_IQ4NL
        }
    }

    /// 8 E8M0 exponents (bytes at `p`) as `e8m0_to_f32_half` makes them:
    /// `e < 2 ? 0x00200000 << e : (e − 1) << 23` as f32 bits.
    #[inline(always)]
    pub(in super::super) unsafe fn e8m0_half_x8(p: *const u8) -> __m256 {
        // SAFETY: this runs only inside kernels whose `#[target_feature]`
        // has AVX2 (the callers' contract); `p` covers 8 bytes (the same).
        unsafe {
            let e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(p as *const __m128i));
            let big = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
            let small = _mm256_sllv_epi32(_mm256_set1_epi32(0x0020_0000), e);
            let is_small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
            _mm256_castsi256_ps(_mm256_blendv_epi8(big, small, is_small))
        }
    }

    /// [`e8m0_half_x8`] of 16 exponents, in 512 bits.
    #[inline(always)]
    pub(in super::super) unsafe fn e8m0_half_x16(p: *const u8) -> __m512 {
        // SAFETY: this runs only inside kernels whose `#[target_feature]`
        // has AVX-512F (the callers' contract); `p` covers 16 bytes (the
        // same).
        unsafe {
            let e = _mm512_cvtepu8_epi32(_mm_loadu_si128(p as *const __m128i));
            let big = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
            let small = _mm512_sllv_epi32(_mm512_set1_epi32(0x0020_0000), e);
            let is_small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
            _mm512_castsi512_ps(_mm512_mask_blend_epi32(is_small, big, small))
        }
    }

    /// The body of the Q4_0 / IQ4_NL / MXFP4 `TiledFn`s (`K`: `kind`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tiled_b32<D: Dot4, const K: u8>(
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
            let nb = n / QK;
            assert!(
                n_rows.is_multiple_of(GROUP_ROWS) && tiles.len() >= rows_offset_b32(K, n, n_rows),
                "tiled kernel: tiles too short"
            );
            assert!(a.len() >= (nt - 1) * s + nb * 34, "tiled kernel: activations too short");
            if D::WIDE && is_table(K) && nt >= super::super::repack_tiles_wide::x86::MIN_TOKENS {
                // (Q4_0's nibbles stay here: their products sum in i16,
                // one `vpmaddwd` per 8 `vpmaddubsw`; through i16 they ran
                // at 0.75 of this kernel's speed)
                return super::super::repack_tiles_wide::x86::tiled::<K>(n, tiles, n_rows, a, s, nt, out, os);
            }
            let (tp, ap, op) = (tiles.as_ptr(), a.as_ptr(), out);
            // [nb][nt] −off·Σa of each activation block (the weights' offset;
            // none for AVX2's tables), and [nb][nt] its scale as f32 (a step
            // finds its tokens' values at one pointer)
            let off: i32 = if is_table(K) { D::IQ_OFF } else { 8 };
            let (mut stack, mut stack_d) = ([0i32; STACK_SUMS], [0f32; STACK_SUMS]);
            let (mut heap, mut heap_d) = (Vec::new(), Vec::new());
            let (bias, da): (&mut [i32], &mut [f32]) = if nt * nb <= STACK_SUMS {
                (&mut stack[..nt * nb], &mut stack_d[..nt * nb])
            } else {
                heap.resize(nt * nb, 0);
                heap_d.resize(nt * nb, 0.0);
                (&mut heap, &mut heap_d)
            };
            let ones = _mm256_set1_epi8(1);
            let ones16 = _mm256_set1_epi16(1);
            for t in 0..nt {
                for b in 0..nb {
                    let blk = ap.add(t * s + b * 34);
                    da[b * nt + t] = f16_at(blk);
                    if off != 0 {
                        let q = loadu(blk.add(2));
                        let sum = hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(ones, q), ones16));
                        bias[b * nt + t] = -off * sum;
                    }
                }
            }
            let (bp, dp) = (bias.as_ptr(), da.as_ptr());
            // a strip of two groups per step (one activation broadcast serves 16
            // rows); the last strip may hold one
            let mut r0 = 0;
            while r0 < n_rows {
                let two = r0 + STRIP_ROWS <= n_rows;
                let (gp, out) = (tp.add(rows_offset_b32(K, n, r0)), op.add(r0));
                let st = Step { nb, gp, a: ap, s, bias: bp, da: dp, ns: nt, out, os };
                if D::STRIP_ZMM && two {
                    // ZMM_TOKENS tokens per step, then the rest in one step
                    let mut t = 0;
                    while t < nt {
                        let tt = (nt - t).min(ZMM_TOKENS);
                        match tt {
                            1 => strip_zmm::<K, 1>(st.tokens(t)),
                            2 => strip_zmm::<K, 2>(st.tokens(t)),
                            3 => strip_zmm::<K, 3>(st.tokens(t)),
                            4 => strip_zmm::<K, 4>(st.tokens(t)),
                            5 => strip_zmm::<K, 5>(st.tokens(t)),
                            _ => strip_zmm::<K, ZMM_TOKENS>(st.tokens(t)),
                        }
                        t += tt;
                    }
                    r0 += STRIP_ROWS;
                    continue;
                }
                let mut t = 0;
                let tt = if is_table(K) { 4 } else { D::Q4_0_TOKENS };
                while t + tt <= nt {
                    match (tt, two) {
                        (4, true) => step::<D, K, 4, 2>(st.tokens(t)),
                        (4, false) => step::<D, K, 4, 1>(st.tokens(t)),
                        (_, true) => step::<D, K, 2, 2>(st.tokens(t)),
                        (_, false) => step::<D, K, 2, 1>(st.tokens(t)),
                    }
                    t += tt;
                }
                while t < nt {
                    if two {
                        step::<D, K, 1, 2>(st.tokens(t));
                    } else {
                        step::<D, K, 1, 1>(st.tokens(t));
                    }
                    t += 1;
                }
                r0 += if two { STRIP_ROWS } else { GROUP_ROWS };
            }
        }
    }

    /// What a step reads and writes: the strip's tiles `gp` (`nb` blocks),
    /// its first token's activations `a` (tokens `s` bytes apart), that
    /// token's `bias` and `da` (`[nb][ns]`) and outputs `out` (the strip's
    /// rows of that token; tokens `os` apart).
    #[derive(Clone, Copy)]
    struct Step {
        nb: usize,
        gp: *const u8,
        a: *const u8,
        s: usize,
        bias: *const i32,
        da: *const f32,
        ns: usize,
        out: *mut f32,
        os: usize,
    }

    impl Step {
        /// The same strip from `t` tokens on.
        #[inline(always)]
        unsafe fn tokens(self, t: usize) -> Step {
            // SAFETY: token `t` lies within the strip this step was made for
            // (the caller's contract), so each offset stays within its
            // buffer: the activations, biases, scales and outputs.
            unsafe {
                Step {
                    a: self.a.add(t * self.s),
                    bias: self.bias.add(t),
                    da: self.da.add(t),
                    out: self.out.add(t * self.os),
                    ..self
                }
            }
        }
    }

    /// `TT` tokens against a 16-row strip in 512-bit vectors: row
    /// `r` is lane `r` (lanes 0–7 group 0, 8–15 group 1), so one activation
    /// broadcast, one `vpdpbusd` and one fold serve the 16 rows; the same
    /// integer sums and per-output float operations as [`step`]. With one
    /// token, the low and high nibbles sum in two chains.
    #[inline(always)]
    unsafe fn strip_zmm<const K: u8, const TT: usize>(st: Step) {
        // SAFETY: this runs only inside kernels whose `#[target_feature]`
        // covers the instructions used here, on a CPU that has those features
        // (the callers' contract); the offsets and accesses stay within the
        // buffers the caller vouched for (the same contract), which is what the
        // callees' contracts ask.
        unsafe {
            let Step { nb, gp, a, s, bias, da, ns, out, os } = st;
            let mask = _mm512_set1_epi8(0x0F);
            // IQ4_NL, MXFP4: nibble → table value + 128, in each 128-bit lane
            let table = if is_table(K) {
                _mm512_broadcast_i32x4(_mm256_castsi256_si128(Vnni::iq_table(table_of(K))))
            } else {
                _mm512_setzero_si512()
            };
            let mut acc = [_mm512_setzero_ps(); TT];
            for b in 0..nb {
                let bp = gp.add(b * 2 * group_block(K)); // [4][64] quants, [2][8] scales
                if TT == 1 {
                    prefetch_ahead(bp, 2 * group_block(K));
                }
                let mut lo: [__m512i; TT] = std::array::from_fn(|j| _mm512_set1_epi32(*bias.add(b * ns + j)));
                let mut hi = [_mm512_setzero_si512(); TT];
                let aq: [*const u8; TT] = std::array::from_fn(|j| a.add(j * s + b * 34 + 2)); // block b's quants
                for k in 0..4 {
                    let v = _mm512_loadu_si512(bp.add(k * 64) as *const __m512i);
                    let mut wl = _mm512_and_si512(v, mask);
                    let mut wh = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
                    if is_table(K) {
                        wl = _mm512_shuffle_epi8(table, wl);
                        wh = _mm512_shuffle_epi8(table, wh);
                    }
                    for j in 0..TT {
                        let al = _mm512_set1_epi32(std::ptr::read_unaligned(aq[j].add(4 * k) as *const i32));
                        let ah = _mm512_set1_epi32(std::ptr::read_unaligned(aq[j].add(16 + 4 * k) as *const i32));
                        lo[j] = _mm512_dpbusd_epi32(lo[j], wl, al);
                        if TT == 1 {
                            hi[j] = _mm512_dpbusd_epi32(hi[j], wh, ah);
                        } else {
                            lo[j] = _mm512_dpbusd_epi32(lo[j], wh, ah);
                        }
                    }
                }
                let dw = if K == kind::MXFP4 {
                    e8m0_half_x16(bp.add(256))
                } else {
                    _mm512_cvtph_ps(_mm256_loadu_si256(bp.add(256) as *const __m256i))
                };
                for j in 0..TT {
                    let isum = if TT == 1 { _mm512_add_epi32(lo[j], hi[j]) } else { lo[j] };
                    let daj = _mm512_set1_ps(*da.add(b * ns + j));
                    acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, daj), acc[j]);
                }
            }
            for (j, v) in acc.iter().enumerate() {
                // token j's 16 rows, one store
                _mm512_storeu_ps(out.add(j * os), *v);
            }
        }
    }

    /// The dot of the Q4_0 nibbles or the table weights (`K`: `kind`).
    #[inline(always)]
    unsafe fn dot<D: Dot4, const K: u8>(s: D::Sum, w: __m256i, a: __m256i) -> D::Sum {
        // SAFETY: this runs only inside kernels whose `#[target_feature]`
        // covers the instructions used here, on a CPU that has those features
        // (the callers' contract); the callees' contracts ask no more than this
        // fn's.
        unsafe {
            if is_table(K) {
                D::iq(s, w, a)
            } else {
                D::nib(s, w, a)
            }
        }
    }

    /// `TT` tokens against the strip of `R` groups of 8 rows: row
    /// `8h + r` is lane `r` of group `h`. With one token, the low and high
    /// nibbles sum in two chains (shorter latency).
    #[inline(always)]
    unsafe fn step<D: Dot4, const K: u8, const TT: usize, const R: usize>(st: Step) {
        // SAFETY: this runs only inside kernels whose `#[target_feature]`
        // covers the instructions used here, on a CPU that has those features
        // (the callers' contract); the offsets and accesses stay within the
        // buffers the caller vouched for (the same contract), which is what the
        // callees' contracts ask.
        unsafe {
            let Step { nb, gp, a, s, bias, da, ns, out, os } = st;
            let mask = _mm256_set1_epi8(0x0F);
            // IQ4_NL, MXFP4: nibble → table value (+ D::IQ_OFF)
            let table = if is_table(K) { D::iq_table(table_of(K)) } else { _mm256_setzero_si256() };
            let biased = !is_table(K) || D::IQ_OFF != 0;
            let zero = _mm256_setzero_si256();
            let mut acc = [[_mm256_setzero_ps(); TT]; R];
            for b in 0..nb {
                let bp = gp.add(b * R * group_block(K)); // [4][R][32] quants, [R][8] scales
                if TT == 1 {
                    prefetch_ahead(bp, R * group_block(K));
                }
                let mut lo = [[D::start(zero); TT]; R];
                let mut hi = [[D::start(zero); TT]; R];
                if biased {
                    for j in 0..TT {
                        let bj = _mm256_set1_epi32(*bias.add(b * ns + j));
                        for l in lo.iter_mut() {
                            l[j] = D::start(bj);
                        }
                    }
                }
                let mut aq = [a; TT]; // per token: block b's quants
                for (j, p) in aq.iter_mut().enumerate() {
                    *p = a.add(j * s + b * 34 + 2);
                }
                // a trip count the compiler cannot see keeps the loop rolled
                // (only the speed depends on it)
                let steps = if D::Q4_0_ROLLED && !is_table(K) { std::hint::black_box(4) } else { 4 };
                for k in 0..steps {
                    let mut wl = [zero; R];
                    let mut wh = [zero; R];
                    for h in 0..R {
                        let v = loadu(bp.add((k * R + h) * 32));
                        wl[h] = _mm256_and_si256(v, mask);
                        wh[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
                        if is_table(K) {
                            wl[h] = _mm256_shuffle_epi8(table, wl[h]);
                            wh[h] = _mm256_shuffle_epi8(table, wh[h]);
                        }
                    }
                    // one sum takes 8 dots (TT > 1) or 4 (the two chains)
                    for j in 0..TT {
                        let al = _mm256_set1_epi32(std::ptr::read_unaligned(aq[j].add(4 * k) as *const i32));
                        let ah = _mm256_set1_epi32(std::ptr::read_unaligned(aq[j].add(16 + 4 * k) as *const i32));
                        for h in 0..R {
                            lo[h][j] = dot::<D, K>(lo[h][j], wl[h], al);
                            if TT == 1 {
                                hi[h][j] = dot::<D, K>(hi[h][j], wh[h], ah);
                            } else {
                                lo[h][j] = dot::<D, K>(lo[h][j], wh[h], ah);
                            }
                        }
                    }
                }
                for j in 0..TT {
                    let daj = _mm256_set1_ps(*da.add(b * ns + j));
                    for h in 0..R {
                        let sp = bp.add(R * 128 + h * GROUP_ROWS * block_bytes(K).1);
                        let dw = if K == kind::MXFP4 {
                            e8m0_half_x8(sp)
                        } else {
                            _mm256_cvtph_ps(_mm_loadu_si128(sp as *const __m128i))
                        };
                        let isum = if TT == 1 {
                            _mm256_add_epi32(D::end(lo[h][j]), D::end(hi[h][j]))
                        } else {
                            D::end(lo[h][j])
                        };
                        acc[h][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, daj), acc[h][j]);
                    }
                }
            }
            for (h, acc) in acc.iter().enumerate() {
                for (j, v) in acc.iter().enumerate() {
                    // token j's rows 8h..8h + 8, one store
                    _mm256_storeu_ps(out.add(j * os + 8 * h), *v);
                }
            }
        }
    }
}
