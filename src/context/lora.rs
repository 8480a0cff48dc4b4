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
            let wa = kernels::Weights::new(adapter.file.tensor_data(a), a.ggml_type, a.ne[1] as usize, a.ne[0] as usize)?;
            let wb = kernels::Weights::new(adapter.file.tensor_data(b), b.ggml_type, b.ne[1] as usize, rank)?;
            let mut ax = vec![0f32; nt * rank]; // [nt][rank]
            kernels::matmul(pool, &wa, x, nt, &mut ax)?;
            let mut bax = vec![0f32; nt * wb.rows]; // [nt][n_out]
            kernels::matmul(pool, &wb, &ax, nt, &mut bax)?;
            add_scaled(y, &bax, scale);
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
            let wb = kernels::Weights::new(adapter.file.tensor_data(b), b.ggml_type, b.ne[1] as usize, rank)?;
            let mut delta = vec![0f32; nt * wb.rows]; // [nt][n_embd]
            kernels::matmul(pool, &wb, &rows, nt, &mut delta)?;
            add_scaled(x, &delta, scale);
        }
        Ok(())
    }
}

/// `y += d · s`, rounded as `ggml_scale` then `ggml_add` (two roundings).
fn add_scaled(y: &mut [f32], d: &[f32], s: f32) {
    y.iter_mut().zip(d).for_each(|(v, di)| *v += di * s);
}
