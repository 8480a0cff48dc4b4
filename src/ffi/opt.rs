//! Training (llama_opt_*). minfer is an inference runtime: it offers no
//! training, so these fail safely with a message saying so (no issue will
//! fill them in).

use super::boundary::*;
use super::types::*;
use crate::error::Error;
use std::ffi::c_void;

fn unsupported(name: &'static str) {
    guard(name, (), || Err(Error::invalid("training is not supported by minfer (an inference-only runtime)")))
}

/// The reference's filter that accepts every tensor.
#[no_mangle]
pub extern "C" fn llama_opt_param_filter_all(_tensor: *const ggml_tensor, _userdata: *mut c_void) -> bool {
    true
}

#[no_mangle]
#[allow(improper_ctypes_definitions)] // only a pointer to ggml_opt_optimizer_params crosses, never the struct
pub extern "C" fn llama_opt_init(lctx: *mut llama_context, model: *mut llama_model, lopt_params: llama_opt_params) {
    let _ = (lctx, model, lopt_params);
    unsupported("llama_opt_init")
}

#[no_mangle]
pub extern "C" fn llama_opt_epoch(
    lctx: *mut llama_context,
    dataset: ggml_opt_dataset_t,
    result_train: ggml_opt_result_t,
    result_eval: ggml_opt_result_t,
    idata_split: i64,
    callback_train: ggml_opt_epoch_callback,
    callback_eval: ggml_opt_epoch_callback,
) {
    let _ = (lctx, dataset, result_train, result_eval, idata_split, callback_train, callback_eval);
    unsupported("llama_opt_epoch")
}
