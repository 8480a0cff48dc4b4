//! Repetition penalties, DRY and logit bias.

use super::*;
use crate::sampler_any;
use std::collections::HashMap;

/// The reference's fixed-capacity ring buffer (oldest first; `rat(i)` is
/// the i-th most recent).
#[derive(Clone, Debug)]
pub struct RingBuffer {
    capacity: usize,
    sz: usize,
    first: usize,
    pos: usize,
    data: Vec<i32>,
}

impl RingBuffer {
    pub fn new(capacity: usize) -> RingBuffer {
        RingBuffer { capacity, sz: 0, first: 0, pos: 0, data: vec![0; capacity] }
    }
    pub fn len(&self) -> usize {
        self.sz
    }
    pub fn is_empty(&self) -> bool {
        self.sz == 0
    }
    pub fn front(&self) -> Option<i32> {
        (self.sz > 0).then(|| self.data[self.first])
    }
    pub fn push_back(&mut self, v: i32) {
        if self.capacity == 0 {
            return; // the reference throws
        }
        if self.sz == self.capacity {
            self.first = (self.first + 1) % self.capacity;
        } else {
            self.sz += 1;
        }
        self.data[self.pos] = v;
        self.pos = (self.pos + 1) % self.capacity;
    }
    /// The i-th most recent element (0 = the newest).
    pub fn rat(&self, i: usize) -> i32 {
        assert!(i < self.sz, "ring buffer: index out of bounds");
        self.data[(self.first + self.sz - i - 1) % self.capacity]
    }
    pub fn clear(&mut self) {
        self.sz = 0;
        self.first = 0;
        self.pos = 0;
    }
}

// ---------------------------------------------------------------------------
// penalties
// ---------------------------------------------------------------------------

pub struct Penalties {
    pub n_vocab: i32,
    pub last_n: i32,
    pub repeat: f32,
    pub freq: f32,
    pub present: f32,
    prev: RingBuffer,
    token_count: HashMap<i32, i32>,
}

fn penalties_disabled(last_n: i32, repeat: f32, freq: f32, present: f32) -> bool {
    last_n == 0 || (repeat == 1.0 && freq == 0.0 && present == 0.0)
}

/// `llama_sampler_init_penalties`.
pub fn penalties(n_vocab: i32, last_n: i32, repeat: f32, freq: f32, present: f32) -> Box<dyn Sampler> {
    let last_n = last_n.max(0);
    if penalties_disabled(last_n, repeat, freq, present) {
        return Box::new(basic::Empty { name: c"?penalties" });
    }
    Box::new(Penalties {
        n_vocab,
        last_n,
        repeat,
        freq,
        present,
        prev: RingBuffer::new(last_n as usize),
        token_count: HashMap::new(),
    })
}

impl Sampler for Penalties {
    fn name(&self) -> &'static CStr {
        c"penalties"
    }
    fn accept(&mut self, token: i32) {
        if self.last_n == 0 {
            return;
        }
        *self.token_count.entry(token).or_insert(0) += 1;
        if self.prev.len() >= self.last_n as usize {
            if let Some(old) = self.prev.front() {
                let c = self.token_count.entry(old).or_insert(0);
                *c -= 1;
                if *c == 0 {
                    self.token_count.remove(&old);
                }
            }
        }
        self.prev.push_back(token);
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if penalties_disabled(self.last_n, self.repeat, self.freq, self.present) {
            return;
        }
        for t in cur.data.iter_mut() {
            let Some(&count) = self.token_count.get(&t.id) else { continue };
            if t.logit <= 0.0 {
                t.logit *= self.repeat;
            } else {
                t.logit /= self.repeat;
            }
            t.logit -= count as f32 * self.freq + (count > 0) as i32 as f32 * self.present;
        }
        cur.sorted = false;
    }
    fn reset(&mut self) {
        self.prev.clear();
        self.token_count.clear();
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(Penalties {
            n_vocab: self.n_vocab,
            last_n: self.last_n,
            repeat: self.repeat,
            freq: self.freq,
            present: self.present,
            prev: self.prev.clone(),
            token_count: self.token_count.clone(),
        }))
    }
    fn copy_state_from(&mut self, src: &dyn Sampler) -> bool {
        if let Some(s) = src.as_any().downcast_ref::<Penalties>() {
            self.prev = s.prev.clone();
            self.token_count = s.token_count.clone();
        }
        true
    }
    sampler_any!();
}

// ---------------------------------------------------------------------------
// DRY
// ---------------------------------------------------------------------------

/// Sequence breakers: head token -> the tails (token sequences) that follow
/// it (the reference's unordered_multimap).
pub type Breakers = HashMap<i32, Vec<Vec<i32>>>;

