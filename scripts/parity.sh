#!/usr/bin/env bash
# Forward-pass parity with the reference library on the real models: the same
# C client (ffi-tests/parity/logits.c) teacher-forces 512 tokens of varied
# text (the tokenizer goldens' corpus: prose, code, several languages) on
# minfer and on the reference, and compare_logits prints top-1 agreement,
# mean and max KL(reference || minfer) per model.
#
# Models: SmolLM2 Q4_1, Gemma 3 Q4_K_M, and SmolLM2 requantized by the
# reference (llama_model_quantize, allow_requantize) to Q4_0, Q5_0, Q5_1,
# Q8_0, Q4_K_M, Q6_K, IQ4_NL, F16, BF16 (cached under ~/.cache/minfer/requant).
# Needs the reference library: scripts/install-reference-lib.sh.
#
# usage: scripts/parity.sh [MODEL_NAME ...]   (default: all)
#   FLASH_ATTN=0 scripts/parity.sh ...   without flash attention (flash_attn_type
#                                        DISABLED, llama-cpp-python's default;
#                                        default -1: AUTO, on for the CPU)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=$(bash scripts/install-reference-lib.sh --print-lib-dir)
REF_PY=$(echo "$REF_LIB" | sed "s|/lib/python3[^/]*/.*||")/bin/python
OUT=target/parity && mkdir -p "$OUT" "$CACHE/requant"
N_TOK=${N_TOK:-512}
FLASH_ATTN=${FLASH_ATTN:--1}

cargo build --release --quiet
gcc -O2 -std=c11 -Iinclude ffi-tests/parity/logits.c -o "$OUT/logits" -Ltarget/release -lllama -lm
gcc -O2 -std=c11 ffi-tests/parity/compare_logits.c -o "$OUT/compare_logits" -lm
bash scripts/fetch-models.sh > /dev/null
SMOL=$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA=$CACHE/models/gemma-3-270m-q4_k_m.gguf

# token ids: the goldens' ids for (add_special=0, parse_special=0), concatenated
tokens() { # GOLDEN.tsv BOS OUT
    python3 - "$1" "$2" "$N_TOK" > "$3" <<'PY'
import sys
path, bos, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids = [] if bos == "-" else [int(bos)]
for line in open(path):
    c = line.rstrip("\n").split("\t")
    if len(c) >= 5 and c[0].isdigit() and c[1] == "0" and c[2] == "0" and c[4]:
        ids += [int(x) for x in c[4].split(",")]
    if len(ids) >= n:
        break
print(" ".join(map(str, ids[:n])))
PY
}
tokens "$ROOT/ffi-tests/golden/tokenizer/smollm2-135m.tsv" - "$OUT/tokens-smollm2.txt"
tokens "$ROOT/ffi-tests/golden/tokenizer/gemma3-270m.tsv" 2 "$OUT/tokens-gemma3.txt"

# requantize SmolLM2 with the reference (ftype values of llama.h)
declare -A FTYPE=([Q4_0]=2 [Q5_0]=8 [Q5_1]=9 [Q8_0]=7 [Q4_K_M]=15 [Q6_K]=18 [IQ4_NL]=25 [F16]=1 [BF16]=32)
for q in "${!FTYPE[@]}"; do
    f=$CACHE/requant/SmolLM2-135M-Instruct.$q.gguf
    [ -f "$f" ] || "$REF_PY" - "$SMOL" "$f" "${FTYPE[$q]}" <<'PY' > /dev/null 2>&1
import ctypes, sys, llama_cpp
p = llama_cpp.llama_model_quantize_default_params()
p.ftype = int(sys.argv[3]); p.allow_requantize = True
sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p)))
PY
done

run() { # NAME MODEL TOKENS
    local name=$1 model=$2 toks=$3
    LD_LIBRARY_PATH=$REF_LIB "$OUT/logits" "$model" "$toks" "$OUT/$name.ref.bin" 512 2 0 "$FLASH_ATTN" 2> /dev/null
    LD_LIBRARY_PATH=$ROOT/target/release "$OUT/logits" "$model" "$toks" "$OUT/$name.ours.bin" 512 2 0 "$FLASH_ATTN"
    printf '%-22s %s\n' "$name" "$("$OUT/compare_logits" "$OUT/$name.ref.bin" "$OUT/$name.ours.bin" 99.5 1e-5 1e-3 | tr '\n' ' ')"
}
want=("$@")
pick() { [ ${#want[@]} -eq 0 ] || [[ " ${want[*]} " == *" $1 "* ]]; }
pick SmolLM2-Q4_1 && run SmolLM2-Q4_1 "$SMOL" "$OUT/tokens-smollm2.txt" || true
pick Gemma3-Q4_K_M && run Gemma3-Q4_K_M "$GEMMA" "$OUT/tokens-gemma3.txt" || true
for q in Q4_0 Q5_0 Q5_1 Q8_0 Q4_K_M Q6_K IQ4_NL F16 BF16; do
    pick "SmolLM2-$q" && run "SmolLM2-$q" "$CACHE/requant/SmolLM2-135M-Instruct.$q.gguf" "$OUT/tokens-smollm2.txt" || true
done
