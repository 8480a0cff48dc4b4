//! A small backtracking regex engine over code units (`u32`), with the
//! semantics of the reference's fallback: C++ `std::regex` / `std::wregex`
//! in ECMAScript mode with the "C" locale, used through `regex_iterator`.
//!
//! Supported: literals, `.`, classes `[...]` (negation, ranges, `\s \S \d \D
//! \w \W` and escapes inside), `\s \S \d \D \w \W \b \B`, `^ $`, groups
//! `( )`, `(?: )`, lookaheads `(?= )`, `(?! )`, alternation, and the
//! quantifiers `* + ? {n} {n,} {n,m}` (greedy, or lazy with a trailing `?`).
//! Alternatives are tried in order (first match wins, not longest), as in
//! ECMAScript. `\s` is ASCII whitespace, `\d` ASCII digits, `\w` `[A-Za-z0-9_]`
//! (the "C" locale); the callers map other whitespace to U+000B first, as the
//! reference does.

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
struct Class {
    ranges: Vec<(u32, u32)>,
    space: bool,
    not_space: bool,
    digit: bool,
    not_digit: bool,
    word: bool,
    not_word: bool,
    negated: bool,
}

fn is_space(c: u32) -> bool {
    matches!(c, 0x20 | 0x09..=0x0d)
}
fn is_digit(c: u32) -> bool {
    (0x30..=0x39).contains(&c)
}
fn is_word(c: u32) -> bool {
    matches!(c, 0x30..=0x39 | 0x41..=0x5a | 0x61..=0x7a | 0x5f)
}

impl Class {
    fn new() -> Class {
        Class {
            ranges: Vec::new(),
            space: false,
            not_space: false,
            digit: false,
            not_digit: false,
            word: false,
            not_word: false,
            negated: false,
        }
    }
    #[inline]
    fn matches(&self, c: u32) -> bool {
        let hit = self.ranges.iter().any(|&(a, b)| a <= c && c <= b)
            || (self.space && is_space(c))
            || (self.not_space && !is_space(c))
            || (self.digit && is_digit(c))
            || (self.not_digit && !is_digit(c))
            || (self.word && is_word(c))
            || (self.not_word && !is_word(c));
        hit != self.negated
    }
}

#[derive(Debug, Clone)]
enum Node {
    Empty,
    Char(u32),
    Class(Box<Class>),
    Any,
    Start,
    End,
    WordBoundary(bool),
    Look(Box<Node>, bool),
    /// `(?=X)Y` with X and Y single characters: one character matching both
    /// (so that repeating it needs no recursion).
    Both(Box<Node>, Box<Node>),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: u32,
        greedy: bool,
    },
}

impl Node {
    fn single(&self) -> bool {
        matches!(self, Node::Char(_) | Node::Class(_) | Node::Any | Node::Both(..))
    }

    /// Whether matching can recurse once per input character (a repeated
    /// node that is not a single character).
    fn deep(&self) -> bool {
        match self {
            Node::Repeat { node, max, .. } => (!node.single() && *max > 8) || node.deep(),
            Node::Look(n, _) => n.deep(),
            Node::Concat(v) | Node::Alt(v) => v.iter().any(Node::deep),
            _ => false,
        }
    }
}

pub struct Regex {
    root: Node,
    /// Matching may recurse once per input character (see `deep`).
    pub deep: bool,
}

struct Parser<'a> {
    p: &'a [u32],
    i: usize,
}

const fn c(ch: char) -> u32 {
    ch as u32
}

