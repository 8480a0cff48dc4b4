//! Unigram (`llm_tokenizer_ugm`, T5 / XLM-R style): normalization through the
//! SentencePiece precompiled charsmap (an XOR-compressed double array), then
//! Viterbi over the token trie with the reference's scores.

use super::hash::FxMap;
use super::{unicode, Vocab, ATTR_NORMAL, ATTR_UNUSED, ATTR_USER_DEFINED};
use crate::error::{Error, Result};

/// A byte trie (the reference's `naive_trie`).
#[derive(Default)]
struct Trie {
    /// (node << 8 | byte) → child node
    edges: FxMap<u64, u32>,
    values: Vec<Option<i32>>,
}

impl Trie {
    fn new() -> Trie {
        Trie { edges: FxMap::default(), values: vec![None] }
    }
    fn insert(&mut self, key: &[u8], value: i32) {
        let mut node = 0u32;
        for &b in key {
            let k = (u64::from(node) << 8) | u64::from(b);
            node = match self.edges.get(&k) {
                Some(&c) => c,
                None => {
                    let c = self.values.len() as u32;
                    self.values.push(None);
                    self.edges.insert(k, c);
                    c
                }
            };
        }
        self.values[node as usize] = Some(value);
    }
    #[inline]
    fn child(&self, node: u32, b: u8) -> Option<u32> {
        self.edges.get(&((u64::from(node) << 8) | u64::from(b))).copied()
    }
    /// Depth of the longest path of the trie along `key` (values or not, as
    /// the reference's `get_longest_prefix`).
    fn longest_path(&self, key: &[u8]) -> usize {
        let mut node = 0;
        let mut d = 0;
        for &b in key {
            match self.child(node, b) {
                Some(c) => {
                    node = c;
                    d += 1;
                }
                None => break,
            }
        }
        d
    }
}

pub struct Ugm {
    xcda: Vec<u32>,
    replacements: Vec<u8>,
    user_defined: Trie,
    tokens: Trie,
    unknown_score: f32,
}

impl Ugm {
    pub fn new(vocab: &Vocab, charsmap: Vec<u8>) -> Result<Ugm> {
        let (mut xcda, mut replacements) = (Vec::new(), Vec::new());
        if !charsmap.is_empty() {
            let blob = u32::from_le_bytes([charsmap[0], charsmap[1], charsmap[2], charsmap[3]]) as usize;
            let arr = &charsmap[4..4 + blob];
            xcda = arr.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            replacements = charsmap[4 + blob..].to_vec();
        }
        let mut min_score = f32::MAX;
        let mut tokens = Trie::new();
        let mut user_defined = Trie::new();
        for (id, t) in vocab.tokens.iter().enumerate() {
            if t.attr & ATTR_NORMAL != 0 {
                min_score = min_score.min(t.score);
            }
            if t.attr & (ATTR_NORMAL | ATTR_USER_DEFINED | ATTR_UNUSED) != 0 {
                tokens.insert(t.text(), id as i32);
            }
            if t.attr & ATTR_USER_DEFINED != 0 {
                user_defined.insert(t.text(), 0);
            }
        }
        Ok(Ugm { xcda, replacements, user_defined, tokens, unknown_score: min_score - 10.0 })
    }

    fn node(&self, i: usize) -> Result<u32> {
        self.xcda.get(i).copied().ok_or_else(|| Error::model("Index out of array bounds in XCDA array!"))
    }

