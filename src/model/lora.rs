//! LoRA adapters (`llama_adapter_lora_init`): a GGUF file with
//! `general.type = adapter`, `adapter.type = lora`, the base model's
//! architecture, an optional `adapter.lora.alpha` and aLoRA invocation
//! tokens, and a pair of low-rank matrices `NAME.lora_a` / `NAME.lora_b` for
//! each adapted weight `NAME` of the base model. Read and checked in the
//! order and with the messages of the reference's
//! `llama_adapter_lora_init_impl`; applied by `context::lora` (the base
//! weights are never modified or copied).
//!
//! The adapter's tensors stay in its file's mapping, as the model's do.
//! Shapes (ggml's ne, innermost first):
//! - a weight `W` [n_in, n_out]: `lora_a` [n_in, rank], `lora_b` [rank, n_out];
//!   the product adds `scale · B (A x)`;
//! - `token_embd.weight` [n_embd, n_vocab] (a lookup, so A and B swap
//!   roles): `lora_a` [rank, n_vocab] (a row per token), `lora_b`
//!   [rank, n_embd].

use super::metadata::Metadata;
use super::Model;
use crate::error::{Error, Result};
use crate::gguf::{GgufFile, TensorInfo, Value};
use std::collections::{BTreeMap, HashMap};

/// The name of the token-embedding weight, whose pair is read by row.
pub const TOKEN_EMBD: &str = "token_embd.weight";

/// One adapted weight's pair of matrices.
#[derive(Debug, Clone)]
pub struct LoraPair {
    /// [n_in, rank] (token_embd: [rank, n_vocab])
    pub a: TensorInfo,
    /// [rank, n_out] (token_embd: [rank, n_embd])
    pub b: TensorInfo,
}

impl LoraPair {
    /// The rank r of the update (B's ne[0]).
    pub fn rank(&self) -> usize {
        self.b.ne[0] as usize
    }

    /// The factor of B·A for an adapter of `alpha` set at `adapter_scale`:
    /// `adapter_scale · alpha / rank`, or `adapter_scale` when alpha is 0
    /// (the reference's `llama_adapter_lora_weight::get_scale`, in f32 and
    /// its order).
    pub fn scale(&self, alpha: f32, adapter_scale: f32) -> f32 {
        let rank = self.b.ne[0] as f32;
        if alpha != 0.0 {
            adapter_scale * alpha / rank
        } else {
            adapter_scale
        }
    }
}

/// A loaded adapter. Shared (`Arc`) by its C handle and the contexts that
/// apply it, so freeing the handle never pulls it from under a decode.
pub struct LoraAdapter {
    pub file: GgufFile,
    /// The scalar key/value pairs (`llama_adapter_meta_*`).
    pub metadata: Metadata,
    /// `adapter.lora.alpha` (0 when absent: the scale is then the caller's).
    pub alpha: f32,
    /// `adapter.alora.invocation_tokens` (empty for a plain LoRA).
    pub invocation_tokens: Vec<i32>,
    /// By the base weight's tensor name.
    pub pairs: HashMap<String, LoraPair>,
    /// The address of the model it was checked against: it applies to that
    /// model's contexts only.
    pub model_id: usize,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::invalid(msg.into())
}

/// A string key, "" when absent (the reference's `get_kv_str`); a key of
/// another type is an error (the reference asserts).
fn kv_str<'f>(file: &'f GgufFile, key: &str) -> Result<&'f [u8]> {
    match file.find_key(key).map(|i| file.kv(i).1) {
        None => Ok(b""),
        Some(Value::Str(s)) => Ok(file.str_bytes(&s)),
        Some(v) => Err(invalid(format!("{key} has type {:?}, want a string", v.gguf_type()))),
    }
}

