//! A persistent thread pool for the matmul.
//!
//! - Workers are spawned once, in [`ThreadPool::new`], and live until the pool
//!   is dropped.
//! - A submission ([`ThreadPool::run`]) is a task count and a closure
//!   `f(task)`; every task runs exactly once, on some thread. Tasks are
//!   claimed from an atomic counter, and the submitting thread claims tasks
//!   too. `run` returns when every task has finished. A worker that wakes
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
    /// The current job and its task count. A worker joins it (incrementing
    /// `active`) only while holding this lock and only while it is `Some`;
    /// the submitter takes it out under the lock once every task is claimed,
    /// so it then waits only for workers that joined.
    job: Mutex<Option<(JobPtr, usize)>>,
    next_task: AtomicUsize,
    /// Workers working on the current job.
    active: AtomicUsize,
    panicked: AtomicBool,
    shutdown: AtomicBool,
    park_lock: Mutex<()>,
    park_cv: Condvar,
}

impl Shared {
    /// Claims and runs tasks until none of the `n` is left.
    fn work(&self, job: &(dyn Fn(usize) + Sync), n: usize) {
        loop {
            let i = self.next_task.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
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
            next_task: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            park_lock: Mutex::new(()),
            park_cv: Condvar::new(),
        });
        let mut pool =
            ThreadPool { n_threads, shared: shared.clone(), workers: Vec::new(), submit: Mutex::new(()) };
        for i in 1..n_threads {
            let sh = shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("minfer-worker-{i}"))
                .spawn(move || worker_loop(&sh))
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
                std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const (dyn Fn(usize) + Sync)>(
                    f as *const _,
                )
            });
            sh.next_task.store(0, Ordering::Relaxed);
            *sh.job.lock() = Some((job, n_tasks));
            {
                let _g = sh.park_lock.lock();
                sh.epoch.fetch_add(1, Ordering::Release);
            }
            sh.park_cv.notify_all();
            sh.work(f, n_tasks);
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
                if spinning && spins % 64 == 0 {
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

fn worker_loop(sh: &Shared) {
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
            if spins % 64 == 0 && start.elapsed() >= SPIN {
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
        if let Some((JobPtr(p), n)) = joined {
            // SAFETY: this worker joined while the job was open (counted in
            // `active`), and the submitter keeps the closure alive until
            // `active` is back to zero.
            let f = unsafe { &*p };
            sh.work(f, n);
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
