//! Quantizer goldens (bytes of ggml's reference quantizers, made by
//! scripts/make-quant-goldens.sh) and round-trip checks.

use super::*;
use crate::ggml_type::GgmlType;

macro_rules! golden {
    ($name:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/goldens/quant/", $name))
    };
}

/// The golden input: 24 super-blocks of 256 (all-zero, negative-zero, huge,
/// tiny, subnormal, constant, sparse, wild-scale blocks; see make_goldens.c).
pub(crate) fn golden_input() -> Vec<f32> {
    golden!("input.f32").chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

pub(crate) fn golden_types() -> Vec<(GgmlType, &'static [u8])> {
    use GgmlType::*;
    vec![
        (F16, golden!("f16.bin")),
        (BF16, golden!("bf16.bin")),
        (Q4_0, golden!("q4_0.bin")),
        (Q4_1, golden!("q4_1.bin")),
        (Q5_0, golden!("q5_0.bin")),
        (Q5_1, golden!("q5_1.bin")),
        (Q8_0, golden!("q8_0.bin")),
        (Q8_1, golden!("q8_1.bin")),
        (Q2_K, golden!("q2_K.bin")),
        (Q3_K, golden!("q3_K.bin")),
        (Q4_K, golden!("q4_K.bin")),
        (Q5_K, golden!("q5_K.bin")),
        (Q6_K, golden!("q6_K.bin")),
        (Q8_K, golden!("q8_K.bin")),
        (IQ4_NL, golden!("iq4_nl.bin")),
        (IQ4_XS, golden!("iq4_xs.bin")),
        (TQ1_0, golden!("tq1_0.bin")),
        (TQ2_0, golden!("tq2_0.bin")),
        (Q1_0, golden!("q1_0.bin")),
        (Q2_0, golden!("q2_0.bin")),
        (NVFP4, golden!("nvfp4.bin")),
    ]
}

/// Blocks of the IQ1–IQ3 types, made by the reference's
/// `ggml_quantize_chunk` with importance weights from `iq_input.f32` (see
/// make_goldens.c); minfer reads these types but does not write them yet.
pub(crate) fn golden_iq_types() -> Vec<(GgmlType, &'static [u8])> {
    use GgmlType::*;
    vec![
        (IQ2_XXS, golden!("iq2_xxs.bin")),
        (IQ2_XS, golden!("iq2_xs.bin")),
        (IQ2_S, golden!("iq2_s.bin")),
        (IQ3_XXS, golden!("iq3_xxs.bin")),
        (IQ3_S, golden!("iq3_s.bin")),
        (IQ1_S, golden!("iq1_s.bin")),
        (IQ1_M, golden!("iq1_m.bin")),
    ]
}

fn first_mismatch(ty: GgmlType, got: &[u8], want: &[u8]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{ty}: {} bytes, want {}", got.len(), want.len()));
    }
    let bs = ty.type_size();
    let i = got.iter().zip(want).position(|(a, b)| a != b)?;
    let blk = i / bs;
    let elems = ty.block_size();
    Some(format!(
        "{ty}: first difference at byte {i} (block {blk}, elements {}..{}):\n got  {:02x?}\n want {:02x?}",
        blk * elems,
        (blk + 1) * elems,
        &got[blk * bs..(blk + 1) * bs],
        &want[blk * bs..(blk + 1) * bs]
    ))
}

