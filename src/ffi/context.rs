//! Contexts: creation, parameters, getters, outputs, performance counters.

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use crate::context::{Context, ContextParams};
use crate::error::{Error, Result};
use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::Arc;

/// A caller's abort callback and its data, callable from Rust.
struct AbortCallback(unsafe extern "C" fn(*mut c_void) -> bool, *mut c_void);

// SAFETY: the data pointer is only handed back to the caller's callback,
// which the reference's API lets run on the decoding thread.
unsafe impl Send for AbortCallback {}

impl AbortCallback {
    fn ask(&self) -> bool {
        // SAFETY: the caller registered this function for this data.
        unsafe { (self.0)(self.1) }
    }
}

pub(crate) fn abort_closure(cb: ggml_abort_callback, data: *mut c_void) -> Option<Box<dyn FnMut() -> bool + Send>> {
    let cb = AbortCallback(cb?, data);
    Some(Box::new(move || cb.ask()))
}

/// The context behind a handle, or an error if it is NULL.
pub(crate) fn ctx_ref<'a>(ctx: *const llama_context) -> Result<&'a Context> {
    deref(ctx.cast::<Context>(), "ctx")
}

/// The context behind a handle, for a call that changes it.
pub(crate) fn ctx_mut<'a>(ctx: *mut llama_context) -> Result<&'a mut Context> {
    // SAFETY: a non-NULL handle is a live Box<Context> the caller owns and
    // does not use from another thread during this call (the C API's rule).
    unsafe { ctx.cast::<Context>().as_mut() }.ok_or_else(|| Error::invalid("ctx is NULL"))
}

/// A getter on a context: NULL-checked, inside the boundary.
fn with_ctx<T>(name: &str, fail: T, ctx: *const llama_context, f: impl FnOnce(&Context) -> T) -> T {
    guard(name, fail, || Ok(f(ctx_ref(ctx)?)))
}

// ---------------------------------------------------------------------------
// Thread pools
// ---------------------------------------------------------------------------
//
// A `ggml_threadpool_t` comes from ggml's `ggml_threadpool_new` (ggml-cpu.h,
// outside llama.h: programs reach it by linking ggml or through the CPU
// backend's proc addresses, as llama-bench does). Its structure is ggml's
// and private, so minfer cannot run work on its threads, nor read its size
// (`ggml_threadpool_get_n_threads` is declared but not defined at the pinned
// commit); what it takes from it is its identity. With a pool attached the
// reference computes on the context's own thread counts (`n_threads`, at
// most the pool's), and so does minfer: the first context attached to a
// given ggml pool creates a minfer pool of its thread count
// (max(n_threads, n_threads_batch)), and every context attached to the same
// ggml pool with the same count shares it: one set of workers, submissions
// serialized. The ggml pool's own threads stay idle (they park after
// ggml's polling). Results do not depend on the pool (a decode's bits are
// the same at any thread count).

/// The minfer pools standing for ggml pools: (ggml pool address, threads,
/// the pool while a context uses it).
static SHARED_POOLS: parking_lot::Mutex<Vec<(usize, usize, std::sync::Weak<crate::kernels::ThreadPool>)>> =
    parking_lot::const_mutex(Vec::new());

/// The minfer pool of `n` threads shared by the contexts attached to `tp`.
fn shared_pool(tp: usize, n: usize) -> Result<Arc<crate::kernels::ThreadPool>> {
    let mut pools = SHARED_POOLS.lock();
    pools.retain(|(_, _, p)| p.strong_count() > 0);
    if let Some(p) = pools.iter().find(|(a, t, _)| *a == tp && *t == n).and_then(|(_, _, p)| p.upgrade()) {
        return Ok(p);
    }
    let p = Arc::new(crate::kernels::ThreadPool::new(n)?);
    pools.push((tp, n, Arc::downgrade(&p)));
    Ok(p)
}

/// Attaches the minfer pools standing for the ggml pools at `tp` and `tpb`
/// (0: `tp`'s) to `c`, of its thread count.
fn attach(c: &mut Context, tp: usize, tpb: usize) -> Result<()> {
    let n = c.pool.n_threads();
    let one = shared_pool(tp, n)?;
    let batch = if tpb == 0 { Arc::clone(&one) } else { shared_pool(tpb, n)? };
    c.attached = Some(crate::context::Attached { ggml: (tp, tpb), one, batch });
    Ok(())
}

