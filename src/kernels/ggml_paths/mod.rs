//! Emulations of the reference's (ggml-cpu's) matmul paths that do not run
//! the 32-block `ggml_vec_dot` kernels, so that minfer's products equal the
//! reference's bit for bit.
//!
//! The reference is ggml-cpu as built for llama.cpp 0c1e570 on an x86-64 CPU
//! with AVX2, FMA and AVX-512 (F, BW, DQ, VL, VNNI), `-march=native`. For a
//! weight matrix of `rows` rows and a product with `nt` activation rows it
//! runs ([`path`]):
//!
//! - [`Path::Repack`]: Q4_0, IQ4_NL, Q4_K (and Q2_K, an AVX-512-only choice)
//!   with `rows % 8 == 0` are repacked at load into 8-row interleaved blocks
//!   (`ggml-cpu/repack.cpp`, `ggml_repack_get_optimal_repack_type`); their
//!   products run `ggml_gemm_*_8x8` on the first `nt - nt % 4` activation
//!   rows and `ggml_gemv_*_8x8` on the rest (`forward_mul_mat_one_chunk`).
//!   See `repack.rs`.
//! - [`Path::Tiled`]: the other k-quants and IQ4_XS with `nt >= 8` run
//!   `ggml_compute_forward_mul_mat_tiled` (`ggml-cpu/tiled/`). See `tiled.rs`.
//! - [`Path::VecDot`]: the same types with `nt < 8` run the type's
//!   `ggml_vec_dot_*_q8_K` (`ggml-cpu/arch/x86/quants.c`, AVX2 code), one
//!   output at a time; so does IQ4_NL (not repacked) for one row
//!   (`ggml_vec_dot_iq4_nl_q8_0`). See `vec_dot_k.rs`. MXFP4 not repacked,
//!   NVFP4 (`vec_dot_nvfp4.rs`), TQ1_0/TQ2_0 (`vec_dot_tq.rs`) and Q1_0/Q2_0 (`vec_dot_q1q2.rs`) take
//!   their vec_dot at every token count. The IQ1–IQ3 types take the tiled
//!   path from 8 rows as the k-quants, their vec_dot (`vec_dot_iq.rs`) below.
//!
//! - [`Path::TinyBlasF32`] / [`Path::VecDotF32`]: F32 weights; llamafile's
//!   tinyBLAS<16> from 2 activation rows when `rows % 4 == 0` (and
//!   `cols % 16 == 0`), else `ggml_vec_dot_f32`. See `tinyblas_f32.rs`.
//! - [`Path::TinyBlasBf16`] / [`Path::VecDotBf16`]: BF16 weights, activations
//!   rounded to bf16; llamafile's AVX512_BF16 tinyBLAS<32> (`vdpbf16ps`)
//!   from 2 activation rows when `rows % 4 == 0` (and `cols % 32 == 0`),
//!   else `ggml_vec_dot_bf16`. See `tinyblas_bf16.rs`.
//! - [`Path::TinyBlasF16`] / [`Path::VecDotF16`]: F16 weights, activations
//!   rounded to f16; llamafile's tinyBLAS<16> from 2 activation rows when
//!   `rows % 4 == 0` (and `cols % 16 == 0`), else `ggml_vec_dot_f16`. See
//!   `tinyblas_f16.rs`.
//!
//! Every other case (the 32-block types not repacked) keeps
//! the kernels of `x86_avx2.rs` / `scalar.rs`; the AVX2 ones follow
//! `ggml_vec_dot` and, from 2 rows, llamafile's tinyBLAS (`llamafile_sgemm`,
//! which the reference runs for Q8_0, Q4_0, Q5_0, IQ4_NL there).
//!
//! Each emulation does, per output element, the reference's float operations
//! in the reference's order (products of exact integer sums, `f32::mul_add`
//! where the reference fuses); the integer parts are exact in both, so any
//! way of computing them is allowed. Each has a scalar definition and, on
//! x86-64, an AVX2 version that must give the same bits (tested); the NEON
//! sets have their own for the repacked 32-block types, the tiled
//! k-quants and the vec_dots of the table, ternary, IQ1–IQ3, Q1_0, Q2_0
//! and NVFP4 types (`aarch64_neon.rs`, `aarch64_iq.rs`,
//! `aarch64_lowbit.rs`; the same bits, tested), else use the scalar
//! definitions.
//!
//! Activations: the reference quantizes groups of 4 rows for the repacked
//! kernels (`ggml_quantize_mat_q8_0_4x8`, `_q8_K_4x8`). The Q8_0 one writes
//! the values of the row quantizer; the Q8_K one may pick the opposite sign
//! for the scale of a block whose largest magnitude occurs with both signs,
//! which negates that block's quants, bsums and scale together and leaves
//! every product below unchanged (each is odd in the activation block), so
//! the per-row quantizers serve for all paths.

