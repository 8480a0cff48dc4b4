//! A model's metadata as the C API shows it: every scalar GGUF key with its
//! value as a string, formatted as the reference's gguf_kv_to_str does, plus
//! the caller's kv overrides, which hyperparameter reads consult first.
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

/// `std::to_string` of a float: `%f`, with C's spellings of the non-finite.
pub fn c_float_string(v: f64) -> String {
    if v.is_nan() {
        if v.is_sign_negative() { "-nan".into() } else { "nan".into() }
    } else if v.is_infinite() {
        if v < 0.0 { "-inf".into() } else { "inf".into() }
    } else {
        format!("{v:.6}")
    }
}

/// The reference's string form of a scalar value (None for arrays, which the
/// metadata API leaves out).
pub fn scalar_to_string(file: &GgufFile, v: &Value) -> Option<Vec<u8>> {
    Some(match v {
        Value::U8(x) => x.to_string().into_bytes(),
        Value::I8(x) => x.to_string().into_bytes(),
        Value::U16(x) => x.to_string().into_bytes(),
        Value::I16(x) => x.to_string().into_bytes(),
        Value::U32(x) => x.to_string().into_bytes(),
        Value::I32(x) => x.to_string().into_bytes(),
        Value::U64(x) => x.to_string().into_bytes(),
        Value::I64(x) => x.to_string().into_bytes(),
        Value::F32(x) => c_float_string(f64::from(*x)).into_bytes(),
        Value::F64(x) => c_float_string(*x).into_bytes(),
        Value::Bool(x) => (if *x { "true" } else { "false" }).as_bytes().to_vec(),
        Value::Str(s) => file.str_bytes(s).to_vec(),
        Value::Array(_) => return None,
    })
}

impl Metadata {
    pub fn from_gguf(file: &GgufFile) -> Metadata {
        let mut pairs = Vec::new();
        let mut index = HashMap::new();
        for i in 0..file.n_kv() {
            let (key, value) = file.kv(i);
            if let Some(text) = scalar_to_string(file, value) {
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
