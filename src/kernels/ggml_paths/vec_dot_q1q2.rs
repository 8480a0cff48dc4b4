//! Emulation of the reference's `ggml_vec_dot_q1_0_q8_0` and
//! `ggml_vec_dot_q2_0_q8_0` as its x86 build compiles them, which its
//! matmul runs for these types at every token count (they are neither
//! repacked, tiled nor in llamafile's tinyBLAS). The activations are Q8_0:
//! a Q1_0 block (128 weights) meets 4 activation blocks, a Q2_0 block (64)
//! meets 2.
//!
//! - Q1_0 (`arch/x86/quants.c`, `__AVX2__`): per weight block 8 f32 lanes,
//!   lane `l` of activation block `k` the exact sum `Σ ±a` of its elements
//!   `4l..4l+3` (the sign from the weight's bit); `blk_l = d_a0·s_0`, then
//!   `blk_l = fma(d_ak, s_k, blk_l)` for k = 1..3; `acc_l = fma(d_w, blk_l,
//!   acc_l)`; the result `hsum_float_8(acc)`.
//! - Q2_0 (the generic C: no x86 version): per weight block
//!   `sumi += d_a · Σ (q−1)·a` over its 2 activation blocks from 0, then
//!   `sum += d_w · sumi`, each a product then a sum (not fused: with fused
//!   ones the reference's mul_mat goldens differ in the last bit).

#[cfg(target_arch = "x86_64")]
use super::super::dispatch::RowsFn;
use super::super::dispatch::TileFn;
use super::super::scalar::act_row;
use super::vec_dot_k::hsum_float_8;
use crate::ggml_type::GgmlType;
use crate::quant::q1_0::{BlockQ1_0, QK1_0};
use crate::quant::q2_0::{BlockQ2_0, QK2_0};
use crate::quant::q8_0::BlockQ8_0;
use crate::quant::{as_blocks, f16_to_f32, QK};

/// Lane `l`'s sum: `Σ ±a` over elements `4l..4l+3` of activation block `y`,
/// plus where bit `j` of `bits` (the 32 signs, little-endian) is set; the
/// minus wraps as the reference's byte negation (-(-128) stays -128).
fn q1_lanes(bits: u32, y: &BlockQ8_0) -> [i32; 8] {
    std::array::from_fn(|l| {
        (4 * l..4 * l + 4)
            .map(|j| {
                let a = y.qs[j] as i8;
                (if (bits >> j) & 1 == 1 { a } else { a.wrapping_neg() }) as i32
            })
            .sum()
    })
}

fn q1_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK1_0;
    let wb = &as_blocks::<BlockQ1_0>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<BlockQ8_0>(a, s, t, n / QK);
        let mut acc = [0f32; 8];
        for (i, bw) in wb.iter().enumerate() {
            let mut blk = [0f32; 8];
            for k in 0..4 {
                let y = &ab[4 * i + k];
                let bits = u32::from_le_bytes([bw.qs[4 * k], bw.qs[4 * k + 1], bw.qs[4 * k + 2], bw.qs[4 * k + 3]]);
                let d = f16_to_f32(y.d);
                for (b, lane) in blk.iter_mut().zip(q1_lanes(bits, y)) {
                    *b = if k == 0 { d * lane as f32 } else { d.mul_add(lane as f32, *b) };
                }
            }
            let dw = f16_to_f32(bw.d);
            for (x, b) in acc.iter_mut().zip(blk) {
                *x = dw.mul_add(b, *x);
            }
        }
        *o = hsum_float_8(&acc);
    }
}

/// `Σ (q−1)·a` over one activation block `y` and weight bytes `qs` (8 of
/// them, 4 elements each).
fn q2_sum(qs: &[u8], y: &BlockQ8_0) -> i32 {
    (0..QK).map(|j| (((qs[j / 4] >> (2 * (j % 4))) & 3) as i32 - 1) * (y.qs[j] as i8 as i32)).sum()
}

fn q2_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK2_0;
    let wb = &as_blocks::<BlockQ2_0>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<BlockQ8_0>(a, s, t, n / QK);
        let mut sum = 0f32;
        for (i, bw) in wb.iter().enumerate() {
            let mut sumi = 0f32;
            for k in 0..2 {
                let y = &ab[2 * i + k];
                sumi += f16_to_f32(y.d) * q2_sum(&bw.qs[8 * k..8 * k + 8], y) as f32;
            }
            sum += f16_to_f32(bw.d) * sumi;
        }
        *o = sum;
    }
}

