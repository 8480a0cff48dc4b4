//! Kernel tests: every SIMD kernel set against the scalar definitions, the
//! matmul's thread-count invariance and choice of kernel, the pool.

use super::dispatch::{available_sets, ActType, KernelSet};
use super::matmul::{matmul_siblings_with, matmul_with, Weights};
use super::pool::ThreadPool;
use super::scalar;
use crate::ggml_type::GgmlType;
use crate::quant;

/// Every weight type with a dot kernel.
pub(crate) const WEIGHT_TYPES: [GgmlType; 19] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::TQ1_0,
    GgmlType::TQ2_0,
    GgmlType::Q1_0,
    GgmlType::Q2_0,
];

/// xorshift64*: deterministic test data.
pub(crate) struct Rng(u64);
impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [-1, 1).
    pub(crate) fn uni(&mut self) -> f32 {
        (self.next() >> 40) as f32 / 8_388_608.0 - 1.0
    }
    /// Values with a per-32 random scale, some zero blocks and negative zeros.
    pub(crate) fn data(&mut self, n: usize) -> Vec<f32> {
        let mut v = Vec::with_capacity(n);
        let mut scale = 1.0f32;
        for i in 0..n {
            if i % 32 == 0 {
                scale = match self.next() % 8 {
                    0 => 0.0,
                    1 => 1e-3,
                    2 => 100.0,
                    _ => 1.0,
                };
            }
            let x = self.uni() * scale;
            v.push(if x == 0.0 && self.next().is_multiple_of(2) { -0.0 } else { x });
        }
        v
    }
}

fn quantize(ty: GgmlType, x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; ty.row_size(x.len() as u64).unwrap_or(0) as usize];
    quant::quantize_row(ty, x, &mut out).expect("valid row");
    out
}

fn dequantize(ty: GgmlType, bytes: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![0f32; n];
    quant::dequantize_row(ty, bytes, &mut out).expect("valid row");
    out
}

fn act_as_ggml(act: ActType) -> GgmlType {
    match act {
        ActType::F32 | ActType::F16Rounded | ActType::Bf16Rounded => GgmlType::F32,
        ActType::Q8_0 => GgmlType::Q8_0,
        ActType::Q8_1 => GgmlType::Q8_1,
        ActType::Q8K => GgmlType::Q8_K,
    }
}

/// The values of an activation row (an F16Rounded or Bf16Rounded row's f32
/// part: its copy holds the same values).
fn act_values(act: ActType, bytes: &[u8], n: usize) -> Vec<f32> {
    let bytes = if matches!(act, ActType::F16Rounded | ActType::Bf16Rounded) { &bytes[..4 * n] } else { bytes };
    dequantize(act_as_ggml(act), bytes, n)
}

fn quantize_acts(ks: &KernelSet, act: ActType, x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; act.row_bytes(x.len())];
    ks.quantize_act(act, x, &mut out).expect("valid row");
    out
}

/// Copies `v` to an odd address (offset 1 in a fresh buffer) so kernels see
/// unaligned data, as in a GGUF mapping.
fn misaligned(v: &[u8]) -> (Vec<u8>, usize) {
    let mut buf = vec![0u8; v.len() + 1];
    let off = if (buf.as_ptr() as usize).is_multiple_of(2) { 1 } else { 0 };
    buf[off..off + v.len()].copy_from_slice(v);
    (buf, off)
}

#[test]
fn kernel_sets_are_detected_and_chosen_once() {
    let sets = available_sets();
    assert_eq!(sets[0].name, "scalar");
    let chosen = super::kernels();
    assert!(sets.iter().any(|s| std::ptr::eq(*s, chosen)));
    eprintln!("kernel sets: {:?}, chosen {}", sets.iter().map(|s| s.name).collect::<Vec<_>>(), chosen.name);
    for ty in WEIGHT_TYPES {
        for s in &sets {
            assert!(s.supports(ty), "{} lacks {ty}", s.name);
        }
    }
    assert!(!sets[0].supports(GgmlType::I32));
    // scripts/test-aarch64.sh runs the tests on emulated CPUs with and
    // without dotprod and says which set must be chosen.
    if let Ok(want) = std::env::var("MINFER_EXPECT_KERNELS") {
        assert_eq!(chosen.name, want);
    }
}

