//! `granite`: IBM Granite 3 (dense). As llama with multipliers: the input
//! rows, each sublayer's output before its residual add, the logits
//! (divided), and the attention's scale; optional biases of the output
//! projection and the FFN; a switch that turns rope off. With experts, the
//! mixture of experts of granitemoe.

use super::{Block, Family, Moe, Need, Rope, SharedExpert};
use crate::error::{Error, Result};
use crate::gguf::Value;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "granite",
    rope: Rope::Norm,
    block: Block {
        proj_bias: Need::Optional,
        moe: Some(Moe { norm_weights: true, shared: SharedExpert::Plain, ..Block::MOE }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

/// The keys granite and granitemoe share: the multipliers, the shared
/// expert's size, and the experts' checks when the file has experts
/// (without, dense FFNs).
pub(super) fn read_granite_keys(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.f_logit_scale = keys
        .f32("%s.logit_scale")?
        .ok_or_else(|| Error::model(format!("key not found in model: {}", keys.full("%s.logit_scale"))))?;
    hp.f_residual_scale = keys.f32("%s.residual_scale")?.unwrap_or(0.0);
    hp.f_embedding_scale = keys.f32("%s.embedding_scale")?.unwrap_or(0.0);
    hp.f_attention_scale = keys.f32("%s.attention.scale")?.unwrap_or(0.0);
    hp.n_ff_shexp_key = keys.u32("%s.expert_shared_feed_forward_length")?.unwrap_or(0);
    hp.n_ff_shexp = hp.n_ff_shexp_key;
    if hp.n_expert > 0 {
        super::require_experts(hp, keys, false)?;
    }
    super::require_full_rope(hp, keys)
}

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    read_granite_keys(hp, keys)?;
    // (granite reads rope_finetuned as a switch for rope, true by default)
    hp.rope_finetuned = keys.bool("%s.rope.scaling.finetuned")?.unwrap_or(true);
    hp.use_rope = hp.rope_finetuned;
    // (Granite Vision's deepstack inputs: an entry >= 0 names one; the
    // reference's saver writes the array of -1s of a model without them)
    let key = keys.full("%s.deepstack_mapping");
    if let Some(v) = keys.file.get(&key) {
        let none = match &v {
            Value::Array(a) => keys.file.array_i32(a).is_some_and(|m| m.iter().all(|&x| x < 0)),
            _ => false,
        };
        if !none {
            return Err(Error::model(format!("not implemented yet: deepstack inputs ({key})")));
        }
    }
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match (hp.n_layer, hp.n_embd) {
        (32, _) => "3B",
        (40, 2048) => "2B",
        (40, 2560) => "3B",
        (40, 4096) => "8B",
        (64, _) => "30B",
        _ => "?B",
    }
}
