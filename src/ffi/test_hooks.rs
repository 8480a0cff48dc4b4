//! Test-only exports (built with `--features test-hooks`), never in a release
//! library: they let the C tests prove that a panic inside the boundary
//! becomes a failure value and the process goes on, and count the weight
//! bytes a decode multiplies by.

use super::boundary::*;

/// Panics inside the boundary when `do_panic` is true; returns 1 otherwise
/// and -1 (the failure value) after a caught panic.
#[no_mangle]
pub extern "C" fn minfer_test_panic(do_panic: bool) -> i32 {
    guard("minfer_test_panic", -1, || {
        if do_panic {
            panic!("forced panic for the boundary test");
        }
        Ok(1)
    })
}

/// The bytes of weight rows every matmul since the last call was given
/// (each matrix, or expert slice, counted once per product), then clears
/// the count.
#[no_mangle]
pub extern "C" fn minfer_test_weight_bytes() -> u64 {
    crate::kernels::matmul::take_weight_bytes()
}
