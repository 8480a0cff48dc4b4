//! An inference context: the parameters a model runs with, its KV cache,
//! and the outputs (logits) of the last decode.
//!
//! A context holds a strong count on its model, so the caller may free the
//! model first; the model's memory goes with the last context.

pub mod attention;
pub mod attention_mha;
pub mod batch;
pub mod cvec;
pub mod dump;
pub mod encoder;
pub mod forward;
pub mod kv_cache;
pub mod lora;
pub mod moe;
pub mod ops;
pub mod pooling;
pub mod rope;
pub mod state;
pub mod workspace;

use crate::error::{Error, Result};
use crate::model::{Model, MAX_SEQ};
use batch::Batch;
use kv_cache::{KvCache, KvType};
use std::ops::ControlFlow;
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
    /// ggml_type values of the K and V cache (F16 = 1, F32 = 0).
    pub type_k: i32,
    pub type_v: i32,
    /// llama_pooling_type (-1: the model's).
    pub pooling_type: i32,
    /// llama_attention_type (-1: the model's, causal for these models).
    pub attention_type: i32,
    /// llama_flash_attn_type (-1 AUTO, 0 DISABLED, 1 ENABLED). Only saved
    /// states see it: the reference stores V transposed without flash attention.
    pub flash_attn_type: i32,
    /// Whether gemma3's SWA cache has n_ctx cells (the reference's default)
    /// or only the window's; only saved states see it.
    pub swa_full: bool,
    pub no_perf: bool,
    /// The rope and YaRN fields.
    pub rope: rope::RopeRequest,
}

/// The resolved parameters, following the reference's rules (llama_context's
/// constructor): n_ctx from the model when 0 and padded to 256, n_batch
/// capped by n_ctx (causal attention only), n_ubatch capped by n_batch,
/// n_ctx split per sequence.
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
    /// `causal`: the context's attention (non-causal contexts take batches
    /// longer than their context, as the reference's).
    pub fn resolve(p: &ContextParams, n_ctx_train: u32, causal: bool) -> Result<CParams> {
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
        let n_batch = if causal { requested.min(p.n_batch) } else { p.n_batch };
        let n_ubatch = n_batch.min(if p.n_ubatch == 0 { p.n_batch } else { p.n_ubatch });
        let mut n_ctx = pad_256(requested)?;
        let n_ctx_seq = if p.kv_unified {
            n_ctx
        } else {
            let per_seq = pad_256(n_ctx / n_seq_max)?;
            if per_seq == 0 {
                return Err(Error::invalid("n_ctx / n_seq_max is 0"));
            }
            let total =
                per_seq.checked_mul(n_seq_max).ok_or_else(|| Error::invalid("n_ctx is too large for n_seq_max"))?;
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

/// The pools of `llama_attach_threadpool`: the ggml pools' addresses (they
/// name the shared pools) and the minfer pools standing for them.
pub struct Attached {
    pub ggml: (usize, usize),
    pub one: Arc<crate::kernels::ThreadPool>,
    pub batch: Arc<crate::kernels::ThreadPool>,
}

/// The pool a ubatch of `n_tokens` runs on: an attached one
/// (`llama_attach_threadpool`: `threadpool` for one token, `threadpool_batch`
/// for more, as the reference picks them), else the context's own.
fn pool_for<'a>(
    attached: &'a Option<Attached>,
    own: &'a crate::kernels::ThreadPool,
    n_tokens: usize,
) -> &'a crate::kernels::ThreadPool {
    match attached {
        Some(a) if n_tokens == 1 => &a.one,
        Some(a) => &a.batch,
        None => own,
    }
}

/// Pooling of embeddings (llama_pooling_type values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    None = 0,
    Mean = 1,
    Cls = 2,
    Last = 3,
    /// The classifier head's scores (`pooling.rs`).
    Rank = 4,
}

