//! Model loading, freeing and metadata (llama.h: model section).
//!
//! A `*mut llama_model` is `Arc::into_raw(Arc<Model>)`: the caller's handle
//! holds one count and every context made from the model another, so freeing
//! the model while a context lives is safe.

use super::boundary::*;
use super::types::*;
use crate::error::{Error, Result};
use crate::model::metadata::{Override, Overrides};
use crate::model::{LoadParams, Model, Source};
use std::ffi::{c_char, CStr};
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::Arc;

// ---------------------------------------------------------------------------
// Handles
// ---------------------------------------------------------------------------

/// The model behind a handle, or an error if it is NULL.
pub(crate) fn model_ref<'a>(model: *const llama_model) -> Result<&'a Model> {
    deref(model.cast::<Model>(), "model")
}

/// A new strong count on the model behind a handle (for a context).
pub(crate) fn model_arc(model: *const llama_model) -> Result<Arc<Model>> {
    let m = model.cast::<Model>();
    if m.is_null() {
        return Err(Error::invalid("model is NULL"));
    }
    // SAFETY: a non-NULL handle came from Arc::into_raw in `into_handle` and
    // has not been freed (the C API's contract), so its count is >= 1.
    unsafe {
        Arc::increment_strong_count(m);
        Ok(Arc::from_raw(m))
    }
}

fn into_handle(model: Model) -> *mut llama_model {
    Arc::into_raw(Arc::new(model)).cast_mut().cast::<llama_model>()
}

/// A getter on a model: NULL-checked, inside the boundary.
fn with_model<T>(name: &str, fail: T, model: *const llama_model, f: impl FnOnce(&Model) -> T) -> T {
    guard(name, fail, || Ok(f(model_ref(model)?)))
}

fn to_i32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

// ---------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn llama_model_default_params() -> llama_model_params {
    llama_model_params {
        devices: ptr::null_mut(),
        tensor_buft_overrides: ptr::null(),
        n_gpu_layers: -1,
        split_mode: llama_split_mode::LLAMA_SPLIT_MODE_LAYER.into(),
        load_mode: llama_load_mode::LLAMA_LOAD_MODE_AUTO.into(),
        lazy_mode: llama_lazy_mode::LLAMA_LAZY_MODE_AUTO.into(),
        main_gpu: 0,
        tensor_split: ptr::null(),
        progress_callback: None,
        progress_callback_user_data: ptr::null_mut(),
        kv_overrides: ptr::null(),
        vocab_only: false,
        check_tensors: false,
        use_extra_bufts: true,
        no_host: false,
        no_alloc: false,
        load_mtp: false,
    }
}

/// Decodes the caller's kv override array (terminated by an empty key).
pub(super) fn read_overrides(p: *const llama_model_kv_override) -> Result<Overrides> {
    let mut out = Overrides::default();
    for (key, value) in read_override_list(p)? {
        out.0.insert(key, value);
    }
    Ok(out)
}

/// The caller's kv overrides in order (NULL: none).
pub(super) fn read_override_list(mut p: *const llama_model_kv_override) -> Result<Vec<(String, Override)>> {
    let mut out = Vec::new();
    if p.is_null() {
        return Ok(out);
    }
    loop {
        // SAFETY: the caller passes an array terminated by an entry whose key
        // is empty (the reference's contract); we stop at that entry.
        let o = unsafe { &*p };
        if o.key[0] == 0 {
            return Ok(out);
        }
        let key = fixed_c_string(&o.key);
        // SAFETY: every variant of the union is plain old data of the union's
        // size, so reading any of them is defined.
        let value = unsafe {
            match o.tag.0 {
                0 => Override::Int(o.value.val_i64),
                1 => Override::Float(o.value.val_f64),
                2 => Override::Bool(o.value.val_bool != 0),
                3 => Override::Str(fixed_c_string(&o.value.val_str)),
                t => return Err(Error::invalid(format!("kv override '{key}' has unknown type {t}"))),
            }
        };
        out.push((key, value));
        // SAFETY: not the terminator, so the next entry exists.
        p = unsafe { p.add(1) };
    }
}

