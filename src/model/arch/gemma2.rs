//! `gemma2`: Gemma 2. Sliding-window attention on every other layer,
//! softcapped attention scores and logits, post-norms after both sublayers,
//! GeGLU, every input row scaled by sqrt(n_embd), q scaled before
//! attention, NEOX rope, the output head tied to the token embeddings.

use super::{AttnScale, Block, EmbdScale, Family, Ffn, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "gemma2",
    rope: Rope::Neox,
    block: Block {
        post_norms: true,
        ffn: Ffn::GeGlu,
        attn_scale: AttnScale::IntoQ,
        attn_softcap: true,
        embd_scale: EmbdScale::All,
        tied_output: true,
        logit_softcap: true,
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    // every layer but each second one slides, over 4096 tokens unless the
    // file says otherwise; their rope is the global one unless it has its own
    hp.n_swa = 4096;
    hp.slide(keys, 2)?;
    hp.rope_freq_base_train_swa = keys.f32("%s.rope.freq_base_swa")?.unwrap_or(hp.rope_freq_base_train);
    hp.rope_freq_scale_train_swa = hp.rope_freq_scale_train;
    if let Some(n) = keys.u32("%s.attention.sliding_window")? {
        hp.n_swa = n;
    }
    if let Some(cap) = keys.f32("%s.attn_logit_softcapping")? {
        hp.f_attn_logit_softcapping = cap;
    }
    if let Some(cap) = keys.f32("%s.final_logit_softcapping")? {
        hp.f_final_logit_softcapping = cap;
    }
    // as gemma3: the 27B model (46 layers) scales by n_embd / n_head
    let d = if size_name(hp) == "27B" { hp.n_embd / hp.n_head[0].max(1) } else { hp.n_embd_head_k };
    hp.f_attention_scale = 1.0 / (d as f32).sqrt();
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        26 => "2B",
        42 => "9B",
        46 => "27B",
        _ => "?B",
    }
}
