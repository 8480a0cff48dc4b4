use super::choose::{self, Chooser, ModelFacts};
use super::*;
use crate::gguf::{GgufFile, GgufWriter};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under the system temp dir.
fn temp_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d =
        std::env::temp_dir().join(format!("minfer-quant-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A tiny llama model: n_embd 256 (the k-quant block), 2 layers, F32,
/// with an output matrix; `poison` puts a NaN into blk.1.ffn_up.weight.
fn tiny_model(dir: &Path, poison: bool) -> PathBuf {
    let (e, ff, nv, nl) = (256u64, 512u64, 64u64, 2);
    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama");
    w.add("general.name", "tiny");
    w.add("llama.context_length", 128u32);
    w.add("llama.embedding_length", e as u32);
    w.add("llama.block_count", nl as u32);
    w.add("llama.feed_forward_length", ff as u32);
    w.add("llama.attention.head_count", 4u32);
    w.add("llama.attention.head_count_kv", 1u32);
    w.add("llama.attention.layer_norm_rms_epsilon", 1e-5f32);
    w.add("general.file_type", 0u32);
    w.add("split.count", 1u16);
    let mut seed = 1u32;
    let mut mat = |rows: u64, cols: u64| -> Vec<u8> {
        let v: Vec<f32> = (0..rows * cols)
            .map(|_| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect();
        f32_bytes(&v)
    };
    w.add_tensor("token_embd.weight", GgmlType::F32, &[e, nv], mat(nv, e));
    w.add_tensor("output_norm.weight", GgmlType::F32, &[e], f32_bytes(&vec![1.0; e as usize]));
    w.add_tensor("output.weight", GgmlType::F32, &[e, nv], mat(nv, e));
    for il in 0..nl {
        let t = |s: &str| format!("blk.{il}.{s}");
        w.add_tensor(&t("attn_norm.weight"), GgmlType::F32, &[e], f32_bytes(&vec![1.0; e as usize]));
        w.add_tensor(&t("attn_q.weight"), GgmlType::F32, &[e, e], mat(e, e));
        w.add_tensor(&t("attn_k.weight"), GgmlType::F32, &[e, 64], mat(64, e));
        w.add_tensor(&t("attn_v.weight"), GgmlType::F32, &[e, 64], mat(64, e));
        w.add_tensor(&t("attn_output.weight"), GgmlType::F32, &[e, e], mat(e, e));
        w.add_tensor(&t("ffn_norm.weight"), GgmlType::F32, &[e], f32_bytes(&vec![1.0; e as usize]));
        w.add_tensor(&t("ffn_gate.weight"), GgmlType::F32, &[e, ff], mat(ff, e));
        let mut up = mat(ff, e);
        if poison && il == 1 {
            up[40..44].copy_from_slice(&f32::NAN.to_le_bytes());
        }
        w.add_tensor(&t("ffn_up.weight"), GgmlType::F32, &[e, ff], up);
        w.add_tensor(&t("ffn_down.weight"), GgmlType::F32, &[ff, e], mat(e, ff));
    }
    let p = dir.join(if poison { "tiny-nan.gguf" } else { "tiny.gguf" });
    w.write_file(&p).unwrap();
    p
}

fn params(ftype: i32) -> QuantizeParams {
    QuantizeParams { ftype, nthread: 2, ..QuantizeParams::default() }
}

#[test]
fn blk_numbers_and_order() {
    assert_eq!(blk_number("blk.12.attn_q.weight"), Some(12));
    assert_eq!(blk_number("blk.-3.x"), Some(-3));
    assert_eq!(blk_number("blk.x"), None);
    assert_eq!(blk_number("output.weight"), None);
    let mut names = vec!["blk.10.a", "output.weight", "blk.2.b", "blk.2.a", "token_embd.weight"];
    names.sort_by(|a, b| weight_order(a, b));
    assert_eq!(names, ["output.weight", "token_embd.weight", "blk.2.a", "blk.2.b", "blk.10.a"]);
}

#[test]
fn pruning_renumbers_layers() {
    let (mut mapped, mut next) = (BTreeMap::new(), 0);
    let prune = [1, 3];
    let mut out = Vec::new();
    for n in ["blk.0.x", "blk.1.x", "blk.2.x", "blk.3.x", "blk.4.x", "output.weight"] {
        out.push(remap_layer(n, &prune, &mut mapped, &mut next).unwrap());
    }
    let want: Vec<Option<String>> = vec![
        Some("blk.0.x".into()),
        None,
        Some("blk.1.x".into()),
        None,
        Some("blk.2.x".into()),
        Some("output.weight".into()),
    ];
    assert_eq!(out, want);
    assert_eq!(next, 3);
    assert_eq!(remap_imatrix("blk.2.x", &mapped).unwrap(), "blk.4.x");
}

#[test]
fn which_tensors_may_be_quantized() {
    let p = QuantizeParams::default();
    let info = |ne: [i64; 4]| TensorInfo {
        name: String::new(),
        n_dims: 2,
        ne,
        ggml_type: GgmlType::F32,
        offset: 0,
        nbytes: 0,
        info_offset: 0,
    };
    let two_d = info([64, 64, 1, 1]);
    assert!(choose::allows_quantization(&p, "llama", "blk.0.attn_q.weight", &two_d));
    assert!(!choose::allows_quantization(&p, "llama", "blk.0.attn_norm.weight", &two_d));
    assert!(!choose::allows_quantization(&p, "llama", "blk.0.attn_q.weight", &info([64, 1, 1, 1])));
    assert!(!choose::allows_quantization(&p, "llama", "blk.0.attn_q.bias", &two_d));
    // the reference's rfind quirk: any 5-byte name passes the "ends with weight" test
    assert!(choose::allows_quantization(&p, "llama", "abcde", &two_d));
    assert!(!choose::allows_quantization(&p, "llama", "abcd", &two_d));
    let keep_out = QuantizeParams { quantize_output_tensor: false, ..QuantizeParams::default() };
    assert!(!choose::allows_quantization(&keep_out, "llama", "output.weight", &two_d));
    assert!(choose::allows_quantization(&p, "glm5-next", "blk.0.attn_q.weight", &two_d));
    assert!(!choose::allows_quantization(&p, "glm5-next", "blk.0.hc_x.weight", &two_d));
}

#[test]
fn fallbacks_for_rows_the_block_does_not_divide() {
    let m = ModelFacts { arch: "llama".into(), n_layer: 2, n_head: 9, n_head_kv: 3, ..ModelFacts::default() };
    let p = QuantizeParams { pure: true, ..params(ft::Q4_K_M) };
    let mut c = Chooser::new(&p, &m, std::iter::empty(), false, Vec::new());
    let ne = |n0| [n0, 8, 1, 1];
    assert_eq!(c.get_type("blk.0.attn_q.weight", &ne(576), GgmlType::Q4_K).unwrap(), GgmlType::Q5_0);
    assert_eq!(c.get_type("blk.0.attn_q.weight", &ne(576), GgmlType::Q6_K).unwrap(), GgmlType::Q8_0);
    assert_eq!(c.get_type("blk.0.attn_q.weight", &ne(576), GgmlType::IQ4_XS).unwrap(), GgmlType::IQ4_NL);
    assert_eq!(c.get_type("blk.0.attn_q.weight", &ne(48), GgmlType::Q3_K).unwrap(), GgmlType::F16);
    assert_eq!(c.get_type("blk.0.attn_q.weight", &ne(48), GgmlType::Q8_0).unwrap(), GgmlType::F16);
    assert_eq!(c.get_type("blk.0.attn_q.weight", &ne(512), GgmlType::Q4_K).unwrap(), GgmlType::Q4_K);
    assert_eq!(c.n_fallback, 5);
}

#[test]
fn q4_k_m_mixture_on_a_tiny_model() {
    let dir = temp_dir();
    let inp = tiny_model(&dir, false);
    let out = dir.join("q4km.gguf");
    quantize(&inp, &out, &params(ft::Q4_K_M)).unwrap();
    let f = GgufFile::open(&out).unwrap();
    let ty = |n: &str| f.find_tensor(n).unwrap().ggml_type;
    // 2 layers: use_more_bits(i, 2) holds for layer 1 only (i >= 7·2/8)
    assert_eq!(ty("output.weight"), GgmlType::Q6_K);
    assert_eq!(ty("token_embd.weight"), GgmlType::Q4_K);
    assert_eq!(ty("blk.0.attn_v.weight"), GgmlType::Q4_K);
    assert_eq!(ty("blk.1.attn_v.weight"), GgmlType::Q6_K);
    assert_eq!(ty("blk.0.ffn_down.weight"), GgmlType::Q4_K);
    assert_eq!(ty("blk.1.ffn_down.weight"), GgmlType::Q6_K);
    assert_eq!(ty("blk.0.attn_q.weight"), GgmlType::Q4_K);
    assert_eq!(ty("blk.0.attn_norm.weight"), GgmlType::F32);
    // tensor order: by layer, then name
    let names: Vec<String> = f.tensors().map(|t| t.name).collect();
    assert_eq!(&names[..4], ["output.weight", "output_norm.weight", "token_embd.weight", "blk.0.attn_k.weight"]);
    // metadata: the input's pairs (split keys dropped), then version and file type
    let keys: Vec<String> = f.iter_kv().map(|(k, _)| k.into_owned()).collect();
    assert!(!keys.iter().any(|k| k == "split.count"));
    assert_eq!(&keys[keys.len() - 2..], ["general.quantization_version", "general.file_type"]);
    assert_eq!(f.get("general.file_type").and_then(|v| v.as_u64()), Some(ft::Q4_K_M as u64));
    // the data is the chunk quantizer's output of the input rows
    let src = GgufFile::open(&inp).unwrap();
    let t = src.find_tensor("blk.0.attn_q.weight").unwrap();
    let x: Vec<f32> =
        src.tensor_data(&t).chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let mut want = vec![0u8; GgmlType::Q4_K.nbytes(&[256, 256]).unwrap() as usize];
    quant::quantize_chunk(GgmlType::Q4_K, &x, 256, None, &mut want).unwrap();
    assert_eq!(f.tensor_data(&f.find_tensor("blk.0.attn_q.weight").unwrap()), &want[..]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_imatrix_selects_the_weighted_quantizer() {
    // the tensor with an imatrix entry is the weighted chunk quantizer's
    // output with those weights; the others the plain one's
    let dir = temp_dir();
    let inp = tiny_model(&dir, false);
    let w: Vec<f32> = (0..256).map(|j| 0.25 + ((j * 37) % 11) as f32 * 0.5).collect();
    let src = GgufFile::open(&inp).unwrap();
    let data = |f: &GgufFile, n: &str| f.tensor_data(&f.find_tensor(n).unwrap()).to_vec();
    let x: Vec<f32> = data(&src, "blk.0.attn_q.weight")
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    for ftype in [ft::Q4_0, ft::Q6_K, ft::IQ4_XS] {
        let out = dir.join(format!("imatrix-{ftype}.gguf"));
        let p = QuantizeParams {
            imatrix: Some(vec![("blk.0.attn_q.weight".into(), w.clone()), ("no.such.tensor".into(), vec![1.0; 3])]),
            pure: true,
            ..params(ftype)
        };
        quantize(&inp, &out, &p).unwrap();
        let f = GgufFile::open(&out).unwrap();
        let ty = f.find_tensor("blk.0.attn_q.weight").unwrap().ggml_type;
        let (mut with, mut without) = (vec![0u8; ty.nbytes(&[256, 256]).unwrap() as usize], vec![]);
        without.resize(with.len(), 0);
        quant::quantize_chunk(ty, &x, 256, Some(&w), &mut with).unwrap();
        quant::quantize_chunk(ty, &x, 256, None, &mut without).unwrap();
        assert_ne!(with, without, "{ty}: the weights change the quantization");
        assert_eq!(data(&f, "blk.0.attn_q.weight"), with, "{ty}");
    }
    // a type that requires an imatrix, with one that lacks the tensor
    let partial = QuantizeParams {
        imatrix: Some(vec![("blk.0.attn_q.weight".into(), w)]),
        tt_overrides: vec![("attn_k".into(), GgmlType::IQ2_XXS as u32)],
        ..params(ft::Q4_0)
    };
    let e = quantize(&inp, &dir.join("partial.gguf"), &partial).unwrap_err().to_string();
    assert!(e.contains("Missing importance matrix for tensor blk.0.attn_k.weight"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn thread_count_does_not_change_the_bytes() {
    let dir = temp_dir();
    let inp = tiny_model(&dir, false);
    let (a, b) = (dir.join("a.gguf"), dir.join("b.gguf"));
    quantize(&inp, &a, &QuantizeParams { nthread: 1, ..params(ft::IQ4_XS) }).unwrap();
    // a small buffer forces many slabs too
    quantize(&inp, &b, &QuantizeParams { nthread: 3, max_buf_size: 100_000, ..params(ft::IQ4_XS) }).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn refusals_leave_no_output() {
    let dir = temp_dir();
    let inp = tiny_model(&dir, false);
    let out = dir.join("out.gguf");
    let err = |p: &QuantizeParams, i: &Path, o: &Path| quantize(i, o, p).unwrap_err().to_string();
    assert!(err(&params(999), &inp, &out).contains("invalid output file type 999"));
    assert!(err(&params(ft::IQ2_XXS), &inp, &out).contains("requires an importance matrix"));
    assert!(err(&params(ft::Q2_K_S), &inp, &out).contains("requires an importance matrix"));
    assert!(err(&params(ft::Q4_0), &inp, &inp).contains("is an input file"));
    assert!(err(&params(ft::Q4_0), &dir.join("missing.gguf"), &out).contains("missing.gguf"));
    let short =
        QuantizeParams { imatrix: Some(vec![("blk.0.attn_q.weight".into(), vec![1.0; 255])]), ..params(ft::Q4_0) };
    assert!(err(&short, &inp, &out).contains("imatrix size 255 is different from tensor size 256"));
    let nan = QuantizeParams { imatrix: Some(vec![("x".into(), vec![f32::NAN])]), ..params(ft::Q4_0) };
    assert!(err(&nan, &inp, &out).contains("non-finite"));
    let bad_re = QuantizeParams { tt_overrides: vec![("(".into(), 8)], ..params(ft::Q4_0) };
    assert!(err(&bad_re, &inp, &out).contains("tensor type pattern"));
    assert!(!out.exists());
    // a NaN in the input is found while writing: the partial file is removed
    let poisoned = tiny_model(&dir, true);
    assert!(err(&params(ft::Q4_0), &poisoned, &out).contains("tensor 'blk.1.ffn_up.weight' has invalid data"));
    assert!(!out.exists());
    // requantizing needs allow_requantize
    quantize(&inp, &out, &params(ft::Q4_0)).unwrap();
    let again = dir.join("again.gguf");
    assert!(err(&params(ft::Q8_0), &out, &again).contains("requantizing from type q6_K is disabled"));
    quantize(&out, &again, &QuantizeParams { allow_requantize: true, ..params(ft::Q8_0) }).unwrap();
    // a dry run writes nothing
    let dry = dir.join("dry.gguf");
    quantize(&inp, &dry, &QuantizeParams { dry_run: true, ..params(ft::Q4_K_M) }).unwrap();
    assert!(!dry.exists());
    std::fs::remove_dir_all(&dir).ok();
}
