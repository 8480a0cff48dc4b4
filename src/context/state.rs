//! Saved states, byte for byte in the reference's format (llama.cpp 0c1e570:
//! `llama_context::state_write_data`/`state_read_data`, the session and
//! sequence files of `llama_context::state_*_file`, `llama_kv_cache::
//! state_write`/`state_read`, `llama_kv_cache_iswa`).
//!
//! ```text
//! whole state      u32 n, arch name [n bytes], memory
//! sequence state   u32 0xaf143cd8, i32 seq_id, memory
//! session file     u32 'ggsn', u32 10, u32 n_token, i32 token[n_token], whole state
//! sequence file    u32 'ggsq', u32 3,  u32 n_token, i32 token[n_token], memory
//! memory           one cache (llama, qwen2, qwen3), or gemma3's two: the
//!                  non-SWA layers' cache, then the SWA layers' cache (the
//!                  first one is left out with LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)
//! cache            u32 n_stream, then per stream u32 cell_count and, if > 0:
//!                    cell_count x { i32 pos, u32 n_seq_id, i32 seq_id[n_seq_id] }
//!                    u32 v_trans, u32 n_layer
//!                    n_layer x { i32 k_type, u64 k_row_bytes, k rows [cell_count][k_row_bytes] }
//!                    v_trans 0: n_layer x { i32 v_type, u64 v_row_bytes, v rows [cell_count][v_row_bytes] }
//!                    v_trans 1: n_layer x { i32 v_type, u32 v_elem_bytes, u32 n_embd_v_gqa,
//!                                           v [n_embd_v_gqa][cell_count] elements }
//! ```
//!
//! Little-endian throughout. The reference's state at this commit holds only
//! the model's architecture name and the memory: no logits or embeddings.
//!
//! Mapping onto our cache (one pool of n_ctx cells, every layer's rows):
//! - Streams: the reference has `kv_unified ? 1 : n_seq_max` streams of
//!   n_ctx_seq cells. With one stream it is our pool; with several, stream s
//!   is the cells holding sequence s, each listed with seq id s only (in the
//!   reference a cell belongs to one stream). Cells come in index order.
//!   A stream may hold more than the reference's n_ctx_seq cells (our
//!   decode lets a sequence use the pool), so a restore checks the pool.
//! - V transposed (v_trans 1) is how the reference stores V without flash
//!   attention (`flash_attn_type` DISABLED); AUTO enables it on the CPU.
//! - gemma3's SWA cache: a sequence's state lists the cells whose
//!   pos_max(seq) - pos < n_swa, as the reference. A whole state lists what
//!   the reference's SWA cache would hold: every cell with `swa_full` (its
//!   default: n_ctx cells), otherwise the latest `size_swa` positions of each
//!   sequence (its cache of size_swa cells reuses the oldest cell once full;
//!   after that the reference lists them in ring order, we in position
//!   order). On restore, each SWA cell is matched to the non-SWA cell of the
//!   same position and sequences; the SWA rows of cells without one stay
//!   zero (they are outside the window).
//!
//! A restore is parsed and checked in full before anything changes, so a
//! failed one leaves the context as it was (the reference clears the cache
//! or the sequence on most failures).

use super::kv_cache::{KvCache, KvRows, SeqSet};
use super::Context;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

pub const SESSION_MAGIC: u32 = 0x6767_736e; // 'ggsn'
pub const SESSION_VERSION: u32 = 10;
pub const SEQ_MAGIC: u32 = 0x6767_7371; // 'ggsq'
pub const SEQ_VERSION: u32 = 3;
/// Starts a sequence state in memory (`io_magic` of llama-context.cpp).
pub const SEQ_IO_MAGIC: u32 = 0xaf14_3cd8;
/// LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY: only gemma3's SWA cache.
pub const FLAG_PARTIAL_ONLY: u32 = 1;
/// LLAMA_STATE_SEQ_FLAGS_ON_DEVICE: K/V bytes stay in the context.
pub const FLAG_ON_DEVICE: u32 = 2;

// --- sinks and sources -------------------------------------------------------

/// Where a state is written. Metadata goes through `put`, K/V bytes through
/// `put_tensor` (the reference's `write` / `write_tensor`).
pub trait Sink {
    fn put(&mut self, bytes: &[u8]) -> Result<()>;
    fn put_tensor(&mut self, bytes: &[u8]) -> Result<()>;
    /// True when the sink only measures: K/V data is then passed as its
    /// length `n` and never produced.
    fn measure_tensor(&mut self, _n: usize) -> bool {
        false
    }
    fn n_bytes(&self) -> usize;
}

/// Counts bytes (`llama_io_write_dummy`); `skip_tensors` leaves K/V data out.
pub struct Counter {
    pub n: usize,
    pub skip_tensors: bool,
}

impl Sink for Counter {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.n += bytes.len();
        Ok(())
    }
    fn put_tensor(&mut self, bytes: &[u8]) -> Result<()> {
        self.measure_tensor(bytes.len());
        Ok(())
    }
    fn measure_tensor(&mut self, n: usize) -> bool {
        if !self.skip_tensors {
            self.n += n;
        }
        true
    }
    fn n_bytes(&self) -> usize {
        self.n
    }
}

/// The caller's buffer; running past its end fails the write.
pub struct SliceSink<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl<'a> SliceSink<'a> {
    pub fn new(buf: &'a mut [u8]) -> SliceSink<'a> {
        SliceSink { buf, at: 0 }
    }
}

impl Sink for SliceSink<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        let end = self.at.checked_add(bytes.len()).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| {
            Error::state(format!(
                "unexpectedly reached end of buffer (the state needs more than its {} bytes)",
                self.buf.len()
            ))
        })?;
        self.buf[self.at..end].copy_from_slice(bytes);
        self.at = end;
        Ok(())
    }
    fn put_tensor(&mut self, bytes: &[u8]) -> Result<()> {
        self.put(bytes)
    }
    fn n_bytes(&self) -> usize {
        self.at
    }
}

/// A file being written.
struct FileSink {
    w: std::io::BufWriter<std::fs::File>,
    n: usize,
    path: String,
}

impl Sink for FileSink {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.w.write_all(bytes).map_err(|e| Error::state(format!("cannot write '{}': {e}", self.path)))?;
        self.n += bytes.len();
        Ok(())
    }
    fn put_tensor(&mut self, bytes: &[u8]) -> Result<()> {
        self.put(bytes)
    }
    fn n_bytes(&self) -> usize {
        self.n
    }
}

/// ON_DEVICE saving: metadata to the caller, K/V bytes kept aside.
struct DeviceSink<'s> {
    meta: &'s mut dyn Sink,
    tensors: Vec<u8>,
}

impl Sink for DeviceSink<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.meta.put(bytes)
    }
    fn put_tensor(&mut self, bytes: &[u8]) -> Result<()> {
        self.tensors.extend_from_slice(bytes);
        Ok(())
    }
    fn n_bytes(&self) -> usize {
        self.meta.n_bytes()
    }
}

/// Where a state is read from. The slices live as long as the source's
/// bytes, so a parsed state borrows its K/V data instead of copying it.
pub trait Source<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]>;
    fn take_tensor(&mut self, n: usize) -> Result<&'a [u8]> {
        self.take(n)
    }
    /// Bytes read so far (K/V bytes of an ON_DEVICE state not counted).
    fn n_bytes(&self) -> usize;
    /// Checked once a state is read, before it is applied.
    fn finished(&self) -> Result<()> {
        Ok(())
    }
}

pub struct SliceSource<'a> {
    buf: &'a [u8],
    at: usize,
    /// The state must use every byte (a session file holds nothing after it).
    exact: bool,
}

