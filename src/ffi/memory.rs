//! The memory (KV cache) API.

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use std::ffi::c_int;

#[no_mangle]
pub extern "C" fn llama_memory_clear(mem: llama_memory_t, data: bool) {
    not_implemented("llama_memory_clear", ())
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_rm(mem: llama_memory_t, seq_id: llama_seq_id, p0: llama_pos, p1: llama_pos) -> bool {
    not_implemented("llama_memory_seq_rm", false)
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_cp(mem: llama_memory_t, seq_id_src: llama_seq_id, seq_id_dst: llama_seq_id, p0: llama_pos, p1: llama_pos) {
    not_implemented("llama_memory_seq_cp", ())
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_keep(mem: llama_memory_t, seq_id: llama_seq_id) {
    not_implemented("llama_memory_seq_keep", ())
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_add(mem: llama_memory_t, seq_id: llama_seq_id, p0: llama_pos, p1: llama_pos, delta: llama_pos) {
    not_implemented("llama_memory_seq_add", ())
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_div(mem: llama_memory_t, seq_id: llama_seq_id, p0: llama_pos, p1: llama_pos, d: c_int) {
    not_implemented("llama_memory_seq_div", ())
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_pos_min(mem: llama_memory_t, seq_id: llama_seq_id) -> llama_pos {
    not_implemented("llama_memory_seq_pos_min", -1)
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_pos_max(mem: llama_memory_t, seq_id: llama_seq_id) -> llama_pos {
    not_implemented("llama_memory_seq_pos_max", -1)
}

#[no_mangle]
pub extern "C" fn llama_memory_can_shift(mem: llama_memory_t) -> bool {
    not_implemented("llama_memory_can_shift", false)
}
