//! A persistent thread pool for the matmul.
//!
//! - Workers are spawned once, in [`ThreadPool::new`], and live until the pool
//!   is dropped.
//! - A submission ([`ThreadPool::run`]) is a task count and a closure
//!   `f(task)`; every task runs exactly once, on some thread. The tasks are
//!   split into one consecutive range per thread (the submitting thread
//!   has one too); a thread runs its range from the front, then takes tasks
//!   from the backs of the others' ranges, so a late or slow thread is made
//!   up for. `run` returns when every task has finished. A worker that wakes
//!   after all tasks were claimed does not join (so a slow wake-up costs the
//!   submitter nothing).
//! - Between submissions a worker spins briefly (a new submission usually
//!   follows within microseconds during a forward pass), then parks on a
//!   condition variable.
//! - One submission at a time: `run` holds a lock for its duration, so two
//!   threads submitting concurrently are serialized (safe, not parallel).
//! - Determinism is the caller's part: a task must compute the same thing
//!   whichever thread runs it (the matmul's tasks own whole output rows).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::{Error, Result};

/// How long an idle worker spins before parking.
const SPIN: Duration = Duration::from_micros(200);

/// A job with its lifetime erased (see the SAFETY note in `run`).
#[derive(Clone, Copy)]
struct JobPtr(*const (dyn Fn(usize) + Sync));
// SAFETY: the pointee is `Sync` and outlives every use (the submitter waits
// for all workers before returning), so sending the pointer is sound.
unsafe impl Send for JobPtr {}

struct Shared {
    /// Bumped (under `park_lock`) once per submission, to wake workers.
    epoch: AtomicU64,
    /// The current job. A worker joins it (incrementing `active`) only
    /// while holding this lock and only while it is `Some`; the submitter
    /// takes it out under the lock once every task is claimed, so it then
    /// waits only for workers that joined.
    job: Mutex<Option<JobPtr>>,
    /// Per thread (slot 0 the submitter, slot i worker i): the range of
    /// tasks it claims from the front, packed as `lo | hi << 32`; a thread
    /// that has emptied its own range takes tasks from the back of others'.
    /// (Each thread's tasks are then consecutive: a matmul thread reads one
    /// run of weight rows instead of every other piece of the matrix, which
    /// streams faster than tasks handed out by one shared counter.)
    ranges: Box<[PaddedRange]>,
    /// Workers working on the current job.
    active: AtomicUsize,
    panicked: AtomicBool,
    shutdown: AtomicBool,
    park_lock: Mutex<()>,
    park_cv: Condvar,
}

/// One thread's task range, alone on its cache line.
#[repr(align(64))]
struct PaddedRange(AtomicU64);

/// Takes a task from range `r`: its first if `front`, else its last.
fn claim(r: &AtomicU64, front: bool) -> Option<usize> {
    let mut v = r.load(Ordering::Relaxed);
    loop {
        let (lo, hi) = (v & 0xffff_ffff, v >> 32);
        if lo >= hi {
            return None;
        }
        let (next, task) = if front { (v + 1, lo) } else { (lo | ((hi - 1) << 32), hi - 1) };
        match r.compare_exchange_weak(v, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some(task as usize),
            Err(cur) => v = cur,
        }
    }
}

impl Shared {
    /// Splits `n` tasks into one consecutive range per thread.
    fn split(&self, n: usize) {
        let k = self.ranges.len();
        for (i, r) in self.ranges.iter().enumerate() {
            let (n, i, k) = (n as u64, i as u64, k as u64);
            let (lo, hi) = (n * i / k, n * (i + 1) / k);
            r.0.store(lo | (hi << 32), Ordering::Relaxed);
        }
    }

