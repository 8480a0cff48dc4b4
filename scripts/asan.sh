#!/usr/bin/env bash
# AddressSanitizer + LeakSanitizer run of the C tests.
#
# Builds libllama with the Rust AddressSanitizer into its own target dir
# (target/asan), compiles every C test of ffi-tests/run.sh with gcc's
# -fsanitize=address (gcc's libasan is the runtime; the Rust side only
# instruments) and runs them against it. Any invalid access, use after free,
# double free or leak makes the test print an ASan report and fail.
#
#   RUSTFLAGS=-Zsanitizer=address RUSTC_BOOTSTRAP=1 \
#       cargo build --target x86_64-unknown-linux-gnu --release --features test-hooks --target-dir target/asan
#   MINFER_LIB_DIR=target/asan/x86_64-unknown-linux-gnu/release MINFER_SANITIZE=address ffi-tests/run.sh
#
# (--target keeps the sanitizer flags off build scripts; RUSTC_BOOTSTRAP lets
# the stable toolchain take the -Z flag.) The valgrind reruns of run.sh are
# skipped in this mode. Log: target/asan.log; ends with run.sh's tally line.
#
# usage: scripts/asan.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TARGET=x86_64-unknown-linux-gnu

# gcc's AddressSanitizer runtime (libasan8 with gcc 12 on Debian 12)
if [ ! -e "$(gcc -print-file-name=libasan.so)" ] || [ "$(gcc -print-file-name=libasan.so)" = libasan.so ]; then
    echo "installing libasan8"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libasan8 > /dev/null \
        || { echo "could not install libasan8"; exit 1; }
fi

RUSTFLAGS="-Zsanitizer=address" RUSTC_BOOTSTRAP=1 \
    cargo build --target "$TARGET" --release --features test-hooks --target-dir target/asan \
    || { echo "asan build failed"; exit 1; }

# detect_leaks: LeakSanitizer at exit (on by default on x86_64 Linux, set
# for clarity); abort_on_error: a report ends the program with a failure code.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0:allocator_may_return_null=1}
MINFER_LIB_DIR="$ROOT/target/asan/$TARGET/release" MINFER_SANITIZE=address \
    bash ffi-tests/run.sh 2>&1 | tee target/asan.log
grep -q '^ffi-tests: [0-9]* passed, 0 failed' target/asan.log
