//! Grammar tests: the reference's grammars parse, malformed ones are refused
//! with a position, and the matcher over a fake vocabulary (masking,
//! partial UTF-8, generation of valid JSON).

use super::matcher::{decode_utf8, Grammar, PartialUtf8};
use super::parser::{parse, ParsedGrammar};
use super::*;
use crate::sampling::basic::Dist;
use crate::sampling::{TokenData, VocabView};

fn cache_dir() -> std::path::PathBuf {
    std::env::var("MINFER_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/minfer"))
}

fn grammars_dir() -> std::path::PathBuf {
    cache_dir().join("ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp/grammars")
}

#[test]
fn every_reference_grammar_parses_and_starts() {
    let dir = grammars_dir();
    let mut n = 0;
    for name in ["json", "json_arr", "arithmetic", "list", "chess", "c", "english", "japanese"] {
        let path = dir.join(format!("{name}.gbnf"));
        let text = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-reference-src.sh)", path.display()));
        let g = parse(&text).unwrap_or_else(|e| panic!("{name}.gbnf: {e}"));
        let gr = Grammar::new(&g, "root", false, vec![]).unwrap_or_else(|e| panic!("{name}.gbnf: {e}"));
        assert!(!gr.stacks.is_empty(), "{name}");
        n += 1;
    }
    assert_eq!(n, 8);
}

/// 20 malformed grammars: each refused, with a message (and a position
/// where one exists).
pub const MALFORMED: [&str; 20] = [
    "root ::= \"abc",             // unterminated string
    "root ::= [a-z",              // unterminated class
    "root ::= (\"a\" | \"b\"",    // unclosed group
    "root ::= \"a\" )",           // stray ')'
    "root := \"a\"",              // not ::=
    "root \"a\"",                 // missing ::=
    "::= \"a\"",                  // missing name
    "root ::= foo",               // undefined rule
    "root ::= * \"a\"",           // repetition without item
    "root ::= \"a\"{x}",          // not an int
    "root ::= \"a\"{1,x}",        // bad max
    "root ::= \"a\"{1 2}",        // missing comma
    "root ::= \"a\"{3001}",       // too many repetitions
    "root ::= \"\\q\"",           // unknown escape
    "root ::= \"\\x4\"",          // short hex escape
    "root ::= \"\\u12G4\"",       // bad hex digit
    "root ::= <foo>",             // token text without a vocabulary
    "root ::= <[12>",             // unterminated token id
    "root ::= \"a\" \"b\" %",     // junk after the rule
    "root ::= (\"a\"{0,50}){50}", // repetition product over the limit
];

#[test]
fn twenty_malformed_grammars_are_refused_with_messages() {
    for (i, g) in MALFORMED.iter().enumerate() {
        let e = parse(g.as_bytes()).expect_err(&format!("#{i} {g} parsed"));
        assert!(!e.message.is_empty());
        if !e.message.starts_with("Undefined rule") {
            assert_eq!(e.line, 1, "#{i}: {e}");
            assert!(e.column >= 1, "#{i}: {e}");
        }
    }
    // line numbers count from 1 across lines
    let e = parse(b"root ::= a\na ::= \"x\"\nb ::= [").unwrap_err();
    assert_eq!(e.line, 3, "{e}");
}

#[test]
fn left_recursion_and_missing_root_are_refused() {
    let g = parse(b"root ::= root \"a\" | \"b\"").unwrap();
    assert!(matches!(Grammar::new(&g, "root", false, vec![]), Err(matcher::GrammarError::LeftRecursion(_))));
    let g = parse(b"start ::= \"a\"").unwrap();
    assert!(matches!(Grammar::new(&g, "root", false, vec![]), Err(matcher::GrammarError::NoRoot(_))));
}

