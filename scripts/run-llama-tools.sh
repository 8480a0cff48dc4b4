#!/usr/bin/env bash
# run-llama-tools.sh — llama.cpp's own programs, unchanged, on minfer's libllama.so.
#
#   scripts/run-llama-tools.sh [--build-only]
#
# Builds once (cached in ${MINFER_CACHE:-~/.cache/minfer}/ref-tools; a second run
# compiles nothing) from the reference source (scripts/fetch-reference-src.sh):
#   - llama-completion, llama-bench, llama-perplexity, llama-batched,
#     llama-embedding, llama-server: llama.cpp's CMake targets, built by
#     compat/CMakeLists.txt with minfer's libllama.so in place of llama.cpp's src/
#     (never compiled), ggml from the same source, and libllama-ext.so
#     (compat/llama-ext.cpp: the C++ staging API libllama-common calls);
#   - llama-simple, llama-simple-chat: examples/simple and examples/simple-chat
#     compiled against minfer's include/llama.h and linked to its library.
# Then runs each program with LD_LIBRARY_PATH choosing the library — minfer's
# (${MINFER_LIB_DIR:-target/release}) and, when it is installed, the reference's
# (${MINFER_REF_LIB:-~/.cache/minfer-ref/venv/.../llama_cpp/lib}, with its own
# libggml*) — and prints a table: program, command, result, whether the output
# is identical to the reference library's (n/a when the output holds timings or
# random draws, or without the reference library).
#
# Build: cmake (installed with apt-get when missing), ninja or make, under
# `nice -n 19` with 2 jobs (~MINFER_TOOLS_JOBS). GGML_NATIVE is on (-march=native),
# so the cache belongs to this machine's CPU.
# Exit status: 0 when every program ran correctly on minfer's library (the
# "identical" column is information), 1 otherwise.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
TOOLS=$CACHE/ref-tools
BUILD=$TOOLS/build
BIN=$BUILD/bin
LIB_DIR=${MINFER_LIB_DIR:-$ROOT/target/release}
REF_LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
JOBS=${MINFER_TOOLS_JOBS:-2}
SMOL=$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA=$CACHE/models/gemma-3-270m-q4_k_m.gguf
TARGETS=(llama-completion llama-bench llama-perplexity llama-batched llama-embedding llama-server)
WORK=$ROOT/target/llama-tools
mkdir -p "$WORK"

die() { echo "run-llama-tools.sh: $*" >&2; exit 1; }
[ -f "$LIB_DIR/libllama.so" ] || die "no $LIB_DIR/libllama.so: run cargo build --release first"

# ---------------------------------------------------------------------------
# build (once)

need=()
command -v cmake > /dev/null || need+=(cmake)
command -v g++ > /dev/null || need+=(g++)
command -v ninja > /dev/null || command -v make > /dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" > /dev/null \
        || die "could not install ${need[*]}"
fi
SDIST=$(bash "$ROOT/scripts/fetch-reference-src.sh" | sed -n 1p) || die "could not fetch the reference source"
LLAMA_SRC=$SDIST/vendor/llama.cpp

# copy SRC DST: only when the contents differ, so an unchanged file keeps its
# timestamp and the cached build stays up to date
sync_file() { cmp -s "$1" "$2" || { mkdir -p "$(dirname "$2")" && cp "$1" "$2"; }; }

# The build reads its sources from the cache (so any checkout shares one build):
# compat/ and minfer's llama.h; it links a copy of libllama.so, refreshed only when
# its SONAME or set of exported symbols changes (linking needs those, not the code).
sync_file "$ROOT/compat/CMakeLists.txt" "$TOOLS/src/CMakeLists.txt"
sync_file "$ROOT/compat/llama-ext.cpp" "$TOOLS/src/llama-ext.cpp"
sync_file "$ROOT/include/llama.h" "$TOOLS/src/include/llama.h"
exports() { readelf -d "$1" 2> /dev/null | grep SONAME; nm -D --defined-only "$1" 2> /dev/null | awk '{print $3}' | sort; }
if [ ! -f "$TOOLS/link/libllama.so" ] || ! cmp -s <(exports "$LIB_DIR/libllama.so") <(exports "$TOOLS/link/libllama.so"); then
    mkdir -p "$TOOLS/link" && cp "$LIB_DIR/libllama.so" "$TOOLS/link/libllama.so"
