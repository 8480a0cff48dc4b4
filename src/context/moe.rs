//! The mixture-of-experts feed-forward of one layer, as the reference's
//! `build_moe_ffn` computes it (softmax gating, SwiGLU experts):
//!
//! 1. router logits `ffn_gate_inp · x` ([nr][n_expert], a plain matmul), a
//!    softmax per token (`ggml_soft_max`), a sigmoid per logit
//!    (`ggml_sigmoid`: libm `expf`) or the square root of its softplus,
//!    per the family's `Gating`;
//! 2. the `k` most probable experts per token, in the order of libstdc++'s
//!    `std::sort` of the expert ids by descending probability
//!    (`ggml_argsort_top_k`: ties fall where the reference's do), the
//!    probabilities plus `exp_probs_b` where the model has that
//!    selection bias;
//! 3. their (unbiased) probabilities as weights, divided by their f64 sum
//!    clamped to at least 2^-14 where the family renormalises
//!    (`ggml_sum_rows`, `ggml_clamp`, `ggml_div`), then times the model's
//!    weight scale where it has one (`ggml_scale`);
//! 4. the chosen experts' gate and up products, SwiGLU, down product
//!    (`ggml_mul_mat_id`): the rows routed to each expert are gathered and
//!    multiplied by that expert's matrices only, so a prefill reads each
//!    chosen expert once per ubatch and a decode reads only its `k` experts.
//!    The kernels are those of MUL_MAT_ID (`kernels::matmul_experts_with`);
//! 5. per token, `((d_0·w_0 + d_1·w_1) + d_2·w_2) + …` over its experts in
//!    the chosen order (`ggml_mul`, then one `ggml_add` per expert);
//! 6. a shared expert where the family has one: a dense SwiGLU FFN on the
//!    same input, added (granite), or first scaled per token by
//!    silu(g)/g = sigmoid(g), g = `ffn_gate_inp_shexp · x` (qwen2moe).

use super::ops;
use super::workspace::sized;
use crate::error::{Error, Result};
use crate::kernels::aligned::AlignedF32;
use crate::kernels::{self, ActType, Activations, ThreadPool};
use crate::model::arch::{ExpertAct, Gating, Moe};
use crate::model::weights::{DenseFfn, ExpertFfn, Weight};
use crate::model::Model;

/// The buffers of the mixture-of-experts FFN, kept across ubatches (see
/// `workspace.rs`).
#[derive(Debug, Default)]
pub struct MoeBuffers {
    /// [nr][n_expert] the router's logits, then probabilities
    probs: AlignedF32,
    /// [n_expert] one token's probabilities plus the selection bias
    biased: Vec<f32>,
    /// [nr][k] each token's experts, and their weights
    chosen: Vec<usize>,
    weights: Vec<f32>,
    /// [nr * k] the row of (token t, slot j) in the expert-grouped buffers
    slot_row: Vec<usize>,
    /// [nr * k][n_ff_exp] gate (then the activation) and up, rows grouped
    /// by expert
    gate: AlignedF32,
    up: AlignedF32,
    /// [nr * k][n_embd] the down products, grouped likewise
    down: AlignedF32,
    /// [nr][n_embd] the shared expert's output
    shared: AlignedF32,
    /// the input quantized once per activation format, then the hidden rows
    quantized: Vec<Activations>,
    /// per (expert, activation format) the rows routed to it
    routed: Vec<Activations>,
}

/// Expert `e`'s matrix of a 3-D expert tensor `w` ([cols, rows, n_expert]),
/// with its load-time layout where it has one.
fn expert<'m>(model: &'m Model, w: &Weight, e: usize) -> Result<kernels::Weights<'m>> {
    super::forward::kw(model, &w.expert(e))
}

