//! The GGUF file format (v2 and v3): a validating, zero-copy reader over a
//! memory mapping, and a writer.
//!
//! `GgufFile::open` maps the file, parses the header, the key-value metadata
//! and the tensor table, and checks every rule of the format (see
//! `reader.rs`) before returning. Any violation is an `Error::Gguf` naming
//! the offending field and its byte offset; no input makes the parser panic,
//! overflow, or allocate more than the file's size (plus a few kilobytes for
//! an error message).
//!
//! Nothing is copied out of the file: the parsed file keeps only a compact
//! index (`index.rs`: an offset per pair and per tensor info, and their
//! key/name orders), and pairs and tensor infos are decoded on request.
//! Strings and arrays in the metadata are views (`StrRef`, `ArrayRef`) into
//! the mapped bytes, resolved through the file (`str_bytes`, `array_iter`,
//! `array_strings`, `array_values`). Tensor data is a slice of the mapping
//! (`tensor_data`) — it is not aligned in memory beyond what the file's
//! alignment and the mapping's base give, so readers must not assume more
//! than byte alignment.
//!
//! All offsets (in errors, views, `data_offset`, `TensorInfo`) are relative
//! to the start of the GGUF data, which is `base()` bytes into the file for
//! `open_file_at`.

mod huge_pages;
mod index;
mod reader;
mod tensor;
mod value;
mod writer;

#[cfg(test)]
mod memory_tests;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};
use index::Index;

use huge_pages::HUGE;
pub use reader::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, GGUF_MAGIC, HEADER_SIZE};
pub use tensor::{TensorInfo, MAX_DIMS, MAX_NAME_LEN};
pub use value::{
    type_name_of, ArrayRef, ArrayValues, GgufScalar, GgufType, ScalarIter, StrIter, StrRef, Value, MAX_ARRAY_DEPTH,
};
pub use writer::{GgufWriter, OwnedArray, OwnedValue};

/// The bytes a `GgufFile` reads from.
enum Storage {
    /// A read-only mapping of a whole file; the GGUF data starts at `base`.
    /// Some of its 2 MiB blocks may be anonymous copies of the file's bytes
    /// at the same addresses ([`GgufFile::read_through_huge_pages`]).
    /// The file stays open for [`GgufFile::read_tensor`].
    Mapped { map: Mmap, base: usize, file: File },
    /// Bytes owned in memory (tests, fuzzing, synthetic models).
    Owned(Vec<u8>),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mapped { map, base, .. } => map.get(*base..).unwrap_or(&[]),
            Storage::Owned(v) => v,
        }
    }

    fn base(&self) -> u64 {
        match self {
            Storage::Mapped { base, .. } => value::to_u64(*base),
            Storage::Owned(_) => 0,
        }
    }
}

/// A parsed and validated GGUF file. Immutable; `Send + Sync`.
pub struct GgufFile {
    storage: Storage,
    version: u32,
    alignment: u64,
    data_offset: usize,
    /// Where the pairs and tensor infos are; they are decoded on request.
    index: Index,
    total_bytes: u64,
    /// The 2 MiB blocks of the mapping (their addresses, sorted) replaced
    /// by anonymous copies of their bytes (`read_through_huge_pages`):
    /// `release_slice` must leave them alone, as dropping an anonymous page
    /// loses its bytes. Locked while a block is swapped in or pages are
    /// released, so the two never cross.
    replaced: parking_lot::Mutex<Replaced>,
}

/// The blocks of a mapping replaced by anonymous copies.
#[derive(Default)]
struct Replaced {
    /// their addresses, sorted
    blocks: Vec<usize>,
    /// the runs of blocks moved in, one `mremap` each
    runs: usize,
}

/// At most this many runs of blocks are replaced per file: each may add two
/// mappings to the process, whose count the kernel caps (`vm.max_map_count`,
/// 65 530 by default), and `mremap` at that cap would fail after unmapping
/// its destination.
const MAX_REPLACED_RUNS: usize = 4096;

