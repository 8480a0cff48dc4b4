//! The RWKV "world" tokenizer (`llm_tokenizer_rwkv`): token texts are
//! escaped byte strings; tokenization is greedy longest match over a byte
//! trie of the unescaped texts.

use super::hash::FxMap;
use super::Vocab;

/// `llama_unescape_rwkv_token`: `\t \n \r \xHH` and `\c` → c.
pub fn unescape(escaped: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(escaped.len());
    let (mut escaping, mut hex_remaining, mut hex_acc) = (false, 0u8, 0u8);
    for &c in escaped {
        if hex_remaining != 0 {
            let value = if c >= b'a' { c.wrapping_sub(b'a').wrapping_add(10) } else { c.wrapping_sub(b'0') };
            hex_acc = (hex_acc << 4).wrapping_add(value);
            hex_remaining -= 1;
            if hex_remaining == 0 {
                out.push(hex_acc);
                hex_acc = 0;
            }
            continue;
        }
        if escaping {
            match c {
                b't' => out.push(b'\t'),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b'x' => hex_remaining = 2,
                _ => out.push(c),
            }
            escaping = false;
            continue;
        }
        if c == b'\\' {
            escaping = true;
            continue;
        }
        out.push(c);
    }
    out
}

pub struct Rwkv {
    /// (node << 8 | byte) → child
    edges: FxMap<u64, u32>,
    values: Vec<Option<i32>>,
}

impl Rwkv {
    pub fn new(vocab: &Vocab) -> Rwkv {
        let mut t = Rwkv { edges: FxMap::default(), values: vec![None] };
        for (id, tok) in vocab.tokens.iter().enumerate() {
            let text = unescape(tok.text());
            let mut node = 0u32;
            for &b in &text {
                let k = (u64::from(node) << 8) | u64::from(b);
                node = match t.edges.get(&k) {
                    Some(&c) => c,
                    None => {
                        let c = t.values.len() as u32;
                        t.values.push(None);
                        t.edges.insert(k, c);
                        c
                    }
                };
            }
            t.values[node as usize] = Some(id as i32);
        }
        t
    }

    fn child(&self, node: u32, b: u8) -> Option<u32> {
        self.edges.get(&((u64::from(node) << 8) | u64::from(b))).copied()
    }

    pub fn tokenize(&self, vocab: &Vocab, text: &[u8], out: &mut Vec<i32>) {
        let mut position = 0usize;
        while position < text.len() {
            let start = position;
            let Some(mut node) = self.child(0, text[position]) else {
                out.push(vocab.unk);
                position += 1;
                continue;
            };
            let (mut token_id, mut token_length) = (0i32, 0usize);
            loop {
                if let Some(v) = self.values[node as usize] {
                    token_id = v;
                    token_length = position + 1;
                }
                if position + 1 >= text.len() {
                    break;
                }
                position += 1;
                match self.child(node, text[position]) {
                    Some(n) => node = n,
                    None => break,
                }
            }
            if token_length <= start {
                // No token along the path: the reference would restart at 0
                // and loop forever; take the unknown token for one byte.
                out.push(vocab.unk);
                position = start + 1;
                continue;
            }
            out.push(token_id);
            position = token_length;
        }
    }
}
