//! Attention over the KV cache with the reference's flash-attention
//! numerics (without flash attention: `attention_mha.rs`) (ggml-cpu ops.cpp, `ggml_compute_forward_flash_attn_ext_f16`).
//!
//! The reference picks one of two paths per ubatch, and so do we:
//! - **tiled** (a ubatch of ≥ 64 tokens): per query row,
//!   KV cells in tiles of 64 by cell index; scores `q·k` as fused
//!   multiply-add chains in f32 (q not rounded), times the scale, masked
//!   cells at -inf; an online softmax per tile (max, `expf` of ggml's SIMD
//!   flavour, the tile sum in f64 added to an f32 running sum, earlier
//!   accumulators rescaled by libm `expf(M_old - M_new)`), `P·V` as fused
//!   chains in f32; finally divided by the sum. Tiles where the row sees no
//!   cell are skipped.
//! - **one chunk** (fewer tokens): per query row, cell by cell, q rounded to
//!   f16, `ggml_vec_dot_f16`, and the V accumulator kept in f16 (rounded
//!   after every update).
//!
//! An f32 K/V cache is rounded to f16 first, as the reference casts it
//! (without flash attention it is used as f32: `attention_mha.rs`). On the
//! one-chunk path an f16 cache is read in place by each row task (f16 → f32
//! is exact, done in registers); otherwise the rows in use are first
//! gathered as f32 into [`LayerKv`].
//!
//! Deviation: for a single-token ubatch over ≥ 512 cells the reference
//! splits the cells into one chunk per thread and merges the partial
//! softmaxes, so its result depends on the thread count. minfer always uses
//! the one-chunk order (the reference's result at one thread) so that its
//! logits are the same for every thread count.
//!
//! Every (token, head) row is independent, so rows run in parallel on the
//! pool and the result does not depend on the thread count or the ubatch
//! split (beyond the path choice above, which the reference makes too). On
//! the tiled path a task takes a block of tokens and runs their rows tile
//! by tile together, each row's operations unchanged, so that a K/V tile is
//! read from L1 by all of them.

use super::batch::Token;
use super::kv_cache::{KvCache, KvRows, KvType};
use crate::error::Result;
use crate::kernels::aligned::AlignedF32;
use crate::kernels::vecf::{self, TILE};
use crate::kernels::ThreadPool;

/// Query rows per tile in the reference (GGML_FA_TILE_Q): ubatches with at
/// least this many tokens take the tiled path.
const Q_TILE: usize = 64;

/// Head layout of one attention layer.
#[derive(Clone, Copy)]
pub struct AttnShape {
    pub n_head: usize,
    pub n_head_kv: usize,
    pub hd_k: usize,
    pub hd_v: usize,
    /// Elements per KV cell row: n_head_kv * hd_k and n_head_kv * hd_v.
    pub kw: usize,
    pub vw: usize,
    pub kq_scale: f32,
    /// 0, or the cap of the scores' softcapping: cap * tanh(s / cap)
    /// (gemma2).
    pub softcap: f32,
}

/// ALiBi (jina-bert-v2; the reference's `max_bias`): every score gets
/// `slope(head) · mask` added after the scale, the mask `−|p_token − p_cell|`
/// (rounded to f16 with flash attention, whose mask is F16; f32 without).
#[derive(Clone, Copy, Debug)]
pub struct Alibi<'a> {
    pub max_bias: f32,
    /// The position of each token of the ubatch.
    pub token_pos: &'a [i32],
}

impl Alibi<'_> {
    /// ggml's slope of query head `h` of `n_head`: m0^(h+1) for the first
    /// 2^floor(log2 n_head) heads, m1^(2(h − that) + 1) after.
    pub fn slope(max_bias: f32, n_head: usize, h: usize) -> f32 {
        let n_head_log2 = 1u32 << (n_head as u32).ilog2();
        let m0 = 2f32.powf(-max_bias / n_head_log2 as f32);
        let m1 = 2f32.powf(-(max_bias / 2.0) / n_head_log2 as f32);
        if (h as u32) < n_head_log2 {
            m0.powf(h as f32 + 1.0)
        } else {
            m1.powf((2 * (h as u32 - n_head_log2) + 1) as f32)
        }
    }
}

/// A score's additive bias: `(query head, token, cell) -> f32` (ALiBi's).
pub(super) type BiasFn<'a> = dyn Fn(usize, usize, usize) -> f32 + Sync + 'a;

/// The bias of [`Alibi`] for the cells of `kv` (f16 masks: `f16_mask`).
fn alibi_bias<'a>(
    a: Alibi<'a>,
    kv: &'a KvCache,
    n_head: usize,
    f16_mask: bool,
) -> impl Fn(usize, usize, usize) -> f32 + Sync + 'a {
    let slopes: Vec<f32> = (0..n_head).map(|h| Alibi::slope(a.max_bias, n_head, h)).collect();
    move |h, t, c| {
        let m = -((i64::from(a.token_pos[t]) - i64::from(kv.cells[c].pos)).abs() as f32);
        slopes[h] * if f16_mask { vecf::round_f16(m) } else { m }
    }
}

