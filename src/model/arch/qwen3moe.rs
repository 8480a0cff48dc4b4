//! `qwen3moe`: Qwen 3 mixture of experts (30B-A3B, 235B-A22B). Qwen 3's
//! attention (RMS norms over each head of q and k, NEOX rope) with a
//! mixture of experts in every layer: softmax router, renormalised
//! weights, no shared expert.

use super::{Block, Family, QkNorm, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "qwen3moe",
    rope: Rope::Neox,
    block: Block { qk_norm: QkNorm::PerHead, moe: Some(Block::MOE), ..Block::PLAIN },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    super::require_full_rope(hp, keys)?;
    super::require_experts(hp, keys, true)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        48 => "30B.A3B",
        94 => "235B.A22B",
        _ => "?B",
    }
}
