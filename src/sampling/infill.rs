//! The fill-in-the-middle sampler (`llama_sampler_init_infill`): merges
//! candidates that are prefixes of each other, and prefers end-of-generation
//! when text tokens are unlikely. Works over a [`VocabView`].

use super::*;
use crate::sampler_any;
use std::sync::Arc;

pub struct Infill {
    pub vocab: Arc<dyn VocabView + Send + Sync>,
}

impl Sampler for Infill {
    fn name(&self) -> &'static CStr {
        c"infill"
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        if cur.size() == 0 {
            return; // the reference asserts
        }
        softmax(cur, true);
        let vocab = &*self.vocab;

        let mut p_txt_sum = 0.0f32;
        let mut p_eog_sum = 0.0f32;
        for t in cur.data.iter() {
            if vocab.is_eog(t.id) {
                p_eog_sum += t.p;
            } else {
                p_txt_sum += t.p;
            }
        }

        if 3.0 * p_eog_sum * cur.size() as f32 > p_txt_sum {
            // keep just the EOG tokens
            let size_org = cur.size();
            let mut n = 0usize;
            let mut p_sum = 0.0f32;
            for i in 0..size_org {
                if vocab.is_eog(cur.data[i].id) {
                    p_sum += cur.data[i].p;
                    cur.data[n] = cur.data[i];
                    n += 1;
                }
            }
            cur.truncate(n);
            for t in cur.data.iter_mut() {
                t.p /= p_sum;
            }
            return;
        }

        // combine tokens with a common prefix
        let size = cur.size();
        let pieces: Vec<Vec<u8>> = cur.data.iter().map(|t| vocab.piece(t.id, false)).collect();
        for i0 in 0..size {
            for i1 in 0..size {
                if cur.data[i0].logit == f32::NEG_INFINITY {
                    break;
                }
                if i0 == i1 || cur.data[i1].logit == f32::NEG_INFINITY {
                    continue;
                }
                let (a, b) = (&pieces[i0], &pieces[i1]);
                if !a.is_empty() && a.len() <= b.len() && b[..a.len()] == a[..] {
                    let (mut dst, mut src) = (i0, i1);
                    if cur.data[i1].p > cur.data[i0].p {
                        std::mem::swap(&mut dst, &mut src);
                    }
                    cur.data[dst].p += cur.data[src].p;
                    cur.data[src].logit = f32::NEG_INFINITY;
                    cur.data[src].p = 0.0;
                }
            }
        }

        let mut n_non_eog = 0usize;
        let size_org = cur.size();
        let mut p_sum = 0.0f32;
        let thold = 0.2f32;
        let mut n = 0usize;
        for i in 0..size_org {
            let is_eog = vocab.is_eog(cur.data[i].id);
            if cur.data[i].p < thold && !is_eog {
                continue;
            }
            if !is_eog {
                n_non_eog += 1;
            }
            p_sum += cur.data[i].p;
            cur.data[n] = cur.data[i];
            n += 1;
        }

        if n_non_eog == 0 {
            // a single EOT (or EOS) token, written over the first slot
            cur.truncate(1);
            let mut id = vocab.token_eot();
            if id == TOKEN_NULL {
                id = vocab.token_eos();
            }
            cur.data[0].id = id;
            cur.data[0].logit = 1.0;
            return;
        }
        cur.truncate(n);

        for t in cur.data.iter_mut() {
            t.p /= p_sum;
        }

        let size_org = cur.size();
        let mut p_sum = 0.0f32;
        let thold = (1.0f64 / (n_non_eog as f64 + 1.0)) as f32;
        let mut n = 0usize;
        for i in 0..size_org {
            let is_eog = vocab.is_eog(cur.data[i].id);
            if cur.data[i].p < thold && !is_eog {
                continue;
            }
            p_sum += cur.data[i].p;
            cur.data[n] = cur.data[i];
            n += 1;
        }
        cur.truncate(n);
        for t in cur.data.iter_mut() {
            t.p /= p_sum;
        }
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        Ok(Box::new(Infill { vocab: self.vocab.clone() }))
    }
    sampler_any!();
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    struct V;
    impl VocabView for V {
        fn n_tokens(&self) -> usize {
            5
        }
        fn piece(&self, token: i32, _special: bool) -> Vec<u8> {
            ["he", "hello", "world", "<eot>", "x"][token as usize].as_bytes().to_vec()
        }
        fn is_eog(&self, t: i32) -> bool {
            t == 3
        }
        fn token_eot(&self) -> i32 {
            3
        }
        fn token_eos(&self) -> i32 {
            -1
        }
        fn tokenize(&self, _text: &[u8]) -> Vec<i32> {
            vec![]
        }
    }

    #[test]
    fn infill_merges_prefixes_and_prefers_eog_when_text_is_unlikely() {
        let mut s = Infill { vocab: Arc::new(V) };
        let mut v = vec![td(0, 2.0), td(1, 1.0), td(2, 1.5), td(3, -5.0), td(4, -1.0)];
        let mut c = Candidates::new(&mut v);
        s.apply(&mut c);
        let ids: Vec<i32> = c.data.iter().map(|t| t.id).collect();
        assert!(ids.contains(&0) && !ids.contains(&1)); // "hello" merged into "he"
        let sum: f32 = c.data.iter().map(|t| t.p).sum();
        assert!((sum - 1.0).abs() < 1e-5);

        let mut v = vec![td(0, -5.0), td(3, 3.0)];
        let mut c = Candidates::new(&mut v);
        s.apply(&mut c);
        assert_eq!(c.data.iter().map(|t| t.id).collect::<Vec<_>>(), vec![3]);
    }
}
