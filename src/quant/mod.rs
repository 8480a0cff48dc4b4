//! Block formats of ggml's quantized types, byte-compatible with ggml.
//!
//! One file per block family. Each defines its block struct (`#[repr(C)]`,
//! only `u8` arrays inside, so alignment 1 and every bit pattern valid; a
//! compile-time assert pins its size to ggml's), `dequantize_row` and the
//! reference `quantize_row`, whose output bytes equal ggml's
//! `quantize_row_*_ref` on the same input (tested against committed goldens
//! made with the reference library: `scripts/make-quant-goldens.sh`).
//!
//! Rows are byte slices (`&[u8]`, any alignment) holding whole blocks, as they
//! sit in a GGUF mapping. The entry points here check lengths and return
//! `Err` on a mismatch; the per-family functions assume checked lengths.
//!
//! | type | block | file | activation type of its dot |
//! |---|---|---|---|
//! | F32, F16, BF16 | 1 | `float.rs` | f32 |
//! | Q4_0, Q4_1, Q5_0, Q5_1 | 32 | `q4_0.rs` … `q5_1.rs` | Q8_0 / Q8_1 |
//! | Q8_0, Q8_1 | 32 | `q8_0.rs`, `q8_1.rs` | Q8_0 (Q8_1 is activation-only) |
//! | Q2_K … Q6_K | 256 | `q2_k.rs` … `q6_k.rs` | Q8_K |
//! | Q8_K | 256 | `q8_k.rs` | activation-only |
//! | IQ4_NL, IQ4_XS | 32, 256 | `iq4.rs` | Q8_0, Q8_K |
//! | MXFP4 | 32 | `mxfp4.rs` | Q8_0 |
//! | NVFP4 | 64 | `nvfp4.rs` | Q8_0 |
//! | TQ1_0, TQ2_0 | 256 | `tq.rs` | Q8_K |
//! | Q1_0, Q2_0 | 128, 64 | `q1_0.rs`, `q2_0.rs` | Q8_0 |
//! | IQ2_XXS, IQ2_XS, IQ2_S | 256 | `iq2.rs` | Q8_K |
//! | IQ3_XXS, IQ3_S | 256 | `iq3.rs` | Q8_K |
//! | IQ1_S, IQ1_M | 256 | `iq1.rs` | Q8_K |
//!
//! The IQ1–IQ3 types are written only by [`quantize_chunk`]: their
//! quantizers (`iq1_quantize.rs`, `iq2_quantize.rs`, `iq3_quantize.rs`) search
//! the grids with an importance matrix, byte-identical to the reference's.

pub mod float;
pub mod iq1;
pub mod iq1_quantize;
pub mod iq2;
pub mod iq2_quantize;
pub mod iq3;
pub mod iq3_quantize;
pub mod iq4;
pub mod iq_expand;
pub mod iq_grids;
pub mod k_helpers;
pub mod mxfp4;
pub mod nvfp4;
pub mod q1_0;
pub mod q2_0;
pub mod q2_k;
pub mod q3_k;
pub mod q4_0;
pub mod q4_1;
pub mod q4_k;
pub mod q5_0;
pub mod q5_1;
pub mod q5_k;
pub mod q6_k;
pub mod q8_0;
pub mod q8_1;
pub mod q8_k;
pub mod tq;
pub mod validate;

#[cfg(test)]
pub(crate) mod tests;

pub use validate::validate_row_data;

use crate::ggml_type::GgmlType;
use crate::{Error, Result};

/// Elements per block of the 32-element families (QK4_0 … QK8_1, QK4_NL).
pub const QK: usize = 32;
/// Elements per super-block of the k-quants and IQ4_XS (QK_K).
pub const QK_K: usize = 256;

/// A ggml block struct: `#[repr(C)]` with only `u8`/`[u8; N]` fields.
///
/// # Safety
/// Implementors must have alignment 1, no padding, and accept every bit
/// pattern (true for structs made only of `u8` arrays), so that a byte slice
/// of the right length can be viewed as a slice of blocks.
pub unsafe trait Block: Sized + Copy {
    /// The ggml type whose blocks these are.
    const TYPE: GgmlType;
}