pub mod repack;
#[cfg(target_arch = "x86_64")]
pub mod repack_rows;
pub mod repack_tiles;
pub mod repack_tiles_k;
pub mod repack_tiles_wide;
pub mod tiled;
#[cfg(target_arch = "x86_64")]
pub mod tiled_vnni;
pub mod tinyblas_bf16;
pub mod tinyblas_f16;
pub mod tinyblas_f32;
pub mod vec_dot_iq;
pub mod vec_dot_k;
pub mod vec_dot_nvfp4;
pub mod vec_dot_q1q2;
pub mod vec_dot_tq;

#[cfg(test)]
mod tests;

use super::dispatch::TileFn;
#[cfg(target_arch = "x86_64")]
use super::dispatch::{RowsFn, TokenMajorRowsFn};
use crate::ggml_type::GgmlType;

/// Which of the reference's matmul paths a product runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// repacked weights: gemm on rows in groups of 4, gemv on the leftovers
    Repack,
    /// the tiled k-quant matmul (8 or more activation rows)
    Tiled,
    /// the type's `ggml_vec_dot_*_q8_K` (fewer than 8 activation rows)
    VecDot,
    /// F32 weights: llamafile's tinyBLAS<16>
    TinyBlasF32,
    /// F32 weights: `ggml_vec_dot_f32`
    VecDotF32,
    /// BF16 weights: llamafile's tinyBLAS<32> with `vdpbf16ps`, on
    /// bf16-rounded activations
    TinyBlasBf16,
    /// BF16 weights: `ggml_vec_dot_bf16` on bf16-rounded activations
    VecDotBf16,
    /// F16 weights: llamafile's tinyBLAS<16> on f16-rounded activations
    TinyBlasF16,
    /// F16 weights: `ggml_vec_dot_f16` on f16-rounded activations
    VecDotF16,
}

/// Activation rows from which the reference takes the tiled path
/// (`ggml_tiled_min_batch`).
pub const TILED_MIN_ROWS: usize = 8;

/// What picks a product's path besides the activation rows: the matrix's
/// type and rows, and whether the reference repacks it (a model's weights,
/// in the CPU's extra buffer type; not a LoRA adapter's tensors, which the
/// reference keeps in a plain CPU buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mat {
    pub ty: GgmlType,
    pub rows: usize,
    pub repacked: bool,
}

/// The reference's path for a product of a `rows`-row model matrix of type
/// `ty` with `nt` activation rows, or `None` where it runs the 32-block
/// `ggml_vec_dot` kernels (or float ones).
pub fn path(ty: GgmlType, rows: usize, nt: usize) -> Option<Path> {
    path_of(Mat { ty, rows, repacked: true }, nt)
}

