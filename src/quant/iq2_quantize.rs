//! The quantizers of IQ2_XXS, IQ2_XS and IQ2_S (ggml's
//! `quantize_row_iq2_{xxs,xs,s}_impl`), and the grid tables they and the IQ1
//! quantizers search (ggml's `iq2xs_init_impl`), byte-identical to the
//! reference (llama.cpp 0c1e570).
//!
//! Each 8 weights become one grid point: a code of 8 levels `l` (0, 1 or 2,
//! the value `2l + 1`), 2 bits each. The quantizer rounds the weights to
//! levels; a code that is not a grid point is replaced by the best of its
//! precomputed neighbours, the grid points nearest to it.
//!
//! Every float operation keeps the reference's order (ggml is compiled
//! without -ffast-math or FMA contraction), so the bytes match. Where the
//! reference asserts (missing weights, no neighbour found, a code off the
//! grid, a negative scale: reachable with NaN or infinite input), these
//! return `Err` instead.

use std::sync::OnceLock;

use super::iq2::{BlockIq2S, BlockIq2Xs, BlockIq2Xxs};
use super::iq_grids::{IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID};
use super::{f32_to_f16, nearest_int, QK_K};
use crate::error::{Error, Result};

/// ggml's GROUP_MAX_EPS (IQ2_XXS, IQ2_XS) and GROUP_MAX_EPS_IQ2_S.
const GROUP_MAX_EPS: f32 = 1e-15;
const GROUP_MAX_EPS_IQ2_S: f32 = 1e-8;

/// ggml's `kmap_size`: the codes 0..43692 hold every code of 8 levels 0..=2
/// (the largest is 2222_2222 in base 4, 43690).
const KMAP_SIZE: usize = 43692;

/// The largest squared distance between a code's values (1, 3, 5, 7) and a
/// grid point's (1, 3, 5): 8 coordinates of at most 6².
const MAX_D2: usize = 8 * 36;

/// C's `MAX(a, b)` on floats: `a > b ? a : b` (NaN picks `b`).
#[inline]
pub(crate) fn c_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// One grid's search tables, ggml's `iq2_entry_t`.
pub(crate) struct GridTables {
    /// The grid points' levels (0..=2 each), in the reference's `kgrid_*`
    /// order (the same order as the dequantization grid).
    grid: Vec<[u8; 8]>,
    /// By code: the grid index (>= 0), or `-(offset + 1)` of the code's
    /// neighbour list in `neighbours`.
    map: Vec<i32>,
    /// The neighbour lists one after the other: a count, then that many grid
    /// indices.
    neighbours: Vec<u16>,
}

/// Where a code lies: on the grid, or off it with the grid indices of its
/// neighbours.
pub(crate) enum Lookup<'a> {
    OnGrid(usize),
    Near(&'a [u16]),
}

/// Appends the neighbour list of `code` (off the grid) to `out`: its length,
/// then the grid points at the `nwant` smallest distances, by (distance,
/// index), placed by a counting sort. `sq` is `build`'s distance table of
/// `n` points, `d2` scratch of `n`.
fn neighbour_list(code: usize, sq: &[u16], n: usize, nwant: usize, d2: &mut [u16], out: &mut Vec<u16>) {
    d2.fill(0);
    for k in 0..8 {
        let l = (code >> (2 * k)) & 3;
        let row = &sq[(4 * k + l) * n..(4 * k + l + 1) * n];
        for (d, s) in d2.iter_mut().zip(row) {
            *d += s;
        }
    }
    let mut count = [0u16; MAX_D2 + 1];
    for &d in d2.iter() {
        count[d as usize] += 1;
    }
    // where each wanted distance's points start in the list (u16::MAX: a
    // distance not wanted)
    let mut start = [u16::MAX; MAX_D2 + 1];
    let (mut len, mut have) = (0u16, 0);
    for (d, &c) in count.iter().enumerate() {
        if c == 0 {
            continue;
        }
        if have == nwant {
            break;
        }
        start[d] = len;
        len += c;
        have += 1;
    }
    let base = out.len() + 1;
    out.push(len);
    out.resize(base + len as usize, 0);
    for (j, &d) in d2.iter().enumerate() {
        let s = &mut start[d as usize];
        if *s != u16::MAX {
            out[base + *s as usize] = j as u16;
            *s += 1;
        }
    }
}

/// The map code of 8 levels, as the reference computes it
/// (`u |= L[i] << 2*i` into a u16): levels outside 0..=2 give some other code,
/// which the lookups then refuse.
#[inline]
pub(crate) fn code_of(l: &[i8]) -> usize {
    let mut u: u16 = 0;
    for (i, &v) in l.iter().take(8).enumerate() {
        u |= ((v as i32) << (2 * i)) as u16;
    }
    u as usize
}

/// The levels (0..=2) of the 8 bytes of a dequantization grid entry, given
/// the byte of level 0 and the step between levels.
fn levels(entry: u64, zero: u8, step: u8) -> [u8; 8] {
    std::array::from_fn(|k| ((entry >> (8 * k)) as u8).wrapping_sub(zero) / step)
}