/// Views `bytes` as blocks. `bytes.len()` must be a multiple of the block size
/// (callers check; a remainder is ignored).
pub fn as_blocks<B: Block>(bytes: &[u8]) -> &[B] {
    let n = bytes.len() / std::mem::size_of::<B>();
    // SAFETY: `B: Block` has alignment 1 and accepts every bit pattern, and
    // `n * size_of::<B>() <= bytes.len()`, so the view is in bounds and valid.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<B>(), n) }
}

/// Mutable twin of [`as_blocks`].
pub fn as_blocks_mut<B: Block>(bytes: &mut [u8]) -> &mut [B] {
    let n = bytes.len() / std::mem::size_of::<B>();
    // SAFETY: as in `as_blocks`; the exclusive borrow of `bytes` is moved into
    // the returned slice, and any bytes written are valid `u8`s.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<B>(), n) }
}

// --- scalar conversions with ggml's exact numerics

/// f16 bits → f32 (exact).
#[inline]
pub fn f16_to_f32(bits: [u8; 2]) -> f32 {
    half::f16::from_bits(u16::from_le_bytes(bits)).to_f32()
}

/// f32 → f16 bits, ggml's `ggml_compute_fp32_to_fp16` (round to nearest
/// even; NaN becomes 0x7E00 with the sign kept).
#[inline]
pub fn f32_to_f16(f: f32) -> [u8; 2] {
    let scale_to_inf = f32::from_bits(0x7780_0000); // 2^112
    let scale_to_zero = f32::from_bits(0x0880_0000); // 2^-110
    let mut base = (f.abs() * scale_to_inf) * scale_to_zero;
    let w = f.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let mut bias = shl1_w & 0xFF00_0000;
    if bias < 0x7100_0000 {
        bias = 0x7100_0000;
    }
    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let exp_bits = (bits >> 13) & 0x0000_7C00;
    let mantissa_bits = bits & 0x0000_0FFF;
    let nonsign = exp_bits + mantissa_bits;
    let h = (sign >> 16) | if shl1_w > 0xFF00_0000 { 0x7E00 } else { nonsign };
    (h as u16).to_le_bytes()
}

/// bf16 bits → f32 (exact).
#[inline]
pub fn bf16_to_f32(bits: [u8; 2]) -> f32 {
    f32::from_bits((u16::from_le_bytes(bits) as u32) << 16)
}

/// f32 → bf16 bits, ggml's `ggml_compute_fp32_to_bf16` (round to nearest
/// even; NaN quieted).
#[inline]
pub fn f32_to_bf16(f: f32) -> [u8; 2] {
    let u = f.to_bits();
    let h =
        if (u & 0x7fff_ffff) > 0x7f80_0000 { (u >> 16) | 64 } else { u.wrapping_add(0x7fff + ((u >> 16) & 1)) >> 16 };
    (h as u16).to_le_bytes()
}

/// ggml's `nearest_int`: round to nearest even through the 1.5·2^23 trick.
/// Exact for |x| <= 2^22; beyond that it returns what the reference returns
/// (the low mantissa bits), so huge inputs give the same bytes too.
#[inline]
pub fn nearest_int(fval: f32) -> i32 {
    let val = fval + 12_582_912.0;
    (val.to_bits() as i32 & 0x007f_ffff) - 0x0040_0000
}

/// C's float → int conversion as x86-64 performs it (`cvttss2si`): truncation
/// toward zero, and `i32::MIN` for NaN and out-of-range values. The reference
/// quantizers then keep the low byte (`(int8_t)x`, `(uint8_t)x`).
#[inline]
pub fn c_f32_to_i32(x: f32) -> i32 {
    if x.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&x) {
        i32::MIN
    } else {
        x as i32
    }
}

/// C's `roundf`: round half away from zero.
#[inline]
pub fn c_roundf(x: f32) -> f32 {
    x.round()
}

// --- the per-type entry points

