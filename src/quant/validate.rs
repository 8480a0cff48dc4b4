//! ggml's `ggml_validate_row_data`: the check the reference runs on every
//! tensor it reads for quantization and on every chunk it writes. Floats
//! must be finite; a block's f16 scale (and min) must be finite; an E8M0
//! exponent must not be 0xFF. Types ggml cannot validate (Q8_1) fail.

use crate::ggml_type::GgmlType;
use crate::{Error, Result};

/// The f16 fields of one block checked for a type: byte offsets within the
/// block. Empty for types with nothing to check.
fn f16_fields(ty: GgmlType) -> Option<&'static [usize]> {
    use GgmlType::*;
    Some(match ty {
        // d first
        Q1_0 | Q2_0 | Q4_0 | Q5_0 | Q8_0 | IQ4_NL | IQ4_XS | IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S => &[0],
        // d, m / d, dmin first
        Q4_1 | Q5_1 | Q4_K | Q5_K => &[0, 2],
        // scales[16], qs[64], d, dmin
        Q2_K => &[80, 82],
        // hmask[32], qs[64], scales[12], d
        Q3_K => &[108],
        // ql[128], qh[64], scales[16], d
        Q6_K => &[208],
        // qs[48], qh[4], d
        TQ1_0 => &[52],
        // qs[64], d
        TQ2_0 => &[64],
        I8 | I16 | I32 | I64 | NVFP4 => &[],
        _ => return None,
    })
}

fn bad(what: &str, i: usize) -> Error {
    Error::model(format!("ggml_validate_row_data: found {what} at block {i}"))
}

fn check_f16(bits: u16, i: usize) -> Result<()> {
    if bits & 0x7c00 == 0x7c00 {
        return Err(bad(if bits & 0x03ff == 0 { "inf value" } else { "nan value" }, i));
    }
    Ok(())
}

fn check_f32(v: f64, i: usize) -> Result<()> {
    if v.is_infinite() {
        return Err(bad("inf value", i));
    }
    if v.is_nan() {
        return Err(bad("nan value", i));
    }
    Ok(())
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// Checks `data` (whole blocks of `ty`) as ggml_validate_row_data does.
pub fn validate_row_data(ty: GgmlType, data: &[u8]) -> Result<()> {
    use GgmlType::*;
    let size = ty.type_size();
    if !data.len().is_multiple_of(size) {
        return Err(Error::model(format!(
            "ggml_validate_row_data: invalid size {} for type {ty} (type size = {size})",
            data.len()
        )));
    }
    let mut blocks = data.chunks_exact(size).enumerate();
    match ty {
        F32 => blocks.try_for_each(|(i, b)| check_f32(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])), i)),
        F64 => blocks.try_for_each(|(i, b)| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            check_f32(f64::from_le_bytes(w), i)
        }),
        F16 => blocks.try_for_each(|(i, b)| check_f16(u16_at(b, 0), i)),
        BF16 => {
            // ggml counts both kinds over the whole row and reports NaNs first.
            let (mut nans, mut infs) = (0usize, 0usize);
            for b in data.chunks_exact(2) {
                let v = u16_at(b, 0) & 0x7fff;
                nans += usize::from(v > 0x7f80);
                infs += usize::from(v == 0x7f80);
            }
            let n = data.len() / 2;
            if nans > 0 {
                return Err(Error::model(format!(
                    "ggml_validate_row_data: found {nans} NaNs in row of {n} BF16 values"
                )));
            }
            if infs > 0 {
                return Err(Error::model(format!(
                    "ggml_validate_row_data: found {infs} infinities in row of {n} BF16 values"
                )));
            }
            Ok(())
        }
        Q8_K => blocks.try_for_each(|(i, b)| check_f32(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])), i)),
        MXFP4 => blocks.try_for_each(|(i, b)| {
            if b[0] == 0xff {
                Err(Error::model(format!("ggml_validate_row_data: found invalid e value 255 at block {i}")))
            } else {
                Ok(())
            }
        }),
        IQ1_M => blocks.try_for_each(|(i, b)| {
            // qs[32], qh[16], scales[8]: the f16 scale is spread over the top
            // nibbles of the four u16 scale words.
            let sc = |k: usize| u16_at(b, 48 + 2 * k);
            let bits = (sc(0) >> 12) | ((sc(1) >> 8) & 0x00f0) | ((sc(2) >> 4) & 0x0f00) | (sc(3) & 0xf000);
            check_f16(bits, i)
        }),
        _ => match f16_fields(ty) {
            Some(fields) => blocks.try_for_each(|(i, b)| fields.iter().try_for_each(|&at| check_f16(u16_at(b, at), i))),
            None => Err(Error::model(format!("ggml_validate_row_data: invalid type {}", ty as u32))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{f32_to_f16, quantize_row};

    #[test]
    fn finite_rows_pass_and_bad_scales_fail() {
        let x: Vec<f32> = (0..256).map(|i| (i as f32 * 0.37).sin()).collect();
        for ty in [GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q6_K, GgmlType::IQ4_XS] {
            let mut out = vec![0u8; ty.row_size(256).unwrap() as usize];
            quantize_row(ty, &x, &mut out).unwrap();
            validate_row_data(ty, &out).unwrap();
            // a NaN scale in the last f16 field of the first block
            let at = *f16_fields(ty).unwrap().last().unwrap();
            out[at..at + 2].copy_from_slice(&f32_to_f16(f32::NAN));
            let e = validate_row_data(ty, &out).unwrap_err().to_string();
            assert!(e.contains("nan value at block 0"), "{ty}: {e}");
            out[at..at + 2].copy_from_slice(&f32_to_f16(f32::INFINITY));
            assert!(validate_row_data(ty, &out).unwrap_err().to_string().contains("inf value"));
        }
    }

    #[test]
    fn floats_and_odd_sizes() {
        let mut row: Vec<u8> = [1.0f32, 2.0, f32::NAN].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(validate_row_data(GgmlType::F32, &row).unwrap_err().to_string().contains("nan value at block 2"));
        row.truncate(8);
        validate_row_data(GgmlType::F32, &row).unwrap();
        assert!(validate_row_data(GgmlType::F32, &row[..7]).unwrap_err().to_string().contains("invalid size 7"));
        let bf: Vec<u8> = [0x7f80u16, 0x7fc1, 0x3f80].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(validate_row_data(GgmlType::BF16, &bf).unwrap_err().to_string().contains("found 1 NaNs"));
        assert!(validate_row_data(GgmlType::Q8_1, &[0u8; 36]).is_err());
        validate_row_data(GgmlType::I32, &[0xffu8; 8]).unwrap();
    }
}
