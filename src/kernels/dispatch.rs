//! Kernel sets and their run-time choice.
//!
//! A [`KernelSet`] holds, for one instruction set, the tile dot kernel of
//! every weight type and the three activation quantizers. [`kernels()`]
//! returns the best set for this CPU, chosen once: `avx2-vnni` (AVX-512
//! VNNI/VL/BW) or `avx2` (AVX2+FMA+F16C) on x86-64, `neon-dotprod` or `neon`
//! on aarch64, else `scalar`. `MINFER_NO_AVX2=1` / `MINFER_NO_NEON=1` force
//! the scalar set, `MINFER_NO_VNNI=1` keeps plain `avx2`.
//! [`available_sets()`] lists every set this CPU can run (tests compare each
//! against the scalar one).
//!
//! Beside the per-row [`TileFn`], a set may have faster kernels that give
//! every output the same bits: row blocks ([`RowsFn`]: several weight rows
//! per activation load), kernels over weights interleaved at load
//! ([`TiledFn`]), token-major row blocks ([`TokenMajorRowsFn`]) and one-token
//! kernels over far-apart rows (`KernelSet::decode_rows_fn`). The matmul asks
//! for them by shape (`matmul_fn`, `matmul_rows_fn`, `tiled_fn`, ...).

use std::sync::OnceLock;

use super::ggml_paths::{path, path_of, Mat, Path};
use crate::ggml_type::GgmlType;
use crate::quant::{QK, QK_K};
use crate::{Error, Result};

/// The activation format a weight type's dot kernel reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActType {
    /// plain little-endian f32 (F32 weights)
    F32,
    /// little-endian f32 rounded to the nearest bf16 (BF16 weights: the
    /// reference converts the activations to bf16, `ggml_cpu_fp32_to_bf16`,
    /// once per product; held as f32, which every BF16 kernel reads), then
    /// the AVX2 kernels' packed copy and bound (`tinyblas_bf16::round_act_row`)
    Bf16Rounded,
    /// little-endian f32 rounded to the nearest f16 (F16 weights: the
    /// reference converts the activations to f16, `ggml_cpu_fp32_to_fp16`,
    /// once per product; held as f32 so the kernels read them as they are),
    /// then the same values as f16: the one-row kernel of decodes reads
    /// those, half the bytes per weight row (`tinyblas_f16::round_act_row`)
    F16Rounded,
    /// Q4_0, Q5_0, Q8_0, IQ4_NL weights
    Q8_0,
    /// Q4_1, Q5_1 weights (the block sum folds in their minimum)
    Q8_1,
    /// Q2_K … Q6_K, IQ4_XS weights
    Q8K,
}

impl ActType {
    /// The activation type weights of type `w` pair with, or `None` if minfer
    /// has no dot kernel for `w`.
    pub fn for_weight(w: GgmlType) -> Option<ActType> {
        use GgmlType::*;
        Some(match w {
            F32 => ActType::F32,
            BF16 => ActType::Bf16Rounded,
            F16 => ActType::F16Rounded,
            Q4_0 | Q5_0 | Q8_0 | IQ4_NL | MXFP4 | NVFP4 | Q1_0 | Q2_0 => ActType::Q8_0,
            Q4_1 | Q5_1 => ActType::Q8_1,
            Q2_K | Q3_K | Q4_K | Q5_K | Q6_K | IQ4_XS | TQ1_0 | TQ2_0 | IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S
            | IQ1_S | IQ1_M => ActType::Q8K,
            _ => return None,
        })
    }

    /// Elements per block.
    pub fn block_size(self) -> usize {
        match self {
            ActType::F32 | ActType::F16Rounded | ActType::Bf16Rounded => 1,
            ActType::Q8_0 | ActType::Q8_1 => QK,
            ActType::Q8K => QK_K,
        }
    }

    /// Bytes of an activation row of `n` elements (`n` a multiple of the
    /// block size).
    pub fn row_bytes(self, n: usize) -> usize {
        match self {
            ActType::F32 => 4 * n,
            ActType::Bf16Rounded => super::ggml_paths::tinyblas_bf16::act_row_bytes(n),
            ActType::F16Rounded => 6 * n,
            ActType::Q8_0 => n / QK * 34,
            ActType::Q8_1 => n / QK * 36,
            ActType::Q8K => n / QK_K * 292,
        }
    }
}