impl<'a> SliceSource<'a> {
    pub fn new(buf: &'a [u8]) -> SliceSource<'a> {
        SliceSource { buf, at: 0, exact: false }
    }
    fn exact(buf: &'a [u8]) -> SliceSource<'a> {
        SliceSource { buf, at: 0, exact: true }
    }
    fn rest(&self) -> usize {
        self.buf.len() - self.at
    }
}

impl<'a> Source<'a> for SliceSource<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.rest() {
            return Err(Error::state(format!(
                "unexpectedly reached end of buffer (at byte {}, {n} more bytes needed, {} left)",
                self.at,
                self.rest()
            )));
        }
        let s = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn n_bytes(&self) -> usize {
        self.at
    }
    fn finished(&self) -> Result<()> {
        if self.exact && self.rest() != 0 {
            return Err(Error::state(format!(
                "did not read all of the session file data! size {}, got {}",
                self.buf.len(),
                self.at
            )));
        }
        Ok(())
    }
}

/// ON_DEVICE restoring: metadata from the caller, K/V bytes from what the
/// context kept.
struct DeviceSource<'a, 's> {
    meta: &'s mut dyn Source<'a>,
    tensors: SliceSource<'a>,
}

impl<'a> Source<'a> for DeviceSource<'a, '_> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        self.meta.take(n)
    }
    fn take_tensor(&mut self, n: usize) -> Result<&'a [u8]> {
        self.tensors.take(n).map_err(|_| Error::state("the kept on-device data is smaller than this state needs"))
    }
    fn n_bytes(&self) -> usize {
        self.meta.n_bytes()
    }
    fn finished(&self) -> Result<()> {
        self.meta.finished()?;
        if self.tensors.rest() != 0 {
            return Err(Error::state("the kept on-device data does not match this state (memory buffer mismatch)"));
        }
        Ok(())
    }
}

