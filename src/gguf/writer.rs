//! A GGUF writer: collect key-value pairs and tensors, then serialize a valid
//! file (the layout gguf.cpp writes: header, pairs, tensor infos, padding to
//! the alignment, each tensor's data padded to the alignment).
//!
//! Used by tests and fuzz seeds, for synthetic models, and for
//! `llama_model_save_to_file` (tensor data may be borrowed, e.g. from a
//! mapping, so saving does not copy the weights first).

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use super::reader::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, GGUF_MAGIC};
use super::tensor::{MAX_DIMS, MAX_NAME_LEN};
use super::value::{GgufType, Value, MAX_ARRAY_DEPTH};
use super::GgufFile;
use crate::error::{Error, Result};
use crate::ggml_type::GgmlType;

/// A metadata value owned in memory (what the writer writes).
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    /// Raw bytes; need not be UTF-8.
    Str(Vec<u8>),
    Array(OwnedArray),
    U64(u64),
    I64(i64),
    F64(f64),
}

/// An array value owned in memory; all elements share one type. Nested
/// arrays may each have their own element type.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedArray {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    Bool(Vec<bool>),
    Str(Vec<Vec<u8>>),
    Array(Vec<OwnedArray>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl OwnedValue {
    /// The value's type.
    pub fn gguf_type(&self) -> GgufType {
        match self {
            OwnedValue::U8(_) => GgufType::U8,
            OwnedValue::I8(_) => GgufType::I8,
            OwnedValue::U16(_) => GgufType::U16,
            OwnedValue::I16(_) => GgufType::I16,
            OwnedValue::U32(_) => GgufType::U32,
            OwnedValue::I32(_) => GgufType::I32,
            OwnedValue::F32(_) => GgufType::F32,
            OwnedValue::Bool(_) => GgufType::Bool,
            OwnedValue::Str(_) => GgufType::Str,
            OwnedValue::Array(_) => GgufType::Array,
            OwnedValue::U64(_) => GgufType::U64,
            OwnedValue::I64(_) => GgufType::I64,
            OwnedValue::F64(_) => GgufType::F64,
        }
    }
}

impl OwnedArray {
    /// The element type.
    pub fn elem_type(&self) -> GgufType {
        match self {
            OwnedArray::U8(_) => GgufType::U8,
            OwnedArray::I8(_) => GgufType::I8,
            OwnedArray::U16(_) => GgufType::U16,
            OwnedArray::I16(_) => GgufType::I16,
            OwnedArray::U32(_) => GgufType::U32,
            OwnedArray::I32(_) => GgufType::I32,
            OwnedArray::F32(_) => GgufType::F32,
            OwnedArray::Bool(_) => GgufType::Bool,
            OwnedArray::Str(_) => GgufType::Str,
            OwnedArray::Array(_) => GgufType::Array,
            OwnedArray::U64(_) => GgufType::U64,
            OwnedArray::I64(_) => GgufType::I64,
            OwnedArray::F64(_) => GgufType::F64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            OwnedArray::U8(v) => v.len(),
            OwnedArray::I8(v) => v.len(),
            OwnedArray::U16(v) => v.len(),
            OwnedArray::I16(v) => v.len(),
            OwnedArray::U32(v) => v.len(),
            OwnedArray::I32(v) => v.len(),
            OwnedArray::F32(v) => v.len(),
            OwnedArray::Bool(v) => v.len(),
            OwnedArray::Str(v) => v.len(),
            OwnedArray::Array(v) => v.len(),
            OwnedArray::U64(v) => v.len(),
            OwnedArray::I64(v) => v.len(),
            OwnedArray::F64(v) => v.len(),
        }
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Depth of nesting: 1 for an array of scalars or strings.
    fn depth(&self) -> u32 {
        match self {
            OwnedArray::Array(v) => 1 + v.iter().map(OwnedArray::depth).max().unwrap_or(0),
            _ => 1,
        }
    }
}

macro_rules! owned_from {
    ($($t:ty => $v:ident),* $(,)?) => {$(
        impl From<$t> for OwnedValue {
            fn from(x: $t) -> Self { OwnedValue::$v(x) }
        }
        impl From<Vec<$t>> for OwnedValue {
            fn from(x: Vec<$t>) -> Self { OwnedValue::Array(OwnedArray::$v(x)) }
        }
        impl From<&[$t]> for OwnedValue {
            fn from(x: &[$t]) -> Self { OwnedValue::Array(OwnedArray::$v(x.to_vec())) }
        }
    )*};
}
owned_from!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, f32 => F32,
            bool => Bool, u64 => U64, i64 => I64, f64 => F64);

impl From<&str> for OwnedValue {
    fn from(s: &str) -> Self {
        OwnedValue::Str(s.as_bytes().to_vec())
    }
}
impl From<String> for OwnedValue {
    fn from(s: String) -> Self {
        OwnedValue::Str(s.into_bytes())
    }
}
impl From<Vec<&str>> for OwnedValue {
    fn from(v: Vec<&str>) -> Self {
        OwnedValue::Array(OwnedArray::Str(v.into_iter().map(|s| s.as_bytes().to_vec()).collect()))
    }
}
impl From<Vec<String>> for OwnedValue {
    fn from(v: Vec<String>) -> Self {
        OwnedValue::Array(OwnedArray::Str(v.into_iter().map(String::into_bytes).collect()))
    }
}
impl From<OwnedArray> for OwnedValue {
    fn from(a: OwnedArray) -> Self {
        OwnedValue::Array(a)
    }
}

impl GgufFile {
    /// A copy of value `v` (a value of this file), or `None` if it is not a
    /// value of this file.
    pub fn to_owned_value(&self, v: &Value) -> Option<OwnedValue> {
        Some(match *v {
            Value::U8(x) => OwnedValue::U8(x),
            Value::I8(x) => OwnedValue::I8(x),
            Value::U16(x) => OwnedValue::U16(x),
            Value::I16(x) => OwnedValue::I16(x),
            Value::U32(x) => OwnedValue::U32(x),
            Value::I32(x) => OwnedValue::I32(x),
            Value::F32(x) => OwnedValue::F32(x),
            Value::Bool(x) => OwnedValue::Bool(x),
            Value::U64(x) => OwnedValue::U64(x),
            Value::I64(x) => OwnedValue::I64(x),
            Value::F64(x) => OwnedValue::F64(x),
            Value::Str(s) => OwnedValue::Str(self.str_bytes(&s).to_vec()),
            Value::Array(a) => OwnedValue::Array(self.to_owned_array(&a)?),
        })
    }

    fn to_owned_array(&self, a: &super::ArrayRef) -> Option<OwnedArray> {
        Some(match a.elem_kind()? {
            GgufType::U8 => OwnedArray::U8(self.array_u8(a)?.to_vec()),
            GgufType::I8 => OwnedArray::I8(self.array_vec(a)?),
            GgufType::U16 => OwnedArray::U16(self.array_vec(a)?),
            GgufType::I16 => OwnedArray::I16(self.array_vec(a)?),
            GgufType::U32 => OwnedArray::U32(self.array_vec(a)?),
            GgufType::I32 => OwnedArray::I32(self.array_vec(a)?),
            GgufType::F32 => OwnedArray::F32(self.array_vec(a)?),
            GgufType::Bool => OwnedArray::Bool(self.array_vec(a)?),
            GgufType::U64 => OwnedArray::U64(self.array_vec(a)?),
            GgufType::I64 => OwnedArray::I64(self.array_vec(a)?),
            GgufType::F64 => OwnedArray::F64(self.array_vec(a)?),
            GgufType::Str => OwnedArray::Str(self.array_strings(a)?.map(<[u8]>::to_vec).collect()),
            GgufType::Array => OwnedArray::Array(
                self.array_values(a)
                    .map(|e| e.as_array().and_then(|inner| self.to_owned_array(&inner)))
                    .collect::<Option<Vec<_>>>()?,
            ),
        })
    }
}

/// A tensor waiting to be written. `data` is `None` for a tensor whose
/// bytes the caller streams after `write_meta` (see `add_tensor_info`).
#[derive(Debug, Clone)]
struct PendingTensor<'a> {
    name: String,
    ggml_type: GgmlType,
    ne: Vec<u64>,
    data: Option<Cow<'a, [u8]>>,
}

