//! State and session save/load.

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use std::ffi::c_char;

#[no_mangle]
pub extern "C" fn llama_state_get_size(ctx: *mut llama_context) -> usize {
    not_implemented("llama_state_get_size", 0)
}

#[no_mangle]
pub extern "C" fn llama_get_state_size(ctx: *mut llama_context) -> usize {
    not_implemented("llama_get_state_size", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_get_data(ctx: *mut llama_context, dst: *mut u8, size: usize) -> usize {
    not_implemented("llama_state_get_data", 0)
}

#[no_mangle]
pub extern "C" fn llama_copy_state_data(ctx: *mut llama_context, dst: *mut u8) -> usize {
    not_implemented("llama_copy_state_data", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_set_data(ctx: *mut llama_context, src: *const u8, size: usize) -> usize {
    not_implemented("llama_state_set_data", 0)
}

#[no_mangle]
pub extern "C" fn llama_set_state_data(ctx: *mut llama_context, src: *const u8) -> usize {
    not_implemented("llama_set_state_data", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_load_file(ctx: *mut llama_context, path_session: *const c_char, tokens_out: *mut llama_token, n_token_capacity: usize, n_token_count_out: *mut usize) -> bool {
    not_implemented("llama_state_load_file", false)
}

#[no_mangle]
pub extern "C" fn llama_load_session_file(ctx: *mut llama_context, path_session: *const c_char, tokens_out: *mut llama_token, n_token_capacity: usize, n_token_count_out: *mut usize) -> bool {
    not_implemented("llama_load_session_file", false)
}

#[no_mangle]
pub extern "C" fn llama_state_save_file(ctx: *mut llama_context, path_session: *const c_char, tokens: *const llama_token, n_token_count: usize) -> bool {
    not_implemented("llama_state_save_file", false)
}

#[no_mangle]
pub extern "C" fn llama_save_session_file(ctx: *mut llama_context, path_session: *const c_char, tokens: *const llama_token, n_token_count: usize) -> bool {
    not_implemented("llama_save_session_file", false)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_get_size(ctx: *mut llama_context, seq_id: llama_seq_id) -> usize {
    not_implemented("llama_state_seq_get_size", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_get_data(ctx: *mut llama_context, dst: *mut u8, size: usize, seq_id: llama_seq_id) -> usize {
    not_implemented("llama_state_seq_get_data", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_set_data(ctx: *mut llama_context, src: *const u8, size: usize, dest_seq_id: llama_seq_id) -> usize {
    not_implemented("llama_state_seq_set_data", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_save_file(ctx: *mut llama_context, filepath: *const c_char, seq_id: llama_seq_id, tokens: *const llama_token, n_token_count: usize) -> usize {
    not_implemented("llama_state_seq_save_file", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_load_file(ctx: *mut llama_context, filepath: *const c_char, dest_seq_id: llama_seq_id, tokens_out: *mut llama_token, n_token_capacity: usize, n_token_count_out: *mut usize) -> usize {
    not_implemented("llama_state_seq_load_file", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_get_size_ext(ctx: *mut llama_context, seq_id: llama_seq_id, flags: llama_state_seq_flags) -> usize {
    not_implemented("llama_state_seq_get_size_ext", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_get_data_ext(ctx: *mut llama_context, dst: *mut u8, size: usize, seq_id: llama_seq_id, flags: llama_state_seq_flags) -> usize {
    not_implemented("llama_state_seq_get_data_ext", 0)
}

#[no_mangle]
pub extern "C" fn llama_state_seq_set_data_ext(ctx: *mut llama_context, src: *const u8, size: usize, dest_seq_id: llama_seq_id, flags: llama_state_seq_flags) -> usize {
    not_implemented("llama_state_seq_set_data_ext", 0)
}