/// Performance counters, as the reference keeps them.
#[derive(Debug, Clone, Default)]
pub struct Perf {
    pub t_start_us: i64,
    pub t_load_us: i64,
    pub t_p_eval_us: i64,
    pub t_eval_us: i64,
    pub n_p_eval: i32,
    pub n_eval: i32,
    pub evaluated_once: bool,
}

/// What a decode call reports, beside errors (llama_decode's return codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeStatus {
    Ok = 0,
    /// No room in the KV cache for the batch; nothing was changed.
    NoKvSlot = 1,
    /// The abort callback stopped it; the ubatches done before the one it
    /// stopped stay in the cache.
    Aborted = 2,
}

fn kv_type(ggml_type: i32, which: &str) -> Result<KvType> {
    match ggml_type {
        1 => Ok(KvType::F16),
        0 => Ok(KvType::F32),
        t => Err(Error::invalid(format!("{which} = {t} is not supported (F16 = 1 and F32 = 0 are)"))),
    }
}

pub struct Context {
    pub model: Arc<Model>,
    pub cparams: CParams,
    /// The rope parameters of the non-sliding layers (the model's with the
    /// caller's overrides).
    pub rope: rope::RopeCfg,
    /// `llama_set_adapter_cvec`'s directions, once set.
    pub cvec: Option<cvec::ControlVector>,
    /// `llama_set_adapters_lora`'s adapters, in the order they are added.
    pub loras: lora::ActiveLoras,
    pub kv: KvCache,
    /// Logits of the outputs of the last decode, [max(n_outputs, 1)][n_vocab]
    /// (rows past n_outputs are zeros).
    pub logits: Vec<f32>,
    /// For each token of the last batch, its row in `logits`, or -1.
    pub output_ids: Vec<i32>,
    pub n_outputs: usize,
    /// Asked before each layer; true stops the decode (llama_set_abort_callback).
    pub abort: Option<Box<dyn FnMut() -> bool + Send>>,
    /// Whether embeddings are extracted (llama_set_embeddings).
    pub embeddings: bool,
    pub causal: bool,
    pub pooling: Pooling,
    /// Per-output embeddings of the last decode, [max(n_outputs, 1)][n_embd].
    pub embd: Vec<f32>,
    /// Pooled embeddings of the last decode, by sequence.
    pub embd_seq: std::collections::BTreeMap<i32, Vec<f32>>,
    pub no_perf: bool,
    pub perf: Perf,
    /// Worker threads of the matmuls (max of n_threads and n_threads_batch).
    pub pool: crate::kernels::ThreadPool,
    /// Pools shared with other contexts (`llama_attach_threadpool`): the
    /// one-token ubatches' and the others', used instead of `pool` until
    /// detached (as the reference picks `threadpool` or `threadpool_batch`
    /// by the ubatch's token count).
    pub attached: Option<Attached>,
    /// Whether attention runs the flash-attention numerics
    /// (`flash_attn_type` AUTO or ENABLED; the reference's AUTO enables it on
    /// the CPU) or those of the plain KQ / softmax / KQV graph (DISABLED).
    pub flash_attn: bool,
    /// Whether saved states carry V transposed, as the reference's cache
    /// does when flash attention is disabled (our rows are the same either way).
    pub v_trans: bool,
    /// llama_context_params.swa_full (which cells a whole state's SWA part lists).
    pub swa_full: bool,
    /// K/V bytes kept by llama_state_seq_get_data_ext with
    /// LLAMA_STATE_SEQ_FLAGS_ON_DEVICE, by sequence (the reference keeps them
    /// in device buffers; the caller's buffer gets only the metadata).
    pub device_states: std::collections::HashMap<i32, Vec<u8>>,
    /// The forward pass's buffers, kept across decodes.
    pub workspace: workspace::Workspace,
}

