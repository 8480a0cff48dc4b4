//! The tensor table: one `TensorInfo` per tensor, its validation (name,
//! shape, type, size), and the checks of the data layout (alignment, bounds,
//! no overlap).

use super::reader::Cursor;
use super::value::{show, to_u64};
use crate::error::{Error, Result};
use crate::ggml_type::{removed_type_name, GgmlType, GGML_TYPE_COUNT};

/// Most dimensions a tensor can have (`GGML_MAX_DIMS`).
pub const MAX_DIMS: usize = 4;
/// Longest tensor name in bytes: `GGML_MAX_NAME` (64) minus the NUL.
pub const MAX_NAME_LEN: usize = 63;

/// One entry of the tensor table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The name, lossily decoded as UTF-8 (at most 63 bytes in the file).
    pub name: String,
    /// Number of dimensions given in the file, 0..=4.
    pub n_dims: u32,
    /// Elements along each dimension, innermost first; dimensions past
    /// `n_dims` are 1. Every entry is ≥ 0.
    pub ne: [i64; 4],
    /// Element type.
    pub ggml_type: GgmlType,
    /// Offset of the data from the start of the data section; a multiple of
    /// the file's alignment.
    pub offset: u64,
    /// Size of the data in bytes (0 if any dimension is 0).
    pub nbytes: u64,
    /// Offset of this tensor's info record, relative to the start of the
    /// GGUF data (for messages).
    pub info_offset: u64,
}

impl TensorInfo {
    /// Number of elements (product of `ne`).
    pub fn n_elements(&self) -> u64 {
        self.ne.iter().fold(1u64, |acc, &n| acc.saturating_mul(u64::try_from(n).unwrap_or(0)))
    }

    /// The shape as given in the file: the first `n_dims` entries of `ne`.
    pub fn shape(&self) -> &[i64] {
        let n = usize::try_from(self.n_dims).unwrap_or(MAX_DIMS).min(MAX_DIMS);
        self.ne.get(..n).unwrap_or(&self.ne)
    }

    /// `ggml_n_dims`: dimensions up to the last one above 1 (at least one).
    /// gguf.cpp writes this many, whatever the file said.
    pub fn ggml_n_dims(&self) -> usize {
        (1..MAX_DIMS).rev().find(|&i| self.ne[i] > 1).map_or(1, |i| i + 1)
    }

    /// The shape gguf.cpp writes: the first `ggml_n_dims()` entries of `ne`.
    pub fn ggml_shape(&self) -> Vec<u64> {
        self.ne[..self.ggml_n_dims()].iter().map(|&n| u64::try_from(n).unwrap_or(0)).collect()
    }

    /// Bytes of one row (`ne[0]` elements).
    pub fn row_size(&self) -> u64 {
        u64::try_from(self.ne[0]).ok().and_then(|n| self.ggml_type.row_size(n)).unwrap_or(0)
    }

    /// Number of rows: `ne[1] * ne[2] * ne[3]`.
    pub fn n_rows(&self) -> u64 {
        self.ne[1..].iter().fold(1u64, |acc, &n| acc.saturating_mul(u64::try_from(n).unwrap_or(0)))
    }
}

/// A tensor info as read from the file, its name borrowed from the bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawTensor<'a> {
    pub name: &'a [u8],
    pub n_dims: u32,
    pub ne: [i64; MAX_DIMS],
    pub ggml_type: GgmlType,
    pub offset: u64,
    pub nbytes: u64,
    /// Offset of the info record.
    pub info_offset: usize,
    /// Offset of its `offset` field (for layout errors).
    pub offset_field: usize,
}

impl RawTensor<'_> {
    /// The public, owned form (the name decoded lossily as UTF-8).
    pub(crate) fn to_info(self) -> TensorInfo {
        TensorInfo {
            name: String::from_utf8_lossy(self.name).into_owned(),
            n_dims: self.n_dims,
            ne: self.ne,
            ggml_type: self.ggml_type,
            offset: self.offset,
            nbytes: self.nbytes,
            info_offset: to_u64(self.info_offset),
        }
    }
}

/// Tensor info `i` at `at`, read and validated in full.
pub(crate) fn read_tensor_at(buf: &[u8], at: usize, i: usize, alignment: u64) -> Result<RawTensor<'_>> {
    let mut cur = Cursor::new(buf, at);
    let name = read_tensor_name(&mut cur, i)?;
    read_tensor_fields(&mut cur, i, name, at, alignment)
}

