//! GBNF grammars: the parser ([`parser`]), the matcher ([`matcher`]) and the
//! grammar sampler, which masks the candidates the grammar cannot accept
//! next and advances on accept. The sampler reads token texts through a
//! [`VocabView`].

pub mod matcher;
pub mod parser;

use super::{Candidates, Sampler, VocabView};
use crate::regex::bytes::Regex;
use crate::sampler_any;
use crate::{Error, Result};
use matcher::Grammar;
use std::ffi::CStr;
use std::sync::Arc;

/// The reference's grammar sampler with no grammar (empty grammar string):
/// named "grammar", changes nothing.
pub struct Inactive;

impl Sampler for Inactive {
    fn name(&self) -> &'static CStr {
        c"grammar"
    }
    fn apply(&mut self, _cur: &mut Candidates<'_>) {}
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(Inactive))
    }
    sampler_any!();
}

/// A grammar sampler over a vocabulary.
pub struct GrammarSampler {
    pub vocab: Arc<dyn VocabView + Send + Sync>,
    pub text: Vec<u8>,
    pub root: String,
    pub grammar: Grammar,
    initial: Grammar,
}

impl GrammarSampler {
    /// Parses `text` and starts at rule `root`; a malformed grammar is an
    /// error naming line and column.
    pub fn new(
        vocab: Arc<dyn VocabView + Send + Sync>,
        text: &[u8],
        root: &str,
        lazy: bool,
        trigger_tokens: Vec<i32>,
    ) -> Result<GrammarSampler> {
        Self::with_patterns(vocab, text, root, lazy, trigger_tokens, &[])
    }

    /// `new` with trigger patterns (std::regex ECMAScript subset, see
    /// [`regex`]); a pattern that does not compile is an error.
    pub fn with_patterns(
        vocab: Arc<dyn VocabView + Send + Sync>,
        text: &[u8],
        root: &str,
        lazy: bool,
        trigger_tokens: Vec<i32>,
        trigger_patterns: &[&str],
    ) -> Result<GrammarSampler> {
        let parsed = parser::parse_with_vocab(text, Some(&*vocab))
            .map_err(|e| Error::invalid(format!("failed to parse grammar: {e}")))?;
        let patterns = compile_patterns(trigger_patterns)?;
        let grammar = Grammar::with_patterns(&parsed, root, lazy, trigger_tokens, patterns)
            .map_err(|e| Error::invalid(e.to_string()))?;
        Ok(GrammarSampler { vocab, text: text.to_vec(), root: root.to_string(), initial: grammar.clone(), grammar })
    }
}

impl Sampler for GrammarSampler {
    fn name(&self) -> &'static CStr {
        c"grammar"
    }
    fn accept(&mut self, token: i32) {
        if let Err(e) = self.grammar.accept(&*self.vocab, token) {
            // the reference throws here; we log and keep the (empty) state
            log_error!("llama_sampler_accept: grammar: {e}");
        }
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if let Err(e) = self.grammar.apply(&*self.vocab, cur) {
            // every candidate was rejected; the grammar stays empty from
            // here on (as after a failed accept), so later calls are cheap
            log_error!("llama_sampler_apply: grammar: {e}");
            self.grammar.stacks.clear();
        }
    }
    fn reset(&mut self) {
        self.grammar = self.initial.clone();
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(GrammarSampler {
            vocab: self.vocab.clone(),
            text: self.text.clone(),
            root: self.root.clone(),
            grammar: self.grammar.clone(),
            initial: self.initial.clone(),
        }))
    }
    sampler_any!();
}

/// Compiles trigger patterns, naming the one that fails.
pub fn compile_patterns(patterns: &[&str]) -> Result<Vec<Regex>> {
    patterns
        .iter()
        .map(|p| Regex::new(p).map_err(|e| Error::invalid(format!("invalid trigger pattern '{p}': {e}"))))
        .collect()
}

/// The pattern the deprecated trigger words become:
/// `[\s\S]*?(w1|w2|…)[\s\S]*` with the words' special characters escaped.
pub fn trigger_words_pattern(words: &[&[u8]]) -> String {
    let mut p = String::from("[\\s\\S]*?(");
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            p.push('|');
        }
        for &c in w.iter() {
            if b".^$|()*+?[]{}\\".contains(&c) {
                p.push('\\');
            }
            p.push(c as char);
        }
    }
    p.push_str(")[\\s\\S]*");
    p
}

#[cfg(test)]
mod tests;
