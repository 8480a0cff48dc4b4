//! Emulation of the reference's `ggml_vec_dot_iq{2_xxs,2_xs,2_s,3_xxs,3_s,
//! 1_s,1_m}_q8_K` as its x86 build compiles them (`arch/x86/quants.c`, the
//! `__AVX2__` code), which its matmul runs for these types below 8
//! activation rows (from 8 its tiled path, `tiled.rs`; they are neither
//! repacked nor in llamafile's tinyBLAS).
//!
//! Each keeps, per super-block, 8 i32 lanes: lane `l` sums, over the
//! 32-weight groups, `scale·mag·±a` of the group's weights `4l..4l+3`, where
//! `mag` is the weight's grid magnitude (an unsigned byte), `±a` the
//! activation with the weight's sign applied by `_mm256_sign_epi8` (so
//! −(−128) stays −128) and `scale` the odd integer scale of its 16
//! (`quant::iq_expand`). Then, with `d = dw·da`, `acc_l = fma(d, lane_l,
//! acc_l)`, and the result `c·hsum_float_8(acc)`: `c` = 1/8 for the IQ2
//! types (their scales are `(0.5 + s)/4 = (2s + 1)/8`), 1/4 for IQ3_XXS, 1
//! for IQ3_S. The IQ1 types add the `±IQ1S_DELTA` shift of their grid:
//!
//! - IQ1_S: an integer `Σ ±scale·(bsum_{2g} + bsum_{2g+1})` over the
//!   32-groups `g`, folded per super-block as `acc1 = fma(d, that, acc1)`;
//!   the result `fma(IQ1S_DELTA, acc1, hsum_float_8(acc))` (GCC fuses both).
//! - IQ1_M: 8 more lanes of `scale·(±a)` (the delta's sign of each 8
//!   applied to the activation as above) into `acc2` as `acc`; the result
//!   `fma(IQ1M_DELTA, hsum_float_8(acc2), hsum_float_8(acc))`.

use super::super::dispatch::TileFn;
use super::super::scalar::act_row;
use super::vec_dot_k::hsum_float_8;
use crate::ggml_type::GgmlType;
use crate::quant::iq1::{BlockIq1M, BlockIq1S, IQ1S_DELTA};
use crate::quant::iq2::{BlockIq2S, BlockIq2Xs, BlockIq2Xxs};
use crate::quant::iq3::{BlockIq3S, BlockIq3Xxs};
use crate::quant::iq_expand::IqWeights;
use crate::quant::q8_k::BlockQ8K;
use crate::quant::{as_blocks, f16_to_f32, Block, QK_K};

/// The activation `a` with sign `neg` applied as `_mm256_sign_epi8` does.
#[inline]
fn signed(a: u8, neg: bool) -> i32 {
    let a = a as i8;
    (if neg { a.wrapping_neg() } else { a }) as i32
}

/// The 8 i32 lanes of one super-block (see the module doc).
fn lanes(w: &IqWeights, a: &BlockQ8K) -> [i32; 8] {
    let mut lanes = [0i32; 8];
    for j in 0..QK_K {
        let p = w.mag[j] as i32 * signed(a.qs[j], w.is_neg(j));
        lanes[(j / 4) % 8] += w.scale[j / 16] as i32 * p;
    }
    lanes
}

/// IQ1_M's delta lanes: `scale·(±a)` with the sign of each 8's delta.
fn delta_lanes(w: &IqWeights, a: &BlockQ8K) -> [i32; 8] {
    let mut lanes = [0i32; 8];
    for j in 0..QK_K {
        let neg = (w.delta_neg >> (j / 8)) & 1 == 1;
        lanes[(j / 4) % 8] += w.scale[j / 16] as i32 * signed(a.qs[j], neg);
    }
    lanes
}

/// A weight block type of this family: its expansion and `dw`.
trait IqBlock: Block {
    /// The constant `c` of the module doc.
    const C: f32;
    fn expand(&self) -> IqWeights;
    fn d(&self) -> f32;
}

macro_rules! iq_block {
    ($t:ty, $c:expr) => {
        impl IqBlock for $t {
            const C: f32 = $c;
            fn expand(&self) -> IqWeights {
                crate::quant::iq_expand::Grid8::expand(self)
            }
            fn d(&self) -> f32 {
                f16_to_f32(self.d)
            }
        }
    };
}
iq_block!(BlockIq2Xxs, 0.125);
iq_block!(BlockIq2Xs, 0.125);
iq_block!(BlockIq2S, 0.125);
iq_block!(BlockIq3Xxs, 0.25);
iq_block!(BlockIq3S, 1.0);

impl IqBlock for BlockIq1S {
    const C: f32 = 1.0;
    fn expand(&self) -> IqWeights {
        BlockIq1S::expand(self)
    }
    fn d(&self) -> f32 {
        f16_to_f32(self.d)
    }
}

impl IqBlock for BlockIq1M {
    const C: f32 = 1.0;
    fn expand(&self) -> IqWeights {
        BlockIq1M::expand(self)
    }
    fn d(&self) -> f32 {
        BlockIq1M::d(self)
    }
}