impl LoraAdapter {
    /// Reads the adapter in `file` and checks it against `model` (whose
    /// address is `model_id`).
    pub fn load(model: &Model, model_id: usize, file: GgufFile) -> Result<LoraAdapter> {
        // --- metadata
        let general_type = kv_str(&file, "general.type")?;
        if general_type != b"adapter" {
            return Err(invalid(format!(
                "expect general.type to be 'adapter', but got: {}",
                String::from_utf8_lossy(general_type)
            )));
        }
        if kv_str(&file, "general.architecture")? != model.arch_name.as_bytes() {
            return Err(invalid("model arch and LoRA arch mismatch"));
        }
        let adapter_type = kv_str(&file, "adapter.type")?;
        if adapter_type != b"lora" {
            return Err(invalid(format!(
                "expect adapter.type to be 'lora', but got: {}",
                String::from_utf8_lossy(adapter_type)
            )));
        }
        let alpha = match file.get("adapter.lora.alpha") {
            None => 0.0,
            Some(Value::F32(a)) => a,
            Some(v) => return Err(invalid(format!("adapter.lora.alpha has type {:?}, want f32", v.gguf_type()))),
        };
        let key = "adapter.alora.invocation_tokens";
        let invocation_tokens = match file.get(key) {
            None => Vec::new(),
            Some(Value::Array(a)) => file
                .array_u32(&a)
                .ok_or_else(|| invalid(format!("invalid gguf element type for {key}")))?
                .into_iter()
                .map(|t| t as i32)
                .collect(),
            Some(_) => return Err(invalid(format!("invalid gguf type for {key}"))),
        };

        // --- pair the tensors by base name (sorted, so that the first
        // error is the reference's: it walks a std::map)
        let mut halves: BTreeMap<String, (Option<TensorInfo>, Option<TensorInfo>)> = BTreeMap::new();
        for t in file.tensors() {
            if t.name.ends_with(".lora_a") {
                let base = t.name.replace(".lora_a", "");
                halves.entry(base).or_default().0 = Some(t);
            } else if t.name.ends_with(".lora_b") {
                let base = t.name.replace(".lora_b", "");
                halves.entry(base).or_default().1 = Some(t);
            } else if t.name.ends_with("_norm.weight") {
                // (the reference skips norm vectors too)
            } else {
                return Err(invalid(format!("LoRA tensor '{}' has unexpected suffix", t.name)));
            }
        }

        // --- check each pair against the model's tensor
        let weights = model.weights.as_ref().ok_or_else(|| invalid("the model has no weights (vocab_only)"))?;
        let tied_output = weights.output.as_ref().is_some_and(|o| o.info.name == TOKEN_EMBD);
        let mut pairs = HashMap::with_capacity(halves.len());
        for (name, halves) in halves {
            let (Some(a), Some(b)) = halves else {
                return Err(invalid(format!("LoRA tensor pair for '{name}' is missing one component")));
            };
            let base = model.files.iter().find_map(|f| f.find_tensor(&name)).ok_or_else(|| {
                invalid(format!("LoRA tensor '{name}' does not exist in base model (hint: maybe wrong base model?)"))
            })?;
            let is_token_embd = name.ends_with(TOKEN_EMBD);
            if is_token_embd {
                if base.ne[0] != b.ne[1] || base.ne[1] != a.ne[1] {
                    return Err(invalid(format!(
                        "tensor '{name}' has incorrect shape (hint: maybe wrong base model?)"
                    )));
                }
            } else {
                if base.ne[0] != a.ne[0] || base.ne[1] != b.ne[1] {
                    return Err(invalid(format!(
                        "tensor '{name}' has incorrect shape (hint: maybe wrong base model?)"
                    )));
                }
                if a.ne[1] != b.ne[0] {
                    return Err(invalid(
                        "lora_a tensor is not transposed (hint: adapter from \"finetune\" example is no longer supported)",
                    ));
                }
            }
            // --- what minfer adds: where the reference would abort, or
            // multiply in a way not emulated yet
            // (an expert tensor's pair has one matrix per expert, as many as
            // the model's: the reference's MUL_MAT_ID reads them by id)
            let experts = base.ne[2];
            if a.ne[2] != experts || b.ne[2] != experts {
                return Err(invalid(format!(
                    "LoRA tensor pair for '{name}' has {} and {} matrices, the model's tensor {experts}",
                    a.ne[2], b.ne[2]
                )));
            }
            if is_token_embd && tied_output {
                // (the reference's output head is the same tensor, so it
                // multiplies the swapped pair there too: its graph asserts)
                return Err(invalid(format!(
                    "LoRA tensor '{name}': the model's output head is tied to its token embeddings, which the reference cannot adapt (its graph asserts)"
                )));
            }
            for t in [&a, &b] {
                if t.n_dims > 3 || t.ne[3] != 1 {
                    return Err(invalid(format!("LoRA tensor '{}' is not a matrix or a stack of them", t.name)));
                }
                // (the token-embedding A is read by row, not multiplied)
                if is_token_embd && std::ptr::eq(t, &a) {
                    continue;
                }
                crate::kernels::check_type(t.ggml_type, t.ne[0] as usize)
                    .map_err(|e| invalid(format!("LoRA tensor '{}': {e}", t.name)))?;
            }
            if is_token_embd && !crate::quant::is_supported(a.ggml_type) {
                return Err(invalid(format!("LoRA tensor '{}': type {} cannot be read", a.name, a.ggml_type)));
            }
            if file.tensor_data(&a).len() as u64 != a.nbytes || file.tensor_data(&b).len() as u64 != b.nbytes {
                return Err(invalid(format!(
                    "LoRA tensor '{name}' data is not within the file bounds, file is corrupted or incomplete"
                )));
            }
            pairs.insert(name, LoraPair { a, b });
        }
        let metadata = Metadata::from_gguf(&file);
        Ok(LoraAdapter { file, metadata, alpha, invocation_tokens, pairs, model_id })
    }

    /// The pair adapting the weight named `name`, if any.
    pub fn pair(&self, name: &str) -> Option<&LoraPair> {
        self.pairs.get(name)
    }
}
