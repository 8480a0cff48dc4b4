//! The emulated reference paths: equal to the reference's own mul_mat on
//! goldens, and every kernel set equal to the scalar definitions.

use super::{path, Path};
use crate::ggml_type::GgmlType;
use crate::kernels::dispatch::available_sets;
use crate::kernels::matmul::{matmul_with, Weights};
use crate::kernels::pool::ThreadPool;
use crate::kernels::scalar;
use crate::kernels::tests::Rng;
use crate::quant;

/// The weight types with an emulated path, and their golden files
/// (`scripts/make-quant-goldens.sh`, `scripts/quant-goldens/make_matmul_goldens.c`):
/// a 16x512 matrix (12x512 for the repacked types' other paths) and the
/// reference's mul_mat for 1..12 activation rows.
fn goldens() -> Vec<(GgmlType, &'static [u8])> {
    macro_rules! g {
        ($t:ident, $f:literal) => {
            (GgmlType::$t, &include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/goldens/quant/", $f))[..])
        };
    }
    vec![
        g!(Q4_0, "matmul_q4_0.bin"),
        g!(IQ4_NL, "matmul_iq4_nl.bin"),
        g!(Q4_K, "matmul_q4_K.bin"),
        g!(Q2_K, "matmul_q2_K.bin"),
        g!(Q4_K, "matmul_q4_K_rows12.bin"),
        g!(Q2_K, "matmul_q2_K_rows12.bin"),
        g!(Q4_0, "matmul_q4_0_rows12.bin"),
        g!(IQ4_NL, "matmul_iq4_nl_rows12.bin"),
        g!(Q3_K, "matmul_q3_K.bin"),
        g!(Q5_K, "matmul_q5_K.bin"),
        g!(Q6_K, "matmul_q6_K.bin"),
        g!(IQ4_XS, "matmul_iq4_xs.bin"),
        g!(TQ1_0, "matmul_tq1_0.bin"),
        g!(TQ2_0, "matmul_tq2_0.bin"),
        g!(Q1_0, "matmul_q1_0.bin"),
        g!(Q2_0, "matmul_q2_0.bin"),
        g!(IQ2_XXS, "matmul_iq2_xxs.bin"),
        g!(IQ2_XS, "matmul_iq2_xs.bin"),
        g!(IQ2_S, "matmul_iq2_s.bin"),
        g!(IQ3_XXS, "matmul_iq3_xxs.bin"),
        g!(IQ3_S, "matmul_iq3_s.bin"),
        g!(IQ1_S, "matmul_iq1_s.bin"),
        g!(IQ1_M, "matmul_iq1_m.bin"),
        g!(NVFP4, "matmul_nvfp4.bin"),
        // scripts/quant-goldens/make_float_matmul_goldens.c
        g!(F32, "matmul_f32_r16_c128.bin"),
        g!(F32, "matmul_f32_r14_c128.bin"),
        g!(F32, "matmul_f32_r16_c144.bin"),
        g!(F32, "matmul_f32_r16_c155.bin"),
        g!(BF16, "matmul_bf16_r16_c128.bin"),
        g!(BF16, "matmul_bf16_r14_c128.bin"),
        g!(BF16, "matmul_bf16_r16_c160.bin"),
        g!(BF16, "matmul_bf16_r16_c144.bin"),
        g!(BF16, "matmul_bf16_r16_c131.bin"),
        g!(F16, "matmul_f16.bin"),
        g!(F16, "matmul_f16_rows14.bin"),
    ]
}

fn u32_at(b: &[u8], off: usize) -> usize {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]]) as usize
}

