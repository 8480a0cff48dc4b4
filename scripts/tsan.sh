#!/usr/bin/env bash
# ThreadSanitizer run of the multi-threaded C tests.
#
# TSan reports false races unless everything that synchronizes is
# instrumented, Rust's standard library included; so the library is built
# with -Zbuild-std (needs the rust-src component, added here when missing)
# into its own target dir (target/tsan):
#
#   rustup component add rust-src
#   RUSTFLAGS=-Zsanitizer=thread RUSTC_BOOTSTRAP=1 cargo build -Zbuild-std \
#       --target x86_64-unknown-linux-gnu --release --features test-hooks --target-dir target/tsan
#
# The C tests that use threads are compiled with gcc's -fsanitize=thread and
# linked with the Rust toolchain's TSan runtime (librustc-*_rt.tsan.a, the
# compiler-rt of the LLVM that instrumented the library: gcc 12's libtsan
# lacks the __tsan_memcpy/memset/memmove entry points that LLVM's
# instrumentation calls), exported with -rdynamic for libllama.so to bind to:
#   test_threads  4 contexts on 4 threads sharing a model, log callback swaps,
#                 the model freed while they run, backend init/free from 4
#                 threads, an abort raised from another thread (SmolLM2)
#   test_vocab_api  one vocabulary tokenizing on 4 threads at once
# A data race or lock-order problem prints a TSan report and fails the test
# (halt_on_error=1). Log: target/tsan.log; ends with "tsan: N passed, M failed".
#
# usage: scripts/tsan.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TARGET=x86_64-unknown-linux-gnu
LIB_DIR=$ROOT/target/tsan/$TARGET/release
OUT=$ROOT/target/ffi-tests-tsan
MODELS=${MINFER_CACHE:-$HOME/.cache/minfer}/models
SMOL=$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA=$MODELS/gemma-3-270m-q4_k_m.gguf
mkdir -p "$OUT"

if ! rustup component list --installed 2> /dev/null | grep -q '^rust-src'; then
    rustup component add rust-src || { echo "rust-src is not available: cannot build std with TSan"; exit 1; }
fi

RUSTFLAGS="-Zsanitizer=thread" RUSTC_BOOTSTRAP=1 \
    cargo build -Zbuild-std --target "$TARGET" --release --features test-hooks --target-dir target/tsan \
    || { echo "tsan build failed"; exit 1; }

RT=$(ls "$(rustc --print sysroot)"/lib/rustlib/$TARGET/lib/librustc-*_rt.tsan.a 2> /dev/null | head -n 1)
[ -f "$RT" ] || { echo "no TSan runtime in the Rust toolchain"; exit 1; }
# tsan_link NAME: compiles ffi-tests/NAME.c instrumented and links it with the runtime
tsan_link() {
    gcc -std=c11 -Wall -Wextra -Werror -g -O1 -fsanitize=thread -pthread -I"$ROOT/include" -I"$ROOT/ffi-tests" \
        -c "$ROOT/ffi-tests/$1.c" -o "$OUT/$1.o" \
        && gcc "$OUT/$1.o" -o "$OUT/$1" -rdynamic -Wl,--whole-archive "$RT" -Wl,--no-whole-archive \
            -L"$LIB_DIR" -lllama -Wl,-rpath,"$LIB_DIR" -lpthread -ldl -lm -lrt
}

export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
pass=0
fail=0
run() { # NAME ARGS...
    local name=$1; shift
    if tsan_link "$name" 2> "$OUT/$name.build.log" && "$OUT/$name" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"; then
        pass=$((pass + 1)); echo "ok   $name under ThreadSanitizer: $(grep -E 'passed, [0-9]+ failed' "$OUT/$name.out")"
    else
        fail=$((fail + 1)); echo "FAIL $name under ThreadSanitizer"
        cat "$OUT/$name.build.log"; grep -A30 -m3 'WARNING: ThreadSanitizer' "$OUT/$name.err" || tail -n 30 "$OUT/$name.err" "$OUT/$name.out"
    fi
}
# The canary: two threads changing one context without synchronizing (forbidden by the API)
# must be reported as a race inside the library, or the build is not
# instrumented and a clean run below would prove nothing.
canary() {
    tsan_link sanitizer_canary || { echo "FAIL canary build"; return; }
    if "$OUT/sanitizer_canary" race "$SMOL" > "$OUT/canary_race.out" 2> "$OUT/canary_race.err"; then
        echo "FAIL canary race: not reported"
    elif grep -q 'WARNING: ThreadSanitizer: data race' "$OUT/canary_race.err" && grep -q 'llama_set_embeddings' "$OUT/canary_race.err"; then
        echo "ok   canary race: TSan reports the data race in llama_set_embeddings"
    else
        echo "FAIL canary race"; tail -n 20 "$OUT/canary_race.err"
    fi
}
{
    canary
    run test_threads "$SMOL"
    VOCAB_API_SKIP_BIG=1 run test_vocab_api "$SMOL" "$GEMMA"
    echo "tsan: $pass passed, $fail failed"
} 2>&1 | tee target/tsan.log
! grep -q '^FAIL canary' target/tsan.log && grep -q '^tsan: [0-9]* passed, 0 failed' target/tsan.log