impl GgufFile {
    /// Maps and parses the GGUF file at `path`. Fails with `Error::Io` if the
    /// file cannot be opened or mapped, `Error::Gguf` if it is not valid.
    pub fn open(path: &Path) -> Result<GgufFile> {
        let io_err = |e: std::io::Error| Error::Io { path: path.display().to_string(), reason: e.to_string() };
        let file = File::open(path).map_err(io_err)?;
        let map = map_file(&file).map_err(io_err)?;
        GgufFile::from_storage(Storage::Mapped { map, base: 0, file })
    }

    /// Maps `file` and parses the GGUF data that starts `base` bytes into it
    /// (for `llama_model_load_from_file_ptr`, which reads a GGUF embedded at
    /// the FILE*'s current position). Offsets reported by the result are
    /// relative to `base`.
    pub fn open_file_at(file: &File, base: u64) -> Result<GgufFile> {
        let io_err = |reason: String| Error::Io { path: String::from("(open file)"), reason };
        let map = map_file(file).map_err(|e| io_err(e.to_string()))?;
        let len = value::to_u64(map.len());
        let base = usize::try_from(base).ok().filter(|&b| b <= map.len()).ok_or_else(|| {
            io_err(format!("the GGUF data would start at byte {base}, past the end of the {len}-byte file"))
        })?;
        let file = file.try_clone().map_err(|e| io_err(e.to_string()))?;
        GgufFile::from_storage(Storage::Mapped { map, base, file })
    }

