//! LoRA adapters and control vectors (llama.h: adapters section).
//!
//! A `*mut llama_adapter_lora` is `Box::into_raw(Box<Arc<LoraAdapter>>)`.
//! The handles alive are listed with their model's address: the model's
//! `llama_model_free` frees its adapters, as the reference's model
//! destructor does (llama.h: "loaded adapters that are not manually freed
//! will be freed when the associated model is deleted"), and a handle no
//! longer alive is refused with a message instead of being read or freed
//! twice. Contexts hold their own `Arc`, so freeing an adapter that a
//! context applies never pulls it from under a decode (the context keeps
//! applying it until `llama_set_adapters_lora` changes its list).

use super::boundary::*;
use super::types::*;
use crate::context::lora::{ActiveLora, ActiveLoras};
use crate::error::{Error, Result};
use crate::gguf::GgufFile;
use crate::model::lora::LoraAdapter;
use parking_lot::Mutex;
use std::ffi::c_char;
use std::ptr;
use std::sync::Arc;

/// (adapter handle, its model's handle) for every adapter alive.
static LIVE: Mutex<Vec<(usize, usize)>> = parking_lot::const_mutex(Vec::new());

/// The adapter behind a live handle (a new count on it).
fn adapter_arc(adapter: *const llama_adapter_lora) -> Result<Arc<LoraAdapter>> {
    if adapter.is_null() {
        return Err(Error::invalid("adapter is NULL"));
    }
    let live = LIVE.lock();
    if !live.iter().any(|&(a, _)| a == adapter as usize) {
        return Err(Error::invalid("adapter is not a live LoRA adapter (freed, or freed with its model)"));
    }
    // SAFETY: listed in LIVE, so it is a Box<Arc<LoraAdapter>> from
    // `register` not yet freed (freeing removes it under this lock).
    Ok(Arc::clone(unsafe { &*adapter.cast::<Arc<LoraAdapter>>() }))
}

/// A new handle for `adapter`, listed as alive with its model.
fn register(model: *const llama_model, adapter: LoraAdapter) -> *mut llama_adapter_lora {
    let h = Box::into_raw(Box::new(Arc::new(adapter))).cast::<llama_adapter_lora>();
    LIVE.lock().push((h as usize, model as usize));
    h
}

/// Frees a handle listed in LIVE; false if it was not listed.
fn unregister_and_free(adapter: usize) -> bool {
    let mut live = LIVE.lock();
    let Some(i) = live.iter().position(|&(a, _)| a == adapter) else { return false };
    live.swap_remove(i);
    // SAFETY: it was listed, so it is a live Box from `register`; it is no
    // longer listed, so nothing else frees or reads it through the handle.
    drop(unsafe { Box::from_raw(adapter as *mut Arc<LoraAdapter>) });
    true
}

/// Frees the adapters of the model at `model` (from `llama_model_free`).
pub(super) fn free_adapters_of(model: usize) {
    let mine: Vec<usize> = LIVE.lock().iter().filter(|&&(_, m)| m == model).map(|&(a, _)| a).collect();
    for a in mine {
        unregister_and_free(a);
    }
}

/// Reads an adapter for `model` from `file` (already opened).
fn load(model: *mut llama_model, file: GgufFile) -> Result<*mut llama_adapter_lora> {
    let m = super::model::model_ref(model)?;
    let adapter = LoraAdapter::load(m, model as usize, file)?;
    crate::log_info!("llama_adapter_lora_init: loaded {} tensors from lora file", adapter.pairs.len() * 2);
    Ok(register(model, adapter))
}

#[no_mangle]
pub extern "C" fn llama_adapter_lora_init(
    model: *mut llama_model,
    path_lora: *const c_char,
) -> *mut llama_adapter_lora {
    guard("llama_adapter_lora_init", ptr::null_mut(), || {
        super::model::model_ref(model)?;
        let path = super::model::c_path(path_lora, "path_lora")?;
        crate::log_info!("llama_adapter_lora_init: loading lora adapter from '{}' ...", path.display());
        load(model, GgufFile::open(&path)?)
    })
}

#[no_mangle]
pub extern "C" fn llama_adapter_lora_init_from_file_ptr(
    model: *mut llama_model,
    file: *mut libc::FILE,
) -> *mut llama_adapter_lora {
    use std::os::fd::FromRawFd;
    guard("llama_adapter_lora_init_from_file_ptr", ptr::null_mut(), || {
        super::model::model_ref(model)?;
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
        // the caller's descriptor open when our File goes out of scope
        // (open_file_at maps the file and keeps a duplicate of it).
        let f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        load(model, GgufFile::open_file_at(&f, pos as u64)?)
    })
}

