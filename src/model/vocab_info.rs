//! The part of the vocabulary the model loader needs: its tokenizer model and
//! its size. The tokenizers themselves live in a later module (vocab/).

use crate::error::{Error, Result};
use crate::gguf::{GgufFile, Value};

/// llama_vocab_type values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VocabType {
    None = 0,
    Spm = 1,
    Bpe = 2,
    Wpm = 3,
    Ugm = 4,
    Rwkv = 5,
    Plamo2 = 6,
}

#[derive(Debug, Clone)]
pub struct VocabInfo {
    pub kind: VocabType,
    /// `tokenizer.ggml.model` as written in the file.
    pub model_name: String,
    pub n_tokens: u32,
}

impl VocabInfo {
    pub fn read(file: &GgufFile) -> Result<VocabInfo> {
        let model_name = match file.get("tokenizer.ggml.model") {
            None => "no_vocab".to_string(),
            Some(Value::Str(s)) => String::from_utf8_lossy(file.str_bytes(s)).into_owned(),
            Some(v) => return Err(Error::model(format!("tokenizer.ggml.model has type {}, expected a string", v.type_name()))),
        };
        let kind = match model_name.as_str() {
            "no_vocab" | "none" => VocabType::None,
            "llama" => VocabType::Spm,
            "gpt2" => VocabType::Bpe,
            "bert" => VocabType::Wpm,
            "t5" => VocabType::Ugm,
            "rwkv" => VocabType::Rwkv,
            "plamo2" => VocabType::Plamo2,
            other => return Err(Error::model(format!("unknown tokenizer: '{other}'"))),
        };
        let n_tokens = match file.get("tokenizer.ggml.tokens") {
            None if kind == VocabType::None => 0,
            None => return Err(Error::model("tokenizer.ggml.tokens is missing")),
            Some(Value::Array(a)) if a.elem_type == 8 => {
                u32::try_from(a.len).map_err(|_| Error::model("tokenizer.ggml.tokens has too many entries"))?
            }
            Some(Value::Array(a)) => {
                return Err(Error::model(format!(
                    "tokenizer.ggml.tokens is an array of element type {}, expected strings",
                    crate::gguf::type_name_of(a.elem_type)
                )))
            }
            Some(v) => {
                return Err(Error::model(format!(
                    "tokenizer.ggml.tokens has type {}, expected an array of strings",
                    v.type_name()
                )))
            }
        };
        Ok(VocabInfo { kind, model_name, n_tokens })
    }
}
