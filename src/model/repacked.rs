//! Weight matrices interleaved once at load for the kernel set in use, as
//! the reference repacks them (`ggml-cpu/repack.cpp`): today the Q4_0,
//! IQ4_NL and Q4_K matrices with a multiple of 8 rows, on CPUs with AVX-512 VNNI
//! (`KernelSet::tiled_fn`; elsewhere nothing is built and the kernels read
//! the mapping). Only matrices that are multiplied are built (the layers'
//! projections and the output head, also when it is the token embedding,
//! as the reference loads a tied head twice); the token embedding's
//! `get_rows` keeps reading the file's rows.
//!
//! The tiles live in one anonymous mapping owned by the model (page-aligned,
//! each matrix at a 64-byte multiple). After a matrix is built, its file
//! pages are released (`GgufFile::release_pages`), so the resident size
//! stays about that of the file; whatever still reads the file's bytes of a
//! built matrix (saving the model, a tied embedding) faults them back in.

use std::collections::HashMap;

use super::weights::{Weight, Weights};
use crate::error::{Error, Result};
use crate::gguf::GgufFile;
use crate::kernels::ggml_paths::repack_tiles;
use crate::kernels::KernelSet;

/// The tiles of a model's repacked matrices.
pub struct Repacked {
    /// page-aligned anonymous memory, `len` bytes (null when empty)
    ptr: *mut u8,
    len: usize,
    /// (file, tensor data offset) → byte range in the mapping
    ranges: HashMap<(usize, u64), (usize, usize)>,
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
    /// has a tiled kernel for, releasing their file pages.
    pub fn build(ks: &KernelSet, files: &[GgufFile], weights: &Weights) -> Result<Repacked> {
        let mut mats: Vec<&Weight> = Vec::new();
        for l in &weights.layers {
            mats.extend([&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down]);
        }
        mats.push(&weights.output);
        // (matrix, its byte offset in the mapping, its tile bytes)
        let mut plan: Vec<(&Weight, usize, usize)> = Vec::new();
        let mut ranges = HashMap::new();
        let mut len = 0usize;
        for w in mats {
            let (ty, rows, cols) = (w.ty(), w.rows(), w.cols());
            if ks.tiled_fn(ty, rows, cols).is_none() || ranges.contains_key(&(w.file, w.info.offset)) {
                continue;
            }
            let Some(bytes) = repack_tiles::tiles_bytes(ty, rows, cols) else { continue };
            ranges.insert((w.file, w.info.offset), (len, bytes));
            plan.push((w, len, bytes));
            len = (len + bytes).next_multiple_of(64);
        }
        if plan.is_empty() {
            return Ok(Repacked::none());
        }
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
        // nearly every page costs a TLB miss (SmolLM2 Q4_0 tg128: 16 % more
        // CPU time without). Their cost is at load, where the kernel may
        // compact memory to find 2 MiB pages (`MINFER_NO_THP=1` skips
        // them). Advice only: failure is fine.
        let no_thp = std::env::var_os("MINFER_NO_THP").is_some_and(|v| !v.is_empty() && v != "0");
        if !no_thp {
            // SAFETY: the range is the mapping just made.
            unsafe { libc::madvise(ptr, len, libc::MADV_HUGEPAGE) };
        }
        let me = Repacked { ptr: ptr as *mut u8, len, ranges };
        // The matrices are split between the calling thread and one helper
        // thread by bytes: page faults (and the kernel's zeroing of huge
        // pages) are most of the load's time.
        let half = len / 2;
        let split = plan.iter().position(|&(_, start, _)| start >= half).unwrap_or(plan.len());
        let (first, second) = plan.split_at(split);
        let base = SendPtr(me.ptr);
        let build_part = |part: &[(&Weight, usize, usize)]| {
            for &(w, start, bytes) in part {
                let src = files[w.file].tensor_data(&w.info);
                // SAFETY: [start, start + bytes) lies within the mapping
                // (planned above); the two parts' ranges are disjoint and no
                // other reference to the mapping exists yet.
                let dst = unsafe { std::slice::from_raw_parts_mut(base.get().add(start), bytes) };
                repack_tiles::build(w.ty(), w.rows(), w.cols(), src, dst);
                files[w.file].release_pages(&w.info);
            }
        };
        std::thread::scope(|scope| {
            if second.is_empty() {
                build_part(first);
            } else {
                let helper = std::thread::Builder::new().name("minfer-load".into()).spawn_scoped(scope, || build_part(second));
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
        Ok(me)
    }

    /// The tiles of matrix `w`, if it was repacked.
    pub fn tiles(&self, w: &Weight) -> Option<&[u8]> {
        let &(start, bytes) = self.ranges.get(&(w.file, w.info.offset))?;
        // SAFETY: the range lies within the mapping, which lives as long as
        // `self` and is no longer written.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(start), bytes) })
    }

    /// Bytes of the tiles' mapping.
    pub fn bytes(&self) -> usize {
        self.len
    }
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
