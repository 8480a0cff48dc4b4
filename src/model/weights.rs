//! The weights of the architectures minfer runs, bound by name from the GGUF
//! tensor table with their shapes checked. A weight is a reference to tensor
//! bytes in the mapping; nothing is copied or dequantized here.

use super::arch::{Family, Need};
use super::hparams::HParams;
use crate::error::{Error, Result};
use crate::ggml_type::GgmlType;
use crate::gguf::{GgufFile, TensorInfo};

/// A weight tensor: which file holds it and its table entry.
#[derive(Debug, Clone)]
pub struct Weight {
    pub file: usize,
    pub info: TensorInfo,
}

impl Weight {
    pub fn ty(&self) -> GgmlType {
        self.info.ggml_type
    }
    /// Elements per row (ne[0]).
    pub fn cols(&self) -> usize {
        self.info.ne[0] as usize
    }
    /// Number of rows (product of ne[1..]).
    pub fn rows(&self) -> usize {
        (self.info.n_elements() / self.info.ne[0].max(1) as u64) as usize
    }
}

/// One transformer block. The optional tensors are bound as the family's
/// recipe (`arch::Block`) says: q/k/v biases, q/k norms, post norms.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub attn_norm: Weight,              // [n_embd]
    pub wq: Weight,                     // [n_embd, n_head * head_dim]
    pub wk: Weight,                     // [n_embd, n_head_kv * head_dim]
    pub wv: Weight,                     // [n_embd, n_head_kv * head_dim]
    pub wo: Weight,                     // [n_head * head_dim, n_embd]
    pub bq: Option<Weight>,             // [n_head * head_dim]
    pub bk: Option<Weight>,             // [n_head_kv * head_dim]
    pub bv: Option<Weight>,             // [n_head_kv * head_dim]
    pub q_norm: Option<Weight>,         // [head_dim]
    pub k_norm: Option<Weight>,         // [head_dim]
    pub attn_post_norm: Option<Weight>, // [n_embd]
    pub ffn_norm: Weight,               // [n_embd]
    pub ffn_gate: Weight,               // [n_embd, n_ff]
    pub ffn_up: Weight,                 // [n_embd, n_ff]
    pub ffn_down: Weight,               // [n_ff, n_embd]
    pub ffn_post_norm: Option<Weight>,  // [n_embd]
}

#[derive(Debug, Clone)]
pub struct Weights {
    pub tok_embd: Weight,    // [n_embd, n_vocab]
    pub output_norm: Weight, // [n_embd]
    /// The output head; the token embedding itself when the model ties them.
    pub output: Weight, // [n_embd, n_vocab]
    /// llama3-style rope frequency factors, if present.
    pub rope_freqs: Option<Weight>, // [n_rot / 2]
    pub layers: Vec<LayerWeights>,
}

/// Finds tensors by name across the files and checks their shapes.
struct Binder<'a> {
    files: &'a [GgufFile],
}

impl Binder<'_> {
    fn find(&self, name: &str) -> Option<Weight> {
        self.files.iter().enumerate().find_map(|(file, f)| Some(Weight { file, info: f.find_tensor(name)? }))
    }

    /// A tensor of exactly `shape` (ne order, trailing 1s implied).
    fn optional(&self, name: &str, shape: &[usize]) -> Result<Option<Weight>> {
        let Some(w) = self.find(name) else { return Ok(None) };
        let mut want = [1i64; 4];
        for (d, &n) in shape.iter().enumerate() {
            want[d] = n as i64;
        }
        if w.info.ne != want {
            return Err(Error::model(format!(
                "tensor '{name}' has the wrong shape: {:?}, expected {:?}",
                &w.info.ne[..],
                &want[..shape.len().max(1)]
            )));
        }
        Ok(Some(w))
    }

    fn required(&self, name: &str, shape: &[usize]) -> Result<Weight> {
        self.optional(name, shape)?.ok_or_else(|| Error::model(format!("missing tensor '{name}'")))
    }
}

