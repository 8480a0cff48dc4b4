//! Pooling: one vector per sequence out of the per-token hidden states of a
//! batch, as the reference's `build_pooling` and its inputs compute it
//! (`llm_graph_input_mean`, `llm_graph_input_cls`). A token counts for
//! every sequence it belongs to; the sequences come in ascending order (the
//! reference's `seq_id_unq`).
//!
//! - MEAN: the average of a sequence's rows (as ggml's product of the
//!   transposed rows with a matrix of 1/n weights: [`mean_pool`]).
//! - CLS, LAST: the row of its token at the lowest position (the first such
//!   in the batch), or at the highest (the last such).
//! - RANK: that row (the last one for a causal context; the mean where
//!   `%s.classifier.pooling_type` is MEAN) through the classifier head:
//!   `tanh(cls · x + cls_b)` (modern-bert: `LN(gelu(cls · x))`), then
//!   `cls_out · · + cls_out_b`, each where the model has it (qwen3:
//!   `softmax(cls_out · x)`); `n_cls_out` values per sequence, read from the head's
//!   output as the reference reads them (at `n_cls_out · sequence index`).

use super::batch::Token;
use super::forward::{add_bias, kw, vector, Mm};
use super::Pooling;
use crate::error::{Error, Result};
use crate::kernels::{self, Activations};
use crate::model::arch::ClsHead;
use crate::model::weights::Weight;
use std::collections::BTreeMap;

/// The sequences of a batch, ascending, each with its tokens' rows.
fn sequences(tokens: &[Token]) -> BTreeMap<i32, Vec<usize>> {
    let mut seqs: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for (i, t) in tokens.iter().enumerate() {
        for &s in &t.seqs {
            let rows = seqs.entry(s).or_default();
            // (a token listing a sequence twice counts once for it)
            if rows.last() != Some(&i) {
                rows.push(i);
            }
        }
    }
    seqs
}

/// The row of `rows` (ascending) that stands for its sequence: its token at
/// the lowest position, the first such; with `last`, at the highest, the
/// last such (`llm_graph_input_cls::set_input`).
fn target_row(tokens: &[Token], rows: &[usize], last: bool) -> usize {
    let mut best = (tokens[rows[0]].pos, rows[0]);
    for &i in &rows[1..] {
        let pos = tokens[i].pos;
        if (last && pos >= best.0) || (!last && pos < best.0) {
            best = (pos, i);
        }
    }
    best.1
}

/// Pools `embd` ([n_tokens][n_embd], a row per token of `tokens`) by
/// sequence. `causal` is the attention the batch ran with (RANK's row);
/// `mm` and `acts` run RANK's classifier head.
pub fn pool(
    pooling: Pooling,
    causal: bool,
    embd: &[f32],
    tokens: &[Token],
    mm: &Mm,
    acts: &mut Vec<Activations>,
) -> Result<BTreeMap<i32, Vec<f32>>> {
    let hp = &mm.model.hparams;
    let n_embd = hp.n_embd as usize;
    let nt = tokens.len();
    let seqs = sequences(tokens);
    let row = |i: usize| embd[i * n_embd..(i + 1) * n_embd].to_vec();
    let mean = |idx: &[usize]| mean_pool(embd, n_embd, nt, idx, seqs.len());
    // (gemma-embedding: its dense modules on the pooled rows, all at once)
    let dense = |acts: &mut Vec<Activations>, rows: Vec<(i32, Vec<f32>)>| -> Result<BTreeMap<i32, Vec<f32>>> {
        let n = rows.len();
        let flat: Vec<f32> = rows.iter().flat_map(|(_, v)| v.iter().copied()).collect();
        let flat = dense_out(mm, acts, flat, n)?;
        let w = flat.len() / n.max(1);
        Ok(rows.iter().enumerate().map(|(k, (s, _))| (*s, flat[k * w..(k + 1) * w].to_vec())).collect())
    };
    let out = match pooling {
        Pooling::None => BTreeMap::new(),
        Pooling::Mean => dense(acts, seqs.iter().map(|(&s, idx)| (s, mean(idx))).collect())?,
        Pooling::Cls | Pooling::Last => dense(
            acts,
            seqs.iter().map(|(&s, idx)| (s, row(target_row(tokens, idx, pooling == Pooling::Last)))).collect(),
        )?,
        Pooling::Rank => {
            // [n_seqs][n_embd] the pooled rows, then through the head
            let mut x: Vec<f32> = Vec::with_capacity(seqs.len() * n_embd);
            for idx in seqs.values() {
                x.extend(if hp.pooling_type_cls == Pooling::Mean as i32 {
                    mean(idx)
                } else {
                    row(target_row(tokens, idx, causal))
                });
            }
            let out = classifier_head(mm, acts, x, seqs.len())?;
            let out = dense_out(mm, acts, out, seqs.len())?;
            let n = hp.n_cls_out as usize;
            seqs.keys()
                .enumerate()
                .map(|(k, &s)| {
                    let v = out.get(k * n..(k + 1) * n).ok_or_else(|| {
                        Error::invalid(format!("the classifier head's output has no {n} values for sequence {s}"))
                    })?;
                    Ok((s, v.to_vec()))
                })
                .collect::<Result<_>>()?
        }
    };
    Ok(out)
}

