//! `llama_model_save_to_file`: the reference's llama_model_saver writes a
//! model back from its loaded state — not a copy of the input file, but
//! every hyperparameter the reference keeps (about 140 keys, most of them
//! its defaults), the vocabulary as the tokenizer sees it, and the tensors
//! the architecture created, in the order of its model struct. This module
//! rebuilds that state for the families minfer runs (`model::arch`) so the
//! file is byte-identical to the reference's.

use super::hparams::Keys;
use super::Model;
use crate::error::{Error, Result};
use crate::gguf::{GgufWriter, OwnedArray, OwnedValue};
use std::path::Path;

/// LLAMA_MAX_LAYERS: the length of the reference's per-layer arrays that the
/// saver writes whole.
const MAX_LAYERS: usize = 512;

/// The hyperparameters the saver writes that depend on the file (the rest
/// are the reference's constant defaults, written inline below).
struct Saved {
    n_ctx_train: u32,
    n_embd: u32,
    n_embd_out: u32,
    n_layer_all: u32,
    n_layer_nextn: u32,
    n_ff: Vec<u32>,
    n_head: Vec<u32>,
    n_head_kv: Vec<u32>,
    n_expert: u32,
    n_expert_used: u32,
    n_expert_groups: u32,
    n_group_used: u32,
    causal: bool,
    /// llama_pooling_type; -1 (UNSPECIFIED) when the file has none.
    pooling: i32,
    head_k: u32,
    head_v: u32,
    head_k_swa: u32,
    head_v_swa: u32,
    n_rot: u32,
    n_rot_swa: u32,
    rms_eps: f32,
    norm_eps: f32,
    final_softcap: f32,
    attn_softcap: f32,
    logit_scale: f32,
    residual_scale: f32,
    embedding_scale: f32,
    /// rope_pattern's value for every layer (granite's rope switch).
    rope_layers: bool,
    n_swa: u32,
    /// Some(per-layer flags) when the model has sliding-window layers.
    swa_layers: Option<Vec<u32>>,
    attn_scale: f32,
    rope_base: f32,
    rope_base_swa: f32,
    rope_scaling: Vec<u8>,
    rope_scale: f32,
    rope_attn_factor: f32,
    n_ctx_orig: u32,
    rope_finetuned: bool,
    attn_temp_scale: f32,
    yarn_log_mul: f32,
    yarn_beta_fast: f32,
    yarn_beta_slow: f32,
    classifier_labels: Vec<Vec<u8>>,
    /// gemma-embedding's dense modules' widths (2 in, 2 out, 3 in, 3 out;
    /// 0 in other families, which do not read them)
    dense_feat: [u32; 4],
    name: Vec<u8>,
}

/// gemma-embedding's dense modules' width keys, in `Saved::dense_feat`'s order.
const DENSE_FEAT_KEYS: [&str; 4] = ["dense_2_feat_in", "dense_2_feat_out", "dense_3_feat_in", "dense_3_feat_out"];

