//! `gpt-oss`: OpenAI's gpt-oss (20B, 120B). Pre-norm blocks (the FFN's norm
//! is named `post_attention_norm`), q/k/v and output biases, attention
//! sinks, sliding windows on every other layer, NEOX rope (YaRN in the
//! released files), and a mixture of experts in every layer: router with a
//! bias, the k best experts by logit weighted by a softmax over those k,
//! experts with biases and the clamped SwiGLU. Its graph takes the output
//! rows after the last layer, not before its FFN.

use super::{Block, ExpertAct, Family, Gating, Moe, Need, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "gpt-oss",
    rope: Rope::Neox,
    block: Block {
        proj_bias: Need::Required,
        ffn_norm_tensor: "post_attention_norm",
        attn_sinks: true,
        all_rows_last_layer: true,
        moe: Some(Moe {
            norm_weights: false,
            gating: Gating::SoftmaxWeight,
            act: ExpertAct::SwiGluOai,
            biases: true,
            ..Block::MOE
        }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    super::require_full_rope(hp, keys)?;
    hp.n_ff_exp_key = keys.required_u32("%s.expert_feed_forward_length")?;
    hp.n_ff_exp = vec![hp.n_ff_exp_key; hp.n_layer as usize];
    super::require_experts(hp, keys, false)?;
    hp.n_swa = keys.required_u32("%s.attention.sliding_window")?;
    // every other layer slides (layer 0 first), with the global rope
    hp.slide(keys, 2)?;
    hp.rope_freq_base_train_swa = keys.f32("%s.rope.freq_base_swa")?.unwrap_or(hp.rope_freq_base_train);
    hp.rope_freq_scale_train_swa = hp.rope_freq_scale_train;
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        24 => "20B",
        36 => "120B",
        _ => "?B",
    }
}
