#!/usr/bin/env bash
# Runs a cargo-fuzz target (or all four, one after the other) for a given
# time at the lowest priority, and prints the executions and findings.
#
# usage: scripts/fuzz.sh TARGET SECONDS     TARGET: gguf_parse tokenize gbnf decode
#        scripts/fuzz.sh all SECONDS        each target for SECONDS, in turn
#
# Each run: libFuzzer with AddressSanitizer (leaks detected), -rss_limit_mb=2048,
# -timeout=$FUZZ_TIMEOUT (default 20 s per input), stopping at the first
# finding. Inputs found go to fuzz/corpus/TARGET/ (not committed), findings to
# fuzz/artifacts/TARGET/, the log to target/fuzz-logs/TARGET.log; the
# committed seeds are fuzz/seeds/TARGET/. Exit status 1 if anything was found.
# Extra libFuzzer flags can be given in FUZZ_FLAGS.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

TARGETS=(gguf_parse tokenize gbnf decode)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
TIMEOUT=${FUZZ_TIMEOUT:-20}

usage() { echo "usage: $0 {${TARGETS[*]// /|}|all} SECONDS" >&2; exit 2; }
[ $# = 2 ] || usage
what=$1 secs=$2
[[ "$secs" =~ ^[0-9]+$ ]] || usage

# --- tools: cargo-fuzz (stable toolchain; RUSTC_BOOTSTRAP lets it pass its
# nightly flags)
command -v cargo-fuzz > /dev/null || cargo install cargo-fuzz || { echo "could not install cargo-fuzz"; exit 1; }
export RUSTC_BOOTSTRAP=1
# A smaller quarantine than ASan's 256 MB default: the tokenize target keeps
# 21 vocabularies loaded, and the RSS limit counts the quarantine too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=64}

max_len() {
    case $1 in
        gguf_parse) echo 65536 ;;
        decode) echo 1024 ;;
        *) echo 4096 ;;
    esac
}

# The tiny model of the decode and gbnf targets (2 layers, n_embd 64, the
# llama-spm vocabulary cut to 512 tokens).
synth_model() {
    local out=$ROOT/target/fuzz/synth-llama.gguf vocab=$CACHE/vocab/ggml-vocab-llama-spm.gguf
    if [ ! -f "$out" ]; then
        [ -f "$vocab" ] || bash scripts/fetch-reference-src.sh > /dev/null || { echo "no vocab files"; exit 1; }
        nice -n 19 cargo build --release --quiet --features test-hooks --example synth_model || exit 1
        mkdir -p "$(dirname "$out")"
        target/release/examples/synth_model llama "$vocab" "$out" 1 512 || exit 1
    fi
    export MINFER_FUZZ_MODEL=$out
}

# run_one TARGET SECONDS: prints "fuzz TARGET: N executions in S s (limit L s), M findings"
run_one() {
    local t=$1 s=$2 log=$ROOT/target/fuzz-logs/$1.log
    case $t in decode|gbnf) synth_model ;; esac
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t" "$(dirname "$log")"
    nice -n 19 cargo fuzz build "$t" > "$log.build" 2>&1 || { tail -n 30 "$log.build"; echo "fuzz $t: build failed"; return 1; }
    local before t0=$SECONDS
    before=$(ls "fuzz/artifacts/$t")
    # shellcheck disable=SC2086
    nice -n 19 cargo fuzz run "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$s" -rss_limit_mb=2048 -timeout="$TIMEOUT" -max_len="$(max_len "$t")" \
        -print_final_stats=1 ${FUZZ_FLAGS:-} > "$log" 2>&1
    local execs found elapsed=$((SECONDS - t0))
    execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)
    [ -n "$execs" ] || execs=$(sed -nE 's/^#([0-9]+)\t.*/\1/p' "$log" | tail -n 1)
    found=$(comm -13 <(echo "$before") <(ls "fuzz/artifacts/$t"))
    local n=0
    [ -n "$found" ] && n=$(echo "$found" | wc -l)
    echo "fuzz $t: ${execs:-0} executions in $elapsed s (limit $s s), $n findings"
    if [ "$n" -gt 0 ]; then
        echo "$found" | sed "s#^#    fuzz/artifacts/$t/#"
        grep -m 1 -A 12 -E '^==[0-9]+==ERROR|panicked at|^SUMMARY' "$log" | sed 's/^/    /'
        return 1
    fi
}

status=0
if [ "$what" = all ]; then
    for t in "${TARGETS[@]}"; do run_one "$t" "$secs" || status=1; done
else
    [[ " ${TARGETS[*]} " == *" $what "* ]] || usage
    run_one "$what" "$secs" || status=1
fi
exit $status
