//! `phi2`: Phi-2 (and Phi-1.5). Parallel blocks (attention and FFN on one
//! LayerNorm of x), biases everywhere including the logits, a GELU FFN
//! without gate, q scaled by 1/sqrt(head size) before attention, rope over
//! part of each head (NEOX).

use super::{AttnScale, Block, Family, Ffn, Need, Norm, Parallel, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "phi2",
    rope: Rope::Neox,
    block: Block {
        norm: Norm::Layer,
        norm_bias: Need::Required,
        parallel: Parallel::AttnFfn,
        ffn: Ffn::Gelu,
        proj_bias: Need::Required,
        output_bias: Need::Required,
        attn_scale: AttnScale::IntoQByHeadSize,
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
        _ => "?B",
    }
}
