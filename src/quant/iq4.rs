//! IQ4_NL (blocks of 32, one f16 scale) and IQ4_XS (super-blocks of 256 with
//! 6-bit sub-block scales): 4-bit indices into the non-linear table
//! `KVALUES_IQ4NL`; value = d·table[q] (IQ4_XS: d·(ls − 32)·table[q]).

use super::k_helpers::{x86_nan, KBlock, GROUP_MAX_EPS};
use super::{f16_to_f32, f32_to_f16, nearest_int, Block, QK, QK_K};
use crate::ggml_type::GgmlType;

/// ggml's `kvalues_iq4nl`.
pub const KVALUES_IQ4NL: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/// ggml's `block_iq4_nl`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockIq4Nl {
    pub d: [u8; 2],
    /// indices: low nibble of `qs[j]` element j, high nibble element j+16
    pub qs: [u8; QK / 2],
}
const _: () = assert!(std::mem::size_of::<BlockIq4Nl>() == 18);
const _: () = assert!(std::mem::size_of::<BlockIq4Nl>() == GgmlType::IQ4_NL.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockIq4Nl {
    const TYPE: GgmlType = GgmlType::IQ4_NL;
}

/// ggml's `block_iq4_xs`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BlockIq4Xs {
    pub d: [u8; 2],
    /// high 2 bits of the 8 sub-block scales (u16, little-endian)
    pub scales_h: [u8; 2],
    /// low 4 bits of the 8 sub-block scales
    pub scales_l: [u8; QK_K / 64],
    /// per sub-block of 32, packed as in IQ4_NL
    pub qs: [u8; QK_K / 2],
}
const _: () = assert!(std::mem::size_of::<BlockIq4Xs>() == 136);
const _: () = assert!(std::mem::size_of::<BlockIq4Xs>() == GgmlType::IQ4_XS.type_size());
// SAFETY: repr(C), only u8 arrays: alignment 1, no padding, any bit pattern.
unsafe impl Block for BlockIq4Xs {
    const TYPE: GgmlType = GgmlType::IQ4_XS;
}

/// The 32 table values of 16 packed bytes, in element order.
#[inline]
fn lookup32(qs: &[u8]) -> [i8; 32] {
    let mut q = [0i8; 32];
    for j in 0..16 {
        q[j] = KVALUES_IQ4NL[(qs[j] & 0xF) as usize];
        q[j + 16] = KVALUES_IQ4NL[(qs[j] >> 4) as usize];
    }
    q
}

impl BlockIq4Nl {
    /// The 32 table values (-127..=113), in element order.
    #[inline]
    pub fn unpack(&self) -> [i8; QK] {
        lookup32(&self.qs)
    }
}

impl BlockIq4Xs {
    /// Sub-block scale `ib` (0..8), -32..=31.
    #[inline]
    pub fn sub_scale(&self, ib: usize) -> i32 {
        let h = u16::from_le_bytes(self.scales_h);
        let ls = ((self.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) as i32 | ((((h >> (2 * ib)) & 3) as i32) << 4);
        ls - 32
    }

    pub fn unpack(&self) -> KBlock {
        let mut k = KBlock::ZERO;
        for ib in 0..8 {
            k.q[32 * ib..32 * ib + 32].copy_from_slice(&lookup32(&self.qs[16 * ib..16 * ib + 16]));
            let s = self.sub_scale(ib) as i16;
            k.scales[2 * ib] = s;
            k.scales[2 * ib + 1] = s;
        }
        k.d = f16_to_f32(self.d);
        k
    }
}

pub fn dequantize_row_nl(blocks: &[BlockIq4Nl], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK)) {
        let d = f16_to_f32(b.d);
        for (v, q) in y.iter_mut().zip(b.unpack()) {
            *v = d * q as f32;
        }
    }
}

