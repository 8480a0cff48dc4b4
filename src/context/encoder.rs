//! The encoder forward pass (`arch::Encoder`: BERT and its relatives), the
//! reference's `src/models/bert.cpp` graph: the whole batch as one ubatch,
//! every token attending to every token of its (first) sequence, forwards
//! and backwards, over the batch alone (the reference keeps no KV cache for
//! these models); each block normed after its residual adds. The hidden
//! states of every token come out; the context pools them (`pooling.rs`).
//!
//! Buffers are [n_tokens][width] row-major f32, as in `forward.rs`, whose
//! projections, FFN and attention numerics this shares.

use super::attention::{attention, visible_cells, Alibi, AttnShape};
use super::batch::Token;
use super::cvec::ControlVector;
use super::forward::{add_bias, add_position_rows, ffn_hidden, input_rows, linear, project_qkv, vector, Mm};
use super::kv_cache::{KvCache, KvType};
use super::lora::ActiveLoras;
use super::ops;
use super::rope::RopeCfg;
use super::workspace::{sized, Workspace};
use crate::error::{Error, Result};
use crate::kernels::ThreadPool;
use crate::model::arch::{Block, Encoder, Ffn, GateUp, Rope};
use crate::model::weights::{DenseFfn, EncoderWeights, FfnWeights, Weight, Weights};
use crate::model::Model;
use std::ops::ControlFlow;

/// `x = LN(x + y) · w + b` row by row ([n][width] each; ggml_add, then
/// build_norm's ggml_norm, ggml_mul, ggml_add), rows in parallel.
fn add_and_norm(
    pool: &ThreadPool,
    model: &Model,
    x: &mut [f32],
    y: &[f32],
    width: usize,
    w: Option<&Weight>,
    b: Option<&Weight>,
) -> Result<()> {
    let w = vector(model, w.ok_or_else(|| Error::invalid("an encoder block without its norm"))?)?;
    let b = b.map(|b| vector(model, b)).transpose()?;
    let eps = model.hparams.f_norm_eps;
    pool.run_rows(x, width, pool.light_rows_per_task(x.len() / width), &|i, row| {
        row.iter_mut().zip(&y[i * width..(i + 1) * width]).for_each(|(a, b)| *a += b);
        ops::layer_norm(row, width, w, b, eps);
    })
}

/// The recipe of a block's FFN: the family's, or (`Encoder::ffn_from_file`)
/// what its tensors make it: a gate, a GEGLU of gate and up; an up of 2·n_ff
/// rows, a GEGLU of its halves; else GELU.
fn ffn_recipe(block: &Block, enc: Encoder, ffn: &DenseFfn) -> Block {
    if !enc.ffn_from_file {
        return *block;
    }
    let n_ff = ffn.down.cols();
    let (kind, gate_up) = match (&ffn.gate, ffn.up.rows() == 2 * n_ff) {
        (Some(_), _) => (Ffn::GeGlu, GateUp::Split),
        (None, true) => (Ffn::GeGlu, GateUp::Fused),
        (None, false) => (Ffn::Gelu, GateUp::Split),
    };
    Block { ffn: kind, gate_up, ..*block }
}

/// Cell t of an encoder's scratch cache is token t, in its first sequence
/// alone (the reference's no-cache mask compares first sequence ids).
fn place_tokens(kv: &mut KvCache, tokens: &[Token]) {
    for (cell, t) in kv.cells.iter_mut().zip(tokens) {
        cell.pos = t.pos;
        cell.seqs.clear();
        cell.seqs.add(t.seqs[0] as usize);
    }
}

/// Runs a pre-norm encoder (`Encoder::pre_norm`) on every token of
/// `tokens` (one ubatch): `forward.rs` over a cache of one cell per token
/// (token t in cell t, in its first sequence; f32, as the reference's
/// uncached K and V), bidirectional; each token's normed hidden state goes
/// to `embd` ([nt][n_embd]). `kv` keeps the cache across calls.
#[allow(clippy::too_many_arguments)]
pub fn encode_pre_norm(
    pool: &ThreadPool,
    model: &Model,
    weights: &Weights,
    ws: &mut Workspace,
    kv: &mut Option<KvCache>,
    tokens: &[Token],
    inp_embd: &[f32],
    flash: bool,
    rope: &RopeCfg,
    cvec: Option<&ControlVector>,
    loras: &ActiveLoras,
    embd: &mut [f32],
    abort: &mut dyn FnMut() -> bool,
) -> Result<ControlFlow<()>> {
    let hp = &model.hparams;
    let nt = tokens.len();
    let k_width: Vec<usize> = hp.n_head_kv.iter().map(|&h| (h * hp.n_embd_head_k) as usize).collect();
    let v_width: Vec<usize> = hp.n_head_kv.iter().map(|&h| (h * hp.n_embd_head_v) as usize).collect();
    let kv = match kv {
        Some(c) if c.n_cells() == nt && c.k_width == k_width && c.v_width == v_width => c,
        _ => kv.insert(KvCache::new(nt, k_width, v_width, KvType::F32, KvType::F32)?),
    };
    place_tokens(kv, tokens);
    let cells: Vec<usize> = (0..nt).collect();
    let mode = super::forward::AttnMode { causal: false, flash, threads: pool.n_threads() };
    super::forward::forward(
        pool,
        model,
        weights,
        kv,
        ws,
        tokens,
        inp_embd,
        &cells,
        mode,
        rope,
        cvec,
        loras,
        embd,
        &mut [],
        abort,
    )
}

