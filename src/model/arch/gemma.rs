//! `gemma`: Gemma (1). GeGLU, every input row scaled by sqrt(n_embd), q
//! scaled by 1/sqrt(head size) after rope, NEOX rope, the output head tied
//! to the token embeddings.

use super::{AttnScale, Block, EmbdScale, Family, Ffn, Rope};
use crate::model::hparams::HParams;

pub static FAMILY: Family = Family {
    name: "gemma",
    rope: Rope::Neox,
    block: Block {
        ffn: Ffn::GeGlu,
        attn_scale: AttnScale::IntoQByHeadSize,
        embd_scale: EmbdScale::All,
        tied_output: true,
        ..Block::PLAIN
    },
    read_hparams: |_, _| Ok(()),
    size_name,
};

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        18 => "2B",
        28 => "7B",
        _ => "?B",
    }
}
