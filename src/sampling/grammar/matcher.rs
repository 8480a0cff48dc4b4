//! The grammar matcher: pushdown stacks over the parsed rules, advanced one
//! code point at a time, and candidate masking over token pieces — the
//! reference's llama_grammar (llama-grammar.cpp), with stack entries as
//! (rule, index) positions instead of pointers.
//!
//! UTF-8: a token piece may end inside a multi-byte sequence; the decoder
//! keeps the partial value and the number of bytes still expected, the next
//! piece continues it, and a candidate ending in a partial sequence is kept
//! only if some completion could match the grammar (`match_partial_char`),
//! exactly as the reference does.

use super::parser::{detect_left_recursion, nullable_rules, ElemType, Element, ParsedGrammar, Rule};
use crate::regex::bytes::Regex;
use crate::sampling::{Candidates, VocabView};
use std::collections::HashSet;

/// A position in the rules: element `idx` of rule `rule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pos {
    pub rule: u32,
    pub idx: u32,
}

impl Pos {
    fn next(self, n: u32) -> Pos {
        Pos { rule: self.rule, idx: self.idx + n }
    }
}

pub type Stack = Vec<Pos>;

/// `llama_partial_utf8`: the bits so far and the bytes still expected
/// (-1: invalid sequence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartialUtf8 {
    pub value: u32,
    pub n_remain: i32,
}

/// Decodes a piece (up to its first NUL) continuing `partial`: the code
/// points followed by a terminating 0, and the new partial state.
pub fn decode_utf8(src: &[u8], partial: PartialUtf8) -> (Vec<u32>, PartialUtf8) {
    const LOOKUP: [i32; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4];
    let end = src.iter().position(|&b| b == 0).unwrap_or(src.len());
    let src = &src[..end];
    let mut cps = Vec::with_capacity(src.len() + 1);
    let mut value = partial.value;
    let mut n_remain = partial.n_remain;
    let mut pos = 0usize;
    while pos < src.len() && n_remain > 0 {
        let b = src[pos];
        if (b >> 6) != 2 {
            cps.push(0);
            return (cps, PartialUtf8 { value: 0, n_remain: -1 });
        }
        value = (value << 6) + (b & 0x3f) as u32;
        pos += 1;
        n_remain -= 1;
    }
    if partial.n_remain > 0 && n_remain == 0 {
        cps.push(value);
    }
    while pos < src.len() {
        let first = src[pos];
        n_remain = LOOKUP[(first >> 4) as usize] - 1;
        if n_remain < 0 {
            cps.clear();
            cps.push(0);
            return (cps, PartialUtf8 { value: 0, n_remain });
        }
        let mask = ((1u32 << (7 - n_remain)) - 1) as u8;
        value = (first & mask) as u32;
        pos += 1;
        while pos < src.len() && n_remain > 0 {
            value = (value << 6) + (src[pos] & 0x3f) as u32;
            pos += 1;
            n_remain -= 1;
        }
        if n_remain == 0 {
            cps.push(value);
        }
    }
    cps.push(0);
    (cps, PartialUtf8 { value, n_remain })
}

/// A grammar in use: rules, live stacks, partial UTF-8 state, and the lazy
/// trigger state.
#[derive(Debug, Clone)]
pub struct Grammar {
    pub rules: Vec<Rule>,
    pub stacks: Vec<Stack>,
    pub partial_utf8: PartialUtf8,
    pub lazy: bool,
    pub awaiting_trigger: bool,
    /// Output held back while a lazy grammar waits for its trigger.
    pub trigger_buffer: Vec<u8>,
    /// The tokens in `trigger_buffer` and their byte ranges in it.
    pub trigger_buffer_positions: Vec<(i32, (usize, usize))>,
    pub trigger_tokens: Vec<i32>,
    pub trigger_patterns: Vec<Regex>,
}

/// Why a grammar cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub enum GrammarError {
    NoRoot(String),
    LeftRecursion(String),
    /// Accepting a token left no stack alive.
    EmptyStack(String),
    /// One operation needed more than `WORK_LIMIT` units of work.
    TooComplex,
}