/// The K/V rows of one layer as f32, laid out for the path in use (kept
/// across layers and ubatches in the context's workspace).
#[derive(Debug, Default)]
pub struct LayerKv {
    /// Tiled path: per (tile, kv head), K transposed [hd_k][TILE] and V
    /// [TILE][hd_v]; columns of cells not in use are zero.
    /// One chunk: per cell, K [kw] and V [vw] (only cells in use are read).
    /// From a cache line (`AlignedF32`): rows of 64 values, each a whole
    /// number of lines, so the 64-byte loads of the tile products never
    /// straddle two.
    k: AlignedF32,
    v: AlignedF32,
    /// Tile index → slot in `k`/`v`, or usize::MAX for tiles with no cell in use.
    tile_slot: Vec<usize>,
}

/// Attention of every (token, head) of the ubatch over the KV cells its
/// sequence sees (`visible[t]` for token t, from [`visible_cells`]), with
/// the flash-attention numerics or, with `flash` off, those of
/// `attention_mha.rs`. `q` is [nt][n_head * hd_k]; `out` becomes
/// [nt][n_head * hd_v]. `layer` is scratch space.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    pool: &ThreadPool,
    kv: &KvCache,
    il: usize,
    visible: &[Vec<usize>],
    q: &[f32],
    sh: AttnShape,
    sinks: Option<&[f32]>,
    alibi: Option<Alibi>,
    (flash, threads): (bool, usize),
    layer: &mut LayerKv,
    out: &mut AlignedF32,
) -> Result<()> {
    let nt = visible.len();
    let bias_fn = alibi.map(|a| alibi_bias(a, kv, sh.n_head, flash));
    let bias: Option<&BiasFn> = bias_fn.as_ref().map(|f| f as &BiasFn);
    if !flash {
        return super::attention_mha::attention(pool, kv, il, q, sh, sinks, bias, visible, out);
    }
    let group = sh.n_head / sh.n_head_kv;
    let tiled = nt >= Q_TILE;
    let n_kv = kv.n_kv();
    if nt == 1 && n_kv >= SPLIT_KV_CELLS {
        let split = SplitKv { threads: threads.max(1), n_kv, visible: &visible[0], sinks, bias };
        if let (KvRows::F16(k), KvRows::F16(v)) = (&kv.k[il], &kv.v[il]) {
            return split_kv(pool, sh, q, k, v, split, out);
        }
        // (an f32 cache: cast to f16 first, as below)
        gather_cells(kv, il, sh, layer);
        layer.k.iter_mut().for_each(|x| *x = vecf::round_f16(*x));
        layer.v.iter_mut().for_each(|x| *x = vecf::round_f16(*x));
        return split_kv(pool, sh, q, &layer.k, &layer.v, split, out);
    }
    if let (false, KvRows::F16(k), KvRows::F16(v)) = (tiled, &kv.k[il], &kv.v[il]) {
        // one chunk over an f16 cache: each row task reads the cells it sees
        // straight from the cache (f16 → f32 in registers, exact), so no
        // gather runs on the calling thread while the pool waits
        return per_row(pool, nt, sh, out, &|i, t, g, row| {
            let sink = sinks.map(|s| s[i % sh.n_head]);
            let b = bias.map(|f| (f, i % sh.n_head, t));
            row_one_chunk_of(sh, &q[i * sh.hd_k..(i + 1) * sh.hd_k], &visible[t], k, v, g, sink, b, row);
        });
    }
    if tiled {
        gather_tiles(kv, il, sh, layer)
    } else {
        gather_cells(kv, il, sh, layer)
    }
    // The reference casts an f32 K/V cache to f16 before flash attention
    // (llama-graph.cpp build_attn_mha), so f32 caches take the f16 path with
    // their values rounded.
    if kv.k[il].ty() == KvType::F32 {
        layer.k.iter_mut().for_each(|x| *x = vecf::round_f16(*x));
    }
    if kv.v[il].ty() == KvType::F32 {
        layer.v.iter_mut().for_each(|x| *x = vecf::round_f16(*x));
    }

    let layer = &*layer;
    if tiled {
        // the query heads of one kv head and token read the same K/V tiles
        // under the same mask: they run together, each K/V value loaded once
        // for all of them (each row's arithmetic is the one it has alone)
        // ... and blocks of tokens run tile by tile together (`tokens_tiled`):
        // one task per (token block, kv head), the last blocks (the longest,
        // under a causal mask) first
        let out = super::workspace::sized(out, nt * sh.n_head * sh.hd_v); // [nt][n_head][hd_v]
        let n_blocks = nt.div_ceil(TOKEN_BLOCK);
        let out_ptr = OutPtr(out.as_mut_ptr());
        let out_ptr = &out_ptr;
        return pool.run(n_blocks * sh.n_head_kv, &|task| {
            let (b, g) = (n_blocks - 1 - task / sh.n_head_kv, task % sh.n_head_kv);
            let tokens = b * TOKEN_BLOCK..((b + 1) * TOKEN_BLOCK).min(nt);
            // rows t * n_head_kv + g of q and out, in units of `group` heads:
            // heads g * group.. of token t
            let j = |t: usize| t * sh.n_head_kv + g;
            // (arrays, not Vecs: no allocation per task)
            let n = tokens.len();
            let mut qs: [&[f32]; TOKEN_BLOCK] = [&[]; TOKEN_BLOCK];
            let mut vis: [&[usize]; TOKEN_BLOCK] = [&[]; TOKEN_BLOCK];
            let mut outs: [&mut [f32]; TOKEN_BLOCK] = Default::default();
            for (k, t) in tokens.enumerate() {
                qs[k] = &q[j(t) * group * sh.hd_k..][..group * sh.hd_k];
                vis[k] = &visible[t];
                // SAFETY: this task alone writes heads g * group.. of its
                // tokens (a (token, kv head) pair is one task's), within
                // `out` (nt * n_head * hd_v floats), borrowed mutably for
                // the whole submission.
                outs[k] =
                    unsafe { std::slice::from_raw_parts_mut(out_ptr.0.add(j(t) * group * sh.hd_v), group * sh.hd_v) };
            }
            let sinks = sinks.map(|s| &s[g * group..(g + 1) * group]);
            let bias = bias.map(|f| (f, g * group, b * TOKEN_BLOCK));
            block_tiled(layer, sh, g, &qs[..n], &vis[..n], sinks, bias, &mut outs[..n]);
        });
    }
    per_row(pool, nt, sh, out, &|i, t, g, row| {
        let qh = &q[i * sh.hd_k..(i + 1) * sh.hd_k];
        let sink = sinks.map(|s| s[i % sh.n_head]);
        let b = bias.map(|f| (f, i % sh.n_head, t));
        row_one_chunk_of(sh, qh, &visible[t], &layer.k, &layer.v, g, sink, b, row);
    })
}

