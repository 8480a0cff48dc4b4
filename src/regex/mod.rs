//! Two small backtracking emulations of C++ `std::regex` (ECMAScript
//! grammar), kept together because they answer to the same semantics, not
//! merged because they differ in unit and engine:
//!
//! - [`bytes`]: over bytes, as `std::regex` on a `std::string`; a memoised VM
//!   with capture groups. Used by lazy-grammar trigger patterns
//!   (`sampling::grammar`) and tensor-type overrides (`model::quantize`).
//! - [`wide`]: over code units (`u32`), as `std::regex` / `std::wregex`
//!   through `regex_iterator` in the "C" locale; used by the BPE pre-tokenizers
//!   (`vocab::pretokenize`).

pub mod bytes;
pub mod wide;
