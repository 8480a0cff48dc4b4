//! The small operations between matmuls, with the reference's numerics
//! (ggml-cpu ops.cpp / vec.h): where ggml sums in double or rounds through
//! f16, so do these, because logits parity depends on it.

use super::rope::RopeArgs;

/// RMS norm of each row of `x` ([n][d]) times `w` ([d]), in place:
/// `x * (1/sqrt(mean(x²) + eps)) * w`, the square sum in f64 as ggml does.
pub fn rms_norm_mul(x: &mut [f32], d: usize, w: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(d) {
        let sum: f64 = row.iter().map(|&v| f64::from(v * v)).sum();
        let mean = (sum / d as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        for (v, &wi) in row.iter_mut().zip(w) {
            *v = *v * scale * wi;
        }
    }
}

/// LayerNorm of each row of `x` ([n][d]), times `w`, plus `b` ([d] each),
/// in place, as ggml_norm, ggml_mul, ggml_add run it: the mean from an f64
/// sum rounded to f32; the centred values' squares summed per 16 lanes as
/// `_mm512_reduce_add_ps` then added in f64 (ggml_vec_cvar_f32 built for
/// AVX-512), the tail one by one; `x · 1/sqrt(var + eps)`, `· w`, `+ b`.
pub fn layer_norm(x: &mut [f32], d: usize, w: &[f32], b: Option<&[f32]>, eps: f32) {
    for row in x.chunks_exact_mut(d) {
        let sum: f64 = row.iter().map(|&v| f64::from(v)).sum();
        let mean = sum as f32 / d as f32;
        let mut sum2 = 0f64;
        let mut groups = row.chunks_exact_mut(16);
        for g in &mut groups {
            let mut sq = [0f32; 16];
            for (v, s) in g.iter_mut().zip(&mut sq) {
                *v -= mean;
                *s = *v * *v;
            }
            sum2 += f64::from(crate::kernels::vecf::reduce16(&sq));
        }
        for v in groups.into_remainder() {
            *v -= mean;
            sum2 += f64::from(*v * *v);
        }
        let variance = (sum2 / d as f64) as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        for (v, &wi) in row.iter_mut().zip(w) {
            *v = *v * scale * wi;
        }
        if let Some(b) = b {
            row.iter_mut().zip(b).for_each(|(v, bi)| *v += bi);
        }
    }
}

/// ggml_vec_gelu_f32 as the reference builds it (GGML_GELU_FP16), in place:
/// the table's GELU of the f16 of each value (0 at or below -10, the value
/// itself at or above 10).
pub fn gelu(x: &mut [f32]) {
    let table = gelu_table();
    for v in x.iter_mut() {
        if *v <= -10.0 {
            *v = 0.0;
        } else if *v < 10.0 {
            *v = half::f16::from_bits(table[half::f16::from_f32(*v).to_bits() as usize]).to_f32();
        }
    }
}

/// ggml_vec_reglu_f32 in place of the gate: `g = g > 0 ? g · u : 0`.
pub fn reglu(g: &mut [f32], u: &[f32]) {
    for (g, u) in g.iter_mut().zip(u) {
        *g = if *g > 0.0 { *g * u } else { 0.0 };
    }
}

/// ggml_vec_geglu_f32 as the reference builds it (GGML_GELU_FP16): GELU
/// read from a table of f16 values indexed by the f16 of `g` (0 at or below
/// -10, the identity at or above 10), times `u`; in place: `g[i]` becomes
/// `gelu(g[i])·u[i]`.
pub fn geglu(g: &mut [f32], u: &[f32]) {
    let table = gelu_table();
    let n = g.len().min(u.len());
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))] // set by the x86-64 path only
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::vecf::use_avx2() {
        done = n / 8 * 8;
        // SAFETY: use_avx2() checked AVX2 and F16C; both slices hold `done`.
        unsafe { geglu8(&mut g[..done], &u[..done], table) };
    }
    geglu_scalar(&mut g[done..n], &u[done..n], table);
}