/// A fixed-size char array as a string, up to its first NUL or its end.
#[allow(clippy::unnecessary_cast, reason = "c_char is i8 on x86-64 but u8 on aarch64")]
fn fixed_c_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Loads a model with the C parameters; `what` names the source in messages.
pub(super) fn load_source(name: &str, what: &str, source: Source, params: &llama_model_params) -> *mut llama_model {
    guard(name, ptr::null_mut(), || {
        let mut progress_fn = params.progress_callback.map(|cb| {
            let user_data = params.progress_callback_user_data;
            // SAFETY: the caller registered `cb` with this user data for
            // exactly this call signature.
            move |p: f32| unsafe { cb(p, user_data) }
        });
        let load_params = LoadParams {
            vocab_only: params.vocab_only,
            overrides: read_overrides(params.kv_overrides)?,
            progress: progress_fn.as_mut().map(|f| f as &mut dyn FnMut(f32) -> bool),
        };
        match Model::load(source, load_params) {
            Ok(model) => Ok(into_handle(model)),
            Err(Error::Cancelled) => {
                log_info!("{name}: cancelled model load of {what}");
                Ok(ptr::null_mut())
            }
            Err(e) => Err(Error::model(format!("failed to load model from {what}: {e}"))),
        }
    })
}

pub(super) fn c_path(p: *const c_char, what: &str) -> Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Ok(Path::new(std::ffi::OsStr::from_bytes(c_str(p, what)?.to_bytes())).to_path_buf())
}

// ---------------------------------------------------------------------------
// Loading and freeing
// ---------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn llama_model_load_from_file(
    path_model: *const c_char,
    params: llama_model_params,
) -> *mut llama_model {
    let path = match guard("llama_model_load_from_file", None, || c_path(path_model, "path_model").map(Some)) {
        Some(p) => p,
        None => return ptr::null_mut(),
    };
    load_source("llama_model_load_from_file", &format!("'{}'", path.display()), Source::Path(&path), &params)
}

#[no_mangle]
pub extern "C" fn llama_load_model_from_file(
    path_model: *const c_char,
    params: llama_model_params,
) -> *mut llama_model {
    llama_model_load_from_file(path_model, params)
}

#[no_mangle]
pub extern "C" fn llama_model_load_from_file_ptr(
    file: *mut libc::FILE,
    params: llama_model_params,
) -> *mut llama_model {
    use std::os::fd::FromRawFd;
    let opened = guard("llama_model_load_from_file_ptr", None, || {
        if file.is_null() {
            return Err(Error::invalid("file is NULL"));
        }
        // SAFETY: `file` is an open FILE* (the caller's contract); fileno and
        // ftell only read its state.
        let (fd, pos) = unsafe { (libc::fileno(file), libc::ftell(file)) };
        if fd < 0 || pos < 0 {
            return Err(Error::invalid("cannot get the descriptor or position of file"));
        }
        // SAFETY: `fd` is open for as long as this call; ManuallyDrop keeps
        // the caller's descriptor open when our File goes out of scope.
        let f = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        Ok(Some((f, pos as u64)))
    });
    let Some((f, base)) = opened else { return ptr::null_mut() };
    load_source("llama_model_load_from_file_ptr", &format!("FILE* at offset {base}"), Source::FileAt(&f, base), &params)
}

#[no_mangle]
pub extern "C" fn llama_model_load_from_splits(
    paths: *mut *const c_char,
    n_paths: usize,
    params: llama_model_params,
) -> *mut llama_model {
    let parts = guard("llama_model_load_from_splits", None, || {
        if paths.is_null() || n_paths == 0 {
            return Err(Error::invalid("paths is NULL or n_paths is 0"));
        }
        // SAFETY: the caller passes an array of n_paths C strings.
        let list = unsafe { std::slice::from_raw_parts(paths, n_paths) };
        list.iter().map(|&p| c_path(p, "paths[i]")).collect::<Result<Vec<_>>>().map(Some)
    });
    let Some(parts) = parts else { return ptr::null_mut() };
    let what = format!("{} split file(s) starting with '{}'", parts.len(), parts[0].display());
    load_source("llama_model_load_from_splits", &what, Source::Splits(&parts), &params)
}

