//! The GBNF parser: the reference's grammar syntax (llama-grammar.cpp)
//! compiled into the same rule representation.
//!
//! Syntax: `name ::= alternatives` rules separated by newlines; alternatives
//! `a | b`; sequences of string literals `"…"`, character classes `[a-z]`,
//! `[^…]`, any character `.`, rule references, groups `( … )`, tokens
//! `<[123]>` / `<text>` and their negation `!<…>`, repetitions `* + ?
//! {m} {m,} {m,n}`; escapes `\x.. \u.... \U........ \t \r \n \\ \" \[ \] \-`;
//! comments `# …` to the end of the line. Newlines end a rule except inside
//! groups.
//!
//! Repetitions are rewritten into helper rules exactly as the reference does
//! (so rule ids and therefore stacks are the same), with the same limits
//! (2000 repetitions; 2000 for the product of nested repetitions).
//!
//! Errors carry the line and column (1-based) where parsing stopped.

use super::super::VocabView;
use std::collections::BTreeMap;
use std::fmt;

/// `llama_gretype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ElemType {
    End = 0,
    Alt = 1,
    RuleRef = 2,
    Char = 3,
    CharNot = 4,
    CharRngUpper = 5,
    CharAlt = 6,
    CharAny = 7,
    Token = 8,
    TokenNot = 9,
}

/// `llama_grammar_element`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Element {
    pub ty: ElemType,
    pub value: u32,
}

impl Element {
    pub const fn new(ty: ElemType, value: u32) -> Element {
        Element { ty, value }
    }
}

pub type Rule = Vec<Element>;

const MAX_REPETITION_THRESHOLD: u64 = 2000;

/// A parse error: what was expected and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
        }
    }
}

impl std::error::Error for ParseError {}

/// A parsed grammar: rules indexed by symbol id, and the symbol names.
#[derive(Debug, Clone, Default)]
pub struct ParsedGrammar {
    pub symbol_ids: BTreeMap<String, u32>,
    pub rules: Vec<Rule>,
}

/// Parses GBNF text (no vocabulary: `<text>` token references are refused,
/// `<[id]>` work).
pub fn parse(src: &[u8]) -> Result<ParsedGrammar, ParseError> {
    parse_with_vocab(src, None)
}

/// Parses GBNF text, tokenizing `<text>` references with `vocab`.
pub fn parse_with_vocab(src: &[u8], vocab: Option<&dyn VocabView>) -> Result<ParsedGrammar, ParseError> {
    // a C string: the text stops at its first NUL; a NUL sentinel follows
    let end = src.iter().position(|&b| b == 0).unwrap_or(src.len());
    let mut text = src[..end].to_vec();
    text.push(0);
    let mut p = Parser { src: &text, vocab, g: ParsedGrammar::default() };
    p.parse_all()?;
    Ok(p.g)
}

struct Parser<'a> {
    src: &'a [u8],
    vocab: Option<&'a dyn VocabView>,
    g: ParsedGrammar,
}

fn is_digit(c: u8) -> bool {
    c.is_ascii_digit()
}

fn is_word_char(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_uppercase() || c == b'-' || is_digit(c)
}

impl<'a> Parser<'a> {
    fn at(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn err(&self, pos: usize, msg: impl Into<String>) -> ParseError {
        let pos = pos.min(self.src.len() - 1);
        let before = &self.src[..pos];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&self.src[line_start..pos]).chars().count() + 1;
        ParseError { line, column, message: msg.into() }
    }

    /// "… at <rest of the line>", as the reference's messages quote the text.
    fn err_at(&self, pos: usize, what: &str) -> ParseError {
        let rest = &self.src[pos.min(self.src.len() - 1)..self.src.len() - 1];
        let rest_line = rest.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let shown: String = String::from_utf8_lossy(rest_line).chars().take(40).collect();
        if shown.is_empty() {
            self.err(pos, format!("{what} at end of input"))
        } else {
            self.err(pos, format!("{what} at '{shown}'"))
        }
    }

    fn get_symbol_id(&mut self, name: &[u8]) -> u32 {
        let next = self.g.symbol_ids.len() as u32;
        *self.g.symbol_ids.entry(String::from_utf8_lossy(name).into_owned()).or_insert(next)
    }

