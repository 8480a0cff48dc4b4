//! Kernel benchmark: GEMV (nt = 1) throughput in GB/s of weight bytes read
//! and GEMM (nt = 512) throughput in GMAC/s, per weight type and shape, for
//! 1 and 2 threads, with the kernel set chosen for this CPU
//! (`MINFER_NO_AVX2=1` / `MINFER_NO_NEON=1` for scalar). A benchmark, not a
//! test: numbers depend on the machine and its load.
//!
//! ```text
//! cargo run --release --example bench_kernels -- [--types q4_0,q4_K,...] [--shapes 576x576,...]
//!     [--threads 1,2] [--nt 512] [--min-time 0.3] [--tiles 1]
//! ```
//!
//! `--tiles 1` gives the matrices that have a load-time tiled layout
//! (`repack_tiles`: Q4_0, IQ4_NL, MXFP4, Q4_K) their tiles, 64-byte aligned as in
//! a loaded model, so the set's tiled kernel runs as in a model's matmuls.
//!
//! Shapes are `rows x cols` (output x input): the projections of SmolLM2-135M
//! and Gemma 3 270M and their output heads by default. Small matrices fit in
//! cache, so their GEMV figure is cache bandwidth, not DRAM bandwidth.
//! Weights are a few quantized random rows repeated (speed does not depend on
//! the values); activation quantization is included in every timing.

use std::time::Instant;

use llama::ggml_type::GgmlType;
use llama::kernels::ggml_paths::repack_tiles;
use llama::kernels::{kernels, matmul, ThreadPool, Weights};
use llama::quant::quantize_row;

// (the generator of the synthetic writers; its uniform floats unused here)
#[allow(dead_code)]
#[path = "common/splitmix.rs"]
mod splitmix;

const DEFAULT_SHAPES: [(usize, usize); 8] =
    [(576, 576), (1536, 576), (576, 1536), (1024, 640), (2048, 640), (640, 2048), (49152, 576), (262144, 640)];

fn parse_type(s: &str) -> Option<GgmlType> {
    GgmlType::ALL.iter().copied().find(|t| t.name().eq_ignore_ascii_case(s))
}

struct Args {
    types: Vec<GgmlType>,
    shapes: Vec<(usize, usize)>,
    threads: Vec<usize>,
    nt: usize,
    min_time: f64,
    tiles: bool,
}

fn parse_args() -> Result<Args, String> {
    use GgmlType::*;
    let mut a = Args {
        types: vec![
            F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4, NVFP4,
            TQ1_0, TQ2_0, Q1_0, Q2_0, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M,
        ],
        shapes: DEFAULT_SHAPES.to_vec(),
        threads: vec![1, 2],
        nt: 512,
        min_time: 0.3,
        tiles: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--types" => {
                a.types =
                    v.split(',').map(|s| parse_type(s).ok_or(format!("unknown type {s}"))).collect::<Result<_, _>>()?
            }
            "--shapes" => {
                a.shapes = v
                    .split(',')
                    .map(|s| {
                        let (r, c) = s.split_once('x').ok_or(format!("bad shape {s}"))?;
                        Ok((
                            r.parse().map_err(|_| format!("bad shape {s}"))?,
                            c.parse().map_err(|_| format!("bad shape {s}"))?,
                        ))
                    })
                    .collect::<Result<_, String>>()?
            }
            "--threads" => {
                a.threads =
                    v.split(',').map(|s| s.parse().map_err(|_| format!("bad count {s}"))).collect::<Result<_, _>>()?
            }
            "--nt" => a.nt = v.parse().map_err(|_| "bad --nt".to_string())?,
            "--min-time" => a.min_time = v.parse().map_err(|_| "bad --min-time".to_string())?,
            "--tiles" => a.tiles = v == "1",
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / 8_388_608.0 - 1.0
        })
        .collect()
}

/// `rows` rows of `ty`: 16 quantized random rows, repeated (random bytes
/// for the types minfer reads but does not quantize: the IQ1–IQ3 types,
/// whose every byte pattern is a valid block).
fn weights(ty: GgmlType, rows: usize, cols: usize) -> Vec<u8> {
    let row_bytes = ty.row_size(cols as u64).unwrap_or(0) as usize;
    let mut base = vec![0u8; 16 * row_bytes];
    let x = values(16 * cols, 1);
    if llama::quant::can_quantize(ty) {
        for r in 0..16 {
            let _ = quantize_row(ty, &x[r * cols..(r + 1) * cols], &mut base[r * row_bytes..(r + 1) * row_bytes]);
        }
    } else {
        let mut rng = splitmix::Rng(1);
        base.iter_mut().for_each(|b| *b = rng.next() as u8);
    }
    let mut out = Vec::with_capacity(rows * row_bytes);
    while out.len() < rows * row_bytes {
        let take = (rows * row_bytes - out.len()).min(base.len());
        out.extend_from_slice(&base[..take]);
    }
    out
}

