//! `StrMap`: an insert-only map from byte strings to `i32` for the
//! vocabulary's token and merge tables. Its keys live back to back in one
//! buffer and its slots are plain integers, so a Llama 3 vocabulary (128k
//! tokens, 280k merges) loads without an allocation per key (with a boxed
//! key per entry in a `HashMap`, filling the two tables and looking the
//! merges' halves up again for a warning were most of that vocabulary's
//! load).
//! `HashSet64` is a set of such keys' hashes. Both can ask for a key's
//! first slot ahead of its lookup (`prefetch`).

use super::hash::fx_hash;

const EMPTY: u64 = 0;
/// Slots hold a key's index + 1 in 32 bits.
pub const MAX_KEYS: usize = u32::MAX as usize - 1;

#[derive(Debug, Clone)]
pub struct StrMap {
    bytes: Vec<u8>,   // the keys, back to back
    ends: Vec<usize>, // [len]: key i is bytes[ends[i - 1]..ends[i]] (from 0 for i = 0)
    values: Vec<i32>, // [len]
    // [2^k, at least twice len]: 0 for empty, else the key's hash's high 32
    // bits << 32 | (its index + 1); linear probing from the hash's low bits
    slots: Vec<u64>,
}

impl Default for StrMap {
    fn default() -> Self {
        StrMap { bytes: Vec::new(), ends: Vec::new(), values: Vec::new(), slots: vec![EMPTY; 16] }
    }
}

impl StrMap {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Room for `n` more keys of about `bytes_per_key` bytes each without
    /// growing (`n` is the caller's to bound: a file's claimed count is not).
    pub fn reserve(&mut self, n: usize, bytes_per_key: usize) {
        self.bytes.reserve(n.saturating_mul(bytes_per_key));
        self.ends.reserve(n);
        self.values.reserve(n);
        let want = (self.len() + n).saturating_mul(2).next_power_of_two();
        if want > self.slots.len() {
            self.rehash(want);
        }
    }

    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// The slot holding `key`, or the empty slot where it would go.
    #[inline]
    fn find(&self, key: &[u8], h: u64) -> usize {
        let mask = self.slots.len() - 1;
        let tag = h >> 32;
        let mut s = h as usize & mask;
        loop {
            let e = self.slots[s];
            if e == EMPTY || (e >> 32 == tag && self.key((e as u32 - 1) as usize) == key) {
                return s;
            }
            s = (s + 1) & mask;
        }
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<i32> {
        let e = self.slots[self.find(key, fx_hash(key))];
        (e != EMPTY).then(|| self.values[(e as u32 - 1) as usize])
    }

    /// Asks for the slot where a key of hash `h` starts its probe in the
    /// cache: a table of a few MB is a cache (and TLB) miss per lookup, so
    /// a batch of lookups goes faster with its slots asked for first.
    pub fn prefetch(&self, h: u64) {
        prefetch(&self.slots[h as usize & (self.slots.len() - 1)]);
    }

    /// Inserts `key` → `value` unless `key` is present (the first value
    /// stays, as `entry().or_insert` keeps it); returns whether it inserted,
    /// `None` when the map holds `MAX_KEYS` keys already.
    pub fn insert_if_absent(&mut self, key: &[u8], value: i32) -> Option<bool> {
        self.insert_hashed_if_absent(key, fx_hash(key), value)
    }

    /// `insert_if_absent` with the key's hash given: `h` must be
    /// `fx_hash(key)` (a rehash recomputes it from the key).
    pub fn insert_hashed_if_absent(&mut self, key: &[u8], h: u64, value: i32) -> Option<bool> {
        debug_assert_eq!(h, fx_hash(key));
        if self.len() >= MAX_KEYS {
            return None;
        }
        if (self.len() + 1) * 2 > self.slots.len() {
            self.rehash(self.slots.len() * 2);
        }
        let s = self.find(key, h);
        if self.slots[s] != EMPTY {
            return Some(false);
        }
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
        self.values.push(value);
        self.slots[s] = (h >> 32) << 32 | self.ends.len() as u64;
        Some(true)
    }

    fn rehash(&mut self, n_slots: usize) {
        let mut slots = vec![EMPTY; n_slots];
        let mask = n_slots - 1;
        for i in 0..self.len() {
            let h = fx_hash(self.key(i));
            let mut s = h as usize & mask;
            while slots[s] != EMPTY {
                s = (s + 1) & mask;
            }
            slots[s] = (h >> 32) << 32 | (i as u64 + 1);
        }
        self.slots = slots;
    }
}

/// A set of 64-bit hashes (open addressing, linear probing), with
/// `prefetch` as `StrMap`'s. Hashes 0 and 1 count as one.
#[derive(Debug, Clone)]
pub struct HashSet64 {
    slots: Vec<u64>, // [2^k, at least twice the count]: 0 for empty
    count: usize,
}

impl HashSet64 {
    pub fn with_capacity(n: usize) -> Self {
        HashSet64 { slots: vec![0; n.saturating_mul(2).max(16).next_power_of_two()], count: 0 }
    }