/// The reference's `load_hparams` for the keys the saver writes.
fn read_hparams(m: &Model) -> Result<Saved> {
    let f = &m.files[0];
    let keys = Keys { file: f, arch: &m.arch_name, overrides: &m.overrides };
    let n_layer_all = keys.required_u32("%s.block_count")?;
    let n_layer_nextn = keys.u32("%s.nextn_predict_layers")?.unwrap_or(0);
    let per_layer = |k: &str| -> Result<Vec<u32>> {
        Ok(keys.u32_per_layer(k, n_layer_all)?.unwrap_or_else(|| vec![0; n_layer_all as usize]))
    };
    let n_head = per_layer("%s.attention.head_count")?;
    let n_head_kv = match keys.u32_per_layer("%s.attention.head_count_kv", n_layer_all)? {
        Some(v) => v,
        None => n_head.clone(),
    };
    let n_embd = keys.required_u32("%s.embedding_length")?;
    let n_ctx_train = keys.required_u32("%s.context_length")?;
    let (mut head_k, mut head_v, mut n_rot) = (0, 0, 0);
    if let Some(per_head) = n_embd.checked_div(n_head[0]) {
        head_k = keys.u32("%s.attention.key_length")?.unwrap_or(per_head);
        head_v = keys.u32("%s.attention.value_length")?.unwrap_or(per_head);
        n_rot = keys.u32("%s.rope.dimension_count")?.unwrap_or(head_k);
    }
    let rope_scale_key = match keys.f32("%s.rope.scaling.factor")? {
        Some(s) => s,
        None => keys.f32("%s.rope.scale_linear")?.unwrap_or(0.0),
    };
    let rope_scaling = keys.string("%s.rope.scaling.type")?.unwrap_or_else(|| b"linear".to_vec());
    if !["none", "linear", "yarn", "longrope"].iter().any(|n| n.as_bytes() == rope_scaling.as_slice()) {
        return Err(Error::model(format!("unknown rope scaling type '{}'", String::from_utf8_lossy(&rope_scaling))));
    }
    let classifier_labels = match f.get(&keys.full("%s.classifier.output_labels")) {
        Some(crate::gguf::Value::Array(a)) => f.array_strings(&a).map_or_else(Vec::new, |it| it.map(c_trunc).collect()),
        _ => Vec::new(),
    };
    let mut dense_feat = [0u32; 4];
    if m.arch_name == "gemma-embedding" {
        for (v, key) in dense_feat.iter_mut().zip(DENSE_FEAT_KEYS) {
            *v = keys.u32(&format!("%s.{key}"))?.unwrap_or(0);
        }
    }
    // the family's own facts (swa, softcapping, attention scale) as the
    // loader read them, in `HParams` (`Family::read_hparams`)
    let hp = &m.hparams;
    let s = Saved {
        n_ctx_train,
        n_embd,
        n_embd_out: keys.u32("%s.embedding_length_out")?.unwrap_or(0),
        n_layer_all,
        n_layer_nextn,
        n_ff: per_layer("%s.feed_forward_length")?,
        n_head,
        n_head_kv,
        n_expert: keys.u32("%s.expert_count")?.unwrap_or(0),
        n_expert_used: keys.u32_per_layer("%s.expert_used_count", n_layer_all)?.map_or(0, |v| v[0]),
        n_expert_groups: keys.u32("%s.expert_group_count")?.unwrap_or(0),
        n_group_used: keys.u32("%s.expert_group_used_count")?.unwrap_or(0),
        causal: keys.bool("%s.attention.causal")?.unwrap_or(true),
        pooling: keys.u32("%s.pooling_type")?.map_or(-1, |v| v as i32),
        head_k,
        head_v,
        head_k_swa: keys.u32("%s.attention.key_length_swa")?.unwrap_or(head_k),
        head_v_swa: keys.u32("%s.attention.value_length_swa")?.unwrap_or(head_v),
        n_rot,
        n_rot_swa: keys.u32("%s.rope.dimension_count_swa")?.unwrap_or(n_rot),
        rms_eps: hp.f_norm_rms_eps,
        norm_eps: hp.f_norm_eps,
        final_softcap: hp.f_final_logit_softcapping,
        attn_softcap: hp.f_attn_logit_softcapping,
        logit_scale: hp.f_logit_scale,
        residual_scale: hp.f_residual_scale,
        embedding_scale: hp.f_embedding_scale,
        rope_layers: hp.use_rope,
        n_swa: hp.n_swa,
        swa_layers: hp.swa.then(|| hp.swa_layers.clone()),
        attn_scale: hp.f_attention_scale,
        rope_base: keys.f32("%s.rope.freq_base")?.unwrap_or(10000.0),
        rope_base_swa: hp.rope_freq_base_train_swa,
        rope_scaling,
        rope_scale: {
            // stored as a frequency scale, written back as its inverse (0 for 1)
            let freq_scale = if rope_scale_key == 0.0 { 1.0 } else { 1.0 / rope_scale_key };
            if freq_scale == 1.0 {
                0.0
            } else {
                1.0 / freq_scale
            }
        },
        rope_attn_factor: keys.f32("%s.rope.scaling.attn_factor")?.unwrap_or(1.0),
        n_ctx_orig: keys.u32("%s.rope.scaling.original_context_length")?.unwrap_or(n_ctx_train),
        rope_finetuned: hp.rope_finetuned,
        attn_temp_scale: hp.f_attn_temp_scale,
        yarn_log_mul: hp.rope_yarn_log_mul,
        yarn_beta_fast: hp.yarn_beta_fast,
        yarn_beta_slow: hp.yarn_beta_slow,
        classifier_labels,
        dense_feat,
        name: keys.string("general.name")?.map_or_else(|| b"n/a".to_vec(), |v| c_trunc(&v)),
    };
    Ok(s)
}

