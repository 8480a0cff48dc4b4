//! An inference context: the parameters a model runs with and, as the
//! forward-pass issue lands, its KV cache and outputs.
//!
//! A context holds a strong count on its model, so the caller may free the
//! model first; the model's memory goes with the last context.

use crate::error::{Error, Result};
use crate::model::{Model, MAX_SEQ};
use std::sync::Arc;

/// The caller's request (decoded from llama_context_params).
#[derive(Debug, Clone)]
pub struct ContextParams {
    pub n_ctx: u32,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub n_seq_max: u32,
    pub n_threads: i32,
    pub n_threads_batch: i32,
    pub kv_unified: bool,
    pub embeddings: bool,
}

/// The resolved parameters, following the reference's rules (llama_context's
/// constructor): n_ctx from the model when 0 and padded to 256, n_batch
/// capped by n_ctx, n_ubatch capped by n_batch, n_ctx split per sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct CParams {
    pub n_ctx: u32,
    pub n_ctx_seq: u32,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub n_seq_max: u32,
    pub n_threads: i32,
    pub n_threads_batch: i32,
    pub kv_unified: bool,
    pub embeddings: bool,
}

fn pad_256(n: u32) -> Result<u32> {
    n.checked_add(255).map(|v| v / 256 * 256).ok_or_else(|| Error::invalid(format!("n_ctx {n} is too large")))
}

impl CParams {
    pub fn resolve(p: &ContextParams, n_ctx_train: u32) -> Result<CParams> {
        if p.n_batch == 0 && p.n_ubatch == 0 {
            return Err(Error::invalid("n_batch and n_ubatch cannot both be zero"));
        }
        if p.n_ctx == 0 && n_ctx_train == 0 {
            return Err(Error::invalid("n_ctx and the model's n_ctx_train cannot both be zero"));
        }
        let n_seq_max = p.n_seq_max.max(1);
        if n_seq_max as usize > MAX_SEQ {
            return Err(Error::invalid(format!("n_seq_max must be <= {MAX_SEQ}, got {n_seq_max}")));
        }
        if p.n_threads <= 0 || p.n_threads_batch <= 0 {
            return Err(Error::invalid(format!(
                "n_threads ({}) and n_threads_batch ({}) must be positive",
                p.n_threads, p.n_threads_batch
            )));
        }
        let requested = if p.n_ctx == 0 { n_ctx_train } else { p.n_ctx };
        let n_batch = requested.min(p.n_batch);
        let n_ubatch = n_batch.min(if p.n_ubatch == 0 { p.n_batch } else { p.n_ubatch });
        let mut n_ctx = pad_256(requested)?;
        let n_ctx_seq = if p.kv_unified {
            n_ctx
        } else {
            let per_seq = pad_256(n_ctx / n_seq_max)?;
            if per_seq == 0 {
                return Err(Error::invalid("n_ctx / n_seq_max is 0"));
            }
            let total = per_seq
                .checked_mul(n_seq_max)
                .ok_or_else(|| Error::invalid("n_ctx is too large for n_seq_max"))?;
            if total != n_ctx {
                log_warn!("llama_init_from_model: n_ctx is not divisible by n_seq_max - rounding to {total}");
                n_ctx = total;
            }
            per_seq
        };
        if n_batch == 0 || n_ubatch == 0 {
            return Err(Error::invalid("n_batch and n_ubatch must be positive"));
        }
        Ok(CParams {
            n_ctx,
            n_ctx_seq,
            n_batch,
            n_ubatch,
            n_seq_max,
            n_threads: p.n_threads,
            n_threads_batch: p.n_threads_batch,
            kv_unified: p.kv_unified,
            embeddings: p.embeddings,
        })
    }
}

pub struct Context {
    pub model: Arc<Model>,
    pub cparams: CParams,
}

impl Context {
    pub fn new(model: Arc<Model>, params: &ContextParams) -> Result<Context> {
        if model.vocab_only {
            return Err(Error::invalid("the model was loaded with vocab_only and cannot run"));
        }
        let cparams = CParams::resolve(params, model.hparams.n_ctx_train)?;
        Ok(Context { model, cparams })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if Arc::strong_count(&self.model) == 1 {
            log_info!("llama_free: the last context of a freed model is gone; releasing the model");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(n_ctx: u32, n_batch: u32, n_ubatch: u32, n_seq_max: u32) -> ContextParams {
        ContextParams { n_ctx, n_batch, n_ubatch, n_seq_max, n_threads: 4, n_threads_batch: 4, kv_unified: false, embeddings: false }
    }

    #[test]
    fn resolves_like_the_reference() {
        let c = CParams::resolve(&params(512, 2048, 512, 1), 8192).unwrap();
        assert_eq!((c.n_ctx, c.n_ctx_seq, c.n_batch, c.n_ubatch), (512, 512, 512, 512));
        let c = CParams::resolve(&params(0, 2048, 512, 1), 8192).unwrap();
        assert_eq!((c.n_ctx, c.n_batch), (8192, 2048));
        let c = CParams::resolve(&params(1000, 64, 0, 1), 8192).unwrap();
        assert_eq!((c.n_ctx, c.n_batch, c.n_ubatch), (1024, 64, 64));
        let c = CParams::resolve(&params(1000, 2048, 512, 3), 8192).unwrap();
        assert_eq!((c.n_ctx, c.n_ctx_seq), (1536, 512));
        assert!(CParams::resolve(&params(512, 0, 0, 1), 8192).is_err());
        assert!(CParams::resolve(&params(0, 512, 512, 1), 0).is_err());
        assert!(CParams::resolve(&params(512, 512, 512, 257), 8192).is_err());
        assert!(CParams::resolve(&params(u32::MAX, 512, 512, 1), 8192).is_err());
    }
}
