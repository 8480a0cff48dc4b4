//! The C ABI: the only module with `extern "C"`, raw pointers and handle
//! casts. One file per section of llama.h; every exported body runs inside
//! `boundary::guard`. cbindgen reads these files to write include/llama.h.

// The exports take raw pointers because that is the C ABI; each checks them
// (NULL, ranges: the rules in lib.rs), and `unsafe` would mean nothing to C.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod boundary;
pub mod types;

#[cfg(test)]
mod abi_tests;
pub mod adapter;
pub mod batch;
pub mod chat;
pub mod context;
pub mod from_user;
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
