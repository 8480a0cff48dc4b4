//! `cohere2`: Command R7B (Cohere 2). Parallel blocks on one LayerNorm of
//! x without bias (x = (ffn + x) + attn), SwiGLU, sliding windows on 3 of
//! every 4 layers with rope there only (the global layers attend without
//! it), logits multiplied by `logit_scale`, the output head tied to the
//! token embeddings, NORM rope.

use super::{Block, Family, LogitScale, Norm, Parallel, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "cohere2",
    rope: Rope::Norm,
    block: Block {
        norm: Norm::Layer,
        parallel: Parallel::FfnResidualAttn,
        logit_scale: LogitScale::Multiply,
        tied_output: true,
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.slide(keys, 4)?;
    hp.nope_global = true;
    hp.rope_freq_base_train_swa = keys.f32("%s.rope.freq_base_swa")?.unwrap_or(hp.rope_freq_base_train);
    hp.rope_freq_scale_train_swa = hp.rope_freq_scale_train;
    hp.n_swa = keys.required_u32("%s.attention.sliding_window")?;
    hp.f_logit_scale = keys.required_f32("%s.logit_scale")?;
    super::read_layer_norm_eps(hp, keys)?;
    super::require_equal_heads(hp, keys)?;
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        32 => "8B",
        _ => "?B",
    }
}
