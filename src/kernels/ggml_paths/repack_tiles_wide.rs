//! Plain AVX2's prefill over the tiles of the table types (IQ4_NL, MXFP4;
//! `repack_tiles`) through i16 products: the same bits as the tiled
//! kernel, 1.1–1.25× its speed from 24 tokens on (Zen 3, `bench_kernels`).
//!
//! Why i16: without VNNI the tiled kernel's integer dot of signed table
//! weights (−127…127) and signed activations takes the sign trick,
//! `vpsignb` + `vpabsb` + `vpmaddubsw` + `vpmaddwd` (+ `vpaddd`) per 32
//! products, and spends more of its time on unpacking: a nibble mask, a
//! shift and a table lookup per weight vector and token step. Here each
//! 16-row strip is unpacked once per call into its table values as i16
//! (`vpmovsxbw`), and each token's activations are widened to i16 once per
//! call; then 32 products take two `vpmaddwd` and two `vpaddd`, whose pair
//! sums (|w·a| ≤ 127·128, two of them < 2^15) are exact. On a Zen 3 two
//! `vpmaddwd` + two `vpaddd` take ~0.73 of the time of the sign trick's
//! instructions per 32 products (`scripts/pipes.c avx2`: 0.87–0.94 against
//! 1.19–1.27 cycles); the step's loop, with its loads and broadcasts,
//! ~0.68 cycles per `vpmaddwd` with its data in L1.
//!
//! Exactness: every block's integer sum is the exact `Σ w·a` of the
//! tiled kernel and the scalar emulation, and the float work per block and
//! output is theirs (`acc = fma((float)isum, dw·da, acc)`), so the outputs
//! are the same bits (tested against the scalar emulation).
//!
//! Layouts, per call:
//! - the strip: `[nb][16 pairs][R groups][8 rows][2 i16]` (R · 512 bytes a
//!   block), pair `4k + c` holding elements `E[c] + 4k`, `E[c] + 4k + 1` of
//!   each row of the group (`E` = 0, 2, 16, 18: low nibbles then high, as
//!   the tiles hold them), then `[nb][R][8]` the blocks' scales as f32;
//! - the activations: `[nt][n]` i16 and `[nb][nt]` their blocks' scales as f32.

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use std::arch::x86_64::*;
    use std::cell::RefCell;

    use super::super::super::x86_avx2::{f16_at, loadu};
    use super::super::repack_tiles::x86::{e8m0_half_x8, table_of};
    use super::super::repack_tiles::{block_bytes, group_block, kind, rows_offset_b32, GROUP_ROWS, STRIP_ROWS};
    use crate::kernels::aligned::AlignedBytes;
    use crate::quant::QK;

    /// The fewest tokens for which this kernel is as fast as the tiled one
    /// (each chunk of tokens unpacks every strip once): on a Zen 3 8 tokens
    /// ran at 0.83 of its speed, 16 at 0.96–1.01, 24 and more at 1.05–1.25.
    pub(in super::super) const MIN_TOKENS: usize = 16;

    /// Tokens per step: 2 · 3 sums and 2 · 3 accumulators, 2 weight
    /// vectors and a broadcast fill 15 of AVX2's 16 registers (4, 5 and 6
    /// tokens ran slower).
    const TOKENS: usize = 3;
    const _: () = assert!(TOKENS == 3, "the match over a step's token counts");

    /// The first element of pair `c` of a 4-byte step: low nibbles 0, 1 and
    /// 2, 3, then the high nibbles' 16, 17 and 18, 19.
    const PAIR_ELEM: [usize; 4] = [0, 2, 16, 18];

    thread_local! {
        /// The strip unpacked to i16, then its scales.
        static STRIP: RefCell<AlignedBytes> = const { RefCell::new(AlignedBytes::new()) };
        /// The activations as i16, then their scales.
        static ACTS: RefCell<AlignedBytes> = const { RefCell::new(AlignedBytes::new()) };
    }

    /// The AVX2 `TiledFn` for `nt >= MIN_TOKENS` tokens (`K`: a table
    /// `kind`, IQ4_NL or MXFP4); the arguments as `TiledFn`'s, already checked by the caller
    /// (`repack_tiles::x86::tiled_b32`).
    #[allow(clippy::too_many_arguments)]
    pub(in super::super) unsafe fn tiled<const K: u8>(
        n: usize,
        tiles: &[u8],
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: *mut f32,
        os: usize,
    ) {
        let nb = n / QK;
        ACTS.with(|acts| {
            STRIP.with(|strip| {
                let (mut acts, mut strip) = (acts.borrow_mut(), strip.borrow_mut());
                // [chunk][n] i16, then [nb][chunk] f32; [nb][R][16][8][2] i16, then [nb][R][8] f32
                let chunk = chunk_tokens(n, nt);
                let acts = acts.grown_to(chunk * n * 2 + nb * chunk * 4);
                let strip = strip.grown_to(nb * 2 * (512 + 32));
                // SAFETY: the caller's contract (the CPU has AVX2, FMA and
                // F16C; the shapes were checked); the buffers are as large as
                // `run` needs.
                unsafe { run::<K>(n, tiles, n_rows, a, s, nt, out, os, acts, strip) }
            })
        })
    }

    /// [`tiled`] with its scratch buffers: `acts` for the widened
    /// activations and their scales, `strip` for one unpacked strip.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn run<const K: u8>(
        n: usize,
        tiles: &[u8],
        n_rows: usize,
        a: &[u8],
        s: usize,
        nt: usize,
        out: *mut f32,
        os: usize,
        acts: &mut [u8],
        strip: &mut [u8],
    ) {
        // SAFETY: this fn's contract: the CPU has the features enabled here;
        // `tiles` holds `n_rows` rows of `n` columns, `a` `nt` activation
        // rows `s` apart, `out` `nt` rows of `os >= n_rows` outputs, and the
        // scratch buffers the sizes `tiled` gives them (every offset below).
        unsafe {
            let nb = n / QK;
            let chunk = chunk_tokens(n, nt);
            let (act16, da) = (acts.as_mut_ptr() as *mut i16, acts.as_mut_ptr().add(chunk * n * 2) as *mut f32);
            let mut c0 = 0;
            while c0 < nt {
                let ct = (nt - c0).min(chunk);
                for t in 0..ct {
                    for b in 0..nb {
                        let blk = a.as_ptr().add((c0 + t) * s + b * 34);
                        *da.add(b * ct + t) = f16_at(blk);
                        let q = loadu(blk.add(2));
                        let dst = act16.add(t * n + b * QK) as *mut __m256i;
                        _mm256_storeu_si256(dst, _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)));
                        _mm256_storeu_si256(dst.add(1), _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(q)));
                    }
                }
                // one strip (2 groups; the last may hold 1) at a time
                let mut r0 = 0;
                while r0 < n_rows {
                    let two = r0 + STRIP_ROWS <= n_rows;
                    let gp = tiles.as_ptr().add(rows_offset_b32(K, n, r0));
                    let sp = strip.as_mut_ptr();
                    if two {
                        unpack::<K, 2>(nb, gp, sp);
                    } else {
                        unpack::<K, 1>(nb, gp, sp);
                    }
                    let ws = Strip { nb, n, nt: ct, w: sp, act16, da, out: out.add(c0 * os + r0), os };
                    let mut t = 0;
                    while t < ct {
                        let tt = (ct - t).min(TOKENS);
                        match (tt, two) {
                            (1, true) => step::<2, 1>(ws, t),
                            (2, true) => step::<2, 2>(ws, t),
                            (_, true) => step::<2, TOKENS>(ws, t),
                            (1, false) => step::<1, 1>(ws, t),
                            (2, false) => step::<1, 2>(ws, t),
                            (_, false) => step::<1, TOKENS>(ws, t),
                        }
                        t += tt;
                    }
                    r0 += if two { STRIP_ROWS } else { GROUP_ROWS };
                }
                c0 += ct;
            }
        }
    }

    /// Tokens per chunk of the activations widened at a time: about
    /// `CHUNK_BYTES` of i16, whole steps.
    fn chunk_tokens(n: usize, nt: usize) -> usize {
        (CHUNK_BYTES / (2 * n)).max(1).next_multiple_of(TOKENS).min(nt)
    }

    /// Bytes of widened activations per chunk (half of a Zen 3's L2; 128
    /// and 64 KB were slower, the whole product at once no faster).
    const CHUNK_BYTES: usize = 256 * 1024;

    /// Unpacks the `nb` blocks of a strip of `R` groups (tiles at `gp`)
    /// into `dst` in the module's layout.
    #[inline(always)]
    unsafe fn unpack<const K: u8, const R: usize>(nb: usize, gp: *const u8, dst: *mut u8) {
        // SAFETY: AVX2 (the caller's context); `gp` holds the strip's `nb`
        // blocks of `R · group_block(K)` bytes and `dst` `nb · R · 544` bytes
        // (the caller's sizes).
        unsafe {
            let t = table_of(K);
            debug_assert!(K != kind::Q4_0, "a table type");
            let table = _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr() as *const __m128i));
            let mask = _mm256_set1_epi8(0x0F);
            // per 128-bit lane (4 rows of 4 bytes): bytes 0, 1 of each row,
            // then bytes 2, 3
            let pairs =
                _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
            let scales = dst.add(nb * R * 512) as *mut f32;
            for b in 0..nb {
                let bp = gp.add(b * R * group_block(K)); // [4][R][32] quants, [R][8] scales
                let wb = dst.add(b * R * 512) as *mut __m256i; // [16][R] vectors
                for k in 0..4 {
                    for h in 0..R {
                        let v = loadu(bp.add((k * R + h) * 32));
                        let lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, mask));
                        let hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), mask));
                        for (c, x) in [(0, lo), (2, hi)] {
                            // qwords: lane 0's first pairs, lane 1's, lane 0's second, lane 1's
                            let q = _mm256_permute4x64_epi64::<0xD8>(_mm256_shuffle_epi8(x, pairs));
                            let first = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q));
                            let second = _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(q));
                            _mm256_store_si256(wb.add((4 * k + c) * R + h), first);
                            _mm256_store_si256(wb.add((4 * k + c + 1) * R + h), second);
                        }
                    }
                }
                for h in 0..R {
                    let sp = bp.add(R * 128 + h * GROUP_ROWS * block_bytes(K).1);
                    let dw = if K == kind::MXFP4 {
                        e8m0_half_x8(sp)
                    } else {
                        _mm256_cvtph_ps(_mm_loadu_si128(sp as *const __m128i))
                    };
                    _mm256_storeu_ps(scales.add((b * R + h) * GROUP_ROWS), dw);
                }
            }
        }
    }

    /// What a step reads and writes: the unpacked strip `w` (`nb` blocks),
    /// the widened activations `act16` (`[nt][n]`) and their scales `da`
    /// (`[nb][nt]`), the strip's outputs `out` (tokens `os` apart).
    #[derive(Clone, Copy)]
    struct Strip {
        nb: usize,
        n: usize,
        nt: usize,
        w: *const u8,
        act16: *const i16,
        da: *const f32,
        out: *mut f32,
        os: usize,
    }

    /// Tokens `t .. t + TT` against the strip's `R` groups: row `8h + r` is
    /// lane `r` of group `h`.
    #[inline(always)]
    #[allow(clippy::needless_range_loop, reason = "the index walks several arrays in step")]
    unsafe fn step<const R: usize, const TT: usize>(st: Strip, t: usize) {
        // SAFETY: AVX2 (the caller's context); tokens `t .. t + TT` are
        // within the `nt` of `act16`, `da` and `out`, and `w` holds `nb`
        // unpacked blocks of `R` groups and their scales (the caller's
        // sizes).
        unsafe {
            let Strip { nb, n, nt, w, act16, da, out, os } = st;
            let scales = w.add(nb * R * 512) as *const f32;
            let act = act16.add(t * n);
            let mut acc = [[_mm256_setzero_ps(); TT]; R];
            for b in 0..nb {
                let wb = w.add(b * R * 512) as *const __m256i;
                let ab = act.add(b * QK);
                let mut sum = [[_mm256_setzero_si256(); TT]; R];
                for k in 0..4 {
                    for (c, e) in PAIR_ELEM.iter().enumerate() {
                        let p = 4 * k + c;
                        let wv: [__m256i; R] = std::array::from_fn(|h| _mm256_load_si256(wb.add(p * R + h)));
                        for j in 0..TT {
                            let x =
                                _mm256_set1_epi32(std::ptr::read_unaligned(ab.add(j * n + e + 4 * k) as *const i32));
                            for h in 0..R {
                                sum[h][j] = _mm256_add_epi32(sum[h][j], _mm256_madd_epi16(wv[h], x));
                            }
                        }
                    }
                }
                for j in 0..TT {
                    let daj = _mm256_set1_ps(*da.add(b * nt + t + j));
                    for h in 0..R {
                        let dw = _mm256_loadu_ps(scales.add((b * R + h) * GROUP_ROWS));
                        acc[h][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[h][j]), _mm256_mul_ps(dw, daj), acc[h][j]);
                    }
                }
            }
            for (h, acc) in acc.iter().enumerate() {
                for (j, v) in acc.iter().enumerate() {
                    // token t + j's rows 8h..8h + 8, one store
                    _mm256_storeu_ps(out.add((t + j) * os + 8 * h), *v);
                }
            }
        }
    }
}