#[test]
fn activation_quantizers_of_every_set_write_the_scalar_bytes() {
    let mut rng = Rng::new(7);
    let mut inputs = vec![quant::tests::golden_input()];
    for _ in 0..4 {
        inputs.push(rng.data(2048));
    }
    // all-equal magnitudes with both signs: the Q8_K signed maximum is the first
    let mut ties = vec![0.5f32; 256];
    ties[3] = -0.5;
    ties[0] = 0.25;
    inputs.push(ties);
    for set in available_sets() {
        for act in [ActType::Q8_0, ActType::Q8_1, ActType::Q8K] {
            for x in &inputs {
                let want = quantize_acts(&scalar::SET, act, x);
                let got = quantize_acts(set, act, x);
                let bs = act_as_ggml(act).type_size();
                if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
                    panic!(
                        "{} {act:?}: byte {i} (block {}) got {:02x?} want {:02x?}",
                        set.name,
                        i / bs,
                        &got[i / bs * bs..(i / bs + 1) * bs],
                        &want[i / bs * bs..(i / bs + 1) * bs]
                    );
                }
            }
        }
    }
}

/// The activation quantizers write what the reference's CPU backend writes
/// (`ggml_get_type_traits_cpu(t)->from_float`, goldens made by
/// scripts/make-quant-goldens.sh): on x86 that is not the `_ref` quantizer
/// for Q8_0/Q8_1 (scale 127/amax, rounding half to even), so int8 dots see
/// the reference's exact inputs. Checked for every kernel set of this CPU.
#[test]
fn activation_quantizers_equal_the_reference_cpu_backend() {
    let x = quant::tests::golden_input();
    let n = x.len() - x.len() % 256;
    let goldens: [(ActType, &[u8]); 3] = [
        (ActType::Q8_0, include_bytes!("../../tests/goldens/quant/act_q8_0.bin")),
        (ActType::Q8_1, include_bytes!("../../tests/goldens/quant/act_q8_1.bin")),
        (ActType::Q8K, include_bytes!("../../tests/goldens/quant/act_q8_K.bin")),
    ];
    for set in available_sets() {
        for (act, want) in goldens {
            assert_eq!(quantize_acts(set, act, &x[..n]), want, "{} {act:?}", set.name);
        }
    }
    // Q8_K's backend quantizer is the reference one.
    assert_eq!(quantize_acts(&scalar::SET, ActType::Q8K, &x[..n]), quantize(GgmlType::Q8_K, &x[..n]));
}

/// Σ|w_i·a_i| over the dequantized operands: the scale the dot tolerances
/// are relative to.
fn abs_dot(w: &[f32], a: &[f32]) -> f64 {
    w.iter().zip(a).map(|(x, y)| (*x as f64 * *y as f64).abs()).sum()
}

#[test]
fn scalar_dots_equal_the_dot_of_the_dequantized_rows() {
    let mut rng = Rng::new(11);
    for ty in WEIGHT_TYPES {
        let act = ActType::for_weight(ty).expect("paired");
        for &n in &[256usize, 1024] {
            let w = quantize(ty, &rng.data(n));
            let a = quantize_acts(&scalar::SET, act, &rng.data(n));
            let wf = dequantize(ty, &w, n);
            let af = act_values(act, &a, n);
            let exact: f64 = wf.iter().zip(&af).map(|(x, y)| *x as f64 * *y as f64).sum();
            let got = scalar::SET.dot(ty, n, &w, &a).expect("valid") as f64;
            // Q8_1's block sum is stored as f16: its minimum term is rounded.
            let tol = if act == ActType::Q8_1 { 2e-3 } else { 1e-5 };
            let scale = abs_dot(&wf, &af).max(f64::MIN_POSITIVE);
            assert!((got - exact).abs() <= tol * scale, "{ty} n={n}: {got} vs {exact} (scale {scale})");
        }
    }
}

