//! `y[t][o] = W[o] · x[t]` on the thread pool.
//!
//! The activations `x` (`[nt][cols]` f32) are quantized once per call to the
//! weight type's activation format (once per format for a group of sibling
//! matrices that read the same input, such as q/k/v or gate/up), then the
//! output rows are cut into tasks. A task owns whole rows: for each of its
//! rows it runs the kernel over all `nt` tokens, so every `y[t][o]` is
//! computed by the same instruction sequence whatever the thread count or
//! task size (results are bit-identical across them). The kernel is chosen
//! per matrix by (weight type, rows, `nt`) as the reference chooses its path
//! (`KernelSet::matmul_fn`).
//!
//! Task shapes (none changes a result):
//! - fewer than 8 tokens (decodes): a task holds at most
//!   `DECODE_TASK_BYTES` of weight rows; with one token the outputs go
//!   straight into `y`, and an untiled matrix is read as up to
//!   `DECODE_STREAMS` far-apart streams (`decode_streams`).
//! - from 8 tokens: above 64 tokens a task's rows run over blocks of
//!   activation rows (`token_block`: a quarter of L2, 16–256 rows, starting
//!   at multiples of 8) so the quantized activations stay in cache; the
//!   outputs go to a per-thread tile transposed into `y` (`scatter_tile`),
//!   except for the kernels that write `[token][row]` themselves (`TiledFn`
//!   over the load-time tiles, in whole 16-row strips; the token-major F16
//!   kernels, two tasks per thread in whole `F16_TASK_ROWS` blocks).
//! - row-block kernels (`RowsFn`) take whole groups of 8 rows.

use super::aligned::AlignedBytes;
use super::dispatch::{check_dot_shapes, ActType, KernelSet};
use super::ggml_paths::{path_of, Mat, Path};
use super::pool::ThreadPool;
use crate::ggml_type::GgmlType;
use crate::{Error, Result};

/// A weight matrix viewed in place (e.g. in a GGUF mapping): `rows` rows of
/// `cols` elements of type `ty`, each row `ty.row_size(cols)` bytes, rows
/// contiguous. No alignment is assumed. Optionally also the same rows
/// interleaved at load (`ggml_paths::repack_tiles`), which the kernel sets
/// that have a kernel over them read instead of `data`.
#[derive(Clone, Copy, Debug)]
pub struct Weights<'a> {
    pub data: &'a [u8],
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    row_bytes: usize,
    tiles: Option<&'a [u8]>,
    /// Whether the reference repacks this matrix (a model's weights); a
    /// LoRA adapter's are not (`unrepacked`).
    repacked: bool,
}

/// Whether a matrix of `ty` with rows of `cols` can be multiplied: a dot
/// kernel for the type, and rows whole blocks of it and of its activation
/// type (the model checks every matrix at load with this).
pub fn check_type(ty: GgmlType, cols: usize) -> Result<()> {
    let act =
        ActType::for_weight(ty).ok_or_else(|| Error::invalid(format!("matmul: no dot kernel for weight type {ty}")))?;
    if cols == 0 || !cols.is_multiple_of(ty.block_size()) || !cols.is_multiple_of(act.block_size()) {
        return Err(Error::invalid(format!("matmul: {cols} columns is not a multiple of the {ty} block size")));
    }
    Ok(())
}

impl<'a> Weights<'a> {
    /// Checks that the type has a dot kernel, that `cols` is a multiple of its
    /// block size (and of 256 for the Q8_K-paired types) and that `data`
    /// holds `rows` rows.
    pub fn new(data: &'a [u8], ty: GgmlType, rows: usize, cols: usize) -> Result<Weights<'a>> {
        check_type(ty, cols)?;
        let row_bytes = cols / ty.block_size() * ty.type_size();
        let need = rows.checked_mul(row_bytes).ok_or_else(|| Error::invalid("matmul: weight size overflows"))?;
        if data.len() < need {
            return Err(Error::invalid(format!(
                "matmul: {rows}x{cols} {ty} weights need {need} bytes, got {}",
                data.len()
            )));
        }
        Ok(Weights { data, ty, rows, cols, row_bytes, tiles: None, repacked: true })
    }

    /// The same matrix with its load-time tiles (`repack_tiles::build` of
    /// `data`); fails if they have the wrong size for the shape.
    pub fn with_tiles(self, tiles: &'a [u8]) -> Result<Weights<'a>> {
        let want = super::ggml_paths::repack_tiles::tiles_bytes(self.ty, self.rows, self.cols);
        if want != Some(tiles.len()) {
            return Err(Error::invalid(format!(
                "matmul: {} tile bytes for {}x{} {}, want {want:?}",
                tiles.len(),
                self.rows,
                self.cols,
                self.ty
            )));
        }
        Ok(Weights { tiles: Some(tiles), ..self })
    }

    /// The same matrix as the reference multiplies a tensor it did not
    /// repack (a LoRA adapter's, in a plain CPU buffer): the path of its
    /// type and shape without the repacked one. No tiles.
    pub fn unrepacked(self) -> Weights<'a> {
        Weights { repacked: false, tiles: None, ..self }
    }

    /// What picks its products' paths (`ggml_paths::path_of`).
    pub fn mat(&self) -> Mat {
        Mat { ty: self.ty, rows: self.rows, repacked: self.repacked }
    }

    /// Bytes per row.
    pub fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    fn row(&self, o: usize) -> &'a [u8] {
        &self.data[o * self.row_bytes..(o + 1) * self.row_bytes]
    }