pub fn dequantize_row_xs(blocks: &[BlockIq4Xs], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = f16_to_f32(b.d);
        for ib in 0..8 {
            let dl = d * b.sub_scale(ib) as f32;
            let q = lookup32(&b.qs[16 * ib..16 * ib + 16]);
            for (v, q) in y[32 * ib..32 * ib + 32].iter_mut().zip(q) {
                *v = dl * q as f32;
            }
        }
    }
}

/// ggml's `best_index_int8` over the IQ4 table.
#[inline]
fn best_index(x: f32) -> u8 {
    let val = &KVALUES_IQ4NL;
    if x <= val[0] as f32 {
        return 0;
    }
    if x >= val[15] as f32 {
        return 15;
    }
    let (mut ml, mut mu) = (0usize, 15usize);
    while mu - ml > 1 {
        let mav = (ml + mu) / 2;
        if x < val[mav] as f32 {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    if x - (val[mu - 1] as f32) < val[mu] as f32 - x {
        (mu - 1) as u8
    } else {
        mu as u8
    }
}

/// ggml's `quantize_row_iq4_nl_impl` without quant weights, for one
/// super-block of `x.len()` elements in sub-blocks of 32. Returns d (f16
/// bits); writes the packed indices to `q4` and, for more than one sub-block,
/// the 6-bit scales to `scales_h`/`scales_l`. `l` is the index scratch the
/// reference keeps across the blocks of a row: an all-zero block of IQ4_NL
/// with `ntry <= 0` packs whatever the previous block left there (zeros
/// before the first block, where the reference reads uninitialized memory).
fn quantize_iq4_impl(
    x: &[f32],
    q4: &mut [u8],
    scales_h: &mut u16,
    scales_l: &mut [u8],
    l: &mut [u8; QK_K],
    qw: Option<&[f32]>,
    ntry: i32,
) -> [u8; 2] {
    const BS: usize = 32;
    let sbs = x.len();
    let nsub = sbs / BS;
    let values = &KVALUES_IQ4NL;
    let v0 = values[0] as f32;
    q4.fill(0);
    let dh;
    let mut weight = [0.0f32; BS];
    let mut scales = [0.0f32; QK_K / BS];
    let mut max_scale = 0.0f32;
    let mut amax_scale = 0.0f32;
    let mut sigma2 = 0.0f32;
    for &v in x {
        sigma2 += v * v;
    }
    sigma2 *= 2.0 / sbs as f32;
    for ib in 0..nsub {
        let xb = &x[ib * BS..ib * BS + BS];
        match qw {
            Some(qw) => super::k_helpers::imatrix_weights(&qw[ib * BS..ib * BS + BS], xb, sigma2, &mut weight),
            None => {
                for (w, &v) in weight.iter_mut().zip(xb) {
                    *w = v * v;
                }
            }
        }
        let mut amax = 0.0f32;
        let mut max = 0.0f32;
        for &v in xb {
            if v.abs() > amax {
                amax = v.abs();
                max = v;
            }
        }
        if amax < GROUP_MAX_EPS {
            scales[ib] = 0.0;
            continue;
        }
        let mut d = if ntry > 0 { -max / v0 } else { max / v0 };
        let mut id = 1.0 / d;
        let mut sumqx = 0.0f32;
        let mut sumq2 = 0.0f32;
        for j in 0..BS {
            let al = id * xb[j];
            let li = best_index(al);
            l[ib * BS + j] = li;
            let q = values[li as usize] as f32;
            let w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = if sumq2 > 0.0 { x86_nan(sumqx / sumq2) } else { 0.0 };
        let mut best = d * sumqx;
        for itry in -ntry..=ntry {
            id = (itry as f32 + v0) / max;
            sumqx = 0.0;
            sumq2 = 0.0;
            for j in 0..BS {
                let al = id * xb[j];
                let li = best_index(al);
                let q = values[li as usize] as f32;
                let w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                d = x86_nan(sumqx / sumq2);
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if d.abs() > amax_scale {
            amax_scale = d.abs();
            max_scale = d;
        }
    }
    if nsub > 1 {
        *scales_h = 0;
        let d = -max_scale / 32.0;
        dh = f32_to_f16(d);
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        for ib in 0..nsub {
            let mut ls = nearest_int(id * scales[ib]).clamp(-32, 31);
            let dl = d * ls as f32;
            let idl = if dl != 0.0 { 1.0 / dl } else { 0.0 };
            let xb = &x[ib * BS..ib * BS + BS];
            for j in 0..BS {
                l[ib * BS + j] = best_index(idl * xb[j]);
            }
            ls += 32;
            let l_l = (ls & 0xF) as u8;
            let l_h = (ls >> 4) as u16;
            if ib % 2 == 0 {
                scales_l[ib / 2] = l_l;
            } else {
                scales_l[ib / 2] |= l_l << 4;
            }
            *scales_h |= l_h << (2 * (ib % 8));
        }
    } else {
        dh = f32_to_f16(scales[0]);
        if ntry > 0 {
            let id = if scales[0] != 0.0 { 1.0 / scales[0] } else { 0.0 };
            for j in 0..sbs {
                l[j] = best_index(id * x[j]);
            }
        }
    }
    for i in 0..sbs / 32 {
        for j in 0..16 {
            q4[16 * i + j] = l[32 * i + j] | (l[32 * i + 16 + j] << 4);
        }
    }
    dh
}

/// ggml's `quantize_row_iq4_nl_ref` (no search around the first scale).
pub fn quantize_row_nl(x: &[f32], blocks: &mut [BlockIq4Nl]) {
    quantize_row_nl_ntry(x, blocks, -1);
}

/// IQ4_NL with `ntry` scale candidates either side, as ggml's
/// `quantize_iq4_nl` (what `ggml_quantize_chunk` uses) does with `ntry = 7`.
pub fn quantize_row_nl_ntry(x: &[f32], blocks: &mut [BlockIq4Nl], ntry: i32) {
    let mut l = [0u8; QK_K];
    for (b, x) in blocks.iter_mut().zip(x.chunks_exact(QK)) {
        let mut h = 0u16;
        b.d = quantize_iq4_impl(x, &mut b.qs, &mut h, &mut [], &mut l, None, ntry);
    }
}

/// ggml's `quantize_row_iq4_xs_ref`.
pub fn quantize_row_xs(x: &[f32], blocks: &mut [BlockIq4Xs]) {
    quantize_row_xs_impl(x, None, blocks)
}

/// ggml's `quantize_iq4_xs` of one row: with an importance matrix's weights
/// `qw` (one per element of `x`), the scale search weighs each element by
/// `qw·sqrt(σ² + x²)` (σ² of its super-block) instead of x².
pub fn quantize_row_xs_impl(x: &[f32], qw: Option<&[f32]>, blocks: &mut [BlockIq4Xs]) {
    let mut l = [0u8; QK_K];
    for (i, (b, x)) in blocks.iter_mut().zip(x.chunks_exact(QK_K)).enumerate() {
        let mut h = 0u16;
        let w = qw.map(|q| &q[QK_K * i..QK_K * i + QK_K]);
        b.d = quantize_iq4_impl(x, &mut b.qs, &mut h, &mut b.scales_l, &mut l, w, 7);
        b.scales_h = h.to_le_bytes();
    }
}

/// ggml's `quantize_iq4_nl` of one row with an importance matrix's weights
/// `qw` (7 scale candidates either side, as the chunk quantizer).
pub fn quantize_row_nl_impl(x: &[f32], qw: &[f32], blocks: &mut [BlockIq4Nl]) {
    let mut l = [0u8; QK_K];
    for (i, (b, x)) in blocks.iter_mut().zip(x.chunks_exact(QK)).enumerate() {
        let mut h = 0u16;
        b.d = quantize_iq4_impl(x, &mut b.qs, &mut h, &mut [], &mut l, Some(&qw[QK * i..QK * i + QK]), 7);
    }
}
