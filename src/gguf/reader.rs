//! Parsing and validation of a GGUF file: header, key-value metadata,
//! tensor table, data section. Every length and count is checked against the
//! bytes left before anything is read or allocated; every failure is an
//! `Error::Gguf` naming the field and its byte offset.
//!
//! Layout (little-endian):
//! ```text
//! magic "GGUF" | version u32 | n_tensors u64 | n_kv u64
//! n_kv      × { key: string, type: u32, value }
//! n_tensors × { name: string, n_dims: u32, ne: n_dims × i64, type: u32, offset: u64 }
//! padding to `general.alignment` (only if n_tensors > 0, as in gguf.cpp)
//! data section: tensor data at data_offset + offset
//! string = len u64 + bytes; array = elem_type u32 + count u64 + elements
//! ```

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::tensor::{self, TensorInfo};
use super::value::{show, to_u64, ArrayRef, GgufScalar, GgufType, StrRef, Value, MAX_ARRAY_DEPTH};
use crate::error::{Error, Result};

/// The four magic bytes at the start of every GGUF file.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
/// Bytes of the fixed header: magic, version, n_tensors, n_kv.
pub const HEADER_SIZE: usize = 24;
/// Alignment of the data section and of tensor data when the file has no
/// `general.alignment` key (`GGUF_DEFAULT_ALIGNMENT`).
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// The key that sets the alignment (must be a u32 power of two).
pub const ALIGNMENT_KEY: &str = "general.alignment";
/// Smallest possible key-value pair: key length, a 1-byte key, type, a
/// 1-byte value.
const MIN_KV_SIZE: usize = 8 + 1 + 4 + 1;
/// Smallest possible tensor info: name length, empty name, n_dims = 0,
/// type, offset.
const MIN_TENSOR_INFO_SIZE: usize = 8 + 4 + 4 + 8;

/// A field label, built only when an error needs it.
pub(crate) type Field<'f> = &'f dyn Fn() -> String;

/// A read position in the GGUF bytes. Every read is bounds-checked and
/// fails with the offset and name of the field being read.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], pos: usize) -> Self {
        Cursor { buf, pos }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize, field: Field) -> Result<&'a [u8]> {
        let slice = self
            .pos
            .checked_add(n)
            .and_then(|end| self.buf.get(self.pos..end));
        match slice {
            Some(s) => {
                self.pos += s.len();
                Ok(s)
            }
            None => Err(Error::gguf(
                to_u64(self.pos),
                field(),
                format!(
                    "unexpected end of file: {n} bytes needed, {} left (the file is truncated)",
                    self.remaining()
                ),
            )),
        }
    }

    /// One little-endian scalar.
    pub(crate) fn read<T: GgufScalar>(&mut self, field: Field) -> Result<T> {
        let at = self.pos;
        let bytes = self.take(T::SIZE, field)?;
        T::decode(bytes).ok_or_else(|| Error::gguf(to_u64(at), field(), "cannot decode value"))
    }

    /// A string: u64 length, then that many bytes. Returns the view and the
    /// bytes.
    pub(crate) fn string(&mut self, field: Field) -> Result<(StrRef, &'a [u8])> {
        let at = self.pos;
        let n: u64 = self.read(field)?;
        let left = self.remaining();
        let len = match usize::try_from(n) {
            Ok(len) if len <= left => len,
            _ => {
                return Err(Error::gguf(
                    to_u64(at),
                    field(),
                    format!("string length {n} exceeds the {left} bytes left in the file"),
                ))
            }
        };
        let offset = self.pos;
        let bytes = self.take(len, field)?;
        Ok((StrRef { offset, len }, bytes))
    }
}