impl Context {
    pub fn new(model: Arc<Model>, params: &ContextParams) -> Result<Context> {
        if model.vocab_only || model.weights.is_none() {
            return Err(Error::invalid("the model was loaded with vocab_only and cannot run"));
        }
        let hp = &model.hparams;
        // (unspecified: the model's, as its file says)
        let causal = match params.attention_type {
            -1 => hp.causal_attn,
            0 => true,
            1 => false,
            a => return Err(Error::invalid(format!("attention_type {a} is not valid"))),
        };
        let cparams = CParams::resolve(params, hp.n_ctx_train, causal)?;
        let rope = rope::RopeCfg::resolve(&params.rope, hp, cparams.n_ctx_seq)?;
        let (type_k, type_v) = (kv_type(params.type_k, "type_k")?, kv_type(params.type_v, "type_v")?);
        let k_width = hp.n_head_kv.iter().map(|&h| (h * hp.n_embd_head_k) as usize).collect();
        let v_width = hp.n_head_kv.iter().map(|&h| (h * hp.n_embd_head_v) as usize).collect();
        // (an encoder keeps no memory: its cache has no cells)
        let n_cells = if model.is_encoder() { 0 } else { cparams.n_ctx as usize };
        let kv = KvCache::new(n_cells, k_width, v_width, type_k, type_v)?;
        if params.pooling_type != -1 && params.pooling_type != hp.pooling_type {
            log_warn!(
                "llama_init_from_model: model default pooling_type is [{}], but [{}] was specified",
                hp.pooling_type,
                params.pooling_type
            );
        }
        let pooling = match if params.pooling_type == -1 { hp.pooling_type } else { params.pooling_type } {
            -1 | 0 => Pooling::None,
            1 => Pooling::Mean,
            2 => Pooling::Cls,
            3 => Pooling::Last,
            4 => Pooling::Rank,
            p => return Err(Error::invalid(format!("pooling_type {p} is not valid"))),
        };
        let (logits, embd) = (vec![0.0; hp.n_vocab as usize], vec![0.0; hp.n_embd as usize]);
        Ok(Context {
            model,
            kv,
            logits,
            output_ids: Vec::new(),
            n_outputs: 0,
            abort: None,
            embeddings: cparams.embeddings,
            causal,
            pooling,
            embd,
            embd_seq: Default::default(),
            no_perf: params.no_perf,
            perf: Perf { t_start_us: crate::clock::time_us(), ..Perf::default() },
            pool: crate::kernels::ThreadPool::new(cparams.n_threads.max(cparams.n_threads_batch) as usize)?,
            attached: None,
            flash_attn: params.flash_attn_type != 0,
            v_trans: params.flash_attn_type == 0,
            swa_full: params.swa_full,
            device_states: Default::default(),
            workspace: Default::default(),
            cparams,
            rope,
            cvec: None,
            loras: lora::ActiveLoras::default(),
        })
    }