impl PendingTensor<'_> {
    /// Bytes of the data, from type and shape (`validate` checks it fits).
    fn nbytes(&self) -> u64 {
        self.ggml_type.nbytes(&self.ne).unwrap_or(0)
    }
}

/// Builds a GGUF file. Pairs and tensors are written in the order added;
/// everything is validated by `to_bytes` / `write_to` (non-empty unique
/// keys, a u32 power-of-two `general.alignment`, unique names of at most 63
/// bytes, at most 4 dimensions, data length matching type and shape).
#[derive(Debug, Clone)]
pub struct GgufWriter<'a> {
    version: u32,
    kvs: Vec<(Vec<u8>, OwnedValue)>,
    tensors: Vec<PendingTensor<'a>>,
}

impl Default for GgufWriter<'_> {
    fn default() -> Self {
        GgufWriter::new()
    }
}

impl<'a> GgufWriter<'a> {
    /// An empty GGUF v3 file.
    pub fn new() -> Self {
        GgufWriter { version: 3, kvs: Vec::new(), tensors: Vec::new() }
    }

    /// A writer holding a copy of `file`'s pairs and tensors (data
    /// borrowed). Tensor names that were not UTF-8 are copied lossily.
    pub fn from_file(file: &'a GgufFile) -> Self {
        let mut w = GgufWriter::new();
        for i in 0..file.n_kv() {
            let key = file.key_bytes(i).unwrap_or_default().to_vec();
            if let Some(v) = file.get_kv(i).and_then(|(_, v)| file.to_owned_value(&v)) {
                w.kvs.push((key, v));
            }
        }
        for t in file.tensors() {
            let ne = t.shape().iter().map(|&n| u64::try_from(n).unwrap_or(0)).collect();
            w.tensors.push(PendingTensor {
                name: t.name.clone(),
                ggml_type: t.ggml_type,
                ne,
                data: Some(Cow::Borrowed(file.tensor_data(&t))),
            });
        }
        w
    }

