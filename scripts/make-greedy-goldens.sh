#!/usr/bin/env bash
# Regenerates ffi-tests/golden/greedy/<model>.txt with the reference library:
# 64 greedy tokens from each prompt of ffi-tests/golden/greedy/prompts.txt,
# printed by ffi-tests/greedy_prompts.c (compiled against include/llama.h).
# Needs the reference library (scripts/install-reference-lib.sh).
# usage: scripts/make-greedy-goldens.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=$(bash scripts/install-reference-lib.sh --print-lib-dir)
OUT=target/greedy && mkdir -p "$OUT"
gcc -O2 -std=c11 -Iinclude ffi-tests/greedy_prompts.c -o "$OUT/greedy_prompts" -L"$REF_LIB" -lllama
for m in SmolLM2-135M-Instruct.Q4_1 gemma-3-270m-q4_k_m; do
    LD_LIBRARY_PATH=$REF_LIB "$OUT/greedy_prompts" "$CACHE/models/$m.gguf" ffi-tests/golden/greedy/prompts.txt 64 \
        > "ffi-tests/golden/greedy/$m.txt"
done
wc -l ffi-tests/golden/greedy/*.txt
