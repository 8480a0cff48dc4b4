//! Chat templates.

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use std::ffi::c_char;

#[no_mangle]
pub extern "C" fn llama_chat_apply_template(tmpl: *const c_char, chat: *const llama_chat_message, n_msg: usize, add_ass: bool, buf: *mut c_char, length: i32) -> i32 {
    not_implemented("llama_chat_apply_template", -1)
}

#[no_mangle]
pub extern "C" fn llama_chat_builtin_templates(output: *mut *const c_char, len: usize) -> i32 {
    not_implemented("llama_chat_builtin_templates", -1)
}
