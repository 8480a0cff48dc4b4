//! `bert`: BERT encoders (all-MiniLM, bge, e5, ...): learned positions and
//! token types, post-norm blocks with LayerNorms and biases, a GELU FFN,
//! bidirectional attention; embeddings pooled by the context, and a
//! classifier head (`cls`, `cls.output`) for RANK pooling.

use super::{Block, Encoder, Family, Ffn, Need, Norm, Rope};
use crate::error::{Error, Result};
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "bert",
    // (the reference reports NEOX for bert; its graph rotates nothing)
    rope: Rope::Neox,
    block: Block {
        pre_norms: false,
        norm: Norm::Layer,
        norm_bias: Need::Required,
        qkv_bias: Need::Optional,
        proj_bias: Need::Optional,
        ffn: Ffn::Gelu,
        pos_embd: true,
        tied_output: true,
        encoder: Some(Encoder::BERT),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

pub(super) fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.f_norm_eps = keys.required_f32("%s.attention.layer_norm_epsilon")?;
    super::require_equal_heads(hp, keys)?;
    if hp.n_token_types == 0 {
        // (the reference's message, thrown when it creates the tensors)
        return Err(Error::model(format!("{} model needs to define token type count", keys.arch)));
    }
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match (hp.n_layer, hp.n_embd) {
        (3, _) => "17M",
        (6, _) => "22M",
        (12, 384) => "33M",
        (12, 768) => "109M",
        (24, _) => "335M",
        _ => "?B",
    }
}
