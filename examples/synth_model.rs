//! Writes a small synthetic model with random F32 weights and the
//! vocabulary of an existing GGUF file (for example a reference vocab-only
//! file), for forward-pass parity tests against the reference library.
//!
//! usage: cargo run --release --example synth_model -- ARCH VOCAB.gguf OUT.gguf [SEED] [N_VOCAB] [KEY=N...]
//! N_VOCAB keeps only the first N tokens of the vocabulary (merges and special
//! ids that refer past them are dropped), so that logits goldens stay small.
//! ARCH: any family of src/model/arch/ (the tensors follow its recipe:
//! pre- and post-norms, fused or split projections, required biases, q/k
//! norms; the family's own keys from `family_keys`). Sizes: 2 layers,
//! n_embd 64, 4 heads of 16 (2 KV heads), n_ff 128, context 512; KEY=N
//! changes one of them: embd, layers, heads, kv_heads, head_dim, ff (e.g.
//! embd=256 ff=512 for rows that the 256-element k-quant blocks divide);
//! optional=1 writes the recipe's optional biases too; fused_qkv=1 writes
//! q, k and v as one attn_qkv (and their biases as one attn_qkv.bias);
//! rot=N rotates only the first N dimensions of each head (partial rope);
//! ctx=N sets the training context (512; gpt2's learned positions);
//! scaling=yarn|longrope|linear|none, factor=F, attn_factor=F and
//! orig_ctx=N write the rope scaling keys (longrope: random factors too);
//! ffn_norm=0 leaves out ffn_norm where the recipe allows it; tied=1 leaves
//! out output.weight (the head is token_embd, as in Llama 3.2 1B);
//! own_keys=0 leaves out the family's own keys (`family_keys`: mistral3's
//! attention temperature, granite's scales, the sliding windows).
//! Mixture of experts (families with one: `arch::Block::moe`): experts=N
//! writes N experts (8 by default for the families that always have them,
//! else none), used=K routes each token to K (2), ff_exp=N sizes each
//! expert's FFN (n_ff / 2, written as expert_feed_forward_length for the
//! qwen families and dots1; others use n_ff), shexp=N the shared expert's
//! (n_ff, where the recipe has one; 0: none, where the family's is optional,
//! as granitemoe's). dots1 (its router from the file's
//! keys): lead=N dense first layers (1), gating=N its gating function (2:
//! sigmoid), wnorm=0|1 renormalisation (1), wscale=F the weights' scale
//! (2.5), shexp_count=N shared experts of ff_exp rows (2), probs_b=0|1 the
//! selection bias tensor (1).
//! Encoders (`arch::Encoder`: bert): token types (2 rows; the vocab's
//! `tokenizer.ggml.token_type_count` when it has one), the input norm and
//! the norms after each residual add, `attention.causal` false;
//! pooling=N writes `%s.pooling_type` (1: mean), cls=1 the classifier head
//! (`cls`, `cls.output` with their biases), labels=N its outputs (written as
//! N `classifier.output_labels`; 1); jina-bert-v2: ffn_kind=1 a gated FFN
//! (GEGLU of ffn_gate and ffn_up), 2 an ffn_up of both halves (0: GELU),
//! optional=1 the q/k LayerNorms and attn_norm_2, cls=1 its one-score head;
//! modern-bert: first_norm=0 leaves out layer 0's attn_norm, silu=1 writes
//! `hidden_activation` silu (SwiGLU), reglu=1 reglu, cls=1 its head with
//! cls_norm;
//! gemma-embedding: dense=1 its dense modules (n_embd -> 2 n_embd -> n_embd).
//! blocks=T writes the layers' matrices and the output head (where the
//! family has one) as random blocks of ggml type T
//! (e.g. 16 for IQ2_XXS), scaled to the random F32 weights' magnitude.

use llama::ggml_type::GgmlType;
use llama::gguf::{GgufFile, GgufWriter, OwnedArray, OwnedValue, Value};
use llama::model::arch::{self, ClsHead, Ffn, GateUp, Need, Norm, Parallel, QkNorm, SharedExpert};
use std::borrow::Cow;
use std::collections::HashSet;
use std::path::Path;

