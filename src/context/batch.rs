//! A decode request, copied out of the caller's llama_batch and checked
//! against the reference's rules (llama_batch_allocr::init) before anything
//! changes, so that a refused batch leaves the context as it was.

use super::kv_cache::KvCache;
use crate::error::{Error, Result};

/// One input token.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token id, or None for an embedding input.
    pub id: Option<i32>,
    pub pos: i32,
    /// The sequences it belongs to; the first one decides its attention.
    pub seqs: Vec<i32>,
    /// Whether its logits (or embedding) are wanted.
    pub output: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub tokens: Vec<Token>,
    /// Input embeddings, [n_tokens][n_embd], when the batch carries them.
    pub embd: Vec<f32>,
}

impl Batch {
    pub fn n_outputs(&self) -> usize {
        self.tokens.iter().filter(|t| t.output).count()
    }

    /// The reference's consistency checks; `n_vocab` bounds token ids.
    pub fn validate(&self, n_vocab: usize, n_seq_max: usize, kv: &KvCache) -> Result<()> {
        self.validate_ids(n_vocab, n_seq_max)?;
        self.validate_positions(n_seq_max, kv)
    }

    /// The checks of an encoder's batch, which the reference makes without
    /// the position rules (no memory): tokens, ids, sequences, positions
    /// not negative.
    pub fn validate_ids(&self, n_vocab: usize, n_seq_max: usize) -> Result<()> {
        if self.tokens.is_empty() {
            return Err(Error::invalid("n_tokens == 0"));
        }
        for (i, t) in self.tokens.iter().enumerate() {
            if let Some(id) = t.id {
                if id < 0 || id as usize >= n_vocab {
                    return Err(Error::invalid(format!("invalid token[{i}] = {id}")));
                }
            }
            if t.seqs.is_empty() {
                return Err(Error::invalid(format!("token {i} belongs to no sequence (n_seq_id = 0)")));
            }
            for (s, &seq) in t.seqs.iter().enumerate() {
                if seq < 0 || seq as usize >= n_seq_max {
                    return Err(Error::invalid(format!("invalid seq_id[{i}][{s}] = {seq} >= {n_seq_max}")));
                }
            }
            if t.pos < 0 {
                return Err(Error::invalid(format!("invalid pos[{i}] = {}", t.pos)));
            }
        }
        Ok(())
    }

    fn validate_positions(&self, n_seq_max: usize, kv: &KvCache) -> Result<()> {
        // Per sequence: positions start right after the memory's last one and
        // have no gaps; along the batch they never decrease.
        let mut min = vec![i32::MAX; n_seq_max];
        let mut max = vec![i32::MIN; n_seq_max];
        let mut count = vec![0usize; n_seq_max];
        let mut last = vec![-1i32; n_seq_max];
        for t in &self.tokens {
            for &s in &t.seqs {
                let s = s as usize;
                min[s] = min[s].min(t.pos);
                max[s] = max[s].max(t.pos);
                count[s] += 1;
                if t.pos < last[s] {
                    return Err(Error::invalid(format!("sequence {s} positions are decreasing (not allowed)")));
                }
                last[s] = t.pos;
            }
        }
        for s in 0..n_seq_max {
            if count[s] == 0 {
                continue;
            }
            let p0 = kv.pos_max(s as i32);
            if p0 >= 0 && i64::from(min[s]) != i64::from(p0) + 1 {
                return Err(Error::invalid(format!(
                    "the tokens of sequence {s} in the input batch have inconsistent sequence positions: the last \
                     position in the KV cache for sequence {s} is X = {p0}, the batch starts at Y = {}; it is \
                     required that Y = X + 1",
                    min[s]
                )));
            }
            if i64::from(max[s]) - i64::from(min[s]) + 1 > count[s] as i64 {
                return Err(Error::invalid(format!("sequence {s} positions are not continuous")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::kv_cache::KvType;
    use super::*;

    fn tok(id: i32, pos: i32, seq: i32) -> Token {
        Token { id: Some(id), pos, seqs: vec![seq], output: false }
    }

    #[test]
    fn the_reference_rules_hold() {
        let kv = KvCache::new(16, vec![2], vec![2], KvType::F16, KvType::F16).unwrap();
        let ok = Batch { tokens: vec![tok(1, 0, 0), tok(2, 1, 0), tok(3, 0, 1)], embd: vec![] };
        assert!(ok.validate(10, 2, &kv).is_ok());
        let bad_id = Batch { tokens: vec![tok(10, 0, 0)], embd: vec![] };
        assert!(bad_id.validate(10, 2, &kv).unwrap_err().to_string().contains("invalid token[0] = 10"));
        let bad_seq = Batch { tokens: vec![tok(1, 0, 2)], embd: vec![] };
        assert!(bad_seq.validate(10, 2, &kv).is_err());
        let gap = Batch { tokens: vec![tok(1, 0, 0), tok(1, 2, 0)], embd: vec![] };
        assert!(gap.validate(10, 2, &kv).unwrap_err().to_string().contains("not continuous"));
        let decreasing = Batch { tokens: vec![tok(1, 1, 0), tok(1, 0, 0)], embd: vec![] };
        assert!(decreasing.validate(10, 2, &kv).unwrap_err().to_string().contains("decreasing"));
        assert!(Batch::default().validate(10, 2, &kv).is_err());
        let neg = Batch { tokens: vec![tok(1, -1, 0)], embd: vec![] };
        assert!(neg.validate(10, 2, &kv).is_err());
    }

    /// A sequence can hold position i32::MAX (llama_memory_seq_add
    /// saturates): no batch can follow it, and saying so must not overflow
    /// (found by the decode fuzz target, built with overflow checks).
    #[test]
    fn a_sequence_at_the_last_position_takes_no_more_tokens() {
        let mut kv = KvCache::new(4, vec![2], vec![2], KvType::F16, KvType::F16).unwrap();
        kv.cells[0].pos = i32::MAX;
        kv.cells[0].seqs.add(0);
        for pos in [0, i32::MAX, i32::MIN] {
            let b = Batch { tokens: vec![tok(1, pos, 0)], embd: vec![] };
            assert!(b.validate(10, 1, &kv).is_err(), "pos {pos}");
        }
    }
}