/// Attaches ggml thread pools: `threadpool` for one-token ubatches,
/// `threadpool_batch` (or `threadpool` when NULL) for the others. Contexts
/// attached to the same ggml pool with the same thread count share one set
/// of worker threads. NULL `threadpool` detaches.
#[no_mangle]
pub extern "C" fn llama_attach_threadpool(
    ctx: *mut llama_context,
    threadpool: ggml_threadpool_t,
    threadpool_batch: ggml_threadpool_t,
) {
    guard("llama_attach_threadpool", (), || {
        let c = ctx_mut(ctx)?;
        if threadpool.is_null() {
            c.attached = None;
            return Ok(());
        }
        attach(c, threadpool as usize, threadpool_batch as usize)
    })
}

/// Back to the context's own pool.
#[no_mangle]
pub extern "C" fn llama_detach_threadpool(ctx: *mut llama_context) {
    guard("llama_detach_threadpool", (), || {
        ctx_mut(ctx)?.attached = None;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_init_from_model(model: *mut llama_model, params: llama_context_params) -> *mut llama_context {
    guard("llama_init_from_model", ptr::null_mut(), || {
        let model = super::model::model_arc(model)?;
        let request = ContextParams {
            n_ctx: params.n_ctx,
            n_batch: params.n_batch,
            n_ubatch: params.n_ubatch,
            n_seq_max: params.n_seq_max,
            n_threads: params.n_threads,
            n_threads_batch: params.n_threads_batch,
            kv_unified: params.kv_unified,
            embeddings: params.embeddings,
            type_k: params.type_k.0,
            type_v: params.type_v.0,
            pooling_type: params.pooling_type.0,
            attention_type: params.attention_type.0,
            flash_attn_type: params.flash_attn_type.0,
            swa_full: params.swa_full,
            no_perf: params.no_perf,
            rope: crate::context::rope::RopeRequest {
                scaling_type: params.rope_scaling_type.0,
                freq_base: params.rope_freq_base,
                freq_scale: params.rope_freq_scale,
                ext_factor: params.yarn_ext_factor,
                attn_factor: params.yarn_attn_factor,
                beta_fast: params.yarn_beta_fast,
                beta_slow: params.yarn_beta_slow,
                orig_ctx: params.yarn_orig_ctx,
            },
        };
        let mut ctx = Context::new(model, &request)?;
        ctx.abort = abort_closure(params.abort_callback, params.abort_callback_data);
        Ok(Box::into_raw(Box::new(ctx)).cast::<llama_context>())
    })
}

#[no_mangle]
pub extern "C" fn llama_new_context_with_model(
    model: *mut llama_model,
    params: llama_context_params,
) -> *mut llama_context {
    llama_init_from_model(model, params)
}

#[no_mangle]
pub extern "C" fn llama_free(ctx: *mut llama_context) {
    guard("llama_free", (), || {
        if !ctx.is_null() {
            // SAFETY: a non-NULL handle came from Box::into_raw in
            // llama_init_from_model and is freed once (the C API's contract).
            drop(unsafe { Box::from_raw(ctx.cast::<Context>()) });
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_n_ctx(ctx: *const llama_context) -> u32 {
    with_ctx("llama_n_ctx", 0, ctx, |c| c.cparams.n_ctx)
}

#[no_mangle]
pub extern "C" fn llama_n_ctx_seq(ctx: *const llama_context) -> u32 {
    with_ctx("llama_n_ctx_seq", 0, ctx, |c| c.cparams.n_ctx_seq)
}

#[no_mangle]
pub extern "C" fn llama_n_batch(ctx: *const llama_context) -> u32 {
    with_ctx("llama_n_batch", 0, ctx, |c| c.cparams.n_batch)
}

#[no_mangle]
pub extern "C" fn llama_n_ubatch(ctx: *const llama_context) -> u32 {
    with_ctx("llama_n_ubatch", 0, ctx, |c| c.cparams.n_ubatch)
}

#[no_mangle]
pub extern "C" fn llama_n_seq_max(ctx: *const llama_context) -> u32 {
    with_ctx("llama_n_seq_max", 0, ctx, |c| c.cparams.n_seq_max)
}

#[no_mangle]
pub extern "C" fn llama_n_rs_seq(ctx: *const llama_context) -> u32 {
    with_ctx("llama_n_rs_seq", 0, ctx, |_| 0)
}

#[no_mangle]
pub extern "C" fn llama_get_model(ctx: *const llama_context) -> *const llama_model {
    with_ctx("llama_get_model", ptr::null(), ctx, |c| Arc::as_ptr(&c.model).cast::<llama_model>())
}

#[no_mangle]
pub extern "C" fn llama_get_memory(ctx: *const llama_context) -> llama_memory_t {
    // (an encoder has no memory: NULL, as the reference's)
    with_ctx("llama_get_memory", ptr::null_mut(), ctx, |c| match c.model.is_encoder() {
        true => ptr::null_mut(),
        false => ptr::from_ref(c).cast_mut().cast::<llama_memory_i>(),
    })
}

#[no_mangle]
pub extern "C" fn llama_pooling_type(ctx: *const llama_context) -> enum_llama_pooling_type {
    let unspecified = enum_llama_pooling_type(llama_pooling_type::LLAMA_POOLING_TYPE_UNSPECIFIED as c_int);
    with_ctx("llama_pooling_type", unspecified, ctx, |c| enum_llama_pooling_type(c.pooling as c_int))
}

#[no_mangle]
pub extern "C" fn llama_set_n_threads(ctx: *mut llama_context, n_threads: i32, n_threads_batch: i32) {
    guard("llama_set_n_threads", (), || {
        let c = ctx_mut(ctx)?;
        c.set_n_threads(n_threads, n_threads_batch)?;
        // attached pools follow the context's thread count (the reference
        // computes on n_threads with a pool attached too)
        match c.attached.as_ref().map(|a| a.ggml) {
            Some((tp, tpb)) => attach(c, tp, tpb),
            None => Ok(()),
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_n_threads(ctx: *mut llama_context) -> i32 {
    with_ctx("llama_n_threads", -1, ctx, |c| c.cparams.n_threads)
}

#[no_mangle]
pub extern "C" fn llama_n_threads_batch(ctx: *mut llama_context) -> i32 {
    with_ctx("llama_n_threads_batch", -1, ctx, |c| c.cparams.n_threads_batch)
}

#[no_mangle]
pub extern "C" fn llama_set_embeddings(ctx: *mut llama_context, embeddings: bool) {
    guard("llama_set_embeddings", (), || {
        ctx_mut(ctx)?.embeddings = embeddings;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_set_causal_attn(ctx: *mut llama_context, causal_attn: bool) {
    guard("llama_set_causal_attn", (), || {
        ctx_mut(ctx)?.causal = causal_attn;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_get_causal_attn(ctx: *const llama_context) -> bool {
    with_ctx("llama_get_causal_attn", false, ctx, |c| c.causal)
}

#[no_mangle]
pub extern "C" fn llama_set_warmup(ctx: *mut llama_context, warmup: bool) {
    // A warmup run touches every weight in the reference's graph; minfer's
    // weights are mapped and its decode path is the same either way.
    guard("llama_set_warmup", (), || ctx_mut(ctx).map(|_| ()))
}

#[no_mangle]
pub extern "C" fn llama_set_abort_callback(
    ctx: *mut llama_context,
    abort_callback: ggml_abort_callback,
    abort_callback_data: *mut c_void,
) {
    guard("llama_set_abort_callback", (), || {
        let c = ctx_mut(ctx)?;
        c.abort = abort_closure(abort_callback, abort_callback_data);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_synchronize(ctx: *mut llama_context) {
    // Every call finishes its work before it returns: nothing to wait for.
    guard("llama_synchronize", (), || ctx_mut(ctx).map(|_| ()))
}

#[no_mangle]
pub extern "C" fn llama_get_logits(ctx: *mut llama_context) -> *mut f32 {
    guard("llama_get_logits", ptr::null_mut(), || {
        // As the reference: the buffer, whether or not the last decode (if
        // any) had outputs; its first row is zeros then.
        Ok(ctx_mut(ctx)?.logits.as_mut_ptr())
    })
}

#[no_mangle]
pub extern "C" fn llama_get_logits_ith(ctx: *mut llama_context, i: i32) -> *mut f32 {
    guard("llama_get_logits_ith", ptr::null_mut(), || {
        let c = ctx_mut(ctx)?;
        let row = c.logits_ith(i).map_err(|e| Error::invalid(format!("invalid logits id {i}: {e}")))?;
        Ok(row.as_ptr().cast_mut())
    })
}

#[no_mangle]
pub extern "C" fn llama_get_embeddings(ctx: *mut llama_context) -> *mut f32 {
    guard("llama_get_embeddings", ptr::null_mut(), || {
        let c = ctx_mut(ctx)?;
        if !c.embeddings {
            return Err(Error::invalid("no embeddings: enable them with llama_set_embeddings and decode"));
        }
        Ok(c.embd.as_mut_ptr())
    })
}

#[no_mangle]
pub extern "C" fn llama_get_embeddings_ith(ctx: *mut llama_context, i: i32) -> *mut f32 {
    guard("llama_get_embeddings_ith", ptr::null_mut(), || {
        let c = ctx_mut(ctx)?;
        if !c.embeddings {
            return Err(Error::invalid("embeddings are disabled (llama_set_embeddings)"));
        }
        let n_embd = c.model.hparams.n_embd as usize;
        let row = c.output_row(i).map_err(|e| Error::invalid(format!("invalid embeddings id {i}: {e}")))?;
        Ok(c.embd[row * n_embd..].as_mut_ptr())
    })
}

#[no_mangle]
pub extern "C" fn llama_get_embeddings_seq(ctx: *mut llama_context, seq_id: llama_seq_id) -> *mut f32 {
    guard("llama_get_embeddings_seq", ptr::null_mut(), || {
        let c = ctx_mut(ctx)?;
        match c.embd_seq.get_mut(&seq_id) {
            Some(v) => Ok(v.as_mut_ptr()),
            None => Err(Error::invalid(format!(
                "no pooled embedding for sequence {seq_id} (pooling {:?}, embeddings {})",
                c.pooling, c.embeddings
            ))),
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_perf_context(ctx: *const llama_context) -> llama_perf_context_data {
    with_ctx("llama_perf_context", llama_perf_context_data::default(), ctx, |c| {
        let p = &c.perf;
        llama_perf_context_data {
            t_start_ms: 1e-3 * p.t_start_us as f64,
            t_load_ms: 1e-3 * p.t_load_us as f64,
            t_p_eval_ms: 1e-3 * p.t_p_eval_us as f64,
            t_eval_ms: 1e-3 * p.t_eval_us as f64,
            n_p_eval: p.n_p_eval.max(1),
            n_eval: p.n_eval.max(1),
            n_reused: 0,
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_perf_context_print(ctx: *const llama_context) {
    let d = llama_perf_context(ctx);
    guard("llama_perf_context_print", (), || {
        ctx_ref(ctx)?;
        let t_end_ms = 1e-3 * crate::clock::time_us() as f64;
        log_info!("llama_perf_context_print:        load time = {:10.2} ms", d.t_load_ms);
        log_info!(
            "llama_perf_context_print: prompt eval time = {:10.2} ms / {:5} tokens ({:8.2} ms per token, {:8.2} tokens per second)",
            d.t_p_eval_ms,
            d.n_p_eval,
            d.t_p_eval_ms / f64::from(d.n_p_eval),
            1e3 / d.t_p_eval_ms * f64::from(d.n_p_eval)
        );
        log_info!(
            "llama_perf_context_print:        eval time = {:10.2} ms / {:5} runs   ({:8.2} ms per token, {:8.2} tokens per second)",
            d.t_eval_ms,
            d.n_eval,
            d.t_eval_ms / f64::from(d.n_eval),
            1e3 / d.t_eval_ms * f64::from(d.n_eval)
        );
        log_info!(
            "llama_perf_context_print:       total time = {:10.2} ms / {:5} tokens",
            t_end_ms - d.t_start_ms,
            d.n_p_eval + d.n_eval
        );
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_perf_context_reset(ctx: *mut llama_context) {
    guard("llama_perf_context_reset", (), || {
        let c = ctx_mut(ctx)?;
        c.perf = crate::context::Perf { t_start_us: crate::clock::time_us(), ..Default::default() };
        Ok(())
    })
}