/// Found by the gbnf fuzz target (a timeout: the stacks grew without end):
/// left recursion through rules that are empty only via their references
/// (`ws ::= [ ]*` is `ws ::= ws_1`, `ws_1 ::= [ ] ws_1 | `), which the
/// reference's check misses (and its recursive advance then overflows the
/// stack). Refused here; the same rules without the recursion still work.
#[test]
fn left_recursion_through_nullable_references_is_refused() {
    for text in [
        "root ::= ws root \"x\" | \"y\"\nws ::= [ ]*",
        "root ::= a\na ::= b c a \"x\" | \"y\"\nb ::= \"(\"*\nc ::= b?",
        // the fuzzer's input, cut down
        "root ::= (expr \"=\")+\nexpr ::= term ([-+] term)*\nterm ::= [a-z] | \"(\"* ws expr \")\"\nws ::= [ ]*",
    ] {
        let g = parse(text.as_bytes()).unwrap();
        match Grammar::new(&g, "root", false, vec![]) {
            Err(matcher::GrammarError::LeftRecursion(_)) => {}
            Err(e) => panic!("{text:?}: {e}"),
            Ok(_) => panic!("{text:?}: accepted"),
        }
    }
    let g = parse(b"root ::= ws \"(\" root \")\" | \"y\"\nws ::= [ ]*").unwrap();
    let mut m = Grammar::new(&g, "root", false, vec![]).unwrap();
    m.accept_str(b" (y)").unwrap();
    assert!(m.is_complete());
}

/// Found by the gbnf fuzz target (a timeout): nested repetitions make the
/// stacks multiply with every character. Each operation stops after
/// `WORK_LIMIT` units of work with an error (the reference hangs), and the
/// grammar is left with no stack.
#[test]
fn an_exponentially_ambiguous_grammar_fails_in_bounded_time() {
    let text = format!("root ::= (\"c\" | \"d\"{})+ [x-z]", "+".repeat(60));
    let mut g = grammar(&text);
    let start = std::time::Instant::now();
    let mut failed = None;
    for i in 0..64 {
        if let Err(e) = g.accept_str(b"d") {
            failed = Some((i, e));
            break;
        }
    }
    let (i, e) = failed.expect("the stacks never exceeded the limit");
    assert_eq!(e, matcher::GrammarError::TooComplex, "after {i} characters");
    assert!(g.stacks.is_empty());
    // the same grammar filtering candidates: every candidate rejected
    let v = FakeVocab::new();
    let mut g = grammar(&text);
    let mut n = 0;
    while g.accept_str(b"d").is_ok() {
        n += 1;
        let mut c = all_candidates(&v);
        if let Err(e) = g.apply(&v, &mut Candidates::new(&mut c)) {
            assert_eq!(e, matcher::GrammarError::TooComplex);
            assert!(c.iter().all(|t| t.logit == f32::NEG_INFINITY));
            break;
        }
    }
    assert!(n < 64, "{n}");
    eprintln!("ambiguous grammar: refused after {i} characters in {:?}", start.elapsed());
}

/// The work limit is far (16x or more) above what real grammars need: the reference's
/// grammars over SmolLM2's 49 152-token vocabulary, filtering every token
/// after each chunk of the parity-trace inputs.
#[test]
fn work_stays_far_below_the_limit_on_real_grammars() {
    use crate::gguf::GgufFile;
    use crate::vocab::Vocab;
    struct Real(Vocab);
    impl VocabView for Real {
        fn n_tokens(&self) -> usize {
            self.0.n_tokens()
        }
        fn piece(&self, token: i32, special: bool) -> std::borrow::Cow<'_, [u8]> {
            std::borrow::Cow::Borrowed(self.0.piece(token, 0, special).unwrap_or_default())
        }
        fn is_eog(&self, token: i32) -> bool {
            self.0.is_eog(token)
        }
        fn token_eot(&self) -> i32 {
            -1
        }
        fn token_eos(&self) -> i32 {
            -1
        }
        fn tokenize(&self, _text: &[u8]) -> Vec<i32> {
            Vec::new()
        }
    }
    let model = cache_dir().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let file = GgufFile::open(&model).unwrap_or_else(|e| panic!("{e} (run scripts/fetch-models.sh)"));
    let v = Real(Vocab::load(&file, &Default::default()).unwrap());
    let inputs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/ffi-tests/grammar_inputs.txt")).unwrap();
    let (mut most, mut steps) = (0u64, 0);
    for line in inputs.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (name, chunks) = line.split_once('\t').unwrap();
        let text = std::fs::read(grammars_dir().join(format!("{name}.gbnf"))).unwrap();
        let mut g = Grammar::new(&parse(&text).unwrap(), "root", false, vec![]).unwrap();
        for hex in chunks.split_whitespace() {
            let mut c: Vec<TokenData> =
                (0..v.n_tokens() as i32).map(|id| TokenData { id, logit: 0.0, p: 0.0 }).collect();
            let mut work = matcher::Work::new();
            g.apply_counted(&v, &mut Candidates::new(&mut c), &mut work).unwrap();
            most = most.max(work.used());
            steps += 1;
            let bytes: Vec<u8> =
                (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect();
            if g.accept_str(&bytes).is_err() {
                break;
            }
        }
    }
    eprintln!("grammar work: at most {most} units in one apply over {} tokens ({steps} steps)", v.n_tokens());
    assert!(steps > 20, "{steps}");
    assert!(most < matcher::WORK_LIMIT / 16, "{most} units");
}

