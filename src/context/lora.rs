//! LoRA adapters applied in the forward pass, as the reference's
//! `build_lora_mm` and `build_inp_embd` do: after a weight's product
//! `y = W x`, for each adapter with a pair for W,
//! `y = y + scale · (B (A x))`: two more matmuls (on the kernels the
//! reference runs for those shapes and types, activations quantized for
//! each), a `ggml_scale`, a `ggml_add`. Token embeddings get
//! `scale · (B · A[token])`, A read by row.
//!
//! The order of the adapters: the reference iterates an
//! `std::unordered_map<llama_adapter_lora *, float>` filled in the caller's
//! order; libstdc++ puts each new node at the front of the list when its
//! bucket is empty or shared with the first node, so two adapters run in
//! the reverse of the caller's order. Beyond two the reference's order
//! depends on heap addresses; minfer keeps the reverse order
//! (`ActiveLoras::new`).

use crate::error::Result;
use crate::kernels::{self, ThreadPool};
use crate::model::lora::{LoraAdapter, LoraPair};
use std::sync::Arc;

/// An adapter at the scale the caller set.
#[derive(Clone)]
pub struct ActiveLora {
    pub adapter: Arc<LoraAdapter>,
    pub scale: f32,
}

/// The adapters a context applies, in the order their updates are added.
#[derive(Clone, Default)]
pub struct ActiveLoras(Vec<ActiveLora>);

