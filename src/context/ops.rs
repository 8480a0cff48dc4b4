//! The small operations between matmuls, with the reference's numerics
//! (ggml-cpu ops.cpp / vec.h): where ggml sums in double or rounds through
//! f16, so do these, because logits parity depends on it.


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

/// ggml_silu: x / (1 + e^-x).
#[inline]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// ggml's tanh-approximated GELU.
#[inline]
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    const GELU_COEF_A: f32 = 0.044715;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x * x)).tanh())
}

/// Rotary embedding of one head vector `v` ([head_dim]) at position `pos`,
/// over its first `n_rot` elements: NORM rotates adjacent pairs, NEOX pairs
/// i and i + n_rot/2. The angles follow ggml_rope_cache_init: theta starts at
/// `pos` and is multiplied by base^(-2/n_rot) per pair, all in f32.
pub fn rope(v: &mut [f32], pos: i32, n_rot: usize, freq_base: f32, freq_scale: f32, factors: Option<&[f32]>, neox: bool) {
    let theta_scale = freq_base.powf(-2.0 / n_rot as f32);
    let mut theta = pos as f32;
    let half = n_rot / 2;
    for i in 0..half {
        let ff = factors.map_or(1.0, |f| f[i]);
        let t = freq_scale * (theta / ff);
        let (sin, cos) = (t.sin(), t.cos());
        let (a, b) = if neox { (i, i + half) } else { (2 * i, 2 * i + 1) };
        let (x0, x1) = (v[a], v[b]);
        // As the reference's build computes them (GCC contracts the first
        // product of each line into a fused multiply-add).
        v[a] = x0.mul_add(cos, -(x1 * sin));
        v[b] = x0.mul_add(sin, x1 * cos);
        theta *= theta_scale;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rms_norm_gives_unit_rms() {
        let mut x = vec![3.0f32, 4.0, 0.0, 0.0];
        rms_norm_mul(&mut x, 4, &[1.0; 4], 0.0);
        let rms = (x.iter().map(|v| v * v).sum::<f32>() / 4.0).sqrt();
        assert!((rms - 1.0).abs() < 1e-6);
    }

    #[test]
    fn rope_at_zero_is_identity_and_preserves_norm() {
        let v0 = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut v = v0.clone();
        rope(&mut v, 0, 4, 10000.0, 1.0, None, false);
        assert_eq!(v, v0);
        for neox in [false, true] {
            let mut v = v0.clone();
            rope(&mut v, 7, 4, 10000.0, 1.0, None, neox);
            let n0: f32 = v0[..4].iter().map(|x| x * x).sum();
            let n1: f32 = v[..4].iter().map(|x| x * x).sum();
            assert!((n0 - n1).abs() < 1e-4);
            assert_eq!(&v[4..], &v0[4..], "elements past n_rot are untouched");
        }
    }
}
