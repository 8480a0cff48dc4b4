//! The vocabulary: token getters, special tokens, tokenize / detokenize.

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use std::ffi::{c_char, c_int};
use std::ptr;

/// The vocabulary behind a handle (owned by its model).
fn vocab_ref<'a>(vocab: *const llama_vocab) -> crate::Result<&'a crate::model::vocab_info::VocabInfo> {
    deref(vocab.cast(), "vocab")
}

#[no_mangle]
pub extern "C" fn llama_n_vocab(vocab: *const llama_vocab) -> i32 {
    llama_vocab_n_tokens(vocab)
}

#[no_mangle]
pub extern "C" fn llama_vocab_type(vocab: *const llama_vocab) -> enum_llama_vocab_type {
    guard("llama_vocab_type", llama_vocab_type::LLAMA_VOCAB_TYPE_NONE.into(), || {
        Ok(enum_llama_vocab_type(vocab_ref(vocab)?.kind as c_int))
    })
}

#[no_mangle]
pub extern "C" fn llama_vocab_n_tokens(vocab: *const llama_vocab) -> i32 {
    guard("llama_vocab_n_tokens", -1, || Ok(i32::try_from(vocab_ref(vocab)?.n_tokens).unwrap_or(i32::MAX)))
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_text(vocab: *const llama_vocab, token: llama_token) -> *const c_char {
    not_implemented("llama_vocab_get_text", ptr::null())
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_score(vocab: *const llama_vocab, token: llama_token) -> f32 {
    not_implemented("llama_vocab_get_score", 0.0)
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_attr(vocab: *const llama_vocab, token: llama_token) -> enum_llama_token_attr {
    not_implemented("llama_vocab_get_attr", llama_token_attr::LLAMA_TOKEN_ATTR_UNDEFINED.into())
}

#[no_mangle]
pub extern "C" fn llama_vocab_is_eog(vocab: *const llama_vocab, token: llama_token) -> bool {
    not_implemented("llama_vocab_is_eog", false)
}

#[no_mangle]
pub extern "C" fn llama_vocab_is_control(vocab: *const llama_vocab, token: llama_token) -> bool {
    not_implemented("llama_vocab_is_control", false)
}

#[no_mangle]
pub extern "C" fn llama_vocab_bos(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_bos", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_eos(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_eos", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_eot(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_eot", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_sep(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_sep", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_nl(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_nl", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_pad(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_pad", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_mask(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_mask", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_add_bos(vocab: *const llama_vocab) -> bool {
    not_implemented("llama_vocab_get_add_bos", false)
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_add_eos(vocab: *const llama_vocab) -> bool {
    not_implemented("llama_vocab_get_add_eos", false)
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_add_sep(vocab: *const llama_vocab) -> bool {
    not_implemented("llama_vocab_get_add_sep", false)
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_suppress_tokens(vocab: *const llama_vocab, n_suppress_tokens: *mut i32) -> *const llama_token {
    not_implemented("llama_vocab_get_suppress_tokens", ptr::null())
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_pre(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_fim_pre", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_suf(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_fim_suf", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_mid(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_fim_mid", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_pad(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_fim_pad", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_rep(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_fim_rep", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_sep(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_fim_sep", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_get_text(vocab: *const llama_vocab, token: llama_token) -> *const c_char {
    not_implemented("llama_token_get_text", ptr::null())
}

#[no_mangle]
pub extern "C" fn llama_token_get_score(vocab: *const llama_vocab, token: llama_token) -> f32 {
    not_implemented("llama_token_get_score", 0.0)
}

#[no_mangle]
pub extern "C" fn llama_token_get_attr(vocab: *const llama_vocab, token: llama_token) -> enum_llama_token_attr {
    not_implemented("llama_token_get_attr", llama_token_attr::LLAMA_TOKEN_ATTR_UNDEFINED.into())
}

#[no_mangle]
pub extern "C" fn llama_token_is_eog(vocab: *const llama_vocab, token: llama_token) -> bool {
    not_implemented("llama_token_is_eog", false)
}

#[no_mangle]
pub extern "C" fn llama_token_is_control(vocab: *const llama_vocab, token: llama_token) -> bool {
    not_implemented("llama_token_is_control", false)
}

#[no_mangle]
pub extern "C" fn llama_token_bos(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_bos", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_eos(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_eos", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_eot(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_eot", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_cls(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_cls", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_sep(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_sep", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_nl(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_nl", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_pad(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_pad", -1)
}

#[no_mangle]
pub extern "C" fn llama_add_bos_token(vocab: *const llama_vocab) -> bool {
    not_implemented("llama_add_bos_token", false)
}

#[no_mangle]
pub extern "C" fn llama_add_eos_token(vocab: *const llama_vocab) -> bool {
    not_implemented("llama_add_eos_token", false)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_pre(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_fim_pre", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_suf(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_fim_suf", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_mid(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_fim_mid", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_pad(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_fim_pad", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_rep(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_fim_rep", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_sep(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_token_fim_sep", -1)
}

#[no_mangle]
pub extern "C" fn llama_vocab_cls(vocab: *const llama_vocab) -> llama_token {
    not_implemented("llama_vocab_cls", -1)
}

#[no_mangle]
pub extern "C" fn llama_tokenize(vocab: *const llama_vocab, text: *const c_char, text_len: i32, tokens: *mut llama_token, n_tokens_max: i32, add_special: bool, parse_special: bool) -> i32 {
    not_implemented("llama_tokenize", -1)
}

#[no_mangle]
pub extern "C" fn llama_token_to_piece(vocab: *const llama_vocab, token: llama_token, buf: *mut c_char, length: i32, lstrip: i32, special: bool) -> i32 {
    not_implemented("llama_token_to_piece", -1)
}

#[no_mangle]
pub extern "C" fn llama_detokenize(vocab: *const llama_vocab, tokens: *const llama_token, n_tokens: i32, text: *mut c_char, text_len_max: i32, remove_special: bool, unparse_special: bool) -> i32 {
    not_implemented("llama_detokenize", -1)
}