    /// Decodes a batch: validates it, splits it into ubatches of n_ubatch
    /// tokens, places each in free KV cells and runs the forward pass.
    /// `abort` is asked before each layer of each ubatch.
    pub fn decode(&mut self, batch: &Batch, abort: &mut dyn FnMut() -> bool) -> Result<DecodeStatus> {
        if self.model.is_encoder() {
            // (the reference: "cannot decode batches with this context
            // (calling encode() instead)")
            return self.encode(batch, abort);
        }
        let n_vocab = self.model.hparams.n_vocab as usize;
        if batch.tokens.len() > self.cparams.n_batch as usize {
            return Err(Error::invalid(format!(
                "n_tokens = {} exceeds n_batch = {}",
                batch.tokens.len(),
                self.cparams.n_batch
            )));
        }
        batch.validate(n_vocab, self.cparams.n_seq_max as usize, &self.kv)?;
        // All cells are found up front, so a full cache changes nothing.
        let Some(slots) = self.kv.find_slots(batch.tokens.len()) else {
            return Ok(DecodeStatus::NoKvSlot);
        };

        let t0 = crate::clock::time_us();
        let n_embd = self.model.hparams.n_embd as usize;
        // Pooled embeddings need every token's hidden state.
        let pooled = self.embeddings && self.pooling != Pooling::None;
        let mut tokens = batch.tokens.clone();
        if pooled && tokens.iter().any(|t| !t.output) {
            log_warn!(
                "llama_decode: embeddings required but some input tokens were not marked as outputs -> overriding"
            );
            tokens.iter_mut().for_each(|t| t.output = true);
        }
        let n_out = tokens.iter().filter(|t| t.output).count();
        // At least one row each, as the reference's buffers (llama_get_logits
        // returns a valid pointer even when nothing is an output).
        self.logits.clear();
        self.logits.resize(n_out.max(1) * n_vocab, 0.0);
        self.embd.clear();
        self.embd.resize(n_out.max(1) * n_embd, 0.0);
        self.embd_seq.clear();
        self.output_ids = vec![-1; tokens.len()];
        let mut row = 0;
        for (i, t) in tokens.iter().enumerate() {
            if t.output {
                self.output_ids[i] = row;
                row += 1;
            }
        }
        self.n_outputs = n_out;

        let weights = self.model.weights.as_ref().expect("checked at creation");
        let n_ubatch = self.cparams.n_ubatch as usize;
        let mut out_row = 0;
        if tokens.iter().any(|t| t.id.is_none()) && batch.embd.len() != tokens.len() * n_embd {
            return Err(Error::invalid(format!(
                "embedding batch has {} values, want {}x{n_embd}",
                batch.embd.len(),
                tokens.len()
            )));
        }
        for (i, (chunk, cells)) in tokens.chunks(n_ubatch).zip(slots.chunks(n_ubatch)).enumerate() {
            // [len][n_embd] input embeddings of this ubatch (none for token ids)
            let inp_embd = batch.embd.get(i * n_ubatch * n_embd..(i * n_ubatch + chunk.len()) * n_embd).unwrap_or(&[]);
            for (t, &c) in chunk.iter().zip(cells) {
                let cell = &mut self.kv.cells[c];
                cell.pos = t.pos;
                cell.seqs.clear();
                for &s in &t.seqs {
                    cell.seqs.add(s as usize);
                }
            }
            let n = chunk.iter().filter(|t| t.output).count();
            let logits = &mut self.logits[out_row * n_vocab..(out_row + n) * n_vocab];
            let embd = &mut self.embd[out_row * n_embd..(out_row + n) * n_embd];
            let pool = pool_for(&self.attached, &self.pool, chunk.len());
            let step = forward::forward(
                pool,
                &self.model,
                weights,
                &mut self.kv,
                &mut self.workspace,
                chunk,
                inp_embd,
                cells,
                forward::AttnMode {
                    causal: self.causal,
                    flash: self.flash_attn,
                    threads: match (&self.attached, chunk.len()) {
                        (Some(_), _) => pool.n_threads(),
                        (None, 1) => self.cparams.n_threads as usize,
                        (None, _) => self.cparams.n_threads_batch as usize,
                    },
                },
                &self.rope,
                self.cvec.as_ref(),
                &self.loras,
                embd,
                logits,
                abort,
            );
            if !matches!(step, Ok(ControlFlow::Continue(()))) {
                // As the reference: the failed or aborted ubatch leaves the
                // cache, the ubatches before it stay, and only their outputs
                // can be read.
                for &c in cells {
                    self.kv.cells[c].seqs.clear();
                }
                self.truncate_outputs(out_row);
                return step.map(|_| DecodeStatus::Aborted);
            }
            out_row += n;
        }
        if pooled {
            self.pool_outputs(&tokens, self.causal)?;
        }
        self.count_perf(tokens.len(), t0);
        Ok(DecodeStatus::Ok)
    }

