#!/usr/bin/env bash
# Runs the C tests of the library: ABI tables, header compilation (C11 and
# C++17, warnings as errors), exported symbols, default parameters and model
# metadata against goldens from the reference library, the boundary and the
# log, the real models, malformed GGUF files (also under valgrind), the
# samplers (seed-for-seed goldens from the reference, the API from C).
#
# usage: ffi-tests/run.sh   (after `cargo build --release --features test-hooks`
#                            and scripts/fetch-models.sh; scripts/test.sh does both)
# Ends with the line "ffi-tests: N passed, M failed".
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${MINFER_SHARED:-$ROOT/../shared}
LIB_DIR=${MINFER_LIB_DIR:-$ROOT/target/release}
OUT=$ROOT/target/ffi-tests
MODELS=${MINFER_CACHE:-$HOME/.cache/minfer}/models
SMOL=$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA=$MODELS/gemma-3-270m-q4_k_m.gguf
mkdir -p "$OUT"

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
not_ok() { fail=$((fail + 1)); echo "FAIL $1"; }

# A C program's own tally line "name: N passed, M failed" adds to ours.
tally() {
    local line n m
    line=$(grep -E '^[a-z_]+: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1)
    if [ -z "$line" ]; then return 1; fi
    n=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
    m=$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')
    echo "     $line"
    [ "$m" = 0 ]
}

CFLAGS=(-std=c11 -Wall -Wextra -Werror -pedantic -g -I"$ROOT/include" -I"$ROOT/ffi-tests")
CXXFLAGS=(-std=c++17 -Wall -Wextra -Werror -pedantic -g -I"$ROOT/include" -I"$ROOT/ffi-tests")
LDFLAGS=(-L"$LIB_DIR" -lllama -Wl,-rpath,"$LIB_DIR")

# compile NAME SOURCE [c|c++]
compile() {
    local name=$1 src=$2 lang=${3:-c}
    if [ "$lang" = c ]; then
        gcc "${CFLAGS[@]}" "$src" -o "$OUT/$name" "${LDFLAGS[@]}" 2> "$OUT/$name.build.log"
    else
        g++ "${CXXFLAGS[@]}" -x c++ "$src" -o "$OUT/$name" "${LDFLAGS[@]}" 2> "$OUT/$name.build.log"
    fi || { cat "$OUT/$name.build.log"; return 1; }
}

# run_prog NAME ARGS... : runs a compiled test, judged by its exit code and tally
run_prog() {
    local name=$1; shift
    if "$OUT/$name" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" && tally "$OUT/$name.out"; then
        ok "$name"
    else
        not_ok "$name"; tail -n 30 "$OUT/$name.err" "$OUT/$name.out"
    fi
}

[ -f "$LIB_DIR/libllama.so" ] || { echo "no $LIB_DIR/libllama.so: build the library first"; exit 1; }

# --- (b) the header alone compiles as C11 and C++17 with warnings as errors
printf '#include "llama.h"\nint main(void) { return 0; }\n' > "$OUT/header_only.c"
if gcc "${CFLAGS[@]}" -fsyntax-only "$OUT/header_only.c" && g++ "${CXXFLAGS[@]}" -fsyntax-only -x c++ "$OUT/header_only.c"; then
    ok "header compiles as C11 and C++17"
else
    not_ok "header compiles as C11 and C++17"
fi

# --- (a) every row of layout.tsv and enums.tsv, compiled as C and as C++
python3 "$ROOT/ffi-tests/gen_abi_check.py" "$SHARED/abi" "$OUT/abi_check.c"
compile abi_check_c "$OUT/abi_check.c" c && run_prog abi_check_c || not_ok "abi_check (C) build"
compile abi_check_cxx "$OUT/abi_check.c" c++ && run_prog abi_check_cxx || not_ok "abi_check (C++) build"

# --- (c) every symbol of symbols.txt is exported and declared in the header
nm -D --defined-only "$LIB_DIR/libllama.so" | awk '{print $3}' | sort > "$OUT/exported.txt"
missing=$(comm -23 <(sort "$SHARED/abi/symbols.txt") "$OUT/exported.txt")
if [ -z "$missing" ]; then ok "all $(wc -l < "$SHARED/abi/symbols.txt") symbols of symbols.txt are exported"; else not_ok "exported symbols (missing: $missing)"; fi
undeclared=""
while read -r sym; do
    grep -Eq "[ *]$sym\(" "$ROOT/include/llama.h" || undeclared="$undeclared $sym"
done < "$SHARED/abi/symbols.txt"
if [ -z "$undeclared" ]; then ok "every symbol is declared in include/llama.h"; else not_ok "undeclared:$undeclared"; fi
extra=$(grep -E '^llama_' "$OUT/exported.txt" | comm -13 <(sort "$SHARED/abi/symbols.txt") -)
if [ -z "$extra" ]; then ok "no llama_* export outside symbols.txt"; else not_ok "unexpected llama_* exports: $extra"; fi

# --- (f) default parameters equal the reference library's
if compile test_params "$ROOT/ffi-tests/test_params.c" && "$OUT/test_params" > "$OUT/test_params.out" \
    && diff -u "$ROOT/ffi-tests/golden/default_params.txt" "$OUT/test_params.out"; then
    ok "default params equal the reference's"
else
    not_ok "default params equal the reference's"
fi

# --- (g) the panic boundary and the log
compile test_panic_log "$ROOT/ffi-tests/test_panic_log.c" && run_prog test_panic_log || not_ok "test_panic_log build"

# --- (d) both real models: metadata as the reference reports it, and the API's conventions
if [ -f "$SMOL" ] && [ -f "$GEMMA" ]; then
    if compile dump_model "$ROOT/ffi-tests/dump_model.c"; then
        for m in "$SMOL" "$GEMMA"; do
            base=$(basename "$m" .gguf)
            for mode in full vocab_only; do
                suffix=""; [ "$mode" = vocab_only ] && suffix=".vocab_only"
                if "$OUT/dump_model" "$m" $([ "$mode" = vocab_only ] && echo vocab_only) > "$OUT/$base$suffix.txt" \
                    && diff -u "$ROOT/ffi-tests/golden/$base$suffix.txt" "$OUT/$base$suffix.txt"; then
                    ok "$base ($mode) reads back as with the reference"
                else
                    not_ok "$base ($mode) reads back as with the reference"
                fi
            done
        done
    else
        not_ok "dump_model build"
    fi
    compile test_models "$ROOT/ffi-tests/test_models.c" && run_prog test_models "$SMOL" "$GEMMA" || not_ok "test_models build"
    if compile test_lifecycle "$ROOT/ffi-tests/test_lifecycle.c"; then
        run_prog test_lifecycle "$SMOL"
        if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            "$OUT/test_lifecycle" "$SMOL" > "$OUT/valgrind_lifecycle.out" 2> "$OUT/valgrind_lifecycle.err"; then
            ok "test_lifecycle under valgrind memcheck: no errors, no leaks"
        else
            not_ok "test_lifecycle under valgrind"; tail -n 40 "$OUT/valgrind_lifecycle.err"
        fi
    else
        not_ok "test_lifecycle build"
    fi
else
    not_ok "models missing (run scripts/fetch-models.sh)"
fi

# --- (e) malformed GGUF files: rejected with a message, clean under valgrind
if [ -f "$ROOT/ffi-tests/test_bad_gguf.c" ]; then
    rm -rf "$OUT/bad_gguf" && mkdir -p "$OUT/bad_gguf"
    python3 "$ROOT/ffi-tests/gen_bad_gguf.py" "$OUT/bad_gguf" > /dev/null
    if compile test_bad_gguf "$ROOT/ffi-tests/test_bad_gguf.c"; then
        run_prog test_bad_gguf "$OUT/bad_gguf"
        if command -v valgrind > /dev/null; then
            if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
                "$OUT/test_bad_gguf" "$OUT/bad_gguf" > "$OUT/valgrind_bad_gguf.out" 2> "$OUT/valgrind_bad_gguf.err"; then
                ok "test_bad_gguf under valgrind memcheck: no errors, no leaks"
            else
                not_ok "test_bad_gguf under valgrind"; tail -n 40 "$OUT/valgrind_bad_gguf.err"
            fi
        else
            not_ok "valgrind is not installed"
        fi
    else
        not_ok "test_bad_gguf build"
    fi
fi

# --- (h) samplers: seed-for-seed parity with the reference (goldens made by
# ffi-tests/gen_sampler_golden.sh with the reference library), the API from
# C (a caller's own sampler, chain semantics, clone/reset/copy, seeds, perf,
# grammar errors, NULL handles), also under valgrind
if compile sampler_golden "$ROOT/ffi-tests/sampler_golden.c"; then
    if "$OUT/sampler_golden" > "$OUT/sampler_chains.txt" \
        && diff -u "$ROOT/ffi-tests/golden/sampler_chains.txt" "$OUT/sampler_chains.txt" > "$OUT/sampler_chains.diff"; then
        ok "sampler chains choose the reference's tokens ($(wc -l < "$OUT/sampler_chains.txt") chain/size/logits cases x 1000 draws)"
    else
        not_ok "sampler chains differ from the reference"; head -n 20 "$OUT/sampler_chains.diff"
    fi
else
    not_ok "sampler_golden build"
fi
# the samplers that read a vocabulary (grammar, DRY breakers, infill) over
# the models' vocabularies; skipped (not counted) while the library has no tokenizer
REF_GRAMMARS=${MINFER_CACHE:-$HOME/.cache/minfer}/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp/grammars
if compile vocab_sampler_golden "$ROOT/ffi-tests/vocab_sampler_golden.c"; then
    if "$OUT/vocab_sampler_golden" "$REF_GRAMMARS" "$SMOL" "$GEMMA" > "$OUT/vocab_samplers.txt" 2> "$OUT/vocab_samplers.err"; then
        if grep -q '^SKIP' "$OUT/vocab_samplers.txt"; then
            echo "skip vocabulary samplers vs the reference: $(head -n 1 "$OUT/vocab_samplers.txt")"
        elif diff -u "$ROOT/ffi-tests/golden/vocab_samplers.txt" "$OUT/vocab_samplers.txt" > "$OUT/vocab_samplers.diff"; then
            ok "grammar, DRY breakers and infill over the models' vocabularies choose the reference's tokens"
        else
            not_ok "vocabulary samplers differ from the reference"; head -n 20 "$OUT/vocab_samplers.diff"
        fi
    else
        not_ok "vocab_sampler_golden failed"; tail -n 20 "$OUT/vocab_samplers.err"
    fi
else
    not_ok "vocab_sampler_golden build"
fi
if compile test_samplers "$ROOT/ffi-tests/test_samplers.c"; then
    run_prog test_samplers "$SMOL"
    if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        "$OUT/test_samplers" "$SMOL" > "$OUT/valgrind_samplers.out" 2> "$OUT/valgrind_samplers.err"; then
        ok "test_samplers under valgrind memcheck: no errors, no leaks"
    else
        not_ok "test_samplers under valgrind"; tail -n 40 "$OUT/valgrind_samplers.err"
    fi
else
    not_ok "test_samplers build"
fi

echo "ffi-tests: $pass passed, $fail failed"
[ "$fail" = 0 ]