    /// Parses a GGUF file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<GgufFile> {
        GgufFile::from_storage(Storage::Owned(bytes))
    }

    fn from_storage(storage: Storage) -> Result<GgufFile> {
        let p = reader::parse(storage.bytes())?;
        Ok(GgufFile {
            storage,
            version: p.version,
            alignment: p.alignment,
            data_offset: p.data_offset,
            index: p.index,
            total_bytes: p.total_bytes,
            replaced: parking_lot::Mutex::new(Replaced::default()),
        })
    }

    // --- header and layout

    /// The format version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Alignment of the data section and of every tensor's data offset:
    /// `general.alignment` or 32.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Start of the data section, relative to the start of the GGUF data.
    /// As in gguf.cpp, it is aligned when the file has tensors, and is just
    /// the end of the metadata otherwise.
    pub fn data_offset(&self) -> u64 {
        value::to_u64(self.data_offset)
    }

    /// Where the GGUF data starts in the underlying file (0 except for
    /// `open_file_at`).
    pub fn base(&self) -> u64 {
        self.storage.base()
    }

    /// The whole GGUF data (from the magic to the end of the file).
    pub fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    // --- metadata

    /// Number of key-value pairs.
    pub fn n_kv(&self) -> usize {
        self.index.n_kv()
    }

    /// Key and value of pair `i`, in file order. The key is decoded lossily
    /// when it is not UTF-8 (`key_bytes` has the raw bytes).
    ///
    /// # Panics
    /// If `i >= n_kv()`; use `get_kv` for a checked lookup.
    pub fn kv(&self, i: usize) -> (Cow<'_, str>, Value) {
        match self.get_kv(i) {
            Some(kv) => kv,
            None => panic!("kv index {i} out of range (the file has {} pairs)", self.n_kv()),
        }
    }

    /// Key and value of pair `i`, or `None` if `i` is out of range.
    pub fn get_kv(&self, i: usize) -> Option<(Cow<'_, str>, Value)> {
        let kv = self.index.kv(self.bytes(), i)?;
        Some((String::from_utf8_lossy(kv.key), kv.value))
    }

    /// The raw bytes of key `i`.
    pub fn key_bytes(&self, i: usize) -> Option<&[u8]> {
        (i < self.n_kv()).then(|| self.index.key(self.bytes(), i))
    }

    /// Byte offset of pair `i` (its key) in the GGUF data, for messages.
    pub fn kv_offset(&self, i: usize) -> Option<u64> {
        self.index.kv_at.get(i).map(|&at| value::to_u64(at))
    }

    /// Iterator over (key, value) in file order.
    pub fn iter_kv(&self) -> impl Iterator<Item = (Cow<'_, str>, Value)> + '_ {
        (0..self.n_kv()).filter_map(|i| self.get_kv(i))
    }

    /// Index of the pair with key `key` (exact bytes); a binary search.
    pub fn find_key(&self, key: &str) -> Option<usize> {
        self.find_key_bytes(key.as_bytes())
    }

    /// `find_key` for a key given as raw bytes (keys need not be UTF-8).
    pub fn find_key_bytes(&self, key: &[u8]) -> Option<usize> {
        self.index.find_key(self.bytes(), key)
    }

    /// The value of key `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.find_key(key).and_then(|i| self.index.kv(self.bytes(), i)).map(|kv| kv.value)
    }

    /// The bytes of string value `key`, if it exists and is a string.
    pub fn get_str_bytes(&self, key: &str) -> Option<&[u8]> {
        self.get(key)?.as_str_ref().map(|s| self.str_bytes(&s))
    }

    /// The string value `key`, if it exists, is a string and is UTF-8.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        std::str::from_utf8(self.get_str_bytes(key)?).ok()
    }

    /// The bytes of a string view (empty if the view is not of this file).
    pub fn str_bytes(&self, s: &StrRef) -> &[u8] {
        s.offset.checked_add(s.len).and_then(|end| self.bytes().get(s.offset..end)).unwrap_or(&[])
    }

    /// The elements of array `a` as `T`, or `None` if the element type is
    /// not `T`'s (or the view is not of this file).
    pub fn array_iter<T: GgufScalar>(&self, a: &ArrayRef) -> Option<ScalarIter<'_, T>> {
        if a.elem_type != T::TYPE as u32 {
            return None;
        }
        let elems = a.elems(self.bytes())?;
        let expected = usize::try_from(a.len).ok()?.checked_mul(T::SIZE)?;
        (elems.len() == expected).then(|| ScalarIter::new(elems))
    }

    /// The elements of array `a` collected into a `Vec<T>`.
    pub fn array_vec<T: GgufScalar>(&self, a: &ArrayRef) -> Option<Vec<T>> {
        self.array_iter(a).map(Iterator::collect)
    }

    /// A u8 array as a slice of the file bytes (zero-copy).
    pub fn array_u8(&self, a: &ArrayRef) -> Option<&[u8]> {
        if a.elem_type != GgufType::U8 as u32 {
            return None;
        }
        a.elems(self.bytes()).filter(|e| u64::try_from(e.len()).ok() == Some(a.len))
    }

    /// An i32 array as a Vec.
    pub fn array_i32(&self, a: &ArrayRef) -> Option<Vec<i32>> {
        self.array_vec(a)
    }

    /// A u32 array as a Vec.
    pub fn array_u32(&self, a: &ArrayRef) -> Option<Vec<u32>> {
        self.array_vec(a)
    }

    /// An f32 array as a Vec.
    pub fn array_f32(&self, a: &ArrayRef) -> Option<Vec<f32>> {
        self.array_vec(a)
    }

    /// The elements of a string array as raw bytes, or `None` if the element
    /// type is not string.
    pub fn array_strings(&self, a: &ArrayRef) -> Option<StrIter<'_>> {
        if a.elem_type != GgufType::Str as u32 {
            return None;
        }
        Some(StrIter::new(a.elems(self.bytes())?, a.len))
    }

    /// The elements of any array as `Value`s (nested arrays as
    /// `Value::Array` views, resolvable the same way).
    pub fn array_values(&self, a: &ArrayRef) -> ArrayValues<'_> {
        ArrayValues::new(self.bytes(), a)
    }

    /// A value formatted as llama.cpp's `gguf_kv_to_str` does (what
    /// `llama_model_meta_val_str` returns): strings raw; numbers in decimal,
    /// floats with six decimals; bools "true"/"false"; arrays as
    /// `[1, 2, 3]` with string elements quoted (`\` and `"` escaped) and
    /// nested arrays as `???`. Raw bytes, since strings need not be UTF-8.
    pub fn format_value(&self, v: &Value) -> Vec<u8> {
        match v {
            Value::Str(s) => self.str_bytes(s).to_vec(),
            Value::Array(a) => {
                let mut out = vec![b'['];
                for (j, e) in self.array_values(a).enumerate() {
                    if j > 0 {
                        out.extend_from_slice(b", ");
                    }
                    match e {
                        Value::Str(s) => {
                            out.push(b'"');
                            for &b in self.str_bytes(&s) {
                                if b == b'\\' || b == b'"' {
                                    out.push(b'\\');
                                }
                                out.push(b);
                            }
                            out.push(b'"');
                        }
                        Value::Array(_) => out.extend_from_slice(b"???"),
                        scalar => out.extend_from_slice(format_scalar(&scalar).as_bytes()),
                    }
                }
                out.push(b']');
                out
            }
            scalar => format_scalar(scalar).into_bytes(),
        }
    }

    /// `format_value`, decoded lossily as UTF-8.
    pub fn format_value_lossy(&self, v: &Value) -> String {
        String::from_utf8_lossy(&self.format_value(v)).into_owned()
    }

    // --- tensors

    /// Number of tensors.
    pub fn n_tensors(&self) -> usize {
        self.index.n_tensors()
    }

    /// Tensor `i` of the table (decoded from the file; the name is
    /// allocated), or `None` if `i` is out of range.
    pub fn tensor(&self, i: usize) -> Option<TensorInfo> {
        let at = *self.index.tensor_at.get(i)?;
        tensor::read_tensor_at(self.bytes(), at, i, self.alignment).ok().map(|t| t.to_info())
    }

    /// The tensor table, in file order.
    pub fn tensors(&self) -> impl Iterator<Item = TensorInfo> + '_ {
        (0..self.n_tensors()).filter_map(|i| self.tensor(i))
    }

    /// The raw bytes of tensor `i`'s name.
    pub fn tensor_name_bytes(&self, i: usize) -> Option<&[u8]> {
        (i < self.n_tensors()).then(|| self.index.tensor_name(self.bytes(), i))
    }

    /// Index of the tensor named `name`; a binary search.
    pub fn find_tensor_index(&self, name: &str) -> Option<usize> {
        self.index.find_tensor(self.bytes(), name.as_bytes())
    }

    /// The tensor named `name`.
    pub fn find_tensor(&self, name: &str) -> Option<TensorInfo> {
        self.tensor(self.find_tensor_index(name)?)
    }

    /// The data of tensor `t`: exactly `t.nbytes` bytes of the mapping, no
    /// copy. Empty if `t` is not a tensor of this file.
    pub fn tensor_data(&self, t: &TensorInfo) -> &[u8] {
        let range = value::to_u64(self.data_offset)
            .checked_add(t.offset)
            .and_then(|s| Some((usize::try_from(s).ok()?, usize::try_from(t.nbytes).ok()?)))
            .and_then(|(s, n)| Some(s..s.checked_add(n)?));
        range.and_then(|r| self.bytes().get(r)).unwrap_or(&[])
    }

    /// Tensor `t`'s data, copied out of a mapped file with `pread` instead
    /// of read through the mapping, so that no page of the mapping becomes
    /// resident: where the page cache holds the file in huge folios, one
    /// read through the mapping maps a whole 2 MiB page. (Owned bytes are
    /// copied.) Fails where the data lies outside the file.
    pub fn read_tensor(&self, t: &TensorInfo) -> Result<Vec<u8>> {
        let data = self.tensor_data(t);
        if usize::try_from(t.nbytes).ok() != Some(data.len()) {
            return Err(Error::model(format!("tensor '{}': its data lies outside the file", t.name)));
        }
        match &self.storage {
            Storage::Mapped { map, file, .. } => {
                use std::os::unix::fs::FileExt;
                // the data's offset in the file, from its place in the mapping
                let at = data.as_ptr() as usize - map.as_ptr() as usize;
                let mut out = vec![0u8; data.len()];
                file.read_exact_at(&mut out, value::to_u64(at)).map_err(|e| Error::Io {
                    path: String::from("(model file)"),
                    reason: format!("reading tensor '{}': {e}", t.name),
                })?;
                Ok(out)
            }
            Storage::Owned(_) => Ok(data.to_vec()),
        }
    }

    /// Drops the resident pages wholly inside tensor `t`'s data from this
    /// process (`madvise(MADV_DONTNEED)`), for data that was copied into
    /// another layout at load. The mapping is read-only and private, so its
    /// pages are clean file pages: a later read faults the same bytes back
    /// in from the file, and every slice of the data stays valid. Nothing
    /// for owned bytes. Returns the bytes released.
    pub fn release_pages(&self, t: &TensorInfo) -> usize {
        self.release_slice(self.tensor_data(t))
    }

    /// As [`GgufFile::release_pages`], for the pages wholly inside `data`, a
    /// slice of this file's bytes (anything else releases nothing).
    pub fn release_slice(&self, data: &[u8]) -> usize {
        let Storage::Mapped { .. } = &self.storage else { return 0 };
        let all = self.bytes().as_ptr_range();
        let (lo, hi) = (data.as_ptr(), data.as_ptr().wrapping_add(data.len()));
        if data.is_empty() || lo < all.start || hi > all.end {
            return 0;
        }
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
        let start = (data.as_ptr() as usize).next_multiple_of(page);
        let end = (data.as_ptr() as usize + data.len()) / page * page;
        if end <= start {
            return 0;
        }
        // the file-backed pieces of [start, end): not the replaced blocks
        let replaced = self.replaced.lock();
        let mut released = 0;
        let mut from = start;
        for &b in replaced.blocks.iter().filter(|&&b| b + HUGE > start && b < end) {
            if b > from {
                released += release_file_pages(from, b);
            }
            from = from.max(b + HUGE);
        }
        if end > from {
            released += release_file_pages(from, end);
        }
        released
    }

    /// Makes every 2 MiB block of the mapping that `data` (a slice of this
    /// file's bytes) touches and that lies wholly inside the mapping read
    /// through one 2 MiB page: a block the page cache holds as one 2 MiB
    /// folio (or reads in as one) is mapped whole, as in
    /// [`GgufFile::huge_mapped_bytes`]; the others (`every_block`: all of
    /// them) are replaced in place by a copy of their bytes on an anonymous
    /// huge page (`huge_pages::replace_with_anonymous_copy`). The bytes and
    /// their addresses stay the same. Returns the bytes copied, or `None`,
    /// with nothing changed, for owned bytes, other memory, or a kernel
    /// that cannot say which pages are huge (Linux before 6.7).
    pub fn read_through_huge_pages(&self, data: &[u8], thp: bool, every_block: bool) -> Option<usize> {
        let Storage::Mapped { map, .. } = &self.storage else { return None };
        let (m_lo, m_hi) = (map.as_ptr() as usize, map.as_ptr() as usize + map.len());
        let (lo, hi) = (data.as_ptr() as usize, data.as_ptr() as usize + data.len());
        if data.is_empty() || lo < m_lo || hi > m_hi {
            return None;
        }
        // the whole blocks of the mapping that `data` touches
        let first = (lo / HUGE * HUGE).max(m_lo.next_multiple_of(HUGE));
        let last = hi.next_multiple_of(HUGE).min(m_hi / HUGE * HUGE);
        if first >= last {
            return huge_pages::huge_regions(lo, hi).map(|_| 0);
        }
        let huge = self.huge_mapped_bytes(&data[first.max(lo) - lo..last.min(hi) - lo])?;
        let regions = if every_block || huge < last.min(hi) - first.max(lo) {
            huge_pages::huge_regions(first, last)?
        } else {
            return Some(0); // all of it already
        };
        let mut copied = 0;
        let mut block = first;
        while block < last {
            // a run of blocks not mapped whole
            let is_small = |b: usize| every_block || huge_pages::overlap(&regions, b, b + HUGE) < HUGE;
            if !is_small(block) {
                block += HUGE;
                continue;
            }
            let mut end = block + HUGE;
            while end < last && is_small(end) {
                end += HUGE;
            }
            copied += self.replace_run(block, end, thp);
            block = end;
        }
        Some(copied)
    }

    /// Replaces the blocks `[from, to)` of the mapping not replaced yet by
    /// anonymous copies (each run of them moved in by one `mremap`; copied
    /// without the lock, so the two build threads copy at once); returns
    /// the bytes copied.
    fn replace_run(&self, from: usize, to: usize, thp: bool) -> usize {
        #[cfg(target_os = "linux")]
        {
            let mut copied = 0;
            let mut at = from;
            while at < to {
                // the next run of blocks not replaced yet
                let end = {
                    let replaced = self.replaced.lock();
                    if replaced.blocks.binary_search(&at).is_ok() {
                        at += HUGE;
                        continue;
                    }
                    if replaced.runs >= MAX_REPLACED_RUNS {
                        break;
                    }
                    let mut end = at + HUGE;
                    while end < to && replaced.blocks.binary_search(&end).is_err() {
                        end += HUGE;
                    }
                    end
                };
                // SAFETY: [at, end) lies inside this file's mapping (the
                // callers' whole blocks), readable while `self` lives.
                let Some(copy) = (unsafe { huge_pages::AnonymousCopy::new(at, end - at, thp) }) else { break };
                let mut replaced = self.replaced.lock();
                // a block of the run replaced by the other thread meanwhile:
                // drop this copy, take the run again
                if replaced.blocks.iter().any(|&b| b >= at && b < end) {
                    continue;
                }
                // SAFETY: [at, end) is 2 MiB-aligned, inside this file's
                // read-only private mapping, whose bytes the copy holds;
                // nothing writes it, and the lock keeps `release_slice` and
                // the other build thread off it.
                if unsafe { copy.move_over(at) } {
                    copied += end - at;
                    replaced.runs += 1;
                    let i = replaced.blocks.partition_point(|&b| b < at);
                    replaced.blocks.splice(i..i, (at..end).step_by(HUGE));
                }
                at = end;
            }
            copied
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (from, to, thp);
            0
        }
    }

    /// How many bytes of `data` (a slice of this file's bytes) a read finds
    /// mapped by 2 MiB pages: it faults in one page of every 2 MiB block
    /// that `data` touches (`MADV_POPULATE_READ`; a block the page cache
    /// holds as one 2 MiB folio, or reads in as one, is then mapped whole)
    /// and asks the kernel (`huge_pages`). `None` for owned bytes, a slice
    /// of other memory, or a kernel that cannot say (Linux before 6.7).
    pub fn huge_mapped_bytes(&self, data: &[u8]) -> Option<usize> {
        let Storage::Mapped { .. } = &self.storage else { return None };
        let all = self.bytes().as_ptr_range();
        let (lo, hi) = (data.as_ptr() as usize, data.as_ptr() as usize + data.len());
        if data.is_empty() || lo < all.start as usize || hi > all.end as usize {
            return None;
        }
        #[cfg(target_os = "linux")]
        {
            // SAFETY: sysconf has no preconditions.
            let page_size = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
            let mut block = lo / HUGE * HUGE;
            while block < hi {
                let page = block.max(lo / page_size * page_size);
                // SAFETY: advice on one page of this file's read-only
                // mapping (`page` lies within [lo, hi), inside the mapping,
                // rounded down to a page boundary that the mapping, being
                // page-aligned, also holds); it reads the file's pages in
                // and maps them, and fails (EFAULT, EINVAL) rather than
                // signal where it cannot.
                if unsafe { libc::madvise(page as *mut libc::c_void, page_size, libc::MADV_POPULATE_READ) } != 0 {
                    return None;
                }
                block += HUGE;
            }
        }
        huge_pages::huge_mapped_bytes(lo, hi)
    }

    /// Offset of tensor `t`'s data in the underlying file (base included).
    pub fn tensor_file_offset(&self, t: &TensorInfo) -> Option<u64> {
        self.base().checked_add(self.data_offset())?.checked_add(t.offset)
    }

    /// Sum of the tensors' sizes in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Checks the stricter layout gguf.cpp requires: tensor data in file
    /// order, each at the previous one's end rounded up to the alignment,
    /// starting at 0. `open` only requires aligned, in-bounds,
    /// non-overlapping data; call this to reject what the reference rejects.
    pub fn check_contiguous_layout(&self) -> Result<()> {
        let mut expected: u64 = 0;
        for (i, t) in self.tensors().enumerate() {
            if t.offset != expected {
                return Err(Error::gguf(
                    t.info_offset,
                    format!("tensor[{i}] '{}'.offset", value::show(t.name.as_bytes())),
                    format!(
                        "the data offset is {}, expected {expected} (tensors must be contiguous, in order)",
                        t.offset
                    ),
                ));
            }
            let padded = t
                .nbytes
                .checked_add(self.alignment - 1)
                .map(|n| n & !(self.alignment - 1))
                .and_then(|n| expected.checked_add(n));
            expected = padded.ok_or_else(|| {
                Error::gguf(t.info_offset, format!("tensor[{i}].nbytes"), "the data section size overflows")
            })?;
        }
        Ok(())
    }
}

