//! llama_ftype: the file type names the reference prints, and its guess of
//! a file's type from the most common tensor type when `general.file_type`
//! is absent.

use crate::ggml_type::GgmlType;
use std::ffi::CStr;

/// LLAMA_FTYPE_GUESSED: the bit that marks a guessed file type.
pub const GUESSED: i32 = 1024;

// The llama_ftype values (llama.h).
pub const ALL_F32: i32 = 0;
pub const F16: i32 = 1;
pub const Q4_0: i32 = 2;
pub const Q4_1: i32 = 3;
pub const Q8_0: i32 = 7;
pub const Q5_0: i32 = 8;
pub const Q5_1: i32 = 9;
pub const Q2_K: i32 = 10;
pub const Q3_K_S: i32 = 11;
pub const Q3_K_M: i32 = 12;
pub const Q3_K_L: i32 = 13;
pub const Q4_K_S: i32 = 14;
pub const Q4_K_M: i32 = 15;
pub const Q5_K_S: i32 = 16;
pub const Q5_K_M: i32 = 17;
pub const Q6_K: i32 = 18;
pub const IQ2_XXS: i32 = 19;
pub const IQ2_XS: i32 = 20;
pub const Q2_K_S: i32 = 21;
pub const IQ3_XS: i32 = 22;
pub const IQ3_XXS: i32 = 23;
pub const IQ1_S: i32 = 24;
pub const IQ4_NL: i32 = 25;
pub const IQ3_S: i32 = 26;
pub const IQ3_M: i32 = 27;
pub const IQ2_S: i32 = 28;
pub const IQ2_M: i32 = 29;
pub const IQ4_XS: i32 = 30;
pub const IQ1_M: i32 = 31;
pub const BF16: i32 = 32;
pub const TQ1_0: i32 = 36;
pub const TQ2_0: i32 = 37;
pub const MXFP4_MOE: i32 = 38;
pub const NVFP4: i32 = 39;
pub const Q1_0: i32 = 40;
pub const Q2_0: i32 = 41;

/// The reference's name of a file type, "(guessed) " first when the bit is
/// set; unknown values get "unknown, may not work".
pub fn name_c(ftype: i32) -> &'static CStr {
    let guessed = ftype & GUESSED != 0;
    let (plain, prefixed): (&'static CStr, &'static CStr) = match ftype & !GUESSED {
        0 => (c"all F32", c"(guessed) all F32"),
        1 => (c"F16", c"(guessed) F16"),
        32 => (c"BF16", c"(guessed) BF16"),
        40 => (c"Q1_0", c"(guessed) Q1_0"),
        41 => (c"Q2_0", c"(guessed) Q2_0"),
        2 => (c"Q4_0", c"(guessed) Q4_0"),
        3 => (c"Q4_1", c"(guessed) Q4_1"),
        8 => (c"Q5_0", c"(guessed) Q5_0"),
        9 => (c"Q5_1", c"(guessed) Q5_1"),
        7 => (c"Q8_0", c"(guessed) Q8_0"),
        38 => (c"MXFP4 MoE", c"(guessed) MXFP4 MoE"),
        39 => (c"NVFP4", c"(guessed) NVFP4"),
        10 => (c"Q2_K - Medium", c"(guessed) Q2_K - Medium"),
        21 => (c"Q2_K - Small", c"(guessed) Q2_K - Small"),
        11 => (c"Q3_K - Small", c"(guessed) Q3_K - Small"),
        12 => (c"Q3_K - Medium", c"(guessed) Q3_K - Medium"),
        13 => (c"Q3_K - Large", c"(guessed) Q3_K - Large"),
        14 => (c"Q4_K - Small", c"(guessed) Q4_K - Small"),
        15 => (c"Q4_K - Medium", c"(guessed) Q4_K - Medium"),
        16 => (c"Q5_K - Small", c"(guessed) Q5_K - Small"),
        17 => (c"Q5_K - Medium", c"(guessed) Q5_K - Medium"),
        18 => (c"Q6_K", c"(guessed) Q6_K"),
        36 => (c"TQ1_0 - 1.69 bpw ternary", c"(guessed) TQ1_0 - 1.69 bpw ternary"),
        37 => (c"TQ2_0 - 2.06 bpw ternary", c"(guessed) TQ2_0 - 2.06 bpw ternary"),
        19 => (c"IQ2_XXS - 2.0625 bpw", c"(guessed) IQ2_XXS - 2.0625 bpw"),
        20 => (c"IQ2_XS - 2.3125 bpw", c"(guessed) IQ2_XS - 2.3125 bpw"),
        28 => (c"IQ2_S - 2.5 bpw", c"(guessed) IQ2_S - 2.5 bpw"),
        29 => (c"IQ2_M - 2.7 bpw", c"(guessed) IQ2_M - 2.7 bpw"),
        22 => (c"IQ3_XS - 3.3 bpw", c"(guessed) IQ3_XS - 3.3 bpw"),
        23 => (c"IQ3_XXS - 3.0625 bpw", c"(guessed) IQ3_XXS - 3.0625 bpw"),
        24 => (c"IQ1_S - 1.5625 bpw", c"(guessed) IQ1_S - 1.5625 bpw"),
        31 => (c"IQ1_M - 1.75 bpw", c"(guessed) IQ1_M - 1.75 bpw"),
        25 => (c"IQ4_NL - 4.5 bpw", c"(guessed) IQ4_NL - 4.5 bpw"),
        30 => (c"IQ4_XS - 4.25 bpw", c"(guessed) IQ4_XS - 4.25 bpw"),
        26 => (c"IQ3_S - 3.4375 bpw", c"(guessed) IQ3_S - 3.4375 bpw"),
        27 => (c"IQ3_S mix - 3.66 bpw", c"(guessed) IQ3_S mix - 3.66 bpw"),
        _ => (c"unknown, may not work", c"(guessed) unknown, may not work"),
    };
    if guessed {
        prefixed
    } else {
        plain
    }
}