/// The experts' products of one matrix kind for every expert with routed
/// rows: `rows_of[e]` lists the rows of `q` (quantized per activation
/// format, in `quantized[fmt]`) routed to expert `e`; expert e's outputs
/// go to rows `offset[e]..` of each of `ys` ([rows][w.rows] each).
#[allow(clippy::too_many_arguments)]
fn expert_products(
    pool: &ThreadPool,
    model: &Model,
    mats: &[&Weight],
    rows_of: &[Vec<usize>],
    offset: &[usize],
    quantized: &[(ActType, &Activations)],
    routed: &mut Vec<Activations>,
    ys: &mut [&mut [f32]],
) -> Result<()> {
    // gather each expert's rows once per activation format
    let mut jobs: Vec<(usize, ActType)> = Vec::new();
    for (e, rows) in rows_of.iter().enumerate() {
        if rows.is_empty() {
            continue;
        }
        for w in mats {
            let act = ActType::for_weight(w.ty()).ok_or_else(|| Error::invalid("experts: no dot kernel"))?;
            if !jobs.contains(&(e, act)) {
                let src = quantized.iter().find(|(a, _)| *a == act).map(|(_, q)| *q);
                let src = src.ok_or_else(|| Error::invalid("experts: input not quantized"))?;
                if routed.len() <= jobs.len() {
                    routed.push(Activations::new());
                }
                routed[jobs.len()].gather(src, rows)?;
                jobs.push((e, act));
            }
        }
    }
    let mut ws = Vec::new();
    let mut acts = Vec::new();
    let mut outs: Vec<&mut [f32]> = Vec::new();
    // split each output buffer into the experts' row ranges, in expert order
    let mut rest: Vec<&mut [f32]> = ys.iter_mut().map(|y| &mut **y).collect();
    let mut at = 0;
    for (e, rows) in rows_of.iter().enumerate() {
        if rows.is_empty() {
            continue;
        }
        debug_assert_eq!(offset[e], at);
        for (m, w) in mats.iter().enumerate() {
            let we = expert(model, w, e)?;
            let n = rows.len() * we.rows;
            let (head, tail) = std::mem::take(&mut rest[m]).split_at_mut(n);
            rest[m] = tail;
            let act = we.act_type();
            let i = jobs.iter().position(|&j| j == (e, act)).unwrap_or(0);
            ws.push(we);
            acts.push(i);
            outs.push(head);
        }
        at += rows.len();
    }
    let acts: Vec<&Activations> = acts.into_iter().map(|i| &routed[i]).collect();
    kernels::matmul_experts_with(kernels::kernels(), pool, &ws, &acts, &mut outs)
}

/// `rows[i] *= s[expert_of[i]]` for an expert tensor `w` with a `*.scale`
/// tensor (one value per expert: `ggml_get_rows` of it by the chosen ids,
/// then `ggml_mul`).
fn scale_expert_rows(model: &Model, rows: &mut [f32], w: &Weight, expert_of: &[usize]) -> Result<()> {
    if let Some(s) = model.weights.as_ref().and_then(|ws| ws.scales.experts.get(&w.info.name)) {
        let s = super::forward::vector(model, s)?;
        let width = rows.len() / expert_of.len().max(1);
        for (row, &e) in rows.chunks_exact_mut(width.max(1)).zip(expert_of) {
            row.iter_mut().for_each(|v| *v *= s[e]);
        }
    }
    Ok(())
}

/// `rows[i] += b[expert_of[i]]`: each expert-grouped row plus its expert's
/// row of the bias `b` ([n_expert][width]), if given (`ggml_add_id`).
fn add_expert_rows(model: &Model, rows: &mut [f32], b: Option<&Weight>, expert_of: &[usize]) -> Result<()> {
    if let Some(b) = b {
        let b = super::forward::vector(model, b)?;
        let width = rows.len() / expert_of.len().max(1);
        for (row, &c) in rows.chunks_exact_mut(width).zip(expert_of) {
            row.iter_mut().zip(&b[c * width..(c + 1) * width]).for_each(|(v, x)| *v += x);
        }
    }
    Ok(())
}