    /// (replacement bytes, consumed input bytes) for the prefix at `off`.
    fn normalize_prefix<'s>(&'s self, input: &'s [u8], off: usize) -> Result<(&'s [u8], usize)> {
        if off == input.len() {
            return Ok((&[], 0));
        }
        let ud = self.user_defined.longest_path(&input[off..]);
        if ud > 0 {
            return Ok((&input[off..off + ud], ud));
        }
        let (mut best_len, mut best_off) = (0usize, 0usize);
        if !self.xcda.is_empty() {
            let base = |p: u32| (p >> 10) << ((p & (1 << 9)) >> 6);
            let mut node = base(self.node(0)?) as usize;
            for (p, &c) in input.iter().enumerate().skip(off) {
                if c == 0 {
                    break;
                }
                node ^= c as usize;
                let packed = self.node(node)?;
                if packed & ((1u32 << 31) | 0xff) != u32::from(c) {
                    break;
                }
                let leaf = (packed >> 8) & 1 == 1;
                node ^= base(packed) as usize;
                if leaf {
                    best_len = p - off + 1;
                    best_off = (self.node(node)? & ((1u32 << 31) - 1)) as usize;
                }
            }
        }
        if best_len > 0 {
            let rest = self
                .replacements
                .get(best_off..)
                .filter(|r| !r.is_empty())
                .ok_or_else(|| Error::model("Index out of array bounds in precompiled charsmap!"))?;
            let n = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| Error::model("Unterminated string in precompiled charsmap!"))?;
            return Ok((&rest[..n], best_len));
        }
        let mut p = off;
        match unicode::cpt_from_utf8(input, &mut p) {
            Some(_) => Ok((&input[off..p], p - off)),
            None => Ok(("\u{FFFD}".as_bytes(), 1)),
        }
    }

    fn normalize(&self, vocab: &Vocab, input: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(input.len() * 3);
        let space: &[u8] = if vocab.escape_whitespaces { "\u{2581}".as_bytes() } else { b" " };
        let prepend = !vocab.treat_whitespace_as_suffix && vocab.add_space_prefix;
        let append = vocab.treat_whitespace_as_suffix && vocab.add_space_prefix;
        let merge = vocab.remove_extra_whitespaces;
        let (mut prepended, mut non_ws) = (false, false);
        let mut off = 0;
        while off < input.len() {
            let (norm, consumed) = self.normalize_prefix(input, off)?;
            for &c in norm {
                if c != b' ' {
                    if !non_ws {
                        non_ws = true;
                        if (prepend && !prepended) || merge {
                            out.extend_from_slice(space);
                            prepended = true;
                        }
                    }
                    out.push(c);
                } else {
                    non_ws = false;
                    if !merge {
                        out.extend_from_slice(space);
                    }
                }
            }
            off += consumed;
        }
        if append {
            out.extend_from_slice(space);
        }
        Ok(out)
    }

    pub fn tokenize(&self, vocab: &Vocab, text: &[u8], out: &mut Vec<i32>) -> Result<()> {
        let start_len = out.len();
        let norm = self.normalize(vocab, text)?;
        let len = norm.len();
        if len == 0 {
            return Ok(());
        }
        let unk = vocab.unk;
        // (token, input offset, score)
        let mut best: Vec<(i32, usize, f64)> = vec![(unk, 0, -f64::MAX); len + 1];
        best[0] = (unk, 0, 0.0);
        let mut off = 0;
        while off < len {
            let n_units = unicode::len_utf8(norm[off]).min(len - off);
            let mut single = false;
            let cur = best[off].2;
            let mut p = off;
            let mut node = self.tokens.child(0, norm[p]);
            p += 1;
            while p <= len {
                let Some(nd) = node else { break };
                if let Some(id) = self.tokens.values[nd as usize] {
                    if p - off == n_units {
                        single = true;
                    }
                    let score =
                        if vocab.is_user_defined(id) { 0.0 } else { f64::from(vocab.tokens[id as usize].score) };
                    let ch = cur + score;
                    if ch > best[p].2 {
                        best[p] = (id, off, ch);
                    }
                }
                node = self.tokens.child(nd, norm.get(p).copied().unwrap_or(0));
                p += 1;
            }
            if !single {
                let ch = cur + f64::from(self.unknown_score);
                let q = off + n_units;
                if ch > best[q].2 {
                    best[q] = (unk, off, ch);
                }
            }
            off += n_units;
        }
        let mut prev_unk = false;
        let mut t = best[len];
        loop {
            let is_unk = t.0 == unk;
            if !(prev_unk && is_unk) {
                out.push(t.0);
            }
            if t.1 == 0 {
                break;
            }
            prev_unk = is_unk;
            t = best[t.1];
        }
        out[start_len..].reverse();
        Ok(())
    }
}
