//! Fuzzes the batch API on a tiny synthetic model ($MINFER_FUZZ_MODEL, made
//! by examples/synth_model.rs: 2 layers, n_embd 64, 512 tokens). Each input
//! makes a context from fuzzed parameters (small n_ctx, n_batch, n_ubatch,
//! n_seq_max, flags), then runs a list of operations: decodes of batches
//! with fuzzed n_tokens, token ids (out of range too), positions (given,
//! automatic or wrong), sequence ids, output flags; the memory calls
//! seq_rm/cp/keep/add/div/clear; reads of logits and embeddings. Every row
//! the library hands out is read in full (ASan checks its size) and must be
//! finite.
//!
//! Input: [context params: 8 bytes] [op, args...]...

#![no_main]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::Input;
use libfuzzer_sys::fuzz_target;
use llama::ffi::batch::{llama_batch_free, llama_batch_get_one, llama_batch_init, llama_decode};
use llama::ffi::context::{
    llama_free, llama_get_embeddings_ith, llama_get_embeddings_seq, llama_get_logits_ith, llama_get_memory,
    llama_init_from_model, llama_n_ctx, llama_set_embeddings,
};
use llama::ffi::memory::{
    llama_memory_can_shift, llama_memory_clear, llama_memory_seq_add, llama_memory_seq_cp, llama_memory_seq_div,
    llama_memory_seq_keep, llama_memory_seq_pos_max, llama_memory_seq_pos_min, llama_memory_seq_rm,
};
use llama::ffi::misc::llama_context_default_params;
use llama::ffi::model::{llama_model_default_params, llama_model_get_vocab, llama_model_load_from_file, llama_model_n_embd};
use llama::ffi::types::{
    enum_llama_flash_attn_type, enum_llama_pooling_type, llama_context, llama_memory_t, llama_model,
};
use llama::ffi::vocab::llama_vocab_n_tokens;

/// Most operations per input, tokens per batch, and n_ctx: keeps one
/// execution in the milliseconds.
const MAX_OPS: usize = 16;
const MAX_BATCH: i32 = 48;

/// The model, loaded on first use; a static, so it stays reachable (no
/// leak report at exit).
static MODEL: AtomicUsize = AtomicUsize::new(0);

fn model() -> *mut llama_model {
    if MODEL.load(Ordering::Relaxed) == 0 {
        let p = llama_model_load_from_file(common::synth_model_path().as_ptr(), llama_model_default_params());
        assert!(!p.is_null(), "cannot load the synthetic model");
        MODEL.store(p as usize, Ordering::Relaxed);
    }
    MODEL.load(Ordering::Relaxed) as *mut llama_model
}

struct Run {
    ctx: *mut llama_context,
    mem: llama_memory_t,
    n_vocab: i32,
    n_embd: i32,
    n_ctx: i32,
    n_seq: i32,
    /// Tokens in the last successful decode (bounds the output index).
    n_outputs: i32,
    embeddings: bool,
}

impl Run {
    fn seq(&self, inp: &mut Input) -> i32 {
        inp.int_around(self.n_seq)
    }
    fn pos(&self, inp: &mut Input) -> i32 {
        inp.int_around(self.n_ctx)
    }

    /// Reads every float of an output row the library handed out.
    fn read_row(&self, p: *const f32, n: i32, what: &str) {
        if p.is_null() {
            return;
        }
        // SAFETY: a non-NULL row from the library holds n floats (ASan
        // checks the claim).
        let row = unsafe { std::slice::from_raw_parts(p, n as usize) };
        assert!(row.iter().all(|x| x.is_finite()), "{what}: a value is not finite");
    }

    fn decode(&mut self, inp: &mut Input) {
        let mode = inp.u8();
        let n_alloc = 1 + i32::from(inp.u8()) % MAX_BATCH;
        let n_seq_alloc = 1 + i32::from(inp.u8() % 4);
        let n_tokens = match inp.u8() {
            0..=219 => 1 + i32::from(inp.u8()) % n_alloc,
            220..=239 => 0,
            _ => -1,
        };
        let b = llama_batch_init(n_alloc, 0, n_seq_alloc);
        common::check("llama_batch_init");
        assert!(!b.token.is_null());
        let seq0 = self.seq(inp);
        let base = llama_memory_seq_pos_max(self.mem, seq0).max(-1).wrapping_add(1);
        let shift = if mode & 8 != 0 { inp.int_around(4) } else { 0 };
        let mut outs: Vec<i32> = Vec::new(); // batch indices with an output
        for i in 0..n_alloc as usize {
            // SAFETY: every array of `b` holds n_alloc entries, seq_id[i]
            // n_seq_alloc of them.
            unsafe {
                *b.token.add(i) = if mode & 16 != 0 { inp.int_around(self.n_vocab) } else { i32::from(inp.u8()) };
                *b.pos.add(i) = base.wrapping_add(i as i32).wrapping_add(shift);
                let k = if mode & 32 != 0 { inp.int_around(n_seq_alloc + 1).clamp(-1, n_seq_alloc) } else { 1 };
                *b.n_seq_id.add(i) = k;
                let ids = *b.seq_id.add(i);
                for s in 0..n_seq_alloc as usize {
                    *ids.add(s) = if s == 0 { seq0 } else { self.seq(inp) };
                }
                let out = inp.u8() & 3 == 0 || i as i32 == n_tokens - 1;
                *b.logits.add(i) = i8::from(out);
                if out && (i as i32) < n_tokens {
                    outs.push(i as i32);
                }
            }
        }
        let mut batch = b;
        batch.n_tokens = n_tokens;
        if mode & 1 != 0 {
            batch.pos = std::ptr::null_mut();
        }
        if mode & 2 != 0 {
            batch.n_seq_id = std::ptr::null_mut();
            batch.seq_id = std::ptr::null_mut();
        }
        if mode & 4 != 0 {
            batch.logits = std::ptr::null_mut();
            outs = if self.embeddings { (0..n_tokens.max(0)).collect() } else { vec![n_tokens - 1] };
        }
        let r = llama_decode(self.ctx, batch);
        common::check("llama_decode");
        llama_batch_free(b);
        common::check("llama_batch_free");
        if r == 0 {
            self.n_outputs = n_tokens;
            for &i in &outs {
                self.read_row(llama_get_logits_ith(self.ctx, i), self.n_vocab, "logits after a decode");
                common::check("llama_get_logits_ith");
            }
        }
    }

