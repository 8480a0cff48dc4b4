//! Unicode helpers with the reference's exact behaviour: its UTF-8 decoder
//! (invalid bytes become U+FFFD one byte at a time), its category flags
//! (generated from its own tables, `unicode_data.rs`), its GPT-2 byte
//! encoding, lowercase map and single-code-point NFD.

use super::unicode_data as data;
use std::sync::OnceLock;

pub const MAX_CODEPOINTS: u32 = 0x110000;

// Flag bits (unicode_cpt_flags of the reference).
pub const UNDEFINED: u16 = 0x0001;
pub const NUMBER: u16 = 0x0002;
pub const LETTER: u16 = 0x0004;
pub const SEPARATOR: u16 = 0x0008;
pub const ACCENT_MARK: u16 = 0x0010;
pub const PUNCTUATION: u16 = 0x0020;
pub const SYMBOL: u16 = 0x0040;
pub const CONTROL: u16 = 0x0080;
pub const MASK_CATEGORIES: u16 = 0x00FF;
pub const WHITESPACE: u16 = 0x0100;
pub const LOWERCASE: u16 = 0x0200;
pub const UPPERCASE: u16 = 0x0400;
pub const NFD: u16 = 0x0800;

/// Byte length of a UTF-8 sequence from its first byte (continuation and
/// invalid bytes count as 1), as `unicode_len_utf8`.
#[inline]
pub fn len_utf8(b: u8) -> usize {
    const LOOKUP: [usize; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];
    LOOKUP[(b >> 4) as usize]
}

/// Decodes one code point at `*off`, advancing it; `None` for an invalid
/// sequence (offset untouched). Same checks as `unicode_cpt_from_utf8`.
#[inline]
pub fn cpt_from_utf8(s: &[u8], off: &mut usize) -> Option<u32> {
    let o = *off;
    let b0 = s[o] as u32;
    let cont = |i: usize| s.get(o + i).is_some_and(|&b| b & 0xc0 == 0x80);
    if b0 & 0x80 == 0 {
        *off += 1;
        return Some(b0);
    }
    if b0 & 0x40 == 0 {
        return None;
    }
    if b0 & 0x20 == 0 {
        if !cont(1) {
            return None;
        }
        *off += 2;
        return Some(((b0 & 0x1f) << 6) | (s[o + 1] as u32 & 0x3f));
    }
    if b0 & 0x10 == 0 {
        if !(cont(1) && cont(2)) {
            return None;
        }
        *off += 3;
        return Some(((b0 & 0x0f) << 12) | ((s[o + 1] as u32 & 0x3f) << 6) | (s[o + 2] as u32 & 0x3f));
    }
    if b0 & 0x08 == 0 {
        if !(cont(1) && cont(2) && cont(3)) {
            return None;
        }
        *off += 4;
        return Some(
            ((b0 & 0x07) << 18)
                | ((s[o + 1] as u32 & 0x3f) << 12)
                | ((s[o + 2] as u32 & 0x3f) << 6)
                | (s[o + 3] as u32 & 0x3f),
        );
    }
    None
}

/// All code points of `s`; each invalid byte becomes U+FFFD.
pub fn cpts_from_utf8(s: &[u8]) -> Vec<u32> {
    let mut out = Vec::with_capacity(s.len());
    let mut off = 0;
    while off < s.len() {
        match cpt_from_utf8(s, &mut off) {
            Some(c) => out.push(c),
            None => {
                off += 1;
                out.push(0xFFFD);
            }
        }
    }
    out
}

/// Appends the UTF-8 encoding of `cpt`. Code points above U+10FFFF (which the
/// decoder can produce from F5..F7 lead bytes) are written with the same
/// 4-byte pattern, giving back the bytes they came from.
#[inline]
pub fn push_utf8(out: &mut Vec<u8>, cpt: u32) {
    if cpt <= 0x7f {
        out.push(cpt as u8);
    } else if cpt <= 0x7ff {
        out.extend_from_slice(&[0xc0 | ((cpt >> 6) & 0x1f) as u8, 0x80 | (cpt & 0x3f) as u8]);
    } else if cpt <= 0xffff {
        out.extend_from_slice(&[
            0xe0 | ((cpt >> 12) & 0x0f) as u8,
            0x80 | ((cpt >> 6) & 0x3f) as u8,
            0x80 | (cpt & 0x3f) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xf0 | ((cpt >> 18) & 0x07) as u8,
            0x80 | ((cpt >> 12) & 0x3f) as u8,
            0x80 | ((cpt >> 6) & 0x3f) as u8,
            0x80 | (cpt & 0x3f) as u8,
        ]);
    }
}

pub fn cpt_to_utf8(cpt: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(4);
    push_utf8(&mut v, cpt);
    v
}