pub struct Dry {
    pub multiplier: f32,
    pub base: f32,
    pub allowed_length: i32,
    pub penalty_last_n: i32,
    pub breakers: Breakers,
    repeat_count: Vec<i32>,
    max_token_repeat: HashMap<i32, i32>,
    last_tokens: RingBuffer,
}

/// Max length of one breaker string, and of a breaker's token tail.
pub const DRY_MAX_CHAR_LEN: usize = 40;
pub const DRY_MAX_SEQ_LEN: usize = 20;

/// `get_overlapping_token_sequences`: every token whose text contains the
/// breaker, or ends with a prefix of it (then the tokenized rest is the tail).
pub fn dry_breaker_sequences(vocab: &dyn VocabView, s: &[u8], out: &mut Breakers, max_tail_len: usize) {
    if s.is_empty() {
        return;
    }
    for token in 0..vocab.n_tokens() as i32 {
        let word = vocab.detokenize_one(token);
        if find(&word, s).is_some() {
            out.entry(token).or_default().push(Vec::new());
            continue;
        }
        let mut start = 0usize;
        while let Some(off) = word[start..].iter().position(|&b| b == s[0]) {
            let pos = start + off;
            let mut matched = true;
            let mut i = 1usize;
            while i < s.len() && i + pos < word.len() {
                if word[pos + i] != s[i] {
                    matched = false;
                    break;
                }
                i += 1;
            }
            if matched {
                let mut tail = vocab.tokenize(&s[i..]);
                tail.truncate(max_tail_len);
                let list = out.entry(token).or_default();
                if !list.contains(&tail) {
                    list.push(tail);
                }
            }
            start = pos + 1;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).find(|&i| &hay[i..i + needle.len()] == needle)
}

/// `llama_sampler_init_dry` given processed breakers (`None` when disabled:
/// the caller returns the "?dry" empty sampler).
pub fn dry(
    multiplier: f32,
    base: f32,
    allowed_length: i32,
    penalty_last_n: i32,
    breakers: Breakers,
) -> Box<dyn Sampler> {
    let last_n = penalty_last_n.max(0);
    if !dry_enabled(multiplier, base, last_n) {
        return Box::new(basic::Empty { name: c"?dry" });
    }
    Box::new(Dry {
        multiplier,
        base,
        allowed_length,
        penalty_last_n: last_n,
        breakers,
        repeat_count: vec![0; last_n as usize],
        max_token_repeat: HashMap::new(),
        last_tokens: RingBuffer::new(last_n as usize),
    })
}

pub fn dry_enabled(multiplier: f32, base: f32, last_n: i32) -> bool {
    multiplier != 0.0 && base >= 1.0 && last_n != 0
}

impl Sampler for Dry {
    fn name(&self) -> &'static CStr {
        c"dry"
    }
    fn accept(&mut self, token: i32) {
        if !dry_enabled(self.multiplier, self.base, self.penalty_last_n) {
            return;
        }
        self.last_tokens.push_back(token);
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if !dry_enabled(self.multiplier, self.base, self.penalty_last_n) {
            return;
        }
        let last_n_repeat = (self.last_tokens.len() as i32).min(self.penalty_last_n);
        if last_n_repeat <= self.allowed_length {
            return;
        }
        let n = last_n_repeat as usize;
        self.repeat_count.clear();
        self.repeat_count.resize(n, 0);
        self.max_token_repeat.clear();
        let lt = &self.last_tokens;

        // Step 1: the nearest restart sequence limits the repetition length
        let mut rep_limit = last_n_repeat;
        for i in 0..n {
            let token = lt.rat(i);
            let Some(tails) = self.breakers.get(&token) else { continue };
            let mut longest: i32 = -1;
            for tail in tails {
                let seq_len = tail.len() as i32;
                if seq_len > longest && seq_len <= i as i32 {
                    let ok = (0..tail.len()).all(|off| tail[off] == lt.rat(i - off - 1));
                    if ok {
                        longest = seq_len;
                    }
                }
            }
            if longest >= 0 {
                rep_limit = i as i32 - longest;
                break;
            }
        }
        if rep_limit < self.allowed_length {
            return;
        }

        // Step 2: Z-algorithm over the reversed context
        {
            let last = n - 1;
            let (mut rt, mut lft) = (0usize, 0usize);
            for k in 1..n {
                if k > rt {
                    let mut m = 0usize;
                    while m + k < n && lt.rat(m) == lt.rat(m + k) {
                        m += 1;
                    }
                    self.repeat_count[last - k] = (m as i32).min(rep_limit);
                    if m > 0 {
                        lft = k;
                        rt = k + m - 1;
                    }
                } else {
                    let p = k - lft;
                    let right_part_len = (rt - k + 1) as i32;
                    if self.repeat_count[last - p] < right_part_len {
                        let v = self.repeat_count[last - p].min(rep_limit);
                        self.repeat_count[last - k] = v;
                    } else {
                        let mut i = rt + 1;
                        while i < n && lt.rat(i) == lt.rat(i - k) {
                            i += 1;
                        }
                        self.repeat_count[last - k] = ((i - k) as i32).min(rep_limit);
                        lft = k;
                        rt = i - 1;
                    }
                }
            }
        }

        // Step 3: the longest repeat each next token would extend
        for i in 0..n - 1 {
            let repeat_len = self.repeat_count[i];
            if repeat_len >= self.allowed_length {
                let token = lt.rat(n - 2 - i);
                let e = self.max_token_repeat.entry(token).or_insert(repeat_len);
                if *e < repeat_len {
                    *e = repeat_len;
                }
            }
        }

        // Step 4: penalties (exponent clamped against float overflow)
        #[allow(clippy::excessive_precision)]
        const FLOAT_MAX_LOG: f32 = 88.722_839_1;
        let mut max_exponent = 0i32;
        if self.base > 1.000001 {
            max_exponent = cvtt(FLOAT_MAX_LOG / self.base.ln());
        }
        for t in cur.data.iter_mut() {
            let Some(&rep) = self.max_token_repeat.get(&t.id) else { continue };
            let single_breaker = self.breakers.get(&t.id).is_some_and(|tails| tails.iter().any(|x| x.is_empty()));
            if !single_breaker {
                let mut repeat_exp = rep - self.allowed_length;
                if max_exponent > 0 && repeat_exp > max_exponent {
                    repeat_exp = max_exponent;
                }
                // std::pow(float, int) is computed in double
                let penalty = (self.multiplier as f64 * (self.base as f64).powf(repeat_exp as f64)) as f32;
                t.logit -= penalty;
            }
        }
        cur.sorted = false;
    }
    fn reset(&mut self) {
        self.last_tokens.clear();
        self.repeat_count.clear();
        self.max_token_repeat.clear();
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(Dry {
            multiplier: self.multiplier,
            base: self.base,
            allowed_length: self.allowed_length,
            penalty_last_n: self.penalty_last_n,
            breakers: self.breakers.clone(),
            repeat_count: self.repeat_count.clone(),
            max_token_repeat: self.max_token_repeat.clone(),
            last_tokens: self.last_tokens.clone(),
        }))
    }
    sampler_any!();
}

