//! The compact index of a parsed file: one offset per key-value pair and per
//! tensor info, and the same items sorted by key / name for lookups. Keys,
//! values and tensor infos are decoded from the file bytes when asked for,
//! so the index costs 12 bytes per pair and 12 per tensor however the file
//! is made (16 per tensor while the layout check sorts them), where a pair
//! takes at least 14 bytes in the file and a tensor info 24: parsing never
//! holds more than the file's size on top of the file.

use super::reader::{read_value, Cursor};
use super::value::{ArrayRef, GgufType, StrRef, Value};

/// Where the items of a parsed file are. Built by `reader::parse`; every
/// offset in it was validated there.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Offset of each pair (its key's length field), in file order. [n_kv]
    pub kv_at: Vec<usize>,
    /// End of the last pair: where the tensor infos start.
    pub kv_end: usize,
    /// Pair indices in key-byte order. [n_kv]
    pub kv_by_key: Vec<u32>,
    /// Offset of each tensor info (its name's length field). [n_tensors]
    pub tensor_at: Vec<usize>,
    /// Tensor indices in name-byte order. [n_tensors]
    pub tensor_by_name: Vec<u32>,
}

/// The parts of pair `i`, decoded from the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KvParts<'a> {
    pub key: &'a [u8],
    /// Offset of the value's type field.
    pub type_offset: usize,
    /// Offset of the value.
    pub value_offset: usize,
    pub value: Value,
}

/// The string (u64 length, then bytes) at `at`: its view and its bytes.
pub(crate) fn string_at(buf: &[u8], at: usize) -> Option<(StrRef, &[u8])> {
    let mut cur = Cursor::new(buf, at);
    cur.string(&String::new).ok()
}

/// The name (key or tensor name) whose string starts at `at`; empty if
/// `at` is not a string of `buf`.
pub(crate) fn name_at(buf: &[u8], at: usize) -> &[u8] {
    string_at(buf, at).map_or(&[], |(_, b)| b)
}

impl Index {
    pub fn n_kv(&self) -> usize {
        self.kv_at.len()
    }

    pub fn n_tensors(&self) -> usize {
        self.tensor_at.len()
    }

    /// The key of pair `i`.
    pub fn key<'a>(&self, buf: &'a [u8], i: usize) -> &'a [u8] {
        self.kv_at.get(i).map_or(&[], |&at| name_at(buf, at))
    }

    /// Pair `i` decoded: key, field offsets, value. O(1): an array's extent
    /// is known from where the next pair starts.
    pub fn kv<'a>(&self, buf: &'a [u8], i: usize) -> Option<KvParts<'a>> {
        let at = *self.kv_at.get(i)?;
        let end = match self.kv_at.get(i.checked_add(1)?) {
            Some(&next) => next,
            None => self.kv_end,
        };
        let (key_ref, key) = string_at(buf, at)?;
        let mut cur = Cursor::new(buf, key_ref.offset.checked_add(key_ref.len)?);
        let type_offset = cur.pos();
        let ty = GgufType::from_u32(cur.read::<u32>(&String::new).ok()?)?;
        let value_offset = cur.pos();
        let value = match ty {
            GgufType::Array => {
                let elem_type: u32 = cur.read(&String::new).ok()?;
                let len: u64 = cur.read(&String::new).ok()?;
                let offset = cur.pos();
                Value::Array(ArrayRef { elem_type, len, offset, byte_len: end.checked_sub(offset)?, depth: 0 })
            }
            // Scalars and strings: O(1) to read again.
            _ => read_value(&mut cur, ty, 0, &String::new).ok()?,
        };
        Some(KvParts { key, type_offset, value_offset, value })
    }

    /// The pair whose key is `key`.
    pub fn find_key(&self, buf: &[u8], key: &[u8]) -> Option<usize> {
        lookup(&self.kv_by_key, |j| self.key(buf, j), key)
    }

    /// The name of tensor `i`.
    pub fn tensor_name<'a>(&self, buf: &'a [u8], i: usize) -> &'a [u8] {
        self.tensor_at.get(i).map_or(&[], |&at| name_at(buf, at))
    }

    /// The tensor named `name`.
    pub fn find_tensor(&self, buf: &[u8], name: &[u8]) -> Option<usize> {
        lookup(&self.tensor_by_name, |j| self.tensor_name(buf, j), name)
    }
}

/// The items whose names start at `at` (a string each: a key or a tensor
/// info), as indices in name order; or, if a name repeats, the first repeat
/// `(repeat, first)` — see `first_duplicate`.
pub(crate) fn name_order(buf: &[u8], at: &[usize]) -> Result<Vec<u32>, (usize, usize)> {
    let name = |j: usize| at.get(j).map_or(&[][..], |&a| name_at(buf, a));
    let order = sort_by_name(at.len(), name);
    match first_duplicate(&order, name) {
        Some(repeat) => Err(repeat),
        None => Ok(order),
    }
}

/// Item indices `0..n` sorted by name (then index). Sorted in place, so the
/// only allocation is the 4 bytes per item of the result.
fn sort_by_name<'a>(n: usize, name: impl Fn(usize) -> &'a [u8]) -> Vec<u32> {
    // `parse` rejects more than u32::MAX items before getting here. (A
    // u32 range collects into an exactly sized Vec.)
    let mut order: Vec<u32> = (0..u32::try_from(n).unwrap_or(u32::MAX)).collect();
    order.sort_unstable_by(|&a, &b| name(to_index(a)).cmp(name(to_index(b))).then(a.cmp(&b)));
    order
}

/// The first repeat among the names of a name-sorted order, in item order:
/// `(repeat, first)` with `repeat` the smallest index whose name an earlier
/// item already had, and `first` that earlier item — what a front-to-back
/// scan with a set of seen names would report.
fn first_duplicate<'a>(order: &[u32], name: impl Fn(usize) -> &'a [u8]) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    let mut run_start = 0;
    for k in 1..=order.len() {
        let same = match (order.get(k), order.get(k - 1)) {
            (Some(&a), Some(&b)) => name(to_index(a)) == name(to_index(b)),
            _ => false,
        };
        if same {
            continue;
        }
        // order[run_start..k] share a name, in index order.
        if k - run_start > 1 {
            if let (Some(&first), Some(&repeat)) = (order.get(run_start), order.get(run_start + 1)) {
                let (first, repeat) = (to_index(first), to_index(repeat));
                if best.is_none_or(|(r, _)| repeat < r) {
                    best = Some((repeat, first));
                }
            }
        }
        run_start = k;
    }
    best
}

/// Binary search of a name-sorted order (names are unique in a parsed file).
fn lookup<'a>(order: &[u32], name: impl Fn(usize) -> &'a [u8], want: &[u8]) -> Option<usize> {
    order.binary_search_by(|&j| name(to_index(j)).cmp(want)).ok().and_then(|k| order.get(k)).map(|&j| to_index(j))
}

fn to_index(j: u32) -> usize {
    usize::try_from(j).unwrap_or(usize::MAX)
}
