//! The tokenizer model kinds (llama_vocab_type). The vocabulary itself is
//! `crate::vocab::Vocab`.

/// llama_vocab_type values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VocabType {
    None = 0,
    Spm = 1,
    Bpe = 2,
    Wpm = 3,
    Ugm = 4,
    Rwkv = 5,
    Plamo2 = 6,
    Test = 7,
}
