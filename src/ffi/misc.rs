//! Process-wide functions: backend init, time, system info, capabilities, names of enum values, split paths.

use super::boundary::*;
use super::types::*;
use crate::error::Error;
use std::ffi::CStr;
use std::ffi::{c_char, c_int};
use std::ptr;
use std::sync::OnceLock;

/// "minfer <version>" (the version of Cargo.toml), returned by llama_version.
/// The reference returns its bare version ("0.5.0-dev"); naming the
/// implementation tells a host which library it actually loaded.
static VERSION: &CStr = match CStr::from_bytes_with_nul(concat!("minfer ", env!("CARGO_PKG_VERSION"), "\0").as_bytes())
{
    Ok(v) => v,
    Err(_) => panic!("the version has no interior NUL"),
};

/// ggml's GGML_DEFAULT_N_THREADS, the reference's default thread count.
const GGML_DEFAULT_N_THREADS: i32 = 4;

/// Names of llama_load_mode values, as the reference spells them.
const LOAD_MODE_NAMES: [(c_int, &CStr); 6] =
    [(-1, c"auto"), (0, c"none"), (1, c"mmap"), (2, c"mlock"), (3, c"mmap+mlock"), (4, c"dio")];

pub(crate) use crate::clock::time_us;

/// "CPU : SSE3 = 1 | AVX2 = 1 | ... | minfer = 0.1.0 | ": the reference's
/// "NAME = value | " entries for the SIMD features detected at run time, then
/// minfer's version as one more entry.
fn system_info() -> &'static CStr {
    static INFO: OnceLock<std::ffi::CString> = OnceLock::new();
    INFO.get_or_init(|| {
        let mut s = String::from("CPU : ");
        for (name, present) in crate::cpu::features() {
            s += &format!("{name} = {} | ", u8::from(present));
        }
        s += concat!("minfer = ", env!("CARGO_PKG_VERSION"), " | ");
        std::ffi::CString::new(s).unwrap_or_default()
    })
}

#[no_mangle]
pub extern "C" fn llama_ftype_name(ftype: enum_llama_ftype) -> *const c_char {
    guard("llama_ftype_name", c"unknown, may not work".as_ptr(), || Ok(crate::model::ftype::name_c(ftype.0).as_ptr()))
}

#[no_mangle]
pub extern "C" fn llama_flash_attn_type_name(flash_attn_type: enum_llama_flash_attn_type) -> *const c_char {
    guard("llama_flash_attn_type_name", ptr::null(), || {
        let name: &'static CStr = match flash_attn_type.0 {
            -1 => c"auto",
            0 => c"disabled",
            1 => c"enabled",
            v => return Err(Error::invalid(format!("unknown flash_attn_type {v}"))),
        };
        Ok(name.as_ptr())
    })
}

#[no_mangle]
pub extern "C" fn llama_load_mode_name(load_mode: enum_llama_load_mode) -> *const c_char {
    guard("llama_load_mode_name", ptr::null(), || {
        let i = LOAD_MODE_NAMES.iter().position(|(v, _)| *v == load_mode.0);
        let i = i.ok_or_else(|| Error::invalid(format!("unknown load_mode {}", load_mode.0)))?;
        Ok(LOAD_MODE_NAMES[i].1.as_ptr())
    })
}

#[no_mangle]
pub extern "C" fn llama_load_mode_from_str(str: *const c_char) -> enum_llama_load_mode {
    // The reference throws on an unknown name; across a C boundary the
    // closest safe answer is AUTO, with an error logged.
    guard("llama_load_mode_from_str", llama_load_mode::LLAMA_LOAD_MODE_AUTO.into(), || {
        let s = c_str(str, "str")?;
        let mode = LOAD_MODE_NAMES.iter().find(|(_, name)| *name == s);
        let mode = mode.ok_or_else(|| Error::invalid(format!("unknown load mode: {}", s.to_string_lossy())))?;
        Ok(enum_llama_load_mode(mode.0))
    })
}

#[no_mangle]
pub extern "C" fn llama_version() -> *const c_char {
    VERSION.as_ptr()
}

