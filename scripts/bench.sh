#!/usr/bin/env bash
# Speed of minfer against the reference library, side by side through the
# same C client (examples-c/bench.c, compiled once against include/llama.h;
# LD_LIBRARY_PATH picks the library). Like llama-bench: pp512 = one
# llama_decode of 512 tokens, tg128 = 128 decodes of one token, in tokens/s.
#
# For every (model, threads) the two libraries run alternately, one process
# each (A B A B …): one warm-up pair (discarded), then PAIRS pairs. Printed:
# the median t/s of each library and the median of the per-pair ratios
# ours/reference, for every (model, test, threads); then, per model, the
# median model load time and the median peak RSS (the process's, with a
# 512-token context) of each library, from the runs at the highest thread count.
#
# A benchmark, not a test: the machine's load moves the absolute numbers, the
# alternation keeps the ratio fair. Not part of scripts/test.sh. Before and
# after the table it prints how much of each model file is in the page cache
# in 2 MiB folios (scripts/pagecache.c), which both libraries' decodes feel.
#
# The last two columns set each cell against the machine's limits, for ours
# and for the reference: a tg cell's weight bytes read per token
# (examples/model_cost) x t/s / the read bandwidth of that many threads
# (scripts/membw.c with huge pages: its best pass, median of 3 runs); a pp
# cell's weight-matrix multiply-adds per token x t/s / (threads x one core's
# int8 multiply-add peak: scripts/pipes.c peak; its AVX2 pair under
# MINFER_NO_VNNI=1).
#
# usage: scripts/bench.sh [MODEL.gguf ...]    (default: the models below, and
#        one model per family of ffi-tests/golden/parity/families.txt)
# env:   PAIRS (5)  THREADS ("1 2")  N_PP (512)  N_TG (128)  REPS (1, runs
#        per process after its own warm-up run)  MINFER_LIB_DIR (target/release)
#        N_DEPTH (0: the tg decodes follow N_DEPTH tokens in the cache, e.g.
#        4096 for a long context; the prompt runs in micro-batches of 512)
#        OUT (target/bench: raw results, one line per run)
#        FAMILIES ("qwen3moe olmoe ...": only those lines of families.txt)
#        BENCH_LOWBIT (1: also TQ1_0, Q1_0, Q2_0 and NVFP4 models)
#        BENCH_REAL (1: only the real-shape models of
#        scripts/real-shape-models.sh, Llama 3.2 1B and Qwen3 1.7B shapes at
#        Q4_K_M, Q8_0, Q4_0; written once, ~7 min)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
OURS=${MINFER_LIB_DIR:-$ROOT/target/release}
REF=$(bash "$ROOT/scripts/install-reference-lib.sh" --print-lib-dir)
PAIRS=${PAIRS:-5}
THREADS=${THREADS:-1 2}
N_PP=${N_PP:-512}
N_TG=${N_TG:-128}
N_DEPTH=${N_DEPTH:-0}
REPS=${REPS:-1}
OUT=${OUT:-$ROOT/target/bench}
mkdir -p "$OUT"

