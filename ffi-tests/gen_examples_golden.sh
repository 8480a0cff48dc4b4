#!/usr/bin/env bash
# Regenerates ffi-tests/golden/embedding_smollm2.txt: examples-c/embedding.c
# (its default sentences) on SmolLM2 with the reference library (compiled
# against include/llama.h, run with LD_LIBRARY_PATH at the reference's lib
# directory; scripts/install-reference-lib.sh installs it).
#
# usage: ffi-tests/gen_examples_golden.sh   (after cargo build --release)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
OUT=$ROOT/target/ffi-tests
mkdir -p "$OUT"
[ -f "$REF_LIB/libllama.so" ] || { echo "no reference library in $REF_LIB" >&2; exit 1; }
gcc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" "$ROOT/examples-c/embedding.c" \
    -o "$OUT/embedding" -L"$ROOT/target/release" -lllama -lm -Wl,-rpath,"$ROOT/target/release"
LD_LIBRARY_PATH=$REF_LIB "$OUT/embedding" "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" \
    2> /dev/null > "$ROOT/ffi-tests/golden/embedding_smollm2.txt"
echo "wrote ffi-tests/golden/embedding_smollm2.txt"
