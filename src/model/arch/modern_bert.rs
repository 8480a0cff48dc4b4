//! `modern-bert`: ModernBERT (and its derivatives: gte-modernbert, IBM
//! Granite Embedding R2): a pre-norm encoder with LayerNorms without bias
//! (the input rows' too), rope of NEOX pairs, one `attn_qkv`, a GEGLU of
//! one `ffn_up` of both halves (SwiGLU or ReGLU where
//! `%s.hidden_activation` says silu or reglu), no biases, sliding windows seen both ways in two layers of every
//! three (the first global), and a classifier head of its own
//! (`arch::ClsHead::Modern`, after mean pooling unless the file says).

use super::{Block, ClsHead, Encoder, Family, Ffn, GateUp, Need, Norm, Rope};
use crate::error::{Error, Result};
use crate::gguf::Value;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "modern-bert",
    rope: Rope::Neox,
    block: Block {
        norm: Norm::Layer,
        norm_bias: Need::Absent,
        qkv_bias: Need::Absent,
        ffn: Ffn::GeGlu,
        gate_up: GateUp::Fused,
        tied_output: true,
        encoder: Some(Encoder {
            cls_head: ClsHead::Modern,
            tok_norm: Need::Required,
            swa_symmetric: true,
            first_attn_norm_optional: true,
            ..Encoder::PRE_NORM
        }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.n_swa = keys.u32("%s.attention.sliding_window")?.unwrap_or(0);
    if hp.n_swa > 0 {
        if let Some(base) = keys.f32("%s.rope.freq_base_swa")? {
            hp.rope_freq_base_train_swa = base;
        }
        // the pattern: an array of per-layer flags, else a period n (3):
        // layers il % n != 0 slide (the reference's dense-first pattern)
        let key = keys.full("%s.attention.sliding_window_pattern");
        if matches!(keys.file.get(&key), Some(Value::Array(_))) {
            hp.slide(keys, 3)?;
        } else {
            let n = keys.u32("%s.attention.sliding_window_pattern")?.unwrap_or(3);
            hp.swa_layers = (0..hp.n_layer).map(|il| u32::from(n == 0 || il % n != 0)).collect();
            hp.swa = true;
        }
    }
    hp.f_norm_eps = keys.required_f32("%s.attention.layer_norm_epsilon")?;
    // (GEGLU unless the file says otherwise, as the reference's table)
    hp.ffn_act = match keys.string("%s.hidden_activation")?.as_deref() {
        Some(b"silu" | b"swish" | b"swiglu") => Some(Ffn::SwiGlu),
        Some(b"reglu") => Some(Ffn::ReGlu),
        Some(b"relu") => {
            // (the reference's graph applies an ungated ReLU to the fused
            // up of 2 n_ff rows, whose product with ffn_down then asserts)
            return Err(Error::model(format!(
                "{} = relu: an ungated activation does not fit the fused ffn_up of 2 n_ff rows",
                keys.full("%s.hidden_activation")
            )));
        }
        _ => None,
    };
    // (mean pooling before the classifier head unless the file says)
    if hp.pooling_type_cls == -1 {
        hp.pooling_type_cls = 1;
    }
    // (its attn_qkv is [n_embd, 3 n_embd] in the reference: no grouped heads)
    super::require_kv_heads_equal_heads(hp, keys)?;
    super::require_equal_heads(hp, keys)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        12 => "47M",
        22 => "149M",
        28 => "395M",
        _ => "?B",
    }
}