/// [`path`] for any matrix: one the reference does not repack takes the
/// path of its type and shape otherwise.
pub fn path_of(m: Mat, nt: usize) -> Option<Path> {
    use GgmlType::*;
    let Mat { ty, rows, repacked } = m;
    if repacked && rows.is_multiple_of(8) && matches!(ty, Q4_0 | IQ4_NL | MXFP4 | Q4_K | Q2_K) {
        return Some(Path::Repack);
    }
    match ty {
        // (llamafile's tinyBLAS has no MXFP4: ggml_vec_dot_mxfp4_q8_0 for
        // every row count; nor do it or the tiled path take the ternary
        // types)
        MXFP4 | NVFP4 | TQ1_0 | TQ2_0 | Q1_0 | Q2_0 => Some(Path::VecDot),
        // one row: ggml_vec_dot_iq4_nl_q8_0 (two accumulators); from 2 rows
        // llamafile's tinyBLAS, whose order minfer's AVX2 kernel follows
        IQ4_NL if nt == 1 => Some(Path::VecDot),
        // the column conditions (k % 16, k % 32) are checked by the kernels
        F32 => Some(if tinyblas_f32::runs(rows, nt, 0) { Path::TinyBlasF32 } else { Path::VecDotF32 }),
        BF16 => Some(if tinyblas_bf16::runs(rows, nt, 0) { Path::TinyBlasBf16 } else { Path::VecDotBf16 }),
        // the column condition (cols % 16) is checked by the kernel
        F16 => Some(if tinyblas_f16::runs(rows, nt, 0) { Path::TinyBlasF16 } else { Path::VecDotF16 }),
        Q2_K | Q3_K | Q4_K | Q5_K | Q6_K | IQ4_XS | IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M => {
            Some(if nt >= TILED_MIN_ROWS { Path::Tiled } else { Path::VecDot })
        }
        _ => None,
    }
}

/// The entry of `fns` (in the order Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS:
/// the Q8_K-paired types) for `ty`.
pub(crate) fn k_entry(ty: GgmlType, fns: [TileFn; 6]) -> Option<TileFn> {
    use GgmlType::*;
    let i = [Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS].iter().position(|&t| t == ty)?;
    Some(fns[i])
}

/// The scalar emulation of `path` for `ty`, if there is one.
pub fn scalar_tile(ty: GgmlType, path: Path) -> Option<TileFn> {
    match path {
        Path::Repack => repack::scalar_tile(ty),
        Path::Tiled => tiled::scalar_tile(ty),
        Path::VecDot => vec_dot_k::scalar_tile(ty),
        Path::TinyBlasF32 => tinyblas_f32::scalar_tile(ty, tinyblas_f32::FloatPath::TinyBlas),
        Path::VecDotF32 => tinyblas_f32::scalar_tile(ty, tinyblas_f32::FloatPath::VecDot),
        Path::TinyBlasBf16 => tinyblas_bf16::scalar_tile(ty, tinyblas_f32::FloatPath::TinyBlas),
        Path::VecDotBf16 => tinyblas_bf16::scalar_tile(ty, tinyblas_f32::FloatPath::VecDot),
        Path::TinyBlasF16 => tinyblas_f16::tile_fn(ty, tinyblas_f16::F16Path::TinyBlas),
        Path::VecDotF16 => tinyblas_f16::tile_fn(ty, tinyblas_f16::F16Path::VecDot),
    }
}

/// The AVX2 emulation of `path` for `ty`, if there is one.
#[cfg(target_arch = "x86_64")]
pub fn avx2_tile(ty: GgmlType, path: Path) -> Option<TileFn> {
    match path {
        Path::Repack => repack::avx2_tile(ty),
        Path::Tiled => tiled::avx2_tile(ty),
        Path::VecDot => vec_dot_k::avx2_tile(ty),
        Path::TinyBlasF32 => tinyblas_f32::avx2_tile(ty, tinyblas_f32::FloatPath::TinyBlas),
        Path::VecDotF32 => tinyblas_f32::avx2_tile(ty, tinyblas_f32::FloatPath::VecDot),
        Path::TinyBlasBf16 => tinyblas_bf16::avx2_tile(ty, tinyblas_f32::FloatPath::TinyBlas),
        Path::VecDotBf16 => tinyblas_bf16::avx2_tile(ty, tinyblas_f32::FloatPath::VecDot),
        Path::TinyBlasF16 | Path::VecDotF16 => scalar_tile(ty, path),
    }
}

