//! greedy, dist, top-k, top-p, min-p, typical, temp, temp-ext, xtc,
//! top-n-sigma, and the "empty" sampler the reference returns when a
//! constructor's parameters disable it (named "?top-k", "?temp" …).

use super::rng::{resolve_seed, Mt19937};
use super::*;
use crate::sampler_any;

// ---------------------------------------------------------------------------
// empty
// ---------------------------------------------------------------------------

/// A no-op sampler standing for a disabled one (`llama_sampler_init_empty`).
pub struct Empty {
    pub name: &'static CStr,
}

impl Sampler for Empty {
    fn name(&self) -> &'static CStr {
        self.name
    }
    fn apply(&mut self, _cur: &mut Candidates<'_>) {}
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(Empty { name: self.name }))
    }
    fn copy_state_from(&mut self, _src: &dyn Sampler) -> bool {
        true
    }
    sampler_any!();
}

// ---------------------------------------------------------------------------
// greedy
// ---------------------------------------------------------------------------

pub struct Greedy;

impl Sampler for Greedy {
    fn name(&self) -> &'static CStr {
        c"greedy"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        // as the reference: selected = 0 even for an empty array
        let mut sel = 0usize;
        for i in 1..cur.size() {
            if cur.data[i].logit > cur.data[sel].logit {
                sel = i;
            }
        }
        cur.selected = sel as i64;
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(Greedy))
    }
    fn copy_state_from(&mut self, _src: &dyn Sampler) -> bool {
        true
    }
    sampler_any!();
}

// ---------------------------------------------------------------------------
// dist
// ---------------------------------------------------------------------------

pub struct Dist {
    pub seed: u32,
    pub seed_cur: u32,
    pub rng: Mt19937,
}

impl Dist {
    pub fn new(seed: u32) -> Dist {
        let seed_cur = resolve_seed(seed);
        Dist { seed, seed_cur, rng: Mt19937::new(seed_cur) }
    }
}

impl Sampler for Dist {
    fn name(&self) -> &'static CStr {
        c"dist"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if cur.size() == 0 {
            cur.selected = -1;
            return;
        }
        cur.selected = 0;
        if cur.size() == 1 {
            // one draw, to stay aligned with the reference's backend sampling
            self.rng.uniform_f64();
            cur.data[0].p = 1.0;
            return;
        }
        let mut max_l = cur.data[0].logit;
        if !cur.sorted {
            for t in &cur.data[1..] {
                max_l = cmax(max_l, t.logit);
            }
        }
        // float probabilities, double sum
        let mut sum_cum = 0.0f64;
        for t in cur.data.iter_mut() {
            let p = (t.logit - max_l).exp();
            t.p = p;
            sum_cum += p as f64;
        }
        let rnd = self.rng.uniform_f64();
        let mut sum_run = 0.0f64;
        let sum_tgt = sum_cum * rnd;
        let mut found = false;
        for (i, t) in cur.data.iter_mut().enumerate() {
            if !found {
                sum_run += t.p as f64;
                if sum_run >= sum_tgt {
                    cur.selected = i as i64;
                    found = true;
                }
            }
            t.p = (t.p as f64 / sum_cum) as f32;
        }
        if !found {
            cur.selected = cur.data.len() as i64 - 1;
        }
    }
    fn reset(&mut self) {
        self.seed_cur = resolve_seed(self.seed);
        self.rng.seed(self.seed_cur);
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(Dist { seed: self.seed, seed_cur: self.seed_cur, rng: self.rng.clone() }))
    }
    #[allow(clippy::misnamed_getters, reason = "the seed in use (seed_cur) is what llama_sampler_get_seed reports")]
    fn seed(&self) -> u32 {
        self.seed_cur
    }
    fn copy_state_from(&mut self, src: &dyn Sampler) -> bool {
        if let Some(s) = src.as_any().downcast_ref::<Dist>() {
            self.seed_cur = s.seed_cur;
            self.rng = s.rng.clone();
        }
        true
    }
    sampler_any!();
}

