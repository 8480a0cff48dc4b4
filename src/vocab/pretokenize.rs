//! BPE pre-tokenization: the reference's `unicode_regex_split`. Each regex of
//! a pre-tokenizer splits the pieces the previous one produced. The common
//! regexes have hand-written splitters (as in the reference's unicode.cpp:
//! GPT-2, Llama 3, Qwen 2, Qwen 3.5, newline runs); the others run on the
//! small ECMAScript engine of `regex::wide`, over the same "collapsed" text the
//! reference feeds `std::regex` (each non-ASCII code point replaced by one
//! byte standing for its category) or, without categories, over the code
//! points with non-ASCII whitespace mapped to U+000B.

use super::unicode::{self as u, flags};
use crate::error::Result;
use crate::regex::wide::Regex;

const OUT: u32 = 0xFFFF_FFFF;

/// A compiled pre-tokenizer: its regexes and whether words are byte-encoded.
pub struct PreTokenizer {
    steps: Vec<Step>,
    pub byte_encode: bool,
}

enum Step {
    Gpt2,
    Llama3,
    Qwen2,
    Qwen35,
    Newlines,
    KimiK2,
    Afmoe,
    /// The std::regex fallback: the compiled pattern and whether it runs on
    /// the collapsed text.
    Regex(Regex, bool),
}

const GPT2_RE: &str = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const LLAMA3_RE: &str = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const LLAMA3_RE_ORIG: &str = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_RE: &str = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN35_RE: &str = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const NEWLINES_RE: &str = "[^\\n]+|[\\n]+";

/// Unicode categories the reference substitutes (`k_ucat_enum`), with the
/// category bit they stand for.
const UCAT: [(&str, u16); 10] = [
    ("\\p{L}", u::LETTER),
    ("\\p{Ll}", u::LETTER),
    ("\\p{Lm}", u::LETTER),
    ("\\p{Lo}", u::LETTER),
    ("\\p{Lt}", u::LETTER),
    ("\\p{Lu}", u::LETTER),
    ("\\p{M}", u::ACCENT_MARK),
    ("\\p{N}", u::NUMBER),
    ("\\p{P}", u::PUNCTUATION),
    ("\\p{S}", u::SYMBOL),
];

fn ucat_byte(cat: u16) -> Option<u8> {
    Some(match cat {
        u::NUMBER => 0xD1,
        u::LETTER => 0xD2,
        u::PUNCTUATION => 0xD3,
        u::ACCENT_MARK => 0xD4,
        u::SYMBOL => 0xD5,
        _ => return None,
    })
}

fn ucat_ascii(cat: u16) -> &'static [u8] {
    match cat {
        u::NUMBER => b"\x30-\x39",
        u::LETTER => b"\x41-\x5A\x61-\x7A",
        u::PUNCTUATION => b"\x21-\x23\x25-\x2A\x2C-\x2F\x3A-\x3B\x3F-\x40\\\x5B-\\\x5D\x5F\\\x7B\\\x7D",
        u::SYMBOL => b"\\\x24\\\x2B\x3C-\x3E\x5E\x60\\\x7C\\\x7E",
        _ => b"",
    }
}

fn uses_categories(re: &str) -> bool {
    UCAT.iter().any(|(p, _)| re.contains(p))
}

/// The collapsed form of a regex, byte for byte as the reference builds it.
fn collapse_regex(re: &str) -> Vec<u32> {
    let r = re.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    let mut inside = false;
    let mut i = 0;
    while i < r.len() {
        if r[i] == b'[' && (i == 0 || r[i - 1] != b'\\') {
            out.push(b'[');
            inside = true;
            i += 1;
            continue;
        }
        if inside && r[i] == b']' && r[i - 1] != b'\\' {
            out.push(b']');
            inside = false;
            i += 1;
            continue;
        }
        if r[i] == b'\\' && i + 3 < r.len() && r[i + 1] == b'p' && r[i + 2] == b'{' {
            if let Some(close) = r[i + 3..].iter().position(|&b| b == b'}').map(|p| p + i + 3) {
                if close <= i + 10 {
                    let pat = &re[i..=close];
                    if let Some(&(_, cat)) = UCAT.iter().find(|(p, _)| *p == pat) {
                        if !inside {
                            out.push(b'[');
                        }
                        out.push(ucat_byte(cat).unwrap_or(0xD0));
                        out.extend_from_slice(ucat_ascii(cat));
                        if !inside {
                            out.push(b']');
                        }
                        i = close + 1;
                        continue;
                    }
                }
            }
        }
        out.push(r[i]);
        i += 1;
    }
    out.into_iter().map(u32::from).collect()
}

