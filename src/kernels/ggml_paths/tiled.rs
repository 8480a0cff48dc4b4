//! Emulation of the reference's tiled k-quant matmul
//! (`ggml_compute_forward_mul_mat_tiled`, `ggml-cpu/tiled/tiled.cpp` and the
//! VNNI microkernel `tiled_run_micro_vnni_8x16` of `tiled-kernel.cpp`; the
//! AVX2 microkernel does the same float operations), which the reference runs
//! for Q2_K … Q6_K and IQ4_XS weights (not repacked) with 8 or more
//! activation rows.
//!
//! Per output element and 256-element super-block the microkernel forms the
//! exact integer sums `s1 = Σ_s scale_s·Σ q·a` and `s2 = Σ_s min_s·bsum_s`
//! (whatever the tile shape or the narrow/standard path), then folds them
//! into the output in super-block order, the output starting at 0:
//!
//! ```text
//! r   = (float)s1 · d                         vmulps
//! r   = fnmadd(dmin, (float)s2, r)            only types with a minimum
//! out = fma(r, da, out)                       vfmadd213ps (GCC fuses the add)
//! ```
//!
//! For the types without a minimum `s2` and `dmin` are 0, and the fused
//! `r − 0·0` is `r` exactly, so one fold serves every type.

use super::super::dispatch::TileFn;
use super::super::scalar::{tile_x_q8_k, KFold};
use crate::ggml_type::GgmlType;
use crate::quant::iq_expand::IqTiled;
use crate::quant::{iq1, iq2, iq3, iq4, q2_k, q3_k, q4_k, q5_k, q6_k};

/// The tiled microkernel's fold of one super-block into an output.
pub(crate) struct TiledFold;
impl KFold for TiledFold {
    #[inline(always)]
    fn fold(acc: f32, d: f32, dmin: f32, da: f32, isum: i32, imin: i32) -> f32 {
        let r = (-dmin).mul_add(imin as f32, isum as f32 * d);
        r.mul_add(da, acc)
    }
}

fn q2_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_k::<_, TiledFold>(n, w, a, s, out, q2_k::BlockQ2K::unpack);
}
fn q3_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_k::<_, TiledFold>(n, w, a, s, out, q3_k::BlockQ3K::unpack);
}
fn q4_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_k::<_, TiledFold>(n, w, a, s, out, q4_k::BlockQ4K::unpack);
}
fn q5_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_k::<_, TiledFold>(n, w, a, s, out, q5_k::BlockQ5K::unpack);
}
fn q6_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_k::<_, TiledFold>(n, w, a, s, out, q6_k::BlockQ6K::unpack);
}
fn iq4_xs(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_k::<_, TiledFold>(n, w, a, s, out, iq4::BlockIq4Xs::unpack);
}

fn iq<B: IqTiled>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_k::<_, TiledFold>(n, w, a, s, out, B::tiled_kblock);
}

/// The IQ1–IQ3 types' tiled products: the reference unpacks their grids to
/// signed values (`quant::iq_expand::IqWeights::kblock`) and runs the same
/// microkernel.
fn iq_tile(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        IQ2_XXS => iq::<iq2::BlockIq2Xxs>,
        IQ2_XS => iq::<iq2::BlockIq2Xs>,
        IQ2_S => iq::<iq2::BlockIq2S>,
        IQ3_XXS => iq::<iq3::BlockIq3Xxs>,
        IQ3_S => iq::<iq3::BlockIq3S>,
        IQ1_S => iq::<iq1::BlockIq1S>,
        IQ1_M => iq::<iq1::BlockIq1M>,
        _ => return None,
    })
}

/// The scalar emulation for weight type `ty`.
pub fn scalar_tile(ty: GgmlType) -> Option<TileFn> {
    iq_tile(ty).or_else(|| super::k_entry(ty, [q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs]))
}