/// The attention output of the tiled path, handed to its pool tasks.
struct OutPtr(*mut f32);
// SAFETY: each task of the tiled path writes only the rows of its own
// (token block, kv head), and the buffer outlives the submission.
unsafe impl Sync for OutPtr {}

/// Writes one row of the attention output: `(i, token, kv head, row)`.
pub(super) type RowFn<'a> = dyn Fn(usize, usize, usize, &mut [f32]) + Sync + 'a;

/// The attention output `attn` [nt][n_head * hd_v], each (token, query
/// head) row `i` written whole by `f(i, token, kv head, row)` as one pool
/// task (rows are independent, so the result does not depend on the thread
/// count).
pub(super) fn per_row(pool: &ThreadPool, nt: usize, sh: AttnShape, attn: &mut AlignedF32, f: &RowFn<'_>) -> Result<()> {
    let group = sh.n_head / sh.n_head_kv;
    let out = super::workspace::sized(attn, nt * sh.n_head * sh.hd_v);
    pool.run_rows(out, sh.hd_v, 1, &|i, row| f(i, i / sh.n_head, i % sh.n_head / group, row))
}

/// For each token, the cells it attends to, by ascending index: cells of
/// its sequence at a position ≤ its own (unless `causal` is off) and within
/// `window` positions on sliding-window layers. The others are masked
/// (-inf) in the reference. The same for every layer with the same
/// `window` (the forward pass computes it once per ubatch and window).
/// With `symmetric`, a window sees |p_token − p_cell| ≤ window / 2 on both
/// sides (the reference's LLAMA_SWA_TYPE_SYMMETRIC: encoders).
pub fn visible_cells(
    kv: &KvCache,
    tokens: &[Token],
    causal: bool,
    window: Option<i32>,
    symmetric: bool,
) -> Vec<Vec<usize>> {
    tokens
        .iter()
        .map(|tok| {
            let seq = tok.seqs[0] as usize;
            (0..kv.n_cells())
                .filter(|&c| {
                    let cell = &kv.cells[c];
                    !cell.is_empty()
                        && cell.seqs.has(seq)
                        && (!causal || cell.pos <= tok.pos)
                        && window.is_none_or(|w| match symmetric {
                            false => tok.pos - cell.pos < w,
                            true => (i64::from(tok.pos) - i64::from(cell.pos)).abs() <= i64::from(w / 2),
                        })
                })
                .collect()
        })
        .collect()
}

/// K/V of the cells in use, tile by tile ([`LayerKv`]), into `layer`.
fn gather_tiles(kv: &KvCache, il: usize, sh: AttnShape, layer: &mut LayerKv) {
    let n_tiles = kv.n_cells().div_ceil(TILE);
    let LayerKv { k, v, tile_slot } = layer;
    tile_slot.clear();
    tile_slot.resize(n_tiles, usize::MAX);
    let mut n_slots = 0;
    for (t, slot) in tile_slot.iter_mut().enumerate() {
        if (t * TILE..((t + 1) * TILE).min(kv.n_cells())).any(|c| !kv.cells[c].is_empty()) {
            *slot = n_slots;
            n_slots += 1;
        }
    }
    let k_tile = sh.hd_k * TILE; // one kv head's [hd_k][TILE]
    let v_tile = TILE * sh.hd_v; // one kv head's [TILE][hd_v]
    let k = super::workspace::sized(k, n_slots * sh.n_head_kv * k_tile);
    let v = super::workspace::sized(v, n_slots * sh.n_head_kv * v_tile);
    let mut krow = vec![0f32; sh.kw];
    let mut vrow = vec![0f32; sh.vw];
    for (t, &slot) in tile_slot.iter().enumerate() {
        if slot == usize::MAX {
            continue;
        }
        for tk in 0..TILE {
            let c = t * TILE + tk;
            if c >= kv.n_cells() || kv.cells[c].is_empty() {
                // a cell not in use has zero K and V (its score is masked,
                // and its V is added times 0)
                krow.fill(0.0);
                vrow.fill(0.0);
            } else {
                KvCache::read(&kv.k[il], c * sh.kw, &mut krow);
                KvCache::read(&kv.v[il], c * sh.vw, &mut vrow);
            }
            for g in 0..sh.n_head_kv {
                let kt = &mut k[(slot * sh.n_head_kv + g) * k_tile..][..k_tile];
                for d in 0..sh.hd_k {
                    kt[d * TILE + tk] = krow[g * sh.hd_k + d];
                }
                let vt = &mut v[(slot * sh.n_head_kv + g) * v_tile..][..v_tile];
                vt[tk * sh.hd_v..(tk + 1) * sh.hd_v].copy_from_slice(&vrow[g * sh.hd_v..(g + 1) * sh.hd_v]);
            }
        }
    }
}

