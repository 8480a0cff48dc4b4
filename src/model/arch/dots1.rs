//! `dots1`: rednote's dots.llm1 (142B-A14B). Qwen 3's attention (RMS norms
//! over each head of q and k, NEOX rope) and DeepSeek V3's mixture of
//! experts: the first `%s.leading_dense_block_count` layers dense, then a
//! router whose gating (sigmoid in the released model), renormalisation
//! and weight scale are the file's keys, an optional selection bias
//! (`exp_probs_b`), and `%s.expert_shared_count` shared experts of
//! `%s.expert_feed_forward_length` rows each, added as one FFN.

use super::{Block, Family, Moe, QkNorm, Rope, SharedExpert};
use crate::error::{Error, Result};
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "dots1",
    rope: Rope::Neox,
    block: Block {
        qk_norm: QkNorm::PerHead,
        moe: Some(Moe { shared: SharedExpert::Plain, selection_bias: true, from_keys: true, ..Block::MOE }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    super::require_full_rope(hp, keys)?;
    // (the reference sizes k and v for every head: its released model has
    // no grouped heads, and a file with them fails its shape checks)
    super::require_kv_heads_equal_heads(hp, keys)?;
    super::require_experts(hp, keys, true)?;
    // (required by the reference: it reads no fallback)
    if keys.u32_per_layer("%s.expert_feed_forward_length", hp.n_layer)?.is_none() {
        return Err(Error::model(format!("key not found in model: {}", keys.full("%s.expert_feed_forward_length"))));
    }
    hp.n_layer_dense_lead = keys.u32("%s.leading_dense_block_count")?.unwrap_or(0);
    hp.n_expert_shared = keys.required_u32("%s.expert_shared_count")?;
    if hp.n_expert_shared == 0 {
        // (the reference would look for shared-expert tensors with no rows)
        return Err(Error::model(format!("{} must be > 0 for dots1", keys.full("%s.expert_shared_count"))));
    }
    // (layer 0's expert size, as the reference's `n_ff_exp()`; the experts'
    // tensors are checked against each layer's)
    hp.n_ff_shexp = hp.n_ff_exp.first().copied().unwrap_or(0).saturating_mul(hp.n_expert_shared);
    hp.expert_weights_scale = keys.f32("%s.expert_weights_scale")?.unwrap_or(0.0);
    hp.expert_weights_norm = keys.bool("%s.expert_weights_norm")?.unwrap_or(false);
    hp.expert_gating_func = keys.u32("%s.expert_gating_func")?.unwrap_or(0);
    match hp.expert_gating_func {
        1..=4 => Ok(()),
        // (the reference aborts building the graph: no gating function)
        g => Err(Error::model(format!(
            "{} = {g}: not a gating function (1 softmax, 2 sigmoid, 3 softmax of the chosen, 4 sqrt of softplus)",
            keys.full("%s.expert_gating_func")
        ))),
    }
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        62 => "142B",
        _ => "?B",
    }
}
