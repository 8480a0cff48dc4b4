//! Writes a synthetic LoRA adapter for a model: random low-rank pairs
//! `NAME.lora_a` / `NAME.lora_b` for its matrices, with the keys the
//! reference's `llama_adapter_lora_init` reads (for the LoRA parity tests).
//!
//! usage: cargo run --release --example synth_lora -- BASE.gguf OUT.gguf [KEY=V...]
//! type=f16|f32|bf16|q8_0|q4_0|q4_k|iq4_nl|q2_k|q6_k the pairs' type (f16); rank=N (8; q8_0 needs a
//! multiple of 32: B's rows are `rank` long); alpha=F `adapter.lora.alpha`
//! (16; 0 leaves the key out); seed=N (1); amp=F entries uniform in
//! [-amp, amp) (0.25); only=SUBSTR[,SUBSTR...] adapts only the weights whose
//! name contains one of them (default: every 2-D `.weight` but the norms and
//! position embeddings, token_embd only when the output head is not tied to
//! it); alora=ID[,ID...] writes aLoRA invocation tokens; name=S
//! `general.name`; arch=S writes another `general.architecture`;
//! experts=1 adapts the experts' 3-D tensors too (`*_exps`: A [n_in, rank,
//! n_expert], B [rank, n_out, n_expert]).
//! broken=KIND writes an adapter the reference refuses, for the hostile-file
//! tests: `type` (general.type "model"), `adapter_type` ("control_vector"),
//! `alpha_type` (alpha an i32), `alora_type` (invocation tokens as i32),
//! `suffix` (a tensor "….lora_c"), `missing_b` (the first pair's B left
//! out), `unknown` (a pair for a weight the model lacks), `shape` (the first
//! A one column short: n_in - 32), `transposed` (the first pair's A with
//! rank + 32 rows), `truncated` (the file cut inside the tensor data).
//!
//! Shapes: a weight [n_in, n_out] gets A [n_in, rank] and B [rank, n_out];
//! token_embd [n_embd, n_vocab] gets A [rank, n_vocab] and B [rank, n_embd]
//! (the reference reads A by row there).

use llama::ggml_type::GgmlType;
use llama::gguf::{GgufFile, GgufWriter, OwnedArray, OwnedValue};
use std::path::Path;

#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::Rng;