fi
ln -sf libllama.so "$TOOLS/link/libllama.so.0" # its SONAME, for the linker's search of dependencies

if command -v ninja > /dev/null; then generator=(-G Ninja); build_tool=(ninja -j "$JOBS"); else generator=(); build_tool=(make -j "$JOBS"); fi
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    echo "configuring the reference's programs in $BUILD"
    cmake -S "$TOOLS/src" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
        -DLLAMA_SRC="$LLAMA_SRC" -DMINFER_LIB_DIR="$TOOLS/link" -DMINFER_INCLUDE_DIR="$TOOLS/src/include" \
        > "$TOOLS/configure.log" 2>&1 || { tail -n 30 "$TOOLS/configure.log"; die "cmake configure failed"; }
fi
# ninja/make print nothing to rebuild when up to date; a first build takes a while
echo "building ${TARGETS[*]} (nice -n 19, $JOBS jobs; log: $TOOLS/build.log)"
(cd "$BUILD" && nice -n 19 "${build_tool[@]}" llama-ext "${TARGETS[@]}") > "$TOOLS/build.log" 2>&1 \
    || { tail -n 40 "$TOOLS/build.log"; die "build failed"; }

# the two examples that use only llama.h: against minfer's header
for ex in simple simple-chat; do
    src=$LLAMA_SRC/examples/$ex/$ex.cpp
    if [ ! -x "$BIN/llama-$ex" ] || [ "$src" -nt "$BIN/llama-$ex" ] || [ "$ROOT/include/llama.h" -nt "$BIN/llama-$ex" ]; then
        g++ -std=c++17 -O2 -I"$ROOT/include" "$src" -o "$BIN/llama-$ex" -L"$LIB_DIR" -lllama -pthread \
            || die "examples/$ex does not compile against include/llama.h"
    fi
done
[ "${1:-}" = --build-only ] && { echo "built in $BIN"; exit 0; }

# ---------------------------------------------------------------------------
# runs

have_ref=0
[ -f "$REF_LIB/libllama.so" ] && have_ref=1
# lib NAME: the LD_LIBRARY_PATH for minfer's library or the reference's
lib() { if [ "$1" = minfer ]; then echo "$LIB_DIR:$BIN"; else echo "$REF_LIB:$BIN"; fi; }

ROWS=()
failures=0
# row PROGRAM COMMAND RESULT IDENTICAL
row() {
    ROWS+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"$4")
    case "$3" in ok*) ;; *) failures=$((failures + 1)) ;; esac
}
# same FILE_MINFER FILE_REF: the identical column for two outputs
same() {
    if [ $have_ref = 0 ]; then echo "n/a (no reference library)";
    elif cmp -s "$1" "$2"; then echo yes; else echo no; fi
}
# run TAG LIBNAME PROGRAM ARGS... : output in $WORK/TAG.LIBNAME.{out,err}, status returned
run() {
    local tag=$1 which=$2 prog=$3; shift 3
    # (an inner shell reports a crash into the .err file, not onto our output)
    LD_LIBRARY_PATH=$(lib "$which") bash -c 'timeout 600 "$@"; exit $?' _ "$BIN/$prog" "$@" \
        > "$WORK/$tag.$which.out" 2> "$WORK/$tag.$which.err"
}
# both TAG PROGRAM ARGS... : runs on minfer's library, then on the reference's when present
both() {
    local tag=$1; shift
    run "$tag" minfer "$@"; local rc=$?
    if [ $have_ref = 1 ]; then run "$tag" ref "$@"; fi
    return $rc
}
why() { grep -m1 -iE 'error|not implemented|failed|abort' "$WORK/$1.minfer.err" | cut -c1-110; }

