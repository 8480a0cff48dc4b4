#!/usr/bin/env bash
# Regenerates ffi-tests/golden/chat_templates.txt with the reference library:
# ffi-tests/chat_template_golden.c is compiled once against include/llama.h
# and run with LD_LIBRARY_PATH pointing at the reference's lib directory
# (scripts/install-reference-lib.sh installs it; scripts/fetch-reference-src.sh
# fetches the Jinja templates and the vocab files; scripts/fetch-models.sh the
# models). ffi-tests/run.sh runs the same binary on minfer and diffs.
#
# usage: ffi-tests/gen_chat_template_golden.sh   (after cargo build --release)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
REF_SRC=$CACHE/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp
OUT=$ROOT/target/ffi-tests
mkdir -p "$OUT"
[ -f "$REF_LIB/libllama.so" ] || { echo "no reference library in $REF_LIB" >&2; exit 1; }
[ -d "$REF_SRC/models/templates" ] || { echo "no reference source in $REF_SRC (run scripts/fetch-reference-src.sh)" >&2; exit 1; }
gcc -std=c11 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" -I"$ROOT/ffi-tests" "$ROOT/ffi-tests/chat_template_golden.c" \
    -o "$OUT/chat_template_golden" -L"$ROOT/target/release" -lllama -Wl,-rpath,"$ROOT/target/release"
# the same arguments as in ffi-tests/run.sh
LD_LIBRARY_PATH=$REF_LIB "$OUT/chat_template_golden" "$REF_SRC/models/templates" \
    "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$CACHE/models/gemma-3-270m-q4_k_m.gguf" \
    "$CACHE"/vocab/ggml-vocab-{command-r,gemma-4,phi-3,qwen2,qwen35}.gguf \
    2> /dev/null > "$ROOT/ffi-tests/golden/chat_templates.txt"
echo "wrote ffi-tests/golden/chat_templates.txt ($(wc -l < "$ROOT/ffi-tests/golden/chat_templates.txt") lines)"
