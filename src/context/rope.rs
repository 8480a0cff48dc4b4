//! Rotary position parameters: the model's (`HParams`) with the caller's
//! context overrides (llama_context_params' rope_* and yarn_* fields),
//! resolved as the reference's llama_context constructor does, and the
//! per-layer arguments of its `ggml_rope_ext` calls: frequency base and
//! scale, YaRN's extrapolation mix and magnitude, LongRoPE's factors.

use crate::error::{Error, Result};
use crate::model::hparams::{HParams, RopeScaling};

/// The caller's rope fields of llama_context_params (0 / negative: the
/// model's, as llama_context_default_params sets them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeRequest {
    /// llama_rope_scaling_type; -1 (UNSPECIFIED) is the model's.
    pub scaling_type: i32,
    pub freq_base: f32,
    pub freq_scale: f32,
    pub ext_factor: f32,
    pub attn_factor: f32,
    pub beta_fast: f32,
    pub beta_slow: f32,
    pub orig_ctx: u32,
}

impl Default for RopeRequest {
    fn default() -> Self {
        RopeRequest {
            scaling_type: -1,
            freq_base: 0.0,
            freq_scale: 0.0,
            ext_factor: -1.0,
            attn_factor: -1.0,
            beta_fast: -1.0,
            beta_slow: -1.0,
            orig_ctx: 0,
        }
    }
}

/// The resolved parameters of the non-sliding layers (the reference's
/// cparams): the sliding ones take the model's own base and scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeCfg {
    pub freq_base: f32,
    pub freq_scale: f32,
    /// YaRN's extrapolation mix (0: plain rope).
    pub ext_factor: f32,
    /// The magnitude every sin and cos is multiplied by.
    pub attn_factor: f32,
    pub beta_fast: f32,
    pub beta_slow: f32,
    pub n_ctx_orig: u32,
    /// LongRoPE: the long factors (the context per sequence is past the
    /// model's original one), else the short ones.
    pub long_factors: bool,
}

/// One layer's arguments of ggml_rope_ext.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeArgs {
    pub freq_base: f32,
    pub freq_scale: f32,
    pub ext_factor: f32,
    pub attn_factor: f32,
    /// YaRN's correction range of dimension pairs (ggml_rope_yarn_corr_dims).
    pub corr_dims: [f32; 2],
}

impl RopeCfg {
    /// `n_ctx_seq`: the context's cells per sequence (LongRoPE picks its
    /// factors by it).
    pub fn resolve(r: &RopeRequest, hp: &HParams, n_ctx_seq: u32) -> Result<RopeCfg> {
        let pick = |asked: f32, model: f32| if asked >= 0.0 { asked } else { model };
        let scaling = match r.scaling_type {
            -1 => hp.rope_scaling,
            t => RopeScaling::from_i32(t)
                .ok_or_else(|| Error::invalid(format!("rope_scaling_type {t} is not a llama_rope_scaling_type")))?,
        };
        let mut freq_scale = if r.freq_scale == 0.0 { hp.rope_freq_scale_train } else { r.freq_scale };
        if scaling == RopeScaling::None {
            freq_scale = 1.0; // never scale if scaling type is none
        }
        let mut ext_factor = pick(r.ext_factor, hp.yarn_ext_factor);
        if ext_factor < 0.0 {
            ext_factor = if scaling == RopeScaling::Yarn { 1.0 } else { 0.0 };
        }
        let mut attn_factor = pick(r.attn_factor, hp.yarn_attn_factor);
        if ext_factor != 0.0 {
            // YaRN's magnitude, and the inverse of the one ggml's rope
            // applies on top (llama_context's constructor, in f32 as there)
            let mscale = |scale: f32, m: f32| if scale <= 1.0 { 1.0 } else { 0.1 * m * scale.ln() + 1.0 };
            let factor = 1.0 / freq_scale;
            attn_factor = if hp.rope_yarn_log_mul != 0.0 {
                mscale(factor, 1.0) / mscale(factor, hp.rope_yarn_log_mul)
            } else {
                mscale(factor, 1.0)
            };
            attn_factor *= 1.0 / (1.0 + 0.1 * factor.ln());
        }
        attn_factor *= hp.rope_attn_factor;
        let n_ctx_orig = match (r.orig_ctx, hp.n_ctx_orig_yarn) {
            (0, 0) => hp.n_ctx_train,
            (0, m) => m,
            (asked, _) => asked,
        };
        Ok(RopeCfg {
            freq_base: if r.freq_base == 0.0 { hp.rope_freq_base_train } else { r.freq_base },
            freq_scale,
            ext_factor,
            attn_factor,
            beta_fast: pick(r.beta_fast, hp.yarn_beta_fast),
            beta_slow: pick(r.beta_slow, hp.yarn_beta_slow),
            n_ctx_orig,
            long_factors: n_ctx_seq > hp.n_ctx_orig_yarn,
        })
    }