impl GridTables {
    /// ggml's `iq2xs_init_impl` for a grid of these points: a neighbour list
    /// for every code off the grid, holding the grid points at the `nwant`
    /// smallest squared distances from it, ordered by (distance, index) as
    /// the reference's sort leaves them (its comparator is a total order on
    /// those pairs, so the order is unique). The codes are split between up
    /// to 8 threads; the lists are joined in code order, so the tables do not
    /// depend on the split.
    pub(crate) fn build(grid: Vec<[u8; 8]>, nwant: usize) -> GridTables {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        Self::build_with(grid, nwant, threads)
    }

    fn build_with(grid: Vec<[u8; 8]>, nwant: usize, threads: usize) -> GridTables {
        let mut map = vec![-1i32; KMAP_SIZE];
        for (i, g) in grid.iter().enumerate() {
            let code: usize = g.iter().enumerate().map(|(k, &l)| (l as usize) << (2 * k)).sum();
            if let Some(m) = map.get_mut(code) {
                *m = i as i32;
            }
        }
        // sq[k][l][j]: the squared distance in coordinate k between level l
        // of a code (value 2l + 1, l up to 3) and grid point j; a code's
        // distances are then 8 vector adds.
        let n = grid.len();
        let mut sq = vec![0u16; 8 * 4 * n];
        for k in 0..8 {
            for l in 0..4 {
                for (j, g) in grid.iter().enumerate() {
                    let d = (2 * g[k] as i32 + 1) - (2 * l as i32 + 1);
                    sq[(4 * k + l) * n + j] = (d * d) as u16;
                }
            }
        }
        let lists = |codes: std::ops::Range<usize>| -> Vec<u16> {
            let mut out = Vec::new();
            let mut d2 = vec![0u16; n];
            for code in codes {
                if map[code] < 0 {
                    neighbour_list(code, &sq, n, nwant, &mut d2, &mut out);
                }
            }
            out
        };
        let threads = threads.max(1);
        let ranges: Vec<_> = (0..threads).map(|t| KMAP_SIZE * t / threads..KMAP_SIZE * (t + 1) / threads).collect();
        let parts: Vec<Vec<u16>> = if threads == 1 {
            ranges.into_iter().map(lists).collect()
        } else {
            std::thread::scope(|s| {
                let lists = &lists;
                let handles: Vec<_> = ranges
                    .iter()
                    .map(|r| {
                        let r = r.clone();
                        std::thread::Builder::new().spawn_scoped(s, move || lists(r))
                    })
                    .collect();
                // a thread that could not start (or failed) is done here
                handles
                    .into_iter()
                    .zip(ranges)
                    .map(|(h, r)| match h {
                        Ok(h) => h.join().unwrap_or_else(|_| lists(r)),
                        Err(_) => lists(r),
                    })
                    .collect()
            })
        };
        let neighbours = parts.concat();
        let mut off = 0usize;
        for m in map.iter_mut().filter(|m| **m < 0) {
            *m = -(off as i32 + 1);
            off += 1 + neighbours.get(off).map_or(0, |&c| c as usize);
        }
        GridTables { grid, map, neighbours }
    }

    /// Where `code` lies; `None` for a value that is no code (off the map) or
    /// a neighbour list out of place (cannot happen for tables from `build`).
    #[inline]
    pub(crate) fn lookup(&self, code: usize) -> Option<Lookup<'_>> {
        let v = *self.map.get(code)?;
        if v >= 0 {
            return Some(Lookup::OnGrid(v as usize));
        }
        let off = (-(v as i64) - 1) as usize;
        let count = *self.neighbours.get(off)? as usize;
        Some(Lookup::Near(self.neighbours.get(off + 1..off + 1 + count)?))
    }

    /// The grid index of `code`, if it is on the grid.
    #[inline]
    pub(crate) fn on_grid(&self, code: usize) -> Option<usize> {
        match self.lookup(code)? {
            Lookup::OnGrid(g) => Some(g),
            Lookup::Near(_) => None,
        }
    }

    /// The levels (0..=2) of grid point `index`.
    #[inline]
    pub(crate) fn point(&self, index: usize) -> Option<&[u8; 8]> {
        self.grid.get(index)
    }

    /// The number of grid points.
    pub(crate) fn len(&self) -> usize {
        self.grid.len()
    }

    /// ggml's `iq2_find_best_neighbour`: the neighbour nearest to
    /// `scale·(2l + 1)` in weighted squared distance (the first of equals);
    /// its levels go to `l_out`.
    fn best_neighbour(
        &self,
        near: &[u16],
        xval: &[f32],
        weight: &[f32],
        scale: f32,
        l_out: &mut [i8],
        ty: &str,
    ) -> Result<usize> {
        let mut best_d2 = f32::MAX;
        let mut best = None;
        for &j in near {
            let Some(pg) = self.point(j as usize) else { continue };
            let mut d2 = 0.0f32;
            for i in 0..8 {
                let q = (2 * pg[i] + 1) as f32;
                let diff = scale * q - xval[i];
                d2 += weight[i] * diff * diff;
            }
            if d2 < best_d2 {
                best_d2 = d2;
                best = Some(j as usize);
            }
        }
        let Some(index) = best else {
            return Err(Error::invalid(format!(
                "{ty}: no grid point fits a group of 8 values (NaN or infinite input?)"
            )));
        };
        if let Some(pg) = self.point(index) {
            for (o, &l) in l_out.iter_mut().zip(pg) {
                *o = l as i8;
            }
        }
        Ok(index)
    }

    /// The grid index of the 8 levels `l` (0..=2) rounded from `xval` at
    /// inverse scale `id`: their code's, or the best neighbour's at `scale`
    /// (whose levels then replace `l`). Also says whether it was on the grid.
    fn round_to_grid(
        &self,
        l: &mut [i8],
        xval: &[f32],
        waux: &[f32],
        id: f32,
        scale: f32,
        ty: &str,
    ) -> Result<(usize, bool)> {
        for (o, &x) in l.iter_mut().zip(xval).take(8) {
            *o = nearest_int(0.5 * (id * x - 1.0)).clamp(0, 2) as i8;
        }
        match self.lookup(code_of(l)) {
            Some(Lookup::OnGrid(g)) => Ok((g, true)),
            Some(Lookup::Near(near)) => Ok((self.best_neighbour(near, xval, waux, scale, l, ty)?, false)),
            None => Err(off_grid(ty, l)),
        }
    }
}