/// K/V rows of the cells in use, by cell index ([`LayerKv`]), into `layer`
/// (rows of cells not in use keep old values: they are never read).
fn gather_cells(kv: &KvCache, il: usize, sh: AttnShape, layer: &mut LayerKv) {
    let n = kv.n_cells();
    let k = super::workspace::sized(&mut layer.k, n * sh.kw); // [n_cells][kw]
    let v = super::workspace::sized(&mut layer.v, n * sh.vw); // [n_cells][vw]
    for c in (0..n).filter(|&c| !kv.cells[c].is_empty()) {
        KvCache::read(&kv.k[il], c * sh.kw, &mut k[c * sh.kw..(c + 1) * sh.kw]);
        KvCache::read(&kv.v[il], c * sh.vw, &mut v[c * sh.vw..(c + 1) * sh.vw]);
    }
    layer.tile_slot.clear();
}

/// The online softmax of `R` (token, head) rows of one kv head that see
/// the same cells, tile by tile: per tile the row's scores ([`scores`]),
/// then its `P·V` ([`add_values`]), in ascending tile order. Each row's
/// operations and their order are those of the reference's tiled loop, so
/// the rows' bits do not depend on what runs between two calls (other
/// rows, other tokens).
///
/// [`scores`]: Self::scores
/// [`add_values`]: Self::add_values
struct TiledRows<const R: usize> {
    /// Running maximum and sum of each row.
    m: [f32; R],
    s_sum: [f32; R],
    /// The current tile's scores, then its probabilities: [R][TILE].
    kq: [[f32; TILE]; R],
    /// Index in `visible` of the next cell the rows see.
    i: usize,
}

impl<const R: usize> TiledRows<R> {
    fn new() -> Self {
        TiledRows { m: [f32::NEG_INFINITY; R], s_sum: [0.0; R], kq: [[0.0; TILE]; R], i: 0 }
    }

    /// The tile holding the next cell the rows see, or None when done.
    fn next_tile(&self, visible: &[usize]) -> Option<usize> {
        visible.get(self.i).map(|&c| c / TILE)
    }

    /// Scores of the next tile (`q` [R][hd_k]) into `kq` as probabilities,
    /// the running maxima and sums updated and `out` ([R][hd_v], the
    /// accumulators) rescaled where a maximum grew. Returns the tile's slot.
    /// `bias`: the scores' bias and the rows' first query head and token.
    #[allow(clippy::too_many_arguments)]
    fn scores(
        &mut self,
        layer: &LayerKv,
        sh: AttnShape,
        g: usize,
        q: &[f32],
        visible: &[usize],
        bias: Option<(&BiasFn, usize, usize)>,
        out: &mut [f32],
    ) -> usize {
        let k_tile = sh.hd_k * TILE;
        let mut i = self.i;
        let t = visible[i] / TILE;
        let slot = layer.tile_slot[t];
        let kt = &layer.k[(slot * sh.n_head_kv + g) * k_tile..][..k_tile];
        vecf::gemv_tile_rows::<R>(q, kt, &mut self.kq);
        // the cells of this tile the rows see (bit j: cell t * TILE + j)
        let mut seen = 0u64;
        if visible.get(i + TILE - 1) == Some(&(t * TILE + TILE - 1)) && visible[i] == t * TILE {
            // all of them (the cells are distinct and ascending)
            seen = u64::MAX;
            i += TILE;
        }
        while i < visible.len() && visible[i] / TILE == t {
            seen |= 1 << (visible[i] % TILE);
            i += 1;
        }
        self.i = i;
        for (r, row) in self.kq.iter_mut().enumerate() {
            // scale, then the mask: visible cells add 0 (or ALiBi's bias),
            // the others are -inf
            let tile_max = match bias {
                Some((f, h0, tok)) => bias_mask_max(row, sh, seen, |j| f(h0 + r, tok, t * TILE + j)),
                None if sh.softcap != 0.0 => softcap_mask_max(row, sh.kq_scale / sh.softcap, sh.softcap, seen),
                None => vecf::scale_mask_max(row, sh.kq_scale, seen),
            };
            let m_new = self.m[r].max(tile_max);
            if m_new > self.m[r] {
                let ms = (self.m[r] - m_new).exp();
                out[r * sh.hd_v..(r + 1) * sh.hd_v].iter_mut().for_each(|o| *o *= ms);
                self.s_sum[r] *= ms;
            }
            self.m[r] = m_new;
            self.s_sum[r] = (f64::from(self.s_sum[r]) + vecf::softmax_sum(row, m_new)) as f32;
        }
        slot
    }

