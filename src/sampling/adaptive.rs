//! adaptive-p (`llama_sampler_init_adaptive_p`): reshapes the distribution
//! around an adapted target probability, then samples from it.

use super::rng::{resolve_seed, Mt19937};
use super::*;
use crate::sampler_any;

const DISTRIBUTION_WIDTH: f32 = 0.3;
const PEAK_LOGIT_VALUE: f32 = 5.0;
const SHARPNESS: f32 = 10.0;
const INV_WIDTH: f32 = 1.0 / DISTRIBUTION_WIDTH;

pub struct AdaptiveP {
    pub target: f32,
    pub decay: f32,
    pub seed: u32,
    pub seed_cur: u32,
    pub rng: Mt19937,
    pub weighted_sum: f32,
    pub total_weight: f32,
    original_probs: Vec<f32>,
    pending_token_id: i32,
    pending_token_idx: i32,
}

impl AdaptiveP {
    pub fn new(target: f32, decay: f32, seed: u32) -> AdaptiveP {
        let seed_cur = resolve_seed(seed);
        let decay = decay.clamp(0.0, 0.99);
        AdaptiveP {
            target,
            decay,
            seed,
            seed_cur,
            rng: Mt19937::new(seed_cur),
            weighted_sum: target / (1.0 - decay),
            total_weight: 1.0 / (1.0 - decay),
            original_probs: Vec::new(),
            pending_token_id: TOKEN_NULL,
            pending_token_idx: -1,
        }
    }
}

/// `std::clamp(v, lo, hi)`: `v < lo ? lo : hi < v ? hi : v`.
fn clamp(v: f32, lo: f32, hi: f32) -> f32 {
    if v < lo {
        lo
    } else if hi < v {
        hi
    } else {
        v
    }
}

impl Sampler for AdaptiveP {
    fn name(&self) -> &'static CStr {
        c"adaptive-p"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if cur.size() == 0 {
            return; // the reference asserts
        }
        softmax(cur, false);
        if self.target < 0.0 {
            cur.selected = sample_dist(cur, &mut self.rng) as i64;
            return;
        }
        self.original_probs.clear();
        self.original_probs.extend(cur.data.iter().map(|t| t.p));

        let target = clamp(self.target, 0.0, 1.0);
        let adapted = clamp(
            if self.total_weight == 0.0 { target } else { 2.0 * target - (self.weighted_sum / self.total_weight) },
            0.0,
            1.0,
        );
        for t in cur.data.iter_mut() {
            if t.logit == f32::NEG_INFINITY {
                continue;
            }
            let dist = ((t.p - adapted) * INV_WIDTH).abs();
            t.logit = PEAK_LOGIT_VALUE - SHARPNESS * dist * dist / (1.0 + dist);
        }
        softmax(cur, false);
        let idx = sample_dist(cur, &mut self.rng);
        cur.selected = idx as i64;
        self.pending_token_id = cur.data[idx].id;
        self.pending_token_idx = idx as i32;
    }
    fn accept(&mut self, token: i32) {
        if self.pending_token_id == token && self.pending_token_idx >= 0 {
            if let Some(&p) = self.original_probs.get(self.pending_token_idx as usize) {
                self.weighted_sum = p + self.decay * self.weighted_sum;
                self.total_weight = 1.0 + self.decay * self.total_weight;
            }
        }
        self.pending_token_id = TOKEN_NULL;
        self.pending_token_idx = -1;
    }
    fn reset(&mut self) {
        self.weighted_sum = self.target / (1.0 - self.decay);
        self.total_weight = 1.0 / (1.0 - self.decay);
        self.pending_token_id = TOKEN_NULL;
        self.pending_token_idx = -1;
        self.seed_cur = resolve_seed(self.seed);
        self.rng.seed(self.seed_cur);
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        // as the reference: the clone starts a fresh rng from the seed and
        // copies the EMA state (not original_probs)
        let mut r = AdaptiveP::new(self.target, self.decay, self.seed);
        r.weighted_sum = self.weighted_sum;
        r.total_weight = self.total_weight;
        r.pending_token_id = self.pending_token_id;
        r.pending_token_idx = self.pending_token_idx;
        Ok(Box::new(r))
    }
    sampler_any!();
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    #[test]
    fn adaptive_p_updates_its_average_on_accept() {
        let mut s = AdaptiveP::new(0.3, 0.9, 5);
        let w0 = s.weighted_sum;
        let mut v = logits(200, 8);
        let mut c = Candidates::new(&mut v);
        s.apply(&mut c);
        let tok = c.data[c.selected as usize].id;
        s.accept(tok);
        assert_ne!(s.weighted_sum, w0);
        // accepting another token (not the pending one) changes nothing
        let w1 = s.weighted_sum;
        s.accept(tok);
        assert_eq!(s.weighted_sum, w1);
    }
}
