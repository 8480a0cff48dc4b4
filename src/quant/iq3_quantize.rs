//! The IQ3_XXS and IQ3_S quantizers, byte for byte ggml's (llama.cpp
//! 0c1e570) `quantize_iq3_xxs` / `quantize_iq3_s` on one row: per 32-group a
//! search over 31 (IQ3_XXS) or 19 (IQ3_S) trial scales, each group of 4
//! weights snapped to the grid (directly, or to the best of its precomputed
//! neighbours when the rounded point is off the grid), then the super-block
//! scale and the 4-bit group scales.
//!
//! The search tables are `iq3xs_init_impl`'s, built once per grid on first
//! use. Its `kgrid_256`/`kgrid_512` are the 3-bit levels of `iq3xxs_grid` and
//! `iq3s_grid`, so they are derived from those
//! (`grids_levels_equal_the_reference_kgrid` checks them against the
//! reference's arrays). Building takes some 15 ms (256) and 45 ms (512), so
//! it runs on one thread.
//!
//! Float sums keep the reference's order (it is built without fast-math), so
//! the bytes are the same. Where the reference asserts (an off-grid point
//! without a neighbour closer than `FLT_MAX`, as NaN or infinite input gives,
//! or a negative or NaN scale) these return `Err`.

use std::sync::OnceLock;

use super::iq3::{BlockIq3S, BlockIq3Xxs};
use super::iq_grids::{IQ3S_GRID, IQ3XXS_GRID};
use super::{f32_to_f16, nearest_int, QK_K};
use crate::error::{Error, Result};

/// Points of the lattice the tables cover: 4 coordinates of 3 bits.
const KMAP_SIZE: usize = 4096;
/// ggml's GROUP_MAX_EPS_IQ3_XXS.
const GROUP_MAX_EPS_IQ3_XXS: f32 = 1e-8;
/// Levels per coordinate (kMaxQ): the grid values are 2l + 1, l in 0..8.
const KMAXQ: i32 = 8;

/// The two grids and what differs between their quantizers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// 256 entries, neighbours at the 2 nearest distances
    Xxs,
    /// 512 entries, neighbours at the 3 nearest distances
    S,
}

/// `iq3xs_init_impl`'s tables of one grid.
struct Tables {
    /// each entry's 4 coordinates, odd (2l + 1)
    grid: Vec<[u8; 4]>,
    /// per lattice point (coordinate k in bits 3k..3k+3): its grid index, or
    /// −(offset + 1) of its list in `neighbours`
    map: Vec<i32>,
    /// per off-grid point: a count n, then n grid indices: the entries at the
    /// `nwant` nearest distinct squared distances, by distance then index
    neighbours: Vec<u16>,
}

/// The lattice index of 4 levels (each 0..8).
#[inline]
fn lattice_index(l: &[i8]) -> usize {
    l.iter().take(4).enumerate().fold(0, |u, (i, &v)| u | ((v as usize & 7) << (3 * i)))
}

/// The 4 levels (0..8) of a grid word, one per byte: IQ3_XXS stores level l
/// as 4, 12, .., 52, 62, IQ3_S as 2l + 1.
fn grid_levels(kind: Kind, word: u32) -> [i8; 4] {
    word.to_le_bytes().map(|b| match kind {
        // (the last level is 62, not 60: the division floors it to 7)
        Kind::Xxs => (b.saturating_sub(4) / 8).min(7) as i8,
        Kind::S => (b.saturating_sub(1) / 2).min(7) as i8,
    })
}

