//! The vocabulary and its tokenizers, matching the reference
//! (llama.cpp 0c1e570, src/llama-vocab.cpp) token for token.
//!
//! - `Vocab::load` reads `tokenizer.ggml.*` from the GGUF metadata, validates
//!   it and derives what the reference derives (token attributes, special and
//!   end-of-generation ids, the special-token cache, the piece cache).
//! - `tokenize` splits the text on special tokens (`partition`), then runs
//!   the model's tokenizer on each remaining fragment: `spm.rs` (SentencePiece
//!   BPE over scores), `bpe.rs` (GPT-2 style merges after the pre-tokenizer of
//!   `pretokenize.rs`), `wpm.rs` (WordPiece), `ugm.rs` (Unigram).
//! - `token_to_piece` / `detokenize` turn ids back into bytes.
//!
//! Unicode data: `unicode_data.rs` is generated from the reference's own
//! tables by scripts/gen-unicode-tables.py (no crate: exact parity with the
//! reference's categories matters more than being current with Unicode).
//! The pre-tokenizer table (`pre_table.rs`: every `tokenizer.ggml.pre` name,
//! its flags and regexes) is generated from llama-vocab.cpp by
//! scripts/gen-pretokenizer-table.py.
//!
//! Validation: a load fails with a message on a wrong type of any
//! `tokenizer.ggml.*` key, scores or token types shorter than the tokens, a
//! duplicate token, BPE without merges, an unknown tokenizer model or
//! pre-tokenizer, a malformed charsmap. As in the reference, out-of-range
//! special ids are disabled or ignored with a warning. At run time an
//! out-of-range token id gets the function's failure value and a message,
//! and a vocabulary that cannot produce a needed byte token fails the call,
//! where the reference crashes or throws.

mod bpe;
mod hash;
mod plamo2;
// Generated tables keep their generators' layout.
#[rustfmt::skip]
#[allow(clippy::type_complexity, reason = "generated tables, typed where they are declared")]
mod pre_table;
pub mod pretokenize;
mod rwkv;
mod spm;
mod stdmap;
mod stdsort;
mod str_map;
mod ugm;
pub mod unicode;
#[rustfmt::skip]
mod unicode_data;
mod wpm;

use crate::error::{Error, Result};
use crate::gguf::{type_name_of, ArrayRef, GgufFile, GgufType, StrIter, Value};
use crate::model::metadata::{Override, Overrides};
use crate::model::vocab_info::VocabType;
use hash::fx_hash;
use std::collections::BTreeSet;
use str_map::{HashSet64, StrMap};

pub const TOKEN_NULL: i32 = -1;

/// The suffix (U+E000) that keeps `hybriddna` k-mers distinct in the token
/// map; removed from their text at load.
const DNA_KMER_MARKER: &[u8] = b"\xee\x80\x80";

// llama_token_attr bits
pub const ATTR_UNDEFINED: u32 = 0;
pub const ATTR_UNKNOWN: u32 = 1 << 0;
pub const ATTR_UNUSED: u32 = 1 << 1;
pub const ATTR_NORMAL: u32 = 1 << 2;
pub const ATTR_CONTROL: u32 = 1 << 3;
pub const ATTR_USER_DEFINED: u32 = 1 << 4;
pub const ATTR_BYTE: u32 = 1 << 5;
pub const ATTR_NORMALIZED: u32 = 1 << 6;
pub const ATTR_LSTRIP: u32 = 1 << 7;
pub const ATTR_RSTRIP: u32 = 1 << 8;
pub const ATTR_SINGLE_WORD: u32 = 1 << 9;

/// A pre-tokenizer type: the reference's `LLAMA_VOCAB_PRE_TYPE_*` name
/// without the prefix ("DEFAULT", "LLAMA3", "GEMMA4", …; see pre_table.rs).
pub type PreType = &'static str;

pub struct TokenData {
    /// The text with a trailing NUL (for llama_vocab_get_text).
    text: Box<[u8]>,
    pub score: f32,
    pub attr: u32,
}

impl TokenData {
    pub fn text(&self) -> &[u8] {
        &self.text[..self.text.len() - 1]
    }
    pub fn text_with_nul(&self) -> &[u8] {
        &self.text
    }
}

pub struct Vocab {
    pub kind: VocabType,
    /// `tokenizer.ggml.model` as written in the file.
    pub model_name: String,
    pub pre_name: String,
    pub pre_type: PreType,
    pub n_token_types: u32,
    pub tokens: Vec<TokenData>,
    token_to_id: StrMap,
    /// "left right" → rank
    bpe_ranks: StrMap,
    pub max_token_len: usize,

    pub bos: i32,
    pub eos: i32,
    pub eot: i32,
    pub eom: i32,
    pub unk: i32,
    pub sep: i32,
    pub pad: i32,
    pub mask: i32,
    pub linefeed: i32,
    pub fim_pre: i32,
    pub fim_suf: i32,
    pub fim_mid: i32,
    pub fim_pad: i32,
    pub fim_rep: i32,
    pub fim_sep: i32,

    pub add_space_prefix: bool,
    pub add_bos: bool,
    pub add_eos: bool,
    pub add_sep: bool,
    pub ignore_merges: bool,
    pub clean_spaces: bool,
    pub remove_extra_whitespaces: bool,
    pub escape_whitespaces: bool,
    pub treat_whitespace_as_suffix: bool,
    pub norm_lowercase: bool,
    pub norm_strip_accents: bool,

    pub eog: BTreeSet<i32>,
    pub suppress_tokens: Vec<i32>,
    cache_special: Vec<i32>,
    /// Specials that can start a match, by first byte (a prefilter).
    special_first_bytes: [bool; 256],
    // every token's piece (special tokens' text included), back to back:
    // token i's is cache_piece[piece_ends[i - 1]..piece_ends[i]]
    cache_piece: Vec<u8>,
    piece_ends: Vec<usize>,

    pretok: Option<pretokenize::PreTokenizer>,
    ugm: Option<ugm::Ugm>,
    rwkv: Option<rwkv::Rwkv>,
    plamo2: Option<plamo2::Plamo2>,
}

// --- reading metadata

/// The file plus the caller's kv overrides, which the reference applies to
/// every key it reads through `get_key` (scalars), not to the arrays.
struct Keys<'a> {
    f: &'a GgufFile,
    ov: &'a Overrides,
}