#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::Rng;

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: {} ARCH VOCAB.gguf OUT.gguf [SEED]", args[0]);
        std::process::exit(2);
    }
    let (arch, vocab_path, out_path) = (args[1].as_str(), &args[2], &args[3]);
    let recipe = match arch::find(arch) {
        Some(family) => family.block,
        None => {
            eprintln!("unknown family {arch} (minfer runs: {})", arch::supported_list());
            std::process::exit(2);
        }
    };
    let seed: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let vocab = GgufFile::open(Path::new(vocab_path)).expect("vocab file");
    let full_vocab = match vocab.get("tokenizer.ggml.tokens") {
        Some(Value::Array(a)) => a.len as usize,
        _ => panic!("the vocab file has no tokenizer.ggml.tokens"),
    };
    let n_vocab: usize = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(full_vocab).min(full_vocab);
    let kept: HashSet<Vec<u8>> = match vocab.get("tokenizer.ggml.tokens") {
        Some(Value::Array(a)) => vocab.array_strings(&a).unwrap().take(n_vocab).map(|t| t.to_vec()).collect(),
        _ => HashSet::new(),
    };

    let (mut n_embd, mut n_layer, mut n_head, mut n_head_kv, mut hd, mut n_ff) =
        (64usize, 2usize, 4usize, 2usize, 16usize, 128usize);
    let (mut optional, mut fused_qkv, mut n_rot, mut n_ctx, mut orig_ctx) = (false, false, 0usize, 512usize, 0usize);
    let mut ffn_norm = true;
    // tied=1: no output.weight (the head reads token_embd, as Llama 3.2 1B's)
    let mut tied = false;
    // own_keys=0: none of the family's own keys (family_keys)
    let mut own_keys = true;
    // shexp=0: no shared expert where the recipe's is optional
    let mut no_shexp = false;
    let encoder = recipe.encoder.is_some();
    // (bert-style: norms after the residual adds, no final norm)
    let post_enc = recipe.encoder.is_some_and(|e| !e.pre_norm);
    let enc = recipe.encoder.unwrap_or(arch::Encoder::BERT);
    let (mut pooling, mut cls, mut labels, mut ffn_kind) = (1usize, false, 0usize, 0usize);
    // blocks=T: the layers' matrices and the output head as random blocks of ggml type T
    let mut blocks: Option<GgmlType> = None;
    let (mut first_norm, mut silu, mut dense, mut reglu) = (true, false, false, false);
    // experts: always for the families whose every layer has them
    let always_moe = matches!(arch, "qwen3moe" | "qwen2moe" | "olmoe" | "granitemoe" | "gpt-oss" | "dots1");
    let (mut n_expert, mut n_used, mut ff_exp, mut n_shexp) = (if always_moe { 8 } else { 0 }, 2usize, 0usize, 0usize);
    // dots1's router keys
    let (mut lead, mut gating, mut wnorm, mut shexp_count, mut probs_b) = (1usize, 2usize, true, 2usize, true);
    let mut wscale = 2.5f32;
    // rope scaling: scaling=yarn|longrope|linear|none with factor=F (a
    // float), orig_ctx=N, attn_factor=F
    let mut scaling: Option<String> = None;
    let mut floats: Vec<(&str, f32)> = Vec::new();
    for kv in args.iter().skip(6) {
        let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("expected KEY=N, got {kv}"));
        match k {
            "scaling" => {
                scaling = Some(v.to_string());
                continue;
            }
            "wscale" => {
                wscale = v.parse().unwrap_or_else(|_| panic!("bad number in {kv}"));
                continue;
            }
            "factor" | "attn_factor" => {
                let key = if k == "factor" { "rope.scaling.factor" } else { "rope.scaling.attn_factor" };
                floats.push((key, v.parse().unwrap_or_else(|_| panic!("bad number in {kv}"))));
                continue;
            }
            _ => {}
        }
        let v: usize = v.parse().unwrap_or_else(|_| panic!("bad number in {kv}"));
        match k {
            "embd" => n_embd = v,
            "layers" => n_layer = v,
            "heads" => n_head = v,
            "kv_heads" => n_head_kv = v,
            "head_dim" => hd = v,
            "ff" => n_ff = v,
            "optional" => optional = v != 0,
            "fused_qkv" => fused_qkv = v != 0,
            "rot" => n_rot = v,
            "ctx" => n_ctx = v,
            "orig_ctx" => orig_ctx = v,
            "ffn_norm" => ffn_norm = v != 0,
            "tied" => tied = v != 0,
            "own_keys" => own_keys = v != 0,
            "experts" => n_expert = v,
            "used" => n_used = v,
            "ff_exp" => ff_exp = v,
            "shexp" => {
                n_shexp = v;
                no_shexp = v == 0;
            }
            "lead" => lead = v,
            "gating" => gating = v,
            "wnorm" => wnorm = v != 0,
            "shexp_count" => shexp_count = v,
            "probs_b" => probs_b = v != 0,
            "pooling" => pooling = v,
            "cls" => cls = v != 0,
            "labels" => labels = v,
            "ffn_kind" => ffn_kind = v,
            "first_norm" => first_norm = v != 0,
            "silu" => silu = v != 0,
            "reglu" => reglu = v != 0,
            "dense" => dense = v != 0,
            "blocks" => blocks = Some(GgmlType::from_u32(v as u32).unwrap_or_else(|| panic!("no ggml type {v}"))),
            _ => panic!("unknown size {k}"),
        }
    }
    let mut w = GgufWriter::new();
    // The vocabulary: every tokenizer.* pair of the source file.
    for i in 0..vocab.n_kv() {
        let (key, value) = vocab.kv(i);
        if !key.starts_with("tokenizer.") {
            continue;
        }
        let Some(v) = vocab.to_owned_value(&value) else { continue };
        let v = match (key.as_ref(), v) {
            ("tokenizer.ggml.tokens", OwnedValue::Array(OwnedArray::Str(t))) => {
                OwnedValue::Array(OwnedArray::Str(t.into_iter().take(n_vocab).collect()))
            }
            ("tokenizer.ggml.scores", OwnedValue::Array(OwnedArray::F32(t))) => {
                OwnedValue::Array(OwnedArray::F32(t.into_iter().take(n_vocab).collect()))
            }
            ("tokenizer.ggml.token_type", OwnedValue::Array(OwnedArray::I32(t))) => {
                OwnedValue::Array(OwnedArray::I32(t.into_iter().take(n_vocab).collect()))
            }
            ("tokenizer.ggml.merges", OwnedValue::Array(OwnedArray::Str(m))) => {
                // A merge "a b" survives if a, b and ab are all kept tokens.
                let keep = |m: &Vec<u8>| {
                    let Some(sp) = m.iter().position(|&c| c == b' ') else { return false };
                    let (a, b) = (&m[..sp], &m[sp + 1..]);
                    kept.contains(a) && kept.contains(b) && kept.contains(&[a, b].concat())
                };
                OwnedValue::Array(OwnedArray::Str(m.into_iter().filter(keep).collect()))
            }
            (k, OwnedValue::U32(id)) if k.ends_with("_token_id") && id as usize >= n_vocab => continue,
            (_, v) => v,
        };
        w.add(key.as_ref(), v);
    }
    let k = |s: &str| format!("{arch}.{s}");
    w.set("general.architecture", OwnedValue::Str(arch.as_bytes().to_vec()));
    // (not naming the family: the reference sets token attributes by the
    // model's name, "phi3" among them, from tokens a cut vocabulary lacks)
    w.set("general.name", OwnedValue::Str(format!("minfer synthetic model seed {seed}").into_bytes()));
    w.set(&k("context_length"), OwnedValue::U32(n_ctx as u32));
    w.set(&k("embedding_length"), OwnedValue::U32(n_embd as u32));
    w.set(&k("block_count"), OwnedValue::U32(n_layer as u32));
    w.set(&k("feed_forward_length"), OwnedValue::U32(n_ff as u32));
    w.set(&k("attention.head_count"), OwnedValue::U32(n_head as u32));
    w.set(&k("attention.head_count_kv"), OwnedValue::U32(n_head_kv as u32));
    w.set(&k("attention.key_length"), OwnedValue::U32(hd as u32));
    w.set(&k("attention.value_length"), OwnedValue::U32(hd as u32));
    w.set(&k("attention.layer_norm_rms_epsilon"), OwnedValue::F32(1e-6));
    w.set(&k("rope.freq_base"), OwnedValue::F32(10000.0));
    if n_rot > 0 {
        w.set(&k("rope.dimension_count"), OwnedValue::U32(n_rot as u32));
    }
    if let Some(kind) = &scaling {
        w.set(&k("rope.scaling.type"), OwnedValue::Str(kind.as_bytes().to_vec()));
    }
    for (key, v) in &floats {
        w.set(&k(key), OwnedValue::F32(*v));
    }
    if orig_ctx > 0 {
        w.set(&k("rope.scaling.original_context_length"), OwnedValue::U32(orig_ctx as u32));
    }
    if recipe.norm == Norm::Layer {
        w.set(&k("attention.layer_norm_epsilon"), OwnedValue::F32(1e-5));
    }
    for (key, v) in family_keys(arch).into_iter().filter(|_| own_keys) {
        w.set(&k(key), v);
    }
    let mut n_token_types = 0;
    if encoder {
        w.set(&k("attention.causal"), OwnedValue::Bool(false));
        w.set(&k("pooling_type"), OwnedValue::U32(pooling as u32));
        n_token_types = match vocab.get("tokenizer.ggml.token_type_count").as_ref().and_then(Value::as_u64) {
            Some(n) => n as usize,
            None => {
                w.set("tokenizer.ggml.token_type_count", OwnedValue::U32(2));
                2
            }
        };
        if silu {
            w.set(&k("hidden_activation"), OwnedValue::Str(b"silu".to_vec()));
        }
        if reglu {
            w.set(&k("hidden_activation"), OwnedValue::Str(b"reglu".to_vec()));
        }
        if dense {
            // (gemma-embedding's dense modules: n_embd -> 2 n_embd -> n_embd)
            for (key, v) in
                [("dense_2_feat_in", 1), ("dense_2_feat_out", 2), ("dense_3_feat_in", 2), ("dense_3_feat_out", 1)]
            {
                w.set(&k(key), OwnedValue::U32((v * n_embd) as u32));
            }
        }
    }
    if labels > 0 {
        let names = (0..labels).map(|i| format!("LABEL_{i}").into_bytes()).collect();
        w.set(&k("classifier.output_labels"), OwnedValue::Array(OwnedArray::Str(names)));
    }
    // the experts' FFN size (the qwen families read their own key) and the
    // shared expert's
    let moe = recipe.moe.filter(|_| n_expert > 0);
    let qwen_moe = arch.starts_with("qwen") || arch == "gpt-oss" || arch == "dots1";
    let dots1 = arch == "dots1";
    if !dots1 {
        lead = 0;
    }
    if ff_exp == 0 {
        ff_exp = if qwen_moe { n_ff / 2 } else { n_ff };
    }
    let shared = moe.map_or(SharedExpert::None, |m| m.shared);
    let shared = if no_shexp && shared == SharedExpert::Plain { SharedExpert::None } else { shared };
    if n_shexp == 0 && shared != SharedExpert::None {
        n_shexp = if dots1 { ff_exp * shexp_count } else { n_ff };
    }
    if moe.is_some() {
        if !qwen_moe {
            // (these families size their experts by feed_forward_length)
            w.set(&k("feed_forward_length"), OwnedValue::U32(ff_exp as u32));
        }
        w.set(&k("expert_count"), OwnedValue::U32(n_expert as u32));
        w.set(&k("expert_used_count"), OwnedValue::U32(n_used as u32));
        if qwen_moe {
            w.set(&k("expert_feed_forward_length"), OwnedValue::U32(ff_exp as u32));
        }
        if dots1 {
            w.set(&k("expert_shared_count"), OwnedValue::U32(shexp_count as u32));
            w.set(&k("leading_dense_block_count"), OwnedValue::U32(lead as u32));
            w.set(&k("expert_gating_func"), OwnedValue::U32(gating as u32));
            w.set(&k("expert_weights_norm"), OwnedValue::Bool(wnorm));
            w.set(&k("expert_weights_scale"), OwnedValue::F32(wscale));
        } else if shared != SharedExpert::None {
            w.set(&k("expert_shared_feed_forward_length"), OwnedValue::U32(n_shexp as u32));
        }
    }

    let mut rng = Rng(seed);
    let tensors: Vec<(String, Vec<u64>, Vec<f32>)> = Vec::new();
    // a [cols, rows] matrix, or `n` of them as one [cols, rows, n] tensor,
    // values times `gain` / sqrt(cols)
    let tensors = std::cell::RefCell::new(tensors);
    let mats = |rng: &mut Rng, name: String, cols: usize, rows: usize, n: usize, gain: f32| {
        let s = gain / (cols as f32).sqrt();
        let data: Vec<f32> = (0..cols * rows * n).map(|_| rng.uniform() * s).collect();
        let ne = if n > 1 { vec![cols as u64, rows as u64, n as u64] } else { vec![cols as u64, rows as u64] };
        tensors.borrow_mut().push((name, ne, data));
    };
    let mat = |rng: &mut Rng, name: String, cols: usize, rows: usize| mats(rng, name, cols, rows, 1, 1.0);
    mat(&mut rng, "token_embd.weight".into(), n_embd, n_vocab);
    let norm = |rng: &mut Rng, n: usize| -> Vec<f32> { (0..n).map(|_| 1.0 + 0.2 * rng.uniform()).collect() };
    let mut vecs: Vec<(String, Vec<u64>, Vec<f32>)> = Vec::new();
    if !post_enc {
        vecs.push((format!("{}.weight", enc.output_norm), vec![n_embd as u64], norm(&mut rng, n_embd)));
    }
    let wanted = |need: Need| need == Need::Required || (need == Need::Optional && optional);
    let bias = |rng: &mut Rng, n: usize| -> Vec<f32> { (0..n).map(|_| 0.1 * rng.uniform()).collect() };
    let (q_width, kv_width) = (n_head * hd, n_head_kv * hd);
    let norm_bias = wanted(recipe.norm_bias);
    if recipe.pos_embd {
        mat(&mut rng, "position_embd.weight".into(), n_embd, n_ctx);
    }
    if scaling.as_deref() == Some("longrope") {
        // LongRoPE's per-pair factors, in [1, 8)
        let half = if n_rot > 0 { n_rot } else { hd } / 2;
        for name in ["rope_factors_long.weight", "rope_factors_short.weight"] {
            vecs.push((name.into(), vec![half as u64], (0..half).map(|_| 4.5 + 3.5 * rng.uniform()).collect()));
        }
    }
    if norm_bias && !post_enc {
        vecs.push((format!("{}.bias", enc.output_norm), vec![n_embd as u64], bias(&mut rng, n_embd)));
    }
    if encoder {
        // the input norm, the token types, the classifier head
        if enc.token_types != Need::Absent {
            mat(&mut rng, "token_types.weight".into(), n_embd, n_token_types);
        }
        if enc.tok_norm != Need::Absent {
            vecs.push(("token_embd_norm.weight".into(), vec![n_embd as u64], norm(&mut rng, n_embd)));
            if norm_bias {
                vecs.push(("token_embd_norm.bias".into(), vec![n_embd as u64], bias(&mut rng, n_embd)));
            }
        }
        let head = recipe.encoder.map_or(ClsHead::None, |e| e.cls_head);
        if cls && head == ClsHead::Score {
            mats(&mut rng, "cls.weight".into(), n_embd, 1, 1, 3.0);
            vecs.push(("cls.bias".into(), vec![1], bias(&mut rng, 1)));
        }
        if dense && enc.dense_out {
            mat(&mut rng, "dense_2.weight".into(), n_embd, 2 * n_embd);
            mat(&mut rng, "dense_3.weight".into(), 2 * n_embd, n_embd);
        }
        if cls && head == ClsHead::Modern {
            // (no bias on cls; its GELU's LayerNorm)
            mats(&mut rng, "cls.weight".into(), n_embd, n_embd, 1, 3.0);
            vecs.push(("cls.norm.weight".into(), vec![n_embd as u64], norm(&mut rng, n_embd)));
            let n_out = labels.max(1);
            mat(&mut rng, "cls.output.weight".into(), n_embd, n_out);
            vecs.push(("cls.output.bias".into(), vec![n_out as u64], bias(&mut rng, n_out)));
        }
        if cls && head == ClsHead::Full {
            let n_out = labels.max(1);
            mats(&mut rng, "cls.weight".into(), n_embd, n_embd, 1, 3.0);
            vecs.push(("cls.bias".into(), vec![n_embd as u64], bias(&mut rng, n_embd)));
            mat(&mut rng, "cls.output.weight".into(), n_embd, n_out);
            vecs.push(("cls.output.bias".into(), vec![n_out as u64], bias(&mut rng, n_out)));
        }
    }
    for il in 0..n_layer {
        let t = |s: &str| format!("blk.{il}.{s}");
        // (first_norm=0: none in layer 0, where the family allows it)
        if recipe.pre_norms && (il > 0 || first_norm || !enc.first_attn_norm_optional) {
            vecs.push((t("attn_norm.weight"), vec![n_embd as u64], norm(&mut rng, n_embd)));
            if norm_bias {
                vecs.push((t("attn_norm.bias"), vec![n_embd as u64], bias(&mut rng, n_embd)));
            }
        }
        if recipe.attn_norm_2 && optional {
            vecs.push((t("attn_norm_2.weight"), vec![n_embd as u64], norm(&mut rng, n_embd)));
            if norm_bias {
                vecs.push((t("attn_norm_2.bias"), vec![n_embd as u64], bias(&mut rng, n_embd)));
            }
        }
        if fused_qkv {
            mat(&mut rng, t("attn_qkv.weight"), n_embd, q_width + 2 * kv_width);
        } else {
            mat(&mut rng, t("attn_q.weight"), n_embd, q_width);
            mat(&mut rng, t("attn_k.weight"), n_embd, kv_width);
            mat(&mut rng, t("attn_v.weight"), n_embd, kv_width);
        }
        mat(&mut rng, t("attn_output.weight"), q_width, n_embd);
        if post_enc {
            // the norms after each residual add
            for name in ["attn_output_norm", "layer_output_norm"] {
                vecs.push((t(&format!("{name}.weight")), vec![n_embd as u64], norm(&mut rng, n_embd)));
                vecs.push((t(&format!("{name}.bias")), vec![n_embd as u64], bias(&mut rng, n_embd)));
            }
        }
        if wanted(recipe.qkv_bias) && fused_qkv {
            let n = q_width + 2 * kv_width;
            vecs.push((t("attn_qkv.bias"), vec![n as u64], bias(&mut rng, n)));
        } else if wanted(recipe.qkv_bias) {
            for (name, n) in [("attn_q.bias", q_width), ("attn_k.bias", kv_width), ("attn_v.bias", kv_width)] {
                vecs.push((t(name), vec![n as u64], bias(&mut rng, n)));
            }
        }
        let (qn, kn) = match recipe.qk_norm {
            QkNorm::None => (0, 0),
            QkNorm::PerHead => (hd, hd),
            QkNorm::Whole => (q_width, kv_width),
            // (optional: written with optional=1, as [head_dim, n_head])
            QkNorm::LayerPerHead => (0, 0),
        };
        if qn > 0 {
            vecs.push((t("attn_q_norm.weight"), vec![qn as u64], norm(&mut rng, qn)));
            vecs.push((t("attn_k_norm.weight"), vec![kn as u64], norm(&mut rng, kn)));
        }
        if recipe.encoder.is_some_and(|e| e.qk_norm) && optional {
            // (jina-bert-v2: LayerNorms of whole rows, sized n_embd)
            for name in ["attn_q_norm", "attn_k_norm"] {
                vecs.push((t(&format!("{name}.weight")), vec![n_embd as u64], norm(&mut rng, n_embd)));
                vecs.push((t(&format!("{name}.bias")), vec![n_embd as u64], bias(&mut rng, n_embd)));
            }
        }
        if recipe.qk_norm == QkNorm::LayerPerHead && optional {
            vecs.push((t("attn_q_norm.weight"), vec![hd as u64, n_head as u64], norm(&mut rng, q_width)));
            vecs.push((t("attn_k_norm.weight"), vec![hd as u64, n_head_kv as u64], norm(&mut rng, kv_width)));
        }
        if recipe.attn_sinks {
            // logits of the order of the scores'
            vecs.push((
                t("attn_sinks.weight"),
                vec![n_head as u64],
                (0..n_head).map(|_| 2.0 * rng.uniform()).collect(),
            ));
        }
        if recipe.post_norms {
            vecs.push((t("post_attention_norm.weight"), vec![n_embd as u64], norm(&mut rng, n_embd)));
            vecs.push((t("post_ffw_norm.weight"), vec![n_embd as u64], norm(&mut rng, n_embd)));
        }
        // (ffn_norm=0: none, where the recipe allows it: StableLM 2 12B)
        if recipe.pre_norms && recipe.parallel == Parallel::No && (ffn_norm || !recipe.ffn_norm_optional) {
            vecs.push((t(&format!("{}.weight", recipe.ffn_norm_tensor)), vec![n_embd as u64], norm(&mut rng, n_embd)));
            if norm_bias {
                vecs.push((t("ffn_norm.bias"), vec![n_embd as u64], bias(&mut rng, n_embd)));
            }
        }
        if moe.is_some() && il >= lead {
            // the router (its logits 3× wider than the matrices' spread, so
            // that a few tokens leave some experts unchosen), the experts,
            // the shared expert
            mats(&mut rng, t("ffn_gate_inp.weight"), n_embd, n_expert, 1, 3.0);
            mats(&mut rng, t("ffn_gate_exps.weight"), n_embd, ff_exp, n_expert, 1.0);
            mats(&mut rng, t("ffn_up_exps.weight"), n_embd, ff_exp, n_expert, 1.0);
            mats(&mut rng, t("ffn_down_exps.weight"), ff_exp, n_embd, n_expert, 1.0);
            if shared != SharedExpert::None {
                mat(&mut rng, t("ffn_gate_shexp.weight"), n_embd, n_shexp);
                mat(&mut rng, t("ffn_up_shexp.weight"), n_embd, n_shexp);
                mat(&mut rng, t("ffn_down_shexp.weight"), n_shexp, n_embd);
            }
            if probs_b && moe.is_some_and(|m| m.selection_bias) {
                // (of the sigmoid probabilities' order: it moves the choice)
                vecs.push((t("exp_probs_b.bias"), vec![n_expert as u64], bias(&mut rng, n_expert)));
            }
            if shared == SharedExpert::SigmoidGated {
                let s = 1.0 / (n_embd as f32).sqrt();
                vecs.push((
                    t("ffn_gate_inp_shexp.weight"),
                    vec![n_embd as u64],
                    (0..n_embd).map(|_| rng.uniform() * s).collect(),
                ));
            }
            if wanted(recipe.proj_bias) {
                vecs.push((t("attn_output.bias"), vec![n_embd as u64], bias(&mut rng, n_embd)));
            }
            if moe.is_some_and(|m| m.biases) {
                // the router's and each expert's biases (expert e's in row e)
                for (name, ne) in [
                    ("ffn_gate_inp.bias", vec![n_expert]),
                    ("ffn_gate_exps.bias", vec![ff_exp, n_expert]),
                    ("ffn_up_exps.bias", vec![ff_exp, n_expert]),
                    ("ffn_down_exps.bias", vec![n_embd, n_expert]),
                ] {
                    let n = ne.iter().product();
                    vecs.push((t(name), ne.iter().map(|&d| d as u64).collect(), bias(&mut rng, n)));
                }
            }
            continue;
        }
        let gated = recipe.ffn != Ffn::Gelu;
        let from_file = recipe.encoder.is_some_and(|e| e.ffn_from_file);
        // (jina-bert-v2: ffn_kind=1 a gate, 2 an up of both halves)
        let up_rows = if from_file && ffn_kind == 2 { 2 * n_ff } else { n_ff };
        match recipe.gate_up {
            _ if from_file => {
                if ffn_kind == 1 {
                    mat(&mut rng, t("ffn_gate.weight"), n_embd, n_ff);
                }
                mat(&mut rng, t("ffn_up.weight"), n_embd, up_rows);
            }
            GateUp::Split if gated => {
                mat(&mut rng, t("ffn_gate.weight"), n_embd, n_ff);
                mat(&mut rng, t("ffn_up.weight"), n_embd, n_ff);
            }
            GateUp::Split => mat(&mut rng, t("ffn_up.weight"), n_embd, n_ff),
            GateUp::Fused => mat(&mut rng, t("ffn_up.weight"), n_embd, 2 * n_ff),
        }
        mat(&mut rng, t("ffn_down.weight"), n_ff, n_embd);
        if wanted(recipe.proj_bias) {
            let mut b = vec![("attn_output.bias", n_embd), ("ffn_up.bias", up_rows), ("ffn_down.bias", n_embd)];
            // (nomic-bert's FFN has none)
            if recipe.gate_up == GateUp::Split && gated && !recipe.encoder.is_some_and(|e| e.ffn_bias_unused) {
                b.push(("ffn_gate.bias", n_ff));
            }
            for (name, n) in b {
                vecs.push((t(name), vec![n as u64], bias(&mut rng, n)));
            }
        }
    }
    if cls && recipe.rank_head {
        // (qwen3's rerankers: cls.output alone)
        mat(&mut rng, "cls.output.weight".into(), n_embd, labels.max(1));
    }
    // (gemma3's test models tie it too, as Gemma 3's files do)
    if !recipe.tied_output && arch != "gemma3" && !encoder && !tied {
        mat(&mut rng, "output.weight".into(), n_embd, n_vocab);
    }
    if wanted(recipe.output_bias) {
        vecs.push(("output.bias".into(), vec![n_vocab as u64], bias(&mut rng, n_vocab)));
    }
    let bytes: Vec<(String, Vec<u64>, Vec<u8>)> =
        tensors.into_inner().into_iter().chain(vecs).map(|(n, ne, d)| (n, ne, f32_bytes(&d))).collect();
    let mut block_rng = Rng(seed ^ 0xb10c);
    // (the F32 tensors borrowed, not copied: a 1.7B model is 8 GB of them)
    type Typed<'a> = (&'a String, GgmlType, &'a Vec<u64>, Cow<'a, [u8]>);
    let typed: Vec<Typed> = bytes
        .iter()
        .map(|(name, ne, data)| match blocks {
            Some(ty)
                if (name.starts_with("blk.") || name == "output.weight")
                    && ne.len() >= 2
                    && ne[0] % ty.block_size() as u64 == 0 =>
            {
                let f: Vec<f32> = data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
                (name, ty, ne, Cow::Owned(random_blocks(ty, &f, ne[0] as usize, &mut block_rng)))
            }
            _ => (name, GgmlType::F32, ne, Cow::Borrowed(data.as_slice())),
        })
        .collect();
    for (name, ty, ne, data) in &typed {
        w.add_tensor(name, *ty, ne, data.as_ref());
    }
    w.set("general.file_type", OwnedValue::U32(0));
    w.write_file(Path::new(out_path)).expect("write the model");
}