/// `out[t] = W_row · act[t]` for `t < out.len()`, where `act[t]` starts at
/// byte `t * a_stride` of `a`. Kernels walk the row once per group of a few
/// tokens, reusing each unpacked weight block across the group. Activation
/// quants must lie in -127..=127, as the quantizers here write them (the SIMD
/// sign trick would misread -128: a wrong number, not a memory error).
///
/// # Safety
/// `n` is a multiple of the weight block size (and of 256 for Q8_K
/// activations), `w.len() >= row_size(n)`, `out.len() >= 1`,
/// `a.len() >= (out.len() - 1) * a_stride + act.row_bytes(n)`, and the CPU
/// has the features of the set the kernel belongs to.
pub type TileFn = unsafe fn(n: usize, w: &[u8], a: &[u8], a_stride: usize, out: &mut [f32]);

/// `out[r * out_stride + t] = W_r · act[t]` for `r < n_rows`, `t < nt`: a
/// block of weight rows (row `r` starts at byte `r * w_stride` of `w`)
/// against `nt` tokens (as [`TileFn`]), so that each activation load serves
/// several rows. Every output has the bits the set's [`TileFn`] for the same
/// type gives it (only the integer work is shared).
///
/// # Safety
/// As [`TileFn`] for each row (with `nt` for `out.len()`), `n_rows >= 1`,
/// `w.len() >= (n_rows - 1) * w_stride + row_size(n)`, and the kernel
/// asserts `out.len() >= (n_rows - 1) * out_stride + nt`.
pub type RowsFn = unsafe fn(
    n: usize,
    w: &[u8],
    w_stride: usize,
    n_rows: usize,
    a: &[u8],
    a_stride: usize,
    nt: usize,
    out: &mut [f32],
    out_stride: usize,
);

/// `out[t * out_stride + r] = W_r · act[t]` for `r < n_rows`, `t < nt`, the
/// weights read from their tiles (`ggml_paths::repack_tiles`, built at model
/// load) starting at row 0 of `tiles`: the bits of the set's [`TileFn`] of
/// the reference's path for that matrix (the repacked path). Token-major,
/// unlike [`RowsFn`]: a vector of the kernel holds 8 or 16 rows of one
/// token, which go to the matmul's `[token][row]` output in one store each
/// (no tile to transpose).
///
/// # Safety
/// As [`RowsFn`] for the weights and activations, with `n_rows` a multiple
/// of 8 and `tiles` holding those rows' groups (the kernel asserts the
/// lengths); `out_stride >= n_rows`, `out` valid for writes at every
/// `t * out_stride + r` above, and nothing else reads or writes those
/// elements during the call (other threads may own the elements between
/// them).
pub type TiledFn = unsafe fn(
    n: usize,
    tiles: &[u8],
    n_rows: usize,
    a: &[u8],
    a_stride: usize,
    nt: usize,
    out: *mut f32,
    out_stride: usize,
);

/// [`RowsFn`] writing the matmul's `[token][row]` output itself:
/// `out[t * out_stride + r] = W_r · act[t]` for `r < n_rows`, `t < nt`, with
/// the bits of the set's [`RowsFn`] for the same type and path (no tile to
/// transpose; for kernels whose tiles reduce several tokens of a row at once).
///
/// # Safety
/// As [`RowsFn`] for the weights and activations; `out_stride >= n_rows`,
/// `out` valid for writes at every `t * out_stride + r` above, and nothing
/// else reads or writes those elements during the call (other threads may
/// own the elements between them).
pub type TokenMajorRowsFn = unsafe fn(
    n: usize,
    w: &[u8],
    w_stride: usize,
    n_rows: usize,
    a: &[u8],
    a_stride: usize,
    nt: usize,
    out: *mut f32,
    out_stride: usize,
);

/// The output check every [`RowsFn`] makes (its contract's last clause).
/// (Only the x86-64 sets have row kernels yet.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn assert_rows_out(n_rows: usize, nt: usize, out_len: usize, out_stride: usize) {
    assert!(n_rows >= 1 && nt >= 1 && out_len >= (n_rows - 1) * out_stride + nt, "rows kernel: output too short");
}

/// For sets without row-block kernels.
pub(crate) fn no_rows(_: GgmlType) -> Option<RowsFn> {
    None
}

/// For sets without kernels over load-time tiles.
pub(crate) fn no_tiled(_: GgmlType) -> Option<TiledFn> {
    None
}

/// For sets without row-block kernels of the `ggml_paths` emulations.
pub(crate) fn no_ggml_rows(_: GgmlType, _: Path) -> Option<RowsFn> {
    None
}

/// For sets without token-major row-block kernels.
pub(crate) fn no_ggml_token_major(_: GgmlType, _: Path) -> Option<TokenMajorRowsFn> {
    None
}