impl fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GgufFile")
            .field("version", &self.version)
            .field("base", &self.base())
            .field("len", &self.bytes().len())
            .field("alignment", &self.alignment)
            .field("data_offset", &self.data_offset)
            .field("n_kv", &self.n_kv())
            .field("n_tensors", &self.n_tensors())
            .field("total_bytes", &self.total_bytes)
            .finish()
    }
}

/// Drops this process's file pages in `[start, end)` (page-aligned, inside a
/// read-only private file mapping, no replaced block among them): first
/// keeps the range out of huge mappings, then `MADV_DONTNEED`. Returns the
/// bytes released.
fn release_file_pages(start: usize, end: usize) -> usize {
    // Where the page cache holds the file in 2 MiB folios the kernel
    // maps them whole (one PMD) on a fault anywhere in them, which would
    // bring the released pages back with their neighbours' first read:
    // no huge mappings over the released range, so only the pages read
    // (and their fault-around) come back (without this, the peak RSS
    // rose ~10 MB above the reference's on Gemma 3).
    // SAFETY: as below; advice only, on a range of the mapping.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_NOHUGEPAGE)
    };
    // SAFETY: [start, end) lies inside a file's read-only private mapping
    // (the caller's contract) and holds no anonymous copy; MADV_DONTNEED on
    // it only drops clean page cache pages, which refault unchanged.
    let rc = unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
    if rc == 0 {
        end - start
    } else {
        0
    }
}

