//! GPT-2 style BPE (`llm_tokenizer_bpe_session`): the pre-tokenizer splits
//! the text into words; in each word, adjacent symbols are merged by merge
//! rank (lowest first, leftmost on ties); symbols that are not tokens fall
//! back to byte tokens.

use super::hash::FxMap;
use super::{unicode, Vocab, TOKEN_NULL};
use crate::error::Result;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy)]
struct Sym {
    prev: i32,
    next: i32,
    start: usize,
    n: usize,
}

struct Bigram {
    left: i32,
    right: i32,
    rank: i32,
    size: usize,
}

impl PartialEq for Bigram {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Bigram {}
impl PartialOrd for Bigram {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Bigram {
    /// Max-heap order: the lowest rank first, then the leftmost.
    fn cmp(&self, o: &Self) -> Ordering {
        o.rank.cmp(&self.rank).then(o.left.cmp(&self.left))
    }
}

pub struct Session<'a> {
    vocab: &'a Vocab,
    key: Vec<u8>,
    syms: Vec<Sym>,
    queue: BinaryHeap<Bigram>,
    /// Tokens of the words seen in this call: a word's tokens depend on the
    /// word alone, and text repeats its words.
    cache: FxMap<Box<[u8]>, Box<[i32]>>,
}

/// Most words remembered per call (bounds the memory on random text).
const CACHE_MAX: usize = 1 << 16;

impl<'a> Session<'a> {
    pub fn new(vocab: &'a Vocab) -> Session<'a> {
        Session { vocab, key: Vec::new(), syms: Vec::new(), queue: BinaryHeap::new(), cache: FxMap::default() }
    }

    fn add_bigram(&mut self, word: &[u8], left: i32, right: i32) {
        if left == -1 || right == -1 {
            return;
        }
        let (l, r) = (self.syms[left as usize], self.syms[right as usize]);
        let rank =
            self.vocab.find_bpe_rank(&mut self.key, &word[l.start..l.start + l.n], &word[r.start..r.start + r.n]);
        if rank < 0 {
            return;
        }
        self.queue.push(Bigram { left, right, rank, size: l.n + r.n });
    }

    /// A fragment, through the session of the vocabulary's tokenizer model
    /// (`whitespace` and `hybriddna` wrap the plain BPE session).
    pub fn tokenize_fragment(&mut self, text: &[u8], out: &mut Vec<i32>) -> Result<()> {
        match self.vocab.model_name.as_str() {
            "whitespace" => self.tokenize_whitespace(text, out),
            "hybriddna" => self.tokenize_dna(text, out),
            _ => self.tokenize(text, out),
        }
    }

    fn tokenize_whitespace(&mut self, text: &[u8], out: &mut Vec<i32>) -> Result<()> {
        let mut seg = Vec::new();
        for c in unicode::cpts_from_utf8(text) {
            if unicode::flags(c) & unicode::WHITESPACE != 0 {
                if !seg.is_empty() {
                    self.tokenize(&seg, out)?;
                    seg.clear();
                }
            } else {
                unicode::push_utf8(&mut seg, if self.vocab.norm_lowercase { unicode::tolower(c) } else { c });
            }
        }
        if !seg.is_empty() {
            self.tokenize(&seg, out)?;
        }
        Ok(())
    }

    fn tokenize_dna(&mut self, text: &[u8], out: &mut Vec<i32>) -> Result<()> {
        const OPEN: &[u8] = b"<dna>";
        const CLOSE: &[u8] = b"</dna>";
        let v = self.vocab;
        let (begin, end_id, oov) = (v.text_to_token(OPEN), v.text_to_token(CLOSE), v.text_to_token(b"<oov>"));
        if begin == TOKEN_NULL || end_id == TOKEN_NULL || oov == TOKEN_NULL {
            return self.tokenize(text, out);
        }
        let find = |hay: &[u8], needle: &[u8], from: usize| -> Option<usize> {
            hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
        };
        let mut pos = 0;
        while pos < text.len() {
            let Some(start) = find(text, OPEN, pos) else {
                self.tokenize(&text[pos..], out)?;
                break;
            };
            if start > pos {
                self.tokenize(&text[pos..start], out)?;
            }
            out.push(begin);
            let cs = start + OPEN.len();
            let close = find(text, CLOSE, cs);
            let ce = close.unwrap_or(text.len());
            let seq: Vec<u8> = text[cs..ce].iter().map(|&c| if c.is_ascii_lowercase() { c - 32 } else { c }).collect();
            let kmer = |k: &[u8]| {
                let mut key = k.to_vec();
                key.extend_from_slice(super::DNA_KMER_MARKER);
                let t = v.text_to_token(&key);
                if t != TOKEN_NULL {
                    t
                } else {
                    oov
                }
            };
            let mut i = 0;
            while i + 6 <= seq.len() {
                out.push(kmer(&seq[i..i + 6]));
                i += 6;
            }
            if i < seq.len() {
                let mut last = seq[i..].to_vec();
                last.resize(6, b'A');
                out.push(kmer(&last));
            }
            let Some(close) = close else { break };
            out.push(end_id);
            pos = close + CLOSE.len();
        }
        Ok(())
    }

    pub fn tokenize(&mut self, text: &[u8], out: &mut Vec<i32>) -> Result<()> {
        let pretok = self.vocab.pretok.as_ref().expect("BPE vocab without a pre-tokenizer");
        let byte_encode = pretok.byte_encode;
        let words = pretok.split(text)?;
        let mut ids = Vec::new();
        for word in &words {
            let word = word.as_slice();
            if let Some(cached) = self.cache.get(word) {
                out.extend_from_slice(cached);
                continue;
            }
            ids.clear();
            self.tokenize_word(word, byte_encode, &mut ids);
            out.extend_from_slice(&ids);
            if self.cache.len() < CACHE_MAX {
                self.cache.insert(word.into(), ids.as_slice().into());
            }
        }
        Ok(())
    }

    /// One pre-tokenized word: merges, then tokens (byte tokens for symbols
    /// that are not tokens).
    fn tokenize_word(&mut self, word: &[u8], byte_encode: bool, out: &mut Vec<i32>) {
        {
            self.queue.clear();
            self.syms.clear();
            let mut offset = 0;
            if (self.vocab.ignore_merges && self.vocab.text_to_token(word) != TOKEN_NULL)
                || (self.vocab.pre_type == "GEMMA4"
                    && word.iter().all(|&b| b == b'\n')
                    && self.vocab.text_to_token(word) != TOKEN_NULL)
            {
                self.syms.push(Sym { prev: -1, next: -1, start: 0, n: word.len() });
                offset = word.len();
            }
            let mut index = 0i32;
            while offset < word.len() {
                let n = (word.len() - offset).min(unicode::len_utf8(word[offset]));
                let start = offset;
                offset += n;
                self.syms.push(Sym {
                    prev: index - 1,
                    next: if offset == word.len() { -1 } else { index + 1 },
                    start,
                    n,
                });
                index += 1;
            }
            for i in 1..self.syms.len() as i32 {
                self.add_bigram(word, i - 1, i);
            }
            while let Some(b) = self.queue.pop() {
                let (l, r) = (self.syms[b.left as usize], self.syms[b.right as usize]);
                if l.n == 0 || r.n == 0 || l.n + r.n != b.size {
                    continue;
                }
                self.syms[b.left as usize].n += r.n;
                self.syms[b.right as usize].n = 0;
                self.syms[b.left as usize].next = r.next;
                if r.next >= 0 {
                    self.syms[r.next as usize].prev = b.left;
                }
                let lp = self.syms[b.left as usize].prev;
                let ln = self.syms[b.left as usize].next;
                self.add_bigram(word, lp, b.left);
                self.add_bigram(word, b.left, ln);
            }
            for s in &self.syms {
                if s.n == 0 {
                    continue;
                }
                let piece = &word[s.start..s.start + s.n];
                let tok = self.vocab.text_to_token(piece);
                if tok != TOKEN_NULL {
                    out.push(tok);
                    continue;
                }
                for &b in piece {
                    let t = if byte_encode {
                        self.vocab.text_to_token(&[b])
                    } else {
                        self.vocab.text_to_token(format!("<0x{b:02X}>").as_bytes())
                    };
                    if t != TOKEN_NULL {
                        out.push(t);
                    }
                }
            }
        }
    }
}
