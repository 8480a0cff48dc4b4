//! `granitemoe`: IBM Granite 3 mixture of experts (1B-A400M, 3B-A800M).
//! Granite's multipliers and attention with a mixture of experts in every
//! layer: softmax router, renormalised weights, and a shared expert added
//! when `%s.expert_shared_feed_forward_length` is set (Granite MoE Shared).

use super::{Block, Family, Moe, Need, Rope, SharedExpert};
use crate::error::{Error, Result};
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "granitemoe",
    rope: Rope::Norm,
    block: Block {
        proj_bias: Need::Optional,
        moe: Some(Moe { norm_weights: true, shared: SharedExpert::Plain, ..Block::MOE }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.f_logit_scale = keys
        .f32("%s.logit_scale")?
        .ok_or_else(|| Error::model(format!("key not found in model: {}", keys.full("%s.logit_scale"))))?;
    hp.f_residual_scale = keys.f32("%s.residual_scale")?.unwrap_or(0.0);
    hp.f_embedding_scale = keys.f32("%s.embedding_scale")?.unwrap_or(0.0);
    hp.f_attention_scale = keys.f32("%s.attention.scale")?.unwrap_or(0.0);
    hp.n_ff_shexp_key = keys.u32("%s.expert_shared_feed_forward_length")?.unwrap_or(0);
    hp.n_ff_shexp = hp.n_ff_shexp_key;
    super::require_full_rope(hp, keys)?;
    // (without experts, dense FFNs as granite's)
    if hp.n_expert > 0 {
        super::require_experts(hp, keys, false)?;
    }
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        24 => "1B.A400M",
        32 => "3B.A800M",
        _ => "?B",
    }
}
