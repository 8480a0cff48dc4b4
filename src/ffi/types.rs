//! The types of the llama.h ABI (llama.cpp commit 0c1e570), from which
//! cbindgen writes include/llama.h. Layouts are checked against
//! ffi-tests/golden/abi/layout.tsv by ffi-tests (C) and by `abi_tests.rs`
//! (Rust).
//!
//! Enums come in pairs: `llama_x` is the C enum that cbindgen emits, and
//! `enum_llama_x` is the int that crosses the boundary (cbindgen.toml renames it
//! to `enum llama_x`). Taking C enums as ints means a caller's out-of-range
//! value is a checked error here, never an invalid Rust value.
//!
//! The ggml types llama.h needs are declared here too, so that a program
//! including only "llama.h" compiles with no ggml headers present.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

// ---------------------------------------------------------------------------
// Scalar typedefs and opaque handles
// ---------------------------------------------------------------------------

pub type llama_pos = i32;
pub type llama_token = i32;
pub type llama_seq_id = i32;
pub type llama_state_seq_flags = u32;
pub type llama_sampler_context_t = *mut c_void;

/// Opaque to C: a model. Behind the pointer is `crate::model::Model`.
pub struct llama_model {
    _opaque: [u8; 0],
}
/// Opaque to C: a vocabulary, owned by its model.
pub struct llama_vocab {
    _opaque: [u8; 0],
}
/// Opaque to C: an inference context.
pub struct llama_context {
    _opaque: [u8; 0],
}
/// Opaque to C: a LoRA adapter.
pub struct llama_adapter_lora {
    _opaque: [u8; 0],
}
/// Opaque to C: the extended batch.
pub struct llama_batch_ext {
    _opaque: [u8; 0],
}
/// Opaque to C: the memory (KV cache) of a context.
pub struct llama_memory_i {
    _opaque: [u8; 0],
}
pub type llama_memory_t = *mut llama_memory_i;

/// Opaque ggml types that appear in llama.h signatures.
pub struct ggml_tensor {
    _opaque: [u8; 0],
}
pub struct ggml_context {
    _opaque: [u8; 0],
}
pub struct ggml_cgraph {
    _opaque: [u8; 0],
}
pub struct gguf_context {
    _opaque: [u8; 0],
}
pub struct ggml_threadpool {
    _opaque: [u8; 0],
}
pub struct ggml_backend_device {
    _opaque: [u8; 0],
}
pub struct ggml_backend_buffer_type {
    _opaque: [u8; 0],
}
pub struct ggml_opt_dataset {
    _opaque: [u8; 0],
}
pub struct ggml_opt_context {
    _opaque: [u8; 0],
}
pub struct ggml_opt_result {
    _opaque: [u8; 0],
}
pub struct ggml_opt_optimizer_params {
    _opaque: [u8; 0],
}

pub type ggml_threadpool_t = *mut ggml_threadpool;
pub type ggml_backend_dev_t = *mut ggml_backend_device;
pub type ggml_backend_buffer_type_t = *mut ggml_backend_buffer_type;
pub type ggml_opt_dataset_t = *mut ggml_opt_dataset;
pub type ggml_opt_context_t = *mut ggml_opt_context;
pub type ggml_opt_result_t = *mut ggml_opt_result;

// ---------------------------------------------------------------------------
// Callback typedefs
// ---------------------------------------------------------------------------

pub type ggml_log_callback =
    Option<unsafe extern "C" fn(level: enum_ggml_log_level, text: *const c_char, user_data: *mut c_void)>;
pub type ggml_abort_callback = Option<unsafe extern "C" fn(data: *mut c_void) -> bool>;
pub type ggml_backend_sched_eval_callback =
    Option<unsafe extern "C" fn(t: *mut ggml_tensor, ask: bool, user_data: *mut c_void) -> bool>;
#[allow(improper_ctypes_definitions)]
pub type ggml_opt_get_optimizer_params =
    Option<unsafe extern "C" fn(userdata: *mut c_void) -> ggml_opt_optimizer_params>;
pub type ggml_opt_epoch_callback = Option<
    unsafe extern "C" fn(
        train: bool,
        opt_ctx: ggml_opt_context_t,
        dataset: ggml_opt_dataset_t,
        result: ggml_opt_result_t,
        ibatch: i64,
        ibatch_max: i64,
        t_start_us: i64,
    ),