/// A C string's bytes up to its first NUL (the saver copies through `c_str()`).
fn c_trunc(b: &[u8]) -> Vec<u8> {
    b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())].to_vec()
}

/// The reference's token type of a token attribute set (exact values only).
fn token_type(attr: u32) -> i32 {
    use crate::vocab::*;
    match attr {
        ATTR_UNKNOWN => 2,
        ATTR_UNUSED => 5,
        ATTR_NORMAL => 1,
        ATTR_CONTROL => 3,
        ATTR_USER_DEFINED => 4,
        ATTR_BYTE => 6,
        _ => 0,
    }
}

/// `llama_vocab::get_bpe_merges`: the merges by rank, the first of
/// duplicate pairs kept (a later duplicate leaves its rank empty).
fn bpe_merges(m: &Model) -> Vec<Vec<u8>> {
    let f = &m.files[0];
    let Some(crate::gguf::Value::Array(a)) = f.get("tokenizer.ggml.merges") else { return Vec::new() };
    if m.vocab.kind != crate::model::vocab_info::VocabType::Bpe {
        return Vec::new();
    }
    let Some(it) = f.array_strings(&a) else { return Vec::new() };
    let mut seen = std::collections::HashSet::new();
    let mut ranks: Vec<(usize, Vec<u8>)> = Vec::new();
    for (i, w) in it.enumerate() {
        let w = c_trunc(w);
        // split at the first space after the first byte; none: both sides empty
        let (first, second) = match w.iter().skip(1).position(|&c| c == b' ') {
            Some(p) => (w[..p + 1].to_vec(), w[p + 2..].to_vec()),
            None => (Vec::new(), Vec::new()),
        };
        if seen.insert((first.clone(), second.clone())) {
            ranks.push((i, [first, b" ".to_vec(), second].concat()));
        }
    }
    let mut out = vec![Vec::new(); ranks.last().map_or(0, |r| r.0 + 1)];
    for (i, s) in ranks {
        out[i] = s;
    }
    out
}

