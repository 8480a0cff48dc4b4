#!/usr/bin/env bash
# Runs every test: installs what the tests need (Debian packages, models),
# the Rust unit tests, then the C tests of ffi-tests/ against the built
# libllama.so. Ends with "N passed, M failed" over both.
#
# usage: scripts/test.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

# --- tools the C tests use (gcc, g++, nm/readelf, valgrind, python3,
# pkg-config for the installed library; scripts/test-go.sh and
# scripts/test-swift-module.sh install go and clang themselves)
need=()
command -v gcc > /dev/null || need+=(gcc)
command -v g++ > /dev/null || need+=(g++)
command -v nm > /dev/null && command -v readelf > /dev/null || need+=(binutils)
command -v pkg-config > /dev/null || need+=(pkg-config)
command -v valgrind > /dev/null || need+=(valgrind)
command -v python3 > /dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" > /dev/null \
        || { echo "could not install ${need[*]}"; exit 1; }
fi

# --- models and vocab files (cached under ~/.cache/minfer; a second run downloads nothing)
bash scripts/fetch-models.sh > /dev/null || { echo "could not fetch the models"; exit 1; }
# the reference source: its 19 vocab-only GGUF files (tokenizer goldens) and
# grammars/ (parsed by the grammar tests)
bash scripts/fetch-reference-src.sh > /dev/null || { echo "could not fetch the reference source and vocab files"; exit 1; }

# --- reference dequantizations of the gguf package, for the quant unit tests
prep=$(bash scripts/test-kernels.sh prepare) || { echo "could not prepare the kernel checks"; exit 1; }
eval "$prep"

# --- Rust unit tests, and the library the C tests link (same profile and
# features, so the two builds share their dependencies)
features=(--release --features test-hooks)
cargo build "${features[@]}" --quiet || { echo "build failed"; exit 1; }
cargo test "${features[@]}" --lib 2>&1 | tee target/unit-tests.log
rust_line=$(grep -E '^test result:' target/unit-tests.log | tail -n 1)
rust_pass=$(echo "$rust_line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
rust_fail=$(echo "$rust_line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
rust_pass=${rust_pass:-0}
rust_fail=${rust_fail:-1}

# --- C tests
bash ffi-tests/run.sh 2>&1 | tee target/ffi-tests.log
c_line=$(grep -E '^ffi-tests: ' target/ffi-tests.log | tail -n 1)
c_pass=$(echo "$c_line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
c_fail=$(echo "$c_line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
c_pass=${c_pass:-0}
c_fail=${c_fail:-1}

# --- kernel checks: forced scalar path, aarch64 NEON tests under qemu
bash scripts/test-kernels.sh check 2>&1 | tee target/kernel-checks.log
k_line=$(grep -E '^kernel checks: ' target/kernel-checks.log | tail -n 1)
k_pass=$(echo "$k_line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
k_fail=$(echo "$k_line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
k_pass=${k_pass:-0}
k_fail=${k_fail:-1}

echo
echo "rust unit tests: $rust_pass passed, $rust_fail failed; C test groups: $c_pass passed, $c_fail failed; kernel checks (aarch64/qemu, scalar override): $k_pass passed, $k_fail failed"
echo "total: $((rust_pass + c_pass + k_pass)) passed, $((rust_fail + c_fail + k_fail)) failed"
[ "$((rust_fail + c_fail + k_fail))" = 0 ]