/// The IQ2 and IQ3 types.
fn tile_iq<B: IqBlock>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK_K;
    let wb = &as_blocks::<B>(w)[..nb];
    let expanded: Vec<IqWeights> = wb.iter().map(B::expand).collect();
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<BlockQ8K>(a, s, t, nb);
        let mut acc = [0f32; 8];
        for ((x, e), y) in wb.iter().zip(&expanded).zip(ab) {
            let d = x.d() * y.d();
            for (c, l) in acc.iter_mut().zip(lanes(e, y)) {
                *c = d.mul_add(l as f32, *c);
            }
        }
        *o = B::C * hsum_float_8(&acc);
    }
}

fn tile_iq1_s(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK_K;
    let wb = &as_blocks::<BlockIq1S>(w)[..nb];
    let expanded: Vec<IqWeights> = wb.iter().map(BlockIq1S::expand).collect();
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<BlockQ8K>(a, s, t, nb);
        let (mut acc, mut acc1) = ([0f32; 8], 0f32);
        for ((x, e), y) in wb.iter().zip(&expanded).zip(ab) {
            let d = y.d() * f16_to_f32(x.d);
            for (c, l) in acc.iter_mut().zip(lanes(e, y)) {
                *c = d.mul_add(l as f32, *c);
            }
            let sumi1: i32 = (0..QK_K / 32)
                .map(|g| {
                    let bs = y.bsum(2 * g) as i32 + y.bsum(2 * g + 1) as i32;
                    bs * if x.delta_neg(g) { -1 } else { 1 } * x.scale(g)
                })
                .sum();
            acc1 = d.mul_add(sumi1 as f32, acc1);
        }
        *o = IQ1S_DELTA.mul_add(acc1, hsum_float_8(&acc));
    }
}

fn tile_iq1_m(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK_K;
    let wb = &as_blocks::<BlockIq1M>(w)[..nb];
    let expanded: Vec<IqWeights> = wb.iter().map(BlockIq1M::expand).collect();
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<BlockQ8K>(a, s, t, nb);
        let (mut acc1, mut acc2) = ([0f32; 8], [0f32; 8]);
        for ((x, e), y) in wb.iter().zip(&expanded).zip(ab) {
            let d = y.d() * x.d();
            for (c, l) in acc1.iter_mut().zip(lanes(e, y)) {
                *c = d.mul_add(l as f32, *c);
            }
            for (c, l) in acc2.iter_mut().zip(delta_lanes(e, y)) {
                *c = d.mul_add(l as f32, *c);
            }
        }
        *o = IQ1S_DELTA.mul_add(hsum_float_8(&acc2), hsum_float_8(&acc1));
    }
}

/// The scalar emulation for `ty`, if it is an IQ1–IQ3 type.
pub fn scalar_tile(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        IQ2_XXS => tile_iq::<BlockIq2Xxs>,
        IQ2_XS => tile_iq::<BlockIq2Xs>,
        IQ2_S => tile_iq::<BlockIq2S>,
        IQ3_XXS => tile_iq::<BlockIq3Xxs>,
        IQ3_S => tile_iq::<BlockIq3S>,
        IQ1_S => tile_iq1_s,
        IQ1_M => tile_iq1_m,
        _ => return None,
    })
}

/// The AVX2 emulation for `ty`, if it is an IQ1–IQ3 type.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType) -> Option<TileFn> {
    use avx2::{tile, Iq1M, Iq1S, Iq2S, Iq2Xs, Iq2Xxs, Iq3S, Iq3Xxs};
    use GgmlType::*;
    Some(match ty {
        IQ2_XXS => tile::<Iq2Xxs>,
        IQ2_XS => tile::<Iq2Xs>,
        IQ2_S => tile::<Iq2S>,
        IQ3_XXS => tile::<Iq3Xxs>,
        IQ3_S => tile::<Iq3S>,
        IQ1_S => tile::<Iq1S>,
        IQ1_M => tile::<Iq1M>,
        _ => return None,
    })
}

