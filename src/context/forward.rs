//! The transformer forward pass of the architectures minfer runs (llama,
//! gemma3, qwen2, qwen3), one ubatch at a time: embeddings → blocks
//! (norm, q/k/v, rope, attention over the KV cache, output projection,
//! residual, norm, gated FFN, residual) → final norm → output head.
//!
//! Buffers are [n_tokens][width] row-major f32.

use super::batch::Token;
use super::kv_cache::KvCache;
use super::ops;
use crate::error::Result;
use crate::kernels::{self, ThreadPool};
use crate::model::arch::Arch;
use crate::model::weights::{Weight, Weights};
use crate::model::Model;

/// The bytes of a weight in its file's mapping.
fn bytes<'m>(model: &'m Model, w: &Weight) -> &'m [u8] {
    model.files[w.file].tensor_data(&w.info)
}

/// A small weight (norm, bias) as f32.
fn vector(model: &Model, w: &Weight) -> Result<Vec<f32>> {
    let mut out = vec![0f32; w.info.n_elements() as usize];
    ops::dequantize_row(w.ty(), bytes(model, w), &mut out)?;
    Ok(out)
}

/// A weight as the kernels take it.
fn kw<'m>(model: &'m Model, w: &Weight) -> Result<kernels::Weights<'m>> {
    kernels::Weights::new(bytes(model, w), w.ty(), w.rows(), w.cols())
}

/// y = W·x for each of the `nt` rows of x ([nt][cols] → [nt][rows]).
fn linear(pool: &ThreadPool, model: &Model, w: &Weight, x: &[f32], nt: usize) -> Result<Vec<f32>> {
    let mut y = vec![0f32; nt * w.rows()];
    kernels::matmul(pool, &kw(model, w)?, x, nt, &mut y)?;
    Ok(y)
}

/// Projections that read the same input, quantized once (q/k/v, gate/up).
fn linear_siblings<const N: usize>(
    pool: &ThreadPool,
    model: &Model,
    ws: [&Weight; N],
    x: &[f32],
    nt: usize,
) -> Result<[Vec<f32>; N]> {
    let mut ys: [Vec<f32>; N] = std::array::from_fn(|i| vec![0f32; nt * ws[i].rows()]);
    let kws = ws.iter().map(|w| kw(model, w)).collect::<Result<Vec<_>>>()?;
    let mut outs: Vec<&mut [f32]> = ys.iter_mut().map(|y| y.as_mut_slice()).collect();
    kernels::matmul_siblings(pool, &kws, x, nt, &mut outs)?;
    Ok(ys)
}

fn add_bias(model: &Model, y: &mut [f32], b: Option<&Weight>) -> Result<()> {
    if let Some(b) = b {
        let b = vector(model, b)?;
        for row in y.chunks_exact_mut(b.len()) {
            for (v, bi) in row.iter_mut().zip(&b) {
                *v += bi;
            }
        }
    }
    Ok(())
}