impl Parser<'_> {
    fn peek(&self) -> Option<u32> {
        self.p.get(self.i).copied()
    }
    fn err(&self, msg: &str) -> Error {
        Error::model(format!("regex: {msg} at position {}", self.i))
    }
    fn alt(&mut self) -> Result<Node> {
        let mut alts = vec![self.concat()?];
        while self.peek() == Some(c('|')) {
            self.i += 1;
            alts.push(self.concat()?);
        }
        Ok(if alts.len() == 1 { alts.pop().unwrap() } else { Node::Alt(alts) })
    }
    fn concat(&mut self) -> Result<Node> {
        let mut items = Vec::new();
        while let Some(ch) = self.peek() {
            if ch == c('|') || ch == c(')') {
                break;
            }
            let atom = self.atom()?;
            let atom = self.quantifier(atom)?;
            items.push(atom);
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap(),
            2 if matches!(&items[0], Node::Look(x, false) if x.single()) && items[1].single() => {
                let second = items.pop().unwrap();
                let Some(Node::Look(first, _)) = items.pop() else { unreachable!() };
                Node::Both(first, Box::new(second))
            }
            _ => Node::Concat(items),
        })
    }
    fn number(&mut self) -> Option<u32> {
        let st = self.i;
        let mut v: u32 = 0;
        while let Some(d) = self.peek().filter(|&d| is_digit(d)) {
            v = v.saturating_mul(10).saturating_add(d - 0x30);
            self.i += 1;
        }
        (self.i > st).then_some(v)
    }
    fn quantifier(&mut self, atom: Node) -> Result<Node> {
        let (min, max) = match self.peek() {
            Some(x) if x == c('*') => (0, u32::MAX),
            Some(x) if x == c('+') => (1, u32::MAX),
            Some(x) if x == c('?') => (0, 1),
            Some(x) if x == c('{') => {
                let save = self.i;
                self.i += 1;
                let Some(lo) = self.number() else {
                    self.i = save;
                    return Ok(atom);
                };
                let hi = if self.peek() == Some(c(',')) {
                    self.i += 1;
                    self.number().unwrap_or(u32::MAX)
                } else {
                    lo
                };
                if self.peek() != Some(c('}')) {
                    return Err(self.err("bad {} quantifier"));
                }
                (lo, hi)
            }
            _ => return Ok(atom),
        };
        self.i += 1;
        let greedy = if self.peek() == Some(c('?')) {
            self.i += 1;
            false
        } else {
            true
        };
        Ok(Node::Repeat { node: Box::new(atom), min, max, greedy })
    }
    fn escape_char(&mut self, e: u32) -> Result<u32> {
        Ok(match char::from_u32(e).unwrap_or('\0') {
            'n' => 0x0a,
            'r' => 0x0d,
            't' => 0x09,
            'v' => 0x0b,
            'f' => 0x0c,
            '0' => 0,
            'x' | 'u' => {
                let n = if e == c('x') { 2 } else { 4 };
                let mut v = 0u32;
                for _ in 0..n {
                    let d = self
                        .peek()
                        .and_then(|d| char::from_u32(d)?.to_digit(16))
                        .ok_or_else(|| self.err("bad hex escape"))?;
                    v = v * 16 + d;
                    self.i += 1;
                }
                v
            }
            _ => e,
        })
    }
    fn atom(&mut self) -> Result<Node> {
        let ch = self.peek().ok_or_else(|| self.err("unexpected end"))?;
        self.i += 1;
        match char::from_u32(ch).unwrap_or('\0') {
            '(' => {
                let mut look = None;
                if self.peek() == Some(c('?')) {
                    match self.p.get(self.i + 1).copied() {
                        Some(x) if x == c(':') => {}
                        Some(x) if x == c('=') => look = Some(false),
                        Some(x) if x == c('!') => look = Some(true),
                        _ => return Err(self.err("unsupported group")),
                    }
                    self.i += 2;
                }
                let inner = self.alt()?;
                if self.peek() != Some(c(')')) {
                    return Err(self.err("missing )"));
                }
                self.i += 1;
                Ok(match look {
                    Some(neg) => Node::Look(Box::new(inner), neg),
                    None => inner,
                })
            }
            '[' => self.class(),
            '.' => Ok(Node::Any),
            '^' => Ok(Node::Start),
            '$' => Ok(Node::End),
            '\\' => {
                let e = self.peek().ok_or_else(|| self.err("trailing backslash"))?;
                self.i += 1;
                let mut cl = Class::new();
                match char::from_u32(e).unwrap_or('\0') {
                    's' => cl.space = true,
                    'S' => cl.not_space = true,
                    'd' => cl.digit = true,
                    'D' => cl.not_digit = true,
                    'w' => cl.word = true,
                    'W' => cl.not_word = true,
                    'b' => return Ok(Node::WordBoundary(true)),
                    'B' => return Ok(Node::WordBoundary(false)),
                    _ => return Ok(Node::Char(self.escape_char(e)?)),
                }
                Ok(Node::Class(Box::new(cl)))
            }
            _ => Ok(Node::Char(ch)),
        }
    }
    fn class(&mut self) -> Result<Node> {
        let mut cl = Class::new();
        if self.peek() == Some(c('^')) {
            cl.negated = true;
            self.i += 1;
        }
        let mut first = true;
        loop {
            let ch = self.peek().ok_or_else(|| self.err("missing ]"))?;
            if ch == c(']') && !first {
                self.i += 1;
                break;
            }
            first = false;
            self.i += 1;
            let lo = if ch == c('\\') {
                let e = self.peek().ok_or_else(|| self.err("trailing backslash"))?;
                self.i += 1;
                match char::from_u32(e).unwrap_or('\0') {
                    's' => {
                        cl.space = true;
                        continue;
                    }
                    'S' => {
                        cl.not_space = true;
                        continue;
                    }
                    'd' => {
                        cl.digit = true;
                        continue;
                    }
                    'D' => {
                        cl.not_digit = true;
                        continue;
                    }
                    'w' => {
                        cl.word = true;
                        continue;
                    }
                    'W' => {
                        cl.not_word = true;
                        continue;
                    }
                    'b' => 0x08,
                    _ => self.escape_char(e)?,
                }
            } else {
                ch
            };
            // a range lo-hi (a '-' before ']' is a literal)
            if self.peek() == Some(c('-')) && self.p.get(self.i + 1).is_some_and(|&n| n != c(']')) {
                self.i += 1;
                let h = self.peek().unwrap();
                self.i += 1;
                let hi = if h == c('\\') {
                    let e = self.peek().ok_or_else(|| self.err("trailing backslash"))?;
                    self.i += 1;
                    self.escape_char(e)?
                } else {
                    h
                };
                if hi < lo {
                    return Err(self.err("bad range"));
                }
                cl.ranges.push((lo, hi));
            } else {
                cl.ranges.push((lo, lo));
            }
        }
        Ok(Node::Class(Box::new(cl)))
    }
}