>;
pub type llama_progress_callback = Option<unsafe extern "C" fn(progress: f32, user_data: *mut c_void) -> bool>;
pub type llama_model_set_tensor_data_t = Option<unsafe extern "C" fn(tensor: *mut ggml_tensor, userdata: *mut c_void)>;
pub type llama_opt_param_filter =
    Option<unsafe extern "C" fn(tensor: *const ggml_tensor, userdata: *mut c_void) -> bool>;

// ---------------------------------------------------------------------------
// Structs
// ---------------------------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_token_data {
    pub id: llama_token,
    pub logit: f32,
    pub p: f32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_token_data_array {
    pub data: *mut llama_token_data,
    pub size: usize,
    pub selected: i64,
    pub sorted: bool,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_batch {
    pub n_tokens: i32,
    pub token: *mut llama_token,
    pub embd: *mut f32,
    pub pos: *mut llama_pos,
    pub n_seq_id: *mut i32,
    pub seq_id: *mut *mut llama_seq_id,
    pub logits: *mut i8,
}

/// The value of a kv override. In C it is an anonymous union inside the
/// struct (written by cbindgen.toml's trailer); `val_bool` is read as a byte
/// here so that a stray value is never an invalid Rust bool.
#[repr(C)]
#[derive(Clone, Copy)]
pub union llama_model_kv_override_value {
    pub val_i64: i64,
    pub val_f64: f64,
    pub val_bool: u8,
    pub val_str: [c_char; 128],
}

/// `struct llama_model_kv_override` (excluded from cbindgen; its C text with
/// the anonymous union is in cbindgen.toml).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct llama_model_kv_override {
    pub tag: enum_llama_model_kv_override_type,
    pub key: [c_char; 128],
    pub value: llama_model_kv_override_value,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_model_tensor_buft_override {
    pub pattern: *const c_char,
    pub buft: ggml_backend_buffer_type_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct llama_model_params {
    pub devices: *mut ggml_backend_dev_t,
    pub tensor_buft_overrides: *const llama_model_tensor_buft_override,
    pub n_gpu_layers: i32,
    pub split_mode: enum_llama_split_mode,
    pub load_mode: enum_llama_load_mode,
    pub lazy_mode: enum_llama_lazy_mode,
    pub main_gpu: i32,
    pub tensor_split: *const f32,
    pub progress_callback: llama_progress_callback,
    pub progress_callback_user_data: *mut c_void,
    pub kv_overrides: *const llama_model_kv_override,
    pub vocab_only: bool,
    pub check_tensors: bool,
    pub use_extra_bufts: bool,
    pub no_host: bool,
    pub no_alloc: bool,
    pub load_mtp: bool,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_sampler_seq_config {
    pub seq_id: llama_seq_id,
    pub sampler: *mut llama_sampler,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct llama_context_params {
    pub n_ctx: u32,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub n_seq_max: u32,
    pub n_rs_seq: u32,
    pub n_outputs_max: u32,
    pub n_outputs_max_per_seq: u32,
    pub n_threads: i32,
    pub n_threads_batch: i32,
    pub ctx_type: enum_llama_context_type,
    pub rope_scaling_type: enum_llama_rope_scaling_type,
    pub pooling_type: enum_llama_pooling_type,
    pub attention_type: enum_llama_attention_type,
    pub flash_attn_type: enum_llama_flash_attn_type,
    pub rope_freq_base: f32,
    pub rope_freq_scale: f32,
    pub yarn_ext_factor: f32,
    pub yarn_attn_factor: f32,
    pub yarn_beta_fast: f32,
    pub yarn_beta_slow: f32,
    pub yarn_orig_ctx: u32,
    pub defrag_thold: f32,
    pub cb_eval: ggml_backend_sched_eval_callback,
    pub cb_eval_user_data: *mut c_void,
    pub type_k: enum_ggml_type,
    pub type_v: enum_ggml_type,
    pub abort_callback: ggml_abort_callback,
    pub abort_callback_data: *mut c_void,
    pub embeddings: bool,
    pub offload_kqv: bool,
    pub no_perf: bool,
    pub op_offload: bool,
    pub swa_full: bool,
    pub kv_unified: bool,
    pub samplers: *mut llama_sampler_seq_config,
    pub n_samplers: usize,
    pub ctx_other: *mut llama_context,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_model_tensor_override {
    pub pattern: *const c_char,
    pub r#type: enum_ggml_type,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_model_imatrix_data {
    pub name: *const c_char,
    pub data: *const f32,
    pub size: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct llama_model_quantize_params {
    pub nthread: i32,
    pub ftype: enum_llama_ftype,
    pub output_tensor_type: enum_ggml_type,
    pub token_embedding_type: enum_ggml_type,
    pub allow_requantize: bool,
    pub quantize_output_tensor: bool,
    pub only_copy: bool,
    pub pure: bool,
    pub keep_split: bool,
    pub dry_run: bool,
    pub imatrix: *const llama_model_imatrix_data,
    pub kv_overrides: *const llama_model_kv_override,
    pub tt_overrides: *const llama_model_tensor_override,
    pub prune_layers: *const i32,
    pub max_buf_size: usize,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_logit_bias {
    pub token: llama_token,
    pub bias: f32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_sampler_chain_params {
    pub no_perf: bool,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_chat_message {
    pub role: *const c_char,
    pub content: *const c_char,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_embd {
    pub data: *const f32,
    pub n_rows: usize,
    pub n_embd: usize,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_sampler_data {
    pub logits: *mut ggml_tensor,
    pub probs: *mut ggml_tensor,
    pub sampled: *mut ggml_tensor,
    pub candidates: *mut ggml_tensor,
}

/// A sampler's function table; a caller's own sampler fills one in.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct llama_sampler_i {
    pub name: Option<unsafe extern "C" fn(smpl: *const llama_sampler) -> *const c_char>,
    pub accept: Option<unsafe extern "C" fn(smpl: *mut llama_sampler, token: llama_token)>,
    pub apply: Option<unsafe extern "C" fn(smpl: *mut llama_sampler, cur_p: *mut llama_token_data_array)>,
    pub reset: Option<unsafe extern "C" fn(smpl: *mut llama_sampler)>,
    pub clone: Option<unsafe extern "C" fn(smpl: *const llama_sampler) -> *mut llama_sampler>,
    pub free: Option<unsafe extern "C" fn(smpl: *mut llama_sampler)>,
    pub backend_init: Option<
        unsafe extern "C" fn(
            smpl: *mut llama_sampler,
            buft: ggml_backend_buffer_type_t,
            n_outputs_max_per_seq: u32,
        ) -> bool,
    >,
    pub backend_accept: Option<
        unsafe extern "C" fn(
            smpl: *mut llama_sampler,
            ctx: *mut ggml_context,
            gf: *mut ggml_cgraph,
            selected_token: *mut ggml_tensor,
        ),
    >,
    pub backend_apply: Option<
        unsafe extern "C" fn(
            smpl: *mut llama_sampler,
            ctx: *mut ggml_context,
            gf: *mut ggml_cgraph,
            data: *mut llama_sampler_data,
        ),
    >,
    pub backend_set_input: Option<unsafe extern "C" fn(smpl: *mut llama_sampler)>,
    pub backend_reset: Option<unsafe extern "C" fn(smpl: *mut llama_sampler)>,
    pub copy_state: Option<unsafe extern "C" fn(src: *const llama_sampler, dst: *mut llama_sampler)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct llama_sampler {
    pub iface: *mut llama_sampler_i,
    pub ctx: llama_sampler_context_t,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct llama_perf_context_data {
    pub t_start_ms: f64,
    pub t_load_ms: f64,
    pub t_p_eval_ms: f64,
    pub t_eval_ms: f64,
    pub n_p_eval: i32,
    pub n_eval: i32,
    pub n_reused: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct llama_perf_sampler_data {
    pub t_sample_ms: f64,
    pub n_sample: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct llama_opt_params {
    pub n_ctx_train: u32,
    pub param_filter: llama_opt_param_filter,
    pub param_filter_ud: *mut c_void,
    pub get_opt_pars: ggml_opt_get_optimizer_params,
    pub get_opt_pars_ud: *mut c_void,
    pub optimizer_type: enum_ggml_opt_optimizer_type,
}

// ---------------------------------------------------------------------------
// Enums (values from ffi-tests/golden/abi/enums.tsv)
// ---------------------------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_vocab_type {
    LLAMA_VOCAB_TYPE_NONE = 0,
    LLAMA_VOCAB_TYPE_SPM = 1,
    LLAMA_VOCAB_TYPE_BPE = 2,
    LLAMA_VOCAB_TYPE_WPM = 3,
    LLAMA_VOCAB_TYPE_UGM = 4,
    LLAMA_VOCAB_TYPE_RWKV = 5,
    LLAMA_VOCAB_TYPE_PLAMO2 = 6,
    LLAMA_VOCAB_TYPE_TEST = 7,
}

/// `enum llama_vocab_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_vocab_type(pub c_int);

impl From<llama_vocab_type> for enum_llama_vocab_type {
    fn from(v: llama_vocab_type) -> Self {
        enum_llama_vocab_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_rope_type {
    LLAMA_ROPE_TYPE_NONE = -1,
    LLAMA_ROPE_TYPE_NORM = 0,
    LLAMA_ROPE_TYPE_NEOX = 2,
    LLAMA_ROPE_TYPE_MROPE = 8,
    LLAMA_ROPE_TYPE_IMROPE = 40,
    LLAMA_ROPE_TYPE_VISION = 24,
}

/// `enum llama_rope_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_rope_type(pub c_int);

impl From<llama_rope_type> for enum_llama_rope_type {
    fn from(v: llama_rope_type) -> Self {
        enum_llama_rope_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_token_type {
    LLAMA_TOKEN_TYPE_UNDEFINED = 0,
    LLAMA_TOKEN_TYPE_NORMAL = 1,
    LLAMA_TOKEN_TYPE_UNKNOWN = 2,
    LLAMA_TOKEN_TYPE_CONTROL = 3,
    LLAMA_TOKEN_TYPE_USER_DEFINED = 4,
    LLAMA_TOKEN_TYPE_UNUSED = 5,
    LLAMA_TOKEN_TYPE_BYTE = 6,
}

/// `enum llama_token_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_token_type(pub c_int);

impl From<llama_token_type> for enum_llama_token_type {
    fn from(v: llama_token_type) -> Self {
        enum_llama_token_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_token_attr {
    LLAMA_TOKEN_ATTR_UNDEFINED = 0,
    LLAMA_TOKEN_ATTR_UNKNOWN = 1,
    LLAMA_TOKEN_ATTR_UNUSED = 2,
    LLAMA_TOKEN_ATTR_NORMAL = 4,
    LLAMA_TOKEN_ATTR_CONTROL = 8,
    LLAMA_TOKEN_ATTR_USER_DEFINED = 16,
    LLAMA_TOKEN_ATTR_BYTE = 32,
    LLAMA_TOKEN_ATTR_NORMALIZED = 64,
    LLAMA_TOKEN_ATTR_LSTRIP = 128,
    LLAMA_TOKEN_ATTR_RSTRIP = 256,
    LLAMA_TOKEN_ATTR_SINGLE_WORD = 512,
}

/// `enum llama_token_attr` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_token_attr(pub c_int);

impl From<llama_token_attr> for enum_llama_token_attr {
    fn from(v: llama_token_attr) -> Self {
        enum_llama_token_attr(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_ftype {
    LLAMA_FTYPE_ALL_F32 = 0,
    LLAMA_FTYPE_MOSTLY_F16 = 1,
    LLAMA_FTYPE_MOSTLY_Q4_0 = 2,
    LLAMA_FTYPE_MOSTLY_Q4_1 = 3,
    LLAMA_FTYPE_MOSTLY_Q8_0 = 7,
    LLAMA_FTYPE_MOSTLY_Q5_0 = 8,
    LLAMA_FTYPE_MOSTLY_Q5_1 = 9,
    LLAMA_FTYPE_MOSTLY_Q2_K = 10,
    LLAMA_FTYPE_MOSTLY_Q3_K_S = 11,
    LLAMA_FTYPE_MOSTLY_Q3_K_M = 12,
    LLAMA_FTYPE_MOSTLY_Q3_K_L = 13,
    LLAMA_FTYPE_MOSTLY_Q4_K_S = 14,
    LLAMA_FTYPE_MOSTLY_Q4_K_M = 15,
    LLAMA_FTYPE_MOSTLY_Q5_K_S = 16,
    LLAMA_FTYPE_MOSTLY_Q5_K_M = 17,
    LLAMA_FTYPE_MOSTLY_Q6_K = 18,
    LLAMA_FTYPE_MOSTLY_IQ2_XXS = 19,
    LLAMA_FTYPE_MOSTLY_IQ2_XS = 20,
    LLAMA_FTYPE_MOSTLY_Q2_K_S = 21,
    LLAMA_FTYPE_MOSTLY_IQ3_XS = 22,
    LLAMA_FTYPE_MOSTLY_IQ3_XXS = 23,
    LLAMA_FTYPE_MOSTLY_IQ1_S = 24,
    LLAMA_FTYPE_MOSTLY_IQ4_NL = 25,
    LLAMA_FTYPE_MOSTLY_IQ3_S = 26,
    LLAMA_FTYPE_MOSTLY_IQ3_M = 27,
    LLAMA_FTYPE_MOSTLY_IQ2_S = 28,
    LLAMA_FTYPE_MOSTLY_IQ2_M = 29,
    LLAMA_FTYPE_MOSTLY_IQ4_XS = 30,
    LLAMA_FTYPE_MOSTLY_IQ1_M = 31,
    LLAMA_FTYPE_MOSTLY_BF16 = 32,
    LLAMA_FTYPE_MOSTLY_TQ1_0 = 36,
    LLAMA_FTYPE_MOSTLY_TQ2_0 = 37,
    LLAMA_FTYPE_MOSTLY_MXFP4_MOE = 38,
    LLAMA_FTYPE_MOSTLY_NVFP4 = 39,
    LLAMA_FTYPE_MOSTLY_Q1_0 = 40,
    LLAMA_FTYPE_MOSTLY_Q2_0 = 41,
    LLAMA_FTYPE_GUESSED = 1024,
}

/// `enum llama_ftype` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_ftype(pub c_int);

impl From<llama_ftype> for enum_llama_ftype {
    fn from(v: llama_ftype) -> Self {
        enum_llama_ftype(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_rope_scaling_type {
    LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED = -1,
    LLAMA_ROPE_SCALING_TYPE_NONE = 0,
    LLAMA_ROPE_SCALING_TYPE_LINEAR = 1,
    LLAMA_ROPE_SCALING_TYPE_YARN = 2,
    LLAMA_ROPE_SCALING_TYPE_LONGROPE = 3,
}

/// `enum llama_rope_scaling_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_rope_scaling_type(pub c_int);

impl From<llama_rope_scaling_type> for enum_llama_rope_scaling_type {
    fn from(v: llama_rope_scaling_type) -> Self {
        enum_llama_rope_scaling_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_pooling_type {
    LLAMA_POOLING_TYPE_UNSPECIFIED = -1,
    LLAMA_POOLING_TYPE_NONE = 0,
    LLAMA_POOLING_TYPE_MEAN = 1,
    LLAMA_POOLING_TYPE_CLS = 2,
    LLAMA_POOLING_TYPE_LAST = 3,
    LLAMA_POOLING_TYPE_RANK = 4,
}

/// `enum llama_pooling_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_pooling_type(pub c_int);

impl From<llama_pooling_type> for enum_llama_pooling_type {
    fn from(v: llama_pooling_type) -> Self {
        enum_llama_pooling_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_attention_type {
    LLAMA_ATTENTION_TYPE_UNSPECIFIED = -1,
    LLAMA_ATTENTION_TYPE_CAUSAL = 0,
    LLAMA_ATTENTION_TYPE_NON_CAUSAL = 1,
}

/// `enum llama_attention_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_attention_type(pub c_int);

impl From<llama_attention_type> for enum_llama_attention_type {
    fn from(v: llama_attention_type) -> Self {
        enum_llama_attention_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_flash_attn_type {
    LLAMA_FLASH_ATTN_TYPE_AUTO = -1,
    LLAMA_FLASH_ATTN_TYPE_DISABLED = 0,
    LLAMA_FLASH_ATTN_TYPE_ENABLED = 1,
}

/// `enum llama_flash_attn_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_flash_attn_type(pub c_int);

impl From<llama_flash_attn_type> for enum_llama_flash_attn_type {
    fn from(v: llama_flash_attn_type) -> Self {
        enum_llama_flash_attn_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_split_mode {
    LLAMA_SPLIT_MODE_NONE = 0,
    LLAMA_SPLIT_MODE_LAYER = 1,
    LLAMA_SPLIT_MODE_ROW = 2,
    LLAMA_SPLIT_MODE_TENSOR = 3,
}

/// `enum llama_split_mode` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_split_mode(pub c_int);

impl From<llama_split_mode> for enum_llama_split_mode {
    fn from(v: llama_split_mode) -> Self {
        enum_llama_split_mode(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_load_mode {
    LLAMA_LOAD_MODE_AUTO = -1,
    LLAMA_LOAD_MODE_NONE = 0,
    LLAMA_LOAD_MODE_MMAP = 1,
    LLAMA_LOAD_MODE_MLOCK = 2,
    LLAMA_LOAD_MODE_MMAP_MLOCK = 3,
    LLAMA_LOAD_MODE_DIRECT_IO = 4,
}

/// `enum llama_load_mode` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_load_mode(pub c_int);

impl From<llama_load_mode> for enum_llama_load_mode {
    fn from(v: llama_load_mode) -> Self {
        enum_llama_load_mode(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_lazy_mode {
    LLAMA_LAZY_MODE_OFF = 0,
    LLAMA_LAZY_MODE_AUTO = 1,
    LLAMA_LAZY_MODE_ON = 2,
}

/// `enum llama_lazy_mode` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_lazy_mode(pub c_int);

impl From<llama_lazy_mode> for enum_llama_lazy_mode {
    fn from(v: llama_lazy_mode) -> Self {
        enum_llama_lazy_mode(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_context_type {
    LLAMA_CONTEXT_TYPE_DEFAULT = 0,
    LLAMA_CONTEXT_TYPE_MTP = 1,
}

/// `enum llama_context_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_context_type(pub c_int);

impl From<llama_context_type> for enum_llama_context_type {
    fn from(v: llama_context_type) -> Self {
        enum_llama_context_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_model_kv_override_type {
    LLAMA_KV_OVERRIDE_TYPE_INT = 0,
    LLAMA_KV_OVERRIDE_TYPE_FLOAT = 1,
    LLAMA_KV_OVERRIDE_TYPE_BOOL = 2,
    LLAMA_KV_OVERRIDE_TYPE_STR = 3,
}

/// `enum llama_model_kv_override_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_model_kv_override_type(pub c_int);

impl From<llama_model_kv_override_type> for enum_llama_model_kv_override_type {
    fn from(v: llama_model_kv_override_type) -> Self {
        enum_llama_model_kv_override_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_model_meta_key {
    LLAMA_MODEL_META_KEY_SAMPLING_SEQUENCE = 0,
    LLAMA_MODEL_META_KEY_SAMPLING_TOP_K = 1,
    LLAMA_MODEL_META_KEY_SAMPLING_TOP_P = 2,
    LLAMA_MODEL_META_KEY_SAMPLING_MIN_P = 3,
    LLAMA_MODEL_META_KEY_SAMPLING_XTC_PROBABILITY = 4,
    LLAMA_MODEL_META_KEY_SAMPLING_XTC_THRESHOLD = 5,
    LLAMA_MODEL_META_KEY_SAMPLING_TEMP = 6,
    LLAMA_MODEL_META_KEY_SAMPLING_PENALTY_LAST_N = 7,
    LLAMA_MODEL_META_KEY_SAMPLING_PENALTY_REPEAT = 8,
    LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT = 9,
    LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT_TAU = 10,
    LLAMA_MODEL_META_KEY_SAMPLING_MIROSTAT_ETA = 11,
}

/// `enum llama_model_meta_key` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_model_meta_key(pub c_int);

impl From<llama_model_meta_key> for enum_llama_model_meta_key {
    fn from(v: llama_model_meta_key) -> Self {
        enum_llama_model_meta_key(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum llama_process_type {
    LLAMA_PROCESS_TYPE_ENCODE = 0,
    LLAMA_PROCESS_TYPE_DECODE = 1,
}

/// `enum llama_process_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_llama_process_type(pub c_int);

impl From<llama_process_type> for enum_llama_process_type {
    fn from(v: llama_process_type) -> Self {
        enum_llama_process_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10,
    GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_Q8_K = 15,
    GGML_TYPE_IQ2_XXS = 16,
    GGML_TYPE_IQ2_XS = 17,
    GGML_TYPE_IQ3_XXS = 18,
    GGML_TYPE_IQ1_S = 19,
    GGML_TYPE_IQ4_NL = 20,
    GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22,
    GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_I8 = 24,
    GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26,
    GGML_TYPE_I64 = 27,
    GGML_TYPE_F64 = 28,
    GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30,
    GGML_TYPE_TQ1_0 = 34,
    GGML_TYPE_TQ2_0 = 35,
    GGML_TYPE_MXFP4 = 39,
    GGML_TYPE_NVFP4 = 40,
    GGML_TYPE_Q1_0 = 41,
    GGML_TYPE_Q2_0 = 42,
    GGML_TYPE_COUNT = 43,
}

/// `enum ggml_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_ggml_type(pub c_int);

impl From<ggml_type> for enum_ggml_type {
    fn from(v: ggml_type) -> Self {
        enum_ggml_type(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ggml_log_level {
    GGML_LOG_LEVEL_NONE = 0,
    GGML_LOG_LEVEL_DEBUG = 1,
    GGML_LOG_LEVEL_INFO = 2,
    GGML_LOG_LEVEL_WARN = 3,
    GGML_LOG_LEVEL_ERROR = 4,
    GGML_LOG_LEVEL_CONT = 5,
}

/// `enum ggml_log_level` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_ggml_log_level(pub c_int);

impl From<ggml_log_level> for enum_ggml_log_level {
    fn from(v: ggml_log_level) -> Self {
        enum_ggml_log_level(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ggml_numa_strategy {
    GGML_NUMA_STRATEGY_DISABLED = 0,
    GGML_NUMA_STRATEGY_DISTRIBUTE = 1,
    GGML_NUMA_STRATEGY_ISOLATE = 2,
    GGML_NUMA_STRATEGY_NUMACTL = 3,
    GGML_NUMA_STRATEGY_MIRROR = 4,
    GGML_NUMA_STRATEGY_COUNT = 5,
}

/// `enum ggml_numa_strategy` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_ggml_numa_strategy(pub c_int);

impl From<ggml_numa_strategy> for enum_ggml_numa_strategy {
    fn from(v: ggml_numa_strategy) -> Self {
        enum_ggml_numa_strategy(v as c_int)
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ggml_opt_optimizer_type {
    GGML_OPT_OPTIMIZER_TYPE_ADAMW = 0,
    GGML_OPT_OPTIMIZER_TYPE_SGD = 1,
    GGML_OPT_OPTIMIZER_TYPE_COUNT = 2,
}

/// `enum ggml_opt_optimizer_type` as C passes it: any int, so no C value is an invalid Rust value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct enum_ggml_opt_optimizer_type(pub c_int);

impl From<ggml_opt_optimizer_type> for enum_ggml_opt_optimizer_type {
    fn from(v: ggml_opt_optimizer_type) -> Self {
        enum_ggml_opt_optimizer_type(v as c_int)
    }
}

// ---------------------------------------------------------------------------
// Constants (#defines of llama.h)
// ---------------------------------------------------------------------------

pub const LLAMA_DEFAULT_SEED: u32 = 0xFFFF_FFFF;
pub const LLAMA_TOKEN_NULL: llama_token = -1;
pub const LLAMA_FILE_MAGIC_GGLA: u32 = 0x6767_6c61;
pub const LLAMA_FILE_MAGIC_GGSN: u32 = 0x6767_736e;
pub const LLAMA_FILE_MAGIC_GGSQ: u32 = 0x6767_7371;
pub const LLAMA_SESSION_MAGIC: u32 = LLAMA_FILE_MAGIC_GGSN;
pub const LLAMA_SESSION_VERSION: i32 = 10;
pub const LLAMA_STATE_SEQ_MAGIC: u32 = LLAMA_FILE_MAGIC_GGSQ;
pub const LLAMA_STATE_SEQ_VERSION: i32 = 3;
pub const LLAMA_STATE_SEQ_FLAGS_NONE: u32 = 0;
pub const LLAMA_STATE_SEQ_FLAGS_SWA_ONLY: u32 = 1;
pub const LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY: u32 = 1;
pub const LLAMA_STATE_SEQ_FLAGS_ON_DEVICE: u32 = 2;
