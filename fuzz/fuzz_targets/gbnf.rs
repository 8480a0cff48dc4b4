//! Fuzzes the GBNF grammar parser and the grammar sampler through the C
//! API: the input's grammar text is parsed (`llama_sampler_init_grammar`,
//! or the lazy form with a trigger pattern and token), then the sampler
//! filters every token of a tiny vocabulary (the synthetic model's, 512
//! tokens) and accepts a token, step after step — one it allowed, or an
//! arbitrary id it may have rejected. Clones and resets happen on the way.
//!
//! Input: [flags] grammar NUL [pattern NUL trigger-token] [steps...]

#![no_main]

mod common;

use std::ffi::{c_char, CString};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::Input;
use libfuzzer_sys::fuzz_target;
use llama::ffi::model::{llama_model_default_params, llama_model_get_vocab, llama_model_load_from_file};
use llama::ffi::sampler::{
    llama_sampler_accept, llama_sampler_apply, llama_sampler_clone, llama_sampler_free, llama_sampler_init_grammar,
    llama_sampler_init_grammar_lazy_patterns, llama_sampler_reset,
};
use llama::ffi::types::{llama_model, llama_sampler, llama_token_data, llama_token_data_array, llama_vocab};
use llama::ffi::vocab::llama_vocab_n_tokens;

const MAX_STEPS: usize = 24;

/// The vocab-only model, loaded on first use; a static, so it stays
/// reachable (no leak report at exit).
static MODEL: AtomicUsize = AtomicUsize::new(0);

fn vocab() -> *const llama_vocab {
    if MODEL.load(Ordering::Relaxed) == 0 {
        let mut params = llama_model_default_params();
        params.vocab_only = true;
        let m = llama_model_load_from_file(common::synth_model_path().as_ptr(), params);
        assert!(!m.is_null(), "cannot load the synthetic model");
        MODEL.store(m as usize, Ordering::Relaxed);
    }
    llama_model_get_vocab(MODEL.load(Ordering::Relaxed) as *const llama_model)
}

/// Applies the sampler to every token; returns the ids it left.
fn allowed(s: *mut llama_sampler, n_vocab: i32) -> Vec<i32> {
    let mut data: Vec<llama_token_data> = (0..n_vocab).map(|id| llama_token_data { id, logit: 0.0, p: 0.0 }).collect();
    let mut arr = llama_token_data_array { data: data.as_mut_ptr(), size: data.len(), selected: -1, sorted: false };
    llama_sampler_apply(s, &mut arr);
    common::check("llama_sampler_apply");
    assert_eq!(arr.size, n_vocab as usize, "the grammar changed the candidate count");
    data.iter().filter(|d| d.logit != f32::NEG_INFINITY).map(|d| d.id).collect()
}

fuzz_target!(init: {
    common::watch();
    vocab();
}, |data: &[u8]| {
    let v = vocab();
    let n_vocab = llama_vocab_n_tokens(v);
    let mut inp = Input::new(data);
    let flags = inp.u8();
    let grammar = CString::new(inp.until_nul()).expect("no NUL");
    let root = CString::new(if flags & 8 != 0 { "expr" } else { "root" }).unwrap();
    let mut s = if flags & 1 != 0 {
        let pattern = CString::new(inp.until_nul()).expect("no NUL");
        let mut patterns = [pattern.as_ptr()];
        let trigger = [inp.int_around(n_vocab)];
        let n_patterns = usize::from(flags & 2 != 0);
        llama_sampler_init_grammar_lazy_patterns(v, grammar.as_ptr(), root.as_ptr(),
            patterns.as_mut_ptr().cast::<*const c_char>(), n_patterns, trigger.as_ptr(), 1)
    } else {
        llama_sampler_init_grammar(v, grammar.as_ptr(), root.as_ptr())
    };
    common::check("llama_sampler_init_grammar");
    if s.is_null() {
        return; // a grammar the parser refused, with a message
    }
    for step in 0..MAX_STEPS {
        if inp.is_empty() {
            break;
        }
        let b = inp.u8();
        let ok = allowed(s, n_vocab);
        let token = if b & 0x80 != 0 || ok.is_empty() {
            inp.int_around(n_vocab)
        } else {
            ok[usize::from(b) % ok.len()]
        };
        llama_sampler_accept(s, token);
        common::check("llama_sampler_accept");
        if b & 0x40 != 0 && step % 4 == 3 {
            let c = llama_sampler_clone(s);
            common::check("llama_sampler_clone");
            assert!(!c.is_null(), "clone of a grammar sampler failed");
            llama_sampler_free(s);
            s = c;
        }
        if b & 0x3f == 0x3f {
            llama_sampler_reset(s);
            common::check("llama_sampler_reset");
        }
    }
    llama_sampler_free(s);
    common::check("llama_sampler_free");
});