fn u32_of(src: &mut dyn Source<'_>) -> Result<u32> {
    let b = src.take(4)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn i32_of(src: &mut dyn Source<'_>) -> Result<i32> {
    Ok(u32_of(src)? as i32)
}

fn u64_of(src: &mut dyn Source<'_>) -> Result<u64> {
    let lo = u32_of(src)? as u64;
    Ok(lo | (u32_of(src)? as u64) << 32)
}

// --- the shape of the reference's memory for a context -----------------------

/// One of the reference's KV caches: the layers it holds, and the window of
/// gemma3's SWA cache.
struct Section {
    layers: Vec<usize>,
    n_swa: Option<i32>,
}

struct Layout {
    n_stream: usize,
    n_seq_max: usize,
    v_trans: bool,
    /// Positions a whole state's SWA cache lists per sequence (None: all):
    /// the reference's SWA cache has n_ctx cells with `swa_full` (its
    /// default), else pad256(min(n_ctx_seq, n_swa * n_seq + n_ubatch)), and
    /// reuses the oldest cells once full, so it holds the latest positions.
    swa_keep: Option<i32>,
    sections: Vec<Section>,
}

impl Layout {
    fn of(ctx: &Context) -> Layout {
        let hp = &ctx.model.hparams;
        let n_layer = ctx.kv.k.len();
        let swa = |il: usize| hp.is_swa(il);
        let sections = if (0..n_layer).any(swa) {
            vec![
                Section { layers: (0..n_layer).filter(|&il| !swa(il)).collect(), n_swa: None },
                Section { layers: (0..n_layer).filter(|&il| swa(il)).collect(), n_swa: Some(hp.n_swa as i32) },
            ]
        } else {
            vec![Section { layers: (0..n_layer).collect(), n_swa: None }]
        };
        let n_seq_max = ctx.cparams.n_seq_max as usize;
        let n_stream = if ctx.cparams.kv_unified { 1 } else { n_seq_max };
        Layout {
            n_stream,
            n_seq_max,
            v_trans: ctx.v_trans,
            swa_keep: (!ctx.swa_full).then(|| {
                let n_seq = if ctx.cparams.kv_unified { n_seq_max as u32 } else { 1 };
                let size =
                    ctx.cparams.n_ctx_seq.min(hp.n_swa.saturating_mul(n_seq).saturating_add(ctx.cparams.n_ubatch));
                size.div_ceil(256).saturating_mul(256).min(i32::MAX as u32) as i32
            }),
            sections,
        }
    }

    /// The caches a state covers: gemma3 with PARTIAL_ONLY has only the SWA one.
    fn sections(&self, flags: u32) -> &[Section] {
        if self.sections.len() == 2 && flags & FLAG_PARTIAL_ONLY != 0 {
            &self.sections[1..]
        } else {
            &self.sections
        }
    }

    /// The most bytes a state of this context can take (every cell used,
    /// every cell in every sequence), for bounding what is read from a file.
    fn max_bytes(&self, kv: &KvCache) -> usize {
        let n_cells = kv.n_cells();
        let mut total = 4 + 256 + 8;
        for sec in &self.sections {
            let rows: usize = sec
                .layers
                .iter()
                .map(|&il| kv.k_width[il] * kv.k[il].elem_size() + kv.v_width[il] * kv.v[il].elem_size())
                .sum();
            total += 4 + self.n_stream * (12 + sec.layers.len() * 24) + n_cells * (8 + 4 * self.n_seq_max + rows);
        }
        total
    }
}

/// The sequence argument of the sequence API: -1 (all) or [0, n_seq_max).
fn check_seq(layout: &Layout, seq: i32) -> Result<()> {
    if seq < -1 || seq >= layout.n_seq_max as i32 {
        return Err(Error::invalid(format!("seq_id {seq} is out of range [0, {})", layout.n_seq_max)));
    }
    Ok(())
}

/// STANDARD sliding window: position p0 is outside the window of p1.
fn masked(n_swa: Option<i32>, p0: i32, p1: i32) -> bool {
    n_swa.is_some_and(|w| i64::from(p1) - i64::from(p0) >= i64::from(w))
}

// --- writing -------------------------------------------------------------------

/// The cells stream `s` of a cache lists for `seq` (-1: all), in index
/// order, with the sequence ids each is listed with.
fn stream_cells(kv: &KvCache, layout: &Layout, sec: &Section, s: usize, seq: i32) -> Vec<(usize, Vec<i32>)> {
    let pos_max: Vec<i32> = (0..layout.n_seq_max).map(|q| kv.pos_max(q as i32)).collect();
    if layout.n_stream > 1 && seq >= 0 && seq as usize != s {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (c, cell) in kv.cells.iter().enumerate() {
        if cell.is_empty() || (seq >= 0 && !cell.seqs.has(seq as usize)) {
            continue;
        }
        let ids: Vec<i32> = if layout.n_stream > 1 {
            if !cell.seqs.has(s) {
                continue;
            }
            vec![s as i32]
        } else if seq >= 0 {
            vec![seq]
        } else {
            (0..layout.n_seq_max).filter(|&q| cell.seqs.has(q)).map(|q| q as i32).collect()
        };
        let window = if seq < 0 { sec.n_swa.and(layout.swa_keep) } else { sec.n_swa };
        if ids.iter().all(|&q| masked(window, cell.pos, pos_max[q as usize])) {
            continue;
        }
        out.push((c, ids));
    }
    out
}

/// Writes rows `cells` of one layer's K or V (a row per cell).
fn put_rows(sink: &mut dyn Sink, rows: &KvRows, width: usize, cells: &[usize]) -> Result<()> {
    if sink.measure_tensor(cells.len() * width * rows.elem_size()) {
        return Ok(());
    }
    // One write per run of consecutive cells, as the reference's cell ranges.
    let mut buf = Vec::new();
    let mut i = 0;
    while i < cells.len() {
        let mut j = i + 1;
        while j < cells.len() && cells[j] == cells[j - 1] + 1 {
            j += 1;
        }
        buf.clear();
        rows.append_le(cells[i] * width, (j - i) * width, &mut buf);
        sink.put_tensor(&buf)?;
        i = j;
    }
    Ok(())
}

/// Writes one layer's V transposed: element j of every cell, for each j.
fn put_transposed(sink: &mut dyn Sink, rows: &KvRows, width: usize, cells: &[usize]) -> Result<()> {
    if sink.measure_tensor(cells.len() * width * rows.elem_size()) {
        return Ok(());
    }
    let mut buf = Vec::new();
    for j in 0..width {
        buf.clear();
        for &c in cells {
            rows.append_le(c * width + j, 1, &mut buf);
        }
        sink.put_tensor(&buf)?;
    }
    Ok(())
}

fn write_cache(kv: &KvCache, layout: &Layout, sec: &Section, sink: &mut dyn Sink, seq: i32) -> Result<()> {
    sink.put(&(layout.n_stream as u32).to_le_bytes())?;
    for s in 0..layout.n_stream {
        let listed = stream_cells(kv, layout, sec, s, seq);
        sink.put(&(listed.len() as u32).to_le_bytes())?;
        if listed.is_empty() {
            continue;
        }
        for (c, ids) in &listed {
            sink.put(&kv.cells[*c].pos.to_le_bytes())?;
            sink.put(&(ids.len() as u32).to_le_bytes())?;
            for id in ids {
                sink.put(&id.to_le_bytes())?;
            }
        }
        let cells: Vec<usize> = listed.iter().map(|(c, _)| *c).collect();
        sink.put(&u32::from(layout.v_trans).to_le_bytes())?;
        sink.put(&(sec.layers.len() as u32).to_le_bytes())?;
        for &il in &sec.layers {
            let (rows, width) = (&kv.k[il], kv.k_width[il]);
            sink.put(&rows.ggml_type().to_le_bytes())?;
            sink.put(&((width * rows.elem_size()) as u64).to_le_bytes())?;
            put_rows(sink, rows, width, &cells)?;
        }
        for &il in &sec.layers {
            let (rows, width) = (&kv.v[il], kv.v_width[il]);
            sink.put(&rows.ggml_type().to_le_bytes())?;
            if layout.v_trans {
                sink.put(&(rows.elem_size() as u32).to_le_bytes())?;
                sink.put(&(width as u32).to_le_bytes())?;
                put_transposed(sink, rows, width, &cells)?;
            } else {
                sink.put(&((width * rows.elem_size()) as u64).to_le_bytes())?;
                put_rows(sink, rows, width, &cells)?;
            }
        }
    }
    Ok(())
}

/// The memory part of a state (every cache of the context).
fn write_memory(ctx: &Context, sink: &mut dyn Sink, seq: i32, flags: u32) -> Result<()> {
    write_kv(&ctx.kv, &Layout::of(ctx), sink, seq, flags)
}

fn write_kv(kv: &KvCache, layout: &Layout, sink: &mut dyn Sink, seq: i32, flags: u32) -> Result<()> {
    check_seq(layout, seq)?;
    for sec in layout.sections(flags) {
        write_cache(kv, layout, sec, sink, seq)?;
    }
    Ok(())
}

fn arch_name(ctx: &Context) -> Result<&'static str> {
    ctx.model.arch.map(|a| a.name).ok_or_else(|| Error::invalid("the model cannot run"))
}

/// The whole state (llama_state_get_data's bytes); returns its size.
pub fn write_state(ctx: &Context, sink: &mut dyn Sink) -> Result<usize> {
    let arch = arch_name(ctx)?;
    sink.put(&(arch.len() as u32).to_le_bytes())?;
    sink.put(arch.as_bytes())?;
    write_memory(ctx, sink, -1, 0)?;
    Ok(sink.n_bytes())
}

pub fn state_size(ctx: &Context) -> Result<usize> {
    write_state(ctx, &mut Counter { n: 0, skip_tensors: false })
}

/// A sequence's state (llama_state_seq_get_data_ext's bytes) into `sink`;
/// with ON_DEVICE the K/V bytes are returned instead of written.
fn write_seq(ctx: &Context, sink: &mut dyn Sink, seq: i32, flags: u32) -> Result<Option<Vec<u8>>> {
    sink.put(&SEQ_IO_MAGIC.to_le_bytes())?;
    sink.put(&seq.to_le_bytes())?;
    if flags & FLAG_ON_DEVICE != 0 {
        let mut dev = DeviceSink { meta: sink, tensors: Vec::new() };
        write_memory(ctx, &mut dev, seq, flags)?;
        Ok(Some(dev.tensors))
    } else {
        write_memory(ctx, sink, seq, flags)?;
        Ok(None)
    }
}

pub fn seq_size(ctx: &Context, seq: i32, flags: u32) -> Result<usize> {
    // ON_DEVICE states leave the K/V bytes out of the caller's buffer.
    let mut counter = Counter { n: 0, skip_tensors: flags & FLAG_ON_DEVICE != 0 };
    write_seq(ctx, &mut counter, seq, flags & !FLAG_ON_DEVICE)?;
    Ok(counter.n)
}

/// A sequence's state into the caller's buffer; returns the bytes written.
/// With ON_DEVICE the buffer gets the metadata and the context keeps the
/// K/V bytes for `seq` (replacing what it kept before).
pub fn seq_get_data(ctx: &mut Context, dst: &mut [u8], seq: i32, flags: u32) -> Result<usize> {
    let mut sink = SliceSink::new(dst);
    if let Some(kept) = write_seq(ctx, &mut sink, seq, flags)? {
        ctx.device_states.insert(seq, kept);
    }
    Ok(sink.n_bytes())
}

// --- reading -------------------------------------------------------------------

/// One stream of a cache as read: cells and each layer's K/V bytes.
struct Stream<'a> {
    cells: Vec<(i32, SeqSet)>,
    /// Per layer of the section: [cell_count][row bytes].
    k: Vec<&'a [u8]>,
    /// Per layer: [cell_count][row bytes], or [width][cell_count] elements with v_trans.
    v: Vec<&'a [u8]>,
}