#[test]
fn matmul_equals_the_reference_mul_mat() {
    let x = quant::tests::golden_input();
    let pool = ThreadPool::new(2).expect("pool");
    for (ty, g) in goldens() {
        let (rows, cols, n_cases, repacked) = (u32_at(g, 0), u32_at(g, 4), u32_at(g, 8), u32_at(g, 12) != 0);
        let wbytes = rows * ty.row_size(cols as u64).expect("row size") as usize;
        let w = Weights::new(&g[16..16 + wbytes], ty, rows, cols).expect("weights");
        let mut off = 16 + wbytes;
        let mut checked = 0;
        for _ in 0..n_cases {
            let nt = u32_at(g, off);
            off += 4;
            let want: Vec<f32> = g[off..off + 4 * nt * rows]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            off += 4 * nt * rows;
            assert_eq!(path(ty, rows, nt) == Some(Path::Repack), repacked, "{ty}: repacked");
            for set in available_sets() {
                if !set.name.starts_with("avx2") && path(ty, rows, nt).is_none() {
                    // minfer's own 32-block kernels: only the AVX2 set sums in
                    // ggml_vec_dot's (and tinyBLAS's) lane order
                    continue;
                }
                let mut y = vec![0f32; nt * rows];
                matmul_with(set, &pool, &w, &x[..nt * cols], nt, &mut y).expect("matmul");
                for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                    // The input's huge values make some sums overflow to NaN,
                    // whose sign bit is the CPU's (x86: set, aarch64: clear).
                    let same = a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
                    assert!(same, "{} {ty} nt={nt} y[{}][{}]: {a} vs {b}", set.name, i / rows, i % rows);
                }
            }
            checked += 1;
        }
        assert_eq!(off, g.len(), "{ty}: golden size");
        assert!(checked >= 8, "{ty}: cases");
    }
}

#[test]
fn paths_follow_the_reference_rules() {
    use GgmlType::*;
    assert_eq!(path(Q4_0, 576, 1), Some(Path::Repack));
    assert_eq!(path(Q4_0, 580, 9), None); // not a multiple of 8: vec_dot / llamafile
    assert_eq!(path(IQ4_NL, 580, 1), Some(Path::VecDot));
    assert_eq!(path(IQ4_NL, 580, 2), None);
    assert_eq!(path(Q4_K, 1536, 512), Some(Path::Repack));
    assert_eq!(path(Q4_K, 1540, 512), Some(Path::Tiled));
    assert_eq!(path(Q6_K, 576, 8), Some(Path::Tiled));
    assert_eq!(path(Q6_K, 576, 7), Some(Path::VecDot));
    assert_eq!(path(Q8_0, 576, 512), None);
    assert_eq!(path(F32, 576, 512), Some(Path::TinyBlasF32));
    assert_eq!(path(F32, 576, 1), Some(Path::VecDotF32)); // llamafile_sgemm wants n >= 2
    assert_eq!(path(F32, 578, 8), Some(Path::VecDotF32)); // and m % 4 == 0
    assert_eq!(path(BF16, 49152, 2), Some(Path::TinyBlasBf16));
    assert_eq!(path(BF16, 576, 1), Some(Path::VecDotBf16));
    assert_eq!(path(BF16, 570, 9), Some(Path::VecDotBf16));
    assert_eq!(path(F16, 576, 512), Some(Path::TinyBlasF16));
    assert_eq!(path(F16, 576, 2), Some(Path::TinyBlasF16));
    assert_eq!(path(F16, 576, 1), Some(Path::VecDotF16)); // llamafile_sgemm wants n >= 2
    assert_eq!(path(F16, 578, 8), Some(Path::VecDotF16)); // and m % 4 == 0
}

/// Weight rows of `ty`: quantized data, then a row of arbitrary bytes with
/// finite f16 scales (bit patterns the quantizers rarely write).
fn weight_rows(ty: GgmlType, rows: usize, cols: usize, rng: &mut Rng) -> Vec<u8> {
    let rb = ty.row_size(cols as u64).expect("row size") as usize;
    let mut w = vec![0u8; rows * rb];
    for (r, row) in w.chunks_exact_mut(rb).enumerate() {
        // (float types: arbitrary bytes are NaNs and infinities, whose
        // payloads the scalar and SIMD code need not agree on; their tests
        // cover special values)
        // (the IQ1–IQ3 types, which minfer does not quantize: every row)
        let arbitrary = r % 3 == 2 || !quant::can_quantize(ty);
        if arbitrary && !matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
            row.iter_mut().for_each(|b| *b = rng.next() as u8);
            for blk in row.chunks_exact_mut(ty.type_size()) {
                for &off in crate::kernels::tests::scale_fields(ty) {
                    blk[off..off + 2].copy_from_slice(&quant::f32_to_f16(rng.uni() * 0.01));
                }
                if ty == GgmlType::IQ1_M {
                    // (its f16 scale is the top nibbles of its 4 scale words)
                    let h = u16::from_le_bytes(quant::f32_to_f16(rng.uni() * 0.01));
                    for k in 0..4 {
                        blk[48 + 2 * k + 1] = (blk[48 + 2 * k + 1] & 0x0f) | ((((h >> (4 * k)) & 15) as u8) << 4);
                    }
                }
                if ty == GgmlType::MXFP4 {
                    // (an E8M0 exponent near 2^-1: finite sums)
                    blk[0] = 112 + (rng.next() % 24) as u8;
                }
            }
        } else {
            quant::quantize_row(ty, &rng.data(cols), row).expect("valid row");
        }
    }
    w
}