fn check_row(ty: GgmlType, n: usize, bytes: usize, what: &str) -> Result<()> {
    let bs = ty.block_size();
    if !n.is_multiple_of(bs) {
        return Err(Error::invalid(format!("{what}: {n} elements is not a multiple of the {ty} block size {bs}")));
    }
    let need = n / bs * ty.type_size();
    if bytes != need {
        return Err(Error::invalid(format!("{what}: {n} {ty} elements take {need} bytes, got {bytes}")));
    }
    Ok(())
}

/// Whether [`dequantize_row`] supports `ty`.
pub fn is_supported(ty: GgmlType) -> bool {
    use GgmlType::*;
    can_quantize(ty) || matches!(ty, IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M)
}

/// Whether [`quantize_row`] supports `ty`.
pub fn can_quantize(ty: GgmlType) -> bool {
    use GgmlType::*;
    matches!(
        ty,
        F32 | F16
            | BF16
            | Q4_0
            | Q4_1
            | Q5_0
            | Q5_1
            | Q8_0
            | Q8_1
            | Q2_K
            | Q3_K
            | Q4_K
            | Q5_K
            | Q6_K
            | Q8_K
            | IQ4_NL
            | IQ4_XS
            | MXFP4
            | NVFP4
            | TQ1_0
            | TQ2_0
            | Q1_0
            | Q2_0
    )
}

/// Dequantizes one row: `src` holds `out.len()` elements of type `ty`.
pub fn dequantize_row(ty: GgmlType, src: &[u8], out: &mut [f32]) -> Result<()> {
    use GgmlType::*;
    check_row(ty, out.len(), src.len(), "dequantize_row")?;
    match ty {
        F32 => float::dequantize_row_f32(src, out),
        F16 => float::dequantize_row_f16(src, out),
        BF16 => float::dequantize_row_bf16(src, out),
        Q4_0 => q4_0::dequantize_row(as_blocks(src), out),
        Q4_1 => q4_1::dequantize_row(as_blocks(src), out),
        Q5_0 => q5_0::dequantize_row(as_blocks(src), out),
        Q5_1 => q5_1::dequantize_row(as_blocks(src), out),
        Q8_0 => q8_0::dequantize_row(as_blocks(src), out),
        Q8_1 => q8_1::dequantize_row(as_blocks(src), out),
        Q2_K => q2_k::dequantize_row(as_blocks(src), out),
        Q3_K => q3_k::dequantize_row(as_blocks(src), out),
        Q4_K => q4_k::dequantize_row(as_blocks(src), out),
        Q5_K => q5_k::dequantize_row(as_blocks(src), out),
        Q6_K => q6_k::dequantize_row(as_blocks(src), out),
        Q8_K => q8_k::dequantize_row(as_blocks(src), out),
        IQ4_NL => iq4::dequantize_row_nl(as_blocks(src), out),
        IQ4_XS => iq4::dequantize_row_xs(as_blocks(src), out),
        MXFP4 => mxfp4::dequantize_row(as_blocks(src), out),
        NVFP4 => nvfp4::dequantize_row(as_blocks(src), out),
        TQ1_0 => tq::dequantize_row_tq1_0(as_blocks(src), out),
        TQ2_0 => tq::dequantize_row_tq2_0(as_blocks(src), out),
        Q1_0 => q1_0::dequantize_row(as_blocks(src), out),
        Q2_0 => q2_0::dequantize_row(as_blocks(src), out),
        IQ2_XXS => iq2::dequantize_row_xxs(as_blocks(src), out),
        IQ2_XS => iq2::dequantize_row_xs(as_blocks(src), out),
        IQ2_S => iq2::dequantize_row_s(as_blocks(src), out),
        IQ3_XXS => iq3::dequantize_row_xxs(as_blocks(src), out),
        IQ3_S => iq3::dequantize_row_s(as_blocks(src), out),
        IQ1_S => iq1::dequantize_row_s(as_blocks(src), out),
        IQ1_M => iq1::dequantize_row_m(as_blocks(src), out),
        _ => return Err(Error::invalid(format!("dequantize_row: type {ty} is not supported"))),
    }
    Ok(())
}

