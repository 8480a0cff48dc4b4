//! GGUF metadata values: the value types, the `Value` enum, and zero-copy
//! views of strings and arrays that stay in the file bytes.
//!
//! A `StrRef` or `ArrayRef` is only an (offset, length) pair into the bytes
//! of the `GgufFile` it came from; resolve it with that file's methods
//! (`str_bytes`, `array_iter`, `array_strings`, `array_values`). Resolving a
//! view against another file never panics: it yields empty data or `None`.

use std::fmt;
use std::marker::PhantomData;
use std::slice::ChunksExact;

/// Deepest nesting of arrays accepted in a value: an array whose elements
/// are arrays is depth 2. (The reference rejects arrays of arrays outright;
/// the format allows them, so we accept a bounded depth.)
pub const MAX_ARRAY_DEPTH: u32 = 8;

/// The type of a GGUF metadata value (`enum gguf_type`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgufType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    Str = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl GgufType {
    /// The type with GGUF value `v`, or `None` if there is none.
    pub const fn from_u32(v: u32) -> Option<GgufType> {
        use GgufType::*;
        Some(match v {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => Str,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// gguf.cpp's short name of the type: "u8", "i32", "f32", "bool", "str",
    /// "arr", ...
    pub const fn name(self) -> &'static str {
        use GgufType::*;
        match self {
            U8 => "u8",
            I8 => "i8",
            U16 => "u16",
            I16 => "i16",
            U32 => "u32",
            I32 => "i32",
            F32 => "f32",
            Bool => "bool",
            Str => "str",
            Array => "arr",
            U64 => "u64",
            I64 => "i64",
            F64 => "f64",
        }
    }

    /// Encoded size of a value of a fixed-size type; `None` for strings and
    /// arrays.
    pub const fn fixed_size(self) -> Option<usize> {
        use GgufType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            Str | Array => None,
        }
    }

    /// The fewest bytes a value of this type can take in the file: its size
    /// for fixed-size types, 8 (the length) for a string, 12 (element type
    /// and count) for an array.
    pub const fn min_size(self) -> usize {
        match self {
            GgufType::Str => 8,
            GgufType::Array => 12,
            other => match other.fixed_size() {
                Some(n) => n,
                None => 1,
            },
        }
    }
}

/// Name of a GGUF value type given as a raw number: the short name, or
/// "unknown" for values outside 0..=12.
pub fn type_name_of(v: u32) -> &'static str {
    match GgufType::from_u32(v) {
        Some(t) => t.name(),
        None => "unknown",
    }
}

/// A string stored in the file: `len` bytes at `offset` (relative to the
/// start of the GGUF data). The bytes are not NUL-terminated and need not be
/// UTF-8. Resolve with `GgufFile::str_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StrRef {
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

impl StrRef {
    /// Length of the string in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Byte offset of the first byte of the string, relative to the start of
    /// the GGUF data.
    pub fn offset(&self) -> u64 {
        to_u64(self.offset)
    }
}

/// An array stored in the file: `len` elements of type `elem_type` (a
/// `GgufType` value) whose encoding occupies `byte_len()` bytes starting at
/// `offset()`. Resolve with `GgufFile::array_iter`, `array_strings` or
/// `array_values`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArrayRef {
    /// Element type, a `GgufType` value (validated when the file was parsed).
    pub elem_type: u32,
    /// Number of elements.
    pub len: u64,
    pub(crate) offset: usize,
    pub(crate) byte_len: usize,
    pub(crate) depth: u32,
}

impl ArrayRef {
    /// The element type as a `GgufType`.
    pub fn elem_kind(&self) -> Option<GgufType> {
        GgufType::from_u32(self.elem_type)
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Offset of the first element's encoding, relative to the start of the
    /// GGUF data.
    pub fn offset(&self) -> u64 {
        to_u64(self.offset)
    }

    /// Number of bytes taken by the encoded elements.
    pub fn byte_len(&self) -> u64 {
        to_u64(self.byte_len)
    }

    /// The byte range of the elements in the GGUF data, if it is in `data`.
    pub(crate) fn elems<'a>(&self, data: &'a [u8]) -> Option<&'a [u8]> {
        data.get(self.offset..self.offset.checked_add(self.byte_len)?)
    }
}

