//! Weight matrices laid out again once at load:
//!
//! - interleaved for the kernel set in use, as the reference repacks them
//!   (`ggml-cpu/repack.cpp`): today the Q4_0, IQ4_NL, MXFP4 and Q4_K matrices with
//!   a multiple of 8 rows, for the x86-64 sets (`avx2`, `avx2-vnni`:
//!   `KernelSet::tiled_fn`; elsewhere no tiles are built and the kernels
//!   read the mapping);
//! - the float matrices (F16, BF16, F32), on every CPU, read through 2 MiB
//!   pages. A decode streams each of them whole every token at 2–4 bytes a
//!   weight, and through 4 KiB pages the TLB bounds the stream; how the
//!   file mapping maps them is the page cache's choice. Where the kernel
//!   says which pages are huge (`PAGEMAP_SCAN`, Linux 6.7+) a matrix is
//!   read in place (`GgufFile::read_through_huge_pages`): the 2 MiB blocks
//!   the page cache holds as 2 MiB folios (ext4 from Linux 6.16, xfs; all
//!   of a file once minfer's mapping, which asks for huge pages, has read
//!   it in) are mapped whole, and only the others are copied, onto
//!   anonymous huge pages moved over the mapping at the same addresses.
//!   Elsewhere the matrix is copied into the mapping below, on huge pages
//!   (`MADV_HUGEPAGE`; `MINFER_NO_THP=1` skips the advice for both).
//!   `MINFER_FLOAT_COPIES=1` copies them all there, `=0` reads them all
//!   from the file mapping as it is.
//!   Not where the copies would take more than half the free memory
//!   (`_SC_AVPHYS_PAGES`, which leaves out the page cache): a model larger
//!   than memory keeps running from the mapping, as with the reference.
//!
//! Only matrices that are multiplied are built (the layers' projections,
//! each expert's slice of the expert tensors, and the output head, also
//! when it is the token embedding, as the reference loads a tied head
//! twice). The token embedding's `get_rows` reads the
//! file's rows, or the copy when the head is tied and copied.
//!
//! The tiles and copies live in one anonymous mapping owned by the model
//! (page-aligned, each matrix at a 64-byte multiple). After a matrix is
//! built, its file pages are released (`GgufFile::release_pages`), so the
//! resident size stays about that of the file; whatever still reads the
//! file's bytes of a built matrix (saving the model, a tied embedding)
//! faults them back in.

use std::collections::HashMap;

use super::weights::{FfnWeights, Weight, Weights};
use crate::error::{Error, Result};
use crate::ggml_type::GgmlType;
use crate::gguf::GgufFile;
use crate::kernels::ggml_paths::repack_tiles;
use crate::kernels::KernelSet;

/// The matrices of a model laid out again at load, in one mapping.
pub struct Repacked {
    /// page-aligned anonymous memory, `len` bytes (null when empty)
    ptr: *mut u8,
    len: usize,
    /// (file, tensor data offset) → where and how the matrix is in the mapping
    ranges: HashMap<(usize, u64), Range>,
}

/// One matrix's bytes in the mapping.
#[derive(Clone, Copy)]
struct Range {
    start: usize,
    bytes: usize,
    layout: Layout,
}

/// How a matrix is laid out in the mapping.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// the kernel set's interleaved tiles (`repack_tiles`)
    Tiles,
    /// the file's bytes unchanged: float matrices (2–4 bytes a weight), which
    /// a decode streams whole every token; read from the file mapping, most
    /// of their pages are 4 KiB ones and the TLB bounds the stream
    Copy,
    /// a float matrix read from the file mapping, each of its 2 MiB blocks
    /// through one huge page (`GgufFile::read_through_huge_pages`): no
    /// room in the mapping
    InPlace,
}

// SAFETY: the mapping is written only while `build` runs (before the value
// is shared) and read-only afterwards; it is owned by this value alone.
unsafe impl Send for Repacked {}
// SAFETY: as above (shared access only reads).
unsafe impl Sync for Repacked {}

impl Repacked {
    /// No repacked matrices.
    pub fn none() -> Repacked {
        Repacked { ptr: std::ptr::null_mut(), len: 0, ranges: HashMap::new() }
    }