fn build_tables(kind: Kind) -> Tables {
    let (words, nwant): (&[u32], usize) = match kind {
        Kind::Xxs => (&IQ3XXS_GRID, 2),
        Kind::S => (&IQ3S_GRID, 3),
    };
    let levels: Vec<[i8; 4]> = words.iter().map(|&w| grid_levels(kind, w)).collect();
    let grid: Vec<[u8; 4]> = levels.iter().map(|l| l.map(|l| 2 * l as u8 + 1)).collect();
    let mut map = vec![-1i32; KMAP_SIZE];
    for (i, l) in levels.iter().enumerate() {
        map[lattice_index(l)] = i as i32;
    }
    // The reference sorts (d2, j) pairs with qsort; the order is total, so
    // any sort gives the same lists.
    let mut neighbours = Vec::new();
    let mut dist: Vec<(i32, u16)> = Vec::with_capacity(grid.len());
    for (i, m) in map.iter_mut().enumerate() {
        if *m >= 0 {
            continue;
        }
        let pos: [i32; 4] = std::array::from_fn(|k| 2 * ((i >> (3 * k)) & 7) as i32 + 1);
        dist.clear();
        dist.extend(grid.iter().enumerate().map(|(j, g)| {
            let d2 = g.iter().zip(pos).map(|(&g, p)| (g as i32 - p) * (g as i32 - p)).sum();
            (d2, j as u16)
        }));
        dist.sort_unstable();
        let start = neighbours.len();
        *m = -(start as i32 + 1);
        neighbours.push(0);
        let mut d2 = dist.first().map_or(0, |d| d.0);
        let mut nhave = 1;
        for &(dj, j) in &dist {
            if dj > d2 {
                if nhave == nwant {
                    break;
                }
                d2 = dj;
                nhave += 1;
            }
            neighbours.push(j);
        }
        neighbours[start] = (neighbours.len() - start - 1) as u16;
    }
    Tables { grid, map, neighbours }
}

fn tables(kind: Kind) -> &'static Tables {
    static XXS: OnceLock<Tables> = OnceLock::new();
    static S: OnceLock<Tables> = OnceLock::new();
    match kind {
        Kind::Xxs => XXS.get_or_init(|| build_tables(Kind::Xxs)),
        Kind::S => S.get_or_init(|| build_tables(Kind::S)),
    }
}

impl Tables {
    /// The neighbour list of an off-grid point whose map entry is `m < 0`.
    fn neighbours_of(&self, m: i32) -> Result<&[u16]> {
        let off = (-(m as i64) - 1) as usize;
        let n = *self.neighbours.get(off).ok_or_else(|| Error::invalid("IQ3 quantizer: bad neighbour table"))?;
        self.neighbours
            .get(off + 1..off + 1 + n as usize)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| Error::invalid("IQ3 quantizer: an off-grid point has no neighbours"))
    }

    /// ggml's `iq3_find_best_neighbour`: the neighbour of least weighted
    /// squared distance to `xval` at `scale`; writes its levels to `l`.
    fn best_neighbour(
        &self,
        neighbours: &[u16],
        xval: &[f32],
        weight: &[f32],
        scale: f32,
        l: &mut [i8],
    ) -> Result<usize> {
        let mut best_d2 = f32::MAX;
        let mut best = None;
        for &j in neighbours {
            let Some(pg) = self.grid.get(j as usize) else { continue };
            let mut d2 = 0.0f32;
            for i in 0..4 {
                let diff = scale * pg[i] as f32 - xval[i];
                d2 += weight[i] * diff * diff;
            }
            if d2 < best_d2 {
                best_d2 = d2;
                best = Some(j as usize);
            }
        }
        // (the reference asserts here: every distance NaN or >= FLT_MAX)
        let gi = best.ok_or_else(|| {
            Error::invalid("IQ3 quantizer: no grid neighbour at a finite distance (NaN or infinite input or weights?)")
        })?;
        self.put_levels(gi, l);
        Ok(gi)
    }

    /// The levels of grid entry `gi` into `l[..4]`.
    fn put_levels(&self, gi: usize, l: &mut [i8]) {
        if let Some(pg) = self.grid.get(gi) {
            for (l, &g) in l.iter_mut().zip(pg) {
                *l = ((g - 1) / 2) as i8;
            }
        }
    }
}

/// A 32-group's inputs to the search, as the reference computes them.
struct Group {
    /// |x| (IQ3_XXS: one sign per 8 kept, see `prepare_group`)
    xval: [f32; 32],
    weight: [f32; 32],
    /// sqrt(weight): the neighbour search's weights
    waux: [f32; 32],
    /// per 8: the sign bits taken off `xval`
    signs: [u8; 4],
}