#[no_mangle]
pub extern "C" fn llama_context_default_params() -> llama_context_params {
    llama_context_params {
        n_ctx: 512,
        n_batch: 2048,
        n_ubatch: 512,
        n_seq_max: 1,
        n_rs_seq: 0,
        n_outputs_max: 0,
        n_outputs_max_per_seq: 1,
        n_threads: GGML_DEFAULT_N_THREADS,
        n_threads_batch: GGML_DEFAULT_N_THREADS,
        ctx_type: llama_context_type::LLAMA_CONTEXT_TYPE_DEFAULT.into(),
        rope_scaling_type: llama_rope_scaling_type::LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED.into(),
        pooling_type: llama_pooling_type::LLAMA_POOLING_TYPE_UNSPECIFIED.into(),
        attention_type: llama_attention_type::LLAMA_ATTENTION_TYPE_UNSPECIFIED.into(),
        flash_attn_type: llama_flash_attn_type::LLAMA_FLASH_ATTN_TYPE_AUTO.into(),
        rope_freq_base: 0.0,
        rope_freq_scale: 0.0,
        yarn_ext_factor: -1.0,
        yarn_attn_factor: -1.0,
        yarn_beta_fast: -1.0,
        yarn_beta_slow: -1.0,
        yarn_orig_ctx: 0,
        defrag_thold: -1.0,
        cb_eval: None,
        cb_eval_user_data: ptr::null_mut(),
        type_k: ggml_type::GGML_TYPE_F16.into(),
        type_v: ggml_type::GGML_TYPE_F16.into(),
        abort_callback: None,
        abort_callback_data: ptr::null_mut(),
        embeddings: false,
        offload_kqv: true,
        no_perf: true,
        op_offload: true,
        swa_full: true,
        kv_unified: false,
        samplers: ptr::null_mut(),
        n_samplers: 0,
        ctx_other: ptr::null_mut(),
    }
}

#[no_mangle]
pub extern "C" fn llama_backend_init() {
    guard("llama_backend_init", (), || {
        crate::clock::init();
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_backend_free() {
    // Nothing to release: minfer holds no process-wide backend state.
}

#[no_mangle]
pub extern "C" fn llama_numa_init(numa: enum_ggml_numa_strategy) {
    // One CPU node is all minfer schedules on; any valid strategy is accepted
    // and has no further effect.
    guard("llama_numa_init", (), || {
        if !(0..5).contains(&numa.0) {
            return Err(Error::invalid(format!("unknown numa strategy {}", numa.0)));
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_time_us() -> i64 {
    time_us()
}

#[no_mangle]
pub extern "C" fn llama_max_devices() -> usize {
    16
}

#[no_mangle]
pub extern "C" fn llama_max_parallel_sequences() -> usize {
    crate::model::MAX_SEQ
}

#[no_mangle]
pub extern "C" fn llama_max_tensor_buft_overrides() -> usize {
    4096
}

#[no_mangle]
pub extern "C" fn llama_supports_mmap() -> bool {
    true
}

#[no_mangle]
pub extern "C" fn llama_supports_mlock() -> bool {
    true
}

#[no_mangle]
pub extern "C" fn llama_supports_gpu_offload() -> bool {
    false
}

#[no_mangle]
pub extern "C" fn llama_supports_rpc() -> bool {
    false
}

#[no_mangle]
pub extern "C" fn llama_split_path(
    split_path: *mut c_char,
    maxlen: usize,
    path_prefix: *const c_char,
    split_no: i32,
    split_count: i32,
) -> i32 {
    // snprintf(split_path, maxlen, "%s-%05d-of-%05d.gguf", ...): the length
    // written, or 0 when it does not fit.
    guard("llama_split_path", 0, || {
        let prefix = c_str(path_prefix, "path_prefix")?;
        let path = crate::model::split::split_path(prefix.to_bytes(), split_no, split_count);
        if maxlen > 0 && split_path.is_null() {
            return Err(Error::invalid("split_path is NULL"));
        }
        let written = write_c_string(&path, split_path, maxlen);
        Ok(if (written as usize) < maxlen { written } else { 0 })
    })
}

#[no_mangle]
pub extern "C" fn llama_split_prefix(
    split_prefix: *mut c_char,
    maxlen: usize,
    split_path: *const c_char,
    split_no: i32,
    split_count: i32,
) -> i32 {
    // The prefix of `split_path` if it ends in "-%05d-of-%05d.gguf" for these
    // numbers: its length (the buffer gets it snprintf-style), else 0.
    guard("llama_split_prefix", 0, || {
        let path = c_str(split_path, "split_path")?.to_bytes();
        let Some(prefix) = crate::model::split::split_prefix(path, split_no, split_count) else {
            return Ok(0);
        };
        let size_prefix = prefix.len();
        let copy_len = (size_prefix + 1).min(maxlen);
        if copy_len > 0 {
            if split_prefix.is_null() {
                return Err(Error::invalid("split_prefix is NULL"));
            }
            write_c_string(&path[..size_prefix], split_prefix, copy_len);
        }
        Ok(i32::try_from(size_prefix).unwrap_or(i32::MAX))
    })
}

#[no_mangle]
pub extern "C" fn llama_print_system_info() -> *const c_char {
    guard("llama_print_system_info", ptr::null(), || Ok(system_info().as_ptr()))
}
