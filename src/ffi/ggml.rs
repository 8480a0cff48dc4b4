//! The few ggml_* functions that llama.cpp's own examples call next to
//! llama.h, so that they link against minfer alone.

use super::boundary::*;

/// Microseconds on a monotonic clock.
#[no_mangle]
pub extern "C" fn ggml_time_us() -> i64 {
    super::misc::time_us()
}

/// Milliseconds on the same clock.
#[no_mangle]
pub extern "C" fn ggml_time_ms() -> i64 {
    super::misc::time_us() / 1000
}

/// Starts the clock (the reference's ggml_time_init).
#[no_mangle]
pub extern "C" fn ggml_time_init() {
    let _ = super::misc::time_us();
}

/// Loads dynamic backends in the reference; minfer's CPU backend is built in,
/// so there is nothing to load.
#[no_mangle]
pub extern "C" fn ggml_backend_load_all() {
    guard("ggml_backend_load_all", (), || Ok(()))
}