/// Reads the name of tensor info `i` (at most `MAX_NAME_LEN` bytes).
pub(crate) fn read_tensor_name<'a>(cur: &mut Cursor<'a>, i: usize) -> Result<&'a [u8]> {
    let info_offset = cur.pos();
    let name_field = || format!("tensor[{i}].name");
    let name_len: u64 = cur.read(&name_field)?;
    let name_len = match usize::try_from(name_len) {
        Ok(n) if n <= MAX_NAME_LEN => n,
        _ => {
            return Err(Error::gguf(
                to_u64(info_offset),
                name_field(),
                format!(
                    "the name is {name_len} bytes long; the limit is {MAX_NAME_LEN} \
                     (GGML_MAX_NAME 64, including the terminating NUL)"
                ),
            ))
        }
    };
    cur.take(name_len, &name_field)
}

/// Reads and validates the fields of tensor info `i` that follow its name
/// (`info_offset` is where the info starts).
pub(crate) fn read_tensor_fields<'a>(
    cur: &mut Cursor<'a>,
    i: usize,
    name: &'a [u8],
    info_offset: usize,
    alignment: u64,
) -> Result<RawTensor<'a>> {
    let label = || format!("tensor[{i}] '{}'", show(name));

    // --- shape
    let n_dims_at = cur.pos();
    let n_dims_field = || format!("{}.n_dims", label());
    let n_dims: u32 = cur.read(&n_dims_field)?;
    let dims = match usize::try_from(n_dims) {
        Ok(d) if d <= MAX_DIMS => d,
        _ => {
            return Err(Error::gguf(
                to_u64(n_dims_at),
                n_dims_field(),
                format!("{n_dims} dimensions; at most {MAX_DIMS} are supported (GGML_MAX_DIMS)"),
            ))
        }
    };
    let ne_at = cur.pos();
    let mut ne = [1i64; MAX_DIMS];
    for (j, slot) in ne.iter_mut().enumerate().take(dims) {
        let at = cur.pos();
        let field = || format!("{}.ne[{j}]", label());
        let v: i64 = cur.read(&field)?;
        if v < 0 {
            return Err(Error::gguf(
                to_u64(at),
                field(),
                format!("dimension {j} has a negative number of elements ({v})"),
            ));
        }
        *slot = v;
    }
    let shape = || format!("({}, {}, {}, {})", ne[0], ne[1], ne[2], ne[3]);
    let ne_field = || format!("{}.ne", label());
    // Same order as ggml: a zero dimension after an overflowing prefix does
    // not save the shape.
    if ne.iter().try_fold(1i64, |acc, &n| acc.checked_mul(n)).is_none() {
        return Err(Error::gguf(
            to_u64(ne_at),
            ne_field(),
            format!("the shape {} has more than i64::MAX elements", shape()),
        ));
    }
    let ne_u: [u64; MAX_DIMS] = ne.map(|n| u64::try_from(n).unwrap_or(0));

    // --- type
    let type_at = cur.pos();
    let type_field = || format!("{}.type", label());
    let type_id: u32 = cur.read(&type_field)?;
    let ggml_type = GgmlType::from_u32(type_id).ok_or_else(|| {
        let reason = match removed_type_name(type_id) {
            Some(what) => format!("ggml type {type_id} is {what}"),
            None => format!(
                "unknown ggml type {type_id} (types are 0..{GGML_TYPE_COUNT} \
                 except the removed 4, 5, 31-33 and 36-38)"
            ),
        };
        Error::gguf(to_u64(type_at), type_field(), reason)
    })?;
    let block = to_u64(ggml_type.block_size());
    if !ne_u[0].is_multiple_of(block) {
        // With n_dims = 0 the implicit ne[0] = 1 has no field; point at n_dims.
        let at = if dims > 0 { ne_at } else { n_dims_at };
        return Err(Error::gguf(
            to_u64(at),
            format!("{}.ne[0]", label()),
            format!(
                "a row of {} elements is not a multiple of the block size {block} of type {}",
                ne_u[0],
                ggml_type.name()
            ),
        ));
    }
    let nbytes = ggml_type
        .nbytes(&ne_u)
        .filter(|&n| i64::try_from(n).is_ok() && usize::try_from(n).is_ok())
        .ok_or_else(|| {
            Error::gguf(
                to_u64(ne_at),
                ne_field(),
                format!("a tensor of shape {} and type {} takes more than i64::MAX bytes", shape(), ggml_type.name()),
            )
        })?;

    // --- data offset
    let offset_at = cur.pos();
    let offset_field = || format!("{}.offset", label());
    let offset: u64 = cur.read(&offset_field)?;
    if offset.checked_rem(alignment) != Some(0) {
        return Err(Error::gguf(
            to_u64(offset_at),
            offset_field(),
            format!("the data offset {offset} is not a multiple of the alignment {alignment}"),
        ));
    }

    Ok(RawTensor { name, n_dims, ne, ggml_type, offset, nbytes, info_offset, offset_field: offset_at })
}

