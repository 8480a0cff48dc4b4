#!/usr/bin/env bash
# Runs the C tests of the library against goldens from the reference library,
# in named groups (each function group_NAME below; `run.sh --list` lists them):
#   abi        the header compiles as C11 and C++17 (warnings as errors), every
#              row of the ABI tables (ffi-tests/golden/abi/), exported symbols,
#              default parameters
#   boundary   the panic boundary and the log, version strings, every export
#              called with NULL arguments
#   models     both real models: metadata, lifecycle, threads, API misuse
#   parity     logits bit-identical to the reference (synthetic models, SmolLM2,
#              Gemma 3), invariant in threads, n_ubatch and chunking
#   bad_gguf   malformed GGUF files (also under valgrind)
#   vocab      the vocab C API and every vocab getter
#   tokenizer  the tokenizer goldens of 21 vocabularies, random-input digests
#   samplers   samplers and generation, seed for seed
#   bindings   the installed library (pkg-config, shared and static), the Go
#              binding, the Swift module map
#   chat       chat templates
#   examples   the C examples on SmolLM2
#   quantize   split models, quantization and saving (the reference's bytes)
#   ext        libllama-ext (compat/llama-ext.cpp)
#   python     llama-cpp-python 0.3.36, unchanged
#   state      state and session files (the reference's goldens)
#
# usage: ffi-tests/run.sh [GROUP...]   (all groups without arguments; after
#        `cargo build --release --features test-hooks`, scripts/fetch-models.sh
#        and scripts/fetch-reference-src.sh: scripts/test.sh does all three)
#        ffi-tests/run.sh --list
# Ends with the line "ffi-tests: N passed, M failed, K skipped".
#
# MINFER_LIB_DIR: the libllama.so to test (default target/release).
# MINFER_SANITIZE=address|thread: compile every C test with -fsanitize=...
# (against a library built with the same sanitizer: scripts/asan.sh); the
# valgrind reruns are skipped then (a sanitized program cannot run under it).
set -uo pipefail

if [ "${1:-}" = --list ]; then
    sed -nE 's/^group_([a-z_]+)\(\) \{ # (.*)/\1\t\2/p' "$0"
    exit 0
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GOLDEN=$ROOT/ffi-tests/golden
LIB_DIR=${MINFER_LIB_DIR:-$ROOT/target/release}
OUT=$ROOT/target/ffi-tests
MODELS=${MINFER_CACHE:-$HOME/.cache/minfer}/models
SMOL=$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA=$MODELS/gemma-3-270m-q4_k_m.gguf
VOCAB=${MINFER_CACHE:-$HOME/.cache/minfer}/vocab
PAR=$ROOT/ffi-tests/golden/parity
# the file types (llama_ftype) of the mixture-of-experts block-type check
# the IQ1-IQ3 types as NAME:ggml_type (random blocks: synth_model blocks=T)
IQ_TYPES="IQ2_XXS:16 IQ2_XS:17 IQ2_S:22 IQ3_XXS:18 IQ3_S:21 IQ1_S:19 IQ1_M:29"
MOE_TYPES="F16:1 BF16:32 Q4_0:2 Q4_1:3 Q5_0:8 Q5_1:9 Q8_0:7 Q2_K:10 Q3_K_M:12 Q5_K_M:17 Q6_K:18 IQ4_NL:25 IQ4_XS:30 MXFP4_MOE:38 TQ1_0:36 TQ2_0:37 Q1_0:40 Q2_0:41"
mkdir -p "$OUT"

pass=0
fail=0
skipped=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
not_ok() { fail=$((fail + 1)); echo "FAIL $1"; }
skip() { skipped=$((skipped + 1)); echo "skip $1"; }

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

SANITIZE=${MINFER_SANITIZE:-}
SANFLAGS=()
[ -n "$SANITIZE" ] && SANFLAGS=(-fsanitize="$SANITIZE" -fno-omit-frame-pointer)
CFLAGS=(-std=c11 -Wall -Wextra -Werror -pedantic -g -I"$ROOT/include" -I"$ROOT/ffi-tests" "${SANFLAGS[@]}")
CXXFLAGS=(-std=c++17 -Wall -Wextra -Werror -pedantic -g -I"$ROOT/include" -I"$ROOT/ffi-tests" "${SANFLAGS[@]}")
LDFLAGS=("${SANFLAGS[@]}" -L"$LIB_DIR" -lllama -Wl,-rpath,"$LIB_DIR" -lm)

# under_valgrind NAME ARGS... : reruns a compiled test under memcheck; any
# invalid access or definite/indirect leak fails it
under_valgrind() {
    local name=$1; shift
    if [ -n "$SANITIZE" ]; then
        skip "$name under valgrind (built with -fsanitize=$SANITIZE)"
        return
    fi
    if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        "$OUT/$name" "$@" > "$OUT/valgrind_$name.out" 2> "$OUT/valgrind_$name.err"; then
        ok "$name under valgrind memcheck: no errors, no leaks"
    else
        not_ok "$name under valgrind"; tail -n 40 "$OUT/valgrind_$name.err"
    fi
}

# unsanitized WHAT: true, except with MINFER_SANITIZE, where it prints a skip
# line and is false (for checks that build or load the library without the
# sanitizer runtime: install.sh, cgo, clang modules, Python, quantize-compare.sh)
unsanitized() {
    [ -z "$SANITIZE" ] && return 0
    skip "$1 (it links or loads the library without the -fsanitize=$SANITIZE runtime)"
    return 1
}

# compile NAME SOURCE [c|c++]
compile() {
    local name=$1 src=$2 lang=${3:-c}
    if [ "$lang" = c ]; then
        gcc "${CFLAGS[@]}" "$src" -o "$OUT/$name" "${LDFLAGS[@]}" 2> "$OUT/$name.build.log"
    else
        g++ "${CXXFLAGS[@]}" -x c++ "$src" -o "$OUT/$name" "${LDFLAGS[@]}" 2> "$OUT/$name.build.log"
    fi || { cat "$OUT/$name.build.log"; return 1; }
}

