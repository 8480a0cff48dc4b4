#!/usr/bin/env bash
# Regenerates ffi-tests/golden/grammar_trace.txt with the reference library's
# grammar internals (see grammar_trace_ref.cpp), and golden/regex_find.txt
# with std::regex (see regex_find_ref.cpp). Needs the reference library
# (scripts/install-reference-lib.sh) and source (scripts/fetch-reference-src.sh).
#
# usage: ffi-tests/gen_grammar_golden.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
REF_SRC=$CACHE/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp
OUT=$ROOT/target/ffi-tests
mkdir -p "$OUT"
g++ -std=c++17 -O1 -I"$REF_SRC/include" -I"$REF_SRC/ggml/include" -I"$REF_SRC/src" "$ROOT/ffi-tests/grammar_trace_ref.cpp" \
    -o "$OUT/grammar_trace_ref" -L"$REF_LIB" -lllama -Wl,-rpath,"$REF_LIB"
"$OUT/grammar_trace_ref" "$REF_SRC/grammars" "$ROOT/ffi-tests/grammar_inputs.txt" "$ROOT/ffi-tests/grammar_malformed.txt" 2> /dev/null > "$ROOT/ffi-tests/golden/grammar_trace.txt"
echo "wrote ffi-tests/golden/grammar_trace.txt ($(wc -l < "$ROOT/ffi-tests/golden/grammar_trace.txt") lines)"
g++ -std=c++17 -O1 "$ROOT/ffi-tests/regex_find_ref.cpp" -o "$OUT/regex_find_ref"
"$OUT/regex_find_ref" "$ROOT/ffi-tests/regex_cases.txt" > "$ROOT/ffi-tests/golden/regex_find.txt"
echo "wrote ffi-tests/golden/regex_find.txt ($(wc -l < "$ROOT/ffi-tests/golden/regex_find.txt") lines)"
