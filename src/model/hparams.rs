//! Hyperparameters, read from the GGUF keys the reference reads (with the
//! caller's kv overrides first), and checked so that later stages can divide
//! and index by them safely.

use super::metadata::{Override, Overrides};
use crate::error::{Error, Result};
use crate::gguf::{GgufFile, Value};

/// LLAMA_MAX_LAYERS of the reference.
pub const MAX_LAYERS: u32 = 512;

/// LLAMA_MAX_EXPERTS of the reference.
pub const MAX_EXPERTS: u32 = 1024;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct HParams {
    pub n_ctx_train: u32,
    pub n_embd: u32,
    pub n_layer: u32,
    /// Per layer; `n_head[0]` is what llama_model_n_head reports.
    pub n_head: Vec<u32>,
    pub n_head_kv: Vec<u32>,
    pub n_ff: Vec<u32>,
    /// Experts per mixture-of-experts layer (`%s.expert_count`; 0: dense
    /// layers) and how many each token is routed to
    /// (`%s.expert_used_count`, one value or one per layer).
    pub n_expert: u32,
    pub n_expert_used: Vec<u32>,
    /// The rows of each expert's FFN (`%s.expert_feed_forward_length`,
    /// where the family reads it; else `n_ff`).
    pub n_ff_exp: Vec<u32>,
    /// `%s.expert_feed_forward_length` as read (0 where the family does not
    /// read it): what the reference's saver writes.
    pub n_ff_exp_key: u32,
    /// The rows of the shared expert's FFN
    /// (`%s.expert_shared_feed_forward_length`, where the family reads it).
    pub n_ff_shexp: u32,
    /// `%s.expert_shared_feed_forward_length` as read (0 where the family
    /// does not read it): what the reference's saver writes.
    pub n_ff_shexp_key: u32,
    /// The keys of the families that read their router's recipe from the
    /// file (dots1: `arch::Moe::from_keys`), as read (0, false where the
    /// family reads none; what the reference's saver writes):
    /// `%s.expert_shared_count`, `%s.leading_dense_block_count` (the first
    /// layers are dense), `%s.expert_weights_scale` (the chosen weights
    /// times this, unless 0 or 1), `%s.expert_weights_norm`,
    /// `%s.expert_gating_func` (1 softmax, 2 sigmoid, 3 softmax of the
    /// chosen logits).
    pub n_expert_shared: u32,
    pub n_layer_dense_lead: u32,
    pub expert_weights_scale: f32,
    pub expert_weights_norm: bool,
    pub expert_gating_func: u32,
    pub n_embd_head_k: u32,
    pub n_embd_head_v: u32,
    pub n_rot: u32,
    pub n_swa: u32,
    pub n_vocab: u32,
    pub rope_freq_base_train: f32,
    pub rope_freq_base_train_swa: f32,
    pub rope_freq_scale_train: f32,
    /// The frequency scale of sliding-window layers (the reference's 1).
    pub rope_freq_scale_train_swa: f32,
    /// Sliding-window layers rope without YaRN (olmo2).
    pub swa_plain_rope: bool,
    pub rope_scaling: RopeScaling,
    /// The context the model was trained at before scaling
    /// (`rope.scaling.original_context_length`, else n_ctx_train).
    pub n_ctx_orig_yarn: u32,
    /// `rope.scaling.attn_factor` (1): multiplies the rope magnitude.
    pub rope_attn_factor: f32,
    /// `rope.scaling.yarn_log_multiplier` where the family reads it (mistral3).
    pub rope_yarn_log_mul: f32,
    /// The reference's YaRN defaults (-1: from the scaling type; 1; 32; 1),
    /// which a family may read from its keys.
    pub yarn_ext_factor: f32,
    pub yarn_attn_factor: f32,
    pub yarn_beta_fast: f32,
    pub yarn_beta_slow: f32,
    /// `%s.rope.scaling.finetuned` (the reference's false when absent).
    pub rope_finetuned: bool,
    /// Whether the layers have rope (granite: its `rope_finetuned`, which
    /// defaults to true there; true for the others).
    pub use_rope: bool,
    pub f_norm_rms_eps: f32,
    /// LayerNorm's epsilon (`%s.attention.layer_norm_epsilon`).
    pub f_norm_eps: f32,
    /// Sliding-window attention per layer, non-zero where a layer slides
    /// (gemma3: 5 of every 6), as the file gave it (the saver writes it back).
    pub swa_layers: Vec<u32>,
    /// Whether the family set a sliding-window pattern (the reference's
    /// swa_type STANDARD; `slide`).
    pub swa: bool,
    /// Scale of q·k; 0 means 1/sqrt(head size), the reference's default.
    pub f_attention_scale: f32,
    /// The reference's 30 unless the family reads its key; applied only
    /// where the family's recipe says (`Block::logit_softcap`).
    pub f_final_logit_softcapping: f32,
    /// The reference's 50 unless the family reads its key; applied only
    /// where the recipe says (`Block::attn_softcap`).
    pub f_attn_logit_softcapping: f32,
    /// Granite's multipliers, 0 (not applied) unless the family reads
    /// them: the input rows times `f_embedding_scale`, each sublayer's
    /// output times `f_residual_scale` before its residual add, the logits
    /// divided by `f_logit_scale`.
    pub f_embedding_scale: f32,
    pub f_residual_scale: f32,
    pub f_logit_scale: f32,
    /// Llama 4's attention temperature (mistral3): q is multiplied by
    /// log(floor(pos / floor_scale) + 1) · scale + 1 when `scale` is not 0.
    pub f_attn_temp_scale: f32,
    pub n_attn_temp_floor_scale: u32,
    /// The layers that do not slide attend without rope (cohere2, exaone4
    /// with sliding windows).
    pub nope_global: bool,
    /// Every n-th layer has no rope where the recipe says
    /// (`Block::nope_layers`); the reference's default 4.
    pub n_no_rope_layer_step: u32,
    /// `%s.attention.causal` (true when absent): the attention of a context
    /// whose `attention_type` is unspecified.
    pub causal_attn: bool,
    /// `%s.pooling_type` (llama_pooling_type; -1, UNSPECIFIED, when absent):
    /// the pooling of a context whose `pooling_type` is unspecified (NONE
    /// when the model's is unspecified too).
    pub pooling_type: i32,
    /// `%s.classifier.pooling_type` (-1 when absent): MEAN pools before
    /// the classifier head of RANK pooling, else its first token.
    pub pooling_type_cls: i32,
    /// The classifier head's outputs: the number of
    /// `%s.classifier.output_labels` (1 when absent).
    pub n_cls_out: u32,
    /// `%s.classifier.output_labels` (llama_model_cls_label).
    pub cls_labels: Vec<std::ffi::CString>,
    /// `tokenizer.ggml.token_type_count` (0 when absent): the rows of a
    /// BERT model's `token_types` embedding.
    pub n_token_types: u32,
    /// The gated FFN's activation where the file says one other than the
    /// family's (modern-bert's `%s.hidden_activation`: silu, reglu).
    pub ffn_act: Option<super::arch::Ffn>,
    /// The dense modules' inner width (gemma-embedding's
    /// `%s.dense_2_feat_out`, `%s.dense_3_feat_in`; 0 when absent).
    pub dense_2_feat_out: u32,
    pub dense_3_feat_in: u32,
}

