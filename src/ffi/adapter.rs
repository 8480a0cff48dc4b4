//! LoRA adapters and control vectors.

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use std::ffi::c_char;
use std::ptr;

#[no_mangle]
pub extern "C" fn llama_adapter_lora_init(
    model: *mut llama_model,
    path_lora: *const c_char,
) -> *mut llama_adapter_lora {
    not_implemented("llama_adapter_lora_init", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_adapter_lora_init_from_file_ptr(
    model: *mut llama_model,
    file: *mut libc::FILE,
) -> *mut llama_adapter_lora {
    not_implemented("llama_adapter_lora_init_from_file_ptr", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_adapter_meta_val_str(
    adapter: *const llama_adapter_lora,
    key: *const c_char,
    buf: *mut c_char,
    buf_size: usize,
) -> i32 {
    not_implemented("llama_adapter_meta_val_str", -1)
}

#[no_mangle]
pub extern "C" fn llama_adapter_meta_count(adapter: *const llama_adapter_lora) -> i32 {
    not_implemented("llama_adapter_meta_count", -1)
}

#[no_mangle]
pub extern "C" fn llama_adapter_meta_key_by_index(
    adapter: *const llama_adapter_lora,
    i: i32,
    buf: *mut c_char,
    buf_size: usize,
) -> i32 {
    not_implemented("llama_adapter_meta_key_by_index", -1)
}

#[no_mangle]
pub extern "C" fn llama_adapter_meta_val_str_by_index(
    adapter: *const llama_adapter_lora,
    i: i32,
    buf: *mut c_char,
    buf_size: usize,
) -> i32 {
    not_implemented("llama_adapter_meta_val_str_by_index", -1)
}

#[no_mangle]
pub extern "C" fn llama_adapter_lora_free(adapter: *mut llama_adapter_lora) {
    not_implemented("llama_adapter_lora_free", ())
}

#[no_mangle]
pub extern "C" fn llama_adapter_get_alora_n_invocation_tokens(adapter: *const llama_adapter_lora) -> u64 {
    not_implemented("llama_adapter_get_alora_n_invocation_tokens", 0)
}

#[no_mangle]
pub extern "C" fn llama_adapter_get_alora_invocation_tokens(adapter: *const llama_adapter_lora) -> *const llama_token {
    not_implemented("llama_adapter_get_alora_invocation_tokens", ptr::null())
}

#[no_mangle]
pub extern "C" fn llama_set_adapters_lora(
    ctx: *mut llama_context,
    adapters: *mut *mut llama_adapter_lora,
    n_adapters: usize,
    scales: *mut f32,
) -> i32 {
    not_implemented("llama_set_adapters_lora", -1)
}

#[no_mangle]
pub extern "C" fn llama_set_adapter_cvec(
    ctx: *mut llama_context,
    data: *const f32,
    len: usize,
    n_embd: i32,
    il_start: i32,
    il_end: i32,
) -> i32 {
    guard("llama_set_adapter_cvec", -1, || {
        let c = super::context::ctx_mut(ctx)?;
        let data = if data.is_null() {
            None
        } else {
            if len > isize::MAX as usize / std::mem::size_of::<f32>() {
                return Err(crate::Error::invalid(format!("control vector length {len} is too large")));
            }
            // SAFETY: the caller passes `len` floats at `data` (llama.h's
            // contract); the length is checked to fit a slice.
            Some(unsafe { std::slice::from_raw_parts(data, len) })
        };
        let (n_layer, model_n_embd) = (c.model.hparams.n_layer as usize, c.model.hparams.n_embd as usize);
        crate::context::cvec::ControlVector::set(&mut c.cvec, n_layer, model_n_embd, data, n_embd, il_start, il_end)?;
        Ok(0)
    })
}
