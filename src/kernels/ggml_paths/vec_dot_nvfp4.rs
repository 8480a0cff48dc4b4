//! Emulation of the reference's `ggml_vec_dot_nvfp4_q8_0` as its x86 build
//! compiles it (`arch/x86/quants.c`, `__AVX2__`), which its matmul runs for
//! NVFP4 weights at every token count (not repacked, not tiled, not in
//! llamafile's tinyBLAS). A weight block (64) meets 2 Q8_0 activation
//! blocks: per half `h`, 8 i32 lanes, lane `l` the exact `Σ v·a` of
//! elements `4l..4l+3` (`v` the table value, −12..=12; each product formed
//! as its `mul_add_epi8` does, [`signed_product`]), folded as
//! `acc_l = fma(s, lane_l, acc_l)` with `s = ue4m3(d[2h + l/4])·da_h` (the
//! sub-block's scale times the activation block's); the result
//! `hsum_float_8(acc)`.

use super::super::dispatch::TileFn;
use super::super::scalar::act_row;
use super::vec_dot_k::hsum_float_8;
use crate::ggml_type::GgmlType;
use crate::quant::nvfp4::{ue4m3_to_f32, BlockNvfp4, QK_NVFP4};
use crate::quant::q8_0::BlockQ8_0;
use crate::quant::{as_blocks, f16_to_f32, QK};

/// `v·a` as the reference's `mul_add_epi8` forms it: `|v|` times `a` with
/// `v`'s sign applied by `vpsignb`, whose negation wraps (−(−128) stays
/// −128): a negative code against an activation of −128 gives `−128·|v|`,
/// not `128·|v|`. (The quantizer writes −128 only for non-finite inputs.)
fn signed_product(v: i8, a: i8) -> i32 {
    v.unsigned_abs() as i32 * (if v < 0 { a.wrapping_neg() } else { a }) as i32
}

fn nvfp4(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK_NVFP4;
    let wb = &as_blocks::<BlockNvfp4>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<BlockQ8_0>(a, s, t, n / QK);
        let mut acc = [0f32; 8];
        for (i, x) in wb.iter().enumerate() {
            for h in 0..2 {
                let y = &ab[2 * i + h];
                let da = f16_to_f32(y.d);
                let subs = [x.unpack_sub(2 * h), x.unpack_sub(2 * h + 1)];
                for (l, c) in acc.iter_mut().enumerate() {
                    let v = &subs[l / 4];
                    let lane: i32 = (4 * l..4 * l + 4).map(|j| signed_product(v[j % 16], y.qs[j] as i8)).sum();
                    let sc = ue4m3_to_f32(x.d[2 * h + l / 4]) * da;
                    *c = sc.mul_add(lane as f32, *c);
                }
            }
        }
        *o = hsum_float_8(&acc);
    }
}

/// The scalar emulation for `ty`, if it is NVFP4.
pub fn scalar_tile(ty: GgmlType) -> Option<TileFn> {
    (ty == GgmlType::NVFP4).then_some(nvfp4 as TileFn)
}

/// The AVX2 emulation for `ty`, if it is NVFP4.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType) -> Option<TileFn> {
    (ty == GgmlType::NVFP4).then_some(avx2::nvfp4 as TileFn)
}

