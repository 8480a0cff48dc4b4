//! Mirostat v1 and v2 (`llama_sampler_init_mirostat`, `_mirostat_v2`).

use super::rng::{resolve_seed, Mt19937};
use super::*;
use crate::sampler_any;

pub struct Mirostat {
    pub n_vocab: i32,
    pub seed: u32,
    pub seed_cur: u32,
    pub tau: f32,
    pub eta: f32,
    pub m: i32,
    pub mu: f32,
    pub rng: Mt19937,
}

impl Mirostat {
    pub fn new(n_vocab: i32, seed: u32, tau: f32, eta: f32, m: i32) -> Mirostat {
        let seed_cur = resolve_seed(seed);
        Mirostat { n_vocab, seed, seed_cur, tau, eta, m, mu: 2.0 * tau, rng: Mt19937::new(seed_cur) }
    }
}

impl Sampler for Mirostat {
    fn name(&self) -> &'static CStr {
        c"mirostat"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if cur.size() == 0 {
            return; // the reference asserts
        }
        softmax(cur, true);

        // estimate s_hat from the m most probable tokens
        let mut sum_ti_bi = 0.0f32;
        let mut sum_ti_sq = 0.0f32;
        let limit = (self.m as i64 - 1) as u64 as usize; // size_t(m - 1)
        let mut i = 0usize;
        while i < limit && i < cur.size() - 1 {
            let t_i = ((i + 2) as f32 / (i + 1) as f32).ln();
            let b_i = (cur.data[i].p / cur.data[i + 1].p).ln();
            sum_ti_bi += t_i * b_i;
            sum_ti_sq += t_i * t_i;
            i += 1;
        }
        let s_hat = sum_ti_bi / sum_ti_sq;

        let epsilon_hat = s_hat - 1.0;
        let k =
            ((epsilon_hat * 2.0f32.powf(self.mu)) / (1.0 - (self.n_vocab as f32).powf(-epsilon_hat))).powf(1.0 / s_hat);

        top_k_impl(cur, cvtt(k).max(1));
        softmax(cur, true);

        let idx = sample_dist(cur, &mut self.rng);
        cur.selected = idx as i64;

        let observed_surprise = -cur.data[idx].p.log2();
        let e = observed_surprise - self.tau;
        self.mu -= self.eta * e;
    }
    fn reset(&mut self) {
        self.mu = 2.0 * self.tau;
        self.seed_cur = resolve_seed(self.seed);
        self.rng.seed(self.seed_cur);
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        let mut r = Mirostat::new(self.n_vocab, self.seed, self.tau, self.eta, self.m);
        r.mu = self.mu;
        r.rng = self.rng.clone();
        Ok(Box::new(r))
    }
    #[allow(clippy::misnamed_getters, reason = "the seed in use (seed_cur) is what llama_sampler_get_seed reports")]
    fn seed(&self) -> u32 {
        self.seed_cur
    }
    sampler_any!();
}

pub struct MirostatV2 {
    pub seed: u32,
    pub seed_cur: u32,
    pub tau: f32,
    pub eta: f32,
    pub mu: f32,
    pub rng: Mt19937,
}

impl MirostatV2 {
    pub fn new(seed: u32, tau: f32, eta: f32) -> MirostatV2 {
        let seed_cur = resolve_seed(seed);
        MirostatV2 { seed, seed_cur, tau, eta, mu: 2.0 * tau, rng: Mt19937::new(seed_cur) }
    }
}

impl Sampler for MirostatV2 {
    fn name(&self) -> &'static CStr {
        c"mirostat-v2"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if cur.size() == 0 {
            return; // the reference asserts
        }
        softmax(cur, true);
        // drop the tokens whose surprise exceeds mu (keep at least one)
        let mu = self.mu;
        let keep = cur.data.iter().position(|t| -t.p.log2() > mu).unwrap_or(cur.size());
        cur.truncate(keep.max(1));
        softmax(cur, true);

        let idx = sample_dist(cur, &mut self.rng);
        cur.selected = idx as i64;
        let observed_surprise = -cur.data[idx].p.log2();
        let e = observed_surprise - self.tau;
        self.mu -= self.eta * e;
    }
    fn reset(&mut self) {
        self.mu = 2.0 * self.tau;
        self.seed_cur = resolve_seed(self.seed);
        self.rng.seed(self.seed_cur);
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        let mut r = MirostatV2::new(self.seed, self.tau, self.eta);
        r.mu = self.mu;
        r.rng = self.rng.clone();
        Ok(Box::new(r))
    }
    #[allow(clippy::misnamed_getters, reason = "the seed in use (seed_cur) is what llama_sampler_get_seed reports")]
    fn seed(&self) -> u32 {
        self.seed_cur
    }
    sampler_any!();
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    #[test]
    fn mirostat_v2_truncates_by_surprise_and_updates_mu() {
        let mut s = MirostatV2::new(7, 5.0, 0.1);
        let mut v = logits(1000, 4);
        let mut c = Candidates::new(&mut v);
        s.apply(&mut c);
        assert!(c.selected >= 0 && (c.selected as usize) < c.size());
        // every kept token has surprise <= mu (10), except possibly a forced single one
        assert!(c.size() == 1 || c.data.iter().all(|t| t.p > 0.0));
        assert_ne!(s.mu, 10.0);
        s.reset();
        assert_eq!(s.mu, 10.0);
    }

    #[test]
    fn mirostat_selects_within_range() {
        let mut s = Mirostat::new(1000, 3, 5.0, 0.1, 100);
        for r in 0..50 {
            let mut v = logits(1000, r + 1);
            let mut c = Candidates::new(&mut v);
            s.apply(&mut c);
            assert!(c.selected >= 0 && (c.selected as usize) < c.size());
        }
    }
}
