//! Batches, decode and encode.

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use super::context::ctx_mut;
use crate::context::batch::{Batch, Token};
use crate::context::Context;
use crate::error::{Error, Result};
use std::ptr;

/// malloc for `n` values of T (None on overflow or failure).
fn c_alloc<T>(n: usize) -> Option<*mut T> {
    let bytes = n.checked_mul(std::mem::size_of::<T>())?.max(1);
    // SAFETY: malloc with a nonzero size; NULL is checked.
    let p = unsafe { libc::malloc(bytes) }.cast::<T>();
    (!p.is_null()).then_some(p)
}

/// Copies a caller's llama_batch into a `Batch`, filling the defaults the
/// reference fills (sequence 0, positions continuing from the KV cache, only
/// the last token as output), checking every pointer it reads through.
fn read_batch(c: &Context, b: &llama_batch) -> Result<Batch> {
    if b.n_tokens <= 0 {
        return Err(Error::invalid(format!("n_tokens == {}", b.n_tokens)));
    }
    if b.token.is_null() {
        return Err(Error::invalid(if b.embd.is_null() {
            "batch has neither token ids nor embeddings"
        } else {
            "embedding inputs are not implemented yet"
        }));
    }
    let n = b.n_tokens as usize;
    let n_seq_max = c.cparams.n_seq_max as usize;
    // SAFETY: the caller's arrays hold n_tokens entries each (llama.h's
    // contract for llama_batch); NULL ones are not read.
    let tokens = unsafe { std::slice::from_raw_parts(b.token, n) };
    let pos = (!b.pos.is_null()).then(|| unsafe { std::slice::from_raw_parts(b.pos, n) });
    let n_seq_id = (!b.n_seq_id.is_null()).then(|| unsafe { std::slice::from_raw_parts(b.n_seq_id, n) });
    let seq_id = (!b.seq_id.is_null()).then(|| unsafe { std::slice::from_raw_parts(b.seq_id, n) });
    let logits = (!b.logits.is_null()).then(|| unsafe { std::slice::from_raw_parts(b.logits, n) });

    let mut pos_next: Vec<i32> = (0..n_seq_max).map(|s| c.kv.pos_max(s as i32) + 1).collect();
    let mut out = Batch { tokens: Vec::with_capacity(n), embd: Vec::new() };
    for i in 0..n {
        let seqs: Vec<i32> = match (n_seq_id, seq_id) {
            (Some(ns), Some(ids)) => {
                let k = ns[i];
                if k <= 0 || k as usize > n_seq_max {
                    return Err(Error::invalid(format!("n_seq_id[{i}] = {k} is out of range [1, {n_seq_max}]")));
                }
                if ids[i].is_null() {
                    return Err(Error::invalid(format!("seq_id[{i}] is NULL")));
                }
                // SAFETY: seq_id[i] holds n_seq_id[i] entries.
                unsafe { std::slice::from_raw_parts(ids[i], k as usize) }.to_vec()
            }
            _ => vec![0],
        };
        let first = seqs[0];
        if first < 0 || first as usize >= n_seq_max {
            return Err(Error::invalid(format!("invalid seq_id[{i}][0] = {first} >= {n_seq_max}")));
        }
        let p = match pos {
            Some(p) => p[i],
            None => {
                let p = pos_next[first as usize];
                pos_next[first as usize] += 1;
                p
            }
        };
        let output = match logits {
            Some(l) => l[i] != 0,
            None => c.cparams.embeddings || i == n - 1,
        };
        out.tokens.push(Token { id: Some(tokens[i]), pos: p, seqs, output });
    }
    Ok(out)
}

#[no_mangle]
pub extern "C" fn llama_batch_get_one(tokens: *mut llama_token, n_tokens: i32) -> llama_batch {
    llama_batch { n_tokens, token: tokens, ..empty_batch() }
}

#[no_mangle]
pub extern "C" fn llama_batch_init(n_tokens: i32, embd: i32, n_seq_max: i32) -> llama_batch {
    guard("llama_batch_init", empty_batch(), || {
        if n_tokens <= 0 || n_seq_max <= 0 || embd < 0 {
            return Err(Error::invalid(format!(
                "n_tokens ({n_tokens}) and n_seq_max ({n_seq_max}) must be positive and embd ({embd}) not negative"
            )));
        }
        let n = n_tokens as usize;
        // The arrays are malloc'd, as the reference's are: llama_batch_free
        // releases them with free().
        let mut batch = empty_batch();
        let ok = (|| {
            if embd > 0 {
                batch.embd = c_alloc::<f32>(n.checked_mul(embd as usize)?)?;
            } else {
                batch.token = c_alloc::<llama_token>(n)?;
            }
            batch.pos = c_alloc::<llama_pos>(n)?;
            batch.n_seq_id = c_alloc::<i32>(n)?;
            // n + 1 entries: the last is the NULL that llama_batch_free stops at.
            batch.seq_id = c_alloc::<*mut llama_seq_id>(n + 1)?;
            for i in 0..=n {
                // SAFETY: seq_id holds n + 1 pointers; each is written before
                // any is read, and NULL-initialised first so a failed
                // allocation below still leaves a freeable batch.
                unsafe { *batch.seq_id.add(i) = ptr::null_mut() };
            }
            for i in 0..n {
                let p = c_alloc::<llama_seq_id>(n_seq_max as usize)?;
                // SAFETY: i < n + 1 entries.
                unsafe { *batch.seq_id.add(i) = p };
            }
            batch.logits = c_alloc::<i8>(n)?;
            Some(())
        })();
        if ok.is_none() {
            llama_batch_free(batch);
            return Err(Error::invalid(format!("cannot allocate a batch of {n_tokens} tokens")));
        }
        Ok(batch)
    })
}

