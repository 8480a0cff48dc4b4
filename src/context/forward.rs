//! The transformer forward pass, one ubatch at a time: embeddings → blocks
//! (norm, q/k/v, rope, attention over the KV cache, output projection,
//! residual, norm, gated FFN, residual) → final norm → output head. It walks
//! the model family's recipe (`model::arch::Block`): the families differ
//! only in the switches read from it here.
//!
//! Buffers are [n_tokens][width] row-major f32.

use super::attention::{attention, visible_cells, AttnShape};
use super::batch::Token;
use super::cvec::ControlVector;
use super::dump;
use super::kv_cache::KvCache;
use super::lora::ActiveLoras;
use super::moe::moe_ffn;
use super::ops;
use super::rope::{RopeArgs, RopeCfg};
use super::workspace::{sized, Workspace};
use crate::error::Result;
use crate::kernels::aligned::AlignedF32;
use crate::kernels::{self, Activations, ThreadPool};
use crate::model::arch::{AttnScale, Block, EmbdScale, Ffn, LogitScale, Norm, Parallel, QkNorm, Rope};
use crate::model::weights::{DenseFfn, FfnWeights, LayerWeights, Qkv, Scales, Weight, Weights};
use crate::model::Model;
use std::ops::ControlFlow;

/// The bytes of a weight: its load-time copy where it has one (float
/// matrices, `model/repacked.rs`), else its file's mapping.
pub(super) fn bytes<'m>(model: &'m Model, w: &Weight) -> &'m [u8] {
    model.repacked.copy(w).unwrap_or_else(|| model.files[w.file].tensor_data(&w.info))
}

/// A small weight (norm, bias, rope factors) as f32: read at load
/// (`Model::vectors`, which holds every one the forward pass reads).
pub(super) fn vector<'m>(model: &'m Model, w: &Weight) -> Result<&'m [f32]> {
    model
        .vectors
        .get(&(w.file, w.info.offset))
        .map(Vec::as_slice)
        .ok_or_else(|| crate::Error::invalid(format!("tensor '{}' was not read at load", w.info.name)))
}

/// A weight as the kernels take it, with its load-time tiles if it has them.
pub(super) fn kw<'m>(model: &'m Model, w: &Weight) -> Result<kernels::Weights<'m>> {
    let kw = kernels::Weights::new(bytes(model, w), w.ty(), w.rows(), w.cols())?;
    match model.repacked.tiles(w) {
        Some(t) => kw.with_tiles(t),
        None => Ok(kw),
    }
}

/// Keeps only the rows `rows` (ascending) of `buf` ([n][width]), in place.
fn keep_rows(buf: &mut AlignedF32, width: usize, rows: &[usize]) {
    for (i, &t) in rows.iter().enumerate() {
        // t >= i: each row moves down (or stays) over rows already copied
        buf.copy_within(t * width..(t + 1) * width, i * width);
    }
    buf.truncate(rows.len() * width);
}

/// What every projection reads besides its input: the pool, the model, the
/// context's LoRA adapters.
pub struct Mm<'a> {
    pub pool: &'a ThreadPool,
    pub model: &'a Model,
    pub loras: &'a ActiveLoras,
}

/// Projections that read the same input, quantized once into `acts` (q/k/v,
/// gate/up; one matrix for the others): the first `nt * rows_i` values of
/// `ys[i]` become W_i·x for each of the `nt` rows of x ([nt][cols] →
/// [nt][rows_i]; the buffers may be longer: `workspace::sized`), plus each
/// LoRA adapter's update of W_i (the reference's `build_lora_mm`).
pub(super) fn linear<const N: usize>(
    mm: &Mm,
    acts: &mut Vec<Activations>,
    ws: [&Weight; N],
    x: &[f32],
    nt: usize,
    ys: [&mut AlignedF32; N],
) -> Result<()> {
    let kws = ws.iter().map(|w| kw(mm.model, w)).collect::<Result<Vec<_>>>()?;
    let mut outs: Vec<&mut [f32]> = ys.into_iter().zip(&ws).map(|(y, w)| sized(y, nt * w.rows())).collect();
    kernels::matmul_siblings_reusing(kernels::kernels(), mm.pool, acts, &kws, x, nt, &mut outs)?;
    for (w, y) in ws.iter().zip(outs.iter_mut()) {
        apply_scale(mm.model, |s| &s.attn, w, y)?;
    }
    if !mm.loras.is_empty() {
        for (w, y) in ws.iter().zip(outs) {
            mm.loras.add_to_product(mm.pool, &w.info.name, x, nt, y)?;
        }
    }
    Ok(())
}