impl Keys<'_> {
    fn u32(&self, key: &str) -> Result<Option<u32>> {
        if let Some(o) = self.ov.get(key) {
            return match o {
                Override::Int(v) => u32::try_from(*v)
                    .map(Some)
                    .map_err(|_| Error::model(format!("override of {key} is out of range: {v}"))),
                _ => Err(Error::model(format!("override of {key} has the wrong type, expected an int"))),
            };
        }
        match self.f.get(key).as_ref() {
            None => Ok(None),
            Some(Value::U32(v)) => Ok(Some(*v)),
            Some(v) => Err(Error::model(format!("key {key} has wrong type {}, expected u32", v.type_name()))),
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>> {
        if let Some(o) = self.ov.get(key) {
            return match o {
                Override::Bool(b) => Ok(Some(*b)),
                _ => Err(Error::model(format!("override of {key} has the wrong type, expected a bool"))),
            };
        }
        match self.f.get(key).as_ref() {
            None => Ok(None),
            Some(Value::Bool(v)) => Ok(Some(*v)),
            Some(v) => Err(Error::model(format!("key {key} has wrong type {}, expected bool", v.type_name()))),
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>> {
        if let Some(o) = self.ov.get(key) {
            return match o {
                Override::Str(s) => Ok(Some(s.clone())),
                _ => Err(Error::model(format!("override of {key} has the wrong type, expected a string"))),
            };
        }
        match self.f.get(key).as_ref() {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(String::from_utf8_lossy(self.f.str_bytes(s)).into_owned())),
            Some(v) => Err(Error::model(format!("key {key} has wrong type {}, expected string", v.type_name()))),
        }
    }
}

/// The `fx_hash` of every token's text as the vocabulary will hold it
/// (empty when `tokenizer.ggml.tokens` is missing or malformed: the token
/// loop reports that). Membership by hash alone: a merge string whose
/// 64-bit hash equals a token's would pass for a token, which only makes
/// a warning's count one short.
fn token_text_hashes(f: &GgufFile) -> HashSet64 {
    let strings = match get_array(f, "tokenizer.ggml.tokens", &[GgufType::Str]) {
        Ok(Some(a)) => f.array_strings(&a),
        _ => None,
    };
    let mut set = HashSet64::with_capacity(at_most_a_million(strings.as_ref().and_then(|s| s.size_hint().1)));
    for (i, word) in strings.into_iter().flatten().enumerate() {
        set.insert(if word.is_empty() { fx_hash(format!("[EMPTY_{i}]").as_bytes()) } else { fx_hash(word) });
    }
    set
}

/// Merges hashed and their slots asked for ahead of their inserts.
const MERGE_BATCH: usize = 16;
/// How far ahead the token loop asks for a token's slot.
const TOKEN_PREFETCH: usize = 8;

/// A merge of a batch: its key, the key's hash, its halves' hashes.
struct MergeKey<'a> {
    key: &'a [u8],
    hash: u64,
    halves: Option<(u64, u64)>,
}

/// Reads `tokenizer.ggml.merges` into `ranks` ("first second" → its index;
/// a repeated merge keeps its first rank) and returns how many of the
/// distinct merges name a string that is not a token (for `check_tokens`'
/// warning; looking each merge's halves up in `token_to_id` after the
/// tokens were read took half of a Llama 3 vocabulary's load). The tables
/// are a cache miss per lookup: the merges go in batches whose slots are
/// asked for first.
fn read_merges(f: &GgufFile, merges: Option<StrIter>, ranks: &mut StrMap) -> Result<usize> {
    let token_hashes = token_text_hashes(f);
    ranks.reserve(at_most_a_million(merges.as_ref().and_then(|m| m.size_hint().1)), 12);
    let mut unknown = 0;
    let mut rank = 0i32;
    let mut batch: Vec<MergeKey> = Vec::with_capacity(MERGE_BATCH);
    let mut merges = merges.into_iter().flatten().peekable();
    while merges.peek().is_some() {
        batch.clear();
        for word in merges.by_ref().take(MERGE_BATCH) {
            // the key is the merge's text where it reads "first second" (a
            // space after the first character), else " " (the reference's
            // two empty halves)
            let (key, halves) = match word.get(1..).and_then(|r| r.iter().position(|&b| b == b' ')) {
                Some(p) => (word, Some((fx_hash(&word[..p + 1]), fx_hash(&word[p + 2..])))),
                None => (&b" "[..], None),
            };
            let hash = fx_hash(key);
            ranks.prefetch(hash);
            if let Some((a, b)) = halves {
                token_hashes.prefetch(a);
                token_hashes.prefetch(b);
            }
            batch.push(MergeKey { key, hash, halves });
        }
        for m in &batch {
            let inserted = ranks
                .insert_hashed_if_absent(m.key, m.hash, rank)
                .ok_or_else(|| Error::model("tokenizer.ggml.merges has too many entries"))?;
            rank = rank.wrapping_add(1);
            let known = m.halves.is_some_and(|(a, b)| token_hashes.contains(a) && token_hashes.contains(b));
            unknown += usize::from(inserted && !known);
        }
    }
    Ok(unknown)
}

/// A table's capacity for an array's claimed length: the largest
/// vocabularies have a few hundred thousand entries, and a hostile file's
/// claim must not reserve gigabytes before its entries are read.
fn at_most_a_million(claimed: Option<usize>) -> usize {
    claimed.unwrap_or(0).min(1 << 20)
}

fn get_array(f: &GgufFile, key: &str, elem: &[GgufType]) -> Result<Option<ArrayRef>> {
    match f.get(key).as_ref() {
        None => Ok(None),
        Some(Value::Array(a)) if elem.iter().any(|&t| t as u32 == a.elem_type) => Ok(Some(*a)),
        Some(v) => {
            let want: Vec<&str> = elem.iter().map(|&t| type_name_of(t as u32)).collect();
            let got = match v {
                Value::Array(a) => format!("is an array of element type {}", type_name_of(a.elem_type)),
                v => format!("has type {}", v.type_name()),
            };
            Err(Error::model(format!(
                "invalid gguf type for {key}: {key} {got}, expected an array of {}",
                want.join(" or ")
            )))
        }
    }
}

/// The regexes and byte encoding of a BPE pre-tokenizer (`llm_tokenizer_bpe`).
pub(crate) fn bpe_regexes(pre: PreType) -> (Vec<&'static str>, bool) {
    let table = pre_table::PRE_REGEXES;
    let (_, exprs, byte_encode) = table
        .iter()
        .find(|(types, _, _)| types.contains(&pre))
        .or_else(|| table.iter().find(|(types, _, _)| types.contains(&"DEFAULT")))
        .expect("the table has DEFAULT");
    (exprs.to_vec(), *byte_encode)
}

const CONTROL_WARN: &str =
    "control-looking token was not control-type; this is probably a bug in the model. its type will be overridden";

/// Where a special id lives in a `Vocab` (`bos`, `eos`, …).
type IdField = fn(&mut Vocab) -> &mut i32;

impl Vocab {
    pub fn n_tokens(&self) -> usize {
        self.tokens.len()
    }

    pub fn token(&self, id: i32) -> Option<&TokenData> {
        usize::try_from(id).ok().and_then(|i| self.tokens.get(i))
    }

    pub fn text_to_token(&self, text: &[u8]) -> i32 {
        self.token_to_id.get(text).unwrap_or(TOKEN_NULL)
    }

    pub fn find_bpe_rank(&self, key: &mut Vec<u8>, left: &[u8], right: &[u8]) -> i32 {
        if left.contains(&b' ') || right.contains(&b' ') {
            return -1;
        }
        key.clear();
        key.extend_from_slice(left);
        key.push(b' ');
        key.extend_from_slice(right);
        self.bpe_ranks.get(key.as_slice()).unwrap_or(-1)
    }

    fn attr(&self, id: i32) -> u32 {
        self.token(id).map_or(0, |t| t.attr)
    }
    pub fn is_user_defined(&self, id: i32) -> bool {
        self.attr(id) & ATTR_USER_DEFINED != 0
    }
    pub fn is_eog(&self, id: i32) -> bool {
        id != TOKEN_NULL && self.eog.contains(&id)
    }
    pub fn is_control(&self, id: i32) -> bool {
        self.attr(id) & ATTR_CONTROL != 0
    }

    /// `byte_to_token` of the reference, or an error where it would throw.
    pub fn byte_to_token(&self, ch: u8) -> Result<i32> {
        let t = match self.kind {
            VocabType::Spm | VocabType::Ugm => {
                let hex = format!("<0x{ch:02X}>");
                let t = self.text_to_token(hex.as_bytes());
                if t != TOKEN_NULL {
                    t
                } else {
                    self.text_to_token(&[ch])
                }
            }
            VocabType::Wpm | VocabType::Bpe => self.text_to_token(unicode::byte_to_utf8(ch)),
            VocabType::Plamo2 => self.text_to_token(format!("<0x{ch:02X}>").as_bytes()),
            _ => TOKEN_NULL,
        };
        if t == TOKEN_NULL {
            return Err(Error::model(format!("the vocabulary has no token for byte 0x{ch:02X}")));
        }
        Ok(t)
    }

    fn token_to_byte(&self, id: i32) -> Result<u8> {
        let text = self.token(id).map(TokenData::text).unwrap_or(&[]);
        // "<0xXX>": strtol over the two characters after "<0x" (0 if not hex)
        let hex = text.get(3..5).unwrap_or(&[]);
        let mut v: u32 = 0;
        for &b in hex {
            match (b as char).to_digit(16) {
                Some(d) => v = v * 16 + d,
                None => break,
            }
        }
        Ok(v as u8)
    }

    // --- loading

    pub fn load(f: &GgufFile, overrides: &Overrides) -> Result<Vocab> {
        let k = Keys { f, ov: overrides };
        let model_name = k
            .string("tokenizer.ggml.model")?
            .ok_or_else(|| Error::model("key not found in model: tokenizer.ggml.model"))?;
        let mut pre_name = k.string("tokenizer.ggml.pre")?.unwrap_or_default();
        let n_token_types = k.u32("tokenizer.ggml.token_type_count")?.unwrap_or(0);

        let mut v = Vocab {
            kind: VocabType::Spm,
            model_name: model_name.clone(),
            pre_name: String::new(),
            pre_type: "DEFAULT",
            n_token_types,
            tokens: Vec::new(),
            token_to_id: StrMap::default(),
            bpe_ranks: StrMap::default(),
            max_token_len: 0,
            bos: 1,
            eos: 2,
            eot: TOKEN_NULL,
            eom: TOKEN_NULL,
            unk: 0,
            sep: TOKEN_NULL,
            pad: TOKEN_NULL,
            mask: TOKEN_NULL,
            linefeed: 13,
            fim_pre: TOKEN_NULL,
            fim_suf: TOKEN_NULL,
            fim_mid: TOKEN_NULL,
            fim_pad: TOKEN_NULL,
            fim_rep: TOKEN_NULL,
            fim_sep: TOKEN_NULL,
            add_space_prefix: false,
            add_bos: false,
            add_eos: false,
            add_sep: false,
            ignore_merges: false,
            clean_spaces: false,
            remove_extra_whitespaces: false,
            escape_whitespaces: true,
            treat_whitespace_as_suffix: false,
            norm_lowercase: true,
            norm_strip_accents: false,
            eog: BTreeSet::new(),
            suppress_tokens: Vec::new(),
            cache_special: Vec::new(),
            special_first_bytes: [false; 256],
            cache_piece: Vec::new(),
            piece_ends: Vec::new(),
            pretok: None,
            ugm: None,
            rwkv: None,
            plamo2: None,
        };

        let set_ids = |v: &mut Vocab, bos, eos, unk, sep, pad, mask| {
            v.bos = bos;
            v.eos = eos;
            v.unk = unk;
            v.sep = sep;
            v.pad = pad;
            v.mask = mask;
        };
        const N: i32 = TOKEN_NULL;
        let mut charsmap: Vec<u8> = Vec::new();
        let mut unknown_merges = 0usize; // distinct merges naming a string that is not a token
        match model_name.as_str() {
            "no_vocab" | "none" => {
                v.kind = VocabType::None;
                set_ids(&mut v, N, N, N, N, N, N);
                v.linefeed = N;
                let arch = k.string("general.architecture")?.unwrap_or_default();
                if let Some(n) = k.u32(&format!("{arch}.vocab_size"))? {
                    log_warn!("adding {n} dummy tokens");
                    v.tokens = (0..n).map(|_| TokenData { text: Box::new([0]), score: 0.0, attr: 0 }).collect();
                }
                v.pre_name = pre_name;
                return Ok(v);
            }
            "llama" => {
                v.kind = VocabType::Spm;
                set_ids(&mut v, 1, 2, 0, N, N, N);
            }
            "bert" => {
                v.kind = VocabType::Wpm;
                set_ids(&mut v, 101, N, 100, 102, 0, 103);
                v.add_sep = true;
            }
            "gpt2" | "gemma4" | "whitespace" | "hybriddna" => {
                v.kind = VocabType::Bpe;
                let merges = match get_array(f, "tokenizer.ggml.merges", &[GgufType::Str])? {
                    Some(a) => Some(
                        f.array_strings(&a)
                            .ok_or_else(|| Error::model("invalid gguf type for tokenizer.ggml.merges"))?,
                    ),
                    // Kimi-K2 tokenizes without merges
                    None if model_name != "gemma4" && pre_name == "kimi-k2" => None,
                    None => return Err(Error::model("cannot find tokenizer merges in model file")),
                };
                unknown_merges = read_merges(f, merges, &mut v.bpe_ranks)?;
                if model_name == "gemma4" {
                    set_ids(&mut v, N, N, N, N, N, N);
                    pre_name = "gemma4".into();
                } else {
                    set_ids(&mut v, 11, 11, N, N, N, N);
                }
            }
            "t5" => {
                v.kind = VocabType::Ugm;
                set_ids(&mut v, N, 1, 2, N, 0, N);
                if let Some(a) = get_array(f, "tokenizer.ggml.precompiled_charsmap", &[GgufType::U8, GgufType::I8])? {
                    charsmap = a.elems(f.bytes()).unwrap_or(&[]).to_vec();
                    if charsmap.len() < 4 {
                        return Err(Error::model("precompiled_charsmap too small for xcda_blob_size header!"));
                    }
                    let blob = u32::from_le_bytes([charsmap[0], charsmap[1], charsmap[2], charsmap[3]]) as u64;
                    if blob + 4 >= charsmap.len() as u64 {
                        return Err(Error::model("Index out of array bounds in precompiled charsmap!"));
                    }
                }
            }
            "rwkv" => {
                v.kind = VocabType::Rwkv;
                set_ids(&mut v, N, N, N, N, N, N);
            }
            "test" => {
                v.kind = VocabType::Test;
                set_ids(&mut v, N, N, N, N, N, N);
            }
            "plamo2" => {
                v.kind = VocabType::Plamo2;
                set_ids(&mut v, 1, 2, 0, N, 3, N);
            }
            other => return Err(Error::model(format!("unknown tokenizer: '{other}'"))),
        }

        match v.kind {
            VocabType::Bpe => {
                v.add_space_prefix = false;
                v.escape_whitespaces = false;
                v.clean_spaces = true;
                v.pre_type = Self::pre_type_of(&mut v, &pre_name)?;
            }
            VocabType::Spm => {
                v.add_space_prefix = true;
                v.clean_spaces = false;
                v.add_bos = true;
                v.add_eos = false;
            }
            VocabType::Wpm => {
                v.add_space_prefix = false;
                v.clean_spaces = true;
                v.add_bos = true;
                v.add_eos = false;
                v.add_sep = true;
            }
            VocabType::Ugm => {
                v.add_bos = false;
                v.add_eos = true;
            }
            VocabType::Rwkv => {
                v.add_space_prefix = false;
                v.clean_spaces = false;
                v.add_bos = false;
                v.add_eos = false;
            }
            _ => {}
        }
        v.pre_name = pre_name;
        if let Some(b) = k.bool("tokenizer.ggml.add_space_prefix")? {
            v.add_space_prefix = b;
        }
        if let Some(b) = k.bool("tokenizer.ggml.remove_extra_whitespaces")? {
            v.remove_extra_whitespaces = b;
        }

        // --- tokens, scores, types
        let ta = get_array(f, "tokenizer.ggml.tokens", &[GgufType::Str])?.ok_or_else(|| {
            Error::model("cannot find tokenizer vocab in model file (tokenizer.ggml.tokens is missing)")
        })?;
        let n_tokens = u32::try_from(ta.len).map_err(|_| Error::model("tokenizer.ggml.tokens has too many entries"))?;
        let scores: Option<Vec<f32>> = match f.get("tokenizer.ggml.scores").as_ref() {
            None => None,
            Some(Value::Array(a)) if a.elem_type == GgufType::F32 as u32 => f.array_f32(a),
            Some(Value::Array(a)) if a.elem_type == GgufType::I32 as u32 => {
                f.array_i32(a).map(|x| x.into_iter().map(|s| s as f32).collect())
            }
            Some(_) => return Err(Error::model("invalid gguf type for tokenizer.ggml.scores")),
        };
        if let Some(s) = &scores {
            if s.len() < n_tokens as usize {
                return Err(Error::model(format!("Index out of array bounds for scores ({} < {n_tokens})", s.len())));
            }
        }
        let toktypes: Option<Vec<i32>> = match get_array(f, "tokenizer.ggml.token_type", &[GgufType::I32])? {
            None => None,
            Some(a) => {
                Some(f.array_i32(&a).ok_or_else(|| Error::model("invalid gguf type for tokenizer.ggml.token_type"))?)
            }
        };
        if let Some(t) = &toktypes {
            if t.len() < n_tokens as usize {
                return Err(Error::model(format!("Index out of array bounds for toktypes ({} < {n_tokens})", t.len())));
            }
        }
        let strings =
            f.array_strings(&ta).ok_or_else(|| Error::model("invalid gguf type for tokenizer.ggml.tokens"))?;
        v.tokens.reserve(n_tokens as usize);
        v.token_to_id.reserve(at_most_a_million(Some(n_tokens as usize)), 8);
        // each token's slot is asked for TOKEN_PREFETCH tokens ahead (a
        // cache miss per insert otherwise)
        let mut ahead = strings.clone().skip(TOKEN_PREFETCH);
        for (i, word) in strings.enumerate() {
            if let Some(w) = ahead.next() {
                v.token_to_id.prefetch(fx_hash(w));
            }
            let empty_name;
            let word = if word.is_empty() {
                log_warn!("empty token at index {i}");
                empty_name = format!("[EMPTY_{i}]");
                empty_name.as_bytes()
            } else {
                word
            };
            // with room for the NUL the text is kept with: one allocation
            let mut text: Vec<u8> = Vec::with_capacity(word.len() + 1);
            text.extend_from_slice(word);
            let inserted = v
                .token_to_id
                .insert_if_absent(&text, i as i32)
                .ok_or_else(|| Error::model("tokenizer.ggml.tokens has too many entries"))?;
            if !inserted {
                return Err(Error::model(format!(
                    "tokenizer.ggml.tokens: token {i} ('{}') appears twice in the vocabulary",
                    String::from_utf8_lossy(&text)
                )));
            }
            v.max_token_len = v.max_token_len.max(text.len());
            let score = scores.as_ref().map_or(0.0, |s| s[i]);
            let attr = match toktypes.as_ref().map(|t| t[i]) {
                None => ATTR_NORMAL,
                Some(2) => ATTR_UNKNOWN,
                Some(5) => ATTR_UNUSED,
                Some(1) => ATTR_NORMAL,
                Some(3) => ATTR_CONTROL,
                Some(4) => ATTR_USER_DEFINED,
                Some(6) => ATTR_BYTE,
                Some(_) => ATTR_UNDEFINED,
            };
            text.push(0);
            v.tokens.push(TokenData { text: text.into_boxed_slice(), score, attr });
        }
        if v.tokens.len() != n_tokens as usize {
            return Err(Error::model("tokenizer.ggml.tokens is truncated"));
        }

        v.check_tokens(unknown_merges);

        if model_name == "hybriddna" {
            let oov = v.text_to_token(b"<oov>");
            if oov != TOKEN_NULL {
                for t in &mut v.tokens[oov as usize + 1..] {
                    let x = t.text();
                    if x.len() > DNA_KMER_MARKER.len() && x.ends_with(DNA_KMER_MARKER) {
                        let mut nt = x[..x.len() - DNA_KMER_MARKER.len()].to_vec();
                        nt.push(0);
                        t.text = nt.into_boxed_slice();
                    }
                }
            }
        }

        // --- the tokenizer
        match v.kind {
            VocabType::Bpe => {
                let (exprs, byte_encode) = bpe_regexes(v.pre_type);
                v.pretok = Some(pretokenize::PreTokenizer::new(&exprs, byte_encode)?);
            }
            VocabType::Ugm => v.ugm = Some(ugm::Ugm::new(&v, charsmap)?),
            VocabType::Rwkv => v.rwkv = Some(rwkv::Rwkv::new(&v)),
            VocabType::Plamo2 => v.plamo2 = Some(plamo2::Plamo2::new(&v)?),
            _ => {}
        }

        // --- the newline token
        v.linefeed = match v.kind {
            VocabType::Spm => match v.byte_to_token(b'\n') {
                Ok(t) => t,
                Err(_) => {
                    log_warn!("SPM vocabulary, but newline token not found; using special_pad_id instead");
                    v.pad
                }
            },
            VocabType::Wpm => v.pad,
            VocabType::Rwkv => *v
                .tokenize(b"\n", false, false)?
                .first()
                .ok_or_else(|| Error::model("model vocab missing newline token"))?,
            _ => {
                let ids = v.tokenize(b"\n", false, false)?;
                match ids.first() {
                    Some(&t) => t,
                    None => {
                        log_warn!("model vocab missing newline token, using special_pad_id instead");
                        v.pad
                    }
                }
            }
        };

        v.read_special_ids(&k)?;
        v.derive_specials();
        v.build_caches();
        v.per_model_attrs(&k)?;
        Ok(v)
    }

    /// Warnings for what the reference accepts silently: byte tokens whose
    /// text is not `<0xHH>` (they decode as `strtol` reads them) and merges
    /// naming strings that are not tokens (`unknown_merges` of them, counted
    /// while the merges were read).
    fn check_tokens(&self, unknown_merges: usize) {
        let mut bad_bytes = self.tokens.iter().enumerate().filter(|(_, t)| {
            let x = t.text();
            t.attr & ATTR_BYTE != 0
                && !(x.len() == 6 && x.starts_with(b"<0x") && x[5] == b'>' && x[3..5].iter().all(u8::is_ascii_hexdigit))
        });
        if let Some((i, t)) = bad_bytes.next() {
            log_warn!(
                "{} byte token(s) do not read <0xHH>, e.g. {i} '{}'; they decode to byte 0x{:02X} as in the reference",
                1 + bad_bytes.count(),
                String::from_utf8_lossy(t.text()),
                self.token_to_byte(i as i32).unwrap_or(0)
            );
        }
        if unknown_merges > 0 {
            log_warn!(
                "{unknown_merges} of {} BPE merges name strings that are not tokens (kept, as in the reference)",
                self.bpe_ranks.len()
            );
        }
    }

    fn pre_type_of(v: &mut Vocab, pre: &str) -> Result<PreType> {
        if pre.is_empty() {
            log_warn!("missing pre-tokenizer type, using: 'default' (GENERATION QUALITY WILL BE DEGRADED! CONSIDER REGENERATING THE MODEL)");
            return Ok("DEFAULT");
        }
        let Some((_, kind, sets)) = pre_table::PRE_NAMES.iter().find(|(names, _, _)| names.contains(&pre)) else {
            return Err(Error::model(format!("unknown pre-tokenizer type: '{pre}'")));
        };
        for &(key, value) in sets.iter() {
            let b = value == "true";
            match key {
                "clean_spaces" => v.clean_spaces = b,
                "ignore_merges" => v.ignore_merges = b,
                "add_bos" => v.add_bos = b,
                "add_sep" => v.add_sep = b,
                "escape_whitespaces" => v.escape_whitespaces = b,
                "normalizer_opts.lowercase" => v.norm_lowercase = b,
                "special_bos_id" => v.bos = TOKEN_NULL,
                other => return Err(Error::model(format!("pre-tokenizer table: unknown setting {other}"))),
            }
        }
        Ok(kind)
    }

    fn read_special_ids(&mut self, k: &Keys) -> Result<()> {
        let n = self.tokens.len();
        let keys: [(&str, IdField); 17] = [
            ("tokenizer.ggml.bos_token_id", |v| &mut v.bos),
            ("tokenizer.ggml.eos_token_id", |v| &mut v.eos),
            ("tokenizer.ggml.eot_token_id", |v| &mut v.eot),
            ("tokenizer.ggml.eom_token_id", |v| &mut v.eom),
            ("tokenizer.ggml.unknown_token_id", |v| &mut v.unk),
            ("tokenizer.ggml.seperator_token_id", |v| &mut v.sep),
            ("tokenizer.ggml.padding_token_id", |v| &mut v.pad),
            ("tokenizer.ggml.mask_token_id", |v| &mut v.mask),
            ("tokenizer.ggml.fim_pre_token_id", |v| &mut v.fim_pre),
            ("tokenizer.ggml.fim_suf_token_id", |v| &mut v.fim_suf),
            ("tokenizer.ggml.fim_mid_token_id", |v| &mut v.fim_mid),
            ("tokenizer.ggml.fim_pad_token_id", |v| &mut v.fim_pad),
            ("tokenizer.ggml.fim_rep_token_id", |v| &mut v.fim_rep),
            ("tokenizer.ggml.fim_sep_token_id", |v| &mut v.fim_sep),
            ("tokenizer.ggml.prefix_token_id", |v| &mut v.fim_pre),
            ("tokenizer.ggml.suffix_token_id", |v| &mut v.fim_suf),
            ("tokenizer.ggml.middle_token_id", |v| &mut v.fim_mid),
        ];
        for (key, field) in keys {
            let id = field(self);
            if *id >= 0 && *id as usize >= n {
                log_warn!("default special token '{key}' = {} out of vocab range, disabling", *id);
                *id = TOKEN_NULL;
            }
            let Some(new_id) = k.u32(key)? else { continue };
            if new_id as usize >= n {
                log_warn!("bad special token: '{key}' = {new_id}, using default id {}", *id);
            } else {
                *id = new_id as i32;
            }
        }
        if let Some(b) = k.bool("tokenizer.ggml.add_bos_token")? {
            self.add_bos = b;
        }
        if let Some(b) = k.bool("tokenizer.ggml.add_eos_token")? {
            self.add_eos = b;
        }
        if let Some(b) = k.bool("tokenizer.ggml.add_sep_token")? {
            self.add_sep = b;
        }
        if self.pre_type == "GEMMA4" && !self.add_bos {
            self.add_bos = true;
            log_warn!("override 'tokenizer.ggml.add_bos_token' to 'true' for Gemma4");
        }
        if let Some(b) = k.bool("tokenizer.ggml.normalizer.lowercase")? {
            self.norm_lowercase = b;
        }
        self.norm_strip_accents = self.norm_lowercase;
        if let Some(b) = k.bool("tokenizer.ggml.normalizer.strip_accents")? {
            self.norm_strip_accents = b;
        }
        if let Some(a) = get_array(k.f, "tokenizer.ggml.suppress_tokens", &[GgufType::I32])? {
            let ids = k.f.array_i32(&a).unwrap_or_default();
            self.suppress_tokens = ids.into_iter().filter(|&id| id >= 0 && (id as usize) < n).collect();
        }
        Ok(())
    }

    fn force_control(&mut self, id: i32) {
        let t = &mut self.tokens[id as usize];
        if t.attr & ATTR_CONTROL == 0 {
            log_warn!("{CONTROL_WARN}: {id} '{}'", String::from_utf8_lossy(t.text()));
            t.attr |= ATTR_CONTROL;
        }
    }

    /// Auto-detected special tokens, unused tokens, end-of-generation set.
    fn derive_specials(&mut self) {
        const EOT: &[&str] = &[
            "<|eot_id|>",
            "<|im_end|>",
            "<|end|>",
            "<end_of_turn>",
            "<|endoftext|>",
            "<|end_of_text|>",
            "<EOT>",
            "_<EOT>",
            "[EOT]",
            "<｜end▁of▁sentence｜>",
            "<end_of_utterance>",
        ];
        const EOM: &[&str] = &["<|eom_id|>"];
        const FIM_PRE: &[&str] = &[
            "<|fim_prefix|>",
            "<fim-prefix>",
            "<fim_prefix>",
            "<｜fim▁begin｜>",
            "<PRE>",
            "▁<PRE>",
            "<|code_prefix|>",
            "<|prefix|>",
        ];
        const FIM_SUF: &[&str] = &[
            "<|fim_suffix|>",
            "<fim-suffix>",
            "<fim_suffix>",
            "<｜fim▁hole｜>",
            "<SUF>",
            "▁<SUF>",
            "<|code_suffix|>",
            "<|suffix|>",
        ];
        const FIM_MID: &[&str] = &[
            "<|fim_middle|>",
            "<fim-middle>",
            "<fim_middle>",
            "<｜fim▁end｜>",
            "<MID>",
            "▁<MID>",
            "<|code_middle|>",
            "<|middle|>",
        ];
        const FIM_PAD: &[&str] = &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"];
        const FIM_REP: &[&str] = &["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"];
        const FIM_SEP: &[&str] = &["<|file_sep|>"];
        const EOG: &[&str] = &[
            "<|eot_id|>",
            "<|im_end|>",
            "<|end|>",
            "<|return|>",
            "<|call|>",
            "<|flush|>",
            "<|calls|>",
            "<end_of_turn>",
            "<|endoftext|>",
            "</s>",
            "<|eom_id|>",
            "<EOT>",
            "_<EOT>",
            "[EOT]",
            "[EOS]",
            "<|end_of_text|>",
            "<end_of_utterance>",
            "<eos>",
            "<turn|>",
            "<|tool_response>",
            "<｜end▁of▁sentence｜>",
            "[e~[",
        ];

        let slots: [(IdField, &[&str]); 8] = [
            (|v| &mut v.eot, EOT),
            (|v| &mut v.eom, EOM),
            (|v| &mut v.fim_pre, FIM_PRE),
            (|v| &mut v.fim_suf, FIM_SUF),
            (|v| &mut v.fim_mid, FIM_MID),
            (|v| &mut v.fim_pad, FIM_PAD),
            (|v| &mut v.fim_rep, FIM_REP),
            (|v| &mut v.fim_sep, FIM_SEP),
        ];
        // each slot's named tokens present (a few); all of them, sorted by id
        let named: Vec<Vec<i32>> = slots
            .iter()
            .map(|(_, names)| {
                names.iter().map(|n| self.text_to_token(n.as_bytes())).filter(|&id| id != TOKEN_NULL).collect()
            })
            .collect();
        let mut candidates: Vec<i32> = named.concat();
        candidates.sort_unstable();
        candidates.dedup();
        // The reference walks its unordered_map token_to_id and keeps the
        // first candidate it meets: where a slot has two, walk the same
        // order (stdmap.rs); else any order gives each slot its one.
        let order: Vec<u32> = if named.iter().any(|ids| ids.len() > 1) {
            stdmap::iteration_order(self.tokens.iter().map(TokenData::text))
                .unwrap_or_else(|| (0..self.tokens.len() as u32).collect())
        } else {
            candidates.iter().map(|&id| id as u32).collect()
        };
        for &id in &order {
            let id = id as i32;
            if candidates.binary_search(&id).is_err() {
                continue;
            }
            for ((slot, _), ids) in slots.iter().zip(&named) {
                if *slot(self) == TOKEN_NULL && ids.contains(&id) {
                    *slot(self) = id;
                    self.force_control(id);
                }
            }
        }

        // unused: control tokens whose text contains "unused"
        for t in &mut self.tokens {
            if t.attr & ATTR_CONTROL != 0 && t.attr & ATTR_UNUSED == 0 && t.text().windows(6).any(|w| w == b"unused") {
                t.attr |= ATTR_UNUSED;
            }
        }

        self.eog.clear();
        for id in [self.fim_pad, self.fim_rep, self.fim_sep] {
            if id != TOKEN_NULL {
                self.eog.insert(id);
            }
        }
        for name in EOG {
            let id = self.text_to_token(name.as_bytes());
            if id != TOKEN_NULL {
                self.eog.insert(id);
                self.force_control(id);
            }
        }
        for name in ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"] {
            let id = self.text_to_token(name.as_bytes());
            if id != TOKEN_NULL {
                log_warn!("setting token '{name}' ({id}) attribute to USER_DEFINED");
                self.tokens[id as usize].attr = ATTR_USER_DEFINED;
            }
        }
        for id in [self.eos, self.eot, self.eom] {
            if id != TOKEN_NULL && !self.eog.contains(&id) {
                self.eog.insert(id);
                log_warn!("special id {id} is not in special_eog_ids - the tokenizer config may be incorrect");
            }
        }
        let text_of = |v: &Vocab, id: i32| v.token(id).map(|t| t.text().to_vec()).unwrap_or_default();
        let (mut has_return, mut has_call, mut has_end, mut has_flush, mut end_id) =
            (false, false, false, false, TOKEN_NULL);
        for &id in &self.eog {
            match text_of(self, id).as_slice() {
                b"<|return|>" => has_return = true,
                b"<|call|>" | b"<|calls|>" => has_call = true,
                b"<|flush|>" => has_flush = true,
                b"<|end|>" => {
                    has_end = true;
                    end_id = id;
                }
                _ => {}
            }
        }
        if has_call && has_end && (has_return || has_flush) {
            self.eog.remove(&end_id);
            self.tokens[end_id as usize].attr = ATTR_USER_DEFINED;
        }
        let (mut marker, mut s_id) = (false, TOKEN_NULL);
        for &id in &self.eog {
            match text_of(self, id).as_slice() {
                b"<|tool_response>" | b"<|plamo:eos|>" => marker = true,
                b"</s>" => s_id = id,
                _ => {}
            }
        }
        if marker && s_id != TOKEN_NULL {
            self.eog.remove(&s_id);
            self.tokens[s_id as usize].attr = ATTR_NORMAL;
        }
    }

    fn build_caches(&mut self) {
        let mut special: Vec<i32> = (0..self.tokens.len() as i32)
            .filter(|&id| self.tokens[id as usize].attr & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN) != 0)
            .collect();
        // std::sort by length, descending: equal lengths end in libstdc++'s order
        let tokens = &self.tokens;
        stdsort::sort_by(&mut special, &|&a: &i32, &b: &i32| {
            tokens[a as usize].text().len() > tokens[b as usize].text().len()
        });
        for &id in &special {
            if let Some(&b) = self.tokens[id as usize].text().first() {
                self.special_first_bytes[b as usize] = true;
            }
        }
        self.cache_special = special;
        let (mut bytes, mut ends) = (Vec::new(), Vec::with_capacity(self.tokens.len()));
        for id in 0..self.tokens.len() as i32 {
            bytes.extend_from_slice(&self.piece_uncached(id, true));
            ends.push(bytes.len());
        }
        self.cache_piece = bytes;
        self.piece_ends = ends;
    }

    fn per_model_attrs(&mut self, k: &Keys) -> Result<()> {
        let name = k.string("general.name")?.unwrap_or_default().to_ascii_lowercase();
        let pre = k.string("tokenizer.ggml.pre")?.unwrap_or_default();
        let arch = k.string("general.architecture")?.unwrap_or_default();
        let any = |s: &str, subs: &[&str]| subs.iter().any(|x| s.contains(x));
        let id_of = |v: &Vocab, t: &str| -> Result<usize> {
            let id = v.text_to_token(t.as_bytes());
            if id == TOKEN_NULL {
                return Err(Error::model(format!("token '{t}' is missing from the vocabulary")));
            }
            Ok(id as usize)
        };
        if any(&pre, &["jina-v2-de", "jina-v2-es", "jina-v2-code"]) || any(&arch, &["nomic-bert-moe", "jina-bert-v3"]) {
            match id_of(self, "<mask>") {
                Ok(id) => self.tokens[id].attr |= ATTR_LSTRIP,
                Err(_) => log_warn!("Mask token is missing in vocab, please reconvert model!"),
            }
        } else if any(&name, &["phi-3", "phi3"]) {
            for i in 0..self.cache_special.len() {
                let id = self.cache_special[i] as usize;
                self.tokens[id].attr |= ATTR_RSTRIP;
            }
            let id = id_of(self, "</s>")?;
            self.tokens[id].attr |= ATTR_RSTRIP;
            for t in ["<unk>", "<s>", "<|endoftext|>"] {
                let id = id_of(self, t)?;
                self.tokens[id].attr &= !ATTR_RSTRIP;
            }
        } else if any(&name, &["modern-bert"]) {
            match id_of(self, "[MASK]") {
                Ok(id) => self.tokens[id].attr |= ATTR_LSTRIP,
                Err(_) => log_warn!("Mask token missing in vocab!"),
            }
        }
        Ok(())
    }

    // --- tokenize

    /// Splits `text` on special tokens: raw fragments (offset, length) and tokens.
    fn partition(&self, text: &[u8], parse_special: bool) -> Vec<Frag> {
        let mut frags = vec![Frag::Raw(0, text.len())];
        // Only specials that occur somewhere in the text can split it.
        let candidates = self.cache_special.iter().filter(|&&id| {
            let t = &self.tokens[id as usize];
            parse_special || t.attr & (ATTR_CONTROL | ATTR_UNKNOWN) == 0
        });
        let has_first = text.iter().any(|&b| self.special_first_bytes[b as usize]);
        if !has_first {
            return frags;
        }
        for &id in candidates {
            let tok = &self.tokens[id as usize];
            let needle = tok.text();
            if find(text, needle, 0, text.len()).is_none() {
                continue;
            }
            let mut out = Vec::with_capacity(frags.len() + 2);
            for fr in frags {
                let Frag::Raw(off, len) = fr else {
                    out.push(fr);
                    continue;
                };
                let (mut base, mut blen) = (off, len);
                loop {
                    let Some(m) = find(text, needle, base, base + blen) else {
                        if blen > 0 {
                            out.push(Frag::Raw(base, blen));
                        }
                        break;
                    };
                    if m > base {
                        let mut l = m - base;
                        if tok.attr & ATTR_LSTRIP != 0 {
                            while l > 0 && is_c_space(text[base + l - 1]) {
                                l -= 1;
                            }
                        }
                        if l > 0 {
                            out.push(Frag::Raw(base, l));
                        }
                    }
                    out.push(Frag::Token(id));
                    if m + needle.len() < base + blen {
                        let mut ro = m + needle.len();
                        let mut rl = blen - ((m - base) + needle.len());
                        if tok.attr & ATTR_RSTRIP != 0 {
                            while rl > 0 && is_c_space(text[ro]) {
                                ro += 1;
                                rl -= 1;
                            }
                        }
                        base = ro;
                        blen = rl;
                    } else {
                        break;
                    }
                }
            }
            frags = out;
        }
        frags
    }

    /// `llama_vocab::impl::tokenize`.
    pub fn tokenize(&self, text: &[u8], add_special: bool, parse_special: bool) -> Result<Vec<i32>> {
        let frags = if text.is_empty() { Vec::new() } else { self.partition(text, parse_special) };
        let mut out = Vec::new();
        let need = |id: i32, what: &str| -> Result<i32> {
            if id == TOKEN_NULL {
                Err(Error::model(format!("the vocabulary has no {what} token, which add_special needs")))
            } else {
                Ok(id)
            }
        };
        match self.kind {
            VocabType::Spm => {
                let mut prev_special = true;
                if add_special && self.add_bos {
                    out.push(need(self.bos, "BOS")?);
                }
                for fr in &frags {
                    match *fr {
                        Frag::Raw(off, len) => {
                            let mut t = Vec::with_capacity(len + 8);
                            if self.add_space_prefix && prev_special {
                                t.push(b' ');
                            }
                            t.extend_from_slice(&text[off..off + len]);
                            let t = escape_whitespace(&t);
                            spm::tokenize(self, &t, &mut out)?;
                            prev_special = false;
                        }
                        Frag::Token(id) => {
                            out.push(id);
                            prev_special = true;
                        }
                    }
                }
                if add_special && self.add_eos {
                    out.push(need(self.eos, "EOS")?);
                }
            }
            VocabType::Bpe => {
                if add_special && self.add_bos {
                    out.push(need(self.bos, "BOS")?);
                }
                let mut session = bpe::Session::new(self);
                for fr in &frags {
                    match *fr {
                        Frag::Raw(off, len) => {
                            let raw = &text[off..off + len];
                            if self.escape_whitespaces {
                                session.tokenize_fragment(&escape_whitespace(raw), &mut out)?;
                            } else {
                                session.tokenize_fragment(raw, &mut out)?;
                            }
                        }
                        Frag::Token(id) => out.push(id),
                    }
                }
                if add_special && self.add_eos {
                    out.push(need(self.eos, "EOS")?);
                }
            }
            VocabType::Wpm => {
                if add_special {
                    out.push(need(self.bos, "BOS")?);
                }
                for fr in &frags {
                    match *fr {
                        Frag::Raw(off, len) => wpm::tokenize(self, &text[off..off + len], &mut out),
                        Frag::Token(id) => out.push(id),
                    }
                }
                if add_special {
                    out.push(need(self.sep, "SEP")?);
                }
            }
            VocabType::Ugm => {
                if add_special && self.add_bos {
                    out.push(need(self.bos, "BOS")?);
                }
                let u = self.ugm.as_ref().ok_or_else(|| Error::model("UGM tokenizer not initialized"))?;
                for fr in &frags {
                    match *fr {
                        Frag::Raw(off, len) => u.tokenize(self, &text[off..off + len], &mut out)?,
                        Frag::Token(id) => out.push(id),
                    }
                }
                if add_special && self.add_eos {
                    out.push(need(self.eos, "EOS")?);
                }
            }
            VocabType::Rwkv => {
                let r = self.rwkv.as_ref().ok_or_else(|| Error::model("RWKV tokenizer not initialized"))?;
                for fr in &frags {
                    match *fr {
                        Frag::Raw(off, len) => r.tokenize(self, &text[off..off + len], &mut out),
                        Frag::Token(id) => out.push(id),
                    }
                }
            }
            VocabType::Plamo2 => {
                let p = self.plamo2.as_ref().ok_or_else(|| Error::model("PLaMo-2 tokenizer not initialized"))?;
                for fr in &frags {
                    match *fr {
                        Frag::Raw(off, len) => p.encode(&text[off..off + len], &mut out),
                        Frag::Token(id) => out.push(id),
                    }
                }
            }
            VocabType::Test => {
                let n_vocab = self.tokens.len().max(1) as u64;
                for fr in &frags {
                    match *fr {
                        Frag::Raw(off, len) => {
                            for chunk in text[off..off + len].chunks(5) {
                                let h = chunk.iter().fold(0u64, |h, &b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
                                out.push((h % n_vocab) as i32);
                            }
                        }
                        Frag::Token(id) => out.push(id),
                    }
                }
            }
            VocabType::None => return Err(Error::model("this vocabulary cannot tokenize (no tokenizer model)")),
        }
        Ok(out)
    }

    // --- pieces

    fn piece_uncached(&self, id: i32, special: bool) -> Vec<u8> {
        let Some(t) = self.token(id) else { return Vec::new() };
        let attr = t.attr;
        if !special && attr & (ATTR_UNKNOWN | ATTR_CONTROL) != 0 {
            return Vec::new();
        }
        let text = t.text();
        match self.kind {
            VocabType::Wpm | VocabType::Spm | VocabType::Ugm | VocabType::Bpe => {
                if attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED) != 0 {
                    return text.to_vec();
                }
                if attr & ATTR_NORMAL != 0 {
                    if self.kind != VocabType::Bpe || self.escape_whitespaces {
                        return unescape_whitespace(text);
                    }
                    return decode_text(text);
                }
                if attr & ATTR_BYTE != 0 {
                    return vec![self.token_to_byte(id).unwrap_or(0)];
                }
                Vec::new()
            }
            VocabType::Rwkv => rwkv::unescape(text),
            VocabType::Test => format!("{id:x}").into_bytes(),
            VocabType::Plamo2 => {
                if attr & ATTR_BYTE != 0
                    && text.len() == 6
                    && text.starts_with(b"<0x")
                    && text[5] == b'>'
                    && text[3..5].iter().all(u8::is_ascii_hexdigit)
                {
                    return vec![self.token_to_byte(id).unwrap_or(0)];
                }
                text.to_vec()
            }
            VocabType::None => Vec::new(),
        }
    }

    /// The piece of a token (`llama_token_to_piece` without the buffer):
    /// empty for control/unknown tokens unless `special`; up to `lstrip`
    /// leading spaces removed.
    pub fn piece(&self, id: i32, lstrip: i32, special: bool) -> Result<&[u8]> {
        if self.kind == VocabType::None {
            return Err(Error::invalid("the vocabulary has no tokens' text (no tokenizer model)"));
        }
        let t = self
            .token(id)
            .ok_or_else(|| Error::invalid(format!("token id {id} is out of range [0, {})", self.tokens.len())))?;
        if !special && t.attr & (ATTR_UNKNOWN | ATTR_CONTROL) != 0 {
            return Ok(&[]);
        }
        let at = id as usize;
        let mut p: &[u8] = &self.cache_piece[if at == 0 { 0 } else { self.piece_ends[at - 1] }..self.piece_ends[at]];
        let mut i = 0;
        while i < lstrip && !p.is_empty() && p[0] == b' ' {
            p = &p[1..];
            i += 1;
        }
        Ok(p)
    }

    /// `llama_detokenize` into a buffer of `max` bytes: (the length before
    /// the clean-up passes, which is what a too-small buffer is told; the
    /// text). When that length exceeds `max`, the text is what the reference
    /// leaves in the short buffer: the leading whole pieces that fit.
    pub fn detokenize(
        &self,
        ids: &[i32],
        remove_special: bool,
        unparse_special: bool,
        max: usize,
    ) -> Result<(usize, Vec<u8>)> {
        if self.kind == VocabType::None {
            return Ok((0, Vec::new()));
        }
        let mut ids = ids;
        let mut remove_space = self.add_space_prefix;
        if remove_special && self.add_bos && ids.first() == Some(&self.bos) {
            remove_space = false;
            ids = &ids[1..];
        }
        if remove_special && self.add_eos && ids.last() == Some(&self.eos) {
            ids = &ids[..ids.len() - 1];
        }
        let mut text = Vec::new();
        let mut fitting = None; // bytes of the pieces before the first that did not fit
        for &id in ids {
            let piece = self.piece(id, remove_space as i32, unparse_special)?;
            if fitting.is_none() && text.len() + piece.len() > max {
                fitting = Some(text.len());
            }
            text.extend_from_slice(piece);
            remove_space = false;
        }
        let raw = text.len();
        if let Some(n) = fitting {
            text.truncate(n);
            return Ok((raw, text));
        }
        if self.clean_spaces {
            clean_spaces(&mut text);
        }
        Ok((raw, text))
    }

    // --- getters for the C API

    pub fn token_text_c(&self, id: i32) -> Option<&[u8]> {
        self.token(id).map(TokenData::text_with_nul)
    }
}