/// Every kernel set gives a `rows`×`cols` matrix of `ty` the scalar set's
/// bits for each token count of `nts`.
fn sets_equal_scalar(ty: GgmlType, rows: usize, cols: usize, nts: &[usize], rng: &mut Rng) {
    let pool = ThreadPool::new(2).expect("pool");
    let w = weight_rows(ty, rows, cols, rng);
    let wm = Weights::new(&w, ty, rows, cols).expect("weights");
    for &nt in nts {
        let x = rng.data(nt * cols);
        let mut want = vec![0f32; nt * rows];
        matmul_with(&scalar::SET, &pool, &wm, &x, nt, &mut want).expect("matmul");
        for set in available_sets().into_iter().skip(1) {
            let mut y = vec![f32::NAN; nt * rows];
            matmul_with(set, &pool, &wm, &x, nt, &mut y).expect("matmul");
            for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{} {ty} nt={nt} y[{}][{}]: {a} vs {b}",
                    set.name,
                    i / rows,
                    i % rows
                );
            }
        }
    }
}

#[test]
fn every_set_computes_the_scalar_emulations_bits() {
    use GgmlType::*;
    let mut rng = Rng::new(77);
    for ty in
        [Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, Q4_0, IQ4_NL, MXFP4, NVFP4, TQ1_0, TQ2_0, Q1_0, Q2_0, F32, F16, BF16]
    {
        sets_equal_scalar(ty, 24, 768, &[1, 3, 4, 5, 7, 8, 9, 13], &mut rng);
    }
    for ty in [IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M] {
        sets_equal_scalar(ty, 24, 768, &[1, 3, 4, 5, 7, 8, 9, 13], &mut rng);
    }
}

#[test]
fn table_types_not_repacked_run_their_vec_dot_on_every_set() {
    // rows not a multiple of 8: ggml_vec_dot_mxfp4_q8_0 for every token
    // count (no tinyBLAS), the same bits on every set
    use GgmlType::*;
    assert_eq!(path(MXFP4, 20, 1), Some(Path::VecDot));
    assert_eq!(path(MXFP4, 20, 9), Some(Path::VecDot));
    assert_eq!(path(MXFP4, 24, 9), Some(Path::Repack));
    sets_equal_scalar(MXFP4, 20, 96, &[1, 2, 9], &mut Rng::new(78));
    // IQ4_NL's one-token product there is its ggml_vec_dot too (from 2
    // tokens llamafile's, whose bits are the set's own)
    assert_eq!(path(IQ4_NL, 20, 1), Some(Path::VecDot));
    sets_equal_scalar(IQ4_NL, 20, 96, &[1], &mut Rng::new(79));
}