impl ActiveLoras {
    /// From `llama_set_adapters_lora`'s list: zero scales left out, a
    /// repeated adapter kept at its first scale (the map's insert), then the
    /// map's iteration order (see the module comment).
    pub fn new(list: Vec<ActiveLora>) -> ActiveLoras {
        let mut kept: Vec<ActiveLora> = Vec::with_capacity(list.len());
        for l in list {
            if l.scale != 0.0 && !kept.iter().any(|k| Arc::ptr_eq(&k.adapter, &l.adapter)) {
                kept.push(l);
            }
        }
        kept.reverse();
        ActiveLoras(kept)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each adapter with a pair for the weight named `name`, with the
    /// pair's scale.
    fn for_weight<'a>(&'a self, name: &'a str) -> impl Iterator<Item = (&'a LoraAdapter, &'a LoraPair, f32)> + 'a {
        self.0.iter().filter_map(move |l| {
            let pair = l.adapter.pair(name)?;
            Some((&*l.adapter, pair, pair.scale(l.adapter.alpha, l.scale)))
        })
    }

    /// `y += scale · B (A x)` for each adapter of the weight `name`: `x`
    /// [nt][n_in], `y` [nt][n_out].
    pub fn add_to_product(&self, pool: &ThreadPool, name: &str, x: &[f32], nt: usize, y: &mut [f32]) -> Result<()> {
        for (adapter, pair, scale) in self.for_weight(name) {
            let (a, b) = (&pair.a, &pair.b);
            let rank = pair.rank();
            // A: rank rows of n_in; B: n_out rows of rank
            let wa =
                kernels::Weights::new(adapter.file.tensor_data(a), a.ggml_type, a.ne[1] as usize, a.ne[0] as usize)?
                    .unrepacked();
            let wb =
                kernels::Weights::new(adapter.file.tensor_data(b), b.ggml_type, b.ne[1] as usize, rank)?.unrepacked();
            let mut ax = vec![0f32; nt * rank]; // [nt][rank]
            kernels::matmul(pool, &wa, x, nt, &mut ax)?;
            let mut bax = vec![0f32; nt * wb.rows]; // [nt][n_out]
            kernels::matmul(pool, &wb, &ax, nt, &mut bax)?;
            add_scaled(y, &bax, scale);
        }
        Ok(())
    }

    /// The experts' updates (the reference's `build_lora_mm_id`): for each
    /// expert `e` of the 3-D weight `name` and each row `r` of
    /// `rows_of[e]`, the next row of `y` ([rows][n_out], grouped by expert
    /// in expert order) gets `scale · B_e (A_e x[r])` (`x` [*][n_in]). The
    /// products run MUL_MAT_ID's kernels (`kernels::matmul_experts_with`).
    pub fn add_to_experts(
        &self,
        pool: &ThreadPool,
        name: &str,
        rows_of: &[Vec<usize>],
        x: &[f32],
        y: &mut [f32],
    ) -> Result<()> {
        let ks = kernels::kernels();
        for (adapter, pair, scale) in self.for_weight(name) {
            let (a, b) = (&pair.a, &pair.b);
            let rank = pair.rank();
            let (n_in, n_out) = (a.ne[0] as usize, b.ne[1] as usize);
            let (a_bytes, b_bytes) = (adapter.file.tensor_data(a), adapter.file.tensor_data(b));
            let (a_size, b_size) = (a_bytes.len() / rows_of.len().max(1), b_bytes.len() / rows_of.len().max(1));
            let experts: Vec<usize> = (0..rows_of.len()).filter(|&e| !rows_of[e].is_empty()).collect();
            // A_e x for each routed row: [rows][rank], grouped by expert
            let mut was = Vec::with_capacity(experts.len());
            let mut acts = Vec::with_capacity(experts.len());
            let mut xr = Vec::new();
            for &e in &experts {
                let wa = kernels::Weights::new(&a_bytes[e * a_size..(e + 1) * a_size], a.ggml_type, rank, n_in)?
                    .unrepacked();
                xr.clear();
                for &r in &rows_of[e] {
                    xr.extend_from_slice(&x[r * n_in..(r + 1) * n_in]);
                }
                let mut q = kernels::Activations::new();
                q.quantize(ks, pool, wa.act_type(), &xr, rows_of[e].len(), n_in)?;
                was.push(wa);
                acts.push(q);
            }
            let n_rows: usize = experts.iter().map(|&e| rows_of[e].len()).sum();
            let mut ax = vec![0f32; n_rows * rank]; // [rows][rank]
            {
                let mut outs = split_rows(&mut ax, &experts, rows_of, rank);
                let refs: Vec<&kernels::Activations> = acts.iter().collect();
                kernels::matmul_experts_with(ks, pool, &was, &refs, &mut outs)?;
            }
            // B_e (A_e x): [rows][n_out]
            let mut wbs = Vec::with_capacity(experts.len());
            let mut acts = Vec::with_capacity(experts.len());
            let mut at = 0;
            for &e in &experts {
                let wb = kernels::Weights::new(&b_bytes[e * b_size..(e + 1) * b_size], b.ggml_type, n_out, rank)?
                    .unrepacked();
                let n = rows_of[e].len();
                let mut q = kernels::Activations::new();
                q.quantize(ks, pool, wb.act_type(), &ax[at * rank..(at + n) * rank], n, rank)?;
                at += n;
                wbs.push(wb);
                acts.push(q);
            }
            let mut bax = vec![0f32; n_rows * n_out];
            {
                let mut outs = split_rows(&mut bax, &experts, rows_of, n_out);
                let refs: Vec<&kernels::Activations> = acts.iter().collect();
                kernels::matmul_experts_with(ks, pool, &wbs, &refs, &mut outs)?;
            }
            add_scaled(&mut y[..n_rows * n_out], &bax, scale);
        }
        Ok(())
    }

    /// `x[t] += scale · B A[tokens[t]]` for each adapter of the token
    /// embeddings `name`: `x` [nt][n_embd].
    pub fn add_to_embeddings(&self, pool: &ThreadPool, name: &str, tokens: &[usize], x: &mut [f32]) -> Result<()> {
        let nt = tokens.len();
        for (adapter, pair, scale) in self.for_weight(name) {
            let (a, b) = (&pair.a, &pair.b);
            let rank = pair.rank();
            let a_bytes = adapter.file.tensor_data(a);
            let a_row = a_bytes.len() / (a.ne[1] as usize).max(1);
            let mut rows = vec![0f32; nt * rank]; // [nt][rank]: A's row per token (ggml_get_rows)
            for (t, &id) in tokens.iter().enumerate() {
                let src = a_bytes.get(id * a_row..(id + 1) * a_row).ok_or_else(|| {
                    crate::Error::invalid(format!("token {id} is outside the LoRA tensor '{}'", a.name))
                })?;
                crate::quant::dequantize_row(a.ggml_type, src, &mut rows[t * rank..(t + 1) * rank])?;
            }
            let wb =
                kernels::Weights::new(adapter.file.tensor_data(b), b.ggml_type, b.ne[1] as usize, rank)?.unrepacked();
            let mut delta = vec![0f32; nt * wb.rows]; // [nt][n_embd]
            kernels::matmul(pool, &wb, &rows, nt, &mut delta)?;
            add_scaled(x, &delta, scale);
        }
        Ok(())
    }
}

/// `buf` ([rows][width], grouped by expert) cut into each expert's rows.
fn split_rows<'b>(buf: &'b mut [f32], experts: &[usize], rows_of: &[Vec<usize>], width: usize) -> Vec<&'b mut [f32]> {
    let mut rest = buf;
    let mut outs = Vec::with_capacity(experts.len());
    for &e in experts {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(rows_of[e].len() * width);
        outs.push(head);
        rest = tail;
    }
    outs
}