#[test]
fn utf8_decoding_keeps_partial_sequences() {
    let (cps, p) = decode_utf8("aé".as_bytes(), PartialUtf8::default());
    assert_eq!(cps, vec![97, 0xe9, 0]);
    assert_eq!(p.n_remain, 0);
    // "€" = e2 82 ac split after two bytes
    let (cps, p) = decode_utf8(&[0xe2, 0x82], PartialUtf8::default());
    assert_eq!(cps, vec![0]);
    assert_eq!(p.n_remain, 1);
    let (cps, p2) = decode_utf8(&[0xac, b'x'], p);
    assert_eq!(cps, vec![0x20ac, b'x' as u32, 0]);
    assert_eq!(p2.n_remain, 0);
    // a continuation byte where a lead byte is expected: invalid
    let (cps, p) = decode_utf8(&[0x82], PartialUtf8::default());
    assert_eq!(cps, vec![0]);
    assert_eq!(p.n_remain, -1);
}

/// A fake vocabulary: single characters, some words, split UTF-8, and EOG.
pub struct FakeVocab {
    pub pieces: Vec<Vec<u8>>,
    pub eog: i32,
}

impl FakeVocab {
    pub fn new() -> FakeVocab {
        let mut pieces: Vec<Vec<u8>> = (0x20u8..0x7f).map(|c| vec![c]).collect();
        for w in ["\n", "{\"", "\":", "\", \"", "true", "false", "null", "12", "  ", "é", "€", "[1,", "\"}"] {
            pieces.push(w.as_bytes().to_vec());
        }
        pieces.push(vec![0xe2, 0x82]); // first two bytes of €
        pieces.push(vec![0xac]); // its last byte
        pieces.push(vec![0xc3]); // first byte of é
        pieces.push(vec![0xa9, b'"']); // é's last byte + quote
        pieces.push(Vec::new()); // EOG
        let eog = pieces.len() as i32 - 1;
        FakeVocab { pieces, eog }
    }
    pub fn id(&self, s: &[u8]) -> i32 {
        self.pieces.iter().position(|p| p == s).unwrap() as i32
    }
}

impl VocabView for FakeVocab {
    fn n_tokens(&self) -> usize {
        self.pieces.len()
    }
    fn piece(&self, token: i32, _special: bool) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(&self.pieces[token as usize])
    }
    fn is_eog(&self, token: i32) -> bool {
        token == self.eog
    }
    fn token_eot(&self) -> i32 {
        self.eog
    }
    fn token_eos(&self) -> i32 {
        self.eog
    }
    fn tokenize(&self, text: &[u8]) -> Vec<i32> {
        text.iter().map(|&b| self.id(&[b])).collect()
    }
}

fn all_candidates(v: &FakeVocab) -> Vec<TokenData> {
    (0..v.n_tokens() as i32).map(|id| TokenData { id, logit: 0.0, p: 0.0 }).collect()
}

fn allowed(g: &Grammar, v: &FakeVocab) -> Vec<Vec<u8>> {
    let mut c = all_candidates(v);
    let mut cur = Candidates::new(&mut c);
    g.apply(v, &mut cur).unwrap();
    c.iter().filter(|t| t.logit != f32::NEG_INFINITY).map(|t| v.pieces[t.id as usize].clone()).collect()
}

