//! Peak heap use of parsing (and rejecting) adversarial GGUF files, measured
//! with the test-only counting allocator (`crate::test_alloc`).
//!
//! The bound: the parser's own allocations (the result included) stay at or
//! below the file's size plus `SLACK` bytes, so the file's bytes (owned or
//! mapped) plus the parser never exceed twice the file size plus `SLACK`.

use super::*;
use crate::test_alloc::peak_bytes;

/// The constant of the bound: error messages, the `GgufFile` itself, and
/// rounding.
const SLACK: usize = 16 * 1024;

// ---------------------------------------------------------------- builders

fn header(n_tensors: u64, n_kv: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"GGUF");
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&n_tensors.to_le_bytes());
    b.extend_from_slice(&n_kv.to_le_bytes());
    b
}

fn put_str(b: &mut Vec<u8>, s: &[u8]) {
    b.extend_from_slice(&(s.len() as u64).to_le_bytes());
    b.extend_from_slice(s);
}

/// A short name unique to `i`: printable ASCII (`ascii`) or bytes that are
/// not UTF-8 (each a lone continuation byte).
fn name(i: usize, ascii: bool) -> Vec<u8> {
    let digits = [i % 64, (i / 64) % 64, (i / 4096) % 64, i / 262_144];
    let n = if i < 262_144 { 3 } else { 4 };
    digits[..n].iter().map(|&d| if ascii { b'0' + d as u8 } else { 0x80 + d as u8 }).collect()
}

/// `n` pairs `name(i)` = u8 `i`; `last_type` replaces the last pair's type.
fn tiny_kvs(n: usize, ascii: bool, last_type: u32) -> Vec<u8> {
    let mut b = header(0, n as u64);
    for i in 0..n {
        put_str(&mut b, &name(i, ascii));
        let ty = if i + 1 == n { last_type } else { 0 };
        b.extend_from_slice(&ty.to_le_bytes());
        b.push(i as u8);
    }
    b
}

/// The smallest pairs 65536 distinct keys allow: 2-byte keys, u8 values
/// (15 bytes each; the format's minimum is 14, with 1-byte keys).
fn two_byte_kvs() -> Vec<u8> {
    let mut b = header(0, 65_536);
    for i in 0..65_536u32 {
        put_str(&mut b, &[i as u8, (i >> 8) as u8]);
        b.extend_from_slice(&0u32.to_le_bytes());
        b.push(0);
    }
    b
}

/// Counts as large as the file allows (`n_kv` of the smallest pairs, or
/// `n_tensors` of the smallest infos), then zeros: the first item is bad.
fn counts_fill_the_file(len: usize, tensors: bool) -> Vec<u8> {
    let left = (len - 24) as u64;
    let mut b = if tensors { header(left / 24, 0) } else { header(0, left / 14) };
    b.resize(len, 0);
    b
}

/// `n` pairs whose last key repeats the first.
fn tiny_kvs_last_duplicate(n: usize) -> Vec<u8> {
    let mut b = header(0, n as u64);
    for i in 0..n {
        put_str(&mut b, &name(if i + 1 == n { 0 } else { i }, true));
        b.extend_from_slice(&0u32.to_le_bytes());
        b.push(1);
    }
    b
}

