#!/usr/bin/env bash
# Remakes ffi-tests/golden/state/ with the reference library: for each
# configuration, the session file the reference saves after decoding the
# first prompt tokens of ffi-tests/state_interop.c (session.bin), and the
# top 10 logits of the 4 tokens it then decodes (top10.txt: one line per
# token, "id:logit" pairs). ffi-tests/run.sh loads these files with minfer
# (no reference needed) and checks them; see ffi-tests/README.md.
#
# Configurations (small on purpose: the K/V rows dominate, 23 KB per token
# on SmolLM2, 18 KB on gemma-3):
#   smollm2         SmolLM2 Q4_1, default context (flash attention AUTO: V rows), 2 tokens
#   smollm2-vtrans  flash attention off (V transposed), 1 token
#   gemma3          gemma-3 270m (non-SWA and SWA caches), 2 tokens
#
# Needs the reference library (scripts/install-reference-lib.sh).
# usage: scripts/make-state-goldens.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=$(bash scripts/install-reference-lib.sh --print-lib-dir)
OUT=target/state-goldens && rm -rf "$OUT" && mkdir -p "$OUT"
GOLD=ffi-tests/golden/state

cargo build --release --quiet
gcc -O2 -std=c11 -Wall -Wextra -Werror -Iinclude -Iffi-tests ffi-tests/state_interop.c -o "$OUT/state_interop" -Ltarget/release -lllama

make_one() { # NAME MODEL ENV...
    local name=$1 model=$2; shift 2
    mkdir -p "$OUT/$name" "$GOLD/$name"
    env "$@" LD_LIBRARY_PATH="$REF_LIB" "$OUT/state_interop" save "$model" "$OUT/$name"
    cp "$OUT/$name/session.bin" "$GOLD/$name/session.bin"
    python3 ffi-tests/state_golden.py top10 "$OUT/$name/direct.logits" > "$GOLD/$name/top10.txt"
    printf '%s\n' "$@" > "$GOLD/$name/env.txt"
}

make_one smollm2 "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" PROMPT_TOKENS=2
make_one smollm2-vtrans "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" PROMPT_TOKENS=1 FA=0
make_one gemma3 "$CACHE/models/gemma-3-270m-q4_k_m.gguf" PROMPT_TOKENS=2
ls -l "$GOLD"/*