fn grammar(text: &str) -> Grammar {
    let p: ParsedGrammar = parse(text.as_bytes()).unwrap();
    Grammar::new(&p, "root", false, vec![]).unwrap()
}

#[test]
fn masking_follows_the_grammar() {
    let v = FakeVocab::new();
    let mut g = grammar("root ::= \"ab\" [0-9]+ \"!\"");
    assert_eq!(allowed(&g, &v), vec![b"a".to_vec()]);
    g.accept_token(v.id(b"a"), b"a").unwrap();
    assert_eq!(allowed(&g, &v), vec![b"b".to_vec()]);
    g.accept_token(v.id(b"b"), b"b").unwrap();
    let a = allowed(&g, &v);
    assert!(a.contains(&b"7".to_vec()) && a.contains(&b"12".to_vec()) && !a.contains(&b"!".to_vec()));
    g.accept_token(v.id(b"12"), b"12").unwrap();
    let a = allowed(&g, &v);
    assert!(a.contains(&b"!".to_vec()) && a.contains(&b"3".to_vec()));
    assert!(!a.contains(&Vec::new())); // EOG not yet
    g.accept_token(v.id(b"!"), b"!").unwrap();
    assert!(g.is_complete());
    assert_eq!(allowed(&g, &v), vec![Vec::<u8>::new()]); // only EOG
                                                         // a token the grammar refuses empties the stacks: an error
    let mut g2 = grammar("root ::= \"a\"");
    assert!(g2.accept_token(v.id(b"b"), b"b").is_err());
}

#[test]
fn partial_utf8_candidates_are_kept_only_if_they_can_complete() {
    let v = FakeVocab::new();
    // only "€" (U+20AC) allowed: the piece e2 82 can complete to it
    let mut g = grammar("root ::= \"€\" \"x\"");
    let a = allowed(&g, &v);
    assert!(a.contains(&vec![0xe2, 0x82]), "{a:?}");
    assert!(a.contains(&"€".as_bytes().to_vec()));
    assert!(!a.contains(&vec![0xc3])); // é's lead byte: U+00C0..U+00FF cannot be €
    g.accept_token(v.id(&[0xe2, 0x82]), &[0xe2, 0x82]).unwrap();
    assert_eq!(g.partial_utf8.n_remain, 1);
    let a = allowed(&g, &v);
    assert_eq!(a, vec![vec![0xac]]);
    g.accept_token(v.id(&[0xac]), &[0xac]).unwrap();
    assert_eq!(allowed(&g, &v), vec![b"x".to_vec()]);
    // [^"] accepts any continuation: é's halves pass through a string rule
    let mut g = grammar("root ::= \"\\\"\" [^\"]* \"\\\"\"");
    g.accept_token(v.id(b"\""), b"\"").unwrap();
    assert!(allowed(&g, &v).contains(&vec![0xc3]));
    g.accept_token(v.id(&[0xc3]), &[0xc3]).unwrap();
    g.accept_token(v.id(&[0xa9, b'"']), &[0xa9, b'"']).unwrap();
    assert!(g.is_complete());
}

#[test]
fn token_references_match_ids() {
    let v = FakeVocab::new();
    let nul = v.id(b"null");
    let g = grammar(&format!("root ::= <[{nul}]> | !<[{nul}]> \"x\""));
    let a = allowed(&g, &v);
    assert!(a.contains(&b"null".to_vec()));
    assert!(a.contains(&b"q".to_vec())); // any token but null, then "x"
}