# family_model FAMILY [KEY=N...]: a model of that family at SmolLM2-135M's
# shapes (30 layers, n_embd 576, 9 heads of 64, 3 KV heads, n_ff 1536;
# random weights, SmolLM2's 49152-token vocabulary; a context of 1024) with
# the line's switches of families.txt (fused q/k/v, partial rope, optional
# biases; not its layer count), quantized to Q4_K_M by minfer (the
# reference's bytes), written once into $CACHE/families/
family_model() {
    local dir=$CACHE/families f32 q family=$1 keys=()
    shift
    for k in "$@"; do case $k in layers=*) ;; *) keys+=("$k") ;; esac; done
    f32=$dir/$family.F32.gguf q=$dir/$family.Q4_K_M.gguf
    # (a mixture of experts: 8 experts of 768 rows, 2 per token, unless the
    # line says otherwise)
    case "$family ${keys[*]}" in *moe*|*experts=*|gpt-oss*) keys=(ff_exp=768 "${keys[@]}") ;; esac
    # (olmoe's k norm spans every head, dots1 sizes k and v for every head:
    # as many KV heads as heads)
    case $family in olmoe*|dots1*) keys+=(kv_heads=9) ;; esac
    if [ ! -f "$q" ]; then
        mkdir -p "$dir"
        (cd "$ROOT" && cargo build --release --quiet --example synth_model) >&2
        gcc -O2 -std=c11 -I"$ROOT/include" "$ROOT/ffi-tests/quantize_tool.c" -o "$OUT/quantize_tool" -L"$OURS" -lllama
        "$ROOT/target/release/examples/synth_model" "${family%%+*}" "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$f32" 11 \
            49152 embd=576 layers=30 heads=9 kv_heads=3 head_dim=64 ff=1536 ctx=1024 "${keys[@]}"
        LD_LIBRARY_PATH=$OURS "$OUT/quantize_tool" "$f32" "$q.tmp" 15 > /dev/null && mv "$q.tmp" "$q" && rm -f "$f32"
    fi
    echo "$q"
}

# shaped_model NAME FTYPE [OPTION...]: a llama of SmolLM2-like size with rows
# of 256 (30 layers, n_embd 768, 12 heads of 64, 4 KV heads, n_ff 2048; the
# ternary and 1-2 bit types need whole super-blocks), quantized by minfer
# (the reference's bytes) to llama_ftype FTYPE with quantize_tool's OPTIONs
# (e.g. a tensor type override), written once into $CACHE/families/ (the F32
# model too, shared by the quantizations)
shaped_model() {
    local name=$1 ftype=$2 dir=$CACHE/families f32 q
    shift 2
    f32=$dir/ternary.F32.gguf q=$dir/ternary.$name.gguf
    if [ ! -f "$q" ]; then
        mkdir -p "$dir"
        (cd "$ROOT" && cargo build --release --quiet --example synth_model) >&2
        gcc -O2 -std=c11 -I"$ROOT/include" "$ROOT/ffi-tests/quantize_tool.c" -o "$OUT/quantize_tool" -L"$OURS" -lllama
        [ -f "$f32" ] || "$ROOT/target/release/examples/synth_model" llama "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" \
            "$f32" 11 49152 embd=768 layers=30 heads=12 kv_heads=4 head_dim=64 ff=2048 ctx=1024 > /dev/null
        LD_LIBRARY_PATH=$OURS "$OUT/quantize_tool" "$f32" "$q.tmp" "$ftype" "$@" > /dev/null && mv "$q.tmp" "$q"
    fi
    echo "$q"
}
# ternary_model: that model in TQ2_0
ternary_model() { shaped_model TQ2_0 37; }

# iq_model NAME TYPE: the ternary model's llama shape with every layer
# matrix and the output head random blocks of ggml type TYPE (synth_model
# blocks=T: minfer cannot quantize to the IQ1-IQ3 types yet), written once
# into $CACHE/families/
iq_model() {
    local q=$CACHE/families/iq.$1.gguf
    if [ ! -f "$q" ]; then
        mkdir -p "$CACHE/families"
        (cd "$ROOT" && cargo build --release --quiet --example synth_model) >&2
        "$ROOT/target/release/examples/synth_model" llama "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$q.tmp" 11 \
            49152 embd=768 layers=30 heads=12 kv_heads=4 head_dim=64 ff=2048 ctx=1024 blocks="$2" > /dev/null \
            && mv "$q.tmp" "$q"
    fi
    echo "$q"
}

