//! `nomic-bert`: Nomic Embed (nomic-embed-text v1/v1.5): the BERT encoder
//! (`bert.rs`) with rotary positions (NEOX) instead of learned ones and a
//! SwiGLU FFN without biases (its `ffn_up.bias`/`ffn_down.bias`, when a file
//! has them, are loaded and unused, as the reference's graph passes none).

use super::{Block, ClsHead, Encoder, Family, Ffn, Need, Norm, Rope};
use crate::model::hparams::HParams;

pub static FAMILY: Family = Family {
    name: "nomic-bert",
    rope: Rope::Neox,
    block: Block {
        pre_norms: false,
        norm: Norm::Layer,
        norm_bias: Need::Required,
        qkv_bias: Need::Optional,
        proj_bias: Need::Optional,
        ffn: Ffn::SwiGlu,
        tied_output: true,
        encoder: Some(Encoder { rope: true, ffn_bias_unused: true, cls_head: ClsHead::None, ..Encoder::BERT }),
        ..Block::PLAIN
    },
    read_hparams: super::bert::read_hparams,
    size_name,
};

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        12 => "137M",
        _ => "?B",
    }
}