/// The input rows' LayerNorm (`token_embd_norm`, + its bias), where the
/// model has one ([nt][n_embd]).
pub(super) fn input_norm(pool: &ThreadPool, model: &Model, enc: &EncoderWeights, x: &mut [f32]) -> Result<()> {
    let Some(w) = &enc.tok_norm else { return Ok(()) };
    let n_embd = model.hparams.n_embd as usize;
    let (w, b) = (vector(model, w)?, enc.tok_norm_b.as_ref().map(|b| vector(model, b)).transpose()?);
    let eps = model.hparams.f_norm_eps;
    pool.run_rows(x, n_embd, pool.light_rows_per_task(x.len() / n_embd), &|_, row| {
        ops::layer_norm(row, n_embd, w, b, eps)
    })
}

/// Runs the encoder on every token of `tokens` (one ubatch) and writes each
/// token's hidden state after the last block to `embd` ([nt][n_embd]).
/// `flash` picks the flash-attention numerics, as for decoders (the
/// reference casts its f32 K and V to f16 for them). `abort` is asked
/// before each layer; `Break` means it said stop.
#[allow(clippy::too_many_arguments)]
pub fn encode(
    pool: &ThreadPool,
    model: &Model,
    weights: &Weights,
    ws: &mut Workspace,
    tokens: &[Token],
    inp_embd: &[f32],
    flash: bool,
    rope: &RopeCfg,
    loras: &ActiveLoras,
    embd: &mut [f32],
    abort: &mut dyn FnMut() -> bool,
) -> Result<ControlFlow<()>> {
    let hp = &model.hparams;
    let family = model.arch.ok_or_else(|| Error::invalid("the model cannot run"))?;
    let (recipe, enc) = match (family.block.encoder, &weights.encoder) {
        (Some(r), Some(w)) => (r, w),
        _ => return Err(Error::invalid("the model has no encoder (decoder-only models use llama_decode)")),
    };
    let nt = tokens.len();
    let n_embd = hp.n_embd as usize;
    let (hd_k, hd_v) = (hp.n_embd_head_k as usize, hp.n_embd_head_v as usize);
    let Workspace { x, h, gate, up, v, fused, ffn_in, layer, acts, enc_kv, .. } = ws;
    let mm = Mm { pool, model, loras };

    // --- input rows: token + token type 0 + position, LayerNormed
    // x [nt][n_embd]
    input_rows(pool, model, weights, loras, tokens, inp_embd, x)?;
    if let Some(te) = &enc.type_embd {
        // (every token is of type 0, "sentence A", as in the reference)
        let mut row0 = vec![0f32; n_embd];
        let bytes = super::forward::bytes(model, te);
        crate::quant::dequantize_row(te.ty(), &bytes[..bytes.len() / te.rows()], &mut row0)?;
        for row in x.chunks_exact_mut(n_embd) {
            row.iter_mut().zip(&row0).for_each(|(v, t)| *v += t);
        }
    }
    if let Some(pe) = &weights.pos_embd {
        add_position_rows(model, pe, tokens, x)?;
    }
    input_norm(pool, model, enc, x)?;

    // --- one layer's K and V: cell t is token t, in its first sequence
    // (the reference's mask compares first sequence ids only)
    let (k_width, v_width) = (hp.n_head_kv[0] as usize * hd_k, hp.n_head_kv[0] as usize * hd_v);
    if hp.n_head_kv.iter().any(|&h| h != hp.n_head_kv[0]) {
        return Err(Error::invalid("an encoder with per-layer key/value head counts"));
    }
    let kv = match enc_kv {
        Some(kv) if kv.n_cells() == nt && kv.k_width[0] == k_width && kv.v_width[0] == v_width => kv,
        _ => enc_kv.insert(KvCache::new(nt, vec![k_width], vec![v_width], KvType::F32, KvType::F32)?),
    };
    place_tokens(kv, tokens);
    let visible = visible_cells(kv, tokens, false, None, false);
    // the rotary angles of every token ([nt][n_rot / 2]; one rope for every
    // layer), when the family rotates q and k (nomic-bert)
    let angles: Vec<Vec<(f32, f32)>> = match recipe.rope {
        false => Vec::new(),
        true => {
            let args = rope.layer(hp, 0);
            tokens.iter().map(|t| ops::rope_angles(t.pos, hp.n_rot as usize, &args, None)).collect()
        }
    };
    let neox = family.rope == Rope::Neox;
    let token_pos: Vec<i32> = tokens.iter().map(|t| t.pos).collect();
    let alibi =
        (recipe.alibi_max_bias > 0.0).then_some(Alibi { max_bias: recipe.alibi_max_bias, token_pos: &token_pos });
    let eps = hp.f_norm_eps;

    for (il, lw) in weights.layers.iter().enumerate() {
        if abort() {
            return Ok(ControlFlow::Break(()));
        }
        let (n_head, n_head_kv) = (hp.n_head[il] as usize, hp.n_head_kv[il] as usize);
        let q_width = n_head * hd_k;
        // --- attention: q, k (in the FFN's buffers), v
        project_qkv(&mm, acts, lw, x, nt, (q_width, k_width, v_width), gate, up, v, fused)?;
        // (jina-bert-v2: LayerNorms of the whole q and k rows)
        for (buf, width, w, b) in
            [(&mut *gate, q_width, &lw.q_norm, &lw.q_norm_b), (&mut *up, k_width, &lw.k_norm, &lw.k_norm_b)]
        {
            let Some(w) = w else { continue };
            let (w, b) = (vector(model, w)?, b.as_ref().map(|b| vector(model, b)).transpose()?);
            let buf = &mut buf[..nt * width];
            pool.run_rows(buf, width, pool.light_rows_per_task(nt), &|_, row| ops::layer_norm(row, width, w, b, eps))?;
        }
        if recipe.rope {
            // (ggml_rope_ext of q and k, each head of each token)
            for (buf, width) in [(&mut *gate, q_width), (&mut *up, k_width)] {
                let buf = &mut buf[..nt * width];
                pool.run_rows(buf, width, pool.light_rows_per_task(nt), &|t, heads| {
                    for head in heads.chunks_exact_mut(hd_k) {
                        ops::rope_by(head, &angles[t], neox);
                    }
                })?;
            }
        }
        let q = &gate[..nt * q_width];
        for t in 0..nt {
            kv.k[0].write(t * k_width, &up[t * k_width..(t + 1) * k_width]);
            kv.v[0].write(t * v_width, &v[t * v_width..(t + 1) * v_width]);
        }
        let kq_scale = 1.0 / (hd_v as f32).sqrt();
        let shape = AttnShape { n_head, n_head_kv, hd_k, hd_v, kw: k_width, vw: v_width, kq_scale, softcap: 0.0 };
        // attn [nt][n_head * hd_v] (k is in the cache: its buffer takes it)
        attention(pool, kv, 0, &visible, q, shape, None, alibi, (flash, pool.n_threads()), layer, up)?;
        // o [nt][n_embd] in `h`
        linear(&mm, acts, [&lw.wo], &up[..nt * n_head * hd_v], nt, [&mut *h])?;
        let o = &mut h[..nt * n_embd];
        add_bias(model, o, lw.bo.as_ref())?;
        if lw.attn_norm_2.is_some() {
            // the block's input, added once more below
            sized(ffn_in, nt * n_embd).copy_from_slice(&x[..nt * n_embd]);
        }
        // x = LN(o + x)
        add_and_norm(pool, model, x, o, n_embd, lw.attn_out_norm.as_ref(), lw.attn_out_norm_b.as_ref())?;
        if lw.attn_norm_2.is_some() {
            // (jina-bert-v2) x = LN(x + the block's input)
            let input = &ffn_in[..nt * n_embd];
            add_and_norm(pool, model, x, input, n_embd, lw.attn_norm_2.as_ref(), lw.attn_norm_2_b.as_ref())?;
        }

        // --- feed-forward on x (the block's ffn_inp), then x = LN(ffn + x)
        let FfnWeights::Dense(ffn) = &lw.ffn else {
            return Err(Error::invalid("experts in an encoder"));
        };
        let n_ff = ffn_hidden(&mm, acts, ffn, &ffn_recipe(&family.block, recipe, ffn), x, nt, gate, up, fused, il)?;
        linear(&mm, acts, [&ffn.down], &gate[..nt * n_ff], nt, [&mut *h])?;
        let f = sized(h, nt * n_embd);
        add_bias(model, f, ffn.down_b.as_ref())?;
        add_and_norm(pool, model, x, f, n_embd, lw.layer_out_norm.as_ref(), lw.layer_out_norm_b.as_ref())?;
    }
    embd.copy_from_slice(&x[..nt * n_embd]);
    Ok(ControlFlow::Continue(()))
}