PROMPT="The capital of France is"

# --- llama-simple: greedy, 24 tokens (stdout: prompt and generated text)
cmd=(llama-simple -m "$SMOL" -n 24 "$PROMPT")
if both simple "${cmd[@]}" && [ -s "$WORK/simple.minfer.out" ]; then
    row llama-simple "${cmd[*]}" "ok: $(head -c 60 "$WORK/simple.minfer.out" | tr '\n' ' ')" "$(same "$WORK"/simple.{minfer,ref}.out)"
else
    row llama-simple "${cmd[*]}" "FAIL: $(why simple)" -
fi

# --- llama-simple-chat: one user turn on stdin (it samples with a random seed)
cmd=(llama-simple-chat -m "$SMOL" -c 512)
printf 'What is the capital of France?\n' > "$WORK/chat.in"
if LD_LIBRARY_PATH=$(lib minfer) timeout 300 "$BIN/llama-simple-chat" -m "$SMOL" -c 512 < "$WORK/chat.in" \
        > "$WORK/chat.minfer.out" 2> "$WORK/chat.minfer.err" \
    && ! grep -q "failed to apply" "$WORK/chat.minfer.err" && [ "$(wc -c < "$WORK/chat.minfer.out")" -gt 20 ]; then
    row llama-simple-chat "${cmd[*]} < one question" "ok: replied $(wc -c < "$WORK/chat.minfer.out") bytes" "n/a (random seed)"
else
    row llama-simple-chat "${cmd[*]} < one question" "FAIL: $(why chat)" -
fi

# --- llama-completion: greedy and seeded, both models
for m in "$SMOL" "$GEMMA"; do
    name=$(basename "$m" .gguf | cut -d- -f1)
    for mode in greedy seed42; do
        if [ $mode = greedy ]; then samp=(--temp 0); else samp=(--temp 0.8 -s 42); fi
        tag=completion-$name-$mode
        cmd=(llama-completion -m "$m" -p "$PROMPT" -n 24 "${samp[@]}" -no-cnv -c 512 -t 2 --no-warmup)
        if both "$tag" "${cmd[@]}" && [ -s "$WORK/$tag.minfer.out" ]; then
            row llama-completion "${cmd[*]}" "ok: $(head -c 60 "$WORK/$tag.minfer.out" | tr '\n' ' ')" "$(same "$WORK"/$tag.{minfer,ref}.out)"
        else
            row llama-completion "${cmd[*]}" "FAIL: $(why "$tag")" -
        fi
    done
done

# --- llama-batched: 4 sequences in one batch, greedy; with a unified KV cache
# (-kvu), and without: then the reference refuses the first batch (its 4 sequences
# share the prompt's cells: "sequential split is not supported when there are
# coupled sequences"), minfer decodes it
for kvu in -kvu ""; do
    tag=batched${kvu}
    cmd=(llama-batched -m "$SMOL" -p "Hello my name is" -np 4 -n 32 --temp 0 -t 2 $kvu)
    if both "$tag" "${cmd[@]}" && grep -q "sequence 3" "$WORK/$tag.minfer.out"; then
        # the sequences (not the timings)
        for w in minfer ref; do
            [ -f "$WORK/$tag.$w.out" ] && sed -n '/^sequence 0:/,$p' "$WORK/$tag.$w.out" > "$WORK/$tag.$w.seq"
        done
        identical=$(same "$WORK"/$tag.{minfer,ref}.seq)
        if [ $have_ref = 1 ] && grep -q 'llama_decode() failed' "$WORK/$tag.ref.err"; then
            identical="no: the reference fails ($(grep -m1 -oE 'split_equal: [^(]*' "$WORK/$tag.ref.err"))"
        fi
        row llama-batched "${cmd[*]}" "ok: 4 sequences" "$identical"
    else
        row llama-batched "${cmd[*]}" "FAIL: $(why "$tag")" -
    fi
