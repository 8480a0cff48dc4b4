//! The C ABI: the only module with `extern "C"`, raw pointers and handle
//! casts. One file per section of llama.h; every exported body runs inside
//! `boundary::guard`. cbindgen reads these files to write include/llama.h.

pub mod boundary;
pub mod types;

#[cfg(test)]
mod abi_tests;
pub mod adapter;
pub mod batch;
pub mod chat;
pub mod context;
pub mod ggml;
pub mod log;
pub mod memory;
pub mod misc;
pub mod model;
pub mod opt;
pub mod quantize;
pub mod sampler;
pub mod state;
#[cfg(feature = "test-hooks")]
pub mod test_hooks;
pub mod vocab;
