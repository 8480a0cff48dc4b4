//! The tensors of a model built from the caller's metadata
//! (`llama_model_init_from_user`): the reference creates every tensor its
//! architecture's loader asks for, optional ones included (with no file,
//! `create_tensor` makes a `TENSOR_NOT_REQUIRED` tensor too, and skips the
//! fused ones marked `TENSOR_SKIP_IF_VIRTUAL`), as F32 unless the caller's
//! metadata lists the tensor with another type; then it asks the caller for
//! each tensor's data. This lists those tensors, in the reference's order,
//! for the families where that list is written out here.

use super::hparams::{HParams, Keys, RopeScaling};
use super::metadata::Overrides;
use crate::error::{Error, Result};
use crate::gguf::GgufFile;
use crate::vocab::Vocab;

/// One tensor the reference creates.
#[derive(Debug, Clone, PartialEq)]
pub struct UserTensor {
    pub name: String,
    /// ggml's ne, innermost first
    pub ne: Vec<u64>,
}

/// The tensors of the model that `meta` (the caller's key/value pairs)
/// describes, in the reference's creation order. A name may repeat: the
/// reference creates layer 0's rope factors again for each later layer
/// (`TENSOR_DUPLICATED`), and asks for their data each time.
pub fn tensor_list(meta: &GgufFile, overrides: &Overrides) -> Result<Vec<UserTensor>> {
    let arch = meta.get_str("general.architecture").ok_or_else(|| Error::model("no general.architecture"))?;
    let family = super::arch::find(arch)
        .ok_or_else(|| Error::model(format!("model architecture '{arch}' is not supported by minfer")))?;
    let vocab = Vocab::load(meta, overrides)?;
    let n_vocab = u32::try_from(vocab.n_tokens()).unwrap_or(u32::MAX);
    let keys = Keys { file: meta, arch, overrides };
    let mut hp = HParams::read(&keys, n_vocab)?;
    (family.read_hparams)(&mut hp, &keys)?;
    hp.check_runnable(arch)?;
    let mut list = match arch {
        // (granite's and mistral3's dense loaders list llama's tensors)
        "llama" | "granite" | "mistral3" if hp.n_expert == 0 => llama(&hp),
        "qwen2" => qwen2(&hp),
        "qwen3" => qwen3(&hp),
        "gemma3" => gemma3(&hp),
        "smollm3" => smollm3(&hp),
        "olmo2" => olmo2(&hp),
        "gemma2" => gemma(&hp, true),
        "gemma" => gemma(&hp, false),
        "cohere2" => cohere2(&hp),
        "exaone4" => exaone4(&hp),
        "starcoder2" => starcoder2(&hp),
        _ => {
            let what = format!("llama_model_init_from_user for architecture '{arch}'");
            crate::log_warn!("not implemented yet: {what}");
            return Err(Error::model(format!(
                "not implemented yet: {what} (llama, granite and mistral3 without experts, qwen2, qwen3, gemma, gemma2, gemma3, smollm3, olmo2, cohere2, exaone4 and starcoder2 are)"
            )));
        }
    };
    // the generic pass (llama_model::load_tensors): each projection's
    // `.scale`, then its `.input_scale`, one value each, for the
    // projections the family has (starcoder2 has no gate)
    let names: std::collections::HashSet<String> = list.iter().map(|t| t.name.clone()).collect();
    for il in 0..hp.n_layer as usize {
        for kind in ["scale", "input_scale"] {
            for m in ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_down", "ffn_up"] {
                if names.contains(&format!("blk.{il}.{m}.weight")) {
                    list.push(UserTensor { name: format!("blk.{il}.{m}.{kind}"), ne: vec![1] });
                }
            }
        }
    }
    Ok(list)
}

/// A list builder: `t(name, ne)`.
fn push(out: &mut Vec<UserTensor>, name: String, ne: &[u32]) {
    out.push(UserTensor { name, ne: ne.iter().map(|&n| u64::from(n)).collect() });
}