/// The reference's AVX2 `ggml_vec_dot_iq*_q8_K`.
///
/// Each super-block is read as 8 chunks of 32 weights ([`avx2::Chunk`]):
/// the grid magnitudes as unsigned bytes, the weights' signs as ±1 bytes
/// (IQ1: the grid's −1/0/1 itself) that `vpsignb` applies to the
/// activations (−(−128) stays −128, as in the reference), and the i16 scale
/// of each 16. `vpmaddubsw` of magnitudes and signed activations (pairs ≤
/// 2·62·128: exact in i16), `vpmaddwd` with the scales, and the chunks'
/// sum put in i32 lane `l` the weights `4l..4l+3` of every chunk: the lanes
/// of the module doc, whatever the grouping of the integer additions. The
/// f32 operations are the reference's, in its order.
///
/// The integer decoding differs from the reference's where that saves
/// instructions (same values): a super-block's sign bytes (their parity
/// bits computed, not looked up in `keven_signs_q2xs`), scales and IQ1_M
/// delta signs are decoded for its 8 chunks at once ([`avx2::Pre`]), each
/// chunk taking its part with one byte shuffle; the grid entries are loaded
/// one by one as in the reference. Up to 4 tokens share each chunk's
/// decoding (as many as keep their chains in registers); one token (a
/// decode) runs the 8 chunks unrolled.
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{f16_at, hsum_epi32, hsum_ps, loadu, q8k_d};
    use crate::quant::iq1::IQ1S_DELTA;
    use crate::quant::iq_grids::{IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID};
    use crate::quant::QK_K;

    /// Bytes of a Q8_K block (f32 scale, 256 quants, 16 i16 bsums).
    const Q8K: usize = 292;

    /// Chunks of 32 weights per super-block.
    const CHUNKS: usize = QK_K / 32;

    /// How a type adds its IQ1 delta (`Iq::KIND`).
    const PLAIN: u8 = 0;
    /// IQ1_S: `Σ ±scale·bsum` per super-block, a scalar chain
    const IQ1S: u8 = 1;
    /// IQ1_M: 8 more lanes of `scale·(±a)`, a second vector chain
    const IQ1M: u8 = 2;

    /// `vpshufb` masks that take word `k` of each 128-bit half, each byte
    /// 8 times: `[2k ×8, 2k+1 ×8]` in both halves (see [`transpose_words`]).
    static SPREAD: [[u8; 32]; 8] = masks(true);
    /// `vpshufb` masks that broadcast i16 `k` of each 128-bit half.
    static PICK: [[u8; 32]; 8] = masks(false);

    const fn masks(spread: bool) -> [[u8; 32]; 8] {
        let mut m = [[0u8; 32]; 8];
        let mut k = 0;
        while k < 8 {
            let mut j = 0;
            while j < 32 {
                let hi = if spread { (j % 16) / 8 } else { j % 2 };
                m[k][j] = (2 * k + hi) as u8;
                j += 1;
            }
            k += 1;
        }
        m
    }

    /// Chunk `c`'s slot in [`Pre`] for IQ2_XXS and IQ2_XS, whose per-chunk
    /// words come out of an in-lane shuffle or pack in this order.
    const SLOT_PACKED: [usize; 8] = [0, 1, 4, 5, 2, 3, 6, 7];

    /// One 32-weight chunk of a super-block, as the dot reads it.
    #[derive(Clone, Copy)]
    pub(crate) struct Chunk {
        /// the weights' grid magnitudes (unsigned bytes)
        q: __m256i,
        /// each weight's sign as a byte of ±1 (IQ1: its grid value −1, 0
        /// or 1), for `vpsignb` on the activations
        s: __m256i,
        /// i16 scales: weights 0..16's in the low 128 bits, 16..32's in the
        /// high (each i16 of `vpmaddubsw`'s pairs meets its 16's scale)
        sc: __m256i,
        /// IQ1_M: the sign of each 8's delta as bytes of ±1 (else unused)
        delta: __m256i,
    }

    impl Chunk {
        /// A chunk without IQ1_M's delta.
        #[inline(always)]
        unsafe fn new(q: __m256i, s: __m256i, sc: __m256i) -> Chunk {
            // SAFETY: inlined into the `#[target_feature]` kernels (AVX).
            Chunk { q, s, sc, delta: unsafe { _mm256_setzero_si256() } }
        }
    }

    /// What a super-block decodes for all its chunks at once (the fields a
    /// type does not use stay zero and cost nothing).
    #[derive(Clone, Copy)]
    pub(crate) struct Pre {
        /// sign bits, word-transposed: slot `k`'s weights 0..16 at word `k`
        /// of the low half, 16..32 at word `k` of the high half ([`spread`])
        signs: __m256i,
        /// i16 scales: slot `k`'s at i16 `k` of each half, for the 16
        /// weights the half covers ([`pick`])
        scales: __m256i,
        /// IQ1_M: the delta signs as byte masks (one per 8 weights),
        /// word-transposed as `signs`
        delta: __m256i,
        /// IQ1_S: the i16 `±scale` of each bsum (bsum `k` is in 32-group
        /// `k / 2`)
        bs: __m256i,
    }

    impl Pre {
        #[inline(always)]
        unsafe fn new() -> Pre {
            // SAFETY: inlined into the `#[target_feature]` kernel (AVX2).
            let z = unsafe { _mm256_setzero_si256() };
            Pre { signs: z, scales: z, delta: z, bs: z }
        }
    }

    /// A weight block type of this family: its layout as the AVX2 kernel
    /// reads it.
    pub(crate) trait Iq {
        /// bytes of a super-block
        const BYTES: usize;
        /// the constant `c` of the module doc (IQ2/IQ3 types)
        const C: f32;
        /// `PLAIN`, `IQ1S` or `IQ1M`
        const KIND: u8;
        /// The super-block's scale `dw`: the f16 at its start (IQ1_M's is
        /// gathered from its scale words).
        #[inline(always)]
        unsafe fn d(p: *const u8) -> f32 {
            // SAFETY: `p` covers a block; F16C in the inlining kernel.
            unsafe { f16_at(p) }
        }
        /// The super-block at `p`, decoded for all chunks.
        unsafe fn pre(p: *const u8) -> Pre;
        /// Chunk `c` (weights `32c..32c+32`) of the super-block at `p`.
        unsafe fn chunk(p: *const u8, pre: &Pre, c: usize) -> Chunk;
    }

    /// The f16 of bits `h` as f32.
    #[inline(always)]
    unsafe fn f16_bits(h: u32) -> f32 {
        // SAFETY: inlined into the `#[target_feature]` kernel (F16C).
        unsafe { _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h as i32))) }
    }

    /// The little-endian u16 at `p`.
    #[inline(always)]
    unsafe fn u16_at(p: *const u8) -> u32 {
        // SAFETY: `p` covers 2 bytes (the caller's contract).
        unsafe { u16::from_le_bytes(std::ptr::read_unaligned(p as *const [u8; 2])) as u32 }
    }

    /// The little-endian u64 at `p`.
    #[inline(always)]
    unsafe fn u64_at(p: *const u8) -> u64 {
        // SAFETY: `p` covers 8 bytes (the caller's contract).
        unsafe { u64::from_le_bytes(std::ptr::read_unaligned(p as *const [u8; 8])) }
    }

    /// Entries `i` of an 8-byte grid, in order (`_mm256_set_epi64x`).
    #[inline(always)]
    unsafe fn grid8(g: &[u64], i: [usize; 4]) -> __m256i {
        // SAFETY: inlined into the `#[target_feature]` kernel (AVX2).
        unsafe { _mm256_set_epi64x(g[i[3]] as i64, g[i[2]] as i64, g[i[1]] as i64, g[i[0]] as i64) }
    }

    /// Entries `i` of a 4-byte grid, in order (`_mm256_set_epi32`).
    #[inline(always)]
    unsafe fn grid4(g: &[u32], i: [usize; 8]) -> __m256i {
        let e = |k: usize| g[i[k]] as i32;
        // SAFETY: inlined into the `#[target_feature]` kernel (AVX2).
        unsafe { _mm256_set_epi32(e(7), e(6), e(5), e(4), e(3), e(2), e(1), e(0)) }
    }

    /// Dword `k` of `d` (a chunk's 4 sign bytes, slot `k`) to word `k` of
    /// the low half (its bytes 0, 1) and of the high half (bytes 2, 3).
    #[inline(always)]
    unsafe fn transpose_words(d: __m256i) -> __m256i {
        // SAFETY: inlined into the `#[target_feature]` kernel (AVX2).
        unsafe {
            // per half: the dwords' low words, then their high words
            let words = _mm256_setr_epi8(
                0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14,
                15,
            );
            _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_shuffle_epi8(d, words))
        }
    }

    /// The ±1 sign bytes of slot `k` of word-transposed sign bits `t` (bit
    /// `j % 8` of its byte `j / 8`: weight `j` negative).
    #[inline(always)]
    unsafe fn spread(t: __m256i, k: usize) -> __m256i {
        // SAFETY: inlined into the `#[target_feature]` kernel (AVX2);
        // `SPREAD[k]` is 32 bytes.
        unsafe {
            let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
            let m = _mm256_and_si256(_mm256_shuffle_epi8(t, loadu(SPREAD[k].as_ptr())), bit);
            _mm256_or_si256(_mm256_cmpeq_epi8(m, bit), _mm256_set1_epi8(1))
        }
    }

    /// The i16 scales of slot `k` of `s` (i16 `k` of each half).
    #[inline(always)]
    unsafe fn pick(s: __m256i, k: usize) -> __m256i {
        // SAFETY: inlined into the `#[target_feature]` kernel (AVX2);
        // `PICK[k]` is 32 bytes.
        unsafe { _mm256_shuffle_epi8(s, loadu(PICK[k].as_ptr())) }
    }

    /// Per dword: the 4 sign bytes of its four 7-bit fields (bits `7l..7l+7`
    /// for weights `8l..8l+8`) with their parity on top (`ksigns_iq2xs`).
    #[inline(always)]
    unsafe fn ksigns_x8(a: __m256i) -> __m256i {
        // SAFETY: inlined into the `#[target_feature]` kernel (AVX2).
        unsafe {
            let f = |x: __m256i, m: i32| _mm256_and_si256(x, _mm256_set1_epi32(m));
            let b = _mm256_or_si256(
                _mm256_or_si256(f(a, 0x7f), f(_mm256_slli_epi32::<1>(a), 0x7f00)),
                _mm256_or_si256(f(_mm256_slli_epi32::<2>(a), 0x7f_0000), f(_mm256_slli_epi32::<3>(a), 0x7f00_0000)),
            );
            // bit 0 of each byte: the parity of its bits (the shifts bring
            // the next byte's bits only above bit 0)
            let p = _mm256_xor_si256(b, _mm256_srli_epi32::<4>(b));
            let p = _mm256_xor_si256(p, _mm256_srli_epi32::<2>(p));
            let p = _mm256_xor_si256(p, _mm256_srli_epi32::<1>(p));
            _mm256_or_si256(b, _mm256_slli_epi32::<7>(f(p, 0x0101_0101)))
        }
    }

    /// Per u16 of `q`: the sign byte of its 7 top bits with their parity on
    /// top (IQ2_XS), in its low byte.
    #[inline(always)]
    unsafe fn ksigns_x16(q: __m256i) -> __m256i {
        // SAFETY: inlined into the `#[target_feature]` kernel (AVX2).
        unsafe {
            let b = _mm256_srli_epi16::<9>(q);
            let p = _mm256_xor_si256(b, _mm256_srli_epi16::<4>(b));
            let p = _mm256_xor_si256(p, _mm256_srli_epi16::<2>(p));
            let p = _mm256_xor_si256(p, _mm256_srli_epi16::<1>(p));
            _mm256_or_si256(b, _mm256_slli_epi16::<7>(_mm256_and_si256(p, _mm256_set1_epi16(1))))
        }
    }

    /// Odd scales `2s + 1` of dword lanes `s` (< 16) as i16: slot `k` =
    /// lane `k`, in both halves.
    #[inline(always)]
    unsafe fn scales_x8(s: __m256i) -> __m256i {
        // SAFETY: inlined into the `#[target_feature]` kernel (AVX2).
        unsafe {
            let s = _mm256_add_epi32(_mm256_add_epi32(s, s), _mm256_set1_epi32(1));
            _mm256_permute4x64_epi64::<0b10_00_10_00>(_mm256_packs_epi32(s, s))
        }
    }

    /// Odd scales `2s + 1` of 8 nibble pairs `b` (IQ2_XS/IQ2_S: byte `i`'s
    /// low nibble is the 16 `2i`'s, its high one `2i + 1`'s): slot `k` =
    /// the 16s `2k` (low half) and `2k + 1` (high half).
    #[inline(always)]
    unsafe fn scales_x16(b: u64) -> __m256i {
        // SAFETY: inlined into the `#[target_feature]` kernel (AVX2).
        unsafe {
            let v = _mm_and_si128(_mm_set_epi64x((b >> 4) as i64, b as i64), _mm_set1_epi8(15));
            _mm256_cvtepu8_epi16(_mm_add_epi8(_mm_add_epi8(v, v), _mm_set1_epi8(1)))
        }
    }

    /// IQ2_XXS (66 bytes: f16 d, per 32 weights 4 index bytes and a u32 of
    /// 4 × 7 sign bits and the 4-bit scale).
    pub(crate) struct Iq2Xxs;
    impl Iq for Iq2Xxs {
        const BYTES: usize = 66;
        const C: f32 = 0.125;
        const KIND: u8 = PLAIN;
        #[inline(always)]
        unsafe fn pre(p: *const u8) -> Pre {
            // SAFETY: `p` covers a block; AVX2 in the inlining kernel.
            unsafe {
                // the 8 sign/scale words (in `SLOT_PACKED` order)
                let (v0, v1) = (_mm256_castsi256_ps(loadu(p.add(2))), _mm256_castsi256_ps(loadu(p.add(34))));
                let a = _mm256_castps_si256(_mm256_shuffle_ps::<0b11_01_11_01>(v0, v1));
                let mut r = Pre::new();
                r.signs = transpose_words(ksigns_x8(a));
                r.scales = scales_x8(_mm256_srli_epi32::<28>(a));
                r
            }
        }
        #[inline(always)]
        unsafe fn chunk(p: *const u8, pre: &Pre, c: usize) -> Chunk {
            // SAFETY: `p` covers a block, `c < 8`; AVX2 in the inlining kernel.
            unsafe {
                let i = |l: usize| *p.add(2 + 8 * c + l) as usize;
                let (q, k) = (grid8(&IQ2XXS_GRID, [i(0), i(1), i(2), i(3)]), SLOT_PACKED[c]);
                Chunk::new(q, spread(pre.signs, k), pick(pre.scales, k))
            }
        }
    }

    /// IQ2_XS (74 bytes: f16 d, per 8 weights a u16 of 9 index bits and 7
    /// sign bits, two 4-bit scales per 32).
    pub(crate) struct Iq2Xs;
    impl Iq for Iq2Xs {
        const BYTES: usize = 74;
        const C: f32 = 0.125;
        const KIND: u8 = PLAIN;
        #[inline(always)]
        unsafe fn pre(p: *const u8) -> Pre {
            // SAFETY: `p` covers a block; AVX2 in the inlining kernel.
            unsafe {
                let s = _mm256_packus_epi16(ksigns_x16(loadu(p.add(2))), ksigns_x16(loadu(p.add(34))));
                let mut r = Pre::new();
                // (the pack leaves the chunks' sign words in `SLOT_PACKED` order)
                r.signs = transpose_words(s);
                r.scales = scales_x16(u64_at(p.add(66)));
                r
            }
        }
        #[inline(always)]
        unsafe fn chunk(p: *const u8, pre: &Pre, c: usize) -> Chunk {
            // SAFETY: `p` covers a block, `c < 8`; AVX2 in the inlining kernel.
            unsafe {
                let e = u64_at(p.add(2 + 8 * c));
                let i = |l: usize| ((e >> (16 * l)) & 511) as usize;
                let q = grid8(&IQ2XS_GRID, [i(0), i(1), i(2), i(3)]);
                Chunk::new(q, spread(pre.signs, SLOT_PACKED[c]), pick(pre.scales, c))
            }
        }
    }

    /// IQ2_S (82 bytes: f16 d, 32 index bytes, 32 sign bytes, 8 bytes of
    /// 2 high index bits each, two 4-bit scales per 32).
    pub(crate) struct Iq2S;
    impl Iq for Iq2S {
        const BYTES: usize = 82;
        const C: f32 = 0.125;
        const KIND: u8 = PLAIN;
        #[inline(always)]
        unsafe fn pre(p: *const u8) -> Pre {
            // SAFETY: `p` covers a block; AVX2 in the inlining kernel.
            unsafe {
                let mut r = Pre::new();
                r.signs = transpose_words(loadu(p.add(34)));
                r.scales = scales_x16(u64_at(p.add(74)));
                r
            }
        }
        #[inline(always)]
        unsafe fn chunk(p: *const u8, pre: &Pre, c: usize) -> Chunk {
            // SAFETY: `p` covers a block, `c < 8`; AVX2 in the inlining kernel.
            unsafe {
                let qh = *p.add(66 + c) as usize;
                let i = |l: usize| *p.add(2 + 4 * c + l) as usize | ((qh << (8 - 2 * l)) & 0x300);
                let q = grid8(&IQ2S_GRID, [i(0), i(1), i(2), i(3)]);
                Chunk::new(q, spread(pre.signs, c), pick(pre.scales, c))
            }
        }
    }

    /// IQ3_XXS (98 bytes: f16 d, 64 index bytes of 4 weights each, per 32
    /// weights a u32 of 4 × 7 sign bits and the 4-bit scale).
    pub(crate) struct Iq3Xxs;
    impl Iq for Iq3Xxs {
        const BYTES: usize = 98;
        const C: f32 = 0.25;
        const KIND: u8 = PLAIN;
        #[inline(always)]
        unsafe fn pre(p: *const u8) -> Pre {
            // SAFETY: `p` covers a block; AVX2 in the inlining kernel.
            unsafe {
                let a = loadu(p.add(66));
                let mut r = Pre::new();
                r.signs = transpose_words(ksigns_x8(a));
                r.scales = scales_x8(_mm256_srli_epi32::<28>(a));
                r
            }
        }
        #[inline(always)]
        unsafe fn chunk(p: *const u8, pre: &Pre, c: usize) -> Chunk {
            // SAFETY: `p` covers a block, `c < 8`; AVX2 in the inlining kernel.
            unsafe {
                let i = |m: usize| *p.add(2 + 8 * c + m) as usize;
                let q = grid4(&IQ3XXS_GRID, [i(0), i(1), i(2), i(3), i(4), i(5), i(6), i(7)]);
                Chunk::new(q, spread(pre.signs, c), pick(pre.scales, c))
            }
        }
    }

    /// IQ3_S (110 bytes: f16 d, 64 index bytes, 8 bytes of ninth index
    /// bits, 32 sign bytes, a 4-bit scale per 32).
    pub(crate) struct Iq3S;
    impl Iq for Iq3S {
        const BYTES: usize = 110;
        const C: f32 = 1.0;
        const KIND: u8 = PLAIN;
        #[inline(always)]
        unsafe fn pre(p: *const u8) -> Pre {
            // SAFETY: `p` covers a block; AVX2 in the inlining kernel.
            unsafe {
                let mut r = Pre::new();
                r.signs = transpose_words(loadu(p.add(74)));
                // the 8 scale nibbles in chunk order
                let b = _mm_cvtsi32_si128(std::ptr::read_unaligned(p.add(106) as *const i32));
                let m4 = _mm_set1_epi8(15);
                let v = _mm_unpacklo_epi8(_mm_and_si128(b, m4), _mm_and_si128(_mm_srli_epi16::<4>(b), m4));
                let v = _mm_cvtepu8_epi16(_mm_add_epi8(_mm_add_epi8(v, v), _mm_set1_epi8(1)));
                r.scales = _mm256_set_m128i(v, v);
                r
            }
        }
        #[inline(always)]
        unsafe fn chunk(p: *const u8, pre: &Pre, c: usize) -> Chunk {
            // SAFETY: `p` covers a block, `c < 8`; AVX2 in the inlining kernel.
            unsafe {
                let qh = *p.add(66 + c) as usize;
                let i = |m: usize| *p.add(2 + 8 * c + m) as usize | ((qh << (8 - m)) & 256);
                let q = grid4(&IQ3S_GRID, [i(0), i(1), i(2), i(3), i(4), i(5), i(6), i(7)]);
                Chunk::new(q, spread(pre.signs, c), pick(pre.scales, c))
            }
        }
    }

    /// IQ1_S (50 bytes: f16 d, 32 index bytes, per 32 weights a u16 of
    /// 4 × 3 high index bits, the 3-bit scale and the delta's sign).
    pub(crate) struct Iq1S;
    impl Iq for Iq1S {
        const BYTES: usize = 50;
        const C: f32 = 1.0;
        const KIND: u8 = IQ1S;
        #[inline(always)]
        unsafe fn pre(p: *const u8) -> Pre {
            // SAFETY: `p` covers a block; AVX2 in the inlining kernel.
            unsafe {
                let qh = _mm_loadu_si128(p.add(34) as *const __m128i);
                let sc = _mm_and_si128(_mm_srli_epi16::<12>(qh), _mm_set1_epi16(7));
                let sc = _mm_add_epi16(_mm_add_epi16(sc, sc), _mm_set1_epi16(1));
                let mut r = Pre::new();
                r.scales = _mm256_set_m128i(sc, sc);
                let neg = _mm_srai_epi16::<15>(qh);
                let sc = _mm_sub_epi16(_mm_xor_si128(sc, neg), neg);
                r.bs = _mm256_set_m128i(_mm_unpackhi_epi16(sc, sc), _mm_unpacklo_epi16(sc, sc));
                r
            }
        }
        #[inline(always)]
        unsafe fn chunk(p: *const u8, pre: &Pre, c: usize) -> Chunk {
            // SAFETY: `p` covers a block, `c < 8`; AVX2 in the inlining kernel.
            unsafe {
                let qh = u16_at(p.add(34 + 2 * c));
                let i = |l: usize| *p.add(2 + 4 * c + l) as usize | ((((qh >> (3 * l)) & 7) as usize) << 8);
                let g = grid8(&IQ1S_GRID, [i(0), i(1), i(2), i(3)]);
                Chunk::new(_mm256_abs_epi8(g), g, pick(pre.scales, c))
            }
        }
    }

    /// IQ1_M (56 bytes: 32 index bytes, per 8 weights a nibble of 3 high
    /// index bits and the delta's sign, 4 u16 of 3-bit scales per 16 whose
    /// top nibbles make the f16 d).
    pub(crate) struct Iq1M;
    impl Iq for Iq1M {
        const BYTES: usize = 56;
        const C: f32 = 1.0;
        const KIND: u8 = IQ1M;
        #[inline(always)]
        unsafe fn d(p: *const u8) -> f32 {
            // SAFETY: `p` covers a block; F16C in the inlining kernel.
            unsafe {
                let sc = |i: usize| u16_at(p.add(48 + 2 * i));
                f16_bits((sc(0) >> 12) | ((sc(1) >> 8) & 0x00f0) | ((sc(2) >> 4) & 0x0f00) | (sc(3) & 0xf000))
            }
        }
        #[inline(always)]
        unsafe fn pre(p: *const u8) -> Pre {
            // SAFETY: `p` covers a block; AVX2 in the inlining kernel.
            unsafe {
                // the delta signs (bit 3 of each nibble of qh) as byte masks,
                // one per 8 weights in order (dword c: chunk c's)
                let qh = _mm_loadu_si128(p.add(32) as *const __m128i);
                let m3 = _mm_cmpeq_epi8(_mm_and_si128(qh, _mm_set1_epi8(8)), _mm_set1_epi8(8));
                let m7 = _mm_cmpgt_epi8(_mm_setzero_si128(), qh);
                let mut r = Pre::new();
                r.delta = transpose_words(_mm256_set_m128i(_mm_unpackhi_epi8(m3, m7), _mm_unpacklo_epi8(m3, m7)));
                // the 3-bit scale of 16 h is bits 3·(h % 4).. of u16 h / 4;
                // slot c: the 16s 2c (low half) and 2c + 1 (high half), each
                // moved to bits 12..15 by a multiply
                let s4 = _mm_loadl_epi64(p.add(48) as *const __m128i);
                let s = _mm_unpacklo_epi16(s4, s4);
                let mul = _mm256_setr_epi16(4096, 64, 4096, 64, 4096, 64, 4096, 64, 512, 8, 512, 8, 512, 8, 512, 8);
                let s = _mm256_mullo_epi16(_mm256_set_m128i(s, s), mul);
                let s = _mm256_and_si256(_mm256_srli_epi16::<12>(s), _mm256_set1_epi16(7));
                r.scales = _mm256_add_epi16(_mm256_add_epi16(s, s), _mm256_set1_epi16(1));
                r
            }
        }
        #[inline(always)]
        unsafe fn chunk(p: *const u8, pre: &Pre, c: usize) -> Chunk {
            // SAFETY: `p` covers a block, `c < 8`; AVX2 in the inlining
            // kernel; `SPREAD[c]` is 32 bytes.
            unsafe {
                let qh = u16_at(p.add(32 + 2 * c));
                let i = |l: usize| *p.add(4 * c + l) as usize | ((((qh >> (4 * l)) & 7) as usize) << 8);
                let g = grid8(&IQ1S_GRID, [i(0), i(1), i(2), i(3)]);
                let delta = _mm256_shuffle_epi8(pre.delta, loadu(SPREAD[c].as_ptr()));
                Chunk {
                    q: _mm256_abs_epi8(g),
                    s: g,
                    sc: pick(pre.scales, c),
                    delta: _mm256_or_si256(delta, _mm256_set1_epi8(1)),
                }
            }
        }
    }

    /// Chunk `k` against the activation quants `y` of its 32 weights: its
    /// lanes, and IQ1_M's delta lanes.
    #[inline(always)]
    unsafe fn dot<T: Iq>(k: &Chunk, y: __m256i) -> (__m256i, __m256i) {
        // SAFETY: inlined into the `#[target_feature]` kernels (AVX2).
        unsafe {
            let p = _mm256_madd_epi16(_mm256_maddubs_epi16(k.q, _mm256_sign_epi8(y, k.s)), k.sc);
            if T::KIND == IQ1M {
                let ones = _mm256_set1_epi8(1);
                (p, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, _mm256_sign_epi8(y, k.delta)), k.sc))
            } else {
                (p, p)
            }
        }
    }

    /// The f32 chains of one token: `acc` (and IQ1_M's `acc2`, IQ1_S's
    /// `acc1`) and their final sum.
    #[derive(Clone, Copy)]
    struct Acc {
        acc: __m256,
        acc2: __m256,
        acc1: f32,
    }

    impl Acc {
        #[inline(always)]
        unsafe fn new() -> Acc {
            // SAFETY: inlined into the `#[target_feature]` kernels (AVX).
            let z = unsafe { _mm256_setzero_ps() };
            Acc { acc: z, acc2: z, acc1: 0.0 }
        }

        /// Folds one super-block's lanes (`sumi`, IQ1_M's `sumi2`) against
        /// the Q8_K block at `yb`, the weights' scale `dw`.
        #[inline(always)]
        unsafe fn add<T: Iq>(&mut self, dw: f32, yb: *const u8, pre: &Pre, sumi: __m256i, sumi2: __m256i) {
            // SAFETY: inlined into the `#[target_feature]` kernels (AVX2,
            // FMA); `yb` covers a Q8_K block.
            unsafe {
                let d = dw * q8k_d(yb);
                self.acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), self.acc);
                if T::KIND == IQ1M {
                    self.acc2 = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi2), self.acc2);
                }
                if T::KIND == IQ1S {
                    let sumi1 = hsum_epi32(_mm256_madd_epi16(loadu(yb.add(4 + QK_K)), pre.bs));
                    self.acc1 = d.mul_add(sumi1 as f32, self.acc1);
                }
            }
        }

        #[inline(always)]
        unsafe fn result<T: Iq>(&self) -> f32 {
            // SAFETY: inlined into the `#[target_feature]` kernels (AVX2, FMA).
            unsafe {
                match T::KIND {
                    IQ1S => IQ1S_DELTA.mul_add(self.acc1, hsum_ps(self.acc)),
                    IQ1M => IQ1S_DELTA.mul_add(hsum_ps(self.acc2), hsum_ps(self.acc)),
                    _ => T::C * hsum_ps(self.acc),
                }
            }
        }
    }

    /// One token (the Q8_K row at `a`) against one weight row of `nb`
    /// super-blocks: [`group`] for one token, its chunks unrolled (which ran
    /// decodes up to 10 % faster; more tokens ran slower so).
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn one<T: Iq>(nb: usize, w: *const u8, a: *const u8) -> f32 {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c; `w` covers
        // `nb` blocks, `a` `nb` Q8_K blocks.
        unsafe {
            let mut acc = Acc::new();
            for ib in 0..nb {
                let (wp, ab) = (w.add(ib * T::BYTES), a.add(ib * Q8K));
                let pre = T::pre(wp);
                let (mut sumi, mut sumi2) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                // (unrolled: each chunk's offsets and masks become constants)
                let mut step = |c: usize| {
                    let (p, p2) = dot::<T>(&T::chunk(wp, &pre, c), loadu(ab.add(4 + 32 * c)));
                    sumi = _mm256_add_epi32(sumi, p);
                    sumi2 = _mm256_add_epi32(sumi2, p2);
                };
                step(0);
                step(1);
                step(2);
                step(3);
                step(4);
                step(5);
                step(6);
                step(7);
                acc.add::<T>(T::d(wp), ab, &pre, sumi, sumi2);
            }
            acc.result::<T>()
        }
    }

    /// `G` tokens, `s` bytes apart from `a`, against one weight row of `nb`
    /// super-blocks: each chunk decoded once for the `G` tokens.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn group<T: Iq, const G: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c; `w` covers
        // `nb` blocks, `a` `G` rows of `nb` Q8_K blocks `s` apart.
        unsafe {
            let mut acc = [Acc::new(); G];
            for ib in 0..nb {
                let wp = w.add(ib * T::BYTES);
                let pre = T::pre(wp);
                let mut sumi = [_mm256_setzero_si256(); G];
                let mut sumi2 = [_mm256_setzero_si256(); G];
                for c in 0..CHUNKS {
                    let k = T::chunk(wp, &pre, c);
                    for t in 0..G {
                        let (p, p2) = dot::<T>(&k, loadu(a.add(t * s + ib * Q8K + 4 + 32 * c)));
                        sumi[t] = _mm256_add_epi32(sumi[t], p);
                        sumi2[t] = _mm256_add_epi32(sumi2[t], p2);
                    }
                }
                let dw = T::d(wp);
                for t in 0..G {
                    acc[t].add::<T>(dw, a.add(t * s + ib * Q8K), &pre, sumi[t], sumi2[t]);
                }
            }
            for t in 0..G {
                out[t] = acc[t].result::<T>();
            }
        }
    }

    /// `out[t]` = the reference's `ggml_vec_dot_<T>_q8_K` of the weight
    /// row `w` (`n / 256` blocks of `T`) and activation row `t` (`n / 256`
    /// Q8_K blocks at `a[t·s..]`): per super-block `acc = fma(dw·da,
    /// lanes, acc)`, then the type's final sum (see the module doc).
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn tile<T: Iq>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        let nb = n / QK_K;
        assert!(w.len() >= nb * T::BYTES && (out.is_empty() || a.len() >= (out.len() - 1) * s + nb * Q8K));
        // SAFETY: the assert above bounds every load (the kernels read
        // blocks `0..nb` of `w` and of each token's row); AVX2/FMA/F16C by
        // this fn's contract.
        unsafe {
            let mut t = 0;
            while t < out.len() {
                let (a, o) = (a.as_ptr().add(t * s), &mut out[t..]);
                t += match o.len() {
                    1 => {
                        o[0] = one::<T>(nb, w.as_ptr(), a);
                        1
                    }
                    2 => {
                        group::<T, 2>(nb, w.as_ptr(), a, s, o);
                        2
                    }
                    3 => {
                        group::<T, 3>(nb, w.as_ptr(), a, s, o);
                        3
                    }
                    _ => {
                        group::<T, 4>(nb, w.as_ptr(), a, s, o);
                        4
                    }
                };
            }
        }
    }
}