/// Reads one value of type `ty`, validating it completely (bool bytes,
/// string lengths, array counts, nesting). `depth` is the number of arrays
/// enclosing the value.
pub(crate) fn read_value(
    cur: &mut Cursor,
    ty: GgufType,
    depth: u32,
    field: Field,
) -> Result<Value> {
    let at = cur.pos();
    Ok(match ty {
        GgufType::U8 => Value::U8(cur.read(field)?),
        GgufType::I8 => Value::I8(cur.read(field)?),
        GgufType::U16 => Value::U16(cur.read(field)?),
        GgufType::I16 => Value::I16(cur.read(field)?),
        GgufType::U32 => Value::U32(cur.read(field)?),
        GgufType::I32 => Value::I32(cur.read(field)?),
        GgufType::F32 => Value::F32(cur.read(field)?),
        GgufType::U64 => Value::U64(cur.read(field)?),
        GgufType::I64 => Value::I64(cur.read(field)?),
        GgufType::F64 => Value::F64(cur.read(field)?),
        GgufType::Bool => {
            let b: u8 = cur.read(field)?;
            Value::Bool(check_bool(b, at, field)?)
        }
        GgufType::Str => Value::Str(cur.string(field)?.0),
        GgufType::Array => Value::Array(read_array(cur, depth, field)?),
    })
}

fn check_bool(b: u8, at: usize, field: Field) -> Result<bool> {
    match b {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::gguf(
            to_u64(at),
            field(),
            format!("a bool must be 0 or 1, found {b}"),
        )),
    }
}

/// Reads an array value (element type, count, elements) at `depth`.
fn read_array(cur: &mut Cursor, depth: u32, field: Field) -> Result<ArrayRef> {
    let type_at = cur.pos();
    let type_field = || format!("{}.elem_type", field());
    let elem_type: u32 = cur.read(&type_field)?;
    let elem = GgufType::from_u32(elem_type).ok_or_else(|| {
        Error::gguf(
            to_u64(type_at),
            type_field(),
            format!("unknown array element type {elem_type} (value types are 0..=12)"),
        )
    })?;
    if elem == GgufType::Array && depth.saturating_add(1) >= MAX_ARRAY_DEPTH {
        return Err(Error::gguf(
            to_u64(type_at),
            type_field(),
            format!("arrays are nested more than {MAX_ARRAY_DEPTH} levels deep"),
        ));
    }

    let len_at = cur.pos();
    let len_field = || format!("{}.len", field());
    let len: u64 = cur.read(&len_field)?;
    let left = cur.remaining();
    let min = elem.min_size();
    let count = match usize::try_from(len) {
        Ok(count) if count <= left / min => count,
        _ => {
            let need = match len.checked_mul(to_u64(min)) {
                Some(n) => format!("at least {n}"),
                None => String::from("more than 2^64"),
            };
            return Err(Error::gguf(
                to_u64(len_at),
                len_field(),
                format!(
                    "an array of {len} {elem} elements needs {need} bytes but only {left} are left"
                ),
            ));
        }
    };

    let start = cur.pos();
    match elem.fixed_size() {
        Some(size) => {
            // count * size <= left, checked above.
            let bytes = cur.take(count.saturating_mul(size), &len_field)?;
            if elem == GgufType::Bool {
                if let Some(j) = bytes.iter().position(|&b| b > 1) {
                    let b = bytes.get(j).copied().unwrap_or(0);
                    check_bool(b, start.saturating_add(j), &|| format!("{}[{j}]", field()))?;
                }
            }
        }
        None => {
            for j in 0..count {
                read_value(cur, elem, depth.saturating_add(1), &|| {
                    format!("{}[{j}]", field())
                })?;
            }
        }
    }
    Ok(ArrayRef {
        elem_type,
        len,
        offset: start,
        byte_len: cur.pos().saturating_sub(start),
        depth,
    })
}

/// One parsed key-value pair.
#[derive(Debug, Clone)]
pub(crate) struct KvEntry {
    /// The key, lossily decoded as UTF-8.
    pub key: String,
    /// The key's raw bytes in the file.
    pub key_ref: StrRef,
    pub value: Value,
    /// Offset of the key's length field (start of the pair).
    pub key_offset: u64,
    /// Offset of the value's type field.
    pub type_offset: u64,
    /// Offset of the value.
    pub value_offset: u64,
}

/// Everything `parse` learns about a valid file.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub version: u32,
    pub alignment: u64,
    pub data_offset: usize,
    pub kvs: Vec<KvEntry>,
    /// Keys that are valid UTF-8 → kv index.
    pub key_index: HashMap<String, usize>,
    pub tensors: Vec<TensorInfo>,
    /// Tensor names that are valid UTF-8 → tensor index.
    pub tensor_index: HashMap<String, usize>,
    pub total_bytes: u64,
}