    /// `out` += the probabilities of [`scores`](Self::scores) times the V
    /// tile of `slot`.
    fn add_values(&self, layer: &LayerKv, sh: AttnShape, g: usize, slot: usize, out: &mut [f32]) {
        let v_tile = TILE * sh.hd_v;
        let vt = &layer.v[(slot * sh.n_head_kv + g) * v_tile..][..v_tile];
        vecf::axpy_tile_rows::<R>(&self.kq, vt, out);
    }

    /// The accumulators divided by the sums, after each row's sink (its
    /// query head's logit, `sinks[r]`) joined the softmax.
    fn finish(&self, sh: AttnShape, sinks: Option<&[f32]>, out: &mut [f32]) {
        for (r, o) in out.chunks_exact_mut(sh.hd_v).enumerate() {
            let mut s_sum = self.s_sum[r];
            if let Some(s) = sinks {
                s_sum = add_sink(s[r], self.m[r], s_sum, o);
            }
            let inv = if s_sum == 0.0 { 0.0 } else { 1.0 / s_sum };
            o.iter_mut().for_each(|o| *o *= inv);
        }
    }
}

/// A sink logit `s` joins a row's softmax of maximum `m` and sum `s_sum`
/// (accumulators `acc`) as the reference's flash attention adds it after
/// the cells: the accumulators rescaled if it is the larger; returns the
/// new sum.
fn add_sink(s: f32, m: f32, s_sum: f32, acc: &mut [f32]) -> f32 {
    let (mut ms, mut vs) = (1.0f32, 1.0f32);
    if s > m {
        ms = (m - s).exp();
        acc.iter_mut().for_each(|o| *o *= ms);
    } else {
        vs = (s - m).exp();
    }
    // (not contracted into an fma there, unlike the same sum in its loop
    // over the cells: the logits tell)
    s_sum * ms + vs
}

/// The tiled path for `R` (token, head) rows of kv head `g` that see the
/// same cells (`visible`): queries `q` [R][hd_k], outputs `out` [R][hd_v]
/// (the definition the tests hold [`block_tiled`] to).
#[cfg(test)]
fn rows_tiled<const R: usize>(layer: &LayerKv, sh: AttnShape, g: usize, q: &[f32], visible: &[usize], out: &mut [f32]) {
    out.fill(0.0);
    let mut rows = TiledRows::<R>::new();
    while rows.next_tile(visible).is_some() {
        let slot = rows.scores(layer, sh, g, q, visible, None, out);
        rows.add_values(layer, sh, g, slot, out);
    }
    rows.finish(sh, None, out);
}

/// Tokens per task of the tiled path: their rows run tile by tile together,
/// so each K/V tile is read from L1 by all of them instead of from L2 by
/// each.
const TOKEN_BLOCK: usize = 8;

/// The tiled path for heads `h..h + R` (of kv head `g`'s `group`) of the
/// tokens of `qs` (each [group][hd_k]) and `outs` (each [group][hd_v]),
/// `visible[j]` the cells token j sees: per tile, the scores of every token
/// that sees a cell of it, then their `P·V` (each row's operations as in
/// [`rows_tiled`], so the same bits).
#[allow(clippy::too_many_arguments)]
fn tokens_tiled<const R: usize>(
    layer: &LayerKv,
    sh: AttnShape,
    g: usize,
    h: usize,
    qs: &[&[f32]],
    visible: &[&[usize]],
    sinks: Option<&[f32]>,
    bias: Option<(&BiasFn, usize, usize)>,
    outs: &mut [&mut [f32]],
) {
    let n = qs.len();
    assert!(n <= TOKEN_BLOCK && visible.len() == n && outs.len() == n, "tokens_tiled: shapes");
    let (q_of, out_range) = (|j: usize| &qs[j][h * sh.hd_k..(h + R) * sh.hd_k], h * sh.hd_v..(h + R) * sh.hd_v);
    let mut rows: [TiledRows<R>; TOKEN_BLOCK] = std::array::from_fn(|_| TiledRows::new());
    for o in outs.iter_mut() {
        o[out_range.clone()].fill(0.0);
    }
    let mut slots = [usize::MAX; TOKEN_BLOCK]; // this tile's slot per token, MAX if it sees none
                                               // ascending tiles: the lowest next tile of any token
    while let Some(t) = (0..n).filter_map(|j| rows[j].next_tile(visible[j])).min() {
        for j in 0..n {
            slots[j] = if rows[j].next_tile(visible[j]) == Some(t) {
                // (the bias of heads h.. of token j of the block)
                let b = bias.map(|(f, h0, t0)| (f, h0 + h, t0 + j));
                rows[j].scores(layer, sh, g, q_of(j), visible[j], b, &mut outs[j][out_range.clone()])
            } else {
                usize::MAX
            };
        }
        for j in (0..n).filter(|&j| slots[j] != usize::MAX) {
            rows[j].add_values(layer, sh, g, slots[j], &mut outs[j][out_range.clone()]);
        }
    }
    for j in 0..n {
        rows[j].finish(sh, sinks.map(|s| &s[h..h + R]), &mut outs[j][out_range.clone()]);
    }
}