/// The group's weights, magnitudes and signs, and its maximum (C's MAX
/// macro's order, so NaN goes as in the reference).
fn prepare_group(kind: Kind, xb: &[f32], qw: Option<&[f32]>, sigma2: f32) -> (Group, f32) {
    let mut g = Group { xval: [0.0; 32], weight: [0.0; 32], waux: [0.0; 32], signs: [0; 4] };
    match qw {
        Some(qw) => {
            for ((w, &q), &x) in g.weight.iter_mut().zip(qw).zip(xb) {
                *w = q * (sigma2 + x * x).sqrt();
            }
        }
        None => {
            for (w, &x) in g.weight.iter_mut().zip(xb) {
                *w = x * x;
            }
        }
    }
    for (a, &w) in g.waux.iter_mut().zip(&g.weight) {
        *a = w.sqrt();
    }
    for k in 0..4 {
        let mut nflip = 0;
        let mut s = 0u8;
        for i in 0..8 {
            let x = xb[8 * k + i];
            if x >= 0.0 {
                g.xval[8 * k + i] = x;
            } else {
                g.xval[8 * k + i] = -x;
                nflip += 1;
                s |= 1 << i;
            }
        }
        // IQ3_XXS stores 7 sign bits per 8 (the 8th is their parity): with an
        // odd count, the weight that costs least keeps its sign flipped
        if kind == Kind::Xxs && nflip % 2 == 1 {
            let cost = |i: usize| g.weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
            let mut imin = 0;
            let mut min = cost(0);
            for i in 1..8 {
                let ax = cost(i);
                if ax < min {
                    min = ax;
                    imin = i;
                }
            }
            g.xval[8 * k + imin] = -g.xval[8 * k + imin];
            s ^= 1 << imin;
        }
        g.signs[k] = if kind == Kind::Xxs { s & 127 } else { s };
    }
    let mut max = g.xval[0];
    for &v in &g.xval[1..] {
        max = if max > v { max } else { v };
    }
    (g, max)
}

/// The level of one weight at inverse scale `id` (0..8).
#[inline]
fn level(id: f32, x: f32) -> i8 {
    nearest_int(0.5 * (id * x - 1.0)).clamp(0, KMAXQ - 1) as i8
}

/// Σ w·x·q and Σ w·q² over the group with q = 2l + 1, in the reference's
/// order.
fn sums(g: &Group, l: &[i8; 32]) -> (f32, f32) {
    let mut sumqx = 0.0f32;
    let mut sumq2 = 0.0f32;
    for ((&w, &x), &l) in g.weight.iter().zip(&g.xval).zip(l) {
        let q = (2 * l as i32 + 1) as f32;
        sumqx += w * x * q;
        sumq2 += w * q * q;
    }
    (sumqx, sumq2)
}

/// The scale search of one 32-group with maximum `max > 0`: the trial scales
/// `max / (15 + 0.2·is)`, then the off-grid groups of 4 redone at the best
/// scale. Writes the levels to `l` (all on the grid) and returns the scale.
fn search_group(t: &Tables, kind: Kind, g: &Group, max: f32, l: &mut [i8; 32]) -> Result<f32> {
    let (steps, on_grid_init) = match kind {
        Kind::Xxs => (15, true),
        Kind::S => (9, false),
    };
    let mut laux = [0i8; 32];
    let mut is_on_grid = [on_grid_init; 8];
    let mut is_on_grid_aux = [false; 8];
    let mut best = 0.0f32;
    let mut scale = max / (2 * KMAXQ - 1) as f32;
    for is in -steps..=steps {
        let id = ((2 * KMAXQ - 1) as f32 + is as f32 * 0.2) / max;
        let this_scale = 1.0 / id;
        for (k, on) in is_on_grid_aux.iter_mut().enumerate() {
            let r = 4 * k..4 * k + 4;
            for i in r.clone() {
                laux[i] = level(id, g.xval[i]);
            }
            let m = t.map[lattice_index(&laux[r.clone()])];
            *on = m >= 0;
            if m < 0 {
                let nb = t.neighbours_of(m)?;
                t.best_neighbour(nb, &g.xval[r.clone()], &g.waux[r.clone()], this_scale, &mut laux[r])?;
            }
        }
        let (sumqx, sumq2) = sums(g, &laux);
        if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            *l = laux;
            is_on_grid = is_on_grid_aux;
        }
    }
    if is_on_grid.iter().any(|&on| !on) && scale > 0.0 {
        let id = 1.0 / scale;
        for (k, &on) in is_on_grid.iter().enumerate() {
            // (IQ3_S redoes every group of 4, IQ3_XXS only the off-grid ones)
            if kind == Kind::Xxs && on {
                continue;
            }
            let r = 4 * k..4 * k + 4;
            let mut lk = [0i8; 4];
            for (lk, &x) in lk.iter_mut().zip(&g.xval[r.clone()]) {
                *lk = level(id, x);
            }
            let m = t.map[lattice_index(&lk)];
            let gi = if m >= 0 {
                m as usize
            } else {
                let nb = t.neighbours_of(m)?;
                t.best_neighbour(nb, &g.xval[r.clone()], &g.waux[r.clone()], scale, &mut l[r.clone()])?
            };
            t.put_levels(gi, &mut l[r]);
        }
        let (sumqx, sumq2) = sums(g, l);
        if sumq2 > 0.0 {
            scale = sumqx / sumq2;
        }
    }
    Ok(scale)
}