    fn decode_one(&mut self, inp: &mut Input) {
        let n = inp.int_around(MAX_BATCH);
        let mut tokens: Vec<i32> = (0..n.clamp(0, MAX_BATCH)).map(|_| inp.int_around(self.n_vocab)).collect();
        let n = n.min(tokens.len() as i32);
        let r = llama_decode(self.ctx, llama_batch_get_one(tokens.as_mut_ptr(), n));
        common::check("llama_decode (batch_get_one)");
        if r == 0 {
            self.n_outputs = if self.embeddings { n } else { 1 };
            self.read_row(llama_get_logits_ith(self.ctx, -1), self.n_vocab, "last logits");
            common::check("llama_get_logits_ith");
        }
    }

    fn op(&mut self, inp: &mut Input) {
        match inp.u8() % 12 {
            0 | 1 => self.decode(inp),
            2 => self.decode_one(inp),
            3 => {
                let (s, p0, p1) = (self.seq(inp), self.pos(inp), self.pos(inp));
                llama_memory_seq_rm(self.mem, s, p0, p1);
            }
            4 => {
                let (a, b, p0, p1) = (self.seq(inp), self.seq(inp), self.pos(inp), self.pos(inp));
                llama_memory_seq_cp(self.mem, a, b, p0, p1);
            }
            5 => llama_memory_seq_keep(self.mem, self.seq(inp)),
            6 => {
                let (s, p0, p1, d) = (self.seq(inp), self.pos(inp), self.pos(inp), inp.int_around(8).wrapping_sub(4));
                llama_memory_seq_add(self.mem, s, p0, p1, d);
            }
            7 => {
                let (s, p0, p1, d) = (self.seq(inp), self.pos(inp), self.pos(inp), inp.int_around(5));
                llama_memory_seq_div(self.mem, s, p0, p1, d);
            }
            8 => llama_memory_clear(self.mem, inp.bool()),
            9 => {
                let i = inp.int_around(self.n_outputs + 1);
                self.read_row(llama_get_logits_ith(self.ctx, i), self.n_vocab, "logits_ith");
                self.read_row(llama_get_embeddings_ith(self.ctx, i), self.n_embd, "embeddings_ith");
                let s = self.seq(inp);
                self.read_row(llama_get_embeddings_seq(self.ctx, s), self.n_embd, "embeddings_seq");
            }
            10 => {
                let s = self.seq(inp);
                let (lo, hi) = (llama_memory_seq_pos_min(self.mem, s), llama_memory_seq_pos_max(self.mem, s));
                assert!(lo <= hi || (lo == -1 && hi == -1), "seq {s}: pos_min {lo} > pos_max {hi}");
                let _ = llama_memory_can_shift(self.mem);
            }
            _ => {
                self.embeddings = inp.bool();
                llama_set_embeddings(self.ctx, self.embeddings);
            }
        }
        common::check("a memory or output call");
    }
}

fuzz_target!(init: {
    common::watch();
    model();
}, |data: &[u8]| {
    let model = model();
    let mut inp = Input::new(data);
    let mut p = llama_context_default_params();
    p.n_ctx = 16 * u32::from(inp.u8() % 17); // 0 (the model's 512) .. 256
    p.n_batch = u32::from(inp.u8() % 80);
    p.n_ubatch = u32::from(inp.u8() % 80);
    p.n_seq_max = u32::from(inp.u8() % 6);
    p.n_threads = 1;
    p.n_threads_batch = 1;
    let flags = inp.u8();
    p.embeddings = flags & 1 != 0;
    p.kv_unified = flags & 2 != 0;
    p.swa_full = flags & 4 != 0;
    p.flash_attn_type = enum_llama_flash_attn_type(i32::from((flags >> 3) & 3) - 1);
    p.pooling_type = enum_llama_pooling_type(i32::from(inp.u8() % 7) - 1);
    let _ = inp.u8(); // reserved
    let ctx = llama_init_from_model(model, p);
    common::check("llama_init_from_model");
    if ctx.is_null() {
        return;
    }
    let vocab = llama_model_get_vocab(model);
    let mut run = Run {
        ctx,
        mem: llama_get_memory(ctx),
        n_vocab: llama_vocab_n_tokens(vocab),
        n_embd: llama_model_n_embd(model),
        n_ctx: llama_n_ctx(ctx) as i32,
        n_seq: p.n_seq_max.max(1) as i32,
        n_outputs: 0,
        embeddings: p.embeddings,
    };
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        run.op(&mut inp);
    }
    llama_free(ctx);
    common::check("llama_free");
});
