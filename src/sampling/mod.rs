//! Samplers: the llama_sampler family, seed-for-seed identical to the
//! reference (llama.cpp commit 0c1e570, llama-sampler.cpp).
//!
//! Every sampler works on a [`Candidates`] array (the safe view of a C
//! `llama_token_data_array`) and follows the reference's order of operations
//! and float types exactly, because token-for-token parity depends on them:
//! which sums are float and which double, when a softmax runs and whether it
//! sorts, and the tie order of libstdc++'s unstable sorts ([`stl`]). The
//! random numbers are mt19937 with libstdc++'s distributions ([`rng`]).
//!
//! - [`chain`]: the sampler chain (timing, seeds, clone).
//! - [`basic`]: greedy, dist, top-k, top-p, min-p, typical, temp, temp-ext,
//!   xtc, top-n-sigma, and the "empty" placeholder the reference returns for
//!   disabled parameters.
//! - [`mirostat`]: mirostat v1 and v2; [`adaptive`]: adaptive-p.
//! - [`penalties`]: repetition penalties, DRY, logit bias.
//! - [`infill`]: the fill-in-the-middle sampler (over a [`VocabView`]).
//! - [`grammar`]: the GBNF parser and matcher, and the grammar sampler.
//!
//! Samplers that need a vocabulary see it through [`VocabView`], so they are
//! testable with a fake one; the C entry points wire the real vocabulary in
//! once the tokenizer exists.

pub mod adaptive;
pub mod basic;
pub mod chain;
pub mod grammar;
pub mod infill;
pub mod mirostat;
pub mod penalties;
pub mod rng;
pub mod stl;

use crate::Result;
use std::any::Any;
use std::borrow::Cow;
use std::ffi::CStr;

/// `LLAMA_DEFAULT_SEED`.
pub const DEFAULT_SEED: u32 = 0xFFFF_FFFF;
/// `LLAMA_TOKEN_NULL`.
pub const TOKEN_NULL: i32 = -1;

/// One candidate: `llama_token_data`'s fields, with its C layout (`repr(C)`),
/// so the ABI layer can view a caller's array as `&mut [TokenData]` without
/// a copy (src/ffi/sampler.rs checks the two layouts agree).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenData {
    pub id: i32,
    pub logit: f32,
    pub p: f32,
}

const _: () = assert!(std::mem::size_of::<TokenData>() == 12);

/// The candidates a sampler transforms: `llama_token_data_array` with the
/// (pointer, size) pair as a slice. Shrinking is re-slicing: a sampler keeps
/// a prefix (`truncate`) or, as xtc does, drops a head (`advance`, the
/// reference's `data += n`).
#[derive(Debug)]
pub struct Candidates<'a> {
    pub data: &'a mut [TokenData],
    pub selected: i64,
    pub sorted: bool,
}