    fn generate_symbol_id(&mut self, base: &str) -> u32 {
        let next = self.g.symbol_ids.len() as u32;
        self.g.symbol_ids.insert(format!("{base}_{next}"), next);
        next
    }

    fn add_rule(&mut self, id: u32, rule: Rule) {
        let id = id as usize;
        if self.g.rules.len() <= id {
            self.g.rules.resize(id + 1, Vec::new());
        }
        self.g.rules[id] = rule;
    }

    fn parse_space(&self, mut pos: usize, newline_ok: bool) -> usize {
        loop {
            let c = self.at(pos);
            if c == b' ' || c == b'\t' || (newline_ok && (c == b'\r' || c == b'\n')) {
                pos += 1;
            } else if c == b'#' {
                while self.at(pos) != 0 && self.at(pos) != b'\r' && self.at(pos) != b'\n' {
                    pos += 1;
                }
            } else {
                return pos;
            }
        }
    }

    fn parse_name(&self, src: usize) -> Result<usize, ParseError> {
        let mut pos = src;
        while is_word_char(self.at(pos)) {
            pos += 1;
        }
        if pos == src {
            return Err(self.err_at(src, "expecting name"));
        }
        Ok(pos)
    }

    fn parse_int(&self, src: usize) -> Result<usize, ParseError> {
        let mut pos = src;
        while is_digit(self.at(pos)) {
            pos += 1;
        }
        if pos == src {
            return Err(self.err_at(src, "expecting integer"));
        }
        Ok(pos)
    }

    fn parse_hex(&self, src: usize, size: usize) -> Result<(u32, usize), ParseError> {
        let mut pos = src;
        let end = src + size;
        let mut value = 0u32;
        while pos < end && self.at(pos) != 0 {
            let c = self.at(pos);
            let d = match c {
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                b'0'..=b'9' => c - b'0',
                _ => break,
            };
            value = (value << 4) + d as u32;
            pos += 1;
        }
        if pos != end {
            return Err(self.err_at(src, &format!("expecting {size} hex chars")));
        }
        Ok((value, pos))
    }

    /// decode_utf8 of the grammar text (assumes valid UTF-8, stops at NUL).
    fn decode_utf8(&self, src: usize) -> (u32, usize) {
        const LOOKUP: [usize; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];
        let first = self.at(src);
        let len = LOOKUP[(first >> 4) as usize];
        let mask = ((1u32 << (8 - len)) - 1) as u8;
        let mut value = (first & mask) as u32;
        let end = src + len;
        let mut pos = src + 1;
        while pos < end && self.at(pos) != 0 {
            value = (value << 6) + (self.at(pos) & 0x3f) as u32;
            pos += 1;
        }
        (value, pos)
    }

    fn parse_char(&self, src: usize) -> Result<(u32, usize), ParseError> {
        if self.at(src) == b'\\' {
            match self.at(src + 1) {
                b'x' => self.parse_hex(src + 2, 2),
                b'u' => self.parse_hex(src + 2, 4),
                b'U' => self.parse_hex(src + 2, 8),
                b't' => Ok((b'\t' as u32, src + 2)),
                b'r' => Ok((b'\r' as u32, src + 2)),
                b'n' => Ok((b'\n' as u32, src + 2)),
                c @ (b'\\' | b'"' | b'[' | b']' | b'-') => Ok((c as u32, src + 2)),
                _ => Err(self.err_at(src, "unknown escape")),
            }
        } else if self.at(src) != 0 {
            Ok(self.decode_utf8(src))
        } else {
            Err(self.err(src, "unexpected end of input"))
        }
    }

