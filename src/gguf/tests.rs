//! Tests of the GGUF reader and writer: round trips through the writer, and
//! one corruption per validation rule, checking the field and offset of the
//! error.

use super::*;
use crate::ggml_type::GgmlType;

// ---------------------------------------------------------------- helpers

fn parse(bytes: Vec<u8>) -> GgufFile {
    match GgufFile::from_bytes(bytes) {
        Ok(f) => f,
        Err(e) => panic!("expected a valid file, got: {e}"),
    }
}

/// Parses `bytes`, expecting an `Error::Gguf` at `offset` whose field
/// contains `field`. Returns the reason.
#[track_caller]
fn expect_err(bytes: Vec<u8>, field: &str, offset: u64) -> String {
    match GgufFile::from_bytes(bytes) {
        Err(Error::Gguf { offset: o, field: f, reason }) => {
            assert!(f.contains(field), "field {f:?} does not contain {field:?} (reason: {reason})");
            assert_eq!(o, offset, "offset of {f}: {reason}");
            assert!(!reason.is_empty());
            reason
        }
        Err(other) => panic!("expected a GGUF error, got {other:?}"),
        Ok(f) => panic!("expected an error at {field} / {offset}, but the file parsed: {f:?}"),
    }
}

/// Position of the only occurrence of `needle`.
#[track_caller]
fn find(hay: &[u8], needle: &[u8]) -> usize {
    let hits: Vec<usize> =
        hay.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).map(|(i, _)| i).collect();
    assert_eq!(hits.len(), 1, "{:?} occurs {} times", String::from_utf8_lossy(needle), hits.len());
    hits[0]
}

fn set_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn set_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// (key length field, type field, value) offsets of the pair with key `key`.
fn kv_at(b: &[u8], key: &str) -> (usize, usize, usize) {
    let k = find(b, key.as_bytes());
    (k - 8, k + key.len(), k + key.len() + 4)
}

/// Offsets of the fields of the tensor info named `name`.
struct TensorAt {
    info: usize,
    n_dims: usize,
    ne: usize,
    ty: usize,
    offset: usize,
}

fn tensor_at(b: &[u8], name: &str) -> TensorAt {
    let n = find(b, name.as_bytes());
    let n_dims_at = n + name.len();
    let n_dims = u32::from_le_bytes(b[n_dims_at..n_dims_at + 4].try_into().unwrap()) as usize;
    let ne = n_dims_at + 4;
    let ty = ne + 8 * n_dims;
    TensorAt { info: n - 8, n_dims: n_dims_at, ne, ty, offset: ty + 4 }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A file with one pair `key` = `value`.
fn one_kv(key: &str, value: impl Into<OwnedValue>) -> Vec<u8> {
    let mut w = GgufWriter::new();
    w.add(key, value);
    w.to_bytes().unwrap()
}

/// A file with two F32 tensors "wa" [8] and "wb" [8, 2], and a pair.
fn two_tensors(alignment: Option<u32>) -> Vec<u8> {
    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama");
    if let Some(a) = alignment {
        w.set_alignment(a);
    }
    w.add_tensor("wa", GgmlType::F32, &[8], f32_bytes(&[1.0; 8]));
    w.add_tensor("wb", GgmlType::F32, &[8, 2], f32_bytes(&[2.0; 16]));
    w.to_bytes().unwrap()
}

/// A raw GGUF v3 file with one pair whose type and payload are given.
fn raw_kv(key: &str, ty: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"GGUF");
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&(key.len() as u64).to_le_bytes());
    b.extend_from_slice(key.as_bytes());
    b.extend_from_slice(&ty.to_le_bytes());
    b.extend_from_slice(payload);
    b
}

fn every_value() -> Vec<(&'static str, OwnedValue)> {
    vec![
        ("v.u8", OwnedValue::U8(0xAB)),
        ("v.i8", OwnedValue::I8(-5)),
        ("v.u16", OwnedValue::U16(0xBEEF)),
        ("v.i16", OwnedValue::I16(-12345)),
        ("v.u32", OwnedValue::U32(0xDEAD_BEEF)),
        ("v.i32", OwnedValue::I32(i32::MIN)),
        ("v.f32", OwnedValue::F32(1.5)),
        ("v.bool.t", OwnedValue::Bool(true)),
        ("v.bool.f", OwnedValue::Bool(false)),
        ("v.str", OwnedValue::from("héllo \"world\"")),
        ("v.str.empty", OwnedValue::from("")),
        ("v.str.binary", OwnedValue::Str(vec![0xff, 0x00, 0xfe, b'x'])),
        ("v.u64", OwnedValue::U64(u64::MAX)),
        ("v.i64", OwnedValue::I64(i64::MIN)),
        ("v.f64", OwnedValue::F64(-2.25e300)),
        ("a.u8", OwnedValue::from(vec![1u8, 2, 255])),
        ("a.i8", OwnedValue::from(vec![-1i8, 0, 127])),
        ("a.u16", OwnedValue::from(vec![1u16, 65535])),
        ("a.i16", OwnedValue::from(vec![-32768i16, 7])),
        ("a.u32", OwnedValue::from(vec![0u32, u32::MAX])),
        ("a.i32", OwnedValue::from(vec![-1i32, 2, -3])),
        ("a.f32", OwnedValue::from(vec![0.5f32, -1.25, f32::INFINITY])),
        ("a.bool", OwnedValue::from(vec![true, false, true])),
        ("a.str", OwnedValue::from(vec!["a", "", "c\"\\d"])),
        ("a.u64", OwnedValue::from(vec![u64::MAX, 0])),
        ("a.i64", OwnedValue::from(vec![i64::MIN, 1])),
        ("a.f64", OwnedValue::from(vec![1e-300f64, 3.0])),
        ("a.empty", OwnedValue::Array(OwnedArray::I32(vec![]))),
        ("a.empty.str", OwnedValue::Array(OwnedArray::Str(vec![]))),
        (
            "a.nested",
            OwnedValue::Array(OwnedArray::Array(vec![
                OwnedArray::I32(vec![1, 2, 3]),
                OwnedArray::Str(vec![b"x".to_vec(), vec![0xff]]),
                OwnedArray::Array(vec![OwnedArray::F32(vec![9.0]), OwnedArray::Bool(vec![])]),
                OwnedArray::U8(vec![]),
            ])),
        ),
    ]
}

// ---------------------------------------------------------------- round trips

