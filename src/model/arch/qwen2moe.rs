//! `qwen2moe`: Qwen 1.5 / Qwen 2 mixture of experts (A2.7B, 57B-A14B).
//! Qwen 2's attention (q/k/v biases, NEOX rope) with a mixture of experts
//! in every layer: softmax router, weights not renormalised, and a shared
//! expert whose output is scaled by a sigmoid gate of its own.

use super::{Block, Family, Moe, Need, Rope, SharedExpert};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "qwen2moe",
    rope: Rope::Neox,
    block: Block {
        qkv_bias: Need::Required,
        moe: Some(Moe { norm_weights: false, shared: SharedExpert::SigmoidGated, ..Block::MOE }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    super::require_full_rope(hp, keys)?;
    super::require_experts(hp, keys, true)?;
    // (the shared expert's size defaults to n_ff)
    hp.n_ff_shexp_key = keys.u32("%s.expert_shared_feed_forward_length")?.unwrap_or(0);
    hp.n_ff_shexp = hp.n_ff_shexp_key;
    if hp.n_ff_shexp == 0 {
        hp.n_ff_shexp = hp.n_ff[0];
    }
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        24 => "A2.7B",
        28 => "57B.A14B",
        _ => "?B",
    }
}