/// Quantizes `x` (a multiple of the block size) into `out`
/// (`act.row_bytes(x.len())` bytes).
///
/// # Safety
/// The lengths are as stated and the CPU has the set's features.
pub type QuantFn = unsafe fn(x: &[f32], out: &mut [u8]);

/// The kernels of one instruction set.
pub struct KernelSet {
    /// "scalar", "avx2", "avx2-vnni", "neon", "neon-dotprod"
    pub name: &'static str,
    /// minfer's dot kernels (the 32-block ones follow `ggml_vec_dot`)
    pub(crate) tile: fn(GgmlType) -> Option<TileFn>,
    /// the emulations of the reference's other matmul paths (`ggml_paths`)
    pub(crate) ggml: fn(GgmlType, Path) -> Option<TileFn>,
    /// row-block versions of some `tile` kernels (same bits per output)
    pub(crate) rows: fn(GgmlType) -> Option<RowsFn>,
    /// row-block versions of some `ggml` emulations (same bits per output)
    pub(crate) ggml_rows: fn(GgmlType, Path) -> Option<RowsFn>,
    /// token-major versions of some `ggml_rows` kernels (same bits)
    pub(crate) ggml_token_major: fn(GgmlType, Path) -> Option<TokenMajorRowsFn>,
    /// kernels over weights interleaved at load (`repack_tiles`)
    pub(crate) tiled: fn(GgmlType) -> Option<TiledFn>,
    pub(crate) quant_q8_0: QuantFn,
    pub(crate) quant_q8_1: QuantFn,
    pub(crate) quant_q8_k: QuantFn,
}

impl KernelSet {
    /// Whether this set has a dot kernel for weight type `ty`.
    pub fn supports(&self, ty: GgmlType) -> bool {
        (self.tile)(ty).is_some()
    }

    /// The tile kernel for `ty` (callers uphold its safety contract).
    pub(crate) fn tile_fn(&self, ty: GgmlType) -> Result<TileFn> {
        (self.tile)(ty).ok_or_else(|| Error::invalid(format!("no dot kernel for weight type {ty}")))
    }

    /// The kernel over load-time tiles for a `rows`×`cols` matrix of type
    /// `ty`, where this set has one and the reference repacks the matrix
    /// (the model builds tiles only for such matrices).
    pub fn tiled_fn(&self, ty: GgmlType, rows: usize, cols: usize) -> Option<TiledFn> {
        super::ggml_paths::repack_tiles::tiles_bytes(ty, rows, cols)?;
        (path(ty, rows, 1) == Some(Path::Repack)).then_some(())?;
        (self.tiled)(ty)
    }

    /// The kernel the matmul runs for a `rows`-row matrix of type `ty` and
    /// `nt` activation rows: the emulation of the reference's path for that
    /// shape where it has one (`ggml_paths::path`), else `tile_fn`. Called
    /// with `out.len() == nt`, as the repack emulation tells its gemm rows
    /// from its gemv rows by position.
    pub(crate) fn matmul_fn(&self, m: Mat, nt: usize) -> Result<TileFn> {
        if let Some(f) = path_of(m, nt).and_then(|p| (self.ggml)(m.ty, p)) {
            return Ok(f);
        }
        self.tile_fn(m.ty)
    }

    /// A row-block kernel giving the bits of `matmul_fn(ty, rows, nt)`, where
    /// the set has one: a `ggml_rows` kernel where the reference's path is
    /// emulated, else a `rows` kernel for the plain tile kernel.
    /// Not below 8 tokens: there the weight stream bounds the product, and
    /// two rows read at once ran decodes slower than one row after another.
    /// F16 and BF16 weights are the exception: the F16 tile kernel widens
    /// each weight row into a scratch row first, which the row-block kernel
    /// avoids; the BF16 one runs the reference's `vdpbf16ps` itself where
    /// the tile kernels emulate it.
    pub(crate) fn matmul_rows_fn(&self, m: Mat, nt: usize) -> Option<RowsFn> {
        let ty = m.ty;
        let p = path_of(m, nt).filter(|&p| (self.ggml)(ty, p).is_some());
        if nt < 8 && !matches!(p, Some(Path::TinyBlasF16 | Path::VecDotF16 | Path::TinyBlasBf16 | Path::VecDotBf16)) {
            return None;
        }
        match p {
            Some(p) => (self.ggml_rows)(ty, p),
            None => (self.rows)(ty),
        }
    }