#[test]
fn gguf_round_trips_every_value_type() {
    let values = every_value();
    let mut w = GgufWriter::new();
    for (k, v) in &values {
        w.add(k, v.clone());
    }
    let f = parse(w.to_bytes().unwrap());
    assert_eq!(f.version(), 3);
    assert_eq!(f.n_kv(), values.len());
    assert_eq!(f.n_tensors(), 0);
    assert_eq!(f.alignment(), 32);
    for (i, (k, v)) in values.iter().enumerate() {
        let (key, value) = f.kv(i);
        assert_eq!(key, *k);
        assert_eq!(f.find_key(k), Some(i));
        assert_eq!(value.gguf_type(), v.gguf_type(), "{k}");
        assert_eq!(value.type_id(), v.gguf_type() as u32);
        assert_eq!(f.to_owned_value(&value).as_ref(), Some(v), "{k}");
    }
    assert_eq!(f.find_key("missing"), None);
    assert!(f.get_kv(values.len()).is_none());

    // Typed accessors.
    assert_eq!(f.get("v.u8").unwrap().as_u64(), Some(0xAB));
    assert_eq!(f.get("v.i8").unwrap().as_i64(), Some(-5));
    assert_eq!(f.get("v.i8").unwrap().as_u64(), None);
    assert_eq!(f.get("v.u32").unwrap().as_u32(), Some(0xDEAD_BEEF));
    assert_eq!(f.get("v.u64").unwrap().as_i64(), None);
    assert_eq!(f.get("v.f32").unwrap().as_f64(), Some(1.5));
    assert_eq!(f.get("v.bool.t").unwrap().as_bool(), Some(true));
    assert_eq!(f.get("v.str").unwrap().type_name(), "str");
    assert_eq!(f.get("a.u8").unwrap().type_name(), "arr");
    assert_eq!(f.get_str("v.str"), Some("héllo \"world\""));
    assert_eq!(f.get_str("v.str.binary"), None);
    assert_eq!(f.get_str_bytes("v.str.binary"), Some(&[0xff, 0x00, 0xfe, b'x'][..]));
    let arr = |k: &str| f.get(k).unwrap().as_array().unwrap();
    assert_eq!(f.array_u8(&arr("a.u8")), Some(&[1u8, 2, 255][..]));
    assert_eq!(f.array_i32(&arr("a.i32")), Some(vec![-1, 2, -3]));
    assert_eq!(f.array_i32(&arr("a.u32")), None);
    assert_eq!(f.array_u32(&arr("a.u32")), Some(vec![0, u32::MAX]));
    assert_eq!(f.array_f32(&arr("a.f32")), Some(vec![0.5, -1.25, f32::INFINITY]));
    assert_eq!(f.array_vec::<bool>(&arr("a.bool")), Some(vec![true, false, true]));
    assert_eq!(f.array_iter::<i64>(&arr("a.i64")).unwrap().len(), 2);
    let strs: Vec<&[u8]> = f.array_strings(&arr("a.str")).unwrap().collect();
    assert_eq!(strs, vec![&b"a"[..], b"", b"c\"\\d"]);
    assert!(f.array_strings(&arr("a.i32")).is_none());
    assert_eq!(arr("a.empty").len, 0);
    assert_eq!(f.array_values(&arr("a.empty")).count(), 0);
}

#[test]
fn gguf_nested_arrays_are_reachable() {
    let values = every_value();
    let nested = values.iter().find(|(k, _)| *k == "a.nested").unwrap().1.clone();
    let f = parse(one_kv("nested", nested));
    let a = f.get("nested").unwrap().as_array().unwrap();
    assert_eq!(a.elem_type, GgufType::Array as u32);
    assert_eq!(a.len, 4);
    let inner: Vec<ArrayRef> = f.array_values(&a).map(|v| v.as_array().unwrap()).collect();
    assert_eq!(inner.len(), 4);
    assert_eq!(f.array_i32(&inner[0]), Some(vec![1, 2, 3]));
    let s: Vec<&[u8]> = f.array_strings(&inner[1]).unwrap().collect();
    assert_eq!(s, vec![&b"x"[..], &[0xff][..]]);
    let deeper: Vec<Value> = f.array_values(&inner[2]).collect();
    assert_eq!(f.array_f32(&deeper[0].as_array().unwrap()), Some(vec![9.0]));
    assert_eq!(f.array_vec::<bool>(&deeper[1].as_array().unwrap()), Some(vec![]));
    assert_eq!(f.array_u8(&inner[3]), Some(&[][..]));
}

#[test]
fn gguf_array_nesting_depth_is_limited() {
    // Eight levels of arrays are accepted, from the writer and raw.
    let mut a = OwnedArray::I32(vec![7]);
    for _ in 0..7 {
        a = OwnedArray::Array(vec![a]);
    }
    let f = parse(one_kv("deep", a.clone()));
    assert_eq!(f.to_owned_value(&f.get("deep").unwrap()), Some(OwnedValue::Array(a.clone())));
    // The writer refuses a ninth level.
    let mut w = GgufWriter::new();
    w.add("deep", OwnedArray::Array(vec![a]));
    assert!(matches!(w.to_bytes(), Err(Error::InvalidArgument(_))));

    // Raw: 8 nested array headers, then an i32 array of 0 elements.
    let level = |elem: u32| [elem.to_le_bytes().to_vec(), 1u64.to_le_bytes().to_vec()].concat();
    let mut ok = Vec::new();
    for _ in 0..7 {
        ok.extend(level(9));
    }
    ok.extend([5u32.to_le_bytes().to_vec(), 0u64.to_le_bytes().to_vec()].concat());
    parse(raw_kv("d", 9, &ok));
    let mut deep = Vec::new();
    for _ in 0..8 {
        deep.extend(level(9));
    }
    deep.extend([5u32.to_le_bytes().to_vec(), 0u64.to_le_bytes().to_vec()].concat());
    let value_at = 24 + 8 + 1 + 4;
    let r =
        expect_err(raw_kv("d", 9, &deep), "kv[0] 'd'.value[0][0][0][0][0][0][0].elem_type", (value_at + 7 * 12) as u64);
    assert!(r.contains("nested"), "{r}");
}

#[test]
fn gguf_alignment_variants() {
    for a in [None, Some(1), Some(8), Some(64)] {
        let mut w = GgufWriter::new();
        w.add("general.name", "x");
        if let Some(a) = a {
            w.set_alignment(a);
        }
        let d1 = f32_bytes(&[1.0, 2.0, 3.0]); // 12 bytes: forces padding
        let d2: Vec<u8> = (0..34u8).collect(); // one Q8_0 block
        w.add_tensor("t1", GgmlType::F32, &[3], d1.clone());
        w.add_tensor("t2", GgmlType::Q8_0, &[32, 1], d2.clone());
        let bytes = w.to_bytes().unwrap();
        let f = parse(bytes.clone());
        let align = u64::from(a.unwrap_or(32));
        assert_eq!(f.alignment(), align);
        assert_eq!(f.data_offset() % align, 0);
        assert_eq!(f.n_tensors(), 2);
        for t in f.tensors() {
            assert_eq!(t.offset % align, 0);
        }
        assert_eq!(f.tensor(1).unwrap().offset, 12u64.div_ceil(align) * align);
        assert_eq!(f.tensor_data(&f.find_tensor("t1").unwrap()), &d1[..]);
        assert_eq!(f.tensor_data(&f.find_tensor("t2").unwrap()), &d2[..]);
        assert_eq!(f.total_bytes(), 12 + 34);
        assert_eq!(bytes.len() as u64 % align, 0);
        f.check_contiguous_layout().unwrap();
    }
}

#[test]
fn gguf_versions_2_and_3_are_read() {
    for v in [2, 3] {
        let mut w = GgufWriter::new();
        w.set_version(v).add("k", 1u32).add_tensor("t", GgmlType::F16, &[2, 2], vec![0u8; 8]);
        let f = parse(w.to_bytes().unwrap());
        assert_eq!(f.version(), v);
        assert_eq!(f.get("k"), Some(Value::U32(1)));
    }
    let mut w = GgufWriter::new();
    w.set_version(1);
    assert!(w.to_bytes().is_err());
}

