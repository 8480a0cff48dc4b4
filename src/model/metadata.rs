//! A model's metadata as the C API shows it: every scalar GGUF key with its
//! value as a string (`GgufFile::format_value`, the reference's
//! gguf_kv_to_str), plus the caller's kv overrides, which hyperparameter
//! reads consult first.
//!
//! Deviation: the reference keeps these pairs in an unordered_map, so its
//! index order is libstdc++'s hash order; minfer keeps file order, which is
//! stable and meaningful. The set of pairs is the same.

use crate::gguf::{GgufFile, Value};
use std::collections::HashMap;
use std::ffi::CString;

/// The scalar key/value pairs of a GGUF file, as C strings.
pub struct Metadata {
    pairs: Vec<(CString, CString)>,
    index: HashMap<Vec<u8>, usize>,
}

/// A C string of `bytes` up to the first NUL, as `snprintf("%s")` would see it.
fn c_string_until_nul(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).unwrap_or_default()
}

impl Metadata {
    pub fn from_gguf(file: &GgufFile) -> Metadata {
        let mut pairs = Vec::new();
        let mut index = HashMap::new();
        for i in 0..file.n_kv() {
            let (key, value) = file.kv(i);
            // Arrays are left out, as in the reference.
            if !matches!(value, Value::Array(_)) {
                let text = file.format_value(&value);
                index.insert(key.as_bytes().to_vec(), pairs.len());
                pairs.push((c_string_until_nul(key.as_bytes()), c_string_until_nul(&text)));
            }
        }
        Metadata { pairs, index }
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    pub fn key(&self, i: usize) -> Option<&CString> {
        self.pairs.get(i).map(|p| &p.0)
    }

    pub fn value(&self, i: usize) -> Option<&CString> {
        self.pairs.get(i).map(|p| &p.1)
    }

    pub fn get(&self, key: &[u8]) -> Option<&CString> {
        self.index.get(key).map(|&i| &self.pairs[i].1)
    }
}

/// One `llama_model_kv_override`, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Override {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

/// The caller's kv overrides by key.
#[derive(Debug, Clone, Default)]
pub struct Overrides(pub HashMap<String, Override>);

impl Overrides {
    pub fn get(&self, key: &str) -> Option<&Override> {
        self.0.get(key)
    }
}