/// ggml's `GGML_ASSERT(scale >= 0)` (fails for NaN).
pub(crate) fn check_scale(ty: &str, scale: f32) -> Result<()> {
    if scale >= 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(format!("{ty}: scale {scale} is not >= 0 (NaN input?)")))
    }
}

/// The error of ggml's "Oops: found point not on grid" abort.
pub(crate) fn off_grid(ty: &str, l: &[i8]) -> Error {
    Error::invalid(format!("{ty}: levels {:?} are not on the grid (NaN or infinite input?)", &l[..l.len().min(8)]))
}

fn iq2_grid(src: &[u64]) -> Vec<[u8; 8]> {
    // the magnitudes 8, 25, 43 are levels 0, 1, 2 (step 17 or 18: /17 floors
    // both to the level)
    src.iter().map(|&e| levels(e, 8, 17)).collect()
}

/// The IQ2_XXS tables (256 points, neighbours at the 2 nearest distances).
fn tables_xxs() -> &'static GridTables {
    static T: OnceLock<GridTables> = OnceLock::new();
    T.get_or_init(|| GridTables::build(iq2_grid(&IQ2XXS_GRID), 2))
}

/// The IQ2_XS tables (512 points, the 2 nearest distances).
fn tables_xs() -> &'static GridTables {
    static T: OnceLock<GridTables> = OnceLock::new();
    T.get_or_init(|| GridTables::build(iq2_grid(&IQ2XS_GRID), 2))
}

/// The IQ2_S tables (1024 points, the nearest distance only).
fn tables_s() -> &'static GridTables {
    static T: OnceLock<GridTables> = OnceLock::new();
    T.get_or_init(|| GridTables::build(iq2_grid(&IQ2S_GRID), 1))
}

/// Checks a row's lengths as the reference asserts them: `x` whole
/// super-blocks, `out` one block per super-block, `weights` (when required
/// or given) as long as `x`.
pub(crate) fn check_lengths(
    ty: &str,
    x: &[f32],
    weights: Option<&[f32]>,
    nblocks: usize,
    need_weights: bool,
) -> Result<()> {
    if !x.len().is_multiple_of(QK_K) {
        return Err(Error::invalid(format!("{ty}: {} elements is not a multiple of {QK_K}", x.len())));
    }
    if nblocks != x.len() / QK_K {
        return Err(Error::invalid(format!(
            "{ty}: {} elements need {} blocks, the output holds {nblocks}",
            x.len(),
            x.len() / QK_K
        )));
    }
    match weights {
        None if need_weights => Err(Error::invalid(format!("{ty}: missing quantization weights (importance matrix)"))),
        Some(w) if w.len() != x.len() => {
            Err(Error::invalid(format!("{ty}: {} weights for a row of {} elements", w.len(), x.len())))
        }
        _ => Ok(()),
    }
}

