//! `llama`: Llama 1-3, SmolLM2, Mistral 7B and most fine-tunes of them.
//! RMS norms, SwiGLU, NORM rope (llama3 rope factors from `rope_freqs`),
//! optional biases of every projection. With experts (Mixtral's layout),
//! a mixture of experts in every layer: softmax router, renormalised
//! weights.

use super::{Block, Family, Need, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "llama",
    rope: Rope::Norm,
    block: Block { proj_bias: Need::Optional, moe: Some(Block::MOE), ..Block::PLAIN },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    if hp.n_expert > 0 {
        super::require_experts(hp, keys, false)?;
    }
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    if hp.n_expert == 8 {
        return match hp.n_layer {
            32 => "8x7B",
            56 => "8x22B",
            _ => "?B",
        };
    }
    match hp.n_layer {
        16 | 22 => "1B",
        26 | 28 => "3B",
        30 => "256M",
        32 if hp.n_vocab == 49152 => "3B",
        32 if hp.n_vocab < 40000 => "7B",
        32 | 36 => "8B",
        40 => "13B",
        48 => "34B",
        60 => "30B",
        80 if hp.n_head[0] == hp.n_head_kv[0] => "65B",
        80 => "70B",
        _ => "?B",
    }
}
