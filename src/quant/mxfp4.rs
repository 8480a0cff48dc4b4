//! MXFP4 (OCP microscaling FP4; gpt-oss's expert weights): blocks of 32
//! 4-bit E2M1 codes and one shared E8M0 exponent. ggml stores the codes as
//! indices into `KVALUES_MXFP4` (the E2M1 values doubled, so integers) and
//! halves the scale to match: value = table[q] · 2^(e − 128).

use super::{Block, QK};
use crate::ggml_type::GgmlType;

/// ggml's `kvalues_mxfp4` (`kvalues_fp4`): the 16 E2M1 values, doubled.
pub const KVALUES_MXFP4: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// ggml's `block_mxfp4`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockMxfp4 {
    /// the shared exponent (E8M0)
    pub e: u8,
    /// codes: low nibble of `qs[j]` element j, high nibble element j+16
    pub qs: [u8; QK / 2],
}
const _: () = assert!(std::mem::size_of::<BlockMxfp4>() == 17);
const _: () = assert!(std::mem::size_of::<BlockMxfp4>() == GgmlType::MXFP4.type_size());
// SAFETY: repr(C), only u8 fields: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockMxfp4 {
    const TYPE: GgmlType = GgmlType::MXFP4;
}

/// `GGML_E8M0_TO_FP32_HALF`: 2^(e − 128) exactly (subnormal for e < 2).
#[inline]
pub fn e8m0_to_f32_half(e: u8) -> f32 {
    let bits = if e < 2 { 0x0020_0000u32 << e } else { ((e as u32) - 1) << 23 };
    f32::from_bits(bits)
}

impl BlockMxfp4 {
    /// The 32 table values (-12..=12), in element order.
    #[inline]
    pub fn unpack(&self) -> [i8; QK] {
        let mut q = [0i8; QK];
        for j in 0..QK / 2 {
            q[j] = KVALUES_MXFP4[(self.qs[j] & 0xF) as usize];
            q[j + QK / 2] = KVALUES_MXFP4[(self.qs[j] >> 4) as usize];
        }
        q
    }

    /// The block's scale, `GGML_E8M0_TO_FP32_HALF(e)`.
    #[inline]
    pub fn scale(&self) -> f32 {
        e8m0_to_f32_half(self.e)
    }
}

pub fn dequantize_row(blocks: &[BlockMxfp4], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK)) {
        let d = b.scale();
        for (o, q) in y.iter_mut().zip(b.unpack()) {
            *o = q as f32 * d;
        }
    }
}

/// `best_index_mxfp4`: the first code of least |table[i]·e − x| (the
/// product and the difference rounded apart: ggml-quants.c is built
/// without FMA contraction).
pub(crate) fn best_index(x: f32, e: f32) -> u8 {
    let mut best = 0u8;
    let mut best_err = (KVALUES_MXFP4[0] as f32 * e - x).abs();
    for (i, &k) in KVALUES_MXFP4.iter().enumerate().skip(1) {
        let err = (k as f32 * e - x).abs();
        if err < best_err {
            best = i as u8;
            best_err = err;
        }
    }
    best
}

/// `quantize_row_mxfp4_ref` (which `quantize_mxfp4` runs, importance
/// matrix or not): e = floor(log2(max |x|)) − 2 + 127 (0 for an all-zero
/// block), each value its nearest table entry at that scale.
pub fn quantize_row(x: &[f32], out: &mut [BlockMxfp4]) {
    for (xb, y) in x.chunks_exact(QK).zip(out.iter_mut()) {
        let mut amax = 0f32;
        for &v in xb {
            if amax < v.abs() {
                amax = v.abs();
            }
        }
        // ((uint8_t) of a float: cvttss2si, then the low byte)
        y.e = if amax > 0.0 { ((amax.log2().floor() - 2.0 + 127.0) as i32) as u8 } else { 0 };
        let d = e8m0_to_f32_half(y.e);
        for j in 0..QK / 2 {
            y.qs[j] = best_index(xb[j], d) | best_index(xb[QK / 2 + j], d) << 4;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_powers_of_two_and_rows_round_trip() {
        assert_eq!(e8m0_to_f32_half(128), 1.0);
        assert_eq!(e8m0_to_f32_half(127), 0.5);
        assert_eq!(e8m0_to_f32_half(1), f32::from_bits(0x0040_0000));
        assert_eq!(e8m0_to_f32_half(0), f32::from_bits(0x0020_0000));
        // values on the grid of scale 2^-3 come back exactly
        let x: Vec<f32> =
            (0..64).map(|i| KVALUES_MXFP4[i % 16] as f32 * 0.125 * if i < 32 { 1.0 } else { 4.0 }).collect();
        let mut b = [BlockMxfp4 { e: 0, qs: [0; 16] }; 2];
        quantize_row(&x, &mut b);
        let mut y = vec![0f32; 64];
        dequantize_row(&b, &mut y);
        assert_eq!(x, y);
        // an all-zero block: exponent 0, codes 0
        quantize_row(&[0.0; 32], &mut b[..1]);
        assert_eq!((b[0].e, b[0].qs), (0, [0; 16]));
    }
}
