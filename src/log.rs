//! Logging. Every message of the library goes through `emit`, which hands it
//! to the callback the host installed with `llama_log_set`, or prints it to
//! stderr as the reference does when none is installed.
//!
//! Messages end with a newline, as the reference's do, so a host callback
//! that forwards text verbatim gets whole lines.

use parking_lot::RwLock;
use std::ffi::{c_char, c_void, CString};
use std::io::Write;

/// ggml_log_level values (see enums.tsv).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum Level {
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
    Cont = 5,
}

/// `void (*)(enum ggml_log_level, const char *, void *)`, with the level as a
/// plain int so that no C value can be an invalid Rust enum.
pub type RawCallback = unsafe extern "C" fn(level: i32, text: *const c_char, user_data: *mut c_void);

#[derive(Clone, Copy)]
struct Sink {
    callback: Option<RawCallback>,
    user_data: *mut c_void,
}

// SAFETY: the user-data pointer is only handed back to the host's callback;
// the host promises (as with the reference) that it may be used from any thread.
unsafe impl Send for Sink {}
// SAFETY: a &Sink only reads the two fields (no interior mutability); the
// pointer goes back to the host's callback, usable from any thread (as for Send).
unsafe impl Sync for Sink {}

static SINK: RwLock<Sink> = RwLock::new(Sink { callback: None, user_data: std::ptr::null_mut() });

/// Install a callback (`None` restores the default: stderr).
pub fn set_callback(callback: Option<RawCallback>, user_data: *mut c_void) {
    *SINK.write() = Sink { callback, user_data };
}

/// The installed callback and its user data (`None` when the default is active).
pub fn callback() -> (Option<RawCallback>, *mut c_void) {
    let s = *SINK.read();
    (s.callback, s.user_data)
}

/// The default sink: text to stderr, unchanged.
pub fn write_stderr(text: &[u8]) {
    let _ = std::io::stderr().lock().write_all(text);
}

/// Send one message to the active sink. Interior NUL bytes are replaced so
/// that the C string is never cut short.
pub fn emit(level: Level, msg: &str) {
    let mut text = msg.replace('\0', "\\0");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let sink = *SINK.read();
    match sink.callback {
        Some(cb) => {
            let c = CString::new(text).unwrap_or_default();
            // SAFETY: the host registered `cb` for exactly this signature; the
            // string lives until the call returns.
            unsafe { cb(level as i32, c.as_ptr(), sink.user_data) };
        }
        None => write_stderr(text.as_bytes()),
    }
}

#[macro_export]
macro_rules! log_error { ($($t:tt)*) => { $crate::log::emit($crate::log::Level::Error, &format!($($t)*)) } }
#[macro_export]
macro_rules! log_warn { ($($t:tt)*) => { $crate::log::emit($crate::log::Level::Warn, &format!($($t)*)) } }
#[macro_export]
macro_rules! log_info { ($($t:tt)*) => { $crate::log::emit($crate::log::Level::Info, &format!($($t)*)) } }
#[macro_export]
macro_rules! log_debug { ($($t:tt)*) => { $crate::log::emit($crate::log::Level::Debug, &format!($($t)*)) } }