/// Quantizes one row with the reference quantizer of `ty` (bytes equal to
/// ggml's `quantize_row_<ty>_ref`): `out` receives `x.len()` elements.
pub fn quantize_row(ty: GgmlType, x: &[f32], out: &mut [u8]) -> Result<()> {
    use GgmlType::*;
    check_row(ty, x.len(), out.len(), "quantize_row")?;
    match ty {
        F32 => float::quantize_row_f32(x, out),
        F16 => float::quantize_row_f16(x, out),
        BF16 => float::quantize_row_bf16(x, out),
        Q4_0 => q4_0::quantize_row(x, as_blocks_mut(out)),
        Q4_1 => q4_1::quantize_row(x, as_blocks_mut(out)),
        Q5_0 => q5_0::quantize_row(x, as_blocks_mut(out)),
        Q5_1 => q5_1::quantize_row(x, as_blocks_mut(out)),
        Q8_0 => q8_0::quantize_row(x, as_blocks_mut(out)),
        Q8_1 => q8_1::quantize_row(x, as_blocks_mut(out)),
        Q2_K => q2_k::quantize_row(x, as_blocks_mut(out)),
        Q3_K => q3_k::quantize_row(x, as_blocks_mut(out)),
        Q4_K => q4_k::quantize_row(x, as_blocks_mut(out)),
        Q5_K => q5_k::quantize_row(x, as_blocks_mut(out)),
        Q6_K => q6_k::quantize_row(x, as_blocks_mut(out)),
        Q8_K => q8_k::quantize_row(x, as_blocks_mut(out)),
        IQ4_NL => iq4::quantize_row_nl(x, as_blocks_mut(out)),
        IQ4_XS => iq4::quantize_row_xs(x, as_blocks_mut(out)),
        MXFP4 => mxfp4::quantize_row(x, as_blocks_mut(out)),
        NVFP4 => nvfp4::quantize_row(x, as_blocks_mut(out)),
        TQ1_0 => tq::quantize_row_tq1_0(x, as_blocks_mut(out)),
        TQ2_0 => tq::quantize_row_tq2_0(x, as_blocks_mut(out)),
        Q1_0 => q1_0::quantize_row(x, as_blocks_mut(out)),
        Q2_0 => q2_0::quantize_row(x, as_blocks_mut(out)),
        _ => return Err(Error::invalid(format!("quantize_row: type {ty} is not supported"))),
    }
    Ok(())
}

/// Whether [`quantize_chunk`] can produce `ty` (the storage types of model
/// files minfer writes; Q8_1 and Q8_K are activation-only).
pub fn is_chunk_type(ty: GgmlType) -> bool {
    (can_quantize(ty) && !matches!(ty, GgmlType::Q8_1 | GgmlType::Q8_K)) || is_grid_type(ty)
}

/// The IQ1–IQ3 types: written only through [`quantize_chunk`] (their
/// quantizers search the grids, with importance weights; IQ2_XXS, IQ2_XS
/// and IQ1_S require them).
pub fn is_grid_type(ty: GgmlType) -> bool {
    use GgmlType::*;
    matches!(ty, IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M)
}