#[no_mangle]
pub extern "C" fn llama_adapter_meta_val_str(
    adapter: *const llama_adapter_lora,
    key: *const c_char,
    buf: *mut c_char,
    buf_size: usize,
) -> i32 {
    guard("llama_adapter_meta_val_str", -1, || {
        let a = adapter_arc(adapter)?;
        let key = c_str(key, "key")?;
        match a.metadata.get(&a.file, key.to_bytes()) {
            Some(v) => Ok(write_c_string(v.to_bytes(), buf, buf_size)),
            None => {
                clear_c_string(buf, buf_size);
                Ok(-1)
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_adapter_meta_count(adapter: *const llama_adapter_lora) -> i32 {
    guard(
        "llama_adapter_meta_count",
        -1,
        || Ok(i32::try_from(adapter_arc(adapter)?.metadata.len()).unwrap_or(i32::MAX)),
    )
}

/// The key (or the value, with `value`) of the adapter's scalar pair `i`
/// (the pairs in file order: `model::metadata` says why).
fn meta_by_index(
    name: &str,
    adapter: *const llama_adapter_lora,
    i: i32,
    buf: *mut c_char,
    buf_size: usize,
    value: bool,
) -> i32 {
    guard(name, -1, || {
        let a = adapter_arc(adapter)?;
        let entry = usize::try_from(i).ok().and_then(|i| {
            if value {
                a.metadata.value(&a.file, i)
            } else {
                a.metadata.key(&a.file, i)
            }
        });
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
pub extern "C" fn llama_adapter_meta_key_by_index(
    adapter: *const llama_adapter_lora,
    i: i32,
    buf: *mut c_char,
    buf_size: usize,
) -> i32 {
    meta_by_index("llama_adapter_meta_key_by_index", adapter, i, buf, buf_size, false)
}

#[no_mangle]
pub extern "C" fn llama_adapter_meta_val_str_by_index(
    adapter: *const llama_adapter_lora,
    i: i32,
    buf: *mut c_char,
    buf_size: usize,
) -> i32 {
    meta_by_index("llama_adapter_meta_val_str_by_index", adapter, i, buf, buf_size, true)
}

#[no_mangle]
pub extern "C" fn llama_adapter_lora_free(adapter: *mut llama_adapter_lora) {
    guard("llama_adapter_lora_free", (), || {
        if adapter.is_null() || unregister_and_free(adapter as usize) {
            Ok(())
        } else {
            Err(Error::invalid("adapter is not a live LoRA adapter (freed already, or with its model)"))
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_adapter_get_alora_n_invocation_tokens(adapter: *const llama_adapter_lora) -> u64 {
    if adapter.is_null() {
        return 0; // (the reference's answer for NULL)
    }
    guard("llama_adapter_get_alora_n_invocation_tokens", 0, || Ok(adapter_arc(adapter)?.invocation_tokens.len() as u64))
}

/// The tokens stay valid as long as the adapter (NULL when there are none,
/// as an empty std::vector's data()).
#[no_mangle]
pub extern "C" fn llama_adapter_get_alora_invocation_tokens(adapter: *const llama_adapter_lora) -> *const llama_token {
    guard("llama_adapter_get_alora_invocation_tokens", ptr::null(), || {
        let a = adapter_arc(adapter)?;
        // (the Arc the handle holds keeps the vector where it is)
        Ok(if a.invocation_tokens.is_empty() { ptr::null() } else { a.invocation_tokens.as_ptr() })
    })
}

/// Sets the context's adapters: `adapters[i]` at `scales[i]` (0 leaves it
/// out). Each must be an adapter of the context's model. On error the
/// context's list is unchanged.
#[no_mangle]
pub extern "C" fn llama_set_adapters_lora(
    ctx: *mut llama_context,
    adapters: *mut *mut llama_adapter_lora,
    n_adapters: usize,
    scales: *mut f32,
) -> i32 {
    guard("llama_set_adapters_lora", -1, || {
        let c = super::context::ctx_mut(ctx)?;
        if n_adapters > 0 && (adapters.is_null() || scales.is_null()) {
            return Err(Error::invalid("adapters or scales is NULL with n_adapters > 0"));
        }
        if n_adapters > isize::MAX as usize / std::mem::size_of::<*mut llama_adapter_lora>() {
            return Err(Error::invalid(format!("n_adapters {n_adapters} is too large")));
        }
        let model_id = Arc::as_ptr(&c.model) as usize;
        let mut list = Vec::with_capacity(n_adapters);
        for i in 0..n_adapters {
            // SAFETY: the caller passes n_adapters handles and scales (checked
            // non-NULL above).
            let (h, scale) = unsafe { (*adapters.add(i), *scales.add(i)) };
            let adapter = adapter_arc(h).map_err(|e| Error::invalid(format!("adapters[{i}]: {e}")))?;
            if adapter.model_id != model_id {
                return Err(Error::invalid(format!("adapters[{i}] was loaded for another model than the context's")));
            }
            list.push(ActiveLora { adapter, scale });
        }
        c.loras = ActiveLoras::new(list);
        Ok(0)
    })
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