    fn parse_token(&self, src: usize) -> Result<(u32, usize), ParseError> {
        let mut pos = src;
        if self.at(pos) != b'<' {
            return Err(self.err_at(pos, "expecting '<'"));
        }
        pos += 1;
        if self.at(pos) == b'[' {
            pos += 1;
            let int_end = self.parse_int(pos)?;
            let digits = std::str::from_utf8(&self.src[pos..int_end]).unwrap_or("0");
            let id: u64 = digits.parse().map_err(|_| self.err_at(pos, "parsed token id is too big"))?;
            if id > u32::MAX as u64 {
                return Err(self.err_at(pos, "parsed token id is too big"));
            }
            pos = int_end;
            if self.at(pos) != b']' {
                return Err(self.err_at(pos, "expecting ']'"));
            }
            pos += 1;
            if self.at(pos) != b'>' {
                return Err(self.err_at(pos, "expecting '>'"));
            }
            return Ok((id as u32, pos + 1));
        }
        let Some(vocab) = self.vocab else {
            return Err(self.err_at(src, "no vocab to parse token"));
        };
        while self.at(pos) != 0 && self.at(pos) != b'>' {
            pos += 1;
        }
        if self.at(pos) != b'>' {
            return Err(self.err_at(pos, "expecting '>'"));
        }
        pos += 1;
        let toks = vocab.tokenize_special(&self.src[src..pos]);
        if toks.len() != 1 {
            return Err(self.err(src, format!("invalid token '{}'", String::from_utf8_lossy(&self.src[src..pos]))));
        }
        Ok((toks[0] as u32, pos))
    }

    fn parse_alternates(
        &mut self,
        src: usize,
        rule_name: &str,
        rule_id: u32,
        is_nested: bool,
    ) -> Result<usize, ParseError> {
        let mut rule = Vec::new();
        let mut pos = self.parse_sequence(src, rule_name, &mut rule, is_nested)?;
        while self.at(pos) == b'|' {
            rule.push(Element::new(ElemType::Alt, 0));
            pos = self.parse_space(pos + 1, true);
            pos = self.parse_sequence(pos, rule_name, &mut rule, is_nested)?;
        }
        rule.push(Element::new(ElemType::End, 0));
        self.add_rule(rule_id, rule);
        Ok(pos)
    }

    #[allow(clippy::too_many_arguments)]
    fn handle_repetitions(
        &mut self,
        pos: usize,
        rule_name: &str,
        rule: &mut Rule,
        last_sym_start: usize,
        n_prev_rules: &mut u64,
        min_times: u64,
        max_times: u64,
    ) -> Result<(), ParseError> {
        let no_max = max_times == u64::MAX;
        if last_sym_start == rule.len() {
            return Err(self.err_at(pos, "expecting preceding item to */+/?/{"));
        }
        let prev_rule: Rule = rule[last_sym_start..].to_vec();
        let mut total_rules = 1u64;
        if !no_max && max_times > 0 {
            total_rules = max_times;
        } else if min_times > 0 {
            total_rules = min_times;
        }
        if n_prev_rules.saturating_mul(total_rules) > MAX_REPETITION_THRESHOLD {
            return Err(self.err(
                pos,
                "number of rules that are going to be repeated multiplied by the new repetition exceeds sane defaults, please reduce the number of repetitions or rule complexity",
            ));
        }
        if min_times == 0 {
            rule.truncate(last_sym_start);
        } else {
            for _ in 1..min_times {
                rule.extend_from_slice(&prev_rule);
            }
        }
        let mut last_rec_rule_id = 0u32;
        let n_opt = if no_max { 1 } else { max_times - min_times };
        let mut rec_rule = prev_rule.clone();
        for i in 0..n_opt {
            rec_rule.truncate(prev_rule.len());
            let rec_rule_id = self.generate_symbol_id(rule_name);
            if i > 0 || no_max {
                rec_rule.push(Element::new(ElemType::RuleRef, if no_max { rec_rule_id } else { last_rec_rule_id }));
            }
            rec_rule.push(Element::new(ElemType::Alt, 0));
            rec_rule.push(Element::new(ElemType::End, 0));
            self.add_rule(rec_rule_id, rec_rule.clone());
            last_rec_rule_id = rec_rule_id;
        }
        if n_opt > 0 {
            rule.push(Element::new(ElemType::RuleRef, last_rec_rule_id));
        }
        *n_prev_rules *= total_rules;
        Ok(())
    }

