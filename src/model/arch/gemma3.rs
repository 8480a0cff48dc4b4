//! `gemma3`: Gemma 3 (text). Sliding-window attention on 5 of every 6
//! layers (their own rope base), q/k norms, post-norms after both
//! sublayers, GeGLU, token embeddings scaled by sqrt(n_embd), q scaled
//! before attention, NEOX rope, optional final logit softcapping.

use super::{AttnScale, Block, EmbdScale, Family, Ffn, Need, QkNorm, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

/// Gemma 3's blocks (gemma-embedding's too).
pub(super) const BLOCK: Block = Block {
    qk_norm: QkNorm::PerHead,
    // (the reference's create_tensor_qkv takes q/k/v biases for every
    // family; a model from user tensors has them)
    qkv_bias: Need::Optional,
    post_norms: true,
    ffn: Ffn::GeGlu,
    attn_scale: AttnScale::IntoQ,
    embd_scale: EmbdScale::Tokens,
    logit_softcap: true,
    ..Block::PLAIN
};

pub static FAMILY: Family = Family { name: "gemma3", rope: Rope::Neox, block: BLOCK, read_hparams, size_name };

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.n_swa = keys.u32("%s.attention.sliding_window")?.unwrap_or(0);
    if hp.n_swa > 0 {
        hp.slide(keys, 6)?;
        if let Some(base) = keys.f32("%s.rope.freq_base_swa")? {
            hp.rope_freq_base_train_swa = base;
        }
    }
    hp.f_final_logit_softcapping = keys.f32("%s.final_logit_softcapping")?.unwrap_or(0.0);
    // The 27B model (62 layers) scales by n_embd / n_head (an integer
    // division), the others by the head size (the reference, after
    // gemma_pytorch's config).
    let d = if size_name(hp) == "27B" { hp.n_embd / hp.n_head[0].max(1) } else { hp.n_embd_head_k };
    hp.f_attention_scale = 1.0 / (d as f32).sqrt();
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        18 => "270M",
        26 => "1B",
        32 => "8B",
        34 => "4B",
        48 => "12B",
        62 => "27B",
        _ => "?B",
    }
}
