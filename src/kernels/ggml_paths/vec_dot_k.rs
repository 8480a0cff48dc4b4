//! Emulation of the reference's `ggml_vec_dot_*_q8_K` kernels as its x86
//! build compiles them (`ggml-cpu/arch/x86/quants.c`, the `__AVX2__` code),
//! which its matmul runs for k-quant and IQ4_XS weights (not repacked) with
//! fewer than 8 activation rows, one output at a time; and of
//! `ggml_vec_dot_iq4_nl_q8_0`, which it runs for IQ4_NL (not repacked) with
//! one activation row (see `iq4_nl`).
//!
//! These kernels keep 8 i32 lanes of partial sums per super-block and fold
//! each lane into its own f32 lane with an FMA; the 8 f32 lanes are summed
//! once at the end (`hsum_float_8`). Which products land in which lane is
//! part of the numerics:
//!
//! - every type but Q6_K: lane `l` holds, over the 32-element chunks `c`,
//!   `scale·Σ q·a` of the chunk's bytes `4l..4l+3`, with the scale of the
//!   16-group `2c + l/4` (one scale per 32 for Q4_K, Q5_K, IQ4_XS);
//! - Q6_K: the same with the unsigned 6-bit quant `u6`, minus
//!   `32·(scale[2l]·bsum[2l] + scale[2l+1]·bsum[2l+1])`.
//!
//! Per super-block, with `d = da·dw` and `dmin = −da·dmin_w`:
//! `acc_l = fma(d, lane_l, acc_l)`, after, for Q2_K only,
//! `acc_l = fma(dmin, mins[2l]·bsum[2l] + mins[2l+1]·bsum[2l+1], acc_l)`.
//! The result is `hsum_float_8(acc)`, plus for Q4_K the 4-lane sum of
//! `accm_i = fma(dmin, m_{2i}·bs32_{2i} + m_{2i+1}·bs32_{2i+1}, accm_i)`
//! (`(accm_0 + accm_2) + (accm_1 + accm_3)`), for Q5_K the scalar
//! `summs = fma(dmin, Σ_j m_j·bs32_j, summs)` (GCC fuses it), where `m_j` is
//! the minimum of 32-sub-block `j` and `bs32_j` its activation sum.

use super::super::dispatch::TileFn;
use super::super::scalar::act_row;
use crate::ggml_type::GgmlType;
use crate::quant::k_helpers::KBlock;
use crate::quant::{as_blocks, f16_to_f32, iq4, mxfp4, q2_k, q3_k, q4_k, q5_k, q6_k, q8_0, q8_k, Block, QK, QK_K};

/// How a type's kernel folds the minimum term (see the module doc).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mins {
    /// no minimum (Q3_K, Q6_K, IQ4_XS)
    None,
    /// Q2_K: into the 8 lanes of `acc`, before the quants
    Lanes8,
    /// Q4_K: into 4 lanes of their own
    Lanes4,
    /// Q5_K: into one scalar
    Scalar,
}

fn mins_of(ty: GgmlType) -> Mins {
    match ty {
        GgmlType::Q2_K => Mins::Lanes8,
        GgmlType::Q4_K => Mins::Lanes4,
        GgmlType::Q5_K => Mins::Scalar,
        _ => Mins::None,
    }
}

