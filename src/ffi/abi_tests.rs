//! The Rust side of the ABI, checked against the measured reference tables
//! (ffi-tests/golden/abi/layout.tsv) and the committed header against a fresh
//! generation. The C side is checked by ffi-tests/ (gen_abi_check.py).

use super::types::*;
use std::collections::HashMap;
use std::mem::{align_of, offset_of, size_of};

/// Size of a field's type, from an accessor closure.
fn field_size<T, F>(_: fn(&T) -> *const F) -> usize {
    size_of::<F>()
}

macro_rules! structs {
    ($($t:ident),* $(,)?) => {
        vec![$((stringify!($t).to_string(), size_of::<$t>(), align_of::<$t>())),*]
    };
}

macro_rules! fields {
    ($($t:ident { $($c:literal => $($f:ident).+),* $(,)? }),* $(,)?) => {
        vec![$($((
            format!("{}.{}", stringify!($t), $c),
            offset_of!($t, $($f).+),
            field_size(|s: &$t| &raw const s.$($f).+),
        )),*),*]
    };
}

fn table() -> HashMap<String, (usize, usize)> {
    let mut rows = HashMap::new();
    let s = structs![
        llama_token_data,
        llama_token_data_array,
        llama_batch,
        llama_model_kv_override,
        llama_model_tensor_buft_override,
        llama_model_params,
        llama_sampler_seq_config,
        llama_context_params,
        llama_model_tensor_override,
        llama_model_imatrix_data,
        llama_model_quantize_params,
        llama_logit_bias,
        llama_sampler_chain_params,
        llama_chat_message,
        llama_embd,
        llama_sampler_data,
        llama_sampler_i,
        llama_sampler,
        llama_perf_context_data,
        llama_perf_sampler_data,
        llama_opt_params,
    ];
    for (name, size, align) in s {
        rows.insert(name, (size, align));
    }
    let f = fields![
        llama_token_data { "id" => id, "logit" => logit, "p" => p },
        llama_token_data_array { "data" => data, "size" => size, "selected" => selected, "sorted" => sorted },
        llama_batch { "n_tokens" => n_tokens, "token" => token, "embd" => embd, "pos" => pos,
            "n_seq_id" => n_seq_id, "seq_id" => seq_id, "logits" => logits },
        llama_model_kv_override { "tag" => tag, "key" => key, "val_i64" => value.val_i64,
            "val_f64" => value.val_f64, "val_bool" => value.val_bool, "val_str" => value.val_str },
        llama_model_tensor_buft_override { "pattern" => pattern, "buft" => buft },
        llama_model_params { "devices" => devices, "tensor_buft_overrides" => tensor_buft_overrides,
            "n_gpu_layers" => n_gpu_layers, "split_mode" => split_mode, "load_mode" => load_mode,
            "lazy_mode" => lazy_mode, "main_gpu" => main_gpu, "tensor_split" => tensor_split,
            "progress_callback" => progress_callback, "progress_callback_user_data" => progress_callback_user_data,
            "kv_overrides" => kv_overrides, "vocab_only" => vocab_only, "check_tensors" => check_tensors,
            "use_extra_bufts" => use_extra_bufts, "no_host" => no_host, "no_alloc" => no_alloc,
            "load_mtp" => load_mtp },
        llama_sampler_seq_config { "seq_id" => seq_id, "sampler" => sampler },
        llama_context_params { "n_ctx" => n_ctx, "n_batch" => n_batch, "n_ubatch" => n_ubatch,
            "n_seq_max" => n_seq_max, "n_rs_seq" => n_rs_seq, "n_outputs_max" => n_outputs_max,
            "n_outputs_max_per_seq" => n_outputs_max_per_seq, "n_threads" => n_threads,
            "n_threads_batch" => n_threads_batch, "ctx_type" => ctx_type, "rope_scaling_type" => rope_scaling_type,
            "pooling_type" => pooling_type, "attention_type" => attention_type, "flash_attn_type" => flash_attn_type,
            "rope_freq_base" => rope_freq_base, "rope_freq_scale" => rope_freq_scale,
            "yarn_ext_factor" => yarn_ext_factor, "yarn_attn_factor" => yarn_attn_factor,
            "yarn_beta_fast" => yarn_beta_fast, "yarn_beta_slow" => yarn_beta_slow, "yarn_orig_ctx" => yarn_orig_ctx,
            "defrag_thold" => defrag_thold, "cb_eval" => cb_eval, "cb_eval_user_data" => cb_eval_user_data,
            "type_k" => type_k, "type_v" => type_v, "abort_callback" => abort_callback,
            "abort_callback_data" => abort_callback_data, "embeddings" => embeddings, "offload_kqv" => offload_kqv,
            "no_perf" => no_perf, "op_offload" => op_offload, "swa_full" => swa_full, "kv_unified" => kv_unified,
            "samplers" => samplers, "n_samplers" => n_samplers, "ctx_other" => ctx_other },
        llama_model_tensor_override { "pattern" => pattern, "type" => r#type },
        llama_model_imatrix_data { "name" => name, "data" => data, "size" => size },
        llama_model_quantize_params { "nthread" => nthread, "ftype" => ftype,
            "output_tensor_type" => output_tensor_type, "token_embedding_type" => token_embedding_type,
            "allow_requantize" => allow_requantize, "quantize_output_tensor" => quantize_output_tensor,
            "only_copy" => only_copy, "pure" => pure, "keep_split" => keep_split, "dry_run" => dry_run,
            "imatrix" => imatrix, "kv_overrides" => kv_overrides, "tt_overrides" => tt_overrides,
            "prune_layers" => prune_layers, "max_buf_size" => max_buf_size },
        llama_logit_bias { "token" => token, "bias" => bias },
        llama_sampler_chain_params { "no_perf" => no_perf },
        llama_chat_message { "role" => role, "content" => content },
        llama_embd { "data" => data, "n_rows" => n_rows, "n_embd" => n_embd },
        llama_sampler_data { "logits" => logits, "probs" => probs, "sampled" => sampled, "candidates" => candidates },
        llama_sampler_i { "name" => name, "accept" => accept, "apply" => apply, "reset" => reset,
            "clone" => clone, "free" => free, "backend_init" => backend_init, "backend_accept" => backend_accept,
            "backend_apply" => backend_apply, "backend_set_input" => backend_set_input,
            "backend_reset" => backend_reset, "copy_state" => copy_state },
        llama_sampler { "iface" => iface, "ctx" => ctx },
        llama_perf_context_data { "t_start_ms" => t_start_ms, "t_load_ms" => t_load_ms,
            "t_p_eval_ms" => t_p_eval_ms, "t_eval_ms" => t_eval_ms, "n_p_eval" => n_p_eval, "n_eval" => n_eval,
            "n_reused" => n_reused },
        llama_perf_sampler_data { "t_sample_ms" => t_sample_ms, "n_sample" => n_sample },
        llama_opt_params { "n_ctx_train" => n_ctx_train, "param_filter" => param_filter,
            "param_filter_ud" => param_filter_ud, "get_opt_pars" => get_opt_pars,
            "get_opt_pars_ud" => get_opt_pars_ud, "optimizer_type" => optimizer_type },
    ];
    for (name, offset, size) in f {
        rows.insert(name, (offset, size));
    }
    rows
}

#[test]
fn rust_layouts_equal_every_row_of_the_reference_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/ffi-tests/golden/abi/layout.tsv");
    let tsv = std::fs::read_to_string(path).expect("ffi-tests/golden/abi/layout.tsv");
    let ours = table();
    let mut checked = 0;
    for line in tsv.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (name, a, b) = (cols[0], cols[2].parse::<usize>().unwrap(), cols[3].parse::<usize>().unwrap());
        let got = ours.get(name).unwrap_or_else(|| panic!("no Rust row for {name}"));
        assert_eq!(*got, (a, b), "{name} ({}): ours {got:?}, reference ({a}, {b})", cols[1]);
        checked += 1;
    }
    assert_eq!(checked, ours.len(), "the table has rows the reference file lacks");
}

#[test]
fn committed_header_equals_a_fresh_generation() {
    let generated = include_str!(env!("MINFER_GENERATED_HEADER"));
    let committed = include_str!("../../include/llama.h");
    assert!(
        generated == committed,
        "include/llama.h differs from what cbindgen generates from src/ffi/: run `MINFER_UPDATE_HEADER=1 cargo build` and commit it"
    );
}