/// The grid indices of the group's 8 groups of 4 levels (the reference's
/// "point not on grid" abort is an `Err`).
fn grid_indices(t: &Tables, l: &[i8; 32]) -> Result<[usize; 8]> {
    let mut out = [0usize; 8];
    for (k, o) in out.iter_mut().enumerate() {
        let lk = &l[4 * k..4 * k + 4];
        let m = t.map[lattice_index(lk)];
        if m < 0 {
            return Err(Error::invalid(format!("IQ3 quantizer: levels {lk:?} are not a grid point")));
        }
        *o = m as usize;
    }
    Ok(out)
}

/// The arguments' lengths: `x` whole super-blocks, one block each in `out`,
/// `weights` as long as `x`.
fn check_lengths(name: &str, x: &[f32], weights: Option<&[f32]>, nblocks: usize) -> Result<()> {
    if !x.len().is_multiple_of(QK_K) {
        return Err(Error::invalid(format!("{name}: row of {} elements is not a multiple of {QK_K}", x.len())));
    }
    if nblocks != x.len() / QK_K {
        return Err(Error::invalid(format!(
            "{name}: {} elements take {} blocks, got {nblocks}",
            x.len(),
            x.len() / QK_K
        )));
    }
    if let Some(w) = weights {
        if w.len() != x.len() {
            return Err(Error::invalid(format!("{name}: {} importance weights for a row of {}", w.len(), x.len())));
        }
    }
    Ok(())
}

/// The super-block's sigma² (2·Σx²/256, summed in order).
fn sigma2(xbl: &[f32]) -> f32 {
    let mut sumx2 = 0.0f32;
    for &v in xbl {
        sumx2 += v * v;
    }
    2.0 * sumx2 / QK_K as f32
}

/// The reference's `GGML_ASSERT(scale >= 0)` on a group's scale (NaN fails
/// it too).
fn check_scale(scale: f32) -> Result<f32> {
    if scale >= 0.0 {
        Ok(scale)
    } else {
        Err(Error::invalid(format!("IQ3 quantizer: group scale {scale} (NaN input or weights?)")))
    }
}