    /// Runs an encoder on a batch (`llama_encode`; `llama_decode` of an
    /// encoder comes here too, as in the reference): every token an output,
    /// the whole batch one ubatch, attention over the batch alone whatever
    /// the context's causal setting; then the pooling.
    pub fn encode(&mut self, batch: &Batch, abort: &mut dyn FnMut() -> bool) -> Result<DecodeStatus> {
        if !self.model.is_encoder() {
            return Err(Error::invalid("the model has no encoder (decoder-only models use llama_decode)"));
        }
        let n_embd = self.model.hparams.n_embd as usize;
        batch.validate_ids(self.model.hparams.n_vocab as usize, self.cparams.n_seq_max as usize)?;
        let nt = batch.tokens.len();
        if nt > self.cparams.n_ubatch as usize {
            // (the reference asserts "encoder requires n_ubatch >= n_tokens")
            return Err(Error::invalid(format!(
                "an encoder takes the batch in one ubatch: n_tokens = {nt} exceeds n_ubatch = {}",
                self.cparams.n_ubatch
            )));
        }
        if batch.tokens.iter().any(|t| t.id.is_none()) && batch.embd.len() != nt * n_embd {
            return Err(Error::invalid(format!("embedding batch has {} values, want {nt}x{n_embd}", batch.embd.len())));
        }
        let t0 = crate::clock::time_us();
        let mut tokens = batch.tokens.clone();
        tokens.iter_mut().for_each(|t| t.output = true);
        self.embd_seq.clear();
        self.embd.clear();
        self.embd.resize(nt * n_embd, 0.0);
        // (no logits: one row of zeros, as a decode without outputs leaves)
        self.logits.clear();
        self.logits.resize(self.model.hparams.n_vocab as usize, 0.0);
        self.output_ids = (0..nt as i32).collect();
        self.n_outputs = nt;
        let weights = self.model.weights.as_ref().expect("checked at creation");
        let pool = pool_for(&self.attached, &self.pool, nt);
        let enc = self.model.arch.and_then(|f| f.block.encoder);
        let pre_norm = enc.is_some_and(|e| e.pre_norm);
        let enc_cvec = self.cvec.as_ref().filter(|_| enc.is_some_and(|e| e.cvec));
        let step = if pre_norm {
            // (the scratch cache out of the workspace while the pass uses both)
            let mut kv = self.workspace.enc_kv.take();
            let step = encoder::encode_pre_norm(
                pool,
                &self.model,
                weights,
                &mut self.workspace,
                &mut kv,
                &tokens,
                &batch.embd,
                self.flash_attn,
                &self.rope,
                enc_cvec,
                &self.loras,
                &mut self.embd,
                abort,
            );
            self.workspace.enc_kv = kv;
            step
        } else {
            encoder::encode(
                pool,
                &self.model,
                weights,
                &mut self.workspace,
                &tokens,
                &batch.embd,
                self.flash_attn,
                &self.rope,
                &self.loras,
                &mut self.embd,
                abort,
            )
        };
        match step {
            Ok(ControlFlow::Continue(())) => {}
            Ok(ControlFlow::Break(())) => {
                self.truncate_outputs(0);
                return Ok(DecodeStatus::Aborted);
            }
            Err(e) => {
                self.truncate_outputs(0);
                return Err(e);
            }
        }
        if self.embeddings {
            // (the pooling inputs read the context's setting; the graph ran
            // without a causal mask)
            self.pool_outputs(&tokens, false)?;
        }
        self.count_perf(nt, t0);
        Ok(DecodeStatus::Ok)
    }

    /// Keeps the first `n` output rows of the last decode readable.
    fn truncate_outputs(&mut self, n: usize) {
        self.n_outputs = n;
        for r in &mut self.output_ids {
            if *r >= n as i32 {
                *r = -1;
            }
        }
    }

    /// Changes the thread counts, resizing the worker pool when needed.
    pub fn set_n_threads(&mut self, n_threads: i32, n_threads_batch: i32) -> Result<()> {
        if n_threads <= 0 || n_threads_batch <= 0 {
            return Err(Error::invalid(format!(
                "n_threads ({n_threads}) and n_threads_batch ({n_threads_batch}) must be positive"
            )));
        }
        let n = n_threads.max(n_threads_batch) as usize;
        if n != self.pool.n_threads() {
            self.pool = crate::kernels::ThreadPool::new(n)?;
        }
        self.cparams.n_threads = n_threads;
        self.cparams.n_threads_batch = n_threads_batch;
        Ok(())
    }