impl PreTokenizer {
    pub fn new(exprs: &[&str], byte_encode: bool) -> Result<PreTokenizer> {
        let mut steps = Vec::new();
        for &re in exprs {
            steps.push(match re {
                GPT2_RE => Step::Gpt2,
                LLAMA3_RE | LLAMA3_RE_ORIG => Step::Llama3,
                QWEN2_RE => Step::Qwen2,
                QWEN35_RE => Step::Qwen35,
                NEWLINES_RE => Step::Newlines,
                "\\p{Han}+" => Step::KimiK2,
                "\\p{AFMoE_digits}" | "\\d{1,3}(?=(?:\\d{3})*\\b)" => Step::Afmoe,
                _ => {
                    if uses_categories(re) {
                        if re.chars().any(|c| c as u32 >= 128) {
                            return Err(crate::Error::model(
                                "Regex includes both unicode categories and non-ASCII characters - not supported",
                            ));
                        }
                        Step::Regex(Regex::new(&collapse_regex(re))?, true)
                    } else {
                        Step::Regex(Regex::new(&re.chars().map(|c| c as u32).collect::<Vec<_>>())?, false)
                    }
                }
            });
        }
        Ok(PreTokenizer { steps, byte_encode })
    }

    /// Splits `text` into words (byte-encoded if `byte_encode`).
    pub fn split(&self, text: &[u8]) -> Result<Vec<Vec<u8>>> {
        let cpts = u::cpts_from_utf8(text);
        let need_collapse = self.steps.iter().any(|s| matches!(s, Step::Regex(_, true)));
        let collapsed: Vec<u32> = if need_collapse {
            cpts.iter()
                .map(|&c| {
                    if c < 128 {
                        return c;
                    }
                    let f = flags(c);
                    if f & u::WHITESPACE != 0 {
                        0x0B
                    } else {
                        ucat_byte(f & u::MASK_CATEGORIES).unwrap_or(0xD0) as u32
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let wide: Vec<u32> = if self.steps.iter().any(|s| matches!(s, Step::Regex(_, false))) {
            cpts.iter().map(|&c| if c > 0x7F && flags(c) & u::WHITESPACE != 0 { 0x0B } else { c }).collect()
        } else {
            Vec::new()
        };

        let mut offsets = vec![cpts.len()];
        for step in &self.steps {
            offsets = match step {
                Step::Gpt2 => split_gpt2(&cpts, &offsets),
                Step::Llama3 => split_llama3(&cpts, &offsets, 3, false),
                Step::Qwen2 => split_llama3(&cpts, &offsets, 1, false),
                Step::Qwen35 => split_llama3(&cpts, &offsets, 1, true),
                Step::Newlines => split_newlines(&cpts, &offsets),
                Step::KimiK2 => split_kimi_k2(&cpts, &offsets),
                Step::Afmoe => split_afmoe(&cpts, &offsets),
                Step::Regex(re, coll) => split_regex(re, if *coll { &collapsed } else { &wide }, &offsets)?,
            };
        }

        let mut words = Vec::with_capacity(offsets.len());
        let mut start = 0;
        for &n in &offsets {
            let mut w = Vec::with_capacity(n * 2);
            for &c in &cpts[start..start + n] {
                if self.byte_encode {
                    let mut tmp = Vec::with_capacity(4);
                    u::push_utf8(&mut tmp, c);
                    for b in tmp {
                        w.extend_from_slice(u::byte_to_utf8(b));
                    }
                } else {
                    u::push_utf8(&mut w, c);
                }
            }
            words.push(w);
            start += n;
        }
        Ok(words)
    }
}

/// Stack for matching a "deep" regex (one that may recurse per character)
/// over `n` code points: a dedicated thread gets this much, so the host
/// thread's stack, however small, is never at risk.
const DEEP_BYTES_PER_CPT: usize = 4096;
const DEEP_MAX_STACK: usize = 1 << 30;

fn find_iter_safe(re: &Regex, frag: &[u32]) -> Result<Vec<(usize, usize)>> {
    if !re.deep || frag.len() < 64 {
        return Ok(re.find_iter(frag));
    }
    let need = frag.len().saturating_mul(DEEP_BYTES_PER_CPT).saturating_add(1 << 20);
    if need > DEEP_MAX_STACK {
        return Err(crate::Error::invalid(format!(
            "a piece of {} characters is too long for this pre-tokenizer's regex (at most {})",
            frag.len(),
            (DEEP_MAX_STACK - (1 << 20)) / DEEP_BYTES_PER_CPT
        )));
    }
    std::thread::scope(|sc| {
        std::thread::Builder::new()
            .stack_size(need)
            .spawn_scoped(sc, || re.find_iter(frag))
            .map_err(|e| crate::Error::invalid(format!("cannot start the regex thread: {e}")))?
            .join()
            .map_err(|_| crate::Error::invalid("the regex thread failed"))
    })
}

fn split_regex(re: &Regex, text: &[u32], offsets: &[usize]) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(offsets.len());
    let mut start = 0;
    for &n in offsets {
        let frag = &text[start..start + n];
        let mut idx = 0;
        for (s, e) in find_iter_safe(re, frag)? {
            if s > idx {
                out.push(s - idx);
            }
            out.push(e - s);
            idx = e;
        }
        if idx < n {
            out.push(n - idx);
        }
        start += n;
    }
    Ok(out)
}

/// A fragment view with the reference's out-of-range conventions.
struct Frag<'a> {
    cpts: &'a [u32],
    ini: usize,
    end: usize,
}

impl Frag<'_> {
    #[inline]
    fn cpt(&self, p: usize) -> u32 {
        if self.ini <= p && p < self.end {
            self.cpts[p]
        } else {
            OUT
        }
    }
    #[inline]
    fn fl(&self, p: usize) -> u16 {
        if self.ini <= p && p < self.end {
            flags(self.cpts[p])
        } else {
            0
        }
    }
}

#[inline]
fn is(f: u16, bit: u16) -> bool {
    f & bit != 0
}

/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
#[allow(clippy::nonminimal_bool, reason = "the contractions tested one by one, as in unicode.cpp")]
fn split_gpt2(cpts: &[u32], offsets: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(offsets.len());
    let mut start = 0;
    for &n in offsets {
        let f = Frag { cpts, ini: start, end: start + n };
        let (ini, end) = (start, start + n);
        start = end;
        let mut prev = ini;
        let mut add = |e: usize, out: &mut Vec<usize>| -> usize {
            let len = e - prev;
            if len > 0 {
                out.push(len);
            }
            prev = e;
            len
        };
        let mut pos = ini;
        while pos < end {
            let cpt = f.cpt(pos);
            let fl = f.fl(pos);
            if cpt == '\'' as u32 && pos + 1 < end {
                let nx = f.cpt(pos + 1);
                if [b's', b't', b'm', b'd'].iter().any(|&c| nx == c as u32) {
                    pos += add(pos + 2, &mut out);
                    continue;
                }
                if pos + 2 < end {
                    let nn = f.cpt(pos + 2);
                    if (nx == 'r' as u32 && nn == 'e' as u32)
                        || (nx == 'v' as u32 && nn == 'e' as u32)
                        || (nx == 'l' as u32 && nn == 'l' as u32)
                    {
                        pos += add(pos + 3, &mut out);
                        continue;
                    }
                }
            }
            let sp = (cpt == ' ' as u32) as usize;
            let mut f2 = if sp == 1 { f.fl(pos + 1) } else { fl };
            if is(f2, u::LETTER) {
                pos += sp;
                while is(f2, u::LETTER) {
                    pos += 1;
                    f2 = f.fl(pos);
                }
                add(pos, &mut out);
                continue;
            }
            if is(f2, u::NUMBER) {
                pos += sp;
                while is(f2, u::NUMBER) {
                    pos += 1;
                    f2 = f.fl(pos);
                }
                add(pos, &mut out);
                continue;
            }
            let other = |f2: u16| !(is(f2, u::WHITESPACE) || is(f2, u::LETTER) || is(f2, u::NUMBER)) && f2 != 0;
            if other(f2) {
                pos += sp;
                while other(f2) {
                    pos += 1;
                    f2 = f.fl(pos);
                }
                add(pos, &mut out);
                continue;
            }
            let mut nws = 0;
            while is(f.fl(pos + nws), u::WHITESPACE) {
                nws += 1;
            }
            if nws > 1 && f.cpt(pos + nws) != OUT {
                pos += nws - 1;
                add(pos, &mut out);
                continue;
            }
            if nws > 0 {
                pos += nws;
                add(pos, &mut out);
                continue;
            }
            pos += 1;
            add(pos, &mut out);
        }
    }
    out
}

/// Llama 3 (`digits` = 3), Qwen 2 (`digits` = 1) and, with `marks`, Qwen 3.5:
/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
#[allow(clippy::nonminimal_bool, reason = "the contractions tested one by one, as in unicode.cpp")]
fn split_llama3(cpts: &[u32], offsets: &[usize], digits: usize, marks: bool) -> Vec<usize> {
    let mut out = Vec::with_capacity(offsets.len());
    let mut start = 0;
    let letter = |fl: u16| is(fl, u::LETTER) || (marks && is(fl, u::ACCENT_MARK));
    for &n in offsets {
        let f = Frag { cpts, ini: start, end: start + n };
        let (ini, end) = (start, start + n);
        start = end;
        let mut prev = ini;
        let mut add = |e: usize, out: &mut Vec<usize>| -> usize {
            let len = e - prev;
            if len > 0 {
                out.push(len);
            }
            prev = e;
            len
        };
        let mut pos = ini;
        while pos < end {
            let cpt = f.cpt(pos);
            let fl = f.fl(pos);
            if cpt == '\'' as u32 && pos + 1 < end {
                let nx = u::tolower(f.cpt(pos + 1));
                if [b's', b't', b'm', b'd'].iter().any(|&c| nx == c as u32) {
                    pos += add(pos + 2, &mut out);
                    continue;
                }
                if pos + 2 < end {
                    let nn = u::tolower(f.cpt(pos + 2));
                    if (nx == 'r' as u32 && nn == 'e' as u32)
                        || (nx == 'v' as u32 && nn == 'e' as u32)
                        || (nx == 'l' as u32 && nn == 'l' as u32)
                    {
                        pos += add(pos + 3, &mut out);
                        continue;
                    }
                }
            }
            // [^\r\n\p{L}\p{N}]?\p{L}+
            if !(cpt == '\r' as u32 || cpt == '\n' as u32 || is(fl, u::NUMBER)) && (letter(fl) || letter(f.fl(pos + 1)))
            {
                pos += 1;
                while letter(f.fl(pos)) {
                    pos += 1;
                }
                add(pos, &mut out);
                continue;
            }
            // \p{N}{1,digits}
            if is(fl, u::NUMBER) {
                if digits == 1 {
                    pos += 1;
                    add(pos, &mut out);
                    continue;
                }
                let mut i0 = pos;
                while is(f.fl(pos), u::NUMBER) {
                    pos += 1;
                    if pos - i0 >= digits {
                        add(pos, &mut out);
                        i0 = pos;
                    }
                }
                add(pos, &mut out);
                continue;
            }
            // <space>?[^\s\p{L}\p{N}]+[\r\n]*
            let sp = (cpt == ' ' as u32) as usize;
            let mut f2 = if sp == 1 { f.fl(pos + 1) } else { fl };
            let other = |f2: u16| !(is(f2, u::WHITESPACE) || letter(f2) || is(f2, u::NUMBER));
            if other(f2) && fl != 0 {
                pos += sp;
                while other(f2) && f2 != 0 {
                    pos += 1;
                    f2 = f.fl(pos);
                }
                let mut c2 = f.cpt(pos);
                while c2 == '\r' as u32 || c2 == '\n' as u32 {
                    pos += 1;
                    c2 = f.cpt(pos);
                }
                add(pos, &mut out);
                continue;
            }
            let mut nws = 0;
            let mut last_rn = 0;
            while is(f.fl(pos + nws), u::WHITESPACE) {
                let c2 = f.cpt(pos + nws);
                if c2 == '\r' as u32 || c2 == '\n' as u32 {
                    last_rn = pos + nws + 1;
                }
                nws += 1;
            }
            if last_rn > 0 {
                pos = last_rn;
                add(pos, &mut out);
                continue;
            }
            if nws > 1 && f.cpt(pos + nws) != OUT {
                pos += nws - 1;
                add(pos, &mut out);
                continue;
            }
            if nws > 0 {
                pos += nws;
                add(pos, &mut out);
                continue;
            }
            pos += 1;
            add(pos, &mut out);
        }
    }
    out
}

/// Kimi K2: `[\p{Han}]+`, then Llama-3-like rules on non-Han letters.
#[allow(clippy::nonminimal_bool, reason = "the contractions tested one by one, as in unicode.cpp")]
fn split_kimi_k2(cpts: &[u32], offsets: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(offsets.len());
    let mut start = 0;
    for &n in offsets {
        let f = Frag { cpts, ini: start, end: start + n };
        let (ini, end) = (start, start + n);
        start = end;
        let mut prev = ini;
        let mut add = |e: usize, out: &mut Vec<usize>| -> usize {
            let len = e - prev;
            if len > 0 {
                out.push(len);
            }
            prev = e;
            len
        };
        let han = |c: u32| u::is_han(c);
        let nonhan_letter = |p: usize| is(f.fl(p), u::LETTER) && !han(f.cpt(p));
        let mut pos = ini;
        while pos < end {
            let cpt = f.cpt(pos);
            let fl = f.fl(pos);
            if han(cpt) {
                while han(f.cpt(pos)) {
                    pos += 1;
                }
                add(pos, &mut out);
                continue;
            }
            let lead_ok = !(cpt == '\r' as u32 || cpt == '\n' as u32 || is(fl, u::LETTER) || is(fl, u::NUMBER));
            let is_letter_pattern = (is(fl, u::LETTER) && !han(cpt)) || (lead_ok && nonhan_letter(pos + 1));
            if is_letter_pattern {
                let mut has_lead = false;
                if lead_ok {
                    has_lead = true;
                    pos += 1;
                }
                let mut has_letters = false;
                while nonhan_letter(pos) {
                    has_letters = true;
                    pos += 1;
                }
                if has_letters || (!has_lead && nonhan_letter(pos)) {
                    if !has_letters {
                        pos += 1;
                    }
                    while nonhan_letter(pos) {
                        pos += 1;
                    }
                    if f.cpt(pos) == '\'' as u32 && pos + 1 < end {
                        let nx = u::tolower(f.cpt(pos + 1));
                        if [b's', b't', b'm', b'd'].iter().any(|&c| nx == c as u32) {
                            pos += 2;
                        } else if pos + 2 < end {
                            let nn = u::tolower(f.cpt(pos + 2));
                            if (nx == 'r' as u32 && nn == 'e' as u32)
                                || (nx == 'v' as u32 && nn == 'e' as u32)
                                || (nx == 'l' as u32 && nn == 'l' as u32)
                            {
                                pos += 3;
                            }
                        }
                    }
                    add(pos, &mut out);
                    continue;
                } else if has_lead {
                    pos -= 1;
                }
            }
            if is(fl, u::NUMBER) {
                let mut i0 = pos;
                while is(f.fl(pos), u::NUMBER) {
                    pos += 1;
                    if pos - i0 >= 3 {
                        add(pos, &mut out);
                        i0 = pos;
                    }
                }
                add(pos, &mut out);
                continue;
            }
            let sp = (cpt == ' ' as u32) as usize;
            let mut f2 = if sp == 1 { f.fl(pos + 1) } else { fl };
            let other = |f2: u16| !(is(f2, u::WHITESPACE) || is(f2, u::LETTER) || is(f2, u::NUMBER)) && f2 != 0;
            if other(f2) {
                pos += sp;
                while other(f2) {
                    pos += 1;
                    f2 = f.fl(pos);
                }
                let mut c2 = f.cpt(pos);
                while c2 == '\r' as u32 || c2 == '\n' as u32 {
                    pos += 1;
                    c2 = f.cpt(pos);
                }
                add(pos, &mut out);
                continue;
            }
            let mut nws = 0;
            let mut last_rn = 0;
            while is(f.fl(pos + nws), u::WHITESPACE) {
                let c2 = f.cpt(pos + nws);
                if c2 == '\r' as u32 || c2 == '\n' as u32 {
                    last_rn = pos + nws + 1;
                }
                nws += 1;
            }
            if last_rn > 0 {
                pos = last_rn;
                add(pos, &mut out);
                continue;
            }
            if nws > 1 && f.cpt(pos + nws) != OUT {
                pos += nws - 1;
                add(pos, &mut out);
                continue;
            }
            if nws > 0 {
                pos += nws;
                add(pos, &mut out);
                continue;
            }
            pos += 1;
            add(pos, &mut out);
        }
    }
    out
}

/// AFMoE digits (also tiny_aya's `\d{1,3}(?=(?:\d{3})*\b)`): a digit run is
/// cut into a leading 1-2 digits (length mod 3) and groups of three; the
/// text before a run goes with its first piece, as the reference does.
fn split_afmoe(cpts: &[u32], offsets: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(offsets.len());
    let mut start = 0;
    for &n in offsets {
        let f = Frag { cpts, ini: start, end: start + n };
        let (ini, end) = (start, start + n);
        start = end;
        let mut prev = ini;
        let add = |e: usize, out: &mut Vec<usize>, prev: &mut usize| {
            if e > *prev {
                out.push(e - *prev);
            }
            *prev = e;
        };
        let mut pos = ini;
        while pos < end {
            if is(f.fl(pos), u::NUMBER) {
                let ds = pos;
                let mut count = 0;
                while is(f.fl(pos), u::NUMBER) && pos < end {
                    count += 1;
                    pos += 1;
                }
                let rem = count % 3;
                let mut cur = ds;
                if rem > 0 {
                    add(cur + rem, &mut out, &mut prev);
                    cur += rem;
                }
                while cur < ds + count {
                    add(cur + 3, &mut out, &mut prev);
                    cur += 3;
                }
                continue;
            }
            pos += 1;
        }
        if prev < end {
            add(end, &mut out, &mut prev);
        }
    }
    out
}

/// `[^\n]+|[\n]+`
fn split_newlines(cpts: &[u32], offsets: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(offsets.len());
    let mut start = 0;
    for &n in offsets {
        let end = start + n;
        let mut pos = start;
        while pos < end {
            let nl = cpts[pos] == '\n' as u32;
            let s = pos;
            while pos < end && (cpts[pos] == '\n' as u32) == nl {
                pos += 1;
            }
            out.push(pos - s);
        }
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(exprs: &[&str], text: &str) -> Vec<String> {
        let p = PreTokenizer::new(exprs, false).unwrap();
        p.split(text.as_bytes()).unwrap().into_iter().map(|w| String::from_utf8(w).unwrap()).collect()
    }

    #[test]
    fn gpt2_contractions_letters_digits_punct_spaces() {
        assert_eq!(
            words(&[GPT2_RE], "I'm here, it's 2024!!  ok"),
            ["I", "'m", " here", ",", " it", "'s", " 2024", "!!", " ", " ok"]
        );
        assert_eq!(words(&[GPT2_RE], "DON'T"), ["DON", "'", "T"]);
        assert_eq!(words(&[GPT2_RE], "a   \n"), ["a", "   \n"]);
    }

    #[test]
    fn llama3_digit_groups_and_newlines() {
        assert_eq!(words(&[LLAMA3_RE], "1234567"), ["123", "456", "7"]);
        assert_eq!(words(&[LLAMA3_RE], "DON'T"), ["DON", "'T"]);
        assert_eq!(words(&[LLAMA3_RE], "a.\n\nb"), ["a", ".\n\n", "b"]);
        assert_eq!(words(&[LLAMA3_RE], "x  \n y"), ["x", "  \n", " y"]);
        assert_eq!(words(&[QWEN2_RE], "123"), ["1", "2", "3"]);
    }

    #[test]
    fn cjk_emoji_and_combining_marks() {
        assert_eq!(words(&[LLAMA3_RE], "中文 😀😀"), ["中文", " 😀😀"]);
        // e + COMBINING ACUTE: a mark is not a letter for Llama 3, is for Qwen 3.5
        assert_eq!(words(&[LLAMA3_RE], "e\u{301}t"), ["e", "\u{301}t"]);
        assert_eq!(words(&[QWEN35_RE], "e\u{301}t"), ["e\u{301}t"]);
    }

    #[test]
    fn fallback_regexes_on_collapsed_text() {
        // starcoder / smollm: digits split one by one first
        assert_eq!(words(&["\\p{N}", GPT2_RE], "ab 123"), ["ab", " ", "1", "2", "3"]);
        // falcon's punctuation runs
        assert_eq!(words(&["[\\p{P}\\$\\+<=>\\^~\\|`]+"], "a+=b…c"), ["a", "+=", "b", "…", "c"]);
        assert_eq!(collapse_regex("\\p{N}"), [b'[' as u32, 0xD1, 0x30, b'-' as u32, 0x39, b']' as u32]);
    }

    #[test]
    fn byte_encoding() {
        let p = PreTokenizer::new(&[GPT2_RE], true).unwrap();
        assert_eq!(p.split(b"a b").unwrap(), [b"a".to_vec(), "Ġb".as_bytes().to_vec()]);
    }

    fn pre(pre: &'static str, text: &str) -> Vec<String> {
        let (exprs, _) = super::super::bpe_regexes(pre);
        let p = PreTokenizer::new(&exprs, false).unwrap();
        p.split(text.as_bytes()).unwrap().into_iter().map(|w| String::from_utf8_lossy(&w).into_owned()).collect()
    }

    #[test]
    fn pre_tokenizer_lists() {
        // default (no `pre`): punctuation runs, digits in threes
        assert_eq!(pre("DEFAULT", "x=1234567;"), ["x", "=", "123", "456", "7", ";"]);
        // falcon: three-digit groups, punctuation runs with $ + < = > ^ ~ | `
        assert_eq!(pre("FALCON", "a+=b 12345"), ["a", "+=", "b", " ", "123", "45"]);
        // deepseek-coder: newlines alone, CJK runs, digits one by one
        assert_eq!(pre("DEEPSEEK_CODER", "ab\n中文12"), ["ab", "\n", "中文", "1", "2"]);
        // deepseek-llm: letter runs, then its ASCII class [!-/:-~] (which holds
        // A-Z and a-z) splits them again around non-ASCII letters
        assert_eq!(pre("DEEPSEEK_LLM", "Héllo wörld  "), ["H", "é", "llo", " w", "ö", "rld", "  "]);
        // gemma4: newline runs apart from the rest, nothing else split
        assert_eq!(pre("GEMMA4", "a b\n\nc"), ["a b", "\n\n", "c"]);
        // qwen2 and smollm: digits one by one
        assert_eq!(pre("QWEN2", "v2024"), ["v", "2", "0", "2", "4"]);
        assert_eq!(pre("SMOLLM", "v2024 ok"), ["v", "2", "0", "2", "4", " ok"]);
    }

    #[test]
    fn whitespace_and_invalid_utf8() {
        // non-ASCII whitespace counts as whitespace; invalid bytes become U+FFFD pieces
        // (only an ASCII space joins the next word)
        assert_eq!(words(&[GPT2_RE], "a\u{3000}\u{3000}b"), ["a", "\u{3000}", "\u{3000}", "b"]);
        let p = PreTokenizer::new(&[GPT2_RE], false).unwrap();
        assert_eq!(p.split(b"a\xffb").unwrap(), [b"a".to_vec(), "\u{FFFD}".as_bytes().to_vec(), b"b".to_vec()]);
    }
}
