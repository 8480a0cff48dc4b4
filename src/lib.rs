//! minfer: an LLM inference runtime shipped as `libllama`, a drop-in
//! replacement for llama.cpp's library (the llama.h ABI of commit 0c1e570).
//!
//! # The rules of the C API
//!
//! - **Ownership.** Every handle returned by a `*_init*`/`*_load*` function is
//!   owned by the caller and released by the matching `*_free`, which accepts
//!   NULL. A model is reference counted by the contexts made from it: freeing
//!   it while a context lives is allowed and logged; its memory goes when the
//!   last context does.
//! - **NULL and ranges.** Every handle and pointer argument is checked; a NULL
//!   or out-of-range argument gets the function's documented failure value
//!   (NULL, a negative number, false, 0) and a logged message.
//! - **Panics.** None crosses the boundary: every exported function runs inside
//!   `ffi::boundary::guard`, which turns a panic into the failure value.
//! - **Threads.** Distinct contexts may be used from distinct threads at once;
//!   one context must not be used from two threads at the same time (as with
//!   the reference). Logging setters are global.
//!
//! # Layout
//!
//! `ffi/` is the only module with `extern "C"`, raw pointers and handle casts.
//! Below it: `gguf/` (file format), `model/` (hyperparameters, metadata,
//! weights), `vocab/` (tokenizers), `context/` (KV cache, decode, forward
//! pass), `sampling/` (the samplers, the chain, GBNF grammars), `chat/` (built-in
//! chat templates), `regex/` (`std::regex` emulations), `quant/` (ggml block
//! formats), `kernels/` (SIMD dot products, matmul, thread pool), `log`,
//! `error`. See docs/ARCHITECTURE.md.

/// Marks a unit test as skipped (a CPU feature or an input it needs is
/// missing). The line goes straight to stderr, past libtest's output capture,
/// so that scripts/test.sh can count the skips: libtest itself reports such a
/// test as passed.
#[cfg(test)]
macro_rules! skip_test {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "SKIPPED {}: {}", module_path!(), format_args!($($arg)*));
    }};
}

pub mod clock;
pub mod cpu;
pub mod error;
#[macro_use]
pub mod log;
pub mod chat;
pub mod context;
pub mod ffi;
pub mod ggml_type;
pub mod gguf;
pub mod kernels;
pub mod model;
pub mod quant;
pub mod regex;
pub mod sampling;
pub mod vocab;

#[cfg(test)]
mod test_alloc;

pub use error::{Error, Result};