/// The most work one grammar operation (init, accepting a token or a text,
/// filtering the candidates) may do, in units of one stack element visited:
/// expanding a stack costs its depth, checking it against the stacks kept
/// costs their number. The reference has no limit: a very ambiguous grammar
/// (`"d"+++…`, nested repetitions) makes the stacks multiply with every
/// character, and the host hangs. Real grammars over a real vocabulary stay
/// far below (`grammar::tests::work_stays_far_below_the_limit_on_real_grammars`).
pub const WORK_LIMIT: u64 = 1 << 24;

/// The expansions an operation has left.
pub(crate) struct Work {
    left: u64,
}

impl Work {
    pub(crate) fn new() -> Work {
        Work { left: WORK_LIMIT }
    }
    /// Takes `n` units; false once the budget is spent.
    fn spend(&mut self, n: usize) -> bool {
        match self.left.checked_sub(u64::try_from(n).unwrap_or(u64::MAX)) {
            Some(l) => {
                self.left = l;
                true
            }
            None => {
                self.left = 0;
                false
            }
        }
    }
    fn exhausted(&self) -> bool {
        self.left == 0
    }
    /// Units spent so far.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        WORK_LIMIT - self.left
    }
}

impl std::fmt::Display for GrammarError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrammarError::NoRoot(r) => write!(f, "grammar does not contain a '{r}' symbol"),
            GrammarError::LeftRecursion(n) => write!(f, "unsupported grammar, left recursion detected for nonterminal '{n}'"),
            GrammarError::EmptyStack(p) => write!(f, "unexpected empty grammar stack after accepting piece '{p}'"),
            GrammarError::TooComplex => write!(
                f,
                "the grammar is too ambiguous: one step needs more than {WORK_LIMIT} units of work (nested repetitions?)"
            ),
        }
    }
}

#[derive(Clone, Copy)]
struct Cand {
    index: u32,
    cps: u32, // which decoded vector
    off: u32, // offset of the next code point in it
    partial: PartialUtf8,
    id: i32,
}

/// The character set of a char element (with its alternatives and ranges),
/// flattened once per stack for the candidate loop: `match_char(pos, c).0`
/// is `set.matches(c)`.
struct CharSet {
    ranges: Vec<(u32, u32)>,
    any: bool,
    positive: bool,
}

impl CharSet {
    #[inline]
    fn matches(&self, c: u32) -> bool {
        let found = self.any || self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
        found == self.positive
    }
}

impl Grammar {
    /// `llama_grammar_init_impl` from a parsed grammar and the root name.
    pub fn new(
        parsed: &ParsedGrammar,
        root: &str,
        lazy: bool,
        trigger_tokens: Vec<i32>,
    ) -> Result<Grammar, GrammarError> {
        Self::with_patterns(parsed, root, lazy, trigger_tokens, Vec::new())
    }

    /// `new` with trigger patterns (lazy grammars).
    pub fn with_patterns(
        parsed: &ParsedGrammar,
        root: &str,
        lazy: bool,
        trigger_tokens: Vec<i32>,
        trigger_patterns: Vec<Regex>,
    ) -> Result<Grammar, GrammarError> {
        let start = *parsed.symbol_ids.get(root).ok_or_else(|| GrammarError::NoRoot(root.to_string()))? as usize;
        let rules = parsed.rules.clone();
        let n = rules.len();
        let (mut visited, mut in_progress) = (vec![false; n], vec![false; n]);
        // Deviation: nullability computed in full, not only from literally
        // empty alternatives (see `nullable_rules`).
        let mut empty = nullable_rules(&rules);
        for i in 0..n {
            if visited[i] {
                continue;
            }
            if detect_left_recursion(&rules, i, &mut visited, &mut in_progress, &mut empty) {
                let name =
                    parsed.symbol_ids.iter().find(|(_, &v)| v as usize == i).map_or(i.to_string(), |(k, _)| k.clone());
                return Err(GrammarError::LeftRecursion(name));
            }
        }
        let mut g = Grammar {
            rules,
            stacks: Vec::new(),
            partial_utf8: PartialUtf8::default(),
            lazy,
            awaiting_trigger: lazy,
            trigger_buffer: Vec::new(),
            trigger_buffer_positions: Vec::new(),
            trigger_tokens,
            trigger_patterns,
        };
        let mut stacks = Vec::new();
        let mut pos = Pos { rule: start as u32, idx: 0 };
        let mut work = Work::new();
        loop {
            let mut stack = Vec::new();
            if !g.is_end(pos) {
                stack.push(pos);
            }
            g.advance_stack(&stack, &mut stacks, &mut work);
            while !g.is_end(pos) {
                pos = pos.next(1);
            }
            if g.el(pos).ty == ElemType::Alt {
                pos = pos.next(1);
            } else {
                break;
            }
        }
        if work.exhausted() {
            return Err(GrammarError::TooComplex);
        }
        g.stacks = stacks;
        Ok(g)
    }

