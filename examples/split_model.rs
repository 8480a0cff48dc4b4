//! Splits a GGUF model into parts the way the reference's `llama-gguf-split
//! --split --split-max-tensors N` does: the first part keeps every metadata
//! pair, each part gets split.no (u16), split.tensors.count (i32) and
//! split.count (u16, last, as gguf-split sets it after the fact); tensors
//! stay in file order, N per part. Parts are named `<PREFIX>-0000i-of-0000n.gguf`.
//!
//! usage: cargo run --release --example split_model -- IN.gguf OUT_PREFIX N_TENSORS [no-tensor-first-split]

use llama::gguf::{GgufFile, GgufWriter, OwnedValue};
use llama::model::split::{split_path, KEY_SPLIT_COUNT, KEY_SPLIT_NO, KEY_SPLIT_TENSORS_COUNT};
use std::path::{Path, PathBuf};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: {} IN.gguf OUT_PREFIX N_TENSORS [no-tensor-first-split]", args[0]);
        std::process::exit(2);
    }
    let input = GgufFile::open(Path::new(&args[1])).expect("input GGUF");
    let per_part: usize = args[3].parse().expect("N_TENSORS");
    assert!(per_part > 0, "N_TENSORS must be positive");
    let empty_first = args.get(4).is_some_and(|a| a == "no-tensor-first-split");

    // tensor indices of each part
    let n = input.n_tensors();
    let mut parts: Vec<Vec<usize>> = vec![Vec::new()];
    if empty_first {
        parts.push(Vec::new());
    }
    for i in 0..n {
        if i > 0 && i % per_part == 0 {
            parts.push(Vec::new());
        }
        parts.last_mut().unwrap().push(i);
    }

    let all = GgufWriter::from_file(&input);
    let tensors: Vec<_> = input.tensors().collect();
    for (no, idx) in parts.iter().enumerate() {
        let mut w = GgufWriter::new();
        if no == 0 {
            w = all.clone();
            // the copy holds every tensor; keep this part's only
            w.retain_tensors(|name| idx.iter().any(|&i| tensors[i].name == name));
        } else {
            for &i in idx {
                let t = &tensors[i];
                let ne: Vec<u64> = t.shape().iter().map(|&d| d as u64).collect();
                w.add_tensor(&t.name, t.ggml_type, &ne, input.tensor_data(t));
            }
        }
        w.set_last(KEY_SPLIT_NO.as_bytes(), OwnedValue::U16(no as u16));
        w.set_last(KEY_SPLIT_TENSORS_COUNT.as_bytes(), OwnedValue::I32(n as i32));
        w.set_last(KEY_SPLIT_COUNT.as_bytes(), OwnedValue::U16(parts.len() as u16));
        let name = split_path(args[2].as_bytes(), no as i32, parts.len() as i32);
        let path = PathBuf::from(String::from_utf8(name).expect("UTF-8 prefix"));
        w.write_file(&path).expect("write a part");
        println!("{}", path.display());
    }
}
