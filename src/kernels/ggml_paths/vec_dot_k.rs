//! Emulation of the reference's `ggml_vec_dot_*_q8_K` kernels as its x86
//! build compiles them (`ggml-cpu/arch/x86/quants.c`, the `__AVX2__` code),
//! which its matmul runs for k-quant and IQ4_XS weights (not repacked) with
//! fewer than 8 activation rows, one output at a time.
//!
//! These kernels keep 8 i32 lanes of partial sums per super-block and fold
//! each lane into its own f32 lane with an FMA; the 8 f32 lanes are summed
//! once at the end (`hsum_float_8`). Which products land in which lane is
//! part of the numerics, so each type's lane assignment is spelled out.

use super::super::dispatch::TileFn;
use super::super::scalar::act_row;
use crate::ggml_type::GgmlType;
use crate::quant::{as_blocks, q6_k, q8_k, QK_K};

/// ggml's `hsum_float_8`: ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7)).
#[inline(always)]
pub(crate) fn hsum_float_8(a: &[f32; 8]) -> f32 {
    ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

/// ggml_vec_dot_q6_K_q8_K's 8 i32 lanes for one super-block. Lane `l` holds,
/// over every 32-element chunk `c`, `scale·Σ u6·q8` of the chunk's bytes
/// `4l..4l+3` (u6 = the unsigned 6-bit quant, scale of group `2c + l/4`),
/// minus `32·(scale[2l]·bsum[2l] + scale[2l+1]·bsum[2l+1])`.
fn q6_k_lanes(w: &q6_k::BlockQ6K, a: &q8_k::BlockQ8K) -> [i32; 8] {
    let k = w.unpack(); // q = u6 − 32
    let mut lanes = [0i32; 8];
    for c in 0..8 {
        for (l, lane) in lanes.iter_mut().enumerate() {
            let sc = k.scales[2 * c + l / 4] as i32;
            let p: i32 = (32 * c + 4 * l..32 * c + 4 * l + 4)
                .map(|i| (k.q[i] as i32 + 32) * a.qs[i] as i8 as i32)
                .sum();
            *lane += sc * p;
        }
    }
    for (l, lane) in lanes.iter_mut().enumerate() {
        let corr = k.scales[2 * l] as i32 * a.bsum(2 * l) as i32
            + k.scales[2 * l + 1] as i32 * a.bsum(2 * l + 1) as i32;
        *lane -= corr << 5;
    }
    lanes
}

fn q6_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    let nb = n / QK_K;
    let wb = &as_blocks::<q6_k::BlockQ6K>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<q8_k::BlockQ8K>(a, s, t, nb);
        let mut acc = [0f32; 8];
        for (bw, ba) in wb.iter().zip(ab) {
            let d = ba.d() * crate::quant::f16_to_f32(bw.d);
            let lanes = q6_k_lanes(bw, ba);
            for (x, &v) in acc.iter_mut().zip(&lanes) {
                *x = d.mul_add(v as f32, *x);
            }
        }
        *o = hsum_float_8(&acc);
    }
}

/// The scalar emulation for weight type `ty`.
pub fn scalar_tile(ty: GgmlType) -> Option<TileFn> {
    Some(match ty {
        GgmlType::Q6_K => q6_k,
        _ => return None,
    })
}

/// The AVX2 emulation for weight type `ty`.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType) -> Option<TileFn> {
    Some(match ty {
        GgmlType::Q6_K => avx2::q6_k,
        _ => return None,
    })
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The reference's instruction sequence (the integer lanes are exact, so
    //! only their assignment matters; the f32 FMAs and the final sum are the
    //! reference's).
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{f16_at, hsum_ps, loadu, q8k_d, WQ6K, WK};
    use crate::quant::QK_K;

    /// `T` tokens against one Q6_K row.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn group_q6_k<const T: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
        let mut acc = [_mm256_setzero_ps(); T];
        let b32 = _mm256_set1_epi8(32);
        for b in 0..nb {
            let wp = w.add(b * WQ6K::BYTES);
            let k = WQ6K::unpack(wp);
            let u6 = k.q.map(|q| _mm256_add_epi8(q, b32));
            let scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(wp.add(192) as *const __m128i));
            let dw = f16_at(wp.add(208));
            for j in 0..T {
                let ab = a.add(j * s + b * 292);
                let q8sclsub = _mm256_slli_epi32(_mm256_madd_epi16(loadu(ab.add(260)), scales16), 5);
                let mut sumi = _mm256_setzero_si256();
                for c in 0..8 {
                    let p16 = _mm256_maddubs_epi16(u6[c], loadu(ab.add(4 + 32 * c)));
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(k.sc[c], p16));
                }
                let sumi = _mm256_sub_epi32(sumi, q8sclsub);
                let d = _mm256_set1_ps(q8k_d(ab) * dw);
                acc[j] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc[j]);
            }
        }
        for j in 0..T {
            out[j] = hsum_ps(acc[j]);
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn q6_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        let nb = n / QK_K;
        let mut t = 0;
        while t + 4 <= out.len() {
            group_q6_k::<4>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 4]);
            t += 4;
        }
        while t < out.len() {
            group_q6_k::<1>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 1]);
            t += 1;
        }
    }
}