fn flags_table() -> &'static [u16] {
    static TABLE: OnceLock<Vec<u16>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = vec![UNDEFINED; MAX_CODEPOINTS as usize];
        for w in data::RANGES_FLAGS.windows(2) {
            let (ini, f) = w[0];
            let end = w[1].0.min(MAX_CODEPOINTS);
            for c in ini..end {
                t[c as usize] = f;
            }
        }
        for &c in data::WHITESPACE {
            t[c as usize] |= WHITESPACE;
        }
        for &(_, l) in data::MAP_LOWERCASE {
            t[l as usize] |= LOWERCASE;
        }
        for &(_, u) in data::MAP_UPPERCASE {
            t[u as usize] |= UPPERCASE;
        }
        for &(_, _, n) in data::RANGES_NFD {
            t[n as usize] |= NFD;
        }
        t
    })
}

/// The flags of a code point (UNDEFINED beyond U+10FFFF).
#[inline]
pub fn flags(cpt: u32) -> u16 {
    flags_table().get(cpt as usize).copied().unwrap_or(UNDEFINED)
}

pub fn tolower(cpt: u32) -> u32 {
    match data::MAP_LOWERCASE.binary_search_by_key(&cpt, |p| p.0) {
        Ok(i) => data::MAP_LOWERCASE[i].1,
        Err(_) => cpt,
    }
}

/// Single-code-point NFD as the reference does it (first character of the
/// decomposition only).
pub fn nfd(cpt: u32) -> u32 {
    let r = data::RANGES_NFD;
    let i = r.partition_point(|x| x.0 <= cpt);
    if i == 0 {
        return cpt;
    }
    let (first, last, n) = r[i - 1];
    if first <= cpt && cpt <= last {
        n
    } else {
        cpt
    }
}

struct ByteMaps {
    /// byte → UTF-8 of its GPT-2 code point
    to_utf8: Vec<Vec<u8>>,
    /// code point (< 324) → byte
    from_cpt: Vec<i16>,
}

fn byte_maps() -> &'static ByteMaps {
    static MAPS: OnceLock<ByteMaps> = OnceLock::new();
    MAPS.get_or_init(|| {
        let mut cpt_of = [u32::MAX; 256];
        for ch in (0x21..=0x7E).chain(0xA1..=0xAC).chain(0xAE..=0xFF) {
            cpt_of[ch] = ch as u32;
        }
        let mut n = 0;
        for c in cpt_of.iter_mut() {
            if *c == u32::MAX {
                *c = 256 + n;
                n += 1;
            }
        }
        let mut from_cpt = vec![-1i16; 512];
        for (b, &c) in cpt_of.iter().enumerate() {
            from_cpt[c as usize] = b as i16;
        }
        ByteMaps { to_utf8: cpt_of.iter().map(|&c| cpt_to_utf8(c)).collect(), from_cpt }
    })
}

/// The GPT-2 byte-level encoding of one byte (UTF-8).
#[inline]
pub fn byte_to_utf8(b: u8) -> &'static [u8] {
    &byte_maps().to_utf8[b as usize]
}

/// The byte a GPT-2 byte-level code point stands for.
#[inline]
pub fn cpt_to_byte(cpt: u32) -> Option<u8> {
    byte_maps().from_cpt.get(cpt as usize).and_then(|&b| u8::try_from(b).ok())
}

/// `unicode_cpt_is_han`.
pub fn is_han(cpt: u32) -> bool {
    matches!(cpt,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0x2CEB0..=0x2EBEF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_complete_and_sorted() {
        assert_eq!(data::RANGES_FLAGS.first().unwrap().0, 0);
        assert_eq!(data::RANGES_FLAGS.last().unwrap().0, MAX_CODEPOINTS);
        assert!(data::RANGES_FLAGS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(data::MAP_LOWERCASE.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(data::RANGES_NFD.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn categories() {
        assert_ne!(flags('a' as u32) & LETTER, 0);
        assert_ne!(flags('7' as u32) & NUMBER, 0);
        assert_ne!(flags(' ' as u32) & WHITESPACE, 0);
        assert_ne!(flags(0x3000) & WHITESPACE, 0);
        assert_ne!(flags(0x0301) & ACCENT_MARK, 0);
        assert_ne!(flags(0x4E2D) & LETTER, 0);
        assert_ne!(flags(0x1F600) & SYMBOL, 0);
        assert_eq!(flags(0x110000), UNDEFINED);
        assert_eq!(tolower('A' as u32), 'a' as u32);
        assert_eq!(nfd(0xE9), 'e' as u32);
    }

    #[test]
    fn utf8_decoding_replaces_invalid_bytes() {
        assert_eq!(cpts_from_utf8(b"a\xffb"), vec![0x61, 0xFFFD, 0x62]);
        assert_eq!(cpts_from_utf8("é".as_bytes()), vec![0xE9]);
        assert_eq!(cpts_from_utf8(b"\xe4\xb8"), vec![0xFFFD, 0xFFFD]);
    }

    #[test]
    fn gpt2_bytes_round_trip() {
        for b in 0..=255u8 {
            let s = byte_to_utf8(b);
            let c = cpts_from_utf8(s);
            assert_eq!(c.len(), 1);
            assert_eq!(cpt_to_byte(c[0]), Some(b));
        }
        assert_eq!(byte_to_utf8(b' '), "Ġ".as_bytes());
    }
}