if [ $# -gt 0 ]; then
    MODELS=("$@")
elif [ "${BENCH_REAL:-0}" = 1 ]; then
    mapfile -t MODELS < <(bash "$ROOT/scripts/real-shape-models.sh")
else
    MODELS=()
    if [ -z "${FAMILIES:-}" ]; then
        MODELS=("$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$CACHE/models/gemma-3-270m-q4_k_m.gguf")
        for q in Q4_0 Q5_0 Q5_1 Q8_0 Q4_K_M Q6_K IQ4_NL F16; do
            MODELS+=("$CACHE/requant/SmolLM2-135M-Instruct.$q.gguf")
        done
        MODELS+=("$(ternary_model)" "$(iq_model IQ2_XXS 16)" "$(iq_model IQ3_S 21)")
        # the other low-bit types on request (BENCH_LOWBIT=1): TQ1_0, Q1_0,
        # Q2_0, and NVFP4 (every layer matrix, by a tensor type override:
        # the reference has no llama_ftype for it; the head and embeddings Q8_0)
        if [ "${BENCH_LOWBIT:-0}" = 1 ]; then
            MODELS+=("$(shaped_model TQ1_0 36)" "$(shaped_model Q1_0 40)" "$(shaped_model Q2_0 41)")
            MODELS+=("$(shaped_model NVFP4 7 'tt=blk\.:40')")
        fi
    fi
    # one row per family of ffi-tests/golden/parity/families.txt (FAMILIES:
    # only those lines, and no other model)
    while read -r family keys; do
        case $family in ''|'#'*) continue ;; esac
        [ -z "${FAMILIES:-}" ] || [[ " $FAMILIES " == *" $family "* ]] || continue
        # shellcheck disable=SC2086
        MODELS+=("$(family_model "$family" $keys)")
    done < "$ROOT/ffi-tests/golden/parity/families.txt"
fi
[ -f "$OURS/libllama.so" ] || { echo "no $OURS/libllama.so: cargo build --release first" >&2; exit 1; }
[ -f "$REF/libllama.so" ] || { echo "no reference library in $REF (scripts/install-reference-lib.sh)" >&2; exit 1; }

gcc -O2 -std=c11 -Wall -Wextra -I"$ROOT/include" "$ROOT/examples-c/bench.c" -o "$OUT/bench" -L"$OURS" -lllama
gcc -O2 -std=c11 -Wall -Wextra "$ROOT/scripts/pagecache.c" -o "$OUT/pagecache"
(cd "$ROOT" && cargo build --release --quiet --example model_cost) >&2

# The machine's limits (x86-64 only: the probes are x86 assembly; elsewhere
# the limit columns read "-"): read bandwidth per thread count, int8 peak.
declare -A BW
PEAK=
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
if [ "$(uname -m)" = x86_64 ]; then
    gcc -O2 -mavx2 -pthread "$ROOT/scripts/membw.c" -o "$OUT/membw"
    gcc -O2 -mavx512f -mavx512vl -mavx512vnni "$ROOT/scripts/pipes.c" -o "$OUT/pipes"
    for t in $THREADS; do
        BW[$t]=$(for _ in 1 2 3; do "$OUT/membw" "$t" huge; done | awk '{print $(NF - 1)}' | median)
        echo "read bandwidth, $t threads (membw, huge pages; the best of 40 passes, median of 3 runs): ${BW[$t]} GB/s"
    done
    peak_line=$("$OUT/pipes" peak ${MINFER_NO_VNNI:+avx2})
    PEAK=${peak_line%% *}
    echo "int8 multiply-add peak: $peak_line"
fi

# Which kernels both libraries run depends on the CPU (AVX-512 or AVX2 only):
# record it with the table.
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores;" \
    "avx512f: $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no)," \
    "avx512_vnni: $(grep -qw avx512_vnni /proc/cpuinfo && echo yes || echo no)"
# The page size the models' cached pages are mapped with moves the decode
# cells (docs/PERFORMANCE.md, "The page cache decides the page size"), and
# neither library controls it: record it with the table.
echo "page cache before the runs:"
"$OUT/pagecache" "${MODELS[@]}" | sed "s|$CACHE/||; s/^/  /"
echo