fn read_stream<'a>(
    kv: &KvCache,
    layout: &Layout,
    sec: &Section,
    src: &mut dyn Source<'a>,
    seq: i32,
    count: usize,
) -> Result<Stream<'a>> {
    // The reference's streams hold n_ctx_seq cells each; our decode lets a
    // sequence use more of the pool, so a stream is checked against the pool
    // (and all streams together when placed).
    if count > kv.n_cells() {
        return Err(Error::state(format!("not enough cells in kv cache ({count} > {})", kv.n_cells())));
    }
    let mut cells = Vec::with_capacity(count);
    for i in 0..count {
        let pos = i32_of(src)?;
        if pos < 0 {
            return Err(Error::state(format!("cell {i} has the invalid position {pos}")));
        }
        let n_seq_id = u32_of(src)? as usize;
        let mut seqs = SeqSet::default();
        if seq >= 0 {
            if n_seq_id != 1 {
                return Err(Error::state(format!(
                    "invalid seq_id-agnostic kv cell ({n_seq_id} sequence ids, 1 expected)"
                )));
            }
            i32_of(src)?; // the saved id; the cell goes to `seq`
            seqs.add(seq as usize);
        } else {
            if n_seq_id > layout.n_seq_max {
                return Err(Error::state(format!(
                    "cell {i} lists {n_seq_id} sequences (n_seq_max is {})",
                    layout.n_seq_max
                )));
            }
            for _ in 0..n_seq_id {
                let id = i32_of(src)?;
                if id < 0 || id as usize >= layout.n_seq_max {
                    return Err(Error::state(format!(
                        "invalid seq_id, {id} is out of range [0, {})",
                        layout.n_seq_max
                    )));
                }
                seqs.add(id as usize);
            }
        }
        cells.push((pos, seqs));
    }

    let v_trans = u32_of(src)?;
    let n_layer = u32_of(src)? as usize;
    if n_layer != sec.layers.len() {
        return Err(Error::state(format!("mismatched layer count ({n_layer} instead of {})", sec.layers.len())));
    }
    if v_trans > 1 || (v_trans == 1) != layout.v_trans {
        return Err(Error::state(format!(
            "incompatible V transposition (saved {v_trans}, this context {})",
            u32::from(layout.v_trans)
        )));
    }
    let mut k = Vec::with_capacity(n_layer);
    for &il in &sec.layers {
        let (rows, width) = (&kv.k[il], kv.k_width[il]);
        let ty = i32_of(src)?;
        if ty != rows.ggml_type() {
            return Err(Error::state(format!("mismatched key type ({} != {ty}, layer {il})", rows.ggml_type())));
        }
        let row = u64_of(src)?;
        if row != (width * rows.elem_size()) as u64 {
            return Err(Error::state(format!(
                "mismatched key row size ({} != {row}, layer {il})",
                width * rows.elem_size()
            )));
        }
        k.push(src.take_tensor(count * width * rows.elem_size())?);
    }
    let mut v = Vec::with_capacity(n_layer);
    for &il in &sec.layers {
        let (rows, width) = (&kv.v[il], kv.v_width[il]);
        let ty = i32_of(src)?;
        if ty != rows.ggml_type() {
            return Err(Error::state(format!("mismatched value type ({} != {ty}, layer {il})", rows.ggml_type())));
        }
        if layout.v_trans {
            let el = u32_of(src)?;
            if el as usize != rows.elem_size() {
                return Err(Error::state(format!(
                    "mismatched value element size ({} != {el}, layer {il})",
                    rows.elem_size()
                )));
            }
            let n_embd = u32_of(src)?;
            if n_embd as usize != width {
                return Err(Error::state(format!("mismatched GQA embedding size ({width} != {n_embd}, layer {il})")));
            }
        } else {
            let row = u64_of(src)?;
            if row != (width * rows.elem_size()) as u64 {
                return Err(Error::state(format!(
                    "mismatched value row size ({} != {row}, layer {il})",
                    width * rows.elem_size()
                )));
            }
        }
        v.push(src.take_tensor(count * width * rows.elem_size())?);
    }
    Ok(Stream { cells, k, v })
}

/// A cache's streams as read (None: an empty stream).
fn read_cache<'a>(
    kv: &KvCache,
    layout: &Layout,
    sec: &Section,
    src: &mut dyn Source<'a>,
    seq: i32,
) -> Result<Vec<Option<Stream<'a>>>> {
    let n_stream = u32_of(src)? as usize;
    if n_stream != layout.n_stream {
        return Err(Error::state(format!("n_stream mismatch ({n_stream} saved, {} in this context)", layout.n_stream)));
    }
    let mut streams = Vec::with_capacity(n_stream);
    for _ in 0..n_stream {
        let count = u32_of(src)? as usize;
        streams.push(if count == 0 { None } else { Some(read_stream(kv, layout, sec, src, seq, count)?) });
    }
    Ok(streams)
}

/// K/V bytes of one stream and the cells they go to.
struct Placement<'a, 's> {
    sec: &'s Section,
    stream: Stream<'a>,
    targets: Vec<usize>,
}

/// A checked restore, ready to apply.
struct Plan<'a, 's> {
    /// Whole restore: the cache is emptied first (seq -1, non-SWA cache read).
    clear: bool,
    /// Sequence restore: this sequence leaves every cell first.
    remove_seq: Option<i32>,
    /// Cells given a position and sequences (with every layer zeroed first).
    new_cells: Vec<(usize, i32, SeqSet)>,
    /// Whole restore of only the SWA cache: its layers are zeroed first.
    zero_layers: Vec<usize>,
    writes: Vec<Placement<'a, 's>>,
}

/// Finds the cells of `stream` among `candidates` (index, pos, seqs) by
/// position and sequences, each candidate used once.
fn match_cells(stream: &Stream, candidates: &[(usize, i32, SeqSet)]) -> Result<Vec<usize>> {
    let mut by_key: HashMap<(i32, SeqSet), Vec<usize>> = HashMap::new();
    for &(c, pos, seqs) in candidates.iter().rev() {
        by_key.entry((pos, seqs)).or_default().push(c);
    }
    stream
        .cells
        .iter()
        .map(|&(pos, seqs)| {
            by_key.get_mut(&(pos, seqs)).and_then(|v| v.pop()).ok_or_else(|| {
                Error::state(format!("the SWA cache's cell at position {pos} has no counterpart in the non-SWA cache"))
            })
        })
        .collect()
}

/// The cells a sequence restore of `n` cells goes to: the lowest free ones
/// once `seq` has left every cell.
fn free_cells(kv: &KvCache, seq: i32, n: usize) -> Result<Vec<usize>> {
    let free: Vec<usize> = kv
        .cells
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let mut rest = c.seqs;
            rest.remove(seq as usize);
            rest.is_empty()
        })
        .map(|(i, _)| i)
        .take(n)
        .collect();
    if free.len() < n {
        return Err(Error::state(format!("failed to find {n} available cells in kv cache")));
    }
    Ok(free)
}

/// The cells a state without its non-SWA cache (PARTIAL_ONLY) matches its
/// SWA cells against: the ones the cache holds (of `seq`, listed as `seq` alone).
fn held_cells(kv: &KvCache, seq: i32) -> Vec<(usize, i32, SeqSet)> {
    let mut only = SeqSet::default();
    if seq >= 0 {
        only.add(seq as usize);
    }
    kv.cells
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.is_empty() && (seq < 0 || c.seqs.has(seq as usize)))
        .map(|(i, c)| (i, c.pos, if seq < 0 { c.seqs } else { only }))
        .collect()
}

/// Decides where every cell of a parsed state goes, or why it cannot.
fn plan_restore<'a, 's>(
    kv: &KvCache,
    layout: &'s Layout,
    sections: Vec<(&'s Section, Vec<Option<Stream<'a>>>)>,
    seq: i32,
) -> Result<Plan<'a, 's>> {
    let mut plan =
        Plan { clear: false, remove_seq: None, new_cells: Vec::new(), zero_layers: Vec::new(), writes: Vec::new() };
    // Cells the non-SWA cache places, by stream, for matching the SWA cache's.
    let mut placed: Vec<Vec<(usize, i32, SeqSet)>> = vec![Vec::new(); layout.n_stream];
    let mut next_cell = 0;
    for (sec, streams) in sections {
        let base = sec.n_swa.is_none();
        if seq < 0 && base {
            plan.clear = true;
        }
        if seq < 0 && !base && !plan.clear {
            plan.zero_layers.extend(&sec.layers);
        }
        if seq >= 0 && streams.iter().filter(|s| s.is_some()).count() > 1 {
            return Err(Error::state("a sequence state has cells in more than one stream"));
        }
        for (s, stream) in streams.into_iter().enumerate() {
            let Some(stream) = stream else { continue };
            let n = stream.cells.len();
            let targets = if base && seq < 0 {
                // Whole restore: stream after stream from cell 0.
                if next_cell + n > kv.n_cells() {
                    return Err(Error::state(format!(
                        "not enough cells in kv cache ({} > {})",
                        next_cell + n,
                        kv.n_cells()
                    )));
                }
                next_cell += n;
                (next_cell - n..next_cell).collect()
            } else if base {
                plan.remove_seq = Some(seq);
                free_cells(kv, seq, n)?
            } else if seq < 0 && plan.clear {
                match_cells(&stream, &placed[s])?
            } else if seq >= 0 && plan.remove_seq.is_some() {
                match_cells(&stream, &plan.new_cells)?
            } else {
                match_cells(&stream, &held_cells(kv, seq))?
            };
            if base {
                for (&t, &(pos, seqs)) in targets.iter().zip(&stream.cells) {
                    plan.new_cells.push((t, pos, seqs));
                    placed[s].push((t, pos, seqs));
                }
            }
            plan.writes.push(Placement { sec, stream, targets });
        }
    }
    Ok(plan)
}