/// The tensors every family's loader here creates first: the token
/// embeddings, the final norm, the output head (optional, so created).
fn top(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    push(&mut out, "token_embd.weight".into(), &[hp.n_embd, hp.n_vocab]);
    push(&mut out, "output_norm.weight".into(), &[hp.n_embd]);
    push(&mut out, "output.weight".into(), &[hp.n_embd, hp.n_vocab]);
    out
}

/// The attention's q, k, v and their biases as `create_tensor_qkv` makes
/// them without a file (the fused attn_qkv is skipped).
fn qkv(out: &mut Vec<UserTensor>, hp: &HParams, il: usize) -> u32 {
    let n_q = hp.n_embd_head_k * hp.n_head[il];
    let (n_k, n_v) = (hp.n_embd_head_k * hp.n_head_kv[il], hp.n_embd_head_v * hp.n_head_kv[il]);
    let b = |s: &str| format!("blk.{il}.{s}");
    push(out, b("attn_q.weight"), &[hp.n_embd, n_q]);
    push(out, b("attn_k.weight"), &[hp.n_embd, n_k]);
    push(out, b("attn_v.weight"), &[hp.n_embd, n_v]);
    push(out, b("attn_q.bias"), &[n_q]);
    push(out, b("attn_k.bias"), &[n_k]);
    push(out, b("attn_v.bias"), &[n_v]);
    n_q
}

/// `llama_model_qwen2::load_arch_tensors` without a file.
fn qwen2(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    push(&mut out, "output.bias".into(), &[hp.n_vocab]);
    plain_layers(&mut out, hp, true);
    out
}

/// The layers of qwen2's and smollm3's loaders: norm, q/k/v, output (qwen2
/// sizes its input `n_embd`, `wo_embd`; smollm3 the heads' width), FFN
/// norm, then gate, down, up.
fn plain_layers(out: &mut Vec<UserTensor>, hp: &HParams, wo_embd: bool) {
    let n_embd = hp.n_embd;
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        push(out, b("attn_norm.weight"), &[n_embd]);
        let n_q = qkv(out, hp, il);
        push(out, b("attn_output.weight"), &[if wo_embd { n_embd } else { n_q }, n_embd]);
        push(out, b("ffn_norm.weight"), &[n_embd]);
        push(out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(out, b("ffn_up.weight"), &[n_embd, n_ff]);
    }
}