/// y = W·x (+ the LoRA updates) into `y` ([nt][rows], sized by the caller).
pub(super) fn linear_into(
    mm: &Mm,
    acts: &mut Vec<Activations>,
    w: &Weight,
    x: &[f32],
    nt: usize,
    y: &mut [f32],
) -> Result<()> {
    kernels::matmul_siblings_reusing(kernels::kernels(), mm.pool, acts, &[kw(mm.model, w)?], x, nt, &mut [&mut *y])?;
    mm.loras.add_to_product(mm.pool, &w.info.name, x, nt, y)
}

/// `y *= s` for a projection with a `*.scale` tensor in `map` of the
/// model's scales (`ggml_mul` by its one value): attention's in `linear`,
/// before the LoRA updates, as the reference's `build_lora_mm`; the FFN's
/// after its bias, as its `build_ffn`.
fn apply_scale(
    model: &Model,
    map: impl Fn(&Scales) -> &std::collections::HashMap<String, Weight>,
    w: &Weight,
    y: &mut [f32],
) -> Result<()> {
    // (no name hashed in the usual case: a model without scales)
    let found = model.weights.as_ref().map(|ws| map(&ws.scales)).filter(|m| !m.is_empty());
    if let Some(s) = found.and_then(|m| m.get(&w.info.name)) {
        let s = vector(model, s)?[0];
        y.iter_mut().for_each(|v| *v *= s);
    }
    Ok(())
}

/// `x += post_norm(y) · scale` ([n][width] each; `y` normed in place by
/// `post_norm` if there is one: gemma3; `scale` 0 is none: granite's
/// residual multiplier), rows in parallel.
#[allow(clippy::too_many_arguments)]
fn add_residual(
    pool: &ThreadPool,
    x: &mut [f32],
    y: &mut [f32],
    width: usize,
    post_norm: Option<&[f32]>,
    scale: f32,
    eps: f32,
) -> Result<()> {
    let per_task = pool.light_rows_per_task(x.len() / width);
    if let Some(w) = post_norm {
        pool.run_rows(y, width, per_task, &|_, row| ops::rms_norm_mul(row, width, w, eps))?;
    }
    let y = &*y;
    pool.run_rows(x, width, per_task, &|i, row| {
        let y = &y[i * width..(i + 1) * width];
        if scale != 0.0 {
            // (ggml_scale, then ggml_add: two roundings)
            row.iter_mut().zip(y).for_each(|(xi, yi)| *xi += yi * scale);
        } else {
            row.iter_mut().zip(y).for_each(|(xi, yi)| *xi += yi);
        }
    })
}

/// A norm of the family's kind with its epsilon: RMS (`f_norm_rms_eps`)
/// or LayerNorm (`f_norm_eps`).
#[derive(Clone, Copy)]
struct NormKind {
    kind: Norm,
    eps: f32,
}

/// `h = norm(x) * w (+ b)` ([n][width] each) with a norm weight, else a
/// copy of `x` (olmo2's blocks read their input unnormed); rows in
/// parallel.
#[allow(clippy::too_many_arguments)]
fn pre_norm(
    pool: &ThreadPool,
    model: &Model,
    norm: NormKind,
    x: &[f32],
    h: &mut AlignedF32,
    width: usize,
    w: Option<&Weight>,
    b: Option<&Weight>,
) -> Result<()> {
    let Some(w) = w else {
        sized(h, x.len()).copy_from_slice(x);
        return Ok(());
    };
    let w = vector(model, w)?;
    let b = b.map(|b| vector(model, b)).transpose()?;
    let h = sized(h, x.len());
    pool.run_rows(h, width, pool.light_rows_per_task(x.len() / width), &|i, row| {
        row.copy_from_slice(&x[i * width..(i + 1) * width]);
        match norm.kind {
            Norm::Rms => ops::rms_norm_mul(row, width, w, norm.eps),
            Norm::Layer => ops::layer_norm(row, width, w, b, norm.eps),
        }
    })
}

/// Copies columns `from..from + dst_width` of each of the `n` rows of `src`
/// ([n][src_width]) to `dst` ([n][dst_width]): one part of a fused
/// projection's output.
pub(super) fn split_cols(src: &[f32], src_width: usize, from: usize, dst: &mut [f32], n: usize) {
    let w = dst.len() / n.max(1);
    for (t, d) in dst.chunks_exact_mut(w).enumerate() {
        d.copy_from_slice(&src[t * src_width + from..][..w]);
    }
}

pub(super) fn add_bias(model: &Model, y: &mut [f32], b: Option<&Weight>) -> Result<()> {
    if let Some(b) = b {
        let b = vector(model, b)?;
        for row in y.chunks_exact_mut(b.len()) {
            for (v, bi) in row.iter_mut().zip(b) {
                *v += bi;
            }
        }
    }
    Ok(())
}

