//! The vocabulary: token getters, special tokens, tokenize / detokenize.
//!
//! Every function accepts a NULL vocab and out-of-range token ids: they get
//! the failure value (NULL, 0, false, -1 for ids, UNDEFINED for attributes)
//! and a logged message, where the reference would crash.

use super::boundary::*;
use super::types::*;
use crate::error::Error;
use crate::vocab::Vocab;
use std::ffi::{c_char, c_int};
use std::ptr;

/// The vocabulary behind a handle (owned by its model).
fn vocab_ref<'a>(vocab: *const llama_vocab) -> crate::Result<&'a Vocab> {
    deref(vocab.cast(), "vocab")
}

fn bad_token(v: &Vocab, token: llama_token) -> Error {
    Error::invalid(format!("token id {token} is out of range [0, {})", v.n_tokens()))
}

/// A special-token getter.
fn special(name: &str, vocab: *const llama_vocab, get: fn(&Vocab) -> i32) -> llama_token {
    guard(name, -1, || Ok(get(vocab_ref(vocab)?)))
}

fn flag(name: &str, vocab: *const llama_vocab, get: fn(&Vocab) -> bool) -> bool {
    guard(name, false, || Ok(get(vocab_ref(vocab)?)))
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
    guard("llama_vocab_n_tokens", -1, || Ok(i32::try_from(vocab_ref(vocab)?.n_tokens()).unwrap_or(i32::MAX)))
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_text(vocab: *const llama_vocab, token: llama_token) -> *const c_char {
    guard("llama_vocab_get_text", ptr::null(), || {
        let v = vocab_ref(vocab)?;
        Ok(v.token_text_c(token).ok_or_else(|| bad_token(v, token))?.as_ptr().cast::<c_char>())
    })
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_score(vocab: *const llama_vocab, token: llama_token) -> f32 {
    guard("llama_vocab_get_score", 0.0, || {
        let v = vocab_ref(vocab)?;
        Ok(v.token(token).ok_or_else(|| bad_token(v, token))?.score)
    })
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_attr(vocab: *const llama_vocab, token: llama_token) -> enum_llama_token_attr {
    guard("llama_vocab_get_attr", llama_token_attr::LLAMA_TOKEN_ATTR_UNDEFINED.into(), || {
        let v = vocab_ref(vocab)?;
        Ok(enum_llama_token_attr(v.token(token).ok_or_else(|| bad_token(v, token))?.attr as c_int))
    })
}

#[no_mangle]
pub extern "C" fn llama_vocab_is_eog(vocab: *const llama_vocab, token: llama_token) -> bool {
    guard("llama_vocab_is_eog", false, || Ok(vocab_ref(vocab)?.is_eog(token)))
}

#[no_mangle]
pub extern "C" fn llama_vocab_is_control(vocab: *const llama_vocab, token: llama_token) -> bool {
    guard("llama_vocab_is_control", false, || {
        let v = vocab_ref(vocab)?;
        v.token(token).ok_or_else(|| bad_token(v, token))?;
        Ok(v.is_control(token))
    })
}

#[no_mangle]
pub extern "C" fn llama_vocab_bos(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_bos", vocab, |v| v.bos)
}

#[no_mangle]
pub extern "C" fn llama_vocab_eos(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_eos", vocab, |v| v.eos)
}

#[no_mangle]
pub extern "C" fn llama_vocab_eot(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_eot", vocab, |v| v.eot)
}

#[no_mangle]
pub extern "C" fn llama_vocab_sep(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_sep", vocab, |v| v.sep)
}

#[no_mangle]
pub extern "C" fn llama_vocab_nl(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_nl", vocab, |v| v.linefeed)
}

#[no_mangle]
pub extern "C" fn llama_vocab_pad(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_pad", vocab, |v| v.pad)
}

#[no_mangle]
pub extern "C" fn llama_vocab_mask(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_mask", vocab, |v| v.mask)
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_add_bos(vocab: *const llama_vocab) -> bool {
    flag("llama_vocab_get_add_bos", vocab, |v| v.add_bos)
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_add_eos(vocab: *const llama_vocab) -> bool {
    flag("llama_vocab_get_add_eos", vocab, |v| v.add_eos)
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_add_sep(vocab: *const llama_vocab) -> bool {
    flag("llama_vocab_get_add_sep", vocab, |v| v.add_sep)
}

#[no_mangle]
pub extern "C" fn llama_vocab_get_suppress_tokens(
    vocab: *const llama_vocab,
    n_suppress_tokens: *mut i32,
) -> *const llama_token {
    guard("llama_vocab_get_suppress_tokens", ptr::null(), || {
        let v = vocab_ref(vocab)?;
        if !n_suppress_tokens.is_null() {
            // SAFETY: non-NULL; the caller passes a pointer to an int32_t.
            unsafe { *n_suppress_tokens = i32::try_from(v.suppress_tokens.len()).unwrap_or(i32::MAX) };
        }
        Ok(if v.suppress_tokens.is_empty() { ptr::null() } else { v.suppress_tokens.as_ptr() })
    })
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_pre(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_fim_pre", vocab, |v| v.fim_pre)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_suf(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_fim_suf", vocab, |v| v.fim_suf)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_mid(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_fim_mid", vocab, |v| v.fim_mid)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_pad(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_fim_pad", vocab, |v| v.fim_pad)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_rep(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_fim_rep", vocab, |v| v.fim_rep)
}

#[no_mangle]
pub extern "C" fn llama_vocab_fim_sep(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_fim_sep", vocab, |v| v.fim_sep)
}

#[no_mangle]
pub extern "C" fn llama_token_get_text(vocab: *const llama_vocab, token: llama_token) -> *const c_char {
    llama_vocab_get_text(vocab, token)
}

#[no_mangle]
pub extern "C" fn llama_token_get_score(vocab: *const llama_vocab, token: llama_token) -> f32 {
    llama_vocab_get_score(vocab, token)
}

#[no_mangle]
pub extern "C" fn llama_token_get_attr(vocab: *const llama_vocab, token: llama_token) -> enum_llama_token_attr {
    llama_vocab_get_attr(vocab, token)
}

#[no_mangle]
pub extern "C" fn llama_token_is_eog(vocab: *const llama_vocab, token: llama_token) -> bool {
    llama_vocab_is_eog(vocab, token)
}

#[no_mangle]
pub extern "C" fn llama_token_is_control(vocab: *const llama_vocab, token: llama_token) -> bool {
    llama_vocab_is_control(vocab, token)
}

#[no_mangle]
pub extern "C" fn llama_token_bos(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_bos", vocab, |v| v.bos)
}

#[no_mangle]
pub extern "C" fn llama_token_eos(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_eos", vocab, |v| v.eos)
}

#[no_mangle]
pub extern "C" fn llama_token_eot(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_eot", vocab, |v| v.eot)
}

#[no_mangle]
pub extern "C" fn llama_token_cls(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_cls", vocab, |v| v.bos)
}

#[no_mangle]
pub extern "C" fn llama_token_sep(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_sep", vocab, |v| v.sep)
}

#[no_mangle]
pub extern "C" fn llama_token_nl(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_nl", vocab, |v| v.linefeed)
}

#[no_mangle]
pub extern "C" fn llama_token_pad(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_pad", vocab, |v| v.pad)
}

#[no_mangle]
pub extern "C" fn llama_add_bos_token(vocab: *const llama_vocab) -> bool {
    llama_vocab_get_add_bos(vocab)
}

#[no_mangle]
pub extern "C" fn llama_add_eos_token(vocab: *const llama_vocab) -> bool {
    llama_vocab_get_add_eos(vocab)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_pre(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_fim_pre", vocab, |v| v.fim_pre)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_suf(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_fim_suf", vocab, |v| v.fim_suf)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_mid(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_fim_mid", vocab, |v| v.fim_mid)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_pad(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_fim_pad", vocab, |v| v.fim_pad)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_rep(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_fim_rep", vocab, |v| v.fim_rep)
}

#[no_mangle]
pub extern "C" fn llama_token_fim_sep(vocab: *const llama_vocab) -> llama_token {
    special("llama_token_fim_sep", vocab, |v| v.fim_sep)
}

#[no_mangle]
pub extern "C" fn llama_vocab_cls(vocab: *const llama_vocab) -> llama_token {
    special("llama_vocab_cls", vocab, |v| v.bos)
}

#[no_mangle]
pub extern "C" fn llama_tokenize(
    vocab: *const llama_vocab,
    text: *const c_char,
    text_len: i32,
    tokens: *mut llama_token,
    n_tokens_max: i32,
    add_special: bool,
    parse_special: bool,
) -> i32 {
    guard("llama_tokenize", i32::MIN, || {
        let v = vocab_ref(vocab)?;
        let len = usize::try_from(text_len).map_err(|_| Error::invalid(format!("text_len {text_len} is negative")))?;
        let bytes: &[u8] = if len == 0 {
            &[]
        } else if text.is_null() {
            return Err(Error::invalid("text is NULL"));
        } else {
            // SAFETY: non-NULL; the caller guarantees text_len readable bytes.
            unsafe { std::slice::from_raw_parts(text.cast::<u8>(), len) }
        };
        let ids = v.tokenize(bytes, add_special, parse_special)?;
        let n = match i32::try_from(ids.len()) {
            Ok(n) if n < i32::MAX => n,
            _ => {
                log_error!("llama_tokenize: tokenization result size {} exceeds int32_t limit", ids.len());
                return Ok(i32::MIN);
            }
        };
        if n_tokens_max < n {
            return Ok(-n);
        }
        if n > 0 {
            if tokens.is_null() {
                return Err(Error::invalid("tokens is NULL"));
            }
            // SAFETY: non-NULL and, by the caller's contract, n_tokens_max >= n writable tokens.
            unsafe { ptr::copy_nonoverlapping(ids.as_ptr(), tokens, ids.len()) };
        }
        Ok(n)
    })
}

#[no_mangle]
pub extern "C" fn llama_token_to_piece(
    vocab: *const llama_vocab,
    token: llama_token,
    buf: *mut c_char,
    length: i32,
    lstrip: i32,
    special: bool,
) -> i32 {
    guard("llama_token_to_piece", 0, || {
        let v = vocab_ref(vocab)?;
        let p = v.piece(token, lstrip, special)?;
        let n = i32::try_from(p.len()).map_err(|_| Error::invalid("piece too long"))?;
        if length < n {
            return Ok(-n);
        }
        if n > 0 {
            if buf.is_null() {
                return Err(Error::invalid("buf is NULL"));
            }
            // SAFETY: non-NULL; the caller guarantees `length` >= n writable bytes.
            unsafe { ptr::copy_nonoverlapping(p.as_ptr(), buf.cast::<u8>(), p.len()) };
        }
        Ok(n)
    })
}

#[no_mangle]
pub extern "C" fn llama_detokenize(
    vocab: *const llama_vocab,
    tokens: *const llama_token,
    n_tokens: i32,
    text: *mut c_char,
    text_len_max: i32,
    remove_special: bool,
    unparse_special: bool,
) -> i32 {
    guard("llama_detokenize", 0, || {
        let v = vocab_ref(vocab)?;
        let count =
            usize::try_from(n_tokens).map_err(|_| Error::invalid(format!("n_tokens {n_tokens} is negative")))?;
        let ids: &[llama_token] = if count == 0 {
            &[]
        } else if tokens.is_null() {
            return Err(Error::invalid("tokens is NULL"));
        } else {
            // SAFETY: non-NULL; the caller guarantees n_tokens readable tokens.
            unsafe { std::slice::from_raw_parts(tokens, count) }
        };
        let max = usize::try_from(text_len_max).unwrap_or(0);
        let (raw_len, out) = v.detokenize(ids, remove_special, unparse_special, max)?;
        let (Ok(raw), Ok(n)) = (i32::try_from(raw_len), i32::try_from(out.len())) else {
            log_error!("llama_detokenize: the text would exceed int32_t");
            return Ok(i32::MIN);
        };
        if n > 0 {
            if text.is_null() {
                return Err(Error::invalid("text is NULL"));
            }
            // SAFETY: non-NULL; `out` is at most `max` = text_len_max bytes,
            // which the caller guarantees writable.
            unsafe { ptr::copy_nonoverlapping(out.as_ptr(), text.cast::<u8>(), out.len()) };
        }
        // As the reference: a short buffer is told the size needed before the
        // clean-up passes, and keeps the whole pieces that fitted.
        if raw > text_len_max {
            return Ok(-raw);
        }
        Ok(n)
    })
}