    fn el(&self, p: Pos) -> Element {
        self.rules[p.rule as usize][p.idx as usize]
    }

    fn is_end(&self, p: Pos) -> bool {
        matches!(self.el(p).ty, ElemType::End | ElemType::Alt)
    }

    /// `llama_grammar_match_char`: whether `chr` matches the char range at
    /// `pos`, and the position after the range.
    fn match_char(&self, mut pos: Pos, chr: u32) -> (bool, Pos) {
        let first = self.el(pos);
        let positive = matches!(first.ty, ElemType::Char | ElemType::CharAny);
        let mut found = false;
        loop {
            let e = self.el(pos);
            let nx = self.el(pos.next(1));
            if nx.ty == ElemType::CharRngUpper {
                found = found || (e.value <= chr && chr <= nx.value);
                pos = pos.next(2);
            } else if e.ty == ElemType::CharAny {
                found = true;
                pos = pos.next(1);
            } else {
                found = found || e.value == chr;
                pos = pos.next(1);
            }
            if self.el(pos).ty != ElemType::CharAlt {
                break;
            }
        }
        (found == positive, pos)
    }

    /// The set `match_char` tests at `pos`, flattened.
    fn char_set(&self, mut pos: Pos) -> CharSet {
        let positive = matches!(self.el(pos).ty, ElemType::Char | ElemType::CharAny);
        let mut set = CharSet { ranges: Vec::new(), any: false, positive };
        loop {
            let e = self.el(pos);
            let nx = self.el(pos.next(1));
            if nx.ty == ElemType::CharRngUpper {
                set.ranges.push((e.value, nx.value));
                pos = pos.next(2);
            } else if e.ty == ElemType::CharAny {
                set.any = true;
                pos = pos.next(1);
            } else {
                set.ranges.push((e.value, e.value));
                pos = pos.next(1);
            }
            if self.el(pos).ty != ElemType::CharAlt {
                break;
            }
        }
        set
    }

    /// `llama_grammar_match_partial_char`.
    fn match_partial_char(&self, mut pos: Pos, partial: PartialUtf8) -> bool {
        let positive = matches!(self.el(pos).ty, ElemType::Char | ElemType::CharAny);
        let value = partial.value;
        let n_remain = partial.n_remain;
        if n_remain < 0 || (n_remain == 1 && value < 2) {
            return false;
        }
        let shift = (n_remain * 6) as u32;
        let mut low = value.checked_shl(shift).unwrap_or(0);
        let high = low | (1u32.checked_shl(shift).unwrap_or(0).wrapping_sub(1));
        if low == 0 {
            if n_remain == 2 {
                low = 1 << 11;
            } else if n_remain == 3 {
                low = 1 << 16;
            }
        }
        loop {
            let e = self.el(pos);
            let nx = self.el(pos.next(1));
            if nx.ty == ElemType::CharRngUpper {
                if e.value <= high && low <= nx.value {
                    return positive;
                }
                pos = pos.next(2);
            } else if e.ty == ElemType::CharAny {
                return true;
            } else {
                if low <= e.value && e.value <= high {
                    return positive;
                }
                pos = pos.next(1);
            }
            if self.el(pos).ty != ElemType::CharAlt {
                break;
            }
        }
        !positive
    }

    fn match_token(&self, pos: Pos, token: i32) -> bool {
        let e = self.el(pos);
        match e.ty {
            ElemType::Token => e.value == token as u32,
            ElemType::TokenNot => e.value != token as u32,
            _ => false,
        }
    }

