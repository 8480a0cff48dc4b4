//! Attention without flash attention (`flash_attn_type` DISABLED,
//! llama-cpp-python's default), with the numerics of the reference's
//! `build_attn_mha` on the CPU backend:
//!
//! ```text
//! kq  = ggml_mul_mat(k, q)                  [n_kv][nt] per head
//! kq  = ggml_soft_max_ext(kq, mask, kq_scale, 0)
//! kqv = ggml_mul_mat(v, kq)                 V stored transposed (v_trans)
//! ```
//!
//! - The products run over the reference's `n_kv` cells (one past the last
//!   cell in use, padded to 256; [`KvCache::n_kv`]), masked cells included:
//!   the cell index decides which lane of a sum a product lands in.
//! - `ggml_mul_mat` with an F16 matrix rounds its f32 side to f16 (q, then
//!   the probabilities), then runs llamafile's tinyBLAS<16> when the shape
//!   allows it (2 or more tokens; see `tinyblas_f16::runs`), else
//!   `ggml_vec_dot_f16`. With an F32 cache nothing is rounded and the same
//!   orders apply (tinyBLAS<16> F32, `ggml_vec_dot_f32`, whose 64-lane tree
//!   equals `dot_f16`'s for these lengths: multiples of 64).
//! - `ggml_compute_forward_soft_max_f32`: `kq·scale`, plus the mask (0, or
//!   -inf for cells the token does not see), the row max, `expf(x − max)`
//!   over groups of 16 with f64 sums (`vecf::soft_max`), then every value
//!   times `(float)(1.0 / sum)`.
//!
//! Every (token, head) row is independent, so the result does not depend on
//! the thread count; it depends on the ubatch size only as the reference's
//! does (one token: vec_dot; more: tinyBLAS).

use super::attention::{per_row, AttnShape, BiasFn};
use super::kv_cache::{KvCache, KvType};
use crate::error::Result;
use crate::kernels::aligned::AlignedF32;
use crate::kernels::ggml_paths::tinyblas_f16;
use crate::kernels::vecf;
use crate::kernels::ThreadPool;

/// One of the dot orders of `ggml_mul_mat`: tinyBLAS<16>, else
/// `ggml_vec_dot_f16` for an F16 matrix, `ggml_vec_dot_f32` for an F32 one.
fn dot(tiny: bool, f16: bool, x: &[f32], y: &[f32]) -> f32 {
    if tiny {
        tinyblas_f16::dot(x, y)
    } else if f16 {
        vecf::dot_f16(x, y)
    } else {
        vecf::dot_f32(x, y)
    }
}

