//! llama_model_quantize and its default parameters. The work is in
//! `model::quantize`; this file decodes the C parameters.

use super::boundary::*;
use super::model::{c_path, read_override_list};
use super::types::*;
use crate::error::{Error, Result};
use crate::model::quantize::{quantize, QuantizeParams};
use std::ffi::{c_char, CStr};
use std::ptr;

#[no_mangle]
pub extern "C" fn llama_model_quantize_default_params() -> llama_model_quantize_params {
    let d = QuantizeParams::default();
    llama_model_quantize_params {
        nthread: d.nthread,
        ftype: enum_llama_ftype(d.ftype),
        output_tensor_type: enum_ggml_type(d.output_tensor_type as i32),
        token_embedding_type: enum_ggml_type(d.token_embedding_type as i32),
        allow_requantize: d.allow_requantize,
        quantize_output_tensor: d.quantize_output_tensor,
        only_copy: d.only_copy,
        pure: d.pure,
        keep_split: d.keep_split,
        dry_run: d.dry_run,
        imatrix: ptr::null(),
        kv_overrides: ptr::null(),
        tt_overrides: ptr::null(),
        prune_layers: ptr::null(),
        max_buf_size: d.max_buf_size,
    }
}

/// The importance-matrix list: entries up to the one whose name is NULL.
fn read_imatrix(mut p: *const llama_model_imatrix_data) -> Result<Vec<(String, Vec<f32>)>> {
    let mut out = Vec::new();
    loop {
        // SAFETY: a non-NULL list is terminated by an entry with a NULL name
        // (the reference's contract); we stop there.
        let e = unsafe { &*p };
        if e.name.is_null() {
            return Ok(out);
        }
        // SAFETY: a non-NULL name is a C string.
        let name = unsafe { CStr::from_ptr(e.name) }.to_string_lossy().into_owned();
        let data = if e.size == 0 {
            Vec::new()
        } else if e.data.is_null() {
            return Err(Error::invalid(format!("imatrix entry '{name}' has {} values but data is NULL", e.size)));
        } else {
            // SAFETY: the caller's entry holds `size` floats at `data`.
            unsafe { std::slice::from_raw_parts(e.data, e.size) }.to_vec()
        };
        out.push((name, data));
        // SAFETY: not the terminator, so the next entry exists.
        p = unsafe { p.add(1) };
    }
}

/// Tensor-type overrides: entries up to the one whose pattern is NULL.
fn read_tensor_types(mut p: *const llama_model_tensor_override) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    loop {
        // SAFETY: a non-NULL list is terminated by an entry with a NULL pattern.
        let e = unsafe { &*p };
        if e.pattern.is_null() {
            return out;
        }
        // SAFETY: a non-NULL pattern is a C string.
        let pat = unsafe { CStr::from_ptr(e.pattern) }.to_string_lossy().into_owned();
        out.push((pat, e.r#type.0 as u32));
        // SAFETY: not the terminator, so the next entry exists.
        p = unsafe { p.add(1) };
    }
}

/// Layer numbers up to the terminating -1.
fn read_prune_layers(mut p: *const i32) -> Vec<i32> {
    let mut out = Vec::new();
    loop {
        // SAFETY: a non-NULL list is terminated by -1 (the reference's contract).
        let v = unsafe { *p };
        if v == -1 {
            return out;
        }
        out.push(v);
        // SAFETY: not the terminator, so the next value exists.
        p = unsafe { p.add(1) };
    }
}

fn decode(c: &llama_model_quantize_params) -> Result<QuantizeParams> {
    Ok(QuantizeParams {
        nthread: c.nthread,
        ftype: c.ftype.0,
        output_tensor_type: c.output_tensor_type.0 as u32,
        token_embedding_type: c.token_embedding_type.0 as u32,
        allow_requantize: c.allow_requantize,
        quantize_output_tensor: c.quantize_output_tensor,
        only_copy: c.only_copy,
        pure: c.pure,
        keep_split: c.keep_split,
        dry_run: c.dry_run,
        imatrix: if c.imatrix.is_null() { None } else { Some(read_imatrix(c.imatrix)?) },
        kv_overrides: read_override_list(c.kv_overrides)?,
        tt_overrides: if c.tt_overrides.is_null() { Vec::new() } else { read_tensor_types(c.tt_overrides) },
        prune_layers: if c.prune_layers.is_null() { Vec::new() } else { read_prune_layers(c.prune_layers) },
        max_buf_size: c.max_buf_size,
    })
}

/// Returns 0 on success, 1 on failure (with a logged message).
#[no_mangle]
pub extern "C" fn llama_model_quantize(
    fname_inp: *const c_char,
    fname_out: *const c_char,
    params: *const llama_model_quantize_params,
) -> u32 {
    guard("llama_model_quantize", 1, || {
        let inp = c_path(fname_inp, "fname_inp")?;
        let out = c_path(fname_out, "fname_out")?;
        let p = decode(deref(params, "params")?)?;
        quantize(&inp, &out, &p).map_err(|e| Error::model(format!("failed to quantize: {e}")))?;
        Ok(0)
    })
}
