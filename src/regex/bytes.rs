//! The regular expressions of lazy-grammar trigger patterns (also used for
//! quantize's tensor-type overrides): the subset of `std::regex` (ECMAScript
//! grammar, over bytes, as `std::regex` on a `std::string` matches `char`s)
//! that trigger patterns use.
//!
//! Supported: literals and escapes (`\n \t \r \f \v \0 \xHH \uHHHH`, escaped
//! punctuation), `.` (any byte but `\n` and `\r`), classes `[...]` / `[^...]`
//! with ranges and `\s \S \d \D \w \W` (also outside classes), groups `( )`
//! and `(?: )`, alternation `|`, quantifiers `* + ? {n} {n,} {n,m}` and their
//! lazy forms, anchors `^ $`, lookahead `(?= )` `(?! )`. Not supported
//! (refused): backreferences, lookbehind, word boundaries.
//!
//! Matching is a backtracking VM in ECMAScript priority order (leftmost
//! alternative first, greedy or lazy as written), so capture positions are
//! the ones `std::regex` reports; failed (instruction, position) states are
//! memoised, which bounds the work to O(pattern x text).

#[derive(Debug, Clone)]
enum Inst {
    Byte(u8),
    Class(Vec<(u8, u8)>, bool), // ranges, negated
    Any,
    Split(usize, usize), // try the first, then the second
    Jmp(usize),
    Save(usize),
    Start,
    End,
    /// Lookahead: sub-program index, negated.
    Look(usize, bool),
    Match,
}

#[derive(Debug, Clone)]
enum Node {
    Empty,
    Byte(u8),
    Class(Vec<(u8, u8)>, bool),
    Any,
    Start,
    End,
    Group(Box<Node>, Option<usize>),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Node>, usize, Option<usize>, bool), // node, min, max, greedy
    Look(Box<Node>, bool),                         // (?= ) / (?! )
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Regex {
    prog: Vec<Inst>,
    /// Lookahead bodies, each a program ending in Match.
    subs: Vec<Vec<Inst>>,
    n_groups: usize,
    pub pattern: String,
}

/// A class: its byte ranges and whether it is negated.
type ClassSet = (Vec<(u8, u8)>, bool);

