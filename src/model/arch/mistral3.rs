//! `mistral3`: Ministral 3 and Mistral Small 3.x (text). As llama (optional
//! biases, NORM rope, YaRN as the file says, and with experts llama's
//! mixture: softmax router, renormalised weights) with Llama 4's attention
//! temperature: q times log(floor(pos / n_ctx_orig) + 1) · scale + 1 when
//! `attention.temperature_scale` is set.

use super::{Block, Family, Need, Rope};
use crate::error::{Error, Result};
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "mistral3",
    rope: Rope::Norm,
    block: Block { proj_bias: Need::Optional, moe: Some(Block::MOE), ..Block::PLAIN },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.f_attn_temp_scale = keys.f32("%s.attention.temperature_scale")?.unwrap_or(0.0);
    if let Some(v) = keys.f32("%s.rope.scaling.yarn_beta_fast")? {
        hp.yarn_beta_fast = v;
    }
    if let Some(v) = keys.f32("%s.rope.scaling.yarn_beta_slow")? {
        hp.yarn_beta_slow = v;
    }
    if let Some(v) = keys.f32("%s.rope.scaling.yarn_log_multiplier")? {
        hp.rope_yarn_log_mul = v;
    }
    if hp.f_attn_temp_scale != 0.0 {
        hp.n_attn_temp_floor_scale = hp.n_ctx_orig_yarn;
        if hp.n_attn_temp_floor_scale == 0 {
            return Err(Error::model("invalid n_ctx_orig_yarn for attention temperature scaling"));
        }
    }
    if hp.n_expert > 0 {
        super::require_experts(hp, keys, false)?;
    }
    super::require_full_rope(hp, keys)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        26 => "3B",
        34 => "8B",
        40 => "14B",
        _ => "?B",
    }
}
