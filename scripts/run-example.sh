#!/usr/bin/env bash
# The main job: build libllama (release), fetch the default model (SmolLM2-135M
# Instruct, Q4_1) into ~/.cache/minfer, build examples-c/simple.c against
# include/llama.h and run it on the model.
#
# usage: scripts/run-example.sh [PROMPT]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

cargo build --release --quiet
MODEL=$(bash scripts/fetch-models.sh smollm2 | head -n 1)
mkdir -p target/examples
cc -std=c11 -O2 -Wall -Wextra -Iinclude examples-c/simple.c -Ltarget/release -lllama \
    -Wl,-rpath,"$ROOT/target/release" -o target/examples/simple
exec target/examples/simple "$MODEL" -n 32 "${1:-The capital of France is}"
