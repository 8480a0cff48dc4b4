//! State and session save/load: the C side of `context::state` (pointers,
//! lengths and paths checked here; the format lives there).

use super::boundary::*;
use super::context::{ctx_mut, ctx_ref};
use super::types::*;
use crate::context::state::{self, SliceSink, SliceSource, Source};
use crate::error::{Error, Result};
use std::ffi::c_char;
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The caller's output buffer, cut to the `needed` bytes a state takes
/// (so nothing past them is ever addressed); short: an error, nothing written.
fn out_buf<'a>(dst: *mut u8, size: usize, needed: usize) -> Result<&'a mut [u8]> {
    if size < needed {
        return Err(Error::state(format!("the buffer of {size} bytes is too small for the state ({needed} bytes)")));
    }
    if dst.is_null() {
        return Err(Error::invalid("dst is NULL"));
    }
    // SAFETY: the caller's buffer holds `size` >= `needed` bytes (the C API's contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(dst, needed) })
}

/// The caller's input buffer of `size` bytes.
fn in_buf<'a>(src: *const u8, size: usize) -> Result<&'a [u8]> {
    if size == 0 {
        return Ok(&[]);
    }
    if src.is_null() {
        return Err(Error::invalid("src is NULL"));
    }
    // SAFETY: the caller's buffer holds `size` bytes (the C API's contract).
    Ok(unsafe { std::slice::from_raw_parts(src, size) })
}

fn tokens_in<'a>(tokens: *const llama_token, n: usize) -> Result<&'a [i32]> {
    if n == 0 {
        return Ok(&[]);
    }
    if tokens.is_null() {
        return Err(Error::invalid("tokens is NULL"));
    }
    // SAFETY: the caller's array holds `n` tokens (the C API's contract).
    Ok(unsafe { std::slice::from_raw_parts(tokens, n) })
}

fn path_of<'a>(p: *const c_char, what: &str) -> Result<&'a Path> {
    Ok(Path::new(std::ffi::OsStr::from_bytes(c_str(p, what)?.to_bytes())))
}

/// A state of unknown length (the deprecated llama_set_state_data): bytes
/// are taken as the parser asks for them, as the reference reads them.
struct RawSource<'a> {
    ptr: *const u8,
    at: usize,
    _bytes: PhantomData<&'a [u8]>,
}

impl<'a> Source<'a> for RawSource<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        // SAFETY: llama_set_state_data's contract is that `src` holds a whole
        // state; the parser asks only for what the state's counts say, each
        // count checked against this context's cache before its bytes are taken.
        let s = unsafe { std::slice::from_raw_parts(self.ptr.add(self.at), n) };
        self.at += n;
        Ok(s)
    }
    fn n_bytes(&self) -> usize {
        self.at
    }
}

fn get_size(name: &str, ctx: *mut llama_context) -> usize {
    guard(name, 0, || state::state_size(ctx_ref(ctx)?))
}

#[no_mangle]
pub extern "C" fn llama_state_get_size(ctx: *mut llama_context) -> usize {
    get_size("llama_state_get_size", ctx)
}

#[no_mangle]
pub extern "C" fn llama_get_state_size(ctx: *mut llama_context) -> usize {
    get_size("llama_get_state_size", ctx)
}

fn get_data(name: &str, ctx: *mut llama_context, dst: *mut u8, size: usize) -> usize {
    guard(name, 0, || {
        let c = ctx_ref(ctx)?;
        let buf = out_buf(dst, size, state::state_size(c)?)?;
        state::write_state(c, &mut SliceSink::new(buf))
    })
}

#[no_mangle]
pub extern "C" fn llama_state_get_data(ctx: *mut llama_context, dst: *mut u8, size: usize) -> usize {
    get_data("llama_state_get_data", ctx, dst, size)
}