/// `x += dir` ([n][width]) for the control vector's direction of layer
/// `il`, if it has one (the reference's build_cvec after each layer).
fn add_cvec(x: &mut [f32], width: usize, cvec: Option<&ControlVector>, il: usize) {
    if let Some(dir) = cvec.and_then(|c| c.for_layer(il)) {
        for row in x.chunks_exact_mut(width) {
            row.iter_mut().zip(dir).for_each(|(v, d)| *v += d);
        }
    }
}

/// The FFN up to its down projection, for the `nr` rows of `input`
/// ([nr][n_embd]): gate and up (split or fused, + biases), the activation;
/// `gate` then holds the hidden rows [nr][n_ff]. Returns n_ff.
#[allow(clippy::too_many_arguments)]
pub(super) fn ffn_hidden(
    mm: &Mm,
    acts: &mut Vec<Activations>,
    lw: &DenseFfn,
    recipe: &Block,
    input: &[f32],
    nr: usize,
    gate: &mut AlignedF32,
    up: &mut AlignedF32,
    fused: &mut AlignedF32,
    il: usize,
) -> Result<usize> {
    let (pool, model) = (mm.pool, mm.model);
    let n_ff = lw.down.cols();
    if recipe.ffn == Ffn::Gelu {
        // not gated: gelu(up · x + b), in `gate`
        linear(mm, acts, [&lw.up], input, nr, [&mut *gate])?;
        let g = &mut gate[..nr * n_ff];
        add_bias(model, g, lw.up_b.as_ref())?;
        apply_scale(model, |s| &s.ffn, &lw.up, g)?;
        dump::tensor("ffn_up", Some(il), g, n_ff);
        pool.run_rows(g, n_ff, pool.light_rows_per_task(nr), &|_, row| ops::gelu(row))?;
        dump::tensor("ffn_gelu", Some(il), g, n_ff);
        return Ok(n_ff);
    }
    // (a fused up's bias of 2 * n_ff values)
    let wide_up_b = lw.up_b.as_ref().filter(|b| lw.gate.is_none() && b.info.n_elements() == 2 * n_ff as u64);
    match &lw.gate {
        Some(wg) => linear(mm, acts, [wg, &lw.up], input, nr, [&mut *gate, &mut *up])?,
        None => {
            // one matmul [nr][gate | up] (phi3), split; a bias as wide
            // (jina-bert-v2) added before
            linear(mm, acts, [&lw.up], input, nr, [&mut *fused])?;
            if let Some(b) = wide_up_b {
                add_bias(model, &mut fused[..nr * 2 * n_ff], Some(b))?;
            }
            split_cols(fused, 2 * n_ff, 0, sized(gate, nr * n_ff), nr);
            split_cols(fused, 2 * n_ff, n_ff, sized(up, nr * n_ff), nr);
        }
    }
    // gate, up [nr][n_ff]
    let (gate, up) = (&mut gate[..nr * n_ff], &mut up[..nr * n_ff]);
    if wide_up_b.is_none() {
        add_bias(model, up, lw.up_b.as_ref())?;
    }
    apply_scale(model, |s| &s.ffn, &lw.up, up)?;
    add_bias(model, gate, lw.gate_b.as_ref())?;
    if let Some(wg) = &lw.gate {
        apply_scale(model, |s| &s.ffn, wg, gate)?;
    }
    let up = &*up;
    if dump::enabled() {
        dump::tensor("ffn_gate", Some(il), gate, n_ff);
        dump::tensor("ffn_up", Some(il), up, n_ff);
    }
    // the activation in place of the gate, row by row (as
    // ggml_vec_swiglu_f32 runs)
    pool.run_rows(gate, n_ff, pool.light_rows_per_task(nr), &|i, g| {
        let u = &up[i * n_ff..(i + 1) * n_ff];
        match recipe.ffn {
            Ffn::GeGlu => ops::geglu(g, u),
            Ffn::ReGlu => ops::reglu(g, u),
            _ => kernels::vecf::swiglu(g, u),
        }
    })?;
    let name = match recipe.ffn {
        Ffn::GeGlu => "ffn_geglu",
        Ffn::ReGlu => "ffn_reglu",
        _ => "ffn_swiglu",
    };
    dump::tensor(name, Some(il), gate, n_ff);
    Ok(n_ff)
}

