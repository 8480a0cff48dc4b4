//! `olmoe`: OLMoE. Pre-norm blocks with RMS norms of the whole q and k
//! projections before NEOX rope, and a mixture of experts in every layer:
//! softmax router, weights not renormalised, no shared expert.

use super::{Block, Family, Moe, QkNorm, Rope, SharedExpert};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "olmoe",
    rope: Rope::Neox,
    block: Block {
        qk_norm: QkNorm::Whole,
        moe: Some(Moe { norm_weights: false, shared: SharedExpert::None, ..Block::MOE }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    super::require_full_rope(hp, keys)?;
    // (its k norm has n_embd weights: the reference's graph aborts on a
    // model whose k projection is narrower)
    super::require_kv_heads_equal_heads(hp, keys)?;
    super::require_experts(hp, keys, false)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        16 => "A1.7B",
        _ => "?B",
    }
}