fn geglu_scalar(g: &mut [f32], u: &[f32], table: &[u16]) {
    for (o, &v) in g.iter_mut().zip(u) {
        let x = *o;
        *o = if x <= -10.0 {
            0.0
        } else if x >= 10.0 {
            x * v
        } else {
            let i = half::f16::from_f32(x).to_bits() as usize;
            half::f16::from_bits(table[i]).to_f32() * v
        };
    }
}

/// [`geglu_scalar`] 8 lanes at a time (the f16 rounding by `vcvtps2ph`,
/// round to nearest even as `half`; the table read lane by lane).
///
/// # Safety
/// The CPU has AVX2 and F16C; `g.len()` is a multiple of 8 and ≤ `u.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn geglu8(g: &mut [f32], u: &[f32], table: &[u16]) {
    use std::arch::x86_64::*;
    assert!(g.len().is_multiple_of(8) && g.len() <= u.len() && table.len() == 1 << 16);
    let (lo, hi) = (_mm256_set1_ps(-10.0), _mm256_set1_ps(10.0));
    for i in (0..g.len()).step_by(8) {
        // SAFETY: i + 8 ≤ g.len() ≤ u.len().
        let (x, v) = unsafe { (_mm256_loadu_ps(g.as_ptr().add(i)), _mm256_loadu_ps(u.as_ptr().add(i))) };
        let mut idx = [0u16; 8];
        // SAFETY: idx holds 8 u16.
        unsafe { _mm_storeu_si128(idx.as_mut_ptr().cast(), _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x)) };
        let gelu: [u16; 8] = idx.map(|h| table[h as usize]);
        // SAFETY: gelu holds 8 u16.
        let t = _mm256_mul_ps(_mm256_cvtph_ps(unsafe { _mm_loadu_si128(gelu.as_ptr().cast()) }), v);
        // x ≥ 10: x·v; x ≤ -10: 0; else the table's (NaN: the table's NaN)
        let r = _mm256_blendv_ps(t, _mm256_mul_ps(x, v), _mm256_cmp_ps::<_CMP_GE_OQ>(x, hi));
        let r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps::<_CMP_LE_OQ>(x, lo));
        // SAFETY: as the loads.
        unsafe { _mm256_storeu_ps(g.as_mut_ptr().add(i), r) };
    }
}

/// ggml_table_gelu_f16: for every f16 bit pattern, the f16 of [`gelu_f32`].
fn gelu_table() -> &'static [u16] {
    static TABLE: std::sync::OnceLock<Vec<u16>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        (0..=u16::MAX)
            .map(|i| {
                let h = half::f16::from_f32(gelu_f32(half::f16::from_bits(i).to_f32()));
                // NaNs come out of the reference's table quiet and without
                // payload (only used for NaN inputs; any NaN would do)
                if h.is_nan() {
                    (h.to_bits() & 0x8000) | 0x7e00
                } else {
                    h.to_bits()
                }
            })
            .collect()
    })
}

/// ggml_gelu_f32 with the one fused multiply-add GCC forms in the
/// reference's build (`1 + a·x·x`); the table built from it equals the
/// reference's entry for entry (see the test).
fn gelu_f32(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    const GELU_COEF_A: f32 = 0.044715;
    let inner = (GELU_COEF_A * x).mul_add(x, 1.0);
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * inner).tanh())
}