    /// The arguments of layer `il` (sliding layers: the model's sliding
    /// base and scale; olmo2's: no YaRN there).
    pub fn layer(&self, hp: &HParams, il: usize) -> RopeArgs {
        let swa = hp.is_swa(il);
        let (freq_base, freq_scale) = if swa {
            (hp.rope_freq_base_train_swa, hp.rope_freq_scale_train_swa)
        } else {
            (self.freq_base, self.freq_scale)
        };
        let (ext_factor, attn_factor) =
            if swa && hp.swa_plain_rope { (0.0, 1.0) } else { (self.ext_factor, self.attn_factor) };
        RopeArgs {
            freq_base,
            freq_scale,
            ext_factor,
            attn_factor,
            corr_dims: corr_dims(hp.n_rot as i32, self.n_ctx_orig as i32, freq_base, self.beta_fast, self.beta_slow),
        }
    }
}

/// ggml_rope_yarn_corr_dims (ggml.c, built without FMA): the first and
/// last dimension pair YaRN blends.
fn corr_dims(n_dims: i32, n_ctx_orig: i32, freq_base: f32, beta_fast: f32, beta_slow: f32) -> [f32; 2] {
    let corr_dim = |n_rot: f32| {
        n_dims as f32 * (n_ctx_orig as f32 / (n_rot * 2.0 * std::f32::consts::PI)).ln() / (2.0 * freq_base.ln())
    };
    let start = corr_dim(beta_fast).floor();
    let end = corr_dim(beta_slow).ceil();
    [if 0.0 > start { 0.0 } else { start }, if ((n_dims - 1) as f32) < end { (n_dims - 1) as f32 } else { end }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp() -> HParams {
        HParams {
            n_ctx_train: 4096,
            n_rot: 64,
            rope_freq_base_train: 10000.0,
            rope_freq_scale_train: 0.25,
            rope_scaling: RopeScaling::Yarn,
            n_ctx_orig_yarn: 1024,
            rope_attn_factor: 1.0,
            yarn_ext_factor: -1.0,
            yarn_attn_factor: 1.0,
            yarn_beta_fast: 32.0,
            yarn_beta_slow: 1.0,
            ..HParams::default()
        }
    }

    #[test]
    fn yarn_resolves_as_the_reference_context_does() {
        let c = RopeCfg::resolve(&RopeRequest::default(), &hp(), 4096).unwrap();
        assert_eq!((c.freq_base, c.freq_scale, c.ext_factor, c.n_ctx_orig), (10000.0, 0.25, 1.0, 1024));
        // get_mscale(4, 1) / (1 + 0.1 ln 4): the two cancel
        let m = 0.1f32 * 1.0 * 4f32.ln() + 1.0;
        assert_eq!(c.attn_factor, m * (1.0 / (1.0 + 0.1 * 4f32.ln())));
        assert!(c.long_factors);
        // scaling type none: no frequency scale, no YaRN
        let none = RopeRequest { scaling_type: 0, ..RopeRequest::default() };
        let c = RopeCfg::resolve(&none, &hp(), 512).unwrap();
        assert_eq!((c.freq_scale, c.ext_factor, c.attn_factor, c.long_factors), (1.0, 0.0, 1.0, false));
        // the caller's base and scale win; an unknown type is an error
        let asked = RopeRequest { freq_base: 5e5, freq_scale: 0.5, scaling_type: 1, ..RopeRequest::default() };
        let c = RopeCfg::resolve(&asked, &hp(), 512).unwrap();
        assert_eq!((c.freq_base, c.freq_scale, c.ext_factor), (5e5, 0.5, 0.0));
        assert!(RopeCfg::resolve(&RopeRequest { scaling_type: 7, ..RopeRequest::default() }, &hp(), 512).is_err());
    }

    #[test]
    fn corr_dims_are_clamped_to_the_pairs() {
        let [lo, hi] = corr_dims(64, 1024, 10000.0, 32.0, 1.0);
        assert!(lo >= 0.0 && hi <= 63.0 && lo < hi, "{lo} {hi}");
        assert_eq!(lo, lo.floor());
    }
}