    /// The activation format this matrix's kernel reads.
    pub fn act_type(&self) -> ActType {
        // `new` checked that there is one.
        ActType::for_weight(self.ty).unwrap_or(ActType::F32)
    }
}

/// Quantized activations: `nt` rows of `cols` elements in format `act`,
/// `row_bytes` apart. Reusable across calls (the buffer only grows).
#[derive(Debug)]
pub struct Activations {
    act: ActType,
    nt: usize,
    cols: usize,
    row_bytes: usize,
    data: AlignedBytes, // [nt][row_bytes], from a cache line
}

impl Default for Activations {
    fn default() -> Self {
        Activations { act: ActType::F32, nt: 0, cols: 0, row_bytes: 0, data: AlignedBytes::new() }
    }
}

impl Activations {
    pub fn new() -> Activations {
        Activations::default()
    }
    pub fn act_type(&self) -> ActType {
        self.act
    }
    pub fn n_tokens(&self) -> usize {
        self.nt
    }
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The quantized rows, `[nt][row_bytes]` (the buffer may be longer).
    fn bytes(&self) -> &[u8] {
        &self.data[..self.nt * self.row_bytes]
    }

    /// Copies the rows `rows` of `src` (already quantized), in that order:
    /// the rows routed to one expert. A row's bytes do not depend on the
    /// rows quantized with it, so these are the bytes quantizing the
    /// gathered f32 rows would give.
    pub fn gather(&mut self, src: &Activations, rows: &[usize]) -> Result<()> {
        if let Some(&r) = rows.iter().find(|&&r| r >= src.nt) {
            return Err(Error::invalid(format!("activations: row {r} of {}", src.nt)));
        }
        let rb = src.row_bytes;
        let data = self.data.grown_to(rows.len() * rb);
        for (i, &r) in rows.iter().enumerate() {
            data[i * rb..(i + 1) * rb].copy_from_slice(&src.data[r * rb..(r + 1) * rb]);
        }
        (self.act, self.nt, self.cols, self.row_bytes) = (src.act, rows.len(), src.cols, rb);
        Ok(())
    }

    /// Quantizes `x` (`[nt][cols]`) to `act`, one token per pool task.
    pub fn quantize(
        &mut self,
        ks: &KernelSet,
        pool: &ThreadPool,
        act: ActType,
        x: &[f32],
        nt: usize,
        cols: usize,
    ) -> Result<()> {
        if cols == 0 || !cols.is_multiple_of(act.block_size()) {
            return Err(Error::invalid(format!(
                "activations: {cols} columns is not a multiple of the {act:?} block size"
            )));
        }
        if nt.checked_mul(cols) != Some(x.len()) {
            return Err(Error::invalid(format!("activations: {} values for {nt} tokens of {cols}", x.len())));
        }
        let row_bytes = act.row_bytes(cols);
        // grown only: one buffer serves inputs of different widths in turn
        // (576 then 1536 columns in a SmolLM2 layer), and shrinking then
        // growing back zeroed the grown part every time (~1 % of a prefill)
        let out = SyncPtr(self.data.grown_to(nt * row_bytes).as_mut_ptr());
        self.act = act;
        self.nt = nt;
        self.cols = cols;
        self.row_bytes = row_bytes;
        pool.run(nt, &|t| {
            // SAFETY: task t writes only row t of `data`, which is
            // `row_bytes` long and in bounds (`data` holds nt rows); no other
            // task touches it, and `data` outlives `run`.
            let row = unsafe { std::slice::from_raw_parts_mut(out.get().add(t * row_bytes), row_bytes) };
            // Shapes were checked above, so this cannot fail.
            let _ = ks.quantize_act(act, &x[t * cols..(t + 1) * cols], row);
        })
    }
}

#[derive(Clone, Copy)]
struct SyncPtr<T>(*mut T);
impl<T> SyncPtr<T> {
    fn get(self) -> *mut T {
        self.0
    }
}
// SAFETY: used only to hand disjoint parts of one buffer to pool tasks (each
// use states which part it owns).
unsafe impl<T> Sync for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Send for SyncPtr<T> {}

/// Weight bytes per task at most, for fewer than 8 tokens (decodes): such a
/// task streams its rows once, and when the tasks run out the other threads
/// wait for the last one, so it must be short (tasks of megabytes left a
/// thread idle at the end of every output head).
const DECODE_TASK_BYTES: usize = 128 * 1024;

/// Decodes read a matrix as up to this many streams, far apart: its rows are
/// cut into that many segments and every task takes the same local rows of
/// each (as many as a task of one stream would have), one row of each
/// segment in turn. One stream of rows after another leaves DRAM bandwidth
/// unused at one thread; four far-apart streams read about 1.4× as fast.
const DECODE_STREAMS: usize = 4;

/// Streams this close or closer read no faster than one.
const DECODE_STREAM_MIN_BYTES: usize = 64 * 1024;

