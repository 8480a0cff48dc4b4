//! PLaMo-2's tokenizer (`llm_tokenizer_plamo2`): a suffix table over every
//! token and its suffixes, then a right-to-left Viterbi with integer scores
//! (score × 10⁴, rounded), byte tokens for the rest.

use super::hash::FxMap;
use super::unicode;
use super::{Vocab, ATTR_BYTE};
use crate::error::{Error, Result};
use std::collections::HashMap;

const INVALID_SCORE: i32 = -20_000_000;
const UNKNOWN_SCORE: i32 = -10_000_000;

pub struct Plamo2 {
    bytes: Vec<i32>,
    to_suffix_id: FxMap<i64, i32>,
    /// rows: [piece_length, token_id, score, piece_id]
    table: Vec<[i32; 4]>,
}

fn utf8_of(cpts: &[u32]) -> Vec<u8> {
    let mut v = Vec::new();
    for &c in cpts {
        unicode::push_utf8(&mut v, c);
    }
    v
}

impl Plamo2 {
    pub fn new(vocab: &Vocab) -> Result<Plamo2> {
        let mut bytes = vec![0i32; 256];
        let mut suffix_to_score: HashMap<Vec<u8>, f32> = HashMap::new();
        let mut token_to_id: HashMap<Vec<u8>, i32> = HashMap::new();
        for (id, t) in vocab.tokens.iter().enumerate() {
            let text = t.text();
            token_to_id.insert(text.to_vec(), id as i32);
            if t.attr & ATTR_BYTE != 0 {
                if text.len() == 6
                    && text.starts_with(b"<0x")
                    && text[5] == b'>'
                    && text[3..5].iter().all(u8::is_ascii_hexdigit)
                {
                    let v = u8::from_str_radix(std::str::from_utf8(&text[3..5]).unwrap_or("0"), 16).unwrap_or(0);
                    bytes[v as usize] = id as i32;
                }
                continue;
            }
            suffix_to_score.insert(text.to_vec(), t.score);
            let cpts = unicode::cpts_from_utf8(text);
            for i in 1..cpts.len() {
                suffix_to_score.entry(utf8_of(&cpts[i..])).or_insert(f32::NAN);
            }
        }
        if let Some(i) = bytes.iter().position(|&b| b == 0) {
            return Err(Error::model(format!("Byte token for <0x{i}> is not set")));
        }
        let mut suffixes: Vec<Vec<u8>> = suffix_to_score.keys().cloned().collect();
        suffixes.push(Vec::new());
        suffixes.sort_by(|a, b| a.iter().rev().cmp(b.iter().rev()));

        let mut suffix_to_id: HashMap<Vec<u8>, i32> = HashMap::new();
        let mut to_suffix_id: FxMap<i64, i32> = FxMap::default();
        let mut num_pieces: i32 = 0;
        for suffix in &suffixes {
            suffix_to_id.insert(suffix.clone(), num_pieces);
            if suffix.is_empty() {
                num_pieces += 1;
                continue;
            }
            let cpts = unicode::cpts_from_utf8(suffix);
            let remaining = utf8_of(&cpts[1..]);
            let rid = *suffix_to_id.entry(remaining).or_insert(0);
            to_suffix_id.insert((i64::from(cpts[0]) << 32) | i64::from(rid), num_pieces);
            let mut pieces = 1;
            for len in (1..=cpts.len()).rev() {
                if suffix_to_score.contains_key(&utf8_of(&cpts[..len])) {
                    pieces += 1;
                }
            }
            num_pieces += pieces;
        }
        let mut table = Vec::with_capacity(num_pieces.max(0) as usize);
        for suffix in &suffixes {
            let cpts = unicode::cpts_from_utf8(suffix);
            for len in (1..=cpts.len()).rev() {
                let piece = utf8_of(&cpts[..len]);
                let Some(&score) = suffix_to_score.get(&piece) else { continue };
                let token = token_to_id.get(&piece).copied().unwrap_or(-1);
                let s = if score.is_finite() { (f64::from(score) * 1e4).round() as i32 } else { INVALID_SCORE };
                let pid = suffix_to_id.get(&piece).copied().unwrap_or(0);
                table.push([len as i32, token, s, pid]);
            }
            table.push([1, -1, UNKNOWN_SCORE, 0]);
        }
        Ok(Plamo2 { bytes, to_suffix_id, table })
    }

    pub fn encode(&self, text: &[u8], out: &mut Vec<i32>) {
        let mut data = unicode::cpts_from_utf8(text);
        if data.first() == Some(&0xFEFF) {
            data.remove(0);
        }
        let n = data.len();
        if n == 0 {
            return;
        }
        let mut scores = vec![1i64 << 60; n + 1];
        scores[n] = 0;
        // [token_length, token_id, num_tokens]
        let mut path = vec![[0i32; 3]; n + 1];
        let mut suffix_id: i32 = 0;
        for i in (0..n).rev() {
            let c = data[i];
            let mut p = suffix_id.max(0) as usize;
            while p < self.table.len() {
                let code = (i64::from(c) << 32) | i64::from(self.table[p][3]);
                suffix_id = self.to_suffix_id.get(&code).copied().unwrap_or(0);
                if suffix_id > 0 || self.table[p][2] == UNKNOWN_SCORE {
                    break;
                }
                p += 1;
            }
            let mut p = suffix_id.max(0) as usize;
            while p < self.table.len() {
                let [len, token, score, _] = self.table[p];
                if score > INVALID_SCORE {
                    let next = i + len.max(0) as usize;
                    if next <= n {
                        let s = scores[next] - i64::from(score);
                        if s < scores[i] {
                            scores[i] = s;
                            path[i] = [len, token, path[next][2] + 1];
                            if score == UNKNOWN_SCORE {
                                path[i][2] += (c >= 0x80) as i32 + (c >= 0x800) as i32 + (c >= 0x10000) as i32;
                            }
                        }
                    }
                }
                if score == UNKNOWN_SCORE {
                    break;
                }
                p += 1;
            }
        }
        let mut pos = 0usize;
        while pos < n {
            if path[pos][1] >= 0 {
                out.push(path[pos][1]);
            } else {
                let c = data[pos];
                let s = 1 + (c >= 0x80) as u32 + (c >= 0x800) as u32 + (c >= 0x10000) as u32;
                for i in 0..s {
                    let b: u32 = if s == 1 {
                        c & 0xFF
                    } else if i == 0 {
                        (0xF00 >> s) & 0xFF
                    } else {
                        0x80
                    };
                    let idx = (b | ((c >> ((s - i - 1) * 6)) & 0x3F)) & 0xFF;
                    out.push(self.bytes[idx as usize]);
                }
            }
            let step = path[pos][0];
            if step <= 0 {
                break;
            }
            pos += step as usize;
        }
    }
}