/// The input rows `x` ([nt][n_embd]): each token's row of `token_embd`
/// (+ the LoRA adapters' updates of it), or the caller's embedding
/// (`inp_embd`: [nt][n_embd] for a batch of embeddings); the reference's
/// `build_inp_embd`.
pub(super) fn input_rows(
    pool: &ThreadPool,
    model: &Model,
    weights: &Weights,
    loras: &ActiveLoras,
    tokens: &[Token],
    inp_embd: &[f32],
    x: &mut AlignedF32,
) -> Result<()> {
    let (nt, n_embd) = (tokens.len(), model.hparams.n_embd as usize);
    // (x alone keeps its exact length, the rows in flight: `keep_rows`
    // shrinks it after the last layer's attention)
    x.resize(nt * n_embd, 0.0);
    let tok_embd = &weights.tok_embd;
    // (a tied output head copied at load serves the embedding rows too, so
    // that its file pages stay released)
    let embd_bytes = bytes(model, tok_embd);
    let row_bytes = embd_bytes.len() / tok_embd.rows();
    let embd_input = tokens.iter().any(|t| t.id.is_none());
    if embd_input && inp_embd.len() != nt * n_embd {
        return Err(crate::Error::invalid(format!(
            "embedding input has {} values, want {nt}x{n_embd}",
            inp_embd.len()
        )));
    }
    for (t, tok) in tokens.iter().enumerate() {
        let xt = &mut x[t * n_embd..(t + 1) * n_embd];
        match tok.id {
            Some(id) => {
                let row = &embd_bytes[id as usize * row_bytes..(id as usize + 1) * row_bytes];
                crate::quant::dequantize_row(tok_embd.ty(), row, xt)?;
            }
            None => xt.copy_from_slice(&inp_embd[t * n_embd..(t + 1) * n_embd]),
        }
    }
    if !embd_input && !loras.is_empty() {
        // the adapters' updates of the token rows (build_inp_embd)
        let ids: Vec<usize> = tokens.iter().map(|t| t.id.unwrap_or(0) as usize).collect();
        loras.add_to_embeddings(pool, &tok_embd.info.name, &ids, x)?;
    }
    Ok(())
}

/// `x[t] += pe[pos of token t]` ([nt][n_embd]): learned positions
/// (ggml_get_rows, ggml_add).
pub(super) fn add_position_rows(model: &Model, pe: &Weight, tokens: &[Token], x: &mut [f32]) -> Result<()> {
    let n_embd = model.hparams.n_embd as usize;
    let pe_bytes = bytes(model, pe);
    let pe_row = pe_bytes.len() / pe.rows();
    let mut row = vec![0f32; n_embd];
    for (t, tok) in tokens.iter().enumerate() {
        let p = usize::try_from(tok.pos).ok().filter(|&p| p < pe.rows()).ok_or_else(|| {
            crate::Error::invalid(format!(
                "position {} is outside the model's {} learned positions (n_ctx_train)",
                tok.pos,
                pe.rows()
            ))
        })?;
        crate::quant::dequantize_row(pe.ty(), &pe_bytes[p * pe_row..(p + 1) * pe_row], &mut row)?;
        x[t * n_embd..(t + 1) * n_embd].iter_mut().zip(&row).for_each(|(v, r)| *v += r);
    }
    Ok(())
}

/// q, k and v of the `nt` rows of `hn` into `q`, `k`, `v` ([nt][width]
/// each, in the first values of the buffers), with their biases: one
/// matmul per projection, or one fused `attn_qkv` split in three.
#[allow(clippy::too_many_arguments)]
pub(super) fn project_qkv(
    mm: &Mm,
    acts: &mut Vec<Activations>,
    lw: &LayerWeights,
    hn: &[f32],
    nt: usize,
    widths: (usize, usize, usize),
    q: &mut AlignedF32,
    k: &mut AlignedF32,
    v: &mut AlignedF32,
    fused: &mut AlignedF32,
) -> Result<()> {
    let (q_width, k_width, v_width) = widths;
    let model = mm.model;
    match &lw.qkv {
        Qkv::Split { wq, wk, wv } => linear(mm, acts, [wq, wk, wv], hn, nt, [&mut *q, &mut *k, &mut *v])?,
        Qkv::Fused { w, b } => {
            // one matmul [nt][q | k | v] (+ its bias), split into the three buffers
            linear(mm, acts, [w], hn, nt, [&mut *fused])?;
            let width = w.rows();
            add_bias(model, &mut fused[..nt * width], b.as_ref())?;
            split_cols(fused, width, 0, sized(q, nt * q_width), nt);
            split_cols(fused, width, q_width, sized(k, nt * k_width), nt);
            split_cols(fused, width, q_width + k_width, sized(v, nt * v_width), nt);
        }
    }
    add_bias(model, &mut q[..nt * q_width], lw.bq.as_ref())?;
    add_bias(model, &mut k[..nt * k_width], lw.bk.as_ref())?;
    add_bias(model, &mut v[..nt * v_width], lw.bv.as_ref())
}