impl Weights {
    pub fn bind(family: &Family, hp: &HParams, files: &[GgufFile]) -> Result<Weights> {
        let b = Binder { files };
        let recipe = &family.block;
        let n_embd = hp.n_embd as usize;
        let n_vocab = hp.n_vocab as usize;
        let tok_embd = b.required("token_embd.weight", &[n_embd, n_vocab])?;
        let output_norm = b.required("output_norm.weight", &[n_embd])?;
        let output = match recipe.tied_output {
            true => None,
            false => b.optional("output.weight", &[n_embd, n_vocab])?,
        }
        .unwrap_or_else(|| tok_embd.clone());
        let rope_freqs = b.optional("rope_freqs.weight", &[hp.n_rot as usize / 2])?;

        // a tensor the recipe may ask for
        let bind = |need: Need, name: &str, shape: &[usize]| -> Result<Option<Weight>> {
            match need {
                Need::Absent => Ok(None),
                Need::Optional => b.optional(name, shape),
                Need::Required => b.required(name, shape).map(Some),
            }
        };
        let need = |present: bool| if present { Need::Required } else { Need::Absent };
        let mut layers = Vec::with_capacity(hp.n_layer as usize);
        for il in 0..hp.n_layer as usize {
            let n_head = hp.n_head[il] as usize;
            let n_head_kv = hp.n_head_kv[il] as usize;
            let hd_k = hp.n_embd_head_k as usize;
            let hd_v = hp.n_embd_head_v as usize;
            let n_ff = hp.n_ff[il] as usize;
            let t = |s: &str| format!("blk.{il}.{s}");
            let layer = LayerWeights {
                attn_norm: b.required(&t("attn_norm.weight"), &[n_embd])?,
                wq: b.required(&t("attn_q.weight"), &[n_embd, n_head * hd_k])?,
                wk: b.required(&t("attn_k.weight"), &[n_embd, n_head_kv * hd_k])?,
                wv: b.required(&t("attn_v.weight"), &[n_embd, n_head_kv * hd_v])?,
                wo: b.required(&t("attn_output.weight"), &[n_head * hd_v, n_embd])?,
                bq: bind(recipe.qkv_bias, &t("attn_q.bias"), &[n_head * hd_k])?,
                bk: bind(recipe.qkv_bias, &t("attn_k.bias"), &[n_head_kv * hd_k])?,
                bv: bind(recipe.qkv_bias, &t("attn_v.bias"), &[n_head_kv * hd_v])?,
                q_norm: bind(need(recipe.qk_norm), &t("attn_q_norm.weight"), &[hd_k])?,
                k_norm: bind(need(recipe.qk_norm), &t("attn_k_norm.weight"), &[hd_k])?,
                attn_post_norm: bind(need(recipe.post_norms), &t("post_attention_norm.weight"), &[n_embd])?,
                ffn_norm: b.required(&t("ffn_norm.weight"), &[n_embd])?,
                ffn_gate: b.required(&t("ffn_gate.weight"), &[n_embd, n_ff])?,
                ffn_up: b.required(&t("ffn_up.weight"), &[n_embd, n_ff])?,
                ffn_down: b.required(&t("ffn_down.weight"), &[n_ff, n_embd])?,
                ffn_post_norm: bind(need(recipe.post_norms), &t("post_ffw_norm.weight"), &[n_embd])?,
            };
            layers.push(layer);
        }
        Ok(Weights { tok_embd, output_norm, output, rope_freqs, layers })
    }

    /// The one-row weights the forward pass reads (norms, biases, rope
    /// factors), each once.
    pub fn vectors(&self) -> Vec<&Weight> {
        let mut v: Vec<&Weight> = vec![&self.output_norm];
        v.extend(&self.rope_freqs);
        for l in &self.layers {
            v.extend([&l.attn_norm, &l.ffn_norm]);
            v.extend(
                [&l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm, &l.attn_post_norm, &l.ffn_post_norm].into_iter().flatten(),
            );
        }
        v
    }
}