/// CPU seconds used by this process so far.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// (wall seconds, process CPU seconds) per call of `f`, repeated until
/// `min_time` wall seconds have passed.
fn time(min_time: f64, mut f: impl FnMut()) -> (f64, f64) {
    f(); // warm-up
    let start = Instant::now();
    let cpu0 = cpu_seconds();
    let mut n = 0u32;
    loop {
        f();
        n += 1;
        let t = start.elapsed().as_secs_f64();
        if t >= min_time {
            return (t / n as f64, (cpu_seconds() - cpu0) / n as f64);
        }
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench_kernels: {e}");
            std::process::exit(2);
        }
    };
    let pools: Vec<ThreadPool> = match args.threads.iter().map(|&n| ThreadPool::new(n)).collect() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bench_kernels: {e}");
            std::process::exit(1);
        }
    };
    println!("kernel set: {}; GEMV = nt 1, GEMM = nt {}", kernels().name, args.nt);
    println!("(cpu: the single-thread figure per CPU-second of the process, which a");
    println!(" loaded machine does not depress; wall-clock figures otherwise)");
    print!("| type | rows x cols |");
    for t in &args.threads {
        print!(" GEMV GB/s {t}t |");
    }
    print!(" GEMV GB/s 1t cpu |");
    for t in &args.threads {
        print!(" GEMM GMAC/s {t}t |");
    }
    print!(" GEMM GMAC/s 1t cpu |");
    println!();
    println!("|---|---|{}", "---:|".repeat(2 * args.threads.len() + 2));
    let max_cols = args.shapes.iter().map(|s| s.1).max().unwrap_or(0);
    let x_all = values(args.nt * max_cols, 2);
    for &ty in &args.types {
        for &(rows, cols) in &args.shapes {
            if ty.row_size(cols as u64).is_none() || Weights::new(&[], ty, 0, cols).is_err() {
                // e.g. k-quants need rows of a multiple of 256 elements
                println!("| {ty} | {rows} x {cols} |{}", " n/a |".repeat(2 * args.threads.len() + 2));
                continue;
            }
            let wb = weights(ty, rows, cols);
            let mut w = match Weights::new(&wb, ty, rows, cols) {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("{ty} {rows}x{cols}: {e}");
                    continue;
                }
            };
            let mut tile_buf = Vec::new();
            if let Some(tb) = repack_tiles::tiles_bytes(ty, rows, cols).filter(|_| args.tiles) {
                tile_buf.resize(tb + 64, 0u8);
                let at = tile_buf.as_ptr().align_offset(64);
                repack_tiles::build(ty, rows, cols, &wb, &mut tile_buf[at..at + tb]);
                w = w.with_tiles(&tile_buf[at..at + tb]).expect("tiles");
            }
            let mut y = vec![0f32; args.nt * rows];
            let mut gemv = Vec::new();
            let mut gemm = Vec::new();
            let (mut gemv_cpu, mut gemm_cpu) = (f64::NAN, f64::NAN);
            for pool in &pools {
                let x1 = &x_all[..cols];
                let (s, c) = time(args.min_time, || {
                    let _ = matmul(pool, &w, x1, 1, &mut y[..rows]);
                });
                gemv.push(wb.len() as f64 / s / 1e9);
                let xn = &x_all[..args.nt * cols];
                let (s2, c2) = time(args.min_time, || {
                    let _ = matmul(pool, &w, xn, args.nt, &mut y);
                });
                gemm.push((rows * cols * args.nt) as f64 / s2 / 1e9);
                if pool.n_threads() == 1 {
                    gemv_cpu = wb.len() as f64 / c / 1e9;
                    gemm_cpu = (rows * cols * args.nt) as f64 / c2 / 1e9;
                }
            }
            print!("| {ty} | {rows} x {cols} |");
            for v in &gemv {
                print!(" {v:.1} |");
            }
            print!(" {gemv_cpu:.1} |");
            for v in &gemm {
                print!(" {v:.1} |");
            }
            print!(" {gemm_cpu:.1} |");
            println!();
        }
    }
}