/// ggml's `hsum_float_8`: ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7)).
#[inline(always)]
pub(crate) fn hsum_float_8(a: &[f32; 8]) -> f32 {
    ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

/// The 8 i32 quant lanes of one super-block (every type but Q6_K).
fn lanes(k: &KBlock, a: &q8_k::BlockQ8K) -> [i32; 8] {
    let mut lanes = [0i32; 8];
    for c in 0..8 {
        for (l, lane) in lanes.iter_mut().enumerate() {
            let p: i32 = (32 * c + 4 * l..32 * c + 4 * l + 4).map(|i| k.q[i] as i32 * a.qs[i] as i8 as i32).sum();
            *lane += k.scales[2 * c + l / 4] as i32 * p;
        }
    }
    lanes
}

/// Q6_K's 8 i32 lanes (`k.q` is `u6 − 32`).
fn q6_k_lanes(k: &KBlock, a: &q8_k::BlockQ8K) -> [i32; 8] {
    let mut lanes = [0i32; 8];
    for c in 0..8 {
        for (l, lane) in lanes.iter_mut().enumerate() {
            let p: i32 =
                (32 * c + 4 * l..32 * c + 4 * l + 4).map(|i| (k.q[i] as i32 + 32) * a.qs[i] as i8 as i32).sum();
            *lane += k.scales[2 * c + l / 4] as i32 * p;
        }
    }
    for (l, lane) in lanes.iter_mut().enumerate() {
        *lane -= min_lane(&k.scales, a, l) << 5;
    }
    lanes
}

/// `v[2l]·bsum[2l] + v[2l+1]·bsum[2l+1]` for 16 per-group values `v`.
#[inline]
fn min_lane(v: &[i16; 16], a: &q8_k::BlockQ8K, l: usize) -> i32 {
    v[2 * l] as i32 * a.bsum(2 * l) as i32 + v[2 * l + 1] as i32 * a.bsum(2 * l + 1) as i32
}

fn tile<B: Block>(
    ty: GgmlType,
    n: usize,
    w: &[u8],
    a: &[u8],
    s: usize,
    out: &mut [f32],
    unpack: impl Fn(&B) -> KBlock,
) {
    let nb = n / QK_K;
    let mins = mins_of(ty);
    let wb = &as_blocks::<B>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<q8_k::BlockQ8K>(a, s, t, nb);
        let mut acc = [0f32; 8];
        let mut accm = [0f32; 4];
        let mut summs = 0f32;
        for (bw, ba) in wb.iter().zip(ab) {
            let k = unpack(bw);
            let d = ba.d() * k.d;
            let dmin = -ba.d() * k.dmin;
            // lane j of Σ min·bsum (j: 16-group pair = 32-sub-block)
            let ml: [i32; 8] = std::array::from_fn(|j| min_lane(&k.mins, ba, j));
            match mins {
                Mins::None => {}
                Mins::Lanes8 => {
                    for (x, &m) in acc.iter_mut().zip(&ml) {
                        *x = dmin.mul_add(m as f32, *x);
                    }
                }
                Mins::Lanes4 => {
                    for (i, x) in accm.iter_mut().enumerate() {
                        *x = dmin.mul_add((ml[2 * i] + ml[2 * i + 1]) as f32, *x);
                    }
                }
                Mins::Scalar => summs = dmin.mul_add(ml.iter().sum::<i32>() as f32, summs),
            }
            let lanes = if ty == GgmlType::Q6_K { q6_k_lanes(&k, ba) } else { lanes(&k, ba) };
            for (x, &v) in acc.iter_mut().zip(&lanes) {
                *x = d.mul_add(v as f32, *x);
            }
        }
        *o = match mins {
            Mins::Lanes4 => hsum_float_8(&acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3])),
            Mins::Scalar => hsum_float_8(&acc) + summs,
            _ => hsum_float_8(&acc),
        };
    }
}

fn q2_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile(GgmlType::Q2_K, n, w, a, s, out, q2_k::BlockQ2K::unpack);
}
fn q3_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile(GgmlType::Q3_K, n, w, a, s, out, q3_k::BlockQ3K::unpack);
}
fn q4_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile(GgmlType::Q4_K, n, w, a, s, out, q4_k::BlockQ4K::unpack);
}
fn q5_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile(GgmlType::Q5_K, n, w, a, s, out, q5_k::BlockQ5K::unpack);
}
fn q6_k(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile(GgmlType::Q6_K, n, w, a, s, out, q6_k::BlockQ6K::unpack);
}
fn iq4_xs(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile(GgmlType::IQ4_XS, n, w, a, s, out, iq4::BlockIq4Xs::unpack);
}

/// ggml_vec_dot_iq4_nl_q8_0: blocks in pairs, the even ones into one 8-lane
/// accumulator and the odd ones into another (lane `l`: bytes `4l..4l+3` of
/// the block, `acc = fma(da·dw, lane, acc)`), summed lane-wise then by
/// `hsum_float_8`; an odd last block adds `da·dw · Σ` unfused.
fn iq4_nl(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    lut_pairs(n, w, a, s, out, iq4::BlockIq4Nl::unpack, |b| f16_to_f32(b.d));
}

/// ggml_vec_dot_mxfp4_q8_0: as [`iq4_nl`], with the block's E8M0 scale.
fn mxfp4(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    lut_pairs(n, w, a, s, out, mxfp4::BlockMxfp4::unpack, mxfp4::BlockMxfp4::scale);
}

