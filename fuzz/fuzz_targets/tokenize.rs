//! Fuzzes the tokenizers through the C API: arbitrary bytes tokenized with
//! one of the vocabularies (chosen by the first input byte: the vocab-only
//! files in ~/.cache/minfer/vocab, then the two real models), the result
//! detokenized, and arbitrary token ids turned into pieces. Buffers are
//! sized from the input, so the "negative size needed" protocol is
//! exercised too.
//!
//! Input: [vocab] [flags] [buffer sizes] [4 token ids] text...

#![no_main]

mod common;

use std::ffi::{c_char, CString};
use std::path::PathBuf;
use std::sync::Mutex;

use common::Input;
use libfuzzer_sys::fuzz_target;
use llama::ffi::model::{llama_model_default_params, llama_model_get_vocab, llama_model_load_from_file};
use llama::ffi::types::{llama_model, llama_vocab};
use llama::ffi::vocab::{
    llama_detokenize, llama_token_to_piece, llama_tokenize, llama_vocab_get_attr, llama_vocab_get_score,
    llama_vocab_get_text, llama_vocab_n_tokens,
};

/// Every vocabulary file, in a fixed order.
fn vocab_files() -> Vec<PathBuf> {
    let cache = common::cache_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(cache.join("vocab"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "gguf"));
    files.sort();
    for m in ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"] {
        files.push(cache.join("models").join(m));
    }
    files.retain(|p| p.exists());
    assert!(!files.is_empty(), "no vocabulary files under {}", cache.display());
    files
}

/// (path, model or 0 until first use). A static, never dropped: the models
/// live for the whole run and stay reachable (no leak report at exit).
static VOCABS: Mutex<Vec<(PathBuf, usize)>> = Mutex::new(Vec::new());

fn vocab(choice: u8) -> *const llama_vocab {
    // (At most 256 files can be chosen by the first byte.)
    let mut v = VOCABS.lock().unwrap();
    if v.is_empty() {
        *v = vocab_files().into_iter().map(|p| (p, 0)).collect();
    }
    let n = v.len();
    let (path, model) = &mut v[usize::from(choice) % n];
    if *model == 0 {
        let mut params = llama_model_default_params();
        params.vocab_only = true;
        let c = CString::new(path.to_string_lossy().as_bytes()).expect("path");
        let m = llama_model_load_from_file(c.as_ptr(), params);
        assert!(!m.is_null(), "cannot load {}", path.display());
        *model = m as usize;
    }
    llama_model_get_vocab(*model as *const llama_model)
}

fuzz_target!(init: {
    // Load every vocabulary before the first input, so loading (seconds for
    // the 262k-token ones under ASan) never counts as a slow input.
    common::watch();
    let n = vocab_files().len();
    for i in 0..n {
        vocab(i as u8);
    }
    common::check("loading the vocabularies");
}, |data: &[u8]| {
    let mut inp = Input::new(data);
    let v = vocab(inp.u8());
    let flags = inp.u8();
    let (add_special, parse_special) = (flags & 1 != 0, flags & 2 != 0);
    let (remove_special, unparse_special, special) = (flags & 4 != 0, flags & 8 != 0, flags & 16 != 0);
    let lstrip = i32::from(flags >> 5);
    let cap_hint = inp.u8();
    let ids: Vec<i32> = (0..4).map(|_| inp.i32()).collect();
    let text = inp.data;
    let n_vocab = llama_vocab_n_tokens(v);
    assert!(n_vocab > 0);

    // --- tokenize, first into a buffer sized from the input
    let text_len = i32::try_from(text.len()).unwrap();
    let mut tokens = vec![0i32; usize::from(cap_hint)];
    let mut n = llama_tokenize(v, text.as_ptr().cast::<c_char>(), text_len, tokens.as_mut_ptr(),
        i32::from(cap_hint), add_special, parse_special);
    common::check("llama_tokenize");
    if n < 0 && n != i32::MIN {
        assert!(-n > i32::from(cap_hint), "asked for {} tokens with room for {cap_hint}", -n);
        tokens = vec![0; (-n) as usize];
        let again = llama_tokenize(v, text.as_ptr().cast::<c_char>(), text_len, tokens.as_mut_ptr(), -n,
            add_special, parse_special);
        common::check("llama_tokenize (second call)");
        assert_eq!(again, -n, "the second call disagrees with the size the first asked for");
        n = again;
    }
    if n == i32::MIN {
        return; // refused with a message (e.g. a piece too long for the regex)
    }
    tokens.truncate(n as usize);
    for &t in &tokens {
        assert!((0..n_vocab).contains(&t), "token {t} out of range (n_vocab {n_vocab})");
    }

    // --- detokenize the result, with a buffer too small first
    let mut out = vec![0u8; text.len() / 2];
    let mut m = llama_detokenize(v, tokens.as_ptr(), n, out.as_mut_ptr().cast::<c_char>(),
        i32::try_from(out.len()).unwrap(), remove_special, unparse_special);
    common::check("llama_detokenize");
    if m < 0 && m != i32::MIN {
        out = vec![0; (-m) as usize];
        m = llama_detokenize(v, tokens.as_ptr(), n, out.as_mut_ptr().cast::<c_char>(), -m,
            remove_special, unparse_special);
        common::check("llama_detokenize (second call)");
        assert!(m >= 0 && m as usize <= out.len(), "detokenize returned {m} for a buffer of {}", out.len());
    }

    // --- pieces of arbitrary ids and of a few result tokens; token getters
    let some_tokens = tokens.iter().take(8).copied();
    for id in ids.iter().copied().chain(some_tokens) {
        let mut buf = [0u8; 8];
        let k = llama_token_to_piece(v, id, buf.as_mut_ptr().cast::<c_char>(), buf.len() as i32, lstrip, special);
        common::check("llama_token_to_piece");
        if k < 0 {
            let mut big = vec![0u8; (-k) as usize];
            let k2 = llama_token_to_piece(v, id, big.as_mut_ptr().cast::<c_char>(), -k, lstrip, special);
            common::check("llama_token_to_piece (second call)");
            assert_eq!(k2, -k);
        }
        let text = llama_vocab_get_text(v, id);
        let _ = llama_vocab_get_score(v, id);
        let _ = llama_vocab_get_attr(v, id);
        common::check("llama_vocab_get_*");
        assert_eq!(text.is_null(), !(0..n_vocab).contains(&id), "get_text of id {id}");
    }
});