    /// Sets the format version written in the header (2 or 3; default 3).
    pub fn set_version(&mut self, version: u32) -> &mut Self {
        self.version = version;
        self
    }

    /// Appends a pair (even if the key exists: `to_bytes` then fails).
    pub fn add(&mut self, key: &str, value: impl Into<OwnedValue>) -> &mut Self {
        self.kvs.push((key.as_bytes().to_vec(), value.into()));
        self
    }

    /// Appends a pair with a key given as raw bytes (need not be UTF-8).
    pub fn add_raw(&mut self, key: impl Into<Vec<u8>>, value: OwnedValue) -> &mut Self {
        self.kvs.push((key.into(), value));
        self
    }

    /// Sets `key` to `value`: replaces the value of an existing pair in
    /// place, or appends a pair.
    pub fn set(&mut self, key: &str, value: impl Into<OwnedValue>) -> &mut Self {
        let value = value.into();
        match self.kvs.iter_mut().find(|(k, _)| k.as_slice() == key.as_bytes()) {
            Some((_, v)) => *v = value,
            None => self.kvs.push((key.as_bytes().to_vec(), value)),
        }
        self
    }

    /// Sets `key` to `value` the way gguf.cpp's `gguf_set_val_*` does: an
    /// existing pair is removed and the new one goes last.
    pub fn set_last(&mut self, key: &[u8], value: OwnedValue) -> &mut Self {
        self.kvs.retain(|(k, _)| k.as_slice() != key);
        self.kvs.push((key.to_vec(), value));
        self
    }

