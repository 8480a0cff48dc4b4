//! `qwen3`: Qwen 3 (dense). As llama with RMS norms over each head of q and
//! k before rope, NEOX rope; the rerankers' `cls.output` head for RANK
//! pooling (its scores through a softmax).

use super::{Block, Family, QkNorm, Rope};
use crate::model::hparams::HParams;

pub static FAMILY: Family = Family {
    name: "qwen3",
    rope: Rope::Neox,
    // (Qwen3-Reranker: a RANK head, `cls.output`)
    block: Block { qk_norm: QkNorm::PerHead, rank_head: true, ..Block::PLAIN },
    read_hparams: |_, _| Ok(()),
    size_name,
};

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        28 if hp.n_embd == 1024 => "0.6B",
        28 => "1.7B",
        36 if hp.n_embd == 2560 => "4B",
        36 => "8B",
        40 => "14B",
        64 => "32B",
        _ => "?B",
    }
}