/// The AVX2 row-block kernel for `ty`, if it is NVFP4 (the decode's: 4
/// weight rows per activation load, the bits of [`avx2_tile`]'s).
#[cfg(target_arch = "x86_64")]
pub fn avx2_rows(ty: GgmlType) -> Option<super::super::dispatch::RowsFn> {
    (ty == GgmlType::NVFP4).then_some(avx2::rows as super::super::dispatch::RowsFn)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{f16_at, hsum_ps, loadu};
    use super::{QK, QK_NVFP4};
    use crate::quant::mxfp4::KVALUES_MXFP4;
    use crate::quant::nvfp4::UE4M3_TO_F32;

    /// Bytes of a Q8_0 block (f16 scale, 32 quants) and of an NVFP4 one.
    const Q8: usize = 34;
    const NV: usize = 36;

    /// `R` weight rows (`ws` bytes apart) against `T` tokens (`s` bytes
    /// apart), output `(r, t)` at `out + r·os_r + t·os_t`: each weight
    /// half-block decoded (table lookup, sign, scales) once for the `T`
    /// tokens and each activation block loaded once for the `R` rows. Every
    /// output's operations are those of `ggml_vec_dot_nvfp4_q8_0` for its
    /// row and token, in its order (the same bits).
    ///
    /// # Safety
    /// AVX2, FMA and F16C (the callers' `#[target_feature]`); `w` covers `R`
    /// rows of `nb` blocks, `a` `T` activation rows of `2·nb` Q8_0 blocks,
    /// `out` the `R × T` outputs.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn group<const R: usize, const T: usize>(
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
        // contract.
        unsafe {
            let values = _mm_loadu_si128(KVALUES_MXFP4.as_ptr() as *const __m128i);
            let m4 = _mm_set1_epi8(0x0f);
            let ones = _mm256_set1_epi16(1);
            let mut acc = [[_mm256_setzero_ps(); T]; R];
            for ib in 0..nb {
                for h in 0..2 {
                    let mut q8 = [_mm256_setzero_si256(); T];
                    let mut da = [0f32; T];
                    for t in 0..T {
                        let yp = a.add(t * s + (2 * ib + h) * Q8);
                        q8[t] = loadu(yp.add(2));
                        da[t] = f16_at(yp);
                    }
                    for (r, acc) in acc.iter_mut().enumerate() {
                        let x = w.add(r * ws + ib * NV);
                        // sub-blocks 2h, 2h+1: 16 code bytes, their low
                        // nibbles then high ones per sub-block, in order
                        let bits = _mm_loadu_si128(x.add(4 + 16 * h) as *const __m128i);
                        let lo = _mm_shuffle_epi8(values, _mm_and_si128(bits, m4));
                        let hi = _mm_shuffle_epi8(values, _mm_and_si128(_mm_srli_epi16::<4>(bits), m4));
                        let v = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
                        let av = _mm256_sign_epi8(v, v);
                        let (w0, w1) = (UE4M3_TO_F32[*x.add(2 * h) as usize], UE4M3_TO_F32[*x.add(2 * h + 1) as usize]);
                        for t in 0..T {
                            // (|v| <= 12: the signed pair products are exact)
                            let p = _mm256_maddubs_epi16(av, _mm256_sign_epi8(q8[t], v));
                            let lanes = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
                            let sc = _mm256_set_m128(_mm_set1_ps(w1 * da[t]), _mm_set1_ps(w0 * da[t]));
                            acc[t] = _mm256_fmadd_ps(sc, lanes, acc[t]);
                        }
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

    /// NVFP4 against Q8_0, as the reference's AVX2 code computes it: one
    /// weight row against 4 tokens at a time.
    ///
    /// # Safety
    /// The CPU has AVX2, FMA and F16C; `w` holds `n / 64` NVFP4 blocks and
    /// `a` the `out.len()` activation rows of `n / 32` Q8_0 blocks, `s`
    /// bytes apart.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn nvfp4(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        let nb = n / QK_NVFP4;
        assert!(w.len() >= nb * NV && (out.is_empty() || a.len() >= (out.len() - 1) * s + n / QK * Q8));
        // SAFETY: the assert above bounds every load; AVX2/FMA/F16C by this
        // fn's contract.
        unsafe {
            let (w, o) = (w.as_ptr(), out.as_mut_ptr());
            let mut t = 0;
            while t + 4 <= out.len() {
                group::<1, 4>(nb, w, 0, a.as_ptr().add(t * s), s, o.add(t), 0, 1);
                t += 4;
            }
            while t < out.len() {
                group::<1, 1>(nb, w, 0, a.as_ptr().add(t * s), s, o.add(t), 0, 1);
                t += 1;
            }
        }
    }

    /// The `RowsFn`: `n_rows` weight rows against `nt` tokens, 4 rows per
    /// activation load (the decode's kernel; the bits of [`nvfp4`]).
    ///
    /// # Safety
    /// The `RowsFn` contract, and the CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn rows(
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
        // output's extent asserted above); the features by this fn's.
        unsafe {
            let nb = n / QK_NVFP4;
            for t in 0..nt {
                let (at, o) = (a.as_ptr().add(t * s), out.as_mut_ptr().add(t));
                let mut r = 0;
                while r + 4 <= n_rows {
                    group::<4, 1>(nb, w.as_ptr().add(r * ws), ws, at, s, o.add(r * os), os, 1);
                    r += 4;
                }
                while r < n_rows {
                    group::<1, 1>(nb, w.as_ptr().add(r * ws), ws, at, s, o.add(r * os), os, 1);
                    r += 1;
                }
            }
        }
    }
}