    /// Removes the pair with key `key`, if any.
    pub fn remove(&mut self, key: &str) -> &mut Self {
        self.kvs.retain(|(k, _)| k.as_slice() != key.as_bytes());
        self
    }

    /// Sets `general.alignment` (a power of two; default 32).
    pub fn set_alignment(&mut self, alignment: u32) -> &mut Self {
        self.set(ALIGNMENT_KEY, OwnedValue::U32(alignment))
    }

    /// Appends a tensor of type `ggml_type` and shape `ne` (innermost first,
    /// at most 4 dimensions) whose data is `data`.
    pub fn add_tensor(
        &mut self,
        name: &str,
        ggml_type: GgmlType,
        ne: &[u64],
        data: impl Into<Cow<'a, [u8]>>,
    ) -> &mut Self {
        self.tensors.push(PendingTensor { name: name.to_owned(), ggml_type, ne: ne.to_vec(), data: Some(data.into()) });
        self
    }

    /// Appends a tensor whose data the caller writes itself after
    /// `write_meta`, in tensor order, each padded with `padding_after`
    /// zeros (for files too large to hold in memory).
    pub fn add_tensor_info(&mut self, name: &str, ggml_type: GgmlType, ne: &[u64]) -> &mut Self {
        self.tensors.push(PendingTensor { name: name.to_owned(), ggml_type, ne: ne.to_vec(), data: None });
        self
    }

    /// Changes the type of tensor `name` (the offsets of the tensors after
    /// it follow); its data, if it was given, is dropped.
    pub fn set_tensor_type(&mut self, name: &str, ggml_type: GgmlType) -> Result<()> {
        let t = self
            .tensors
            .iter_mut()
            .find(|t| t.name == name)
            .ok_or_else(|| Error::invalid(format!("GGUF writer: no tensor '{name}'")))?;
        t.ggml_type = ggml_type;
        t.data = None;
        Ok(())
    }

    /// Keeps only the tensors whose name `keep` accepts (in their order).
    pub fn retain_tensors(&mut self, mut keep: impl FnMut(&str) -> bool) -> &mut Self {
        self.tensors.retain(|t| keep(&t.name));
        self
    }

    /// Zero bytes that follow a tensor of `len` bytes (to the alignment).
    pub fn padding_after(&self, len: u64) -> Result<u64> {
        let alignment = self.alignment()?;
        Ok(pad_len(len, alignment)? - len)
    }

    /// Number of pairs added.
    pub fn n_kv(&self) -> usize {
        self.kvs.len()
    }

    /// Number of tensors added.
    pub fn n_tensors(&self) -> usize {
        self.tensors.len()
    }

    /// The alignment the file will use: `general.alignment` or 32.
    pub fn alignment(&self) -> Result<u64> {
        match self.kvs.iter().find(|(k, _)| k.as_slice() == ALIGNMENT_KEY.as_bytes()) {
            None => Ok(DEFAULT_ALIGNMENT),
            Some((_, OwnedValue::U32(a))) if a.is_power_of_two() => Ok(u64::from(*a)),
            Some((_, v)) => {
                Err(Error::invalid(format!("GGUF writer: '{ALIGNMENT_KEY}' must be a u32 power of two, got {v:?}")))
            }
        }
    }

    /// The data offset of each tensor (relative to the data section), and
    /// the size of the data section.
    fn layout(&self, alignment: u64) -> Result<(Vec<u64>, u64)> {
        let mut offsets = Vec::with_capacity(self.tensors.len());
        let mut end: u64 = 0;
        for t in &self.tensors {
            offsets.push(end);
            let len = t.nbytes();
            end = end.checked_add(pad_len(len, alignment)?).ok_or_else(overflow)?;
        }
        Ok((offsets, end))
    }

