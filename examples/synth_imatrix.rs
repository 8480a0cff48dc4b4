//! Writes a synthetic importance matrix for a model, in the two formats the
//! reference's `llama-quantize --imatrix` reads (for the imatrix quantization
//! tests; minfer has no `llama-imatrix`, whose statistics need the ggml graph
//! callback):
//!
//! - `format=gguf` (default), as `llama-imatrix` writes it: `general.type =
//!   "imatrix"`, `imatrix.datasets`, `imatrix.chunk_count`,
//!   `imatrix.chunk_size`, and per weight matrix `NAME.in_sum2` (F32
//!   `[n_in, n_mat]`: the sums of squared activations) and `NAME.counts` (F32
//!   `[1, n_mat]`: the tokens each expert saw). The loader divides the sums
//!   by the counts; an expert with a count of 0 gets weights of 1.
//! - `format=dat`, the legacy file: `i32 n_entries`, then per entry `i32
//!   len, name, i32 ncall, i32 nval, f32 values[nval]` (already the mean
//!   times ncall), then `i32 chunk_count, i32 len, dataset`.
//!
//! Entries: every matrix a forward pass multiplies by (2-D and 3-D `.weight`
//! tensors but token_embd), with weights uniform in [0.05, 4.05).
//! `zero_count=1` gives the first expert of every 3-D tensor a count of 0.
//!
//! usage: cargo run --release --example synth_imatrix -- MODEL.gguf OUT [format=gguf|dat] [seed=N] [zero_count=1]

use llama::ggml_type::GgmlType;
use llama::gguf::{GgufFile, GgufWriter, OwnedArray, OwnedValue};
use std::io::Write;

#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::Rng;

/// One entry: the per-expert means and counts.
struct Entry {
    name: String,
    n_in: usize,
    /// `[n_mat][n_in]` mean squared activations
    means: Vec<f32>,
    /// `[n_mat]` tokens seen
    counts: Vec<u32>,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: {} MODEL.gguf OUT [format=gguf|dat] [seed=N] [zero_count=1]", args[0]);
        std::process::exit(2);
    }
    let (mut dat, mut seed, mut zero_count) = (false, 1u64, false);
    for kv in &args[3..] {
        match kv.split_once('=') {
            Some(("format", "gguf")) => dat = false,
            Some(("format", "dat")) => dat = true,
            Some(("seed", v)) => seed = v.parse().expect("seed=N"),
            Some(("zero_count", v)) => zero_count = v == "1",
            _ => panic!("unknown option {kv}"),
        }
    }
    let model = GgufFile::open(std::path::Path::new(&args[1])).expect("a model");
    let mut rng = Rng(seed);
    let mut entries = Vec::new();
    for t in model.tensors() {
        let ne = t.shape().to_vec();
        if !t.name.ends_with(".weight") || t.name.starts_with("token_embd") || ne.len() < 2 || ne[1] == 1 {
            continue;
        }
        let (n_in, n_mat) = (ne[0] as usize, ne.get(2).copied().unwrap_or(1) as usize);
        let counts: Vec<u32> =
            (0..n_mat).map(|e| if zero_count && n_mat > 1 && e == 0 { 0 } else { 512 + 64 * e as u32 }).collect();
        let means = (0..n_in * n_mat).map(|_| 2.05 + 2.0 * rng.uniform()).collect();
        entries.push(Entry { name: t.name.clone(), n_in, means, counts });
    }
    let out = std::path::Path::new(&args[2]);
    if dat {
        write_dat(out, &entries);
    } else {
        write_gguf(out, &entries);
    }
    eprintln!("{}: {} entries", out.display(), entries.len());
}

fn write_gguf(out: &std::path::Path, entries: &[Entry]) {
    let mut w = GgufWriter::new();
    w.add("general.type", OwnedValue::Str(b"imatrix".to_vec()));
    w.add("imatrix.datasets", OwnedValue::Array(OwnedArray::Str(vec![b"synthetic.txt".to_vec()])));
    w.add("imatrix.chunk_count", OwnedValue::U32(12));
    w.add("imatrix.chunk_size", OwnedValue::U32(512));
    for e in entries {
        let n_mat = e.counts.len();
        // in_sum2 = mean · count (the loader divides by the count again)
        let sums: Vec<u8> =
            e.means.iter().enumerate().flat_map(|(i, &m)| (m * e.counts[i / e.n_in] as f32).to_le_bytes()).collect();
        let counts: Vec<u8> = e.counts.iter().flat_map(|&c| (c as f32).to_le_bytes()).collect();
        w.add_tensor(&format!("{}.in_sum2", e.name), GgmlType::F32, &[e.n_in as u64, n_mat as u64], sums);
        w.add_tensor(&format!("{}.counts", e.name), GgmlType::F32, &[1, n_mat as u64], counts);
    }
    w.write_file(out).expect("write the imatrix");
}

fn write_dat(out: &std::path::Path, entries: &[Entry]) {
    const NCALL: i32 = 10;
    let mut b = Vec::new();
    b.extend_from_slice(&(entries.len() as i32).to_le_bytes());
    for e in entries {
        b.extend_from_slice(&(e.name.len() as i32).to_le_bytes());
        b.extend_from_slice(e.name.as_bytes());
        b.extend_from_slice(&NCALL.to_le_bytes());
        b.extend_from_slice(&(e.means.len() as i32).to_le_bytes());
        for &m in &e.means {
            b.extend_from_slice(&(m * NCALL as f32).to_le_bytes());
        }
    }
    b.extend_from_slice(&12i32.to_le_bytes());
    let ds = b"synthetic.txt";
    b.extend_from_slice(&(ds.len() as i32).to_le_bytes());
    b.extend_from_slice(ds);
    std::fs::File::create(out).and_then(|mut f| f.write_all(&b)).expect("write the imatrix");
}