/// Parses and validates a whole GGUF file held in `buf` (which starts at the
/// magic). Offsets in errors and views are relative to the start of `buf`.
pub(crate) fn parse(buf: &[u8]) -> Result<Parsed> {
    // --- header
    if let Some(magic) = buf.get(..4) {
        if magic != GGUF_MAGIC {
            return Err(Error::gguf(0, "header.magic", bad_magic(magic)));
        }
    }
    if buf.len() < HEADER_SIZE {
        return Err(Error::gguf(
            0,
            "header",
            format!(
                "the file is {} bytes long, too short for a GGUF header \
                 ({HEADER_SIZE} bytes: magic, version, tensor count, key-value count)",
                buf.len()
            ),
        ));
    }
    let mut cur = Cursor::new(buf, GGUF_MAGIC.len());
    let version: u32 = cur.read(&|| "header.version".into())?;
    check_version(version)?;
    let n_tensors: u64 = cur.read(&|| "header.n_tensors".into())?;
    let n_kv: u64 = cur.read(&|| "header.n_kv".into())?;
    let (n_tensors, n_kv) = check_counts(n_tensors, n_kv, cur.remaining())?;

    // --- key-value pairs
    let mut kvs: Vec<KvEntry> = Vec::new();
    let mut seen_keys: HashMap<&[u8], usize> = HashMap::new();
    for i in 0..n_kv {
        let key_offset = cur.pos();
        let key_field = || format!("kv[{i}].key");
        let (key_ref, key) = cur.string(&key_field)?;
        if key.is_empty() {
            return Err(Error::gguf(
                to_u64(key_offset),
                key_field(),
                "the key is empty",
            ));
        }
        match seen_keys.entry(key) {
            Entry::Occupied(first) => {
                return Err(Error::gguf(
                    to_u64(key_offset),
                    key_field(),
                    format!(
                        "duplicate key '{}' (first defined by kv[{}])",
                        show(key),
                        first.get()
                    ),
                ))
            }
            Entry::Vacant(slot) => {
                slot.insert(i);
            }
        }
        let type_offset = cur.pos();
        let type_field = || format!("kv[{i}] '{}'.type", show(key));
        let t: u32 = cur.read(&type_field)?;
        let ty = GgufType::from_u32(t).ok_or_else(|| {
            Error::gguf(
                to_u64(type_offset),
                type_field(),
                format!("unknown value type {t} (value types are 0..=12)"),
            )
        })?;
        let value_offset = cur.pos();
        let value = read_value(&mut cur, ty, 0, &|| {
            format!("kv[{i}] '{}'.value", show(key))
        })?;
        kvs.push(KvEntry {
            key: String::from_utf8_lossy(key).into_owned(),
            key_ref,
            value,
            key_offset: to_u64(key_offset),
            type_offset: to_u64(type_offset),
            value_offset: to_u64(value_offset),
        });
    }

    // --- alignment
    let alignment = match seen_keys
        .get(ALIGNMENT_KEY.as_bytes())
        .and_then(|&j| Some((j, kvs.get(j)?)))
    {
        None => DEFAULT_ALIGNMENT,
        Some((j, kv)) => match kv.value {
            Value::U32(a) if a.is_power_of_two() => u64::from(a),
            Value::U32(a) => {
                return Err(Error::gguf(
                    kv.value_offset,
                    format!("kv[{j}] '{ALIGNMENT_KEY}'.value"),
                    format!("alignment {a} is not a power of two"),
                ))
            }
            other => {
                return Err(Error::gguf(
                    kv.type_offset,
                    format!("kv[{j}] '{ALIGNMENT_KEY}'.type"),
                    format!("must be of type u32 but is {}", other.type_name()),
                ))
            }
        },
    };
    let key_index = utf8_index(seen_keys);

    // --- tensor infos
    let mut tensors: Vec<TensorInfo> = Vec::new();
    let mut offset_fields: Vec<usize> = Vec::new();
    let mut seen_names: HashMap<&[u8], usize> = HashMap::new();
    for i in 0..n_tensors {
        let (info, offset_field) =
            tensor::read_tensor_info(&mut cur, i, alignment, &mut seen_names)?;
        tensors.push(info);
        offset_fields.push(offset_field);
    }
    let tensor_index = utf8_index(seen_names);

    // --- data section
    let info_end = cur.pos();
    let data_offset = if n_tensors == 0 {
        // gguf.cpp only seeks to the aligned data section when there are
        // tensors; a metadata-only file may end right after its pairs.
        info_end
    } else {
        match align_up(info_end, alignment).filter(|&d| d <= buf.len()) {
            Some(d) => d,
            None => {
                return Err(Error::gguf(
                    to_u64(info_end),
                    "data section",
                    format!(
                        "the padding to the {alignment}-byte aligned data section runs past \
                         the end of the file ({} bytes; the tensor infos end at {info_end})",
                        buf.len()
                    ),
                ))
            }
        }
    };
    let total_bytes = tensor::check_layout(&tensors, &offset_fields, data_offset, buf.len())?;

    Ok(Parsed {
        version,
        alignment,
        data_offset,
        kvs,
        key_index,
        tensors,
        tensor_index,
        total_bytes,
    })
}

