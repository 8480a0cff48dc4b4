//! `gemma-embedding`: EmbeddingGemma: Gemma 3's blocks (`gemma3.rs`: q/k
//! norms, post-norms, GeGLU, tokens scaled by sqrt(n_embd), q scaled
//! before attention) as a pre-norm encoder attending both ways, its sliding
//! windows (5 layers of every 6) symmetric, and the sentence-transformers
//! dense modules (`dense_2`, `dense_3`) after the pooling where the file
//! has them.

use super::{Block, Encoder, Family, Rope};
use crate::error::{Error, Result};
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "gemma-embedding",
    rope: Rope::Neox,
    // (no logits: gemma3's softcapping never applies)
    block: Block {
        encoder: Some(Encoder { swa_symmetric: true, cvec: true, dense_out: true, ..Encoder::PRE_NORM }),
        ..super::gemma3::BLOCK
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.n_swa = keys.required_u32("%s.attention.sliding_window")?;
    hp.slide(keys, 6)?;
    if let Some(base) = keys.f32("%s.rope.freq_base_swa")? {
        hp.rope_freq_base_train_swa = base;
    }
    hp.f_norm_rms_eps = keys.required_f32("%s.attention.layer_norm_rms_epsilon")?;
    hp.causal_attn = false;
    // the dense modules' widths (the reference asserts the outer ones)
    let d2_in = keys.u32("%s.dense_2_feat_in")?.unwrap_or(0);
    hp.dense_2_feat_out = keys.u32("%s.dense_2_feat_out")?.unwrap_or(0);
    hp.dense_3_feat_in = keys.u32("%s.dense_3_feat_in")?.unwrap_or(0);
    let d3_out = keys.u32("%s.dense_3_feat_out")?.unwrap_or(0);
    if (d2_in != 0 && d2_in != hp.n_embd) || (d3_out != 0 && d3_out != hp.n_embd) {
        return Err(Error::model(format!(
            "{}: dense_2_feat_in ({d2_in}) and dense_3_feat_out ({d3_out}) must be equal to n_embd ({})",
            keys.arch, hp.n_embd
        )));
    }
    hp.f_attention_scale = 1.0 / (hp.n_embd_head_k as f32).sqrt();
    super::require_equal_heads(hp, keys)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        24 => "0.3B",
        _ => "?B",
    }
}