/// RANK's head over `x` ([n][n_embd]): `cls`, `cls_out` where the model
/// has them (plain ggml_mul_mat: no LoRA update, as the reference's
/// `build_pooling`). Returns the flat output ([n][width]).
fn classifier_head(mm: &Mm, acts: &mut Vec<Activations>, mut x: Vec<f32>, n: usize) -> Result<Vec<f32>> {
    let weights = mm.model.weights.as_ref();
    if mm.model.arch.is_some_and(|f| f.block.rank_head) {
        // a decoder's head (qwen3's rerankers): cls.output where the file
        // has it, then ggml_soft_max of each sequence's row (the reference
        // applies it with or without the head)
        if let Some(w) = weights.and_then(|w| w.rank_out.as_ref()) {
            let mut y = vec![0f32; n * w.rows()]; // [n][n_cls_out]
            kernels::matmul_siblings_reusing(
                kernels::kernels(),
                mm.pool,
                acts,
                &[kw(mm.model, w)?],
                &x,
                n,
                &mut [&mut y],
            )?;
            x = y;
        }
        let width = x.len() / n.max(1);
        x.chunks_exact_mut(width.max(1)).for_each(super::ops::soft_max);
        return Ok(x);
    }
    let Some(enc) = weights.and_then(|w| w.encoder.as_ref()) else { return Ok(x) };
    let product = |acts: &mut Vec<Activations>, w: &Weight, b: Option<&Weight>, x: &[f32]| -> Result<Vec<f32>> {
        let mut y = vec![0f32; n * w.rows()]; // [n][rows]
        kernels::matmul_siblings_reusing(kernels::kernels(), mm.pool, acts, &[kw(mm.model, w)?], x, n, &mut [&mut y])?;
        add_bias(mm.model, &mut y, b)?;
        Ok(y)
    };
    if let Some(cls) = &enc.cls {
        x = product(acts, cls, enc.cls_b.as_ref(), &x)?;
        let modern = mm.model.arch.and_then(|f| f.block.encoder).is_some_and(|e| e.cls_head == ClsHead::Modern);
        if modern {
            // (modern-bert: ggml_gelu, then its head's LayerNorm)
            super::ops::gelu(&mut x);
            if let Some(w) = &enc.cls_norm {
                let w = vector(mm.model, w)?;
                let d = cls.rows();
                super::ops::layer_norm(&mut x, d, w, None, mm.model.hparams.f_norm_eps);
            }
        } else {
            // (ggml_tanh: tanhf of each value)
            x.iter_mut().for_each(|v| *v = v.tanh());
        }
    }
    if let Some(out) = &enc.cls_out {
        x = product(acts, out, enc.cls_out_b.as_ref(), &x)?;
    }
    Ok(x)
}