# run LIB_DIR MODEL THREADS: one bench process; prints "pp tg load_ms rss_kB"
run() {
    local line
    line=$(LD_LIBRARY_PATH=$1 "$OUT/bench" "$2" "$3" "$N_PP" "$N_TG" "$REPS" "$N_DEPTH") || return 1
    # pp512 X t/s  tg128 Y t/s  (threads N, median of R)  load L ms  maxrss M kB
    echo "$line" | awk '{print $2, $5, $(NF-4), $(NF-1)}'
}

RAW=$OUT/raw.txt
: > "$RAW"
# limit LIMIT VALUE: VALUE / LIMIT as a percentage ("-" without a limit)
limit() { awk -v l="$1" -v v="$2" 'BEGIN {if (l > 0) printf "%.0f%%", 100 * v / l; else print "-"}'; }
printf '%-28s %-10s %3s %10s %10s %7s %9s %9s\n' model test thr "ours t/s" "ref t/s" ratio "ours lim" "ref lim"
for model in "${MODELS[@]}"; do
    [ -f "$model" ] || { echo "skip $model (missing)" >&2; continue; }
    name=$(basename "$model" .gguf); name=${name#SmolLM2-135M-Instruct.}
    # (weight bytes per decoded token, weight multiply-adds per prompt token)
    read -r cost_bytes cost_macs <<< "$("$ROOT/target/release/examples/model_cost" "$model")"
    for t in $THREADS; do
        run "$OURS" "$model" "$t" > /dev/null && run "$REF" "$model" "$t" > /dev/null  # warm-up pair
        for ((i = 0; i < PAIRS; i++)); do
            a=$(run "$OURS" "$model" "$t"); b=$(run "$REF" "$model" "$t")
            echo "$name $t $i $a $b" >> "$RAW"
        done
        # raw: name threads pair  pp tg load rss (ours)  pp tg load rss (ref)
        for col in pp tg; do
            c=4; [ $col = tg ] && c=5
            o=$(awk -v n="$name" -v t="$t" -v c=$c '$1 == n && $2 == t {print $c}' "$RAW" | median)
            r=$(awk -v n="$name" -v t="$t" -v c=$((c + 4)) '$1 == n && $2 == t {print $c}' "$RAW" | median)
            q=$(awk -v n="$name" -v t="$t" -v c=$c '$1 == n && $2 == t {print $c / $(c + 4)}' "$RAW" | median)
            label=$col$N_PP lim=
            [ -z "$PEAK" ] || lim=$(awk -v p="$PEAK" -v t="$t" 'BEGIN {print p * t * 1e9}')
            per=$cost_macs
            if [ $col = tg ]; then
                label=$col$N_TG lim=${BW[$t]:+$(awk -v b="${BW[$t]}" 'BEGIN {print b * 1e9}')} per=$cost_bytes
                [ "$N_DEPTH" = 0 ] || label=$label@$N_DEPTH
            fi
            printf '%-28s %-10s %3s %10.1f %10.1f %7.2f %9s %9s\n' "$name" "$label" "$t" "$o" "$r" "$q" \
                "$(limit "${lim:-0}" "$(awk -v a="$per" -v b="$o" 'BEGIN {print a * b}')")" \
                "$(limit "${lim:-0}" "$(awk -v a="$per" -v b="$r" 'BEGIN {print a * b}')")"
        done
    done
done

# load time and peak RSS: medians over the runs at the last thread count
t_last=${THREADS##* }
echo
printf '%-28s %12s %12s %12s %12s\n' model "ours load ms" "ref load ms" "ours RSS MB" "ref RSS MB"
for name in $(awk '{print $1}' "$RAW" | uniq); do
    col() { awk -v n="$name" -v t="$t_last" -v c="$1" '$1 == n && $2 == t {print $c}' "$RAW" | median; }
    echo "$name $(col 6) $(col 10) $(col 7) $(col 11)" |
        awk '{printf "%-28s %12.1f %12.1f %12.1f %12.1f\n", $1, $2, $3, $4 / 1024, $5 / 1024}'
done
echo
echo "page cache after the runs:"
"$OUT/pagecache" "${MODELS[@]}" | sed "s|$CACHE/||; s/^/  /"
echo "raw results: $RAW"