#[test]
fn gguf_tensor_table_is_read() {
    let mut w = GgufWriter::new();
    let q4k = vec![7u8; 144 * 2];
    w.add_tensor("blk.0.ffn_down.weight", GgmlType::Q4_K, &[256, 2, 1, 1], q4k.clone());
    w.add_tensor("scalar", GgmlType::F32, &[], f32_bytes(&[3.5]));
    w.add_tensor("empty", GgmlType::F32, &[0, 4], Vec::new());
    w.add_tensor(&"n".repeat(63), GgmlType::I8, &[3], vec![1, 2, 3]);
    let f = parse(w.to_bytes().unwrap());
    let t = f.find_tensor("blk.0.ffn_down.weight").unwrap();
    assert_eq!((t.n_dims, t.ne, t.ggml_type, t.nbytes), (4, [256, 2, 1, 1], GgmlType::Q4_K, 288));
    assert_eq!(t.n_elements(), 512);
    assert_eq!(t.row_size(), 144);
    assert_eq!(t.n_rows(), 2);
    assert_eq!(t.shape(), &[256, 2, 1, 1]);
    assert_eq!(f.tensor_data(&t), &q4k[..]);
    assert_eq!(t.info_offset, find(f.bytes(), b"blk.0.ffn_down.weight") as u64 - 8);
    let s = f.find_tensor("scalar").unwrap();
    assert_eq!((s.n_dims, s.ne, s.nbytes, s.n_elements()), (0, [1, 1, 1, 1], 4, 1));
    assert_eq!(s.shape(), &[] as &[i64]);
    let e = f.find_tensor("empty").unwrap();
    assert_eq!((e.nbytes, e.n_elements()), (0, 0));
    assert_eq!(f.tensor_data(&e), &[] as &[u8]);
    assert_eq!(f.tensor_data(&f.find_tensor(&"n".repeat(63)).unwrap()), &[1, 2, 3]);
    assert_eq!(f.find_tensor_index("scalar"), Some(1));
    assert!(f.find_tensor("nope").is_none());
    assert_eq!(f.total_bytes(), 288 + 4 + 3);
    // A forged TensorInfo never panics.
    let mut forged = t.clone();
    forged.offset = u64::MAX;
    assert!(f.tensor_data(&forged).is_empty());
}

#[test]
fn gguf_writer_copies_a_file_exactly() {
    let mut w = GgufWriter::new();
    for (k, v) in every_value() {
        w.add(k, v);
    }
    w.set_alignment(16);
    w.add_tensor("a", GgmlType::Q4_0, &[64], vec![3u8; 36]);
    w.add_tensor("b", GgmlType::BF16, &[5, 3], vec![4u8; 30]);
    let bytes = w.to_bytes().unwrap();
    let f = parse(bytes.clone());
    assert_eq!(GgufWriter::from_file(&f).to_bytes().unwrap(), bytes);
}

#[test]
fn gguf_writer_rejects_invalid_input() {
    let bad = |build: &dyn Fn(&mut GgufWriter)| {
        let mut w = GgufWriter::new();
        build(&mut w);
        assert!(matches!(w.to_bytes(), Err(Error::InvalidArgument(_))));
    };
    bad(&|w| {
        w.add("", 1u8);
    });
    bad(&|w| {
        w.add("k", 1u8).add("k", 2u8);
    });
    bad(&|w| {
        w.set_alignment(3);
    });
    bad(&|w| {
        w.add("general.alignment", 32u64);
    });
    bad(&|w| {
        w.add_tensor(&"n".repeat(64), GgmlType::F32, &[1], vec![0; 4]);
    });
    bad(&|w| {
        w.add_tensor("t", GgmlType::F32, &[1], vec![0; 4]).add_tensor("t", GgmlType::F32, &[1], vec![0; 4]);
    });
    bad(&|w| {
        w.add_tensor("t", GgmlType::F32, &[2], vec![0; 4]);
    });
    bad(&|w| {
        w.add_tensor("t", GgmlType::Q4_0, &[31], vec![0; 18]);
    });
    bad(&|w| {
        w.add_tensor("t", GgmlType::F32, &[1, 1, 1, 1, 1], vec![0; 4]);
    });
    // set() replaces in place.
    let mut w = GgufWriter::new();
    w.add("a", 1u8).add("b", 2u8).set("a", 3u8).remove("b");
    let f = parse(w.to_bytes().unwrap());
    assert_eq!((f.n_kv(), f.get("a")), (1, Some(Value::U8(3))));
}