/// A small JSON validator (RFC 8259 values), for the generation test.
fn valid_json(s: &[u8]) -> bool {
    fn ws(s: &[u8], mut i: usize) -> usize {
        while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        i
    }
    fn value(s: &[u8], i: usize) -> Option<usize> {
        let i = ws(s, i);
        match *s.get(i)? {
            b'{' => {
                let mut i = ws(s, i + 1);
                if s.get(i) == Some(&b'}') {
                    return Some(i + 1);
                }
                loop {
                    i = string(s, ws(s, i))?;
                    i = ws(s, i);
                    if s.get(i) != Some(&b':') {
                        return None;
                    }
                    i = ws(s, value(s, i + 1)?);
                    match s.get(i)? {
                        b',' => i += 1,
                        b'}' => return Some(i + 1),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                let mut i = ws(s, i + 1);
                if s.get(i) == Some(&b']') {
                    return Some(i + 1);
                }
                loop {
                    i = ws(s, value(s, i)?);
                    match s.get(i)? {
                        b',' => i += 1,
                        b']' => return Some(i + 1),
                        _ => return None,
                    }
                }
            }
            b'"' => string(s, i),
            b't' => s[i..].starts_with(b"true").then_some(i + 4),
            b'f' => s[i..].starts_with(b"false").then_some(i + 5),
            b'n' => s[i..].starts_with(b"null").then_some(i + 4),
            _ => number(s, i),
        }
    }
    fn string(s: &[u8], i: usize) -> Option<usize> {
        if s.get(i) != Some(&b'"') {
            return None;
        }
        let mut i = i + 1;
        loop {
            match *s.get(i)? {
                b'"' => return Some(i + 1),
                b'\\' => match *s.get(i + 1)? {
                    b'u' => {
                        if !s.get(i + 2..i + 6)?.iter().all(|c| c.is_ascii_hexdigit()) {
                            return None;
                        }
                        i += 6;
                    }
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    _ => return None,
                },
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
    }
    fn number(s: &[u8], mut i: usize) -> Option<usize> {
        let start = i;
        if s.get(i) == Some(&b'-') {
            i += 1;
        }
        let d0 = i;
        while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if i == d0 || (s[d0] == b'0' && i - d0 > 1) {
            return None;
        }
        if s.get(i) == Some(&b'.') {
            i += 1;
            let f = i;
            while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
            if i == f {
                return None;
            }
        }
        if matches!(s.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(s.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let e = i;
            while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
            if i == e {
                return None;
            }
        }
        (i > start).then_some(i)
    }
    match value(s, 0) {
        Some(end) => ws(s, end) == s.len() && std::str::from_utf8(s).is_ok(),
        None => false,
    }
}

#[test]
fn the_json_validator_itself() {
    assert!(valid_json(b"{\"a\": [1, 2.5e3, true, null, \"x\\u00e9\"]} "));
    assert!(!valid_json(b"{\"a\": }"));
    assert!(!valid_json(b"[01]"));
}

#[test]
fn generation_under_the_json_grammar_yields_valid_json_for_20_seeds() {
    let text = std::fs::read(grammars_dir().join("json.gbnf")).expect("json.gbnf (run scripts/fetch-reference-src.sh)");
    let vocab: Arc<FakeVocab> = Arc::new(FakeVocab::new());
    let n = vocab.n_tokens();
    let mut finished = 0;
    for seed in 0..20u32 {
        let mut g = GrammarSampler::new(vocab.clone(), &text, "root", false, vec![]).unwrap();
        let mut dist = Dist::new(seed);
        let mut out = Vec::new();
        // logits: closing characters and EOG favoured so documents end
        let mut logits = vec![0.0f32; n];
        for (s, l) in [("}", 3.0f32), ("]", 3.0), ("\"", 2.0), ("\"}", 3.0), (",", -1.0), ("{\"", 0.5)] {
            logits[vocab.id(s.as_bytes()) as usize] = l;
        }
        logits[vocab.eog as usize] = 8.0;
        let mut done = false;
        for step in 0..2000 {
            let mut c: Vec<TokenData> = (0..n as i32)
                .map(|id| TokenData {
                    id,
                    logit: logits[id as usize]
                        + (((id as u32).wrapping_mul(2654435761) ^ seed ^ step) % 7) as f32 * 0.1,
                    p: 0.0,
                })
                .collect();
            let mut cur = Candidates::new(&mut c);
            g.apply(&mut cur);
            dist.apply(&mut cur);
            let tok = cur.data[cur.selected as usize].id;
            assert_ne!(cur.data[cur.selected as usize].logit, f32::NEG_INFINITY, "seed {seed}: chose a masked token");
            if tok == vocab.eog {
                done = true;
                break;
            }
            g.accept(tok);
            out.extend_from_slice(&vocab.pieces[tok as usize]);
        }
        assert!(done, "seed {seed}: no end after 2000 tokens: {}", String::from_utf8_lossy(&out));
        assert!(valid_json(&out), "seed {seed}: invalid JSON: {}", String::from_utf8_lossy(&out));
        finished += 1;
    }
    assert_eq!(finished, 20);
}

#[test]
fn lazy_grammar_waits_for_a_trigger_token() {
    let v = FakeVocab::new();
    let trig = v.id(b"{\"");
    let p = parse(b"root ::= \"{\\\"\" [a-z]+ \"\\\"}\"").unwrap();
    let mut g = Grammar::new(&p, "root", true, vec![trig]).unwrap();
    // awaiting the trigger: nothing is masked, free text is accepted
    assert_eq!(allowed(&g, &v).len(), v.n_tokens());
    g.accept(&v, v.id(b"q")).unwrap();
    g.accept(&v, v.id(b"12")).unwrap();
    assert!(g.awaiting_trigger);
    // the trigger token starts the grammar (and is its first piece)
    g.accept(&v, trig).unwrap();
    assert!(!g.awaiting_trigger);
    let a = allowed(&g, &v);
    assert!(a.contains(&b"k".to_vec()) && !a.contains(&b"1".to_vec()) && !a.contains(&b"\"}".to_vec()));
    g.accept(&v, v.id(b"k")).unwrap();
    assert!(allowed(&g, &v).contains(&b"\"}".to_vec()));
}

#[test]
fn grammar_sampler_resets_and_clones() {
    let vocab: Arc<FakeVocab> = Arc::new(FakeVocab::new());
    let mut s = GrammarSampler::new(vocab.clone(), b"root ::= \"ab\"", "root", false, vec![]).unwrap();
    s.accept(vocab.id(b"a"));
    let c = s.clone_box().unwrap();
    let mut d = all_candidates(&vocab);
    let mut cur = Candidates::new(&mut d);
    let mut c = c;
    c.apply(&mut cur);
    let ok: Vec<i32> = d.iter().filter(|t| t.logit != f32::NEG_INFINITY).map(|t| t.id).collect();
    assert_eq!(ok, vec![vocab.id(b"b")]);
    s.reset();
    let mut d = all_candidates(&vocab);
    s.apply(&mut Candidates::new(&mut d));
    let ok: Vec<i32> = d.iter().filter(|t| t.logit != f32::NEG_INFINITY).map(|t| t.id).collect();
    assert_eq!(ok, vec![vocab.id(b"a")]);
    assert!(GrammarSampler::new(vocab, b"root ::= (", "root", false, vec![]).is_err());
}

/// Our side of the grammar parity trace (see ffi-tests/grammar_trace_ref.cpp,
/// which prints the reference's): same inputs, same format.
fn trace() -> String {
    use std::fmt::Write;
    let mut pieces: Vec<Vec<u32>> = (0x20u32..0x7f).map(|c| vec![c]).collect();
    for c in [0x0au32, 0xe9, 0x20ac, 0x65e5, 0x3053] {
        pieces.push(vec![c]);
    }
    for s in ["true", "e4", "- ", "12", "\"}"] {
        pieces.push(s.bytes().map(|b| b as u32).collect());
    }
    for p in pieces.iter_mut() {
        p.push(0);
    }
    let state = |g: &Grammar, out: &mut String| {
        write!(out, "stacks {}:", g.stacks.len()).unwrap();
        for s in &g.stacks {
            let items: Vec<String> = s.iter().map(|p| format!("{}:{}", p.rule, p.idx)).collect();
            write!(out, " [{}]", items.join(" ")).unwrap();
        }
        writeln!(out, " partial {} {}", g.partial_utf8.value, g.partial_utf8.n_remain).unwrap();
        if g.stacks.is_empty() || g.partial_utf8.n_remain != 0 {
            out.push_str("rej: -\n");
            return;
        }
        let mask: String = g.rejected_mask(&pieces).iter().map(|&b| if b { '1' } else { '0' }).collect();
        writeln!(out, "rej:{mask}").unwrap();
    };
    let inputs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/ffi-tests/grammar_inputs.txt")).unwrap();
    let mut out = String::new();
    for line in inputs.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, chunks) = line.split_once('\t').unwrap();
        let text = std::fs::read(grammars_dir().join(format!("{name}.gbnf"))).unwrap();
        writeln!(out, "== {name}").unwrap();
        let p = parse(&text).unwrap();
        writeln!(out, "rules {}", p.rules.len()).unwrap();
        for (i, r) in p.rules.iter().enumerate() {
            let items: Vec<String> = r.iter().map(|e| format!("{}:{}", e.ty as u32, e.value)).collect();
            writeln!(out, "r{i}: {}", items.join(" ")).unwrap();
        }
        let mut g = Grammar::new(&p, "root", false, vec![]).unwrap();
        state(&g, &mut out);
        for hex in chunks.split_whitespace() {
            let bytes: Vec<u8> =
                (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect();
            writeln!(out, "chunk {hex}").unwrap();
            if g.accept_str(&bytes).is_err() {
                out.push_str("EMPTY\n");
                break;
            }
            state(&g, &mut out);
        }
    }
    let texts =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/ffi-tests/grammar_malformed.txt")).unwrap();
    for (n, line) in texts.lines().skip(1).enumerate() {
        let mut t = Vec::new();
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && i + 1 < b.len() {
                t.push(if b[i + 1] == b'n' { b'\n' } else { b[i + 1] });
                i += 2;
            } else {
                t.push(b[i]);
                i += 1;
            }
        }
        let ok = parse(&t).ok().and_then(|p| Grammar::new(&p, "root", false, vec![]).ok()).is_some();
        writeln!(out, "grammar {n}: {}", if ok { "accepted" } else { "refused" }).unwrap();
    }
    out
}

#[test]
fn grammar_trace_equals_the_reference() {
    let golden =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/ffi-tests/golden/grammar_trace.txt")).unwrap();
    let ours = trace();
    if ours != golden {
        let path = std::env::temp_dir().join("minfer_grammar_trace.txt");
        std::fs::write(&path, &ours).unwrap();
        let line = ours.lines().zip(golden.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "grammar trace differs from the reference at line {} (ours in {}):\n ours: {}\n  ref: {}",
            line + 1,
            path.display(),
            ours.lines().nth(line).unwrap_or(""),
            golden.lines().nth(line).unwrap_or("")
        );
    }
}

#[test]
fn lazy_grammar_triggered_by_a_pattern_replays_from_the_match() {
    let v = FakeVocab::new();
    let p = parse(b"root ::= \"{\\\"\" [a-z]+ \"\\\"}\"").unwrap();
    let pat = Regex::new("[\\s\\S]*?(\\{\")[\\s\\S]*").unwrap();
    let mut g = Grammar::with_patterns(&p, "root", true, vec![], vec![pat]).unwrap();
    for t in [&b"q"[..], b" ", b"{", b"\""] {
        g.accept(&v, v.id(t)).unwrap();
    }
    // the buffer "q {\"" matched from offset 2: "{" and "\"" were replayed
    assert!(!g.awaiting_trigger);
    assert!(g.trigger_buffer.is_empty());
    let a = allowed(&g, &v);
    assert!(a.contains(&b"k".to_vec()) && !a.contains(&b"{".to_vec()));
    // a token cut by the match start is replayed from the start only
    let pat = Regex::new("[\\s\\S]*?(\\{\")[\\s\\S]*").unwrap();
    let mut g = Grammar::with_patterns(&p, "root", true, vec![], vec![pat]).unwrap();
    g.accept(&v, v.id(b"12")).unwrap();
    g.accept(&v, v.id(b"{\"")).unwrap();
    assert!(!g.awaiting_trigger);
    assert!(allowed(&g, &v).contains(&b"z".to_vec()));
    assert!(GrammarSampler::with_patterns(
        Arc::new(FakeVocab::new()),
        b"root ::= \"a\"",
        "root",
        true,
        vec![],
        &["(unclosed"]
    )
    .is_err());
}

#[test]
fn trigger_words_are_escaped() {
    let p = trigger_words_pattern(&[b"<|tool|>", b"a.b"]);
    assert_eq!(p, "[\\s\\S]*?(<\\|tool\\|>|a\\.b)[\\s\\S]*");
    let find = |t: &str| Regex::new(&p).unwrap().trigger_find(t.as_bytes());
    assert_eq!(find("xx<|tool|>"), Some(2));
    assert_eq!(find("aXb"), None);
}