/// A metadata value. Scalars are stored inline; strings and arrays are views
/// into the file bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(StrRef),
    Array(ArrayRef),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    /// The value's type.
    pub fn gguf_type(&self) -> GgufType {
        match self {
            Value::U8(_) => GgufType::U8,
            Value::I8(_) => GgufType::I8,
            Value::U16(_) => GgufType::U16,
            Value::I16(_) => GgufType::I16,
            Value::U32(_) => GgufType::U32,
            Value::I32(_) => GgufType::I32,
            Value::F32(_) => GgufType::F32,
            Value::Bool(_) => GgufType::Bool,
            Value::Str(_) => GgufType::Str,
            Value::Array(_) => GgufType::Array,
            Value::U64(_) => GgufType::U64,
            Value::I64(_) => GgufType::I64,
            Value::F64(_) => GgufType::F64,
        }
    }

    /// The value's type as its GGUF number (`enum gguf_type`).
    pub fn type_id(&self) -> u32 {
        self.gguf_type() as u32
    }

    /// gguf.cpp's short name of the value's type ("u8", "str", "arr", ...).
    pub fn type_name(&self) -> &'static str {
        self.gguf_type().name()
    }

    /// The value as u64 if it is an integer (of any width or signedness)
    /// representable as u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(u64::from(v)),
            Value::U16(v) => Some(u64::from(v)),
            Value::U32(v) => Some(u64::from(v)),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as i64 if it is an integer representable as i64.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::U8(v) => Some(i64::from(v)),
            Value::U16(v) => Some(i64::from(v)),
            Value::U32(v) => Some(i64::from(v)),
            Value::U64(v) => i64::try_from(v).ok(),
            Value::I8(v) => Some(i64::from(v)),
            Value::I16(v) => Some(i64::from(v)),
            Value::I32(v) => Some(i64::from(v)),
            Value::I64(v) => Some(v),
            _ => None,
        }
    }

    /// The value as u32 if it is an integer representable as u32.
    pub fn as_u32(&self) -> Option<u32> {
        self.as_u64().and_then(|v| u32::try_from(v).ok())
    }

    /// The value as i32 if it is an integer representable as i32.
    pub fn as_i32(&self) -> Option<i32> {
        self.as_i64().and_then(|v| i32::try_from(v).ok())
    }

    /// The value as f64 if it is a float (f32 widens exactly) or an integer
    /// of at most 32 bits (exact in f64).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(f64::from(v)),
            Value::F64(v) => Some(v),
            Value::U8(v) => Some(f64::from(v)),
            Value::I8(v) => Some(f64::from(v)),
            Value::U16(v) => Some(f64::from(v)),
            Value::I16(v) => Some(f64::from(v)),
            Value::U32(v) => Some(f64::from(v)),
            Value::I32(v) => Some(f64::from(v)),
            _ => None,
        }
    }

    /// The value if it is a bool.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The string view if the value is a string.
    pub fn as_str_ref(&self) -> Option<StrRef> {
        match *self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The array view if the value is an array.
    pub fn as_array(&self) -> Option<ArrayRef> {
        match *self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A fixed-size GGUF scalar type that array elements can be read as:
/// u8, i8, u16, i16, u32, i32, f32, bool, u64, i64, f64.
pub trait GgufScalar: sealed::Sealed + Copy {
    /// The GGUF element type this Rust type reads.
    const TYPE: GgufType;
    /// Encoded size in bytes.
    const SIZE: usize;
    /// Decodes one little-endian element; `None` if `b` is too short.
    fn decode(b: &[u8]) -> Option<Self>;
}

macro_rules! scalar {
    ($t:ty, $gt:ident, $n:literal) => {
        impl sealed::Sealed for $t {}
        impl GgufScalar for $t {
            const TYPE: GgufType = GgufType::$gt;
            const SIZE: usize = $n;
            fn decode(b: &[u8]) -> Option<Self> {
                let arr: [u8; $n] = b.get(..$n)?.try_into().ok()?;
                Some(<$t>::from_le_bytes(arr))
            }
        }
    };
}
scalar!(u8, U8, 1);
scalar!(i8, I8, 1);
scalar!(u16, U16, 2);
scalar!(i16, I16, 2);
scalar!(u32, U32, 4);
scalar!(i32, I32, 4);
scalar!(f32, F32, 4);
scalar!(u64, U64, 8);
scalar!(i64, I64, 8);
scalar!(f64, F64, 8);

impl sealed::Sealed for bool {}
impl GgufScalar for bool {
    const TYPE: GgufType = GgufType::Bool;
    const SIZE: usize = 1;
    fn decode(b: &[u8]) -> Option<Self> {
        b.first().map(|&v| v != 0)
    }
}

/// Iterator over the elements of an array of a fixed-size type.
#[derive(Debug, Clone)]
pub struct ScalarIter<'a, T> {
    chunks: ChunksExact<'a, u8>,
    _t: PhantomData<T>,
}

impl<'a, T: GgufScalar> ScalarIter<'a, T> {
    pub(crate) fn new(elems: &'a [u8]) -> Self {
        ScalarIter { chunks: elems.chunks_exact(T::SIZE), _t: PhantomData }
    }
}

impl<T: GgufScalar> Iterator for ScalarIter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.chunks.next().and_then(T::decode)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}