#[test]
fn quantize_row_bytes_equal_ggml_reference() {
    let x = golden_input();
    let mut failures = Vec::new();
    for (ty, want) in golden_types() {
        let mut got = vec![0u8; ty.row_size(x.len() as u64).unwrap_or(0) as usize];
        quantize_row(ty, &x, &mut got).expect("valid row");
        if let Some(m) = first_mismatch(ty, &got, want) {
            failures.push(m);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The importance weights of the weighted goldens (make_goldens.c's
/// `iq_weights`): positive, varying by column.
pub(crate) fn golden_imatrix(n: usize) -> Vec<f32> {
    (0..n).map(|j| 0.25 + ((j * 37) % 11) as f32 * 0.5).collect()
}

#[test]
fn weighted_quantizers_equal_ggml_quantize_chunk_with_imatrix() {
    use GgmlType::*;
    // ggml_quantize_chunk with importance weights runs quantize_row_*_impl:
    // the golden input (extreme blocks included) in rows of 256
    let x = golden_input();
    let w = golden_imatrix(256);
    let cases: [(GgmlType, &[u8]); 11] = [
        (Q4_0, golden!("q4_0_imatrix.bin")),
        (Q4_1, golden!("q4_1_imatrix.bin")),
        (Q5_0, golden!("q5_0_imatrix.bin")),
        (Q5_1, golden!("q5_1_imatrix.bin")),
        (Q2_K, golden!("q2_K_imatrix.bin")),
        (Q3_K, golden!("q3_K_imatrix.bin")),
        (Q4_K, golden!("q4_K_imatrix.bin")),
        (Q5_K, golden!("q5_K_imatrix.bin")),
        (Q6_K, golden!("q6_K_imatrix.bin")),
        (IQ4_NL, golden!("iq4_nl_imatrix.bin")),
        (IQ4_XS, golden!("iq4_xs_imatrix.bin")),
    ];
    let mut failures = Vec::new();
    for (ty, want) in cases {
        let mut got = vec![0u8; want.len()];
        quantize_chunk(ty, &x, 256, Some(&w), &mut got).expect("valid rows");
        if let Some(m) = first_mismatch(ty, &got, want) {
            failures.push(m);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn grid_types_through_quantize_chunk_equal_the_reference() {
    // the dispatch of the IQ1-IQ3 quantizers (their own goldens are in
    // iq*_quantize.rs): ggml_quantize_chunk's bytes, rows of 256 with weights
    let x: Vec<f32> =
        golden!("iq_input.f32").chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let w = golden_imatrix(256);
    for (ty, want) in golden_iq_types() {
        let mut got = vec![0u8; want.len()];
        quantize_chunk(ty, &x, 256, Some(&w), &mut got).expect("valid rows");
        if let Some(m) = first_mismatch(ty, &got, want) {
            panic!("{m}");
        }
        // without weights: refused by the types that require them
        let required = matches!(ty, GgmlType::IQ2_XXS | GgmlType::IQ2_XS | GgmlType::IQ1_S);
        assert_eq!(quantize_chunk(ty, &x, 256, None, &mut got).is_err(), required, "{ty}");
    }
}

#[test]
fn types_without_a_weighted_quantizer_ignore_the_imatrix() {
    use GgmlType::*;
    let x = golden_input();
    let w = golden_imatrix(256);
    for ty in [F16, BF16, Q8_0, MXFP4, NVFP4, TQ1_0, TQ2_0, Q1_0, Q2_0] {
        let n = ty.row_size(x.len() as u64).unwrap() as usize;
        let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
        quantize_chunk(ty, &x, 256, None, &mut a).unwrap();
        quantize_chunk(ty, &x, 256, Some(&w), &mut b).unwrap();
        assert_eq!(a, b, "{ty}");
    }
    // weights of the wrong length and partial rows are errors, not panics
    let mut out = vec![0u8; Q4_K.row_size(x.len() as u64).unwrap() as usize];
    assert!(quantize_chunk(Q4_K, &x, 256, Some(&w[..255]), &mut out).is_err());
    assert!(quantize_chunk(Q4_K, &x, 768 * 7, Some(&w), &mut out).is_err());
    assert!(quantize_chunk(Q4_K, &x, 0, None, &mut out).is_err());
}

#[test]
fn iq4_nl_chunk_quantizer_equals_ggml_quantize_chunk() {
    // ggml_quantize_chunk(IQ4_NL) quantizes with 7 extra scale candidates
    // either side, row by row (rows of 256 in the golden).
    let x = golden_input();
    let want: &[u8] = golden!("iq4_nl_chunk.bin");
    let mut got = vec![0u8; want.len()];
    for (xr, yr) in x.chunks_exact(256).zip(got.chunks_exact_mut(8 * 18)) {
        iq4::quantize_row_nl_ntry(xr, as_blocks_mut(yr), 7);
    }
    if let Some(m) = first_mismatch(GgmlType::IQ4_NL, &got, want) {
        panic!("{m}");
    }
}

#[test]
fn dequantize_of_golden_is_close_to_input() {
    // A sanity check of the dequantizers on ordinary blocks (the exact check
    // is against the gguf package's numpy dequantizer): relative RMS error per
    // super-block of the uniform and gaussian blocks stays within the type's
    // resolution.
    let x = golden_input();
    for (ty, bytes) in golden_types() {
        let mut y = vec![0f32; x.len()];
        dequantize_row(ty, bytes, &mut y).expect("valid row");
        let bound = match ty {
            GgmlType::F16 | GgmlType::BF16 => 0.01,
            GgmlType::Q8_0 | GgmlType::Q8_1 | GgmlType::Q8_K | GgmlType::Q6_K => 0.02,
            GgmlType::Q5_0 | GgmlType::Q5_1 | GgmlType::Q5_K => 0.06,
            GgmlType::Q2_K => 0.4,
            GgmlType::Q3_K => 0.2,
            // (three levels, the outer ones at the block's maximum: most of
            // a gaussian block rounds to 0)
            GgmlType::TQ1_0 | GgmlType::TQ2_0 => 0.9,
            // (a sign and the mean magnitude: a gaussian's 1 - 2/π of its
            // variance left; Q2_0: the levels -d, 0, d at the block's maximum)
            GgmlType::Q1_0 => 0.65,
            GgmlType::Q2_0 => 0.9,
            _ => 0.12,
        };
        for sb in 0..2 {
            let r = 256 * sb..256 * sb + 256;
            let err: f64 = x[r.clone()].iter().zip(&y[r.clone()]).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
            let norm: f64 = x[r].iter().map(|a| (*a as f64).powi(2)).sum();
            let rel = (err / norm).sqrt();
            assert!(rel < bound, "{ty}: super-block {sb} relative rms error {rel}");
        }
        // all-zero and negative-zero super-blocks dequantize to zeros
        for v in &y[512..1024] {
            assert_eq!(*v, 0.0, "{ty}");
        }
    }
}

#[test]
fn row_length_mismatches_are_errors_not_panics() {
    let x = [0f32; 64];
    let mut out = [0u8; 36];
    assert!(quantize_row(GgmlType::Q4_0, &x, &mut out).is_ok());
    assert!(quantize_row(GgmlType::Q4_0, &x, &mut out[..35]).is_err());
    assert!(quantize_row(GgmlType::Q4_K, &x, &mut out).is_err());
    assert!(quantize_row(GgmlType::IQ2_XXS, &x, &mut out).is_err());
    let mut y = [0f32; 33];
    assert!(dequantize_row(GgmlType::Q8_0, &out, &mut y).is_err());
    let mut y = [0f32; 32];
    assert!(dequantize_row(GgmlType::Q8_0, &out[..34], &mut y).is_ok());
}

#[test]
fn fp16_and_bf16_conversions_match_ggml_on_edge_values() {
    for (f, h) in [
        (0.0f32, 0x0000u16),
        (-0.0, 0x8000),
        (1.0, 0x3c00),
        (65504.0, 0x7bff),
        (65520.0, 0x7c00),
        (1e30, 0x7c00),
        (-1e30, 0xfc00),
        (5.96e-8, 0x0001),
        (2.9e-8, 0x0000),
        (f32::INFINITY, 0x7c00),
    ] {
        assert_eq!(u16::from_le_bytes(f32_to_f16(f)), h, "{f}");
    }
    assert_eq!(u16::from_le_bytes(f32_to_f16(f32::NAN)), 0x7e00);
    assert_eq!(u16::from_le_bytes(f32_to_bf16(1.0)), 0x3f80);
    assert_eq!(u16::from_le_bytes(f32_to_bf16(f32::from_bits(0x3f80_8000))), 0x3f80);
    assert_eq!(u16::from_le_bytes(f32_to_bf16(f32::from_bits(0x3f81_8000))), 0x3f82);
    assert_eq!(nearest_int(2.5), 2);
    assert_eq!(nearest_int(-3.5), -4);
    assert_eq!(c_f32_to_i32(f32::NAN), i32::MIN);
    assert_eq!(c_f32_to_i32(3e9), i32::MIN);
    assert_eq!(c_f32_to_i32(-7.9), -7);
}

/// Compares `dequantize_row` with the gguf package's numpy dequantizer, bit
/// for bit (NaN equals NaN), on the files scripts/gguf_dequant.py writes to
/// `$MINFER_GGUF_DEQUANT_DIR` (scripts/test.sh sets it up). Without the
/// variable the test says so and passes; with it, missing files fail.
#[test]
fn dequantize_equals_the_reference_q1_q2() {
    for (ty, name) in [(GgmlType::Q1_0, "q1_0"), (GgmlType::Q2_0, "q2_0"), (GgmlType::NVFP4, "nvfp4")] {
        let q = golden_types().into_iter().find(|(t, _)| *t == ty).expect("golden").1;
        let path = format!("{}/tests/goldens/quant/{name}_dequant.f32", env!("CARGO_MANIFEST_DIR"));
        let want: Vec<f32> = std::fs::read(&path)
            .expect("make-quant-goldens.sh output")
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let mut got = vec![0f32; want.len()];
        dequantize_row(ty, q, &mut got).expect("valid row");
        // (a NaN made here, 0·inf, has the CPU's sign bit: x86 set, aarch64 clear)
        let same = |g: &f32, w: &f32| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
        assert!(got.iter().zip(&want).all(|(g, w)| same(g, w)), "{name}: dequantization differs");
    }
}

#[test]
fn dequantize_equals_the_reference_iq() {
    macro_rules! dq {
        ($name:literal) => {
            golden!($name).chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect::<Vec<f32>>()
        };
    }
    let want = [
        dq!("iq2_xxs_dequant.f32"),
        dq!("iq2_xs_dequant.f32"),
        dq!("iq2_s_dequant.f32"),
        dq!("iq3_xxs_dequant.f32"),
        dq!("iq3_s_dequant.f32"),
        dq!("iq1_s_dequant.f32"),
        dq!("iq1_m_dequant.f32"),
    ];
    for ((ty, q), want) in golden_iq_types().into_iter().zip(want) {
        let mut got = vec![0f32; want.len()];
        dequantize_row(ty, q, &mut got).expect("valid row");
        let bad = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
        assert!(bad.is_none(), "{ty}: element {bad:?} differs");
    }
}

#[test]
fn dequantize_equals_gguf_numpy() {
    let Some(dir) = std::env::var_os("MINFER_GGUF_DEQUANT_DIR") else {
        skip_test!(
            "dequantize_equals_gguf_numpy: MINFER_GGUF_DEQUANT_DIR not set (scripts/test-kernels.sh prepare sets it)"
        );
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let mut checked = 0;
    for (ty, _) in golden_types().into_iter().chain(golden_iq_types()) {
        if matches!(ty, GgmlType::Q8_1 | GgmlType::Q8_K) {
            continue; // activation-only types: the gguf package has no dequantizer
        }
        if matches!(ty, GgmlType::Q1_0 | GgmlType::Q2_0 | GgmlType::NVFP4) {
            continue; // nor for these: the reference's own (dequantize_equals_the_reference_q1_q2)
        }
        let name = ty.name();
        let q = std::fs::read(dir.join(format!("{name}.q"))).expect("gguf_dequant.py output");
        let want: Vec<f32> = std::fs::read(dir.join(format!("{name}.f32")))
            .expect("gguf_dequant.py output")
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let mut got = vec![0f32; want.len()];
        dequantize_row(ty, &q, &mut got).expect("valid row");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
            assert!(same, "{name}: element {i}: got {g:e} ({:#x}), numpy {w:e} ({:#x})", g.to_bits(), w.to_bits());
        }
        checked += 1;
    }
    assert_eq!(checked, 23);
}
