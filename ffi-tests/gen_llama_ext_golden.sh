#!/usr/bin/env bash
# Regenerates ffi-tests/golden/llama_ext.txt: test_llama_ext.cpp run with the
# reference library first in LD_LIBRARY_PATH (it defines the llama-ext.h
# functions itself, so they are the ones called; minfer's libllama-ext.so is only
# there to satisfy the link). Needs scripts/install-reference-lib.sh,
# scripts/fetch-reference-src.sh and `cargo build --release`.
#
# usage: ffi-tests/gen_llama_ext_golden.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
REF_SRC=$CACHE/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp
OUT=$ROOT/target/ffi-tests
mkdir -p "$OUT"
[ -f "$REF_LIB/libllama.so" ] || { echo "no reference library in $REF_LIB" >&2; exit 1; }
g++ -std=c++17 -O2 -fPIC -shared -I"$ROOT/include" -I"$REF_SRC/src" "$ROOT/compat/llama-ext.cpp" \
    -o "$OUT/libllama-ext.so" -L"$ROOT/target/release" -lllama -ldl
g++ -std=c++17 -O2 -I"$ROOT/include" -I"$REF_SRC/src" "$ROOT/ffi-tests/test_llama_ext.cpp" -o "$OUT/test_llama_ext_ref" \
    -L"$ROOT/target/release" -L"$OUT" -lllama -lllama-ext
LD_LIBRARY_PATH=$REF_LIB:$OUT "$OUT/test_llama_ext_ref" "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" \
    "$CACHE/models/gemma-3-270m-q4_k_m.gguf" > "$ROOT/ffi-tests/golden/llama_ext.txt"
echo "wrote ffi-tests/golden/llama_ext.txt"
