#!/usr/bin/env bash
# Regenerates ffi-tests/golden/misuse.txt: ffi-tests/misuse.c run against the
# reference library (scripts/install-reference-lib.sh installs it;
# scripts/fetch-reference-src.sh fetches its headers) on SmolLM2.
#
# Each line is the reference's answer to one misuse case. Where the reference
# dies (an uncaught exception, a GGML_ASSERT, an out-of-bounds read), there is
# no answer to copy: the line holds minfer's answer (its documented failure
# value) followed by "  [reference: CRASH <signal>]", so that run.sh still
# compares every line and a regression on those cases shows too.
#
# usage: ffi-tests/gen_misuse_golden.sh   (after cargo build --release --features test-hooks)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
REF_SRC=$CACHE/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp
SMOL=$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
OUT=$ROOT/target/ffi-tests
mkdir -p "$OUT"
[ -f "$REF_LIB/libllama.so" ] || { echo "no reference library in $REF_LIB" >&2; exit 1; }
[ -f "$REF_SRC/include/llama.h" ] || { echo "no reference headers in $REF_SRC (run scripts/fetch-reference-src.sh)" >&2; exit 1; }

gcc -std=c11 -O1 -g -Wall -Wno-deprecated-declarations -I"$REF_SRC/include" -I"$REF_SRC/ggml/include" \
    "$ROOT/ffi-tests/misuse.c" -o "$OUT/misuse_ref" -L"$REF_LIB" -lllama -lm -Wl,-rpath,"$REF_LIB"
gcc -std=c11 -O1 -g -Wall -Wno-deprecated-declarations -I"$ROOT/include" \
    "$ROOT/ffi-tests/misuse.c" -o "$OUT/misuse" -L"$ROOT/target/release" -lllama -lm -Wl,-rpath,"$ROOT/target/release"
# GGML_NO_BACKTRACE: the reference's abort handler would otherwise attach gdb to every dying child
GGML_NO_BACKTRACE=1 "$OUT/misuse_ref" "$SMOL" > "$OUT/misuse_ref.txt" 2> /dev/null
"$OUT/misuse" "$SMOL" > "$OUT/misuse_ours.txt" 2> /dev/null

python3 - "$OUT/misuse_ref.txt" "$OUT/misuse_ours.txt" "$ROOT/ffi-tests/golden/misuse.txt" <<'PY'
import sys
ref = [l.rstrip("\n") for l in open(sys.argv[1])]
ours = dict(l.rstrip("\n").split(": ", 1) for l in open(sys.argv[2]))
out = []
for line in ref:
    name, value = line.split(": ", 1)
    if value.startswith(("CRASH", "EXIT")):
        out.append(f"{name}: {ours[name]}  [reference: {value}]")
    else:
        out.append(line)
open(sys.argv[3], "w").write("\n".join(out) + "\n")
crashed = sum("[reference:" in l for l in out)
print(f"wrote ffi-tests/golden/misuse.txt: {len(out)} cases, the reference dies on {crashed}")
PY
