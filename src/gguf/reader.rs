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

use super::index::{self, Index};
use super::tensor;
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
        let slice = self.pos.checked_add(n).and_then(|end| self.buf.get(self.pos..end));
        match slice {
            Some(s) => {
                self.pos += s.len();
                Ok(s)
            }
            None => Err(Error::gguf(
                to_u64(self.pos),
                field(),
                format!("unexpected end of file: {n} bytes needed, {} left (the file is truncated)", self.remaining()),
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
pub(crate) fn read_value(cur: &mut Cursor, ty: GgufType, depth: u32, field: Field) -> Result<Value> {
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
        _ => Err(Error::gguf(to_u64(at), field(), format!("a bool must be 0 or 1, found {b}"))),
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
                format!("an array of {len} {elem} elements needs {need} bytes but only {left} are left"),
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
                read_value(cur, elem, depth.saturating_add(1), &|| format!("{}[{j}]", field()))?;
            }
        }
    }
    Ok(ArrayRef { elem_type, len, offset: start, byte_len: cur.pos().saturating_sub(start), depth })
}

/// Everything `parse` learns about a valid file.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub version: u32,
    pub alignment: u64,
    pub data_offset: usize,
    pub index: Index,
    pub total_bytes: u64,
}

/// Parses and validates a whole GGUF file held in `buf` (which starts at the
/// magic). Offsets in errors and views are relative to the start of `buf`.
///
/// Memory: the header counts are checked against the bytes left before
/// anything is reserved, and what is kept per item is the fixed-size
/// `Index` (nothing is copied out of `buf`), so the allocations stay below
/// the file's size.
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

    // --- key-value pairs. A repeated key is reported before any later
    // error, as a front-to-back scan would: the keys read so far are
    // checked for repeats before a read error is returned.
    let mut kv_at: Vec<usize> = Vec::with_capacity(n_kv);
    let kvs_read = read_kvs(&mut cur, n_kv, &mut kv_at);
    let kv_by_key = index::name_order(buf, &kv_at).map_err(|(repeat, first)| {
        let at = kv_at.get(repeat).copied().unwrap_or(0);
        Error::gguf(
            to_u64(at),
            format!("kv[{repeat}].key"),
            format!("duplicate key '{}' (first defined by kv[{first}])", show(index::name_at(buf, at))),
        )
    })?;
    kvs_read?;
    let mut index = Index { kv_end: cur.pos(), kv_at, kv_by_key, ..Index::default() };

    // --- alignment
    let alignment = match index.find_key(buf, ALIGNMENT_KEY.as_bytes()) {
        None => DEFAULT_ALIGNMENT,
        Some(j) => {
            let kv =
                index.kv(buf, j).ok_or_else(|| Error::gguf(0, format!("kv[{j}]"), "cannot read the pair again"))?;
            match kv.value {
                Value::U32(a) if a.is_power_of_two() => u64::from(a),
                Value::U32(a) => {
                    return Err(Error::gguf(
                        to_u64(kv.value_offset),
                        format!("kv[{j}] '{ALIGNMENT_KEY}'.value"),
                        format!("alignment {a} is not a power of two"),
                    ))
                }
                other => {
                    return Err(Error::gguf(
                        to_u64(kv.type_offset),
                        format!("kv[{j}] '{ALIGNMENT_KEY}'.type"),
                        format!("must be of type u32 but is {}", other.type_name()),
                    ))
                }
            }
        }
    };

    // --- tensor infos (repeated names first, as for keys)
    let mut tensor_at: Vec<usize> = Vec::with_capacity(n_tensors);
    let infos_read = read_tensor_infos(&mut cur, n_tensors, alignment, &mut tensor_at);
    let tensor_by_name = index::name_order(buf, &tensor_at).map_err(|(repeat, first)| {
        let at = tensor_at.get(repeat).copied().unwrap_or(0);
        Error::gguf(
            to_u64(at),
            format!("tensor[{repeat}].name"),
            format!("duplicate tensor name '{}' (first used by tensor[{first}])", show(index::name_at(buf, at))),
        )
    })?;
    infos_read?;

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
    let total_bytes = tensor::check_layout(buf, &tensor_at, info_end, alignment, data_offset)?;
    index.tensor_at = tensor_at;
    index.tensor_by_name = tensor_by_name;

    Ok(Parsed { version, alignment, data_offset, index, total_bytes })
}

/// Reads and validates `n_kv` pairs, recording where each starts in
/// `kv_at` once its key is read and found non-empty.
fn read_kvs(cur: &mut Cursor, n_kv: usize, kv_at: &mut Vec<usize>) -> Result<()> {
    for i in 0..n_kv {
        let key_offset = cur.pos();
        let key_field = || format!("kv[{i}].key");
        let (_, key) = cur.string(&key_field)?;
        if key.is_empty() {
            return Err(Error::gguf(to_u64(key_offset), key_field(), "the key is empty"));
        }
        kv_at.push(key_offset);
        let type_offset = cur.pos();
        let type_field = || format!("kv[{i}] '{}'.type", show(key));
        let t: u32 = cur.read(&type_field)?;
        let ty = GgufType::from_u32(t).ok_or_else(|| {
            Error::gguf(to_u64(type_offset), type_field(), format!("unknown value type {t} (value types are 0..=12)"))
        })?;
        read_value(cur, ty, 0, &|| format!("kv[{i}] '{}'.value", show(key)))?;
    }
    Ok(())
}

/// Reads and validates `n_tensors` tensor infos, recording where each
/// starts in `tensor_at` once its name is read.
fn read_tensor_infos(cur: &mut Cursor, n_tensors: usize, alignment: u64, tensor_at: &mut Vec<usize>) -> Result<()> {
    for i in 0..n_tensors {
        let at = cur.pos();
        let name = tensor::read_tensor_name(cur, i)?;
        tensor_at.push(at);
        tensor::read_tensor_fields(cur, i, name, at, alignment)?;
    }
    Ok(())
}

fn bad_magic(magic: &[u8]) -> String {
    let printable: String =
        magic.iter().map(|&b| if b.is_ascii_graphic() || b == b' ' { char::from(b) } else { '?' }).collect();
    let hex: Vec<String> = magic.iter().map(|b| format!("{b:02x}")).collect();
    format!("not a GGUF file: the magic is '{printable}' ({}), expected 'GGUF' (47 47 55 46)", hex.join(" "))
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
/// huge count in a small file fails before any loop or allocation, and the
/// index reserved for the counts (12 bytes a pair, 12 a tensor) is smaller
/// than the bytes they need.
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
    // The index numbers items with u32 (only a file over 56 GiB of
    // metadata could hold more).
    let limit = u32::MAX as usize;
    if n_tensors > limit || n_kv > limit {
        return Err(Error::gguf(
            if n_tensors > limit { 8 } else { 16 },
            if n_tensors > limit { "header.n_tensors" } else { "header.n_kv" },
            format!("more than {limit} tensors or key-value pairs are not supported"),
        ));
    }
    Ok((n_tensors, n_kv))
}

/// `x` rounded up to a multiple of `align` (a power of two), if it fits.
pub(crate) fn align_up(x: usize, align: u64) -> Option<usize> {
    let align = usize::try_from(align).ok().filter(|a| a.is_power_of_two())?;
    Some(x.checked_add(align - 1)? & !(align - 1))
}