type K<'k> = &'k mut dyn FnMut(usize) -> bool;

impl Regex {
    pub fn new(pattern: &[u32]) -> Result<Regex> {
        let mut p = Parser { p: pattern, i: 0 };
        let root = p.alt()?;
        if p.i != pattern.len() {
            return Err(p.err("unbalanced )"));
        }
        let deep = root.deep();
        Ok(Regex { root, deep })
    }

    #[inline]
    fn single(node: &Node, t: &[u32], pos: usize) -> bool {
        let Some(&ch) = t.get(pos) else { return false };
        match node {
            Node::Char(x) => *x == ch,
            Node::Class(cl) => cl.matches(ch),
            Node::Any => !matches!(ch, 0x0a | 0x0d | 0x2028 | 0x2029),
            Node::Both(a, b) => Self::single(a, t, pos) && Self::single(b, t, pos),
            _ => false,
        }
    }

    fn m(node: &Node, t: &[u32], pos: usize, k: K) -> bool {
        match node {
            Node::Empty => k(pos),
            Node::Char(_) | Node::Class(_) | Node::Any | Node::Both(..) => Self::single(node, t, pos) && k(pos + 1),
            Node::Start => pos == 0 && k(pos),
            Node::End => pos == t.len() && k(pos),
            Node::WordBoundary(want) => {
                let before = pos > 0 && is_word(t[pos - 1]);
                let after = pos < t.len() && is_word(t[pos]);
                ((before != after) == *want) && k(pos)
            }
            Node::Look(inner, neg) => {
                let found = Self::m(inner, t, pos, &mut |_| true);
                (found != *neg) && k(pos)
            }
            Node::Concat(items) => Self::seq(items, t, pos, k),
            Node::Alt(alts) => alts.iter().any(|a| Self::m(a, t, pos, k)),
            Node::Repeat { node, min, max, greedy } => {
                if node.single() {
                    // iterative: count the run, then try lengths in order
                    let mut n = 0usize;
                    while (n as u64) < *max as u64 && Self::single(node, t, pos + n) {
                        n += 1;
                    }
                    let min = *min as usize;
                    if n < min {
                        return false;
                    }
                    if *greedy {
                        (min..=n).rev().any(|j| k(pos + j))
                    } else {
                        (min..=n).any(|j| k(pos + j))
                    }
                } else {
                    Self::rep(node, *min, *max, *greedy, 0, t, pos, k)
                }
            }
        }
    }

