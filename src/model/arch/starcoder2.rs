//! `starcoder2`: StarCoder 2 (and Granite Code 20B/34B). LayerNorms with
//! biases, biases on the output projection and the FFN, a GELU FFN without
//! gate, NEOX rope.

use super::{Block, Family, Ffn, Need, Norm, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "starcoder2",
    rope: Rope::Neox,
    block: Block {
        norm: Norm::Layer,
        norm_bias: Need::Required,
        ffn: Ffn::Gelu,
        proj_bias: Need::Required,
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    super::read_layer_norm_eps(hp, keys)?;
    super::require_full_rope(hp, keys)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        30 => "3B",
        32 => "7B",
        40 => "15B",
        52 => "20B",
        88 => "34B",
        _ => "?B",
    }
}