/// The AVX2 emulation for weight type `ty` (the integer sums by the AVX2
/// super-block unpackers, the same fold, 8 tokens in the f32 lanes). The
/// AVX2 set's matmul runs the row-block kernel (`tiled_vnni::avx2_rows`,
/// the same bits) instead, except for IQ4_XS, which it has none for.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType) -> Option<TileFn> {
    use super::super::x86_avx2::WIq;
    use super::super::x86_avx2::{WIq4Xs, WQ2K, WQ3K, WQ4K, WQ5K, WQ6K};
    use avx2::tile;
    use GgmlType::*;
    let iq: Option<TileFn> = match ty {
        IQ2_XXS => Some(tile::<WIq<iq2::BlockIq2Xxs>>),
        IQ2_XS => Some(tile::<WIq<iq2::BlockIq2Xs>>),
        IQ2_S => Some(tile::<WIq<iq2::BlockIq2S>>),
        IQ3_XXS => Some(tile::<WIq<iq3::BlockIq3Xxs>>),
        IQ3_S => Some(tile::<WIq<iq3::BlockIq3S>>),
        IQ1_S => Some(tile::<WIq<iq1::BlockIq1S>>),
        IQ1_M => Some(tile::<WIq<iq1::BlockIq1M>>),
        _ => None,
    };
    if iq.is_some() {
        return iq;
    }
    super::k_entry(ty, [tile::<WQ2K>, tile::<WQ3K>, tile::<WQ4K>, tile::<WQ5K>, tile::<WQ6K>, tile::<WIq4Xs>])
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{dot_pairs_k, hsum_epi32_x8, loadu, q8k_d_x8, tile_q8_k_family, WK};
    use super::TiledFold;
    use crate::quant::QK_K;

    /// 8 tokens (the f32 lanes) against one row.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn eight<U: WK>(nb: usize, w: *const u8, a: *const u8, s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a`, `out` cover every offset used
        // here.
        unsafe {
            let mut acc = _mm256_setzero_ps();
            for b in 0..nb {
                // Q6_K: the stored (unsigned) values, their offset taken out
                // through the activation block sums (exact integers either way)
                let k =
                    if U::OFFSET != 0 { U::unpack_biased(w.add(b * U::BYTES)) } else { U::unpack(w.add(b * U::BYTES)) };
                let ab = a.add(b * 292);
                // (loops, not array::from_fn: a closure does not inherit the
                // target features, so its intrinsics would not be inlined)
                let mut v = [_mm256_setzero_si256(); 8];
                for (j, vj) in v.iter_mut().enumerate() {
                    let mut isum = _mm256_setzero_si256();
                    for c in 0..8 {
                        let aq = loadu(ab.add(j * s + 4 + 32 * c));
                        let p = if U::OFFSET != 0 {
                            _mm256_maddubs_epi16(k.q[c], aq)
                        } else {
                            dot_pairs_k::<U>(k.q[c], aq)
                        };
                        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, k.sc[c]));
                    }
                    if U::OFFSET != 0 {
                        // Σ_g scale_g · bsum_g (k.mins holds the scales here)
                        let sb = _mm256_madd_epi16(k.mins, loadu(ab.add(j * s + 260)));
                        isum = _mm256_sub_epi32(isum, _mm256_mullo_epi32(sb, _mm256_set1_epi32(U::OFFSET)));
                    }
                    *vj = isum;
                }
                let isum = _mm256_cvtepi32_ps(hsum_epi32_x8(&v));
                let mut r = _mm256_mul_ps(isum, _mm256_set1_ps(k.d));
                if k.has_min {
                    let mut m = [_mm256_setzero_si256(); 8];
                    for (j, mj) in m.iter_mut().enumerate() {
                        *mj = _mm256_madd_epi16(k.mins, loadu(ab.add(j * s + 260)));
                    }
                    let imin = _mm256_cvtepi32_ps(hsum_epi32_x8(&m));
                    r = _mm256_fnmadd_ps(_mm256_set1_ps(k.dmin), imin, r);
                }
                acc = _mm256_fmadd_ps(r, q8k_d_x8(ab, s), acc);
            }
            _mm256_storeu_ps(out.as_mut_ptr(), acc);
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn tile<U: WK>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a`, `out` cover every offset used
        // here.
        unsafe {
            let nb = n / QK_K;
            let mut t = 0;
            while t + 8 <= out.len() {
                eight::<U>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 8]);
                t += 8;
            }
            if t < out.len() {
                tile_q8_k_family::<U, TiledFold>(n, w, &a[t * s..], s, &mut out[t..]);
            }
        }
    }
}
