//! The KV cache: per layer, K and V rows for every cell, in f16 (the
//! reference's default type) or f32; and per cell, its position and the set
//! of sequences it belongs to.
//!
//! Layout: `k[layer]` is [n_cells][n_head_kv * head_dim_k], `v[layer]` is
//! [n_cells][n_head_kv * head_dim_v], row `c` being cell `c`.

use crate::error::{Error, Result};
use crate::model::MAX_SEQ;
use half::f16;

/// The sequences a cell belongs to (MAX_SEQ = 256 bits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SeqSet([u64; MAX_SEQ / 64]);

impl SeqSet {
    pub fn has(&self, s: usize) -> bool {
        self.0[s / 64] >> (s % 64) & 1 == 1
    }
    pub fn add(&mut self, s: usize) {
        self.0[s / 64] |= 1 << (s % 64);
    }
    pub fn remove(&mut self, s: usize) {
        self.0[s / 64] &= !(1 << (s % 64));
    }
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    pub fn clear(&mut self) {
        self.0 = [0; MAX_SEQ / 64];
    }
}

/// One cell: empty when `seqs` is empty (its `pos` is then meaningless).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cell {
    pub pos: i32,
    pub seqs: SeqSet,
}

impl Cell {
    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }
}

/// K/V storage type (type_k / type_v).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvType {
    F16,
    F32,
}

/// One layer's rows, stored in the chosen type.
#[derive(Debug, Clone)]
pub enum KvRows {
    F16(Vec<f16>),
    F32(Vec<f32>),
}

impl KvRows {
    fn new(ty: KvType, n: usize) -> KvRows {
        match ty {
            KvType::F16 => KvRows::F16(vec![f16::ZERO; n]),
            KvType::F32 => KvRows::F32(vec![0.0; n]),
        }
    }

    /// Stores `src` at element offset `at` (rounding to f16 when stored so:
    /// nearest even, as `f16::from_f32`; the slice conversion uses F16C's
    /// `vcvtps2ph` 8 values at a time where the CPU has it, where one call
    /// per value was ~1.5 % of a prefill, on the submitting thread alone).
    pub fn write(&mut self, at: usize, src: &[f32]) {
        use half::slice::HalfFloatSliceExt;
        match self {
            KvRows::F16(v) => v[at..at + src.len()].convert_from_f32_slice(src),
            KvRows::F32(v) => v[at..at + src.len()].copy_from_slice(src),
        }
    }

    /// The storage type.
    pub fn ty(&self) -> KvType {
        match self {
            KvRows::F16(_) => KvType::F16,
            KvRows::F32(_) => KvType::F32,
        }
    }

    /// Element `i` as f32.
    #[inline]
    pub fn get(&self, i: usize) -> f32 {
        match self {
            KvRows::F16(v) => v[i].to_f32(),
            KvRows::F32(v) => v[i],
        }
    }

    /// The ggml_type id of the storage (F32 = 0, F16 = 1), as saved states name it.
    pub fn ggml_type(&self) -> i32 {
        match self {
            KvRows::F16(_) => 1,
            KvRows::F32(_) => 0,
        }
    }

    /// Bytes per element (ggml_type_size).
    pub fn elem_size(&self) -> usize {
        match self {
            KvRows::F16(_) => 2,
            KvRows::F32(_) => 4,
        }
    }

    /// Appends elements [at, at + n) to `out` as little-endian bytes (the
    /// bytes of ggml's tensor data).
    pub fn append_le(&self, at: usize, n: usize, out: &mut Vec<u8>) {
        match self {
            KvRows::F16(v) => v[at..at + n].iter().for_each(|x| out.extend_from_slice(&x.to_bits().to_le_bytes())),
            KvRows::F32(v) => v[at..at + n].iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        }
    }