fn apply(kv: &mut KvCache, layout: &Layout, plan: Plan) {
    if plan.clear {
        kv.clear_all(true);
    }
    if let Some(seq) = plan.remove_seq {
        for c in &mut kv.cells {
            c.seqs.remove(seq as usize);
        }
    }
    for &il in &plan.zero_layers {
        let n = kv.n_cells();
        kv.k[il].zero(0, n * kv.k_width[il]);
        kv.v[il].zero(0, n * kv.v_width[il]);
    }
    for &(c, pos, seqs) in &plan.new_cells {
        kv.cells[c].pos = pos;
        kv.cells[c].seqs = seqs;
        for il in 0..kv.k.len() {
            let (kw, vw) = (kv.k_width[il], kv.v_width[il]);
            kv.k[il].zero(c * kw, kw);
            kv.v[il].zero(c * vw, vw);
        }
    }
    for w in &plan.writes {
        let n = w.targets.len();
        for (li, &il) in w.sec.layers.iter().enumerate() {
            let (kw, vw) = (kv.k_width[il], kv.v_width[il]);
            let (ke, ve) = (kv.k[il].elem_size(), kv.v[il].elem_size());
            for (i, &c) in w.targets.iter().enumerate() {
                kv.k[il].set_le(c * kw, &w.stream.k[li][i * kw * ke..(i + 1) * kw * ke]);
            }
            let v = w.stream.v[li];
            if layout.v_trans {
                // [vw][n] elements: element j of cell i at (j * n + i).
                for (i, &c) in w.targets.iter().enumerate() {
                    for j in 0..vw {
                        let at = (j * n + i) * ve;
                        kv.v[il].set_le(c * vw + j, &v[at..at + ve]);
                    }
                }
            } else {
                for (i, &c) in w.targets.iter().enumerate() {
                    kv.v[il].set_le(c * vw, &v[i * vw * ve..(i + 1) * vw * ve]);
                }
            }
        }
    }
}

/// Reads the memory part of a state and, once all of it checks out,
/// restores it; returns the bytes read.
fn read_memory<'a>(ctx: &mut Context, src: &mut dyn Source<'a>, seq: i32, flags: u32) -> Result<usize> {
    let layout = Layout::of(ctx);
    restore_kv(&mut ctx.kv, &layout, src, seq, flags)
}

fn restore_kv<'a>(kv: &mut KvCache, layout: &Layout, src: &mut dyn Source<'a>, seq: i32, flags: u32) -> Result<usize> {
    check_seq(layout, seq)?;
    let mut sections = Vec::new();
    for sec in layout.sections(flags) {
        sections.push((sec, read_cache(kv, layout, sec, src, seq)?));
    }
    src.finished()?;
    let plan = plan_restore(kv, layout, sections, seq)?;
    apply(kv, layout, plan);
    Ok(src.n_bytes())
}

/// Restores a whole state (llama_state_set_data); returns the bytes read.
pub fn read_state<'a>(ctx: &mut Context, src: &mut dyn Source<'a>) -> Result<usize> {
    let arch = arch_name(ctx)?;
    let n = u32_of(src)? as usize;
    // A name is short; a huge length is a broken state, not a read to attempt.
    if n > 256 {
        return Err(Error::state(format!("wrong model arch: a name of {n} bytes instead of '{arch}'")));
    }
    let saved = src.take(n)?;
    if saved != arch.as_bytes() {
        return Err(Error::state(format!(
            "wrong model arch: '{}' instead of '{arch}'",
            String::from_utf8_lossy(saved)
        )));
    }
    read_memory(ctx, src, -1, 0)
}

/// Restores a sequence's state (llama_state_seq_set_data_ext) into `seq`;
/// returns the bytes read. With ON_DEVICE the K/V bytes come from what
/// llama_state_seq_get_data_ext kept for the saved sequence.
pub fn seq_set_data(ctx: &mut Context, src: &[u8], seq: i32, flags: u32) -> Result<usize> {
    let mut meta = SliceSource::new(src);
    let magic = u32_of(&mut meta)?;
    if magic != SEQ_IO_MAGIC {
        return Err(Error::state(format!("wrong sequence state magic ({magic:#010x}, expected {SEQ_IO_MAGIC:#010x})")));
    }
    let saved_seq = i32_of(&mut meta)?;
    if flags & FLAG_ON_DEVICE == 0 {
        return read_memory(ctx, &mut meta, seq, flags);
    }
    let kept = ctx
        .device_states
        .remove(&saved_seq)
        .ok_or_else(|| Error::state(format!("no on-device state was kept for sequence {saved_seq}")))?;
    let mut dev = DeviceSource { meta: &mut meta, tensors: SliceSource::new(&kept) };
    let result = read_memory(ctx, &mut dev, seq, flags);
    ctx.device_states.insert(saved_seq, kept);
    result
}

// --- files -----------------------------------------------------------------------

fn open_err(path: &Path, e: std::io::Error) -> Error {
    Error::Io { path: path.display().to_string(), reason: e.to_string() }
}

fn create(path: &Path) -> Result<FileSink> {
    let f = std::fs::File::create(path).map_err(|e| Error::state(format!("failed to open {}: {e}", path.display())))?;
    Ok(FileSink { w: std::io::BufWriter::new(f), n: 0, path: path.display().to_string() })
}

fn put_header(sink: &mut FileSink, magic: u32, version: u32, tokens: &[i32]) -> Result<()> {
    let n = u32::try_from(tokens.len())
        .map_err(|_| Error::invalid(format!("{} tokens do not fit a session file", tokens.len())))?;
    sink.put(&magic.to_le_bytes())?;
    sink.put(&version.to_le_bytes())?;
    sink.put(&n.to_le_bytes())?;
    let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
    sink.put(&bytes)
}

fn finish(mut sink: FileSink) -> Result<usize> {
    sink.w.flush().map_err(|e| Error::state(format!("cannot write '{}': {e}", sink.path)))?;
    Ok(sink.n)
}

/// llama_state_save_file: header, prompt tokens, whole state.
pub fn save_session_file(ctx: &Context, path: &Path, tokens: &[i32]) -> Result<()> {
    let mut sink = create(path)?;
    put_header(&mut sink, SESSION_MAGIC, SESSION_VERSION, tokens)?;
    write_state(ctx, &mut sink)?;
    finish(sink).map(|_| ())
}

/// llama_state_seq_save_file: header, prompt tokens, the sequence's memory;
/// returns the file's size.
pub fn save_seq_file(ctx: &Context, path: &Path, seq: i32, tokens: &[i32]) -> Result<usize> {
    check_seq(&Layout::of(ctx), seq)?;
    let mut sink = create(path)?;
    put_header(&mut sink, SEQ_MAGIC, SEQ_VERSION, tokens)?;
    write_memory(ctx, &mut sink, seq, 0)?;
    finish(sink)
}

/// An open state file after its header: the token count and the bytes left.
struct FileHead {
    file: std::fs::File,
    n_token: usize,
    rest: u64,
}

