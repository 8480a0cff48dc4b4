//! A model's metadata as the C API shows it: every scalar GGUF key with its
//! value as a string (`GgufFile::format_value`, the reference's
//! gguf_kv_to_str), formatted on request from the file; plus the caller's kv
//! overrides, which hyperparameter reads consult first.
//!
//! Deviation: the reference keeps these pairs in an unordered_map, so its
//! index order is libstdc++'s hash order; minfer keeps file order, which is
//! stable and meaningful. The set of pairs is the same. `llama_model_meta_val_str`
//! looks a key up by its raw bytes (the reference's keys are raw bytes too).

use crate::gguf::{GgufFile, Value};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::Arc;

/// The scalar key/value pairs of a GGUF file, formatted as C strings when
/// asked for. Only the array pairs are recorded (to skip them), so a file
/// of many tiny pairs costs next to nothing here.
pub struct Metadata {
    /// Number of scalar pairs.
    n_scalar: usize,
    /// For each array pair, in file order: how many scalar pairs precede it.
    /// Non-decreasing; scalar pair `i` is file pair `i + k`, with `k` the
    /// number of arrays whose count is at most `i`.
    scalars_before_array: Vec<u32>,
    /// Values handed out as pointers (chat templates), by key: they must
    /// stay valid as long as the model, as in the reference.
    pinned: Mutex<Vec<(Vec<u8>, Arc<CStr>)>>,
}

/// A C string of `bytes` up to the first NUL, as `snprintf("%s")` would see it.
fn c_string_until_nul(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).unwrap_or_default()
}

impl Metadata {
    pub fn from_gguf(file: &GgufFile) -> Metadata {
        // Arrays are left out, as in the reference.
        let mut scalars_before_array = Vec::new();
        let mut n_scalar = 0usize;
        for (_, v) in file.iter_kv() {
            if matches!(v, Value::Array(_)) {
                scalars_before_array.push(u32::try_from(n_scalar).unwrap_or(u32::MAX));
            } else {
                n_scalar += 1;
            }
        }
        Metadata { n_scalar, scalars_before_array, pinned: Mutex::new(Vec::new()) }
    }

    pub fn len(&self) -> usize {
        self.n_scalar
    }

    pub fn is_empty(&self) -> bool {
        self.n_scalar == 0
    }

    /// The file pair index of scalar pair `i`.
    fn pair(&self, i: usize) -> Option<usize> {
        if i >= self.n_scalar {
            return None;
        }
        let arrays_before = self.scalars_before_array.partition_point(|&s| s as usize <= i);
        i.checked_add(arrays_before)
    }

    /// The key of scalar pair `i` (decoded lossily if not UTF-8).
    pub fn key(&self, file: &GgufFile, i: usize) -> Option<CString> {
        let (key, _) = file.get_kv(self.pair(i)?)?;
        Some(c_string_until_nul(key.as_bytes()))
    }

    /// The value of scalar pair `i` as `gguf_kv_to_str` formats it.
    pub fn value(&self, file: &GgufFile, i: usize) -> Option<CString> {
        let (_, v) = file.get_kv(self.pair(i)?)?;
        Some(c_string_until_nul(&file.format_value(&v)))
    }

    /// The value of scalar key `key`.
    pub fn get(&self, file: &GgufFile, key: &[u8]) -> Option<CString> {
        let (_, v) = file.get_kv(file.find_key_bytes(key)?)?;
        (!matches!(v, Value::Array(_))).then(|| c_string_until_nul(&file.format_value(&v)))
    }

    /// `get`, kept for the model's lifetime (the same key gives the same
    /// string each time).
    pub fn get_pinned(&self, file: &GgufFile, key: &[u8]) -> Option<Arc<CStr>> {
        let mut pinned = self.pinned.lock();
        if let Some((_, s)) = pinned.iter().find(|(k, _)| k == key) {
            return Some(Arc::clone(s));
        }
        let s: Arc<CStr> = Arc::from(self.get(file, key)?);
        pinned.push((key.to_vec(), Arc::clone(&s)));
        Some(s)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgufWriter;

    #[test]
    fn scalar_pairs_skip_arrays_and_format_on_request() {
        let mut w = GgufWriter::new();
        w.add("a.arr", vec![1u32, 2])
            .add("b", 7u32)
            .add("c.arr", vec!["x"])
            .add("d.arr", vec![true])
            .add("e", "text")
            .add("f", 1.5f32)
            .add("g.arr", vec![0u8]);
        let file = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
        let m = Metadata::from_gguf(&file);
        assert_eq!(m.len(), 3);
        let keys: Vec<CString> = (0..3).map(|i| m.key(&file, i).unwrap()).collect();
        let values: Vec<CString> = (0..3).map(|i| m.value(&file, i).unwrap()).collect();
        assert_eq!(keys, [c"b", c"e", c"f"].map(CString::from));
        assert_eq!(values, [c"7", c"text", c"1.500000"].map(CString::from));
        assert!(m.key(&file, 3).is_none() && m.value(&file, usize::MAX).is_none());
        assert_eq!(m.get(&file, b"e").as_deref(), Some(c"text"));
        assert!(m.get(&file, b"a.arr").is_none() && m.get(&file, b"zz").is_none());
        let p1 = m.get_pinned(&file, b"e").unwrap();
        let p2 = m.get_pinned(&file, b"e").unwrap();
        assert_eq!(p1.as_ptr(), p2.as_ptr());
    }
}