#[no_mangle]
pub extern "C" fn llama_batch_free(batch: llama_batch) {
    guard("llama_batch_free", (), || {
        // SAFETY: every non-NULL array came from c_alloc (malloc) in
        // llama_batch_init; seq_id ends with a NULL entry.
        unsafe {
            libc::free(batch.token.cast());
            libc::free(batch.embd.cast());
            libc::free(batch.pos.cast());
            libc::free(batch.n_seq_id.cast());
            if !batch.seq_id.is_null() {
                let mut i = 0;
                while !(*batch.seq_id.add(i)).is_null() {
                    libc::free((*batch.seq_id.add(i)).cast());
                    i += 1;
                }
                libc::free(batch.seq_id.cast());
            }
            libc::free(batch.logits.cast());
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_encode(ctx: *mut llama_context, batch: llama_batch) -> i32 {
    guard("llama_encode", -1, || {
        ctx_mut(ctx)?;
        let _ = batch;
        Err(Error::invalid("the model has no encoder (decoder-only models use llama_decode)"))
    })
}

#[no_mangle]
pub extern "C" fn llama_decode(ctx: *mut llama_context, batch: llama_batch) -> i32 {
    guard("llama_decode", -1, || {
        let c = ctx_mut(ctx)?;
        let input = read_batch(c, &batch)?;
        // The callback is taken out for the call so the context can be
        // borrowed mutably beside it.
        let mut abort = c.abort.take();
        let status = c.decode(&input, &mut || abort.as_mut().is_some_and(|f| f()));
        c.abort = abort;
        Ok(status? as i32)
    })
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_init(ctx: *mut llama_context) -> *mut llama_batch_ext {
    not_implemented("llama_batch_ext_init", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_free(batch: *mut llama_batch_ext) {
    not_implemented("llama_batch_ext_free", ())
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_clear(batch: *mut llama_batch_ext) {
    not_implemented("llama_batch_ext_clear", ())
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_add(batch: *mut llama_batch_ext, seq_id: llama_seq_id) -> i32 {
    not_implemented("llama_batch_ext_add", -1)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_add_token(batch: *mut llama_batch_ext, seq_id: llama_seq_id, id: llama_token) -> i32 {
    not_implemented("llama_batch_ext_add_token", -1)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_add_embd(batch: *mut llama_batch_ext, seq_id: llama_seq_id, embd: llama_embd) -> i32 {
    not_implemented("llama_batch_ext_add_embd", -1)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_add_seq(batch: *mut llama_batch_ext, idx: i32, seq_id: llama_seq_id) -> bool {
    not_implemented("llama_batch_ext_add_seq", false)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_embd_token(batch: *mut llama_batch_ext, idx: i32, embd: llama_embd) -> bool {
    not_implemented("llama_batch_ext_set_embd_token", false)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_embd_state(batch: *mut llama_batch_ext, idx: i32, embd: llama_embd) -> bool {
    not_implemented("llama_batch_ext_set_embd_state", false)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_output_embd(batch: *mut llama_batch_ext, idx: i32, value: bool) -> bool {
    not_implemented("llama_batch_ext_set_output_embd", false)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_output_logits(batch: *mut llama_batch_ext, idx: i32, value: bool) -> bool {
    not_implemented("llama_batch_ext_set_output_logits", false)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_pos(batch: *mut llama_batch_ext, idx: i32, pos: *const llama_pos) -> bool {
    not_implemented("llama_batch_ext_set_pos", false)
}

#[no_mangle]
pub extern "C" fn llama_process(ctx: *mut llama_context, r#type: enum_llama_process_type, batch: *mut llama_batch_ext) -> i32 {
    not_implemented("llama_process", -1)
}

/// The all-NULL batch returned on failure (freeing it is a no-op).
fn empty_batch() -> llama_batch {
    llama_batch {
        n_tokens: 0,
        token: ptr::null_mut(),
        embd: ptr::null_mut(),
        pos: ptr::null_mut(),
        n_seq_id: ptr::null_mut(),
        seq_id: ptr::null_mut(),
        logits: ptr::null_mut(),
    }
}