    /// A row-block kernel giving, for one token per call, the bits of
    /// `matmul_fn(ty, rows, 1)`, where the set has one: the plain `rows`
    /// kernel where the reference runs the type's `ggml_vec_dot`, the F16
    /// and BF16 `ggml_vec_dot` ones, the repacked types' gemv. For an expert's product
    /// (`matmul_experts_with`), token after token over a block of rows.
    pub(crate) fn one_row_rows_fn(&self, m: Mat) -> Option<RowsFn> {
        let ty = m.ty;
        match path_of(m, 1) {
            None => (self.rows)(ty),
            // (the repacked types' gemv: one token per call is never a gemm)
            Some(p @ (Path::VecDotF16 | Path::VecDotBf16 | Path::Repack)) => (self.ggml_rows)(ty, p),
            _ => None,
        }
    }

    /// A token-major version of `matmul_rows_fn(ty, rows, nt)` (the same
    /// bits, written straight into the matmul's output), where the set has
    /// one: F16 prefills on AVX-512 and on plain AVX2.
    pub(crate) fn matmul_token_major_fn(&self, m: Mat, nt: usize) -> Option<TokenMajorRowsFn> {
        self.matmul_rows_fn(m, nt)?;
        (self.ggml_token_major)(m.ty, path_of(m, nt)?)
    }

    /// A row-block kernel for one token that interleaves the rows it is
    /// given (the decode's stream segments, `matmul.rs`: one `vfmadd` chain
    /// per row, so a row alone waits on its latency every block), where
    /// this set has one: the Q8_0, Q5_0, Q4_1 and Q5_1 kernels of the x86 sets,
    /// whose one-token product is their plain tile kernel, and the F16 and
    /// BF16 ggml_vec_dot ones (on AVX-512 their rows' loads in flight
    /// together, one activation conversion for all; the AVX2 F16 one takes
    /// the rows one by one). Gives the bits of `matmul_fn(ty, rows, 1)`.
    /// With one, the types of less than a byte per weight are read as
    /// several streams too (`decode_streams`).
    /// (4 adjacent rows per call ran decodes slower than one row at a time;
    /// the segments' rows, far apart, run faster.)
    pub(crate) fn decode_rows_fn(&self, m: Mat) -> Option<RowsFn> {
        let ty = m.ty;
        match path_of(m, 1) {
            None if matches!(ty, GgmlType::Q8_0 | GgmlType::Q5_0 | GgmlType::Q4_1 | GgmlType::Q5_1) => (self.rows)(ty),
            // (the ternary types', Q1_0's and NVFP4's vec_dot: 4 rows per
            // activation load)
            Some(Path::VecDot)
                if matches!(ty, GgmlType::TQ1_0 | GgmlType::TQ2_0 | GgmlType::Q1_0 | GgmlType::NVFP4) =>
            {
                (self.rows)(ty)
            }
            Some(Path::VecDotF16 | Path::VecDotBf16) => self.matmul_rows_fn(m, 1),
            _ => None,
        }
    }

    /// Checked matmul kernel of a `rows`-row matrix for `out.len()`
    /// activation rows (see `matmul_fn`): `out[t] = dot(w, act row t)` as the
    /// reference's matmul of that shape computes it.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_tile(
        &self,
        ty: GgmlType,
        rows: usize,
        n: usize,
        w: &[u8],
        a: &[u8],
        a_stride: usize,
        out: &mut [f32],
    ) -> Result<()> {
        self.run_checked(self.matmul_fn(Mat { ty, rows, repacked: true }, out.len())?, ty, n, w, a, a_stride, out)
    }

    /// Checked tile dot: `out[t] = dot(w, act row t)`, rows `a_stride` bytes
    /// apart in `a`.
    pub fn dot_tile(&self, ty: GgmlType, n: usize, w: &[u8], a: &[u8], a_stride: usize, out: &mut [f32]) -> Result<()> {
        self.run_checked(self.tile_fn(ty)?, ty, n, w, a, a_stride, out)
    }

    /// Runs this set's kernel `f` for weight type `ty` after checking the
    /// shapes against its contract.
    #[allow(clippy::too_many_arguments)]
    fn run_checked(
        &self,
        f: TileFn,
        ty: GgmlType,
        n: usize,
        w: &[u8],
        a: &[u8],
        a_stride: usize,
        out: &mut [f32],
    ) -> Result<()> {
        let act = ActType::for_weight(ty).ok_or_else(|| Error::invalid("no activation type"))?;
        check_dot_shapes(ty, act, n, w.len(), a.len(), a_stride, out.len())?;
        // SAFETY: the shapes were checked above; `self` (whose kernel `f` is)
        // is only ever built for a CPU that has its features (see
        // `available_sets`).
        unsafe { f(n, w, a, a_stride, out) };
        Ok(())
    }

    /// Checked dot of one weight row with one activation row.
    pub fn dot(&self, ty: GgmlType, n: usize, w: &[u8], a: &[u8]) -> Result<f32> {
        let mut out = [0f32];
        self.dot_tile(ty, n, w, a, 0, &mut out)?;
        Ok(out[0])
    }

    /// Checked activation quantizer for `act` (`F32` copies the bytes).
    pub fn quantize_act(&self, act: ActType, x: &[f32], out: &mut [u8]) -> Result<()> {
        if !x.len().is_multiple_of(act.block_size()) || out.len() != act.row_bytes(x.len()) {
            return Err(Error::invalid(format!("quantize_act {act:?}: {} elements into {} bytes", x.len(), out.len())));
        }
        let f = match act {
            ActType::F32 => {
                crate::quant::float::quantize_row_f32(x, out);
                return Ok(());
            }
            ActType::F16Rounded => {
                super::ggml_paths::tinyblas_f16::round_act_row(x, out);
                return Ok(());
            }
            ActType::Bf16Rounded => {
                super::ggml_paths::tinyblas_bf16::round_act_row(x, out);
                return Ok(());
            }
            ActType::Q8_0 => self.quant_q8_0,
            ActType::Q8_1 => self.quant_q8_1,
            ActType::Q8K => self.quant_q8_k,
        };
        // SAFETY: lengths checked above; the set matches this CPU.
        unsafe { f(x, out) };
        Ok(())
    }
}

