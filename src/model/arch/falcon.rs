//! `falcon`: Falcon 7B and 40B. Parallel blocks (attention and FFN on one
//! LayerNorm of x; 40B gives the attention its own, `attn_norm_2`), q, k
//! and v in one matrix, a GELU FFN without gate, no biases but the norms',
//! NEOX rope.

use super::{Block, Family, Ffn, Need, Norm, Parallel, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "falcon",
    rope: Rope::Neox,
    block: Block {
        norm: Norm::Layer,
        norm_bias: Need::Required,
        attn_norm_2: true,
        parallel: Parallel::AttnFfn,
        qkv_bias: Need::Absent,
        ffn: Ffn::Gelu,
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
        32 => "7B",
        60 => "40B",
        _ => "?B",
    }
}
