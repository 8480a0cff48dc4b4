//! Emulation of the reference's repacked-weight kernels (`ggml-cpu/repack.cpp`
//! `forward_mul_mat_one_chunk`, kernels in `ggml-cpu/arch/x86/repack.cpp`),
//! which it runs for Q4_0, IQ4_NL, MXFP4, Q4_K and (AVX-512 only) Q2_K weights with
//! a multiple of 8 rows (`q4_0_8x8_q8_0`, `iq4_nl_8x8_q8_0`, `q4_K_8x8_q8_K`,
//! `q2_K_8x8_q8_K`): `ggml_gemm_*` on the first `nt − nt % 4` activation
//! rows, `ggml_gemv_*` on the rest.
//!
//! Per output element, with exact integer block sums:
//!
//! - Q4_0, IQ4_NL (gemm and gemv alike), per 32-block:
//!   `acc = fma((float)isum, dw·da, acc)`.
//! - Q4_K, Q2_K gemv, per super-block: `acc = fma((float)isum, d·da, acc)`,
//!   `accm = fma((float)imin, dmin·da, accm)`; result `acc − accm`.
//! - Q4_K, Q2_K gemm: the same two FMAs, but per 64-element quarter (Q4_K)
//!   or 128-element half (Q2_K) of the super-block, with that piece's
//!   `Σ scale·Σ q·a` and `Σ min·bsum`.

use super::super::dispatch::TileFn;
use super::super::scalar::act_row;
use crate::ggml_type::GgmlType;
use crate::quant::k_helpers::KBlock;
use crate::quant::{as_blocks, f16_to_f32, iq4, mxfp4, q2_k, q4_0, q4_k, q8_0, q8_k, Block, QK, QK_K};

/// Activation rows `[0, gemm_rows(nt))` go through the gemm kernel, the rest
/// through the gemv one.
#[inline]
pub fn gemm_rows(nt: usize) -> usize {
    nt - nt % 4
}

/// The 32-block types: `acc = fma(isum, dw·da, acc)` per block.
fn tile_b32<B: Block>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32], unpack: impl Fn(&B) -> [i8; QK]) {
    // the block's f16 scale is its first two bytes for both types
    tile_b32_scaled(n, w, a, s, out, unpack, |b| f16_to_f32(bytes2(b)))
}

/// [`tile_b32`] with the weight scale of each block from `scale` (MXFP4's
/// E8M0 exponent: the reference's same template, `gemm_q4_b32_8x8_q8_0_lut`).
fn tile_b32_scaled<B: Block>(
    n: usize,
    w: &[u8],
    a: &[u8],
    s: usize,
    out: &mut [f32],
    unpack: impl Fn(&B) -> [i8; QK],
    scale: impl Fn(&B) -> f32,
) {
    let nb = n / QK;
    let wb = &as_blocks::<B>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<q8_0::BlockQ8_0>(a, s, t, nb);
        let mut acc = 0f32;
        for (bw, ba) in wb.iter().zip(ab) {
            let q = unpack(bw);
            let isum: i32 = q.iter().zip(&ba.qs).map(|(&x, &y)| x as i32 * y as i8 as i32).sum();
            let dw = scale(bw);
            acc = (isum as f32).mul_add(dw * f16_to_f32(ba.d), acc);
        }
        *o = acc;
    }
}

/// The first two bytes of a block (its f16 scale `d`).
#[inline]
fn bytes2<B: Block>(b: &B) -> [u8; 2] {
    let p = b as *const B as *const u8;
    // SAFETY: `B: Block` is a plain byte struct of at least 2 bytes.
    unsafe { [*p, *p.add(1)] }
}

fn q4_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_b32(n, w, a, s, out, q4_0::BlockQ4_0::unpack);
}
fn mxfp4(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_b32_scaled(n, w, a, s, out, mxfp4::BlockMxfp4::unpack, mxfp4::BlockMxfp4::scale);
}
fn iq4_nl(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_b32(n, w, a, s, out, iq4::BlockIq4Nl::unpack);
}

/// Σ scale·Σ q·a and Σ min·bsum over the 16-groups `g0..g1` of a super-block.
fn group_isums(k: &KBlock, a: &q8_k::BlockQ8K, g0: usize, g1: usize) -> (i32, i32) {
    let mut isum = 0i32;
    let mut imin = 0i32;
    for g in g0..g1 {
        let s: i32 = (16 * g..16 * g + 16).map(|i| k.q[i] as i32 * a.qs[i] as i8 as i32).sum();
        isum += k.scales[g] as i32 * s;
        imin += k.mins[g] as i32 * a.bsum(g) as i32;
    }
    (isum, imin)
}