/// The number of streams a decode reads a `rows`-row matrix as: one for
/// types of less than a byte per weight, whose kernels do more work per
/// byte and ran slower as four streams, unless the set has a kernel taking
/// the segments' rows in one call (`interleaved`,
/// `KernelSet::decode_rows_fn`), with which four streams are faster again.
fn decode_streams(rows: usize, cols: usize, row_bytes: usize, interleaved: bool) -> usize {
    if row_bytes < cols && !interleaved {
        return 1;
    }
    let bytes = rows.saturating_mul(row_bytes);
    (bytes / DECODE_STREAM_MIN_BYTES).clamp(1, DECODE_STREAMS).min(rows.max(1))
}

/// Rows per task: enough tasks to balance 2-4 threads, not so small that
/// claiming them costs; for decodes, at most [`DECODE_TASK_BYTES`] of weights.
fn rows_per_task(rows: usize, nt: usize, n_threads: usize, row_bytes: usize) -> usize {
    if n_threads <= 1 {
        return rows.max(1);
    }
    let target_tasks = 8 * n_threads;
    let by_balance = rows.div_ceil(target_tasks);
    let by_bytes = if nt < 8 { DECODE_TASK_BYTES / row_bytes.max(1) } else { usize::MAX };
    let min_rows = if nt >= 8 { 1 } else { 4 };
    by_balance.min(by_bytes).max(min_rows).max(1)
}

/// Cuts `extent` local rows into tasks of about `step` rows, as many as a
/// multiple of `n_threads`, their sizes at most one row apart. Each thread
/// runs its own run of tasks and a task is not split, so the uneven cut
/// 40 + 40 | 40 + 24 (a 576-row F16 decode at 2 threads) left one thread
/// waiting a fifth of the matmul.
fn balanced_tasks(extent: usize, step: usize, n_threads: usize) -> impl Iterator<Item = (usize, usize)> {
    let n = extent.div_ceil(step.max(1)).next_multiple_of(n_threads.max(1)).min(extent.max(1));
    (0..n).map(move |k| (k * extent / n, (k + 1) * extent / n))
}

/// Floats of a task's output tile kept per thread between tasks (larger
/// tiles, from big prefill tasks, are allocated per task).
const KEPT_TILE: usize = 64 * 1024;

