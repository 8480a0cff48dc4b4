//! TQ1_0 and TQ2_0: ternary weights (BitNet b1.58, TriLMs) in super-blocks
//! of 256 with one f16 scale `d`; value = (t − 1)·d, t ∈ {0, 1, 2} a trit.
//!
//! - TQ2_0 (66 bytes): 2 bits per trit. Byte `32c + m` of `qs` (c = 0, 1)
//!   holds at bits `2l` the trit of element `128c + 32l + m`.
//! - TQ1_0 (54 bytes): 5 trits per byte in `qs` (48 bytes), 4 in `qh` (4
//!   bytes), each byte the base-3 number of its trits scaled to 0..=255
//!   (`⌈n·256/243⌉`): the trit at digit `i` is the top two bits of the byte
//!   times `3^i` (mod 256) times 3, i.e. `((q·3^i mod 256)·3) >> 8`. Byte
//!   `m` of `qs[0..32]` holds elements `32n + m` (digit n = 0..5), byte
//!   `32 + m` of `qs[32..48]` elements `160 + 16n + m`, byte `j` of `qh`
//!   elements `240 + 4n + j` (n = 0..4).

use super::{f16_to_f32, f32_to_f16, Block, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `block_tq1_0`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockTq1_0 {
    pub qs: [u8; (QK_K - 4 * QK_K / 64) / 5],
    pub qh: [u8; QK_K / 64],
    pub d: [u8; 2],
}
const _: () = assert!(std::mem::size_of::<BlockTq1_0>() == 54);
const _: () = assert!(std::mem::size_of::<BlockTq1_0>() == GgmlType::TQ1_0.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockTq1_0 {
    const TYPE: GgmlType = GgmlType::TQ1_0;
}

/// ggml's `block_tq2_0`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockTq2_0 {
    pub qs: [u8; QK_K / 4],
    pub d: [u8; 2],
}
const _: () = assert!(std::mem::size_of::<BlockTq2_0>() == 66);
const _: () = assert!(std::mem::size_of::<BlockTq2_0>() == GgmlType::TQ2_0.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockTq2_0 {
    const TYPE: GgmlType = GgmlType::TQ2_0;
}

const POW3: [u8; 6] = [1, 3, 9, 27, 81, 243];

/// The trit at base-3 digit `i` of a TQ1_0 byte (0..=2 for every byte).
#[inline]
pub fn trit(q: u8, i: usize) -> u8 {
    ((q.wrapping_mul(POW3[i]) as u16 * 3) >> 8) as u8
}

impl BlockTq1_0 {
    /// The 256 trits (0..=2) in element order.
    pub fn trits(&self) -> [u8; QK_K] {
        let mut t = [0u8; QK_K];
        for n in 0..5 {
            for m in 0..32 {
                t[32 * n + m] = trit(self.qs[m], n);
            }
            for m in 0..16 {
                t[160 + 16 * n + m] = trit(self.qs[32 + m], n);
            }
        }
        for n in 0..4 {
            for j in 0..4 {
                t[240 + 4 * n + j] = trit(self.qh[j], n);
            }
        }
        t
    }
}

impl BlockTq2_0 {
    /// The 256 2-bit values (0..=3; the quantizer writes 0..=2) in element
    /// order.
    pub fn trits(&self) -> [u8; QK_K] {
        let mut t = [0u8; QK_K];
        for c in 0..2 {
            for l in 0..4 {
                for m in 0..32 {
                    t[128 * c + 32 * l + m] = (self.qs[32 * c + m] >> (2 * l)) & 3;
                }
            }
        }
        t
    }
}

pub fn dequantize_row_tq1_0(blocks: &[BlockTq1_0], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        for (v, &t) in y.iter_mut().zip(b.trits().iter()) {
            *v = (t as i32 - 1) as f32 * d;
        }
    }
}

pub fn dequantize_row_tq2_0(blocks: &[BlockTq2_0], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        for (v, &t) in y.iter_mut().zip(b.trits().iter()) {
            *v = (t as i32 - 1) as f32 * d;
        }
    }
}

/// C's `lroundf(v) + 1` stored in an `int` as x86-64 glibc computes it:
/// half away from zero, and `LONG_MIN` (low 32 bits 0, so 1 after the +1)
/// for NaN and values out of a long's range.
#[inline]
fn lround_plus_1(v: f32) -> i32 {
    let r = if v.is_nan() || v.abs() >= 9.223_372e18 { i64::MIN } else { v.round() as i64 };
    r.wrapping_add(1) as i32
}

/// The block's absolute maximum and its inverse, as the reference's
/// quantizers take them (`MAX(amax, fabsf(v))`: a NaN compares false).
fn scale(x: &[f32]) -> (f32, f32) {
    let mut amax = 0f32;
    for &v in x {
        let a = v.abs();
        amax = if amax > a { amax } else { a };
    }
    (amax, if amax != 0.0 { 1.0 / amax } else { 0.0 })
}