/// The scalar emulation for `ty`, if it is Q1_0 or Q2_0.
pub fn scalar_tile(ty: GgmlType) -> Option<TileFn> {
    match ty {
        GgmlType::Q1_0 => Some(q1_0),
        GgmlType::Q2_0 => Some(q2_0),
        _ => None,
    }
}

/// The AVX2 emulation for `ty`, if it is Q1_0 or Q2_0.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType) -> Option<TileFn> {
    match ty {
        GgmlType::Q1_0 => Some(avx2::q1_0),
        GgmlType::Q2_0 => Some(avx2::q2_0),
        _ => None,
    }
}

/// The AVX-512 VNNI kernel for `ty`, if it is Q1_0 (the same bits as the
/// AVX2 emulation; Q2_0 keeps the AVX2 one).
#[cfg(target_arch = "x86_64")]
pub fn vnni_tile(ty: GgmlType) -> Option<TileFn> {
    match ty {
        GgmlType::Q1_0 => Some(avx2::q1_0_vnni),
        _ => None,
    }
}

/// The row-block kernel (the decode's: 4 weight rows per activation load)
/// for `ty` on plain AVX2, if it is Q1_0.
#[cfg(target_arch = "x86_64")]
pub fn avx2_rows(ty: GgmlType) -> Option<RowsFn> {
    (ty == GgmlType::Q1_0).then_some(avx2::q1_0_rows as RowsFn)
}