// ---------------------------------------------------------------------------
// top-k
// ---------------------------------------------------------------------------

pub struct TopK {
    pub k: i32,
}

impl Sampler for TopK {
    fn name(&self) -> &'static CStr {
        c"top-k"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        top_k_impl(cur, self.k);
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(TopK { k: self.k }))
    }
    fn copy_state_from(&mut self, _src: &dyn Sampler) -> bool {
        true
    }
    sampler_any!();
}

/// `llama_sampler_init_top_k`.
pub fn top_k(k: i32) -> Box<dyn Sampler> {
    if k <= 0 {
        return Box::new(Empty { name: c"?top-k" });
    }
    Box::new(TopK { k })
}

// ---------------------------------------------------------------------------
// top-p
// ---------------------------------------------------------------------------

pub struct TopP {
    pub p: f32,
    pub min_keep: usize,
    buf_sort: Vec<TokenData>,
}

impl Sampler for TopP {
    fn name(&self) -> &'static CStr {
        c"top-p"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if self.p >= 1.0 {
            return;
        }
        softmax(cur, false);

        let size = cur.size();
        let mut k = size;
        // where the sorted candidates are: the array itself, or buf_sort
        let mut in_buf = false;
        if !cur.sorted && size > 1024 {
            // adaptive top-k: sort only the head until the sum needs more
            k = 256.min(size);
            bucket_partial_sort(cur.data, k, &mut self.buf_sort);
            in_buf = true;
        } else if !cur.sorted {
            partial_sort_inplace(cur, k);
        }

        let mut cum_sum = 0.0f32;
        let mut last_idx = size;
        for i in 0..size {
            let p = if in_buf { self.buf_sort[i].p } else { cur.data[i].p };
            cum_sum += p;
            if cum_sum >= self.p && i + 1 >= self.min_keep {
                last_idx = i + 1;
                break;
            }
            if !cur.sorted && i == k - 1 {
                k = size;
                bucket_partial_sort(cur.data, k, &mut self.buf_sort);
                in_buf = true;
            }
        }
        if !cur.sorted {
            cur.data[..last_idx].copy_from_slice(&self.buf_sort[..last_idx]);
            cur.sorted = true;
        }
        cur.truncate(last_idx);
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(TopP { p: self.p, min_keep: self.min_keep, buf_sort: Vec::new() }))
    }
    fn copy_state_from(&mut self, _src: &dyn Sampler) -> bool {
        true
    }
    sampler_any!();
}

/// `llama_sampler_init_top_p`.
pub fn top_p(p: f32, min_keep: usize) -> Box<dyn Sampler> {
    if p >= 1.0 {
        return Box::new(Empty { name: c"?top-p" });
    }
    Box::new(TopP { p, min_keep, buf_sort: Vec::new() })
}

// ---------------------------------------------------------------------------
// min-p
// ---------------------------------------------------------------------------

pub struct MinP {
    pub p: f32,
    pub min_keep: usize,
}

impl Sampler for MinP {
    fn name(&self) -> &'static CStr {
        c"min-p"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if self.p <= 0.0 || cur.size() == 0 {
            return;
        }
        let mut applied = false;
        if !cur.sorted {
            let mut max_logit = -f32::MAX;
            for t in cur.data.iter() {
                max_logit = cmax(max_logit, t.logit);
            }
            let min_logit = max_logit + self.p.ln();
            let filtered: Vec<TokenData> = cur.data.iter().filter(|t| t.logit >= min_logit).copied().collect();
            if !filtered.is_empty() && filtered.len() >= self.min_keep {
                cur.data[..filtered.len()].copy_from_slice(&filtered);
                cur.truncate(filtered.len());
                applied = true;
            }
        }
        if !applied {
            if !cur.sorted {
                let n = cur.size();
                partial_sort_inplace(cur, n);
            }
            let min_logit = cur.data[0].logit + self.p.ln();
            let mut i = 1usize;
            while i < cur.size() {
                if cur.data[i].logit < min_logit && i >= self.min_keep {
                    break;
                }
                i += 1;
            }
            cur.truncate(i);
        }
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(MinP { p: self.p, min_keep: self.min_keep }))
    }
    fn copy_state_from(&mut self, _src: &dyn Sampler) -> bool {
        true
    }
    sampler_any!();
}