/// The AVX-512 VNNI emulation of `path` for `ty`, if there is one: the
/// ternary types' and Q1_0's `vpdpbusd` dots, else [`avx2_tile`]'s.
#[cfg(target_arch = "x86_64")]
pub fn vnni_tile(ty: GgmlType, path: Path) -> Option<TileFn> {
    match path {
        Path::VecDot => {
            vec_dot_tq::vnni_tile(ty).or_else(|| vec_dot_q1q2::vnni_tile(ty)).or_else(|| avx2_tile(ty, path))
        }
        _ => avx2_tile(ty, path),
    }
}

/// The row-block kernel on plain AVX2 (+FMA, F16C) of `path` for `ty`, if
/// there is one (the `avx2` set's `ggml_rows`; the same bits as the scalar
/// emulation of `path`): 8 rows × 8 tokens on the tiled one.
#[cfg(target_arch = "x86_64")]
pub fn avx2_rows(ty: GgmlType, path: Path) -> Option<RowsFn> {
    match path {
        Path::TinyBlasF16 => tinyblas_f16::avx2_rows(ty, tinyblas_f16::F16Path::TinyBlas),
        Path::VecDotF16 => tinyblas_f16::avx2_rows(ty, tinyblas_f16::F16Path::VecDot),
        Path::Tiled => tiled_vnni::avx2_rows(ty),
        Path::TinyBlasBf16 => tinyblas_bf16::avx2_rows(ty, tinyblas_f32::FloatPath::TinyBlas),
        Path::VecDotBf16 => tinyblas_bf16::avx2_rows(ty, tinyblas_f32::FloatPath::VecDot),
        _ => None,
    }
}

/// The token-major row-block kernel (plain AVX2) of `path` for `ty`, if
/// there is one: F16's tinyBLAS (`tinyblas_f16::avx2_token_major`).
#[cfg(target_arch = "x86_64")]
pub fn avx2_token_major(ty: GgmlType, path: Path) -> Option<TokenMajorRowsFn> {
    match path {
        Path::TinyBlasF16 => tinyblas_f16::avx2_token_major(ty),
        _ => None,
    }
}

/// The token-major row-block kernel (AVX-512) of `path` for `ty`, if there
/// is one: F16's tinyBLAS (`tinyblas_f16::avx512_token_major`).
#[cfg(target_arch = "x86_64")]
pub fn vnni_token_major(ty: GgmlType, path: Path) -> Option<TokenMajorRowsFn> {
    match path {
        Path::TinyBlasF16 => tinyblas_f16::avx512_token_major(ty),
        Path::TinyBlasF32 => tinyblas_f32::avx512_token_major(ty),
        _ => None,
    }
}

/// The row-block kernel (AVX-512 VNNI) of `path` for `ty`, if there is one:
/// 8 rows per step on the repacked path, 8 rows × 16 tokens on the tiled one;
/// F16 weights on AVX-512F (`tinyblas_f16::avx512_rows`).
#[cfg(target_arch = "x86_64")]
pub fn vnni_rows(ty: GgmlType, path: Path) -> Option<RowsFn> {
    match path {
        Path::Repack => repack_rows::vnni_rows(ty),
        Path::Tiled => tiled_vnni::vnni_rows(ty),
        Path::TinyBlasF16 => tinyblas_f16::avx512_rows(ty, tinyblas_f16::F16Path::TinyBlas),
        Path::VecDotF16 => tinyblas_f16::avx512_rows(ty, tinyblas_f16::F16Path::VecDot),
        Path::TinyBlasF32 => tinyblas_f32::avx512_rows(ty),
        Path::TinyBlasBf16 => tinyblas_bf16::avx512_rows(ty, tinyblas_f32::FloatPath::TinyBlas),
        Path::VecDotBf16 => tinyblas_bf16::avx512_rows(ty, tinyblas_f32::FloatPath::VecDot),
        _ => None,
    }
}