    fn seq(items: &[Node], t: &[u32], pos: usize, k: K) -> bool {
        match items.split_first() {
            None => k(pos),
            Some((first, rest)) => Self::m(first, t, pos, &mut |p| Self::seq(rest, t, p, k)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[allow(clippy::if_same_then_else, reason = "the order of the alternatives is the point: greedy or lazy")]
    fn rep(node: &Node, min: u32, max: u32, greedy: bool, count: u32, t: &[u32], pos: usize, k: K) -> bool {
        let more = |k: K| {
            count < max
                && Self::m(node, t, pos, &mut |p| {
                    // an empty iteration past the minimum cannot loop
                    if p == pos && count >= min {
                        return false;
                    }
                    Self::rep(node, min, max, greedy, count + 1, t, p, k)
                })
        };
        if count < min {
            return more(k);
        }
        if greedy {
            more(k) || k(pos)
        } else {
            k(pos) || more(k)
        }
    }

    /// The end of a match starting exactly at `pos`, if any (`non_empty`
    /// rejects empty matches).
    pub fn match_at(&self, t: &[u32], pos: usize, non_empty: bool) -> Option<usize> {
        let mut end = None;
        Self::m(&self.root, t, pos, &mut |e| {
            if non_empty && e == pos {
                return false;
            }
            end = Some(e);
            true
        });
        end
    }

    /// Successive matches (start, end) over `t`, as `std::regex_iterator`.
    pub fn find_iter(&self, t: &[u32]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut from = 0;
        let mut non_empty = false;
        while from <= t.len() {
            let mut found = None;
            for s in from..=t.len() {
                if let Some(e) = self.match_at(t, s, non_empty && s == from) {
                    found = Some((s, e));
                    break;
                }
            }
            let Some((s, e)) = found else { break };
            out.push((s, e));
            if e == s {
                // an empty match: next try a non-empty one at the same place
                non_empty = true;
                from = e;
                if e == t.len() {
                    break;
                }
            } else {
                non_empty = false;
                from = e;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(p: &str, t: &str) -> Vec<String> {
        let re = Regex::new(&p.chars().map(|c| c as u32).collect::<Vec<_>>()).unwrap();
        let tv: Vec<u32> = t.chars().map(|c| c as u32).collect();
        re.find_iter(&tv).into_iter().map(|(s, e)| t.chars().skip(s).take(e - s).collect()).collect()
    }

    #[test]
    fn ecmascript_basics() {
        assert_eq!(find("[0-9][0-9][0-9]", "12345678"), ["123", "456"]);
        assert_eq!(find("\\s+$", "ab  \t"), ["  \t"]);
        assert_eq!(find("'s|'t| ?[a-z]+", "it's a"), ["it", "'s", " a"]);
        assert_eq!(find("\\s+(?!\\S)", "a   b"), ["  "]);
        assert_eq!(find("[\\$\\+<=>\\^~\\|`]+", "a+=b|c"), ["+=", "|"]);
        assert_eq!(find("\\d{1,3}(?=(?:\\d{3})*\\b)", "1234567"), ["1", "234", "567"]);
        assert_eq!(find("[^\\n]+|[\\n]+", "ab\n\ncd"), ["ab", "\n\n", "cd"]);
        assert_eq!(find("a*?b", "aab"), ["aab"]);
        // a lookahead + one character, repeated: one predicate, no recursion
        assert_eq!(find("((?=[a-z])([^b]))+", "aacbd"), ["aac", "d"]);
        let re = Regex::new(&"((?=[a-z])([^b]))+".chars().map(|c| c as u32).collect::<Vec<_>>()).unwrap();
        assert!(!re.deep);
        let long: Vec<u32> = std::iter::repeat_n('a' as u32, 1_000_000).collect();
        assert_eq!(re.find_iter(&long), [(0, 1_000_000)]);
    }
}