/// The k-quants with a minimum (Q4_K, Q2_K): the gemm folds each piece of
/// `gemm_groups` 16-groups (Q4_K: 64 elements, Q2_K: 128), the gemv each
/// super-block.
fn tile_kmin<B: Block>(
    gemm_groups: usize,
    n: usize,
    w: &[u8],
    a: &[u8],
    s: usize,
    out: &mut [f32],
    unpack: impl Fn(&B) -> KBlock,
) {
    let nb = n / QK_K;
    let wb = &as_blocks::<B>(w)[..nb];
    let n4 = gemm_rows(out.len());
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<q8_k::BlockQ8K>(a, s, t, nb);
        let step = if t < n4 { gemm_groups } else { 16 };
        let (mut acc, mut accm) = (0f32, 0f32);
        for (bw, ba) in wb.iter().zip(ab) {
            let k = unpack(bw);
            let (dd, dm) = (k.d * ba.d(), k.dmin * ba.d());
            for g0 in (0..16).step_by(step) {
                let (isum, imin) = group_isums(&k, ba, g0, g0 + step);
                acc = (isum as f32).mul_add(dd, acc);
                accm = (imin as f32).mul_add(dm, accm);
            }
        }
        *o = acc - accm;
    }
}

fn q4_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_kmin(4, n, w, a, s, out, q4_k::BlockQ4K::unpack);
}
fn q2_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_kmin(8, n, w, a, s, out, q2_k::BlockQ2K::unpack);
}

/// The scalar emulation for weight type `ty`.
pub fn scalar_tile(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        Q4_0 => q4_0,
        IQ4_NL => iq4_nl,
        MXFP4 => mxfp4,
        Q4_K => q4_k,
        Q2_K => q2_k,
        _ => return None,
    })
}

