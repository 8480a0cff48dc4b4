//! `stablelm`: StableLM 2 and StableLM 3B. LayerNorms with biases, SwiGLU,
//! rope over part of each head (NEOX); StableLM 2 12B's LayerNorms of each
//! head of q and k (per-head weights) and FFN on the attention's normed
//! input (its layers have no `ffn_norm`).

use super::{Block, Family, Need, Norm, QkNorm, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "stablelm",
    rope: Rope::Neox,
    block: Block {
        norm: Norm::Layer,
        norm_bias: Need::Required,
        qk_norm: QkNorm::LayerPerHead,
        ffn_norm_optional: true,
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    super::read_layer_norm_eps(hp, keys)?;
    super::require_equal_heads(hp, keys)?;
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        24 => "1B",
        32 => "3B",
        40 => "12B",
        _ => "?B",
    }
}