    /// Pools the per-token embeddings of the last batch by sequence
    /// (`pooling.rs`); `causal`: the attention the batch ran with.
    /// Without pooling, every token's row goes through the dense modules
    /// instead, if the model has them (gemma-embedding).
    fn pool_outputs(&mut self, tokens: &[batch::Token], causal: bool) -> Result<()> {
        let pool = pool_for(&self.attached, &self.pool, tokens.len());
        let mm = forward::Mm { pool, model: &self.model, loras: &self.loras };
        if self.pooling == Pooling::None {
            let rows = std::mem::take(&mut self.embd);
            self.embd = pooling::dense_out(&mm, &mut self.workspace.acts, rows, tokens.len())?;
        }
        self.embd_seq = pooling::pool(self.pooling, causal, &self.embd, tokens, &mm, &mut self.workspace.acts)?;
        Ok(())
    }

    /// The reference's counters: single-token calls count as generation,
    /// longer ones as prompt; times only without no_perf.
    fn count_perf(&mut self, n_tokens: usize, t0: i64) {
        let dt = crate::clock::time_us() - t0;
        if n_tokens == 1 {
            if !self.no_perf {
                self.perf.t_eval_us += dt;
            }
            self.perf.n_eval += 1;
        } else {
            if !self.no_perf {
                self.perf.t_p_eval_us += dt;
            }
            self.perf.n_p_eval += n_tokens as i32;
        }
        if !self.perf.evaluated_once {
            self.perf.t_load_us = crate::clock::time_us() - self.perf.t_start_us;
            self.perf.evaluated_once = true;
        }
    }

    /// Moves the positions of `seq`'s cells in [p0, p1) through `f`, and
    /// re-rotates their K rows by the change so that attention sees them at
    /// their new positions. A cell moved below 0 is dropped, as in the
    /// reference; so is one moved past i32::MAX (where the reference's int
    /// addition wraps to a negative position, which drops it).
    pub fn shift_positions(&mut self, seq: i32, p0: i32, p1: i32, f: impl Fn(i32) -> i64) -> Result<()> {
        let hp = &self.model.hparams;
        let family = self.model.arch.ok_or_else(|| Error::invalid("the model cannot run"))?;
        let neox = family.rope == crate::model::arch::Rope::Neox;
        let (hd, n_rot) = (hp.n_embd_head_k as usize, hp.n_rot as usize);
        // the K rows are rotated as the forward pass rotated them (llama3's
        // rope factors included); not at all without rope (the reference's
        // has_rope: rope type none, granite's switch; smollm3's NoPE layers
        // are rotated, as the reference does)
        let rotate = family.rope != crate::model::arch::Rope::None && hp.use_rope;
        let rope_freqs = self.model.weights.as_ref().and_then(|w| w.rope_factors(self.rope.long_factors));
        let factors: Option<&[f32]> =
            rope_freqs.and_then(|w| self.model.vectors.get(&(w.file, w.info.offset))).map(Vec::as_slice);
        let mut head = vec![0f32; hd];
        // each layer's rope arguments, once (not per cell)
        let args: Vec<_> = (0..self.kv.k.len()).map(|il| self.rope.layer(hp, il)).collect();
        for c in 0..self.kv.n_cells() {
            let cell = self.kv.cells[c];
            if cell.is_empty() || !cell.seqs.has(seq as usize) || cell.pos < p0 || cell.pos >= p1 {
                continue;
            }
            let Some(new) = i32::try_from(f(cell.pos)).ok().filter(|&p| p >= 0) else {
                self.kv.cells[c].seqs.clear();
                continue;
            };
            let delta = new - cell.pos; // both in [0, i32::MAX]
            self.kv.cells[c].pos = new;
            if delta == 0 || !rotate {
                continue;
            }
            for (il, args) in args.iter().enumerate() {
                let base = self.kv.k_width[il];
                for g in 0..base / hd {
                    let at = c * base + g * hd;
                    KvCache::read(&self.kv.k[il], at, &mut head);
                    ops::rope(&mut head, delta, n_rot, args, factors, neox);
                    self.kv.k[il].write(at, &head);
                }
            }
        }
        Ok(())
    }