/// `llama_sampler_init_min_p`.
pub fn min_p(p: f32, min_keep: usize) -> Box<dyn Sampler> {
    if p <= 0.0 {
        return Box::new(Empty { name: c"?min-p" });
    }
    Box::new(MinP { p, min_keep })
}

// ---------------------------------------------------------------------------
// typical
// ---------------------------------------------------------------------------

pub struct Typical {
    pub p: f32,
    pub min_keep: usize,
}

impl Sampler for Typical {
    fn name(&self) -> &'static CStr {
        c"typical"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if self.p >= 1.0 || cur.size() == 0 {
            return;
        }
        softmax(cur, true);
        let mut entropy = 0.0f32;
        for t in cur.data.iter() {
            entropy += -t.p * t.p.ln();
        }
        let shifted: Vec<f32> = cur.data.iter().map(|t| (-t.p.ln() - entropy).abs()).collect();
        let mut indices: Vec<usize> = (0..cur.size()).collect();
        stl::sort(&mut indices, &|a: &usize, b: &usize| shifted[*a] < shifted[*b]);

        let mut cum_sum = 0.0f32;
        let mut last_idx = indices.len();
        for (i, &idx) in indices.iter().enumerate() {
            cum_sum += cur.data[idx].p;
            if cum_sum > self.p && (self.min_keep == 0 || i >= self.min_keep - 1) {
                last_idx = i + 1;
                break;
            }
        }
        let new: Vec<TokenData> = indices[..last_idx].iter().map(|&i| cur.data[i]).collect();
        cur.data[..new.len()].copy_from_slice(&new);
        cur.truncate(new.len());
        cur.sorted = false;
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(Typical { p: self.p, min_keep: self.min_keep }))
    }
    sampler_any!();
}

/// `llama_sampler_init_typical`.
pub fn typical(p: f32, min_keep: usize) -> Box<dyn Sampler> {
    if p >= 1.0 {
        return Box::new(Empty { name: c"?typical" });
    }
    Box::new(Typical { p, min_keep })
}

// ---------------------------------------------------------------------------
// temp, temp-ext
// ---------------------------------------------------------------------------

pub struct Temp {
    pub temp: f32,
}

impl Sampler for Temp {
    fn name(&self) -> &'static CStr {
        c"temp"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        temp_impl(cur, self.temp);
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(Temp { temp: self.temp }))
    }
    fn copy_state_from(&mut self, _src: &dyn Sampler) -> bool {
        true
    }
    sampler_any!();
}

/// `llama_sampler_init_temp`.
pub fn temp(t: f32) -> Box<dyn Sampler> {
    if t == 1.0 {
        return Box::new(Empty { name: c"?temp" });
    }
    Box::new(Temp { temp: t })
}

pub struct TempExt {
    pub temp: f32,
    pub delta: f32,
    pub exponent: f32,
}