# relay LABEL EXIT_CODE FILE : counts the "ok ..." / "FAIL ..." lines a test
# script wrote; a failed exit without a FAIL line, or no line at all, fails too
relay() {
    local label=$1 rc=$2 file=$3 status what n=0 n_fail=0
    while read -r status what; do
        n=$((n + 1))
        if [ "$status" = ok ]; then ok "$label: $what"; else n_fail=$((n_fail + 1)); not_ok "$label: $what"; fi
    done < <(grep -E '^(ok|FAIL) ' "$file")
    if [ "$n" = 0 ] || { [ "$rc" != 0 ] && [ "$n_fail" = 0 ]; }; then
        not_ok "$label: exit code $rc after $n checks"; tail -n 20 "$file"
    fi
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

# parity_tools: builds the logits dumper, its comparer and the synthetic-model
# writer (once per run)
parity_tools() {
    [ -x "$OUT/logits" ] && [ -x "$OUT/compare_logits" ] && [ -n "${SYNTH_BUILT:-}" ] && return 0
    gcc -O2 -std=c11 -Wall -Wextra -Werror -I"$ROOT/include" "$ROOT/ffi-tests/parity/logits.c" -o "$OUT/logits" "${LDFLAGS[@]}" \
        && gcc -O2 -std=c11 -Wall -Wextra -Werror "$ROOT/ffi-tests/parity/compare_logits.c" -o "$OUT/compare_logits" -lm \
        && (cd "$ROOT" && cargo build --release --quiet --example synth_model --example synth_lora) && SYNTH_BUILT=1
}

# make_synth ARCH [NAME KEY=N...]: writes $OUT/synth-NAME.gguf (NAME: ARCH by
# default; random F32 weights, seed 11, a reference vocab cut to 512 tokens;
# KEY=N: the sizes examples/synth_model.rs takes) with examples/synth_model.rs
make_synth() {
    local arch=$1 name=${2:-$1} vocab=llama-spm
    shift $(($# < 2 ? $# : 2))
    case $arch in qwen*) vocab=qwen2 ;; esac
    "$ROOT/target/release/examples/synth_model" "$arch" "$VOCAB/ggml-vocab-$vocab.gguf" "$OUT/synth-$name.gguf" 11 512 "$@"
}

# family_parity FAMILY [KEY=N...]: the checks of one line of
# golden/parity/families.txt (needs parity_tools and quantize_tool)
family_parity() {
    local family=$1 arch=${1%%+*} gold=$PAR/synth-$1.sha256 q want got ub64=()
    shift
    if [ ! -f "$gold" ]; then
        not_ok "synthetic $family: no $gold (scripts/make-parity-goldens.sh)"; return
    fi
    make_synth "$arch" "fam-$family" "$@"
    # (mixture-of-experts lines: also in ubatches of 64)
    grep -q ' f32-ubatch-64$' "$gold" && ub64=("64 2 512 f32-ubatch-64")
    if logits_hash_ok "$OUT/synth-fam-$family.gguf" "$PAR/tokens512.txt" "$gold" \
        "512 2 512 f32-one-decode" "512 1 512 f32-one-decode" "512 2 7 f32-chunks-of-7" "${ub64[@]}"; then
        ok "synthetic $family (F32) logits bit-identical to the reference (1/2 threads, chunks of 7${ub64:+, ubatches of 64})"
    else
        not_ok "synthetic $family (F32) logits bit-identical to the reference"
    fi
    # the same tokens given as embeddings (llama_batch.embd: rows of token_embd)
    want=$(awk '$2 == "f32-embd-input" {print $1}' "$gold")
    if { [ -x "$OUT/embd_logits" ] || compile embd_logits "$ROOT/ffi-tests/parity/embd_logits.c"; } \
        && "$OUT/embd_logits" "$OUT/synth-fam-$family.gguf" "$PAR/tokens512.txt" "$OUT/fam-embd.bin" 2> /dev/null \
        && [ -n "$want" ] && [ "$(sha256sum "$OUT/fam-embd.bin" | cut -d' ' -f1)" = "$want" ]; then
        ok "synthetic $family (F32), tokens given as embeddings: logits bit-identical to the reference"
    else
        not_ok "synthetic $family (F32), tokens given as embeddings: logits differ from the reference's"
    fi
    make_synth "$arch" "fam-$family-256" "$@" embd=256 ff=512 head_dim=64
    for q in "15 q4_k_m" "1 f16"; do
        set -- $q
        "$OUT/quantize_tool" "$OUT/synth-fam-$family-256.gguf" "$OUT/fam-$family-$2.gguf" "$1" > /dev/null 2>&1
        want=$(awk -v l="$2-model" '$2 == l {print $1}' "$gold")
        got=$(sha256sum "$OUT/fam-$family-$2.gguf" 2> /dev/null | cut -d' ' -f1)
        [ ${#ub64[@]} = 0 ] || ub64=("64 2 512 $2-ubatch-64")
        if [ -n "$want" ] && [ "$got" = "$want" ] && logits_hash_ok "$OUT/fam-$family-$2.gguf" "$PAR/tokens512.txt" "$gold" \
            "512 2 512 $2-one-decode" "512 1 512 $2-one-decode" "512 2 7 $2-chunks-of-7" "${ub64[@]}"; then
            ok "synthetic $family quantized to ${2^^} by minfer: the reference's bytes, logits bit-identical to the reference (1/2 threads, chunks of 7${ub64:+, ubatches of 64})"
        else
            not_ok "synthetic $family ${2^^}: file sha256 $got (want $want) or its logits"
        fi
    done
    if compile dump_model "$ROOT/ffi-tests/dump_model.c" \
        && "$OUT/dump_model" "$OUT/fam-$family-q4_k_m.gguf" > "$OUT/fam-$family.model.txt" 2> /dev/null \
        && diff -u "$PAR/synth-$family.model.txt" "$OUT/fam-$family.model.txt"; then
        ok "synthetic $family: description, rope type, sizes and metadata as the reference reports them"
    else
        not_ok "synthetic $family: model queries differ from the reference's"
    fi
    if compile simple "$ROOT/examples-c/simple.c" \
        && "$OUT/simple" "$OUT/fam-$family-q4_k_m.gguf" -n 32 --ids "The capital of France is" > "$OUT/fam-$family.greedy.txt" 2> /dev/null \
        && diff -u "$PAR/synth-$family.greedy.txt" "$OUT/fam-$family.greedy.txt"; then
        ok "synthetic $family (Q4_K_M): 32 greedy tokens equal the reference's"
    else
        not_ok "synthetic $family (Q4_K_M): greedy tokens differ from the reference's"
    fi
}

# family_q4_k_m FAMILY [KEY=N...]: $OUT/fam-FAMILY-q4_k_m.gguf as family_parity
# makes it (for the groups that run without it)
family_q4_k_m() {
    local family=$1
    shift
    [ -f "$OUT/fam-$family-q4_k_m.gguf" ] && return 0
    parity_tools && { [ -x "$OUT/quantize_tool" ] || compile quantize_tool "$ROOT/ffi-tests/quantize_tool.c"; } \
        && make_synth "${family%%+*}" "fam-$family-256" "$@" embd=256 ff=512 head_dim=64 \
        && "$OUT/quantize_tool" "$OUT/synth-fam-$family-256.gguf" "$OUT/fam-$family-q4_k_m.gguf" 15 > /dev/null 2>&1
}

# logits_hash_ok MODEL TOKENS SHA_FILE "N_UBATCH THREADS CHUNK LABEL [FLASH_ATTN]"...:
# every run's logits hash to the sha256 SHA_FILE lists for LABEL
# (FLASH_ATTN: flash_attn_type, default -1 AUTO = flash attention on)
logits_hash_ok() {
    local model=$1 tok=$2 shas=$3 all=1 run want got
    shift 3
    for run in "$@"; do
        set -- $run
        want=$(awk -v l="$4" '$2 == l {print $1}' "$shas")
        "$OUT/logits" "$model" "$tok" "$OUT/hash-logits.bin" "$1" "$2" "$3" "${5:--1}" 2> /dev/null || all=0
        got=$(sha256sum "$OUT/hash-logits.bin" | cut -d' ' -f1)
        [ -n "$want" ] && [ "$got" = "$want" ] \
            || { all=0; echo "     n_ubatch $1, threads $2, chunks of $3, flash_attn_type ${5:--1}: sha256 $got, want $want"; }
    done
    [ $all = 1 ]
}


group_abi() { # the header compiles as C11/C++17; ABI tables, exported symbols, default params
    # --- (b) the header alone (included twice) compiles as C11 and C++17 with warnings as errors
    printf '#include "llama.h"\n#include "llama.h"\nint main(void) { return 0; }\n' > "$OUT/header_only.c"
    if gcc "${CFLAGS[@]}" -fsyntax-only "$OUT/header_only.c" && g++ "${CXXFLAGS[@]}" -fsyntax-only -x c++ "$OUT/header_only.c"; then
        ok "header compiles as C11 and C++17 (included twice)"
    else
        not_ok "header compiles as C11 and C++17 (included twice)"
    fi
    # ggml's GGML_ASSERT/GGML_ABORT, which programs reach through llama.h: message, then abort
    printf '#include "llama.h"\nint main(int argc, char **argv) { (void)argv; GGML_ASSERT(argc > 0); if (argc < 3) GGML_ABORT("stop %%d", argc); return 0; }\n' > "$OUT/ggml_abort.c"
    if compile ggml_abort "$OUT/ggml_abort.c"; then
        # (an inner shell takes the abort, so ours prints no "Aborted" notice)
        rc=$(bash -c '"$1" > /dev/null 2> "$2"; echo $?' _ "$OUT/ggml_abort" "$OUT/ggml_abort.err" 2> /dev/null)
        if [ $rc = 134 ] && grep -q 'ggml_abort.c:2: stop 1' "$OUT/ggml_abort.err"; then
            ok "GGML_ASSERT/GGML_ABORT from llama.h: file, line and message, then abort"
        else
            not_ok "GGML_ABORT from llama.h (exit $rc: $(cat "$OUT/ggml_abort.err"))"
        fi
    else
        not_ok "GGML_ASSERT/GGML_ABORT from llama.h do not compile"
    fi

    # --- (a) every row of layout.tsv and enums.tsv, compiled as C and as C++
    python3 "$ROOT/ffi-tests/gen_abi_check.py" "$GOLDEN/abi" "$OUT/abi_check.c"
    compile abi_check_c "$OUT/abi_check.c" c && run_prog abi_check_c || not_ok "abi_check (C) build"
    compile abi_check_cxx "$OUT/abi_check.c" c++ && run_prog abi_check_cxx || not_ok "abi_check (C++) build"

    # the committed tables are the reference's: regenerated from its headers
    # (the sdist's llama.h, ggml.h, ggml-cpu.h) they come out the same
    local ref_src=${MINFER_CACHE:-$HOME/.cache/minfer}/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp
    if [ ! -f "$ref_src/include/llama.h" ]; then
        not_ok "ABI tables from the reference headers: no $ref_src (run scripts/fetch-reference-src.sh)"
    elif python3 "$ROOT/ffi-tests/gen_abi_tables.py" "$ref_src" "$OUT/abi-from-ref" 2> "$OUT/abi-from-ref.err" \
        && cmp -s "$OUT/abi-from-ref/layout.tsv" "$GOLDEN/abi/layout.tsv" \
        && cmp -s "$OUT/abi-from-ref/enums.tsv" "$GOLDEN/abi/enums.tsv"; then
        ok "golden/abi/layout.tsv and enums.tsv equal the tables regenerated from the reference headers"
    else
        not_ok "golden/abi tables against the reference headers"; cat "$OUT/abi-from-ref.err"
        diff "$GOLDEN/abi/layout.tsv" "$OUT/abi-from-ref/layout.tsv" | head -n 10
        diff "$GOLDEN/abi/enums.tsv" "$OUT/abi-from-ref/enums.tsv" | head -n 10
    fi

    # --- (c) every symbol of symbols.txt is exported and declared in the header
    nm -D --defined-only "$LIB_DIR/libllama.so" | awk '{print $3}' | sort > "$OUT/exported.txt"
    missing=$(comm -23 <(sort "$GOLDEN/abi/symbols.txt") "$OUT/exported.txt")
    if [ -z "$missing" ]; then ok "all $(wc -l < "$GOLDEN/abi/symbols.txt") symbols of symbols.txt are exported"; else not_ok "exported symbols (missing: $missing)"; fi
    undeclared=""
    while read -r sym; do
        grep -Eq "[ *]$sym\(" "$ROOT/include/llama.h" || undeclared="$undeclared $sym"
    done < "$GOLDEN/abi/symbols.txt"
    if [ -z "$undeclared" ]; then ok "every symbol is declared in include/llama.h"; else not_ok "undeclared:$undeclared"; fi
    extra=$(grep -E '^llama_' "$OUT/exported.txt" | comm -13 <(sort "$GOLDEN/abi/symbols.txt") -)
    if [ -z "$extra" ]; then ok "no llama_* export outside symbols.txt"; else not_ok "unexpected llama_* exports: $extra"; fi

    # --- (f) default parameters equal the reference library's
    if compile test_params "$ROOT/ffi-tests/test_params.c" && "$OUT/test_params" > "$OUT/test_params.out" \
        && diff -u "$ROOT/ffi-tests/golden/default_params.txt" "$OUT/test_params.out"; then
        ok "default params and llama_split_path/_prefix results equal the reference's"
    else
        not_ok "default params and llama_split_path/_prefix results equal the reference's"
    fi
}

group_boundary() { # the panic boundary and the log, version strings, every export called with NULL
    # --- (g) the panic boundary and the log
    compile test_panic_log "$ROOT/ffi-tests/test_panic_log.c" && run_prog test_panic_log || not_ok "test_panic_log build"

    # --- the version strings: llama_version() and llama_print_system_info() name
    # minfer's version (Cargo.toml's); the listed SIMD features match /proc/cpuinfo
    VERSION=$(bash "$ROOT/scripts/version.sh")
    compile test_version "$ROOT/ffi-tests/test_version.c" && run_prog test_version "$VERSION" || not_ok "test_version build"

    # --- every exported function called with NULL / zero arguments survives
    python3 "$ROOT/ffi-tests/gen_null_calls.py" "$ROOT/include/llama.h" "$OUT/null_calls.c"
    if compile null_calls "$OUT/null_calls.c"; then
        run_prog null_calls
        under_valgrind null_calls
    else
        not_ok "null_calls build"
    fi
}

group_models() { # the real models: metadata, lifecycle, threads, API misuse
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
            under_valgrind test_lifecycle "$SMOL"
        else
            not_ok "test_lifecycle build"
        fi
        # concurrency: 4 contexts on 4 threads sharing the model (bit-identical to
        # alone), log callback swaps, the model freed while they run, backend
        # init/free from several threads, an abort raised from another thread
        if gcc "${CFLAGS[@]}" -pthread "$ROOT/ffi-tests/test_threads.c" -o "$OUT/test_threads" "${LDFLAGS[@]}" 2> "$OUT/test_threads.build.log"; then
            run_prog test_threads "$SMOL"
        else
            cat "$OUT/test_threads.build.log"; not_ok "test_threads build"
        fi
        # API misuse, each case in a child process: every line equals the
        # reference's answer (golden/misuse.txt, made by gen_misuse_golden.sh), or
        # where the reference dies, minfer's failure value recorded there
        if gcc "${CFLAGS[@]}" -Wno-deprecated-declarations "$ROOT/ffi-tests/misuse.c" -o "$OUT/misuse" "${LDFLAGS[@]}" -lm \
            2> "$OUT/misuse.build.log"; then
            misuse_check() { # NAME PREFIX [valgrind...]: runs the cases starting with PREFIX, diffs with the golden
                local name=$1 prefix=$2 rc=0; shift 2
                "$@" "$OUT/misuse" "$SMOL" "$prefix" > "$OUT/$name.txt" 2> "$OUT/$name.err" || rc=$?
                grep -E "^$prefix" "$ROOT/ffi-tests/golden/misuse.txt" | sed -E 's/  \[reference: [^]]*\]$//' > "$OUT/$name.want"
                if [ $rc = 0 ] && [ -s "$OUT/$name.want" ] && diff -u "$OUT/$name.want" "$OUT/$name.txt" > "$OUT/$name.diff"; then
                    local n r
                    n=$(wc -l < "$OUT/$name.want")
                    r=$(grep -E "^$prefix" "$ROOT/ffi-tests/golden/misuse.txt" | grep -c '\[reference: ' || true)
                    ok "$name: $n cases answer as the reference ($r of them kill the reference: minfer's failure value)"
                else
                    not_ok "$name (exit $rc)"; head -n 30 "$OUT/$name.diff" "$OUT/$name.err"
                fi
            }
            misuse_check misuse ""
            if [ -z "$SANITIZE" ]; then
                # the cases that do not decode, under memcheck (it follows the forked children)
                for p in vocab buffer sampler; do
                    misuse_check "misuse_${p}_under_valgrind" "$p" valgrind -q --error-exitcode=99 --leak-check=full \
                        --errors-for-leak-kinds=definite,indirect
                done
            fi
        else
            cat "$OUT/misuse.build.log"; not_ok "misuse build"
        fi
    else
        not_ok "models missing (run scripts/fetch-models.sh)"
    fi
}

group_parity() { # logits bit-identical to the reference (synthetic models, SmolLM2, Gemma 3)
    # --- forward pass: teacher-forced logits of synthetic models (random F32
    # weights, 2 layers, a reference vocab cut to 512 tokens) bit-identical to
    # goldens made with the reference library (scripts/make-parity-goldens.sh), and invariance
    # (threads, ubatch size, decode chunking: bit-identical)
    if [ -f "$VOCAB/ggml-vocab-llama-spm.gguf" ] && [ -f "$VOCAB/ggml-vocab-qwen2.gguf" ]; then
        if parity_tools; then
            for arch in llama qwen2 qwen3 gemma3; do
                m=$OUT/synth-$arch.gguf
                make_synth "$arch"
                # F32 weights run the emulation of llamafile's tinyBLAS<16> (and
                # ggml_vec_dot_f32 for one row): the logits are the reference's bytes
                if "$OUT/logits" "$m" "$PAR/tokens512.txt" "$OUT/synth-$arch.bin" 512 2 2> "$OUT/logits-$arch.err" \
                    && cmp -s "$PAR/synth-$arch.ref.bin" "$OUT/synth-$arch.bin"; then
                    ok "synthetic $arch logits bit-identical to the reference"
                else
                    not_ok "synthetic $arch logits bit-identical to the reference"
                    "$OUT/compare_logits" "$PAR/synth-$arch.ref.bin" "$OUT/synth-$arch.bin"; cat "$OUT/logits-$arch.err" 2> /dev/null
                fi
                inv_ok=1
                "$OUT/logits" "$m" "$PAR/tokens512.txt" "$OUT/inv-t1.bin" 512 1 2> /dev/null || inv_ok=0
                "$OUT/logits" "$m" "$PAR/tokens512.txt" "$OUT/inv-ub8.bin" 8 2 2> /dev/null || inv_ok=0
                "$OUT/logits" "$m" "$PAR/tokens512.txt" "$OUT/inv-chunk.bin" 512 2 5 2> /dev/null || inv_ok=0
                for f in inv-t1 inv-ub8 inv-chunk; do cmp -s "$OUT/synth-$arch.bin" "$OUT/$f.bin" || inv_ok=0; done
                if [ $inv_ok = 1 ]; then
                    ok "synthetic $arch: bit-identical logits for 1/2 threads, n_ubatch 512/8, one decode or chunks of 5"
                else
                    not_ok "synthetic $arch: invariance across threads, n_ubatch and chunking"
                fi
            done
            # Gemma 3 "27B" (62 layers), tiny, with n_embd / n_head (16) other
            # than the head size (32): the reference scales q by 1/sqrt(16)
            make_synth gemma3 gemma3-27b layers=62 head_dim=32
            if logits_hash_ok "$OUT/synth-gemma3-27b.gguf" "$PAR/tokens512.txt" "$PAR/synth-gemma3-27b.sha256" \
                "512 2 512 one-decode" "512 1 512 one-decode" "512 2 7 chunks-of-7"; then
                ok "synthetic 62-layer gemma3 (27B attention scale: 1/sqrt(n_embd / n_head)) logits bit-identical to the reference (1/2 threads, chunks of 7)"
            else
                not_ok "synthetic 62-layer gemma3 (27B attention scale) logits bit-identical to the reference"
            fi
            # EXAONE 4 "32B" (64 layers), tiny: sliding windows on 3 of every
            # 4 layers, rope on those only
            make_synth exaone4 exaone4-32b layers=64
            if logits_hash_ok "$OUT/synth-exaone4-32b.gguf" "$PAR/tokens512.txt" "$PAR/synth-exaone4-32b.sha256" \
                "512 2 512 one-decode" "512 1 512 one-decode" "512 2 7 chunks-of-7"; then
                ok "synthetic 64-layer exaone4 (sliding windows, global layers without rope) logits bit-identical to the reference (1/2 threads, chunks of 7)"
            else
                not_ok "synthetic 64-layer exaone4 logits bit-identical to the reference"
            fi
            # StableLM's 1.6B layout and 2 12B's (per-head q/k LayerNorms, no ffn_norm)
            for o in "1.6b rot=8" "12b rot=8 optional=1 ffn_norm=0"; do
                set -- $o
                f=$1 && shift
                make_synth stablelm "stablelm-$f" "$@"
                if logits_hash_ok "$OUT/synth-stablelm-$f.gguf" "$PAR/tokens512.txt" "$PAR/synth-stablelm-$f.sha256" \
                    "512 2 512 one-decode" "512 1 512 one-decode" "512 2 7 chunks-of-7"; then
                    ok "synthetic stablelm, $f layout: logits bit-identical to the reference (1/2 threads, chunks of 7)"
                else
                    not_ok "synthetic stablelm, $f layout: logits differ from the reference's"
                fi
            done
            # rope scaling (golden/parity/rope.sha256): YaRN (qwen3), LongRoPE's
            # long and short factors (phi3), the caller's rope overrides (llama)
            local rope_ok=1 f o
            "$ROOT/target/release/examples/synth_model" qwen3 "$VOCAB/ggml-vocab-qwen2.gguf" "$OUT/rope-qwen3-yarn.gguf" 11 512 \
                scaling=yarn factor=4 orig_ctx=128 > /dev/null
            logits_hash_ok "$OUT/rope-qwen3-yarn.gguf" "$PAR/tokens512.txt" "$PAR/rope.sha256" \
                "512 2 512 qwen3-yarn" "512 1 7 qwen3-yarn-chunks-of-7" || rope_ok=0
            for o in "long 128" "short 1024"; do
                set -- $o
                "$ROOT/target/release/examples/synth_model" phi3 "$VOCAB/ggml-vocab-llama-spm.gguf" "$OUT/rope-phi3-$1.gguf" 11 512 \
                    fused_qkv=1 scaling=longrope orig_ctx="$2" attn_factor=1.19 > /dev/null
                logits_hash_ok "$OUT/rope-phi3-$1.gguf" "$PAR/tokens512.txt" "$PAR/rope.sha256" \
                    "512 2 512 phi3-longrope-$1" "512 1 7 phi3-longrope-$1-chunks-of-7" || rope_ok=0
            done
            for o in "linear 500000 0.5 1 0" "yarn 0 0 2 64" "yarn-scaled 0 0.25 2 128" "none 0 0.25 0 0"; do
                set -- $o
                LOGITS_ROPE="$2 $3 $4 $5" logits_hash_ok "$OUT/synth-llama.gguf" "$PAR/tokens512.txt" "$PAR/rope.sha256" \
                    "512 2 512 llama-ctx-$1" || rope_ok=0
            done
            if [ $rope_ok = 1 ]; then
                ok "rope scaling: YaRN (synthetic qwen3), LongRoPE long and short factors (synthetic phi3), the context's rope overrides (synthetic llama): logits bit-identical to the reference (1/2 threads, chunks of 7)"
            else
                not_ok "rope scaling: logits differ from the reference's"
            fi
            # control vectors (golden/parity/cvec.sha256): directions after layers
            # 1-3 of a 4-layer llama, a narrower range, a short buffer, cleared
            local cvec_ok=1
            make_synth llama cvec-llama layers=4
            for o in "all 0 3 3" "range 2 3 3" "short 0 3 1" "cleared 0 3 3 clear"; do
                set -- $o
                LOGITS_CVEC="$2 $3 $4 ${5:-}" logits_hash_ok "$OUT/synth-cvec-llama.gguf" "$PAR/tokens512.txt" \
                    "$PAR/cvec.sha256" "512 2 512 cvec-$1" "512 1 7 cvec-$1" || cvec_ok=0
            done
            if [ $cvec_ok = 1 ]; then
                ok "control vectors (llama_set_adapter_cvec): logits bit-identical to the reference (all layers, a range, a short buffer, cleared; 1/2 threads, chunks of 7)"
            else
                not_ok "control vectors: logits differ from the reference's"
            fi
            # LoRA adapters (golden/parity/lora.sha256): the cases of
            # parity/lora_cases.sh (F16 and Q8_0 adapters alone and together
            # in both orders; fused projections; routers and experts), SmolLM2 with two
            # adapters; the adapter files first (the generator's bytes)
            local lora_ok=1 lora_dir=$OUT/lora f want got
            . "$ROOT/ffi-tests/parity/lora_cases.sh"
            lora_files "$lora_dir" "$ROOT/target/release/examples/synth_model" "$ROOT/target/release/examples/synth_lora" \
                "$VOCAB" "$([ -f "$SMOL" ] && echo "$SMOL")"
            for f in "$lora_dir"/*-f16.gguf "$lora_dir"/*-q8.gguf "$lora_dir"/*-q4_*.gguf; do
                want=$(awk -v l="adapter-$(basename "$f" .gguf)" '$2 == l {print $1}' "$PAR/lora.sha256")
                got=$(sha256sum "$f" | cut -d' ' -f1)
                [ "$got" = "$want" ] || { lora_ok=0; echo "     $f: sha256 $got, want $want"; }
            done
            for run in "${LORA_RUNS[@]}"; do
                set -- $run
                LOGITS_LORA=$(lora_spec "$lora_dir" "$1" "$3") logits_hash_ok "$lora_dir/$1.gguf" "$PAR/tokens512.txt" \
                    "$PAR/lora.sha256" "512 2 512 $2" "512 1 7 $2-chunks-of-7" || lora_ok=0
            done
            if [ -f "$SMOL" ]; then
                LOGITS_LORA=$(lora_spec "$lora_dir" smollm2 f16:1.0,q8:0.5) logits_hash_ok "$SMOL" \
                    "$PAR/tokens-smollm2-128.txt" "$PAR/lora.sha256" "512 2 128 smollm2-both" \
                    "512 1 7 smollm2-both-chunks-of-7" || lora_ok=0
            fi
            if [ $lora_ok = 1 ]; then
                ok "LoRA adapters (F16 and Q8_0, alone and two in either order; Q4_0 and Q4_K multiplied unrepacked; llama with token_embd/output pairs, phi3 fused, qwen3moe and gpt-oss routers and experts; SmolLM2 Q4_1): logits bit-identical to the reference (1/2 threads, chunks of 7)"
            else
                not_ok "LoRA adapters: logits differ from the reference's"
            fi
            # the adapter API: metadata as the reference gives it, then
            # test_lora's checks (hostile files, misuse, lifetimes)
            cp "$lora_dir/llama.gguf" "$lora_dir/model.gguf"
            cp "$lora_dir/llama-f16.gguf" "$lora_dir/f16.gguf"
            cp "$lora_dir/llama-q8.gguf" "$lora_dir/q8.gguf"
            "$ROOT/target/release/examples/synth_lora" "$lora_dir/model.gguf" "$lora_dir/alora.gguf" alora=7,8,9 seed=4 2> /dev/null
            "$ROOT/target/release/examples/synth_lora" "$lora_dir/model.gguf" "$lora_dir/bad-arch.gguf" arch=qwen2 2> /dev/null
            for f in type adapter_type alpha_type alora_type suffix missing_b unknown shape transposed truncated; do
                "$ROOT/target/release/examples/synth_lora" "$lora_dir/model.gguf" "$lora_dir/bad-$f.gguf" broken=$f 2> /dev/null
            done
            if compile test_lora "$ROOT/ffi-tests/test_lora.c"; then
                if "$OUT/test_lora" --dump "$lora_dir/model.gguf" "$lora_dir/alora.gguf" > "$OUT/lora-meta.txt" 2>&1 \
                    && diff -u "$PAR/lora-meta.txt" "$OUT/lora-meta.txt"; then
                    ok "LoRA metadata and aLoRA getters answer as the reference's (golden/parity/lora-meta.txt)"
                else
                    not_ok "LoRA metadata getters differ from the reference's"
                fi
                run_prog test_lora "$lora_dir"
                under_valgrind test_lora "$lora_dir"
            else
                not_ok "test_lora build"
            fi
            # a model from the caller's metadata and tensors
            # (llama_model_init_from_user; parity/from_user.c standing in for
            # the ggml functions it needs), for each line of
            # golden/parity/from_user.families.txt: the reference's logits and save
            if gcc "${CFLAGS[@]}" -I"$ROOT/ffi-tests/parity" -rdynamic "$ROOT/ffi-tests/parity/from_user.c" \
                -o "$OUT/from_user" "${LDFLAGS[@]}" 2> "$OUT/from_user.build.log"; then
                local fu_ok=1 name output override opts checks
                : > "$OUT/from_user.out"
                while read -r name output override opts; do
                    case $name in ''|'#'*) continue ;; esac
                    # shellcheck disable=SC2086 # (the options: one word each)
                    make_synth "${name%%+*}" "from-user-$name" $opts
                    echo "== $name" >> "$OUT/from_user.out"
                    rm -f "$OUT/from-user-saved.gguf"
                    "$OUT/from_user" "$OUT/synth-from-user-$name.gguf" "$PAR/tokens512.txt" "$OUT/from-user.bin" \
                        "$OUT/from-user-saved.gguf" "$override" "$output" >> "$OUT/from_user.out" \
                        2> "$OUT/from_user.err" < /dev/null || fu_ok=0
                    checks=("${output%-nosave}:from-user.bin")
                    [ "$output" = embd-nosave ] || checks+=(saved:from-user-saved.gguf)
                    for f in "${checks[@]}"; do
                        want=$(awk -v l="$name-${f%%:*}" '$2 == l {print $1}' "$PAR/from_user.sha256")
                        got=$(sha256sum "$OUT/${f#*:}" | cut -d' ' -f1)
                        [ "$got" = "$want" ] || { fu_ok=0; echo "     $name ${f%%:*}: sha256 $got, want $want"; }
                    done
                done < "$PAR/from_user.families.txt"
                [ "$(grep -c "NULL metadata or callback: refused" "$OUT/from_user.out")" = 34 ] || fu_ok=0
                # (the encoders the reference cannot save: minfer's save reloads to the same embeddings)
                [ "$(grep -c "^minfer's save, reloaded: same embeddings" "$OUT/from_user.out")" \
                    = "$(awk '$2 == "embd-nosave"' "$PAR/from_user.families.txt" | wc -l)" ] || fu_ok=0
                grep -v "^NULL metadata\|^minfer's save" "$OUT/from_user.out" | diff -u "$PAR/from_user.txt" - || fu_ok=0
                if [ $fu_ok = 1 ]; then
                    ok "llama_model_init_from_user on the 34 models of golden/parity/from_user.families.txt (llama, qwen2, qwen3, gemma3, smollm3, olmo2, gemma2, gemma, granite, mistral3, cohere2, exaone4, starcoder2, phi3 with and without LongRoPE, phi2, stablelm, gpt2, falcon; mixtures of experts: llama, granite, qwen3moe, qwen2moe, olmoe, granitemoe, gpt-oss, dots1; encoders: gemma-embedding with and without its dense modules, bert, nomic-bert, jina-bert-v2, neo-bert, modern-bert) from metadata and a callback (F32 and an F16 override, the 3-D ffn_down_exps in the mixtures; the .scale and .input_scale tensors of the projections each has, one per expert for the experts; optional biases, norms and heads; qwen3's cls.output; gemma's embeddings asked twice, the rope factors once per layer): the reference's tensor calls (65, 56, 60, 63, 55, 59, 59, 55, 65, 65, 53, 61, 60, 53, 53, 57, 64, 45, 36, 61, 79, 61, 77, 61, 79, 69, 109, 183, 185, 65, 66, 80, 34, 35), logits (the encoders: every token's embedding) and saved files (not the encoders without an output head, nor gemma-embedding's dense modules, which the reference's save leaves out: its file of those does not load), bit for bit; reloaded from the saved file, the same output (those encoders too: minfer's save keeps token_embd and the dense modules); NULL metadata or callback refused"
                else
                    not_ok "llama_model_init_from_user differs from the reference"; tail -n 5 "$OUT/from_user.err"
                fi
                # mistral3 with experts: its loader lists llama's tensors and
                # its graph is llama's apart from the attention temperature
                # (see the parity group), so without its own keys it asks
                # for the tensors llama+experts does and decodes to that
                # line's reference logits
                make_synth mistral3 from-user-mistral3+experts experts=8 own_keys=0
                rm -f "$OUT/from-user-saved.gguf"
                if "$OUT/from_user" "$OUT/synth-from-user-mistral3+experts.gguf" "$PAR/tokens512.txt" "$OUT/from-user.bin" \
                        "$OUT/from-user-saved.gguf" blk.1.ffn_down_exps.weight logits > "$OUT/from_user_m3.out" 2> /dev/null \
                    && [ "$(sha256sum "$OUT/from-user.bin" | cut -d' ' -f1)" \
                        = "$(awk '$2 == "llama+experts-logits" {print $1}' "$PAR/from_user.sha256")" ] \
                    && diff <(sed -n '/^== llama+experts$/,/^==/p' "$PAR/from_user.txt" | grep -v '^==') \
                        <(grep -v "^NULL metadata" "$OUT/from_user_m3.out") > /dev/null; then
                    ok "llama_model_init_from_user, mistral3 with experts: the reference's tensor calls and logits of llama with experts (the same loader and graph), reloaded from its save to the same logits"
                else
                    not_ok "llama_model_init_from_user, mistral3 with experts"; cat "$OUT/from_user_m3.out"
                fi
                under_valgrind from_user "$OUT/synth-from-user-gemma3.gguf" "$PAR/tokens512.txt" "$OUT/from-user-vg.bin" \
                    "$OUT/from-user-vg.gguf"
            else
                not_ok "from_user build"; cat "$OUT/from_user.build.log"
            fi
            # a mixture of experts in every other block type
            # (golden/parity/moe-types.sha256): a 256-wide 8-expert qwen3moe
            # quantized by our llama_model_quantize (the reference's bytes:
            # quantize-compare.sh) to each type; its logits, one decode and
            # decodes of 7 (each expert's kernel: vec_dot, gemv, tiled)
            if compile quantize_tool "$ROOT/ffi-tests/quantize_tool.c"; then
                local moe_ok=1 t
                make_synth qwen3moe moe-types embd=256 heads=4 kv_heads=2 head_dim=64 ff=512
                for t in $MOE_TYPES; do
                    set -- ${t/:/ }
                    "$OUT/quantize_tool" "$OUT/synth-moe-types.gguf" "$OUT/moe-$1.gguf" "$2" > /dev/null 2>&1
                    logits_hash_ok "$OUT/moe-$1.gguf" "$PAR/tokens512.txt" "$PAR/moe-types.sha256" \
                        "512 2 512 $1-one-decode" "512 1 7 $1-chunks-of-7" || moe_ok=0
                done
                # gpt-oss as its files come: MXFP4 experts
                make_synth gpt-oss gpt-oss-mx optional=1 scaling=yarn factor=4 orig_ctx=64 embd=256 ff=512 head_dim=64
                "$OUT/quantize_tool" "$OUT/synth-gpt-oss-mx.gguf" "$OUT/gpt-oss-mx.gguf" 38 > /dev/null 2>&1
                logits_hash_ok "$OUT/gpt-oss-mx.gguf" "$PAR/tokens512.txt" "$PAR/moe-types.sha256" \
                    "512 2 512 gpt-oss-mxfp4-one-decode" "512 1 7 gpt-oss-mxfp4-chunks-of-7" || moe_ok=0
                # MXFP4 in every block matrix of a dense llama (gemm and gemv)
                make_synth llama mxfp4-dense embd=256 ff=512 head_dim=64
                "$OUT/quantize_tool" "$OUT/synth-mxfp4-dense.gguf" "$OUT/mxfp4-dense.gguf" 7 'tt=blk\.:39' > /dev/null 2>&1
                logits_hash_ok "$OUT/mxfp4-dense.gguf" "$PAR/tokens512.txt" "$PAR/moe-types.sha256" \
                    "512 2 512 mxfp4-dense-one-decode" "512 1 7 mxfp4-dense-chunks-of-7" || moe_ok=0
                # the ternary types in every matrix of that llama (pure)
                for t in TQ1_0:36 TQ2_0:37 Q1_0:40 Q2_0:41; do
                    set -- ${t/:/ }
                    "$OUT/quantize_tool" "$OUT/synth-mxfp4-dense.gguf" "$OUT/$1-dense.gguf" "$2" pure > /dev/null 2>&1
                    logits_hash_ok "$OUT/$1-dense.gguf" "$PAR/tokens512.txt" "$PAR/moe-types.sha256" \
                        "512 2 512 $1-dense-one-decode" "512 1 7 $1-dense-chunks-of-7" || moe_ok=0
                done
                # the IQ1-IQ3 types, which minfer reads but does not write
                # yet: every layer matrix of that llama, and of the qwen3moe
                # (experts included), random blocks of the type
                local iq_ok=1
                for t in $IQ_TYPES; do
                    set -- ${t/:/ }
                    make_synth llama $1-dense-iq embd=256 ff=512 head_dim=64 blocks=$2
                    logits_hash_ok "$OUT/synth-$1-dense-iq.gguf" "$PAR/tokens512.txt" "$PAR/block-types.sha256" \
                        "512 2 512 $1-dense-one-decode" "512 1 7 $1-dense-chunks-of-7" || iq_ok=0
                    make_synth qwen3moe $1-moe-iq embd=256 heads=4 kv_heads=2 head_dim=64 ff=512 blocks=$2
                    logits_hash_ok "$OUT/synth-$1-moe-iq.gguf" "$PAR/tokens512.txt" "$PAR/block-types.sha256" \
                        "512 2 512 $1-moe-one-decode" "512 1 7 $1-moe-chunks-of-7" || iq_ok=0
                done
                # NVFP4 in every layer matrix of that llama (our quantizer:
                # the reference's bytes, a tensor type override)
                make_synth llama nvfp4-dense embd=256 ff=512 head_dim=64
                "$OUT/quantize_tool" "$OUT/synth-nvfp4-dense.gguf" "$OUT/nvfp4-dense.gguf" 7 'tt=blk\.:40' > /dev/null 2>&1
                logits_hash_ok "$OUT/nvfp4-dense.gguf" "$PAR/tokens512.txt" "$PAR/block-types.sha256" \
                    "512 2 512 NVFP4-dense-one-decode" "512 1 7 NVFP4-dense-chunks-of-7" || iq_ok=0
                if [ $iq_ok = 1 ]; then
                    ok "a dense llama and an 8-expert qwen3moe in each of $(for t in $IQ_TYPES; do printf '%s ' "${t%%:*}"; done| sed 's/ $//') (random blocks), a dense llama in NVFP4: logits bit-identical to the reference (one decode: tiled; chunks of 7: vec_dot)"
                else
                    not_ok "IQ1-IQ3 types: logits differ from the reference's"
                fi
                if [ $moe_ok = 1 ]; then
                    ok "mixture of experts in $(for t in $MOE_TYPES; do printf '%s ' "${t%%:*}"; done| sed 's/ $//'), gpt-oss with MXFP4 experts and a dense llama in MXFP4, TQ1_0, TQ2_0, Q1_0 and Q2_0: logits bit-identical to the reference (one decode, chunks of 7)"
                else
                    not_ok "mixture of experts: logits of some block type differ from the reference's"
                fi
            fi
            # the families of golden/parity/families.txt (make-parity-goldens.sh):
            # a synthetic model's logits, and the same shapes at embd 256
            # quantized by our llama_model_quantize to Q4_K_M and F16 (the
            # reference's bytes) with their logits, all bit-identical to the
            # reference's, at 1 and 2 threads, in one decode and in decodes of 7
            if compile quantize_tool "$ROOT/ffi-tests/quantize_tool.c"; then
                while read -r family sizes; do
                    case $family in ''|'#'*) continue ;; esac
                    family_parity "$family" $sizes
                done < "$PAR/families.txt"
                # mistral3 with experts. The reference's mistral3 and llama
                # graphs (src/models/mistral3.cpp, llama.cpp) differ only in
                # mistral3's attention temperature, which the mistral3 line
                # above checks, and make the same build_moe_ffn call: a
                # mistral3 file without its own keys holding the tensors of
                # the llama+experts line decodes to that line's reference
                # logits, in F32 and quantized to Q4_K_M and F16
                local m3=fam-mistral3+experts m3ok=1
                make_synth mistral3 "$m3" experts=8 own_keys=0
                make_synth mistral3 "$m3-256" experts=8 own_keys=0 embd=256 ff=512 head_dim=64
                logits_hash_ok "$OUT/synth-$m3.gguf" "$PAR/tokens512.txt" "$PAR/synth-llama+experts.sha256" \
                    "512 2 512 f32-one-decode" "512 1 512 f32-one-decode" "512 2 7 f32-chunks-of-7" \
                    "64 2 512 f32-ubatch-64" || m3ok=0
                for q in "15 q4_k_m" "1 f16"; do
                    set -- $q
                    "$OUT/quantize_tool" "$OUT/synth-$m3-256.gguf" "$OUT/$m3-$2.gguf" "$1" > /dev/null 2>&1 || m3ok=0
                    logits_hash_ok "$OUT/$m3-$2.gguf" "$PAR/tokens512.txt" "$PAR/synth-llama+experts.sha256" \
                        "512 2 512 $2-one-decode" "512 2 7 $2-chunks-of-7" "64 2 512 $2-ubatch-64" || m3ok=0
                done
                if [ $m3ok = 1 ]; then
                    ok "mistral3 with experts (F32, Q4_K_M, F16): logits bit-identical to the reference's llama with experts, the same graph (1/2 threads, chunks of 7, ubatches of 64)"
                else
                    not_ok "mistral3 with experts: logits differ from the reference's llama with experts"
                fi
                # a mixture-of-experts decode multiplies by the chosen
                # experts only: its weight bytes are the active parameters'
                local m py
                py=$(bash "$ROOT/scripts/py-venv.sh")
                for m in qwen3moe qwen2moe gpt-oss dots1; do
                    if [ -f "$OUT/fam-$m-q4_k_m.gguf" ] && compile test_moe_bytes "$ROOT/ffi-tests/test_moe_bytes.c"; then
                        # shellcheck disable=SC2046
                        run_prog test_moe_bytes "$OUT/fam-$m-q4_k_m.gguf" \
                            $("$py" "$ROOT/ffi-tests/moe_bytes.py" "$OUT/fam-$m-q4_k_m.gguf")
                        echo "     $m Q4_K_M: $(sed -n 1p "$OUT/test_moe_bytes.out")"
                    else
                        not_ok "test_moe_bytes: no synthetic $m model or no build"
                    fi
                done
                # gpt2's learned positions end at n_ctx_train: a decode past
                # them fails and leaves the context usable
                if [ -f "$OUT/synth-fam-gpt2.gguf" ] && compile test_positions "$ROOT/ffi-tests/test_positions.c"; then
                    run_prog test_positions "$OUT/synth-fam-gpt2.gguf"
                else
                    not_ok "test_positions: no synthetic gpt2 model or no build"
                fi
            else
                not_ok "quantize_tool build"
            fi
            # embedding inputs (llama_batch.embd carrying the tokens' token_embd
            # rows, parity/embd_logits.c): logits hash to the reference's
            # (golden/parity/embd.sha256, make-parity-goldens.sh); for llama and
            # qwen3 they are the token path's bytes too (gemma3 does not scale raw
            # embeddings by sqrt(n_embd), as the reference)
            if compile embd_logits "$ROOT/ffi-tests/parity/embd_logits.c"; then
                e_ok=1
                for arch in llama qwen3 gemma3; do
                    "$OUT/embd_logits" "$OUT/synth-$arch.gguf" "$PAR/tokens512.txt" "$OUT/embd-$arch.bin" 2> /dev/null || e_ok=0
                    got=$(sha256sum "$OUT/embd-$arch.bin" | cut -d' ' -f1)
                    want=$(awk -v l="synth-$arch" '$2 == l {print $1}' "$PAR/embd.sha256")
                    [ "$got" = "$want" ] || { e_ok=0; echo "     synth-$arch: sha256 $got, want $want"; }
                done
                for arch in llama qwen3; do
                    cmp -s "$OUT/embd-$arch.bin" "$OUT/synth-$arch.bin" || { e_ok=0; echo "     synth-$arch: embeddings path differs from the token path"; }
                done
                if [ $e_ok = 1 ]; then
                    ok "embedding inputs: synthetic llama/qwen3/gemma3 logits bit-identical to the reference (llama, qwen3: equal to the token path)"
                else
                    not_ok "embedding inputs: synthetic models' logits"
                fi
                under_valgrind embd_logits "$OUT/synth-llama.gguf" "$PAR/tokens512.txt" "$OUT/embd-vg.bin" 5
            else
                not_ok "embd_logits build"
            fi
            # SmolLM2 Q4_1, 128 teacher-forced tokens: logits bit-identical to the
            # reference's (sha256 of its output, scripts/make-parity-goldens.sh), on
            # both attention paths (one decode → tiled; chunks of 32 → one chunk),
            # and for 1/2 threads and n_ubatch 512/64
            if [ -f "$SMOL" ]; then
                if logits_hash_ok "$SMOL" "$PAR/tokens-smollm2-128.txt" "$PAR/smollm2-q4_1.sha256" \
                    "512 2 128 one-decode" "512 1 128 one-decode" "64 2 128 one-decode" \
                    "512 2 32 chunks-of-32" "512 1 32 chunks-of-32"; then
                    ok "SmolLM2 Q4_1 logits bit-identical to the reference (tiled and one-chunk attention; 1/2 threads; n_ubatch 512/64)"
                else
                    not_ok "SmolLM2 Q4_1 logits bit-identical to the reference"
                fi
                # An f32 K/V cache: the reference casts it to f16 before flash
                # attention, so its logits hash the same as with the f16 cache
                # (checked with the reference library when this test was written)
                if LOGITS_KV_F32=1 logits_hash_ok "$SMOL" "$PAR/tokens-smollm2-128.txt" "$PAR/smollm2-q4_1.sha256" \
                    "512 2 128 one-decode" "512 2 32 chunks-of-32"; then
                    ok "SmolLM2 Q4_1 with an f32 K/V cache: logits bit-identical to the reference (both attention paths)"
                else
                    not_ok "SmolLM2 Q4_1 with an f32 K/V cache: logits bit-identical to the reference"
                fi
                # one-token decodes past cell 256: the reference's view holds
                # 512 cells and its flash attention splits them into one chunk
                # per thread, merged after (golden/parity/smollm2-q4_1-split-kv.sha256:
                # 1, 2 and 3 threads, three different hashes; an f32 cache too)
                if logits_hash_ok "$SMOL" "$PAR/tokens-smollm2-300.txt" "$PAR/smollm2-q4_1-split-kv.sha256" \
                    "512 1 1 split-kv-t1" "512 2 1 split-kv-t2" "512 3 1 split-kv-t3" \
                    && LOGITS_KV_F32=1 logits_hash_ok "$SMOL" "$PAR/tokens-smollm2-300.txt" \
                        "$PAR/smollm2-q4_1-split-kv.sha256" "512 2 1 split-kv-t2"; then
                    ok "SmolLM2 Q4_1 one-token decodes over a 512-cell view (split-KV flash attention): bit-identical to the reference at 1, 2 and 3 threads"
                else
                    not_ok "SmolLM2 Q4_1 one-token decodes over a 512-cell view: logits differ from the reference"
                fi
                # without flash attention (flash_attn_type 0, llama-cpp-python's
                # default): KQ / softmax / KQV by tinyBLAS from 2 tokens, by
                # ggml_vec_dot_f16 for decodes of one token
                if logits_hash_ok "$SMOL" "$PAR/tokens-smollm2-128.txt" "$PAR/smollm2-q4_1.sha256" \
                    "512 2 128 one-decode-nofa 0" "512 1 128 one-decode-nofa 0" "64 2 128 one-decode-nofa 0" \
                    "64 1 128 one-decode-nofa 0" "512 2 1 chunks-of-1-nofa 0"; then
                    ok "SmolLM2 Q4_1 logits bit-identical to the reference without flash attention (1/2 threads; n_ubatch 512/64; one-token decodes)"
                else
                    not_ok "SmolLM2 Q4_1 logits bit-identical to the reference without flash attention"
                fi
            fi
            # SmolLM2 requantized to BF16 by our llama_model_quantize (whose file
            # must hash equal to the reference's): logits bit-identical to the
            # reference's in one decode (llamafile's tinyBLAS<32> with vdpbf16ps),
            # token by token (ggml_vec_dot_bf16) and in decodes of 7
            if [ -f "$SMOL" ]; then
                BF16_MODEL=$OUT/smollm2-bf16.gguf
                if compile quantize_tool "$ROOT/ffi-tests/quantize_tool.c" \
                    && "$OUT/quantize_tool" "$SMOL" "$BF16_MODEL" 32 requant > /dev/null 2>&1 \
                    && [ "$(sha256sum "$BF16_MODEL" | cut -d' ' -f1)" = "$(awk '$2 == "model" {print $1}' "$PAR/smollm2-bf16.sha256")" ]; then
                    if logits_hash_ok "$BF16_MODEL" "$PAR/tokens-smollm2-128.txt" "$PAR/smollm2-bf16.sha256" \
                        "512 2 128 one-decode" "512 1 128 one-decode" "512 2 1 token-by-token" "512 1 1 token-by-token" "512 2 7 chunks-of-7"; then
                        ok "SmolLM2 BF16 logits bit-identical to the reference (one decode, token by token, chunks of 7; 1/2 threads)"
                    else
                        not_ok "SmolLM2 BF16 logits bit-identical to the reference"
                    fi
                    # the float matrices copied onto huge pages at load, read
                    # from the file mapping as it is, and read in place with
                    # every 2 MiB block copied over the mapping (what the load
                    # does to blocks the page cache holds in small folios):
                    # the same bits each way
                    if MINFER_FLOAT_COPIES=1 logits_hash_ok "$BF16_MODEL" "$PAR/tokens-smollm2-128.txt" "$PAR/smollm2-bf16.sha256" \
                        "512 2 128 one-decode" "512 1 7 chunks-of-7" \
                        && MINFER_FLOAT_COPIES=0 logits_hash_ok "$BF16_MODEL" "$PAR/tokens-smollm2-128.txt" "$PAR/smollm2-bf16.sha256" \
                            "512 2 128 one-decode" "512 1 7 chunks-of-7" \
                        && MINFER_TEST_COPY_EVERY_BLOCK=1 logits_hash_ok "$BF16_MODEL" "$PAR/tokens-smollm2-128.txt" "$PAR/smollm2-bf16.sha256" \
                            "512 2 128 one-decode" "512 1 7 chunks-of-7"; then
                        ok "SmolLM2 BF16 logits bit-identical to the reference with its float matrices copied at load, read from the file mapping, and read in place with every 2 MiB block copied over the mapping (MINFER_FLOAT_COPIES=1/0, MINFER_TEST_COPY_EVERY_BLOCK=1)"
                    else
                        not_ok "SmolLM2 BF16 logits with the float matrices copied and read from the file mapping"
                    fi
                    if [ -x "$OUT/embd_logits" ] && "$OUT/embd_logits" "$BF16_MODEL" "$PAR/tokens-smollm2-128.txt" "$OUT/embd-smollm2.bin" 7 2> /dev/null \
                        && [ "$(sha256sum "$OUT/embd-smollm2.bin" | cut -d' ' -f1)" = "$(awk '$2 == "smollm2-bf16-chunks-of-7" {print $1}' "$PAR/embd.sha256")" ]; then
                        ok "embedding inputs: SmolLM2 BF16 logits (decodes of 7) bit-identical to the reference"
                    else
                        not_ok "embedding inputs: SmolLM2 BF16 logits"
                    fi
                else
                    not_ok "SmolLM2 BF16 model (our quantize, the reference's bytes)"
                fi
                rm -f "$BF16_MODEL"
            fi
            # Gemma 3 Q4_K_M, 128 teacher-forced tokens: logits bit-identical to
            # the reference's in one decode (repacked Q4_K gemm, tiled Q6_K) and
            # in decodes of 7 (gemm on 4 rows + gemv on 3, k-quant vec_dot), for
            # 1/2 threads
            if [ -f "$GEMMA" ]; then
                if logits_hash_ok "$GEMMA" "$PAR/tokens-gemma3-128.txt" "$PAR/gemma3-q4_k_m.sha256" \
                    "512 2 128 one-decode" "512 1 128 one-decode" "512 2 7 chunks-of-7" "512 1 7 chunks-of-7"; then
                    ok "Gemma 3 Q4_K_M logits bit-identical to the reference (one decode and chunks of 7; 1/2 threads)"
                else
                    not_ok "Gemma 3 Q4_K_M logits bit-identical to the reference"
                fi
                # without flash attention (sliding-window layers masked as the reference)
                if logits_hash_ok "$GEMMA" "$PAR/tokens-gemma3-128.txt" "$PAR/gemma3-q4_k_m.sha256" \
                    "512 2 128 one-decode-nofa 0" "512 1 128 one-decode-nofa 0" "64 2 128 one-decode-nofa 0" \
                    "512 2 7 chunks-of-7-nofa 0" "512 2 1 chunks-of-1-nofa 0"; then
                    ok "Gemma 3 Q4_K_M logits bit-identical to the reference without flash attention (1/2 threads; n_ubatch 512/64; chunks of 7 and 1)"
                else
                    not_ok "Gemma 3 Q4_K_M logits bit-identical to the reference without flash attention"
                fi
            fi
            if compile test_decode "$ROOT/ffi-tests/test_decode.c"; then
                run_prog test_decode "$OUT/synth-llama.gguf"
                under_valgrind test_decode "$OUT/synth-llama.gguf"
            else
                not_ok "test_decode build"
            fi
            # thread pools shared between contexts (llama_attach_threadpool)
            if compile test_threadpool "$ROOT/ffi-tests/test_threadpool.c"; then
                run_prog test_threadpool "$OUT/synth-llama.gguf"
                under_valgrind test_threadpool "$OUT/synth-llama.gguf"
            else
                not_ok "test_threadpool build"
            fi
        else
            not_ok "parity tools build"
        fi
    else
        not_ok "vocab files missing (run scripts/fetch-reference-src.sh)"
    fi
}

group_bad_gguf() { # malformed GGUF files
    # --- (e) malformed GGUF files: rejected with a message, clean under valgrind
    if [ -f "$ROOT/ffi-tests/test_bad_gguf.c" ]; then
        rm -rf "$OUT/bad_gguf" && mkdir -p "$OUT/bad_gguf"
        python3 "$ROOT/ffi-tests/gen_bad_gguf.py" "$OUT/bad_gguf" > /dev/null
        if compile test_bad_gguf "$ROOT/ffi-tests/test_bad_gguf.c"; then
            run_prog test_bad_gguf "$OUT/bad_gguf"
            if command -v valgrind > /dev/null; then
                under_valgrind test_bad_gguf "$OUT/bad_gguf"
            else
                not_ok "valgrind is not installed"
            fi
        else
            not_ok "test_bad_gguf build"
        fi
    fi
}

group_vocab() { # the vocab C API and getters
    # --- (i) the vocab C API (buffers, invalid ids, NUL bytes, 10 MB input), and
    # every vocab getter against the reference's (a digest per vocabulary)
    if [ -f "$SMOL" ] && [ -f "$GEMMA" ]; then
        if compile test_vocab_api "$ROOT/ffi-tests/test_vocab_api.c"; then
            run_prog test_vocab_api "$SMOL" "$GEMMA"
            # (without the 10 MB input)
            VOCAB_API_SKIP_BIG=1 under_valgrind test_vocab_api "$SMOL" "$GEMMA"
        else
            not_ok "test_vocab_api build"
        fi
    fi
    if compile dump_vocab "$ROOT/ffi-tests/dump_vocab.c"; then
        for g in "$ROOT"/ffi-tests/golden/vocab/*.txt; do
            name=$(basename "$g" .txt)
            case "$name" in
                SmolLM2-*|gemma-3-*) model=$MODELS/$name.gguf ;;
                *) model=${MINFER_CACHE:-$HOME/.cache/minfer}/vocab/$name.gguf ;;
            esac
            if "$OUT/dump_vocab" "$model" > "$OUT/vocab-$name.txt" 2>&1 && diff -u "$g" "$OUT/vocab-$name.txt" > "$OUT/vocab-$name.diff"; then
                ok "vocab getters of $name equal the reference's"
            else
                not_ok "vocab getters of $name equal the reference's"; head -n 20 "$OUT/vocab-$name.diff"
            fi
        done
    else
        not_ok "dump_vocab build"
    fi
}

group_tokenizer() { # tokenizer digests on random inputs and the tokenizer goldens
    # --- (j) random inputs (special-token soup, many scripts, invalid UTF-8),
    # 300 cases x 4 flag combinations per vocabulary: the digest of the ids and
    # detokenized bytes equals the reference library's (golden/fuzz/SHA256SUMS)
    if compile fuzz_tokenize "$ROOT/ffi-tests/fuzz_tokenize.c"; then
        while read -r sum name; do
            case "$name" in
                SmolLM2-*|gemma-3-*) model=$MODELS/$name.gguf ;;
                *) model=${MINFER_CACHE:-$HOME/.cache/minfer}/vocab/$name.gguf ;;
            esac
            got=$("$OUT/fuzz_tokenize" "$model" 300 2> /dev/null | sha256sum | cut -d' ' -f1)
            if [ "$got" = "$sum" ]; then
                ok "random inputs on $name tokenize as with the reference"
            else
                not_ok "random inputs on $name tokenize as with the reference"
            fi
        done < "$ROOT/ffi-tests/golden/fuzz/SHA256SUMS"
        # every pre-tokenizer name (and the whitespace/hybriddna models) on the
        # llama-bpe vocabulary, 60 cases each (golden/fuzz/PRE_VARIANTS.SHA256SUMS)
        rm -rf "$OUT/pre_variants" && mkdir -p "$OUT/pre_variants"
        names=$(awk '{n=$2; sub(/^model_/, "model=", n); print n}' "$ROOT/ffi-tests/golden/fuzz/PRE_VARIANTS.SHA256SUMS")
        # shellcheck disable=SC2086
        if python3 "$ROOT/ffi-tests/gen_pre_variants.py" "${MINFER_CACHE:-$HOME/.cache/minfer}/vocab/ggml-vocab-llama-bpe.gguf" \
            "$OUT/pre_variants" $names; then
            bad=""; n_pre=0
            while read -r sum name; do
                n_pre=$((n_pre + 1))
                got=$("$OUT/fuzz_tokenize" "$OUT/pre_variants/$name.gguf" 60 2> /dev/null | sha256sum | cut -d' ' -f1)
                [ "$got" = "$sum" ] || bad="$bad $name"
            done < "$ROOT/ffi-tests/golden/fuzz/PRE_VARIANTS.SHA256SUMS"
            if [ -z "$bad" ]; then ok "all $n_pre pre-tokenizer variants tokenize random inputs as with the reference"; else not_ok "pre-tokenizer variants differ:$bad"; fi
            # the RWKV, PLaMo-2 and TEST tokenizer models: llama-spm with its model
            # replaced, and a small synthetic RWKV vocabulary (fuzz and getter
            # digests from the reference: golden/fuzz/MODEL_VARIANTS.SHA256SUMS)
            MV=$OUT/model_variants
            rm -rf "$MV" && mkdir -p "$MV"
            if python3 "$ROOT/ffi-tests/gen_pre_variants.py" "${MINFER_CACHE:-$HOME/.cache/minfer}/vocab/ggml-vocab-llama-spm.gguf" \
                "$MV" model=plamo2 model=test synth=rwkv && compile dump_vocab "$ROOT/ffi-tests/dump_vocab.c"; then
                while read -r sum what; do
                    kind=${what%%:*}; name=${what#*:}
                    if [ "$kind" = fuzz ]; then
                        got=$("$OUT/fuzz_tokenize" "$MV/$name.gguf" 60 2> /dev/null | sha256sum | cut -d' ' -f1)
                    else
                        got=$("$OUT/dump_vocab" "$MV/$name.gguf" 2> /dev/null | sha256sum | cut -d' ' -f1)
                    fi
                    if [ "$got" = "$sum" ]; then ok "$name: $kind as with the reference"; else not_ok "$name: $kind as with the reference"; fi
                done < "$ROOT/ffi-tests/golden/fuzz/MODEL_VARIANTS.SHA256SUMS"
            else
                not_ok "model variants"
            fi
            # long words on the regex-engine pre-tokenizers (also from a small-stack thread)
            PV=$OUT/pre_variants
            compile test_long_words "$ROOT/ffi-tests/test_long_words.c" \
                && run_prog test_long_words "$PV/tekken.gguf" "$PV/exaone-moe.gguf" "$PV/gpt-4o.gguf" "$PV/chameleon.gguf" \
                || not_ok "test_long_words build"
        else
            not_ok "gen_pre_variants.py"
        fi
    else
        not_ok "fuzz_tokenize build"
    fi

    # --- (h) tokenizer goldens: every row of every vocabulary (ids and detokenized
    # bytes identical to the reference library's), through the C API
    TOK=$GOLDEN/tokenizer
    VOCABS=${MINFER_CACHE:-$HOME/.cache/minfer}/vocab
    if [ -d "$TOK" ] && python3 "$ROOT/ffi-tests/corpus_to_hex.py" "$TOK/corpus.json" "$OUT/corpus.hex" \
        && compile test_tokenizer_goldens "$ROOT/ffi-tests/test_tokenizer_goldens.c"; then
        gold() { # NAME MODEL TSV
            if [ ! -f "$2" ]; then not_ok "tokenizer goldens $1: missing $2"; return; fi
            "$OUT/test_tokenizer_goldens" "$2" "$OUT/corpus.hex" "$3" > "$OUT/gold-$1.out" 2>&1
            local counts
            counts=$(grep -E 'rows match$' "$OUT/gold-$1.out" | sed -E 's/.*: ([0-9]+\/[0-9]+) rows match/\1/')
            if tally "$OUT/gold-$1.out" > /dev/null; then
                ok "tokenizer goldens $1: ${counts} rows match"
            else
                not_ok "tokenizer goldens $1: ${counts:-0/?} rows match"; head -n 30 "$OUT/gold-$1.out"
            fi
        }
        gold smollm2-135m "$SMOL" "$TOK/smollm2-135m.tsv"
        gold gemma3-270m "$GEMMA" "$TOK/gemma3-270m.tsv"
        for tsv in "$TOK"/vocab/*.tsv; do
            name=$(basename "$tsv" .tsv)
            gold "$name" "$VOCABS/ggml-vocab-$name.gguf" "$tsv"
        done
    else
        not_ok "tokenizer goldens: missing $TOK or the test did not build"
    fi
}

group_samplers() { # samplers and generation against the reference
    # --- (j) samplers: seed-for-seed parity with the reference (goldens made by
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
    # the models' vocabularies (the program prints SKIP, not counted, if the
    # library in use cannot tokenize)
    REF_GRAMMARS=${MINFER_CACHE:-$HOME/.cache/minfer}/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp/grammars
    if compile vocab_sampler_golden "$ROOT/ffi-tests/vocab_sampler_golden.c"; then
        if "$OUT/vocab_sampler_golden" "$REF_GRAMMARS" "$SMOL" "$GEMMA" > "$OUT/vocab_samplers.txt" 2> "$OUT/vocab_samplers.err"; then
            if grep -q '^SKIP' "$OUT/vocab_samplers.txt"; then
                skip "vocabulary samplers vs the reference: $(head -n 1 "$OUT/vocab_samplers.txt")"
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
    # end to end through llama_sampler_sample on SmolLM2: greedy must equal the
    # reference (64 tokens), and two seeded chains of 128 tokens (top_k 40 → top_p
    # 0.95 → min_p 0.05 → temp 0.8 → dist(seed)): they follow the whole
    # distribution, so they need logits identical to the reference's
    if compile generate_seeded "$ROOT/ffi-tests/generate_seeded.c"; then
        if { "$OUT/generate_seeded" "$SMOL" 64 0 && "$OUT/generate_seeded" "$SMOL" 128 42 43; } > "$OUT/generate_seeded.txt" 2> "$OUT/generate_seeded.err"; then
            if cmp -s <(head -n 1 "$ROOT/ffi-tests/golden/generate_seeded.txt") <(head -n 1 "$OUT/generate_seeded.txt"); then
                ok "greedy generation through llama_sampler_sample equals the reference's (SmolLM2, 64 tokens)"
            else
                not_ok "greedy generation differs from the reference's"; head -n 1 "$OUT/generate_seeded.txt"
            fi
            for seed in 42 43; do
                if cmp -s <(grep "^seed $seed:" "$ROOT/ffi-tests/golden/generate_seeded.txt") <(grep "^seed $seed:" "$OUT/generate_seeded.txt"); then
                    ok "seeded generation (seed $seed, 128 tokens, default chain) equals the reference's token for token"
                else
                    not_ok "seeded generation (seed $seed) differs from the reference's"
                    python3 - "$ROOT/ffi-tests/golden/generate_seeded.txt" "$OUT/generate_seeded.txt" "$seed" <<'PY'
import sys
pick = lambda p: next(l.split(':')[1].split() for l in open(p) if l.startswith(f"seed {sys.argv[3]}:"))
a, b = pick(sys.argv[1]), pick(sys.argv[2])
n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
print(f"     agrees with the reference for {n} of {len(a)} tokens")
PY
                fi
            done
        else
            not_ok "generate_seeded failed"; tail -n 20 "$OUT/generate_seeded.err"
        fi
    else
        not_ok "generate_seeded build"
    fi
    # greedy generation, 64 tokens from each of 10 prompts (prose, code, several
    # languages; golden/greedy/, scripts/make-greedy-goldens.sh): SmolLM2 Q4_1 and
    # Gemma 3 Q4_K_M (Q4_K/Q6_K/Q5_0/Q8_0: the reference's repacked, tiled and
    # vec_dot matmul paths) must give the reference's tokens for every prompt
    if compile greedy_prompts "$ROOT/ffi-tests/greedy_prompts.c"; then
        for m in SmolLM2-135M-Instruct.Q4_1 gemma-3-270m-q4_k_m; do
            [ -f "$MODELS/$m.gguf" ] || continue
            "$OUT/greedy_prompts" "$MODELS/$m.gguf" "$ROOT/ffi-tests/golden/greedy/prompts.txt" 64 > "$OUT/greedy-$m.txt" 2> "$OUT/greedy-$m.err"
            same=$(paste -d'|' "$ROOT/ffi-tests/golden/greedy/$m.txt" "$OUT/greedy-$m.txt" | awk -F'|' '$1 == $2' | wc -l)
            if [ "$same" = 10 ]; then
                ok "greedy generation equals the reference's on $m (10 prompts x 64 tokens)"
            else
                not_ok "greedy generation on $m: $same of 10 prompts equal the reference's"; tail -n 5 "$OUT/greedy-$m.err"
            fi
        done
    else
        not_ok "greedy_prompts build"
    fi
    if compile test_samplers "$ROOT/ffi-tests/test_samplers.c"; then
        run_prog test_samplers "$SMOL"
        under_valgrind test_samplers "$SMOL"
    else
        not_ok "test_samplers build"
    fi
}

group_bindings() { # the installed library, the Go binding, the Swift module map
    # --- installed as a system library (scripts/install.sh into a temporary
    # prefix): SONAME, symlinks, header, pkg-config; examples-c/simple.c built
    # with `pkg-config --libs llama` (shared) and `--static` (libllama.a) generate
    # the same text on SmolLM2
    if [ -f "$SMOL" ] && unsanitized "the installed-library check"; then
        bash "$ROOT/ffi-tests/test_install.sh" "$SMOL" > "$OUT/test_install.out" 2>&1
        relay install $? "$OUT/test_install.out"
    fi

    # --- the Go binding (scripts/test-go.sh: go vet + go test; the prompt ids and
    # 16 greedy tokens equal examples-c/simple.c's)
    if [ -f "$SMOL" ] && unsanitized "the Go binding"; then
        if MINFER_LIB_DIR=$LIB_DIR bash "$ROOT/scripts/test-go.sh" "$SMOL" > "$OUT/test_go.out" 2>&1; then
            ok "go test bindings/go/llama: $(grep -c '^--- PASS' "$OUT/test_go.out") tests pass (greedy tokens equal simple.c's)"
        else
            not_ok "go test bindings/go/llama"; tail -n 30 "$OUT/test_go.out"
        fi
    fi

    # --- the Swift package's module map, through clang's modules (no Swift here)
    if [ -f "$SMOL" ] && unsanitized "the Swift module map"; then
        MINFER_LIB_DIR=$LIB_DIR bash "$ROOT/scripts/test-swift-module.sh" "$SMOL" > "$OUT/test_swift_module.out" 2>&1
        relay "swift module map" $? "$OUT/test_swift_module.out"
    fi
}

group_chat() { # chat templates
    # --- chat templates: every built-in name x 10 conversations x add_ass, the
    # detection of every .jinja template of the reference source and of the
    # models' own templates, short buffers: the output equals the reference's
    # (golden/chat_templates.txt, made by gen_chat_template_golden.sh with the
    # same program on the reference library); also under valgrind
    REF_TEMPLATES=${MINFER_CACHE:-$HOME/.cache/minfer}/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates
    if [ ! -d "$REF_TEMPLATES" ]; then
        not_ok "chat templates: missing $REF_TEMPLATES (run scripts/fetch-reference-src.sh)"
    elif compile chat_template_golden "$ROOT/ffi-tests/chat_template_golden.c"; then
        if "$OUT/chat_template_golden" "$REF_TEMPLATES" "$SMOL" "$GEMMA" \
            "$VOCAB"/ggml-vocab-{command-r,gemma-4,phi-3,qwen2,qwen35}.gguf > "$OUT/chat_templates.txt" 2> "$OUT/chat_templates.err" \
            && diff -u "$ROOT/ffi-tests/golden/chat_templates.txt" "$OUT/chat_templates.txt" > "$OUT/chat_templates.diff"; then
            ok "chat templates equal the reference's ($(grep -c '^apply .* ret=' "$OUT/chat_templates.txt") formatted cases, $(grep -c '^detect .*->' "$OUT/chat_templates.txt") detections, $(grep -c '^buffer' "$OUT/chat_templates.txt") buffer cases)"
        else
            not_ok "chat templates differ from the reference's"; head -n 30 "$OUT/chat_templates.diff"
        fi
        under_valgrind chat_template_golden "$REF_TEMPLATES"
    else
        not_ok "chat_template_golden build"
    fi
    # NULL arguments, failures that leave the buffer alone, a long conversation
    if compile test_chat_api "$ROOT/ffi-tests/test_chat_api.c"; then
        run_prog test_chat_api
        under_valgrind test_chat_api
    else
        not_ok "test_chat_api build"
    fi
}

group_examples() { # the C examples
    # --- the C examples on SmolLM2: chat (the text fed to the model is the chat
    # template's output, replies non-empty), embedding (similarities against the
    # reference's, related pairs above unrelated ones), batched (each sequence
    # equals examples-c/simple.c run alone on its prompt); chat and batched also
    # under valgrind
    EX=$ROOT/examples-c
    if [ -f "$SMOL" ] && compile chat "$EX/chat.c" && compile simple "$EX/simple.c" && compile batched "$EX/batched.c" \
        && gcc "${CFLAGS[@]}" "$EX/embedding.c" -o "$OUT/embedding" "${LDFLAGS[@]}" -lm 2> "$OUT/embedding.build.log"; then
        printf 'What is the capital of France?\nAnd of Germany?\nName a color.\n' > "$OUT/chat_input.txt"
        if "$OUT/chat" "$SMOL" -n 48 --system "You are a concise assistant." --transcript "$OUT/chat_transcript.bin" \
            < "$OUT/chat_input.txt" > "$OUT/chat.out" 2> "$OUT/chat.err" \
            && python3 "$ROOT/ffi-tests/check_chat_transcript.py" "$OUT/chat_input.txt" "$OUT/chat.out" "$OUT/chat_transcript.bin" \
                "You are a concise assistant." > "$OUT/chat_check.txt"; then
            ok "examples-c/chat: greedy, 3 turns, replies non-empty, the text fed equals the template's ($(tail -n 1 "$OUT/chat_check.txt"))"
        else
            not_ok "examples-c/chat"; cat "$OUT/chat_check.txt" 2> /dev/null; tail -n 5 "$OUT/chat.err"
        fi
        if "$OUT/chat" "$SMOL" -n 24 -s 42 --transcript "$OUT/chat_seeded.bin" < "$OUT/chat_input.txt" > "$OUT/chat_seeded.out" 2> /dev/null \
            && python3 "$ROOT/ffi-tests/check_chat_transcript.py" "$OUT/chat_input.txt" "$OUT/chat_seeded.out" "$OUT/chat_seeded.bin" > "$OUT/chat_seeded_check.txt"; then
            ok "examples-c/chat: seeded sampler, no system message ($(tail -n 1 "$OUT/chat_seeded_check.txt"))"
        else
            not_ok "examples-c/chat (seeded)"; cat "$OUT/chat_seeded_check.txt" 2> /dev/null
        fi
        printf 'Hi\n' | under_valgrind chat "$SMOL" -n 3
        if "$OUT/embedding" "$SMOL" > "$OUT/embedding.out" 2> "$OUT/embedding.err" \
            && python3 "$ROOT/ffi-tests/check_embedding.py" "$OUT/embedding.out" "$ROOT/ffi-tests/golden/embedding_smollm2.txt" > "$OUT/embedding_check.txt"; then
            ok "examples-c/embedding: $(tail -n 1 "$OUT/embedding_check.txt")"
        else
            not_ok "examples-c/embedding"; cat "$OUT/embedding_check.txt" "$OUT/embedding.out" 2> /dev/null
        fi
        prompts=("The capital of France is" "Once upon a time" "def fibonacci(n):" "1, 2, 3, 4,")
        if "$OUT/batched" "$SMOL" -n 24 "${prompts[@]}" > "$OUT/batched.out" 2> "$OUT/batched.err" \
            && for i in "${!prompts[@]}"; do echo "sequence $i:"; "$OUT/simple" "$SMOL" -n 24 "${prompts[$i]}" 2> /dev/null || echo "simple failed"; done > "$OUT/batched_alone.out" \
            && cmp -s "$OUT/batched_alone.out" "$OUT/batched.out"; then
            ok "examples-c/batched: ${#prompts[@]} sequences decoded together equal examples-c/simple alone (24 greedy tokens each)"
        else
            not_ok "examples-c/batched differs from simple run alone"; diff "$OUT/batched_alone.out" "$OUT/batched.out" | head -n 20; tail -n 5 "$OUT/batched.err"
        fi
        under_valgrind batched "$SMOL" -n 3 "Hello" "The sky is"
    else
        not_ok "examples-c build (or $SMOL missing)"; cat "$OUT/embedding.build.log" 2> /dev/null
    fi
}

# embed_hash_ok MODEL TOKENS LABEL POOLING THREADS FLASH_ATTN [KV_UNIFIED]: the sha256 of
# parity/embeddings.c's output equals golden/parity/embed.sha256's for LABEL
# (else EMBED_MISS says what differed)
embed_hash_ok() {
    local want got
    want=$(awk -v l="$3" '$2 == l {print $1}' "$PAR/embed.sha256")
    EMBD_KV_UNIFIED=${7:-0} "$OUT/embeddings" "$1" "$2" "$OUT/embed.bin" "$4" "$5" "$6" > /dev/null 2>&1 \
        || : > "$OUT/embed.bin"
    got=$(sha256sum "$OUT/embed.bin" | cut -d' ' -f1)
    EMBED_MISS="$3: sha256 $got, want $want"
    [ -n "$want" ] && [ "$got" = "$want" ]
}

group_embeddings() { # encoders (bert, nomic-bert, jina-bert-v2, neo-bert, modern-bert, gemma-embedding) and pooled embeddings against the reference
    local dir=$OUT/embed gold=$PAR/embed.sha256 run want got n=0 bad=() q minilm
    if ! parity_tools || ! { [ -x "$OUT/quantize_tool" ] || compile quantize_tool "$ROOT/ffi-tests/quantize_tool.c"; } \
        || ! gcc "${CFLAGS[@]}" "$ROOT/ffi-tests/parity/embeddings.c" -o "$OUT/embeddings" "${LDFLAGS[@]}" -lm \
            2> "$OUT/embeddings.build.log"; then
        not_ok "embeddings: the parity tools do not build"; cat "$OUT/embeddings.build.log" 2> /dev/null; return
    fi
    # --- synthetic encoders (parity/embed_cases.sh): the quantized files'
    # bytes, then every run's output, against the reference's sha256
    . "$ROOT/ffi-tests/parity/embed_cases.sh"
    embed_files "$dir" "$ROOT/target/release/examples/synth_model" "$OUT/quantize_tool" "$VOCAB"
    for q in "${EMBED_QUANTIZED[@]}"; do
        want=$(awk -v l="$q-model" '$2 == l {print $1}' "$gold")
        got=$(sha256sum "$dir/$q.gguf" 2> /dev/null | cut -d' ' -f1)
        [ -n "$want" ] && [ "$got" = "$want" ] || bad+=("$q.gguf: sha256 $got, want $want")
    done
    for run in "${EMBED_RUNS[@]}"; do
        set -- $run
        embed_hash_ok "$dir/$1.gguf" "$PAR/tokens-embed-$5.txt" "$1-p$2-t$3-fa$4-$5${6:+-$6}" "$2" "$3" "$4" \
            "$([ -n "${6:-}" ] && echo 1 || echo 0)" || bad+=("$EMBED_MISS")
        n=$((n + 1))
    done
    if [ ${#bad[@]} = 0 ]; then
        ok "synthetic bert, nomic-bert (rope), jina-bert-v2 (ALiBi; GELU, GEGLU, fused GEGLU), neo-bert, modern-bert and gemma-embedding (pre-norm; symmetric windows; dense modules), and qwen3 decoders (a reranker's head) (F32; Q4_K_M, Q8_0, F16 quantized by minfer: the reference's bytes): embeddings bit-identical to the reference ($n runs: pooling NONE/MEAN/CLS/LAST/RANK and the model's, 3 and 4 sequences of mixed lengths in one batch (one-chunk and tiled attention), 1/2 threads, flash attention on and off)"
    else
        not_ok "synthetic encoders: embeddings differ from the reference's"; printf '     %s\n' "${bad[@]}" | head -n 20
    fi
    bad=()
    if gcc "${CFLAGS[@]}" "$ROOT/examples-c/embedding.c" -o "$OUT/embedding" "${LDFLAGS[@]}" -lm 2> /dev/null; then
        for m in "${EMBED_EXAMPLE[@]}"; do
            "$OUT/embedding" "$dir/$m.gguf" > "$OUT/embedding-$m.out" 2> /dev/null \
                && cmp -s "$PAR/embedding-$m.txt" "$OUT/embedding-$m.out" || bad+=("$m")
        done
    else
        bad+=("(build)")
    fi
    if [ ${#bad[@]} = 0 ]; then
        ok "examples-c/embedding on a synthetic model of each encoder family (${EMBED_EXAMPLE[*]}): the reference's output"
    else
        not_ok "examples-c/embedding differs from the reference's on: ${bad[*]}"
    fi
    if EMBD_REPEAT=1 "$OUT/embeddings" "$dir/bert.gguf" "$PAR/tokens-embed-long.txt" "$OUT/embed.bin" 1 2 > /dev/null 2>&1; then
        ok "an encoder's context encodes the same batch twice to the same bits (no memory to clear)"
    else
        not_ok "an encoder's second encode differs from its first"
    fi
    if compile test_encoder "$ROOT/ffi-tests/test_encoder.c" && make_synth llama embed-llama > /dev/null; then
        run_prog test_encoder "$dir/bert.gguf" "$OUT/synth-embed-llama.gguf"
        under_valgrind test_encoder "$dir/bert.gguf" "$OUT/synth-embed-llama.gguf"
    else
        not_ok "test_encoder build"
    fi
    # --- the real all-MiniLM-L6-v2, converted from its safetensors by the
    # reference's convert_hf_to_gguf.py (scripts/fetch-minilm.sh, cached):
    # the file the reference's goldens were made from, embeddings of real
    # sentences, examples-c/embedding.c, llama-cpp-python's embed
    if ! minilm=$(bash "$ROOT/scripts/fetch-minilm.sh" f16 2> "$OUT/fetch-minilm.err"); then
        skip "all-MiniLM-L6-v2: the conversion did not run here ($(tail -n 1 "$OUT/fetch-minilm.err"))"
        return
    fi
    want=$(awk '$2 == "minilm-f16-model" {print $1}' "$gold")
    got=$(sha256sum "$minilm" | cut -d' ' -f1)
    bad=()
    [ "$got" = "$want" ] || bad+=("the converted file: sha256 $got, want $want")
    for run in "-1 2 -1" "0 2 -1" "2 1 -1" "4 2 0" "1 1 0"; do
        set -- $run
        embed_hash_ok "$minilm" "$PAR/tokens-embed-minilm.txt" "minilm-f16-p$1-t$2-fa$3" "$1" "$2" "$3" \
            || bad+=("$EMBED_MISS")
    done
    if [ ${#bad[@]} = 0 ]; then
        ok "all-MiniLM-L6-v2 (F16, converted by the reference's convert_hf_to_gguf.py): embeddings of 4 real sentences bit-identical to the reference (pooling MEAN, NONE, CLS, RANK; 1/2 threads; flash attention on and off)"
    else
        not_ok "all-MiniLM-L6-v2: embeddings differ from the reference's"; printf '     %s\n' "${bad[@]}"
    fi
    if [ -x "$OUT/embedding" ] && "$OUT/embedding" "$minilm" > "$OUT/embedding_minilm.out" 2> /dev/null \
        && diff -u "$ROOT/ffi-tests/golden/embedding_minilm.txt" "$OUT/embedding_minilm.out"; then
        ok "examples-c/embedding on all-MiniLM-L6-v2: the reference's similarities (cat pair 0.649, rates pair 0.656, unrelated below 0.01)"
    else
        not_ok "examples-c/embedding on all-MiniLM-L6-v2 differs from the reference's output"
    fi
    local sdist py
    if unsanitized "llama-cpp-python embed"; then
        sdist=$(bash "$ROOT/scripts/fetch-reference-src.sh" --print-paths | sed -n 1p)
        py=$(bash "$ROOT/scripts/py-venv.sh")
        for q in minilm bert256-q4_k_m; do
            local model=$minilm
            [ $q = minilm ] || model=$dir/$q.gguf
            if PYTHONPATH=$sdist LLAMA_CPP_LIB_PATH=$LIB_DIR "$py" "$ROOT/ffi-tests/python/embed_text.py" "$model" \
                    > "$OUT/embed-$q.json" 2> "$OUT/embed-$q.err" \
                && cmp -s "$ROOT/ffi-tests/python/golden/embed-$q.json" "$OUT/embed-$q.json"; then
                ok "llama-cpp-python Llama(embedding=True).embed / create_embedding on $q: tokens and every float equal the reference's"
            else
                not_ok "llama-cpp-python embed on $q differs from the reference's"; tail -n 5 "$OUT/embed-$q.err"
            fi
        done
    fi
}

group_quantize() { # split models, quantization, saving
    # --- split models, quantization, saving. test_split: a synthetic model in
    # three parts (examples/split_model.rs) loads as the whole file does; broken
    # sets are refused. test_quantize: bad arguments, thread invariance, save
    # round trip. Then our outputs of the quick set of scripts/quantize-compare.sh
    # (SmolLM2 requantized to F16, Q4_K_M, Q8_0; k-quants and IQ4 on 256-wide
    # synthetic models; parameter variants; split input; saving) must have the
    # sha256 of the reference library's (golden/quantize/SHA256SUMS).
    # (the synthetic llama of the parity group, written again when this group runs alone)
    if { [ -f "$OUT/synth-llama.gguf" ] || { parity_tools && make_synth llama; }; } \
        && (cd "$ROOT" && cargo build --release --quiet --features test-hooks --example split_model); then
        SPLIT=$OUT/split && rm -rf "$SPLIT" && mkdir -p "$SPLIT"
        "$ROOT/target/release/examples/split_model" "$OUT/synth-llama.gguf" "$SPLIT/split" 8 > /dev/null
        cp "$SPLIT/split-00001-of-00003.gguf" "$SPLIT/miss-00001-of-00003.gguf"
        cp "$SPLIT/split-00002-of-00003.gguf" "$SPLIT/miss-00002-of-00003.gguf"
        cp "$SPLIT/split-00001-of-00003.gguf" "$SPLIT/renamed.gguf"
        if compile test_split "$ROOT/ffi-tests/test_split.c"; then
            run_prog test_split "$OUT/synth-llama.gguf" "$SPLIT"
            under_valgrind test_split "$OUT/synth-llama.gguf" "$SPLIT"
        else
            not_ok "test_split build"
        fi
        QDIR=$OUT/quantize && rm -rf "$QDIR" && mkdir -p "$QDIR" && cp "$OUT/synth-llama.gguf" "$QDIR/model.gguf"
        if compile test_quantize "$ROOT/ffi-tests/test_quantize.c"; then
            run_prog test_quantize "$QDIR/model.gguf" "$QDIR"
            rm -f "$QDIR"/*.gguf && cp "$OUT/synth-llama.gguf" "$QDIR/model.gguf"
            under_valgrind test_quantize "$QDIR/model.gguf" "$QDIR"
        else
            not_ok "test_quantize build"
        fi
    else
        not_ok "split/quantize tests: no synthetic model or split_model build"
    fi
    if ! unsanitized "quantize-compare.sh --check"; then
        :
    elif MINFER_LIB_DIR=$LIB_DIR bash "$ROOT/scripts/quantize-compare.sh" --check --quick > "$OUT/quantize-check.txt" 2>&1; then
        ok "quantize/save outputs have the reference's sha256 ($(tail -n 1 "$OUT/quantize-check.txt"))"
    else
        not_ok "quantize/save outputs against golden/quantize/SHA256SUMS"; grep -v ' ok$' "$OUT/quantize-check.txt" | tail -n 20
    fi
    # SmolLM2 F16 (the requantization just made by our llama_model_quantize, used
    # only when its sha256 is the reference's): logits bit-identical to the
    # reference's (golden/parity/smollm2-f16.sha256): F16 weights by tinyBLAS
    # from 2 rows and ggml_vec_dot_f16 for one, with and without flash attention.
    # Full comparison with the reference: scripts/parity.sh SmolLM2-F16.
    F16_MODEL=$ROOT/target/quantize-compare/ours/smollm2.F16
    if [ -f "$F16_MODEL" ] && parity_tools \
        && [ "$(sha256sum "$F16_MODEL" | cut -d' ' -f1)" = "$(awk '$2 == "smollm2.F16" {print $1}' "$ROOT/ffi-tests/golden/quantize/SHA256SUMS")" ]; then
        if logits_hash_ok "$F16_MODEL" "$PAR/tokens-smollm2-128.txt" "$PAR/smollm2-f16.sha256" \
            "512 2 128 one-decode" "512 1 128 one-decode" "512 2 7 chunks-of-7" \
            "512 2 128 one-decode-nofa 0" "64 1 128 one-decode-nofa 0" "512 2 1 chunks-of-1-nofa 0" \
            "512 1 1 chunks-of-1-nofa 0"; then
            ok "SmolLM2 F16 logits bit-identical to the reference (flash attention on and off; 1/2 threads; n_ubatch 512/64; chunks of 7 and 1, one thread's decodes as four streams)"
        else
            not_ok "SmolLM2 F16 logits bit-identical to the reference"
        fi
    else
        skip "SmolLM2 F16 logits (no F16 requantization with the reference's sha256 in target/quantize-compare)"
    fi
    # the float matrices are read through 2 MiB pages, in place or from a
    # load-time copy (src/model/repacked.rs): the process holds them once
    if [ -f "$F16_MODEL" ]; then
        compile test_float_copy "$ROOT/ffi-tests/test_float_copy.c" && run_prog test_float_copy "$F16_MODEL" "$SMOL" \
            || not_ok "test_float_copy build"
    fi
}

group_ext() { # libllama-ext (compat/llama-ext.cpp)
    # --- libllama-ext.so (compat/llama-ext.cpp): the C++ staging API of llama.cpp's
    # src/llama-ext.h that its own programs call, on our C API; what it returns on
    # both models equals the reference's (golden/llama_ext.txt, gen_llama_ext_golden.sh)
    REF_EXT_H=${MINFER_CACHE:-$HOME/.cache/minfer}/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp/src
    if [ -f "$REF_EXT_H/llama-ext.h" ]; then
        if g++ -std=c++17 -O2 -Wall -Wextra -Werror -fPIC -shared -I"$ROOT/include" -I"$REF_EXT_H" "$ROOT/compat/llama-ext.cpp" \
                -o "$OUT/libllama-ext.so" -L"$LIB_DIR" -lllama -ldl 2> "$OUT/llama_ext.build.log" \
            && g++ -std=c++17 -Wall -Wextra -Werror -g -I"$ROOT/include" -I"$REF_EXT_H" "$ROOT/ffi-tests/test_llama_ext.cpp" \
                -o "$OUT/test_llama_ext" "${LDFLAGS[@]}" -L"$OUT" -lllama-ext -Wl,-rpath,"$OUT" 2>> "$OUT/llama_ext.build.log"; then
            if "$OUT/test_llama_ext" "$SMOL" "$GEMMA" > "$OUT/llama_ext.txt" 2> "$OUT/llama_ext.err" \
                && diff -u "$ROOT/ffi-tests/golden/llama_ext.txt" "$OUT/llama_ext.txt"; then
                ok "libllama-ext: the llama-ext.h functions answer as the reference's on both models"
            else
                not_ok "libllama-ext: the llama-ext.h functions answer as the reference's on both models"
            fi
            run_prog test_llama_ext --minfer "$SMOL"
            under_valgrind test_llama_ext --minfer "$SMOL"
        else
            cat "$OUT/llama_ext.build.log"; not_ok "libllama-ext build"
        fi
    else
        not_ok "no $REF_EXT_H/llama-ext.h (run scripts/fetch-reference-src.sh)"
    fi
}

group_python() { # llama-cpp-python 0.3.36
    # --- llama-cpp-python 0.3.36, unchanged (its pure-Python package from the sdist),
    # on our library: two groups, the API's behaviour and the outputs that follow the
    # logits compared with the reference's (golden made by ffi-tests/python/run.sh --record)
    if ! unsanitized "llama-cpp-python"; then
        :
    elif MINFER_LIB_DIR=$LIB_DIR bash "$ROOT/ffi-tests/python/run.sh" > "$OUT/llama_cpp_python.out" 2> "$OUT/llama_cpp_python.err" \
        || grep -q '^llama_cpp_python_vs_reference: ' "$OUT/llama_cpp_python.out"; then
        while read -r _ what; do skip "llama-cpp-python: $what"; done < <(grep -E '^skip ' "$OUT/llama_cpp_python.out")
        line=$(grep -E "^llama_cpp_python_behaviour: [0-9]+ passed, [0-9]+ failed$" "$OUT/llama_cpp_python.out")
        if [ -n "$line" ] && [ "$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')" = 0 ]; then
            ok "llama-cpp-python behaviour (${line#*: })"
        else
            not_ok "llama-cpp-python behaviour (${line#*: })"; grep -E '^FAIL ' "$OUT/llama_cpp_python.out" || true
        fi
        # outputs that follow the logits (text, log-probabilities, embeddings; flash
        # attention off, llama-cpp-python's default, and on): identical to the reference's
        line=$(grep -E "^llama_cpp_python_vs_reference: [0-9]+ passed, [0-9]+ failed$" "$OUT/llama_cpp_python.out")
        if [ -n "$line" ] && [ "$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')" = 0 ]; then
            ok "llama-cpp-python outputs identical to the reference's (${line#*: })"
        else
            not_ok "llama-cpp-python outputs identical to the reference's (${line#*: })"; grep -E '^FAIL ' "$OUT/llama_cpp_python.out" || true
        fi
    else
        not_ok "llama-cpp-python test did not run"; tail -n 30 "$OUT/llama_cpp_python.err" "$OUT/llama_cpp_python.out"
    fi
    # create_completion on the synthetic Q4_K_M model of each family of
    # golden/parity/families.txt: text and log-probabilities equal the reference's
    if unsanitized "llama-cpp-python on the families"; then
        local sdist py family sizes
        sdist=$(bash "$ROOT/scripts/fetch-reference-src.sh" --print-paths | sed -n 1p)
        py=$(bash "$ROOT/scripts/py-venv.sh")
        while read -r family sizes; do
            case $family in ''|'#'*) continue ;; esac
            # shellcheck disable=SC2086
            if family_q4_k_m "$family" $sizes \
                && PYTHONPATH=$sdist LLAMA_CPP_LIB_PATH=$LIB_DIR "$py" "$ROOT/ffi-tests/python/family_completion.py" \
                    "$OUT/fam-$family-q4_k_m.gguf" > "$OUT/family-$family.json" 2> "$OUT/family-$family.err" \
                && diff -u "$ROOT/ffi-tests/python/golden/family-$family.json" "$OUT/family-$family.json"; then
                ok "llama-cpp-python create_completion on synthetic $family (Q4_K_M): text and log-probabilities equal the reference's"
            else
                not_ok "llama-cpp-python create_completion on synthetic $family"; tail -n 5 "$OUT/family-$family.err"
            fi
        done < "$PAR/families.txt"
    fi
}

group_state() { # state and session files
    # --- state and session files (src/context/state.rs): the API from C (round
    # trips continue with bit-identical logits; failed restores -- another model,
    # a small context, every truncation, damaged files -- leave the context as it
    # was; also under valgrind), and the reference's own files (golden/state/,
    # made by scripts/make-state-goldens.sh; scripts/state-interop.sh is the
    # two-library check): minfer loads them as state, session, sequence state and
    # sequence file, saves them back byte for byte, continues with the
    # reference's next tokens, and saves the same structure for the same work
    if [ -f "$SMOL" ] && [ -f "$GEMMA" ]; then
        mkdir -p "$OUT/state-tmp"
        if compile test_state "$ROOT/ffi-tests/test_state.c"; then
            run_prog test_state "$SMOL" "$GEMMA" "$OUT/state-tmp"
            export STATE_QUICK=1
            under_valgrind test_state "$SMOL" "$GEMMA" "$OUT/state-tmp"
            unset STATE_QUICK
        else
            not_ok "test_state build"
        fi
        if compile state_interop "$ROOT/ffi-tests/state_interop.c"; then
            for g in "$ROOT"/ffi-tests/golden/state/*/; do
                name=$(basename "$g")
                # tolerances: the libraries' numerics (K/V values, logits) differ by
                # up to ~0.3 on SmolLM2 and ~1.3 on gemma-3 (measured: 0.26 / 1.27 K/V, 0.31 / 0.73 logits)
                case $name in
                    gemma3*) model=$GEMMA; kv_tol=2; logit_tol=1.5 ;;
                    *) model=$SMOL; kv_tol=0.5; logit_tol=0.6 ;;
                esac
                d=$OUT/state-$name && rm -rf "$d" && mkdir -p "$d/gold" "$d/load" "$d/ours"
                python3 "$ROOT/scripts/state_file.py" derive "$g/session.bin" "$d/gold"
                # shellcheck disable=SC2046
                if env $(cat "$g/env.txt") "$OUT/state_interop" load "$model" "$d/gold" "$d/load" 2> "$d/load.err" \
                    && env $(cat "$g/env.txt") "$OUT/state_interop" save "$model" "$d/ours" 2> "$d/save.err"; then
                    for k in state session seq seqfile; do
                        if cmp -s "$d/load/resave-$k.bin" "$d/gold/$k.bin" \
                            && python3 "$ROOT/ffi-tests/state_golden.py" check "$d/load/$k.logits" "$g/top10.txt" "$logit_tol" > "$d/$k.logits.txt" \
                            && python3 "$ROOT/scripts/state_file.py" compare "$d/gold/$k.bin" "$d/ours/$k.bin" "$kv_tol" > "$d/$k.struct.txt"; then
                            ok "state $name/$k from the reference: loads, saves back byte for byte, $(cat "$d/$k.logits.txt"); ours: $(cat "$d/$k.struct.txt")"
                        else
                            not_ok "state $name/$k from the reference"; cat "$d/$k.logits.txt" "$d/$k.struct.txt" 2> /dev/null
                        fi
                    done
                    # one token attends only to itself: the reference's K/V bytes and ours agree exactly
                    if [ "$name" = smollm2-vtrans ]; then
                        if cmp -s "$d/gold/session.bin" "$d/ours/session.bin"; then
                            ok "state $name: the session file minfer saves is byte-identical to the reference's"
                        else
                            not_ok "state $name: the session file minfer saves differs from the reference's"
                        fi
                    fi
                else
                    not_ok "state $name: state_interop failed"; tail -n 5 "$d/load.err" "$d/save.err"
                fi
            done
        else
            not_ok "state_interop build"
        fi
    fi
}

# --- the groups to run: all, or those named on the command line
ALL_GROUPS=(abi boundary models parity embeddings bad_gguf vocab tokenizer samplers bindings chat examples quantize ext python state)
if [ $# = 0 ]; then
    groups=("${ALL_GROUPS[@]}")
else
    groups=("$@")
fi
for g in "${groups[@]}"; do
    declare -F "group_$g" > /dev/null || { echo "run.sh: unknown group '$g' (try --list)" >&2; exit 2; }
done
[ -f "$LIB_DIR/libllama.so" ] || { echo "no $LIB_DIR/libllama.so: build the library first (cargo build --release --features test-hooks)"; exit 1; }

for g in "${groups[@]}"; do
    echo "--- group $g"
    "group_$g"
done

echo "ffi-tests: $pass passed, $fail failed, $skipped skipped"
[ "$fail" = 0 ]
