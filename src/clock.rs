//! The library's monotonic clock (ggml_time_us's contract: microseconds,
//! only differences are meaningful).

use std::sync::OnceLock;
use std::time::Instant;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Starts the clock (idempotent).
pub fn init() {
    let _ = origin();
}

/// Microseconds since the clock started.
pub fn time_us() -> i64 {
    i64::try_from(origin().elapsed().as_micros()).unwrap_or(i64::MAX)
}
