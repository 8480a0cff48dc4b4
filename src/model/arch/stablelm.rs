//! `stablelm`: StableLM 2 (1.6B) and StableLM 3B. LayerNorms with biases,
//! SwiGLU, rope over part of each head (NEOX).
//! Not yet: StableLM 2 12B's per-head q/k LayerNorms and its FFN reading
//! the attention's normed input (files without `ffn_norm`).

use super::{Block, Family, Need, Norm, Rope};
use crate::error::{Error, Result};
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "stablelm",
    rope: Rope::Neox,
    block: Block { norm: Norm::Layer, norm_bias: Need::Required, ..Block::PLAIN },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    super::read_layer_norm_eps(hp, keys)?;
    if keys.file.find_tensor("blk.0.attn_q_norm.weight").is_some()
        || keys.file.find_tensor("blk.0.ffn_norm.weight").is_none()
    {
        return Err(Error::model(
            "not implemented yet: StableLM 2 12B blocks (per-head q/k LayerNorms, the FFN on the attention's input)",
        ));
    }
    if hp.n_embd_head_k != hp.n_embd_head_v {
        return Err(Error::model(format!(
            "{}: the key and value head sizes ({}, {}) must be equal",
            keys.full("%s"),
            hp.n_embd_head_k,
            hp.n_embd_head_v
        )));
    }
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        24 => "1B",
        32 => "3B",
        40 => "12B",
        _ => "?B",
    }
}