    /// `llama_grammar_advance_stack`: expands rule references until every
    /// stack ends at a terminal; appends new (distinct) stacks.
    /// Stops (leaving `new_stacks` incomplete) when `work` runs out.
    fn advance_stack(&self, stack: &Stack, new_stacks: &mut Vec<Stack>, work: &mut Work) {
        let mut todo = vec![stack.clone()];
        let mut seen: HashSet<Stack> = HashSet::new();
        while let Some(cur) = todo.pop() {
            if !work.spend(1 + cur.len()) {
                return;
            }
            if !seen.insert(cur.clone()) {
                continue;
            }
            let Some(&pos) = cur.last() else {
                if work.spend(new_stacks.len()) && !new_stacks.contains(&cur) {
                    new_stacks.push(cur);
                }
                continue;
            };
            let e = self.el(pos);
            match e.ty {
                ElemType::RuleRef => {
                    let mut sub = Pos { rule: e.value, idx: 0 };
                    loop {
                        let mut next = cur[..cur.len() - 1].to_vec();
                        if !self.is_end(pos.next(1)) {
                            next.push(pos.next(1));
                        }
                        if !self.is_end(sub) {
                            next.push(sub);
                        }
                        todo.push(next);
                        while !self.is_end(sub) {
                            sub = sub.next(1);
                        }
                        if self.el(sub).ty == ElemType::Alt {
                            sub = sub.next(1);
                        } else {
                            break;
                        }
                    }
                }
                ElemType::Char | ElemType::CharNot | ElemType::CharAny | ElemType::Token | ElemType::TokenNot
                    if work.spend(new_stacks.len()) && !new_stacks.contains(&cur) =>
                {
                    new_stacks.push(cur);
                }
                _ => {
                    // END/ALT/CHAR_ALT/RNG_UPPER never top a stack (the
                    // reference aborts); drop the stack (and a duplicate, or
                    // one past the work budget)
                }
            }
        }
    }

    fn accept_chr(&self, stack: &Stack, chr: u32, new_stacks: &mut Vec<Stack>, work: &mut Work) {
        let Some(&pos) = stack.last() else { return };
        let ty = self.el(pos).ty;
        if ty == ElemType::Token || ty == ElemType::TokenNot {
            return;
        }
        let (ok, after) = self.match_char(pos, chr);
        if ok {
            let mut ns = stack[..stack.len() - 1].to_vec();
            if !self.is_end(after) {
                ns.push(after);
            }
            self.advance_stack(&ns, new_stacks, work);
        }
    }

    /// `llama_grammar_accept`: advance every stack by one code point.
    fn accept_chr_all(&mut self, chr: u32, work: &mut Work) {
        let mut new = Vec::with_capacity(self.stacks.len());
        for s in &self.stacks {
            self.accept_chr(s, chr, &mut new, work);
        }
        self.stacks = new;
    }

    fn reject_for_stack(&self, stack: &Stack, cands: &[Cand], decoded: &[Vec<u32>], work: &mut Work) -> Vec<Cand> {
        let mut rejects = Vec::new();
        let cp = |c: &Cand| decoded[c.cps as usize][c.off as usize];
        let Some(&top) = stack.last() else {
            for c in cands {
                if cp(c) != 0 || c.partial.n_remain != 0 {
                    rejects.push(*c);
                }
            }
            return rejects;
        };
        let ty = self.el(top).ty;
        if ty == ElemType::Token || ty == ElemType::TokenNot {
            for c in cands {
                if cp(c) == 0 {
                    if c.partial.n_remain != 0 {
                        rejects.push(*c);
                    }
                } else if !self.match_token(top, c.id) {
                    rejects.push(*c);
                }
            }
            return rejects;
        }
        let set = self.char_set(top);
        let mut next = Vec::new();
        for c in cands {
            let chr = cp(c);
            if chr == 0 {
                if c.partial.n_remain != 0 && !self.match_partial_char(top, c.partial) {
                    rejects.push(*c);
                }
            } else if set.matches(chr) {
                next.push(Cand { off: c.off + 1, ..*c });
            } else {
                rejects.push(*c);
            }
        }
        let after = self.match_char(top, 0).1;
        let mut stack_after = stack[..stack.len() - 1].to_vec();
        if !self.is_end(after) {
            stack_after.push(after);
        }
        let mut next_stacks = Vec::new();
        self.advance_stack(&stack_after, &mut next_stacks, work);
        for c in self.reject(&next_stacks, &next, decoded, work) {
            rejects.push(Cand { off: c.off - 1, ..c });
        }
        rejects
    }