#[derive(Debug, Clone, Copy)]
enum Frag {
    Raw(usize, usize),
    Token(i32),
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Index of the first `b` in `s` (16 bytes per step, which the compiler
/// turns into a vector compare and a mask).
#[inline]
fn memchr(b: u8, s: &[u8]) -> Option<usize> {
    let mut chunks = s.chunks_exact(16);
    let mut base = 0;
    for c in &mut chunks {
        let mut mask = 0u32;
        for (i, &x) in c.iter().enumerate() {
            mask |= u32::from(x == b) << i;
        }
        if mask != 0 {
            return Some(base + mask.trailing_zeros() as usize);
        }
        base += 16;
    }
    chunks.remainder().iter().position(|&x| x == b).map(|p| base + p)
}

/// First occurrence of `needle` in `hay[from..to]` (absolute index).
fn find(hay: &[u8], needle: &[u8], from: usize, to: usize) -> Option<usize> {
    let n = needle.len();
    if n == 0 || to < from || to - from < n {
        return None;
    }
    let first = needle[0];
    let last_start = to - n;
    let mut i = from;
    while i <= last_start {
        match memchr(first, &hay[i..=last_start]) {
            None => return None,
            Some(p) => {
                let s = i + p;
                if &hay[s..s + n] == needle {
                    return Some(s);
                }
                i = s + 1;
            }
        }
    }
    None
}

/// ' ' → U+2581
fn escape_whitespace(t: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(t.len() + t.len() / 2);
    for &b in t {
        if b == b' ' {
            out.extend_from_slice("\u{2581}".as_bytes());
        } else {
            out.push(b);
        }
    }
    out
}

/// U+2581 → ' '
fn unescape_whitespace(t: &[u8]) -> Vec<u8> {
    let pat = "\u{2581}".as_bytes();
    let mut out = Vec::with_capacity(t.len());
    let mut i = 0;
    while i < t.len() {
        if t[i..].starts_with(pat) {
            out.push(b' ');
            i += 3;
        } else {
            out.push(t[i]);
            i += 1;
        }
    }
    out
}

/// GPT-2 byte-level text back to bytes (`llama_decode_text`).
fn decode_text(t: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(t.len());
    for c in unicode::cpts_from_utf8(t) {
        match unicode::cpt_to_byte(c) {
            Some(b) => out.push(b),
            None => {
                out.extend_from_slice(b"[UNK_BYTE_0x");
                for b in unicode::cpt_to_utf8(c) {
                    out.extend_from_slice(format!("{b:02x}").as_bytes());
                }
                out.extend_from_slice(t);
                out.push(b']');
            }
        }
    }
    out
}

/// The reference's clean-up passes (`clean_up_tokenization_spaces`).
fn clean_spaces(text: &mut Vec<u8>) {
    // first pass: " ?", " !", " .", " ,"
    let total1 = text.len();
    let mut total = usize::from(total1 > 0);
    for i in 1..total1 {
        let x = text[i];
        if text[i - 1] == b' ' && matches!(x, b'?' | b'!' | b'.' | b',') {
            total -= 1;
        }
        text[total] = x;
        total += 1;
    }
    text.truncate(total);
    // second pass: " ' " → "'"
    let total2 = text.len();
    let mut total = usize::from(total2 > 0);
    let mut i = 1;
    while i < total2 {
        let x = text[i];
        if x == b'\'' && i + 1 < total2 && text[i - 1] == b' ' && text[i + 1] == b' ' {
            total -= 1;
            i += 1;
            text[i] = 0;
        }
        text[total] = x;
        total += 1;
        i += 1;
    }
    text.truncate(total);
    // third pass: " 's", " 'm", " 're", " 've"
    let total3 = text.len();
    let mut total = usize::from(total3 > 0);
    for i in 1..total3 {
        let x = text[i];
        if text[i - 1] == b' ' && x == b'\'' && i + 1 < total3 {
            let x1 = text[i + 1];
            if x1 == b's' || x1 == b'm' {
                total -= 1;
            } else if i + 2 < total3 {
                let x2 = text[i + 2];
                if matches!((x1, x2), (b'r', b'e') | (b'v', b'e')) {
                    total -= 1;
                }
            }
        }
        text[total] = x;
        total += 1;
    }
    text.truncate(total);
}
