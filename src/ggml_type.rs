//! ggml tensor element types (`enum ggml_type`) and their storage layout.
//!
//! The values, names, block sizes and block byte sizes are those of ggml's
//! `type_traits` table (ggml/src/ggml.c of the pinned reference) and of the
//! block structs in ggml-common.h. A quantized type stores its elements in
//! blocks of `block_size()` elements that take `type_size()` bytes each; a
//! row of `ne0` elements takes `row_size(ne0)` bytes.
//!
//! The values 4 and 5 (Q4_2, Q4_3), 31..=33 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8)
//! and 36..=38 (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8) were removed from ggml;
//! they are not variants here and `from_u32` returns `None` for them
//! (`removed_type_name` tells what they were, for error messages).

use std::fmt;

/// A ggml tensor element type. The discriminant is ggml's `enum ggml_type`
/// value (see ffi-tests/golden/abi/enums.tsv), so `t as u32` is the ABI value.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GgmlType {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
    Q2_0 = 42,
}

/// `GGML_TYPE_COUNT`: one past the largest ggml type value. Not a type.
pub const GGML_TYPE_COUNT: u32 = 43;

impl GgmlType {
    /// Every type, in ascending value order.
    pub const ALL: [GgmlType; 35] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q8_1,
        GgmlType::Q2_K,
        GgmlType::Q3_K,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_K,
        GgmlType::IQ2_XXS,
        GgmlType::IQ2_XS,
        GgmlType::IQ3_XXS,
        GgmlType::IQ1_S,
        GgmlType::IQ4_NL,
        GgmlType::IQ3_S,
        GgmlType::IQ2_S,
        GgmlType::IQ4_XS,
        GgmlType::I8,
        GgmlType::I16,
        GgmlType::I32,
        GgmlType::I64,
        GgmlType::F64,
        GgmlType::IQ1_M,
        GgmlType::BF16,
        GgmlType::TQ1_0,
        GgmlType::TQ2_0,
        GgmlType::MXFP4,
        GgmlType::NVFP4,
        GgmlType::Q1_0,
        GgmlType::Q2_0,
    ];

    /// The type with ggml value `v`, or `None` for values that are out of
    /// range or were removed from ggml.
    pub const fn from_u32(v: u32) -> Option<GgmlType> {
        use GgmlType::*;
        Some(match v {
            0 => F32,
            1 => F16,
            2 => Q4_0,
            3 => Q4_1,
            6 => Q5_0,
            7 => Q5_1,
            8 => Q8_0,
            9 => Q8_1,
            10 => Q2_K,
            11 => Q3_K,
            12 => Q4_K,
            13 => Q5_K,
            14 => Q6_K,
            15 => Q8_K,
            16 => IQ2_XXS,
            17 => IQ2_XS,
            18 => IQ3_XXS,
            19 => IQ1_S,
            20 => IQ4_NL,
            21 => IQ3_S,
            22 => IQ2_S,
            23 => IQ4_XS,
            24 => I8,
            25 => I16,
            26 => I32,
            27 => I64,
            28 => F64,
            29 => IQ1_M,
            30 => BF16,
            34 => TQ1_0,
            35 => TQ2_0,
            39 => MXFP4,
            40 => NVFP4,
            41 => Q1_0,
            42 => Q2_0,
            _ => return None,
        })
    }

    /// The ggml value of this type (same as `self as u32`).
    pub const fn as_u32(self) -> u32 {
        self as u32
    }

    /// ggml's name of the type (`ggml_type_name`): "f32", "q4_0", "q4_K",
    /// "iq4_xs", "bf16", ...
    pub const fn name(self) -> &'static str {
        self.traits().0
    }

    /// Number of elements in one block (`ggml_blck_size`): 1 for plain types.
    pub const fn block_size(self) -> usize {
        self.traits().1
    }

    /// Number of bytes of one block (`ggml_type_size`).
    pub const fn type_size(self) -> usize {
        self.traits().2
    }

    /// Whether the type is block-quantized (`ggml_is_quantized`). In ggml
    /// this is exactly the types whose block holds more than one element.
    pub const fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    /// Bytes taken by a row of `ne0` elements (`ggml_row_size`), or `None`
    /// if `ne0` is not a multiple of the block size or the size overflows.
    pub fn row_size(self, ne0: u64) -> Option<u64> {
        let block = u64::try_from(self.block_size()).ok()?;
        let size = u64::try_from(self.type_size()).ok()?;
        if !ne0.is_multiple_of(block) {
            return None;
        }
        (ne0 / block).checked_mul(size)
    }

    /// Bytes taken by a contiguous tensor of shape `ne` (`ggml_nbytes` of a
    /// contiguous tensor), or `None` if `ne[0]` is not a multiple of the
    /// block size or the size overflows u64. A shape with a zero dimension
    /// takes 0 bytes.
    pub fn nbytes(self, ne: &[u64]) -> Option<u64> {
        let (first, rest) = match ne.split_first() {
            Some(split) => split,
            None => return u64::try_from(self.type_size()).ok(),
        };
        let mut total = self.row_size(*first)?;
        for &n in rest {
            total = total.checked_mul(n)?;
        }
        Some(total)
    }

    /// (name, block size, block bytes), from ggml.c `type_traits` and the
    /// block structs of ggml-common.h (sizes measured with the reference
    /// headers).
    const fn traits(self) -> (&'static str, usize, usize) {
        use GgmlType::*;
        match self {
            F32 => ("f32", 1, 4),
            F16 => ("f16", 1, 2),
            Q4_0 => ("q4_0", 32, 18),
            Q4_1 => ("q4_1", 32, 20),
            Q5_0 => ("q5_0", 32, 22),
            Q5_1 => ("q5_1", 32, 24),
            Q8_0 => ("q8_0", 32, 34),
            Q8_1 => ("q8_1", 32, 36),
            Q2_K => ("q2_K", 256, 84),
            Q3_K => ("q3_K", 256, 110),
            Q4_K => ("q4_K", 256, 144),
            Q5_K => ("q5_K", 256, 176),
            Q6_K => ("q6_K", 256, 210),
            Q8_K => ("q8_K", 256, 292),
            IQ2_XXS => ("iq2_xxs", 256, 66),
            IQ2_XS => ("iq2_xs", 256, 74),
            IQ3_XXS => ("iq3_xxs", 256, 98),
            IQ1_S => ("iq1_s", 256, 50),
            IQ4_NL => ("iq4_nl", 32, 18),
            IQ3_S => ("iq3_s", 256, 110),
            IQ2_S => ("iq2_s", 256, 82),
            IQ4_XS => ("iq4_xs", 256, 136),
            I8 => ("i8", 1, 1),
            I16 => ("i16", 1, 2),
            I32 => ("i32", 1, 4),
            I64 => ("i64", 1, 8),
            F64 => ("f64", 1, 8),
            IQ1_M => ("iq1_m", 256, 56),
            BF16 => ("bf16", 1, 2),
            TQ1_0 => ("tq1_0", 256, 54),
            TQ2_0 => ("tq2_0", 256, 66),
            MXFP4 => ("mxfp4", 32, 17),
            NVFP4 => ("nvfp4", 64, 36),
            Q1_0 => ("q1_0", 128, 18),
            Q2_0 => ("q2_0", 64, 18),
        }
    }
}