/// The attention of every (token, head) of the ubatch without flash
/// attention (see [`super::attention::attention`]): `visible[t]` lists the
/// cells token `t` sees, `q` is [nt][n_head * hd_k]; `out` becomes
/// [nt][n_head * hd_v]. `sinks`: per query head, a logit joining every
/// softmax (gpt-oss); `bias`: added to each scaled score (ALiBi).
#[allow(clippy::too_many_arguments)]
pub fn attention(
    pool: &ThreadPool,
    kv: &KvCache,
    il: usize,
    q: &[f32],
    sh: AttnShape,
    sinks: Option<&[f32]>,
    bias: Option<&BiasFn>,
    visible: &[Vec<usize>],
    out: &mut AlignedF32,
) -> Result<()> {
    let nt = visible.len();
    let n_kv = kv.n_kv();
    let k_f16 = kv.k[il].ty() == KvType::F16;
    let v_f16 = kv.v[il].ty() == KvType::F16;
    // which order each product runs: kq is [n_kv rows] x [hd_k], kqv [hd_v rows] x [n_kv]
    // (q is a permuted view: an F16 K converts it to a contiguous copy,
    // which tinyBLAS takes; against an F32 K it is used as it is, and
    // ggml's mul_mat gives llamafile only contiguous inputs)
    let kq_tiny = k_f16 && tinyblas_f16::runs(n_kv, nt, sh.hd_k);
    let kqv_tiny = tinyblas_f16::runs(sh.hd_v, nt, n_kv);

    // K rows of the first n_kv cells: [n_kv][kw] (cells not in use stay 0;
    // they are masked, so never read)
    let mut k = vec![0f32; n_kv * sh.kw];
    // V transposed per kv head: [n_head_kv][hd_v][n_kv] (0 for cells not in
    // use: their probability is 0 and 0·0 adds nothing)
    let mut vt = vec![0f32; sh.n_head_kv * sh.hd_v * n_kv];
    let mut vrow = vec![0f32; sh.vw];
    for c in (0..n_kv).filter(|&c| !kv.cells[c].is_empty()) {
        KvCache::read(&kv.k[il], c * sh.kw, &mut k[c * sh.kw..(c + 1) * sh.kw]);
        KvCache::read(&kv.v[il], c * sh.vw, &mut vrow);
        for (j, &x) in vrow.iter().enumerate() {
            // element j of the row is (head j / hd_v, dim j % hd_v)
            vt[j * n_kv + c] = x;
        }
    }

    let round = |x: f32, f16: bool| if f16 { vecf::round_f16(x) } else { x };
    per_row(pool, nt, sh, out, &|i, t, g, row| {
        let qh: Vec<f32> = q[i * sh.hd_k..(i + 1) * sh.hd_k].iter().map(|&x| round(x, k_f16)).collect();
        // kq·scale + mask, [n_kv]
        let mut p = vec![f32::NEG_INFINITY; n_kv];
        for &c in &visible[t] {
            let kc = &k[c * sh.kw + g * sh.hd_k..][..sh.hd_k];
            let s = dot(kq_tiny, k_f16, kc, &qh);
            // (softcapping: ggml_scale by 1 / cap, ggml_tanh, ggml_scale by
            // cap, then the softmax's scale)
            let s = if sh.softcap != 0.0 { (s * (1.0 / sh.softcap)).tanh() * sh.softcap } else { s };
            // (the mask: 0, or ALiBi's bias; ggml_soft_max_ext)
            p[c] = s * sh.kq_scale + bias.map_or(0.0, |f| f(i % sh.n_head, t, c));
        }
        super::ops::soft_max_sink(&mut p, sinks.map(|s| s[i % sh.n_head]));
        p.iter_mut().for_each(|x| *x = round(*x, v_f16));
        for (d, o) in row.iter_mut().enumerate() {
            *o = dot(kqv_tiny, v_f16, &vt[(g * sh.hd_v + d) * n_kv..][..n_kv], &p);
        }
    })
}

#[cfg(test)]
mod tests {
    use crate::context::ops;

    /// The reference's `ggml_soft_max_ext` (scale 0.125, an F32 mask of 0 and
    /// -inf, rows of 300) on its CPU backend: tests/goldens/quant/soft_max.bin,
    /// made by scripts/make-quant-goldens.sh (make_softmax_golden.c).
    #[test]
    fn softmax_equals_the_reference_soft_max_ext() {
        let g = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/goldens/quant/soft_max.bin"));
        let f = |i: usize| f32::from_le_bytes([g[4 * i], g[4 * i + 1], g[4 * i + 2], g[4 * i + 3]]);
        let (rows, cols) = (f(0).to_bits() as usize, f(1).to_bits() as usize);
        let scale = f(2);
        let n = rows * cols;
        assert_eq!(g.len(), 12 + 12 * n, "golden size");
        for r in 0..rows {
            let mut p: Vec<f32> = (0..cols).map(|c| f(3 + r * cols + c) * scale + f(3 + n + r * cols + c)).collect();
            ops::soft_max(&mut p);
            for (c, v) in p.iter().enumerate() {
                let want = f(3 + 2 * n + r * cols + c);
                assert_eq!(v.to_bits(), want.to_bits(), "row {r} col {c}: {v} vs {want}");
            }
        }
    }
}