/// Random blocks of `ty` in place of the weights `f` (rows of `cols`): any
/// bytes are valid blocks of the lattice types, which minfer cannot quantize
/// to yet; each block's scale is set so that the matrix keeps the root mean
/// square of `f` (IQ1_M's f16 scale lives in the top nibbles of its scale
/// words).
fn random_blocks(ty: GgmlType, f: &[f32], cols: usize, rng: &mut Rng) -> Vec<u8> {
    let (bs, ts) = (ty.block_size(), ty.type_size());
    let n_blocks = f.len() / bs;
    let mut q: Vec<u8> = (0..n_blocks * ts).map(|_| rng.next() as u8).collect();
    let set_scale = |blk: &mut [u8], d: f32| {
        let h = u16::from_le_bytes(llama::quant::f32_to_f16(d));
        if ty == GgmlType::IQ1_M {
            for k in 0..4 {
                blk[49 + 2 * k] = (blk[49 + 2 * k] & 0x0f) | ((((h >> (4 * k)) & 15) as u8) << 4);
            }
        } else {
            blk[..2].copy_from_slice(&h.to_le_bytes());
        }
    };
    // (each block's scale 0.5..1.5 times one of the whole matrix)
    let jitter: Vec<f32> = (0..n_blocks).map(|_| 1.0 + 0.5 * rng.uniform()).collect();
    for (blk, &j) in q.chunks_exact_mut(ts).zip(&jitter) {
        set_scale(blk, j);
    }
    let rms = |v: &[f32]| (v.iter().map(|x| (x * x) as f64).sum::<f64>() / v.len() as f64).sqrt() as f32;
    let mut deq = vec![0f32; f.len()];
    let row = ty.row_size(cols as u64).expect("row size") as usize;
    for (r, out) in deq.chunks_exact_mut(cols).enumerate() {
        llama::quant::dequantize_row(ty, &q[r * row..(r + 1) * row], out).expect("dequantize");
    }
    let k = rms(f) / rms(&deq);
    for (blk, &j) in q.chunks_exact_mut(ts).zip(&jitter) {
        set_scale(blk, j * k);
    }
    q
}