/// Position of a per-layer tensor in the reference's `llama_layer` struct.
fn layer_field_rank(suffix: &str) -> Option<u32> {
    Some(match suffix {
        "attn_norm.weight" => 1,
        "attn_norm.bias" => 2,
        "attn_norm_2.weight" => 3,
        "attn_norm_2.bias" => 4,
        "attn_q_norm.weight" => 5,
        "attn_q_norm.bias" => 6,
        "attn_k_norm.weight" => 7,
        "attn_k_norm.bias" => 8,
        "attn_output_norm.weight" => 9,
        "attn_output_norm.bias" => 10,
        "post_attention_norm.weight" => 14,
        "attn_q.weight" => 22,
        "attn_k.weight" => 23,
        "attn_v.weight" => 24,
        "attn_output.weight" => 25,
        "attn_qkv.weight" => 26,
        "attn_q.bias" => 29,
        "attn_k.bias" => 33,
        "attn_v.bias" => 34,
        "attn_qkv.bias" => 35,
        "attn_output.bias" => 37,
        "ffn_norm.weight" => 50,
        "ffn_norm.bias" => 51,
        "post_ffw_norm.weight" => 52,
        "layer_output_norm.weight" => 56,
        "layer_output_norm.bias" => 57,
        "ffn_gate.weight" => 60,
        "ffn_down.weight" => 61,
        "ffn_up.weight" => 62,
        "ffn_gate_inp.weight" => 66,
        "ffn_gate_exps.weight" => 68,
        "ffn_down_exps.weight" => 69,
        "ffn_up_exps.weight" => 70,
        "ffn_gate_up_exps.weight" => 71,
        "ffn_gate_inp.bias" => 72,
        "ffn_gate_exps.bias" => 73,
        "ffn_down_exps.bias" => 74,
        "ffn_up_exps.bias" => 75,
        "ffn_gate_up_exps.bias" => 76,
        "ffn_gate_inp_shexp.weight" => 82,
        "ffn_gate_shexp.weight" => 83,
        "ffn_down_shexp.weight" => 84,
        "ffn_up_shexp.weight" => 85,
        "ffn_gate_exps.scale" => 77,
        "ffn_down_exps.scale" => 78,
        "ffn_up_exps.scale" => 79,
        // (after the rope factors, 151..153: the per-projection scales,
        // then the input scales)
        "attn_q.scale" => 160,
        "attn_k.scale" => 161,
        "attn_v.scale" => 162,
        "attn_output.scale" => 163,
        "attn_qkv.scale" => 164,
        "ffn_gate.scale" => 166,
        "ffn_up.scale" => 167,
        "ffn_down.scale" => 168,
        "ffn_gate_shexp.scale" => 169,
        "ffn_up_shexp.scale" => 170,
        "ffn_down_shexp.scale" => 171,
        "attn_q.input_scale" => 180,
        "attn_k.input_scale" => 181,
        "attn_v.input_scale" => 182,
        "attn_output.input_scale" => 183,
        "attn_qkv.input_scale" => 184,
        "ffn_gate.input_scale" => 186,
        "ffn_up.input_scale" => 187,
        "ffn_down.input_scale" => 188,
        "ffn_gate_exps.input_scale" => 189,
        "ffn_down_exps.input_scale" => 190,
        "ffn_up_exps.input_scale" => 191,
        "ffn_gate_shexp.input_scale" => 192,
        "ffn_up_shexp.input_scale" => 193,
        "ffn_down_shexp.input_scale" => 194,
        "attn_sinks.weight" => 200,
        "ffn_gate.bias" => 89,
        "ffn_down.bias" => 90,
        "ffn_up.bias" => 91,
        "exp_probs_b.bias" => 93,
        _ => return None,
    })
}