/// Quantizes whole rows of `n_per_row` elements as ggml's
/// `ggml_quantize_chunk` does (what `llama_model_quantize` writes).
///
/// Without an importance matrix that is the `_ref` quantizer of every type
/// except IQ4_NL, which `quantize_iq4_nl` runs with a search of 7 scale
/// candidates either side. With one (`imatrix`: a weight per column), the
/// types that have a weighted quantizer (`quantize_row_*_impl`: Q4_0 … Q5_1,
/// Q2_K … Q6_K, IQ4_NL, IQ4_XS) run it row by row; the others (F16, BF16,
/// Q8_0, MXFP4, NVFP4, TQ1_0, TQ2_0, Q1_0, Q2_0) ignore it, as the reference
/// does. The IQ1–IQ3 types search their grids with it (or, for IQ2_S,
/// IQ3_XXS, IQ3_S and IQ1_M, with weights from the values when there is none). Rows are independent, so any split of a tensor into whole rows
/// gives the same bytes.
pub fn quantize_chunk(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    imatrix: Option<&[f32]>,
    out: &mut [u8],
) -> Result<()> {
    use GgmlType::*;
    if !is_chunk_type(ty) {
        return Err(Error::invalid(format!("quantize_chunk: type {ty} is not supported")));
    }
    check_row(ty, x.len(), out.len(), "quantize_chunk")?;
    let row_bytes = ty.row_size(n_per_row as u64).unwrap_or(0) as usize;
    if n_per_row == 0 || !x.len().is_multiple_of(n_per_row) || row_bytes == 0 {
        return Err(Error::invalid(format!("quantize_chunk: {} elements are not whole rows of {n_per_row}", x.len())));
    }
    if let Some(w) = imatrix.filter(|w| w.len() != n_per_row) {
        return Err(Error::invalid(format!("quantize_chunk: {} importance weights for rows of {n_per_row}", w.len())));
    }
    if is_grid_type(ty) {
        // row by row, as quantize_iq*: the grid searches (an error where the
        // reference asserts: a missing imatrix, no grid point for a value)
        for (x, out) in x.chunks_exact(n_per_row).zip(out.chunks_exact_mut(row_bytes)) {
            match ty {
                IQ2_XXS => iq2_quantize::quantize_row_iq2_xxs(x, imatrix, as_blocks_mut(out))?,
                IQ2_XS => iq2_quantize::quantize_row_iq2_xs(x, imatrix, as_blocks_mut(out))?,
                IQ2_S => iq2_quantize::quantize_row_iq2_s(x, imatrix, as_blocks_mut(out))?,
                IQ3_XXS => iq3_quantize::quantize_row_iq3_xxs(x, imatrix, as_blocks_mut(out))?,
                IQ3_S => iq3_quantize::quantize_row_iq3_s(x, imatrix, as_blocks_mut(out))?,
                IQ1_S => iq1_quantize::quantize_row_iq1_s(x, imatrix, as_blocks_mut(out))?,
                _ => iq1_quantize::quantize_row_iq1_m(x, imatrix, as_blocks_mut(out))?,
            }
        }
        return Ok(());
    }
    let weighted = matches!(ty, Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q2_K | Q3_K | Q4_K | Q5_K | Q6_K | IQ4_NL | IQ4_XS);
    let qw = match imatrix {
        Some(w) if weighted => w,
        _ => {
            if ty == IQ4_NL {
                iq4::quantize_row_nl_ntry(x, as_blocks_mut(out), 7);
                return Ok(());
            }
            return quantize_row(ty, x, out);
        }
    };
    for (x, out) in x.chunks_exact(n_per_row).zip(out.chunks_exact_mut(row_bytes)) {
        match ty {
            Q4_0 => q4_0::quantize_row_impl(x, qw, as_blocks_mut(out)),
            Q4_1 => q4_1::quantize_row_impl(x, qw, as_blocks_mut(out)),
            Q5_0 => q5_0::quantize_row_impl(x, qw, as_blocks_mut(out)),
            Q5_1 => q5_1::quantize_row_impl(x, qw, as_blocks_mut(out)),
            Q2_K => q2_k::quantize_row_impl(x, qw, as_blocks_mut(out)),
            Q3_K => q3_k::quantize_row_impl(x, qw, as_blocks_mut(out)),
            Q4_K => q4_k::quantize_row_impl(x, qw, as_blocks_mut(out)),
            Q5_K => q5_k::quantize_row_impl(x, qw, as_blocks_mut(out)),
            Q6_K => q6_k::quantize_row_impl(x, Some(qw), as_blocks_mut(out)),
            IQ4_NL => iq4::quantize_row_nl_impl(x, qw, as_blocks_mut(out)),
            IQ4_XS => iq4::quantize_row_xs_impl(x, Some(qw), as_blocks_mut(out)),
            _ => return Err(Error::invalid(format!("quantize_chunk: type {ty} has no weighted quantizer"))),
        }
    }
    Ok(())
}
