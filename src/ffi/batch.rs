//! Batches, decode and encode.

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use std::ptr;

#[no_mangle]
pub extern "C" fn llama_batch_get_one(tokens: *mut llama_token, n_tokens: i32) -> llama_batch {
    not_implemented("llama_batch_get_one", empty_batch())
}

#[no_mangle]
pub extern "C" fn llama_batch_init(n_tokens: i32, embd: i32, n_seq_max: i32) -> llama_batch {
    not_implemented("llama_batch_init", empty_batch())
}

#[no_mangle]
pub extern "C" fn llama_batch_free(batch: llama_batch) {
    not_implemented("llama_batch_free", ())
}

#[no_mangle]
pub extern "C" fn llama_encode(ctx: *mut llama_context, batch: llama_batch) -> i32 {
    not_implemented("llama_encode", -1)
}

#[no_mangle]
pub extern "C" fn llama_decode(ctx: *mut llama_context, batch: llama_batch) -> i32 {
    not_implemented("llama_decode", -1)
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
