//! The forward pass's buffers, kept by the context across ubatches.
//!
//! A ubatch's intermediates are large (Gemma 3 at 512 tokens: 4 MB for each
//! FFN buffer). Allocated afresh for every matmul and layer, glibc maps
//! them, the kernel faults them in page by page and zeroes them, and the
//! free hands them back: about 12 % of the CPU time of a 512-token prefill,
//! mostly page faults.
//! The context keeps one `Workspace`; the forward pass resizes its buffers
//! in place, so after the first ubatch of a size nothing is allocated.

use super::attention::LayerKv;
use super::moe::MoeBuffers;
use crate::kernels::aligned::AlignedF32;
use crate::kernels::Activations;

/// Buffers of one ubatch; every user overwrites all it reads (see [`sized`]).
///
/// A layer's values that are never live at the same time share a buffer:
/// the attention's q, k and output sit in the FFN's two buffers (dead while
/// the attention runs), and the projections' outputs in `h` (the normed
/// input is dead once a matmul has quantized it). Gemma 3 at 512 tokens:
/// ~6 MB of peak memory fewer than one buffer per value.
///
/// The f32 buffers start on a cache line (`AlignedF32`): their rows are
/// whole numbers of 64-byte lines for these models, and a 64-byte load that
/// straddles two lines costs a second load slot on Intel cores.
#[derive(Debug, Default)]
pub struct Workspace {
    /// [nr][n_embd] the residual stream
    pub x: AlignedF32,
    /// [nr][n_embd] the normed input of a block; then the block's output
    /// (attention projection, FFN down) before the residual add
    pub h: AlignedF32,
    /// [nr][n_ff] the FFN gate, then the activation in place; during the
    /// attention, q ([nt][n_head * hd_k])
    pub gate: AlignedF32,
    /// [nr][n_ff] the FFN up; during the attention, k ([nt][n_head_kv *
    /// hd_k]) and, once k is in the cache, the attention output ([nt][n_head
    /// * hd_v])
    pub up: AlignedF32,
    /// [nt][n_head_kv * hd_v] v; in parallel blocks, then the FFN output
    /// [nr][n_embd]
    pub v: AlignedF32,
    /// the output of a fused projection before it is split: [nt][q + k +
    /// v widths] (`attn_qkv`), [nr][2 * n_ff] (a fused gate and up)
    pub fused: AlignedF32,
    /// [nt][n_embd] the FFN's normed input while the attention runs
    /// (parallel blocks: phi2, falcon, cohere2; StableLM 2 12B)
    pub ffn_in: AlignedF32,
    /// one layer's K and V as f32, as the flash attention reads them
    pub layer: LayerKv,
    /// the matmuls' quantized inputs, one per activation format
    pub acts: Vec<Activations>,
    /// the mixture-of-experts FFN's buffers
    pub moe: MoeBuffers,
    /// an encoder's K and V of one layer, a cell per token of the batch
    /// (`encoder.rs`: the reference keeps no cache for these models)
    pub enc_kv: Option<super::kv_cache::KvCache>,
}

/// The first `len` values of `buf`, which grows to hold them and never
/// shrinks, so that a buffer holding values of different sizes in turn (q,
/// then the FFN gate) is not cleared each time it grows back (Vec::resize
/// zeroes what it adds: ~1 % of a prefill). Values kept from
/// earlier use are not cleared (a fresh part is zero), so the caller must
/// write every value it later reads, and use the returned slice: `buf`'s
/// own length may be larger.
pub fn sized(buf: &mut AlignedF32, len: usize) -> &mut [f32] {
    buf.grown_to(len)
}