/// Base-3 digits `xs` (most significant first) packed into a TQ1_0 byte:
/// `⌈n·256/243⌉` in u8 arithmetic, as the reference.
fn pack_trits(xs: impl Iterator<Item = i32>, extra_shift: bool) -> u8 {
    let mut q: u8 = 0;
    for xi in xs {
        q = q.wrapping_mul(3).wrapping_add(xi as u8);
    }
    if extra_shift {
        q = q.wrapping_mul(3);
    }
    (q as u16 * 256).div_ceil(243) as u8
}

/// `quantize_row_tq1_0_ref` (which `quantize_tq1_0` runs, importance
/// matrix or not).
pub fn quantize_row_tq1_0(x: &[f32], blocks: &mut [BlockTq1_0]) {
    for (y, x) in blocks.iter_mut().zip(x.chunks_exact(QK_K)) {
        let (d, id) = scale(x);
        y.d = f32_to_f16(d);
        let t = |i: usize| lround_plus_1(x[i] * id);
        for m in 0..32 {
            y.qs[m] = pack_trits((0..5).map(|n| t(m + 32 * n)), false);
        }
        for m in 0..16 {
            y.qs[32 + m] = pack_trits((0..5).map(|n| t(160 + m + 16 * n)), false);
        }
        for j in 0..4 {
            // (4 trits, then shifted to the top digit)
            y.qh[j] = pack_trits((0..4).map(|n| t(240 + j + 4 * n)), true);
        }
    }
}

/// `quantize_row_tq2_0_ref` (which `quantize_tq2_0` runs).
pub fn quantize_row_tq2_0(x: &[f32], blocks: &mut [BlockTq2_0]) {
    for (y, x) in blocks.iter_mut().zip(x.chunks_exact(QK_K)) {
        let (d, id) = scale(x);
        y.d = f32_to_f16(d);
        for c in 0..2 {
            for m in 0..32 {
                let mut q = 0u8;
                for n in 0..4 {
                    let xi = lround_plus_1(x[128 * c + m + 32 * n] * id);
                    q = q.wrapping_add(((xi & 3) as u8) << (2 * n));
                }
                y.qs[32 * c + m] = q;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tq1_0_byte_decodes_to_trits_and_packing_round_trips() {
        // the reference's AVX2 dot takes a trit as the top bits of
        // avg(s, avg(s, 0)), s = q −sat 1; the dequantizer's formula agrees
        let avg = |a: u8, b: u8| ((a as u16 + b as u16 + 1) >> 1) as u8;
        for q in 0..=255u8 {
            for (i, &p) in POW3.iter().enumerate().take(5) {
                let qi = q.wrapping_mul(p);
                let s = qi.saturating_sub(1);
                assert_eq!(trit(q, i), (avg(s, avg(s, 0)) >> 6) & 3, "byte {q} digit {i}");
                assert!(trit(q, i) <= 2);
            }
        }
        // every 5-trit number packs to a byte that decodes back to it
        for n in 0..243u32 {
            let digits: Vec<i32> = (0..5).rev().map(|i| ((n / 3u32.pow(i)) % 3) as i32).collect();
            let q = pack_trits(digits.iter().copied(), false);
            let back: Vec<i32> = (0..5).map(|i| trit(q, i) as i32).collect();
            assert_eq!(back, digits, "{n}");
        }
    }

    #[test]
    fn ternary_rows_round_trip_and_odd_values_stay_in_range() {
        // values −a, 0, a come back exactly (a an f16)
        let x: Vec<f32> = (0..512).map(|i| [0.5f32, 0.0, -0.5][(i * 7 + i / 13) % 3]).collect();
        let mut b1 = [BlockTq1_0 { qs: [0; 48], qh: [0; 4], d: [0; 2] }; 2];
        let mut b2 = [BlockTq2_0 { qs: [0; 64], d: [0; 2] }; 2];
        quantize_row_tq1_0(&x, &mut b1);
        quantize_row_tq2_0(&x, &mut b2);
        let (mut y1, mut y2) = (vec![0f32; 512], vec![0f32; 512]);
        dequantize_row_tq1_0(&b1, &mut y1);
        dequantize_row_tq2_0(&b2, &mut y2);
        assert_eq!(y1, x);
        assert_eq!(y2, x);
        // NaN and infinities: the reference's lroundf gives LONG_MIN there,
        // a 0 trit after its +1 (and its int conversion)
        assert_eq!(lround_plus_1(f32::NAN), 1);
        assert_eq!(lround_plus_1(f32::INFINITY), 1);
        assert_eq!((lround_plus_1(-0.5), lround_plus_1(0.5), lround_plus_1(0.49)), (0, 2, 1));
    }
}
