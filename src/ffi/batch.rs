//! Batches, decode and encode.

use super::boundary::*;
use super::context::ctx_mut;
use super::types::*;
use crate::context::batch::{Batch, Token};
use crate::context::Context;
use crate::error::{Error, Result};
use std::ffi::c_int;
use std::ptr;

/// A token of an extended batch (llama_batch_ext): position unset (-1)
/// until llama_batch_ext_set_pos.
struct ExtToken {
    id: Option<llama_token>,
    /// Offset of the token's embedding row in `BatchExt::embd`, once set.
    embd_off: Option<usize>,
    pos: llama_pos,
    seqs: Vec<llama_seq_id>,
    output: bool,
}

/// What a `*mut llama_batch_ext` points to.
struct BatchExt {
    n_tokens_max: usize,
    n_seq_max: i32,
    n_vocab: i32,
    /// The model's input embedding width (n_embd).
    n_embd_inp: usize,
    tokens: Vec<ExtToken>,
    /// Embedding rows of the tokens that carry one, [k][n_embd] (the
    /// reference fixes the row size at the first one: `n_embd`).
    embd: Vec<f32>,
    n_embd: usize,
}

impl BatchExt {
    /// Adds a token; returns its index, or -1 (full), -2 (bad id), -3 (bad
    /// sequence), as llama.h documents.
    fn add(&mut self, seq_id: llama_seq_id, id: Option<llama_token>) -> i32 {
        if self.tokens.len() >= self.n_tokens_max {
            return -1;
        }
        if seq_id < 0 || seq_id >= self.n_seq_max {
            return -3;
        }
        if let Some(id) = id {
            if id < 0 || id >= self.n_vocab {
                return -2;
            }
        }
        self.tokens.push(ExtToken { id, embd_off: None, pos: -1, seqs: vec![seq_id], output: false });
        (self.tokens.len() - 1) as i32
    }

    /// The reference's `set_token_embd`: token `idx` gets a copy of
    /// `n_rows * n_embd` floats, which must be the model's input width (the
    /// first one fixes it for the batch); false for a bad index, NULL data, a
    /// size mismatch or an embedding already set.
    fn set_embd(&mut self, idx: i32, e: &llama_embd) -> Result<bool> {
        let Some(i) = usize::try_from(idx).ok().filter(|&i| i < self.tokens.len()) else {
            return Ok(false);
        };
        if e.data.is_null() {
            return Ok(false);
        }
        let n_total = e.n_rows.saturating_mul(e.n_embd);
        let want = if self.n_embd == 0 { self.n_embd_inp } else { self.n_embd };
        if n_total != want {
            log_error!(
                "llama_batch_ext_set_embd_token: embedding size mismatch, got {} rows x {} = {n_total}, expected {want}",
                e.n_rows,
                e.n_embd
            );
            return Ok(false);
        }
        if self.tokens[i].embd_off.is_some() {
            log_error!("llama_batch_ext_set_embd_token: embedding for token {idx} is already set");
            return Ok(false);
        }
        // SAFETY: the caller passes n_rows * n_embd readable floats at data
        // (llama_embd's contract); the count was checked above.
        let row = unsafe { std::slice::from_raw_parts(e.data, n_total) };
        self.n_embd = n_total;
        self.tokens[i].embd_off = Some(self.embd.len());
        self.embd.extend_from_slice(row);
        Ok(true)
    }
}

/// Marks token `idx` as an output (logits and embeddings are one flag for now).
fn set_output(name: &str, batch: *mut llama_batch_ext, idx: i32, value: bool) -> bool {
    guard(name, false, || {
        let b = ext_mut(batch)?;
        Ok(match usize::try_from(idx).ok().and_then(|i| b.tokens.get_mut(i)) {
            Some(t) => {
                t.output = value;
                true
            }
            None => false,
        })
    })
}