/// `ggml_swiglu_oai` in place (alpha 1.702, limit 7, libm `expf`):
/// `g[i]` becomes min(g, 7) · sigmoid(1.702 · min(g, 7)) · (clamp(u, -7, 7) + 1).
fn swiglu_oai(g: &mut [f32], u: &[f32]) {
    const ALPHA: f32 = 1.702;
    const LIMIT: f32 = 7.0;
    for (gi, &ui) in g.iter_mut().zip(u) {
        // (as std::min and std::clamp: NaN stays NaN)
        let x = if LIMIT < *gi { LIMIT } else { *gi };
        let y = ui.clamp(-LIMIT, LIMIT);
        let glu = x / (1.0 + (ALPHA * -x).exp());
        *gi = glu * (y + 1.0);
    }
}

/// Computes a dense FFN on the layer's input into a buffer, with the
/// caller's matmul inputs (the shared expert).
pub type SharedFfn<'a> = dyn FnMut(&mut Vec<Activations>, &DenseFfn, &mut AlignedF32) -> Result<()> + 'a;

/// The mixture-of-experts FFN of layer `il` for the `nr` rows of `input`
/// ([nr][n_embd]), into `out` ([nr][n_embd]). `dense` computes a dense
/// SwiGLU FFN (the shared expert) into its output buffer.
#[allow(clippy::too_many_arguments)]
pub fn moe_ffn(
    mm: &super::forward::Mm,
    acts: &mut Vec<Activations>,
    e: &ExpertFfn,
    moe: Moe,
    k: usize,
    input: &[f32],
    nr: usize,
    buf: &mut MoeBuffers,
    out: &mut AlignedF32,
    dense: &mut SharedFfn,
) -> Result<()> {
    let (pool, model) = (mm.pool, mm.model);
    let n_embd = e.router.cols();
    let n_expert = e.n_expert();
    let n_ff = e.gate.info.ne[1] as usize;
    if k == 0 || k > n_expert {
        return Err(Error::invalid(format!("experts: {k} of {n_expert} chosen per token")));
    }
    let ks = kernels::kernels();
    // --- 1. router: probs [nr][n_expert]
    let router = super::forward::kw(model, &e.router)?;
    let probs = sized(&mut buf.probs, nr * n_expert);
    kernels::matmul_siblings_reusing(ks, pool, acts, &[router], input, nr, &mut [&mut *probs])?;
    mm.loras.add_to_product(pool, &e.router.info.name, input, nr, probs)?;
    super::forward::add_bias(model, probs, e.router_b.as_ref())?;
    // --- 2., 3. the chosen experts and their weights, per token
    let (gating, norm_weights, w_scale) = moe.routing(&model.hparams);
    let probs_b = e.probs_b.as_ref().map(|b| super::forward::vector(model, b)).transpose()?;
    buf.chosen.resize(nr * k, 0);
    buf.weights.resize(nr * k, 0.0);
    let mut ids: Vec<usize> = Vec::with_capacity(n_expert);
    for t in 0..nr {
        let p = &mut probs[t * n_expert..(t + 1) * n_expert];
        match gating {
            Gating::Softmax => ops::soft_max(p),
            Gating::Sigmoid => p.iter_mut().for_each(|x| *x = 1.0 / (1.0 + (-*x).exp())),
            // (ggml_softplus, then ggml_sqrt)
            Gating::SqrtSoftplus => {
                p.iter_mut().for_each(|x| *x = if *x > 20.0 { *x } else { (1.0 + x.exp()).ln() }.sqrt())
            }
            Gating::SoftmaxWeight => {}
        }
        // the scores that choose: the probabilities, or those plus the
        // selection bias (the weights stay the unbiased probabilities)
        let sel: &[f32] = match probs_b {
            Some(b) => {
                buf.biased.clear();
                buf.biased.extend(p.iter().zip(b).map(|(x, y)| x + y));
                &buf.biased
            }
            None => p,
        };
        ids.clear();
        ids.extend(0..n_expert);
        crate::sampling::stl::sort(&mut ids, &|&a: &usize, &b: &usize| sel[a] > sel[b]);
        let (chosen, w) = (&mut buf.chosen[t * k..(t + 1) * k], &mut buf.weights[t * k..(t + 1) * k]);
        chosen.copy_from_slice(&ids[..k]);
        for (wj, &c) in w.iter_mut().zip(chosen.iter()) {
            *wj = p[c];
        }
        if gating == Gating::SoftmaxWeight {
            // (the chosen logits' own softmax)
            ops::soft_max(w);
        }
        if norm_weights {
            let sum = w.iter().map(|&v| f64::from(v)).sum::<f64>() as f32;
            // (ggml_clamp to the smallest normal f16)
            let sum = sum.max(6.103_515_6e-5);
            w.iter_mut().for_each(|v| *v /= sum);
        }
        if w_scale != 1.0 {
            w.iter_mut().for_each(|v| *v *= w_scale);
        }
    }
    // the rows routed to each expert, token by token (MUL_MAT_ID's order)
    let mut rows_of: Vec<Vec<usize>> = vec![Vec::new(); n_expert];
    for (slot, &c) in buf.chosen.iter().enumerate() {
        rows_of[c].push(slot);
    }
    let mut offset = vec![0usize; n_expert];
    let mut at = 0;
    buf.slot_row.resize(nr * k, 0);
    for (c, slots) in rows_of.iter_mut().enumerate() {
        offset[c] = at;
        for (i, slot) in slots.iter_mut().enumerate() {
            buf.slot_row[*slot] = at + i;
            *slot /= k; // the slot's token: the input row
        }
        at += slots.len();
    }
    // --- 4. gate and up of the chosen experts: [nr * k][n_ff], grouped
    let mut fmts: Vec<ActType> = Vec::new();
    for w in [&e.gate, &e.up] {
        let act = ActType::for_weight(w.ty()).ok_or_else(|| Error::invalid("experts: no dot kernel"))?;
        if !fmts.contains(&act) {
            fmts.push(act);
        }
    }
    while buf.quantized.len() < fmts.len() + 1 {
        buf.quantized.push(Activations::new());
    }
    for (i, &act) in fmts.iter().enumerate() {
        buf.quantized[i].quantize(ks, pool, act, input, nr, n_embd)?;
    }
    {
        let q: Vec<(ActType, &Activations)> = fmts.iter().copied().zip(buf.quantized.iter()).collect();
        let gate = sized(&mut buf.gate, nr * k * n_ff);
        let up = sized(&mut buf.up, nr * k * n_ff);
        expert_products(pool, model, &[&e.gate, &e.up], &rows_of, &offset, &q, &mut buf.routed, &mut [gate, up])?;
    }
    // (the experts' scales, then their LoRA updates, before their biases:
    // build_lora_mm_id)
    let expert_of: Vec<usize> = (0..n_expert).flat_map(|c| std::iter::repeat_n(c, rows_of[c].len())).collect();
    scale_expert_rows(model, &mut buf.gate[..nr * k * n_ff], &e.gate, &expert_of)?;
    scale_expert_rows(model, &mut buf.up[..nr * k * n_ff], &e.up, &expert_of)?;
    if !mm.loras.is_empty() {
        let (gate, up) = (&mut buf.gate[..nr * k * n_ff], &mut buf.up[..nr * k * n_ff]);
        mm.loras.add_to_experts(pool, &e.gate.info.name, &rows_of, input, gate)?;
        mm.loras.add_to_experts(pool, &e.up.info.name, &rows_of, input, up)?;
    }
    // (the experts' biases: ggml_add_id, each row its expert's)
    add_expert_rows(model, &mut buf.gate[..nr * k * n_ff], e.gate_b.as_ref(), &expert_of)?;
    add_expert_rows(model, &mut buf.up[..nr * k * n_ff], e.up_b.as_ref(), &expert_of)?;
    let up = &buf.up[..nr * k * n_ff];
    let hidden = &mut buf.gate[..nr * k * n_ff];
    pool.run_rows(hidden, n_ff, pool.light_rows_per_task(nr * k), &|i, g| {
        let u = &up[i * n_ff..(i + 1) * n_ff];
        match moe.act {
            ExpertAct::SwiGlu => kernels::vecf::swiglu(g, u),
            ExpertAct::SwiGluOai => swiglu_oai(g, u),
        }
    })?;
    // --- the down products [nr * k][n_embd], grouped: the hidden rows
    // quantized once, each expert's contiguous ones gathered
    let down_act = ActType::for_weight(e.down.ty()).ok_or_else(|| Error::invalid("experts: no dot kernel"))?;
    let last = buf.quantized.len() - 1;
    buf.quantized[last].quantize(ks, pool, down_act, hidden, nr * k, n_ff)?;
    let down_rows: Vec<Vec<usize>> =
        rows_of.iter().enumerate().map(|(c, r)| (offset[c]..offset[c] + r.len()).collect()).collect();
    {
        let q = [(down_act, &buf.quantized[last])];
        let down = sized(&mut buf.down, nr * k * n_embd);
        expert_products(pool, model, &[&e.down], &down_rows, &offset, &q, &mut buf.routed, &mut [down])?;
    }
    scale_expert_rows(model, &mut buf.down[..nr * k * n_embd], &e.down, &expert_of)?;
    if !mm.loras.is_empty() {
        let (hidden, down) = (&buf.gate[..nr * k * n_ff], &mut buf.down[..nr * k * n_embd]);
        mm.loras.add_to_experts(pool, &e.down.info.name, &down_rows, hidden, down)?;
    }
    add_expert_rows(model, &mut buf.down[..nr * k * n_embd], e.down_b.as_ref(), &expert_of)?;
    // --- 5. the weighted sum per token
    let (down, slot_row, weights) = (&buf.down[..nr * k * n_embd], &buf.slot_row, &buf.weights);
    let o = sized(out, nr * n_embd);
    pool.run_rows(o, n_embd, pool.light_rows_per_task(nr), &|t, row| {
        for j in 0..k {
            let d = &down[slot_row[t * k + j] * n_embd..][..n_embd];
            let w = weights[t * k + j];
            if j == 0 {
                row.iter_mut().zip(d).for_each(|(o, &v)| *o = v * w);
            } else {
                row.iter_mut().zip(d).for_each(|(o, &v)| *o += v * w);
            }
        }
    })?;
    // --- 6. the shared expert
    if let Some(shared) = &e.shared {
        dense(acts, shared, &mut buf.shared)?;
        let s = &mut buf.shared[..nr * n_embd];
        if let Some(g) = &e.shared_gate {
            // one logit per token: [nr][1]
            let mut logit = vec![0f32; nr];
            let gw = super::forward::kw(model, g)?;
            kernels::matmul_siblings_reusing(ks, pool, acts, &[gw], input, nr, &mut [&mut logit[..]])?;
            mm.loras.add_to_product(pool, &g.info.name, input, nr, &mut logit)?;
            for (row, &x) in s.chunks_exact_mut(n_embd).zip(&logit) {
                // ggml_silu of one value (the scalar x / (1 + expf(-x))), ggml_div by x
                let gate = x / (1.0 + (-x).exp()) / x;
                row.iter_mut().for_each(|v| *v *= gate);
            }
        }
        let o = &mut out[..nr * n_embd];
        o.iter_mut().zip(&*s).for_each(|(a, b)| *a += b);
    }
    Ok(())
}
