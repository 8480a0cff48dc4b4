//! `phi3`: Phi-3, Phi-3.5 and Phi-4 (dense), LongRoPE included. As llama
//! with q, k and v in one matrix (as its files have them), the FFN's gate and
//! up in one matrix, q scaled by 1/sqrt(head size) before attention, an
//! optional output bias, NEOX rope.
//! Sliding windows in the file are ignored, as the reference does (its
//! Phi SWA is disabled).

use super::{AttnScale, Block, Family, GateUp, Need, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "phi3",
    rope: Rope::Neox,
    block: Block {
        gate_up: GateUp::Fused,
        attn_scale: AttnScale::IntoQByHeadSize,
        output_bias: Need::Optional,
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    super::require_equal_heads(hp, keys)?;
    super::refuse_experts(keys)?;
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        24 => "1B",
        32 => "3B",
        40 => "14B",
        _ => "?B",
    }
}
