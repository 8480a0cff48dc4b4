#!/usr/bin/env bash
# Forward-pass parity on models whose k-quant tensors are all real: synthetic
# random-weight llama and qwen3 models with rows of 256 (examples/synth_model.rs),
# quantized by the reference library (llama_model_quantize, `pure`, so every
# weight matrix has the named type) to Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and
# IQ4_XS. The same C client (ffi-tests/parity/logits.c) teacher-forces 512
# pseudo-random token ids (of the models' 512-token vocabulary) on minfer and
# on the reference,
# with flash attention on (the default) and off; compare_logits prints top-1
# agreement, mean and max KL(reference || minfer) and the largest difference.
#
# Needs the reference library (scripts/install-reference-lib.sh) and the
# vocab files (scripts/fetch-reference-src.sh).
# usage: scripts/parity-kquant-synth.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=$(bash scripts/install-reference-lib.sh --print-lib-dir)
OUT=target/parity-kquant && mkdir -p "$OUT"
VOCAB=$CACHE/vocab
[ -f "$VOCAB/ggml-vocab-qwen2.gguf" ] || bash scripts/fetch-reference-src.sh > /dev/null

cargo build --release --quiet --features test-hooks --example synth_model
gcc -O2 -std=c11 -Iinclude ffi-tests/parity/logits.c -o "$OUT/logits" -Ltarget/release -lllama -lm
gcc -O2 -std=c11 ffi-tests/parity/compare_logits.c -o "$OUT/compare_logits" -lm
gcc -O2 -std=c11 -Wall -Wextra -Werror -Iinclude ffi-tests/quantize_tool.c -o "$OUT/quantize_tool" -Ltarget/release -lllama

target/release/examples/synth_model llama "$VOCAB/ggml-vocab-llama-spm.gguf" "$OUT/llama256.gguf" 7 512 \
    embd=256 layers=4 heads=4 kv_heads=1 head_dim=64 ff=512
target/release/examples/synth_model qwen3 "$VOCAB/ggml-vocab-qwen2.gguf" "$OUT/qwen3-256.gguf" 7 512 \
    embd=256 layers=4 heads=4 kv_heads=2 head_dim=64 ff=768
# 512 token ids from a fixed linear congruential sequence
awk 'BEGIN { x = 12345; for (i = 0; i < 512; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%d\n", int(x / 65536) % 512 } }' > "$OUT/tokens.txt"
# llama_ftype values: Q2_K 10, Q3_K_M 12, Q4_K_M 15, Q5_K_M 17, Q6_K 18, IQ4_XS 30
declare -A FTYPE=([Q2_K]=10 [Q3_K]=12 [Q4_K]=15 [Q5_K]=17 [Q6_K]=18 [IQ4_XS]=30)
fails=0
for model in llama256 qwen3-256; do
    for q in Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS; do
        f=$OUT/$model.$q.gguf
        LD_LIBRARY_PATH=$REF_LIB "$OUT/quantize_tool" "$OUT/$model.gguf" "$f" "${FTYPE[$q]}" pure > /dev/null 2>&1
        for fa in -1 0; do
            LD_LIBRARY_PATH=$REF_LIB "$OUT/logits" "$f" "$OUT/tokens.txt" "$OUT/ref.bin" 512 2 0 "$fa" 2> /dev/null
            LD_LIBRARY_PATH=target/release "$OUT/logits" "$f" "$OUT/tokens.txt" "$OUT/ours.bin" 512 2 0 "$fa" 2> /dev/null
            label="$model $q flash_attn=$fa"
            if res=$("$OUT/compare_logits" "$OUT/ref.bin" "$OUT/ours.bin" 99.5 1e-5 1e-3); then :; else fails=$((fails + 1)); fi
            printf '%-34s %s\n' "$label" "$(echo "$res" | tr '\n' ' ')"
        done
    done
done
echo "parity-kquant-synth: $fails outside the bounds"
[ $fails = 0 ]