#[no_mangle]
pub extern "C" fn llama_model_free(model: *mut llama_model) {
    guard("llama_model_free", (), || {
        let m = model.cast::<Model>().cast_const();
        if m.is_null() {
            return Ok(());
        }
        // its LoRA adapters go with it, as the reference's (contexts that
        // apply one keep their own count on it)
        super::adapter::free_adapters_of(m as usize);
        // SAFETY: a non-NULL handle came from `into_handle`; this releases the
        // caller's count. Contexts hold their own counts.
        let arc = unsafe { Arc::from_raw(m) };
        let others = Arc::strong_count(&arc) - 1;
        if others > 0 {
            log_warn!(
                "llama_model_free: {others} context(s) still use this model; its memory is released when the last one is freed"
            );
        }
        drop(arc);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_free_model(model: *mut llama_model) {
    llama_model_free(model)
}

// ---------------------------------------------------------------------------
// Hyperparameters
// ---------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn llama_model_n_ctx_train(model: *const llama_model) -> i32 {
    with_model("llama_model_n_ctx_train", -1, model, |m| to_i32(m.hparams.n_ctx_train))
}

#[no_mangle]
pub extern "C" fn llama_model_n_embd(model: *const llama_model) -> i32 {
    with_model("llama_model_n_embd", -1, model, |m| to_i32(m.hparams.n_embd))
}

#[no_mangle]
pub extern "C" fn llama_model_n_embd_inp(model: *const llama_model) -> i32 {
    with_model("llama_model_n_embd_inp", -1, model, |m| to_i32(m.hparams.n_embd))
}

#[no_mangle]
pub extern "C" fn llama_model_n_embd_out(model: *const llama_model) -> i32 {
    with_model("llama_model_n_embd_out", -1, model, |m| to_i32(m.hparams.n_embd))
}

#[no_mangle]
pub extern "C" fn llama_model_n_layer(model: *const llama_model) -> i32 {
    with_model("llama_model_n_layer", -1, model, |m| to_i32(m.hparams.n_layer))
}

#[no_mangle]
pub extern "C" fn llama_model_n_layer_nextn(model: *const llama_model) -> i32 {
    with_model("llama_model_n_layer_nextn", -1, model, |_| 0)
}

#[no_mangle]
pub extern "C" fn llama_model_n_head(model: *const llama_model) -> i32 {
    with_model("llama_model_n_head", -1, model, |m| to_i32(m.hparams.n_head.first().copied().unwrap_or(0)))
}

#[no_mangle]
pub extern "C" fn llama_model_n_head_kv(model: *const llama_model) -> i32 {
    with_model("llama_model_n_head_kv", -1, model, |m| to_i32(m.hparams.n_head_kv.first().copied().unwrap_or(0)))
}

#[no_mangle]
pub extern "C" fn llama_model_n_swa(model: *const llama_model) -> i32 {
    with_model("llama_model_n_swa", -1, model, |m| to_i32(m.hparams.n_swa))
}

#[no_mangle]
pub extern "C" fn llama_model_rope_freq_scale_train(model: *const llama_model) -> f32 {
    with_model("llama_model_rope_freq_scale_train", 0.0, model, |m| m.hparams.rope_freq_scale_train)
}

#[no_mangle]
pub extern "C" fn llama_model_rope_type(model: *const llama_model) -> enum_llama_rope_type {
    let none = llama_rope_type::LLAMA_ROPE_TYPE_NONE.into();
    with_model("llama_model_rope_type", none, model, |m| {
        m.arch.map_or(none, |a| enum_llama_rope_type(a.rope.llama_rope_type()))
    })
}

#[no_mangle]
pub extern "C" fn llama_n_ctx_train(model: *const llama_model) -> i32 {
    llama_model_n_ctx_train(model)
}

#[no_mangle]
pub extern "C" fn llama_n_embd(model: *const llama_model) -> i32 {
    llama_model_n_embd(model)
}

#[no_mangle]
pub extern "C" fn llama_n_layer(model: *const llama_model) -> i32 {
    llama_model_n_layer(model)
}

#[no_mangle]
pub extern "C" fn llama_n_head(model: *const llama_model) -> i32 {
    llama_model_n_head(model)
}

/// The classifier head's outputs (RANK pooling): the number of the
/// model's `%s.classifier.output_labels`, 1 without them, as the reference.
#[no_mangle]
pub extern "C" fn llama_model_n_cls_out(model: *const llama_model) -> u32 {
    with_model("llama_model_n_cls_out", 0, model, |m| if m.vocab_only { 1 } else { m.hparams.n_cls_out })
}

/// Label `i` of the classifier head, or NULL past them (the reference's
/// answer, without an error).
#[no_mangle]
pub extern "C" fn llama_model_cls_label(model: *const llama_model, i: u32) -> *const c_char {
    with_model("llama_model_cls_label", ptr::null(), model, |m| {
        m.hparams.cls_labels.get(i as usize).map_or(ptr::null(), |l| l.as_ptr())
    })
}

#[no_mangle]
pub extern "C" fn llama_model_has_encoder(model: *const llama_model) -> bool {
    with_model("llama_model_has_encoder", false, model, |_| false)
}

#[no_mangle]
pub extern "C" fn llama_model_has_decoder(model: *const llama_model) -> bool {
    with_model("llama_model_has_decoder", false, model, |_| true)
}

#[no_mangle]
pub extern "C" fn llama_model_decoder_start_token(model: *const llama_model) -> llama_token {
    with_model("llama_model_decoder_start_token", LLAMA_TOKEN_NULL, model, |_| LLAMA_TOKEN_NULL)
}

#[no_mangle]
pub extern "C" fn llama_model_is_recurrent(model: *const llama_model) -> bool {
    with_model("llama_model_is_recurrent", false, model, |_| false)
}

#[no_mangle]
pub extern "C" fn llama_model_is_hybrid(model: *const llama_model) -> bool {
    with_model("llama_model_is_hybrid", false, model, |_| false)
}

#[no_mangle]
pub extern "C" fn llama_model_is_diffusion(model: *const llama_model) -> bool {
    with_model("llama_model_is_diffusion", false, model, |_| false)
}

// ---------------------------------------------------------------------------
// Metadata
// ---------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn llama_model_meta_count(model: *const llama_model) -> i32 {
    with_model("llama_model_meta_count", -1, model, |m| i32::try_from(m.metadata.len()).unwrap_or(i32::MAX))
}

/// Writes metadata entry `i` (its key or its value) to the caller's buffer;
/// -1 with the buffer cleared when `i` is out of range.
fn meta_by_index(name: &str, model: *const llama_model, i: i32, buf: *mut c_char, buf_size: usize, value: bool) -> i32 {
    guard(name, -1, || {
        let m = model_ref(model)?;
        let file = &m.files[0];
        let entry =
            usize::try_from(i)
                .ok()
                .and_then(|i| if value { m.metadata.value(file, i) } else { m.metadata.key(file, i) });
        match entry {
            Some(s) => Ok(write_c_string(s.to_bytes(), buf, buf_size)),
            None => {
                clear_c_string(buf, buf_size);
                Ok(-1)
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_model_meta_key_by_index(
    model: *const llama_model,
    i: i32,
    buf: *mut c_char,
    buf_size: usize,
) -> i32 {
    meta_by_index("llama_model_meta_key_by_index", model, i, buf, buf_size, false)
}

#[no_mangle]
pub extern "C" fn llama_model_meta_val_str_by_index(
    model: *const llama_model,
    i: i32,
    buf: *mut c_char,
    buf_size: usize,
) -> i32 {
    meta_by_index("llama_model_meta_val_str_by_index", model, i, buf, buf_size, true)
}

#[no_mangle]
pub extern "C" fn llama_model_meta_val_str(
    model: *const llama_model,
    key: *const c_char,
    buf: *mut c_char,
    buf_size: usize,
) -> i32 {
    guard("llama_model_meta_val_str", -1, || {
        let m = model_ref(model)?;
        let key = c_str(key, "key")?;
        match m.metadata.get(&m.files[0], key.to_bytes()) {
            Some(v) => Ok(write_c_string(v.to_bytes(), buf, buf_size)),
            None => {
                clear_c_string(buf, buf_size);
                Ok(-1)
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_model_meta_key_str(key: enum_llama_model_meta_key) -> *const c_char {
    const KEYS: [&CStr; 12] = [
        c"general.sampling.sequence",
        c"general.sampling.top_k",
        c"general.sampling.top_p",
        c"general.sampling.min_p",
        c"general.sampling.xtc_probability",
        c"general.sampling.xtc_threshold",
        c"general.sampling.temp",
        c"general.sampling.penalty_last_n",
        c"general.sampling.penalty_repeat",
        c"general.sampling.mirostat",
        c"general.sampling.mirostat_tau",
        c"general.sampling.mirostat_eta",
    ];
    // An unknown key is NULL without a message, as in the reference.
    usize::try_from(key.0).ok().and_then(|i| KEYS.get(i)).map_or(ptr::null(), |k| k.as_ptr())
}

#[no_mangle]
pub extern "C" fn llama_model_desc(model: *const llama_model, buf: *mut c_char, buf_size: usize) -> i32 {
    guard("llama_model_desc", -1, || Ok(write_c_string(model_ref(model)?.desc.to_bytes(), buf, buf_size)))
}

#[no_mangle]
pub extern "C" fn llama_model_ftype(model: *const llama_model) -> enum_llama_ftype {
    let fail = llama_ftype::LLAMA_FTYPE_ALL_F32.into();
    with_model("llama_model_ftype", fail, model, |m| enum_llama_ftype(m.ftype))
}

#[no_mangle]
pub extern "C" fn llama_model_size(model: *const llama_model) -> u64 {
    with_model("llama_model_size", 0, model, |m| m.n_bytes)
}

#[no_mangle]
pub extern "C" fn llama_model_n_params(model: *const llama_model) -> u64 {
    with_model("llama_model_n_params", 0, model, |m| m.n_params)
}

#[no_mangle]
pub extern "C" fn llama_model_chat_template(model: *const llama_model, name: *const c_char) -> *const c_char {
    guard("llama_model_chat_template", ptr::null(), || {
        let m = model_ref(model)?;
        let name = if name.is_null() { None } else { Some(c_str(name, "name")?.to_string_lossy().into_owned()) };
        // The model keeps the string (Metadata::get_pinned), so the pointer
        // outlives this Arc.
        Ok(m.chat_template(name.as_deref()).map_or(ptr::null(), |t| t.as_ptr()))
    })
}

#[no_mangle]
pub extern "C" fn llama_model_get_vocab(model: *const llama_model) -> *const llama_vocab {
    guard("llama_model_get_vocab", ptr::null(), || Ok(ptr::from_ref(&model_ref(model)?.vocab).cast::<llama_vocab>()))
}

// ---------------------------------------------------------------------------
// Not implemented yet (owned by later issues)
// ---------------------------------------------------------------------------

#[no_mangle]
#[allow(unused_variables)]
pub extern "C" fn llama_model_save_to_file(model: *const llama_model, path_model: *const c_char) {
    // void in llama.h: a failure is logged (and no file is left behind)
    guard("llama_model_save_to_file", (), || {
        let m = model_ref(model)?;
        let path = c_path(path_model, "path_model")?;
        crate::model::save::save(m, &path)
            .map_err(|e| Error::model(format!("failed to save the model to '{}': {e}", path.display())))
    })
}