    /// Builds the tiles of every multiplied matrix of `weights` that `ks`
    /// has a tiled kernel for and copies every multiplied float matrix,
    /// releasing their file pages.
    pub fn build(ks: &KernelSet, files: &[GgufFile], weights: &Weights) -> Result<Repacked> {
        let mut mats: Vec<&Weight> = Vec::new();
        for l in &weights.layers {
            mats.extend(l.matrices());
        }
        mats.extend(&weights.output);
        if let Some(e) = &weights.encoder {
            mats.extend([&e.cls, &e.cls_out, &e.dense_2, &e.dense_3].into_iter().flatten());
        }
        mats.extend(&weights.rank_out);
        // each expert's matrix, as the reference repacks the 3-D expert
        // tensors for its MUL_MAT_ID
        let slices: Vec<Weight> = weights
            .layers
            .iter()
            .flat_map(|l| match &l.ffn {
                FfnWeights::Experts(e) => e.slices(),
                FfnWeights::Dense(_) => Vec::new(),
            })
            .collect();
        mats.extend(&slices);
        let is_float = |w: &Weight| matches!(w.ty(), GgmlType::F16 | GgmlType::BF16 | GgmlType::F32);
        let mut float_bytes = 0usize;
        let mut seen = std::collections::HashSet::new();
        for w in mats.iter().filter(|w| is_float(w) && seen.insert((w.file, w.info.offset))) {
            float_bytes = float_bytes.saturating_add(files[w.file].tensor_data(&w.info).len());
        }
        // `MINFER_FLOAT_COPIES`: `1` copies every float matrix without asking
        // how the page cache holds it, `0` copies none (all read from the
        // file mapping); unset, as the module's comment says
        let policy = std::env::var("MINFER_FLOAT_COPIES").ok();
        let copy_floats = policy.as_deref() != Some("0") && copies_fit(float_bytes, free_memory());
        let ask_pages = policy.as_deref() != Some("1");
        if float_bytes > 0 && !copy_floats {
            crate::log_info!("load: {float_bytes} bytes of float matrices read from the file mapping (more than half the free memory, or MINFER_FLOAT_COPIES=0)");
        }
        let no_thp = std::env::var_os("MINFER_NO_THP").is_some_and(|v| !v.is_empty() && v != "0");
        // (a test hook: every 2 MiB block of the float matrices copied in
        // place, as if the page cache held none in 2 MiB folios)
        #[cfg(feature = "test-hooks")]
        let every_block = std::env::var_os("MINFER_TEST_COPY_EVERY_BLOCK").is_some();
        #[cfg(not(feature = "test-hooks"))]
        let every_block = false;
        let mut plan: Vec<(&Weight, Range)> = Vec::new();
        let mut planned = std::collections::HashSet::new();
        let mut ranges = HashMap::new();
        let mut len = 0usize;
        for w in mats {
            let (ty, rows, cols) = (w.ty(), w.rows(), w.cols());
            if !planned.insert((w.file, w.info.offset)) {
                continue;
            }
            let (bytes, layout) = if ks.tiled_fn(ty, rows, cols).is_some() {
                let Some(bytes) = repack_tiles::tiles_bytes(ty, rows, cols) else { continue };
                (bytes, Layout::Tiles)
            } else if copy_floats && is_float(w) {
                let data = files[w.file].tensor_data(&w.info);
                // in place where the kernel says which pages are huge
                if ask_pages && files[w.file].huge_mapped_bytes(data).is_some() {
                    (data.len(), Layout::InPlace)
                } else {
                    (data.len(), Layout::Copy)
                }
            } else {
                continue;
            };
            let range = Range { start: len, bytes, layout };
            plan.push((w, range));
            if layout != Layout::InPlace {
                ranges.insert((w.file, w.info.offset), range);
                len = (len + bytes).next_multiple_of(64);
            }
        }
        if plan.is_empty() {
            return Ok(Repacked::none());
        }
        let ptr = if len == 0 {
            std::ptr::null_mut()
        } else {
            // SAFETY: an anonymous private mapping: no file, no aliasing; the
            // result is checked against MAP_FAILED.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(Error::model(format!(
                    "cannot allocate {len} bytes for the repacked weights: {}",
                    std::io::Error::last_os_error()
                )));
            }
            // Transparent huge pages where the system gives them on request: a
            // decode streams every tile once per token, and with 4 KiB pages
            // nearly every page costs a TLB miss (decodes took ~16 % more CPU
            // time without). Their cost is at load, where the kernel may
            // compact memory to find 2 MiB pages (`MINFER_NO_THP=1` skips
            // them). Advice only: failure is fine.
            if !no_thp {
                // SAFETY: the range is the mapping just made.
                unsafe { libc::madvise(ptr, len, libc::MADV_HUGEPAGE) };
            }
            ptr as *mut u8
        };
        let me = Repacked { ptr, len, ranges };
        // The matrices are split between the calling thread and one helper
        // thread by bytes: page faults (and the kernel's zeroing of huge
        // pages) are most of the load's time.
        let total: usize = plan.iter().map(|(_, r)| r.bytes).sum();
        let mut sum = 0;
        let split = plan
            .iter()
            .position(|(_, r)| {
                sum += r.bytes;
                sum > total / 2
            })
            .map_or(plan.len(), |i| i + 1);
        let (first, second) = plan.split_at(split);
        let base = SendPtr(me.ptr);
        let copied_in_place = std::sync::atomic::AtomicUsize::new(0);
        let build_part = |part: &[(&Weight, Range)]| {
            for &(w, r) in part {
                let file = &files[w.file];
                let src = file.tensor_data(&w.info);
                let dst = || {
                    // SAFETY: [start, start + bytes) lies within the mapping
                    // (planned above for the tiles and the copies); the two
                    // parts' ranges are disjoint and no other reference to the
                    // mapping exists yet.
                    unsafe { std::slice::from_raw_parts_mut(base.get().add(r.start), r.bytes) }
                };
                match r.layout {
                    Layout::Tiles => {
                        repack_tiles::build(w.ty(), w.rows(), w.cols(), src, dst());
                        file.release_pages(&w.info);
                    }
                    Layout::Copy => {
                        // 2 MiB at a time, each piece's file pages released
                        // once copied: the process never holds a whole
                        // matrix twice (a 56 MB output head in F16)
                        const PIECE: usize = 2 << 20;
                        for (d, s) in dst().chunks_mut(PIECE).zip(src.chunks(PIECE)) {
                            d.copy_from_slice(s);
                            file.release_slice(s);
                        }
                        // (the pages straddling two pieces)
                        file.release_pages(&w.info);
                    }
                    Layout::InPlace => {
                        let copied = file.read_through_huge_pages(src, !no_thp, every_block).unwrap_or(0);
                        copied_in_place.fetch_add(copied, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        };
        std::thread::scope(|scope| {
            if second.is_empty() {
                build_part(first);
            } else {
                let helper =
                    std::thread::Builder::new().name("minfer-load".into()).spawn_scoped(scope, || build_part(second));
                build_part(first);
                match helper {
                    Ok(h) => {
                        // a panic there is a bug in `build`; propagate it (the
                        // FFI boundary turns it into a failed load)
                        if let Err(e) = h.join() {
                            std::panic::resume_unwind(e);
                        }
                    }
                    // no thread to be had: build the second part here
                    Err(_) => build_part(second),
                }
            }
        });
        let (n, bytes) = plan
            .iter()
            .filter(|(_, r)| r.layout == Layout::InPlace)
            .fold((0, 0), |(n, b), (_, r)| (n + 1, b + r.bytes));
        if n > 0 {
            crate::log_info!(
                "load: {n} float matrices ({:.2} MiB) read in place through 2 MiB pages ({:.2} MiB of blocks not in 2 MiB folios copied over the file mapping)",
                bytes as f64 / (1 << 20) as f64,
                copied_in_place.into_inner() as f64 / (1 << 20) as f64
            );
        }
        Ok(me)
    }

    /// The tiles of matrix `w`, if it was repacked.
    pub fn tiles(&self, w: &Weight) -> Option<&[u8]> {
        self.bytes_of(w, Layout::Tiles)
    }

    /// The copy of matrix `w`'s bytes, if it was copied: the same bytes as
    /// the file's, to be read instead of them.
    pub fn copy(&self, w: &Weight) -> Option<&[u8]> {
        self.bytes_of(w, Layout::Copy)
    }

    fn bytes_of(&self, w: &Weight, layout: Layout) -> Option<&[u8]> {
        let r = self.ranges.get(&(w.file, w.info.offset)).filter(|r| r.layout == layout)?;
        // SAFETY: the range lies within the mapping, which lives as long as
        // `self` and is no longer written.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(r.start), r.bytes) })
    }

    /// Matrices built as tiles and as copies.
    pub fn counts(&self) -> (usize, usize) {
        let copies = self.ranges.values().filter(|r| r.layout == Layout::Copy).count();
        (self.ranges.len() - copies, copies)
    }

    /// Bytes of the mapping.
    pub fn bytes(&self) -> usize {
        self.len
    }
}

/// Whether copies of `bytes` of float matrices are made, with `free` bytes
/// of free memory (`None`: unknown): at most half of it. A model larger
/// than memory still runs from the file mapping, whose pages the kernel can
/// drop and read again; anonymous copies it could not.
fn copies_fit(bytes: usize, free: Option<usize>) -> bool {
    free.is_none_or(|f| bytes <= f / 2)
}

/// Free physical memory in bytes, where the system says.
fn free_memory() -> Option<usize> {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe { (libc::sysconf(libc::_SC_AVPHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    usize::try_from(pages).ok()?.checked_mul(usize::try_from(size).ok()?)
}

/// The mapping's base pointer, handed to the helper thread of `build`.
#[derive(Clone, Copy)]
struct SendPtr(*mut u8);
// SAFETY: the threads of `build` write disjoint ranges of the mapping.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}
impl SendPtr {
    fn get(self) -> *mut u8 {
        self.0
    }
}

impl Drop for Repacked {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: `ptr`/`len` are the mapping made in `build`, unmapped
            // once here.
            unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{copies_fit, free_memory};

    #[test]
    fn float_copies_take_at_most_half_the_free_memory() {
        assert!(copies_fit(270 << 20, Some(1 << 30)));
        assert!(copies_fit(512 << 20, Some(1 << 30)));
        assert!(!copies_fit((512 << 20) + 1, Some(1 << 30)), "more than half");
        assert!(!copies_fit(14 << 30, Some(8 << 30)), "a 14 GB F16 model on an 8 GB machine");
        assert!(copies_fit(usize::MAX, None), "unknown: copy");
        #[cfg(target_os = "linux")]
        assert!(free_memory().is_some_and(|b| b > 0), "Linux reports its free memory");
    }
}