impl Sampler for TempExt {
    fn name(&self) -> &'static CStr {
        c"temp-ext"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if self.delta > 0.0 {
            let min_temp = cmax(0.0, self.temp - self.delta);
            let max_temp = self.temp + self.delta;
            let exponent_val = self.exponent;
            if cur.size() <= 1 {
                return;
            }
            let max_entropy = -(1.0f32 / cur.size() as f32).ln();
            softmax(cur, true);
            let mut entropy = 0.0f32;
            for t in cur.data.iter() {
                let prob = t.p;
                if prob > 0.0 {
                    entropy -= prob * prob.ln();
                }
            }
            let normalized_entropy = entropy / max_entropy;
            let dyn_temp = min_temp + (max_temp - min_temp) * normalized_entropy.powf(exponent_val);
            temp_impl(cur, dyn_temp);
            // re-normalise in double, as the reference does
            let max_l = cur.data[0].logit as f64;
            let mut cum = 0.0f64;
            for t in cur.data.iter_mut() {
                let p = (t.logit as f64 - max_l).exp();
                t.p = p as f32;
                cum += p;
            }
            for t in cur.data.iter_mut() {
                t.p = (t.p as f64 / cum) as f32;
            }
        } else {
            temp_impl(cur, self.temp);
        }
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(TempExt { temp: self.temp, delta: self.delta, exponent: self.exponent }))
    }
    fn copy_state_from(&mut self, _src: &dyn Sampler) -> bool {
        true
    }
    sampler_any!();
}

/// `llama_sampler_init_temp_ext`.
pub fn temp_ext(t: f32, delta: f32, exponent: f32) -> Box<dyn Sampler> {
    if t == 1.0 && delta <= 0.0 {
        return Box::new(Empty { name: c"?temp-ext" });
    }
    Box::new(TempExt { temp: t, delta, exponent })
}

// ---------------------------------------------------------------------------
// xtc
// ---------------------------------------------------------------------------

pub struct Xtc {
    pub probability: f32,
    pub threshold: f32,
    pub min_keep: usize,
    pub seed: u32,
    pub seed_cur: u32,
    pub rng: Mt19937,
}

impl Sampler for Xtc {
    fn name(&self) -> &'static CStr {
        c"xtc"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if self.probability <= 0.0 || self.threshold > 0.5 || cur.size() < 2 {
            return;
        }
        let chance = self.rng.uniform_f32();
        if chance > self.probability {
            return;
        }
        softmax(cur, true);
        let mut pos_last = 0usize;
        for (i, t) in cur.data.iter().enumerate() {
            if t.p >= self.threshold {
                pos_last = i;
            } else {
                break;
            }
        }
        if cur.size() - pos_last >= self.min_keep && pos_last > 0 {
            cur.advance(pos_last);
        }
    }
    fn reset(&mut self) {
        self.seed_cur = resolve_seed(self.seed);
        self.rng.seed(self.seed_cur);
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        // as the reference: a new sampler from the parameters, then the rng
        let mut x = Xtc::new(self.probability, self.threshold, self.min_keep, self.seed);
        x.rng = self.rng.clone();
        Ok(Box::new(x))
    }
    sampler_any!();
}

impl Xtc {
    fn new(p: f32, t: f32, min_keep: usize, seed: u32) -> Xtc {
        let seed_cur = resolve_seed(seed);
        Xtc { probability: p, threshold: t, min_keep, seed, seed_cur, rng: Mt19937::new(seed_cur) }
    }
}

/// `llama_sampler_init_xtc`.
pub fn xtc(p: f32, t: f32, min_keep: usize, seed: u32) -> Box<dyn Sampler> {
    if p <= 0.0 || t > 0.5 {
        return Box::new(Empty { name: c"?xtc" });
    }
    Box::new(Xtc::new(p, t, min_keep, seed))
}

// ---------------------------------------------------------------------------
// top-n-sigma
// ---------------------------------------------------------------------------

pub struct TopNSigma {
    pub n: f32,
}

