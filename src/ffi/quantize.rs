//! llama_model_quantize and its default parameters.

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use std::ffi::c_char;
use std::ptr;

/// The reference's LLAMA_QUANT_MAX_BUF_SIZE: 8 GiB of rows in memory at once.
const LLAMA_QUANT_MAX_BUF_SIZE: usize = 8 << 30;

#[no_mangle]
pub extern "C" fn llama_model_quantize_default_params() -> llama_model_quantize_params {
    llama_model_quantize_params {
        nthread: 0,
        ftype: llama_ftype::LLAMA_FTYPE_MOSTLY_Q8_0.into(),
        output_tensor_type: ggml_type::GGML_TYPE_COUNT.into(),
        token_embedding_type: ggml_type::GGML_TYPE_COUNT.into(),
        allow_requantize: false,
        quantize_output_tensor: true,
        only_copy: false,
        pure: false,
        keep_split: false,
        dry_run: false,
        imatrix: ptr::null(),
        kv_overrides: ptr::null(),
        tt_overrides: ptr::null(),
        prune_layers: ptr::null(),
        max_buf_size: LLAMA_QUANT_MAX_BUF_SIZE,
    }
}

#[no_mangle]
pub extern "C" fn llama_model_quantize(fname_inp: *const c_char, fname_out: *const c_char, params: *const llama_model_quantize_params) -> u32 {
    not_implemented("llama_model_quantize", 1)
}
