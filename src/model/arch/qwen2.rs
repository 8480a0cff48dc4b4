//! `qwen2`: Qwen 2 and 2.5. As llama with q/k/v biases (required: minfer's
//! choice, the reference's loader takes files without them), an optional
//! output bias, NEOX rope.

use super::{Block, Family, Need, Rope};
use crate::model::hparams::HParams;

pub static FAMILY: Family = Family {
    name: "qwen2",
    rope: Rope::Neox,
    block: Block { qkv_bias: Need::Required, output_bias: Need::Optional, ..Block::PLAIN },
    read_hparams: |_, _| Ok(()),
    size_name,
};

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        24 if hp.n_embd == 1024 => "0.5B",
        24 => "1B",
        28 if hp.n_embd == 1536 => "1.5B",
        28 | 32 => "7B",
        36 => "3B",
        40 if hp.n_head[0] == 20 => "4B",
        40 => "13B",
        48 => "14B",
        64 => "32B",
        80 => "70B",
        _ => "?B",
    }
}
