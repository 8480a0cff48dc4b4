//! WordPiece (`llm_tokenizer_wpm_session`): BERT-style normalization and
//! splitting, then greedy longest-match with a "▁" word prefix.

use super::unicode::{self as u, flags};
use super::{Vocab, TOKEN_NULL};

fn is_chinese_char(c: u32) -> bool {
    matches!(c,
        0x04E00..=0x09FFF | 0x03400..=0x04DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B920..=0x2CEAF | 0x0F900..=0x0FAFF | 0x2F800..=0x2FA1F)
}

fn preprocess(vocab: &Vocab, text: &[u8]) -> Vec<Vec<u8>> {
    let mut cpts = u::cpts_from_utf8(text);
    if vocab.norm_strip_accents {
        for c in cpts.iter_mut() {
            *c = u::nfd(*c);
        }
    }
    let mut words: Vec<Vec<u8>> = vec![Vec::new()];
    for c in cpts {
        let f = flags(c);
        if f & u::WHITESPACE != 0 {
            if !words.last().unwrap().is_empty() {
                words.push(Vec::new());
            }
            continue;
        }
        if c == 0 || c == 0xFFFD || f & u::CONTROL != 0 {
            continue;
        }
        if vocab.norm_strip_accents && f & u::ACCENT_MARK != 0 {
            continue;
        }
        let s = u::cpt_to_utf8(if vocab.norm_lowercase { u::tolower(c) } else { c });
        if f & u::PUNCTUATION != 0 || (c < 0x7F && f & u::SYMBOL != 0) || is_chinese_char(c) {
            if !words.last().unwrap().is_empty() {
                words.push(Vec::new());
            }
            *words.last_mut().unwrap() = s;
            words.push(Vec::new());
        } else {
            words.last_mut().unwrap().extend_from_slice(&s);
        }
    }
    if words.last().is_some_and(|w| w.is_empty()) {
        words.pop();
    }
    words
}

pub fn tokenize(vocab: &Vocab, text: &[u8], out: &mut Vec<i32>) {
    for word in preprocess(vocab, text) {
        if word.is_empty() {
            continue;
        }
        let mut w1 = "\u{2581}".as_bytes().to_vec();
        w1.extend_from_slice(&word);
        let n = w1.len();
        let current = out.len();
        let mut i = 0;
        while i < n {
            let mut matched = false;
            let mut j = n.min(i + vocab.max_token_len + 1);
            while j > i {
                let id = vocab.text_to_token(&w1[i..j]);
                if id != TOKEN_NULL {
                    out.push(id);
                    matched = true;
                    i = j - 1;
                    break;
                }
                j -= 1;
            }
            if !matched {
                out.truncate(current);
                break;
            }
            i += 1;
        }
        if current == out.len() {
            out.push(vocab.unk);
        }
    }
}