    /// The candidates no stack accepts. Once `work` runs out the answer is
    /// meaningless; callers check `work.exhausted()`.
    fn reject(&self, stacks: &[Stack], cands: &[Cand], decoded: &[Vec<u32>], work: &mut Work) -> Vec<Cand> {
        if cands.is_empty() || work.exhausted() {
            return Vec::new();
        }
        let Some(first) = stacks.first() else {
            // no stack: the reference asserts; every candidate is rejected
            return cands.to_vec();
        };
        let mut rejects = self.reject_for_stack(first, cands, decoded, work);
        for s in &stacks[1..] {
            rejects = self.reject_for_stack(s, &rejects, decoded, work);
        }
        rejects
    }

    /// `llama_grammar_apply_impl`: sets the logit of every candidate the
    /// grammar cannot accept next to -inf (EOG only where a stack is done).
    /// If that needs more than `WORK_LIMIT` units of work, every candidate
    /// is rejected and the error returned.
    pub fn apply(&self, vocab: &dyn VocabView, cur: &mut Candidates<'_>) -> Result<(), GrammarError> {
        self.apply_counted(vocab, cur, &mut Work::new())
    }

    /// `apply` with the caller's budget (tests read `work.used()`).
    pub(crate) fn apply_counted(
        &self,
        vocab: &dyn VocabView,
        cur: &mut Candidates<'_>,
        work: &mut Work,
    ) -> Result<(), GrammarError> {
        if self.awaiting_trigger {
            return Ok(());
        }
        let allow_eog = self.stacks.iter().any(|s| s.is_empty());
        let mut decoded = Vec::with_capacity(cur.size());
        let mut cands = Vec::with_capacity(cur.size());
        for (i, t) in cur.data.iter_mut().enumerate() {
            let piece = vocab.piece(t.id, true); // the reference's cached pieces are special = true
            if vocab.is_eog(t.id) {
                if !allow_eog {
                    t.logit = f32::NEG_INFINITY;
                }
            } else if piece.is_empty() || piece[0] == 0 {
                t.logit = f32::NEG_INFINITY;
            } else {
                let (cps, partial) = decode_utf8(&piece, self.partial_utf8);
                decoded.push(cps);
                cands.push(Cand { index: i as u32, cps: (decoded.len() - 1) as u32, off: 0, partial, id: t.id });
            }
        }
        let rejects = self.reject(&self.stacks, &cands, &decoded, work);
        if work.exhausted() {
            cur.data.iter_mut().for_each(|t| t.logit = f32::NEG_INFINITY);
            return Err(GrammarError::TooComplex);
        }
        for r in rejects {
            cur.data[r.index as usize].logit = f32::NEG_INFINITY;
        }
        Ok(())
    }

    /// `llama_grammar_accept_impl`: a lazy grammar buffers the output until
    /// a trigger token, or a trigger pattern matching the buffer (then the
    /// buffered tokens from the pattern's start are replayed); an EOG token
    /// is accepted only when a stack is complete.
    pub fn accept(&mut self, vocab: &dyn VocabView, token: i32) -> Result<(), GrammarError> {
        let piece = vocab.piece(token, true);
        if self.awaiting_trigger {
            if self.trigger_tokens.contains(&token) {
                self.awaiting_trigger = false;
                self.trigger_buffer.clear();
                return self.accept_token(token, &piece);
            }
            let range = (self.trigger_buffer.len(), self.trigger_buffer.len() + piece.len());
            self.trigger_buffer_positions.push((token, range));
            self.trigger_buffer.extend_from_slice(&piece);
            let found = self.trigger_patterns.iter().find_map(|p| p.trigger_find(&self.trigger_buffer));
            if let Some(start) = found {
                self.awaiting_trigger = false;
                let buffer = std::mem::take(&mut self.trigger_buffer);
                let positions = std::mem::take(&mut self.trigger_buffer_positions);
                for (tok, (tok_start, tok_end)) in positions {
                    if tok_end <= start {
                        continue;
                    }
                    let piece_start = tok_start.max(start); // a token may be cut by the start
                    self.accept_token(tok, &buffer[piece_start..tok_end])?;
                }
            }
            return Ok(());
        }
        if vocab.is_eog(token) {
            if self.stacks.iter().any(|s| s.is_empty()) {
                return Ok(());
            }
            return Err(GrammarError::EmptyStack(String::from_utf8_lossy(&piece).into_owned()));
        }
        self.accept_token(token, &piece)
    }

