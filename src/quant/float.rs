//! F32, F16 and BF16 rows (one element per "block"). F16 and BF16 round to
//! nearest even exactly as ggml's `ggml_fp32_to_fp16_row` /
//! `ggml_fp32_to_bf16_row`.

use super::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};

/// `src`: `[out.len()]` little-endian f32.
pub fn dequantize_row_f32(src: &[u8], out: &mut [f32]) {
    for (o, b) in out.iter_mut().zip(src.chunks_exact(4)) {
        *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
}

/// `src`: `[out.len()]` f16.
pub fn dequantize_row_f16(src: &[u8], out: &mut [f32]) {
    for (o, b) in out.iter_mut().zip(src.chunks_exact(2)) {
        *o = f16_to_f32([b[0], b[1]]);
    }
}

/// `src`: `[out.len()]` bf16.
pub fn dequantize_row_bf16(src: &[u8], out: &mut [f32]) {
    for (o, b) in out.iter_mut().zip(src.chunks_exact(2)) {
        *o = bf16_to_f32([b[0], b[1]]);
    }
}

pub fn quantize_row_f32(x: &[f32], out: &mut [u8]) {
    for (v, b) in x.iter().zip(out.chunks_exact_mut(4)) {
        b.copy_from_slice(&v.to_le_bytes());
    }
}

pub fn quantize_row_f16(x: &[f32], out: &mut [u8]) {
    for (v, b) in x.iter().zip(out.chunks_exact_mut(2)) {
        b.copy_from_slice(&f32_to_f16(*v));
    }
}

pub fn quantize_row_bf16(x: &[f32], out: &mut [u8]) {
    for (v, b) in x.iter().zip(out.chunks_exact_mut(2)) {
        b.copy_from_slice(&f32_to_bf16(*v));
    }
}