thread_local! {
    /// This thread's output tile, reused across tasks and calls (a decode
    /// runs ~2000 matmul tasks per token on SmolLM2).
    static TILE_BUF: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` on a scratch buffer of `n` floats (contents unspecified).
fn with_tile<R>(n: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    if n > KEPT_TILE {
        return f(&mut vec![0f32; n]);
    }
    TILE_BUF.with(|b| match b.try_borrow_mut() {
        Ok(mut v) => {
            if v.len() < n {
                v.resize(n, 0.0);
            }
            f(&mut v[..n])
        }
        // re-entered (a task submitting a matmul): a fresh buffer
        Err(_) => f(&mut vec![0f32; n]),
    })
}

/// `y[t][o] = W[o]·x[t]`: `x` is `[nt][w.cols]`, `y` is `[nt][w.rows]`.
pub fn matmul(pool: &ThreadPool, w: &Weights, x: &[f32], nt: usize, y: &mut [f32]) -> Result<()> {
    matmul_with(super::kernels(), pool, w, x, nt, y)
}

/// [`matmul`] with an explicit kernel set (tests, A/B runs).
pub fn matmul_with(ks: &KernelSet, pool: &ThreadPool, w: &Weights, x: &[f32], nt: usize, y: &mut [f32]) -> Result<()> {
    matmul_siblings_with(ks, pool, &[*w], x, nt, &mut [y])
}

/// Several matrices that read the same input (q/k/v, gate/up): `x` is
/// quantized once per activation format, and all rows of all matrices are
/// computed in one pool submission. `ys[i]` is `[nt][ws[i].rows]`.
pub fn matmul_siblings(pool: &ThreadPool, ws: &[Weights], x: &[f32], nt: usize, ys: &mut [&mut [f32]]) -> Result<()> {
    matmul_siblings_with(super::kernels(), pool, ws, x, nt, ys)
}

/// [`matmul_siblings`] with an explicit kernel set.
pub fn matmul_siblings_with(
    ks: &KernelSet,
    pool: &ThreadPool,
    ws: &[Weights],
    x: &[f32],
    nt: usize,
    ys: &mut [&mut [f32]],
) -> Result<()> {
    matmul_siblings_reusing(ks, pool, &mut Vec::new(), ws, x, nt, ys)
}

/// [`matmul_siblings_with`] quantizing into `acts`, buffers kept by the
/// caller across calls (one per activation format; the forward pass keeps
/// them for the context's life, so a decode does not allocate and fault in
/// fresh pages for every matmul).
pub fn matmul_siblings_reusing(
    ks: &KernelSet,
    pool: &ThreadPool,
    acts: &mut Vec<Activations>,
    ws: &[Weights],
    x: &[f32],
    nt: usize,
    ys: &mut [&mut [f32]],
) -> Result<()> {
    let Some(first) = ws.first() else { return Ok(()) };
    let cols = first.cols;
    if ws.len() != ys.len() {
        return Err(Error::invalid("matmul: one output per weight matrix"));
    }
    if nt == 0 {
        return Ok(());
    }
    for (w, y) in ws.iter().zip(ys.iter()) {
        if w.cols != cols {
            return Err(Error::invalid("matmul: sibling matrices must have the same columns"));
        }
        if nt.checked_mul(w.rows) != Some(y.len()) {
            return Err(Error::invalid(format!("matmul: output has {} values, want {nt}x{}", y.len(), w.rows)));
        }
        ks.tile_fn(w.ty)?;
    }
    // --- quantize the input once per activation format: acts[i] for the
    // i-th distinct format of `ws` (earlier contents are overwritten)
    let mut formats: Vec<ActType> = Vec::new();
    for w in ws {
        let act = w.act_type();
        if !formats.contains(&act) {
            if acts.len() <= formats.len() {
                acts.push(Activations::new());
            }
            acts[formats.len()].quantize(ks, pool, act, x, nt, cols)?;
            formats.push(act);
        }
    }
    let act_of = |w: &Weights| formats.iter().position(|&a| a == w.act_type()).unwrap_or(0);
    let refs: Vec<&Activations> = ws.iter().map(|w| &acts[act_of(w)]).collect();
    matmul_quantized_with(ks, pool, ws, &refs, ys)
}

/// The weight bytes the matmuls were given since the last
/// [`take_weight_bytes`] (test builds: the C tests count what a decode
/// reads).
#[cfg(feature = "test-hooks")]
static WEIGHT_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Returns and clears the weight bytes the matmuls were given.
#[cfg(feature = "test-hooks")]
pub fn take_weight_bytes() -> u64 {
    WEIGHT_BYTES.swap(0, std::sync::atomic::Ordering::Relaxed)
}

/// The matmul proper, on activations quantized by the caller (`acts[i]` in
/// `ws[i]`'s activation format).
pub fn matmul_quantized_with(
    ks: &KernelSet,
    pool: &ThreadPool,
    ws: &[Weights],
    acts: &[&Activations],
    ys: &mut [&mut [f32]],
) -> Result<()> {
    matmul_jobs(ks, pool, ws, acts, ys, false)
}

/// The experts' products of a mixture-of-experts layer: `ws[i]` is one
/// expert's matrix and `acts[i]` the rows routed to it, all in one pool
/// submission. Each product runs the kernel the reference's MUL_MAT_ID
/// runs for that expert, which differs from a plain matmul's for the same
/// shape: per routed row, the one-row kernel (`ggml_vec_dot_*`, or the
/// repacked types' gemv; never tinyBLAS or the repacked gemm), except for
/// the k-quants the tiled matmul takes from 8 routed rows
/// (`ggml_compute_forward_mul_mat_id` in ggml-cpu.c, `forward_mul_mat_id`
/// in repack.cpp, `ggml_compute_forward_mul_mat_id_tiled`).
pub fn matmul_experts_with(
    ks: &KernelSet,
    pool: &ThreadPool,
    ws: &[Weights],
    acts: &[&Activations],
    ys: &mut [&mut [f32]],
) -> Result<()> {
    matmul_jobs(ks, pool, ws, acts, ys, true)
}

/// [`matmul_quantized_with`], or with `experts` [`matmul_experts_with`].
fn matmul_jobs(
    ks: &KernelSet,
    pool: &ThreadPool,
    ws: &[Weights],
    acts: &[&Activations],
    ys: &mut [&mut [f32]],
    experts: bool,
) -> Result<()> {
    if ws.len() != acts.len() || ws.len() != ys.len() {
        return Err(Error::invalid("matmul: one activation set and output per matrix"));
    }
    // --- check shapes and cut every matrix's rows into tasks
    struct Job<'a> {
        w: Weights<'a>,
        a: &'a Activations,
        f: super::dispatch::TileFn,
        rows_f: Option<super::dispatch::RowsFn>,
        tiled_f: Option<(super::dispatch::TiledFn, &'a [u8])>,
        /// a version of `rows_f` writing y ([token][row]) itself
        token_major_f: Option<super::dispatch::TokenMajorRowsFn>,
        y: SyncPtr<f32>,
        /// for one-token products on untiled weights: rows per stream
        /// segment (`decode_streams`); the job's tasks are then ranges of
        /// local rows within every segment; 0 otherwise
        segment: usize,
        /// for those: a kernel taking the segments' row of one local row in
        /// one call (`KernelSet::decode_rows_fn`)
        decode_f: Option<super::dispatch::RowsFn>,
        /// `f` (and `rows_f`) are the one-row kernels, run one activation
        /// row per call (an expert's product: `matmul_experts_with`; the
        /// token block is then 1)
        per_row: bool,
    }
    let mut jobs = Vec::with_capacity(ws.len());
    let mut tasks: Vec<(usize, usize, usize)> = Vec::new(); // (job, row0, row1)
    for (i, ((w, a), y)) in ws.iter().zip(acts).zip(ys.iter_mut()).enumerate() {
        if a.act != w.act_type() || a.cols != w.cols {
            return Err(Error::invalid("matmul: activations do not match the weights"));
        }
        if a.nt.checked_mul(w.rows) != Some(y.len()) {
            return Err(Error::invalid("matmul: output size mismatch"));
        }
        if a.nt == 0 || w.rows == 0 {
            continue;
        }
        check_dot_shapes(w.ty, a.act, w.cols, w.row_bytes, a.bytes().len(), a.row_bytes, a.nt)?;
        // an expert's product runs the one-row kernel per row, but for the
        // tiled k-quant path (`matmul_experts_with`) and the repacked
        // 32-block types, whose gemm gives each output the gemv's bits
        // (`ggml_paths::repack`)
        let gemm_is_gemv = matches!(w.ty, GgmlType::Q4_0 | GgmlType::IQ4_NL | GgmlType::MXFP4);
        let per_row = experts
            && a.nt > 1
            && match path_of(w.mat(), a.nt) {
                Some(Path::Tiled) => false,
                Some(Path::Repack) => !gemm_is_gemv,
                _ => true,
            };
        let f = ks.matmul_fn(w.mat(), if per_row { 1 } else { a.nt })?;
        // the tiles, where this set has a kernel over them (any token count)
        // (an expert's product over them: one token per call, the gemv)
        let tiled_f = w.tiles.and_then(|t| Some((ks.tiled_fn(w.ty, w.rows, w.cols)?, t)));
        let rows_f = if per_row { ks.one_row_rows_fn(w.mat()) } else { ks.matmul_rows_fn(w.mat(), a.nt) };
        let token_major_f = if tiled_f.is_none() && !per_row { ks.matmul_token_major_fn(w.mat(), a.nt) } else { None };
        let mut step = rows_per_task(w.rows, a.nt, pool.n_threads(), w.row_bytes);
        if tiled_f.is_none() && rows_f.is_some() && path_of(w.mat(), a.nt) == Some(Path::Tiled) {
            // the tiled kernel transposes the activations once per call:
            // 2 tasks per thread (small tasks spent much of their time
            // transposing)
            step = step.max(w.rows.div_ceil(2 * pool.n_threads()));
        }
        if token_major_f.is_some() && path_of(w.mat(), a.nt) == Some(Path::TinyBlasF16) {
            // F16 prefill on AVX-512 or AVX2 (a token-major kernel, so no output
            // tile per task, however many rows): two tasks per thread, in
            // whole blocks of 24 rows (the kernel's 3-row tiles, the 8-row
            // groups below).
            // Each task re-reads every token's activations and widens its
            // own weight rows, and a row left over from the 3-row tiles runs
            // alone, so fewer, larger tasks are faster than the other row
            // kernels' 8 per thread; two rather than one let a thread take
            // over what a slow or preempted one has left.
            step = w.rows.div_ceil(2 * pool.n_threads()).next_multiple_of(F16_TASK_ROWS);
        }
        if tiled_f.is_some() {
            // the tiles come in strips of 16 rows
            step = step.next_multiple_of(super::ggml_paths::repack_tiles::STRIP_ROWS);
        } else if rows_f.is_some() {
            // row-block kernels step over groups of rows (up to 8): whole
            // groups per task (the outputs' bits do not depend on it)
            step = step.next_multiple_of(8);
        }
        // one token on untiled weights: tasks over local rows of the
        // stream segments, `step` rows of each. (Dividing `step` among the
        // segments instead, for tasks of the same size, cut the streams into
        // pieces too short to stream well: decodes ran slower.)
        let decode = a.nt == 1 && tiled_f.is_none();
        let decode_f = if decode { ks.decode_rows_fn(w.mat()) } else { None };
        let segment =
            if decode { w.rows.div_ceil(decode_streams(w.rows, w.cols, w.row_bytes, decode_f.is_some())) } else { 0 };
        if segment > 0 {
            tasks.extend(balanced_tasks(segment, step, pool.n_threads()).map(|(r0, r1)| (i, r0, r1)));
        } else {
            let mut r = 0;
            while r < w.rows {
                let r1 = (r + step).min(w.rows);
                tasks.push((i, r, r1));
                r = r1;
            }
        }
        jobs.push((
            i,
            Job { w: *w, a, f, rows_f, tiled_f, token_major_f, y: SyncPtr(y.as_mut_ptr()), segment, decode_f, per_row },
        ));
    }
    #[cfg(feature = "test-hooks")]
    WEIGHT_BYTES.fetch_add(
        jobs.iter().map(|(_, j)| (j.w.rows * j.w.row_bytes) as u64).sum(),
        std::sync::atomic::Ordering::Relaxed,
    );
    let find = |i: usize| jobs.iter().find(|(j, _)| *j == i).map(|(_, job)| job);
    pool.run(tasks.len(), &|task| {
        let (i, r0, r1) = tasks[task];
        let Some(job) = find(i) else { return };
        let nt = job.a.nt;
        let rows = job.w.rows;
        let stride = job.a.row_bytes;
        if job.segment > 0 {
            // one token (decodes): local rows r0..r1 of every segment, one
            // row of each segment in turn; y is [1][rows], so each output
            // goes straight to y[o] (no tile, no scatter)
            let rb = job.w.row_bytes;
            if let Some(decode_f) = job.decode_f {
                // the segments' rows l, l + segment, … in one call, their
                // accumulator chains interleaved; outputs through a local
                // buffer (the y between them belongs to other tasks)
                let seg = job.segment;
                if seg >= rows && job.w.ty == GgmlType::Q1_0 {
                    // Q1_0 (1.125 bits a weight: its decode is bound by the
                    // work, not the weight stream) with one segment: the
                    // task's adjacent rows in one call, whose 4-row groups
                    // share each activation block's load and scale
                    // conversion (Zen 3, 1 thread: tg128 +8 %; Q8_0's decode
                    // ran 3-5 % slower that way, so the others keep a call
                    // per row)
                    // SAFETY: rows r0..r1 lie within `data` (`Weights::new`),
                    // `rb` apart; activation row 0 within the checked ones;
                    // y[r0..r1] (of [1][rows]) belongs to this task alone.
                    unsafe {
                        let out = std::slice::from_raw_parts_mut(job.y.get().add(r0), r1 - r0);
                        decode_f(
                            job.w.cols,
                            &job.w.data[r0 * rb..r1 * rb],
                            rb,
                            r1 - r0,
                            job.a.bytes(),
                            stride,
                            1,
                            out,
                            1,
                        )
                    };
                    return;
                }
                for l in r0..r1 {
                    let n = (rows - l).div_ceil(seg);
                    let mut out = [0f32; DECODE_STREAMS];
                    assert!(n <= DECODE_STREAMS, "decode: {n} segments");
                    // SAFETY: rows l + k·seg (k < n) are < rows, so within
                    // `data` (`Weights::new`), `seg · rb` bytes apart from
                    // row l; activation row 0 within the checked ones; `out`
                    // holds n outputs 1 apart.
                    unsafe {
                        decode_f(job.w.cols, &job.w.data[l * rb..], seg * rb, n, job.a.bytes(), stride, 1, &mut out, 1)
                    };
                    for (k, v) in out[..n].iter().enumerate() {
                        // SAFETY: l + k·seg < rows of y ([1][rows]); the
                        // local row l belongs to this task alone, so do
                        // these rows.
                        unsafe { *job.y.get().add(l + k * seg) = *v };
                    }
                }
                return;
            }
            for l in r0..r1 {
                for o in (l..rows).step_by(job.segment) {
                    // SAFETY: o < rows of y ([1][rows], checked above); the
                    // local row l belongs to this task alone, so row o does.
                    let out = unsafe { std::slice::from_raw_parts_mut(job.y.get().add(o), 1) };
                    match job.rows_f {
                        // SAFETY: row o lies within `data` (`Weights::new`),
                        // activation row 0 within the checked ones, `out`
                        // holds one row of one output.
                        Some(rows_f) => unsafe {
                            rows_f(
                                job.w.cols,
                                &job.w.data[o * rb..(o + 1) * rb],
                                rb,
                                1,
                                job.a.bytes(),
                                stride,
                                1,
                                out,
                                1,
                            )
                        },
                        // SAFETY: as in the loop below, for activation row 0.
                        None => unsafe { (job.f)(job.w.cols, job.w.row(o), job.a.bytes(), stride, out) },
                    }
                }
            }
            return;
        }
        let tiled = job.rows_f.is_some() && path_of(Mat { rows, ..job.w.mat() }, nt) == Some(Path::Tiled);
        // (one token per kernel call: the one-row kernel's bits)
        let tb = if job.per_row { 1 } else { token_block(job.w.ty, stride, nt, tiled) };
        let n_rows = r1 - r0;
        if let Some((tiled_f, tiles)) = job.tiled_f {
            // the tiled kernels write [token][row] themselves: straight into y
            use super::ggml_paths::repack_tiles::rows_offset;
            let (c, o0, o1) =
                (job.w.cols, rows_offset(job.w.ty, job.w.cols, r0), rows_offset(job.w.ty, job.w.cols, r1));
            let mut t0 = 0;
            while t0 < nt {
                let t1 = (t0 + tb).min(nt);
                // SAFETY: rows r0..r1 are whole strips of 16 rows but for
                // the matrix's last 8 (r0 and the step are multiples of 16,
                // `rows` of 8: `tiled_fn`), whose tiles `with_tiles`
                // checked; activation rows t0..t1 lie within the checked
                // ones; y is [nt][rows] (checked above), so y[t][r0..r1] for
                // t in t0..t1 is at t·rows + r (rows ≥ n_rows apart), and
                // those elements belong to this task alone.
                unsafe {
                    tiled_f(
                        c,
                        &tiles[o0..o1],
                        n_rows,
                        &job.a.bytes()[t0 * stride..],
                        stride,
                        t1 - t0,
                        job.y.get().add(t0 * rows + r0),
                        rows,
                    )
                };
                t0 = t1;
            }
            return;
        }
        if let Some(token_major_f) = job.token_major_f {
            let rb = job.w.row_bytes;
            // SAFETY: rows r0..r1 lie within `data` (`Weights::new`), `rb`
            // apart; the activation rows are the checked ones; y is
            // [nt][rows] (checked above), so y[t][r0..r1] is at t·rows + r0
            // + r (rows ≥ n_rows apart), and those elements belong to this
            // task alone.
            unsafe {
                token_major_f(
                    job.w.cols,
                    &job.w.data[r0 * rb..r1 * rb],
                    rb,
                    n_rows,
                    job.a.bytes(),
                    stride,
                    nt,
                    job.y.get().add(r0),
                    rows,
                )
            };
            return;
        }
        // [n_rows][tb]: this task's rows for one token block
        with_tile(n_rows * tb, |tile| {
            let mut t0 = 0;
            while t0 < nt {
                let t1 = (t0 + tb).min(nt);
                let len = t1 - t0;
                if let Some(rows_f) = job.rows_f {
                    let rb = job.w.row_bytes;
                    // SAFETY: as below, for each of the rows r0..r1
                    // (contiguous,
                    // `rb` apart, within `data` by `Weights::new`); `tile` holds
                    // n_rows rows of `tb >= len` outputs.
                    unsafe {
                        rows_f(
                            job.w.cols,
                            &job.w.data[r0 * rb..r1 * rb],
                            rb,
                            n_rows,
                            &job.a.bytes()[t0 * stride..],
                            stride,
                            len,
                            tile,
                            tb,
                        )
                    };
                } else {
                    for o in r0..r1 {
                        let out = &mut tile[(o - r0) * tb..(o - r0) * tb + len];
                        // SAFETY: the shapes were checked by `check_dot_shapes`
                        // above and the kernel set matches this CPU; activation
                        // rows t0..t1 lie within the checked ones.
                        unsafe { (job.f)(job.w.cols, job.w.row(o), &job.a.bytes()[t0 * stride..], stride, out) };
                    }
                }
                // SAFETY: y is [nt][rows] (checked above) and t0..t1 < nt; rows
                // r0..r1 belong to this task alone, so no other task writes
                // y[t][r0..r1].
                unsafe { scatter_tile(tile, tb, n_rows, len, job.y.get().add(t0 * rows + r0), rows) };
                t0 = t1;
            }
        })
    })
}

/// `y[t * rows + k] = tile[k * tb + t]` for `k < n_rows`, `t < len`: a task's
/// outputs (`[n_rows][tb]`) transposed into the `[token][row]` output, 8
/// tokens at a time, so that the tile is read along its rows and the output
/// written along 8 of its rows (one token at a time read every row's line of
/// the tile once per token: ~4 % of a prefill).
///
/// # Safety
/// `y` is valid for writes at `t * rows + k` for those `t`, `k`, and no
/// other thread touches them; `tile.len() >= (n_rows - 1) * tb + len`.
unsafe fn scatter_tile(tile: &[f32], tb: usize, n_rows: usize, len: usize, y: *mut f32, rows: usize) {
    assert!(n_rows == 0 || tile.len() >= (n_rows - 1) * tb + len, "scatter_tile: tile too short");
    if len < 8 {
        // decodes and small batches: one contiguous output row per token
        for t in 0..len {
            // SAFETY: the caller lets us write y[t * rows + k] for k < n_rows
            // (no other thread touches them).
            let dst = unsafe { std::slice::from_raw_parts_mut(y.add(t * rows), n_rows) };
            for (k, d) in dst.iter_mut().enumerate() {
                *d = tile[k * tb + t];
            }
        }
        return;
    }
    let mut c = 0;
    while c < len {
        let w = (len - c).min(8);
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))] // advanced by the x86-64 path only
        let mut k0 = 0;
        #[cfg(target_arch = "x86_64")]
        if w == 8 && super::vecf::use_avx2() {
            while k0 + 8 <= n_rows {
                // SAFETY: AVX2 checked; rows k0..k0+8 of the tile hold tokens
                // c..c+8 (asserted above), and the caller lets us write
                // y[(c + i) * rows + k0..k0 + 8] for i < 8.
                unsafe { transpose8x8(tile.as_ptr().add(k0 * tb + c), tb, y.add(c * rows + k0), rows) };
                k0 += 8;
            }
        }
        for k in k0..n_rows {
            let src = &tile[k * tb + c..k * tb + c + w];
            for (i, v) in src.iter().enumerate() {
                // SAFETY: c + i < len and k < n_rows: an output the caller lets us write.
                unsafe { *y.add((c + i) * rows + k) = *v };
            }
        }
        c += w;
    }
}

/// `dst[i * dst_stride + k] = src[k * src_stride + i]` for `i, k < 8`: one
/// 8×8 block of [`scatter_tile`] in registers.
///
/// # Safety
/// AVX2 is available; the 8 rows of 8 values at `src` are readable and
/// the 8 rows of 8 values at `dst` writable.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn transpose8x8(src: *const f32, src_stride: usize, dst: *mut f32, dst_stride: usize) {
    use std::arch::x86_64::*;
    // SAFETY: the caller guarantees the 8 source rows (f32 moved as dwords).
    let rows: [__m256i; 8] = std::array::from_fn(|k| unsafe { _mm256_loadu_si256(src.add(k * src_stride).cast()) });
    // SAFETY: `transpose8` needs AVX2, which the CPU has (this fn's contract).
    let cols = unsafe { super::x86_avx2::transpose8(&rows) };
    for (i, col) in cols.iter().enumerate() {
        // SAFETY: the caller guarantees the 8 destination rows.
        unsafe { _mm256_storeu_si256(dst.add(i * dst_stride).cast(), *col) };
    }
}

/// The row granularity of F16 prefill tasks (see `matmul_quantized_with`).
const F16_TASK_ROWS: usize = 24;

/// Activation rows per pass over a task's weight rows, so that a block of
/// quantized activations stays in cache while every row of the task reads it.
/// A multiple of 8, the widest token group of any quantized kernel: blocks
/// start at multiples of 8, so the last block holds the same tail (nt % 8,
/// and the repacked paths' gemv rows nt % 4) as one pass over all `nt`, and
/// every token runs the same kernel code either way (the kernel itself was
/// chosen from the whole `nt`). Float weights keep one pass.
/// The tiled path's row-block kernel (`tiled`) transposes a block's
/// activations and unpacks each weight row once per call: larger blocks,
/// a multiple of its 16-token group.
fn token_block(ty: GgmlType, act_row_bytes: usize, nt: usize, tiled: bool) -> usize {
    if matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) || nt <= 64 {
        return nt.max(1);
    }
    let (block_bytes, unit) = if tiled { (TILED_BLOCK_BYTES, 16) } else { (rows_block_bytes(), 8) };
    let tb = (block_bytes / act_row_bytes.max(1)) / unit * unit;
    tb.clamp(if tiled { TILED_MIN_TOKENS } else { 16 }, 256)
}

/// Bytes of a token block's activations for the tiled path's kernel (at
/// 64 KB its per-call unpacking took ~2.5 % of a Q6_K prefill, here ~0.9 %).
const TILED_BLOCK_BYTES: usize = 256 * 1024;

/// The tiled path's smallest token block. Wide matrices would get few
/// tokens from `TILED_BLOCK_BYTES` (Llama 3.2 1B's Q6_K ffn_down, 8192
/// columns: 16, one group), and each block unpacks every weight row again:
/// there the unpacking took as long as the products (9.3 % and 10.8 % of a
/// pp512). 128 tokens ran that pp512 10 % faster at 1 thread, 9 % at 2
/// (256: no faster), though the block then outgrows L2.
const TILED_MIN_TOKENS: usize = 128;

/// Bytes of a token block's activations for the other kernels: a quarter of
/// the L2 cache, within 64–256 KB (64 KB where the size is unknown). Every
/// pass re-reads (and the row-block kernels re-unpack) the task's weight
/// rows, so the largest block that stays in L2 is the fastest (with 1 MB of
/// L2, 256 KB ran 5–10 % faster than 64).
fn rows_block_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| crate::cpu::l2_cache_bytes().map_or(64 * 1024, |l2| (l2 / 4).clamp(64 * 1024, 256 * 1024)))
}

#[cfg(test)]
mod tests {
    use super::{decode_streams, scatter_tile};

    #[test]
    fn decode_tasks_split_evenly_among_threads() {
        use super::balanced_tasks;
        // (extent, step, threads): the SmolLM2 F16 576-row case, a head, a
        // remainder, fewer rows than threads, one thread
        for (extent, step, threads) in
            [(144, 40, 2), (12288, 120, 2), (100, 7, 3), (3, 8, 4), (1, 8, 2), (64, 16, 1), (144, 40, 3)]
        {
            let tasks: Vec<_> = balanced_tasks(extent, step, threads).collect();
            assert_eq!(tasks.first().map(|t| t.0), Some(0), "{extent}/{step}/{threads}");
            assert_eq!(tasks.last().map(|t| t.1), Some(extent), "{extent}/{step}/{threads}");
            assert!(tasks.windows(2).all(|w| w[0].1 == w[1].0), "contiguous: {tasks:?}");
            let sizes: Vec<usize> = tasks.iter().map(|t| t.1 - t.0).collect();
            let (lo, hi) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
            assert!(hi - lo <= 1 && lo >= 1, "{extent}/{step}/{threads}: {sizes:?}");
            assert!(
                tasks.len() % threads == 0 || tasks.len() == extent,
                "{extent}/{step}/{threads}: {} tasks",
                tasks.len()
            );
            assert!(hi <= step.max(extent.div_ceil(threads)), "{extent}/{step}/{threads}: {sizes:?}");
        }
        assert_eq!(balanced_tasks(144, 40, 2).collect::<Vec<_>>(), [(0, 36), (36, 72), (72, 108), (108, 144)]);
    }

    #[test]
    fn scatter_tile_transposes_every_shape() {
        // 8×8 blocks in registers (AVX2) plus row and token tails, against
        // the definition; rows = 29 leaves gaps the scatter must not touch
        for (n_rows, len, tb) in [(16, 16, 16), (19, 21, 24), (8, 7, 8), (5, 40, 40), (24, 64, 64)] {
            let rows = 29;
            let tile: Vec<f32> = (0..n_rows * tb).map(|i| i as f32 + 0.5).collect();
            let mut y = vec![-1f32; len * rows];
            // SAFETY: y is [len][rows] with n_rows ≤ rows; the tile holds
            // n_rows rows of tb ≥ len.
            unsafe { scatter_tile(&tile, tb, n_rows, len, y.as_mut_ptr(), rows) };
            for t in 0..len {
                for k in 0..rows {
                    let want = if k < n_rows { tile[k * tb + t] } else { -1.0 };
                    assert_eq!(y[t * rows + k], want, "{n_rows}x{len}: token {t}, row {k}");
                }
            }
        }
    }

    #[test]
    fn decodes_stream_large_byte_per_weight_matrices() {
        // F32 301 × 512 (616 KB): four streams; Q8_0 (164 KB): two
        assert_eq!(decode_streams(301, 512, 2048, false), 4);
        assert_eq!(decode_streams(301, 512, 544, false), 2);
        // one stream below a byte per weight (Q5_0) but with a kernel that
        // interleaves the segments' rows, under 128 KB, and never more
        // streams than rows
        assert_eq!(decode_streams(49152, 576, 396, false), 1);
        assert_eq!(decode_streams(49152, 576, 396, true), 4);
        assert_eq!(decode_streams(50, 512, 544, false), 1);
        assert_eq!(decode_streams(3, 65536, 262144, false), 3);
        assert_eq!(decode_streams(0, 512, 2048, false), 1);
    }
}
