#!/usr/bin/env bash
# The kernel checks scripts/test.sh runs besides the Rust unit tests:
#  - the gguf package's numpy dequantizers (cached venv, scripts/py-venv.sh)
#    write reference dequantizations that the unit test
#    quant::tests::dequantize_equals_gguf_numpy compares against; run this
#    script with `prepare` before `cargo test` (it prints the export line);
#  - `check`: MINFER_NO_AVX2=1 forces the scalar set (x86-64), and the
#    aarch64 tests under qemu (scripts/test-aarch64.sh).
# `check` ends with "kernel checks: N passed, M failed, K skipped".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
case "${1:-}" in
prepare)
    mkdir -p target
    PY=$(bash scripts/py-venv.sh) || { echo "py-venv.sh failed" >&2; exit 1; }
    "$PY" scripts/gguf_dequant.py tests/goldens/quant target/gguf-dequant >&2 || exit 1
    echo "export MINFER_GGUF_DEQUANT_DIR=$ROOT/target/gguf-dequant"
    ;;
check)
    pass=0; failed=0
    if [ "$(uname -m)" = x86_64 ]; then
        bin=$(cargo test --release --features test-hooks --lib --no-run --message-format=json 2> /dev/null \
            | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
        if MINFER_NO_AVX2=1 MINFER_EXPECT_KERNELS=scalar "$bin" kernels::tests::kernel_sets_are_detected_and_chosen_once 2>&1 \
            | grep -q '^test result: ok. 1 passed'; then
            echo "x86-64, MINFER_NO_AVX2=1, expecting the scalar set: ok"; pass=$((pass + 1))
        else
            echo "x86-64, MINFER_NO_AVX2=1: the scalar set was not chosen"; failed=$((failed + 1))
        fi
    fi
    bash scripts/test-aarch64.sh | tee target/aarch64-tests.log
    line=$(grep -E '^aarch64 tests: ' target/aarch64-tests.log | tail -n 1)
    p=$(echo "$line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
    f=$(echo "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
    sk=$(echo "$line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
    pass=$((pass + ${p:-0})); failed=$((failed + ${f:-1}))
    echo "kernel checks: $pass passed, $failed failed, ${sk:-0} skipped"
    [ "$failed" = 0 ]
    ;;
*)
    echo "usage: $0 prepare|check" >&2; exit 2 ;;
esac