#[test]
fn gguf_format_value_matches_llama_cpp() {
    let mut w = GgufWriter::new();
    w.add("s", "raw \"text\"")
        .add("f", 0.1f32)
        .add("d", -2.5f64)
        .add("i", -7i32)
        .add("b", false)
        .add("u64", u64::MAX)
        .add("as", vec!["a\"b", "c\\d"])
        .add("ai", vec![1i32, -2, 3])
        .add("ab", vec![true, false])
        .add("af", vec![1.0f32, f32::NAN])
        .add("aa", OwnedArray::Array(vec![OwnedArray::U8(vec![1]), OwnedArray::U8(vec![])]))
        .add("ae", OwnedArray::U16(vec![]));
    let f = parse(w.to_bytes().unwrap());
    let fmt = |k: &str| f.format_value_lossy(&f.get(k).unwrap());
    assert_eq!(fmt("s"), "raw \"text\"");
    assert_eq!(fmt("f"), "0.100000");
    assert_eq!(fmt("d"), "-2.500000");
    assert_eq!(fmt("i"), "-7");
    assert_eq!(fmt("b"), "false");
    assert_eq!(fmt("u64"), "18446744073709551615");
    assert_eq!(fmt("as"), r#"["a\"b", "c\\d"]"#);
    assert_eq!(fmt("ai"), "[1, -2, 3]");
    assert_eq!(fmt("ab"), "[true, false]");
    assert_eq!(fmt("af"), "[1.000000, nan]");
    assert_eq!(fmt("aa"), "[???, ???]");
    assert_eq!(fmt("ae"), "[]");
}

#[test]
fn gguf_opens_files_and_embedded_files() {
    let bytes = two_tensors(None);
    let dir = std::env::temp_dir();
    let path = dir.join(format!("minfer-gguf-test-{}.gguf", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.base(), 0);
    assert_eq!(f.tensor_data(&f.find_tensor("wb").unwrap()), &f32_bytes(&[2.0; 16])[..]);

    // The same GGUF 13 bytes into a file.
    let mut embedded = b"prefix-junk!!".to_vec();
    embedded.extend_from_slice(&bytes);
    std::fs::write(&path, &embedded).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let g = GgufFile::open_file_at(&file, 13).unwrap();
    assert_eq!(g.base(), 13);
    assert_eq!(g.data_offset(), f.data_offset());
    let wb = g.find_tensor("wb").unwrap();
    assert_eq!(g.tensor_data(&wb), &f32_bytes(&[2.0; 16])[..]);
    assert_eq!(g.tensor_file_offset(&wb), Some(13 + g.data_offset() + wb.offset));
    // Errors are relative to the base.
    embedded[13 + 4] = 9;
    std::fs::write(&path, &embedded).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    match GgufFile::open_file_at(&file, 13) {
        Err(Error::Gguf { offset: 4, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(GgufFile::open_file_at(&file, embedded.len() as u64 + 1), Err(Error::Io { .. })));
    assert!(matches!(GgufFile::open_file_at(&file, u64::MAX), Err(Error::Io { .. })));
    // Base at the very end: an empty GGUF.
    expect_too_short(GgufFile::open_file_at(&file, embedded.len() as u64));
    std::fs::remove_file(&path).unwrap();

    // Empty file, missing file.
    std::fs::write(&path, b"").unwrap();
    expect_too_short(GgufFile::open(&path));
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(GgufFile::open(&path), Err(Error::Io { .. })));
}

fn expect_too_short(r: Result<GgufFile>) {
    match r {
        Err(Error::Gguf { offset: 0, field, reason }) => {
            assert_eq!(field, "header");
            assert!(reason.contains("too short"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn gguf_metadata_only_file_needs_no_padding() {
    let mut w = GgufWriter::new();
    w.add("k", 1u8);
    let bytes = w.to_bytes().unwrap();
    // Like gguf.cpp: without tensors the data section starts right after the
    // metadata, and the padding may be missing.
    let end = 24 + 8 + 1 + 4 + 1;
    let f = parse(bytes[..end].to_vec());
    assert_eq!(f.data_offset(), end as u64);
    assert_eq!(parse(bytes).data_offset(), end as u64);
}

#[test]
fn gguf_contiguous_layout_check_matches_reference() {
    let mut w = GgufWriter::new();
    w.add_tensor("ta", GgmlType::F32, &[8], f32_bytes(&[1.0; 8]));
    w.add_tensor("tb", GgmlType::F32, &[8], f32_bytes(&[2.0; 8]));
    let mut b = w.to_bytes().unwrap();
    parse(b.clone()).check_contiguous_layout().unwrap();
    // Swap the data offsets: allowed by the reader, not by gguf.cpp.
    let (ta, tb) = (tensor_at(&b, "ta"), tensor_at(&b, "tb"));
    set_u64(&mut b, ta.offset, 32);
    set_u64(&mut b, tb.offset, 0);
    let f = parse(b);
    assert_eq!(f.tensor_data(&f.find_tensor("tb").unwrap()), &f32_bytes(&[1.0; 8])[..]);
    let e = f.check_contiguous_layout().unwrap_err();
    assert!(matches!(e, Error::Gguf { ref field, .. } if field.contains("'ta'.offset")), "{e}");
}

// ---------------------------------------------------------------- header

#[test]
fn gguf_rejects_bad_magic() {
    let mut b = two_tensors(None);
    b[..4].copy_from_slice(b"GGML");
    let r = expect_err(b, "header.magic", 0);
    assert!(r.contains("'GGML'"), "{r}");
    expect_err(b"\x00\x01".iter().chain(&[0u8; 30]).copied().collect(), "header.magic", 0);
}

#[test]
fn gguf_rejects_files_shorter_than_the_header() {
    let b = two_tensors(None);
    for n in [0, 3, 4, 23] {
        let r = expect_err(b[..n].to_vec(), "header", 0);
        assert!(r.contains("too short"), "{r}");
    }
}

#[test]
fn gguf_rejects_bad_versions() {
    let with = |v: u32| {
        let mut b = two_tensors(None);
        set_u32(&mut b, 4, v);
        b
    };
    expect_err(with(0), "header.version", 4);
    let r = expect_err(with(1), "header.version", 4);
    assert!(r.contains("GGUFv1 is no longer supported"), "{r}");
    let r = expect_err(with(4), "header.version", 4);
    assert!(r.contains("newer"), "{r}");
    let r = expect_err(with(0x0300_0000), "header.version", 4);
    assert!(r.contains("byte order"), "{r}");
    expect_err(with(u32::MAX), "header.version", 4);
    parse(with(2));
}

#[test]
fn gguf_rejects_huge_counts() {
    for n in [1u64 << 63, u64::MAX, 1 << 32, 1000] {
        let mut b = two_tensors(None);
        set_u64(&mut b, 8, n);
        expect_err(b, "header.n_tensors", 8);
        let mut b = two_tensors(None);
        set_u64(&mut b, 16, n);
        expect_err(b, "header.n_kv", 16);
    }
}

// ---------------------------------------------------------------- key-value pairs

#[test]
fn gguf_rejects_empty_keys() {
    let mut b = one_kv("k", 1u8);
    set_u64(&mut b, 24, 0);
    let r = expect_err(b, "kv[0].key", 24);
    assert!(r.contains("empty"), "{r}");
}

#[test]
fn gguf_rejects_duplicate_keys() {
    let mut w = GgufWriter::new();
    w.add("dupA", 1u8).add("dupB", 2u8);
    let mut b = w.to_bytes().unwrap();
    let (second, _, _) = kv_at(&b, "dupB");
    b[second + 8 + 3] = b'A';
    let r = expect_err(b, "kv[1].key", second as u64);
    assert!(r.contains("duplicate key 'dupA'"), "{r}");
}

/// Repeats are found after the pairs are read, but reported as a
/// front-to-back scan would: a repeat before another error wins, a repeat
/// after it does not, and of several repeats the earliest is named.
#[test]
fn gguf_reports_the_first_error_in_file_order() {
    let mut w = GgufWriter::new();
    w.add("k0", 1u8).add("k1", 2u8).add("k2", 3u8).add("k3", 4u8).add("k4", 5u8);
    let b = w.to_bytes().unwrap();
    let (k2, _, _) = kv_at(&b, "k2");
    let (k3, t3, _) = kv_at(&b, "k3");
    let (k4, _, _) = kv_at(&b, "k4");
    // kv[3] repeats kv[1] and kv[4] repeats kv[0]; kv[3] is reported.
    let mut d = b.clone();
    d[k3 + 9] = b'1';
    d[k4 + 9] = b'0';
    let r = expect_err(d, "kv[3].key", k3 as u64);
    assert!(r.contains("duplicate key 'k1' (first defined by kv[1])"), "{r}");
    // A repeat (kv[2] = kv[1]) before a bad type (kv[3]): the repeat.
    let mut d = b.clone();
    d[k2 + 9] = b'1';
    set_u32(&mut d, t3, 99);
    expect_err(d, "kv[2].key", k2 as u64);
    // A bad type (kv[3]) before a repeat (kv[4] = kv[1]): the type.
    let mut d = b.clone();
    set_u32(&mut d, t3, 99);
    d[k4 + 9] = b'1';
    expect_err(d, "kv[3] 'k3'.type", t3 as u64);
    // A repeat found in the pair that fails: its key was read first.
    let mut d = b.clone();
    d[k3 + 9] = b'1';
    set_u32(&mut d, t3, 99);
    expect_err(d, "kv[3].key", k3 as u64);

    // The same for tensor names.
    let mut w = GgufWriter::new();
    for n in ["t0", "t1", "t2"] {
        w.add_tensor(n, GgmlType::F32, &[8], f32_bytes(&[1.0; 8]));
    }
    let b = w.to_bytes().unwrap();
    let t1 = tensor_at(&b, "t1");
    let t2 = tensor_at(&b, "t2");
    let mut d = b.clone();
    d[t2.info + 9] = b'0';
    set_u32(&mut d, t2.n_dims, 9);
    expect_err(d, "tensor[2].name", t2.info as u64);
    let mut d = b.clone();
    set_u32(&mut d, t1.n_dims, 9);
    d[t2.info + 9] = b'0';
    expect_err(d, "tensor[1] 't1'.n_dims", t1.n_dims as u64);
}

#[test]
fn gguf_rejects_string_lengths_past_the_end() {
    // Key length.
    let mut b = one_kv("k", 1u8);
    set_u64(&mut b, 24, u64::MAX);
    let r = expect_err(b, "kv[0].key", 24);
    assert!(r.contains("exceeds"), "{r}");
    // String value length.
    for n in [u64::MAX, 1 << 63, 1000] {
        let mut b = one_kv("s", "hello");
        let (_, _, v) = kv_at(&b, "s");
        set_u64(&mut b, v, n);
        expect_err(b, "kv[0] 's'.value", v as u64);
    }
    // A string inside an array.
    let mut b = one_kv("as", vec!["abc", "defg"]);
    let (_, _, v) = kv_at(&b, "as");
    let second = find(&b, b"defg") - 8;
    set_u64(&mut b, second, u64::MAX);
    expect_err(b, "kv[0] 'as'.value[1]", second as u64);
    let _ = v;
}

#[test]
fn gguf_rejects_unknown_value_types() {
    for t in [13u32, 0xFFFF_FFFF, 100] {
        let mut b = one_kv("k", 1u8);
        let (_, ty, _) = kv_at(&b, "k");
        set_u32(&mut b, ty, t);
        let r = expect_err(b, "kv[0] 'k'.type", ty as u64);
        assert!(r.contains("unknown value type"), "{r}");
        // Array element type.
        let mut b = one_kv("a", vec![1u32, 2]);
        let (_, _, v) = kv_at(&b, "a");
        set_u32(&mut b, v, t);
        expect_err(b, "kv[0] 'a'.value.elem_type", v as u64);
    }
}

#[test]
fn gguf_rejects_bool_bytes_other_than_0_and_1() {
    let mut b = one_kv("flag", true);
    let (_, _, v) = kv_at(&b, "flag");
    b[v] = 2;
    let r = expect_err(b, "kv[0] 'flag'.value", v as u64);
    assert!(r.contains("0 or 1"), "{r}");
    let mut b = one_kv("flags", vec![true, false, true]);
    let (_, _, v) = kv_at(&b, "flags");
    b[v + 12 + 1] = 0x80;
    expect_err(b, "kv[0] 'flags'.value[1]", (v + 12 + 1) as u64);
}

#[test]
fn gguf_rejects_huge_array_counts() {
    for n in [1u64 << 62, 1 << 63, u64::MAX, 4] {
        let mut b = one_kv("a", vec![1u32, 2, 3]);
        let (_, _, v) = kv_at(&b, "a");
        set_u64(&mut b, v + 4, n);
        let r = expect_err(b, "kv[0] 'a'.value.len", (v + 4) as u64);
        assert!(r.contains("left"), "{r}");
    }
    // Strings need at least 8 bytes each.
    let mut b = one_kv("s", vec!["x"]);
    let (_, _, v) = kv_at(&b, "s");
    set_u64(&mut b, v + 4, 2);
    expect_err(b, "kv[0] 's'.value.len", (v + 4) as u64);
}

#[test]
fn gguf_rejects_bad_alignment() {
    // Wrong type: u64, i32, str.
    let ty_at = (24 + 8 + ALIGNMENT_KEY.len()) as u64;
    for (ty, payload) in [
        (10u32, 32u64.to_le_bytes().to_vec()),
        (5, 32i32.to_le_bytes().to_vec()),
        (8, [1u64.to_le_bytes().to_vec(), b"x".to_vec()].concat()),
    ] {
        let r = expect_err(raw_kv(ALIGNMENT_KEY, ty, &payload), "kv[0] 'general.alignment'.type", ty_at);
        assert!(r.contains("must be of type u32"), "{r}");
    }
    // The writer refuses to write it.
    let mut w = GgufWriter::new();
    w.add("general.alignment", 32u64);
    assert!(w.to_bytes().is_err());
    // Not a power of two.
    for a in [0u32, 3, 48, u32::MAX] {
        let mut b = two_tensors(Some(32));
        let (_, _, v) = kv_at(&b, "general.alignment");
        set_u32(&mut b, v, a);
        let r = expect_err(b, "kv[1] 'general.alignment'.value", v as u64);
        assert!(r.contains("power of two"), "{r}");
    }
}

// ---------------------------------------------------------------- tensor infos

#[test]
fn gguf_rejects_long_tensor_names() {
    let mut w = GgufWriter::new();
    w.add_tensor(&"n".repeat(63), GgmlType::F32, &[1], vec![0; 4]);
    let mut b = w.to_bytes().unwrap();
    let t = tensor_at(&b, &"n".repeat(63));
    for len in [64u64, 1000, u64::MAX] {
        set_u64(&mut b, t.info, len);
        let r = expect_err(b.clone(), "tensor[0].name", t.info as u64);
        assert!(r.contains("63"), "{r}");
    }
}

#[test]
fn gguf_rejects_duplicate_tensor_names() {
    let mut b = two_tensors(None);
    let wb = tensor_at(&b, "wb");
    b[wb.info + 8 + 1] = b'a';
    let r = expect_err(b, "tensor[1].name", wb.info as u64);
    assert!(r.contains("duplicate tensor name 'wa'"), "{r}");
}

#[test]
fn gguf_rejects_too_many_dimensions() {
    for n in [5u32, u32::MAX] {
        let mut b = two_tensors(None);
        let wa = tensor_at(&b, "wa");
        set_u32(&mut b, wa.n_dims, n);
        expect_err(b, "tensor[0] 'wa'.n_dims", wa.n_dims as u64);
    }
}

#[test]
fn gguf_rejects_negative_dimensions() {
    let mut b = two_tensors(None);
    let wb = tensor_at(&b, "wb");
    set_u64(&mut b, wb.ne + 8, u64::MAX); // -1
    let r = expect_err(b, "tensor[1] 'wb'.ne[1]", (wb.ne + 8) as u64);
    assert!(r.contains("negative"), "{r}");
}

#[test]
fn gguf_rejects_element_count_overflow() {
    let mut b = two_tensors(None);
    let wb = tensor_at(&b, "wb");
    set_u64(&mut b, wb.ne, i64::MAX as u64);
    let r = expect_err(b, "tensor[1] 'wb'.ne", wb.ne as u64);
    assert!(r.contains("i64::MAX elements"), "{r}");
}

#[test]
fn gguf_rejects_byte_size_overflow() {
    for ne0 in [1u64 << 62, 1 << 61, (i64::MAX as u64) / 4 * 4] {
        let mut b = two_tensors(None);
        let wa = tensor_at(&b, "wa");
        set_u64(&mut b, wa.ne, ne0);
        let r = expect_err(b, "tensor[0] 'wa'.ne", wa.ne as u64);
        assert!(r.contains("bytes"), "{r}");
    }
}

#[test]
fn gguf_rejects_unknown_tensor_types() {
    for (t, word) in [(0xFFFF_FFFFu32, "unknown"), (43, "unknown"), (4, "removed"), (31, "Q4_0_4_4"), (38, "removed")] {
        let mut b = two_tensors(None);
        let wa = tensor_at(&b, "wa");
        set_u32(&mut b, wa.ty, t);
        let r = expect_err(b, "tensor[0] 'wa'.type", wa.ty as u64);
        assert!(r.contains(word), "{r}");
    }
}

#[test]
fn gguf_rejects_rows_not_a_multiple_of_the_block_size() {
    let mut w = GgufWriter::new();
    w.add_tensor("q", GgmlType::Q4_0, &[32, 2], vec![0u8; 36]);
    let mut b = w.to_bytes().unwrap();
    let q = tensor_at(&b, "q");
    set_u64(&mut b, q.ne, 33);
    let r = expect_err(b, "tensor[0] 'q'.ne[0]", q.ne as u64);
    assert!(r.contains("block size 32"), "{r}");
    // n_dims = 0 makes ne[0] = 1, which a block type cannot have.
    let mut w = GgufWriter::new();
    w.add_tensor("q", GgmlType::Q8_0, &[32], vec![0u8; 34]);
    let mut b = w.to_bytes().unwrap();
    let q = tensor_at(&b, "q");
    set_u32(&mut b, q.n_dims, 0);
    b.drain(q.ne..q.ne + 8);
    expect_err(b, "tensor[0] 'q'.ne[0]", q.n_dims as u64);
}

// ---------------------------------------------------------------- data layout

#[test]
fn gguf_rejects_misaligned_offsets() {
    for off in [1u64, 16, 33, u64::MAX] {
        let mut b = two_tensors(None);
        let wb = tensor_at(&b, "wb");
        set_u64(&mut b, wb.offset, off);
        let r = expect_err(b, "tensor[1] 'wb'.offset", wb.offset as u64);
        assert!(r.contains("alignment 32"), "{r}");
    }
}

#[test]
fn gguf_rejects_offsets_outside_the_file() {
    for off in [u64::MAX - 31, 1 << 40, 64] {
        let mut b = two_tensors(None);
        let wb = tensor_at(&b, "wb");
        set_u64(&mut b, wb.offset, off);
        let r = expect_err(b, "tensor[1] 'wb'.offset", wb.offset as u64);
        assert!(r.contains("past the end"), "{r}");
    }
    // One byte past the end: alignment 1, last tensor shifted by one byte.
    let mut b = two_tensors(Some(1));
    let wb = tensor_at(&b, "wb");
    let f = parse(b.clone());
    let t = f.find_tensor("wb").unwrap();
    assert_eq!(f.data_offset() + t.offset + t.nbytes, b.len() as u64);
    set_u64(&mut b, wb.offset, t.offset + 1);
    expect_err(b.clone(), "tensor[1] 'wb'.offset", wb.offset as u64);
    // ... and the same by truncating the file by one byte.
    let mut b = two_tensors(Some(1));
    b.pop();
    expect_err(b, "tensor[1] 'wb'.offset", wb.offset as u64);
}

#[test]
fn gguf_rejects_overlapping_tensors() {
    // Same offset.
    let mut b = two_tensors(None);
    let wb = tensor_at(&b, "wb");
    set_u64(&mut b, wb.offset, 0);
    let r = expect_err(b, "tensor[1] 'wb'.offset", wb.offset as u64);
    assert!(r.contains("overlaps") && r.contains("'wa'"), "{r}");
    // Partial overlap, reported on the later tensor by offset.
    let mut b = two_tensors(Some(8));
    let wa = tensor_at(&b, "wa");
    let wb = tensor_at(&b, "wb");
    set_u64(&mut b, wa.offset, 64); // wa [64, 96) now inside wb [32, 96)
    let r = expect_err(b, "tensor[0] 'wa'.offset", wa.offset as u64);
    assert!(r.contains("'wb'"), "{r}");
    let _ = wb;
    // Empty tensors overlap nothing.
    let mut w = GgufWriter::new();
    w.add_tensor("e", GgmlType::F32, &[0], Vec::new());
    w.add_tensor("f", GgmlType::F32, &[8], f32_bytes(&[0.0; 8]));
    let mut b = w.to_bytes().unwrap();
    let e = tensor_at(&b, "e");
    set_u64(&mut b, e.offset, 0);
    parse(b);
}

#[test]
fn gguf_rejects_padding_past_the_end() {
    let b = two_tensors(None);
    let f = parse(b.clone());
    let d = f.data_offset() as usize;
    let wb = tensor_at(&b, "wb");
    let info_end = wb.offset + 8;
    assert!(info_end < d, "the test needs padding after the tensor infos");
    for cut in [info_end, d - 1] {
        let r = expect_err(b[..cut].to_vec(), "data section", info_end as u64);
        assert!(r.contains("past"), "{r}");
    }
}

// ---------------------------------------------------------------- robustness

#[test]
fn gguf_every_truncation_fails_cleanly() {
    let mut w = GgufWriter::new();
    for (k, v) in every_value() {
        w.add(k, v);
    }
    // The last tensor's size is a multiple of the alignment, so the file has
    // no trailing padding and every byte matters.
    w.add_tensor("a", GgmlType::Q4_0, &[32], vec![1u8; 18]);
    w.add_tensor("b", GgmlType::F32, &[8, 2], f32_bytes(&[1.0; 16]));
    let b = w.to_bytes().unwrap();
    let f = parse(b.clone());
    assert_eq!(f.tensor_file_offset(&f.tensor(1).unwrap()).unwrap() + 64, b.len() as u64);
    for n in 0..b.len() {
        match GgufFile::from_bytes(b[..n].to_vec()) {
            Err(Error::Gguf { offset, .. }) => {
                assert!(offset <= n as u64, "offset {offset} past the cut {n}")
            }
            other => panic!("truncated at {n}: {other:?}"),
        }
    }
}

#[test]
fn gguf_random_corruption_never_panics() {
    let mut w = GgufWriter::new();
    for (k, v) in every_value() {
        w.add(k, v);
    }
    w.add_tensor("a", GgmlType::Q4_0, &[32], vec![1u8; 18]);
    w.add_tensor("b", GgmlType::F32, &[4, 2], f32_bytes(&[1.0; 8]));
    let base = w.to_bytes().unwrap();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut ok = 0;
    for _ in 0..20000 {
        let mut b = base.clone();
        for _ in 0..(1 + rnd() % 4) {
            let at = (rnd() % b.len() as u64) as usize;
            b[at] = match rnd() % 4 {
                0 => 0,
                1 => 0xFF,
                2 => b[at] ^ (1 << (rnd() % 8)),
                _ => rnd() as u8,
            };
        }
        if let Ok(f) = GgufFile::from_bytes(b) {
            ok += 1;
            for (_, v) in f.iter_kv() {
                let _ = f.format_value(&v);
            }
            for t in f.tensors() {
                assert_eq!(f.tensor_data(&t).len() as u64, t.nbytes);
            }
        }
    }
    assert!(ok > 0);
}

#[test]
fn gguf_views_from_another_file_do_not_panic() {
    let mut w = GgufWriter::new();
    w.add("s", "a fairly long string value").add("a", vec!["x"; 50]).add("n", vec![7u64; 40]);
    let big = parse(w.to_bytes().unwrap());
    let small = parse(one_kv("k", 1u8));
    let s = big.get("s").unwrap().as_str_ref().unwrap();
    assert!(small.str_bytes(&s).is_empty());
    let a = big.get("a").unwrap().as_array().unwrap();
    assert_eq!(small.array_strings(&a).map(|i| i.count()), None);
    assert_eq!(small.array_values(&a).count(), 0);
    let n = big.get("n").unwrap().as_array().unwrap();
    assert!(small.array_vec::<u64>(&n).is_none());
    // A view whose public length was tampered with.
    let mut n2 = n;
    n2.len = u64::MAX;
    assert!(big.array_vec::<u64>(&n2).is_none());
    let _ = big.format_value(&Value::Array(n2));
}

/// Writes the fuzz seed corpus. Run once:
/// `cargo test --lib gguf::tests::write_fuzz_seeds -- --ignored`
#[test]
#[ignore]
fn write_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/gguf_parse");
    std::fs::create_dir_all(&dir).unwrap();
    let mut seeds: Vec<(&str, Vec<u8>)> = Vec::new();

    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama").add("general.name", "tiny");
    seeds.push(("metadata_only.gguf", w.to_bytes().unwrap()));

    let mut w = GgufWriter::new();
    for (k, v) in every_value() {
        w.add(k, v);
    }
    seeds.push(("every_value.gguf", w.to_bytes().unwrap()));

    seeds.push(("two_f32_tensors_align8.gguf", two_tensors(Some(8))));

    let mut w = GgufWriter::new();
    w.set_version(2)
        .add("tokenizer.ggml.tokens", vec!["<s>", "</s>", "a", "b"])
        .add("tokenizer.ggml.scores", vec![0.0f32, 0.0, -1.0, -2.0])
        .add("tokenizer.ggml.token_type", vec![3i32, 3, 1, 1])
        .add_tensor("blk.0.attn_q.weight", GgmlType::Q4_0, &[32, 2], vec![0x11u8; 36])
        .add_tensor("blk.0.ffn_down.weight", GgmlType::Q6_K, &[256], vec![0x22u8; 210])
        .add_tensor("output_norm.weight", GgmlType::F16, &[4], vec![0u8; 8])
        .add_tensor("empty", GgmlType::F32, &[0, 3], Vec::new())
        .add_tensor("scalar", GgmlType::I32, &[], vec![1, 0, 0, 0]);
    seeds.push(("v2_quantized.gguf", w.to_bytes().unwrap()));

    let mut a = OwnedArray::Str(vec![b"deep".to_vec()]);
    for _ in 0..7 {
        a = OwnedArray::Array(vec![a, OwnedArray::Bool(vec![true])]);
    }
    let mut w = GgufWriter::new();
    w.set_alignment(1).add("nested", a).add_tensor("t", GgmlType::BF16, &[3], vec![0u8; 6]);
    seeds.push(("nested_align1.gguf", w.to_bytes().unwrap()));

    for (name, bytes) in seeds {
        assert!(bytes.len() < 4096, "{name} is {} bytes", bytes.len());
        parse(bytes.clone());
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

#[test]
fn released_tensor_pages_read_back_the_same_bytes() {
    // A repacked matrix's file pages are dropped after the load copied them
    // (`release_pages`); whatever reads the tensor later (saving the model,
    // a tied embedding) must still see the file's bytes.
    let data: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama").add_tensor("t", GgmlType::I8, &[data.len() as u64], &data[..]);
    let bytes = w.to_bytes().expect("gguf");
    let path = std::env::temp_dir().join(format!("minfer-release-{}.gguf", std::process::id()));
    std::fs::write(&path, &bytes).expect("write");
    let f = GgufFile::open(&path).expect("open");
    let _ = std::fs::remove_file(&path);
    let t = f.find_tensor("t").expect("tensor");
    assert_eq!(f.tensor_data(&t), &data[..]);
    let released = f.release_pages(&t);
    // the whole pages inside 200 000 bytes: at least 200 000 - 2 pages
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    assert!(released >= data.len() - 2 * page && released <= data.len(), "released {released} bytes");
    assert_eq!(f.tensor_data(&t), &data[..], "the bytes fault back in unchanged");
    // a piece of the data (a float matrix copied piece by piece): its whole
    // pages only; a slice that is not the file's releases nothing
    let piece = &f.tensor_data(&t)[1000..1000 + 5 * page];
    let released = f.release_slice(piece);
    assert!(released >= 4 * page && released <= 5 * page, "released {released} bytes of a piece");
    assert_eq!(f.tensor_data(&t), &data[..], "the piece faults back in unchanged");
    assert_eq!(f.release_slice(&data[..]), 0, "bytes outside the mapping");
    assert_eq!(f.release_slice(&[]), 0);
    // owned bytes: nothing to release
    let owned = GgufFile::from_bytes(bytes).expect("parse");
    assert_eq!(owned.release_pages(&owned.find_tensor("t").expect("tensor")), 0);
    assert_eq!(owned.read_tensor(&owned.find_tensor("t").expect("tensor")).expect("read"), data);
}

/// Pages of `data` mapped into this process (`/proc/self/pagemap`'s
/// present bit), or None where pagemap cannot be read.
#[cfg(target_os = "linux")]
fn mapped_pages(data: &[u8]) -> Option<usize> {
    use std::os::unix::fs::FileExt;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let pagemap = std::fs::File::open("/proc/self/pagemap").ok()?;
    let (first, last) = (data.as_ptr() as usize / page, (data.as_ptr() as usize + data.len() - 1) / page);
    let mut n = 0;
    for p in first..=last {
        let mut e = [0u8; 8];
        pagemap.read_exact_at(&mut e, (p * 8) as u64).ok()?;
        n += (u64::from_le_bytes(e) >> 63) as usize;
    }
    Some(n)
}

/// A mapped GGUF file (written to a temporary file, then removed) holding
/// one I8 tensor "t" of `data`, and that tensor's info.
fn mapped_one_tensor(tag: &str, data: &[u8]) -> (GgufFile, TensorInfo) {
    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama").add_tensor("t", GgmlType::I8, &[data.len() as u64], data);
    let path = std::env::temp_dir().join(format!("minfer-{tag}-{}.gguf", std::process::id()));
    std::fs::write(&path, w.to_bytes().expect("gguf")).expect("write");
    let f = GgufFile::open(&path).expect("open");
    let _ = std::fs::remove_file(&path);
    let t = f.find_tensor("t").expect("tensor");
    (f, t)
}

#[cfg(target_os = "linux")]
#[test]
fn read_tensor_copies_without_mapping_the_pages() {
    // The norms and biases are read at load with `read_tensor`, so that a
    // model whose matrices were copied out of the file never maps its
    // pages again (a 2 MiB folio per norm where the page cache has them).
    let data: Vec<u8> = (0..100_000u32).map(|i| (i.wrapping_mul(2_246_822_519) >> 11) as u8).collect();
    let (f, t) = mapped_one_tensor("read-tensor", &data);
    // the interior pages (the header shares the first)
    let inner = &f.tensor_data(&t)[8192..data.len() - 8192];
    f.release_pages(&t);
    let Some(before) = mapped_pages(inner) else { return };
    assert_eq!(before, 0, "released pages are not mapped");
    assert_eq!(f.read_tensor(&t).expect("read"), data);
    assert_eq!(mapped_pages(inner), Some(0), "read_tensor maps no page");
    assert_eq!(f.tensor_data(&t), &data[..]);
    assert!(mapped_pages(inner).is_some_and(|n| n > 0), "a read through the mapping maps them");
    // a tensor whose data would lie past the end of the file
    let mut bad = t.clone();
    bad.offset += 1 << 20;
    assert!(f.read_tensor(&bad).is_err());
}

/// The model mapping asks for huge pages (`VmFlags` "hg" in smaps): pages
/// read in for it come as 2 MiB folios where the file system can.
#[cfg(target_os = "linux")]
#[test]
fn gguf_mapping_asks_for_huge_pages() {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
        return; // a kernel without THP takes no such advice
    }
    let path = std::env::temp_dir().join(format!("minfer-gguf-hugepage-{}.gguf", std::process::id()));
    std::fs::write(&path, two_tensors(None)).unwrap();
    let f = GgufFile::open(&path).unwrap();
    let flags = vm_flags_at(f.bytes().as_ptr() as usize);
    std::fs::remove_file(&path).ok();
    let flags = flags.expect("the mapping in /proc/self/smaps");
    assert!(flags.split_whitespace().any(|f| f == "hg"), "{flags}");
}

/// The `VmFlags:` line of the mapping that holds `addr` (`/proc/self/smaps`).
#[cfg(target_os = "linux")]
fn vm_flags_at(addr: usize) -> Option<String> {
    smaps_line_at(addr, "VmFlags:")
}

/// The line starting with `field` in the `/proc/self/smaps` entry of the
/// mapping that holds `addr`.
#[cfg(target_os = "linux")]
fn smaps_line_at(addr: usize, field: &str) -> Option<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    // each mapping's block: its "start-end" line, then its fields
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((a, b)) = line.split_once(' ').and_then(|(range, _)| range.split_once('-')) {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                inside = (a..b).contains(&addr);
                continue;
            }
        }
        if inside && line.starts_with(field) {
            return Some(line.to_string());
        }
    }
    None
}

/// A size field (`FilePmdMapped:`, `Anonymous:`, in kB there) of the
/// mapping that holds `addr`, in bytes.
#[cfg(target_os = "linux")]
fn smaps_bytes_at(addr: usize, field: &str) -> Option<usize> {
    Some(smaps_line_at(addr, field)?.split_whitespace().nth(1)?.parse::<usize>().ok()? * 1024)
}

/// Released pages are kept out of huge mappings (`VmFlags` "nh" over them):
/// where the page cache holds the file in 2 MiB folios, a read of the
/// pages next to them would otherwise map their whole folio back (Gemma 3's
/// peak RSS went above the reference's that way). The rest of the mapping
/// keeps its huge-page advice.
#[cfg(target_os = "linux")]
#[test]
fn released_pages_are_kept_out_of_huge_mappings() {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
        return; // a kernel without THP takes no such advice
    }
    let data: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8).collect();
    let (f, t) = mapped_one_tensor("release-nh", &data);
    let inner = f.tensor_data(&t)[data.len() / 2..].as_ptr() as usize;
    let head = f.bytes().as_ptr() as usize;
    assert!(f.release_pages(&t) > 0);
    let has = |addr: usize, flag: &str| {
        vm_flags_at(addr).expect("the mapping in smaps").split_whitespace().any(|f| f == flag)
    };
    assert!(has(inner, "nh") && !has(inner, "hg"), "released range: {:?}", vm_flags_at(inner));
    assert!(has(head, "hg"), "the header's page keeps the advice: {:?}", vm_flags_at(head));
    assert_eq!(f.tensor_data(&t), &data[..], "the bytes still read back");
}

/// `huge_mapped_bytes` (whether the loader copies a float matrix) faults in
/// a page of every 2 MiB block of the data and counts the bytes that lie in
/// 2 MiB mappings: what smaps says of the mapping, less at most the blocks
/// at the data's two ends that it shares with the header and the file's
/// end. The file is first dropped from the page cache, so that it is read
/// in for the mapping (as 2 MiB folios where the file system can: then the
/// whole data counts). Owned bytes and slices of other memory: `None`.
#[cfg(target_os = "linux")]
#[test]
fn huge_mapped_bytes_agrees_with_smaps() {
    let data: Vec<u8> = (0..(7u32 << 20) + 12_345).map(|i| (i.wrapping_mul(2_654_435_761) >> 9) as u8).collect();
    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama").add_tensor("t", GgmlType::I8, &[data.len() as u64], &data[..]);
    let path = std::env::temp_dir().join(format!("minfer-huge-mapped-{}.gguf", std::process::id()));
    std::fs::write(&path, w.to_bytes().expect("gguf")).expect("write");
    {
        let file = std::fs::File::open(&path).expect("open");
        use std::os::fd::AsRawFd;
        // SAFETY: advice on an open file descriptor; clean pages only are dropped.
        unsafe {
            libc::fdatasync(file.as_raw_fd());
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    let f = GgufFile::open(&path).expect("open");
    let _ = std::fs::remove_file(&path);
    let t = f.find_tensor("t").expect("tensor");
    let got = f.huge_mapped_bytes(f.tensor_data(&t));
    let Some(huge) = got else {
        eprintln!("this kernel cannot say which pages are huge (PAGEMAP_SCAN): nothing to compare");
        return;
    };
    let data_at = f.tensor_data(&t);
    assert!(huge <= data.len());
    // one page of every 2 MiB block was faulted in
    let lo = data_at.as_ptr() as usize;
    let mut block = lo / HUGE * HUGE;
    while block < lo + data.len() {
        let at = block.max(lo) - lo;
        assert_eq!(mapped_pages(&data_at[at..at + 1]), Some(1), "block at {block:#x}");
        block += HUGE;
    }
    let pmd = smaps_bytes_at(lo, "FilePmdMapped:").expect("the mapping in smaps");
    assert!(huge <= pmd && pmd - huge <= 2 * HUGE, "huge {huge} against FilePmdMapped {pmd}");
    // the bytes are the file's either way
    assert_eq!(f.tensor_data(&t), &data[..]);
    // nothing to say of owned bytes or of memory outside the mapping
    assert_eq!(f.huge_mapped_bytes(&data), None);
    assert_eq!(f.huge_mapped_bytes(&[]), None);
    let owned = GgufFile::from_bytes(w.to_bytes().expect("gguf")).expect("parse");
    assert_eq!(owned.huge_mapped_bytes(owned.tensor_data(&owned.find_tensor("t").expect("tensor"))), None);
}

/// `read_through_huge_pages` with every block copied (what the load does to
/// the blocks of a float matrix that the page cache holds in small folios):
/// the whole 2 MiB blocks of the mapping that the data touches become
/// anonymous copies at the same addresses, the bytes read the same, a
/// second call copies nothing, and releasing the tensor's pages (as the
/// load does for a neighbouring matrix) leaves the copies' bytes: dropping
/// an anonymous page would read back zeros.
#[cfg(target_os = "linux")]
#[test]
fn blocks_copied_in_place_keep_their_bytes() {
    let data: Vec<u8> = (0..(7u32 << 20) + 12_345).map(|i| (i.wrapping_mul(2_246_822_519) >> 7) as u8 | 1).collect();
    let (f, t) = mapped_one_tensor("in-place", &data);
    let at = f.tensor_data(&t);
    let Some(copied) = f.read_through_huge_pages(at, true, true) else {
        eprintln!("this kernel cannot say which pages are huge (PAGEMAP_SCAN): nothing to test");
        return;
    };
    // the mapping's whole blocks among the ~7 MiB of data: two at least
    assert!(copied >= 2 * HUGE && copied % HUGE == 0 && copied <= data.len() + HUGE, "copied {copied}");
    assert_eq!(f.tensor_data(&t), &data[..], "the same bytes at the same addresses");
    let middle = at.as_ptr() as usize + data.len() / 2;
    assert!(smaps_bytes_at(middle, "Anonymous:").is_some_and(|b| b > 0), "the middle of the data is an anonymous copy");
    assert_eq!(f.read_through_huge_pages(at, true, true), Some(0), "nothing left to copy");
    let released = f.release_pages(&t);
    assert!(released < data.len() - copied + HUGE, "released {released} bytes: only file pages");
    assert_eq!(f.tensor_data(&t), &data[..], "released, the copied blocks keep their bytes");
    // without `every_block`: the blocks already read through huge pages
    // (the copies, where the system gave huge pages) are left as they are
    let again = f.read_through_huge_pages(at, true, false).expect("the kernel said before");
    assert!(again < data.len());
    assert_eq!(f.tensor_data(&t), &data[..]);
    // owned bytes: nothing to do
    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama").add_tensor("t", GgmlType::I8, &[data.len() as u64], &data[..]);
    let owned = GgufFile::from_bytes(w.to_bytes().expect("gguf")).expect("parse");
    let t = owned.find_tensor("t").expect("tensor");
    assert_eq!(owned.read_through_huge_pages(owned.tensor_data(&t), true, true), None);
}