    fn parse_sequence(
        &mut self,
        src: usize,
        rule_name: &str,
        rule: &mut Rule,
        is_nested: bool,
    ) -> Result<usize, ParseError> {
        let mut last_sym_start = rule.len();
        let mut pos = src;
        let mut n_prev_rules = 1u64;
        while self.at(pos) != 0 {
            let c = self.at(pos);
            if c == b'"' {
                pos += 1;
                last_sym_start = rule.len();
                n_prev_rules = 1;
                while self.at(pos) != b'"' {
                    if self.at(pos) == 0 {
                        return Err(self.err(pos, "unexpected end of input (unterminated string literal)"));
                    }
                    let (ch, next) = self.parse_char(pos)?;
                    pos = next;
                    rule.push(Element::new(ElemType::Char, ch));
                }
                pos = self.parse_space(pos + 1, is_nested);
            } else if c == b'[' {
                pos += 1;
                let mut start_type = ElemType::Char;
                if self.at(pos) == b'^' {
                    pos += 1;
                    start_type = ElemType::CharNot;
                }
                last_sym_start = rule.len();
                n_prev_rules = 1;
                while self.at(pos) != b']' {
                    if self.at(pos) == 0 {
                        return Err(self.err(pos, "unexpected end of input (unterminated character class)"));
                    }
                    let (ch, next) = self.parse_char(pos)?;
                    pos = next;
                    let ty = if last_sym_start < rule.len() { ElemType::CharAlt } else { start_type };
                    rule.push(Element::new(ty, ch));
                    if self.at(pos) == b'-' && self.at(pos + 1) != b']' {
                        if self.at(pos + 1) == 0 {
                            return Err(self.err(pos + 1, "unexpected end of input (unterminated character range)"));
                        }
                        let (end_ch, next) = self.parse_char(pos + 1)?;
                        pos = next;
                        rule.push(Element::new(ElemType::CharRngUpper, end_ch));
                    }
                }
                pos = self.parse_space(pos + 1, is_nested);
            } else if c == b'<' || c == b'!' {
                let mut ty = ElemType::Token;
                if c == b'!' {
                    ty = ElemType::TokenNot;
                    pos += 1;
                }
                let (tok, end) = self.parse_token(pos)?;
                last_sym_start = rule.len();
                n_prev_rules = 1;
                rule.push(Element::new(ty, tok));
                pos = self.parse_space(end, is_nested);
            } else if is_word_char(c) {
                let name_end = self.parse_name(pos)?;
                let id = self.get_symbol_id(&self.src[pos..name_end]);
                pos = self.parse_space(name_end, is_nested);
                last_sym_start = rule.len();
                n_prev_rules = 1;
                rule.push(Element::new(ElemType::RuleRef, id));
            } else if c == b'(' {
                let open = pos;
                pos = self.parse_space(pos + 1, true);
                let n_rules_before = self.g.symbol_ids.len() as u32;
                let sub_rule_id = self.generate_symbol_id(rule_name);
                pos = self.parse_alternates(pos, rule_name, sub_rule_id, true)?;
                n_prev_rules = 1u64.max((self.g.symbol_ids.len() as u32).wrapping_sub(n_rules_before) as u64);
                last_sym_start = rule.len();
                rule.push(Element::new(ElemType::RuleRef, sub_rule_id));
                if self.at(pos) != b')' {
                    let mut e = self.err_at(pos, "expecting ')'");
                    let o = self.err(open, "");
                    e.message = format!("{} (group opened at line {}, column {})", e.message, o.line, o.column);
                    return Err(e);
                }
                pos = self.parse_space(pos + 1, is_nested);
            } else if c == b'.' {
                last_sym_start = rule.len();
                n_prev_rules = 1;
                rule.push(Element::new(ElemType::CharAny, 0));
                pos = self.parse_space(pos + 1, is_nested);
            } else if c == b'*' || c == b'+' || c == b'?' {
                let at = pos;
                pos = self.parse_space(pos + 1, is_nested);
                let (lo, hi) = match c {
                    b'*' => (0, u64::MAX),
                    b'+' => (1, u64::MAX),
                    _ => (0, 1),
                };
                self.handle_repetitions(at, rule_name, rule, last_sym_start, &mut n_prev_rules, lo, hi)?;
            } else if c == b'{' {
                let at = pos;
                pos = self.parse_space(pos + 1, is_nested);
                if !is_digit(self.at(pos)) {
                    return Err(self.err_at(pos, "expecting an int"));
                }
                let int_end = self.parse_int(pos)?;
                let min_times = parse_u64(&self.src[pos..int_end]);
                pos = self.parse_space(int_end, is_nested);
                let mut max_times = u64::MAX;
                if self.at(pos) == b'}' {
                    max_times = min_times;
                    pos = self.parse_space(pos + 1, is_nested);
                } else if self.at(pos) == b',' {
                    pos = self.parse_space(pos + 1, is_nested);
                    if is_digit(self.at(pos)) {
                        let int_end = self.parse_int(pos)?;
                        max_times = parse_u64(&self.src[pos..int_end]);
                        pos = self.parse_space(int_end, is_nested);
                    }
                    if self.at(pos) != b'}' {
                        return Err(self.err_at(pos, "expecting '}'"));
                    }
                    pos = self.parse_space(pos + 1, is_nested);
                } else {
                    return Err(self.err_at(pos, "expecting ','"));
                }
                if min_times > MAX_REPETITION_THRESHOLD {
                    return Err(self.err(
                        at,
                        "number of repetitions exceeds sane defaults, please reduce the number of repetitions",
                    ));
                }
                if max_times != u64::MAX && max_times > MAX_REPETITION_THRESHOLD {
                    max_times = u64::MAX;
                }
                if max_times != u64::MAX && max_times < min_times {
                    // the reference would loop (unsigned underflow); refuse instead
                    return Err(self.err(at, format!("repetition {{{min_times},{max_times}}} has max < min")));
                }
                self.handle_repetitions(at, rule_name, rule, last_sym_start, &mut n_prev_rules, min_times, max_times)?;
            } else {
                break;
            }
        }
        Ok(pos)
    }

