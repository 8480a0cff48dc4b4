//! Chat templates: the C wrappers over `crate::chat`.

use super::boundary::*;
use super::types::*;
use crate::chat::{self, Message};
use crate::error::Error;
use std::ffi::c_char;

// Formats `chat[..n_msg]` with the template `tmpl` (a built-in name or a
// Jinja template text to detect from; NULL means "chatml"). Returns the
// formatted length, copies `strncpy`-style into `buf[..length]` (the
// reference's semantics: no NUL when the text fills the buffer, the rest
// zero-filled otherwise), or -1 when the template is not recognized.
#[no_mangle]
pub extern "C" fn llama_chat_apply_template(
    tmpl: *const c_char,
    chat: *const llama_chat_message,
    n_msg: usize,
    add_ass: bool,
    buf: *mut c_char,
    length: i32,
) -> i32 {
    guard("llama_chat_apply_template", -1, || {
        let tmpl = if tmpl.is_null() { &b"chatml"[..] } else { c_str(tmpl, "tmpl")?.to_bytes() };
        let messages: &[llama_chat_message] = if n_msg == 0 {
            &[]
        } else if chat.is_null() {
            return Err(Error::invalid(format!("chat is NULL with n_msg = {n_msg}")));
        } else {
            // SAFETY: non-NULL, and the caller guarantees `n_msg` messages there.
            unsafe { std::slice::from_raw_parts(chat, n_msg) }
        };
        let messages = messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                Ok(Message {
                    role: c_str(m.role, &format!("chat[{i}].role"))?.to_bytes(),
                    content: c_str(m.content, &format!("chat[{i}].content"))?.to_bytes(),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let Some(template) = chat::detect(tmpl) else {
            let shown = String::from_utf8_lossy(&tmpl[..tmpl.len().min(60)]);
            return Err(Error::invalid(format!(
                "chat template not supported (not a built-in name, not recognized): \"{shown}\""
            )));
        };
        let text = chat::apply(template, &messages, add_ass);
        let n = i32::try_from(text.len())
            .map_err(|_| Error::invalid(format!("formatted chat of {} bytes exceeds INT32_MAX", text.len())))?;
        if !buf.is_null() && length > 0 {
            let length = length as usize;
            let copied = text.len().min(length);
            // SAFETY: the caller guarantees `buf` holds `length` bytes; we
            // write exactly `length` of them (text, then zeros as strncpy).
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), copied);
                std::ptr::write_bytes(buf.cast::<u8>().add(copied), 0, length - copied);
            }
        }
        Ok(n)
    })
}

// Lists the built-in template names (sorted) into `output[..len]`; returns
// how many there are.
#[no_mangle]
pub extern "C" fn llama_chat_builtin_templates(output: *mut *const c_char, len: usize) -> i32 {
    guard("llama_chat_builtin_templates", -1, || {
        let n = len.min(chat::NAMES.len());
        if n > 0 {
            if output.is_null() {
                return Err(Error::invalid(format!("output is NULL with len = {len}")));
            }
            // SAFETY: non-NULL, and the caller guarantees `len` >= n slots.
            let slots = unsafe { std::slice::from_raw_parts_mut(output, n) };
            for (slot, (name, _)) in slots.iter_mut().zip(chat::NAMES.iter()) {
                *slot = name.as_ptr();
            }
        }
        Ok(chat::NAMES.len() as i32)
    })
}