/// Deprecated: `dst` must hold llama_state_get_size bytes.
#[no_mangle]
pub extern "C" fn llama_copy_state_data(ctx: *mut llama_context, dst: *mut u8) -> usize {
    get_data("llama_copy_state_data", ctx, dst, usize::MAX)
}

#[no_mangle]
pub extern "C" fn llama_state_set_data(ctx: *mut llama_context, src: *const u8, size: usize) -> usize {
    guard("llama_state_set_data", 0, || {
        let c = ctx_mut(ctx)?;
        state::read_state(c, &mut SliceSource::new(in_buf(src, size)?))
    })
}

/// Deprecated: reads as many bytes as the state at `src` takes.
#[no_mangle]
pub extern "C" fn llama_set_state_data(ctx: *mut llama_context, src: *const u8) -> usize {
    guard("llama_set_state_data", 0, || {
        let c = ctx_mut(ctx)?;
        if src.is_null() {
            return Err(Error::invalid("src is NULL"));
        }
        state::read_state(c, &mut RawSource { ptr: src, at: 0, _bytes: PhantomData })
    })
}

fn load_file(
    name: &str,
    ctx: *mut llama_context,
    path: *const c_char,
    tokens_out: *mut llama_token,
    capacity: usize,
    n_token_count_out: *mut usize,
) -> bool {
    guard(name, false, || {
        let c = ctx_mut(ctx)?;
        let path = path_of(path, "path_session")?;
        if n_token_count_out.is_null() {
            return Err(Error::invalid("n_token_count_out is NULL"));
        }
        if tokens_out.is_null() && capacity > 0 {
            return Err(Error::invalid("tokens_out is NULL"));
        }
        let tokens = state::load_session_file(c, path, capacity)?;
        // SAFETY: tokens_out holds `capacity` >= tokens.len() tokens and
        // n_token_count_out is a valid pointer (the C API's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(tokens.as_ptr(), tokens_out, tokens.len());
            *n_token_count_out = tokens.len();
        }
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn llama_state_load_file(
    ctx: *mut llama_context,
    path_session: *const c_char,
    tokens_out: *mut llama_token,
    n_token_capacity: usize,
    n_token_count_out: *mut usize,
) -> bool {
    load_file("llama_state_load_file", ctx, path_session, tokens_out, n_token_capacity, n_token_count_out)
}

#[no_mangle]
pub extern "C" fn llama_load_session_file(
    ctx: *mut llama_context,
    path_session: *const c_char,
    tokens_out: *mut llama_token,
    n_token_capacity: usize,
    n_token_count_out: *mut usize,
) -> bool {
    load_file("llama_load_session_file", ctx, path_session, tokens_out, n_token_capacity, n_token_count_out)
}

fn save_file(name: &str, ctx: *mut llama_context, path: *const c_char, tokens: *const llama_token, n: usize) -> bool {
    guard(name, false, || {
        let c = ctx_ref(ctx)?;
        state::save_session_file(c, path_of(path, "path_session")?, tokens_in(tokens, n)?)?;
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn llama_state_save_file(
    ctx: *mut llama_context,
    path_session: *const c_char,
    tokens: *const llama_token,
    n_token_count: usize,
) -> bool {
    save_file("llama_state_save_file", ctx, path_session, tokens, n_token_count)
}

#[no_mangle]
pub extern "C" fn llama_save_session_file(
    ctx: *mut llama_context,
    path_session: *const c_char,
    tokens: *const llama_token,
    n_token_count: usize,
) -> bool {
    save_file("llama_save_session_file", ctx, path_session, tokens, n_token_count)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_get_size(ctx: *mut llama_context, seq_id: llama_seq_id) -> usize {
    guard("llama_state_seq_get_size", 0, || state::seq_size(ctx_ref(ctx)?, seq_id, 0))
}

#[no_mangle]
pub extern "C" fn llama_state_seq_get_data(
    ctx: *mut llama_context,
    dst: *mut u8,
    size: usize,
    seq_id: llama_seq_id,
) -> usize {
    seq_get_data("llama_state_seq_get_data", ctx, dst, size, seq_id, 0)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_set_data(
    ctx: *mut llama_context,
    src: *const u8,
    size: usize,
    dest_seq_id: llama_seq_id,
) -> usize {
    seq_set_data("llama_state_seq_set_data", ctx, src, size, dest_seq_id, 0)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_save_file(
    ctx: *mut llama_context,
    filepath: *const c_char,
    seq_id: llama_seq_id,
    tokens: *const llama_token,
    n_token_count: usize,
) -> usize {
    guard("llama_state_seq_save_file", 0, || {
        let c = ctx_ref(ctx)?;
        state::save_seq_file(c, path_of(filepath, "filepath")?, seq_id, tokens_in(tokens, n_token_count)?)
    })
}

/// With `tokens_out` NULL only the token count is reported (and the
/// header's size returned); no state is loaded.
#[no_mangle]
pub extern "C" fn llama_state_seq_load_file(
    ctx: *mut llama_context,
    filepath: *const c_char,
    dest_seq_id: llama_seq_id,
    tokens_out: *mut llama_token,
    n_token_capacity: usize,
    n_token_count_out: *mut usize,
) -> usize {
    guard("llama_state_seq_load_file", 0, || {
        let c = ctx_mut(ctx)?;
        let path = path_of(filepath, "filepath")?;
        if n_token_count_out.is_null() {
            return Err(Error::invalid("n_token_count_out is NULL"));
        }
        let capacity = (!tokens_out.is_null()).then_some(n_token_capacity);
        let loaded = state::load_seq_file(c, path, dest_seq_id, capacity)?;
        // SAFETY: n_token_count_out is valid; with tokens_out given it holds
        // `n_token_capacity` >= tokens.len() tokens (the C API's contract).
        unsafe {
            if !tokens_out.is_null() {
                std::ptr::copy_nonoverlapping(loaded.tokens.as_ptr(), tokens_out, loaded.tokens.len());
            }
            *n_token_count_out = loaded.n_token;
        }
        Ok(loaded.n_read)
    })
}

fn seq_get_data(
    name: &str,
    ctx: *mut llama_context,
    dst: *mut u8,
    size: usize,
    seq: llama_seq_id,
    flags: u32,
) -> usize {
    guard(name, 0, || {
        let c = ctx_mut(ctx)?;
        let buf = out_buf(dst, size, state::seq_size(c, seq, flags)?)?;
        state::seq_get_data(c, buf, seq, flags)
    })
}

fn seq_set_data(
    name: &str,
    ctx: *mut llama_context,
    src: *const u8,
    size: usize,
    seq: llama_seq_id,
    flags: u32,
) -> usize {
    guard(name, 0, || state::seq_set_data(ctx_mut(ctx)?, in_buf(src, size)?, seq, flags))
}

#[no_mangle]
pub extern "C" fn llama_state_seq_get_size_ext(
    ctx: *mut llama_context,
    seq_id: llama_seq_id,
    flags: llama_state_seq_flags,
) -> usize {
    guard("llama_state_seq_get_size_ext", 0, || state::seq_size(ctx_ref(ctx)?, seq_id, flags))
}

#[no_mangle]
pub extern "C" fn llama_state_seq_get_data_ext(
    ctx: *mut llama_context,
    dst: *mut u8,
    size: usize,
    seq_id: llama_seq_id,
    flags: llama_state_seq_flags,
) -> usize {
    seq_get_data("llama_state_seq_get_data_ext", ctx, dst, size, seq_id, flags)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_set_data_ext(
    ctx: *mut llama_context,
    src: *const u8,
    size: usize,
    dest_seq_id: llama_seq_id,
    flags: llama_state_seq_flags,
) -> usize {
    seq_set_data("llama_state_seq_set_data_ext", ctx, src, size, dest_seq_id, flags)
}
