//! Q8_K: 256 values per super-block, 8 bits each, an f32 scale and the sums
//! of each group of 16 quants; the activation type of the k-quants and IQ4_XS.

use super::{nearest_int, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `block_q8_K`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockQ8K {
    /// scale (f32, little-endian)
    pub d: [u8; 4],
    /// quants (i8 stored as u8)
    pub qs: [u8; QK_K],
    /// sums of groups of 16 quants (i16, little-endian)
    pub bsums: [u8; 2 * QK_K / 16],
}
const _: () = assert!(std::mem::size_of::<BlockQ8K>() == 292);
const _: () = assert!(std::mem::size_of::<BlockQ8K>() == GgmlType::Q8_K.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockQ8K {
    const TYPE: GgmlType = GgmlType::Q8_K;
}

impl BlockQ8K {
    #[inline]
    pub fn d(&self) -> f32 {
        f32::from_le_bytes(self.d)
    }
    #[inline]
    pub fn bsum(&self, g: usize) -> i16 {
        i16::from_le_bytes([self.bsums[2 * g], self.bsums[2 * g + 1]])
    }
}

pub fn dequantize_row(blocks: &[BlockQ8K], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = b.d();
        for (j, v) in y.iter_mut().enumerate() {
            *v = d * b.qs[j] as i8 as i32 as f32;
        }
    }
}

/// Absolute maximum of a super-block and the value that has it (the first
/// one, as the reference finds it).
#[inline]
pub fn signed_max(x: &[f32]) -> (f32, f32) {
    let mut max = 0.0f32;
    let mut amax = 0.0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    (amax, max)
}

/// Writes the 16 group sums of `b.qs`.
#[inline]
pub fn write_bsums(b: &mut BlockQ8K) {
    for g in 0..QK_K / 16 {
        let s: i32 = b.qs[16 * g..16 * g + 16].iter().map(|&q| q as i8 as i32).sum();
        b.bsums[2 * g..2 * g + 2].copy_from_slice(&(s as i16).to_le_bytes());
    }
}

/// ggml's `quantize_row_q8_K_ref`; also the scalar activation quantizer.
pub fn quantize_row(x: &[f32], blocks: &mut [BlockQ8K]) {
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK_K)) {
        let (amax, max) = signed_max(x);
        if amax == 0.0 {
            b.d = 0f32.to_le_bytes();
            b.qs = [0; QK_K];
            // The reference leaves bsums unwritten here; zero is what a
            // zero-initialized buffer holds and what the dot needs.
            b.bsums = [0; 2 * QK_K / 16];
            continue;
        }
        let iscale = -127.0 / max;
        for (q, &v) in b.qs.iter_mut().zip(x) {
            *q = nearest_int(iscale * v).min(127) as i8 as u8;
        }
        write_bsums(b);
        b.d = (1.0 / iscale).to_le_bytes();
    }
}