fn bad_magic(magic: &[u8]) -> String {
    let printable: String = magic
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect();
    let hex: Vec<String> = magic.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "not a GGUF file: the magic is '{printable}' ({}), expected 'GGUF' (47 47 55 46)",
        hex.join(" ")
    )
}

fn check_version(v: u32) -> Result<()> {
    let reason = if v == 0 {
        String::from("version 0 is not a valid GGUF version")
    } else if v & 0xFFFF == 0 {
        // A small version written big-endian reads as e.g. 0x03000000.
        format!(
            "version {v} (0x{v:08x}) is implausibly large: the file was probably written \
             with the other byte order (big-endian GGUF files are not supported)"
        )
    } else if v == 1 {
        String::from("GGUFv1 is no longer supported; convert the file to GGUF v3")
    } else if v > 3 {
        format!("version {v} is newer than this library supports (versions 2 and 3)")
    } else {
        return Ok(());
    };
    Err(Error::gguf(4, "header.version", reason))
}

/// Checks the header counts against the bytes after the header, so that a
/// huge count in a small file fails before any loop or allocation.
fn check_counts(n_tensors: u64, n_kv: u64, left: usize) -> Result<(usize, usize)> {
    let max_tensors = left / MIN_TENSOR_INFO_SIZE;
    let n_tensors = match usize::try_from(n_tensors) {
        Ok(n) if n <= max_tensors => n,
        _ => {
            return Err(Error::gguf(
                8,
                "header.n_tensors",
                format!(
                    "{n_tensors} tensors cannot fit: each tensor info takes at least \
                     {MIN_TENSOR_INFO_SIZE} bytes and only {left} bytes follow the header"
                ),
            ))
        }
    };
    let max_kv = left / MIN_KV_SIZE;
    let n_kv = match usize::try_from(n_kv) {
        Ok(n) if n <= max_kv => n,
        _ => {
            return Err(Error::gguf(
                16,
                "header.n_kv",
                format!(
                    "{n_kv} key-value pairs cannot fit: each takes at least {MIN_KV_SIZE} bytes \
                     and only {left} bytes follow the header"
                ),
            ))
        }
    };
    // Both products are at most `left`, so the sum cannot overflow.
    let need = n_kv * MIN_KV_SIZE + n_tensors * MIN_TENSOR_INFO_SIZE;
    if need > left {
        return Err(Error::gguf(
            16,
            "header.n_kv",
            format!(
                "{n_kv} key-value pairs and {n_tensors} tensor infos need at least {need} bytes \
                 but only {left} bytes follow the header"
            ),
        ));
    }
    Ok((n_tensors, n_kv))
}

/// `x` rounded up to a multiple of `align` (a power of two), if it fits.
pub(crate) fn align_up(x: usize, align: u64) -> Option<usize> {
    let align = usize::try_from(align)
        .ok()
        .filter(|a| a.is_power_of_two())?;
    Some(x.checked_add(align - 1)? & !(align - 1))
}

/// The names that are valid UTF-8, as an owned name → index map.
fn utf8_index(seen: HashMap<&[u8], usize>) -> HashMap<String, usize> {
    seen.into_iter()
        .filter_map(|(name, i)| Some((std::str::from_utf8(name).ok()?.to_owned(), i)))
        .collect()
}
