//! The iteration order of the reference's `std::unordered_map<std::string,
//! llama_token> token_to_id` (libstdc++, GCC 12, the compiler that built the
//! reference library), filled by inserting the tokens in id order.
//!
//! The reference auto-detects EOT / EOM / FIM tokens by walking that map and
//! keeping the first candidate it meets, so when a vocabulary has several
//! candidates (SmolLM2: `<|endoftext|>` and `<|im_end|>`) the result depends
//! on this order. Reproduced here: `std::hash<std::string>` (`_Hash_bytes`,
//! 64-bit MurmurHash2 variant, seed 0xc70f6907), the prime rehash policy
//! (bucket counts measured from libstdc++), bucket-front insertion and
//! rehash relinking.

const MUL: u64 = (0xc6a4a793u64 << 32) + 0x5bd1e995;

#[inline]
fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

/// `std::_Hash_bytes(p, len, 0xc70f6907)` = `std::hash<std::string>`.
pub fn std_hash(b: &[u8]) -> u64 {
    let len = b.len();
    let aligned = len & !7;
    let mut hash = 0xc70f6907u64 ^ (len as u64).wrapping_mul(MUL);
    for c in b[..aligned].chunks_exact(8) {
        let v = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let data = shift_mix(v.wrapping_mul(MUL)).wrapping_mul(MUL);
        hash ^= data;
        hash = hash.wrapping_mul(MUL);
    }
    if len & 7 != 0 {
        let mut data = 0u64;
        for &x in b[aligned..].iter().rev() {
            data = (data << 8) + u64::from(x);
        }
        hash ^= data;
        hash = hash.wrapping_mul(MUL);
    }
    hash = shift_mix(hash).wrapping_mul(MUL);
    shift_mix(hash)
}

/// (element count that triggers the rehash, new bucket count), as measured
/// from libstdc++ for one-by-one insertion into an empty map.
const GROWTH: [(usize, u64); 19] = [
    (1, 13),
    (14, 29),
    (30, 59),
    (60, 127),
    (128, 257),
    (258, 541),
    (542, 1109),
    (1110, 2357),
    (2358, 5087),
    (5088, 10273),
    (10274, 20753),
    (20754, 42043),
    (42044, 85229),
    (85230, 172933),
    (172934, 351061),
    (351062, 712697),
    (712698, 1447153),
    (1447154, 2938679),
    (2938680, 5967347),
];

/// The ids in the order libstdc++ iterates the map, or `None` for more
/// tokens than the measured growth table covers.
pub fn iteration_order<'a>(texts: impl ExactSizeIterator<Item = &'a [u8]>) -> Option<Vec<u32>> {
    const NONE: u32 = u32::MAX;
    let n = texts.len();
    if n >= GROWTH[GROWTH.len() - 1].1 as usize {
        return None;
    }
    let hashes: Vec<u64> = texts.map(std_hash).collect();
    let before = n as u32; // the list head (_M_before_begin)
    let mut next = vec![NONE; n + 1];
    let mut buckets: Vec<u32> = vec![NONE; 1];
    let mut g = 0;
    for i in 0..n {
        if g < GROWTH.len() && i + 1 == GROWTH[g].0 {
            // rehash into the new bucket array, walking the current list
            let nb = GROWTH[g].1;
            g += 1;
            let mut nbk = vec![NONE; nb as usize];
            let mut p = next[before as usize];
            next[before as usize] = NONE;
            let mut bbegin = 0usize;
            while p != NONE {
                let pn = next[p as usize];
                let b = (hashes[p as usize] % nb) as usize;
                if nbk[b] == NONE {
                    next[p as usize] = next[before as usize];
                    next[before as usize] = p;
                    nbk[b] = before;
                    if next[p as usize] != NONE {
                        nbk[bbegin] = p;
                    }
                    bbegin = b;
                } else {
                    let head = nbk[b] as usize;
                    next[p as usize] = next[head];
                    next[head] = p;
                }
                p = pn;
            }
            buckets = nbk;
        }
        let nb = buckets.len() as u64;
        let b = (hashes[i] % nb) as usize;
        let node = i as u32;
        if buckets[b] != NONE {
            let head = buckets[b] as usize;
            next[i] = next[head];
            next[head] = node;
        } else {
            next[i] = next[before as usize];
            next[before as usize] = node;
            if next[i] != NONE {
                let nbkt = (hashes[next[i] as usize] % nb) as usize;
                buckets[nbkt] = node;
            }
            buckets[b] = before;
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut p = next[before as usize];
    while p != NONE {
        order.push(p);
        p = next[p as usize];
    }
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_libstdcxx() {
        assert_eq!(std_hash(b"abc"), 0x32d82bf8ed3dba39);
        assert_eq!(std_hash(b""), 0x553e93901e462a6e);
        assert_eq!(std_hash(b"12345678901"), 0x7c574e0fd94c1163);
    }

    #[test]
    fn order_is_a_permutation() {
        let texts: Vec<Vec<u8>> = (0..1000).map(|i| i.to_string().into_bytes()).collect();
        let mut o = iteration_order(texts.iter().map(|t| t.as_slice())).unwrap();
        // what a libstdc++ (GCC 12) unordered_map<string, int> built the same way iterates first
        assert_eq!(o[..12], [997, 994, 991, 988, 987, 981, 980, 979, 973, 970, 969, 967]);
        o.sort_unstable();
        assert_eq!(o, (0..1000).collect::<Vec<u32>>());
    }
}