/// Makes `xval` the magnitudes of `xb` (8 values) and returns their sign bits;
/// with `even_signs` an odd count of negatives keeps the least important one
/// positive (IQ2_XXS and IQ2_XS store 7 sign bits, the 8th their parity).
fn fold_signs(xb: &[f32], weight: &[f32], xval: &mut [f32], even_signs: bool) -> u8 {
    let mut nflip = 0;
    let mut s = 0u8;
    for i in 0..8 {
        if xb[i] >= 0.0 {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            nflip += 1;
            s |= 1 << i;
        }
    }
    if even_signs && nflip % 2 == 1 {
        let mut imin = 0;
        let mut min = weight[0] * xb[0] * xb[0];
        for i in 1..8 {
            let ax = weight[i] * xb[i] * xb[i];
            if ax < min {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= 1 << imin;
    }
    s
}

/// `Σ w·x·q` and `Σ w·q·q` for `q = 2l + 1`, in the reference's order.
fn sums(weight: &[f32], xval: &[f32], l: &[i8]) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for ((&w, &x), &l) in weight.iter().zip(xval).zip(l) {
        let q = (2 * l as i32 + 1) as f32;
        sumqx += w * x * q;
        sumq2 += w * q * q;
    }
    (sumqx, sumq2)
}

/// ggml's `make_qp_quants`: levels `0..=nmax` of the non-negative `x` and
/// their scale, by weighted least squares. The levels are stored as the
/// reference's `uint8_t` (a negative level wraps, and the refinement then
/// reads it wrapped).
fn make_qp_quants(nmax: i32, x: &[f32], l_out: &mut [u8], quant_weights: &[f32]) -> f32 {
    let mut max = 0.0f32;
    for &v in x {
        max = c_max(max, v);
    }
    if max < GROUP_MAX_EPS {
        l_out.fill(0);
        return 0.0;
    }
    let nmaxf = nmax as f32;
    let mut iscale = nmaxf / max;
    for (l, &v) in l_out.iter_mut().zip(x) {
        *l = nearest_int(iscale * v) as u8;
    }
    let scale = 1.0 / iscale;
    let mut best_mse = 0.0f32;
    for ((&v, &l), &w) in x.iter().zip(l_out.iter()).zip(quant_weights) {
        let diff = v - scale * l as f32;
        best_mse += w * diff * diff;
    }
    for is in -4i32..=4 {
        if is == 0 {
            continue;
        }
        let iscale_is = (0.1f32 * is as f32 + nmaxf) / max;
        let scale_is = 1.0 / iscale_is;
        let mut mse = 0.0f32;
        for (&v, &w) in x.iter().zip(quant_weights) {
            let l = nearest_int(iscale_is * v).min(nmax);
            let diff = v - scale_is * l as f32;
            mse += w * diff * diff;
        }
        if mse < best_mse {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for ((&v, lo), &w) in x.iter().zip(l_out.iter_mut()).zip(quant_weights) {
        let l = nearest_int(iscale * v).min(nmax);
        *lo = l as u8;
        sumlx += w * v * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    for _itry in 0..5 {
        let mut n_changed = 0;
        for ((&v, lo), &w) in x.iter().zip(l_out.iter_mut()).zip(quant_weights) {
            let li = *lo as f32;
            let mut slx = sumlx - w * v * li;
            let mut sl2 = suml2 - w * li * li;
            if slx > 0.0 && sl2 > 0.0 {
                let new_l = nearest_int(v * sl2 / slx).min(nmax);
                if new_l != *lo as i32 {
                    slx += w * v * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        *lo = new_l as u8;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed += 1;
                    }
                }
            }
        }
        if n_changed == 0 {
            break;
        }
    }
    if suml2 > 0.0 {
        sumlx / suml2
    } else {
        0.0
    }
}

/// The 4-bit block scale of each group's scale `s` against `d = max/31`.
fn scale_nibble(id: f32, s: f32) -> u8 {
    nearest_int(0.5 * (id * s - 1.0)).clamp(0, 15) as u8
}

/// Σ x² over a super-block, summed in order (the reference's `sumx2`).
fn sum_squares(xbl: &[f32]) -> f32 {
    let mut sumx2 = 0.0f32;
    for &v in xbl {
        sumx2 += v * v;
    }
    sumx2
}

/// The per-group setup IQ2_XXS (groups of 32) and IQ2_XS (16) share, as
/// the reference's `quantize_row_iq2_{xxs,xs}_impl`: the weights
/// `qw·sqrt(sigma2 + x²)`, their square roots `waux`, the values folded to
/// |x| with one sign byte per 8 (an even number of negatives, the 7 stored
/// bits), and the largest folded value, returned.
fn prepare_group<const N: usize>(
    xb: &[f32],
    qw: &[f32],
    sigma2: f32,
    weight: &mut [f32; N],
    waux: &mut [f32; N],
    xval: &mut [f32; N],
    signs: &mut [u8],
) -> f32 {
    for i in 0..N {
        weight[i] = qw[i] * (sigma2 + xb[i] * xb[i]).sqrt();
    }
    for i in 0..N {
        waux[i] = weight[i].sqrt();
    }
    for (k, s) in signs.iter_mut().enumerate() {
        let r = 8 * k..8 * k + 8;
        *s = fold_signs(&xb[r.clone()], &weight[r.clone()], &mut xval[r], true) & 127;
    }
    let mut max = xval[0];
    for &v in &xval[1..] {
        max = c_max(max, v);
    }
    max
}

/// IQ2_XXS (ggml's `quantize_row_iq2_xxs_impl`): one row of `x.len()`
/// elements (a multiple of 256) with the importance `weights` (required).
pub fn quantize_row_iq2_xxs(x: &[f32], weights: Option<&[f32]>, out: &mut [BlockIq2Xxs]) -> Result<()> {
    const TY: &str = "quantize_row_iq2_xxs";
    check_lengths(TY, x, weights, out.len(), true)?;
    let Some(qw_row) = weights else { return Err(Error::invalid(format!("{TY}: missing quantization weights"))) };
    let t = tables_xxs();
    const KMAXQ: i32 = 3;
    for (y, (xbl, qwbl)) in out.iter_mut().zip(x.chunks_exact(QK_K).zip(qw_row.chunks_exact(QK_K))) {
        y.d = f32_to_f16(0.0);
        let mut q2 = [0u32; 2 * QK_K / 32];
        let mut scales = [0.0f32; QK_K / 32];
        let mut max_scale = 0.0f32;
        let sigma2 = sum_squares(xbl) / QK_K as f32;

        for (ib, (xb, qw)) in xbl.chunks_exact(32).zip(qwbl.chunks_exact(32)).enumerate() {
            let (mut weight, mut waux, mut xval) = ([0.0f32; 32], [0.0f32; 32], [0.0f32; 32]);
            let mut block_signs = [0u8; 4];
            let max = prepare_group(xb, qw, sigma2, &mut weight, &mut waux, &mut xval, &mut block_signs);
            if max < GROUP_MAX_EPS {
                scales[ib] = 0.0;
                continue;
            }
            let mut lqp = [0u8; 32];
            let mut scale = make_qp_quants(KMAXQ + 1, &xval, &mut lqp, &weight);
            let mut l: [i8; 32] = lqp.map(|v| v as i8);
            let eff_max = scale * KMAXQ as f32;
            if eff_max <= 0.0 {
                scales[ib] = 0.0;
                continue;
            }
            let mut best = 0.0f32;
            for is in -6i32..=6 {
                let id = ((2 * KMAXQ - 1) as f32 + is as f32 * 0.1f32) / eff_max;
                let this_scale = 1.0 / id;
                let mut laux = [0i8; 32];
                for k in 0..4 {
                    let r = 8 * k..8 * k + 8;
                    t.round_to_grid(&mut laux[r.clone()], &xval[r.clone()], &waux[r], id, this_scale, TY)?;
                }
                let (sumqx, sumq2) = sums(&weight, &xval, &laux);
                if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                    scale = sumqx / sumq2;
                    best = scale * sumqx;
                    l = laux;
                }
            }
            if scale > 0.0 {
                let id = 1.0 / scale;
                for k in 0..4 {
                    let r = 8 * k..8 * k + 8;
                    let mut lk = [0i8; 8];
                    lk.copy_from_slice(&l[r.clone()]);
                    let (g, _) = t.round_to_grid(&mut lk, &xval[r.clone()], &waux[r.clone()], id, scale, TY)?;
                    let pg = t.point(g).ok_or_else(|| off_grid(TY, &lk))?;
                    for (o, &v) in l[r].iter_mut().zip(pg) {
                        *o = v as i8;
                    }
                }
                let (sumqx, sumq2) = sums(&weight, &xval, &l);
                if sumq2 > 0.0 {
                    scale = sumqx / sumq2;
                }
            }
            if scale < 0.0 {
                // the reference's "should never happen" branch: a positive
                // scale with every sign flipped
                scale = -scale;
                for s in &mut block_signs {
                    *s = !*s & 127;
                }
            }
            for k in 0..4 {
                let lk = &l[8 * k..8 * k + 8];
                let g = t.on_grid(code_of(lk)).ok_or_else(|| off_grid(TY, lk))?;
                q2[2 * ib] |= (g as u32) << (8 * k);
                q2[2 * ib + 1] |= (block_signs[k] as u32) << (7 * k);
            }
            check_scale(TY, scale)?;
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }

        if max_scale == 0.0 {
            y.qs = [0; QK_K / 4];
            continue;
        }
        let d = max_scale / 31.0;
        y.d = f32_to_f16(d);
        let id = 1.0 / d;
        for (ib, &s) in scales.iter().enumerate() {
            q2[2 * ib + 1] |= (scale_nibble(id, s) as u32) << 28;
        }
        for (o, q) in y.qs.chunks_exact_mut(4).zip(q2) {
            o.copy_from_slice(&q.to_le_bytes());
        }
    }
    Ok(())
}

/// The scale search of IQ2_XS and IQ2_S over 16 magnitudes `xval` (largest
/// `max`): 19 trial scales around `max/5`, each rounded to the grid and
/// scored by weighted least squares; then the best one's groups that were
/// off the grid are rounded again at its own scale. Returns the scale (the
/// reference checks its sign afterwards) and the 16 levels.
fn search_16(
    t: &GridTables,
    xval: &[f32; 16],
    weight: &[f32; 16],
    waux: &[f32; 16],
    max: f32,
    ty: &str,
) -> Result<(f32, [i8; 16])> {
    const KMAXQ: i32 = 3;
    let mut l = [0i8; 16];
    let mut best = 0.0f32;
    let mut scale = max / (2 * KMAXQ - 1) as f32;
    let mut is_on_grid = [true; 2];
    for is in -9i32..=9 {
        let id = ((2 * KMAXQ - 1) as f32 + is as f32 * 0.1f32) / max;
        let this_scale = 1.0 / id;
        let mut laux = [0i8; 16];
        let mut is_on_grid_aux = [true; 2];
        for (k, on) in is_on_grid_aux.iter_mut().enumerate() {
            let r = 8 * k..8 * k + 8;
            *on = t.round_to_grid(&mut laux[r.clone()], &xval[r.clone()], &waux[r], id, this_scale, ty)?.1;
        }
        let (sumqx, sumq2) = sums(weight, xval, &laux);
        if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            l = laux;
            is_on_grid = is_on_grid_aux;
        }
    }
    if is_on_grid.contains(&false) && scale > 0.0 {
        let id = 1.0 / scale;
        for (k, &on) in is_on_grid.iter().enumerate() {
            if on {
                continue;
            }
            let r = 8 * k..8 * k + 8;
            t.round_to_grid(&mut l[r.clone()], &xval[r.clone()], &waux[r], id, scale, ty)?;
        }
        let (sumqx, sumq2) = sums(weight, xval, &l);
        if sumq2 > 0.0 {
            scale = sumqx / sumq2;
        }
    }
    Ok((scale, l))
}

/// IQ2_XS (ggml's `quantize_row_iq2_xs_impl`): one row of `x.len()`
/// elements (a multiple of 256) with the importance `weights` (required).
pub fn quantize_row_iq2_xs(x: &[f32], weights: Option<&[f32]>, out: &mut [BlockIq2Xs]) -> Result<()> {
    const TY: &str = "quantize_row_iq2_xs";
    check_lengths(TY, x, weights, out.len(), true)?;
    let Some(qw_row) = weights else { return Err(Error::invalid(format!("{TY}: missing quantization weights"))) };
    let t = tables_xs();
    for (y, (xbl, qwbl)) in out.iter_mut().zip(x.chunks_exact(QK_K).zip(qw_row.chunks_exact(QK_K))) {
        y.d = f32_to_f16(0.0);
        y.scales = [0; QK_K / 32];
        let mut q2 = [0u16; 2 * QK_K / 16];
        let mut scales = [0.0f32; QK_K / 16];
        let mut max_scale = 0.0f32;
        let sigma2 = sum_squares(xbl) / QK_K as f32;

        for (ib, (xb, qw)) in xbl.chunks_exact(16).zip(qwbl.chunks_exact(16)).enumerate() {
            let (mut weight, mut waux, mut xval) = ([0.0f32; 16], [0.0f32; 16], [0.0f32; 16]);
            let mut block_signs = [0u8; 2];
            let max = prepare_group(xb, qw, sigma2, &mut weight, &mut waux, &mut xval, &mut block_signs);
            if max < GROUP_MAX_EPS {
                scales[ib] = 0.0;
                continue;
            }
            let (mut scale, l) = search_16(t, &xval, &weight, &waux, max, TY)?;
            if scale < 0.0 {
                scale = -scale;
                for s in &mut block_signs {
                    *s = !*s & 127;
                }
            }
            for k in 0..2 {
                let lk = &l[8 * k..8 * k + 8];
                let g = t.on_grid(code_of(lk)).ok_or_else(|| off_grid(TY, lk))?;
                q2[2 * ib + k] = g as u16 | ((block_signs[k] as u16) << 9);
            }
            check_scale(TY, scale)?;
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }

        if max_scale == 0.0 {
            y.qs = [0; QK_K / 4];
            continue;
        }
        let d = max_scale / 31.0;
        y.d = f32_to_f16(d);
        let id = 1.0 / d;
        for (ib, &s) in scales.iter().enumerate() {
            y.scales[ib / 2] |= scale_nibble(id, s) << (4 * (ib % 2));
        }
        for (o, q) in y.qs.chunks_exact_mut(2).zip(q2) {
            o.copy_from_slice(&q.to_le_bytes());
        }
    }
    Ok(())
}

/// IQ2_S (ggml's `quantize_row_iq2_s_impl`): one row of `x.len()` elements
/// (a multiple of 256), with the importance `weights` or without.
pub fn quantize_row_iq2_s(x: &[f32], weights: Option<&[f32]>, out: &mut [BlockIq2S]) -> Result<()> {
    const TY: &str = "quantize_row_iq2_s";
    check_lengths(TY, x, weights, out.len(), false)?;
    let t = tables_s();
    for (ibl, (y, xbl)) in out.iter_mut().zip(x.chunks_exact(QK_K)).enumerate() {
        *y = BlockIq2S { d: f32_to_f16(0.0), qs: [0; QK_K / 4], qh: [0; QK_K / 32], scales: [0; QK_K / 32] };
        let mut scales = [0.0f32; QK_K / 16];
        let mut max_scale = 0.0f32;
        let sigma2 = 2.0 * sum_squares(xbl) / QK_K as f32;

        for (ib, xb) in xbl.chunks_exact(16).enumerate() {
            let mut weight = [0.0f32; 16];
            let mut waux = [0.0f32; 16];
            let mut xval = [0.0f32; 16];
            let mut block_signs = [0u8; 2];
            match weights {
                Some(w) => {
                    let qw = &w[QK_K * ibl + 16 * ib..QK_K * ibl + 16 * ib + 16];
                    for i in 0..16 {
                        weight[i] = qw[i] * (sigma2 + xb[i] * xb[i]).sqrt();
                    }
                }
                None => {
                    for i in 0..16 {
                        weight[i] = 0.25 * sigma2 + xb[i] * xb[i];
                    }
                }
            }
            for i in 0..16 {
                waux[i] = weight[i].sqrt();
            }
            for (k, s) in block_signs.iter_mut().enumerate() {
                let r = 8 * k..8 * k + 8;
                *s = fold_signs(&xb[r.clone()], &weight[r.clone()], &mut xval[r], false);
            }
            let mut max = xval[0];
            for &v in &xval[1..] {
                max = c_max(max, v);
            }
            if max < GROUP_MAX_EPS_IQ2_S {
                scales[ib] = 0.0;
                continue;
            }
            let (mut scale, l) = search_16(t, &xval, &weight, &waux, max, TY)?;
            if scale < 0.0 {
                scale = -scale;
                for s in &mut block_signs {
                    *s = !*s;
                }
            }
            for k in 0..2 {
                let lk = &l[8 * k..8 * k + 8];
                let g = t.on_grid(code_of(lk)).ok_or_else(|| off_grid(TY, lk))?;
                let i8 = 2 * ib + k;
                y.qs[i8] = (g & 255) as u8;
                y.qh[i8 / 4] |= ((g >> 8) << (2 * (i8 % 4))) as u8;
                y.qs[QK_K / 8 + i8] = block_signs[k];
            }
            check_scale(TY, scale)?;
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }

        if max_scale == 0.0 {
            continue;
        }
        let d = max_scale / 31.0;
        y.d = f32_to_f16(d * 0.9875);
        let id = 1.0 / d;
        for (ib, &s) in scales.iter().enumerate() {
            y.scales[ib / 2] |= scale_nibble(id, s) << (4 * (ib % 2));
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::quant::{as_blocks_mut, Block};

    macro_rules! golden {
        ($name:literal) => {
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/goldens/quant/", $name))
        };
    }
    pub(crate) use golden;

    /// One of the row quantizers of this file and iq1_quantize.rs.
    pub(crate) type Quantizer<B> = fn(&[f32], Option<&[f32]>, &mut [B]) -> Result<()>;

    /// The IQ goldens' input: 24 rows of 256 (make_goldens.c's `fill_iq`).
    pub(crate) fn iq_input() -> Vec<f32> {
        golden!("iq_input.f32").chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    }

    /// make_goldens.c's `iq_weights`: `0.25 + ((j·37) mod 11)·0.5`.
    pub(crate) fn iq_weights(n: usize) -> Vec<f32> {
        (0..n).map(|j| 0.25 + ((j * 37) % 11) as f32 * 0.5).collect()
    }

    /// Quantizes the golden input in rows of `n_per_row` (with the golden
    /// weights, or none) and compares with `want`, naming the first
    /// differing block.
    pub(crate) fn check_golden<B: Block>(quantize: Quantizer<B>, n_per_row: usize, with_weights: bool, want: &[u8]) {
        let x = iq_input();
        let w = iq_weights(n_per_row);
        let bs = std::mem::size_of::<B>();
        let mut got = vec![0u8; x.len() / QK_K * bs];
        for (row, out) in x.chunks_exact(n_per_row).zip(got.chunks_exact_mut(n_per_row / QK_K * bs)) {
            quantize(row, with_weights.then_some(&w[..]), as_blocks_mut(out)).unwrap();
        }
        assert_eq!(got.len(), want.len(), "{}: length", B::TYPE);
        if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
            let blk = i / bs;
            panic!(
                "{}: first difference at byte {i} (block {blk}, elements {}..{}):\n got  {:02x?}\n want {:02x?}",
                B::TYPE,
                blk * QK_K,
                (blk + 1) * QK_K,
                &got[blk * bs..(blk + 1) * bs],
                &want[blk * bs..(blk + 1) * bs]
            );
        }
    }

    /// Rows no caller should send: each must come back `Ok` or `Err`.
    pub(crate) fn hostile_rows() -> Vec<Vec<f32>> {
        let mut rows = Vec::new();
        for v in
            [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e38, -1e38, 1e-40, 0.0, -0.0, f32::MAX, f32::MIN_POSITIVE]
        {
            rows.push(vec![v; 512]);
            // and mixed into ordinary values
            let base = iq_input();
            rows.push(base[..512].iter().enumerate().map(|(i, &x)| if i % 5 == 0 { v } else { x }).collect());
            rows.push(base[..512].iter().enumerate().map(|(i, &x)| if i == 77 { v } else { x }).collect());
        }
        rows
    }

    pub(crate) fn check_hostile<B: Block>(quantize: Quantizer<B>) {
        let zero = std::mem::size_of::<B>();
        for row in hostile_rows() {
            let mut out = vec![0u8; row.len() / QK_K * zero];
            for w in [Some(iq_weights(row.len())), None, Some(vec![f32::NAN; row.len()]), Some(vec![1e38; row.len()])] {
                let _ = quantize(&row, w.as_deref(), as_blocks_mut(&mut out));
            }
        }
        // wrong lengths are refused
        let x = iq_input();
        let w = iq_weights(512);
        let mut out = vec![0u8; 2 * zero];
        assert!(quantize(&x[..300], Some(&w[..300]), as_blocks_mut(&mut out)).is_err());
        assert!(quantize(&x[..512], Some(&w[..256]), as_blocks_mut(&mut out)).is_err());
        assert!(quantize(&x[..256], Some(&w[..256]), as_blocks_mut(&mut out)).is_err());
        assert!(quantize(&x[..512], Some(&w[..512]), as_blocks_mut(&mut out)).is_ok());
    }

    /// The reference's neighbour search literally: every code's distances
    /// sorted by (distance, index), then the points of the first `nwant`
    /// distances; compared with `build` (threaded and not) on every code.
    fn reference_neighbours(grid: &[[u8; 8]], map: &[i32], nwant: usize, step: usize) -> Vec<(usize, Vec<u16>)> {
        let mut all = Vec::new();
        for i in (0..KMAP_SIZE).step_by(step) {
            if map[i] >= 0 {
                continue;
            }
            let pos: [i32; 8] = std::array::from_fn(|k| 2 * ((i >> (2 * k)) & 3) as i32 + 1);
            let mut dist2: Vec<(i32, usize)> = grid
                .iter()
                .enumerate()
                .map(|(j, g)| ((0..8).map(|k| (2 * g[k] as i32 + 1 - pos[k]).pow(2)).sum(), j))
                .collect();
            dist2.sort();
            let (mut d2, mut nhave, mut list) = (dist2[0].0, 1, Vec::new());
            for &(d, j) in &dist2 {
                if d > d2 {
                    if nhave == nwant {
                        break;
                    }
                    d2 = d;
                    nhave += 1;
                }
                list.push(j as u16);
            }
            all.push((i, list));
        }
        all
    }

    #[test]
    fn tables_equal_the_reference_search() {
        let iq1: Vec<[u8; 8]> = crate::quant::iq_grids::IQ1S_GRID
            .iter()
            .map(|&e| std::array::from_fn(|k| ((e >> (8 * k)) as u8).wrapping_add(1)))
            .collect();
        for (grid, nwant, step) in
            [(iq2_grid(&IQ2XXS_GRID), 2, 1), (iq2_grid(&IQ2XS_GRID), 2, 1), (iq2_grid(&IQ2S_GRID), 1, 1), (iq1, 3, 5)]
        {
            let serial = GridTables::build_with(grid.clone(), nwant, 1);
            let threaded = GridTables::build_with(grid.clone(), nwant, 3);
            assert!(serial.map == threaded.map && serial.neighbours == threaded.neighbours);
            for (i, want) in reference_neighbours(&grid, &serial.map, nwant, step) {
                match serial.lookup(i) {
                    Some(Lookup::Near(got)) => assert_eq!(got, &want[..], "code {i}"),
                    _ => panic!("code {i} has no neighbour list"),
                }
            }
            // every grid point is on the map at its own code
            for (g, p) in grid.iter().enumerate() {
                let l: Vec<i8> = p.iter().map(|&v| v as i8).collect();
                assert_eq!(serial.on_grid(code_of(&l)), Some(g));
            }
        }
    }

    #[test]
    fn tables_init_time() {
        for (name, f) in [("iq2_xxs", tables_xxs as fn() -> _), ("iq2_xs", tables_xs), ("iq2_s", tables_s)] {
            let t0 = std::time::Instant::now();
            let t = f();
            eprintln!("{name}: {} points, {} neighbour entries, {:?}", t.len(), t.neighbours.len(), t0.elapsed());
        }
    }

    #[test]
    fn iq2_xxs_golden() {
        check_golden(quantize_row_iq2_xxs, 256, true, golden!("iq2_xxs.bin"));
    }

    #[test]
    fn iq2_xxs_golden_r512() {
        check_golden(quantize_row_iq2_xxs, 512, true, golden!("iq2_xxs_r512.bin"));
    }

    #[test]
    fn iq2_xxs_needs_weights() {
        let x = iq_input();
        let mut out = [BlockIq2Xxs { d: [0; 2], qs: [0; QK_K / 4] }];
        assert!(quantize_row_iq2_xxs(&x[..256], None, &mut out).is_err());
    }

    #[test]
    fn iq2_xxs_hostile_inputs() {
        check_hostile(quantize_row_iq2_xxs);
    }

    #[test]
    fn iq2_xs_golden() {
        check_golden(quantize_row_iq2_xs, 256, true, golden!("iq2_xs.bin"));
    }

    #[test]
    fn iq2_xs_golden_r512() {
        check_golden(quantize_row_iq2_xs, 512, true, golden!("iq2_xs_r512.bin"));
    }

    #[test]
    fn iq2_xs_needs_weights() {
        let x = iq_input();
        let mut out = [BlockIq2Xs { d: [0; 2], qs: [0; QK_K / 4], scales: [0; QK_K / 32] }];
        assert!(quantize_row_iq2_xs(&x[..256], None, &mut out).is_err());
    }

    #[test]
    fn iq2_xs_hostile_inputs() {
        check_hostile(quantize_row_iq2_xs);
    }

    #[test]
    fn iq2_s_golden() {
        check_golden(quantize_row_iq2_s, 256, true, golden!("iq2_s.bin"));
    }

    #[test]
    fn iq2_s_golden_r512() {
        check_golden(quantize_row_iq2_s, 512, true, golden!("iq2_s_r512.bin"));
    }

    #[test]
    fn iq2_s_golden_no_weights() {
        check_golden(quantize_row_iq2_s, 256, false, golden!("iq2_s_nw.bin"));
    }

    #[test]
    fn iq2_s_hostile_inputs() {
        check_hostile(quantize_row_iq2_s);
    }
}