fn open_head(path: &Path, magic: u32, version: u32, what: &str) -> Result<FileHead> {
    let mut file = std::fs::File::open(path).map_err(|e| open_err(path, e))?;
    let len = file.metadata().map_err(|e| open_err(path, e))?.len();
    let mut head = [0u8; 12];
    file.read_exact(&mut head)
        .map_err(|_| Error::state(format!("{}: {len} bytes are too few for a {what} file", path.display())))?;
    let word = |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    if word(0) != magic || word(4) != version {
        return Err(Error::state(format!(
            "unknown (magic, version) for {what} file: {:08x}, {:08x}",
            word(0),
            word(4)
        )));
    }
    Ok(FileHead { file, n_token: word(8) as usize, rest: len - 12 })
}

/// Reads `n` bytes of a state file.
fn read_bytes(file: &mut std::fs::File, n: usize, path: &Path) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; n];
    file.read_exact(&mut buf)
        .map_err(|e| Error::state(format!("{}: failed to read {n} bytes: {e}", path.display())))?;
    Ok(buf)
}

fn tokens_of(bytes: &[u8]) -> Vec<i32> {
    bytes.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// llama_state_load_file: checks the header, the token count against
/// `capacity`, restores the state (which must use the whole file); returns
/// the prompt tokens.
pub fn load_session_file(ctx: &mut Context, path: &Path, capacity: usize) -> Result<Vec<i32>> {
    let mut head = open_head(path, SESSION_MAGIC, SESSION_VERSION, "session")?;
    if head.n_token > capacity {
        return Err(Error::state(format!(
            "token count in session file exceeded capacity! {} > {capacity}",
            head.n_token
        )));
    }
    let token_bytes = head.n_token as u64 * 4;
    if token_bytes > head.rest {
        return Err(Error::state(format!("{}: {} tokens do not fit in the file", path.display(), head.n_token)));
    }
    let state_len = head.rest - token_bytes;
    let max = Layout::of(ctx).max_bytes(&ctx.kv) as u64;
    if state_len > max {
        return Err(Error::state(format!(
            "{}: {state_len} bytes of state are more than this context can hold ({max})",
            path.display()
        )));
    }
    let tokens = tokens_of(&read_bytes(&mut head.file, token_bytes as usize, path)?);
    let state = read_bytes(&mut head.file, state_len as usize, path)?;
    read_state(ctx, &mut SliceSource::exact(&state))?;
    Ok(tokens)
}

/// What llama_state_seq_load_file reports.
pub struct SeqFile {
    /// Bytes of the file read (the file may go on after the state).
    pub n_read: usize,
    pub n_token: usize,
    /// The prompt tokens (none read when only the count was asked for).
    pub tokens: Vec<i32>,
}

/// llama_state_seq_load_file. With `capacity` None (tokens_out NULL) only
/// the token count is read and the header's size returned. Otherwise
/// restores the sequence and returns the bytes read.
pub fn load_seq_file(ctx: &mut Context, path: &Path, seq: i32, capacity: Option<usize>) -> Result<SeqFile> {
    let mut head = open_head(path, SEQ_MAGIC, SEQ_VERSION, "sequence state")?;
    let token_bytes = head.n_token as u64 * 4;
    let Some(capacity) = capacity else {
        if token_bytes > head.rest {
            return Err(Error::state(format!(
                "token count in sequence state file exceeds the file size! {} > {}",
                head.n_token,
                head.rest / 4
            )));
        }
        return Ok(SeqFile { n_read: 12, n_token: head.n_token, tokens: Vec::new() });
    };
    if head.n_token > capacity {
        return Err(Error::state(format!(
            "token count in sequence state file exceeded capacity! {} > {capacity}",
            head.n_token
        )));
    }
    if token_bytes > head.rest {
        return Err(Error::state(format!("{}: {} tokens do not fit in the file", path.display(), head.n_token)));
    }
    let tokens = tokens_of(&read_bytes(&mut head.file, token_bytes as usize, path)?);
    // Whatever follows a valid state is not read, so at most the largest state.
    let max = Layout::of(ctx).max_bytes(&ctx.kv) as u64;
    let n = (head.rest - token_bytes).min(max) as usize;
    let state = read_bytes(&mut head.file, n, path)?;
    let mut src = SliceSource::new(&state);
    read_memory(ctx, &mut src, seq, 0).map_err(|e| Error::state(format!("failed to restore sequence state: {e}")))?;
    Ok(SeqFile { n_read: 12 + token_bytes as usize + src.n_bytes(), n_token: tokens.len(), tokens })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::kv_cache::KvType;

    /// A cache of `n` cells and `n_layer` layers, K and V two elements wide.
    fn cache(n: usize, n_layer: usize, ty: KvType) -> KvCache {
        KvCache::new(n, vec![2; n_layer], vec![2; n_layer], ty, ty).unwrap()
    }

    /// Cell `c` at `pos` in `seqs`, its K row [k, k + 1] and V row [-k, k / 2] in every layer.
    fn put(kv: &mut KvCache, c: usize, pos: i32, seqs: &[usize], k: f32) {
        kv.cells[c].pos = pos;
        kv.cells[c].seqs = SeqSet::default();
        seqs.iter().for_each(|&s| kv.cells[c].seqs.add(s));
        for il in 0..kv.k.len() {
            kv.k[il].write(c * 2, &[k + il as f32, k + 1.0]);
            kv.v[il].write(c * 2, &[-k, k / 2.0 + il as f32]);
        }
    }

    fn layout(n_stream: usize, n_seq_max: usize, v_trans: bool, n_layer: usize) -> Layout {
        Layout {
            n_stream,
            n_seq_max,
            v_trans,
            swa_keep: None,
            sections: vec![Section { layers: (0..n_layer).collect(), n_swa: None }],
        }
    }

    fn save(kv: &KvCache, l: &Layout, seq: i32, flags: u32) -> Vec<u8> {
        let mut counter = Counter { n: 0, skip_tensors: false };
        write_kv(kv, l, &mut counter, seq, flags).unwrap();
        let mut buf = vec![0u8; counter.n];
        let mut sink = SliceSink::new(&mut buf);
        write_kv(kv, l, &mut sink, seq, flags).unwrap();
        assert_eq!(sink.n_bytes(), counter.n, "the counted size is the written size");
        buf
    }

    fn restore(kv: &mut KvCache, l: &Layout, bytes: &[u8], seq: i32, flags: u32) -> Result<usize> {
        restore_kv(kv, l, &mut SliceSource::new(bytes), seq, flags)
    }

    fn words(ws: &[&[u8]]) -> Vec<u8> {
        ws.concat()
    }

    fn f16s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|&x| half::f16::from_f32(x).to_bits().to_le_bytes()).collect()
    }

    /// The bytes of a two-cell, one-layer cache, written out field by field
    /// from llama_kv_cache::state_write_meta / state_write_data.
    #[test]
    fn bytes_follow_the_reference_layout() {
        let mut kv = cache(4, 1, KvType::F16);
        put(&mut kv, 0, 0, &[0], 1.0);
        put(&mut kv, 2, 1, &[0, 1], 3.0);
        let l = layout(1, 2, false, 1);
        let expected = words(&[
            &1u32.to_le_bytes(), // n_stream
            &2u32.to_le_bytes(), // cell_count
            &0i32.to_le_bytes(),
            &1u32.to_le_bytes(),
            &0i32.to_le_bytes(), // pos 0, seq [0]
            &1i32.to_le_bytes(),
            &2u32.to_le_bytes(),
            &0i32.to_le_bytes(),
            &1i32.to_le_bytes(), // pos 1, seqs [0, 1]
            &0u32.to_le_bytes(),
            &1u32.to_le_bytes(), // v_trans, n_layer
            &1i32.to_le_bytes(),
            &4u64.to_le_bytes(),
            &f16s(&[1.0, 2.0, 3.0, 4.0]), // K: F16, 4-byte rows
            &1i32.to_le_bytes(),
            &4u64.to_le_bytes(),
            &f16s(&[-1.0, 0.5, -3.0, 1.5]), // V rows
        ]);
        assert_eq!(save(&kv, &l, -1, 0), expected);

        // V transposed: element size, width, then element j of each cell.
        let lt = layout(1, 2, true, 1);
        let mut t = expected[..expected.len() - 12 - 8].to_vec();
        t[36..40].copy_from_slice(&1u32.to_le_bytes()); // v_trans
        t.extend(words(&[
            &1i32.to_le_bytes(),
            &2u32.to_le_bytes(),
            &2u32.to_le_bytes(),
            &f16s(&[-1.0, -3.0, 0.5, 1.5]),
        ]));
        assert_eq!(save(&kv, &lt, -1, 0), t);

        // Sequence 1: only its cell, listed with id 1 alone.
        let seq1 = words(&[
            &1u32.to_le_bytes(),
            &1u32.to_le_bytes(),
            &1i32.to_le_bytes(),
            &1u32.to_le_bytes(),
            &1i32.to_le_bytes(),
            &0u32.to_le_bytes(),
            &1u32.to_le_bytes(),
            &1i32.to_le_bytes(),
            &4u64.to_le_bytes(),
            &f16s(&[3.0, 4.0]),
            &1i32.to_le_bytes(),
            &4u64.to_le_bytes(),
            &f16s(&[-3.0, 1.5]),
        ]);
        assert_eq!(save(&kv, &l, 1, 0), seq1);

        // An empty cache: one empty stream. F32 rows: type 0, 8-byte rows.
        assert_eq!(save(&cache(4, 1, KvType::F16), &l, -1, 0), words(&[&1u32.to_le_bytes(), &0u32.to_le_bytes()]));
        let mut k32 = cache(4, 1, KvType::F32);
        put(&mut k32, 0, 0, &[0], 1.0);
        let b = save(&k32, &l, -1, 0);
        assert_eq!(&b[28..40], &words(&[&0i32.to_le_bytes(), &8u64.to_le_bytes()])[..]);
        assert_eq!(&b[40..48], &words(&[&1f32.to_le_bytes(), &2f32.to_le_bytes()])[..]);
    }

    fn sample(n: usize, n_layer: usize, ty: KvType) -> KvCache {
        let mut kv = cache(n, n_layer, ty);
        put(&mut kv, 1, 0, &[0], 0.5);
        put(&mut kv, 2, 1, &[0], 1.5);
        put(&mut kv, 4, 0, &[1], -2.5);
        put(&mut kv, 5, 2, &[0, 1], 7.25);
        kv
    }

    #[test]
    fn whole_state_round_trips_in_every_variant() {
        for ty in [KvType::F16, KvType::F32] {
            for v_trans in [false, true] {
                for n_stream in [1, 2] {
                    let l = layout(n_stream, 2, v_trans, 2);
                    let kv = sample(8, 2, ty);
                    let bytes = save(&kv, &l, -1, 0);
                    let mut back = cache(8, 2, ty);
                    put(&mut back, 7, 9, &[1], 9.0); // replaced by the restore
                    assert_eq!(restore(&mut back, &l, &bytes, -1, 0).unwrap(), bytes.len());
                    assert_eq!(save(&back, &l, -1, 0), bytes, "{ty:?} v_trans {v_trans} streams {n_stream}");
                    for seq in 0..2 {
                        assert_eq!(back.pos_max(seq), kv.pos_max(seq));
                        assert_eq!(save(&back, &l, seq, 0), save(&kv, &l, seq, 0));
                    }
                    // Cells go to 0.. in order; the shared cell is listed once per stream.
                    let used = back.cells.iter().filter(|c| !c.is_empty()).count();
                    assert_eq!(used, if n_stream == 1 { 4 } else { 5 });
                    assert_eq!(back.k[1].get(0), 1.5, "layer 1's K of the first listed cell");
                }
            }
        }
    }

    #[test]
    fn sequence_state_goes_to_the_destination_sequence() {
        let l = layout(1, 3, false, 2);
        let kv = sample(8, 2, KvType::F16);
        let seq0 = save(&kv, &l, 0, 0);
        // Into sequence 2 of a cache whose sequence 2 had other cells.
        let mut dst = cache(8, 2, KvType::F16);
        put(&mut dst, 0, 0, &[1], 4.0);
        put(&mut dst, 1, 5, &[2], 4.0);
        put(&mut dst, 2, 6, &[1, 2], 4.0);
        restore(&mut dst, &l, &seq0, 2, 0).unwrap();
        assert_eq!((dst.pos_min(2), dst.pos_max(2)), (0, 2));
        assert_eq!((dst.pos_min(1), dst.pos_max(1)), (0, 6), "sequence 1 keeps its cells");
        // Sequence 2's own cell 1 was freed and reused first.
        assert!(dst.cells[1].seqs.has(2) && dst.cells[1].pos == 0);
        let mut only2 = save(&dst, &l, 2, 0);
        let mut expect = seq0.clone();
        // Listed with id 2 instead of 0.
        for b in [&mut only2, &mut expect] {
            for i in 0..3 {
                b[8 + 12 * i + 8..8 + 12 * i + 12].copy_from_slice(&[0; 4]);
            }
        }
        assert_eq!(only2, expect);
        // An empty sequence state leaves the sequence as it was (as the reference).
        let empty = save(&cache(8, 2, KvType::F16), &l, 0, 0);
        restore(&mut dst, &l, &empty, 2, 0).unwrap();
        assert_eq!(dst.pos_max(2), 2);
    }

    #[test]
    fn failed_restores_leave_the_cache_as_it_was() {
        let l = layout(1, 2, false, 2);
        let bytes = save(&sample(8, 2, KvType::F16), &l, -1, 0);
        let mut dst = cache(8, 2, KvType::F16);
        put(&mut dst, 3, 0, &[0], 11.0);
        let before = save(&dst, &l, -1, 0);
        // Every truncation.
        for n in 0..bytes.len() {
            let e = restore(&mut dst, &l, &bytes[..n], -1, 0).unwrap_err();
            assert!(e.to_string().contains("end of buffer"), "{n}: {e}");
        }
        // Fields with impossible values: (offset, new u32, message).
        let cases: [(usize, u32, &str); 9] = [
            (0, 2, "n_stream mismatch"),
            (4, 9, "not enough cells"),
            (8, (-3i32) as u32, "invalid position"),
            (12, 3, "lists 3 sequences"),
            (16, 5, "invalid seq_id, 5"),
            (60, 2, "incompatible V transposition"),
            (64, 3, "mismatched layer count"),
            (68, 0, "mismatched key type"),
            (72, 6, "mismatched key row size"),
        ];
        for (at, v, msg) in cases {
            let mut bad = bytes.clone();
            bad[at..at + 4].copy_from_slice(&v.to_le_bytes());
            let e = restore(&mut dst, &l, &bad, -1, 0).unwrap_err();
            assert!(e.to_string().contains(msg), "offset {at}: {e}");
        }
        // A state of more cells than the cache has.
        let mut small = cache(2, 2, KvType::F16);
        let e = restore(&mut small, &layout(1, 2, false, 2), &bytes, -1, 0).unwrap_err();
        assert!(e.to_string().contains("not enough cells"), "{e}");
        // Another shape: V transposed, F32 rows, three layers.
        assert!(restore(&mut dst, &layout(1, 2, true, 2), &bytes, -1, 0).is_err());
        assert!(restore(&mut cache(8, 2, KvType::F32), &l, &bytes, -1, 0).is_err());
        assert!(restore(&mut cache(8, 3, KvType::F16), &layout(1, 2, false, 3), &bytes, -1, 0).is_err());
        // A sequence state needs n_seq_id 1, and room.
        let seq = save(&sample(8, 2, KvType::F16), &l, 0, 0);
        let mut bad = seq.clone();
        bad[12..16].copy_from_slice(&2u32.to_le_bytes());
        assert!(restore(&mut dst, &l, &bad, 1, 0).unwrap_err().to_string().contains("seq_id-agnostic"));
        let mut full = cache(8, 2, KvType::F16);
        (0..7).for_each(|c| put(&mut full, c, c as i32, &[0], 1.0));
        let full_before = save(&full, &l, -1, 0);
        assert!(restore(&mut full, &l, &seq, 1, 0)
            .unwrap_err()
            .to_string()
            .contains("failed to find 3 available cells"));
        assert_eq!(save(&full, &l, -1, 0), full_before);
        assert!(restore(&mut dst, &l, &seq, 2, 0).unwrap_err().to_string().contains("out of range"));
        assert_eq!(save(&dst, &l, -1, 0), before);
    }

    /// gemma3: a non-SWA cache (layer 0) and a SWA cache (layer 1, window 2).
    fn swa_layout(swa_keep: Option<i32>) -> Layout {
        Layout {
            n_stream: 1,
            n_seq_max: 2,
            v_trans: false,
            swa_keep,
            sections: vec![Section { layers: vec![0], n_swa: None }, Section { layers: vec![1], n_swa: Some(2) }],
        }
    }

    /// Cell counts of each cache in a state written by `save`.
    fn counts(bytes: &[u8], l: &Layout) -> Vec<u32> {
        let mut src = SliceSource::new(bytes);
        let kv = cache(8, 2, KvType::F16);
        l.sections
            .iter()
            .map(|sec| read_cache(&kv, l, sec, &mut src, -1).unwrap()[0].as_ref().map_or(0, |s| s.cells.len() as u32))
            .collect()
    }

    #[test]
    fn swa_cache_lists_the_window_and_restores_by_position() {
        let mut kv = cache(8, 2, KvType::F16);
        (0..5).for_each(|p| put(&mut kv, p, p as i32, &[0], p as f32 + 1.0));
        let full = swa_layout(None);
        // A sequence lists the cells with pos_max - pos < n_swa (positions 3, 4).
        let seq = save(&kv, &full, 0, 0);
        let mut src = SliceSource::new(&seq);
        let base = read_cache(&kv, &full, &full.sections[0], &mut src, 0).unwrap();
        let swa = read_cache(&kv, &full, &full.sections[1], &mut src, 0).unwrap();
        assert_eq!(base[0].as_ref().unwrap().cells.len(), 5);
        assert_eq!(swa[0].as_ref().unwrap().cells.iter().map(|c| c.0).collect::<Vec<_>>(), vec![3, 4]);
        // The whole state lists every cell (swa_full), or the latest swa_keep positions.
        assert_eq!(counts(&save(&kv, &full, -1, 0), &full), vec![5, 5]);
        assert_eq!(counts(&save(&kv, &swa_layout(Some(3)), -1, 0), &swa_layout(Some(3))), vec![5, 3]);
        // PARTIAL_ONLY: the SWA cache alone.
        let partial = save(&kv, &full, 0, FLAG_PARTIAL_ONLY);
        assert_eq!(partial.len(), seq.len() - (8 + 5 * 12 + 8 + 2 * (12 + 5 * 4)));

        // Restoring the sequence state into sequence 1: SWA rows where listed, zero elsewhere.
        let mut dst = cache(8, 2, KvType::F16);
        restore(&mut dst, &full, &seq, 1, 0).unwrap();
        let cells: Vec<usize> = (0..8).filter(|&c| dst.cells[c].seqs.has(1)).collect();
        assert_eq!(cells, vec![0, 1, 2, 3, 4]);
        for &c in &cells {
            let pos = dst.cells[c].pos;
            assert_eq!(dst.k[0].get(c * 2 + 1), pos as f32 + 2.0, "non-SWA K of pos {pos}");
            let swa_k = dst.k[1].get(c * 2 + 1);
            assert_eq!(swa_k, if pos >= 3 { pos as f32 + 2.0 } else { 0.0 }, "SWA K of pos {pos}");
        }
        // The PARTIAL_ONLY state rewrites the SWA rows of sequence 0's cells at positions 3, 4.
        let mut p = kv.clone();
        p.k[1].zero(0, 16);
        restore(&mut p, &full, &partial, 0, FLAG_PARTIAL_ONLY).unwrap();
        assert_eq!((p.k[1].get(3 * 2), p.k[1].get(4 * 2), p.k[1].get(2 * 2)), (5.0, 6.0, 0.0));
        // A whole state of the SWA cache alone rebuilds that cache's layer.
        let whole_partial = save(&kv, &full, -1, FLAG_PARTIAL_ONLY);
        let mut q = kv.clone();
        q.k[1].zero(0, 16);
        q.v[1].write(14, &[3.0, 3.0]);
        restore(&mut q, &full, &whole_partial, -1, FLAG_PARTIAL_ONLY).unwrap();
        assert_eq!(save(&q, &full, -1, 0), save(&kv, &full, -1, 0));
        assert_eq!(q.v[1].get(14), 0.0, "a free cell's SWA row is cleared");
        // An SWA cell without a counterpart fails, changing nothing.
        let mut gone = kv.clone();
        gone.seq_rm(0, 4, 5);
        let before = save(&gone, &full, -1, 0);
        let e = restore(&mut gone, &full, &partial, 0, FLAG_PARTIAL_ONLY).unwrap_err();
        assert!(e.to_string().contains("position 4 has no counterpart"), "{e}");
        assert_eq!(save(&gone, &full, -1, 0), before);
    }

    #[test]
    fn short_buffers_fail_and_on_device_keeps_the_data_aside() {
        let l = layout(1, 2, false, 2);
        let kv = sample(8, 2, KvType::F16);
        let n = save(&kv, &l, -1, 0).len();
        let mut buf = vec![0u8; n - 1];
        assert!(write_kv(&kv, &l, &mut SliceSink::new(&mut buf), -1, 0)
            .unwrap_err()
            .to_string()
            .contains("end of buffer"));
        // ON_DEVICE: only the metadata reaches the sink; the K/V bytes are kept.
        let mut meta = vec![0u8; n];
        let mut sink = SliceSink::new(&mut meta);
        let kept = {
            let mut dev = DeviceSink { meta: &mut sink, tensors: Vec::new() };
            write_kv(&kv, &l, &mut dev, -1, 0).unwrap();
            dev.tensors
        };
        let n_meta = sink.n_bytes();
        assert_eq!(n_meta + kept.len(), n);
        let mut counter = Counter { n: 0, skip_tensors: true };
        write_kv(&kv, &l, &mut counter, -1, 0).unwrap();
        assert_eq!(counter.n, n_meta);
        let mut back = cache(8, 2, KvType::F16);
        let mut src = SliceSource::new(&meta[..n_meta]);
        let mut dsrc = DeviceSource { meta: &mut src, tensors: SliceSource::new(&kept) };
        assert_eq!(restore_kv(&mut back, &l, &mut dsrc, -1, 0).unwrap(), n_meta);
        assert_eq!(save(&back, &l, -1, 0), save(&kv, &l, -1, 0));
        // Kept data of another size is refused.
        let mut src = SliceSource::new(&meta[..n_meta]);
        let longer = [&kept[..], &[0u8, 0]].concat();
        let mut dsrc = DeviceSource { meta: &mut src, tensors: SliceSource::new(&longer) };
        assert!(restore_kv(&mut back, &l, &mut dsrc, -1, 0)
            .unwrap_err()
            .to_string()
            .contains("memory buffer mismatch"));
    }
}
