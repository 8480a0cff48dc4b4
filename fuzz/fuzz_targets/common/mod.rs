//! Shared by the fuzz targets that drive the C API: panics the boundary
//! caught become crashes, and the files the targets read are found here.
//!
//! Every exported function runs inside `boundary::guard`, which turns a
//! panic into the failure value and logs "internal error (caught a panic"
//! — invisible to libFuzzer. The log callback installed by `watch` records
//! that message and `check` re-raises it outside the boundary, where
//! libFuzzer's panic hook aborts and saves the input.

#![allow(dead_code)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::Once;

use llama::ffi::log::llama_log_set;
use llama::ffi::types::enum_ggml_log_level;

static CAUGHT: Mutex<Option<String>> = Mutex::new(None);

unsafe extern "C" fn on_log(_level: enum_ggml_log_level, text: *const c_char, _user: *mut c_void) {
    if text.is_null() {
        return;
    }
    // SAFETY: the library passes a NUL-terminated message.
    let msg = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    if msg.contains("caught a panic") {
        if let Ok(mut c) = CAUGHT.lock() {
            c.get_or_insert_with(|| msg.into_owned());
        }
    }
}

/// Installs the log callback (once): quiet, except that it records panics
/// the boundary caught.
pub fn watch() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| llama_log_set(Some(on_log), std::ptr::null_mut()));
}

/// Panics (outside the boundary) if a call since the last check panicked.
pub fn check(what: &str) {
    if let Some(msg) = CAUGHT.lock().ok().and_then(|mut c| c.take()) {
        panic!("{what}: the library caught a panic: {msg}");
    }
}

/// The cache of models and vocabularies: $MINFER_CACHE or ~/.cache/minfer.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("MINFER_CACHE") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/minfer"),
    }
}

/// The synthetic model the decode and gbnf targets use: $MINFER_FUZZ_MODEL
/// (scripts/fuzz.sh makes it with examples/synth_model.rs).
pub fn synth_model_path() -> CString {
    let p = std::env::var("MINFER_FUZZ_MODEL").unwrap_or_else(|_| {
        panic!("set MINFER_FUZZ_MODEL to a model made by examples/synth_model.rs (scripts/fuzz.sh does)")
    });
    CString::new(p).expect("path without NUL")
}

/// A little-endian reader over the fuzz input that yields zeros when the
/// input runs out.
pub struct Input<'a> {
    pub data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    pub fn i32(&mut self) -> i32 {
        i32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// The next `n` bytes (fewer if the input ends).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.data.split_at(n.min(self.data.len()));
        self.data = b;
        a
    }
    /// Bytes up to the next NUL (consumed) or the end.
    pub fn until_nul(&mut self) -> &'a [u8] {
        match self.data.iter().position(|&b| b == 0) {
            Some(i) => {
                let s = &self.data[..i];
                self.data = &self.data[i + 1..];
                s
            }
            None => std::mem::take(&mut self.data),
        }
    }
    /// A small count or id: mostly in 0..range, sometimes an edge value
    /// (negative, just past the range, huge).
    pub fn int_around(&mut self, range: i32) -> i32 {
        let b = self.u8();
        match b {
            0..=239 => i32::from(b) % range.max(1),
            240 => -1,
            241 => range,
            242 => range + 1,
            243 => i32::MAX,
            244 => i32::MIN,
            245 => -2,
            _ => self.i32(),
        }
    }
}