/// `%s.rope.scaling.type` (llama_rope_scaling_type values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RopeScaling {
    None = 0,
    /// The frequency scale alone (the default).
    #[default]
    Linear = 1,
    /// YaRN: the frequencies blended between scaled and not by dimension,
    /// and a magnitude factor (`context::rope`).
    Yarn = 2,
    /// LongRoPE: per-dimension factors, `rope_factors_long`/`_short`.
    LongRope = 3,
}

impl RopeScaling {
    pub fn from_i32(v: i32) -> Option<RopeScaling> {
        [RopeScaling::None, RopeScaling::Linear, RopeScaling::Yarn, RopeScaling::LongRope]
            .into_iter()
            .find(|s| *s as i32 == v)
    }
}

/// Typed reads of `{arch}.*` keys, overrides first.
pub struct Keys<'a> {
    pub file: &'a GgufFile,
    pub arch: &'a str,
    pub overrides: &'a Overrides,
}

impl Keys<'_> {
    pub fn full(&self, suffix: &str) -> String {
        suffix.replace("%s", self.arch)
    }

    /// An unsigned integer key (any integer GGUF type that fits u32).
    pub fn u32(&self, key: &str) -> Result<Option<u32>> {
        let key = self.full(key);
        if let Some(Override::Int(v)) = self.overrides.get(&key) {
            return u32::try_from(*v)
                .map(Some)
                .map_err(|_| Error::model(format!("override of '{key}' is out of range: {v}")));
        }
        match self.file.get(&key).as_ref() {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(x) => {
                    u32::try_from(x).map(Some).map_err(|_| Error::model(format!("key '{key}' is out of range: {x}")))
                }
                None => {
                    Err(Error::model(format!("key '{key}' has type {}, expected an unsigned integer", v.type_name())))
                }
            },
        }
    }

    pub fn required_u32(&self, key: &str) -> Result<u32> {
        self.u32(key)?.ok_or_else(|| Error::model(format!("key not found in model: {}", self.full(key))))
    }

    pub fn required_f32(&self, key: &str) -> Result<f32> {
        self.f32(key)?.ok_or_else(|| Error::model(format!("key not found in model: {}", self.full(key))))
    }

    pub fn f32(&self, key: &str) -> Result<Option<f32>> {
        let key = self.full(key);
        if let Some(Override::Float(v)) = self.overrides.get(&key) {
            return Ok(Some(*v as f32));
        }
        match self.file.get(&key).as_ref() {
            None => Ok(None),
            Some(Value::F32(x)) => Ok(Some(*x)),
            Some(Value::F64(x)) => Ok(Some(*x as f32)),
            Some(v) => Err(Error::model(format!("key '{key}' has type {}, expected f32", v.type_name()))),
        }
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>> {
        let key = self.full(key);
        if let Some(Override::Bool(v)) = self.overrides.get(&key) {
            return Ok(Some(*v));
        }
        match self.file.get(&key) {
            None => Ok(None),
            Some(Value::Bool(x)) => Ok(Some(x)),
            Some(v) => Err(Error::model(format!("key '{key}' has type {}, expected bool", v.type_name()))),
        }
    }

    /// A string key, as raw bytes.
    pub fn string(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let key = self.full(key);
        if let Some(Override::Str(v)) = self.overrides.get(&key) {
            return Ok(Some(v.as_bytes().to_vec()));
        }
        match self.file.get(&key) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(self.file.str_bytes(&s).to_vec())),
            Some(v) => Err(Error::model(format!("key '{key}' has type {}, expected string", v.type_name()))),
        }
    }

    /// A u32 key that may instead be an array of one value per layer.
    pub fn u32_per_layer(&self, key: &str, n_layer: u32) -> Result<Option<Vec<u32>>> {
        let full = self.full(key);
        if let Some(Value::Array(a)) = self.file.get(&full).as_ref() {
            let values = self
                .file
                .array_u32(a)
                .or_else(|| self.file.array_i32(a).map(|v| v.into_iter().map(|x| x.max(0) as u32).collect()))
                .ok_or_else(|| Error::model(format!("key '{full}' is an array of the wrong element type")))?;
            if values.len() != n_layer as usize {
                return Err(Error::model(format!(
                    "key '{full}' has {} values, expected one per layer ({n_layer})",
                    values.len()
                )));
            }
            return Ok(Some(values));
        }
        Ok(self.u32(key)?.map(|v| vec![v; n_layer as usize]))
    }
}