/// The keys a family's test model sets beyond the shared ones: values that
/// make its switches bite at these sizes (a window of 4 tokens, caps and
/// multipliers far from 1).
fn family_keys(arch: &str) -> Vec<(&'static str, OwnedValue)> {
    use OwnedValue::F32;
    match arch {
        "gemma3" => vec![("attention.sliding_window", OwnedValue::U32(4))],
        "gemma2" => vec![
            ("attention.sliding_window", OwnedValue::U32(4)),
            ("attn_logit_softcapping", F32(1.5)),
            ("final_logit_softcapping", F32(2.0)),
        ],
        "granite" | "granitemoe" => vec![
            ("logit_scale", F32(2.5)),
            ("residual_scale", F32(0.5)),
            ("embedding_scale", F32(3.0)),
            ("attention.scale", F32(0.3)),
        ],
        "cohere2" => vec![("attention.sliding_window", OwnedValue::U32(4)), ("logit_scale", F32(0.625))],
        "mistral3" => vec![
            ("attention.temperature_scale", F32(0.3)),
            ("rope.scaling.yarn_log_multiplier", F32(0.7)),
            ("rope.scaling.yarn_beta_fast", F32(16.0)),
            ("rope.scaling.yarn_beta_slow", F32(2.0)),
        ],
        // (its 64-layer model slides: layers=64 and this window)
        "exaone4" => vec![("attention.sliding_window", OwnedValue::U32(4))],
        "gpt-oss" => vec![("attention.sliding_window", OwnedValue::U32(4))],
        // (a window of 8 positions, 4 each way: the test sequences are longer)
        "gemma-embedding" => vec![("attention.sliding_window", OwnedValue::U32(8))],
        "modern-bert" => vec![("attention.sliding_window", OwnedValue::U32(8)), ("rope.freq_base_swa", F32(160000.0))],
        _ => Vec::new(),
    }
}