/// `n` one-byte I8 tensors (no dimensions) at alignment 1; the last one's
/// offset is `last_offset` (n - 1 for a valid file).
fn tiny_tensors(n: usize, last_offset: u64) -> Vec<u8> {
    let mut b = header(n as u64, 1);
    put_str(&mut b, ALIGNMENT_KEY.as_bytes());
    b.extend_from_slice(&(GgufType::U32 as u32).to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for i in 0..n {
        put_str(&mut b, &name(i, true));
        b.extend_from_slice(&0u32.to_le_bytes()); // n_dims
        b.extend_from_slice(&(crate::ggml_type::GgmlType::I8 as u32).to_le_bytes());
        let off = if i + 1 == n { last_offset } else { i as u64 };
        b.extend_from_slice(&off.to_le_bytes());
    }
    b.resize(b.len() + n, 7);
    b
}

/// One pair holding an array of `n` elements of `elem`, each `elem_bytes`.
fn one_array(n: usize, elem: GgufType, elem_bytes: &[u8]) -> Vec<u8> {
    let mut b = header(0, 1);
    put_str(&mut b, b"a");
    b.extend_from_slice(&(GgufType::Array as u32).to_le_bytes());
    b.extend_from_slice(&(elem as u32).to_le_bytes());
    b.extend_from_slice(&(n as u64).to_le_bytes());
    for _ in 0..n {
        b.extend_from_slice(elem_bytes);
    }
    b
}

/// One pair with a `len`-byte key and a `len`-byte string value.
fn long_strings(len: usize) -> Vec<u8> {
    let mut b = header(0, 1);
    put_str(&mut b, &vec![b'k'; len]);
    b.extend_from_slice(&(GgufType::Str as u32).to_le_bytes());
    put_str(&mut b, &vec![b'v'; len]);
    b
}

// ---------------------------------------------------------------- the test

#[test]
fn gguf_parse_peak_memory_is_bounded_by_the_file_size() {
    let empty_array = {
        let mut e = (GgufType::U8 as u32).to_le_bytes().to_vec();
        e.extend_from_slice(&0u64.to_le_bytes());
        e
    };
    let mut huge_count = one_array(3, GgufType::U32, &[0; 4]);
    let count_at = huge_count.len() - 12 - 8;
    huge_count[count_at..count_at + 8].copy_from_slice(&(1u64 << 62).to_le_bytes());
    let n = 200_000;
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("tiny kvs, ASCII keys", tiny_kvs(n, true, 0), true),
        ("tiny kvs, non-UTF-8 keys", tiny_kvs(n, false, 0), true),
        ("65536 pairs with 2-byte keys", two_byte_kvs(), true),
        ("n_kv fills the file, the first key is empty", counts_fill_the_file(1 << 22, false), false),
        ("n_tensors fills the file, the first name is empty", counts_fill_the_file(1 << 22, true), false),
        ("tiny kvs, the last has a bad type", tiny_kvs(n, true, 99), false),
        ("tiny kvs, the last key is a duplicate", tiny_kvs_last_duplicate(n), false),
        ("tiny tensor infos", tiny_tensors(n, n as u64 - 1), true),
        ("tiny tensor infos, the last out of bounds", tiny_tensors(n, 1 << 40), false),
        ("tiny tensor infos, the last overlaps", tiny_tensors(n, 0), false),
        ("array of 1M u8", one_array(1 << 20, GgufType::U8, &[1]), true),
        ("array of 1M empty strings", one_array(1 << 20, GgufType::Str, &[0; 8]), true),
        ("array of 1M empty arrays", one_array(1 << 20, GgufType::Array, &empty_array), true),
        ("array count 2^62", huge_count, false),
        ("4 MiB key and string", long_strings(4 << 20), true),
    ];
    let mut worst = 0.0f64;
    for (what, bytes, valid) in cases {
        let len = bytes.len();
        let (result, peak) = peak_bytes(|| GgufFile::from_bytes(bytes));
        // The input was allocated before the call, so `peak` counts only
        // the parser's allocations (it frees the input only on its way out).
        assert_eq!(result.is_ok(), valid, "{what}: {:?}", result.err());
        let ratio = peak as f64 / len as f64;
        if len >= SLACK {
            worst = worst.max(ratio);
        }
        eprintln!("peak memory: {what}: file {len} bytes, parser peak {peak} bytes ({ratio:.2}x)");
        assert!(
            peak <= len + SLACK,
            "{what}: the parser peaked at {peak} bytes for a {len}-byte file (bound {})",
            len + SLACK
        );
    }
    eprintln!("peak memory: worst ratio {worst:.2}x the file size (files over {SLACK} bytes)");
}

/// Loading a model goes on past the parse: the metadata table of the C API
/// (`model::metadata`) must not cost per-pair allocations either. A
/// vocab-only load of 200 000 tiny pairs, refused at the vocabulary.
#[test]
fn model_load_peak_memory_is_bounded_by_the_file_size() {
    let n = 200_000;
    let mut b = header(0, n as u64 + 1);
    put_str(&mut b, b"general.architecture");
    b.extend_from_slice(&(GgufType::Str as u32).to_le_bytes());
    put_str(&mut b, b"llama");
    for i in 0..n {
        put_str(&mut b, &name(i, true));
        b.extend_from_slice(&0u32.to_le_bytes());
        b.push(i as u8);
    }
    let len = b.len();
    let path = std::env::temp_dir().join(format!("minfer-tiny-kvs-{}.gguf", std::process::id()));
    std::fs::write(&path, &b).unwrap();
    drop(b);
    let params = crate::model::LoadParams { vocab_only: true, ..Default::default() };
    let (r, peak) = peak_bytes(|| crate::model::Model::load(crate::model::Source::Path(&path), params).err());
    let _ = std::fs::remove_file(&path);
    let err = r.expect("a file without a vocabulary is refused").to_string();
    assert!(err.contains("tokenizer.ggml.model"), "{err}");
    eprintln!(
        "peak memory: model load (vocab_only) of {n} tiny pairs: file {len} bytes, peak {peak} bytes ({:.2}x)",
        peak as f64 / len as f64
    );
    assert!(peak <= len + SLACK, "the load peaked at {peak} bytes for a {len}-byte file");
}