fn class_escape(c: u8) -> Option<ClassSet> {
    let space = vec![(b' ', b' '), (b'\t', b'\r')]; // \t \n \v \f \r
    let digit = vec![(b'0', b'9')];
    let word = vec![(b'0', b'9'), (b'A', b'Z'), (b'_', b'_'), (b'a', b'z')];
    match c {
        b's' => Some((space, false)),
        b'S' => Some((space, true)),
        b'd' => Some((digit, false)),
        b'D' => Some((digit, true)),
        b'w' => Some((word, false)),
        b'W' => Some((word, true)),
        _ => None,
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    n_groups: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn err(&self, msg: &str) -> String {
        format!("{msg} at offset {}", self.i)
    }

    fn alt(&mut self) -> Result<Node, String> {
        let mut alts = vec![self.concat()?];
        while self.peek() == Some(b'|') {
            self.i += 1;
            alts.push(self.concat()?);
        }
        Ok(if alts.len() == 1 { alts.pop().unwrap_or(Node::Empty) } else { Node::Alt(alts) })
    }

    fn concat(&mut self) -> Result<Node, String> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == b'|' || c == b')' {
                break;
            }
            let atom = self.atom()?;
            let atom = self.quantified(atom)?;
            items.push(atom);
        }
        Ok(Node::Concat(items))
    }

    fn number(&mut self) -> Option<usize> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).ok()?.parse().ok()
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, String> {
        let (min, max) = match self.peek() {
            Some(b'*') => (0, None),
            Some(b'+') => (1, None),
            Some(b'?') => (0, Some(1)),
            Some(b'{') => {
                let save = self.i;
                self.i += 1;
                match self.number() {
                    Some(n) => {
                        let max = if self.peek() == Some(b',') {
                            self.i += 1;
                            if self.peek() == Some(b'}') {
                                None
                            } else {
                                Some(self.number().ok_or_else(|| self.err("bad repetition"))?)
                            }
                        } else {
                            Some(n)
                        };
                        if self.peek() != Some(b'}') {
                            return Err(self.err("expecting '}'"));
                        }
                        if max.is_some_and(|m| m < n) {
                            return Err(self.err("repetition max < min"));
                        }
                        (n, max)
                    }
                    None => {
                        self.i = save;
                        return Err(self.err("bad repetition"));
                    }
                }
            }
            _ => return Ok(atom),
        };
        self.i += 1;
        let greedy = if self.peek() == Some(b'?') {
            self.i += 1;
            false
        } else {
            true
        };
        if matches!(atom, Node::Start | Node::End) {
            return Err(self.err("nothing to repeat"));
        }
        Ok(Node::Repeat(Box::new(atom), min, max, greedy))
    }

    fn hex(&mut self, n: usize) -> Result<u32, String> {
        let mut v = 0u32;
        for _ in 0..n {
            let c = self.peek().ok_or_else(|| self.err("short hex escape"))?;
            let d = (c as char).to_digit(16).ok_or_else(|| self.err("bad hex escape"))?;
            v = v * 16 + d;
            self.i += 1;
        }
        Ok(v)
    }

    /// An escape after '\\' (outside or inside a class): a byte or a class.
    fn escape(&mut self) -> Result<Result<u8, ClassSet>, String> {
        let c = self.peek().ok_or_else(|| self.err("trailing backslash"))?;
        self.i += 1;
        if let Some(cls) = class_escape(c) {
            return Ok(Err(cls));
        }
        let b = match c {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'f' => 0x0c,
            b'v' => 0x0b,
            b'0' => 0,
            b'x' => self.hex(2)? as u8,
            b'u' => {
                let v = self.hex(4)?;
                if v > 0xff {
                    return Err(self.err("\\u escape beyond a byte"));
                }
                v as u8
            }
            b'1'..=b'9' => return Err(self.err("backreferences are not supported")),
            b'b' | b'B' => return Err(self.err("word boundaries are not supported")),
            c if c.is_ascii_alphanumeric() => return Err(self.err("unknown escape")),
            c => c,
        };
        Ok(Ok(b))
    }

    fn class(&mut self) -> Result<Node, String> {
        // after '['
        let mut negated = false;
        if self.peek() == Some(b'^') {
            negated = true;
            self.i += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.peek().ok_or_else(|| self.err("unterminated class"))?;
            if c == b']' && !first {
                self.i += 1;
                break;
            }
            if c == b']' {
                // ECMAScript: "[]" is the empty class
                self.i += 1;
                break;
            }
            first = false;
            self.i += 1;
            let lo = if c == b'\\' {
                match self.escape()? {
                    Ok(b) => b,
                    Err((cls, neg)) => {
                        if neg {
                            ranges.extend(negate(&cls));
                        } else {
                            ranges.extend(cls);
                        }
                        continue;
                    }
                }
            } else {
                c
            };
            if self.peek() == Some(b'-') && self.s.get(self.i + 1).is_some_and(|&n| n != b']') {
                self.i += 1;
                let c2 = self.peek().ok_or_else(|| self.err("unterminated class"))?;
                self.i += 1;
                let hi = if c2 == b'\\' {
                    match self.escape()? {
                        Ok(b) => b,
                        Err(_) => return Err(self.err("class escape as a range end")),
                    }
                } else {
                    c2
                };
                if hi < lo {
                    return Err(self.err("range out of order"));
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Ok(Node::Class(ranges, negated))
    }

    fn atom(&mut self) -> Result<Node, String> {
        let c = self.peek().ok_or_else(|| self.err("unexpected end"))?;
        self.i += 1;
        match c {
            b'.' => Ok(Node::Any),
            b'^' => Ok(Node::Start),
            b'$' => Ok(Node::End),
            b'[' => self.class(),
            b'(' => {
                let group = if self.s[self.i..].starts_with(b"?:") {
                    self.i += 2;
                    None
                } else if self.s[self.i..].starts_with(b"?=") || self.s[self.i..].starts_with(b"?!") {
                    let neg = self.s[self.i + 1] == b'!';
                    self.i += 2;
                    let inner = self.alt()?;
                    if self.peek() != Some(b')') {
                        return Err(self.err("expecting ')'"));
                    }
                    self.i += 1;
                    return Ok(Node::Look(Box::new(inner), neg));
                } else if self.peek() == Some(b'?') {
                    return Err(self.err("lookbehind and named groups are not supported"));
                } else {
                    self.n_groups += 1;
                    Some(self.n_groups)
                };
                let inner = self.alt()?;
                if self.peek() != Some(b')') {
                    return Err(self.err("expecting ')'"));
                }
                self.i += 1;
                Ok(Node::Group(Box::new(inner), group))
            }
            b'\\' => Ok(match self.escape()? {
                Ok(b) => Node::Byte(b),
                Err((cls, neg)) => Node::Class(cls, neg),
            }),
            b'*' | b'+' | b'?' | b'{' => Err(self.err("nothing to repeat")),
            c => Ok(Node::Byte(c)),
        }
    }
}

fn negate(ranges: &[(u8, u8)]) -> Vec<(u8, u8)> {
    let mut out = Vec::new();
    let mut next = 0u16;
    let mut sorted = ranges.to_vec();
    sorted.sort();
    for (lo, hi) in sorted {
        if (lo as u16) > next {
            out.push((next as u8, lo - 1));
        }
        next = next.max(hi as u16 + 1);
    }
    if next <= 255 {
        out.push((next as u8, 255));
    }
    out
}

fn emit(node: &Node, prog: &mut Vec<Inst>, subs: &mut Vec<Vec<Inst>>) -> Result<(), String> {
    match node {
        Node::Empty => {}
        Node::Byte(b) => prog.push(Inst::Byte(*b)),
        Node::Class(r, n) => prog.push(Inst::Class(r.clone(), *n)),
        Node::Any => prog.push(Inst::Any),
        Node::Start => prog.push(Inst::Start),
        Node::End => prog.push(Inst::End),
        Node::Look(inner, neg) => {
            let mut sub = Vec::new();
            emit(inner, &mut sub, subs)?;
            sub.push(Inst::Match);
            subs.push(sub);
            prog.push(Inst::Look(subs.len() - 1, *neg));
        }
        Node::Group(inner, g) => {
            if let Some(g) = g {
                prog.push(Inst::Save(2 * g));
                emit(inner, prog, subs)?;
                prog.push(Inst::Save(2 * g + 1));
            } else {
                emit(inner, prog, subs)?;
            }
        }
        Node::Concat(items) => {
            for it in items {
                emit(it, prog, subs)?;
            }
        }
        Node::Alt(alts) => {
            let mut jumps = Vec::new();
            for (k, a) in alts.iter().enumerate() {
                if k + 1 < alts.len() {
                    let split = prog.len();
                    prog.push(Inst::Split(0, 0));
                    emit(a, prog, subs)?;
                    jumps.push(prog.len());
                    prog.push(Inst::Jmp(0));
                    let next = prog.len();
                    prog[split] = Inst::Split(split + 1, next);
                } else {
                    emit(a, prog, subs)?;
                }
            }
            let end = prog.len();
            for j in jumps {
                prog[j] = Inst::Jmp(end);
            }
        }
        Node::Repeat(inner, min, max, greedy) => {
            if *min > 1000 || max.is_some_and(|m| m > 1000) {
                return Err("repetition count over 1000".into());
            }
            for _ in 0..*min {
                emit(inner, prog, subs)?;
            }
            match max {
                None => {
                    // L: split(body, out); body; jmp L
                    let l = prog.len();
                    prog.push(Inst::Split(0, 0));
                    emit(inner, prog, subs)?;
                    prog.push(Inst::Jmp(l));
                    let out = prog.len();
                    prog[l] = if *greedy { Inst::Split(l + 1, out) } else { Inst::Split(out, l + 1) };
                }
                Some(m) => {
                    let mut splits = Vec::new();
                    for _ in *min..*m {
                        splits.push(prog.len());
                        prog.push(Inst::Split(0, 0));
                        emit(inner, prog, subs)?;
                    }
                    let out = prog.len();
                    for s in splits {
                        prog[s] = if *greedy { Inst::Split(s + 1, out) } else { Inst::Split(out, s + 1) };
                    }
                }
            }
        }
    }
    Ok(())
}

impl Regex {
    pub fn new(pattern: &str) -> Result<Regex, String> {
        let mut p = Parser { s: pattern.as_bytes(), i: 0, n_groups: 0 };
        let node = p.alt()?;
        if p.i != p.s.len() {
            return Err(p.err("unbalanced ')'"));
        }
        let mut prog = vec![Inst::Save(0)];
        let mut subs = Vec::new();
        emit(&node, &mut prog, &mut subs)?;
        prog.push(Inst::Save(1));
        prog.push(Inst::Match);
        Ok(Regex { prog, subs, n_groups: p.n_groups, pattern: pattern.to_string() })
    }

    /// Runs the program from `start` (a depth-first search in priority
    /// order with an explicit stack); returns the capture slots of the
    /// first match (with `full`, only a match ending at the end of the text
    /// counts). `visited` marks (instruction, position) states already
    /// explored: reaching one again means it failed (failure does not depend
    /// on captures or on the start), so it is shared across start positions.
    fn run(&self, text: &[u8], start: usize, full: bool, visited: &mut [u64]) -> Option<Vec<Option<usize>>> {
        self.run_prog(&self.prog, text, start, full, visited)
    }

    fn run_prog(
        &self,
        prog: &[Inst],
        text: &[u8],
        start: usize,
        full: bool,
        visited: &mut [u64],
    ) -> Option<Vec<Option<usize>>> {
        let width = text.len() + 1;
        let mut stack: Vec<(usize, usize, Vec<Option<usize>>)> = vec![(0, start, vec![None; 2 * (self.n_groups + 1)])];
        while let Some((mut pc, mut pos, mut caps)) = stack.pop() {
            loop {
                let bit = pc * width + pos;
                if visited[bit / 64] & (1u64 << (bit % 64)) != 0 {
                    break;
                }
                visited[bit / 64] |= 1u64 << (bit % 64);
                match &prog[pc] {
                    Inst::Byte(b) => {
                        if text.get(pos) != Some(b) {
                            break;
                        }
                        pc += 1;
                        pos += 1;
                    }
                    Inst::Class(r, neg) => match text.get(pos) {
                        Some(&c) if r.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *neg => {
                            pc += 1;
                            pos += 1;
                        }
                        _ => break,
                    },
                    Inst::Any => match text.get(pos) {
                        Some(&c) if c != b'\n' && c != b'\r' => {
                            pc += 1;
                            pos += 1;
                        }
                        _ => break,
                    },
                    Inst::Start => {
                        if pos != 0 {
                            break;
                        }
                        pc += 1;
                    }
                    Inst::End => {
                        if pos != text.len() {
                            break;
                        }
                        pc += 1;
                    }
                    Inst::Look(k, neg) => {
                        // captures inside a lookahead are not reported
                        let sub = &self.subs[*k];
                        let mut v = vec![0u64; (sub.len() * width).div_ceil(64)];
                        let found = self.run_prog(sub, text, pos, false, &mut v).is_some();
                        if found == *neg {
                            break;
                        }
                        pc += 1;
                    }
                    Inst::Jmp(t) => pc = *t,
                    Inst::Split(a, b) => {
                        stack.push((*b, pos, caps.clone()));
                        pc = *a;
                    }
                    Inst::Save(k) => {
                        caps[*k] = Some(pos);
                        pc += 1;
                    }
                    Inst::Match => {
                        if !full || pos == text.len() {
                            return Some(caps);
                        }
                        break;
                    }
                }
            }
        }
        None
    }

    fn visited_set(&self, text: &[u8]) -> Vec<u64> {
        vec![0u64; (self.prog.len() * (text.len() + 1)).div_ceil(64)]
    }

    /// `std::regex_match`: the whole text.
    pub fn full_match(&self, text: &[u8]) -> Option<Vec<Option<usize>>> {
        let mut visited = self.visited_set(text);
        self.run(text, 0, true, &mut visited)
    }

    /// `std::regex_search`: the leftmost match.
    pub fn search(&self, text: &[u8]) -> Option<Vec<Option<usize>>> {
        let mut visited = self.visited_set(text);
        (0..=text.len()).find_map(|s| self.run(text, s, false, &mut visited))
    }

    /// `llama_grammar_trigger_pattern::find`: where the constrained text
    /// starts — the first non-empty capture group of the match, else the
    /// match itself. Anchored patterns (`^…$`) are tried as a full match
    /// first.
    pub fn trigger_find(&self, text: &[u8]) -> Option<usize> {
        let start_of = |caps: Vec<Option<usize>>| -> usize {
            for g in 1..=self.n_groups {
                if let (Some(s), Some(e)) = (caps[2 * g], caps[2 * g + 1]) {
                    if e > s {
                        return s;
                    }
                }
            }
            caps[0].unwrap_or(0)
        };
        if self.pattern.starts_with('^') && self.pattern.ends_with('$') {
            if let Some(c) = self.full_match(text) {
                return Some(start_of(c));
            }
        }
        self.search(text).map(start_of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(p: &str, t: &str) -> Option<usize> {
        Regex::new(p).unwrap().trigger_find(t.as_bytes())
    }

    #[test]
    fn trigger_patterns_find_where_the_constrained_text_starts() {
        assert_eq!(find("[\\s\\S]*?(<tool_call>)[\\s\\S]*", "hello <tool_call>{"), Some(6));
        assert_eq!(find("[\\s\\S]*?(<tool_call>)[\\s\\S]*", "hello <tool"), None);
        assert_eq!(find("^(\\{\\s*\"name\")[\\s\\S]*$", "{ \"name\": 1"), Some(0));
        assert_eq!(find("^(\\{\\s*\"name\")[\\s\\S]*$", "x{ \"name\""), None);
        assert_eq!(find("a(b*)c", "xxac"), Some(2)); // empty group: the match start
        assert_eq!(find("(?:ab|a)(c)", "zabc"), Some(3));
        assert_eq!(find("x{2,3}?(y)", "xxxy"), Some(3));
        assert_eq!(find("[^a-c\\d]+(z)", "ab9qz"), Some(4));
        assert_eq!(find(".(z)", "\nz"), None); // . does not match a newline
        assert_eq!(find(">>>(?!all)", "x>>>all >>>get"), Some(8));
        assert_eq!(find("a(?=b)(b)", "acab"), Some(3));
    }

    #[test]
    fn priorities_are_ecmascript() {
        let r = Regex::new("(a|ab)(c|bcd)(d*)").unwrap();
        let c = r.search(b"abcd").unwrap();
        assert_eq!((c[2], c[3]), (Some(0), Some(1))); // "a" first
        assert_eq!((c[4], c[5]), (Some(1), Some(4))); // then "bcd"
        let r = Regex::new("a*?(a*)").unwrap();
        let c = r.search(b"aaa").unwrap();
        assert_eq!((c[2], c[3]), (Some(0), Some(3)));
    }

    #[test]
    fn unsupported_and_malformed_patterns_are_refused() {
        for p in ["(a", "a)", "*a", "[a", "a{2,1}", "(?<=a)", "\\1", "\\q"] {
            assert!(Regex::new(p).is_err(), "{p}");
        }
        assert!(Regex::new("(a*)*b").unwrap().search(&[b'a'; 200]).is_none()); // no blow-up
    }

    #[test]
    fn long_texts_do_not_exhaust_the_stack() {
        let text = vec![b'x'; 200_000];
        assert_eq!(find("[\\s\\S]*?(<tool_call>)[\\s\\S]*", std::str::from_utf8(&text).unwrap()), None);
        let mut t2 = text.clone();
        t2.extend_from_slice(b"<tool_call>");
        assert_eq!(Regex::new("^([\\s\\S]*)$").unwrap().full_match(&t2).map(|c| c[3]), Some(Some(t2.len())));
    }
}

#[cfg(test)]
mod parity {
    use super::*;

    fn unescape(l: &str) -> Vec<u8> {
        let b = l.as_bytes();
        let mut t = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && i + 1 < b.len() {
                t.push(match b[i + 1] {
                    b'n' => b'\n',
                    b't' => b'\t',
                    c => c,
                });
                i += 2;
            } else {
                t.push(b[i]);
                i += 1;
            }
        }
        t
    }

    /// The trigger-pattern cases of ffi-tests/regex_cases.txt find what
    /// std::regex finds (golden/regex_find.txt, from regex_find_ref.cpp).
    #[test]
    fn regex_find_equals_std_regex() {
        let cases = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/ffi-tests/regex_cases.txt")).unwrap();
        let mut out = String::new();
        for (n, line) in cases.lines().skip(1).enumerate() {
            let (p, t) = line.split_once('\t').unwrap();
            let pattern = String::from_utf8(unescape(p)).unwrap();
            let found =
                Regex::new(&pattern).unwrap_or_else(|e| panic!("case {n}: {pattern}: {e}")).trigger_find(&unescape(t));
            out.push_str(&format!("case {n}: {}\n", found.map_or(-1, |v| v as i64)));
        }
        let golden =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/ffi-tests/golden/regex_find.txt")).unwrap();
        assert_eq!(out, golden);
    }
}
