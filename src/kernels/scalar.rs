//! The scalar kernels: the definition every SIMD kernel is tested against.
//!
//! Dot products are integer within a block and fold the scales in once per
//! block, in f32, accumulated in block order:
//! - 32-blocks × Q8_0: `acc += (dw·da) · Σ qw·qa`
//! - 32-blocks with a minimum × Q8_1: `acc += (dw·da) · Σ qw·qa + mw·sa`
//! - super-blocks × Q8_K: the reference's `ggml_vec_dot_*_q8_K` lane order
//!   (`ggml_paths::vec_dot_k`, the dot the reference's matmul runs below 8
//!   rows); `tile_x_q8_k` (exact integer sums of `KBlock`s, folded by a
//!   `KFold`) serves the tiled-matmul emulation
//! - F32/F16/BF16 × f32: `acc += w·a`, element by element.
//!
//! The activation quantizers: Q8_0 and Q8_1 are the reference CPU backend's
//! x86 quantizers (`quant::q8_0::quantize_row_act`, `q8_1::quantize_row_act`:
//! scale 127/amax, half-to-even rounding, saturating packs), so the int8 dots
//! see the reference's inputs; Q8_K is ggml's `quantize_row_q8_K_ref`, which
//! the backend also uses.

use super::dispatch::{KernelSet, TileFn};
use crate::ggml_type::GgmlType;
use crate::quant::k_helpers::KBlock;
use crate::quant::{
    as_blocks, as_blocks_mut, bf16_to_f32, f16_to_f32, iq4, q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, q8_k, Block, QK, QK_K,
};

pub(crate) static SET: KernelSet = KernelSet {
    name: "scalar",
    tile,
    ggml: super::ggml_paths::scalar_tile,
    rows: super::dispatch::no_rows,
    ggml_rows: super::dispatch::no_ggml_rows,
    ggml_token_major: super::dispatch::no_ggml_token_major,
    tiled: super::dispatch::no_tiled,
    quant_q8_0,
    quant_q8_1,
    quant_q8_k,
};

fn tile(ty: GgmlType) -> Option<TileFn> {
    use GgmlType::*;
    Some(match ty {
        F32 => tile_f32,
        F16 => tile_f16,
        BF16 => tile_bf16,
        Q4_0 => tile_q4_0,
        Q5_0 => tile_q5_0,
        Q8_0 => tile_q8_0,
        IQ4_NL => tile_iq4_nl,
        Q4_1 => tile_q4_1,
        Q5_1 => tile_q5_1,
        Q2_K | Q3_K | Q4_K | Q5_K | Q6_K | IQ4_XS | MXFP4 | NVFP4 | TQ1_0 | TQ2_0 | IQ2_XXS | IQ2_XS | IQ2_S
        | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M | Q1_0 | Q2_0 => return super::ggml_paths::vec_dot_k::scalar_tile(ty),
        _ => return None,
    })
}

fn quant_q8_0(x: &[f32], out: &mut [u8]) {
    q8_0::quantize_row_act(x, as_blocks_mut(out));
}
fn quant_q8_1(x: &[f32], out: &mut [u8]) {
    q8_1::quantize_row_act(x, as_blocks_mut(out));
}
fn quant_q8_k(x: &[f32], out: &mut [u8]) {
    q8_k::quantize_row(x, as_blocks_mut(out));
}

/// Activation row `t` as blocks.
#[inline]
pub(crate) fn act_row<B: Block>(a: &[u8], a_stride: usize, t: usize, nb: usize) -> &[B] {
    let start = t * a_stride;
    &as_blocks::<B>(&a[start..start + nb * std::mem::size_of::<B>()])[..nb]
}

// --- 32-blocks × Q8_0

#[inline]
fn tile_x_q8_0<B: Block>(
    n: usize,
    w: &[u8],
    a: &[u8],
    a_stride: usize,
    out: &mut [f32],
    unpack: impl Fn(&B) -> ([i8; QK], f32),
) {
    let nb = n / QK;
    let wb = &as_blocks::<B>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<q8_0::BlockQ8_0>(a, a_stride, t, nb);
        let mut acc = 0.0f32;
        for (bw, ba) in wb.iter().zip(ab) {
            let (q, dw) = unpack(bw);
            let sumi: i32 = q.iter().zip(&ba.qs).map(|(&x, &y)| x as i32 * y as i8 as i32).sum();
            acc += (dw * f16_to_f32(ba.d)) * sumi as f32;
        }
        *o = acc;
    }
}