// ---------------------------------------------------------------------------
// logit bias
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
pub struct Bias {
    pub token: i32,
    pub bias: f32,
}

pub struct LogitBias {
    pub n_vocab: i32,
    pub biases: Vec<Bias>,
    to_search: Vec<Bias>,
}

/// `llama_sampler_init_logit_bias`.
pub fn logit_bias(n_vocab: i32, biases: Vec<Bias>) -> Box<dyn Sampler> {
    if biases.is_empty() {
        return Box::new(basic::Empty { name: c"?logit-bias" });
    }
    Box::new(LogitBias { n_vocab, biases, to_search: Vec::new() })
}

impl Sampler for LogitBias {
    fn name(&self) -> &'static CStr {
        c"logit-bias"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if self.biases.is_empty() {
            return;
        }
        self.to_search.clear();
        // candidates still at their vocabulary index (idx == id) first
        for lb in &self.biases {
            let idx = lb.token as usize;
            if lb.token >= 0 && cur.size() > idx && cur.data[idx].id == lb.token {
                cur.data[idx].logit += lb.bias;
            } else {
                self.to_search.push(*lb);
            }
        }
        if self.to_search.is_empty() {
            return;
        }
        for t in cur.data.iter_mut() {
            if let Some(lb) = self.to_search.iter().find(|lb| lb.token == t.id) {
                t.logit += lb.bias;
            }
        }
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(LogitBias { n_vocab: self.n_vocab, biases: self.biases.clone(), to_search: Vec::new() }))
    }
    fn copy_state_from(&mut self, _src: &dyn Sampler) -> bool {
        true
    }
    sampler_any!();
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    #[test]
    fn penalties_hand_computed() {
        let mut s = penalties(10, 3, 2.0, 0.5, 0.25);
        for t in [1, 1, 2] {
            s.accept(t);
        }
        let mut v = vec![td(0, 1.0), td(1, 4.0), td(2, -2.0), td(3, 1.0)];
        let mut c = Candidates::new(&mut v);
        s.apply(&mut c);
        assert_eq!(v[0].logit, 1.0);
        assert_eq!(v[1].logit, 4.0 / 2.0 - (2.0 * 0.5 + 0.25));
        assert_eq!(v[2].logit, -2.0 * 2.0 - (0.5 + 0.25));
        // window of 3: accepting 3 pushes out the oldest 1
        s.accept(3);
        let mut v = vec![td(1, 4.0)];
        s.apply(&mut Candidates::new(&mut v));
        assert_eq!(v[0].logit, 4.0 / 2.0 - (0.5 + 0.25));
        assert_eq!(penalties(10, 0, 2.0, 0.0, 0.0).name(), c"?penalties");
        assert_eq!(penalties(10, 64, 1.0, 0.0, 0.0).name(), c"?penalties");
    }

    #[test]
    fn dry_penalises_the_token_that_extends_a_repeat() {
        // context: a b c x a b  -> "c" would extend the repeat "a b" (length 2)
        let mut s = dry(1.0, 2.0, 2, 100, Breakers::new());
        for t in [1, 2, 3, 9, 1, 2] {
            s.accept(t);
        }
        let mut v = vec![td(1, 0.0), td(2, 0.0), td(3, 0.0), td(9, 0.0)];
        s.apply(&mut Candidates::new(&mut v));
        assert_eq!(v[2].logit, -1.0); // 1 * 2^(2-2)
        assert_eq!(v[0].logit, 0.0);
        assert_eq!(v[3].logit, 0.0);
        // a single-token breaker on 3 exempts it
        let mut b = Breakers::new();
        b.insert(3, vec![vec![]]);
        let mut s = dry(1.0, 2.0, 2, 100, b);
        for t in [1, 2, 3, 9, 1, 2] {
            s.accept(t);
        }
        let mut v = vec![td(3, 0.0)];
        s.apply(&mut Candidates::new(&mut v));
        assert_eq!(v[0].logit, 0.0);
        assert_eq!(dry(0.0, 2.0, 2, 100, Breakers::new()).name(), c"?dry");
    }

    struct FakeVocab(Vec<&'static str>);
    impl VocabView for FakeVocab {
        fn n_tokens(&self) -> usize {
            self.0.len()
        }
        fn piece(&self, token: i32, _special: bool) -> std::borrow::Cow<'_, [u8]> {
            std::borrow::Cow::Borrowed(self.0[token as usize].as_bytes())
        }
        fn is_eog(&self, _t: i32) -> bool {
            false
        }
        fn token_eot(&self) -> i32 {
            -1
        }
        fn token_eos(&self) -> i32 {
            -1
        }
        fn tokenize(&self, text: &[u8]) -> Vec<i32> {
            // greedy longest match
            let mut out = vec![];
            let mut i = 0;
            while i < text.len() {
                let (mut best, mut bl) = (-1, 0);
                for (id, w) in self.0.iter().enumerate() {
                    let w = w.as_bytes();
                    if w.len() > bl && text[i..].starts_with(w) {
                        best = id as i32;
                        bl = w.len();
                    }
                }
                if bl == 0 {
                    break;
                }
                out.push(best);
                i += bl;
            }
            out
        }
    }

    #[test]
    fn dry_breakers_from_a_vocabulary() {
        let v = FakeVocab(vec!["a", "\n", "x\n", "b", "*", "**", "c*"]);
        let mut out = Breakers::new();
        dry_breaker_sequences(&v, b"\n", &mut out, DRY_MAX_SEQ_LEN);
        assert_eq!(out.get(&1), Some(&vec![vec![]]));
        assert_eq!(out.get(&2), Some(&vec![vec![]]));
        let mut out = Breakers::new();
        dry_breaker_sequences(&v, b"**", &mut out, DRY_MAX_SEQ_LEN);
        assert_eq!(out.get(&5), Some(&vec![vec![]]));
        // "*" and "c*" end with a prefix "*" of "**": the tail is tokenize("*")
        assert_eq!(out.get(&4), Some(&vec![vec![4]]));
        assert_eq!(out.get(&6), Some(&vec![vec![4]]));
    }

    #[test]
    fn logit_bias_finds_shuffled_candidates() {
        let mut s = logit_bias(4, vec![Bias { token: 2, bias: 1.5 }, Bias { token: 0, bias: -1.0 }]);
        let mut v = vec![td(2, 0.0), td(1, 0.0), td(0, 0.0)];
        s.apply(&mut Candidates::new(&mut v));
        assert_eq!(v[0].logit, 1.5);
        assert_eq!(v[2].logit, -1.0);
        assert_eq!(logit_bias(4, vec![]).name(), c"?logit-bias");
    }
}