/// The rotary angles of one position: `(sin, cos)` of each of the `n_rot/2`
/// pairs times the magnitude, as ggml_rope_cache_init and rope_yarn compute
/// them: theta starts at `pos` and is multiplied by base^(-2/n_rot) per
/// pair, divided by the pair's factor (llama3, LongRoPE), scaled by the
/// frequency scale, and with YaRN (`ext_factor` not 0) blended back toward
/// the unscaled angle by the pair's ramp; all in f32, with the fused
/// multiply-adds GCC forms in the reference's build. Shared by every head
/// of the position (as the reference's cache is).
pub fn rope_angles(pos: i32, n_rot: usize, a: &RopeArgs, factors: Option<&[f32]>) -> Vec<(f32, f32)> {
    let theta_scale = a.freq_base.powf(-2.0 / n_rot as f32);
    let mut theta = pos as f32;
    // (rope_yarn: the magnitude grows by 1 + 0.1 ln(1 / scale) with YaRN)
    let mscale = if a.ext_factor != 0.0 {
        a.attn_factor * 0.1f32.mul_add((1.0 / a.freq_scale).ln(), 1.0)
    } else {
        a.attn_factor
    };
    (0..n_rot / 2)
        .map(|i| {
            let ff = factors.map_or(1.0, |f| f[i]);
            let extrap = theta / ff;
            let interp = a.freq_scale * extrap;
            let t = if a.ext_factor != 0.0 {
                let [low, high] = a.corr_dims;
                // rope_yarn_ramp of pair i (i0 / 2 = i)
                let y = (i as f32 - low) / 0.001f32.max(high - low);
                let ramp = (1.0 - y.clamp(0.0, 1.0)) * a.ext_factor;
                interp.mul_add(1.0 - ramp, extrap * ramp)
            } else {
                interp
            };
            theta *= theta_scale;
            (t.sin() * mscale, t.cos() * mscale)
        })
        .collect()
}

/// Rotary embedding of one head vector `v` ([head_dim]) by `angles` (from
/// [`rope_angles`]), over its first `n_rot = 2 * angles.len()` elements: NORM
/// rotates adjacent pairs, NEOX pairs i and i + n_rot/2.
pub fn rope_by(v: &mut [f32], angles: &[(f32, f32)], neox: bool) {
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::vecf::use_avx2() {
        // SAFETY: use_avx2() checked FMA on this CPU.
        return unsafe { rope_by_fma(v, angles, neox) };
    }
    rope_pairs(v, angles, neox);
}

/// [`rope_pairs`] compiled with the FMA instruction (without it each
/// `mul_add` is a call into the runtime: ~1.5 % of a prefill).
///
/// # Safety
/// The CPU has FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn rope_by_fma(v: &mut [f32], angles: &[(f32, f32)], neox: bool) {
    rope_pairs(v, angles, neox);
}

#[inline(always)]
fn rope_pairs(v: &mut [f32], angles: &[(f32, f32)], neox: bool) {
    let half = angles.len();
    for (i, &(sin, cos)) in angles.iter().enumerate() {
        let (a, b) = if neox { (i, i + half) } else { (2 * i, 2 * i + 1) };
        let (x0, x1) = (v[a], v[b]);
        // As the reference's build computes them (GCC contracts the first
        // product of each line into a fused multiply-add).
        v[a] = x0.mul_add(cos, -(x1 * sin));
        v[b] = x0.mul_add(sin, x1 * cos);
    }
}

/// Rotary embedding of one head vector at position `pos` ([`rope_angles`]
/// then [`rope_by`]).
pub fn rope(v: &mut [f32], pos: i32, n_rot: usize, a: &RopeArgs, factors: Option<&[f32]>, neox: bool) {
    rope_by(v, &rope_angles(pos, n_rot, a, factors), neox);
}

/// The rest of `ggml_compute_forward_soft_max_f32` on a row that already
/// holds its scaled (and masked) values: the max, `vecf::soft_max`, then
/// every value times `(float)(1.0 / sum)`.
pub fn soft_max(p: &mut [f32]) {
    soft_max_sink(p, None)
}