/// Which layers use sliding-window attention (the reference's
/// `load_swa_pattern`): `%s.attention.sliding_window_pattern` as an array
/// of per-layer flags (bool, u32 or i32; missing entries are 0), or as a
/// period n — every n-th layer is global, the others slide (n = 0: all
/// slide) — with `default_period` when absent. One entry per layer of
/// `n_layer_all`; layers past `n_layer` (next-token layers) are 0.
pub fn swa_layers(keys: &Keys, n_layer_all: u32, n_layer: u32, default_period: u32) -> Result<Vec<u32>> {
    let key = keys.full("%s.attention.sliding_window_pattern");
    if let Some(Value::Array(a)) = keys.file.get(&key).as_ref() {
        let f = keys.file;
        let v: Vec<u32> = f
            .array_u32(a)
            .or_else(|| f.array_i32(a).map(|v| v.into_iter().map(|x| x as u32).collect()))
            .or_else(|| f.array_vec::<bool>(a).map(|b| b.into_iter().map(u32::from).collect()))
            .ok_or_else(|| Error::model(format!("{key} is an array of the wrong element type")))?;
        if v.len() > MAX_LAYERS as usize {
            return Err(Error::model(format!("array length {} for key {key} exceeds max {MAX_LAYERS}", v.len())));
        }
        return Ok((0..n_layer_all as usize).map(|il| v.get(il).copied().unwrap_or(0)).collect());
    }
    let n = keys.u32("%s.attention.sliding_window_pattern")?.unwrap_or(default_period);
    Ok((0..n_layer_all).map(|il| u32::from(il < n_layer && (n == 0 || il % n < n - 1))).collect())
}