/// `llama_model_qwen3::load_arch_tensors` without a file (its rerankers'
/// `cls.output` included, as the optional tensors are).
fn qwen3(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let n_embd = hp.n_embd;
    push(&mut out, "cls.output.weight".into(), &[n_embd, hp.n_cls_out]);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        let n_q = qkv(&mut out, hp, il);
        push(&mut out, b("attn_output.weight"), &[n_q, n_embd]);
        push(&mut out, b("attn_k_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("attn_q_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
    }
    out
}

/// `llama_model_gemma3::load_arch_tensors` without a file (not its Dense
/// projections, which the reference makes only when the metadata sizes
/// them, for EmbeddingGemma, which minfer does not run yet).
fn gemma3(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let n_embd = hp.n_embd;
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        let n_q = qkv(&mut out, hp, il);
        push(&mut out, b("attn_output.weight"), &[n_q, n_embd]);
        push(&mut out, b("post_attention_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_k_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("attn_q_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("post_ffw_norm.weight"), &[n_embd]);
    }
    out
}

/// `llama_model_llama::load_arch_tensors` without a file.
fn llama(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let (n_embd, n_rot) = (hp.n_embd, hp.n_rot);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        let n_q = qkv(&mut out, hp, il);
        push(&mut out, b("attn_output.weight"), &[n_q, n_embd]);
        push(&mut out, b("attn_output.bias"), &[n_embd]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        // (one name for every layer: layer 0's, then duplicates)
        if hp.rope_scaling == RopeScaling::LongRope {
            push(&mut out, "rope_factors_long.weight".into(), &[n_rot / 2]);
            push(&mut out, "rope_factors_short.weight".into(), &[n_rot / 2]);
        } else {
            push(&mut out, "rope_freqs.weight".into(), &[n_rot / 2]);
        }
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_gate.bias"), &[n_ff]);
        push(&mut out, b("ffn_down.bias"), &[n_embd]);
        push(&mut out, b("ffn_up.bias"), &[n_ff]);
    }
    out
}

/// `llama_model_smollm3::load_arch_tensors` without a file (its optional
/// output head created, so not duplicated from the embeddings).
fn smollm3(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    plain_layers(&mut out, hp, false);
    out
}

/// `llama_model_olmo2::load_arch_tensors` without a file (its q/k/v sized
/// by `n_embd` and `n_embd_gqa`, the k norm over every KV head).
fn olmo2(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let n_embd = hp.n_embd;
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        let n_kv = hp.n_embd_head_k * hp.n_head_kv[il];
        qkv(&mut out, hp, il);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("attn_q_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_k_norm.weight"), &[n_kv]);
        push(&mut out, b("post_attention_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("post_ffw_norm.weight"), &[n_embd]);
    }
    out
}

/// `llama_model_gemma::load_arch_tensors` and gemma2's without a file:
/// gemma2's has the post norms.
fn gemma(hp: &HParams, post_norms: bool) -> Vec<UserTensor> {
    let mut out = tied_top(hp);
    let n_embd = hp.n_embd;
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        let n_q = qkv(&mut out, hp, il);
        push(&mut out, b("attn_output.weight"), &[n_q, n_embd]);
        if post_norms {
            push(&mut out, b("post_attention_norm.weight"), &[n_embd]);
        }
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        if post_norms {
            push(&mut out, b("post_ffw_norm.weight"), &[n_embd]);
        }
    }
    out
}

/// The top tensors of the families whose head is the embeddings again
/// (`TENSOR_DUPLICATED`: the callback is asked for them twice).
fn tied_top(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    push(&mut out, "token_embd.weight".into(), &[hp.n_embd, hp.n_vocab]);
    push(&mut out, "output_norm.weight".into(), &[hp.n_embd]);
    push(&mut out, "token_embd.weight".into(), &[hp.n_embd, hp.n_vocab]);
    out
}

/// `llama_model_cohere2::load_arch_tensors` without a file: the embeddings
/// again as the head, no FFN norm (its FFN runs beside the attention).
fn cohere2(hp: &HParams) -> Vec<UserTensor> {
    let mut out = tied_top(hp);
    let n_embd = hp.n_embd;
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        qkv(&mut out, hp, il);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
    }
    out
}

/// `llama_model_exaone4::load_arch_tensors` without a file (no next-token
/// layers: minfer refuses them at load).
fn exaone4(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let (n_embd, n_rot) = (hp.n_embd, hp.n_rot);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        qkv(&mut out, hp, il);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, "rope_freqs.weight".into(), &[n_rot / 2]);
        push(&mut out, b("post_attention_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_q_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("attn_k_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("post_ffw_norm.weight"), &[n_embd]);
    }
    out
}

/// `llama_model_starcoder2::load_arch_tensors` without a file: LayerNorms
/// with biases, an ungated FFN with biases.
fn starcoder2(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    let n_embd = hp.n_embd;
    push(&mut out, "token_embd.weight".into(), &[n_embd, hp.n_vocab]);
    push(&mut out, "output_norm.weight".into(), &[n_embd]);
    push(&mut out, "output_norm.bias".into(), &[n_embd]);
    push(&mut out, "output.weight".into(), &[n_embd, hp.n_vocab]);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_norm.bias"), &[n_embd]);
        qkv(&mut out, hp, il);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("attn_output.bias"), &[n_embd]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_norm.bias"), &[n_embd]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_down.bias"), &[n_embd]);
        push(&mut out, b("ffn_up.bias"), &[n_ff]);
    }
    out
}
