//! NVFP4 (NVIDIA's 4-bit float): blocks of 64 E2M1 codes in 4 sub-blocks of
//! 16, each with its own UE4M3 scale (an unsigned 8-bit float: 4 exponent
//! bits of bias 7, 3 mantissa bits). The codes index `KVALUES_MXFP4` (the
//! E2M1 values doubled), so ggml halves the scale: value = table[q]·s/2.
//! A tensor may carry a second, per-tensor scale (`*.scale`), applied by
//! the graph after the product, not here.

use super::mxfp4::{best_index, KVALUES_MXFP4};
use super::Block;
use crate::ggml_type::GgmlType;

/// Elements per block (`QK_NVFP4`).
pub const QK_NVFP4: usize = 64;
/// Elements per sub-block and scale (`QK_NVFP4_SUB`).
pub const QK_NVFP4_SUB: usize = 16;

/// ggml's `block_nvfp4`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockNvfp4 {
    /// the sub-blocks' UE4M3 scales
    pub d: [u8; QK_NVFP4 / QK_NVFP4_SUB],
    /// codes: sub-block `s` in bytes `8s..8s+8`, low nibble of byte `8s + j`
    /// its element j, high nibble element j+8
    pub qs: [u8; QK_NVFP4 / 2],
}
const _: () = assert!(std::mem::size_of::<BlockNvfp4>() == GgmlType::NVFP4.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockNvfp4 {
    const TYPE: GgmlType = GgmlType::NVFP4;
}

/// `ggml_ue4m3_to_fp32`: the scale's value halved (exact); 0 and 0x7F (its
/// NaN) give 0, the top bit is ignored.
#[inline]
pub const fn ue4m3_to_f32(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let (exp, man) = ((x >> 3) & 0xF, x & 7);
    let raw = if exp == 0 {
        man as f32 * (1.0 / 512.0)
    } else {
        (1.0 + man as f32 / 8.0) * f32::from_bits((exp as u32 + 127 - 7) << 23)
    };
    raw * 0.5
}

/// [`ue4m3_to_f32`] of every byte (the kernels' lookup: one load instead of
/// the branches and conversions; built by the same function at compile
/// time, so the same values).
pub static UE4M3_TO_F32: [f32; 256] = {
    let mut t = [0f32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = ue4m3_to_f32(i as u8);
        i += 1;
    }
    t
};

/// `ggml_fp32_to_ue4m3`: round to nearest on the mantissa's top bit
/// (ties up), 448 and above saturate to 0x7E, non-positive and NaN give 0.
pub fn f32_to_ue4m3(x: f32) -> u8 {
    // (`!(x > 0)` catches NaN too)
    if x.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return 0;
    }
    let x = if x > 448.0 { 448.0 } else { x };
    let bits = x.to_bits();
    let fp32_exp = ((bits >> 23) & 0xFF) as i32 - 127;
    let fp32_man = ((bits >> 20) & 7) as i32;
    let mut exp = fp32_exp + 7;
    if exp <= 0 {
        // (int)(x·512 + 0.5): truncation of a positive value
        let man = ((x * 512.0 + 0.5) as i32).min(7);
        return if man < 1 { 0 } else { man as u8 };
    }
    if exp >= 15 {
        return 0x7E;
    }
    let mut man = fp32_man + ((bits >> 19) & 1) as i32;
    if man > 7 {
        man = 0;
        exp += 1;
        if exp >= 15 {
            return 0x7E;
        }
    }
    ((exp << 3) | man) as u8
}

impl BlockNvfp4 {
    /// The 16 table values (-12..=12) of sub-block `s`, in element order.
    #[inline]
    pub fn unpack_sub(&self, s: usize) -> [i8; QK_NVFP4_SUB] {
        std::array::from_fn(|j| {
            let b = self.qs[8 * s + j % 8];
            KVALUES_MXFP4[(if j < 8 { b & 0xF } else { b >> 4 }) as usize]
        })
    }
}

pub fn dequantize_row(blocks: &[BlockNvfp4], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_NVFP4)) {
        for (s, ys) in y.chunks_exact_mut(QK_NVFP4_SUB).enumerate() {
            let d = ue4m3_to_f32(b.d[s]);
            for (o, q) in ys.iter_mut().zip(b.unpack_sub(s)) {
                *o = q as f32 * d;
            }
        }
    }
}

/// `quantize_row_nvfp4_ref` (what `ggml_quantize_chunk` runs for NVFP4):
/// each sub-block's scale `amax / 6` in UE4M3, each value its nearest table
/// entry at that (halved) scale.
pub fn quantize_row(x: &[f32], out: &mut [BlockNvfp4]) {
    for (xb, y) in x.chunks_exact(QK_NVFP4).zip(out.iter_mut()) {
        for (s, xs) in xb.chunks_exact(QK_NVFP4_SUB).enumerate() {
            let mut amax = 0f32;
            for &v in xs {
                if amax < v.abs() {
                    amax = v.abs();
                }
            }
            y.d[s] = f32_to_ue4m3(amax / 6.0);
            let d = ue4m3_to_f32(y.d[s]);
            for j in 0..QK_NVFP4_SUB / 2 {
                y.qs[8 * s + j] = best_index(xs[j], d) | best_index(xs[QK_NVFP4_SUB / 2 + j], d) << 4;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_table_is_the_conversion() {
        for x in 0..=255u8 {
            assert_eq!(UE4M3_TO_F32[x as usize].to_bits(), ue4m3_to_f32(x).to_bits(), "{x:#x}");
        }
    }

    #[test]
    fn ue4m3_round_trips_and_saturates() {
        // every code below the saturated exponent comes back from its value·2
        for x in 1u8..0x78 {
            assert_eq!(f32_to_ue4m3(2.0 * ue4m3_to_f32(x)), x, "{x:#x}");
        }
        assert_eq!(ue4m3_to_f32(0x38), 0.5); // 1.0, halved
        assert_eq!(f32_to_ue4m3(1e9), 0x7E);
        assert_eq!(f32_to_ue4m3(-1.0), 0);
        assert_eq!(f32_to_ue4m3(f32::NAN), 0);
        assert_eq!(ue4m3_to_f32(0x7F), 0.0);
    }
}