/// Maps the whole of `file` read-only.
fn map_file(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: the mapping is read-only and private to this GgufFile. Like
    // llama.cpp, we rely on the model file not being truncated or modified
    // while it is mapped; memmap2 handles empty files and the lifetime of
    // the mapping.
    let map = unsafe { Mmap::map(file) }?;
    // Advice only, failure is fine: file pages read in for this mapping
    // come as 2 MiB folios where the file system can (ext4 and xfs on
    // recent kernels) and are mapped one TLB entry each; a decode streams
    // every weight once per token, which reads ~1.6× as fast through such a
    // mapping as through 4 KiB pages. Pages already cached keep their size.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Ok(map)
}

/// A scalar value formatted like C++ `std::to_string` (floats "%f").
fn format_scalar(v: &Value) -> String {
    match *v {
        Value::U8(x) => x.to_string(),
        Value::I8(x) => x.to_string(),
        Value::U16(x) => x.to_string(),
        Value::I16(x) => x.to_string(),
        Value::U32(x) => x.to_string(),
        Value::I32(x) => x.to_string(),
        Value::U64(x) => x.to_string(),
        Value::I64(x) => x.to_string(),
        Value::F32(x) => value::c_float(f64::from(x)),
        Value::F64(x) => value::c_float(x),
        Value::Bool(b) => String::from(if b { "true" } else { "false" }),
        Value::Str(_) | Value::Array(_) => String::new(),
    }
}