    /// The slot holding `h`, or the empty slot where it would go.
    fn slot(&self, h: u64) -> usize {
        let h = h.max(1); // (0 marks an empty slot)
        let mask = self.slots.len() - 1;
        let mut s = h as usize & mask;
        while self.slots[s] != 0 && self.slots[s] != h {
            s = (s + 1) & mask;
        }
        s
    }

    pub fn insert(&mut self, h: u64) {
        if (self.count + 1) * 2 > self.slots.len() {
            let grown = vec![0; self.slots.len() * 2];
            let old = std::mem::replace(&mut self.slots, grown);
            for e in old.into_iter().filter(|&e| e != 0) {
                let s = self.slot(e);
                self.slots[s] = e;
            }
        }
        let s = self.slot(h);
        if self.slots[s] == 0 {
            self.slots[s] = h.max(1);
            self.count += 1;
        }
    }

    pub fn contains(&self, h: u64) -> bool {
        self.slots[self.slot(h)] != 0
    }

    pub fn prefetch(&self, h: u64) {
        prefetch(&self.slots[h.max(1) as usize & (self.slots.len() - 1)]);
    }
}

#[inline]
fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is baseline on x86-64, and a prefetch reads nothing the
    // program sees (`p` is a valid reference anyway).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p as *const T as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn it_agrees_with_a_hash_map_and_keeps_the_first_value() {
        // keys with shared prefixes, empty, long, and repeated
        let mut m = StrMap::default();
        let mut reference: HashMap<Vec<u8>, i32> = HashMap::new();
        let mut x: u64 = 12345;
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 23) as usize;
            let key: Vec<u8> = (0..len).map(|j| b"ab c"[((x >> (2 * j)) & 3) as usize]).collect();
            let inserted = m.insert_if_absent(&key, i).unwrap();
            assert_eq!(inserted, !reference.contains_key(&key));
            reference.entry(key).or_insert(i);
        }
        assert_eq!(m.len(), reference.len());
        for (k, &v) in &reference {
            assert_eq!(m.get(k), Some(v));
        }
        assert_eq!(m.get(b"not a key: it has a colon"), None);
    }

    #[test]
    fn hashed_inserts_and_the_empty_key() {
        let mut m = StrMap::default();
        m.reserve(4, 8);
        m.prefetch(fx_hash(b"he llo"));
        assert_eq!(m.insert_hashed_if_absent(b"he llo", fx_hash(b"he llo"), 7), Some(true));
        assert_eq!(m.insert_if_absent(b"he llo", 9), Some(false));
        assert_eq!(m.get(b"he llo"), Some(7));
        assert_eq!(m.get(b"hello"), None);
        assert_eq!(m.get(b""), None);
        assert_eq!(m.insert_if_absent(b"", 3), Some(true));
        assert_eq!(m.get(b""), Some(3));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn the_hash_set_holds_what_was_inserted() {
        let mut set = HashSet64::with_capacity(4);
        let hashes: Vec<u64> = (0..5000u64).map(|i| fx_hash(&i.to_le_bytes())).collect();
        for &h in hashes.iter().step_by(2) {
            set.insert(h);
            set.insert(h); // twice: still one
        }
        for (i, &h) in hashes.iter().enumerate() {
            set.prefetch(h);
            assert_eq!(set.contains(h), i % 2 == 0);
        }
        assert_eq!(set.count, 2500);
        // (the hash of "" and of eight zero bytes is 0)
        assert_eq!(fx_hash(b""), 0);
        let mut set = HashSet64::with_capacity(1);
        set.insert(0);
        for &h in &hashes {
            set.insert(h); // growing moves 0 too
        }
        assert!(set.contains(0) && set.contains(1));
    }
}