/// The reference's guess: the file type of the most common tensor type
/// (first one wins a tie, in file order), marked GUESSED.
pub fn guess(tensor_types: impl Iterator<Item = GgmlType>) -> i32 {
    let mut counts = [0u32; 64];
    let (mut best, mut best_n) = (None, 0u32);
    for t in tensor_types {
        let i = t as usize;
        if let Some(c) = counts.get_mut(i) {
            *c += 1;
            if *c > best_n {
                best_n = *c;
                best = Some(t);
            }
        }
    }
    use GgmlType::*;
    let ftype = match best {
        Some(F32) | None => 0,
        Some(F16) => 1,
        Some(BF16) => 32,
        Some(Q4_0) => 2,
        Some(Q4_1) => 3,
        Some(Q5_0) => 8,
        Some(Q5_1) => 9,
        Some(Q8_0) => 7,
        Some(Q2_K) => 10,
        Some(Q3_K) => 12,
        Some(Q4_K) => 15,
        Some(Q5_K) => 17,
        Some(Q6_K) => 18,
        Some(TQ1_0) => 36,
        Some(TQ2_0) => 37,
        Some(IQ2_XXS) => 19,
        Some(IQ2_XS) => 20,
        Some(IQ2_S) => 28,
        Some(IQ3_XXS) => 23,
        Some(IQ1_S) => 24,
        Some(IQ1_M) => 31,
        Some(IQ4_NL) => 25,
        Some(IQ4_XS) => 30,
        Some(IQ3_S) => 26,
        Some(NVFP4) => 39,
        Some(Q1_0) => 40,
        Some(Q2_0) => 41,
        Some(_) => 0,
    };
    ftype | GUESSED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_reference() {
        assert_eq!(name_c(3), c"Q4_1");
        assert_eq!(name_c(15), c"Q4_K - Medium");
        assert_eq!(name_c(15 | GUESSED), c"(guessed) Q4_K - Medium");
        assert_eq!(name_c(999), c"unknown, may not work");
    }

    #[test]
    fn guess_takes_the_most_common_type() {
        use GgmlType::*;
        assert_eq!(guess([F32, Q4_K, Q4_K, Q6_K].into_iter()), 15 | GUESSED);
        assert_eq!(guess(std::iter::empty()), GUESSED);
    }
}