/// The AVX2 emulation for weight type `ty`.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        Q4_0 => avx2::tile_b32::<super::super::x86_avx2::WQ4_0>,
        IQ4_NL => avx2::tile_b32::<super::super::x86_avx2::WIq4Nl>,
        MXFP4 => avx2::tile_b32::<super::super::x86_avx2::WMxfp4>,
        Q4_K => avx2::tile_kmin::<super::super::x86_avx2::WQ4K, 2>,
        Q2_K => avx2::tile_kmin::<super::super::x86_avx2::WQ2K, 4>,
        _ => return None,
    })
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{
        dot_pairs_k, dot_pairs_signed, f16_at, f16_at_x8, hsum_epi32, hsum_epi32_x8, loadu, pairs_to_i32, q8k_d,
        q8k_d_x8, W32, WK,
    };
    use super::gemm_rows;
    use crate::quant::{QK, QK_K};

    /// One token against one row of 32-blocks. The blocks' integer sums and
    /// scales are formed 8 blocks at a time, then folded in block order.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn one_b32<U: W32>(nb: usize, w: *const u8, a: *const u8) -> f32 {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a` cover every offset used here.
        unsafe {
            let mut acc = 0f32;
            let mut b = 0;
            while b + 8 <= nb {
                let mut p = [_mm256_setzero_si256(); 8];
                let mut dw = [0f32; 8];
                for (i, (pi, di)) in p.iter_mut().zip(&mut dw).enumerate() {
                    let (q, d) = U::load(w.add((b + i) * U::BYTES));
                    *pi = pairs_to_i32(dot_pairs_signed(q, loadu(a.add((b + i) * 34 + 2))));
                    *di = d;
                }
                let mut isum = [0f32; 8];
                _mm256_storeu_ps(isum.as_mut_ptr(), _mm256_cvtepi32_ps(hsum_epi32_x8(&p)));
                let mut scale = [0f32; 8];
                let sv = _mm256_mul_ps(_mm256_loadu_ps(dw.as_ptr()), f16_at_x8(a.add(b * 34), 34));
                _mm256_storeu_ps(scale.as_mut_ptr(), sv);
                for i in 0..8 {
                    acc = isum[i].mul_add(scale[i], acc);
                }
                b += 8;
            }
            for b in b..nb {
                let (q, dw) = U::load(w.add(b * U::BYTES));
                let ab = a.add(b * 34);
                let isum = hsum_epi32(pairs_to_i32(dot_pairs_signed(q, loadu(ab.add(2)))));
                acc = (isum as f32).mul_add(dw * f16_at(ab), acc);
            }
            acc
        }
    }

    /// 8 tokens against one row of 32-blocks: the tokens are the f32 lanes.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn eight_b32<U: W32>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a`, `out` cover every offset used
        // here.
        unsafe {
            let mut acc = _mm256_setzero_ps();
            for b in 0..nb {
                let (q, dw) = U::load(w.add(b * U::BYTES));
                let ab = a.add(b * 34);
                let p: [__m256i; 8] =
                    std::array::from_fn(|j| pairs_to_i32(dot_pairs_signed(q, loadu(ab.add(j * s + 2)))));
                let isum = _mm256_cvtepi32_ps(hsum_epi32_x8(&p));
                acc = _mm256_fmadd_ps(isum, _mm256_mul_ps(_mm256_set1_ps(dw), f16_at_x8(ab, s)), acc);
            }
            _mm256_storeu_ps(out.as_mut_ptr(), acc);
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn tile_b32<U: W32>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a`, `out` cover every offset used
        // here.
        unsafe {
            let nb = n / QK;
            let mut t = 0;
            while t + 8 <= out.len() {
                eight_b32::<U>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 8]);
                t += 8;
            }
            while t < out.len() {
                out[t] = one_b32::<U>(nb, w.as_ptr(), a.as_ptr().add(t * s));
                t += 1;
            }
        }
    }

    /// One token against one row of Q4_K or Q2_K; folds pieces of `P`
    /// 32-chunks (the gemm: `P` = 2 or 4; the gemv: `P` = 8).
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn one_kmin<U: WK, const P: usize>(nb: usize, w: *const u8, a: *const u8) -> f32 {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a` cover every offset used here.
        unsafe {
            let (mut acc, mut accm) = (0f32, 0f32);
            for b in 0..nb {
                let k = U::unpack(w.add(b * U::BYTES));
                let ab = a.add(b * 292);
                let da = q8k_d(ab);
                let (dd, dm) = (k.d * da, k.dmin * da);
                // [8] per 32-chunk: its two groups' min·bsum
                let mut mins = [0i32; 8];
                _mm256_storeu_si256(mins.as_mut_ptr() as *mut __m256i, _mm256_madd_epi16(k.mins, loadu(ab.add(260))));
                for c0 in (0..8).step_by(P) {
                    let mut sub = _mm256_setzero_si256();
                    for c in c0..c0 + P {
                        let p = dot_pairs_k::<U>(k.q[c], loadu(ab.add(4 + 32 * c)));
                        sub = _mm256_add_epi32(sub, _mm256_madd_epi16(p, k.sc[c]));
                    }
                    acc = (hsum_epi32(sub) as f32).mul_add(dd, acc);
                    accm = (mins[c0..c0 + P].iter().sum::<i32>() as f32).mul_add(dm, accm);
                }
            }
            acc - accm
        }
    }

    /// 8 tokens (the f32 lanes) against one row of Q4_K or Q2_K, gemm order
    /// (pieces of `P` 32-chunks).
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn eight_kmin<U: WK, const P: usize>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a`, `out` cover every offset used
        // here.
        unsafe {
            let mut acc = _mm256_setzero_ps();
            let mut accm = _mm256_setzero_ps();
            for b in 0..nb {
                let k = U::unpack(w.add(b * U::BYTES));
                let ab = a.add(b * 292);
                let da = q8k_d_x8(ab, s);
                let (dd, dm) = (_mm256_mul_ps(_mm256_set1_ps(k.d), da), _mm256_mul_ps(_mm256_set1_ps(k.dmin), da));
                // [token][chunk] min·bsum of the chunk's two groups
                let mut mins = [[0i32; 8]; 8];
                for (j, m) in mins.iter_mut().enumerate() {
                    let v = _mm256_madd_epi16(k.mins, loadu(ab.add(j * s + 260)));
                    _mm256_storeu_si256(m.as_mut_ptr() as *mut __m256i, v);
                }
                for c0 in (0..8).step_by(P) {
                    let sub: [__m256i; 8] = std::array::from_fn(|j| {
                        let mut sub = _mm256_setzero_si256();
                        for c in c0..c0 + P {
                            let p = dot_pairs_k::<U>(k.q[c], loadu(ab.add(j * s + 4 + 32 * c)));
                            sub = _mm256_add_epi32(sub, _mm256_madd_epi16(p, k.sc[c]));
                        }
                        sub
                    });
                    let isum = _mm256_cvtepi32_ps(hsum_epi32_x8(&sub));
                    let imin: [i32; 8] = std::array::from_fn(|j| mins[j][c0..c0 + P].iter().sum());
                    let imin = _mm256_cvtepi32_ps(_mm256_loadu_si256(imin.as_ptr() as *const __m256i));
                    acc = _mm256_fmadd_ps(isum, dd, acc);
                    accm = _mm256_fmadd_ps(imin, dm, accm);
                }
            }
            _mm256_storeu_ps(out.as_mut_ptr(), _mm256_sub_ps(acc, accm));
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn tile_kmin<U: WK, const P: usize>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a`, `out` cover every offset used
        // here.
        unsafe {
            let nb = n / QK_K;
            let n4 = gemm_rows(out.len());
            let (w, a) = (w.as_ptr(), a.as_ptr());
            let mut t = 0;
            while t + 8 <= n4 {
                eight_kmin::<U, P>(nb, w, a.add(t * s), s, &mut out[t..t + 8]);
                t += 8;
            }
            while t < n4 {
                out[t] = one_kmin::<U, P>(nb, w, a.add(t * s));
                t += 1;
            }
            while t < out.len() {
                out[t] = one_kmin::<U, 8>(nb, w, a.add(t * s));
                t += 1;
            }
        }
    }
}
