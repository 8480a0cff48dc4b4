//! The search helpers of ggml's k-quant reference quantizers
//! (`make_qx_quants`, `make_q3_quants`, `make_qkx2_quants`, the 6-bit scale
//! packing), with the reference's exact order of float operations, and the
//! unpacked super-block the dot kernels share.

use super::{nearest_int, QK_K};

/// ggml's GROUP_MAX_EPS.
pub const GROUP_MAX_EPS: f32 = 1e-15;

/// A weight super-block unpacked for an integer dot with a Q8_K block:
/// `dot = d·da·Σ_g scales[g]·Σ_{i∈g} q[i]·a[i] − dmin·da·Σ_g mins[g]·bsums[g]`
/// over the 16 groups of 16 elements.
#[derive(Clone, Copy)]
pub struct KBlock {
    /// `[256]` quants, signed, in element order
    pub q: [i8; QK_K],
    /// `[16]` per-group integer scales
    pub scales: [i16; 16],
    /// `[16]` per-group integer minimums (all 0 for types without one)
    pub mins: [i16; 16],
    pub d: f32,
    /// 0.0 for types without a minimum
    pub dmin: f32,
}

impl KBlock {
    pub const ZERO: KBlock = KBlock { q: [0; QK_K], scales: [0; 16], mins: [0; 16], d: 0.0, dmin: 0.0 };
}

/// Huge inputs overflow the weighted sums to inf, and `inf / inf` or `inf −
/// inf` is NaN, whose sign is the CPU's: x86 (where the reference bytes come
/// from) sets it, aarch64 does not. A scale that lands in a block as an f16
/// NaN takes x86's default NaN, so every CPU writes the same bytes.
#[inline]
pub fn x86_nan(v: f32) -> f32 {
    if v.is_nan() {
        f32::from_bits(0xFFC0_0000)
    } else {
        v
    }
}

