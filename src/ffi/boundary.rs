//! The panic boundary and the checks every exported function shares.
//!
//! Every `extern "C"` body runs inside [`guard`]: an `Err` is logged and
//! becomes the function's failure value, and so does a panic, so no unwind
//! ever crosses into the host.

use crate::error::{Error, Result};
use std::any::Any;
use std::cell::Cell;
use std::ffi::{c_char, CStr};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Depth of `guard` calls on this thread; the panic hook stays quiet
    /// inside the boundary (the boundary logs the panic itself).
    static INSIDE: Cell<u32> = const { Cell::new(0) };
}

/// Installs, once, a panic hook that leaves panics raised inside the boundary
/// to the boundary (which logs them through the host's log callback) and
/// hands every other panic to the previous hook, so a Rust host keeps its own
/// behaviour.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if INSIDE.with(|d| d.get()) == 0 {
                previous(info);
            }
        }));
    });
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Runs `body`; on `Err` logs `name: message` and returns `fail`; on panic
/// logs `name: internal error: ...` and returns `fail`.
pub fn guard<T>(name: &str, fail: T, body: impl FnOnce() -> Result<T>) -> T {
    install_panic_hook();
    INSIDE.with(|d| d.set(d.get() + 1));
    let outcome = panic::catch_unwind(AssertUnwindSafe(body));
    INSIDE.with(|d| d.set(d.get() - 1));
    match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            log_error!("{name}: {e}");
            fail
        }
        Err(payload) => {
            log_error!("{name}: internal error (caught a panic, the call failed safely): {}", panic_message(&*payload));
            fail
        }
    }
}

/// A shared reference from a C pointer, or an error naming the argument.
///
/// SAFETY contract for callers: a non-NULL `p` must point to a live `T`
/// handed out by this library (the C API's rule for handles).
pub fn deref<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: NULL is rejected; any other value is a handle the caller got
    // from us and has not freed (the documented contract of the C API).
    unsafe { p.as_ref() }.ok_or_else(|| Error::invalid(format!("{what} is NULL")))
}

/// A C string argument as bytes (no NUL), or an error if NULL.
pub fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a CStr> {
    if p.is_null() {
        return Err(Error::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and, by the C API's contract, NUL-terminated.
    Ok(unsafe { CStr::from_ptr(p) })
}

/// Writes `s` into the caller's buffer `buf[..buf_size]` snprintf-style: at
/// most `buf_size - 1` bytes and a NUL; returns the full length of `s` (the
/// size the caller needs, less the NUL), as the reference's metadata getters do.
pub fn write_c_string(s: &[u8], buf: *mut c_char, buf_size: usize) -> i32 {
    if !buf.is_null() && buf_size > 0 {
        let n = s.len().min(buf_size - 1);
        // SAFETY: the caller guarantees `buf` holds `buf_size` bytes; we
        // write n + 1 <= buf_size of them.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    i32::try_from(s.len()).unwrap_or(i32::MAX)
}

/// Clears the caller's buffer (first byte NUL) if there is one; used on
/// failure paths of functions whose output "is cleared on failure".
pub fn clear_c_string(buf: *mut c_char, buf_size: usize) {
    if !buf.is_null() && buf_size > 0 {
        // SAFETY: buf holds at least one byte.
        unsafe { *buf = 0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_returns_value_error_and_panic_fallbacks() {
        assert_eq!(guard("t", -1, || Ok(7)), 7);
        assert_eq!(guard("t", -1, || Err(Error::invalid("x"))), -1);
        assert_eq!(guard::<i32>("t", -1, || panic!("boom")), -1);
        // The thread keeps working after a caught panic.
        assert_eq!(guard("t", 0, || Ok(1)), 1);
    }

    #[test]
    #[allow(clippy::unnecessary_cast, reason = "c_char is i8 on x86-64 but u8 on aarch64")]
    fn write_c_string_truncates_and_terminates() {
        let mut buf = [0x7f as c_char; 4];
        assert_eq!(write_c_string(b"hello", buf.as_mut_ptr(), buf.len()), 5);
        assert_eq!(&buf.map(|c| c as u8), b"hel\0");
        assert_eq!(write_c_string(b"hi", buf.as_mut_ptr(), 0), 2);
        assert_eq!(write_c_string(b"hi", std::ptr::null_mut(), 10), 2);
    }
}