/// For a ggml type value that was removed from ggml, what it used to be and
/// what replaced it (for error messages); `None` for any other value.
pub const fn removed_type_name(v: u32) -> Option<&'static str> {
    match v {
        4 => Some("Q4_2 (removed from ggml)"),
        5 => Some("Q4_3 (removed from ggml)"),
        31 => Some("Q4_0_4_4 (removed from ggml, use Q4_0 with runtime repacking)"),
        32 => Some("Q4_0_4_8 (removed from ggml, use Q4_0 with runtime repacking)"),
        33 => Some("Q4_0_8_8 (removed from ggml, use Q4_0 with runtime repacking)"),
        36 => Some("IQ4_NL_4_4 (removed from ggml, use IQ4_NL with runtime repacking)"),
        37 => Some("IQ4_NL_4_8 (removed from ggml, use IQ4_NL with runtime repacking)"),
        38 => Some("IQ4_NL_8_8 (removed from ggml, use IQ4_NL with runtime repacking)"),
        _ => None,
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl TryFrom<u32> for GgmlType {
    type Error = u32;
    /// Fails with the rejected value.
    fn try_from(v: u32) -> std::result::Result<GgmlType, u32> {
        GgmlType::from_u32(v).ok_or(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ggml_type_from_u32_round_trips_and_rejects_gaps() {
        for t in GgmlType::ALL {
            assert_eq!(GgmlType::from_u32(t as u32), Some(t));
            assert_eq!(t.as_u32(), t as u32);
        }
        let mut known = 0;
        for v in 0..GGML_TYPE_COUNT + 10 {
            match GgmlType::from_u32(v) {
                Some(_) => known += 1,
                None => assert!(v >= GGML_TYPE_COUNT || removed_type_name(v).is_some(), "gap {v}"),
            }
        }
        assert_eq!(known, GgmlType::ALL.len());
        for v in [4, 5, 31, 32, 33, 36, 37, 38, 43, u32::MAX] {
            assert_eq!(GgmlType::from_u32(v), None);
        }
        // ALL is sorted and duplicate-free.
        assert!(GgmlType::ALL.windows(2).all(|w| (w[0] as u32) < (w[1] as u32)));
    }

    #[test]
    fn ggml_type_sizes_match_ggml() {
        // (type, name, block size, block bytes) from ggml.c type_traits and
        // ggml-common.h's static_asserts.
        let cases = [
            (GgmlType::F32, "f32", 1, 4),
            (GgmlType::F16, "f16", 1, 2),
            (GgmlType::BF16, "bf16", 1, 2),
            (GgmlType::Q4_0, "q4_0", 32, 18),
            (GgmlType::Q4_1, "q4_1", 32, 20),
            (GgmlType::Q5_0, "q5_0", 32, 22),
            (GgmlType::Q5_1, "q5_1", 32, 24),
            (GgmlType::Q8_0, "q8_0", 32, 34),
            (GgmlType::Q8_1, "q8_1", 32, 36),
            (GgmlType::Q2_K, "q2_K", 256, 84),
            (GgmlType::Q3_K, "q3_K", 256, 110),
            (GgmlType::Q4_K, "q4_K", 256, 144),
            (GgmlType::Q5_K, "q5_K", 256, 176),
            (GgmlType::Q6_K, "q6_K", 256, 210),
            (GgmlType::Q8_K, "q8_K", 256, 292),
            (GgmlType::IQ4_NL, "iq4_nl", 32, 18),
            (GgmlType::IQ4_XS, "iq4_xs", 256, 136),
            (GgmlType::IQ1_M, "iq1_m", 256, 56),
            (GgmlType::MXFP4, "mxfp4", 32, 17),
            (GgmlType::I64, "i64", 1, 8),
        ];
        for (t, name, block, size) in cases {
            assert_eq!(t.name(), name);
            assert_eq!(t.block_size(), block, "{name}");
            assert_eq!(t.type_size(), size, "{name}");
            assert_eq!(t.is_quantized(), block > 1, "{name}");
            assert_eq!(t.to_string(), name);
        }
    }

    #[test]
    fn ggml_type_row_size_and_nbytes_are_checked() {
        assert_eq!(GgmlType::Q4_0.row_size(4096), Some(4096 / 32 * 18));
        assert_eq!(GgmlType::Q4_0.row_size(33), None);
        assert_eq!(GgmlType::Q6_K.row_size(0), Some(0));
        assert_eq!(GgmlType::F32.row_size(1 << 62), None);
        assert_eq!(GgmlType::F32.row_size(1 << 61), Some(1 << 63));
        assert_eq!(GgmlType::F32.nbytes(&[3, 2, 1, 1]), Some(24));
        assert_eq!(GgmlType::F32.nbytes(&[3, 0, 7, 1]), Some(0));
        assert_eq!(GgmlType::F16.nbytes(&[]), Some(2));
        assert_eq!(GgmlType::F32.nbytes(&[1 << 40, 1 << 40]), None);
        assert_eq!(GgmlType::Q8_0.nbytes(&[64, 3]), Some(2 * 34 * 3));
    }
}
