#!/usr/bin/env bash
# Regenerates ffi-tests/golden/sampler_chains.txt with the reference library
# (scripts/install-reference-lib.sh installs it; scripts/fetch-reference-src.sh
# fetches the headers).
#
# usage: ffi-tests/gen_sampler_golden.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
REF_SRC=$CACHE/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp
OUT=$ROOT/target/ffi-tests
mkdir -p "$OUT"
[ -f "$REF_LIB/libllama.so" ] || { echo "no reference library in $REF_LIB" >&2; exit 1; }
[ -f "$REF_SRC/include/llama.h" ] || { echo "no reference headers in $REF_SRC (run scripts/fetch-reference-src.sh)" >&2; exit 1; }
gcc -std=c11 -O2 -Wall -I"$REF_SRC/include" -I"$REF_SRC/ggml/include" "$ROOT/ffi-tests/sampler_golden.c" \
    -o "$OUT/sampler_golden_ref" -L"$REF_LIB" -lllama -lm -Wl,-rpath,"$REF_LIB"
"$OUT/sampler_golden_ref" > "$ROOT/ffi-tests/golden/sampler_chains.txt"
echo "wrote ffi-tests/golden/sampler_chains.txt ($(wc -l < "$ROOT/ffi-tests/golden/sampler_chains.txt") lines)"
