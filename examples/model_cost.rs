//! The work a model's forward pass does per token, from its GGUF file alone,
//! for the limit columns of scripts/bench.sh:
//!
//! - decode bytes: the weight bytes one single-token decode reads (every
//!   tensor, token_embd only where it is also the output head, a mixture's
//!   expert tensors in the share `expert_used_count / expert_count`);
//! - prefill multiply-adds: the weight matrices' multiply-adds per prompt
//!   token (every 2-D and 3-D `blk.*` tensor, experts in that share; not the
//!   output head, which a prefill runs for its last token only, nor
//!   attention's products with the cache, which grow with the position: at
//!   Llama 3.2 1B's shape and pp512 they add ~2 %).
//!
//! usage: cargo run --release --example model_cost -- MODEL.gguf
//! prints: DECODE_BYTES PREFILL_MACS (two integers on one line)

use llama::gguf::{GgufFile, Value};
use std::path::Path;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: model_cost MODEL.gguf");
        std::process::exit(2);
    });
    let file = GgufFile::open(Path::new(&path)).unwrap_or_else(|e| {
        eprintln!("model_cost: {path}: {e}");
        std::process::exit(1);
    });
    let arch = file.get_str("general.architecture").unwrap_or("llama").to_string();
    let key_u32 = |k: &str| match file.get(&format!("{arch}.{k}")) {
        Some(Value::U32(v)) => Some(v as u64),
        Some(Value::I32(v)) => Some(v.max(0) as u64),
        Some(Value::U64(v)) => Some(v),
        _ => None,
    };
    // the share of a mixture's experts one token runs
    let (n_expert, n_used) = (key_u32("expert_count").unwrap_or(0), key_u32("expert_used_count").unwrap_or(0));
    let expert_share = |bytes: u64| (bytes * n_used).checked_div(n_expert).unwrap_or(bytes);
    let tied = file.find_tensor("output.weight").is_none();

    let (mut decode_bytes, mut prefill_macs) = (0u64, 0u64);
    for t in file.tensors() {
        let experts = t.n_dims == 3 && t.name.contains("_exps");
        if t.name == "token_embd.weight" && !tied {
            continue; // (a lookup: one row per token)
        }
        decode_bytes += if experts { expert_share(t.nbytes) } else { t.nbytes };
        if t.name.starts_with("blk.") && (t.n_dims == 2 || experts) {
            let macs = (t.ne[0] * t.ne[1] * t.ne[2]) as u64;
            prefill_macs += if experts { expert_share(macs) } else { macs };
        }
    }
    println!("{decode_bytes} {prefill_macs}");
}