#[cfg(target_arch = "x86_64")]
#[test]
fn repack_row_block_kernels_compute_the_scalar_emulations_bits() {
    // The 8-rows-per-step kernels (AVX-512 VNNI) against the scalar
    // emulation of the repacked path, output by output: row counts around
    // the group of 8 (leftover rows), token counts around the gemm step and
    // the gemm/gemv split, odd weight/activation/output strides and
    // unaligned addresses.
    use GgmlType::*;
    row_block_kernels_give_the_scalar_bits(Path::Repack, &[Q4_0, IQ4_NL, MXFP4, Q4_K, Q2_K], 768);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn tiled_row_block_kernels_compute_the_scalar_emulations_bits() {
    // The 8-row kernels of the tiled path (× 16 tokens on AVX-512 VNNI, × 8
    // on AVX2, which has none for IQ4_XS), as above: leftover rows and
    // tokens (token groups), 3 super-blocks.
    use GgmlType::*;
    row_block_kernels_give_the_scalar_bits(Path::Tiled, &[Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS], 768);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn f32_row_block_kernels_compute_the_scalar_emulations_bits() {
    // F32 weights' tinyBLAS walk on AVX-512 (panels, 3 × 8 tiles, columns
    // in parts past 768) and its ggml_vec_dot_f32 fallback (n % 16 != 0)
    for cols in [768, 1536, 776] {
        row_block_kernels_give_the_scalar_bits(Path::TinyBlasF32, &[GgmlType::F32], cols);
    }
}

#[cfg(target_arch = "x86_64")]
fn row_block_kernels_give_the_scalar_bits(path: Path, types: &[GgmlType], cols: usize) {
    use crate::kernels::dispatch::ActType;
    // every set's kernel where it has one (the AVX2 and the VNNI sets)
    let kernels: Vec<(&str, GgmlType, crate::kernels::dispatch::RowsFn)> = available_sets()
        .into_iter()
        .flat_map(|set| types.iter().filter_map(move |&ty| Some((set.name, ty, (set.ggml_rows)(ty, path)?))))
        .collect();
    if kernels.is_empty() {
        skip_test!("no row-block kernel of {path:?} on this CPU");
        return;
    }
    let mut rng = Rng::new(5);
    for (set_name, ty, rows_f) in kernels {
        let one = super::scalar_tile(ty, path).expect("scalar emulation");
        let act = ActType::for_weight(ty).expect("act");
        let rb = ty.row_size(cols as u64).expect("row size") as usize;
        let ws = rb + 3;
        // (F32 activations are f32 rows: their stride a whole number of
        // floats, as the matmul lays them out)
        let pad = if path == Path::TinyBlasF32 { 4 } else { 5 };
        let (arow, s) = (act.row_bytes(cols), act.row_bytes(cols) + pad);
        let w0 = weight_rows(ty, 17, cols, &mut rng);
        // rows `ws` bytes apart from an odd address
        let mut w = vec![0u8; 1 + 17 * ws];
        for r in 0..17 {
            w[1 + r * ws..1 + r * ws + rb].copy_from_slice(&w0[r * rb..(r + 1) * rb]);
        }
        let nts: Vec<usize> = (1..=40).chain([259]).collect();
        let max_nt = 259;
        let mut a = vec![0u8; 1 + max_nt * s];
        for t in 0..max_nt {
            let x = rng.data(cols);
            scalar::SET.quantize_act(act, &x, &mut a[1 + t * s..1 + t * s + arow]).expect("quantize");
        }
        for n_rows in 1..=17 {
            for &nt in &nts {
                let os = nt + 1;
                let mut y = vec![f32::NAN; n_rows * os];
                // SAFETY: the CPU has AVX-512 VNNI (checked above); rows
                // and tokens lie within `w` and `a`, `y` holds n_rows
                // rows of `os >= nt` outputs.
                // SAFETY: (the set runs on this CPU: `available_sets`)
                unsafe { rows_f(cols, &w[1..], ws, n_rows, &a[1..], s, nt, &mut y, os) };
                for r in 0..n_rows {
                    let mut want = vec![0f32; nt];
                    // SAFETY: as above, one row (the scalar code has no CPU needs).
                    unsafe { one(cols, &w[1 + r * ws..], &a[1..], s, &mut want) };
                    for t in 0..nt {
                        let got = y[r * os + t];
                        assert_eq!(
                            got.to_bits(),
                            want[t].to_bits(),
                            "{set_name} {ty} {path:?} n_rows={n_rows} nt={nt} y[{r}][{t}]: {got} vs {}",
                            want[t]
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn repack_tiles_read_back_the_files_rows() {
    use super::repack_tiles::{build, read_row, tiles_bytes};
    use GgmlType::*;
    let mut rng = Rng::new(11);
    assert_eq!(tiles_bytes(Q4_0, 12, 64), None, "rows not a multiple of 8");
    assert_eq!(tiles_bytes(Q8_0, 16, 64), None, "not a repacked 32-block type");
    assert_eq!(tiles_bytes(Q4_K, 16, 576), None, "Q4_K: not whole super-blocks");
    for ty in [Q4_0, IQ4_NL, MXFP4, Q4_K] {
        for (rows, cols) in [(8, 32usize), (24, 96), (16, 576), (40, 64)] {
            let cols = if ty == Q4_K { cols.next_multiple_of(256) } else { cols };
            let w = weight_rows(ty, rows, cols, &mut rng);
            let mut tiles = vec![0xAAu8; tiles_bytes(ty, rows, cols).expect("tiled")];
            build(ty, rows, cols, &w, &mut tiles);
            let rb = w.len() / rows;
            let mut row = vec![0u8; rb];
            for r in 0..rows {
                read_row(ty, rows, cols, &tiles, r, &mut row);
                assert_eq!(row, &w[r * rb..(r + 1) * rb], "{ty} {rows}x{cols} row {r}");
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn repack_tiled_kernels_compute_the_scalar_emulations_bits() {
    // The kernel over load-time tiles against the scalar emulation of the
    // repacked path, output by output: groups of 8 rows in odd and even
    // numbers (the kernel steps 16 rows, a last strip of 8), token counts
    // around the 4- and 6-token steps, odd activation/output strides,
    // unaligned tiles; and through the matmul (tasks over the rows) against
    // the scalar set.
    use super::repack_tiles::{build, tiles_bytes};
    use crate::kernels::dispatch::ActType;
    use GgmlType::*;
    // every set's kernel where it has one (the AVX2 and the VNNI sets)
    let kernels: Vec<(&crate::kernels::dispatch::KernelSet, GgmlType, crate::kernels::dispatch::TiledFn)> =
        available_sets()
            .into_iter()
            .flat_map(|set| {
                [Q4_0, IQ4_NL, MXFP4, Q4_K].into_iter().filter_map(move |ty| Some((set, ty, (set.tiled)(ty)?)))
            })
            .collect();
    if kernels.is_empty() {
        skip_test!("no tiled kernel on this CPU");
        return;
    }
    let mut rng = Rng::new(7);
    let pool = ThreadPool::new(3).expect("pool");
    for (set, ty, f) in kernels {
        let one = super::scalar_tile(ty, Path::Repack).expect("scalar emulation");
        let act = ActType::for_weight(ty).expect("act");
        for cols in [32usize, 64, 576, 1536] {
            let cols = if ty == Q4_K { cols.next_multiple_of(256) } else { cols };
            let rb = ty.row_size(cols as u64).expect("row size") as usize;
            let (arow, s) = (act.row_bytes(cols), act.row_bytes(cols) + 5);
            // (from 16 tokens AVX2 takes `repack_tiles_wide`: 3 tokens a
            // step, so 16–18 end on each remainder; 300 spans four chunks)
            let max_nt = if cols == 1536 { 300 } else { 67 };
            let mut a = vec![0u8; 1 + max_nt * s];
            for t in 0..max_nt {
                let x = rng.data(cols);
                scalar::SET.quantize_act(act, &x, &mut a[1 + t * s..1 + t * s + arow]).expect("quantize");
            }
            for rows in [8, 16, 24, 40] {
                let w = weight_rows(ty, rows, cols, &mut rng);
                let tb = tiles_bytes(ty, rows, cols).expect("tiled");
                let mut tiles = vec![0u8; tb + 1];
                build(ty, rows, cols, &w, &mut tiles[1..]);
                for nt in (1..=18).chain([max_nt]) {
                    // token-major, with a gap after each token's rows that
                    // the kernel must leave alone
                    let os = rows + 3;
                    let mut y = vec![f32::NAN; nt * os];
                    // SAFETY: the set runs on this CPU (`available_sets`); the
                    // tiles hold `rows` rows, `a` nt tokens `s` apart, `y`
                    // nt tokens of `os >= rows` outputs.
                    unsafe { f(cols, &tiles[1..], rows, &a[1..], s, nt, y.as_mut_ptr(), os) };
                    for t in 0..nt {
                        assert!(
                            y[t * os + rows..(t + 1) * os].iter().all(|v| v.is_nan()),
                            "{} {ty}: wrote past token {t}'s rows",
                            set.name
                        );
                    }
                    for r in 0..rows {
                        let mut want = vec![0f32; nt];
                        // SAFETY: one row of `w`, activations as above.
                        unsafe { one(cols, &w[r * rb..], &a[1..], s, &mut want) };
                        for t in 0..nt {
                            let got = y[t * os + r];
                            assert_eq!(
                                got.to_bits(),
                                want[t].to_bits(),
                                "{} {ty} {rows}x{cols} nt={nt} y[{r}][{t}]: {got} vs {}",
                                set.name,
                                want[t]
                            );
                        }
                    }
                }
                // the matmul reads the tiles (rows cut into tasks by 8)
                let wm = Weights::new(&w, ty, rows, cols).expect("weights");
                let wt = wm.with_tiles(&tiles[1..]).expect("tiles");
                assert!(wm.with_tiles(&tiles).is_err(), "a wrong tile size is refused");
                for nt in [1, 2, 5, 9] {
                    let x = rng.data(nt * cols);
                    let mut want = vec![0f32; nt * rows];
                    matmul_with(&scalar::SET, &pool, &wm, &x, nt, &mut want).expect("matmul");
                    // the scalar set ignores the tiles
                    let mut y = vec![f32::NAN; nt * rows];
                    matmul_with(&scalar::SET, &pool, &wt, &x, nt, &mut y).expect("matmul");
                    assert!(y.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "scalar with tiles");
                    matmul_with(set, &pool, &wt, &x, nt, &mut y).expect("matmul");
                    for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                        assert_eq!(
                            a.to_bits(),
                            b.to_bits(),
                            "{} {ty} {rows}x{cols} nt={nt} matmul y[{}][{}]",
                            set.name,
                            i / rows,
                            i % rows
                        );
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn tiled_e8m0_scales_are_the_scalar_conversion_for_every_exponent() {
    // MXFP4's tiles keep the E8M0 bytes; the tiled kernels turn 8 or 16 of
    // them at once into e8m0_to_f32_half's floats, the two branches (e < 2:
    // subnormal) included.
    use super::repack_tiles::x86::{e8m0_half_x16, e8m0_half_x8};
    use crate::quant::mxfp4::e8m0_to_f32_half;
    #[target_feature(enable = "avx2,fma,f16c,avx512f")]
    unsafe fn both(e: &[u8; 16]) -> ([f32; 8], [f32; 16]) {
        let (mut a, mut b) = ([0f32; 8], [0f32; 16]);
        // SAFETY: the caller checked the features; `e` has 16 bytes, `a` and
        // `b` 8 and 16 floats.
        unsafe {
            std::arch::x86_64::_mm256_storeu_ps(a.as_mut_ptr(), e8m0_half_x8(e.as_ptr()));
            std::arch::x86_64::_mm512_storeu_ps(b.as_mut_ptr(), e8m0_half_x16(e.as_ptr()));
        }
        (a, b)
    }
    if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("fma")) {
        skip_test!("no AVX-512F on this CPU");
        return;
    }
    for base in (0..256).step_by(16) {
        // a shuffled order, so a lane does not always see the same residue
        let e: [u8; 16] = std::array::from_fn(|i| (base + (i * 7) % 16) as u8);
        // SAFETY: the features were checked above.
        let (a, b) = unsafe { both(&e) };
        for i in 0..16 {
            let want = e8m0_to_f32_half(e[i]).to_bits();
            assert_eq!(b[i].to_bits(), want, "x16, e = {}", e[i]);
            if i < 8 {
                assert_eq!(a[i].to_bits(), want, "x8, e = {}", e[i]);
            }
        }
    }
}

#[test]
fn q8_0_vec_dots_keep_negated_minus_128_as_the_reference() {
    // Q1_0's sign bits and NVFP4's negative codes negate activations as the
    // reference's byte negation and `vpsignb` do, −(−128) staying −128 (Q2_0's
    // generic C multiplies plainly); the activation quantizer writes −128 only
    // for non-finite inputs, so these Q8_0 rows are built by hand with many
    // (and ±127 beside them): every set's vec_dot gives the scalar
    // emulation's bits, for 1 to 9 tokens at a stride with a gap.
    use GgmlType::*;
    const Q8: usize = 34;
    let mut rng = Rng::new(84);
    let (rows, cols) = (4, 768);
    let nb = cols / quant::QK;
    let stride = nb * Q8 + 6;
    for ty in [Q1_0, Q2_0, NVFP4] {
        let w = weight_rows(ty, rows, cols, &mut rng);
        let rb = w.len() / rows;
        let scalar_f = (scalar::SET.ggml)(ty, Path::VecDot).expect("scalar vec_dot");
        for nt in 1..=9 {
            let mut a = vec![0u8; nt * stride];
            let mut minus_128 = 0;
            for row in a.chunks_exact_mut(stride) {
                for blk in row[..nb * Q8].chunks_exact_mut(Q8) {
                    blk[..2].copy_from_slice(&quant::f32_to_f16(0.01 + 0.02 * rng.uni()));
                    for q in &mut blk[2..] {
                        *q = match rng.next() % 4 {
                            0 => 0x80,
                            1 => 0x7f,
                            _ => rng.next() as u8,
                        };
                        minus_128 += (*q == 0x80) as usize;
                    }
                }
            }
            assert!(minus_128 > 0);
            for wr in w.chunks_exact(rb) {
                let mut want = vec![0f32; nt];
                // SAFETY: the scalar set runs on any CPU; `wr` is one row of
                // `cols`, `a` holds `nt` rows of `cols / 32` Q8_0 blocks
                // `stride` bytes apart.
                unsafe { scalar_f(cols, wr, &a, stride, &mut want) };
                for set in available_sets().into_iter().skip(1) {
                    let f = (set.ggml)(ty, Path::VecDot).expect("vec_dot");
                    let mut got = vec![f32::NAN; nt];
                    // SAFETY: `available_sets` lists only sets this CPU runs;
                    // the buffers as above.
                    unsafe { f(cols, wr, &a, stride, &mut got) };
                    for (t, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(g.to_bits(), w.to_bits(), "{} {ty} nt={nt} t={t}: {g} vs {w}", set.name);
                    }
                }
            }
        }
    }
}

#[test]
fn iq_vec_dots_keep_negated_minus_128_as_the_reference() {
    // The reference's `vpsignb` leaves −128 negated at −128; the activation
    // quantizer seldom writes −128, so these Q8_K rows are built by hand with
    // many (and ±127 beside them): every set's IQ1–IQ3 vec_dot gives the
    // scalar emulation's bits, for 1 to 9 tokens at a stride with a gap.
    use GgmlType::*;
    const Q8K: usize = 292;
    let mut rng = Rng::new(83);
    let (rows, cols) = (4, 768);
    let nb = cols / quant::QK_K;
    let stride = nb * Q8K + 20;
    for ty in [IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M] {
        let w = weight_rows(ty, rows, cols, &mut rng);
        let rb = w.len() / rows;
        let scalar_f = (scalar::SET.ggml)(ty, Path::VecDot).expect("scalar vec_dot");
        for nt in 1..=9 {
            let mut a = vec![0u8; nt * stride];
            let mut minus_128 = 0;
            for row in a.chunks_exact_mut(stride) {
                for blk in row[..nb * Q8K].chunks_exact_mut(Q8K) {
                    blk[..4].copy_from_slice(&(0.01 + 0.02 * rng.uni()).to_le_bytes());
                    for q in &mut blk[4..4 + quant::QK_K] {
                        *q = match rng.next() % 4 {
                            0 => 0x80,
                            1 => 0x7f,
                            _ => rng.next() as u8,
                        };
                        minus_128 += (*q == 0x80) as usize;
                    }
                    for g in 0..quant::QK_K / 16 {
                        let s: i32 = blk[4 + 16 * g..20 + 16 * g].iter().map(|&q| q as i8 as i32).sum();
                        let at = 4 + quant::QK_K + 2 * g;
                        blk[at..at + 2].copy_from_slice(&(s as i16).to_le_bytes());
                    }
                }
            }
            assert!(minus_128 > 0);
            for wr in w.chunks_exact(rb) {
                let mut want = vec![0f32; nt];
                // SAFETY: the scalar set runs on any CPU; `wr` is one row of
                // `cols`, `a` holds `nt` rows of `cols / 256` Q8_K blocks
                // `stride` bytes apart.
                unsafe { scalar_f(cols, wr, &a, stride, &mut want) };
                for set in available_sets().into_iter().skip(1) {
                    let f = (set.ggml)(ty, Path::VecDot).expect("vec_dot");
                    let mut got = vec![f32::NAN; nt];
                    // SAFETY: `available_sets` lists only sets this CPU runs;
                    // the buffers as above.
                    unsafe { f(cols, wr, &a, stride, &mut got) };
                    for (t, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(g.to_bits(), w.to_bits(), "{} {ty} nt={nt} t={t}: {g} vs {w}", set.name);
                    }
                }
            }
        }
    }
}