    /// Runs the tasks of thread `me`'s range, then takes the others' from
    /// their backs, until no task is left.
    fn work(&self, job: &(dyn Fn(usize) + Sync), me: usize) {
        let k = self.ranges.len();
        let mut from = me;
        loop {
            let task = claim(&self.ranges[from].0, from == me);
            let Some(i) = task else {
                // this range is empty: the next one with tasks left, if any
                match (1..k).map(|d| (me + d) % k).find(|&j| {
                    let v = self.ranges[j].0.load(Ordering::Relaxed);
                    (v & 0xffff_ffff) < (v >> 32)
                }) {
                    Some(j) => {
                        from = j;
                        continue;
                    }
                    None => break,
                }
            };
            if catch_unwind(AssertUnwindSafe(|| job(i))).is_err() {
                self.panicked.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// A pool of `n_threads - 1` workers plus the submitting thread.
pub struct ThreadPool {
    n_threads: usize,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    submit: Mutex<()>,
}

impl ThreadPool {
    /// A pool that runs submissions on `n_threads` threads (the caller and
    /// `n_threads - 1` workers). `n_threads` is clamped to at least 1.
    pub fn new(n_threads: usize) -> Result<ThreadPool> {
        let n_threads = n_threads.max(1);
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            job: Mutex::new(None),
            ranges: (0..n_threads).map(|_| PaddedRange(AtomicU64::new(0))).collect(),
            active: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            park_lock: Mutex::new(()),
            park_cv: Condvar::new(),
        });
        let mut pool = ThreadPool { n_threads, shared: shared.clone(), workers: Vec::new(), submit: Mutex::new(()) };
        for i in 1..n_threads {
            let sh = shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("minfer-worker-{i}"))
                .spawn(move || worker_loop(&sh, i))
                .map_err(|e| Error::invalid(format!("could not spawn a worker thread: {e}")))?;
            pool.workers.push(handle);
        }
        Ok(pool)
    }

    /// Threads a submission runs on (workers + the caller).
    pub fn n_threads(&self) -> usize {
        self.n_threads
    }

    /// Runs `f(0) … f(n_tasks - 1)`, each exactly once, on the pool and the
    /// calling thread; returns when all have finished. Fails if a task
    /// panicked (the other tasks still ran).
    pub fn run(&self, n_tasks: usize, f: &(dyn Fn(usize) + Sync)) -> Result<()> {
        if n_tasks > u32::MAX as usize {
            // (task ranges are packed as two u32s; no caller comes near)
            return Err(Error::invalid(format!("{n_tasks} pool tasks in one submission (at most {})", u32::MAX)));
        }
        let _one_at_a_time = self.submit.lock();
        let sh = &*self.shared;
        sh.panicked.store(false, Ordering::Relaxed);
        if self.workers.is_empty() || n_tasks <= 1 {
            for i in 0..n_tasks {
                if catch_unwind(AssertUnwindSafe(|| f(i))).is_err() {
                    sh.panicked.store(true, Ordering::Relaxed);
                }
            }
        } else {
            // SAFETY: erasing the lifetime of `f` is sound: workers reach the
            // job only through `job`, joining under its lock (incrementing
            // `active`); this function clears `job` under that lock and then
            // waits for `active` to drop to zero before returning, so no
            // worker uses the pointer after `f`'s borrow ends.
            let job: JobPtr = JobPtr(unsafe {
                std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const (dyn Fn(usize) + Sync)>(f as *const _)
            });
            sh.split(n_tasks);
            *sh.job.lock() = Some(job);
            {
                let _g = sh.park_lock.lock();
                sh.epoch.fetch_add(1, Ordering::Release);
            }
            sh.park_cv.notify_all();
            sh.work(f, 0);
            // Every task is claimed: close the job to late workers, then wait
            // for those that joined (they may still be running tasks).
            *sh.job.lock() = None;
            // (the clock is read every 64 spins: a read costs more than a
            // spin, and it would delay noticing the last worker)
            let start = Instant::now();
            let mut spins = 0u32;
            let mut spinning = true;
            while sh.active.load(Ordering::Acquire) != 0 {
                spins = spins.wrapping_add(1);
                if spinning && spins.is_multiple_of(64) {
                    spinning = start.elapsed() < SPIN;
                }
                if spinning {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        if sh.panicked.load(Ordering::Relaxed) {
            return Err(Error::invalid("a thread pool task panicked"));
        }
        Ok(())
    }
}

/// A pointer to rows of one buffer that pool tasks write disjointly.
struct RowsPtr(*mut f32);
// SAFETY: each task of `run_rows` touches only its own rows, and the buffer
// outlives the submission.
unsafe impl Sync for RowsPtr {}

impl ThreadPool {
    /// Runs `f(i, row)` for every `width`-long row `i` of `buf` (rows
    /// `rows_per_task` at a time per task). Rows are independent, so the
    /// result does not depend on the thread count. Fails as [`run`](Self::run).
    pub fn run_rows(
        &self,
        buf: &mut [f32],
        width: usize,
        rows_per_task: usize,
        f: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) -> Result<()> {
        if width == 0 {
            return Ok(());
        }
        let n = buf.len() / width;
        let step = rows_per_task.max(1);
        let ptr = RowsPtr(buf.as_mut_ptr());
        let ptr = &ptr;
        self.run(n.div_ceil(step), &|task| {
            for i in task * step..((task + 1) * step).min(n) {
                // SAFETY: row i (< n, so within `buf`) belongs to this task
                // alone; `buf` is borrowed mutably for the whole submission.
                let row = unsafe { std::slice::from_raw_parts_mut(ptr.0.add(i * width), width) };
                f(i, row);
            }
        })
    }

    /// Rows per task for `n` rows of light work: a few tasks per thread,
    /// every row in one task when there is one thread.
    pub fn light_rows_per_task(&self, n: usize) -> usize {
        if self.n_threads <= 1 {
            n.max(1)
        } else {
            n.div_ceil(4 * self.n_threads).max(1)
        }
    }
}

fn worker_loop(sh: &Shared, me: usize) {
    // Epoch 0 is the state at spawn time: a submission may bump the epoch
    // before this thread first runs, and it must still take part.
    let mut seen = 0u64;
    loop {
        // --- wait for a new submission: spin, then park
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            if sh.shutdown.load(Ordering::Acquire) {
                return;
            }
            if sh.epoch.load(Ordering::Acquire) != seen {
                break;
            }
            spins += 1;
            if spins.is_multiple_of(64) && start.elapsed() >= SPIN {
                let mut g = sh.park_lock.lock();
                while sh.epoch.load(Ordering::Acquire) == seen && !sh.shutdown.load(Ordering::Acquire) {
                    sh.park_cv.wait(&mut g);
                }
                break;
            }
            std::hint::spin_loop();
        }
        if sh.shutdown.load(Ordering::Acquire) {
            return;
        }
        seen = sh.epoch.load(Ordering::Acquire);
        // --- join the job if it is still open, and run tasks
        let joined = {
            let g = sh.job.lock();
            let j = *g;
            if j.is_some() {
                sh.active.fetch_add(1, Ordering::AcqRel);
            }
            j
        };
        if let Some(JobPtr(p)) = joined {
            // SAFETY: this worker joined while the job was open (counted in
            // `active`), and the submitter keeps the closure alive until
            // `active` is back to zero.
            let f = unsafe { &*p };
            sh.work(f, me);
            sh.active.fetch_sub(1, Ordering::Release);
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        {
            let _g = self.shared.park_lock.lock();
            self.shared.shutdown.store(true, Ordering::Release);
        }
        self.shared.park_cv.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