fn ext_mut<'a>(batch: *mut llama_batch_ext) -> Result<&'a mut BatchExt> {
    // SAFETY: a non-NULL handle is a live Box<BatchExt> from
    // llama_batch_ext_init, used from one thread at a time.
    unsafe { batch.cast::<BatchExt>().as_mut() }.ok_or_else(|| Error::invalid("batch is NULL"))
}

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
    if b.token.is_null() && b.embd.is_null() {
        return Err(Error::invalid("batch has neither token ids nor embeddings"));
    }
    let n = b.n_tokens as usize;
    let n_seq_max = c.cparams.n_seq_max as usize;
    // SAFETY: the caller's arrays hold n_tokens entries each (llama.h's
    // contract for llama_batch); NULL ones are not read. Token ids win over
    // embeddings when both are given, as in the reference.
    let tokens = (!b.token.is_null()).then(|| unsafe { std::slice::from_raw_parts(b.token, n) });
    // embedding inputs: [n_tokens][n_embd] floats
    let embd = match tokens {
        Some(_) => Vec::new(),
        None => {
            let len = n
                .checked_mul(c.model.hparams.n_embd as usize)
                .ok_or_else(|| Error::invalid("embedding input size overflows"))?;
            // SAFETY: an embedding batch holds n_tokens rows of n_embd floats
            // (llama_batch_init(n_tokens, n_embd, ...)); embd is not NULL here.
            unsafe { std::slice::from_raw_parts(b.embd, len) }.to_vec()
        }
    };
    // SAFETY: read only when non-NULL; `pos` holds n_tokens entries (llama_batch's contract).
    let pos = (!b.pos.is_null()).then(|| unsafe { std::slice::from_raw_parts(b.pos, n) });
    // SAFETY: read only when non-NULL; `n_seq_id` holds n_tokens entries (llama_batch's contract).
    let n_seq_id = (!b.n_seq_id.is_null()).then(|| unsafe { std::slice::from_raw_parts(b.n_seq_id, n) });
    // SAFETY: read only when non-NULL; `seq_id` holds n_tokens pointers (llama_batch's contract).
    let seq_id = (!b.seq_id.is_null()).then(|| unsafe { std::slice::from_raw_parts(b.seq_id, n) });
    // SAFETY: read only when non-NULL; `logits` holds n_tokens flags (llama_batch's contract).
    let logits = (!b.logits.is_null()).then(|| unsafe { std::slice::from_raw_parts(b.logits, n) });

    // i64: a sequence may already hold position i32::MAX (seq_add saturates).
    let mut pos_next: Vec<i64> = (0..n_seq_max).map(|s| i64::from(c.kv.pos_max(s as i32)) + 1).collect();
    let mut out = Batch { tokens: Vec::with_capacity(n), embd };
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
                let next = &mut pos_next[first as usize];
                let p = i32::try_from(*next).map_err(|_| {
                    Error::invalid(format!("token {i}: sequence {first} has no position after {}", i32::MAX))
                })?;
                *next += 1;
                p
            }
        };
        let output = match logits {
            Some(l) => l[i] != 0,
            None => c.cparams.embeddings || i == n - 1,
        };
        out.tokens.push(Token { id: tokens.map(|t| t[i]), pos: p, seqs, output });
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
        let c = ctx_mut(ctx)?;
        if !c.model.is_encoder() {
            return Err(Error::invalid("the model has no encoder (decoder-only models use llama_decode)"));
        }
        let input = read_batch(c, &batch)?;
        let mut abort = c.abort.take();
        let status = c.encode(&input, &mut || abort.as_mut().is_some_and(|f| f()));
        c.abort = abort;
        Ok(status? as i32)
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
    guard("llama_batch_ext_init", ptr::null_mut(), || {
        let c = ctx_mut(ctx)?;
        let b = BatchExt {
            n_tokens_max: c.cparams.n_batch as usize,
            n_seq_max: c.cparams.n_seq_max as i32,
            n_vocab: c.model.hparams.n_vocab as i32,
            n_embd_inp: c.model.hparams.n_embd as usize,
            tokens: Vec::new(),
            embd: Vec::new(),
            n_embd: 0,
        };
        Ok(Box::into_raw(Box::new(b)).cast::<llama_batch_ext>())
    })
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_free(batch: *mut llama_batch_ext) {
    guard("llama_batch_ext_free", (), || {
        if !batch.is_null() {
            // SAFETY: a non-NULL handle came from Box::into_raw in
            // llama_batch_ext_init and is freed once.
            drop(unsafe { Box::from_raw(batch.cast::<BatchExt>()) });
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_clear(batch: *mut llama_batch_ext) {
    guard("llama_batch_ext_clear", (), || {
        let b = ext_mut(batch)?;
        b.tokens.clear();
        b.embd.clear();
        b.n_embd = 0;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_add(batch: *mut llama_batch_ext, seq_id: llama_seq_id) -> i32 {
    guard("llama_batch_ext_add", -1, || Ok(ext_mut(batch)?.add(seq_id, None)))
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_add_token(batch: *mut llama_batch_ext, seq_id: llama_seq_id, id: llama_token) -> i32 {
    guard("llama_batch_ext_add_token", -1, || Ok(ext_mut(batch)?.add(seq_id, Some(id))))
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_add_embd(batch: *mut llama_batch_ext, seq_id: llama_seq_id, embd: llama_embd) -> i32 {
    guard("llama_batch_ext_add_embd", -2, || {
        let b = ext_mut(batch)?;
        let idx = b.add(seq_id, None);
        // as the reference: a token whose embedding is refused stays added
        Ok(if idx < 0 || b.set_embd(idx, &embd)? { idx } else { -2 })
    })
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_add_seq(batch: *mut llama_batch_ext, idx: i32, seq_id: llama_seq_id) -> bool {
    guard("llama_batch_ext_add_seq", false, || {
        let b = ext_mut(batch)?;
        let ok = seq_id >= 0 && seq_id < b.n_seq_max;
        match usize::try_from(idx).ok().and_then(|i| b.tokens.get_mut(i)) {
            Some(t) if ok => {
                if !t.seqs.contains(&seq_id) {
                    t.seqs.push(seq_id);
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_embd_token(batch: *mut llama_batch_ext, idx: i32, embd: llama_embd) -> bool {
    guard("llama_batch_ext_set_embd_token", false, || ext_mut(batch)?.set_embd(idx, &embd))
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_embd_state(batch: *mut llama_batch_ext, idx: i32, embd: llama_embd) -> bool {
    guard("llama_batch_ext_set_embd_state", false, || {
        ext_mut(batch)?;
        let _ = (idx, embd);
        Err(Error::invalid("state embeddings (MTP, deepstack) do not apply to the models minfer runs"))
    })
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_output_embd(batch: *mut llama_batch_ext, idx: i32, value: bool) -> bool {
    set_output("llama_batch_ext_set_output_embd", batch, idx, value)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_output_logits(batch: *mut llama_batch_ext, idx: i32, value: bool) -> bool {
    set_output("llama_batch_ext_set_output_logits", batch, idx, value)
}

#[no_mangle]
pub extern "C" fn llama_batch_ext_set_pos(batch: *mut llama_batch_ext, idx: i32, pos: *const llama_pos) -> bool {
    guard("llama_batch_ext_set_pos", false, || {
        let b = ext_mut(batch)?;
        if pos.is_null() {
            return Ok(false);
        }
        Ok(match usize::try_from(idx).ok().and_then(|i| b.tokens.get_mut(i)) {
            Some(t) => {
                // SAFETY: a text token takes one position from the caller.
                t.pos = unsafe { *pos };
                true
            }
            None => false,
        })
    })
}

#[no_mangle]
pub extern "C" fn llama_process(
    ctx: *mut llama_context,
    r#type: enum_llama_process_type,
    batch: *mut llama_batch_ext,
) -> i32 {
    guard("llama_process", -1, || {
        let c = ctx_mut(ctx)?;
        let b = ext_mut(batch)?;
        if r#type.0 == llama_process_type::LLAMA_PROCESS_TYPE_ENCODE as c_int {
            return Err(Error::invalid("the model has no encoder (decoder-only models use LLAMA_PROCESS_TYPE_DECODE)"));
        }
        if r#type.0 != llama_process_type::LLAMA_PROCESS_TYPE_DECODE as c_int {
            return Err(Error::invalid(format!("unknown process type {}", r#type.0)));
        }
        // A batch of token ids, or of embedding rows (each token's row
        // replaces the token embedding; an id set beside it is not read).
        let with_embd = b.tokens.iter().any(|t| t.embd_off.is_some());
        let mut input = Batch { tokens: Vec::with_capacity(b.tokens.len()), embd: Vec::new() };
        for (i, t) in b.tokens.iter().enumerate() {
            let id = match (with_embd, t.embd_off, t.id) {
                (true, Some(off), _) => {
                    input.embd.extend_from_slice(&b.embd[off..off + b.n_embd]);
                    None
                }
                (true, None, _) => {
                    return Err(Error::invalid(format!(
                        "token {i} has no embedding (a batch carries token ids or embeddings, not both)"
                    )))
                }
                (false, _, Some(id)) => Some(id),
                (false, _, None) => {
                    return Err(Error::invalid(format!("token {i} has neither an id nor an embedding")))
                }
            };
            input.tokens.push(Token { id, pos: t.pos, seqs: t.seqs.clone(), output: t.output });
        }
        let mut abort = c.abort.take();
        let status = c.decode(&input, &mut || abort.as_mut().is_some_and(|f| f()));
        c.abort = abort;
        Ok(status? as i32)
    })
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
