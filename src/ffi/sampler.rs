//! The llama_sampler family and the sampler chain (owned by the samplers issue).

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use std::ffi::c_char;
use std::ptr;

#[no_mangle]
pub extern "C" fn llama_sampler_chain_default_params() -> llama_sampler_chain_params {
    llama_sampler_chain_params { no_perf: true }
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_token_ith(ctx: *mut llama_context, i: i32) -> llama_token {
    not_implemented("llama_get_sampled_token_ith", -1)
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_probs_ith(ctx: *mut llama_context, i: i32) -> *mut f32 {
    not_implemented("llama_get_sampled_probs_ith", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_probs_count_ith(ctx: *mut llama_context, i: i32) -> u32 {
    not_implemented("llama_get_sampled_probs_count_ith", 0)
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_logits_ith(ctx: *mut llama_context, i: i32) -> *mut f32 {
    not_implemented("llama_get_sampled_logits_ith", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_logits_count_ith(ctx: *mut llama_context, i: i32) -> u32 {
    not_implemented("llama_get_sampled_logits_count_ith", 0)
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_candidates_ith(ctx: *mut llama_context, i: i32) -> *mut llama_token {
    not_implemented("llama_get_sampled_candidates_ith", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_candidates_count_ith(ctx: *mut llama_context, i: i32) -> u32 {
    not_implemented("llama_get_sampled_candidates_count_ith", 0)
}

#[no_mangle]
pub extern "C" fn llama_set_sampler(ctx: *mut llama_context, seq_id: llama_seq_id, smpl: *mut llama_sampler) -> bool {
    not_implemented("llama_set_sampler", false)
}

#[no_mangle]
pub extern "C" fn llama_sampler_init(iface: *mut llama_sampler_i, ctx: llama_sampler_context_t) -> *mut llama_sampler {
    not_implemented("llama_sampler_init", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_name(smpl: *const llama_sampler) -> *const c_char {
    not_implemented("llama_sampler_name", ptr::null())
}

#[no_mangle]
pub extern "C" fn llama_sampler_accept(smpl: *mut llama_sampler, token: llama_token) {
    not_implemented("llama_sampler_accept", ())
}

#[no_mangle]
pub extern "C" fn llama_sampler_apply(smpl: *mut llama_sampler, cur_p: *mut llama_token_data_array) {
    not_implemented("llama_sampler_apply", ())
}

#[no_mangle]
pub extern "C" fn llama_sampler_reset(smpl: *mut llama_sampler) {
    not_implemented("llama_sampler_reset", ())
}

#[no_mangle]
pub extern "C" fn llama_sampler_clone(smpl: *const llama_sampler) -> *mut llama_sampler {
    not_implemented("llama_sampler_clone", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_copy(src: *const llama_sampler, dst: *mut llama_sampler) {
    not_implemented("llama_sampler_copy", ())
}

#[no_mangle]
pub extern "C" fn llama_sampler_free(smpl: *mut llama_sampler) {
    not_implemented("llama_sampler_free", ())
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_init(params: llama_sampler_chain_params) -> *mut llama_sampler {
    not_implemented("llama_sampler_chain_init", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_add(chain: *mut llama_sampler, smpl: *mut llama_sampler) {
    not_implemented("llama_sampler_chain_add", ())
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_get(chain: *mut llama_sampler, i: i32) -> *mut llama_sampler {
    not_implemented("llama_sampler_chain_get", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_n(chain: *const llama_sampler) -> i32 {
    not_implemented("llama_sampler_chain_n", -1)
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_remove(chain: *mut llama_sampler, i: i32) -> *mut llama_sampler {
    not_implemented("llama_sampler_chain_remove", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_greedy() -> *mut llama_sampler {
    not_implemented("llama_sampler_init_greedy", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_dist(seed: u32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_dist", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_top_k(k: i32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_top_k", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_top_p(p: f32, min_keep: usize) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_top_p", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_min_p(p: f32, min_keep: usize) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_min_p", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_typical(p: f32, min_keep: usize) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_typical", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_temp(t: f32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_temp", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_temp_ext(t: f32, delta: f32, exponent: f32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_temp_ext", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_xtc(p: f32, t: f32, min_keep: usize, seed: u32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_xtc", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_top_n_sigma(n: f32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_top_n_sigma", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_mirostat(n_vocab: i32, seed: u32, tau: f32, eta: f32, m: i32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_mirostat", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_mirostat_v2(seed: u32, tau: f32, eta: f32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_mirostat_v2", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_grammar(vocab: *const llama_vocab, grammar_str: *const c_char, grammar_root: *const c_char) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_grammar", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_grammar_lazy(vocab: *const llama_vocab, grammar_str: *const c_char, grammar_root: *const c_char, trigger_words: *mut *const c_char, num_trigger_words: usize, trigger_tokens: *const llama_token, num_trigger_tokens: usize) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_grammar_lazy", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_grammar_lazy_patterns(vocab: *const llama_vocab, grammar_str: *const c_char, grammar_root: *const c_char, trigger_patterns: *mut *const c_char, num_trigger_patterns: usize, trigger_tokens: *const llama_token, num_trigger_tokens: usize) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_grammar_lazy_patterns", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_penalties(n_vocab: i32, penalty_last_n: i32, penalty_repeat: f32, penalty_freq: f32, penalty_present: f32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_penalties", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_dry(vocab: *const llama_vocab, dry_multiplier: f32, dry_base: f32, dry_allowed_length: i32, dry_penalty_last_n: i32, seq_breakers: *mut *const c_char, num_breakers: usize) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_dry", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_adaptive_p(target: f32, decay: f32, seed: u32) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_adaptive_p", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_logit_bias(n_vocab: i32, n_logit_bias: i32, logit_bias: *const llama_logit_bias) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_logit_bias", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_infill(vocab: *const llama_vocab) -> *mut llama_sampler {
    not_implemented("llama_sampler_init_infill", ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_sampler_get_seed(smpl: *const llama_sampler) -> u32 {
    not_implemented("llama_sampler_get_seed", 0)
}

#[no_mangle]
pub extern "C" fn llama_sampler_sample(smpl: *mut llama_sampler, ctx: *mut llama_context, idx: i32) -> llama_token {
    not_implemented("llama_sampler_sample", -1)
}

#[no_mangle]
pub extern "C" fn llama_perf_sampler(chain: *const llama_sampler) -> llama_perf_sampler_data {
    not_implemented("llama_perf_sampler", llama_perf_sampler_data::default())
}

#[no_mangle]
pub extern "C" fn llama_perf_sampler_print(chain: *const llama_sampler) {
    not_implemented("llama_perf_sampler_print", ())
}

#[no_mangle]
pub extern "C" fn llama_perf_sampler_reset(chain: *mut llama_sampler) {
    not_implemented("llama_perf_sampler_reset", ())
}