/// Checks that every tensor's data lies inside the file and that no two
/// tensors' data overlap. `tensor_at[i]` is where tensor info `i` starts;
/// the infos end at `info_end`. Returns the sum of the tensors' sizes.
pub(crate) fn check_layout(
    buf: &[u8],
    tensor_at: &[usize],
    info_end: usize,
    alignment: u64,
    data_offset: usize,
) -> Result<u64> {
    let tensor = |i: usize| match tensor_at.get(i) {
        Some(&at) => read_tensor_at(buf, at, i, alignment),
        None => Err(Error::gguf(0, format!("tensor[{i}]"), "no such tensor")),
    };
    let label = |i: usize, t: &RawTensor| format!("tensor[{i}] '{}'.offset", show(t.name));
    let data_start = to_u64(data_offset);
    let file_len = to_u64(buf.len());

    // --- bounds
    for i in 0..tensor_at.len() {
        let t = tensor(i)?;
        let end = data_start.checked_add(t.offset).and_then(|s| s.checked_add(t.nbytes));
        if end.is_none_or(|e| e > file_len) {
            return Err(Error::gguf(
                to_u64(t.offset_field),
                label(i, &t),
                format!(
                    "the tensor's {} bytes at data offset {} (file offset {}) run past the end \
                     of the file ({file_len} bytes)",
                    t.nbytes,
                    t.offset,
                    match data_start.checked_add(t.offset) {
                        Some(s) => s.to_string(),
                        None => String::from("beyond 2^64"),
                    }
                ),
            ));
        }
    }

    // --- overlap: sort by offset; each non-empty tensor must start at or
    // after the end of the previous non-empty one. The offset is the last
    // field of an info, so it is read straight from before the next one.
    let data_offset_of = |i: usize| -> u64 {
        let end = tensor_at.get(i + 1).copied().unwrap_or(info_end);
        end.checked_sub(8).and_then(|at| Cursor::new(buf, at).read::<u64>(&String::new).ok()).unwrap_or(0)
    };
    // 4 bytes per tensor, sorted in place.
    let mut order: Vec<u32> = (0..u32::try_from(tensor_at.len()).unwrap_or(u32::MAX)).collect();
    order.sort_unstable_by_key(|&i| (data_offset_of(index(i)), i));
    let mut prev: Option<(usize, u64)> = None; // (index, end offset)
    let mut total: u64 = 0;
    for &i in &order {
        let i = index(i);
        let t = tensor(i)?;
        if t.nbytes == 0 {
            continue;
        }
        if let Some((p, prev_end)) = prev {
            if t.offset < prev_end {
                let other = tensor(p).map_or(String::new(), |o| show(o.name));
                return Err(Error::gguf(
                    to_u64(t.offset_field),
                    label(i, &t),
                    format!(
                        "the tensor's data [{}, {}) overlaps the data of tensor[{p}] '{other}', \
                         which ends at {prev_end}",
                        t.offset,
                        t.offset.saturating_add(t.nbytes)
                    ),
                ));
            }
        }
        // In bounds (checked above), so neither sum overflows.
        let end = t.offset.saturating_add(t.nbytes);
        prev = Some((i, end));
        total = total.saturating_add(t.nbytes);
    }
    Ok(total)
}

fn index(i: u32) -> usize {
    usize::try_from(i).unwrap_or(usize::MAX)
}
