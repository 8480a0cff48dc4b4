#!/usr/bin/env bash
# Embedding throughput of minfer against the reference library, side by side
# through the same C client (examples-c/bench_embed.c, compiled once against
# include/llama.h; LD_LIBRARY_PATH picks the library): one llama_decode of
# N_SEQ sequences of N_TOK tokens in an embeddings context (pooling POOLING),
# in sequences/s.
#
# For every (model, threads) the two libraries run alternately, one process
# each (A B A B …): one warm-up pair (discarded), then PAIRS pairs. Printed:
# the median sequences/s of each library and the median of the per-pair
# ratios ours/reference. Each process reports the median of REPS decodes
# after its own warm-up decode.
#
# A benchmark, not a test (like scripts/bench.sh): the machine's load moves
# the absolute numbers, the alternation keeps the ratio fair. Not part of
# scripts/test.sh.
#
# usage: scripts/bench-embed.sh [MODEL.gguf ...]   (default: all-MiniLM-L6-v2
#        F32 (scripts/fetch-minilm.sh) and SmolLM2-135M-Instruct Q4_1)
# env:   PAIRS (5)  THREADS ("1 2")  N_SEQ (16)  N_TOK (128)  REPS (5)
#        POOLING (1: mean)  MINFER_LIB_DIR (target/release)
#        OUT (target/bench: raw results in embed-raw.txt, one line per pair)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
OURS=${MINFER_LIB_DIR:-$ROOT/target/release}
REF=$(bash "$ROOT/scripts/install-reference-lib.sh" --print-lib-dir)
PAIRS=${PAIRS:-5}
THREADS=${THREADS:-1 2}
N_SEQ=${N_SEQ:-16}
N_TOK=${N_TOK:-128}
REPS=${REPS:-5}
POOLING=${POOLING:-1}
OUT=${OUT:-$ROOT/target/bench}
mkdir -p "$OUT"

if [ $# -gt 0 ]; then
    MODELS=("$@")
else
    MODELS=("$CACHE/models/all-MiniLM-L6-v2.f32.gguf" "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf")
fi
[ -f "$OURS/libllama.so" ] || { echo "no $OURS/libllama.so: cargo build --release first" >&2; exit 1; }
[ -f "$REF/libllama.so" ] || { echo "no reference library in $REF (scripts/install-reference-lib.sh)" >&2; exit 1; }

gcc -O2 -std=c11 -Wall -Wextra -I"$ROOT/include" "$ROOT/examples-c/bench_embed.c" -o "$OUT/bench_embed" -L"$OURS" -lllama

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores;" \
    "avx512f: $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no)"
echo "batch: $N_SEQ sequences of $N_TOK tokens, pooling $POOLING, median of $REPS decodes per process, $PAIRS pairs"

# run LIB_DIR MODEL THREADS: one bench_embed process; prints its sequences/s
run() {
    local line
    line=$(LD_LIBRARY_PATH=$1 "$OUT/bench_embed" "$2" "$3" "$N_SEQ" "$N_TOK" "$REPS" "$POOLING") || return 1
    # embed n_seq=16 n_tok=128 threads=2 seqs_per_s=S tokens_per_s=T
    echo "$line" | sed -E 's/.*seqs_per_s=([^ ]+).*/\1/'
}

# median of the numbers on stdin
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

RAW=$OUT/embed-raw.txt
: > "$RAW"
printf '%-28s %3s %12s %12s %7s\n' model thr "ours seq/s" "ref seq/s" ratio
for model in "${MODELS[@]}"; do
    [ -f "$model" ] || { echo "skip $model (missing)" >&2; continue; }
    name=$(basename "$model" .gguf)
    for t in $THREADS; do
        run "$OURS" "$model" "$t" > /dev/null && run "$REF" "$model" "$t" > /dev/null  # warm-up pair
        for ((i = 0; i < PAIRS; i++)); do
            a=$(run "$OURS" "$model" "$t"); b=$(run "$REF" "$model" "$t")
            echo "$name $t $i $a $b" >> "$RAW"
        done
        # raw: name threads pair ours ref
        o=$(awk -v n="$name" -v t="$t" '$1 == n && $2 == t {print $4}' "$RAW" | median)
        r=$(awk -v n="$name" -v t="$t" '$1 == n && $2 == t {print $5}' "$RAW" | median)
        q=$(awk -v n="$name" -v t="$t" '$1 == n && $2 == t {print $4 / $5}' "$RAW" | median)
        printf '%-28s %3s %12.2f %12.2f %7.2f\n' "$name" "$t" "$o" "$r" "$q"
    done
done
echo "raw results: $RAW"
