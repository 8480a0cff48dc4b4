//! Log callback setters. The callback is process-wide, as in the reference.

use super::boundary::*;
use super::types::*;
use crate::log::RawCallback;
use std::ffi::{c_char, c_void, CStr};

/// The default sink as a C callback (what llama_log_get reports when no
/// callback is installed): the text to stderr, unchanged.
unsafe extern "C" fn default_log_callback(_level: enum_ggml_log_level, text: *const c_char, _user_data: *mut c_void) {
    if !text.is_null() {
        // SAFETY: the caller passes a NUL-terminated string.
        crate::log::write_stderr(unsafe { CStr::from_ptr(text) }.to_bytes());
    }
}

fn to_raw(cb: ggml_log_callback) -> Option<RawCallback> {
    // SAFETY: enum_ggml_log_level is #[repr(transparent)] over c_int, so the
    // two function pointer types have the same ABI.
    cb.map(|f| unsafe { std::mem::transmute::<_, RawCallback>(f) })
}

fn from_raw(cb: RawCallback) -> ggml_log_callback {
    // SAFETY: as in `to_raw`, the same ABI.
    Some(unsafe {
        std::mem::transmute::<RawCallback, unsafe extern "C" fn(enum_ggml_log_level, *const c_char, *mut c_void)>(cb)
    })
}

/// Installs `log_callback` for every later message; NULL restores stderr.
#[no_mangle]
pub extern "C" fn llama_log_set(log_callback: ggml_log_callback, user_data: *mut c_void) {
    guard("llama_log_set", (), || {
        crate::log::set_callback(to_raw(log_callback), user_data);
        Ok(())
    })
}

/// Reports the installed callback and user data (the default callback and
/// NULL when none is installed). Either pointer may be NULL.
#[no_mangle]
pub extern "C" fn llama_log_get(log_callback: *mut ggml_log_callback, user_data: *mut *mut c_void) {
    guard("llama_log_get", (), || {
        let (cb, ud) = crate::log::callback();
        let cb = match cb {
            Some(raw) => from_raw(raw),
            None => Some(default_log_callback as unsafe extern "C" fn(_, _, _)),
        };
        // SAFETY: each non-NULL pointer is the caller's place for one value.
        unsafe {
            if let Some(out) = log_callback.as_mut() {
                *out = cb;
            }
            if let Some(out) = user_data.as_mut() {
                *out = ud;
            }
        }
        Ok(())
    })
}