done

# --- llama-embedding: mean pooling, normalized, two inputs, JSON
cmd=(llama-embedding -m "$SMOL" -p "The cat sat on the mat.|Paris is the capital of France." --embd-separator "|"
     --pooling mean --embd-normalize 2 --embd-output-format json -t 2)
if both embedding "${cmd[@]}" && grep -q '"embedding"' "$WORK/embedding.minfer.out"; then
    cos=n/a
    if [ $have_ref = 1 ]; then
        cos=$(python3 - "$WORK/embedding.minfer.out" "$WORK/embedding.ref.out" <<'PY'
import json, math, sys
a, b = (json.load(open(p))["data"] for p in sys.argv[1:3])
def cosine(x, y):
    return sum(p * q for p, q in zip(x, y)) / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y))
print(", ".join(f"{cosine(x['embedding'], y['embedding']):.6f}" for x, y in zip(a, b)))
PY
)
    fi
    row llama-embedding "${cmd[*]}" "ok: 2 vectors, cosine to the reference's: $cos" "$(same "$WORK"/embedding.{minfer,ref}.out)"
else
    row llama-embedding "${cmd[*]}" "FAIL: $(why embedding)" -
fi

# --- llama-perplexity on a fixed text (llama-cpp-python's README), 4 chunks of 128
TEXT=$SDIST/README.md
ppl() { grep -o 'Final estimate: PPL = [0-9.]*' "$1" | awk '{print $NF}'; }
cmd=(llama-perplexity -m "$SMOL" -f README.md -c 128 -b 128 --chunks 4 -t 2)
if both ppl "${cmd[@]/README.md/$TEXT}" && [ -n "$(ppl "$WORK/ppl.minfer.err")" ]; then
    detail="PPL $(ppl "$WORK/ppl.minfer.err")"
    [ $have_ref = 1 ] && detail="$detail (reference $(ppl "$WORK/ppl.ref.err"))"
    # the per-chunk values and the estimate (not the timings)
    for w in minfer ref; do [ -f "$WORK/ppl.$w.err" ] && grep -oE '\[[0-9]+\][0-9.]+|Final estimate.*' "$WORK/ppl.$w.err" > "$WORK/ppl.$w.values"; done
    row llama-perplexity "${cmd[*]}" "ok: $detail" "$(same "$WORK"/ppl.{minfer,ref}.values)"
else
    row llama-perplexity "${cmd[*]}" "FAIL: $(why ppl)" -
fi

# --- llama-perplexity --kl-divergence: minfer's token distributions against a base
# saved by the reference library (without it: by minfer itself, KLD must be 0)
base_lib=ref; [ $have_ref = 1 ] || base_lib=minfer
rm -f "$WORK/kld-base.bin"
cmd=(llama-perplexity -m "$SMOL" -f README.md -c 128 -b 128 --chunks 4 -t 2 --kl-divergence-base kld-base.bin --kl-divergence)
if run kld-base "$base_lib" llama-perplexity -m "$SMOL" -f "$TEXT" -c 128 -b 128 --chunks 4 -t 2 --kl-divergence-base "$WORK/kld-base.bin" \
    && run kld minfer llama-perplexity -m "$SMOL" -f "$TEXT" -c 128 -b 128 --chunks 4 -t 2 --kl-divergence-base "$WORK/kld-base.bin" --kl-divergence \
    && grep -q 'Mean    KLD' "$WORK/kld.minfer.out" "$WORK/kld.minfer.err"; then
    kld=$(cat "$WORK/kld.minfer.out" "$WORK/kld.minfer.err" | grep -m1 'Mean    KLD' | awk '{print $3}')
    top=$(cat "$WORK/kld.minfer.out" "$WORK/kld.minfer.err" | grep -m1 '^Same top p:' | awk '{print $4}')
    row "llama-perplexity --kl-divergence" "${cmd[*]}" "ok: mean KLD $kld, same top $top% (base: $base_lib library)" "n/a (measures the difference)"
