//! `granitemoe`: IBM Granite 3 mixture of experts (1B-A400M, 3B-A800M).
//! Granite's multipliers and attention with a mixture of experts in every
//! layer: softmax router, renormalised weights, and a shared expert added
//! when `%s.expert_shared_feed_forward_length` is set (Granite MoE Shared).

use super::{Block, Family, Moe, Need, Rope, SharedExpert};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "granitemoe",
    rope: Rope::Norm,
    block: Block {
        proj_bias: Need::Optional,
        moe: Some(Moe { norm_weights: true, shared: SharedExpert::Plain, ..Block::MOE }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    // (granite's keys; rope always on: granitemoe does not read the switch)
    super::granite::read_granite_keys(hp, keys)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        24 => "1B.A400M",
        32 => "3B.A800M",
        _ => "?B",
    }
}