    fn parse_rule(&mut self, src: usize) -> Result<usize, ParseError> {
        let name_end = self.parse_name(src)?;
        let mut pos = self.parse_space(name_end, false);
        let name = String::from_utf8_lossy(&self.src[src..name_end]).into_owned();
        let rule_id = self.get_symbol_id(&self.src[src..name_end]);
        if !(self.at(pos) == b':' && self.at(pos + 1) == b':' && self.at(pos + 2) == b'=') {
            return Err(self.err_at(pos, "expecting ::="));
        }
        pos = self.parse_space(pos + 3, true);
        pos = self.parse_alternates(pos, &name, rule_id, false)?;
        if self.at(pos) == b'\r' {
            pos += if self.at(pos + 1) == b'\n' { 2 } else { 1 };
        } else if self.at(pos) == b'\n' {
            pos += 1;
        } else if self.at(pos) != 0 {
            return Err(self.err_at(pos, "expecting newline or end"));
        }
        Ok(self.parse_space(pos, true))
    }

    fn parse_all(&mut self) -> Result<(), ParseError> {
        let mut pos = self.parse_space(0, true);
        while self.at(pos) != 0 {
            pos = self.parse_rule(pos)?;
        }
        // every referenced rule must be defined
        for (i, rule) in self.g.rules.iter().enumerate() {
            if rule.is_empty() {
                let name = self.name_of(i as u32);
                return Err(ParseError { line: 0, column: 0, message: format!("Undefined rule identifier '{name}'") });
            }
            for e in rule {
                if e.ty == ElemType::RuleRef
                    && (e.value as usize >= self.g.rules.len() || self.g.rules[e.value as usize].is_empty())
                {
                    let name = self.name_of(e.value);
                    return Err(ParseError {
                        line: 0,
                        column: 0,
                        message: format!("Undefined rule identifier '{name}'"),
                    });
                }
            }
        }
        if self.g.rules.is_empty() {
            return Err(ParseError { line: 0, column: 0, message: "the grammar has no rules".into() });
        }
        Ok(())
    }

    fn name_of(&self, id: u32) -> String {
        self.g.symbol_ids.iter().find(|(_, &v)| v == id).map_or_else(|| id.to_string(), |(k, _)| k.clone())
    }
}

fn parse_u64(digits: &[u8]) -> u64 {
    // std::stoull; overflow saturates (then fails the repetition limit)
    digits.iter().fold(0u64, |acc, &d| acc.saturating_mul(10).saturating_add((d - b'0') as u64))
}

