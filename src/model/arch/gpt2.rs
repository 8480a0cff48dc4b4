//! `gpt2`: GPT-2. Learned position embeddings instead of rope, LayerNorms
//! with biases, q, k and v in one matrix with biases, biases on the output
//! projection and the FFN, a GELU FFN without gate.

use super::{Block, Family, Ffn, Need, Norm, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "gpt2",
    rope: Rope::None,
    block: Block {
        norm: Norm::Layer,
        norm_bias: Need::Required,
        qkv_bias: Need::Required,
        ffn: Ffn::Gelu,
        proj_bias: Need::Required,
        pos_embd: true,
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
        12 => "0.1B",
        24 => "0.4B",
        36 => "0.8B",
        48 => "1.5B",
        _ => "?B",
    }
}