/// `y += d · s`, rounded as `ggml_scale` then `ggml_add` (two roundings).
fn add_scaled(y: &mut [f32], d: &[f32], s: f32) {
    y.iter_mut().zip(d).for_each(|(v, di)| *v += di * s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ggml_type::GgmlType;
    use crate::gguf::{GgufFile, GgufWriter};
    use crate::kernels::ThreadPool;
    use crate::model::metadata::Metadata;
    use std::collections::HashMap;

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// An adapter with one F32 pair for "w": A [2 inputs, rank 2] (rows
    /// (1, 2), (3, 4)), B [rank 2, 3 outputs] (rows (1, 0), (0, 1), (1, 1)).
    fn adapter(alpha: f32) -> Arc<LoraAdapter> {
        let mut w = GgufWriter::new();
        w.add_tensor("w.lora_a", GgmlType::F32, &[2, 2], f32_bytes(&[1.0, 2.0, 3.0, 4.0]));
        w.add_tensor("w.lora_b", GgmlType::F32, &[2, 3], f32_bytes(&[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]));
        let file = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
        let pairs: HashMap<String, LoraPair> = [(
            "w".to_string(),
            LoraPair { a: file.find_tensor("w.lora_a").unwrap(), b: file.find_tensor("w.lora_b").unwrap() },
        )]
        .into();
        let metadata = Metadata::from_gguf(&file);
        Arc::new(LoraAdapter { file, metadata, alpha, invocation_tokens: Vec::new(), pairs, model_id: 0 })
    }

    #[test]
    fn scale_is_alpha_over_rank_unless_alpha_is_zero() {
        let a = adapter(16.0);
        let p = a.pair("w").unwrap();
        assert_eq!(p.rank(), 2);
        assert_eq!(p.scale(16.0, 0.5), 4.0);
        assert_eq!(p.scale(0.0, 0.5), 0.5);
    }

    #[test]
    fn the_list_drops_zero_scales_keeps_first_repeats_and_runs_reversed() {
        let (x, y) = (adapter(0.0), adapter(0.0));
        let l = |a: &Arc<LoraAdapter>, scale| ActiveLora { adapter: Arc::clone(a), scale };
        let list = ActiveLoras::new(vec![l(&x, 1.0), l(&y, 0.0), l(&x, 2.0), l(&y, 3.0)]);
        let got: Vec<(bool, f32)> = list.0.iter().map(|a| (Arc::ptr_eq(&a.adapter, &x), a.scale)).collect();
        assert_eq!(got, vec![(false, 3.0), (true, 1.0)]);
        assert!(ActiveLoras::new(vec![l(&x, 0.0)]).is_empty());
    }

    #[test]
    fn a_product_gets_scale_times_b_a_x() {
        let pool = ThreadPool::new(1).unwrap();
        let loras = ActiveLoras::new(vec![ActiveLora { adapter: adapter(0.0), scale: 0.5 }]);
        // x = (1, 1): A x = (3, 7); B (A x) = (3, 7, 10); y = 1 + 0.5 · that
        let mut y = vec![1.0f32; 3];
        loras.add_to_product(&pool, "w", &[1.0, 1.0], 1, &mut y).unwrap();
        assert_eq!(y, vec![2.5, 4.5, 6.0]);
        // another weight's product is left alone
        let mut z = vec![1.0f32; 3];
        loras.add_to_product(&pool, "v", &[1.0, 1.0], 1, &mut z).unwrap();
        assert_eq!(z, vec![1.0; 3]);
    }

    #[test]
    fn token_embeddings_get_scale_times_b_a_row() {
        let pool = ThreadPool::new(1).unwrap();
        let loras = ActiveLoras::new(vec![ActiveLora { adapter: adapter(0.0), scale: 2.0 }]);
        // (as a token_embd pair: A's row 1 is (3, 4); B (3, 4) = (3, 4, 7))
        let mut x = vec![0.0f32; 3];
        loras.add_to_embeddings(&pool, "w", &[1], &mut x).unwrap();
        assert_eq!(x, vec![6.0, 8.0, 14.0]);
        assert!(loras.add_to_embeddings(&pool, "w", &[2], &mut x).is_err(), "a token past A's rows");
    }
}
