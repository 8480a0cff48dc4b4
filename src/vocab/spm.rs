//! The SentencePiece-style BPE of the reference (`llm_tokenizer_spm`):
//! start from UTF-8 characters, repeatedly merge the adjacent pair whose
//! concatenation is the highest-scoring token (leftmost on ties), then
//! re-segment pieces that are not tokens into byte tokens.

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
    score: f32,
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
    /// Max-heap order: higher score first, then the leftmost.
    fn cmp(&self, o: &Self) -> Ordering {
        if self.score < o.score || (self.score == o.score && self.left > o.left) {
            Ordering::Less
        } else if o.score < self.score || (o.score == self.score && o.left > self.left) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }
}

struct Session<'a> {
    vocab: &'a Vocab,
    text: &'a [u8],
    syms: Vec<Sym>,
    queue: BinaryHeap<Bigram>,
}

impl<'a> Session<'a> {
    fn try_add(&mut self, left: i32, right: i32) {
        if left == -1 || right == -1 {
            return;
        }
        let (l, r) = (self.syms[left as usize], self.syms[right as usize]);
        let piece = &self.text[l.start..l.start + l.n + r.n];
        let tok = self.vocab.text_to_token(piece);
        if tok == TOKEN_NULL || tok as usize >= self.vocab.n_tokens() {
            return;
        }
        self.queue.push(Bigram { left, right, score: self.vocab.tokens[tok as usize].score, size: piece.len() });
    }

    /// A final symbol: its token, or its bytes as byte tokens.
    ///
    /// The reference also keeps a map from merged texts to the pair they were
    /// merged from, to re-split a symbol that is not a token; it never
    /// applies: a merged symbol's text is a token by construction, and a
    /// one-character symbol (a lead byte with its continuation bytes, or one
    /// other byte) can never equal the text of two adjacent symbols.
    fn resegment(&self, s: Sym, out: &mut Vec<i32>) -> Result<()> {
        let piece = &self.text[s.start..s.start + s.n];
        let tok = self.vocab.text_to_token(piece);
        if tok != TOKEN_NULL {
            out.push(tok);
            return Ok(());
        }
        for &b in piece {
            out.push(self.vocab.byte_to_token(b)?);
        }
        Ok(())
    }
}

pub fn tokenize(vocab: &Vocab, text: &[u8], out: &mut Vec<i32>) -> Result<()> {
    let mut s =
        Session { vocab, text, syms: Vec::with_capacity(text.len()), queue: BinaryHeap::with_capacity(text.len()) };
    let mut offs = 0;
    let mut index = 0i32;
    while offs < text.len() {
        let n = unicode::len_utf8(text[offs]).min(text.len() - offs);
        let start = offs;
        offs += n;
        s.syms.push(Sym { prev: index - 1, next: if offs == text.len() { -1 } else { index + 1 }, start, n });
        index += 1;
    }
    for i in 1..s.syms.len() as i32 {
        s.try_add(i - 1, i);
    }
    while let Some(b) = s.queue.pop() {
        let (l, r) = (s.syms[b.left as usize], s.syms[b.right as usize]);
        if l.n == 0 || r.n == 0 || l.n + r.n != b.size {
            continue;
        }
        s.syms[b.left as usize].n += r.n;
        s.syms[b.right as usize].n = 0;
        s.syms[b.left as usize].next = r.next;
        if r.next >= 0 {
            s.syms[r.next as usize].prev = b.left;
        }
        let lp = s.syms[b.left as usize].prev;
        let ln = s.syms[b.left as usize].next;
        s.try_add(lp, b.left);
        s.try_add(b.left, ln);
    }
    if s.syms.is_empty() {
        return Ok(());
    }
    let mut i = 0i32;
    while i != -1 {
        let sym = s.syms[i as usize];
        s.resegment(sym, out)?;
        i = sym.next;
    }
    Ok(())
}