/// [`soft_max`] with a sink logit (`ggml_soft_max_add_sinks`): it raises
/// the max if larger and adds `expf(sink - max)` to the f64 sum, taking no
/// share of the output.
pub fn soft_max_sink(p: &mut [f32], sink: Option<f32>) {
    let mut max = p.iter().fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
    if let Some(s) = sink {
        max = if max > s { max } else { s };
    }
    let mut sum = crate::kernels::vecf::soft_max(p, max);
    if let Some(s) = sink {
        sum += f64::from((s - max).exp());
    }
    let inv = (1.0 / sum) as f32;
    p.iter_mut().for_each(|x| *x *= inv);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a-64 of the reference's ggml_table_gelu_f16, printed by
    /// ffi-tests/ref/gelu_table_hash.c linked to the reference's libggml-cpu.
    #[test]
    fn gelu_table_equals_the_reference_table() {
        let mut h: u64 = 1469598103934665603;
        for &v in gelu_table() {
            h = (h ^ u64::from(v)).wrapping_mul(1099511628211);
        }
        assert_eq!(h, 0xc6c1c64ffaa1863d);
    }

    #[test]
    fn geglu_simd_equals_the_scalar_definition() {
        // around and beyond ±10, tiny (f16 subnormal) values, infinities, NaN
        let mut g: Vec<f32> = (0..4000).map(|i| (i as f32 - 2000.0) / 150.0).collect();
        g.extend([
            1e-6,
            -1e-6,
            3e-8,
            0.0,
            -0.0,
            9.999,
            10.0,
            -10.0,
            -9.999,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ]);
        g.extend([0.5; 5]); // a tail past the last group of 8
        let u: Vec<f32> = (0..g.len()).map(|i| 1.0 + (i % 7) as f32 / 3.0).collect();
        let (mut a, mut b) = (g.clone(), g.clone());
        geglu(&mut a, &u);
        geglu_scalar(&mut b, &u, gelu_table());
        for i in 0..g.len() {
            assert_eq!(a[i].to_bits(), b[i].to_bits(), "geglu({})", g[i]);
        }
    }

    #[test]
    fn rms_norm_gives_unit_rms() {
        let mut x = vec![3.0f32, 4.0, 0.0, 0.0];
        rms_norm_mul(&mut x, 4, &[1.0; 4], 0.0);
        let rms = (x.iter().map(|v| v * v).sum::<f32>() / 4.0).sqrt();
        assert!((rms - 1.0).abs() < 1e-6);
    }

    fn plain() -> RopeArgs {
        RopeArgs { freq_base: 10000.0, freq_scale: 1.0, ext_factor: 0.0, attn_factor: 1.0, corr_dims: [0.0, 0.0] }
    }

    #[test]
    fn yarn_blends_the_first_pairs_toward_the_unscaled_angles() {
        // pairs below the correction range keep the unscaled angle, those
        // above it the scaled one
        let a =
            RopeArgs { freq_base: 10000.0, freq_scale: 0.25, ext_factor: 1.0, attn_factor: 1.0, corr_dims: [1.0, 2.0] };
        let lin = RopeArgs { ext_factor: 0.0, ..a };
        let unscaled = RopeArgs { freq_scale: 1.0, ext_factor: 0.0, ..a };
        let m = 0.1f32.mul_add(4f32.ln(), 1.0);
        let (y, l, u) =
            (rope_angles(9, 8, &a, None), rope_angles(9, 8, &lin, None), rope_angles(9, 8, &unscaled, None));
        assert_eq!(y[0], (u[0].0 * m, u[0].1 * m));
        assert_eq!(y[3], (l[3].0 * m, l[3].1 * m));
    }

    #[test]
    fn rope_at_zero_is_identity_and_preserves_norm() {
        let v0 = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut v = v0.clone();
        rope(&mut v, 0, 4, &plain(), None, false);
        assert_eq!(v, v0);
        for neox in [false, true] {
            let mut v = v0.clone();
            rope(&mut v, 7, 4, &plain(), None, neox);
            let n0: f32 = v0[..4].iter().map(|x| x * x).sum();
            let n1: f32 = v[..4].iter().map(|x| x * x).sum();
            assert!((n0 - n1).abs() < 1e-4);
            assert_eq!(&v[4..], &v0[4..], "elements past n_rot are untouched");
        }
    }
}