impl<'a> Candidates<'a> {
    pub fn new(data: &'a mut [TokenData]) -> Candidates<'a> {
        Candidates { data, selected: -1, sorted: false }
    }
    pub fn size(&self) -> usize {
        self.data.len()
    }
    /// `size = n` (n <= size).
    pub fn truncate(&mut self, n: usize) {
        let d = std::mem::take(&mut self.data);
        self.data = &mut d[..n];
    }
    /// `data += n; size -= n`.
    pub fn advance(&mut self, n: usize) {
        let d = std::mem::take(&mut self.data);
        self.data = &mut d[n..];
    }
}

/// One sampler. `apply` transforms the candidates and may select one;
/// `accept` tells it which token was finally chosen.
pub trait Sampler: Any {
    /// The reference's name for it ("top-k", "?top-p" for a disabled one …).
    fn name(&self) -> &'static CStr;
    fn accept(&mut self, _token: i32) {}
    fn apply(&mut self, cur: &mut Candidates<'_>);
    fn reset(&mut self) {}
    /// A copy with the same parameters and state, as the reference's clone.
    fn clone_box(&self) -> Result<Box<dyn Sampler>>;
    /// The seed in use (dist, mirostat, mirostat v2, chains), else
    /// LLAMA_DEFAULT_SEED.
    fn seed(&self) -> u32 {
        DEFAULT_SEED
    }
    /// `llama_sampler_copy` for two samplers of the same type: the
    /// reference's samplers with a `copy_state` copy only their state (and
    /// keep their own parameters); the others are replaced by a clone of
    /// `src`. Returns false when the caller should replace by a clone.
    fn copy_state_from(&mut self, _src: &dyn Sampler) -> bool {
        false
    }
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// Implements the `Any` plumbing of [`Sampler`] for a concrete type.
#[macro_export]
macro_rules! sampler_any {
    () => {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
        fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
            self
        }
        fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
            self
        }
    };
}

/// What the vocabulary-dependent samplers (grammar, infill, DRY breakers)
/// need from a vocabulary.
pub trait VocabView {
    fn n_tokens(&self) -> usize;
    /// The token's text as `llama_token_to_piece(…, lstrip 0, special)`.
    fn piece(&self, token: i32, special: bool) -> Cow<'_, [u8]>;
    fn is_eog(&self, token: i32) -> bool;
    fn token_eot(&self) -> i32;
    fn token_eos(&self) -> i32;
    /// Tokenize text without BOS and without parsing special tokens (DRY).
    fn tokenize(&self, text: &[u8]) -> Vec<i32>;
    /// Tokenize text without BOS, parsing special tokens (grammar `<token>`).
    fn tokenize_special(&self, text: &[u8]) -> Vec<i32> {
        self.tokenize(text)
    }
    /// `detokenize({token}, special = true)` (DRY's breaker scan).
    fn detokenize_one(&self, token: i32) -> Vec<u8> {
        self.piece(token, true).into_owned()
    }
}

// ---------------------------------------------------------------------------
// Helpers shared by the samplers (the reference's static functions)
// ---------------------------------------------------------------------------

/// `std::max(a, b)`: `(a < b) ? b : a` (NaN-sensitive like the C++).
#[inline]
pub(crate) fn cmax(a: f32, b: f32) -> f32 {
    if a < b {
        b
    } else {
        a
    }
}

/// `int(x)` as compiled for x86-64 (cvttss2si): truncation, and the
/// "integer indefinite" INT_MIN for NaN and out-of-range values.
#[inline]
pub(crate) fn cvtt(x: f32) -> i32 {
    if x.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&x) {
        i32::MIN
    } else {
        x as i32
    }
}

fn by_logit_desc(a: &TokenData, b: &TokenData) -> bool {
    a.logit > b.logit
}

/// `llama_token_data_array_partial_sort`: the reference's bucket partial
/// sort into `res` (does not modify `cur`). `res` ends up holding every
/// candidate of the buckets needed (at least `npartial`), the first
/// `npartial` in descending order.
pub(crate) fn bucket_partial_sort(cur: &[TokenData], npartial: usize, res: &mut Vec<TokenData>) {
    const NBUCKETS: i32 = 128;
    const LOW: f32 = -10.0;
    const HIGH: f32 = 10.0;
    const SCALE: f32 = NBUCKETS as f32 / (HIGH - LOW);
    const INTER: f32 = -LOW * SCALE;

    let mut bucket_idx = Vec::with_capacity(cur.len());
    let mut histo = [0usize; NBUCKETS as usize];
    for t in cur {
        let ib = cvtt(SCALE * t.logit + INTER).clamp(0, NBUCKETS - 1);
        bucket_idx.push(ib as usize);
        histo[ib as usize] += 1;
    }
    let mut nhave = 0usize;
    let mut ib = NBUCKETS - 1;
    while ib >= 0 {
        nhave += histo[ib as usize];
        if nhave >= npartial {
            break;
        }
        ib -= 1;
    }
    let ib = ib.max(0) as usize;
    res.clear();
    res.resize(nhave, TokenData { id: 0, logit: 0.0, p: 0.0 });
    // write position of each bucket, highest bucket first
    let mut starts = [0usize; NBUCKETS as usize];
    let mut pos = 0usize;
    for j in (ib..NBUCKETS as usize).rev() {
        starts[j] = pos;
        pos += histo[j];
    }
    for (t, &j) in cur.iter().zip(&bucket_idx) {
        if j >= ib {
            res[starts[j]] = *t;
            starts[j] += 1;
        }
    }
    let mut ptr = 0usize;
    let mut ndone = 0usize;
    for j in (ib + 1..NBUCKETS as usize).rev() {
        stl::sort(&mut res[ptr..ptr + histo[j]], &by_logit_desc);
        ptr += histo[j];
        ndone += histo[j];
    }
    let mid = npartial.saturating_sub(ndone).min(histo[ib]);
    stl::partial_sort(&mut res[ptr..ptr + histo[ib]], mid, &by_logit_desc);
}

