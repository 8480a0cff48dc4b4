#!/usr/bin/env bash
# Cross-compiles the kernel and quant unit tests for aarch64 and runs them
# under qemu-aarch64 user-mode emulation, twice: on a CPU with the dotprod
# extension (-cpu max: tests the scalar, NEON and NEON+dotprod sets) and on
# one without (-cpu cortex-a57: NEON without dotprod must be chosen).
# Installs what it needs (rustup target, Debian's gcc-aarch64-linux-gnu and
# qemu-user). Ends with "aarch64 tests: N passed, M failed, K skipped".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TARGET=aarch64-unknown-linux-gnu
fail() { echo "test-aarch64.sh: $*"; echo "aarch64 tests: 0 passed, 1 failed"; exit 1; }

rustup target list --installed 2> /dev/null | grep -qx "$TARGET" \
    || rustup target add "$TARGET" > /dev/null 2>&1 || fail "could not add the rust target $TARGET"
need=()
command -v aarch64-linux-gnu-gcc > /dev/null || need+=(gcc-aarch64-linux-gnu)
command -v qemu-aarch64 > /dev/null || need+=(qemu-user)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" > /dev/null; } \
        || fail "could not install ${need[*]}"
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
# Build the test binary once; run it under two emulated CPUs.
bin=$(cargo test --release --features test-hooks --lib --target "$TARGET" --no-run --message-format=json 2> target/aarch64-build.log \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
[ -n "$bin" ] && [ -x "$bin" ] || { tail -n 30 target/aarch64-build.log; fail "cross build failed"; }

pass=0; failed=0; skipped=0
for cpu in max cortex-a57; do
    log="target/aarch64-tests-$cpu.log"
    expect=neon-dotprod; [ "$cpu" = cortex-a57 ] && expect=neon
    MINFER_EXPECT_KERNELS=$expect qemu-aarch64 -cpu "$cpu" -L /usr/aarch64-linux-gnu "$bin" --test-threads 2 quant:: kernels:: > "$log" 2>&1
    line=$(grep -E '^test result:' "$log" | tail -n 1)
    p=$(echo "$line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
    f=$(echo "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
    echo "aarch64 (qemu -cpu $cpu, expecting the $expect set): ${line:-no result}"
    [ -z "$line" ] && { tail -n 20 "$log"; f=1; p=0; }
    grep -E '^test .* FAILED|panicked' "$log" | head -n 10
    # tests that skip themselves (skip_test!) pass in libtest: count them apart
    sk=$(grep -c '^SKIPPED ' "$log")
    pass=$((pass + ${p:-0} - sk)); failed=$((failed + ${f:-1})); skipped=$((skipped + sk))
done
# MINFER_NO_NEON=1 forces the scalar set.
log=target/aarch64-tests-no-neon.log
MINFER_NO_NEON=1 MINFER_EXPECT_KERNELS=scalar qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu "$bin" \
    kernels::tests::kernel_sets_are_detected_and_chosen_once > "$log" 2>&1
if grep -q '^test result: ok. 1 passed' "$log"; then
    echo "aarch64 (qemu -cpu max, MINFER_NO_NEON=1, expecting the scalar set): ok"
    pass=$((pass + 1))
else
    tail -n 20 "$log"; failed=$((failed + 1))
fi
echo "aarch64 tests: $pass passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