    /// Stores little-endian element bytes at element offset `at`
    /// (`bytes.len()` a multiple of the element size).
    pub fn set_le(&mut self, at: usize, bytes: &[u8]) {
        match self {
            KvRows::F16(v) => {
                for (d, b) in v[at..].iter_mut().zip(bytes.chunks_exact(2)) {
                    *d = f16::from_bits(u16::from_le_bytes([b[0], b[1]]));
                }
            }
            KvRows::F32(v) => {
                for (d, b) in v[at..].iter_mut().zip(bytes.chunks_exact(4)) {
                    *d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
        }
    }

    /// Zeroes elements [at, at + n).
    pub fn zero(&mut self, at: usize, n: usize) {
        match self {
            KvRows::F16(v) => v[at..at + n].fill(f16::ZERO),
            KvRows::F32(v) => v[at..at + n].fill(0.0),
        }
    }

    pub fn copy_row(&mut self, from: usize, to: usize, width: usize) {
        match self {
            KvRows::F16(v) => v.copy_within(from * width..(from + 1) * width, to * width),
            KvRows::F32(v) => v.copy_within(from * width..(from + 1) * width, to * width),
        }
    }
}

#[derive(Debug, Clone)]
pub struct KvCache {
    pub cells: Vec<Cell>,
    pub k: Vec<KvRows>,
    pub v: Vec<KvRows>,
    /// Elements per cell row: n_head_kv * head_dim (per layer).
    pub k_width: Vec<usize>,
    pub v_width: Vec<usize>,
}

impl KvCache {
    pub fn new(
        n_cells: usize,
        k_width: Vec<usize>,
        v_width: Vec<usize>,
        type_k: KvType,
        type_v: KvType,
    ) -> Result<KvCache> {
        let total: usize = k_width.iter().chain(&v_width).map(|w| w.saturating_mul(n_cells)).sum();
        let bytes = total.saturating_mul(if type_k == KvType::F16 { 2 } else { 4 });
        if bytes > (1usize << 40) {
            return Err(Error::invalid(format!("the KV cache would need {bytes} bytes")));
        }
        Ok(KvCache {
            cells: vec![Cell::default(); n_cells],
            k: k_width.iter().map(|&w| KvRows::new(type_k, w * n_cells)).collect(),
            v: v_width.iter().map(|&w| KvRows::new(type_v, w * n_cells)).collect(),
            k_width,
            v_width,
        })
    }

    pub fn n_cells(&self) -> usize {
        self.cells.len()
    }

    /// The cells the reference's attention reads (`llama_kv_cache::get_n_kv`,
    /// after the ubatch's cells are recorded): one past the last cell in use,
    /// padded to 256, at least 256, at most the cache size.
    pub fn n_kv(&self) -> usize {
        let used_max_p1 = self.cells.iter().rposition(|c| !c.is_empty()).map_or(0, |i| i + 1);
        self.n_cells().min(used_max_p1.div_ceil(256).max(1) * 256)
    }

    /// Free cells for `n` tokens (lowest indices first), or None if full.
    pub fn find_slots(&self, n: usize) -> Option<Vec<usize>> {
        let free: Vec<usize> =
            self.cells.iter().enumerate().filter(|(_, c)| c.is_empty()).map(|(i, _)| i).take(n).collect();
        (free.len() == n).then_some(free)
    }

    pub fn clear(&mut self) {
        for c in &mut self.cells {
            c.seqs.clear();
            c.pos = -1;
        }
    }

    /// Clears the cells, and with `data` also zeroes the K/V buffers.
    pub fn clear_all(&mut self, data: bool) {
        self.clear();
        if data {
            for rows in self.k.iter_mut().chain(self.v.iter_mut()) {
                match rows {
                    KvRows::F16(v) => v.fill(f16::ZERO),
                    KvRows::F32(v) => v.fill(0.0),
                }
            }
        }
    }

    /// Reads element range [at, at + out.len()) of `rows` as f32 (f16 → f32
    /// is exact; the slice conversion uses F16C where the CPU has it).
    pub fn read(rows: &KvRows, at: usize, out: &mut [f32]) {
        use half::slice::HalfFloatSliceExt;
        match rows {
            KvRows::F16(v) => v[at..at + out.len()].convert_to_f32_slice(out),
            KvRows::F32(v) => out.copy_from_slice(&v[at..at + out.len()]),
        }
    }

    /// Cells of `seq` (any when negative) with position in [p0, p1).
    fn matches(c: &Cell, seq: i32, p0: i32, p1: i32) -> bool {
        !c.is_empty() && (seq < 0 || c.seqs.has(seq as usize)) && c.pos >= p0 && c.pos < p1
    }

    /// Removes `seq` (every sequence when negative) from cells in [p0, p1).
    pub fn seq_rm(&mut self, seq: i32, p0: i32, p1: i32) {
        for c in &mut self.cells {
            if Self::matches(c, seq, p0, p1) {
                if seq < 0 {
                    c.seqs.clear();
                } else {
                    c.seqs.remove(seq as usize);
                }
            }
        }
    }

    pub fn seq_cp(&mut self, src: i32, dst: i32, p0: i32, p1: i32) {
        if src == dst {
            return;
        }
        for c in &mut self.cells {
            if Self::matches(c, src, p0, p1) {
                c.seqs.add(dst as usize);
            }
        }
    }

    pub fn seq_keep(&mut self, seq: i32) {
        for c in &mut self.cells {
            let keep = c.seqs.has(seq as usize);
            c.seqs.clear();
            if keep {
                c.seqs.add(seq as usize);
            }
        }
    }

    pub fn pos_min(&self, seq: i32) -> i32 {
        self.cells.iter().filter(|c| c.seqs.has(seq as usize)).map(|c| c.pos).min().unwrap_or(-1)
    }

    pub fn pos_max(&self, seq: i32) -> i32 {
        self.cells.iter().filter(|c| c.seqs.has(seq as usize)).map(|c| c.pos).max().unwrap_or(-1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_kv_is_the_last_cell_in_use_padded_to_256() {
        let mut kv = KvCache::new(768, vec![4], vec![4], KvType::F16, KvType::F16).expect("cache");
        assert_eq!(kv.n_kv(), 256); // empty: at least 256
        kv.cells[3].seqs.add(0);
        assert_eq!(kv.n_kv(), 256);
        kv.cells[256].seqs.add(1);
        assert_eq!(kv.n_kv(), 512); // cell 256 in use: 257 padded
        kv.cells[700].seqs.add(0);
        assert_eq!(kv.n_kv(), 768); // capped at the cache size
        let small = KvCache::new(100, vec![4], vec![4], KvType::F16, KvType::F16).expect("cache");
        assert_eq!(small.n_kv(), 100);
    }

    #[test]
    fn cells_track_sequences_and_positions() {
        let mut kv = KvCache::new(8, vec![4], vec![4], KvType::F16, KvType::F16).unwrap();
        let slots = kv.find_slots(3).unwrap();
        assert_eq!(slots, vec![0, 1, 2]);
        for (i, &c) in slots.iter().enumerate() {
            kv.cells[c].pos = i as i32;
            kv.cells[c].seqs.add(0);
        }
        assert_eq!((kv.pos_min(0), kv.pos_max(0)), (0, 2));
        kv.seq_cp(0, 1, 1, i32::MAX);
        assert_eq!((kv.pos_min(1), kv.pos_max(1)), (1, 2));
        kv.seq_rm(0, 2, i32::MAX);
        assert_eq!(kv.pos_max(0), 1);
        kv.seq_keep(1);
        assert_eq!((kv.pos_min(0), kv.pos_max(0)), (-1, -1));
        // Cells 1 and 2 hold sequence 1; the other six are free.
        assert_eq!(kv.find_slots(6), Some(vec![0, 3, 4, 5, 6, 7]));
        assert!(kv.find_slots(7).is_none());
        kv.k[0].write(4, &[1.5, -2.0, 3.0, 0.1]);
        assert_eq!(kv.k[0].get(5), -2.0);
    }
}