impl Sampler for TopNSigma {
    fn name(&self) -> &'static CStr {
        c"top-n-sigma"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if self.n <= 0.0 || cur.size() <= 1 {
            return;
        }
        let mut max = cur.data[0].logit;
        let mut logits_sum = 0.0f32;
        let mut valid = 0usize;
        for t in cur.data.iter() {
            if t.logit != f32::NEG_INFINITY {
                max = cmax(max, t.logit);
                logits_sum += t.logit;
                valid += 1;
            }
        }
        let mean = if valid > 0 { logits_sum / valid as f32 } else { 0.0 };
        // pow(float, int) is computed in double (C++ promotion); the sum is float
        let mut acc = 0.0f32;
        for t in cur.data.iter() {
            if t.logit != f32::NEG_INFINITY {
                let d = (t.logit - mean) as f64;
                acc = (acc as f64 + d * d) as f32;
            }
        }
        let std = if valid > 0 { ((acc / valid as f32) as f64).sqrt() as f32 } else { 0.0 };
        let bound = max - self.n * std;
        for t in cur.data.iter_mut() {
            if t.logit < bound {
                t.logit = f32::NEG_INFINITY;
            }
        }
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(TopNSigma { n: self.n }))
    }
    sampler_any!();
}

/// `llama_sampler_init_top_n_sigma`.
pub fn top_n_sigma(n: f32) -> Box<dyn Sampler> {
    if n <= 0.0 {
        return Box::new(Empty { name: c"?top-n-sigma" });
    }
    Box::new(TopNSigma { n })
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    fn ids(c: &Candidates<'_>) -> Vec<i32> {
        c.data.iter().map(|t| t.id).collect()
    }

    #[test]
    fn greedy_picks_the_first_maximum() {
        let mut v = vec![td(0, 1.0), td(1, 5.0), td(2, 5.0), td(3, -1.0)];
        let mut c = Candidates::new(&mut v);
        Greedy.apply(&mut c);
        assert_eq!(c.selected, 1);
        let mut e: Vec<TokenData> = vec![];
        let mut c = Candidates::new(&mut e);
        Greedy.apply(&mut c);
        assert_eq!(c.selected, 0);
    }

    #[test]
    fn top_k_keeps_the_k_best_sorted_and_ignores_k_le_0() {
        let mut v = vec![td(0, 1.0), td(1, 4.0), td(2, 3.0), td(3, 2.0)];
        let mut c = Candidates::new(&mut v);
        top_k_impl(&mut c, 2);
        assert_eq!(ids(&c), vec![1, 2]);
        assert!(c.sorted);
        let mut v = vec![td(0, 1.0), td(1, 4.0)];
        let mut c = Candidates::new(&mut v);
        top_k_impl(&mut c, 0);
        assert_eq!(c.size(), 2);
        top_k_impl(&mut c, 10);
        assert_eq!(ids(&c), vec![1, 0]);
        assert_eq!(top_k(0).name(), c"?top-k");
    }

    #[test]
    fn top_p_hand_computed() {
        // probabilities 0.5, 0.25, 0.125, 0.125 (logits = ln p)
        let ps = [0.5f32, 0.25, 0.125, 0.125];
        let mk = || ps.iter().enumerate().map(|(i, p)| td(i as i32, p.ln())).collect::<Vec<_>>();
        let mut v = mk();
        let mut c = Candidates::new(&mut v);
        top_p(0.7, 1).apply(&mut c);
        assert_eq!(ids(&c), vec![0, 1]);
        let mut v = mk();
        let mut c = Candidates::new(&mut v);
        top_p(0.5, 3).apply(&mut c);
        assert_eq!(c.size(), 3); // min_keep wins
        assert_eq!(top_p(1.0, 1).name(), c"?top-p");
        // large unsorted arrays take the adaptive path and agree with a full sort
        let mut a = logits(5000, 11);
        let mut b = a.clone();
        let mut ca = Candidates::new(&mut a);
        top_p(0.95, 1).apply(&mut ca);
        let mut cb = Candidates::new(&mut b);
        softmax(&mut cb, true);
        let mut cum = 0.0f32;
        let mut n = 0;
        for t in cb.data.iter() {
            cum += t.p;
            n += 1;
            if cum >= 0.95 {
                break;
            }
        }
        assert_eq!(ca.size(), n);
    }

    #[test]
    fn min_p_hand_computed() {
        let ps = [0.5f32, 0.3, 0.1, 0.1];
        let mut v: Vec<TokenData> = ps.iter().enumerate().map(|(i, p)| td(i as i32, p.ln())).collect();
        let mut c = Candidates::new(&mut v);
        min_p(0.5, 1).apply(&mut c);
        assert_eq!(ids(&c), vec![0, 1]);
        let mut v: Vec<TokenData> = ps.iter().enumerate().map(|(i, p)| td(i as i32, p.ln())).collect();
        let mut c = Candidates::new(&mut v);
        min_p(0.5, 3).apply(&mut c);
        assert_eq!(c.size(), 3);
        let mut e: Vec<TokenData> = vec![];
        min_p(0.5, 1).apply(&mut Candidates::new(&mut e));
    }

    #[test]
    fn typical_keeps_the_typical_set() {
        // one dominant token and many small ones: the small ones are "typical"
        let mut v = vec![td(0, 0.0), td(1, 0.0), td(2, 0.0), td(3, 0.0)];
        let mut c = Candidates::new(&mut v);
        typical(0.5, 1).apply(&mut c);
        assert_eq!(c.size(), 3); // uniform: cum > 0.5 after 3 (0.75)
        assert!(!c.sorted);
    }

    #[test]
    fn temp_ext_with_delta_normalises() {
        let mut v = logits(100, 5);
        let mut c = Candidates::new(&mut v);
        temp_ext(0.8, 0.5, 1.0).apply(&mut c);
        let s: f32 = c.data.iter().map(|t| t.p).sum();
        assert!((s - 1.0).abs() < 1e-4);
        assert_eq!(temp_ext(1.0, 0.0, 1.0).name(), c"?temp-ext");
    }

    #[test]
    fn xtc_removes_the_top_choices_above_threshold() {
        let ps = [0.4f32, 0.3, 0.2, 0.1];
        let mut v: Vec<TokenData> = ps.iter().enumerate().map(|(i, p)| td(i as i32, p.ln())).collect();
        let mut c = Candidates::new(&mut v);
        xtc(1.0, 0.15, 1, 1).apply(&mut c);
        assert_eq!(ids(&c), vec![2, 3]); // keeps the last one above t and everything below
        assert_eq!(xtc(0.5, 0.6, 1, 1).name(), c"?xtc");
    }

    #[test]
    fn top_n_sigma_masks_below_max_minus_n_std() {
        let mut v = vec![td(0, 10.0), td(1, 9.0), td(2, 0.0), td(3, f32::NEG_INFINITY)];
        let mut c = Candidates::new(&mut v);
        top_n_sigma(0.5).apply(&mut c);
        // mean 19/3, std = sqrt(((10-m)^2+(9-m)^2+m^2)/3) ~ 4.5 -> bound ~ 7.7
        assert_eq!(v[0].logit, 10.0);
        assert_eq!(v[1].logit, 9.0);
        assert_eq!(v[2].logit, f32::NEG_INFINITY);
    }

    #[test]
    fn dist_is_seeded_and_single_candidate_draws_once() {
        let mut a = Dist::new(42);
        let mut b = Dist::new(42);
        let base = logits(50, 2);
        for _ in 0..20 {
            let mut x = base.clone();
            let mut y = base.clone();
            let mut cx = Candidates::new(&mut x);
            let mut cy = Candidates::new(&mut y);
            a.apply(&mut cx);
            b.apply(&mut cy);
            assert_eq!(cx.selected, cy.selected);
        }
        let mut one = vec![td(7, 1.0)];
        let mut c = Candidates::new(&mut one);
        let mut r = a.rng.clone();
        a.apply(&mut c);
        r.uniform_f64();
        assert_eq!(a.rng.next_u32(), r.next_u32());
        assert_eq!(c.selected, 0);
        let mut e: Vec<TokenData> = vec![];
        let mut c = Candidates::new(&mut e);
        a.apply(&mut c);
        assert_eq!(c.selected, -1);
        assert_eq!(a.seed(), 42);
    }
}