impl HParams {
    /// Sets the sliding-window pattern ([`swa_layers`], every
    /// `default_period`-th layer global unless the file says otherwise).
    pub fn slide(&mut self, keys: &Keys, default_period: u32) -> Result<()> {
        self.swa_layers = swa_layers(keys, self.n_layer, self.n_layer, default_period)?;
        self.swa = true;
        Ok(())
    }

    /// Whether layer `il` uses sliding-window attention.
    pub fn is_swa(&self, il: usize) -> bool {
        self.swa_layers.get(il).is_some_and(|&l| l != 0)
    }

    /// Reads the hyperparameters every architecture shares (the reference's
    /// llama_model_base::load_hparams); the family's own keys come next
    /// (`Family::read_hparams`), then `check_runnable`.
    pub fn read(keys: &Keys, n_vocab: u32) -> Result<HParams> {
        let n_ctx_train = keys.required_u32("%s.context_length")?;
        let n_embd = keys.required_u32("%s.embedding_length")?;
        let n_layer = keys.required_u32("%s.block_count")?;
        if n_layer == 0 || n_layer > MAX_LAYERS {
            return Err(Error::model(format!(
                "{} = {n_layer} is out of range [1, {MAX_LAYERS}]",
                keys.full("%s.block_count")
            )));
        }
        let n_ff = keys.u32_per_layer("%s.feed_forward_length", n_layer)?.unwrap_or_else(|| vec![0; n_layer as usize]);
        let n_head =
            keys.u32_per_layer("%s.attention.head_count", n_layer)?.unwrap_or_else(|| vec![0; n_layer as usize]);
        let n_head_kv = keys.u32_per_layer("%s.attention.head_count_kv", n_layer)?.unwrap_or_else(|| n_head.clone());

        // (the reference asserts these, aborting; they are refused here)
        let n_expert = keys.u32("%s.expert_count")?.unwrap_or(0);
        let n_expert_used =
            keys.u32_per_layer("%s.expert_used_count", n_layer)?.unwrap_or_else(|| vec![0; n_layer as usize]);
        let used_max = n_expert_used.iter().copied().max().unwrap_or(0);
        if n_expert > MAX_EXPERTS {
            return Err(Error::model(format!("{} = {n_expert} is above {MAX_EXPERTS}", keys.full("%s.expert_count"))));
        }
        if used_max > n_expert || (n_expert > 0 && used_max == 0) {
            return Err(Error::model(format!(
                "{} = {used_max} must be between 1 and {} = {n_expert}",
                keys.full("%s.expert_used_count"),
                keys.full("%s.expert_count")
            )));
        }
        if n_expert > 0 && keys.u32("%s.expert_group_count")?.unwrap_or(0) > 1 {
            return Err(Error::model(format!(
                "not implemented yet: expert groups ({} > 1)",
                keys.full("%s.expert_group_count")
            )));
        }

        let h0 = n_head[0];
        let (mut n_embd_head_k, mut n_embd_head_v, mut n_rot) = (0, 0, 0);
        if let Some(per_head) = n_embd.checked_div(h0) {
            n_embd_head_k = keys.u32("%s.attention.key_length")?.unwrap_or(per_head);
            n_embd_head_v = keys.u32("%s.attention.value_length")?.unwrap_or(per_head);
            n_rot = keys.u32("%s.rope.dimension_count")?.unwrap_or(n_embd_head_k);
        }

        let rope_freq_base_train = keys.f32("%s.rope.freq_base")?.unwrap_or(10000.0);
        let scale = match keys.f32("%s.rope.scaling.factor")? {
            Some(s) => s,
            None => keys.f32("%s.rope.scale_linear")?.unwrap_or(0.0),
        };
        let rope_freq_scale_train = if scale == 0.0 { 1.0 } else { 1.0 / scale };
        let rope_scaling = match keys.string("%s.rope.scaling.type")?.as_deref() {
            None | Some(b"linear") => RopeScaling::Linear,
            Some(b"none") => RopeScaling::None,
            Some(b"yarn") => RopeScaling::Yarn,
            Some(b"longrope") => RopeScaling::LongRope,
            // (the reference aborts on an unknown type)
            Some(kind) => {
                return Err(Error::model(format!(
                    "unknown rope scaling type '{}' ({})",
                    String::from_utf8_lossy(kind),
                    keys.full("%s.rope.scaling.type")
                )))
            }
        };

        // (a label with a NUL byte is cut there, as the reference's c_str())
        let cls_labels: Vec<std::ffi::CString> = match keys.file.get(&keys.full("%s.classifier.output_labels")) {
            Some(Value::Array(a)) => keys
                .file
                .array_strings(&a)
                .ok_or_else(|| {
                    Error::model(format!("{} is not an array of strings", keys.full("%s.classifier.output_labels")))
                })?
                .map(|l| {
                    std::ffi::CString::new(l.split(|&b| b == 0).next().unwrap_or(&[]).to_vec()).unwrap_or_default()
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(HParams {
            n_ctx_train,
            n_embd,
            n_layer,
            n_head,
            n_head_kv,
            n_ff_exp: n_ff.clone(),
            n_ff_exp_key: 0,
            n_ff,
            n_expert,
            n_expert_used,
            n_ff_shexp: 0,
            n_ff_shexp_key: 0,
            n_expert_shared: 0,
            n_layer_dense_lead: 0,
            expert_weights_scale: 0.0,
            expert_weights_norm: false,
            expert_gating_func: 0,
            n_embd_head_k,
            n_embd_head_v,
            n_rot,
            // (the family's own keys: `Family::read_hparams`; these are the
            // reference's defaults)
            n_swa: 0,
            n_vocab,
            rope_freq_base_train,
            // 10000, not the global base, unless the family reads its key
            rope_freq_base_train_swa: 10000.0,
            rope_freq_scale_train,
            rope_freq_scale_train_swa: 1.0,
            swa_plain_rope: false,
            rope_scaling,
            n_ctx_orig_yarn: keys.u32("%s.rope.scaling.original_context_length")?.unwrap_or(n_ctx_train),
            rope_attn_factor: keys.f32("%s.rope.scaling.attn_factor")?.unwrap_or(1.0),
            rope_yarn_log_mul: 0.0,
            yarn_ext_factor: -1.0,
            yarn_attn_factor: 1.0,
            yarn_beta_fast: 32.0,
            yarn_beta_slow: 1.0,
            rope_finetuned: keys.bool("%s.rope.scaling.finetuned")?.unwrap_or(false),
            use_rope: true,
            f_norm_rms_eps: keys.f32("%s.attention.layer_norm_rms_epsilon")?.unwrap_or(0.0),
            f_norm_eps: keys.f32("%s.attention.layer_norm_epsilon")?.unwrap_or(0.0),
            swa_layers: vec![0; n_layer as usize],
            swa: false,
            f_attention_scale: 0.0,
            f_final_logit_softcapping: 30.0,
            f_attn_logit_softcapping: 50.0,
            f_embedding_scale: 0.0,
            f_residual_scale: 0.0,
            f_logit_scale: 0.0,
            nope_global: false,
            f_attn_temp_scale: 0.0,
            n_attn_temp_floor_scale: 0,
            n_no_rope_layer_step: 4,
            causal_attn: keys.bool("%s.attention.causal")?.unwrap_or(true),
            // (the reference's saver writes UNSPECIFIED, -1, as the u32
            // 4294967295, and its loader reads it back as -1)
            pooling_type: match keys.u32("%s.pooling_type")?.map(|p| p as i32) {
                None => -1,
                Some(p @ -1..=4) => p,
                Some(p) => {
                    return Err(Error::model(format!("{} = {p} is not a pooling type", keys.full("%s.pooling_type"))))
                }
            },
            pooling_type_cls: keys.u32("%s.classifier.pooling_type")?.map_or(-1, |p| p.min(4) as i32),
            n_cls_out: if cls_labels.is_empty() { 1 } else { u32::try_from(cls_labels.len()).unwrap_or(u32::MAX) },
            cls_labels,
            ffn_act: None,
            dense_2_feat_out: 0,
            dense_3_feat_in: 0,
            n_token_types: match keys.file.get("tokenizer.ggml.token_type_count").as_ref().and_then(Value::as_u64) {
                Some(n) => u32::try_from(n)
                    .map_err(|_| Error::model(format!("tokenizer.ggml.token_type_count = {n} is out of range")))?,
                None => 0,
            },
        })
    }

    /// The checks a transformer needs before anything divides or indexes by
    /// these numbers (run for the architectures minfer executes).
    pub fn check_runnable(&self, arch: &str) -> Result<()> {
        if self.n_embd == 0 {
            return Err(Error::model(format!("{arch}.embedding_length is 0")));
        }
        for (il, (&h, &hkv)) in self.n_head.iter().zip(&self.n_head_kv).enumerate() {
            if h == 0 {
                return Err(Error::model(format!("layer {il}: {arch}.attention.head_count is 0")));
            }
            if hkv == 0 || h % hkv != 0 {
                return Err(Error::model(format!(
                    "layer {il}: {arch}.attention.head_count_kv = {hkv} does not divide {arch}.attention.head_count = {h}"
                )));
            }
        }
        if self.n_embd_head_k == 0 || self.n_embd_head_v == 0 {
            return Err(Error::model(format!("attention head size is 0 ({arch}.attention.key_length/value_length)")));
        }
        if self.n_rot > self.n_embd_head_k || !self.n_rot.is_multiple_of(2) {
            return Err(Error::model(format!(
                "{arch}.rope.dimension_count = {} must be even and at most the head size {}",
                self.n_rot, self.n_embd_head_k
            )));
        }
        if self.n_vocab == 0 {
            return Err(Error::model("the vocabulary is empty"));
        }
        Ok(())
    }
}
