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

/// The architectures `tensor_list` covers, for the refusal of the others.
const IMPLEMENTED: &str = "llama, granite, granitemoe and mistral3 (with or without experts), \
qwen2, qwen3, gemma, gemma2, gemma3, smollm3, olmo2, cohere2, exaone4, starcoder2, phi3, phi2, stablelm, gpt2, \
falcon, qwen2moe, qwen3moe, olmoe, gpt-oss, dots1, bert, nomic-bert, jina-bert-v2, neo-bert, modern-bert and \
gemma-embedding";

/// The projections of the generic pass's `.scale` tensors, in its order
/// (whether the tensor has one value per expert).
const SCALED: &[(&str, bool)] = &[
    ("attn_q", false),
    ("attn_k", false),
    ("attn_v", false),
    ("attn_output", false),
    ("attn_qkv", false),
    ("ffn_gate", false),
    ("ffn_down", false),
    ("ffn_up", false),
    ("ffn_gate_shexp", false),
    ("ffn_down_shexp", false),
    ("ffn_up_shexp", false),
    ("ffn_gate_exps", true),
    ("ffn_down_exps", true),
    ("ffn_up_exps", true),
];

/// The projections of its `.input_scale` tensors, in its order.
const INPUT_SCALED: &[(&str, bool)] = &[
    ("attn_q", false),
    ("attn_k", false),
    ("attn_v", false),
    ("attn_output", false),
    ("attn_qkv", false),
    ("ffn_gate", false),
    ("ffn_down", false),
    ("ffn_up", false),
    ("ffn_gate_exps", true),
    ("ffn_down_exps", true),
    ("ffn_up_exps", true),
    ("ffn_gate_shexp", false),
    ("ffn_down_shexp", false),
    ("ffn_up_shexp", false),
];

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
        // (granite's, granitemoe's and mistral3's loaders list llama's
        // tensors)
        "llama" | "granite" | "granitemoe" | "mistral3" => llama(&hp),
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
        "phi3" => phi3(&hp),
        "phi2" => phi2(&hp),
        "stablelm" => stablelm(&hp),
        "gpt2" => gpt2(&hp),
        "falcon" => falcon(&hp),
        "qwen2moe" => qwen2moe(&hp),
        "qwen3moe" => qwen3moe(&hp),
        "olmoe" => olmoe(&hp),
        "gpt-oss" => gpt_oss(&hp),
        "dots1" => dots1(&hp),
        "bert" => bert(&hp),
        "nomic-bert" => nomic_bert(&hp),
        "jina-bert-v2" => jina_bert_v2(&hp),
        "neo-bert" => neo_bert(&hp),
        "modern-bert" => modern_bert(&hp),
        "gemma-embedding" => gemma_embedding(&hp),
        _ => {
            let what = format!("llama_model_init_from_user for architecture '{arch}'");
            crate::log_warn!("not implemented yet: {what}");
            return Err(Error::model(format!("not implemented yet: {what} ({IMPLEMENTED} are)")));
        }
    };
    // the generic pass (llama_model::load_tensors): per layer, each
    // projection's `.scale` for the projections the layer has (one value,
    // the experts' one per expert), then their `.input_scale` (the experts'
    // before the shared expert's there)
    let names: std::collections::HashSet<String> = list.iter().map(|t| t.name.clone()).collect();
    let n_expert = hp.n_expert;
    for il in 0..hp.n_layer as usize {
        for (kind, order) in [("scale", SCALED), ("input_scale", INPUT_SCALED)] {
            for &(m, per_expert) in order {
                if names.contains(&format!("blk.{il}.{m}.weight")) {
                    let n = if per_expert { n_expert } else { 1 };
                    list.push(UserTensor { name: format!("blk.{il}.{m}.{kind}"), ne: vec![u64::from(n)] });
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
/// them without a file (the fused attn_qkv is skipped), q sized
/// `n_embd_head_k * n_head`, k and v by the layer's KV heads.
fn qkv(out: &mut Vec<UserTensor>, hp: &HParams, il: usize) -> u32 {
    let n_q = hp.n_embd_head_k * hp.n_head[il];
    let (n_k, n_v) = (hp.n_embd_head_k * hp.n_head_kv[il], hp.n_embd_head_v * hp.n_head_kv[il]);
    qkv_sized(out, hp.n_embd, il, [n_q, n_k, n_v]);
    n_q
}

/// `create_tensor_qkv` of the widths a loader gives it: q, k, v, then their
/// biases.
fn qkv_sized(out: &mut Vec<UserTensor>, n_embd: u32, il: usize, [n_q, n_k, n_v]: [u32; 3]) {
    let b = |s: &str| format!("blk.{il}.{s}");
    push(out, b("attn_q.weight"), &[n_embd, n_q]);
    push(out, b("attn_k.weight"), &[n_embd, n_k]);
    push(out, b("attn_v.weight"), &[n_embd, n_v]);
    push(out, b("attn_q.bias"), &[n_q]);
    push(out, b("attn_k.bias"), &[n_k]);
    push(out, b("attn_v.bias"), &[n_v]);
}

/// The width of the keys and values of layer `il`'s KV heads that most
/// loaders size k and v by (`n_embd_gqa`: the values' head size).
fn n_embd_gqa(hp: &HParams, il: usize) -> u32 {
    hp.n_embd_head_v * hp.n_head_kv[il]
}

/// The experts of layer `il` as the loaders create them: the router, then
/// gate, down and up, each [.., .., n_expert].
fn experts(out: &mut Vec<UserTensor>, hp: &HParams, il: usize) {
    let b = |s: &str| format!("blk.{il}.{s}");
    let (n_embd, n_ff_exp, n_expert) = (hp.n_embd, hp.n_ff_exp[il], hp.n_expert);
    push(out, b("ffn_gate_inp.weight"), &[n_embd, n_expert]);
    push(out, b("ffn_gate_exps.weight"), &[n_embd, n_ff_exp, n_expert]);
    push(out, b("ffn_down_exps.weight"), &[n_ff_exp, n_embd, n_expert]);
    push(out, b("ffn_up_exps.weight"), &[n_embd, n_ff_exp, n_expert]);
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

/// `llama_model_llama::load_arch_tensors` without a file (granite's,
/// granitemoe's and mistral3's are the same), its experts' FFNs when the
/// metadata has experts.
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
        if hp.n_expert == 0 {
            push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
            push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
            push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
            push(&mut out, b("ffn_gate.bias"), &[n_ff]);
            push(&mut out, b("ffn_down.bias"), &[n_embd]);
            push(&mut out, b("ffn_up.bias"), &[n_ff]);
        } else {
            experts(&mut out, hp, il);
            // (granite's shared expert: gate, up, down)
            let n_shexp = hp.n_ff_shexp;
            if n_shexp > 0 {
                push(&mut out, b("ffn_gate_shexp.weight"), &[n_embd, n_shexp]);
                push(&mut out, b("ffn_up_shexp.weight"), &[n_embd, n_shexp]);
                push(&mut out, b("ffn_down_shexp.weight"), &[n_shexp, n_embd]);
            }
        }
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

/// `llama_model_phi3::load_arch_tensors` without a file: the output head
/// (optional, so created), q, k, v with biases, the FFN's gate and up in
/// one `ffn_up`, LongRoPE's factors whatever the rope scaling.
fn phi3(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let (n_embd, n_rot) = (hp.n_embd, hp.n_rot);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        let n_gqa = n_embd_gqa(hp, il);
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        qkv_sized(&mut out, n_embd, il, [n_embd, n_gqa, n_gqa]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, 2 * n_ff]);
        push(&mut out, "rope_factors_long.weight".into(), &[n_rot / 2]);
        push(&mut out, "rope_factors_short.weight".into(), &[n_rot / 2]);
    }
    out
}

/// `llama_model_phi2::load_arch_tensors` without a file: LayerNorms with
/// biases, an output bias, an ungated FFN with biases.
fn phi2(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    let n_embd = hp.n_embd;
    push(&mut out, "token_embd.weight".into(), &[n_embd, hp.n_vocab]);
    push(&mut out, "output_norm.weight".into(), &[n_embd]);
    push(&mut out, "output_norm.bias".into(), &[n_embd]);
    push(&mut out, "output.weight".into(), &[n_embd, hp.n_vocab]);
    push(&mut out, "output.bias".into(), &[hp.n_vocab]);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        let n_gqa = n_embd_gqa(hp, il);
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_norm.bias"), &[n_embd]);
        qkv_sized(&mut out, n_embd, il, [n_embd, n_gqa, n_gqa]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("attn_output.bias"), &[n_embd]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_down.bias"), &[n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_up.bias"), &[n_ff]);
    }
    out
}

/// `llama_model_stablelm::load_arch_tensors` without a file: the final
/// norm's bias first, StableLM 2 12B's per-head q/k norms and the FFN norm
/// (optional, so created).
fn stablelm(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    let n_embd = hp.n_embd;
    push(&mut out, "token_embd.weight".into(), &[n_embd, hp.n_vocab]);
    push(&mut out, "output_norm.bias".into(), &[n_embd]);
    push(&mut out, "output_norm.weight".into(), &[n_embd]);
    push(&mut out, "output.weight".into(), &[n_embd, hp.n_vocab]);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        let n_gqa = n_embd_gqa(hp, il);
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_norm.bias"), &[n_embd]);
        qkv_sized(&mut out, n_embd, il, [n_embd, n_gqa, n_gqa]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("attn_q_norm.weight"), &[hp.n_embd_head_k, hp.n_head[il]]);
        push(&mut out, b("attn_k_norm.weight"), &[hp.n_embd_head_k, hp.n_head_kv[il]]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_norm.bias"), &[n_embd]);
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
    }
    out
}

/// `llama_model_gpt2::load_arch_tensors` without a file: learned positions,
/// q, k, v in one `attn_qkv` with its bias, LayerNorms and an ungated FFN
/// with biases.
fn gpt2(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    let n_embd = hp.n_embd;
    push(&mut out, "token_embd.weight".into(), &[n_embd, hp.n_vocab]);
    push(&mut out, "position_embd.weight".into(), &[n_embd, hp.n_ctx_train]);
    push(&mut out, "output_norm.weight".into(), &[n_embd]);
    push(&mut out, "output_norm.bias".into(), &[n_embd]);
    push(&mut out, "output.weight".into(), &[n_embd, hp.n_vocab]);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        let n_qkv = n_embd + 2 * n_embd_gqa(hp, il);
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_norm.bias"), &[n_embd]);
        push(&mut out, b("attn_qkv.weight"), &[n_embd, n_qkv]);
        push(&mut out, b("attn_qkv.bias"), &[n_qkv]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("attn_output.bias"), &[n_embd]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_norm.bias"), &[n_embd]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_down.bias"), &[n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_up.bias"), &[n_ff]);
    }
    out
}

/// `llama_model_falcon::load_arch_tensors` without a file: falcon 40B's
/// `attn_norm_2` (optional, so created: the attention then has its own
/// input norm), q, k, v in one `attn_qkv`, an ungated FFN.
fn falcon(hp: &HParams) -> Vec<UserTensor> {
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
        push(&mut out, b("attn_norm_2.weight"), &[n_embd]);
        push(&mut out, b("attn_norm_2.bias"), &[n_embd]);
        push(&mut out, b("attn_qkv.weight"), &[n_embd, n_embd + 2 * n_embd_gqa(hp, il)]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
    }
    out
}

/// `llama_model_qwen2moe::load_arch_tensors` without a file: the experts,
/// then the shared expert's gate input and FFN (gate, down, up).
fn qwen2moe(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let n_embd = hp.n_embd;
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_gqa = n_embd_gqa(hp, il);
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        qkv_sized(&mut out, n_embd, il, [n_embd, n_gqa, n_gqa]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        experts(&mut out, hp, il);
        let n_shexp = hp.n_ff_shexp;
        push(&mut out, b("ffn_gate_inp_shexp.weight"), &[n_embd]);
        push(&mut out, b("ffn_gate_shexp.weight"), &[n_embd, n_shexp]);
        push(&mut out, b("ffn_down_shexp.weight"), &[n_shexp, n_embd]);
        push(&mut out, b("ffn_up_shexp.weight"), &[n_embd, n_shexp]);
    }
    out
}

/// `llama_model_qwen3moe::load_arch_tensors` without a file: qwen3's
/// attention (k norm before q norm), the experts.
fn qwen3moe(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let n_embd = hp.n_embd;
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_q = hp.n_embd_head_k * hp.n_head[il];
        let n_gqa = n_embd_gqa(hp, il);
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        qkv_sized(&mut out, n_embd, il, [n_q, n_gqa, n_gqa]);
        push(&mut out, b("attn_output.weight"), &[n_q, n_embd]);
        push(&mut out, b("attn_k_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("attn_q_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        experts(&mut out, hp, il);
    }
    out
}

/// `llama_model_olmoe::load_arch_tensors` without a file: q and k normed
/// whole (`n_embd` wide both), the experts.
fn olmoe(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let n_embd = hp.n_embd;
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_gqa = n_embd_gqa(hp, il);
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        qkv_sized(&mut out, n_embd, il, [n_embd, n_gqa, n_gqa]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("attn_q_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_k_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        experts(&mut out, hp, il);
    }
    out
}

/// `llama_model_openai_moe::load_arch_tensors` without a file: the FFN's
/// norm (`post_attention_norm`) after the attention's, heads sized by
/// `n_rot`, the sinks, the experts, then the output's, the router's and the
/// experts' biases.
fn gpt_oss(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let (n_embd, n_rot, n_expert) = (hp.n_embd, hp.n_rot, hp.n_expert);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let (n_q, n_kv) = (hp.n_head[il] * n_rot, hp.n_head_kv[il] * n_rot);
        let n_ff_exp = hp.n_ff_exp[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        push(&mut out, b("post_attention_norm.weight"), &[n_embd]);
        qkv_sized(&mut out, n_embd, il, [n_q, n_kv, n_kv]);
        push(&mut out, b("attn_output.weight"), &[n_q, n_embd]);
        push(&mut out, b("attn_sinks.weight"), &[hp.n_head[il]]);
        experts(&mut out, hp, il);
        push(&mut out, b("attn_output.bias"), &[n_embd]);
        push(&mut out, b("ffn_gate_inp.bias"), &[n_expert]);
        push(&mut out, b("ffn_gate_exps.bias"), &[n_ff_exp, n_expert]);
        push(&mut out, b("ffn_down_exps.bias"), &[n_embd, n_expert]);
        push(&mut out, b("ffn_up_exps.bias"), &[n_ff_exp, n_expert]);
    }
    out
}

/// `llama_model_dots1::load_arch_tensors` without a file: qwen3's
/// attention with every head's k and v, the leading dense layers' FFN,
/// then the other layers' router, selection bias (optional, so created),
/// experts and shared experts (gate, down, up).
fn dots1(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let n_embd = hp.n_embd;
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_q = hp.n_embd_head_k * hp.n_head[il];
        let n_ff = hp.n_ff[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        qkv_sized(&mut out, n_embd, il, [n_q, n_q, n_q]);
        push(&mut out, b("attn_output.weight"), &[n_q, n_embd]);
        push(&mut out, b("attn_k_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("attn_q_norm.weight"), &[hp.n_embd_head_k]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        if il < hp.n_layer_dense_lead as usize {
            push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
            push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
            push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        } else {
            let n_expert = hp.n_expert;
            let n_ff_exp = hp.n_ff_exp[il];
            let n_shexp = hp.n_ff_shexp;
            push(&mut out, b("ffn_gate_inp.weight"), &[n_embd, n_expert]);
            push(&mut out, b("exp_probs_b.bias"), &[n_expert]);
            push(&mut out, b("ffn_gate_exps.weight"), &[n_embd, n_ff_exp, n_expert]);
            push(&mut out, b("ffn_down_exps.weight"), &[n_ff_exp, n_embd, n_expert]);
            push(&mut out, b("ffn_up_exps.weight"), &[n_embd, n_ff_exp, n_expert]);
            push(&mut out, b("ffn_gate_shexp.weight"), &[n_embd, n_shexp]);
            push(&mut out, b("ffn_down_shexp.weight"), &[n_shexp, n_embd]);
            push(&mut out, b("ffn_up_shexp.weight"), &[n_embd, n_shexp]);
        }
    }
    out
}

/// An encoder's classifier head as bert's and neo-bert's loaders create
/// it (optional, so created): `cls` [n_embd, n_embd] and its bias, then
/// `cls.output` [n_embd, n_cls_out] and its bias.
fn cls_head(out: &mut Vec<UserTensor>, hp: &HParams) {
    let n_embd = hp.n_embd;
    push(out, "cls.weight".into(), &[n_embd, n_embd]);
    push(out, "cls.bias".into(), &[n_embd]);
    push(out, "cls.output.weight".into(), &[n_embd, hp.n_cls_out]);
    push(out, "cls.output.bias".into(), &[hp.n_cls_out]);
}

/// The token embeddings and their token types (bert's, nomic-bert's,
/// jina-bert-v2's loaders).
fn embd_and_types(out: &mut Vec<UserTensor>, hp: &HParams) {
    push(out, "token_embd.weight".into(), &[hp.n_embd, hp.n_vocab]);
    push(out, "token_types.weight".into(), &[hp.n_embd, hp.n_token_types]);
}

/// The input rows' LayerNorm and its bias.
fn tok_norm(out: &mut Vec<UserTensor>, hp: &HParams) {
    push(out, "token_embd_norm.weight".into(), &[hp.n_embd]);
    push(out, "token_embd_norm.bias".into(), &[hp.n_embd]);
}

/// `llama_model_bert::load_arch_tensors` without a file: learned positions,
/// the classifier head and every optional bias created.
fn bert(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    let n_embd = hp.n_embd;
    embd_and_types(&mut out, hp);
    push(&mut out, "position_embd.weight".into(), &[n_embd, hp.n_ctx_train]);
    cls_head(&mut out, hp);
    tok_norm(&mut out, hp);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        let n_gqa = n_embd_gqa(hp, il);
        qkv_sized(&mut out, n_embd, il, [n_embd, n_gqa, n_gqa]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("attn_output.bias"), &[n_embd]);
        push(&mut out, b("attn_output_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_output_norm.bias"), &[n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_up.bias"), &[n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_down.bias"), &[n_embd]);
        push(&mut out, b("layer_output_norm.weight"), &[n_embd]);
        push(&mut out, b("layer_output_norm.bias"), &[n_embd]);
    }
    out
}

/// `llama_model_nomic_bert::load_arch_tensors` without a file: bert's
/// blocks with a gate after the FFN's biases, no positions, no head.
fn nomic_bert(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    let n_embd = hp.n_embd;
    embd_and_types(&mut out, hp);
    tok_norm(&mut out, hp);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        let n_gqa = n_embd_gqa(hp, il);
        qkv_sized(&mut out, n_embd, il, [n_embd, n_gqa, n_gqa]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("attn_output.bias"), &[n_embd]);
        push(&mut out, b("attn_output_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_output_norm.bias"), &[n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_up.bias"), &[n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_down.bias"), &[n_embd]);
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("layer_output_norm.weight"), &[n_embd]);
        push(&mut out, b("layer_output_norm.bias"), &[n_embd]);
    }
    out
}

/// `llama_model_jina_bert_v2::load_arch_tensors` without a file: the
/// one-score head, the q/k LayerNorms, `attn_norm_2` and `ffn_gate`
/// (optional, so created: a GEGLU of gate and up), `ffn_up` of `n_ff` rows
/// (no file to size it by).
fn jina_bert_v2(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    let n_embd = hp.n_embd;
    embd_and_types(&mut out, hp);
    tok_norm(&mut out, hp);
    push(&mut out, "cls.weight".into(), &[n_embd, 1]);
    push(&mut out, "cls.bias".into(), &[1]);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        let n_gqa = n_embd_gqa(hp, il);
        qkv_sized(&mut out, n_embd, il, [n_embd, n_gqa, n_gqa]);
        push(&mut out, b("attn_q_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_q_norm.bias"), &[n_embd]);
        push(&mut out, b("attn_k_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_k_norm.bias"), &[n_embd]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("attn_output.bias"), &[n_embd]);
        push(&mut out, b("attn_output_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_output_norm.bias"), &[n_embd]);
        push(&mut out, b("attn_norm_2.weight"), &[n_embd]);
        push(&mut out, b("attn_norm_2.bias"), &[n_embd]);
        push(&mut out, b("ffn_gate.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, n_ff]);
        push(&mut out, b("ffn_up.bias"), &[n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_down.bias"), &[n_embd]);
        push(&mut out, b("layer_output_norm.weight"), &[n_embd]);
        push(&mut out, b("layer_output_norm.bias"), &[n_embd]);
    }
    out
}

/// `llama_model_neo_bert::load_arch_tensors` without a file: the head, the
/// final norm (`enc.output_norm`), pre-norm blocks with q, k, v in one
/// `attn_qkv` and the FFN's gate and up in one `ffn_up`.
fn neo_bert(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    let n_embd = hp.n_embd;
    push(&mut out, "token_embd.weight".into(), &[n_embd, hp.n_vocab]);
    cls_head(&mut out, hp);
    push(&mut out, "enc.output_norm.weight".into(), &[n_embd]);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_qkv.weight"), &[n_embd, n_embd + 2 * n_embd_gqa(hp, il)]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, 2 * n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
    }
    out
}

/// `llama_model_modern_bert::load_arch_tensors` without a file: layer 0's
/// `attn_norm` (optional, so created), q, k, v in one `attn_qkv`, the FFN's
/// gate and up in one `ffn_up`, then the head (`cls.output` first, then
/// `cls` and its norm).
fn modern_bert(hp: &HParams) -> Vec<UserTensor> {
    let mut out = Vec::new();
    let n_embd = hp.n_embd;
    push(&mut out, "token_embd.weight".into(), &[n_embd, hp.n_vocab]);
    push(&mut out, "token_embd_norm.weight".into(), &[n_embd]);
    push(&mut out, "output_norm.weight".into(), &[n_embd]);
    for il in 0..hp.n_layer as usize {
        let b = |s: &str| format!("blk.{il}.{s}");
        let n_ff = hp.n_ff[il];
        push(&mut out, b("attn_norm.weight"), &[n_embd]);
        push(&mut out, b("attn_qkv.weight"), &[n_embd, 3 * n_embd]);
        push(&mut out, b("attn_output.weight"), &[n_embd, n_embd]);
        push(&mut out, b("ffn_up.weight"), &[n_embd, 2 * n_ff]);
        push(&mut out, b("ffn_down.weight"), &[n_ff, n_embd]);
        push(&mut out, b("ffn_norm.weight"), &[n_embd]);
    }
    push(&mut out, "cls.output.weight".into(), &[n_embd, hp.n_cls_out]);
    push(&mut out, "cls.output.bias".into(), &[hp.n_cls_out]);
    push(&mut out, "cls.weight".into(), &[n_embd, n_embd]);
    push(&mut out, "cls.norm.weight".into(), &[n_embd]);
    out
}

/// `llama_model_gemma_embedding::load_arch_tensors` without a file: the
/// output head (optional, so created; not used), the dense modules only
/// where the metadata sizes them (a 0 dimension: not created), gemma3's
/// blocks.
fn gemma_embedding(hp: &HParams) -> Vec<UserTensor> {
    let mut out = top(hp);
    let n_embd = hp.n_embd;
    if hp.dense_2_feat_out > 0 {
        push(&mut out, "dense_2.weight".into(), &[n_embd, hp.dense_2_feat_out]);
    }
    if hp.dense_3_feat_in > 0 {
        push(&mut out, "dense_3.weight".into(), &[hp.dense_3_feat_in, n_embd]);
    }
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