/// The heads of kv head `g` for a block of tokens, in blocks of at most 3
/// heads (the AVX2 registers; 4 as 2 + 2).
/// `sinks`: the group's heads' sink logits, if the model has them;
/// `bias`: the scores' bias, the group's first query head and the block's
/// first token.
#[allow(clippy::too_many_arguments)]
fn block_tiled(
    layer: &LayerKv,
    sh: AttnShape,
    g: usize,
    qs: &[&[f32]],
    visible: &[&[usize]],
    sinks: Option<&[f32]>,
    bias: Option<(&BiasFn, usize, usize)>,
    outs: &mut [&mut [f32]],
) {
    let heads = sh.n_head / sh.n_head_kv;
    let mut h = 0;
    while h < heads {
        let r = if heads - h == 4 { 2 } else { (heads - h).min(3) };
        match r {
            1 => tokens_tiled::<1>(layer, sh, g, h, qs, visible, sinks, bias, outs),
            2 => tokens_tiled::<2>(layer, sh, g, h, qs, visible, sinks, bias, outs),
            _ => tokens_tiled::<3>(layer, sh, g, h, qs, visible, sinks, bias, outs),
        }
        h += r;
    }
}

/// [`vecf::scale_mask_max`] with the scores softcapped, as the reference's
/// tiled flash attention runs it: every score times `scale` (the kq scale
/// over the cap), `tanhf`, times `cap`, then the mask.
fn softcap_mask_max(x: &mut [f32; TILE], scale: f32, cap: f32, visible: u64) -> f32 {
    let mut max = f32::NEG_INFINITY;
    for (j, v) in x.iter_mut().enumerate() {
        *v = if visible >> j & 1 != 0 { (*v * scale).tanh() * cap + 0.0 } else { f32::NEG_INFINITY };
        if *v > max {
            max = *v;
        }
    }
    max
}

/// The tiled path's scores with a bias (ALiBi): `s · scale + bias(j)`, or
/// softcapped first, for the visible cells, -inf for the others; returns
/// the maximum (the reference adds its mask to the scaled scores).
fn bias_mask_max(x: &mut [f32; TILE], sh: AttnShape, visible: u64, bias: impl Fn(usize) -> f32) -> f32 {
    let mut max = f32::NEG_INFINITY;
    for (j, v) in x.iter_mut().enumerate() {
        *v = if visible >> j & 1 == 0 {
            f32::NEG_INFINITY
        } else if sh.softcap != 0.0 {
            (*v * (sh.kq_scale / sh.softcap)).tanh() * sh.softcap + bias(j)
        } else {
            *v * sh.kq_scale + bias(j)
        };
        if *v > max {
            max = *v;
        }
    }
    max
}

/// The one-chunk path for one (token, head) row of kv head `g`: the loop
/// of [`online_softmax`] over the `visible` cells, the sink, the division
/// by the sum.
#[allow(clippy::too_many_arguments)]
fn row_one_chunk_of<X: vecf::F16Input>(
    sh: AttnShape,
    qh: &[f32],
    visible: &[usize],
    k: &[X],
    v: &[X],
    g: usize,
    sink: Option<f32>,
    bias: Option<(&BiasFn, usize, usize)>,
    row: &mut [f32],
) {
    let (m, s_sum) = online_softmax(sh, qh, visible, k, v, g, bias, row);
    let s_sum = match sink {
        // (on the f32 values of the f16 accumulator)
        Some(s) => add_sink(s, m, s_sum, row),
        None => s_sum,
    };
    let inv = if s_sum == 0.0 { 0.0 } else { 1.0 / s_sum };
    row.iter_mut().for_each(|o| *o *= inv);
}

/// Cells ahead of the current one whose K and V rows `row_one_chunk`
/// prefetches: a head's rows of consecutive cells lie a whole cache row
/// apart (every kv head's), and without it a long decode waited on them
/// (Llama 3.2 1B at 4096 cells: ~45 % of its time in `mad_f16`'s loads).
const PREFETCH_CELLS: usize = 8;