/// `llama_token_data_array_partial_sort_inplace`: keep the top `npartial`,
/// sorted, and mark the array sorted.
pub(crate) fn partial_sort_inplace(cur: &mut Candidates<'_>, npartial: usize) {
    if npartial <= 128 {
        stl::partial_sort(cur.data, npartial, &by_logit_desc);
    } else {
        let mut tmp = Vec::new();
        bucket_partial_sort(cur.data, npartial, &mut tmp);
        cur.data[..npartial].copy_from_slice(&tmp[..npartial]);
    }
    cur.truncate(npartial);
    cur.sorted = true;
}

/// `llama_sampler_softmax_impl`. The reference asserts a non-empty array;
/// an empty one is left alone here.
pub(crate) fn softmax(cur: &mut Candidates<'_>, do_sort: bool) {
    if cur.size() == 0 {
        return;
    }
    if do_sort && !cur.sorted {
        let n = cur.size();
        partial_sort_inplace(cur, n);
    }
    let mut max_l = cur.data[0].logit;
    if !cur.sorted {
        for t in &cur.data[1..] {
            max_l = cmax(max_l, t.logit);
        }
    }
    let mut cum_sum = 0.0f32;
    for t in cur.data.iter_mut() {
        let p = (t.logit - max_l).exp();
        t.p = p;
        cum_sum += p;
    }
    for t in cur.data.iter_mut() {
        t.p /= cum_sum;
    }
}

/// `llama_sampler_temp_impl`.
pub(crate) fn temp_impl(cur: &mut Candidates<'_>, temp: f32) {
    if cur.size() == 0 {
        return;
    }
    if temp <= 0.0 {
        let mut max_i = 0usize;
        let mut max_l = cur.data[0].logit;
        for i in 1..cur.size() {
            if cur.data[i].logit > max_l {
                cur.data[max_i].logit = f32::NEG_INFINITY;
                max_i = i;
                max_l = cur.data[i].logit;
            } else {
                cur.data[i].logit = f32::NEG_INFINITY;
            }
        }
        return;
    }
    for t in cur.data.iter_mut() {
        t.logit /= temp;
    }
}

/// `llama_sampler_top_k_impl`.
pub(crate) fn top_k_impl(cur: &mut Candidates<'_>, k: i32) {
    if k <= 0 {
        return;
    }
    let k = k.min(cur.size() as i32) as usize;
    if !cur.sorted {
        partial_sort_inplace(cur, k);
    }
    cur.truncate(k);
}