/// Which rules can match the empty string, as a fixed point: an
/// alternative is empty when all its elements are references to such rules.
///
/// The reference's left-recursion check only marks rules with a literally
/// empty alternative, so `root ::= ws root "x" | "y"` with `ws ::= [ ]*`
/// (nullable through its generated sub-rule) passes it, and its
/// `llama_grammar_advance_stack` then recurses until the stack overflows.
/// Seeding the check with this set refuses such a grammar with a message.
pub fn nullable_rules(rules: &[Rule]) -> Vec<bool> {
    let mut nullable = vec![false; rules.len()];
    loop {
        let mut changed = false;
        for (r, rule) in rules.iter().enumerate() {
            if nullable[r] {
                continue;
            }
            // Scan the alternatives: `empty` stays true while every element
            // so far is a reference to a nullable rule.
            let mut empty = true;
            for e in rule {
                match e.ty {
                    ElemType::End | ElemType::Alt => {
                        if empty {
                            nullable[r] = true;
                            changed = true;
                            break;
                        }
                        empty = true;
                    }
                    ElemType::RuleRef => {
                        empty = empty && nullable.get(e.value as usize).copied().unwrap_or(false);
                    }
                    _ => empty = false,
                }
            }
        }
        if !changed {
            return nullable;
        }
    }
}

/// Left recursion check (`llama_grammar_detect_left_recursion`); start
/// `may_be_empty` from `nullable_rules` to catch recursion through rules
/// that are empty only via their references.
pub fn detect_left_recursion(
    rules: &[Rule],
    rule_index: usize,
    visited: &mut [bool],
    in_progress: &mut [bool],
    may_be_empty: &mut [bool],
) -> bool {
    if in_progress[rule_index] {
        return true;
    }
    in_progress[rule_index] = true;
    let rule = &rules[rule_index];
    let is_end = |e: &Element| matches!(e.ty, ElemType::End | ElemType::Alt);

    let mut at_rule_start = true;
    for e in rule {
        if is_end(e) {
            if at_rule_start {
                may_be_empty[rule_index] = true;
                break;
            }
            at_rule_start = true;
        } else {
            at_rule_start = false;
        }
    }
    let mut recurse = true;
    for e in rule {
        if e.ty == ElemType::RuleRef && recurse {
            if detect_left_recursion(rules, e.value as usize, visited, in_progress, may_be_empty) {
                return true;
            }
            if !may_be_empty[e.value as usize] {
                recurse = false;
            }
        } else {
            recurse = is_end(e);
        }
    }
    in_progress[rule_index] = false;
    visited[rule_index] = true;
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_grammar_compiles_as_the_reference() {
        let g = parse(b"root ::= \"a\" [b-d] | x\nx ::= [^z]*").unwrap();
        assert_eq!(g.symbol_ids["root"], 0);
        assert_eq!(g.symbol_ids["x"], 1);
        use ElemType::*;
        let e = |t, v| Element::new(t, v);
        assert_eq!(
            g.rules[0],
            vec![
                e(Char, 'a' as u32),
                e(Char, 'b' as u32),
                e(CharRngUpper, 'd' as u32),
                e(Alt, 0),
                e(RuleRef, 1),
                e(End, 0)
            ]
        );
        // x ::= x_2 ; x_2 ::= [^z] x_2 |
        assert_eq!(g.rules[1], vec![e(RuleRef, 2), e(End, 0)]);
        assert_eq!(g.rules[2], vec![e(CharNot, 'z' as u32), e(RuleRef, 2), e(Alt, 0), e(End, 0)]);
    }

    #[test]
    fn bounded_repetition_rewrites() {
        let g = parse(b"root ::= \"a\"{2,4}").unwrap();
        use ElemType::*;
        let e = |t, v| Element::new(t, v);
        // a a root_2 ; root_1 ::= a | ; root_2 ::= a root_1 |
        assert_eq!(g.rules[0], vec![e(Char, 97), e(Char, 97), e(RuleRef, 2), e(End, 0)]);
        assert_eq!(g.rules[1], vec![e(Char, 97), e(Alt, 0), e(End, 0)]);
        assert_eq!(g.rules[2], vec![e(Char, 97), e(RuleRef, 1), e(Alt, 0), e(End, 0)]);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse(b"root ::= \"a\"\nfoo ::= (\"b\"").unwrap_err();
        assert_eq!((e.line, e.column), (2, 13));
        assert!(e.message.contains("expecting ')'"), "{e}");
        let e = parse(b"root ::= [a-").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse(b"root ::= bar").unwrap_err();
        assert!(e.message.contains("Undefined rule identifier 'bar'"), "{e}");
    }
}