#[test]
fn simd_dots_equal_scalar_dots() {
    // K-quants and IQ4_XS: bit-identical (exact integer sums, the reference's
    // vec_dot lane order in every set).
    // The others: within 1e-6 of Σ|w_i·a_i| (8-lane f32 accumulation).
    let mut rng = Rng::new(23);
    for set in available_sets() {
        for ty in WEIGHT_TYPES {
            let act = ActType::for_weight(ty).expect("paired");
            let exact = act == ActType::Q8K;
            let sizes: &[usize] = if ty.block_size() == 1 { &[37, 256, 1000] } else { &[256, 512, 2048] };
            for &n in sizes {
                let nt = 7; // a group of 4 tokens and 3 single ones
                let w = quantize(ty, &rng.data(n));
                let (wbuf, woff) = misaligned(&w);
                let row = act.row_bytes(n);
                let stride = row + 3; // rows not packed, odd addresses
                let mut a = vec![0u8; (nt - 1) * stride + row];
                let mut af = Vec::new();
                for t in 0..nt {
                    let q = quantize_acts(&scalar::SET, act, &rng.data(n));
                    af.push(act_values(act, &q, n));
                    a[t * stride..t * stride + row].copy_from_slice(&q);
                }
                let (abuf, aoff) = misaligned(&a);
                let wf = dequantize(ty, &w, n);
                let mut want = vec![0f32; nt];
                scalar::SET.dot_tile(ty, n, &w, &a, stride, &mut want).expect("valid");
                let mut got = vec![0f32; nt];
                set.dot_tile(ty, n, &wbuf[woff..woff + w.len()], &abuf[aoff..aoff + a.len()], stride, &mut got)
                    .expect("valid");
                for t in 0..nt {
                    // one token alone gives the same bits as inside a group
                    let single = set.dot(ty, n, &w, &a[t * stride..t * stride + row]).expect("valid");
                    assert_eq!(single.to_bits(), got[t].to_bits(), "{} {ty} n={n} t={t}: tile vs single", set.name);
                    if exact {
                        assert_eq!(
                            got[t].to_bits(),
                            want[t].to_bits(),
                            "{} {ty} n={n} t={t}: {} vs {}",
                            set.name,
                            got[t],
                            want[t]
                        );
                    } else {
                        let scale = abs_dot(&wf, &af[t]).max(f64::MIN_POSITIVE);
                        let err = (got[t] as f64 - want[t] as f64).abs();
                        assert!(
                            err <= 1e-6 * scale,
                            "{} {ty} n={n} t={t}: {} vs {} (rel {})",
                            set.name,
                            got[t],
                            want[t],
                            err / scale
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn dot_rejects_bad_shapes() {
    let ks = super::kernels();
    let w = vec![0u8; 18 * 8];
    let a = vec![0u8; 34 * 8];
    assert!(ks.dot(GgmlType::Q4_0, 256, &w, &a).is_ok());
    assert!(ks.dot(GgmlType::Q4_0, 256, &w[..17], &a).is_err());
    assert!(ks.dot(GgmlType::Q4_0, 256, &w, &a[..100]).is_err());
    assert!(ks.dot(GgmlType::Q4_0, 250, &w, &a).is_err());
    assert!(ks.dot(GgmlType::I32, 256, &w, &a).is_err());
    let mut out = vec![0f32; 2];
    assert!(ks.dot_tile(GgmlType::Q4_0, 256, &w, &a, 0, &mut out).is_err());
    assert!(ks.dot_tile(GgmlType::Q4_0, 256, &w, &a, 272, &mut []).is_err());
}

fn weights_of(ty: GgmlType, rows: usize, cols: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for _ in 0..rows {
        out.extend(quantize(ty, &rng.data(cols)));
    }
    out
}

#[test]
fn matmul_is_identical_for_1_2_3_threads_and_computes_the_kernel_of_its_shape() {
    let pools: Vec<ThreadPool> = (1..=3).map(|n| ThreadPool::new(n).expect("pool")).collect();
    let cols = 512;
    let mut rng = Rng::new(5);
    // 67 rows: no repacked path; 72: repacked where the reference repacks;
    // 200 rows × 1 token: a decode, split into several tasks; 301 rows × 1
    // token: types of a byte or more per weight read as 2–4 streams
    // (segments of 76 rows, the last shorter); 602 rows: as 4 streams too
    // (the Q8_0 and F16 decode kernels take 1–4 segments' rows per call: 4,
    // then 3 for the last local rows; 2 and 1 at 301 rows). Decodes check
    // every row.
    for (rows, nt) in [(67, 9), (72, 9), (72, 3), (200, 1), (301, 1), (602, 1)] {
        let x = rng.data(nt * cols);
        for set in available_sets() {
            for ty in WEIGHT_TYPES {
                let wb = weights_of(ty, rows, cols, 99);
                let (buf, off) = misaligned(&wb);
                let w = Weights::new(&buf[off..off + wb.len()], ty, rows, cols).expect("weights");
                let mut ys = Vec::new();
                for pool in &pools {
                    let mut y = vec![f32::NAN; nt * rows];
                    matmul_with(set, pool, &w, &x, nt, &mut y).expect("matmul");
                    ys.push(y);
                }
                for (i, y) in ys.iter().enumerate().skip(1) {
                    let same = y.iter().zip(&ys[0]).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{} {ty}: {} threads differ from 1", set.name, i + 1);
                }
                // the values are the kernel's for this shape (nt rows of a
                // `rows`-row matrix), a token alone those of the 1-row kernel
                let act = ActType::for_weight(ty).expect("paired");
                let a: Vec<u8> = (0..nt).flat_map(|t| quantize_acts(set, act, &x[t * cols..(t + 1) * cols])).collect();
                let stride = act.row_bytes(cols);
                let checked: Vec<usize> =
                    if nt == 1 { (0..rows).collect() } else { vec![0, 1, 32, 33, rows - 2, rows - 1] };
                for o in checked {
                    let wr = &w.data[o * w.row_bytes()..(o + 1) * w.row_bytes()];
                    let mut want = vec![0f32; nt];
                    set.matmul_tile(ty, rows, cols, wr, &a, stride, &mut want).expect("tile");
                    for t in 0..nt {
                        assert_eq!(want[t].to_bits(), ys[0][t * rows + o].to_bits(), "{} {ty} y[{t}][{o}]", set.name);
                    }
                    let t = nt - 1;
                    let mut y1 = vec![f32::NAN; rows];
                    matmul_with(set, &pools[1], &w, &x[t * cols..(t + 1) * cols], 1, &mut y1).expect("matmul");
                    let mut one = [0f32];
                    set.matmul_tile(ty, rows, cols, wr, &a[t * stride..], stride, &mut one).expect("tile");
                    assert_eq!(one[0].to_bits(), y1[o].to_bits(), "{} {ty} token {t} alone, row {o}", set.name);
                }
            }
        }
    }
}

#[test]
fn sibling_matmul_equals_separate_matmuls() {
    let pool = ThreadPool::new(2).expect("pool");
    let (cols, nt) = (256, 5);
    let x = Rng::new(8).data(nt * cols);
    let specs = [(GgmlType::Q4_K, 40), (GgmlType::Q6_K, 24), (GgmlType::Q8_0, 24), (GgmlType::F16, 8)];
    let bufs: Vec<Vec<u8>> = specs.iter().map(|&(ty, r)| weights_of(ty, r, cols, r as u64)).collect();
    let ws: Vec<Weights> =
        specs.iter().zip(&bufs).map(|(&(ty, r), b)| Weights::new(b, ty, r, cols).expect("weights")).collect();
    let ks = super::kernels();
    let mut outs: Vec<Vec<f32>> = specs.iter().map(|&(_, r)| vec![0f32; nt * r]).collect();
    {
        let mut refs: Vec<&mut [f32]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
        matmul_siblings_with(ks, &pool, &ws, &x, nt, &mut refs).expect("siblings");
    }
    for (w, y) in ws.iter().zip(&outs) {
        let mut y1 = vec![0f32; y.len()];
        matmul_with(ks, &pool, w, &x, nt, &mut y1).expect("matmul");
        assert!(y.iter().zip(&y1).all(|(a, b)| a.to_bits() == b.to_bits()), "{}", w.ty);
    }
}

#[test]
fn reused_activation_buffers_give_fresh_results_at_every_width() {
    // The forward pass keeps one activation buffer per format for the
    // context's life and feeds it inputs of different widths in turn (576,
    // then 1536 columns): wide, narrow, wide again, and more tokens than
    // before, must each give the bits of a fresh buffer.
    let pool = ThreadPool::new(2).expect("pool");
    let ks = super::kernels();
    let mut acts = Vec::new();
    for (i, &(cols, nt)) in [(512, 9), (64, 3), (512, 9), (128, 40), (64, 2)].iter().enumerate() {
        let x = Rng::new(20 + i as u64).data(nt * cols);
        for ty in [GgmlType::F16, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q8_0] {
            if cols % ty.block_size() != 0 {
                continue;
            }
            let rows = 24;
            let wb = weights_of(ty, rows, cols, cols as u64);
            let w = Weights::new(&wb, ty, rows, cols).expect("weights");
            let mut reused = vec![f32::NAN; nt * rows];
            super::matmul::matmul_siblings_reusing(ks, &pool, &mut acts, &[w], &x, nt, &mut [&mut reused[..]])
                .expect("reusing");
            let mut fresh = vec![f32::NAN; nt * rows];
            matmul_with(ks, &pool, &w, &x, nt, &mut fresh).expect("fresh");
            assert!(
                reused.iter().zip(&fresh).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{ty} {cols} cols, {nt} tokens"
            );
        }
    }
}

#[test]
fn matmul_rejects_bad_shapes() {
    let pool = ThreadPool::new(2).expect("pool");
    let wb = vec![0u8; 18 * 8 * 4];
    assert!(Weights::new(&wb, GgmlType::Q4_0, 4, 256).is_ok());
    assert!(Weights::new(&wb, GgmlType::Q4_0, 5, 256).is_err());
    assert!(Weights::new(&wb, GgmlType::Q4_0, 4, 250).is_err());
    assert!(Weights::new(&wb, GgmlType::I32, 1, 256).is_err());
    assert!(Weights::new(&wb, GgmlType::Q4_K, 1, 288).is_err());
    let w = Weights::new(&wb, GgmlType::Q4_0, 4, 256).expect("weights");
    let x = vec![0f32; 2 * 256];
    let mut y = vec![0f32; 8];
    assert!(super::matmul(&pool, &w, &x, 2, &mut y).is_ok());
    assert!(super::matmul(&pool, &w, &x, 3, &mut y).is_err());
    assert!(super::matmul(&pool, &w, &x[..500], 2, &mut y).is_err());
    assert!(super::matmul(&pool, &w, &x, 2, &mut y[..7]).is_err());
    assert_eq!(y, vec![0f32; 8]);
}

#[test]
fn pool_runs_every_task_once_with_concurrent_submitters() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let pool = std::sync::Arc::new(ThreadPool::new(3).expect("pool"));
    let counts: Vec<AtomicUsize> = (0..1000).map(|_| AtomicUsize::new(0)).collect();
    let counts = std::sync::Arc::new(counts);
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let pool = pool.clone();
            let counts = counts.clone();
            std::thread::spawn(move || {
                for round in 0..50 {
                    let n = 1 + round * 17 % 1000;
                    pool.run(n, &|i| {
                        counts[i].fetch_add(1, Ordering::Relaxed);
                    })
                    .expect("run");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("submitter");
    }
    let mut want = vec![0usize; 1000];
    for round in 0..50 {
        for w in want.iter_mut().take(1 + round * 17 % 1000) {
            *w += 2;
        }
    }
    for (i, c) in counts.iter().enumerate() {
        assert_eq!(c.load(Ordering::Relaxed), want[i], "task {i}");
    }
    // parking and waking: a pause longer than the spin, then more work
    std::thread::sleep(std::time::Duration::from_millis(20));
    let hits = AtomicUsize::new(0);
    pool.run(100, &|_| {
        hits.fetch_add(1, Ordering::Relaxed);
    })
    .expect("run");
    assert_eq!(hits.load(Ordering::Relaxed), 100);
}

#[test]
fn pool_threads_run_consecutive_tasks() {
    // Each thread runs its own range from the front (ascending, no gaps),
    // then takes the other's tasks from the back (descending, no gaps): a
    // matmul thread reads one run of weight rows. With one shared counter
    // the two threads' tasks interleave and this fails.
    use std::sync::Mutex;
    let pool = ThreadPool::new(2).expect("pool");
    for n in [2usize, 7, 64] {
        let order: Mutex<Vec<(std::thread::ThreadId, usize)>> = Mutex::new(Vec::new());
        pool.run(n, &|i| {
            order.lock().expect("lock").push((std::thread::current().id(), i));
            std::thread::sleep(std::time::Duration::from_micros(200));
        })
        .expect("run");
        let order = order.into_inner().expect("lock");
        let mut seen: Vec<usize> = order.iter().map(|&(_, i)| i).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..n).collect::<Vec<_>>(), "every task once");
        let mut threads: Vec<std::thread::ThreadId> = order.iter().map(|&(t, _)| t).collect();
        threads.dedup();
        threads.sort_unstable_by_key(|t| format!("{t:?}"));
        threads.dedup();
        for t in threads {
            let mine: Vec<usize> = order.iter().filter(|&&(u, _)| u == t).map(|&(_, i)| i).collect();
            // own tasks: mine[..a] ascending by one; taken ones: mine[a..]
            // descending by one
            let a = 1 + mine.windows(2).take_while(|w| w[1] == w[0] + 1).count();
            assert!(mine[a.min(mine.len())..].windows(2).all(|w| w[1] + 1 == w[0]), "{n} tasks: a thread ran {mine:?}");
        }
    }
}

#[test]
fn pool_reports_a_panicking_task_and_stays_usable() {
    let pool = ThreadPool::new(2).expect("pool");
    let r = pool.run(10, &|i| {
        if i == 3 {
            panic!("task 3 fails on purpose");
        }
    });
    assert!(r.is_err());
    let ok = std::sync::atomic::AtomicUsize::new(0);
    pool.run(10, &|_| {
        ok.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    })
    .expect("run");
    assert_eq!(ok.into_inner(), 10);
    assert_eq!(ThreadPool::new(0).expect("pool").n_threads(), 1);
}

#[test]
fn pool_run_rows_hands_every_row_to_one_call() {
    for threads in 1..=3 {
        let pool = ThreadPool::new(threads).expect("pool");
        for (n, width, per_task) in [(0, 4, 1), (1, 4, 1), (7, 3, 1), (7, 3, 2), (64, 5, 3), (9, 2, 100)] {
            // each row gets its index and its call count (1 = exactly once)
            let mut buf = vec![0f32; n * width];
            pool.run_rows(&mut buf, width, per_task, &|i, row| {
                assert_eq!(row.len(), width);
                row[0] = i as f32;
                row[1] += 1.0;
            })
            .expect("run_rows");
            for (i, row) in buf.chunks_exact(width).enumerate() {
                assert_eq!((row[0], row[1]), (i as f32, 1.0), "{threads} threads, {n}x{width} by {per_task}: row {i}");
            }
        }
        assert!(pool.light_rows_per_task(512) >= 1 && pool.light_rows_per_task(0) == 1);
        // a width of zero has no rows
        pool.run_rows(&mut [], 0, 1, &|_, _| panic!("no row")).expect("empty");
    }
}

/// Byte offsets of the f16 scale fields of each block type.
pub(crate) fn scale_fields(ty: GgmlType) -> &'static [usize] {
    use GgmlType::*;
    match ty {
        Q4_0 | Q5_0 | Q8_0 | IQ4_NL | IQ4_XS | Q1_0 | Q2_0 | IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S => &[0],
        Q4_1 | Q5_1 | Q4_K | Q5_K => &[0, 2],
        Q2_K => &[80, 82],
        Q3_K => &[108],
        Q6_K => &[208],
        TQ1_0 => &[52],
        TQ2_0 => &[64],
        _ => &[],
    }
}

#[test]
fn simd_dots_equal_scalar_dots_on_arbitrary_block_bytes() {
    // Random bytes reach bit patterns a quantizer rarely writes (Q6_K scale
    // -128, every Q3_K/IQ4_XS scale, all high bits set...). Scale fields get
    // finite f16 values; activations come from the quantizers (their quants
    // stay within ±127, which the kernels rely on).
    let mut rng = Rng::new(31);
    for set in available_sets().into_iter().skip(1) {
        for ty in WEIGHT_TYPES {
            let act = ActType::for_weight(ty).expect("paired");
            let n = 1024;
            let mut w: Vec<u8> = (0..ty.row_size(n as u64).unwrap_or(0)).map(|_| rng.next() as u8).collect();
            if ty.block_size() == 1 {
                // float weights: finite values only
                let x = rng.data(n);
                w.clear();
                w.resize(ty.row_size(n as u64).unwrap_or(0) as usize, 0);
                quant::quantize_row(ty, &x, &mut w).expect("valid");
            }
            for blk in w.chunks_exact_mut(ty.type_size()) {
                for &off in scale_fields(ty) {
                    let v = rng.uni() * 0.01;
                    blk[off..off + 2].copy_from_slice(&quant::f32_to_f16(v));
                }
            }
            let a = quantize_acts(&scalar::SET, act, &rng.data(n));
            let want = scalar::SET.dot(ty, n, &w, &a).expect("valid");
            let got = set.dot(ty, n, &w, &a).expect("valid");
            if act == ActType::Q8K {
                assert_eq!(got.to_bits(), want.to_bits(), "{} {ty}: {got} vs {want}", set.name);
            } else {
                let wf = dequantize(ty, &w, n);
                let af = act_values(act, &a, n);
                let scale = abs_dot(&wf, &af).max(f64::MIN_POSITIVE);
                let err = (got as f64 - want as f64).abs();
                assert!(err <= 1e-6 * scale, "{} {ty}: {got} vs {want} (rel {})", set.name, err / scale);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn vnni_set_equals_avx2_set_bit_for_bit() {
    // The VNNI kernels compute the same exact integer sums and the same f32
    // operations per token as the AVX2 ones (the reference's vec_dot and
    // tinyBLAS order), in groups of 8 tokens: every output must have the
    // same bits, for token counts around the group sizes.
    let sets = available_sets();
    let (Some(avx2), Some(vnni)) =
        (sets.iter().find(|s| s.name == "avx2"), sets.iter().find(|s| s.name == "avx2-vnni"))
    else {
        skip_test!("no AVX-512 VNNI on this CPU");
        return;
    };
    let pool = ThreadPool::new(2).expect("pool");
    let mut rng = Rng::new(77);
    let cols = 512;
    // F16: the VNNI set runs the AVX-512 row kernels of `tinyblas_f16` (both
    // paths: tinyBLAS from 2 tokens, as rows % 4 == 0, and vec_dot for 1);
    // with 100 rows the token-major tinyBLAS kernels (both sets have one)
    // run in tasks of 48, 48 and 4 rows (the last: a 3-row tile and a 1-row
    // one) straight into y
    let cases = [
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::IQ4_NL,
        GgmlType::F16,
    ]
    .map(|ty| (ty, 12))
    .into_iter()
    .chain([(GgmlType::F16, 100)]);
    for (ty, rows) in cases {
        let mut w = vec![0u8; rows * ty.row_size(cols as u64).expect("size") as usize];
        quant::quantize_row(ty, &rng.data(rows * cols), &mut w).expect("quantize");
        let wv = Weights::new(&w, ty, rows, cols).expect("weights");
        for nt in [1, 3, 7, 8, 9, 16, 21, 100] {
            let x = rng.data(nt * cols);
            let (mut ya, mut yv) = (vec![0f32; nt * rows], vec![0f32; nt * rows]);
            matmul_with(avx2, &pool, &wv, &x, nt, &mut ya).expect("matmul");
            matmul_with(vnni, &pool, &wv, &x, nt, &mut yv).expect("matmul");
            for (i, (a, b)) in ya.iter().zip(&yv).enumerate() {
                assert_eq!(a.to_bits(), b.to_bits(), "{ty} nt={nt} y[{}][{}]: {a} vs {b}", i / rows, i % rows);
            }
        }
    }
}

#[test]
fn row_block_kernels_equal_the_tile_kernels_bit_for_bit() {
    // Every set's `RowsFn` (n_rows weight rows × nt tokens at once) must give
    // each output the bits of the set's tile kernel for that row, and of the
    // AVX2 set's (which follows the reference's vec_dot), for row counts
    // around the row blocks, token counts around the token groups and odd
    // strides and addresses; within 1e-6 of Σ|w·a| of the scalar set.
    let sets = available_sets();
    let avx2 = sets.iter().find(|s| s.name == "avx2");
    let mut rng = Rng::new(91);
    let nts: Vec<usize> = (1..=40).chain([256 + 3]).collect();
    let (max_rows, max_nt) = (9, 259);
    // 1, 9 and 19 blocks of 32; 1 and 3 super-blocks of the ternary types
    // (their rows kernel is the decode's)
    use GgmlType::*;
    let types = [Q4_1, Q5_1, Q4_0, Q5_0, Q8_0, IQ4_NL, TQ1_0, TQ2_0, Q1_0, Q2_0, NVFP4];
    let cases = sets.iter().flat_map(|set| {
        types.into_iter().flat_map(move |ty| {
            let ns: &'static [usize] = match ty.block_size() {
                256 => &[256, 768],
                128 => &[128, 384, 1152],
                64 => &[64, 320, 576],
                _ => &[32, 288, 608],
            };
            ns.iter().map(move |&n| (set, ty, n))
        })
    });
    for (set, ty, n) in cases {
        {
            let Some(rows_f) = (set.rows)(ty) else { continue };
            let act = ActType::for_weight(ty).expect("paired");
            let row = ty.row_size(n as u64).expect("size") as usize;
            let ws = row + 3; // weight rows not packed
            let mut w = vec![0u8; (max_rows - 1) * ws + row];
            let mut wf = Vec::new();
            for r in 0..max_rows {
                let q = quantize(ty, &rng.data(n));
                wf.push(dequantize(ty, &q, n));
                w[r * ws..r * ws + row].copy_from_slice(&q);
            }
            let arow = act.row_bytes(n);
            let s = arow + 5;
            let mut a = vec![0u8; (max_nt - 1) * s + arow];
            let mut af = Vec::new();
            for t in 0..max_nt {
                let q = quantize_acts(&scalar::SET, act, &rng.data(n));
                af.push(act_values(act, &q, n));
                a[t * s..t * s + arow].copy_from_slice(&q);
            }
            let (wbuf, woff) = misaligned(&w);
            let (abuf, aoff) = misaligned(&a);
            for n_rows in 1..=max_rows {
                for &nt in &nts {
                    let os = nt + 3;
                    let mut out = vec![f32::NAN; (n_rows - 1) * os + nt];
                    let wr = &wbuf[woff..woff + (n_rows - 1) * ws + row];
                    let ar = &abuf[aoff..aoff + (nt - 1) * s + arow];
                    // SAFETY: n is a multiple of 32, the buffers hold n_rows
                    // rows `ws` apart and nt activation rows `s` apart, `out`
                    // n_rows rows `os` apart, and the set runs on this CPU.
                    unsafe { rows_f(n, wr, ws, n_rows, ar, s, nt, &mut out, os) };
                    for r in 0..n_rows {
                        let wrow = &w[r * ws..r * ws + row];
                        let mut want = vec![0f32; nt];
                        set.dot_tile(ty, n, wrow, ar, s, &mut want).expect("valid");
                        let mut want_avx2 = want.clone();
                        if let Some(avx2) = avx2 {
                            avx2.dot_tile(ty, n, wrow, ar, s, &mut want_avx2).expect("valid");
                        }
                        let mut want_scalar = vec![0f32; nt];
                        scalar::SET.dot_tile(ty, n, wrow, ar, s, &mut want_scalar).expect("valid");
                        for t in 0..nt {
                            let got = out[r * os + t];
                            let ctx = format!("{} {ty} rows={n_rows} nt={nt} r={r} t={t}", set.name);
                            assert_eq!(got.to_bits(), want[t].to_bits(), "{ctx}: {got} vs tile {}", want[t]);
                            assert_eq!(got.to_bits(), want_avx2[t].to_bits(), "{ctx}: {got} vs avx2 {}", want_avx2[t]);
                            let scale = abs_dot(&wf[r], &af[t]).max(f64::MIN_POSITIVE);
                            let err = (got as f64 - want_scalar[t] as f64).abs();
                            assert!(err <= 1e-6 * scale, "{ctx}: {got} vs scalar {}", want_scalar[t]);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn hsum_ps_x8_equals_eight_hsum_ps_bit_for_bit() {
    // The row-block kernels sum 8 accumulators at once; each lane must be
    // `hsum_ps` of its vector: the same additions in the same pairing, so
    // also for values where the order shows (cancellation, ±0, ±inf, NaN).
    use super::x86_avx2::{cpu_ok, hsum_ps, hsum_ps_x8};
    use std::arch::x86_64::*;
    if !cpu_ok() {
        skip_test!("no AVX2 on this CPU");
        return;
    }
    let mut rng = Rng::new(5);
    let special = [0.0f32, -0.0, 1e30, -1e30, 1.0, -1.0, 3e-39, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
    for round in 0..2000 {
        let vals: Vec<f32> = (0..64)
            .map(|_| match rng.next() % 8 {
                0 if round % 2 == 0 => special[(rng.next() % special.len() as u64) as usize],
                1 => rng.uni() * 1e8,
                _ => rng.uni(),
            })
            .collect();
        // SAFETY: AVX2/FMA/F16C checked above; `vals` holds 64 floats.
        let (got, want) = unsafe {
            let v: [__m256; 8] = std::array::from_fn(|j| _mm256_loadu_ps(vals.as_ptr().add(8 * j)));
            let mut got = [0f32; 8];
            _mm256_storeu_ps(got.as_mut_ptr(), hsum_ps_x8(&v));
            (got, v.map(|x| hsum_ps(x)))
        };
        for j in 0..8 {
            assert_eq!(got[j].to_bits(), want[j].to_bits(), "round {round} lane {j}: {} vs {}", got[j], want[j]);
        }
    }
}