/// ggml's `make_qx_quants`: with quant weights `qw` (an importance matrix's
/// weights), they replace the weights `rmse_type` picks.
pub fn make_qx_quants(n: usize, nmax: i32, x: &[f32], l_out: &mut [i8], rmse_type: i32, qw: Option<&[f32]>) -> f32 {
    let mut max = 0.0f32;
    let mut amax = 0.0f32;
    for &v in &x[..n] {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        l_out[..n].fill(0);
        return 0.0;
    }
    let nmaxf = nmax as f32;
    let mut iscale = -nmaxf / max;
    let clamp = |l: i32| l.min(nmax - 1).max(-nmax);
    if rmse_type == 0 {
        for i in 0..n {
            l_out[i] = (nmax + clamp(nearest_int(iscale * x[i]))) as i8;
        }
        return 1.0 / iscale;
    }
    let (rmse_type, return_early) = if rmse_type < 0 { (-rmse_type, true) } else { (rmse_type, false) };
    let weight = |i: usize, v: f32| -> f32 {
        match (qw, rmse_type) {
            (Some(qw), _) => qw[i],
            (None, 1) => v * v,
            (None, 2) => 1.0,
            (None, 3) => v.abs(),
            (None, _) => v.abs().sqrt(),
        }
    };
    let mut sumlx = 0.0f32;
    let mut suml2 = 0.0f32;
    for i in 0..n {
        let l = clamp(nearest_int(iscale * x[i]));
        l_out[i] = (l + nmax) as i8;
        let w = weight(i, x[i]);
        let lf = l as f32;
        sumlx += w * x[i] * lf;
        suml2 += w * lf * lf;
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    if return_early {
        return if suml2 > 0.0 { x86_nan(0.5 * (scale + 1.0 / iscale)) } else { 1.0 / iscale };
    }
    let mut best = scale * sumlx;
    for is in -9i32..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmaxf + 0.1 * is as f32) / max;
        sumlx = 0.0;
        suml2 = 0.0;
        for (i, &xi) in x[..n].iter().enumerate() {
            let l = clamp(nearest_int(iscale * xi));
            let w = weight(i, xi);
            let lf = l as f32;
            sumlx += w * xi * lf;
            suml2 += w * lf * lf;
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for i in 0..n {
                l_out[i] = (nmax + clamp(nearest_int(iscale * x[i]))) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    x86_nan(scale)
}

/// ggml's `make_q3_quants` (used with `do_rmse = true`).
pub fn make_q3_quants(n: usize, nmax: i32, x: &[f32], l_out: &mut [i8], do_rmse: bool) -> f32 {
    let mut max = 0.0f32;
    let mut amax = 0.0f32;
    for &v in &x[..n] {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        l_out[..n].fill(0);
        return 0.0;
    }
    let clamp = |l: i32| l.min(nmax - 1).max(-nmax);
    let iscale = -(nmax as f32) / max;
    if do_rmse {
        let mut sumlx = 0.0f32;
        let mut suml2 = 0.0f32;
        for i in 0..n {
            let l = clamp(nearest_int(iscale * x[i]));
            l_out[i] = l as i8;
            let w = x[i] * x[i];
            sumlx += w * x[i] * l as f32;
            suml2 += w * l as f32 * l as f32;
        }
        for _ in 0..5 {
            let mut n_changed = 0;
            for i in 0..n {
                let w = x[i] * x[i];
                let li = l_out[i] as f32;
                let mut slx = sumlx - w * x[i] * li;
                if slx > 0.0 {
                    let mut sl2 = suml2 - w * li * li;
                    let new_l = clamp(nearest_int(x[i] * sl2 / slx));
                    if new_l != l_out[i] as i32 {
                        let nl = new_l as f32;
                        slx += w * x[i] * nl;
                        sl2 += w * nl * nl;
                        if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                            l_out[i] = new_l as i8;
                            sumlx = slx;
                            suml2 = sl2;
                            n_changed += 1;
                        }
                    }
                }
            }
            if n_changed == 0 {
                break;
            }
        }
        for l in &mut l_out[..n] {
            *l = (*l as i32 + nmax) as i8;
        }
        return if suml2 > 0.0 { sumlx / suml2 } else { 0.0 };
    }
    for i in 0..n {
        l_out[i] = (clamp(nearest_int(iscale * x[i])) + nmax) as i8;
    }
    1.0 / iscale
}

/// ggml's `make_qkx2_quants`: returns (scale, the_min). It is
/// [`make_qkx3_quants`] with explicit weights (the two differ only in an
/// empty-range test, `max == min` against `max <= min`, the same since
/// `max >= min` whenever both are numbers).
#[allow(clippy::too_many_arguments)]
pub fn make_qkx2_quants(
    n: usize,
    nmax: i32,
    x: &[f32],
    weights: &[f32],
    l_out: &mut [u8],
    l_aux: &mut [u8],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
    use_mad: bool,
) -> (f32, f32) {
    make_qkx3_quants(n, nmax, x, Some(weights), l_out, l_aux, rmin, rdelta, nstep, use_mad)
}

/// The weighted quantizers' per-element weights: the importance matrix's
/// weight times `sqrt(sigma2 + x²)` (`weight[j] = qw[j] * sqrtf(sigma2 +
/// x[j]*x[j])` in every `quantize_row_*_impl`).
pub fn imatrix_weights(qw: &[f32], x: &[f32], sigma2: f32, out: &mut [f32]) {
    for ((o, &q), &v) in out.iter_mut().zip(qw).zip(x) {
        *o = q * (sigma2 + v * v).sqrt();
    }
}

/// Σx² in element order (the reference's `sum_x2` loops).
pub fn sum_sq(x: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for &v in x {
        s += v * v;
    }
    s
}

/// ggml's `make_qkx3_quants`, the weighted quantizers' (scale, min) search
/// of a group: `weights` (None: x²) replace make_qkx2's. Returns (scale,
/// the_min); `l_out` gets the quants in 0..=nmax.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
pub fn make_qkx3_quants(
    n: usize,
    nmax: i32,
    x: &[f32],
    weights: Option<&[f32]>,
    l_out: &mut [u8],
    l_aux: &mut [u8],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
    use_mad: bool,
) -> (f32, f32) {
    let w_at = |i: usize| weights.map_or(x[i] * x[i], |w| w[i]);
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = w_at(0);
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = w_at(i);
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max <= min {
        l_out[..n].fill(0);
        return (0.0, -min);
    }
    let clamp = |l: i32| l.min(nmax).max(0);
    let nmaxf = nmax as f32;
    let mut iscale = nmaxf / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_mad = 0.0f32;
    for i in 0..n {
        let l = clamp(nearest_int(iscale * (x[i] - min)));
        l_out[i] = l as u8;
        let mut diff = scale * l as f32 + min - x[i];
        diff = if use_mad { diff.abs() } else { diff * diff };
        best_mad += w_at(i) * diff;
    }
    if nstep < 1 {
        return (x86_nan(scale), -x86_nan(min));
    }
    for is in 0..=nstep {
        iscale = (rmin + rdelta * is as f32 + nmaxf) / (max - min);
        let mut sum_l = 0.0f32;
        let mut sum_l2 = 0.0f32;
        let mut sum_xl = 0.0f32;
        for i in 0..n {
            let l = clamp(nearest_int(iscale * (x[i] - min)));
            l_aux[i] = l as u8;
            let w = w_at(i);
            let lf = l as f32;
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        let dd = sum_w * sum_l2 - sum_l * sum_l;
        if dd > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / dd;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / dd;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut mad = 0.0f32;
            for i in 0..n {
                let mut diff = this_scale * l_aux[i] as f32 + this_min - x[i];
                diff = if use_mad { diff.abs() } else { diff * diff };
                mad += w_at(i) * diff;
            }
            if mad < best_mad {
                l_out[..n].copy_from_slice(&l_aux[..n]);
                best_mad = mad;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (x86_nan(scale), -x86_nan(min))
}

/// ggml's `make_qp_quants`: non-negative quants (0..=nmax) of the positive
/// values `x` (a super-block's group scales or mins) with weights `qw`.
/// The quants are stored as C's `uint8_t L[]`: a negative integer wraps, and
/// later passes read the wrapped byte, as the reference does.
pub fn make_qp_quants(n: usize, nmax: i32, x: &[f32], l_out: &mut [u8], qw: &[f32]) -> f32 {
    let mut max = 0.0f32;
    for &v in &x[..n] {
        max = if max > v { max } else { v }; // C's MAX(max, x[i])
    }
    if max < GROUP_MAX_EPS {
        l_out[..n].fill(0);
        return 0.0;
    }
    let nmaxf = nmax as f32;
    let mut iscale = nmaxf / max;
    for i in 0..n {
        l_out[i] = nearest_int(iscale * x[i]) as u8;
    }
    let scale = 1.0 / iscale;
    let mut best_mse = 0.0f32;
    for i in 0..n {
        let diff = x[i] - scale * l_out[i] as f32;
        best_mse += qw[i] * diff * diff;
    }
    for is in -4i32..=4 {
        if is == 0 {
            continue;
        }
        let iscale_is = (0.1 * is as f32 + nmaxf) / max;
        let scale_is = 1.0 / iscale_is;
        let mut mse = 0.0f32;
        for i in 0..n {
            let l = nearest_int(iscale_is * x[i]).min(nmax);
            let diff = x[i] - scale_is * l as f32;
            mse += qw[i] * diff * diff;
        }
        if mse < best_mse {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    let mut sumlx = 0.0f32;
    let mut suml2 = 0.0f32;
    for i in 0..n {
        let l = nearest_int(iscale * x[i]).min(nmax);
        l_out[i] = l as u8;
        let w = qw[i];
        sumlx += w * x[i] * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    for _ in 0..5 {
        let mut n_changed = 0;
        for i in 0..n {
            let w = qw[i];
            let li = l_out[i] as f32;
            let mut slx = sumlx - w * x[i] * li;
            let mut sl2 = suml2 - w * li * li;
            if slx > 0.0 && sl2 > 0.0 {
                let new_l = nearest_int(x[i] * sl2 / slx).min(nmax);
                if new_l != l_out[i] as i32 {
                    slx += w * x[i] * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        l_out[i] = new_l as u8;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed += 1;
                    }
                }
            }
        }
        if n_changed == 0 {
            break;
        }
    }
    if suml2 > 0.0 {
        x86_nan(sumlx / suml2)
    } else {
        0.0
    }
}

/// ggml's `get_scale_min_k4`: the 6-bit scale and min of sub-block `j` (0..8)
/// from the 12 packed bytes of Q4_K/Q5_K.
#[inline]
pub fn get_scale_min_k4(j: usize, q: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// The shared part of the Q4_K/Q5_K weighted quantizers
/// (`quantize_row_q{4,5}_K_impl` with an importance matrix): per group of 32,
/// `make_qkx3_quants` with weights `qw·sqrt(σ² + x²)`; the groups' scales and
/// minimums quantized to 6 bits by `make_qp_quants`, weighted by the groups'
/// weight sums. Returns what [`quantize_kx_superblock`] returns. `clamp63`:
/// Q5_K clamps the 6-bit values to 63 before packing, Q4_K packs them as they
/// come (a wrapped negative one included).
pub fn quantize_kx_superblock_impl(
    x: &[f32],
    qw: &[f32],
    nmax: i32,
    clamp63: bool,
) -> ([u8; 2], [u8; 2], [u8; 12], [u8; QK_K]) {
    use super::{f16_to_f32, f32_to_f16};
    let mut l = [0u8; QK_K];
    let mut l_aux = [0u8; 32];
    let mut weights = [0.0f32; 32];
    let (mut ls, mut lm) = ([0u8; QK_K / 32], [0u8; QK_K / 32]);
    let mut sw = [0.0f32; QK_K / 32];
    let mut mins = [0.0f32; QK_K / 32];
    let mut scales = [0.0f32; QK_K / 32];
    let sigma2 = 2.0 * sum_sq(&x[..QK_K]) / QK_K as f32;
    for j in 0..QK_K / 32 {
        let xs = &x[32 * j..32 * j + 32];
        imatrix_weights(&qw[32 * j..32 * j + 32], xs, sigma2, &mut weights);
        let mut sumw = 0.0f32;
        for &w in &weights {
            sumw += w;
        }
        sw[j] = sumw;
        let (s, m) = make_qkx3_quants(
            32,
            nmax,
            xs,
            Some(&weights),
            &mut l[32 * j..32 * j + 32],
            &mut l_aux,
            -0.9,
            0.05,
            36,
            false,
        );
        scales[j] = s;
        mins[j] = m;
    }
    let d_block = make_qp_quants(QK_K / 32, 63, &scales, &mut ls, &sw);
    let m_block = make_qp_quants(QK_K / 32, 63, &mins, &mut lm, &sw);
    let mut sc = [0u8; 12];
    for j in 0..QK_K / 32 {
        let (s, m) = if clamp63 { (ls[j].min(63), lm[j].min(63)) } else { (ls[j], lm[j]) };
        if j < 4 {
            sc[j] = s;
            sc[j + 4] = m;
        } else {
            sc[j + 4] = (s & 0xF) | ((m & 0xF) << 4);
            sc[j - 4] |= (s >> 4) << 6;
            sc[j] |= (m >> 4) << 6;
        }
    }
    let d = f32_to_f16(d_block);
    let dmin = f32_to_f16(m_block);
    for j in 0..QK_K / 32 {
        let (s, m) = get_scale_min_k4(j, &sc);
        let dd = f16_to_f32(d) * s as f32;
        if dd == 0.0 {
            continue;
        }
        let dm = f16_to_f32(dmin) * m as f32;
        for ii in 0..32 {
            let q = nearest_int((x[32 * j + ii] + dm) / dd);
            l[32 * j + ii] = q.min(nmax).max(0) as u8;
        }
    }
    (d, dmin, sc, l)
}

/// The shared part of the Q4_K/Q5_K reference quantizers: per sub-block of
/// 32, the weighted (scale, min) search, then the 6-bit packing and the
/// super-block scales. Returns (d bits, dmin bits, packed scales, L) where L
/// holds the quants (0..=nmax) requantized with the packed scales.
pub fn quantize_kx_superblock(x: &[f32], nmax: i32, rmin: f32, nstep: i32) -> ([u8; 2], [u8; 2], [u8; 12], [u8; QK_K]) {
    use super::{f16_to_f32, f32_to_f16};
    let mut l = [0u8; QK_K];
    let mut l_aux = [0u8; 32];
    let mut weights = [0.0f32; 32];
    let mut mins = [0.0f32; QK_K / 32];
    let mut scales = [0.0f32; QK_K / 32];
    let mut max_scale = 0.0f32;
    let mut max_min = 0.0f32;
    for j in 0..QK_K / 32 {
        let xs = &x[32 * j..32 * j + 32];
        let mut sum_x2 = 0.0f32;
        for &v in xs {
            sum_x2 += v * v;
        }
        let av_x = (sum_x2 / 32.0).sqrt();
        for (w, &v) in weights.iter_mut().zip(xs) {
            *w = av_x + v.abs();
        }
        let (s, m) =
            make_qkx2_quants(32, nmax, xs, &weights, &mut l[32 * j..32 * j + 32], &mut l_aux, rmin, 0.1, nstep, false);
        scales[j] = s;
        mins[j] = m;
        if s > max_scale {
            max_scale = s;
        }
        if m > max_min {
            max_min = m;
        }
    }
    let inv_scale = if max_scale > 0.0 { 63.0 / max_scale } else { 0.0 };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let mut sc = [0u8; 12];
    for j in 0..QK_K / 32 {
        let ls = (nearest_int(inv_scale * scales[j]) as u8).min(63);
        let lm = (nearest_int(inv_min * mins[j]) as u8).min(63);
        if j < 4 {
            sc[j] = ls;
            sc[j + 4] = lm;
        } else {
            sc[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
            sc[j - 4] |= (ls >> 4) << 6;
            sc[j] |= (lm >> 4) << 6;
        }
    }
    let d = f32_to_f16(max_scale / 63.0);
    let dmin = f32_to_f16(max_min / 63.0);
    for j in 0..QK_K / 32 {
        let (s, m) = get_scale_min_k4(j, &sc);
        let dd = f16_to_f32(d) * s as f32;
        if dd == 0.0 {
            continue;
        }
        let dm = f16_to_f32(dmin) * m as f32;
        for ii in 0..32 {
            let q = nearest_int((x[32 * j + ii] + dm) / dd);
            l[32 * j + ii] = q.min(nmax).max(0) as u8;
        }
    }
    (d, dmin, sc, l)
}