    /// The logits row of batch token `i` (negative: from the last output).
    pub fn logits_ith(&self, i: i32) -> Result<&[f32]> {
        let n_vocab = self.model.hparams.n_vocab as usize;
        let row = self.output_row(i)?;
        self.logits
            .get(row * n_vocab..(row + 1) * n_vocab)
            .ok_or_else(|| Error::invalid(format!("no logits for index {i}")))
    }

    /// The output row of batch token `i` (negative: counted from the last
    /// output), as llama_get_logits_ith / llama_get_embeddings_ith map it.
    pub fn output_row(&self, i: i32) -> Result<usize> {
        let row = if i < 0 {
            let j = i64::from(self.n_outputs as i32) + i64::from(i);
            if j < 0 {
                return Err(Error::invalid(format!("negative index {i} out of range [-{}, -1]", self.n_outputs)));
            }
            j as usize
        } else {
            match self.output_ids.get(i as usize) {
                None => {
                    return Err(Error::invalid(format!("out of range [0, {})", self.output_ids.len())));
                }
                Some(&r) if r < 0 => return Err(Error::invalid(format!("batch.logits[{i}] != true"))),
                Some(&r) => r as usize,
            }
        };
        if row >= self.n_outputs {
            return Err(Error::invalid(format!("no output {row} (the last decode had {})", self.n_outputs)));
        }
        Ok(row)
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
        ContextParams {
            n_ctx,
            n_batch,
            n_ubatch,
            n_seq_max,
            n_threads: 4,
            n_threads_batch: 4,
            kv_unified: false,
            embeddings: false,
            type_k: 1,
            type_v: 1,
            pooling_type: -1,
            attention_type: -1,
            flash_attn_type: -1,
            swa_full: true,
            no_perf: true,
            rope: rope::RopeRequest::default(),
        }
    }

    #[test]
    fn resolves_like_the_reference() {
        let c = CParams::resolve(&params(512, 2048, 512, 1), 8192, true).unwrap();
        assert_eq!((c.n_ctx, c.n_ctx_seq, c.n_batch, c.n_ubatch), (512, 512, 512, 512));
        // (without a causal mask the batch is not capped by the context)
        let c = CParams::resolve(&params(512, 2048, 4096, 1), 8192, false).unwrap();
        assert_eq!((c.n_ctx, c.n_batch, c.n_ubatch), (512, 2048, 2048));
        let c = CParams::resolve(&params(0, 2048, 512, 1), 8192, true).unwrap();
        assert_eq!((c.n_ctx, c.n_batch), (8192, 2048));
        let c = CParams::resolve(&params(1000, 64, 0, 1), 8192, true).unwrap();
        assert_eq!((c.n_ctx, c.n_batch, c.n_ubatch), (1024, 64, 64));
        let c = CParams::resolve(&params(1000, 2048, 512, 3), 8192, true).unwrap();
        assert_eq!((c.n_ctx, c.n_ctx_seq), (1536, 512));
        assert!(CParams::resolve(&params(512, 0, 0, 1), 8192, true).is_err());
        assert!(CParams::resolve(&params(0, 512, 512, 1), 0, true).is_err());
        assert!(CParams::resolve(&params(512, 512, 512, 257), 8192, true).is_err());
        assert!(CParams::resolve(&params(u32::MAX, 512, 512, 1), 8192, true).is_err());
    }
}