/// [`avx2_rows`] with AVX-512 VNNI lane sums.
#[cfg(target_arch = "x86_64")]
pub fn vnni_rows(ty: GgmlType) -> Option<RowsFn> {
    (ty == GgmlType::Q1_0).then_some(avx2::q1_0_rows_vnni as RowsFn)
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{f16_at, hsum_ps, loadu};
    use super::{QK1_0, QK2_0};
    use crate::quant::QK;

    /// Bytes of a Q8_0 block (f16 scale, 32 quants).
    const Q8: usize = 34;

    /// The f16 at `p` as f32 in all 8 lanes: a broadcast load and one
    /// conversion (`f16_at` and a broadcast took 4 instructions).
    #[inline(always)]
    unsafe fn f16_bcast(p: *const u8) -> __m256 {
        // SAFETY: reads the 2 bytes at `p` (the caller's contract); F16C by
        // the callers' `#[target_feature]`.
        unsafe { _mm256_cvtph_ps(_mm_set1_epi16(std::ptr::read_unaligned(p as *const i16))) }
    }

    /// `R` weight rows (`ws` bytes apart) against `T` tokens (`s` bytes
    /// apart), output `(r, t)` at `out + r·os_r + t·os_t`: each weight
    /// block's signs expanded once for the `T` tokens, each activation block
    /// loaded once for the `R` rows. The lane sums `Σ ±a` are exact either
    /// way: on AVX2 as the reference (broadcast, shuffle, compare, xor, sub,
    /// `vpmaddubsw`, `vpmaddwd`), with `VNNI` a masked byte negation (the 32
    /// sign bits are the mask as they come) and one `vpdpbusd` against ones.
    /// Every output's float chain is `ggml_vec_dot_q1_0_q8_0`'s for its row
    /// and token (the same bits).
    ///
    /// # Safety
    /// AVX2, FMA, F16C (and with `VNNI`, AVX-512 F, VL, BW and VNNI: the
    /// callers' `#[target_feature]`); `w` covers `R` rows of `nb` blocks, `a`
    /// `T` activation rows of `4·nb` Q8_0 blocks, `out` the `R × T` outputs.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn group<const VNNI: bool, const R: usize, const T: usize>(
        nb: usize,
        w: *const u8,
        ws: usize,
        a: *const u8,
        s: usize,
        out: *mut f32,
        os_r: usize,
        os_t: usize,
    ) {
        // SAFETY: register work and loads within the extents of this fn's
        // contract; the AVX-512 intrinsics only with `VNNI`.
        unsafe {
            let ones_8 = _mm256_set1_epi8(1);
            let ones_16 = _mm256_set1_epi16(1);
            let byte_shuf = _mm256_setr_epi8(
                0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
            );
            let bit_masks = _mm256_setr_epi8(
                1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8,
                16, 32, 64, -128,
            );
            let zero = _mm256_setzero_si256();
            let mut acc = [[_mm256_setzero_ps(); T]; R];
            for ib in 0..nb {
                let mut blk = [[_mm256_setzero_ps(); T]; R];
                for k in 0..4 {
                    let mut qy = [zero; T];
                    let mut da = [_mm256_setzero_ps(); T];
                    for t in 0..T {
                        let yp = a.add(t * s + (4 * ib + k) * Q8);
                        qy[t] = loadu(yp.add(2));
                        da[t] = f16_bcast(yp);
                    }
                    for (r, blk) in blk.iter_mut().enumerate() {
                        let bits = std::ptr::read_unaligned(w.add(r * ws + ib * 18 + 2 + 4 * k) as *const u32);
                        // (AVX2: 0xFF where the bit is clear, the sign to apply)
                        let sm = if VNNI {
                            zero
                        } else {
                            _mm256_cmpeq_epi8(
                                _mm256_and_si256(
                                    _mm256_shuffle_epi8(_mm256_set1_epi32(bits as i32), byte_shuf),
                                    bit_masks,
                                ),
                                zero,
                            )
                        };
                        for t in 0..T {
                            let s32 = if VNNI {
                                // element j negated where its bit is clear
                                // (wrapping: -(-128) = -128, as the reference)
                                let sy = _mm256_mask_sub_epi8(qy[t], !bits, zero, qy[t]);
                                _mm256_dpbusd_epi32(zero, ones_8, sy)
                            } else {
                                let sy = _mm256_sub_epi8(_mm256_xor_si256(qy[t], sm), sm);
                                _mm256_madd_epi16(_mm256_maddubs_epi16(ones_8, sy), ones_16)
                            };
                            let f = _mm256_cvtepi32_ps(s32);
                            blk[t] = if k == 0 { _mm256_mul_ps(da[t], f) } else { _mm256_fmadd_ps(da[t], f, blk[t]) };
                        }
                    }
                }
                for (r, (acc, blk)) in acc.iter_mut().zip(&blk).enumerate() {
                    let dw = f16_bcast(w.add(r * ws + ib * 18));
                    for (acc, blk) in acc.iter_mut().zip(blk) {
                        *acc = _mm256_fmadd_ps(dw, *blk, *acc);
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                for (t, acc) in acc.iter().enumerate() {
                    *out.add(r * os_r + t * os_t) = hsum_ps(*acc);
                }
            }
        }
    }

    /// One weight row against `out.len()` tokens, 4 at a time.
    ///
    /// # Safety
    /// As [`group`]'s for `VNNI`; `w` holds `n / 128` Q1_0 blocks and `a`
    /// the `out.len()` activation rows of `n / 32` Q8_0 blocks, `s` bytes
    /// apart.
    #[inline(always)]
    unsafe fn q1_0_body<const VNNI: bool>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        let nb = n / QK1_0;
        assert!(w.len() >= nb * 18 && (out.is_empty() || a.len() >= (out.len() - 1) * s + n / QK * Q8));
        // SAFETY: the assert above bounds every load; the features by the
        // caller's contract.
        unsafe {
            let (wp, o) = (w.as_ptr(), out.as_mut_ptr());
            let mut t = 0;
            while t + 4 <= out.len() {
                group::<VNNI, 1, 4>(nb, wp, 0, a.as_ptr().add(t * s), s, o.add(t), 0, 1);
                t += 4;
            }
            while t < out.len() {
                group::<VNNI, 1, 1>(nb, wp, 0, a.as_ptr().add(t * s), s, o.add(t), 0, 1);
                t += 1;
            }
        }
    }

    /// `n_rows` weight rows against `nt` tokens, 4 rows per activation load
    /// (the decode's kernel).
    ///
    /// # Safety
    /// The `RowsFn` contract, and the features of [`group`] for `VNNI`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn q1_0_rows_body<const VNNI: bool>(
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
            let nb = n / QK1_0;
            for t in 0..nt {
                let (at, o) = (a.as_ptr().add(t * s), out.as_mut_ptr().add(t));
                let mut r = 0;
                while r + 4 <= n_rows {
                    group::<VNNI, 4, 1>(nb, w.as_ptr().add(r * ws), ws, at, s, o.add(r * os), os, 1);
                    r += 4;
                }
                // the last 1-3 rows in one group too (each activation block
                // loaded, its scale converted, once for them)
                let (wr, or) = (w.as_ptr().add(r * ws), o.add(r * os));
                match n_rows - r {
                    0 => {}
                    1 => group::<VNNI, 1, 1>(nb, wr, ws, at, s, or, os, 1),
                    2 => group::<VNNI, 2, 1>(nb, wr, ws, at, s, or, os, 1),
                    _ => group::<VNNI, 3, 1>(nb, wr, ws, at, s, or, os, 1),
                }
            }
        }
    }

    /// Q1_0 against Q8_0, as the reference's AVX2 code computes it.
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C; `w` holds `n / 128` Q1_0 blocks and
    /// `a` the `out.len()` activation rows of `n / 32` Q8_0 blocks, `s`
    /// bytes apart.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn q1_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract.
        unsafe { q1_0_body::<false>(n, w, a, s, out) }
    }

    /// [`q1_0`] with AVX-512 VNNI lane sums (the same bits).
    ///
    /// # Safety
    /// As [`q1_0`], and the CPU has AVX-512 F, VL, BW and VNNI.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")]
    pub(crate) unsafe fn q1_0_vnni(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract.
        unsafe { q1_0_body::<true>(n, w, a, s, out) }
    }

    /// The `RowsFn` of [`q1_0`].
    ///
    /// # Safety
    /// The `RowsFn` contract, and the CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn q1_0_rows(
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
        // SAFETY: this fn's contract.
        unsafe { q1_0_rows_body::<false>(n, w, ws, n_rows, a, s, nt, out, os) }
    }

    /// The `RowsFn` of [`q1_0_vnni`].
    ///
    /// # Safety
    /// The `RowsFn` contract, and the CPU has AVX2, FMA, F16C and AVX-512
    /// F, VL, BW and VNNI.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")]
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn q1_0_rows_vnni(
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
        // SAFETY: this fn's contract.
        unsafe { q1_0_rows_body::<true>(n, w, ws, n_rows, a, s, nt, out, os) }
    }

    /// Q2_0 against Q8_0: the integer sums by `vpmaddubsw`, the float chain
    /// in the generic code's order and roundings.
    ///
    /// # Safety
    /// As [`q1_0`], with `n / 64` Q2_0 blocks.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn q2_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        let nb = n / QK2_0;
        assert!(w.len() >= nb * 18 && (out.is_empty() || a.len() >= (out.len() - 1) * s + n / QK * Q8));
        // SAFETY: as in q1_0.
        unsafe {
            let m3 = _mm_set1_epi8(3);
            let ones_16 = _mm256_set1_epi16(1);
            for (t, o) in out.iter_mut().enumerate() {
                let ar = a.as_ptr().add(t * s);
                let mut sum = 0f32;
                for ib in 0..nb {
                    let wp = w.as_ptr().add(ib * 18);
                    let mut sumi = 0f32;
                    for k in 0..2 {
                        let yp = ar.add((2 * ib + k) * Q8);
                        // the 8 bytes' 32 fields, element order: field e of
                        // byte b is element 4b + e
                        let q = _mm_loadl_epi64(wp.add(2 + 8 * k) as *const __m128i);
                        let f = [
                            _mm_and_si128(q, m3),
                            _mm_and_si128(_mm_srli_epi16::<2>(q), m3),
                            _mm_and_si128(_mm_srli_epi16::<4>(q), m3),
                            _mm_and_si128(_mm_srli_epi16::<6>(q), m3),
                        ];
                        // interleave to element order: bytes (f0 f1 f2 f3) per b
                        let lo01 = _mm_unpacklo_epi8(f[0], f[1]);
                        let lo23 = _mm_unpacklo_epi8(f[2], f[3]);
                        let e_lo = _mm_unpacklo_epi16(lo01, lo23);
                        let e_hi = _mm_unpackhi_epi16(lo01, lo23);
                        let qv = _mm256_set_m128i(e_hi, e_lo); // q in 0..=3
                        let qy = loadu(yp.add(2));
                        // Σ (q − 1)·a = Σ q·a − Σ a
                        let qa = _mm256_madd_epi16(_mm256_maddubs_epi16(qv, qy), ones_16);
                        let sa = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), qy), ones_16);
                        let d32 = _mm256_sub_epi32(qa, sa);
                        let v = _mm_add_epi32(_mm256_castsi256_si128(d32), _mm256_extracti128_si256::<1>(d32));
                        let v = _mm_add_epi32(v, _mm_unpackhi_epi64(v, v));
                        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b01>(v));
                        let sb = _mm_cvtsi128_si32(v);
                        sumi += f16_at(yp) * sb as f32;
                    }
                    sum += f16_at(wp) * sumi;
                }
                *o = sum;
            }
        }
    }
}