/// gemma-embedding's dense modules (`build_dense_out`: plain products,
/// after the pooling, or of every token's row without): `dense_3 ·
/// (dense_2 · x)` for the `n` rows of `x` ([n][n_embd]); `x` itself for the
/// other models.
pub fn dense_out(mm: &Mm, acts: &mut Vec<Activations>, x: Vec<f32>, n: usize) -> Result<Vec<f32>> {
    let Some(enc) = mm.model.weights.as_ref().and_then(|w| w.encoder.as_ref()) else { return Ok(x) };
    let mut x = x;
    for w in [&enc.dense_2, &enc.dense_3].into_iter().flatten() {
        if x.len() != n * w.cols() {
            return Err(Error::invalid(format!(
                "{} takes rows of {} values, not {}",
                w.info.name,
                w.cols(),
                x.len() / n.max(1)
            )));
        }
        let mut y = vec![0f32; n * w.rows()]; // [n][rows]
        kernels::matmul_siblings_reusing(kernels::kernels(), mm.pool, acts, &[kw(mm.model, w)?], &x, n, &mut [&mut y])?;
        x = y;
    }
    Ok(x)
}

/// Mean pooling as the reference computes it (`build_pooling`):
/// `ggml_mul_mat(cont(transpose(embd)), mean)`, where column `s` of `mean`
/// holds `1.0f / n_s` at the rows of sequence `s`'s tokens and 0 elsewhere.
/// That F32 product runs llamafile's tinyBLAS<16> (the lane order of
/// `tinyblas_f16::dot`) with 2 or more sequences, `n_tokens % 16 == 0` and
/// `n_embd % 4 == 0`, else `ggml_vec_dot_f32` per element. `embd` is
/// [n_tokens][n_embd]; `idx` the rows of one sequence; `n_seqs` how many
/// sequences the batch has. (The reference pools per ubatch: the same when
/// the batch is one ubatch, as pooled embeddings usually are.)
pub fn mean_pool(embd: &[f32], n_embd: usize, n_tokens: usize, idx: &[usize], n_seqs: usize) -> Vec<f32> {
    use crate::kernels::ggml_paths::tinyblas_f16;
    let mut w = vec![0f32; n_tokens]; // [n_tokens]: this sequence's column of `mean`
    let div = 1.0f32 / idx.len() as f32;
    idx.iter().for_each(|&i| w[i] = div);
    let tiny = tinyblas_f16::runs(n_embd, n_seqs, n_tokens);
    let mut col = vec![0f32; n_tokens]; // [n_tokens]: one dimension of every token
    (0..n_embd)
        .map(|d| {
            col.iter_mut().enumerate().for_each(|(t, c)| *c = embd[t * n_embd + d]);
            if tiny {
                tinyblas_f16::dot(&col, &w)
            } else {
                crate::kernels::vecf::dot_f32(&col, &w)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(pos: i32, seqs: &[i32]) -> Token {
        Token { id: Some(0), pos, seqs: seqs.to_vec(), output: true }
    }

    #[test]
    fn rows_follow_the_references_rules() {
        // sequence 1's tokens out of position order; token 3 in both
        let t = [tok(0, &[0]), tok(2, &[1]), tok(1, &[1]), tok(1, &[0, 1]), tok(0, &[1])];
        let seqs = sequences(&t);
        assert_eq!(seqs.keys().copied().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(seqs[&0], [0, 3]);
        assert_eq!(seqs[&1], [1, 2, 3, 4]);
        // the lowest position (first such), the highest (last such)
        assert_eq!(target_row(&t, &seqs[&1], false), 4);
        assert_eq!(target_row(&t, &seqs[&1], true), 1);
        assert_eq!(target_row(&t, &seqs[&0], false), 0);
        assert_eq!(target_row(&t, &seqs[&0], true), 3);
        let tie = [tok(0, &[0]), tok(0, &[0])];
        assert_eq!((target_row(&tie, &[0, 1], false), target_row(&tie, &[0, 1], true)), (0, 1));
    }

    #[test]
    fn mean_weights_each_sequence_by_its_count() {
        // [3][2]: rows 0 and 2 in one sequence
        let embd = [1.0, 10.0, 100.0, 1000.0, 3.0, 30.0];
        assert_eq!(mean_pool(&embd, 2, 3, &[0, 2], 2), [2.0, 20.0]);
        assert_eq!(mean_pool(&embd, 2, 3, &[1], 2), [100.0, 1000.0]);
    }
}