/// The two-accumulator dot of the 4-bit table types against Q8_0 (see
/// [`iq4_nl`]): `unpack` gives a block's table values, `scale` its scale.
fn lut_pairs<B: Block>(
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
        let mut acc = [[0f32; 8]; 2];
        let d_of = |b: usize| f16_to_f32(ab[b].d) * scale(&wb[b]);
        let mut ib = 0;
        while ib + 1 < nb {
            for (k, acc) in acc.iter_mut().enumerate() {
                let q = unpack(&wb[ib + k]);
                let d = d_of(ib + k);
                for (l, x) in acc.iter_mut().enumerate() {
                    let p: i32 = (4 * l..4 * l + 4).map(|e| q[e] as i32 * ab[ib + k].qs[e] as i8 as i32).sum();
                    *x = d.mul_add(p as f32, *x);
                }
            }
            ib += 2;
        }
        let both: [f32; 8] = std::array::from_fn(|l| acc[0][l] + acc[1][l]);
        let mut sum = hsum_float_8(&both);
        if ib < nb {
            let q = unpack(&wb[ib]);
            let p: i32 = q.iter().zip(&ab[ib].qs).map(|(&x, &y)| x as i32 * y as i8 as i32).sum();
            sum += d_of(ib) * p as f32;
        }
        *o = sum;
    }
}

/// The scalar emulation for weight type `ty`.
pub fn scalar_tile(ty: GgmlType) -> Option<TileFn> {
    if let Some(f) = super::vec_dot_tq::scalar_tile(ty)
        .or_else(|| super::vec_dot_q1q2::scalar_tile(ty))
        .or_else(|| super::vec_dot_iq::scalar_tile(ty))
        .or_else(|| super::vec_dot_nvfp4::scalar_tile(ty))
    {
        return Some(f);
    }
    if ty == GgmlType::IQ4_NL {
        return Some(iq4_nl);
    }
    if ty == GgmlType::MXFP4 {
        return Some(mxfp4);
    }
    super::k_entry(ty, [q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs])
}