/// ggml's `quantize_iq3_xxs` on one row (`quantize_row_iq3_xxs_impl` with
/// grid 256): `out` receives `x.len() / 256` blocks. `weights` is the
/// importance-matrix row (as long as `x`) or None.
pub fn quantize_row_iq3_xxs(x: &[f32], weights: Option<&[f32]>, out: &mut [BlockIq3Xxs]) -> Result<()> {
    check_lengths("quantize_row_iq3_xxs", x, weights, out.len())?;
    let t = tables(Kind::Xxs);
    for (ibl, (xbl, y)) in x.chunks_exact(QK_K).zip(out.iter_mut()).enumerate() {
        // qs[0..64] the indices, qs[64..96] the 8 sign-and-scale words
        let mut q3 = [0u8; 3 * QK_K / 8];
        let mut scales = [0.0f32; QK_K / 32];
        let mut max_scale = 0.0f32;
        let sigma2 = sigma2(xbl);
        for (ib, xb) in xbl.chunks_exact(32).enumerate() {
            let qw = weights.and_then(|w| w.get(QK_K * ibl + 32 * ib..QK_K * ibl + 32 * ib + 32));
            let (mut g, max) = prepare_group(Kind::Xxs, xb, qw, sigma2);
            if max < GROUP_MAX_EPS_IQ3_XXS {
                continue;
            }
            let mut l = [0i8; 32];
            let mut scale = search_group(t, Kind::Xxs, &g, max, &mut l)?;
            if scale < 0.0 {
                // (the reference: "should never happen"; the signs flip instead)
                scale = -scale;
                for s in &mut g.signs {
                    *s = !*s & 127;
                }
            }
            for (k, gi) in grid_indices(t, &l)?.into_iter().enumerate() {
                q3[8 * ib + k] = gi as u8;
            }
            let ss = g.signs.iter().enumerate().fold(0u32, |a, (k, &s)| a | (s as u32) << (7 * k));
            q3[QK_K / 4 + 4 * ib..QK_K / 4 + 4 * ib + 4].copy_from_slice(&ss.to_le_bytes());
            scales[ib] = check_scale(scale)?;
            max_scale = if max_scale > scale { max_scale } else { scale };
        }
        if max_scale == 0.0 {
            *y = BlockIq3Xxs { d: f32_to_f16(0.0), qs: [0; 3 * QK_K / 8] };
            continue;
        }
        let d = max_scale / 31.0;
        // (1.0125: the reference's fudge factor)
        let dh = f32_to_f16(d * 1.0125);
        let id = 1.0 / d;
        for (ib, &s) in scales.iter().enumerate() {
            let l = nearest_int(0.5 * (id * s - 1.0)).clamp(0, 15) as u32;
            q3[QK_K / 4 + 4 * ib + 3] |= (l << 4) as u8;
        }
        *y = BlockIq3Xxs { d: dh, qs: q3 };
    }
    Ok(())
}

