//! Compute kernels: dot products of quantized weights with quantized
//! activations, activation quantizers, the matmul and its thread pool.
//!
//! # API (what the forward pass calls)
//!
//! ```ignore
//! use crate::kernels::{ThreadPool, Weights, matmul, matmul_siblings};
//! let pool = ThreadPool::new(n_threads)?;                 // once per context
//! // A weight tensor straight from the GGUF mapping: rows of `cols`
//! // elements (ne0 = cols, ne1 = rows), any alignment.
//! let wq = Weights::new(bytes, GgmlType::Q4_K, n_rows, n_cols)?;
//! matmul(&pool, &wq, &x, n_tokens, &mut y)?;            // x: [nt][cols], y: [nt][rows]
//! // Projections that read the same input: quantized once, one submission.
//! matmul_siblings(&pool, &[wq, wk, wv], &x, nt, &mut [&mut q, &mut k, &mut v])?;
//! ```
//!
//! - `y[t][o] = W[o] · x[t]`, with `x` quantized to the weight type's
//!   activation format ([`ActType`]: Q8_0, Q8_1, Q8_K, or f32 for float
//!   weights). Integer dots within a block, scales folded once per block.
//! - Shapes: `cols` must be a multiple of the weight block size, and of 256
//!   for the Q8_K-paired types (k-quants, IQ4_XS), as in ggml; every error is
//!   an `Err`, never a panic.
//! - To quantize once and multiply several times by hand:
//!   `Activations::quantize` then `matmul_quantized_with` (what
//!   `matmul_siblings` does).
//! - Results are bit-identical for any thread count. Like the reference's,
//!   they may depend on the matrix's row count and on `nt`: the kernel is the
//!   emulation of the path the reference takes for that shape
//!   (`ggml_paths`: repacked gemm/gemv, tiled k-quant matmul, k-quant
//!   vec_dot, llamafile's tinyBLAS and `ggml_vec_dot_f32`/`_bf16` for F32
//!   and BF16 weights), else the `ggml_vec_dot`-order kernel of the type.
//! - The kernel set (scalar, AVX2+FMA+F16C, the same with AVX-512 VNNI,
//!   NEON, NEON+dotprod) is chosen once at run time ([`kernels`]);
//!   `MINFER_NO_AVX2=1` / `MINFER_NO_NEON=1` force scalar, `MINFER_NO_VNNI=1`
//!   plain AVX2. Every SIMD kernel has its scalar definition in
//!   `scalar.rs` and is tested against it.
//!
//! Files: `dispatch.rs` (kernel sets, detection), `scalar.rs`,
//! `x86_avx2.rs`, `aarch64_neon.rs` (with `aarch64_iq.rs`,
//! `aarch64_lowbit.rs`), `ggml_paths/` (the reference's
//! repacked, tiled and k-quant vec_dot paths), `matmul.rs`, `pool.rs`,
//! `aligned.rs` (the cache-line-aligned buffer of activations and panels).

#[cfg(target_arch = "aarch64")]
mod aarch64_iq;
#[cfg(target_arch = "aarch64")]
mod aarch64_lowbit;
#[cfg(target_arch = "aarch64")]
pub mod aarch64_neon;
pub mod aligned;
pub mod dispatch;
pub mod ggml_paths;
pub mod matmul;
pub mod pool;
pub mod scalar;
pub mod vecf;
#[cfg(target_arch = "x86_64")]
pub mod x86_avx2;

#[cfg(test)]
mod tests;

pub use dispatch::{available_sets, kernels, ActType, KernelSet};
pub use matmul::{
    check_type, matmul, matmul_experts_with, matmul_quantized_with, matmul_siblings, matmul_siblings_reusing,
    matmul_siblings_with, matmul_with, Activations, Weights,
};
pub use pool::ThreadPool;
