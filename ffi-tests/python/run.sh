#!/usr/bin/env bash
# llama-cpp-python 0.3.36, unchanged, on a libllama.so: runs
# test_llama_cpp_python.py on the two test models.
#
#   ffi-tests/python/run.sh            check the library in ${MINFER_LIB_DIR:-target/release}
#                                      against golden/llama_cpp_python.json
#   ffi-tests/python/run.sh --record   regenerate the golden with the reference library
#                                      (${MINFER_REF_LIB:-~/.cache/minfer-ref/venv/.../llama_cpp/lib},
#                                      built by scripts/install-reference-lib.sh)
#
# The Python side costs no compilation: the venv of scripts/py-venv.sh holds the
# pure-Python dependencies (numpy, typing-extensions, diskcache, jinja2) and the
# llama_cpp package is the sdist's own directory (scripts/fetch-reference-src.sh),
# put on PYTHONPATH; it loads libllama.so from LLAMA_CPP_LIB_PATH.
# Prints the test's lines and two tallies:
#   llama_cpp_python_behaviour: N passed, M failed
#   llama_cpp_python_vs_reference: N passed, M failed
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
MODELS=$CACHE/models
GOLDEN=$ROOT/ffi-tests/python/golden/llama_cpp_python.json

PY=$(bash "$ROOT/scripts/py-venv.sh")
SDIST=$(bash "$ROOT/scripts/fetch-reference-src.sh" | sed -n 1p)
[ -f "$SDIST/llama_cpp/llama.py" ] || { echo "no llama_cpp package in $SDIST" >&2; exit 1; }

if [ "${1:-}" = --record ]; then
    LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
    mode=(--record)
else
    LIB=${MINFER_LIB_DIR:-$ROOT/target/release}
    mode=()
fi
[ -f "$LIB/libllama.so" ] || { echo "no libllama.so in $LIB" >&2; exit 1; }

# a synthetic LoRA adapter for SmolLM2 (examples/synth_lora.rs: F16, rank 16)
LORA_DIR=$(mktemp -d)
trap 'rm -rf "$LORA_DIR"' EXIT
(cd "$ROOT" && cargo build --release --quiet --example synth_lora)
"$ROOT/target/release/examples/synth_lora" "$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" "$LORA_DIR/smollm2-lora.gguf" \
    type=f16 rank=16 alpha=32 amp=0.05 seed=3 2> /dev/null

LORA_SMOLLM2=$LORA_DIR/smollm2-lora.gguf PYTHONPATH=$SDIST LLAMA_CPP_LIB_PATH=$LIB "$PY" "$ROOT/ffi-tests/python/test_llama_cpp_python.py" \
    "${mode[@]}" "$GOLDEN" "$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" "$MODELS/gemma-3-270m-q4_k_m.gguf"