/// ggml's `quantize_iq3_s` on one row (`quantize_row_iq3_s_impl` with
/// IQ3S_BLOCK_SIZE 32): `out` receives `x.len() / 256` blocks. `weights` is
/// the importance-matrix row (as long as `x`) or None. (The reference's row
/// driver lends the impl scratch arrays across rows; each is rewritten before
/// it is read, so nothing carries from one row to the next.)
pub fn quantize_row_iq3_s(x: &[f32], weights: Option<&[f32]>, out: &mut [BlockIq3S]) -> Result<()> {
    check_lengths("quantize_row_iq3_s", x, weights, out.len())?;
    let t = tables(Kind::S);
    for (ibl, (xbl, y)) in x.chunks_exact(QK_K).zip(out.iter_mut()).enumerate() {
        *y = BlockIq3S {
            d: [0; 2],
            qs: [0; QK_K / 4],
            qh: [0; QK_K / 32],
            signs: [0; QK_K / 8],
            scales: [0; QK_K / 64],
        };
        // The reference advances its qs and signs pointers only past groups
        // it quantizes: after an all-zero group the next one's bytes land in
        // its place (and the dequantizer reads them there).
        let (mut qs_at, mut signs_at) = (0, 0);
        let mut scales = [0.0f32; QK_K / 32];
        let mut max_scale = 0.0f32;
        let sigma2 = sigma2(xbl);
        for (ib, xb) in xbl.chunks_exact(32).enumerate() {
            let qw = weights.and_then(|w| w.get(QK_K * ibl + 32 * ib..QK_K * ibl + 32 * ib + 32));
            let (mut g, max) = prepare_group(Kind::S, xb, qw, sigma2);
            if max == 0.0 {
                continue;
            }
            let mut l = [0i8; 32];
            let mut scale = search_group(t, Kind::S, &g, max, &mut l)?;
            if scale < 0.0 {
                scale = -scale;
                for s in &mut g.signs {
                    *s = !*s;
                }
            }
            for (k, gi) in grid_indices(t, &l)?.into_iter().enumerate() {
                y.qs[qs_at + k] = (gi & 255) as u8;
                y.qh[ib] |= ((gi >> 8) as u8 & 1) << k;
            }
            qs_at += 8;
            y.signs[signs_at..signs_at + 4].copy_from_slice(&g.signs);
            signs_at += 4;
            scales[ib] = check_scale(scale)?;
            max_scale = if max_scale > scale { max_scale } else { scale };
        }
        if max_scale == 0.0 {
            continue;
        }
        let d = max_scale / 31.0;
        // (1.033: the reference's fudge factor)
        y.d = f32_to_f16(d * 1.033);
        let id = 1.0 / d;
        for (b, s) in y.scales.iter_mut().zip(scales.chunks_exact(2)) {
            let l1 = nearest_int(0.5 * (id * s[0] - 1.0)).clamp(0, 15);
            let l2 = nearest_int(0.5 * (id * s[1] - 1.0)).clamp(0, 15);
            *b = (l1 | (l2 << 4)) as u8;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::as_blocks_mut;

    macro_rules! golden {
        ($name:literal) => {
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/goldens/quant/", $name))
        };
    }

    /// make_goldens.c's `fill_iq` rows (24 × 256).
    fn iq_input() -> Vec<f32> {
        golden!("iq_input.f32").chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    }

    /// make_goldens.c's `iq_weights`.
    fn iq_weights(n: usize) -> Vec<f32> {
        (0..n).map(|j| 0.25 + ((j * 37) % 11) as f32 * 0.5).collect()
    }

    type Quantizer<B> = fn(&[f32], Option<&[f32]>, &mut [B]) -> Result<()>;

    /// Quantizes the IQ input in rows of `n_per_row` (with the golden weights
    /// when `weighted`) and compares with `want`, naming the first differing
    /// block.
    fn check<B: crate::quant::Block>(f: Quantizer<B>, want: &[u8], n_per_row: usize, weighted: bool) {
        let x = iq_input();
        let w = iq_weights(n_per_row);
        let bs = std::mem::size_of::<B>();
        let row_bytes = n_per_row / QK_K * bs;
        let mut got = vec![0u8; x.len() / QK_K * bs];
        assert_eq!(got.len(), want.len(), "golden length");
        for (xr, yr) in x.chunks_exact(n_per_row).zip(got.chunks_exact_mut(row_bytes)) {
            f(xr, weighted.then_some(&w[..]), as_blocks_mut(yr)).expect("golden row quantizes");
        }
        if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
            let blk = i / bs;
            panic!(
                "first difference at byte {i} (block {blk}, byte {} in it):\n got  {:02x?}\n want {:02x?}",
                i % bs,
                &got[blk * bs..(blk + 1) * bs],
                &want[blk * bs..(blk + 1) * bs]
            );
        }
    }

    #[test]
    fn iq3_xxs_equals_reference_rows_256_weighted() {
        check::<BlockIq3Xxs>(quantize_row_iq3_xxs, golden!("iq3_xxs.bin"), 256, true);
    }

    #[test]
    fn iq3_xxs_equals_reference_rows_512_weighted() {
        check::<BlockIq3Xxs>(quantize_row_iq3_xxs, golden!("iq3_xxs_r512.bin"), 512, true);
    }

    #[test]
    fn iq3_xxs_equals_reference_rows_256_unweighted() {
        check::<BlockIq3Xxs>(quantize_row_iq3_xxs, golden!("iq3_xxs_nw.bin"), 256, false);
    }

    #[test]
    fn iq3_s_equals_reference_rows_256_weighted() {
        check::<BlockIq3S>(quantize_row_iq3_s, golden!("iq3_s.bin"), 256, true);
    }

    #[test]
    fn iq3_s_equals_reference_rows_512_weighted() {
        check::<BlockIq3S>(quantize_row_iq3_s, golden!("iq3_s_r512.bin"), 512, true);
    }

    #[test]
    fn iq3_s_equals_reference_rows_256_unweighted() {
        check::<BlockIq3S>(quantize_row_iq3_s, golden!("iq3_s_nw.bin"), 256, false);
    }

    #[test]
    fn grids_levels_equal_the_reference_kgrid() {
        // Σ kgrid[k] and Σ (k + 1)·kgrid[k] of the reference's kgrid_256 and
        // kgrid_512 (iq3xs_init_impl), and their first entries
        for (kind, words, sum, wsum, first) in [
            (Kind::Xxs, &IQ3XXS_GRID[..], 391_138u64, 71_784_388u64, [0u32, 2, 4, 9, 11, 15, 16, 18]),
            (Kind::S, &IQ3S_GRID[..], 777_331, 282_122_336, [0, 1, 2, 5, 7, 8, 9, 10]),
        ] {
            let kgrid: Vec<u64> = words.iter().map(|&w| lattice_index(&grid_levels(kind, w)) as u64).collect();
            assert_eq!(kgrid.iter().sum::<u64>(), sum, "{kind:?}");
            assert_eq!(kgrid.iter().enumerate().map(|(k, &v)| (k as u64 + 1) * v).sum::<u64>(), wsum, "{kind:?}");
            assert!(kgrid.iter().zip(first).all(|(&a, b)| a == b as u64), "{kind:?}");
            // every byte is one of the type's 8 values
            for &w in words {
                let back = grid_levels(kind, w).map(|l| match kind {
                    Kind::Xxs => [4u8, 12, 20, 28, 36, 44, 52, 62][l as usize],
                    Kind::S => 2 * l as u8 + 1,
                });
                assert_eq!(u32::from_le_bytes(back), w, "{kind:?}");
            }
        }
    }

    #[test]
    fn tables_cover_the_lattice() {
        for (kind, n) in [(Kind::Xxs, 256), (Kind::S, 512)] {
            let t = tables(kind);
            assert_eq!(t.grid.len(), n);
            assert_eq!(t.map.iter().filter(|&&m| m >= 0).count(), n, "{kind:?}: distinct grid points");
            for &m in &t.map {
                if m < 0 {
                    let nb = t.neighbours_of(m).expect("neighbours");
                    assert!(nb.iter().all(|&j| (j as usize) < n));
                }
            }
        }
    }

    #[test]
    fn hostile_inputs_do_not_panic() {
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e38, -1e38, f32::MAX, 1e-40, 0.0, -0.0, 1e-30];
        let mut rows: Vec<Vec<f32>> = Vec::new();
        for &s in &specials {
            rows.push(vec![s; 512]);
            // a gaussian-ish row with the special value sprinkled in
            let mut r: Vec<f32> = iq_input()[..512].to_vec();
            for v in r.iter_mut().step_by(7) {
                *v = s;
            }
            rows.push(r);
            // alternating signs
            rows.push((0..512).map(|i| if i % 2 == 0 { s } else { -s }).collect());
        }
        // one all-zero group inside an ordinary super-block (IQ3_S's skipped
        // group)
        let mut r = iq_input()[..512].to_vec();
        r[32..64].fill(0.0);
        rows.push(r);
        let weight_rows: Vec<Vec<f32>> = vec![
            iq_weights(512),
            vec![f32::NAN; 512],
            vec![f32::INFINITY; 512],
            vec![-1.0; 512],
            vec![0.0; 512],
            vec![1e38; 512],
        ];
        for x in &rows {
            for w in std::iter::once(None).chain(weight_rows.iter().map(|w| Some(&w[..]))) {
                let mut a = [BlockIq3Xxs { d: [0; 2], qs: [0; 3 * QK_K / 8] }; 2];
                let _ = quantize_row_iq3_xxs(x, w, &mut a);
                let mut b = [BlockIq3S {
                    d: [0; 2],
                    qs: [0; QK_K / 4],
                    qh: [0; QK_K / 32],
                    signs: [0; QK_K / 8],
                    scales: [0; QK_K / 64],
                }; 2];
                let _ = quantize_row_iq3_s(x, w, &mut b);
            }
        }
        // all zeros quantize to zero blocks
        let mut a = [BlockIq3Xxs { d: [1; 2], qs: [1; 3 * QK_K / 8] }; 2];
        quantize_row_iq3_xxs(&[0.0; 512], None, &mut a).expect("zeros");
        assert!(a.iter().all(|b| b.d == [0; 2] && b.qs.iter().all(|&q| q == 0)));
    }

    #[test]
    fn length_mismatches_are_errors() {
        let x = vec![0.5f32; 512];
        let mut a = [BlockIq3Xxs { d: [0; 2], qs: [0; 3 * QK_K / 8] }; 2];
        assert!(quantize_row_iq3_xxs(&x, None, &mut a).is_ok());
        assert!(quantize_row_iq3_xxs(&x[..300], None, &mut a[..1]).is_err());
        assert!(quantize_row_iq3_xxs(&x, None, &mut a[..1]).is_err());
        assert!(quantize_row_iq3_xxs(&x, Some(&x[..256]), &mut a).is_err());
        let mut b = [BlockIq3S {
            d: [0; 2],
            qs: [0; QK_K / 4],
            qh: [0; QK_K / 32],
            signs: [0; QK_K / 8],
            scales: [0; QK_K / 64],
        }; 2];
        assert!(quantize_row_iq3_s(&x, Some(&x), &mut b).is_ok());
        assert!(quantize_row_iq3_s(&x[..256], None, &mut b).is_err());
        assert!(quantize_row_iq3_s(&x, Some(&x[..511]), &mut b).is_err());
        assert!(quantize_row_iq3_s(&x[..100], None, &mut b[..0]).is_err());
    }

    #[test]
    fn iq3_s_packs_past_all_zero_groups_as_the_reference() {
        // iq_input's first 512 floats with groups 1 and 5 zero and group 8
        // negative zero, one weighted row of 512: the reference's bytes
        // (ggml_quantize_chunk of llama.cpp 0c1e570). Its qs and signs
        // pointers skip no space for an all-zero group, so the later groups'
        // bytes move up and the block's last ones stay zero.
        const WANT: [u8; 220] = [
            0x45, 0x00, 0x76, 0xd7, 0x3b, 0xf4, 0x72, 0xce, 0x32, 0x83, 0x82, 0xb6, 0xce, 0xe8, 0x13, 0xa3, 0x37, 0xb8,
            0xf4, 0xd0, 0x7d, 0x91, 0x32, 0x3c, 0xd6, 0x20, 0x1b, 0xfd, 0xb7, 0x3c, 0x3f, 0xc5, 0x85, 0x8d, 0x67, 0x23,
            0x8d, 0x82, 0x48, 0x37, 0x33, 0x30, 0xa5, 0x1a, 0x6f, 0xad, 0xc5, 0x2e, 0x7b, 0x99, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x56, 0x00, 0x8a, 0x04, 0x81, 0x00,
            0x09, 0x1a, 0x9c, 0x26, 0xdd, 0xab, 0xef, 0x72, 0x20, 0x92, 0x6a, 0x4e, 0x89, 0xed, 0x79, 0x6c, 0x37, 0x32,
            0x29, 0x1d, 0x00, 0x82, 0xae, 0x74, 0xbc, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0xfa,
            0x0c, 0xc9, 0x97, 0x02, 0x88, 0xe8, 0x2b, 0x54, 0x38, 0x92, 0x53, 0x5a, 0x99, 0x70, 0x74, 0x8e, 0xa6, 0xde,
            0x6b, 0xa7, 0x39, 0x19, 0xf5, 0x3c, 0x06, 0x34, 0x0f, 0xd3, 0x41, 0x4c, 0x83, 0x21, 0xd0, 0xcc, 0x2a, 0xeb,
            0x9e, 0x1b, 0x12, 0xf9, 0x2d, 0x5e, 0x4b, 0x60, 0x13, 0x42, 0x6f, 0x9f, 0xe8, 0x84, 0xe1, 0xfc, 0x06, 0x68,
            0x10, 0x28, 0x06, 0x29, 0x3c, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2c, 0xe4, 0x80,
            0x00, 0xe6, 0x9a, 0x2e, 0x4e, 0xa9, 0xf9, 0xd4, 0x44, 0xbe, 0x5b, 0x0c, 0x9c, 0xbd, 0x03, 0x75, 0x93, 0x50,
            0xce, 0x49, 0xce, 0x09, 0xa0, 0x38, 0x01, 0xa6, 0xfc, 0x60, 0x0a, 0x7f, 0xfd, 0xfa, 0x00, 0x00, 0x00, 0x00,
            0xb0, 0xb9, 0xbf, 0xc6,
        ];
        let mut x = iq_input()[..512].to_vec();
        x[32..64].fill(0.0);
        x[160..192].fill(0.0);
        x[256..288].fill(-0.0);
        let mut got = [0u8; 220];
        quantize_row_iq3_s(&x, Some(&iq_weights(512)), as_blocks_mut(&mut got)).expect("quantizes");
        assert_eq!(got, WANT);
    }
}