fn tile_q4_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_0(n, w, a, s, out, |b: &q4_0::BlockQ4_0| (b.unpack(), f16_to_f32(b.d)));
}
fn tile_q5_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_0(n, w, a, s, out, |b: &q5_0::BlockQ5_0| (b.unpack(), f16_to_f32(b.d)));
}
fn tile_q8_0(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_0(n, w, a, s, out, |b: &q8_0::BlockQ8_0| (b.qs.map(|v| v as i8), f16_to_f32(b.d)));
}
fn tile_iq4_nl(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_0(n, w, a, s, out, |b: &iq4::BlockIq4Nl| (b.unpack(), f16_to_f32(b.d)));
}

// --- 32-blocks with a minimum × Q8_1

#[inline]
fn tile_x_q8_1<B: Block>(
    n: usize,
    w: &[u8],
    a: &[u8],
    a_stride: usize,
    out: &mut [f32],
    unpack: impl Fn(&B) -> ([u8; QK], f32, f32),
) {
    let nb = n / QK;
    let wb = &as_blocks::<B>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<q8_1::BlockQ8_1>(a, a_stride, t, nb);
        let mut acc = 0.0f32;
        for (bw, ba) in wb.iter().zip(ab) {
            let (q, dw, mw) = unpack(bw);
            let sumi: i32 = q.iter().zip(&ba.qs).map(|(&x, &y)| x as i32 * y as i8 as i32).sum();
            acc += (dw * f16_to_f32(ba.d)) * sumi as f32 + mw * f16_to_f32(ba.s);
        }
        *o = acc;
    }
}

fn tile_q4_1(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_1(n, w, a, s, out, |b: &q4_1::BlockQ4_1| (b.unpack(), f16_to_f32(b.d), f16_to_f32(b.m)));
}
fn tile_q5_1(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_x_q8_1(n, w, a, s, out, |b: &q5_1::BlockQ5_1| (b.unpack(), f16_to_f32(b.d), f16_to_f32(b.m)));
}

// --- super-blocks × Q8_K

/// The integer part of a super-block dot: (Σ_g scales[g]·Σ q·a, Σ_g mins[g]·bsums[g]).
#[inline]
pub(crate) fn kblock_isums(k: &KBlock, a: &q8_k::BlockQ8K) -> (i32, i32) {
    let mut isum = 0i32;
    let mut imin = 0i32;
    for g in 0..16 {
        let s: i32 = (16 * g..16 * g + 16).map(|i| k.q[i] as i32 * a.qs[i] as i8 as i32).sum();
        isum += k.scales[g] as i32 * s;
        imin += k.mins[g] as i32 * a.bsum(g) as i32;
    }
    (isum, imin)
}

/// How a super-block's integer sums fold into an output's f32 accumulator:
/// `acc' = fold(acc, d, dmin, da, isum, imin)`. Every kernel set uses the same
/// fold for a given path, so all of them agree bit for bit.
pub(crate) trait KFold {
    fn fold(acc: f32, d: f32, dmin: f32, da: f32, isum: i32, imin: i32) -> f32;
}

/// Super-blocks × Q8_K with the integer sums of `kblock_isums`, folded by `F`.
#[inline]
pub(crate) fn tile_x_q8_k<B: Block, F: KFold>(
    n: usize,
    w: &[u8],
    a: &[u8],
    a_stride: usize,
    out: &mut [f32],
    unpack: impl Fn(&B) -> KBlock,
) {
    let nb = n / QK_K;
    let wb = &as_blocks::<B>(w)[..nb];
    for (t, o) in out.iter_mut().enumerate() {
        let ab = act_row::<q8_k::BlockQ8K>(a, a_stride, t, nb);
        let mut acc = 0.0f32;
        for (bw, ba) in wb.iter().zip(ab) {
            let k = unpack(bw);
            let (isum, imin) = kblock_isums(&k, ba);
            acc = F::fold(acc, k.d, k.dmin, ba.d(), isum, imin);
        }
        *o = acc;
    }
}

// --- float weights × f32

#[inline]
fn tile_float<const BYTES: usize>(
    n: usize,
    w: &[u8],
    a: &[u8],
    a_stride: usize,
    out: &mut [f32],
    load: impl Fn(&[u8]) -> f32,
) {
    for (t, o) in out.iter_mut().enumerate() {
        let ar = &a[t * a_stride..t * a_stride + 4 * n];
        let mut acc = 0.0f32;
        for (wb, ab) in w[..BYTES * n].chunks_exact(BYTES).zip(ar.chunks_exact(4)) {
            acc += load(wb) * f32::from_le_bytes([ab[0], ab[1], ab[2], ab[3]]);
        }
        *o = acc;
    }
}

fn tile_f32(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_float::<4>(n, w, a, s, out, |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
}
fn tile_f16(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_float::<2>(n, w, a, s, out, |b| f16_to_f32([b[0], b[1]]));
}
fn tile_bf16(n: usize, w: &[u8], a: &[u8], s: usize, out: &mut [f32]) {
    tile_float::<2>(n, w, a, s, out, |b| bf16_to_f32([b[0], b[1]]));
}
