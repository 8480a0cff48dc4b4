//! `smollm3`: SmolLM3. As llama, with every fourth layer attending without
//! rope (NoPE: layers 3, 7, 11, ...).

use super::{Block, Family, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "smollm3",
    rope: Rope::Norm,
    block: Block { nope_layers: true, ..Block::PLAIN },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.n_no_rope_layer_step = 4;
    super::require_full_rope(hp, keys)?;
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        36 => "3B",
        _ => "?B",
    }
}
