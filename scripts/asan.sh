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

LIB_DIR=$ROOT/target/asan/$TARGET/release
OUT=$ROOT/target/ffi-tests
SMOL=${MINFER_CACHE:-$HOME/.cache/minfer}/models/SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p "$OUT"
# detect_leaks: LeakSanitizer at exit (on by default on x86_64 Linux, set
# for clarity); abort_on_error: a report ends the program with a failure code.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}

# canary MODE EXPECTED: deliberate misuse the sanitizer must report from
# inside the library (ffi-tests/sanitizer_canary.c), so that a clean run below
# is evidence and not an uninstrumented build
canary() {
    # (in a subshell whose stderr is dropped: bash's own "Aborted" notice)
    if ( "$OUT/sanitizer_canary_asan" "$1" "$SMOL" > "$OUT/canary_$1.out" 2> "$OUT/canary_$1.err" ) 2> /dev/null; then
        echo "FAIL canary $1: not reported"
    elif grep -q "$2" "$OUT/canary_$1.err" && grep -q 'llama' "$OUT/canary_$1.err"; then
        echo "ok   canary $1: ASan reports '$2' with the library's frames"
    else
        echo "FAIL canary $1"; tail -n 20 "$OUT/canary_$1.err"
    fi
}
{
    gcc -std=c11 -g -fsanitize=address -fno-omit-frame-pointer -pthread -I"$ROOT/include" "$ROOT/ffi-tests/sanitizer_canary.c" \
        -o "$OUT/sanitizer_canary_asan" -L"$LIB_DIR" -lllama -Wl,-rpath,"$LIB_DIR"
    canary overflow 'ERROR: AddressSanitizer: heap-buffer-overflow'
    canary leak 'ERROR: LeakSanitizer: detected memory leaks'
    MINFER_LIB_DIR="$LIB_DIR" MINFER_SANITIZE=address bash ffi-tests/run.sh
} 2>&1 | tee target/asan.log
! grep -q '^FAIL canary' target/asan.log && grep -q '^ffi-tests: [0-9]* passed, 0 failed' target/asan.log