/// Asks the CPU to bring `row` into the cache (no effect on results).
fn prefetch_rows<X>(row: &[X]) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = std::mem::size_of_val(row);
        let p = row.as_ptr() as *const i8;
        let mut o = 0;
        while o < bytes {
            // SAFETY: `p + o` lies within `row`; a prefetch (SSE, baseline
            // on x86-64) reads nothing into the program and does not fault.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.add(o)) };
            o += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

/// The loop of the reference's `ggml_compute_forward_flash_attn_ext_f16_one_chunk`
/// over the `visible` cells for one (token, head) row of kv head `g`: `out`
/// the values' sum weighted by exp(score − max) (f16-rounded, as its f16
/// accumulator), returned with the maximum score and the sum of the weights
/// (−inf and 0 over no cell). Cell c's K row is `sh.kw` values on in `k`,
/// its V row `sh.vw` on in `v` (the f16 cache itself, or f32 rows gathered
/// from it): the score is `ggml_vec_dot_f16` of the K row with q rounded to
/// f16, the values add by `ggml_vec_mad_f16`. (The per-cell work is inlined,
/// not called through pointers: it runs once per visible cell of every head.)
#[allow(clippy::too_many_arguments)]
fn online_softmax<X: vecf::F16Input>(
    sh: AttnShape,
    q_in: &[f32],
    visible: &[usize],
    k: &[X],
    v: &[X],
    g: usize,
    bias: Option<(&BiasFn, usize, usize)>,
    out: &mut [f32],
) -> (f32, f32) {
    #[cfg(target_arch = "x86_64")]
    if vecf::use_avx2() {
        // SAFETY: the avx2 kernel set is in use, so the CPU has AVX2, FMA
        // and F16C.
        return unsafe { online_softmax_avx2(sh, q_in, visible, k, v, g, bias, out) };
    }
    online_softmax_body(sh, q_in, visible, k, v, g, bias, out)
}

/// [`online_softmax`] compiled for AVX2 + FMA + F16C, so that the per-cell
/// dot, mad and sum inline into one loop (as calls they took ~10 % of a
/// decode at 4096 cells, the sum's fma a libm call).
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
unsafe fn online_softmax_avx2<X: vecf::F16Input>(
    sh: AttnShape,
    q_in: &[f32],
    visible: &[usize],
    k: &[X],
    v: &[X],
    g: usize,
    bias: Option<(&BiasFn, usize, usize)>,
    out: &mut [f32],
) -> (f32, f32) {
    online_softmax_body(sh, q_in, visible, k, v, g, bias, out)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn online_softmax_body<X: vecf::F16Input>(
    sh: AttnShape,
    q_in: &[f32],
    visible: &[usize],
    k: &[X],
    v: &[X],
    g: usize,
    bias: Option<(&BiasFn, usize, usize)>,
    out: &mut [f32],
) -> (f32, f32) {
    let k_of = |c: usize| &k[c * sh.kw + g * sh.hd_k..][..sh.hd_k];
    let v_of = |c: usize| &v[c * sh.vw + g * sh.hd_v..][..sh.hd_v];
    // q is rounded to the K type (f16) for the dot.
    let mut qr = [0f32; 256];
    let mut qv = Vec::new();
    let q: &mut [f32] = if q_in.len() <= qr.len() {
        &mut qr[..q_in.len()]
    } else {
        qv.resize(q_in.len(), 0.0);
        &mut qv
    };
    q.copy_from_slice(q_in);
    q.iter_mut().for_each(|x| *x = vecf::round_f16(*x));
    let q = &*q;
    let mut s_sum = 0f32;
    let mut m = f32::NEG_INFINITY;
    out.fill(0.0);
    for (j, &c) in visible.iter().enumerate() {
        if let Some(&ahead) = visible.get(j + PREFETCH_CELLS) {
            prefetch_rows(k_of(ahead));
            prefetch_rows(v_of(ahead));
        }
        // (the mask: 0, or ALiBi's bias)
        let mv = bias.map_or(0.0, |(f, h, t)| f(h, t, c));
        let s = if sh.softcap != 0.0 {
            // (the reference divides the scale by the cap, then s = cap * tanhf(s))
            sh.softcap * (vecf::dot_f16(k_of(c), q) * (sh.kq_scale / sh.softcap)).tanh() + mv
        } else {
            vecf::dot_f16(k_of(c), q) * sh.kq_scale + mv
        };
        let mut ms = 1.0f32;
        let mut vs = 1.0f32;
        if s > m {
            let m_old = m;
            m = s;
            ms = (m_old - m).exp();
            vecf::scale_f16(out, ms);
        } else {
            vs = (s - m).exp();
        }
        vecf::mad_f16(out, v_of(c), vs);
        s_sum = s_sum.mul_add(ms, vs);
    }
    (m, s_sum)
}

/// A one-token attention over at least this many cells (the reference's
/// `nek1`, [`KvCache::n_kv`]) runs as [`split_kv`] (its `use_split_kv_path`).
const SPLIT_KV_CELLS: usize = 512;

/// What [`split_kv`] needs besides the shapes: the reference's thread
/// count (the number of chunks), its cache view's cell count `n_kv`, the
/// token's visible cells, the sinks and the ALiBi bias.
struct SplitKv<'a> {
    threads: usize,
    n_kv: usize,
    visible: &'a [usize],
    sinks: Option<&'a [f32]>,
    bias: Option<&'a BiasFn<'a>>,
}

/// One token's flash attention as the reference runs it over 512 cells and
/// more (ggml-cpu ops.cpp, `use_split_kv_path` and
/// `ggml_flash_attn_ext_reduce_partials`): the cells `0..n_kv` cut into
/// `threads` chunks of `ceil(n_kv / threads)`; per chunk and head the
/// one-chunk loop gives (max, sum, unnormalised values), the sinks joining
/// chunk 0's; then per head the chunks merge in order, each rescaled by
/// exp(its max − the running max), and the sum divides. The bits depend on
/// the thread count, as the reference's do; one chunk gives the one-chunk
/// result. K and V rows are `sh.kw`/`sh.vw` apart per cell in `k`, `v`
/// (the f16 cache, or f32 rows rounded to f16); `q` is [n_head][hd_k], the
/// output [n_head][hd_v].
fn split_kv<X: vecf::F16Input + Sync>(
    pool: &ThreadPool,
    sh: AttnShape,
    q: &[f32],
    k: &[X],
    v: &[X],
    split: SplitKv,
    out: &mut AlignedF32,
) -> Result<()> {
    let SplitKv { threads, n_kv, visible, sinks, bias } = split;
    let group = sh.n_head / sh.n_head_kv;
    let chunk = n_kv.div_ceil(threads);
    let part = 2 + sh.hd_v;
    // [chunk][head][max, sum, values[hd_v]]
    let mut partials = vec![0f32; threads * sh.n_head * part];
    pool.run_rows(&mut partials, sh.n_head * part, 1, &|ci, heads| {
        let (c0, c1) = (ci * chunk, ((ci + 1) * chunk).min(n_kv));
        let cells = &visible[visible.partition_point(|&c| c < c0)..visible.partition_point(|&c| c < c1)];
        for (h, p) in heads.chunks_exact_mut(part).enumerate() {
            let (ms, vals) = p.split_at_mut(2);
            let (mut m, mut s_sum) = if c0 < n_kv {
                online_softmax(
                    sh,
                    &q[h * sh.hd_k..(h + 1) * sh.hd_k],
                    cells,
                    k,
                    v,
                    h / group,
                    bias.map(|f| (f, h, 0)),
                    vals,
                )
            } else {
                vals.fill(0.0);
                (f32::NEG_INFINITY, 0.0)
            };
            // (the sinks join chunk 0's, which then keeps the larger maximum)
            if let (Some(s), 0) = (sinks, c0) {
                s_sum = add_sink(s[h], m, s_sum, vals);
                m = m.max(s[h]);
            }
            ms[0] = m;
            ms[1] = s_sum;
        }
    })?;
    let partials = &partials;
    per_row(pool, 1, sh, out, &|h, _, _, row| {
        let (mut m, mut s_sum) = (f32::NEG_INFINITY, 0f32);
        row.fill(0.0);
        for ci in 0..threads {
            let p = &partials[(ci * sh.n_head + h) * part..][..part];
            if ci * chunk >= n_kv || p[1] == 0.0 {
                continue;
            }
            let m_new = m.max(p[0]);
            let (scale_old, scale_new) = ((m - m_new).exp(), (p[0] - m_new).exp());
            // (the reference's `a*b + c*d` as its build contracts it: an
            // fma of the first product over the second; the other order and
            // no fma differ within 10 decodes)
            for (o, &x) in row.iter_mut().zip(&p[2..]) {
                *o = o.mul_add(scale_old, x * scale_new);
            }
            s_sum = s_sum.mul_add(scale_old, p[1] * scale_new);
            m = m_new;
        }
        if s_sum != 0.0 {
            let inv = 1.0 / s_sum;
            row.iter_mut().for_each(|o| *o *= inv);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every block of tokens and every block size the heads of a kv head
    /// are split into give each (token, head) row the bits it has alone (on
    /// the SIMD kernels where the CPU has them, else the scalar ones), over
    /// partly visible and skipped tiles and tokens that see different tiles.
    #[test]
    fn token_and_head_blocks_equal_rows_alone() {
        let (hd_k, hd_v, n_head_kv) = (72, 40, 2); // a tail past 32 columns in both
        let n_slots = 4;
        let val = |i: usize, m: usize| ((i * m % 113) as f32 - 56.0) / 29.0;
        let layer = LayerKv {
            k: AlignedF32::from_slice(&(0..n_slots * n_head_kv * hd_k * TILE).map(|i| val(i, 37)).collect::<Vec<_>>()),
            v: AlignedF32::from_slice(&(0..n_slots * n_head_kv * TILE * hd_v).map(|i| val(i, 53)).collect::<Vec<_>>()),
            // tile 1 has no cell in use
            tile_slot: vec![0, usize::MAX, 1, 2, 3],
        };
        // per token: all of tile 0 or a part of it or none, then tile 2 in
        // part, then tiles 3 and 4 up to a cell that grows with the token
        let visible_of = |j: usize| -> Vec<usize> {
            let first: Vec<usize> = match j % 3 {
                0 => (0..TILE).collect(),
                1 => (3..TILE - 7).collect(),
                _ => vec![],
            };
            let last = 3 * TILE + 1 + 13 * j; // in tile 3 or 4
            first.into_iter().chain(2 * TILE + 5..3 * TILE).chain(3 * TILE..last).collect()
        };
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for heads in [1, 2, 3, 4, 5, 8] {
            let sh = AttnShape {
                n_head: heads * n_head_kv,
                n_head_kv,
                hd_k,
                hd_v,
                kw: n_head_kv * hd_k,
                vw: n_head_kv * hd_v,
                kq_scale: 0.11,
                // (the softcapped scores on every other head count)
                softcap: if heads % 2 == 0 { 0.5 } else { 0.0 },
            };
            for n in [1, 2, 5, TOKEN_BLOCK] {
                let q: Vec<Vec<f32>> =
                    (0..n).map(|j| (0..heads * hd_k).map(|i| val(i + 7 * j, 71) / 3.0).collect()).collect();
                let visible: Vec<Vec<usize>> = (0..n).map(visible_of).collect();
                let mut out = vec![vec![f32::NAN; heads * hd_v]; n]; // old values must not count
                let qs: Vec<&[f32]> = q.iter().map(|x| &x[..]).collect();
                let vis: Vec<&[usize]> = visible.iter().map(|x| &x[..]).collect();
                let mut outs: Vec<&mut [f32]> = out.iter_mut().map(|x| &mut x[..]).collect();
                block_tiled(&layer, sh, 1, &qs, &vis, None, None, &mut outs);
                for j in 0..n {
                    for h in 0..heads {
                        let mut alone = vec![0f32; hd_v];
                        rows_tiled::<1>(&layer, sh, 1, &q[j][h * hd_k..(h + 1) * hd_k], &visible[j], &mut alone);
                        assert_eq!(
                            bits(&out[j][h * hd_v..(h + 1) * hd_v]),
                            bits(&alone),
                            "token {j} of {n}, head {h} of {heads}"
                        );
                        assert!(alone.iter().any(|&v| v != 0.0), "token {j}, head {h}: a real output");
                    }
                }
            }
        }
    }
}