/// The model's tensors in the order the reference's saver adds them: the
/// top-level tensors (token embeddings first only when the output matrix
/// is a tensor of its own), then each layer's in struct order, with
/// rope_freqs.weight and LongRoPE's factors in layer 0 (later layers share
/// them).
fn tensor_order(m: &Model) -> Result<Vec<String>> {
    let has = |n: &str| m.tensor(n).is_some();
    let mut top: Vec<&str> = Vec::new();
    let tied = !has("output.weight");
    // Deviation: an encoder has no output head, and the reference's saver
    // then writes no token_embd at all (its file does not load); minfer
    // writes it first, where a model with its own output head has it.
    if !tied || m.is_encoder() {
        top.push("token_embd.weight");
    }
    top.extend(["token_types.weight", "position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias"]);
    top.extend(["output_norm.weight", "output_norm.bias"]);
    top.push(if tied { "token_embd.weight" } else { "output.weight" });
    top.extend(["output.bias", "enc.output_norm.weight"]);
    top.extend(["cls.weight", "cls.bias", "cls.output.weight", "cls.output.bias", "cls.norm.weight"]);
    // Deviation: the reference's saver leaves out gemma-embedding's dense
    // modules (its file does not embed as the model did); minfer writes them last
    // of the model-wide tensors, so that its file embeds as the model did.
    top.extend(["dense_2.weight", "dense_3.weight"]);
    let mut order: Vec<String> = Vec::new();
    for n in top.into_iter().filter(|n| has(n)) {
        if !order.iter().any(|o| o == n) {
            order.push(n.to_string());
        }
    }

    let mut layered: Vec<(u32, u32, String)> = Vec::new();
    for name in m.files.iter().flat_map(|f| f.tensors().map(|t| t.name)) {
        if order.contains(&name) {
            continue;
        }
        let (il, rank) = if name == "rope_freqs.weight" {
            (0, 153)
        } else if name == "rope_factors_long.weight" {
            (0, 151)
        } else if name == "rope_factors_short.weight" {
            (0, 152)
        } else {
            let rest = name.strip_prefix("blk.").and_then(|r| r.split_once('.'));
            match rest.and_then(|(n, s)| Some((n.parse::<u32>().ok()?, layer_field_rank(s)?))) {
                Some(x) => x,
                None => {
                    return Err(Error::model(format!(
                        "tensor '{name}' is not one the {} architecture creates; cannot save it as the reference does",
                        m.arch_name
                    )))
                }
            }
        };
        layered.push((il, rank, name));
    }
    layered.sort();
    order.extend(layered.into_iter().map(|(_, _, n)| n));
    Ok(order)
}