/// `llama_sample_dist`: a `std::discrete_distribution` over the p values.
pub(crate) fn sample_dist(cur: &Candidates<'_>, rng: &mut rng::Mt19937) -> usize {
    rng::discrete(cur.data.iter().map(|t| t.p), rng)
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;

    /// A deterministic logits vector (xorshift), ids 0..n.
    pub fn logits(n: usize, seed: u32) -> Vec<TokenData> {
        let mut s = seed.max(1);
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                let u = (s >> 8) as f32 / (1u32 << 24) as f32;
                TokenData { id: i as i32, logit: u * 20.0 - 10.0, p: 0.0 }
            })
            .collect()
    }

    pub fn td(id: i32, logit: f32) -> TokenData {
        TokenData { id, logit, p: 0.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    #[test]
    fn bucket_partial_sort_matches_a_full_sort_prefix() {
        for n in [200usize, 1000, 5000] {
            let v = logits(n, 9);
            for k in [129usize, 256, n].into_iter().filter(|&k| k <= n) {
                let mut res = Vec::new();
                bucket_partial_sort(&v, k, &mut res);
                assert!(res.len() >= k);
                let mut full = v.clone();
                full.sort_by(|a, b| b.logit.partial_cmp(&a.logit).unwrap());
                let a: Vec<f32> = res[..k].iter().map(|t| t.logit).collect();
                let b: Vec<f32> = full[..k].iter().map(|t| t.logit).collect();
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn softmax_sums_to_one_and_sorts_when_asked() {
        let mut v = logits(300, 3);
        let mut c = Candidates::new(&mut v);
        softmax(&mut c, true);
        assert!(c.sorted);
        let s: f32 = c.data.iter().map(|t| t.p).sum();
        assert!((s - 1.0).abs() < 1e-4);
        assert!(c.data.windows(2).all(|w| w[0].logit >= w[1].logit));
        let mut empty: Vec<TokenData> = vec![];
        let mut c = Candidates::new(&mut empty);
        softmax(&mut c, true); // no panic
    }

    #[test]
    fn temp_zero_keeps_only_the_first_maximum() {
        let mut v = vec![td(0, 1.0), td(1, 3.0), td(2, 3.0), td(3, 2.0)];
        let mut c = Candidates::new(&mut v);
        temp_impl(&mut c, 0.0);
        let l: Vec<f32> = v.iter().map(|t| t.logit).collect();
        assert_eq!(l, vec![f32::NEG_INFINITY, 3.0, f32::NEG_INFINITY, f32::NEG_INFINITY]);
    }

    #[test]
    fn cvtt_is_x86_truncation() {
        assert_eq!(cvtt(1.9), 1);
        assert_eq!(cvtt(-1.9), -1);
        assert_eq!(cvtt(f32::NAN), i32::MIN);
        assert_eq!(cvtt(f32::INFINITY), i32::MIN);
        assert_eq!(cvtt(f32::NEG_INFINITY), i32::MIN);
    }
}

#[cfg(test)]
mod edge_tests {
    use super::test_util::*;
    use super::*;

    fn all_samplers() -> Vec<Box<dyn Sampler>> {
        vec![
            Box::new(basic::Greedy),
            Box::new(basic::Dist::new(1)),
            basic::top_k(3),
            basic::top_p(0.5, 1),
            basic::top_p(0.5, 0),
            basic::min_p(0.2, 1),
            basic::typical(0.5, 0),
            basic::typical(0.5, 2),
            basic::temp(0.5),
            basic::temp(0.0),
            basic::temp(-1.0),
            basic::temp_ext(0.8, 0.5, 1.0),
            basic::xtc(1.0, 0.1, 1, 1),
            basic::top_n_sigma(1.0),
            Box::new(mirostat::Mirostat::new(300, 1, 5.0, 0.1, 100)),
            Box::new(mirostat::Mirostat::new(300, 1, 5.0, 0.1, 0)),
            Box::new(mirostat::MirostatV2::new(1, 5.0, 0.1)),
            penalties::penalties(300, 8, 1.2, 0.1, 0.1),
            penalties::dry(0.8, 1.75, 2, 16, Default::default()),
            penalties::logit_bias(
                300,
                vec![penalties::Bias { token: 1, bias: 1.0 }, penalties::Bias { token: -5, bias: 1.0 }],
            ),
            Box::new(adaptive::AdaptiveP::new(0.5, 0.9, 1)),
            Box::new(adaptive::AdaptiveP::new(-1.0, 0.9, 1)),
        ]
    }

    /// Empty, single, all -inf, mixed -inf, +inf and huge values: no panic,
    /// and a selection (when made) is inside the array.
    #[test]
    fn every_sampler_survives_degenerate_arrays() {
        let ninf = f32::NEG_INFINITY;
        let cases: Vec<Vec<TokenData>> = vec![
            vec![],
            vec![td(0, 1.0)],
            (0..300).map(|i| td(i, ninf)).collect(),
            vec![td(0, ninf), td(1, 2.0), td(2, ninf), td(3, 2.0)],
            vec![td(0, f32::INFINITY), td(1, 1.0), td(2, 3.0)],
            vec![td(0, 1e30), td(1, -1e30), td(2, 0.0)],
            logits(300, 3),
        ];
        for (ci, case) in cases.iter().enumerate() {
            for (si, mut s) in all_samplers().into_iter().enumerate() {
                for round in 0..3 {
                    let mut v = case.clone();
                    let mut c = Candidates::new(&mut v);
                    s.apply(&mut c);
                    if c.selected >= 0 {
                        assert!(
                            (c.selected as usize) < c.size() || c.size() == 0,
                            "case {ci} sampler {si} round {round}"
                        );
                    }
                    if let Some(t) = c.data.first() {
                        s.accept(t.id);
                    }
                }
                s.reset();
                let _ = s.clone_box().unwrap();
            }
        }
    }

    /// NaN logits: no guarantee of a meaningful choice (the reference's is
    /// undefined too), but never a panic outside the sorts' bounds checks.
    #[test]
    fn nan_logits_do_not_break_the_simple_samplers() {
        let mk = || vec![td(0, f32::NAN), td(1, 1.0), td(2, 2.0)];
        for mut s in [
            Box::new(basic::Greedy) as Box<dyn Sampler>,
            Box::new(basic::Dist::new(2)),
            basic::temp(0.7),
            basic::top_k(2),
            basic::min_p(0.1, 1),
        ] {
            let mut v = mk();
            s.apply(&mut Candidates::new(&mut v));
        }
    }
}