/// How the ubatch attends: `causal` false lets a token see every cell of
/// its sequence (later positions included); `flash` picks the reference's
/// flash-attention numerics (`attention.rs`) or those of its plain
/// KQ / softmax / KQV graph (`attention_mha.rs`).
#[derive(Clone, Copy, Debug)]
pub struct AttnMode {
    pub causal: bool,
    pub flash: bool,
    /// The reference's thread count for this ubatch (n_threads for one
    /// token, n_threads_batch for more; an attached pool's own): its
    /// one-token flash attention over 512 cells and more splits the cache
    /// into that many chunks (`attention::split_kv`), which the bits follow.
    pub threads: usize,
}

/// Runs one ubatch. `cells[i]` is the KV cell assigned to `tokens[i]` (its
/// position and sequences are already recorded there). For the tokens
/// flagged for output, in order, writes the final normed hidden state to
/// `embd` ([n_out][n_embd]) and, unless `logits` is empty, the logits
/// ([n_out][n_vocab]).
///
/// `abort` is asked before each layer (the reference asks between graph
/// nodes); `Break` means it said stop and the outputs are incomplete.
/// `ws` holds the intermediates (kept by the context across calls).
#[allow(clippy::too_many_arguments)]
pub fn forward(
    pool: &ThreadPool,
    model: &Model,
    weights: &Weights,
    kv: &mut KvCache,
    ws: &mut Workspace,
    tokens: &[Token],
    inp_embd: &[f32],
    cells: &[usize],
    mode: AttnMode,
    rope: &RopeCfg,
    cvec: Option<&ControlVector>,
    loras: &ActiveLoras,
    embd: &mut [f32],
    logits: &mut [f32],
    abort: &mut dyn FnMut() -> bool,
) -> Result<ControlFlow<()>> {
    let hp = &model.hparams;
    let family = model.arch.ok_or_else(|| crate::Error::invalid("the model cannot run"))?;
    // (modern-bert's variants: the same recipe with the file's activation)
    let varied = Block { ffn: hp.ffn_act.unwrap_or(family.block.ffn), ..family.block };
    let recipe = &varied;
    let nt = tokens.len();
    let n_embd = hp.n_embd as usize;
    let hd_k = hp.n_embd_head_k as usize;
    let hd_v = hp.n_embd_head_v as usize;
    let n_rot = hp.n_rot as usize;
    let eps = hp.f_norm_rms_eps;
    let norm = NormKind {
        kind: recipe.norm,
        eps: match recipe.norm {
            Norm::Rms => hp.f_norm_rms_eps,
            Norm::Layer => hp.f_norm_eps,
        },
    };
    let neox = family.rope == Rope::Neox;
    // (a pre-norm encoder's sliding windows see both ways)
    let symmetric = recipe.encoder.is_some_and(|e| e.swa_symmetric);
    let Workspace { x, h, gate, up, v, fused, ffn_in, layer, acts, moe: moe_buf, .. } = ws;
    let mm = Mm { pool, model, loras };

    // --- embeddings: x [nt][n_embd], the token's row of tok_embd or the
    // caller's embedding (inp_embd: [nt][n_embd] for a batch of embeddings)
    // (x alone keeps its exact length, the rows in flight: `keep_rows`
    // shrinks it after the last layer's attention)
    let embd_input = tokens.iter().any(|t| t.id.is_none());
    input_rows(pool, model, weights, loras, tokens, inp_embd, x)?;
    if let Some(pe) = &weights.pos_embd {
        // learned positions: x += position_embd[pos] (gpt2: ggml_get_rows, ggml_add)
        add_position_rows(model, pe, tokens, x)?;
    }
    if recipe.embd_scale == EmbdScale::All || (recipe.embd_scale == EmbdScale::Tokens && !embd_input) {
        let s = (n_embd as f32).sqrt();
        x.iter_mut().for_each(|v| *v *= s);
    }
    if let Some(enc) = &weights.encoder {
        // a pre-norm encoder's input LayerNorm (modern-bert)
        super::encoder::input_norm(pool, model, enc, x)?;
    }
    if hp.f_embedding_scale != 0.0 {
        // (granite: ggml_scale of every input row)
        x.iter_mut().for_each(|v| *v *= hp.f_embedding_scale);
    }
    let rope_factors = match weights.rope_factors(rope.long_factors) {
        Some(w) => Some(vector(model, w)?),
        None => None,
    };
    // the tokens that want an output, in ubatch order
    let out_rows: Vec<usize> = (0..nt).filter(|&t| tokens[t].output).collect();
    let n_layer = weights.layers.len();
    // rows of x in flight: all tokens, then only the output rows after the
    // last layer's attention (the reference's `inp_out_ids` get_rows: its
    // last FFN runs on those rows alone, and the matmul kernels depend on the
    // row count)
    let mut nr = nt;
    // the cells each token sees, per kind of layer (the cells' positions and
    // sequences do not change during the ubatch)
    let mut visible_full: Option<Vec<Vec<usize>>> = None;
    let mut visible_swa: Option<Vec<Vec<usize>>> = None;
    // the rotary angles of every token ([nt][n_rot / 2]), per layer kind's
    // rope arguments: the same for q and k of every layer of that kind
    // (computed per token, head kind and layer they were ~1 % of a SmolLM2
    // prefill, in sinf/cosf)
    type RopeTable = (RopeArgs, Vec<Vec<(f32, f32)>>);
    let mut rope_tables: Vec<RopeTable> = Vec::new();

    for (il, lw) in weights.layers.iter().enumerate() {
        if abort() {
            return Ok(ControlFlow::Break(()));
        }
        let n_head = hp.n_head[il] as usize;
        let n_head_kv = hp.n_head_kv[il] as usize;
        let swa = hp.is_swa(il);
        let rope_args = rope.layer(hp, il);

        // --- attention (q, k and its output in the FFN's buffers: workspace.rs)
        let parallel = recipe.parallel != Parallel::No;
        // (StableLM 2 12B: a layer without ffn_norm feeds the FFN the
        // attention's normed input, kept as the parallel blocks keep it)
        let ffn_on_attn_input = recipe.ffn_norm_optional && lw.ffn_norm.is_none();
        pre_norm(pool, model, norm, x, h, n_embd, lw.attn_norm.as_ref(), lw.attn_norm_b.as_ref())?;
        if parallel || ffn_on_attn_input {
            // the FFN's input, kept for after the attention: attn_norm(x)
            sized(ffn_in, nt * n_embd).copy_from_slice(&h[..nt * n_embd]);
        }
        if let Some(w2) = &lw.attn_norm_2 {
            // (falcon 40B: the attention reads its own norm of x)
            pre_norm(pool, model, norm, x, h, n_embd, Some(w2), lw.attn_norm_2_b.as_ref())?;
        }
        let hn = &h[..nt * n_embd];
        dump::tensor("attn_norm", Some(il), hn, n_embd);
        let (q_width, k_width, v_width) = (n_head * hd_k, n_head_kv * hd_k, n_head_kv * hd_v);
        let widths = (q_width, k_width, v_width);
        project_qkv(&mm, acts, lw, hn, nt, widths, gate, up, v, fused)?;
        // q [nt][n_head * hd_k], k [nt][n_head_kv * hd_k], v [nt][n_head_kv * hd_v]
        let q = &mut gate[..nt * q_width];
        let k = &mut up[..nt * k_width];
        let vcur = &mut v[..nt * v_width];
        // per token: the heads' norms (qwen3, gemma3), then rope
        let table = match rope_tables.iter().position(|(k, _)| *k == rope_args) {
            Some(i) => i,
            None => {
                let angles = tokens.iter().map(|t| ops::rope_angles(t.pos, n_rot, &rope_args, rope_factors)).collect();
                rope_tables.push((rope_args, angles));
                rope_tables.len() - 1
            }
        };
        let angles = &rope_tables[table].1;
        // (smollm3's NoPE layers: every n_no_rope_layer_step-th attends
        // without rope; granite's switch turns it off everywhere)
        let use_rope = hp.use_rope
            && family.rope != Rope::None
            // (cohere2, exaone4 32B: the global layers attend without rope)
            && (swa || !hp.nope_global)
            && !(recipe.nope_layers && (il + 1) % hp.n_no_rope_layer_step.max(1) as usize == 0);
        for (buf, qk_w) in [(&mut *q, &lw.q_norm), (&mut *k, &lw.k_norm)] {
            let qk_w = qk_w.as_ref().map(|w| vector(model, w)).transpose()?;
            if qk_w.is_none() && !use_rope {
                continue;
            }
            let width = buf.len() / nt;
            // a norm per head, or one over all heads of the token (olmo2)
            let norm_width = if recipe.qk_norm == QkNorm::Whole { width } else { hd_k };
            pool.run_rows(buf, width, pool.light_rows_per_task(nt), &|t, heads| {
                match (&qk_w, recipe.qk_norm) {
                    (Some(w), QkNorm::LayerPerHead) => {
                        // each head its own weights ([head_dim, n_head])
                        for (head, wh) in heads.chunks_exact_mut(hd_k).zip(w.chunks_exact(hd_k)) {
                            ops::layer_norm(head, hd_k, wh, None, norm.eps);
                        }
                    }
                    (Some(w), _) => ops::rms_norm_mul(heads, norm_width, w, eps),
                    (None, _) => {}
                }
                if use_rope {
                    for head in heads.chunks_exact_mut(hd_k) {
                        ops::rope_by(head, &angles[t], neox);
                    }
                }
            })?;
        }
        if hp.f_attn_temp_scale != 0.0 {
            // Llama 4's temperature per position (in f64 as the reference's
            // input, rounded to f32), ggml_mul into q
            let width = q.len() / nt;
            for (t, row) in q.chunks_exact_mut(width).enumerate() {
                let floor = ((tokens[t].pos as f32) / hp.n_attn_temp_floor_scale as f32).floor();
                let s = ((f64::from(floor) + 1.0).ln() * f64::from(hp.f_attn_temp_scale) + 1.0) as f32;
                row.iter_mut().for_each(|v| *v *= s);
            }
        }
        if dump::enabled() {
            dump::tensor("Qcur", Some(il), q, hd_k);
            dump::tensor("Kcur", Some(il), k, hd_k);
            dump::tensor("Vcur", Some(il), vcur, hd_v);
        }
        let kq_scale = match recipe.attn_scale {
            AttnScale::IntoQ => {
                q.iter_mut().for_each(|v| *v *= hp.f_attention_scale);
                1.0
            }
            AttnScale::IntoQByHeadSize => {
                let s = 1.0 / (hd_v as f32).sqrt();
                q.iter_mut().for_each(|v| *v *= s);
                1.0
            }
            AttnScale::InSoftmax if hp.f_attention_scale != 0.0 => hp.f_attention_scale,
            AttnScale::InSoftmax => 1.0 / (hd_k as f32).sqrt(),
        };

        // store k, v in the cache cells of this ubatch
        let (kw, vw) = (kv.k_width[il], kv.v_width[il]);
        for (t, &c) in cells.iter().enumerate() {
            kv.k[il].write(c * kw, &k[t * kw..(t + 1) * kw]);
            kv.v[il].write(c * vw, &vcur[t * vw..(t + 1) * vw]);
        }

        let softcap = if recipe.attn_softcap { hp.f_attn_logit_softcapping } else { 0.0 };
        let shape = AttnShape { n_head, n_head_kv, hd_k, hd_v, kw, vw, kq_scale, softcap };
        let window = if swa { Some(hp.n_swa as i32) } else { None };
        // attn: [nt][n_head * hd_v]
        let visible = match window {
            None => visible_full.get_or_insert_with(|| visible_cells(kv, tokens, mode.causal, None, false)),
            Some(_) => visible_swa.get_or_insert_with(|| visible_cells(kv, tokens, mode.causal, window, symmetric)),
        };
        // (k is in the cache: its buffer takes the output)
        let sinks = lw.attn_sinks.as_ref().map(|w| vector(model, w)).transpose()?;
        attention(pool, kv, il, visible, q, shape, sinks, None, (mode.flash, mode.threads), layer, up)?;
        let attn = &up[..nt * n_head * hd_v];
        dump::tensor("kqv_out", Some(il), attn, n_head * hd_v);
        // o [nt][n_embd] in `h` (the normed input is consumed)
        linear(&mm, acts, [&lw.wo], attn, nt, [&mut *h])?;
        add_bias(model, &mut h[..nt * n_embd], lw.bo.as_ref())?;
        dump::tensor("attn_out", Some(il), &h[..nt * n_embd], n_embd);
        if il + 1 == n_layer && out_rows.len() < nt && !recipe.all_rows_last_layer {
            if out_rows.is_empty() {
                return Ok(ControlFlow::Continue(()));
            }
            keep_rows(x, n_embd, &out_rows);
            keep_rows(h, n_embd, &out_rows);
            if parallel || ffn_on_attn_input {
                keep_rows(ffn_in, n_embd, &out_rows);
            }
            nr = out_rows.len();
        }
        let o = &mut h[..nr * n_embd];
        if parallel {
            // --- feed-forward on the same normed input
            let FfnWeights::Dense(ffn) = &lw.ffn else {
                return Err(crate::Error::invalid("experts in a parallel block"));
            };
            let n_ff = ffn_hidden(&mm, acts, ffn, recipe, &ffn_in[..nr * n_embd], nr, gate, up, fused, il)?;
            linear(&mm, acts, [&ffn.down], &gate[..nr * n_ff], nr, [&mut *v])?;
            let f = &mut v[..nr * n_embd];
            add_bias(model, f, ffn.down_b.as_ref())?;
            apply_scale(model, |s| &s.ffn, &ffn.down, f)?;
            dump::tensor("ffn_out", Some(il), f, n_embd);
            if recipe.parallel == Parallel::AttnFfn {
                // x = (attn + ffn) + x
                o.iter_mut().zip(&*f).for_each(|(a, b)| *a += b);
                add_residual(pool, x, o, n_embd, None, 0.0, eps)?;
            } else {
                // x = (ffn + x) + attn
                add_residual(pool, x, f, n_embd, None, 0.0, eps)?;
                add_residual(pool, x, o, n_embd, None, 0.0, eps)?;
            }
            add_cvec(x, n_embd, cvec, il);
            dump::tensor("l_out", Some(il), x, n_embd);
            continue;
        }
        let post_norm = lw.attn_post_norm.as_ref().map(|w| vector(model, w)).transpose()?;
        add_residual(pool, x, o, n_embd, post_norm, hp.f_residual_scale, eps)?;

        // --- feed-forward
        dump::tensor("ffn_inp", Some(il), x, n_embd);
        let hn = if ffn_on_attn_input {
            &ffn_in[..nr * n_embd]
        } else {
            pre_norm(pool, model, norm, x, h, n_embd, lw.ffn_norm.as_ref(), lw.ffn_norm_b.as_ref())?;
            &h[..nr * n_embd]
        };
        dump::tensor("ffn_norm", Some(il), hn, n_embd);
        let o = match &lw.ffn {
            FfnWeights::Dense(ffn) => {
                let n_ff = ffn_hidden(&mm, acts, ffn, recipe, hn, nr, gate, up, fused, il)?;
                // the FFN output [nr][n_embd] in `h` (the normed input is consumed)
                linear(&mm, acts, [&ffn.down], &gate[..nr * n_ff], nr, [&mut *h])?;
                let o = &mut h[..nr * n_embd];
                add_bias(model, o, ffn.down_b.as_ref())?;
                apply_scale(model, |s| &s.ffn, &ffn.down, o)?;
                o
            }
            FfnWeights::Experts(experts) => {
                // the output [nr][n_embd] in `v`; a shared expert's FFN in
                // the dense FFN's buffers
                let moe = recipe.moe.ok_or_else(|| crate::Error::invalid("experts in a dense family"))?;
                let k = hp.n_expert_used[il] as usize;
                let mut shared = |acts: &mut Vec<Activations>, f: &DenseFfn, out: &mut AlignedF32| {
                    let n_ff = ffn_hidden(&mm, acts, f, recipe, hn, nr, gate, up, fused, il)?;
                    linear(&mm, acts, [&f.down], &gate[..nr * n_ff], nr, [out])
                };
                moe_ffn(&mm, acts, experts, moe, k, hn, nr, moe_buf, v, &mut shared)?;
                &mut v[..nr * n_embd]
            }
        };
        dump::tensor("ffn_out", Some(il), o, n_embd);
        let post_norm = lw.ffn_post_norm.as_ref().map(|w| vector(model, w)).transpose()?;
        add_residual(pool, x, o, n_embd, post_norm, hp.f_residual_scale, eps)?;
        add_cvec(x, n_embd, cvec, il);
        dump::tensor("l_out", Some(il), x, n_embd);
    }

    // --- output head for the tokens that want logits (x holds their rows)
    if out_rows.is_empty() {
        return Ok(ControlFlow::Continue(()));
    }
    if nr == nt && out_rows.len() < nt {
        keep_rows(x, n_embd, &out_rows);
    }
    let output_norm =
        weights.output_norm.as_ref().ok_or_else(|| crate::Error::invalid("the model has no final norm"))?;
    let w = vector(model, output_norm)?;
    match norm.kind {
        Norm::Rms => ops::rms_norm_mul(x, n_embd, w, norm.eps),
        Norm::Layer => {
            let b = weights.output_norm_b.as_ref().map(|b| vector(model, b)).transpose()?;
            ops::layer_norm(x, n_embd, w, b, norm.eps)
        }
    }
    embd.copy_from_slice(x);
    dump::tensor("result_norm", None, x, n_embd);
    if logits.is_empty() {
        return Ok(ControlFlow::Continue(()));
    }
    let output =
        weights.output.as_ref().ok_or_else(|| crate::Error::invalid("the model has no output head (an encoder)"))?;
    linear_into(&mm, acts, output, x, out_rows.len(), logits)?;
    add_bias(model, logits, weights.output_b.as_ref())?;
    if hp.f_logit_scale != 0.0 {
        // ggml_scale by 1 / logit_scale (granite) or by logit_scale (cohere2)
        let s = match recipe.logit_scale {
            LogitScale::Divide => 1.0 / hp.f_logit_scale,
            LogitScale::Multiply => hp.f_logit_scale,
        };
        logits.iter_mut().for_each(|l| *l *= s);
    }
    let cap = hp.f_final_logit_softcapping;
    if recipe.logit_softcap && cap != 0.0 {
        // as the reference's graph: scale by 1/cap, tanh, scale by cap
        let inv = 1.0 / cap;
        logits.iter_mut().for_each(|l| *l = (*l * inv).tanh() * cap);
    }
    Ok(ControlFlow::Continue(()))
}