/// Builds the file the reference's saver writes for `m`.
fn build(m: &Model) -> Result<GgufWriter<'_>> {
    if m.vocab_only || m.arch.is_none() {
        return Err(Error::invalid("cannot save a model loaded with vocab_only (it has no weights)"));
    }
    let h = read_hparams(m)?;
    let arch = m.arch_name.as_str();
    let mut w = GgufWriter::new();
    let k = |s: &str| format!("{arch}.{s}");
    let mut put = |key: &str, v: OwnedValue| {
        w.set_last(key.as_bytes(), v);
    };
    use OwnedValue::{Bool, Str, F32, I32, U32};
    let n_layer = (h.n_layer_all - h.n_layer_nextn) as usize;
    // a per-layer value: a scalar when every layer has the same
    let per_layer = |v: &[u32]| -> Option<OwnedValue> {
        let v = v.get(..n_layer)?;
        let first = *v.first()?;
        Some(if v.iter().all(|&x| x == first) { U32(first) } else { OwnedValue::Array(OwnedArray::U32(v.to_vec())) })
    };
    let zeros_f32 = |n: usize| OwnedValue::Array(OwnedArray::F32(vec![0.0; n]));

    put("general.architecture", Str(arch.as_bytes().to_vec()));
    put("general.name", Str(h.name.clone()));
    put(&k("vocab_size"), U32(m.vocab.n_tokens() as u32));
    put(&k("context_length"), U32(h.n_ctx_train));
    put(&k("embedding_length"), U32(h.n_embd));
    if h.n_embd_out > 0 {
        put(&k("embedding_length_out"), U32(h.n_embd_out));
    }
    put(&k("block_count"), U32(h.n_layer_all));
    put(&k("leading_dense_block_count"), U32(m.hparams.n_layer_dense_lead));
    if let Some(v) = per_layer(&h.n_ff) {
        put(&k("feed_forward_length"), v);
    }
    // (the values the family read: 0 where it reads none)
    put(&k("expert_feed_forward_length"), U32(m.hparams.n_ff_exp_key));
    put(&k("expert_latent_length"), U32(0));
    put(&k("expert_shared_feed_forward_length"), U32(m.hparams.n_ff_shexp_key));
    put(&k("expert_chunk_feed_forward_length"), U32(0));
    if h.n_layer_all > 0 {
        put(&k("swiglu_clamp_exp"), zeros_f32(h.n_layer_all as usize));
        put(&k("swiglu_clamp_shexp"), zeros_f32(h.n_layer_all as usize));
    }
    put(&k("use_parallel_residual"), Bool(false));
    put(&k("expert_count"), U32(h.n_expert));
    put(&k("expert_used_count"), U32(h.n_expert_used));
    put(&k("expert_shared_count"), U32(m.hparams.n_expert_shared));
    put(&k("expert_group_count"), U32(h.n_expert_groups));
    put(&k("expert_group_used_count"), U32(h.n_group_used));
    put(&k("expert_weights_scale"), F32(m.hparams.expert_weights_scale));
    put(&k("expert_weights_norm"), Bool(m.hparams.expert_weights_norm));
    put(&k("expert_gating_func"), U32(m.hparams.expert_gating_func));
    put(&k("expert_group_scale"), F32(0.05));
    put(&k("experts_per_group"), U32(0));
    put(&k("moe_every_n_layers"), U32(0));
    put(&k("nextn_predict_layers"), U32(h.n_layer_nextn));
    put(&k("n_deepstack_layers"), U32(0));
    put(&k("deepstack_mapping"), OwnedValue::Array(OwnedArray::I32(vec![-1; MAX_LAYERS])));
    put(&k("pooling_type"), U32(h.pooling as u32));
    put(&k("logit_scale"), F32(h.logit_scale));
    put(&k("decoder_start_token_id"), I32(-1));
    put(&k("decoder_block_count"), U32(0));
    put(&k("attn_logit_softcapping"), F32(h.attn_softcap));
    put(&k("router_logit_softcapping"), F32(30.0));
    put(&k("final_logit_softcapping"), F32(h.final_softcap));
    put(&k("swin_norm"), Bool(false));
    for s in ["rescale_every_n_layers", "time_mix_extra_dim", "time_decay_extra_dim"] {
        put(&k(s), U32(0));
    }
    put(&k("residual_scale"), F32(h.residual_scale));
    put(&k("embedding_scale"), F32(h.embedding_scale));
    for s in ["hrm.layers_per_stack", "hrm.h_cycles", "hrm.l_cycles"] {
        put(&k(s), U32(0));
    }
    put(&k("hrm.prefix_lm"), Bool(false));
    put(&k("token_shift_count"), U32(2));
    put(&k("interleave_moe_layer_step"), U32(0));
    if let Some(v) = per_layer(&h.n_head) {
        put(&k("attention.head_count"), v);
    }
    if let Some(v) = per_layer(&h.n_head_kv) {
        put(&k("attention.head_count_kv"), v);
    }
    put(&k("attention.max_alibi_bias"), F32(0.0));
    put(&k("attention.clamp_kqv"), F32(0.0));
    put(&k("attention.key_length"), U32(h.head_k));
    put(&k("attention.value_length"), U32(h.head_v));
    put(&k("attention.layer_norm_epsilon"), F32(h.norm_eps));
    put(&k("attention.layer_norm_rms_epsilon"), F32(h.rms_eps));
    put(&k("attention.group_norm_epsilon"), F32(0.0));
    put(&k("attention.group_norm_groups"), U32(0));
    put(&k("attention.causal"), Bool(h.causal));
    for s in [
        "attention.q_lora_rank",
        "attention.kv_lora_rank",
        "attention.decay_lora_rank",
        "attention.iclr_lora_rank",
        "attention.value_residual_mix_lora_rank",
        "attention.gate_lora_rank",
        "attention.relative_buckets_count",
    ] {
        put(&k(s), U32(0));
    }
    if n_layer > 0 {
        put(&k("attention.rope_pattern"), U32(u32::from(h.rope_layers)));
    }
    put(&k("attention.sliding_window"), U32(h.n_swa));
    if let Some(layers) = &h.swa_layers {
        // never collapsed to a scalar (the loaders read a scalar as a period)
        put(&k("attention.sliding_window_pattern"), OwnedValue::Array(OwnedArray::U32(layers.clone())));
    }
    put(&k("attention.scale"), F32(h.attn_scale));
    put(&k("attention.output_scale"), F32(0.0));
    put(&k("attention.value_scale"), F32(0.0));
    put(&k("attention.temperature_length"), U32(0));
    put(&k("attention.temperature_scale"), F32(h.attn_temp_scale));
    put(&k("attention.key_length_mla"), U32(0));
    put(&k("attention.value_length_mla"), U32(0));
    put(&k("attention.key_length_swa"), U32(h.head_k_swa));
    put(&k("attention.value_length_swa"), U32(h.head_v_swa));
    for s in [
        "attention.key_length_mla_swa",
        "attention.value_length_mla_swa",
        "attention.kv_lora_rank_swa",
        "attention.indexer.head_count",
        "attention.indexer.key_length",
        "attention.indexer.top_k",
        "attention.indexer.block_size",
        "attention.indexer.kpool",
    ] {
        put(&k(s), U32(0));
    }
    put(&k("attention.indexer.kpool_select_tail"), Bool(true));
    put(&k("attention.indexer.local_blocks"), U32(0));
    if n_layer > 0 {
        put(&k("attention.indexer.types"), U32(0));
        put(&k("attention.recurrent_layers"), U32(0));
    }
    put(&k("attention.output_group_count"), U32(0));
    put(&k("attention.output_lora_rank"), U32(0));
    put(&k("attention.compress_rope_freq_base"), F32(0.0));
    if n_layer > 0 {
        put(&k("attention.compress_ratios"), U32(0));
    }
    put(&k("hyper_connection.count"), U32(0));
    put(&k("hyper_connection.sinkhorn_iterations"), U32(0));
    put(&k("hyper_connection.epsilon"), F32(0.0));
    put(&k("hyper_connection.magnitude"), F32(0.0));
    put(&k("hash_layer_count"), U32(0));
    put(&k("hyper_connection.low_rank"), U32(0));
    put(&k("rope.dimension_count"), U32(h.n_rot));
    put(&k("rope.dimension_count_swa"), U32(h.n_rot_swa));
    put(&k("rope.dimension_sections"), OwnedValue::Array(OwnedArray::I32(vec![0; 4])));
    put(&k("rope.freq_base"), F32(h.rope_base));
    put(&k("rope.freq_base_swa"), F32(h.rope_base_swa));
    put(&k("rope.scaling.type"), Str(h.rope_scaling.clone()));
    put(&k("rope.scaling.factor"), F32(h.rope_scale));
    put(&k("rope.scaling.attn_factor"), F32(h.rope_attn_factor));
    put(&k("rope.scaling.original_context_length"), U32(h.n_ctx_orig));
    put(&k("rope.scaling.finetuned"), Bool(h.rope_finetuned));
    put(&k("rope.scaling.yarn_log_multiplier"), F32(h.yarn_log_mul));
    put(&k("rope.scaling.yarn_ext_factor"), F32(-1.0));
    put(&k("rope.scaling.yarn_attn_factor"), F32(1.0));
    put(&k("rope.scaling.yarn_beta_fast"), F32(h.yarn_beta_fast));
    put(&k("rope.scaling.yarn_beta_slow"), F32(h.yarn_beta_slow));
    for s in ["ssm.inner_size", "ssm.conv_kernel", "ssm.state_size", "ssm.time_step_rank", "ssm.group_count"] {
        put(&k(s), U32(0));
    }
    put(&k("ssm.dt_b_c_rms"), Bool(false));
    put(&k("kda.head_dim"), U32(0));
    put(&k("kda.safe_gate"), Bool(false));
    put(&k("kda.gate_lower_bound"), F32(f32::NEG_INFINITY));
    put(&k("wkv.head_size"), U32(0));

    // --- the vocabulary as the tokenizer holds it
    let v = &m.vocab;
    let (mut texts, mut scores, mut types) = (Vec::new(), Vec::new(), Vec::new());
    if v.kind != crate::model::vocab_info::VocabType::None {
        for t in &v.tokens {
            texts.push(c_trunc(t.text()));
            scores.push(t.score);
            types.push(token_type(t.attr));
        }
    } else {
        texts = vec![Vec::new(); v.n_tokens()];
        scores = vec![0.0; v.n_tokens()];
        types = vec![0; v.n_tokens()];
    }
    put("tokenizer.ggml.model", Str(c_trunc(v.model_name.as_bytes())));
    put("tokenizer.ggml.pre", Str(c_trunc(v.pre_name.as_bytes())));
    put("tokenizer.ggml.tokens", OwnedValue::Array(OwnedArray::Str(texts)));
    put("tokenizer.ggml.token_type", OwnedValue::Array(OwnedArray::I32(types)));
    put("tokenizer.ggml.token_type_count", U32(v.n_token_types));
    put("tokenizer.ggml.scores", OwnedValue::Array(OwnedArray::F32(scores)));
    put("tokenizer.ggml.merges", OwnedValue::Array(OwnedArray::Str(bpe_merges(m))));
    let ids = [
        ("bos", v.bos),
        ("eos", v.eos),
        ("eot", v.eot),
        ("eom", v.eom),
        ("unknown", v.unk),
        ("seperator", v.sep),
        ("padding", v.pad),
    ];
    for (name, id) in ids {
        if id != -1 {
            put(&format!("tokenizer.ggml.{name}_token_id"), U32(id as u32));
        }
    }
    put("tokenizer.ggml.add_bos_token", Bool(v.add_bos));
    put("tokenizer.ggml.add_eos_token", Bool(v.add_eos));
    put("tokenizer.ggml.add_sep_token", Bool(v.add_sep));
    put("tokenizer.ggml.add_space_prefix", Bool(v.add_space_prefix));
    put("tokenizer.ggml.remove_extra_whitespaces", Bool(v.remove_extra_whitespaces));
    if v.kind == crate::model::vocab_info::VocabType::Ugm {
        // the reference aborts on a non-empty charsmap (it has no writer for char arrays)
        return Err(Error::invalid("cannot save a model with a UGM (T5) vocabulary"));
    }
    let fim = [
        ("pre", v.fim_pre),
        ("suf", v.fim_suf),
        ("mid", v.fim_mid),
        ("pad", v.fim_pad),
        ("rep", v.fim_rep),
        ("sep", v.fim_sep),
    ];
    for (name, id) in fim {
        if id != -1 {
            put(&format!("tokenizer.ggml.fim_{name}_token_id"), U32(id as u32));
        }
    }

    for s in ["posnet.embedding_length", "posnet.block_count", "convnext.embedding_length", "convnext.block_count"] {
        put(&k(s), U32(0));
    }
    put(&k("classifier.output_labels"), OwnedValue::Array(OwnedArray::Str(h.classifier_labels.clone())));
    put(&k("shortconv.l_cache"), U32(0));
    for s in ["xielu.alpha_n", "xielu.alpha_p", "xielu.beta", "xielu.eps"] {
        put(s, zeros_f32(MAX_LAYERS));
    }
    put(&k("attn_res.block_size"), U32(0));
    put(&k("activation.situ_beta"), F32(1.0));
    put(&k("activation.situ_linear_beta"), F32(0.0));
    for (s, &v) in DENSE_FEAT_KEYS.iter().zip(&h.dense_feat) {
        put(&k(s), U32(v));
    }

    // --- tensors, their data borrowed from the mapping
    for name in tensor_order(m)? {
        let (f, t) = m.tensor(&name).ok_or_else(|| Error::model(format!("tensor '{name}' vanished")))?;
        w.add_tensor(&name, t.ggml_type, &t.ggml_shape(), f.tensor_data(&t));
    }
    Ok(w)
}

/// Writes `m` to `path` as the reference's llama_model_save_to_file does.
/// A write that fails half way removes the file.
pub fn save(m: &Model, path: &Path) -> Result<()> {
    let w = build(m)?;
    w.write_file(path).inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })
}