/// The AVX2 emulation for weight type `ty`.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType) -> Option<TileFn> {
    use super::super::x86_avx2::{WIq4Xs, WQ2K, WQ3K, WQ4K, WQ5K, WQ6K};
    use avx2::{tile, LANES4, LANES8, NONE, Q6K, SCALAR};
    if let Some(f) = super::vec_dot_tq::avx2_tile(ty)
        .or_else(|| super::vec_dot_q1q2::avx2_tile(ty))
        .or_else(|| super::vec_dot_iq::avx2_tile(ty))
        .or_else(|| super::vec_dot_nvfp4::avx2_tile(ty))
    {
        return Some(f);
    }
    if ty == GgmlType::IQ4_NL {
        return Some(avx2::iq4_nl);
    }
    if ty == GgmlType::MXFP4 {
        return Some(avx2::mxfp4);
    }
    super::k_entry(
        ty,
        [
            tile::<WQ2K, LANES8>,
            tile::<WQ3K, NONE>,
            tile::<WQ4K, LANES4>,
            tile::<WQ5K, SCALAR>,
            tile::<WQ6K, Q6K>,
            tile::<WIq4Xs, NONE>,
        ],
    )
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The integer lanes from the AVX2 super-block unpackers (`madd` of the
    //! pair sums with the scale vectors puts each product in the reference's
    //! lane); the f32 FMAs and the final sums are the reference's.
    use std::arch::x86_64::*;

    use super::super::super::x86_avx2::{
        dot_pairs_signed, f16_at, hsum_epi32, hsum_ps, loadu, pairs_to_i32, q8k_d, KRegs, WIq4Nl, WMxfp4, W32, WK,
    };
    use crate::quant::{QK, QK_K};

    // How the minimum term is folded (`super::Mins`), as const parameters.
    pub(super) const NONE: u8 = 0;
    pub(super) const LANES8: u8 = 1;
    pub(super) const LANES4: u8 = 2;
    pub(super) const SCALAR: u8 = 3;
    /// no minimum, and Q6_K's unsigned quants with the bsum correction
    pub(super) const Q6K: u8 = 4;

    /// The 8 quant lanes of one super-block against the Q8_K block at `ab`.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn lanes<const M: u8>(k: &KRegs, ab: *const u8) -> __m256i {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `ab` covers every offset used here.
        unsafe {
            let mut sumi = _mm256_setzero_si256();
            if M == Q6K {
                // (`k.q` holds the unsigned 6-bit quants here: see `group`)
                for c in 0..8 {
                    let p16 = _mm256_maddubs_epi16(k.q[c], loadu(ab.add(4 + 32 * c)));
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(k.sc[c], p16));
                }
                // Q6K's `mins` vector holds the 16 group scales (see `group`)
                let corr = _mm256_slli_epi32(_mm256_madd_epi16(loadu(ab.add(260)), k.mins), 5);
                _mm256_sub_epi32(sumi, corr)
            } else {
                for c in 0..8 {
                    let p16 = dot_pairs_signed(k.q[c], loadu(ab.add(4 + 32 * c)));
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, k.sc[c]));
                }
                sumi
            }
        }
    }

    /// `T` tokens against one row.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn group<U: WK, const M: u8, const T: usize>(
        nb: usize,
        w: *const u8,
        a: *const u8,
        s: usize,
        out: &mut [f32],
    ) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a`, `out` cover every offset used
        // here.
        unsafe {
            let mut acc = [_mm256_setzero_ps(); T];
            let mut accm = [_mm_setzero_ps(); T];
            let mut summs = [0f32; T];
            for b in 0..nb {
                let wp = w.add(b * U::BYTES);
                // the weight stream 8 super-blocks ahead (decodes wait on it;
                // past the row's end the next rows', or nothing: a prefetch
                // does not fault)
                let ahead = wp.wrapping_add(8 * U::BYTES);
                let mut o = 0;
                while o < U::BYTES {
                    _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(o) as *const i8);
                    o += 64;
                }
                // Q6_K: the stored (unsigned) quants, the 16 group scales in
                // `mins` (`WK::unpack_biased`)
                let k = if M == Q6K { U::unpack_biased(wp) } else { U::unpack(wp) };
                for j in 0..T {
                    let ab = a.add(j * s + b * 292);
                    let da = q8k_d(ab);
                    let (d, dmin) = (da * k.d, -da * k.dmin);
                    if M == LANES8 || M == LANES4 || M == SCALAR {
                        // lane j: min_j·bsum32_j (Q4_K/Q5_K) or the 16-group pair (Q2_K)
                        let ml = _mm256_madd_epi16(k.mins, loadu(ab.add(260)));
                        if M == LANES8 {
                            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(ml), acc[j]);
                        } else if M == LANES4 {
                            // [m0 m1 .. m7] → [m0+m1, m2+m3, m4+m5, m6+m7]
                            let lo = _mm256_castsi256_si128(ml);
                            let hi = _mm256_extracti128_si256(ml, 1);
                            let prod = _mm_hadd_epi32(lo, hi);
                            accm[j] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), accm[j]);
                        } else {
                            summs[j] = dmin.mul_add(hsum_epi32(ml) as f32, summs[j]);
                        }
                    }
                    let sumi = lanes::<M>(&k, ab);
                    acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc[j]);
                }
            }
            for j in 0..T {
                let mut r = hsum_ps(acc[j]);
                if M == LANES4 {
                    let m = accm[j];
                    let m = _mm_add_ps(m, _mm_movehl_ps(m, m));
                    r += _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
                } else if M == SCALAR {
                    r += summs[j];
                }
                out[j] = r;
            }
        }
    }

    /// ggml_vec_dot_iq4_nl_q8_0 (see the scalar `iq4_nl`), token by token.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn iq4_nl(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract.
        unsafe { lut_pairs::<WIq4Nl>(n, w, a, s, out) }
    }

    /// ggml_vec_dot_mxfp4_q8_0 (see the scalar `mxfp4`), token by token.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn mxfp4(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract.
        unsafe { lut_pairs::<WMxfp4>(n, w, a, s, out) }
    }

    /// The two-accumulator dot of a 4-bit table type (see the scalar
    /// `lut_pairs`).
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn lut_pairs<U: W32>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a`, `out` cover every offset used
        // here.
        unsafe {
            let nb = n / QK;
            for (t, o) in out.iter_mut().enumerate() {
                let (w, a) = (w.as_ptr(), a.as_ptr().add(t * s));
                let block = |b: usize| {
                    let (q, dw) = U::load(w.add(b * U::BYTES));
                    let ab = a.add(b * 34);
                    (pairs_to_i32(dot_pairs_signed(q, loadu(ab.add(2)))), f16_at(ab) * dw)
                };
                let mut acc = [_mm256_setzero_ps(); 2];
                let mut ib = 0;
                while ib + 1 < nb {
                    for (k, acc) in acc.iter_mut().enumerate() {
                        let (p, d) = block(ib + k);
                        *acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(p), *acc);
                    }
                    ib += 2;
                }
                let mut sum = hsum_ps(_mm256_add_ps(acc[0], acc[1]));
                if ib < nb {
                    let (p, d) = block(ib);
                    sum += d * hsum_epi32(p) as f32;
                }
                *o = sum;
            }
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn tile<U: WK, const M: u8>(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
        // SAFETY: this fn's contract: the CPU has avx2, fma, f16c, and `w`, `a`, `out` cover every offset used
        // here.
        unsafe {
            let nb = n / QK_K;
            let mut t = 0;
            while t + 4 <= out.len() {
                group::<U, M, 4>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 4]);
                t += 4;
            }
            while t < out.len() {
                group::<U, M, 1>(nb, w.as_ptr(), a.as_ptr().add(t * s), s, &mut out[t..t + 1]);
                t += 1;
            }
        }
    }
}