    fn validate(&self) -> Result<u64> {
        let bad = |m: String| Err(Error::invalid(format!("GGUF writer: {m}")));
        if !(2..=3).contains(&self.version) {
            return bad(format!("version {} cannot be written (2 or 3)", self.version));
        }
        let mut keys = HashSet::new();
        for (k, v) in &self.kvs {
            if k.is_empty() {
                return bad(String::from("empty key"));
            }
            if !keys.insert(k.as_slice()) {
                return bad(format!("duplicate key '{}'", String::from_utf8_lossy(k)));
            }
            if let OwnedValue::Array(a) = v {
                if a.depth() > MAX_ARRAY_DEPTH {
                    return bad(format!("arrays nested more than {MAX_ARRAY_DEPTH} deep"));
                }
            }
        }
        let alignment = self.alignment()?;
        let mut names = HashSet::new();
        for t in &self.tensors {
            if t.name.len() > MAX_NAME_LEN {
                return bad(format!("tensor name '{}' is longer than {MAX_NAME_LEN} bytes", t.name));
            }
            if !names.insert(t.name.as_str()) {
                return bad(format!("duplicate tensor name '{}'", t.name));
            }
            if t.ne.len() > MAX_DIMS || t.ne.iter().any(|&n| i64::try_from(n).is_err()) {
                return bad(format!("tensor '{}': bad shape {:?}", t.name, t.ne));
            }
            let Some(expected) = t.ggml_type.nbytes(&t.ne) else {
                return bad(format!("tensor '{}': type {} cannot hold shape {:?}", t.name, t.ggml_type, t.ne));
            };
            if let Some(data) = &t.data {
                if u64::try_from(data.len()).ok() != Some(expected) {
                    return bad(format!(
                        "tensor '{}': {} bytes of data, but type {} and shape {:?} need {expected}",
                        t.name,
                        data.len(),
                        t.ggml_type,
                        t.ne
                    ));
                }
            }
        }
        Ok(alignment)
    }

    /// Serializes the file into memory.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes the file to `path` (created or truncated).
    pub fn write_file(&self, path: &Path) -> Result<()> {
        let io_err = |e: std::io::Error| Error::Io { path: path.display().to_string(), reason: e.to_string() };
        let file = std::fs::File::create(path).map_err(io_err)?;
        let mut w = std::io::BufWriter::new(file);
        self.write_to(&mut w)?;
        w.flush().map_err(io_err)
    }

    /// Serializes the file into `w`. Every tensor must have its data.
    pub fn write_to<W: Write>(&self, w: &mut W) -> Result<()> {
        if let Some(t) = self.tensors.iter().find(|t| t.data.is_none()) {
            return Err(Error::invalid(format!("GGUF writer: tensor '{}' has no data", t.name)));
        }
        let meta = self.meta_bytes()?;
        let io = |e: std::io::Error| Error::Io { path: String::from("(GGUF writer)"), reason: e.to_string() };
        w.write_all(&meta).map_err(io)?;

        // --- data
        let alignment = self.alignment()?;
        let zeros = vec![0u8; usize::try_from(alignment).map_err(|_| overflow())?];
        for data in self.tensors.iter().filter_map(|t| t.data.as_deref()) {
            w.write_all(data).map_err(io)?;
            let len = u64::try_from(data.len()).map_err(|_| overflow())?;
            let pad = usize::try_from(pad_len(len, alignment)? - len).map_err(|_| overflow())?;
            w.write_all(zeros.get(..pad).unwrap_or(&[])).map_err(io)?;
        }
        Ok(())
    }