/// Runs one ubatch. `cells[i]` is the KV cell assigned to `tokens[i]` (its
/// position and sequences are already recorded there). For the tokens
/// flagged for output, in order, writes the final normed hidden state to
/// `embd` ([n_out][n_embd]) and, unless `logits` is empty, the logits
/// ([n_out][n_vocab]). With `causal` false a token attends to every cell of
/// its sequence, later positions included.
pub fn forward(
    pool: &ThreadPool,
    model: &Model,
    weights: &Weights,
    kv: &mut KvCache,
    tokens: &[Token],
    cells: &[usize],
    causal: bool,
    embd: &mut [f32],
    logits: &mut [f32],
) -> Result<()> {
    let hp = &model.hparams;
    let arch = model.arch.expect("forward runs only on supported architectures");
    let nt = tokens.len();
    let n_embd = hp.n_embd as usize;
    let hd_k = hp.n_embd_head_k as usize;
    let hd_v = hp.n_embd_head_v as usize;
    let n_rot = hp.n_rot as usize;
    let eps = hp.f_norm_rms_eps;
    let neox = arch.rope_type() == 2;

    // --- embeddings: x [nt][n_embd]
    let mut x = vec![0f32; nt * n_embd];
    let tok_embd = &weights.tok_embd;
    let row_bytes = bytes(model, tok_embd).len() / tok_embd.rows();
    for (t, tok) in tokens.iter().enumerate() {
        let id = tok.id.unwrap_or(0) as usize;
        let row = &bytes(model, tok_embd)[id * row_bytes..(id + 1) * row_bytes];
        ops::dequantize_row(tok_embd.ty(), row, &mut x[t * n_embd..(t + 1) * n_embd])?;
    }
    if arch == Arch::Gemma3 {
        let s = (n_embd as f32).sqrt();
        x.iter_mut().for_each(|v| *v *= s);
    }
    let rope_factors = match &weights.rope_freqs {
        Some(w) => Some(vector(model, w)?),
        None => None,
    };

    for (il, lw) in weights.layers.iter().enumerate() {
        let n_head = hp.n_head[il] as usize;
        let n_head_kv = hp.n_head_kv[il] as usize;
        let swa = hp.is_swa[il];
        let (freq_base, freq_scale) =
            if swa { (hp.rope_freq_base_train_swa, 1.0) } else { (hp.rope_freq_base_train, hp.rope_freq_scale_train) };

        // --- attention
        let mut h = x.clone();
        ops::rms_norm_mul(&mut h, n_embd, &vector(model, &lw.attn_norm)?, eps);
        // q [nt][n_head * hd_k], k [nt][n_head_kv * hd_k], v [nt][n_head_kv * hd_v]
        let [mut q, mut k, mut v] = linear_siblings(pool, model, [&lw.wq, &lw.wk, &lw.wv], &h, nt)?;
        add_bias(model, &mut q, lw.bq.as_ref())?;
        add_bias(model, &mut k, lw.bk.as_ref())?;
        add_bias(model, &mut v, lw.bv.as_ref())?;
        if let Some(w) = &lw.q_norm {
            ops::rms_norm_mul(&mut q, hd_k, &vector(model, w)?, eps);
        }
        if let Some(w) = &lw.k_norm {
            ops::rms_norm_mul(&mut k, hd_k, &vector(model, w)?, eps);
        }
        for (t, tok) in tokens.iter().enumerate() {
            for head in q[t * n_head * hd_k..(t + 1) * n_head * hd_k].chunks_exact_mut(hd_k) {
                ops::rope(head, tok.pos, n_rot, freq_base, freq_scale, rope_factors.as_deref(), neox);
            }
            for head in k[t * n_head_kv * hd_k..(t + 1) * n_head_kv * hd_k].chunks_exact_mut(hd_k) {
                ops::rope(head, tok.pos, n_rot, freq_base, freq_scale, rope_factors.as_deref(), neox);
            }
        }
        let kq_scale = if hp.f_attention_scale != 0.0 {
            // gemma3 scales q itself and attends with scale 1
            q.iter_mut().for_each(|v| *v *= hp.f_attention_scale);
            1.0
        } else {
            1.0 / (hd_k as f32).sqrt()
        };

        // store k, v in the cache cells of this ubatch
        let (kw, vw) = (kv.k_width[il], kv.v_width[il]);
        for (t, &c) in cells.iter().enumerate() {
            kv.k[il].write(c * kw, &k[t * kw..(t + 1) * kw]);
            kv.v[il].write(c * vw, &v[t * vw..(t + 1) * vw]);
        }

        let mut attn = vec![0f32; nt * n_head * hd_v]; // [nt][n_head * hd_v]
        let group = n_head / n_head_kv;
        let mut scores = vec![0f32; kv.n_cells()];
        for (t, tok) in tokens.iter().enumerate() {
            let seq = tok.seqs[0] as usize;
            let visible: Vec<usize> = (0..kv.n_cells())
                .filter(|&c| {
                    let cell = &kv.cells[c];
                    !cell.is_empty()
                        && cell.seqs.has(seq)
                        && (!causal || cell.pos <= tok.pos)
                        && !(swa && tok.pos - cell.pos >= hp.n_swa as i32)
                })
                .collect();
            for hq in 0..n_head {
                let g = hq / group;
                let qh = &q[(t * n_head + hq) * hd_k..(t * n_head + hq + 1) * hd_k];
                let mut max = f32::NEG_INFINITY;
                for (j, &c) in visible.iter().enumerate() {
                    let base = c * kw + g * hd_k;
                    let mut s = 0f32;
                    for d in 0..hd_k {
                        s += qh[d] * kv.k[il].get(base + d);
                    }
                    scores[j] = s * kq_scale;
                    max = max.max(scores[j]);
                }
                let mut sum = 0f64;
                for s in scores[..visible.len()].iter_mut() {
                    *s = (*s - max).exp();
                    sum += f64::from(*s);
                }
                let inv = (1.0 / sum) as f32;
                let out = &mut attn[(t * n_head + hq) * hd_v..(t * n_head + hq + 1) * hd_v];
                for (j, &c) in visible.iter().enumerate() {
                    let p = scores[j] * inv;
                    let base = c * vw + g * hd_v;
                    for d in 0..hd_v {
                        out[d] += p * kv.v[il].get(base + d);
                    }
                }
            }
        }
        let mut o = linear(pool, model, &lw.wo, &attn, nt)?; // [nt][n_embd]
        if let Some(w) = &lw.attn_post_norm {
            ops::rms_norm_mul(&mut o, n_embd, &vector(model, w)?, eps);
        }
        for (xi, oi) in x.iter_mut().zip(&o) {
            *xi += oi;
        }

        // --- feed-forward
        let mut h = x.clone();
        ops::rms_norm_mul(&mut h, n_embd, &vector(model, &lw.ffn_norm)?, eps);
        let [gate, up] = linear_siblings(pool, model, [&lw.ffn_gate, &lw.ffn_up], &h, nt)?;
        let act: Vec<f32> = if arch == Arch::Gemma3 {
            gate.iter().zip(&up).map(|(&g, &u)| ops::gelu_tanh(g) * u).collect()
        } else {
            gate.iter().zip(&up).map(|(&g, &u)| ops::silu(g) * u).collect()
        };
        let mut d = linear(pool, model, &lw.ffn_down, &act, nt)?;
        if let Some(w) = &lw.ffn_post_norm {
            ops::rms_norm_mul(&mut d, n_embd, &vector(model, w)?, eps);
        }
        for (xi, di) in x.iter_mut().zip(&d) {
            *xi += di;
        }
    }

    // --- output head for the tokens that want logits
    let out_rows: Vec<usize> = (0..nt).filter(|&t| tokens[t].output).collect();
    if out_rows.is_empty() {
        return Ok(());
    }
    let mut h = Vec::with_capacity(out_rows.len() * n_embd);
    for &t in &out_rows {
        h.extend_from_slice(&x[t * n_embd..(t + 1) * n_embd]);
    }
    ops::rms_norm_mul(&mut h, n_embd, &vector(model, &weights.output_norm)?, eps);
    embd.copy_from_slice(&h);
    if logits.is_empty() {
        return Ok(());
    }
    kernels::matmul(pool, &kw(model, &weights.output)?, &h, out_rows.len(), logits)?;
    let cap = hp.f_final_logit_softcapping;
    if cap != 0.0 {
        logits.iter_mut().for_each(|l| *l = (*l / cap).tanh() * cap);
    }
    Ok(())
}