    /// `llama_grammar_accept_token`.
    /// More than `WORK_LIMIT` units of work leave no stack (an error, as an
    /// impossible token is).
    pub fn accept_token(&mut self, token: i32, piece: &[u8]) -> Result<(), GrammarError> {
        let mut work = Work::new();
        let (cps, partial) = decode_utf8(piece, self.partial_utf8);
        let mut stacks_new: Vec<Stack> = Vec::with_capacity(self.stacks.len());
        for stack in &self.stacks {
            let Some(&pos) = stack.last() else { continue };
            let ty = self.el(pos).ty;
            if ty == ElemType::Token || ty == ElemType::TokenNot {
                if self.match_token(pos, token) {
                    let mut ns = stack[..stack.len() - 1].to_vec();
                    if !self.is_end(pos.next(1)) {
                        ns.push(pos.next(1));
                    }
                    self.advance_stack(&ns, &mut stacks_new, &mut work);
                }
            } else {
                let mut current = vec![stack.clone()];
                for &c in &cps[..cps.len() - 1] {
                    let mut next = Vec::new();
                    for s in &current {
                        self.accept_chr(s, c, &mut next, &mut work);
                    }
                    current = next;
                    if current.is_empty() {
                        break;
                    }
                }
                for s in current {
                    if work.spend(stacks_new.len()) && !stacks_new.contains(&s) {
                        stacks_new.push(s);
                    }
                }
            }
        }
        self.partial_utf8 = partial;
        if work.exhausted() {
            self.stacks.clear();
            return Err(GrammarError::TooComplex);
        }
        self.stacks = stacks_new;
        if self.stacks.is_empty() {
            return Err(GrammarError::EmptyStack(String::from_utf8_lossy(piece).into_owned()));
        }
        Ok(())
    }

    /// `llama_grammar_accept_str`: advance over a text (no token checks).
    pub fn accept_str(&mut self, piece: &[u8]) -> Result<(), GrammarError> {
        let mut work = Work::new();
        let (cps, partial) = decode_utf8(piece, self.partial_utf8);
        for &c in &cps[..cps.len() - 1] {
            self.accept_chr_all(c, &mut work);
        }
        self.partial_utf8 = partial;
        if work.exhausted() {
            self.stacks.clear();
            return Err(GrammarError::TooComplex);
        }
        if self.stacks.is_empty() {
            return Err(GrammarError::EmptyStack(String::from_utf8_lossy(piece).into_owned()));
        }
        Ok(())
    }

    /// Which of `pieces` (code points, each ending with 0, no partial UTF-8)
    /// the current stacks reject (the reference's candidate rejection, used
    /// by the parity trace).
    pub fn rejected_mask(&self, pieces: &[Vec<u32>]) -> Vec<bool> {
        let cands: Vec<Cand> = (0..pieces.len())
            .map(|i| Cand { index: i as u32, cps: i as u32, off: 0, partial: PartialUtf8::default(), id: i as i32 })
            .collect();
        let mut work = Work::new();
        let rejects = self.reject(&self.stacks, &cands, pieces, &mut work);
        if work.exhausted() {
            return vec![true; pieces.len()];
        }
        let mut mask = vec![false; pieces.len()];
        for r in rejects {
            mask[r.index as usize] = true;
        }
        mask
    }

    /// Whether the text accepted so far is a complete sentence.
    pub fn is_complete(&self) -> bool {
        self.stacks.iter().any(|s| s.is_empty())
    }
}