    /// The metadata part of the file (what gguf.cpp's `gguf_get_meta_data`
    /// gives): header, pairs, tensor infos, zeros to the alignment. The data
    /// section follows it.
    pub fn meta_bytes(&self) -> Result<Vec<u8>> {
        let alignment = self.validate()?;
        let (offsets, _) = self.layout(alignment)?;
        let mut meta = Vec::new();

        // --- header
        meta.extend_from_slice(&GGUF_MAGIC);
        put(&mut meta, &self.version.to_le_bytes());
        put(&mut meta, &len_u64(self.tensors.len()).to_le_bytes());
        put(&mut meta, &len_u64(self.kvs.len()).to_le_bytes());

        // --- pairs
        for (k, v) in &self.kvs {
            put_str(&mut meta, k);
            put(&mut meta, &(v.gguf_type() as u32).to_le_bytes());
            put_value(&mut meta, v);
        }

        // --- tensor infos
        for (t, off) in self.tensors.iter().zip(&offsets) {
            put_str(&mut meta, t.name.as_bytes());
            put(&mut meta, &len_u32(t.ne.len()).to_le_bytes());
            for &n in &t.ne {
                put(&mut meta, &n.to_le_bytes());
            }
            put(&mut meta, &(t.ggml_type as u32).to_le_bytes());
            put(&mut meta, &off.to_le_bytes());
        }
        pad_to(&mut meta, alignment)?;
        Ok(meta)
    }
}

fn overflow() -> Error {
    Error::invalid("GGUF writer: size overflow")
}

/// `len` rounded up to a multiple of `alignment` (a power of two).
fn pad_len(len: u64, alignment: u64) -> Result<u64> {
    let mask = alignment.checked_sub(1).ok_or_else(overflow)?;
    Ok(len.checked_add(mask).ok_or_else(overflow)? & !mask)
}

fn pad_to(out: &mut Vec<u8>, alignment: u64) -> Result<()> {
    let len = u64::try_from(out.len()).map_err(|_| overflow())?;
    let target = usize::try_from(pad_len(len, alignment)?).map_err(|_| overflow())?;
    out.resize(target, 0);
    Ok(())
}

fn len_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn put(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(b);
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put(out, &len_u64(s.len()).to_le_bytes());
    put(out, s);
}

/// The value's payload (without its type tag).
fn put_value(out: &mut Vec<u8>, v: &OwnedValue) {
    match v {
        OwnedValue::U8(x) => put(out, &x.to_le_bytes()),
        OwnedValue::I8(x) => put(out, &x.to_le_bytes()),
        OwnedValue::U16(x) => put(out, &x.to_le_bytes()),
        OwnedValue::I16(x) => put(out, &x.to_le_bytes()),
        OwnedValue::U32(x) => put(out, &x.to_le_bytes()),
        OwnedValue::I32(x) => put(out, &x.to_le_bytes()),
        OwnedValue::F32(x) => put(out, &x.to_le_bytes()),
        OwnedValue::Bool(x) => out.push(u8::from(*x)),
        OwnedValue::Str(s) => put_str(out, s),
        OwnedValue::Array(a) => put_array(out, a),
        OwnedValue::U64(x) => put(out, &x.to_le_bytes()),
        OwnedValue::I64(x) => put(out, &x.to_le_bytes()),
        OwnedValue::F64(x) => put(out, &x.to_le_bytes()),
    }
}

/// Element type, count, elements.
fn put_array(out: &mut Vec<u8>, a: &OwnedArray) {
    put(out, &(a.elem_type() as u32).to_le_bytes());
    put(out, &len_u64(a.len()).to_le_bytes());
    macro_rules! each {
        ($v:expr) => {
            for x in $v {
                put(out, &x.to_le_bytes());
            }
        };
    }
    match a {
        OwnedArray::U8(v) => put(out, v),
        OwnedArray::I8(v) => each!(v),
        OwnedArray::U16(v) => each!(v),
        OwnedArray::I16(v) => each!(v),
        OwnedArray::U32(v) => each!(v),
        OwnedArray::I32(v) => each!(v),
        OwnedArray::F32(v) => each!(v),
        OwnedArray::Bool(v) => out.extend(v.iter().map(|&b| u8::from(b))),
        OwnedArray::Str(v) => v.iter().for_each(|s| put_str(out, s)),
        OwnedArray::Array(v) => v.iter().for_each(|inner| put_array(out, inner)),
        OwnedArray::U64(v) => each!(v),
        OwnedArray::I64(v) => each!(v),
        OwnedArray::F64(v) => each!(v),
    }
}
