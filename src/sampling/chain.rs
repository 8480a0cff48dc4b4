//! The sampler chain: applies its samplers in order, tells each the accepted
//! token, and keeps the reference's perf counters (time inside accept/apply
//! unless `no_perf`, and the number of accepts).

use super::*;
use crate::sampler_any;
use std::time::Instant;

pub struct Chain {
    pub no_perf: bool,
    pub samplers: Vec<Box<dyn Sampler>>,
    pub t_sample_us: i64,
    pub n_sample: i32,
}

impl Chain {
    pub fn new(no_perf: bool) -> Chain {
        Chain { no_perf, samplers: Vec::new(), t_sample_us: 0, n_sample: 0 }
    }

    fn timed<R>(&mut self, f: impl FnOnce(&mut Vec<Box<dyn Sampler>>) -> R) -> R {
        if self.no_perf {
            return f(&mut self.samplers);
        }
        let start = Instant::now();
        let r = f(&mut self.samplers);
        self.t_sample_us += start.elapsed().as_micros() as i64;
        r
    }

    pub fn perf_reset(&mut self) {
        self.t_sample_us = 0;
        self.n_sample = 0;
    }
}

impl Sampler for Chain {
    fn name(&self) -> &'static CStr {
        c"chain"
    }
    fn accept(&mut self, token: i32) {
        self.timed(|s| s.iter_mut().for_each(|x| x.accept(token)));
        self.n_sample += 1;
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        self.timed(|s| s.iter_mut().for_each(|x| x.apply(cur)));
    }
    fn reset(&mut self) {
        self.samplers.iter_mut().for_each(|x| x.reset());
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        let mut c = Chain::new(self.no_perf);
        for s in &self.samplers {
            c.samplers.push(s.clone_box()?);
        }
        Ok(Box::new(c))
    }
    fn seed(&self) -> u32 {
        // the last sampler with a seed
        self.samplers.iter().rev().map(|s| s.seed()).find(|&s| s != DEFAULT_SEED).unwrap_or(DEFAULT_SEED)
    }
    fn copy_state_from(&mut self, src: &dyn Sampler) -> bool {
        let Some(src) = src.as_any().downcast_ref::<Chain>() else { return false };
        if src.samplers.len() != self.samplers.len() {
            return false;
        }
        for (d, s) in self.samplers.iter_mut().zip(&src.samplers) {
            if !d.copy_state_from(&**s) {
                match s.clone_box() {
                    Ok(c) => *d = c,
                    Err(_) => return false,
                }
            }
        }
        self.no_perf = src.no_perf;
        self.t_sample_us = src.t_sample_us;
        self.n_sample = src.n_sample;
        true
    }
    sampler_any!();
}

#[cfg(test)]
mod tests {
    use super::super::basic::*;
    use super::super::test_util::*;
    use super::*;

    fn default_chain(seed: u32) -> Chain {
        let mut c = Chain::new(false);
        c.samplers.push(top_k(40));
        c.samplers.push(top_p(0.95, 1));
        c.samplers.push(min_p(0.05, 1));
        c.samplers.push(temp(0.8));
        c.samplers.push(Box::new(Dist::new(seed)));
        c
    }

    #[test]
    fn a_chain_is_reproducible_clonable_and_resettable() {
        let base = logits(1000, 17);
        let run = |c: &mut Chain, n: usize| -> Vec<i32> {
            (0..n)
                .map(|_| {
                    let mut v = base.clone();
                    let mut cur = Candidates::new(&mut v);
                    c.apply(&mut cur);
                    let tok = cur.data[cur.selected as usize].id;
                    c.accept(tok);
                    tok
                })
                .collect()
        };
        let mut a = default_chain(1234);
        let first = run(&mut a, 10);
        let mut b = a.clone_box().unwrap();
        let b = b.as_any_mut().downcast_mut::<Chain>().unwrap();
        assert_eq!(run(&mut a, 10), run(b, 10));
        a.reset();
        assert_eq!(run(&mut a, 10), first);
        assert_eq!(a.seed(), 1234);
        assert_eq!(a.n_sample, 30);
        a.perf_reset();
        assert_eq!(a.n_sample, 0);
    }
}