else
    row "llama-perplexity --kl-divergence" "${cmd[*]}" "FAIL: $(why kld)" -
fi

# --- llama-bench: prompt processing and generation speed
tps() { awk -F'|' -v t="$2" '$0 ~ t {gsub(/ /, "", $(NF-1)); print $(NF-1)}' "$1" | head -n 1; }
cmd=(llama-bench -m "$SMOL" -p 64 -n 16 -r 2 -t 2 -o md)
if both bench "${cmd[@]}" && [ -n "$(tps "$WORK/bench.minfer.out" pp64)" ]; then
    detail="pp64 $(tps "$WORK/bench.minfer.out" pp64) t/s, tg16 $(tps "$WORK/bench.minfer.out" tg16) t/s"
    [ $have_ref = 1 ] && detail="$detail (reference: pp64 $(tps "$WORK/bench.ref.out" pp64), tg16 $(tps "$WORK/bench.ref.out" tg16))"
    row llama-bench "${cmd[*]}" "ok: $detail" "n/a (timings)"
else
    row llama-bench "${cmd[*]}" "FAIL: $(why bench)" -
fi

# --- llama-server: one completion request on loopback
# serve LIBNAME PORT: starts the server, sends one request, prints the content
serve() {
    local which=$1 port=$2 pid content=""
    LD_LIBRARY_PATH=$(lib "$which") "$BIN/llama-server" -m "$SMOL" --host 127.0.0.1 --port "$port" -c 512 -t 2 -np 1 \
        > "$WORK/server.$which.log" 2>&1 &
    pid=$!
    content=$(python3 - "$port" <<'PY'
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(240):  # up to 120 s for the model to load
    try:
        if urllib.request.urlopen(base + "/health", timeout=2).status == 200:
            break
    except Exception:
        time.sleep(0.5)
else:
    sys.exit("server did not come up")
req = urllib.request.Request(base + "/completion", method="POST", headers={"Content-Type": "application/json"},
    data=json.dumps({"prompt": "The capital of France is", "n_predict": 16, "temperature": 0}).encode())
print(json.load(urllib.request.urlopen(req, timeout=120))["content"])
PY
)
    local rc=$?
    kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
    printf '%s' "$content" > "$WORK/server.$which.out"
    return $rc
}
cmd=(llama-server -m "$SMOL" --host 127.0.0.1 -c 512 -t 2 -np 1 "+ POST /completion n_predict 16 temperature 0")
if serve minfer 18431 && [ -s "$WORK/server.minfer.out" ]; then
    [ $have_ref = 1 ] && serve ref 18432
    row llama-server "${cmd[*]}" "ok: $(head -c 60 "$WORK/server.minfer.out" | tr '\n' ' ')" "$(same "$WORK"/server.{minfer,ref}.out)"
else
    row llama-server "${cmd[*]}" "FAIL: $(grep -m1 -iE 'error|failed' "$WORK/server.minfer.log" | cut -c1-110)" -
fi

# ---------------------------------------------------------------------------
# the table
echo
echo "llama.cpp's programs on minfer's libllama.so (outputs in $WORK)"
printf '| %s | %s | %s | %s |\n' program command result "identical to the reference library's output"
printf '|---|---|---|---|\n'
for r in "${ROWS[@]}"; do
    IFS=$'\t' read -r p c res same_ <<< "$r"
    c=${c//$CACHE\/models\//}
    c=${c//$TEXT/README.md}
    printf '| %s | `%s` | %s | %s |\n' "$p" "$c" "$res" "$same_"
done
echo "llama_tools: $(( ${#ROWS[@]} - failures )) passed, $failures failed"
[ $failures = 0 ]