pub(crate) fn check_dot_shapes(
    ty: GgmlType,
    act: ActType,
    n: usize,
    w_len: usize,
    a_len: usize,
    a_stride: usize,
    nt: usize,
) -> Result<()> {
    let bad = |what: String| Err(Error::invalid(format!("dot {ty}: {what}")));
    if nt == 0 {
        return bad("no tokens".into());
    }
    if !n.is_multiple_of(ty.block_size()) || !n.is_multiple_of(act.block_size()) {
        return bad(format!("{n} elements is not a multiple of the block size"));
    }
    let w_need = n / ty.block_size() * ty.type_size();
    if w_len < w_need {
        return bad(format!("weight row has {w_len} bytes, needs {w_need}"));
    }
    let a_row = act.row_bytes(n);
    if nt > 1 && a_stride < a_row {
        return bad(format!("activation stride {a_stride} < row bytes {a_row}"));
    }
    let a_need = (nt - 1)
        .checked_mul(a_stride)
        .and_then(|v| v.checked_add(a_row))
        .ok_or_else(|| Error::invalid("activation size overflows"))?;
    if a_len < a_need {
        return bad(format!("activations have {a_len} bytes, need {a_need}"));
    }
    Ok(())
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Every kernel set this CPU can run, scalar first.
pub fn available_sets() -> Vec<&'static KernelSet> {
    #[allow(unused_mut)]
    let mut sets: Vec<&'static KernelSet> = vec![&super::scalar::SET];
    #[cfg(target_arch = "x86_64")]
    if super::x86_avx2::cpu_ok() {
        sets.push(&super::x86_avx2::SET);
    }
    #[cfg(target_arch = "x86_64")]
    if super::x86_avx2::cpu_ok_vnni() {
        sets.push(&super::x86_avx2::SET_VNNI);
    }
    #[cfg(target_arch = "aarch64")]
    {
        if super::aarch64_neon::cpu_ok() {
            sets.push(&super::aarch64_neon::SET);
        }
        if super::aarch64_neon::cpu_ok_dotprod() {
            sets.push(&super::aarch64_neon::SET_DOTPROD);
        }
    }
    sets
}

/// The kernel set used by the matmul: the best this CPU runs, chosen once
/// (`MINFER_NO_AVX2=1` / `MINFER_NO_NEON=1` force scalar; `MINFER_NO_VNNI=1`
/// keeps the plain AVX2 set on a CPU with AVX-512 VNNI).
pub fn kernels() -> &'static KernelSet {
    static CHOSEN: OnceLock<&'static KernelSet> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        let sets = available_sets();
        let forced_scalar = (cfg!(target_arch = "x86_64") && env_set("MINFER_NO_AVX2"))
            || (cfg!(target_arch = "aarch64") && env_set("MINFER_NO_NEON"));
        if forced_scalar {
            sets[0]
        } else if env_set("MINFER_NO_VNNI") {
            // A/B runs: the plain AVX2 set (the same results)
            sets.iter().rev().find(|s| s.name != "avx2-vnni").copied().unwrap_or(sets[0])
        } else {
            sets[sets.len() - 1]
        }
    })
}