impl<T: GgufScalar> ExactSizeIterator for ScalarIter<'_, T> {}

/// Iterator over the elements of an array of strings, as raw bytes.
#[derive(Debug, Clone)]
pub struct StrIter<'a> {
    rest: &'a [u8],
    remaining: u64,
}

impl<'a> StrIter<'a> {
    pub(crate) fn new(elems: &'a [u8], len: u64) -> Self {
        StrIter { rest: elems, remaining: len }
    }
}

impl<'a> Iterator for StrIter<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        let item = u64::decode(self.rest).and_then(|n| {
            let n = usize::try_from(n).ok()?;
            let end = n.checked_add(8)?;
            let s = self.rest.get(8..end)?;
            self.rest = self.rest.get(end..)?;
            Some(s)
        });
        match item {
            Some(s) => {
                self.remaining -= 1;
                Some(s)
            }
            None => {
                // Not this file's array (the view was validated at parse
                // time against its own file): stop rather than misread.
                self.remaining = 0;
                None
            }
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, usize::try_from(self.remaining).ok())
    }
}

/// Iterator over the elements of any array as `Value`s (nested arrays come
/// out as `Value::Array` views).
#[derive(Debug, Clone)]
pub struct ArrayValues<'a> {
    data: &'a [u8],
    pos: usize,
    elem: Option<GgufType>,
    remaining: u64,
    depth: u32,
}

impl<'a> ArrayValues<'a> {
    pub(crate) fn new(data: &'a [u8], a: &ArrayRef) -> Self {
        // Bound the reads by the end of the array, keeping offsets absolute.
        let end = a.offset.checked_add(a.byte_len);
        let bounded = end.and_then(|e| data.get(..e));
        ArrayValues {
            data: bounded.unwrap_or(&[]),
            pos: a.offset,
            elem: a.elem_kind(),
            remaining: if bounded.is_some() { a.len } else { 0 },
            depth: a.depth,
        }
    }
}

impl Iterator for ArrayValues<'_> {
    type Item = Value;
    fn next(&mut self) -> Option<Value> {
        if self.remaining == 0 {
            return None;
        }
        let elem = self.elem?;
        let mut cur = super::reader::Cursor::new(self.data, self.pos);
        match super::reader::read_value(&mut cur, elem, self.depth.saturating_add(1), &|| String::from("array element"))
        {
            Ok(v) => {
                self.pos = cur.pos();
                self.remaining -= 1;
                Some(v)
            }
            Err(_) => {
                self.remaining = 0;
                None
            }
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, usize::try_from(self.remaining).ok())
    }
}

/// usize → u64 for offsets and lengths of in-memory data (lossless on every
/// supported platform; saturates rather than truncates otherwise).
pub(crate) fn to_u64(v: usize) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// Formats bytes for an error message or a log line: lossy UTF-8, control
/// characters escaped, cut to 80 characters.
pub(crate) fn show(bytes: &[u8]) -> String {
    const MAX: usize = 80;
    let s = String::from_utf8_lossy(bytes.get(..4 * MAX).unwrap_or(bytes));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == MAX {
            out.push('…');
            break;
        }
        out.extend(c.escape_debug());
    }
    out
}

/// A float printed the way C's `std::to_string` / `printf("%f")` does
/// (six decimals; "inf", "-inf", "nan", "-nan").
pub(crate) fn c_float(v: f64) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    format!("{v:.6}")
}

impl fmt::Display for GgufType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