/// `rows` random rows of `cols` values, stored as `ty`.
fn matrix(rng: &mut Rng, ty: GgmlType, rows: usize, cols: usize, amp: f32) -> Vec<u8> {
    let row_bytes = ty.row_size(cols as u64).expect("a row size") as usize;
    let mut out = vec![0u8; rows * row_bytes];
    let mut row = vec![0f32; cols];
    for r in 0..rows {
        row.iter_mut().for_each(|v| *v = rng.uniform() * amp);
        llama::quant::quantize_row(ty, &row, &mut out[r * row_bytes..(r + 1) * row_bytes]).expect("quantize");
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: {} BASE.gguf OUT.gguf [type=f16] [rank=8] [alpha=16] [seed=1] [amp=0.25] [only=A,B] [alora=1,2] [name=S]", args[0]);
        std::process::exit(2);
    }
    let (mut ty, mut rank, mut alpha, mut seed, mut amp) = (GgmlType::F16, 8usize, 16f32, 1u64, 0.25f32);
    let (mut only, mut alora, mut name) = (Vec::<String>::new(), Vec::<u32>::new(), String::from("synthetic LoRA"));
    let (mut arch_override, mut broken, mut experts) = (None::<String>, String::new(), false);
    for kv in &args[3..] {
        let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("KEY=V, got {kv}"));
        match k {
            "type" => {
                ty = match v {
                    "f16" => GgmlType::F16,
                    "f32" => GgmlType::F32,
                    "bf16" => GgmlType::BF16,
                    "q8_0" => GgmlType::Q8_0,
                    "q4_0" => GgmlType::Q4_0,
                    "q4_k" => GgmlType::Q4_K,
                    "iq4_nl" => GgmlType::IQ4_NL,
                    "q2_k" => GgmlType::Q2_K,
                    "q6_k" => GgmlType::Q6_K,
                    _ => panic!("type: f16, f32, bf16, q8_0, q4_0, q4_k, iq4_nl, q2_k or q6_k"),
                }
            }
            "rank" => rank = v.parse().expect("rank"),
            "alpha" => alpha = v.parse().expect("alpha"),
            "seed" => seed = v.parse().expect("seed"),
            "amp" => amp = v.parse().expect("amp"),
            "only" => only = v.split(',').map(String::from).collect(),
            "alora" => alora = v.split(',').map(|t| t.parse().expect("alora token")).collect(),
            "name" => name = v.to_string(),
            "arch" => arch_override = Some(v.to_string()),
            "broken" => broken = v.to_string(),
            "experts" => experts = v == "1",
            _ => panic!("unknown key {k}"),
        }
    }
    let base = GgufFile::open(Path::new(&args[1])).expect("open the base model");
    let arch = arch_override
        .unwrap_or_else(|| base.get_str("general.architecture").expect("general.architecture").to_string());
    let b = broken.as_str();
    let tied = base.find_tensor("output.weight").is_none();
    let mut w = GgufWriter::new();
    w.add("general.type", if b == "type" { "model" } else { "adapter" });
    w.add("general.architecture", arch.as_str());
    w.add("general.name", name.as_str());
    w.add("adapter.type", if b == "adapter_type" { "control_vector" } else { "lora" });
    if b == "alpha_type" {
        w.add("adapter.lora.alpha", OwnedValue::I32(alpha as i32));
    } else if alpha != 0.0 {
        w.add("adapter.lora.alpha", OwnedValue::F32(alpha));
    }
    if b == "alora_type" {
        w.add("adapter.alora.invocation_tokens", OwnedValue::Array(OwnedArray::I32(vec![1, 2])));
    } else if !alora.is_empty() {
        w.add("adapter.alora.invocation_tokens", OwnedValue::Array(OwnedArray::U32(alora)));
    }
    let mut rng = Rng(seed);
    let mut n = 0;
    let mut broke = false;
    for t in base.tensors() {
        let n_mat = if t.n_dims == 3 { t.ne[2] as usize } else { 1 };
        let adapt = t.name.ends_with(".weight")
            && (t.n_dims == 2 || (experts && t.n_dims == 3 && t.name.contains("_exps")))
            && !t.name.ends_with("_norm.weight")
            && !t.name.starts_with("position_embd")
            && !(tied && t.name == "token_embd.weight")
            && (only.is_empty() || only.iter().any(|s| t.name.contains(s.as_str())));
        if !adapt {
            continue;
        }
        let (n_in, n_out) = (t.ne[0] as usize, t.ne[1] as usize);
        let (mut a_shape, b_shape) = if t.name == "token_embd.weight" {
            ([rank, n_out], [rank, n_in]) // A [rank, n_vocab], B [rank, n_embd]
        } else {
            ([n_in, rank], [rank, n_out])
        };
        // (the first pair but token_embd's takes the breakage)
        let first = !broke && t.name != "token_embd.weight";
        broke |= first;
        if first && b == "shape" {
            a_shape[0] -= 32;
        }
        if first && b == "transposed" {
            a_shape[1] += 32;
        }
        let a = matrix(&mut rng, ty, a_shape[1] * n_mat, a_shape[0], amp);
        let bm = matrix(&mut rng, ty, b_shape[1] * n_mat, b_shape[0], amp);
        let dims = |s: [usize; 2]| -> Vec<u64> {
            let mut d = vec![s[0] as u64, s[1] as u64];
            if n_mat > 1 {
                d.push(n_mat as u64);
            }
            d
        };
        let stem = if first && b == "unknown" { "blk.99.attn_q.weight".to_string() } else { t.name.clone() };
        w.add_tensor(&format!("{stem}.lora_a"), ty, &dims(a_shape), a);
        if !(first && b == "missing_b") {
            let suffix = if first && b == "suffix" { "lora_c" } else { "lora_b" };
            w.add_tensor(&format!("{stem}.{suffix}"), ty, &dims(b_shape), bm);
        }
        n += 1;
    }
    let mut bytes = w.to_bytes().expect("the adapter's bytes");
    if b == "truncated" {
        bytes.truncate(bytes.len() - 64);
    }
    std::fs::write(&args[2], bytes).expect("write the adapter");
    eprintln!("{}: {n} pairs of rank {rank}, {ty}", args[2]);
}
