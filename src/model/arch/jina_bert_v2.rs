//! `jina-bert-v2`: Jina embeddings v2 and the Jina rerankers v1: the BERT
//! encoder (`bert.rs`) without positions of its own, ALiBi (max bias 8) in
//! the attention instead, required token types, optional LayerNorms of q
//! and k, an optional second norm after the attention's, and a GELU or
//! GEGLU FFN as the file's tensors say (`arch::Encoder::ffn_from_file`);
//! a one-score classifier head (`cls` [n_embd, 1]) for RANK pooling.

use super::{Block, ClsHead, Encoder, Family, Ffn, Need, Norm, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "jina-bert-v2",
    // (no rope: ALiBi; the reference reports LLAMA_ROPE_TYPE_NONE)
    rope: Rope::None,
    block: Block {
        pre_norms: false,
        norm: Norm::Layer,
        norm_bias: Need::Required,
        qkv_bias: Need::Optional,
        proj_bias: Need::Required,
        ffn: Ffn::Gelu,
        tied_output: true,
        attn_norm_2: true,
        encoder: Some(Encoder {
            cls_head: ClsHead::Score,
            token_types: Need::Required,
            qk_norm: true,
            ffn_from_file: true,
            alibi_max_bias: 8.0,
            ..Encoder::BERT
        }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.f_norm_eps = keys.required_f32("%s.attention.layer_norm_epsilon")?;
    super::require_equal_heads(hp, keys)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        4 => "33M",
        12 => "137M",
        _ => "?B",
    }
}
