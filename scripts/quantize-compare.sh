#!/usr/bin/env bash
# quantize-compare.sh — llama_model_quantize and llama_model_save_to_file
# against the reference library, byte for byte, and the goldens the test
# command checks without it.
#
#   scripts/quantize-compare.sh            every case on both libraries: prints
#                                          "case  IDENTICAL|DIFF" and rewrites
#                                          ffi-tests/golden/quantize/SHA256SUMS
#                                          (sha256 of the reference's outputs)
#   scripts/quantize-compare.sh --check [--quick]
#                                          our library only: every case (or the
#                                          quick subset) must give the golden sha256
#
# The one C client of each API (ffi-tests/quantize_tool.c, save_tool.c) is
# compiled once against include/llama.h and run with LD_LIBRARY_PATH at our
# target/release or at the reference's lib dir (scripts/install-reference-lib.sh).
# Inputs: SmolLM2-135M-Instruct Q4_1 (scripts/fetch-models.sh), its F16
# requantization (itself a case), synthetic F32 models from
# examples/synth_model.rs on the llama-spm / qwen2 vocabularies
# (scripts/fetch-reference-src.sh): llama/gemma3 with rows of 256 for the
# k-quants (8 and 6 layers, so the per-layer bumps show), an 8-expert
# qwen3moe at 256 (the n_expert == 8 rules, 3-D expert tensors) and the small
# 2-layer models of the parity tests, one of them split in 3 parts by
# examples/split_model.rs. Cases: every file type minfer quantizes on SmolLM2
# F16 and on both 256-wide models, parameter variants, split input with and
# without keep_split, importance matrices (examples/synth_imatrix.rs: GGUF
# and legacy .dat, read by quantize_tool as llama-quantize reads them) on the
# weighted quantizers, and saving models of the families.
# Output in target/quantize-compare/. Exit status 1 if any case differs.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
OUT=$ROOT/target/quantize-compare
SUMS=$ROOT/ffi-tests/golden/quantize/SHA256SUMS
mkdir -p "$OUT/in" "$OUT/ours" "$OUT/ref"

check=0 quick=0
for a in "$@"; do
    case $a in
        --check) check=1 ;;
        --quick) quick=1 ;;
        *) echo "usage: $0 [--check [--quick]]" >&2; exit 2 ;;
    esac
done

OURS=${MINFER_LIB_DIR:-$ROOT/target/release}
if [ $check = 0 ]; then
    REF=$(bash scripts/install-reference-lib.sh --print-lib-dir) || { echo "build the reference first: scripts/install-reference-lib.sh" >&2; exit 1; }
    : > "$OUT/SHA256SUMS.new"
fi

# --- tools and inputs
[ -f "$OURS/libllama.so" ] || cargo build --release --quiet --features test-hooks || exit 1
cargo build --release --quiet --features test-hooks --example synth_model --example split_model --example synth_imatrix || exit 1
for t in quantize_tool save_tool; do
    gcc -O2 -std=c11 -Wall -Wextra -Werror -Iinclude "ffi-tests/$t.c" -o "$OUT/$t" -L"$OURS" -lllama || exit 1
done
SMOL=$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
VOCAB=$CACHE/vocab
[ -f "$SMOL" ] || bash scripts/fetch-models.sh smollm2 > /dev/null || exit 1
[ -f "$VOCAB/ggml-vocab-llama-spm.gguf" ] || bash scripts/fetch-reference-src.sh > /dev/null || exit 1
synth() { # NAME ARCH VOCAB SEED N_VOCAB [KEY=N...]
    local name=$1; shift
    local arch=$1 voc=$2; shift 2
    [ -f "$OUT/in/$name.gguf" ] || target/release/examples/synth_model "$arch" "$VOCAB/ggml-vocab-$voc.gguf" "$OUT/in/$name.gguf" "$@" || exit 1
}
synth synth-llama256 llama llama-spm 7 512 embd=256 layers=8 heads=4 kv_heads=1 head_dim=64 ff=512
synth synth-gemma256 gemma3 llama-spm 7 512 embd=256 layers=6 heads=4 kv_heads=2 head_dim=64 ff=768
synth synth-llama llama llama-spm 11 512
synth synth-qwen2 qwen2 qwen2 11 512
synth synth-qwen3 qwen3 qwen2 11 512
synth synth-gemma3 gemma3 llama-spm 11 512
for f in gemma2 olmo2; do synth "synth-$f" "$f" llama-spm 11 512; done
synth synth-phi3 phi3 llama-spm 11 512 fused_qkv=1
synth synth-granite granite llama-spm 11 512 optional=1
synth synth-phi2 phi2 llama-spm 11 512 fused_qkv=1 rot=8 optional=1
synth synth-starcoder2 starcoder2 llama-spm 11 512 optional=1
synth synth-stablelm stablelm llama-spm 11 512 rot=8 optional=1
synth synth-gpt2 gpt2 llama-spm 11 512 fused_qkv=1
synth synth-falcon falcon llama-spm 11 512 fused_qkv=1 optional=1
synth synth-exaone4 exaone4 llama-spm 11 512
synth synth-cohere2 cohere2 llama-spm 11 512
synth synth-qwen3-yarn qwen3 qwen2 11 512 scaling=yarn factor=4 orig_ctx=128
synth synth-phi3-longrope phi3 llama-spm 11 512 fused_qkv=1 scaling=longrope orig_ctx=128 attn_factor=1.19
synth synth-mistral3 mistral3 llama-spm 11 512 scaling=yarn factor=4 orig_ctx=8
synth synth-stablelm-12b stablelm llama-spm 11 512 rot=8 optional=1 ffn_norm=0
# mixture of experts: 8 experts (the reference's n_expert == 8 rules), 3-D
# expert tensors; a 256-wide qwen3moe with experts of 256 rows for the k-quants
synth synth-qwen3moe256 qwen3moe qwen2 7 512 embd=256 layers=8 heads=4 kv_heads=2 head_dim=64 ff=512
synth synth-qwen3moe qwen3moe qwen2 11 512
synth synth-qwen2moe qwen2moe qwen2 11 512
synth synth-olmoe olmoe llama-spm 11 512 kv_heads=4
synth synth-granitemoe granitemoe llama-spm 11 512 optional=1 shexp=64
synth synth-llama-moe llama llama-spm 11 512 experts=8
synth synth-gpt-oss gpt-oss llama-spm 11 512 optional=1 scaling=yarn factor=4 orig_ctx=64
synth synth-dots1 dots1 llama-spm 11 512 experts=8 layers=3 kv_heads=4
synth synth-dots1-256 dots1 llama-spm 7 512 embd=256 layers=4 heads=4 kv_heads=4 head_dim=64 ff=512
# importance matrices (examples/synth_imatrix.rs) in the imatrix GGUF and the
# legacy .dat format; quantize_tool reads them as llama-quantize --imatrix does
imatrix() { # MODEL FORMAT [KEY=V...]
    local m=$1 fmt=$2; shift 2
    [ -f "$OUT/in/$m.imatrix.$fmt" ] || target/release/examples/synth_imatrix "$OUT/in/$m.gguf" "$OUT/in/$m.imatrix.$fmt" format="$fmt" "$@" 2> /dev/null || exit 1
}
imatrix synth-llama256 gguf
imatrix synth-llama256 dat
imatrix synth-qwen3moe256 gguf zero_count=1
[ -f "$OUT/in/split-00001-of-00003.gguf" ] || target/release/examples/split_model "$OUT/in/synth-llama.gguf" "$OUT/in/split" 8 > /dev/null || exit 1

n_ok=0 n_bad=0
report() { # CASE STATUS
    printf '%-44s %s\n' "$1" "$2"
    if [ "$2" = IDENTICAL ] || [ "$2" = ok ]; then n_ok=$((n_ok + 1)); else n_bad=$((n_bad + 1)); fi
}

# run_case NAME KIND INPUT ARGS... : KIND q (quantize_tool IN OUT ARGS) or s
# (save_tool IN OUT). Outputs go to $OUT/{ours,ref}/NAME (+ split parts).
run_case() {
    local name=$1 kind=$2 input=$3; shift 3
    local lib dir outs
    for side in ours ref; do
        [ $check = 1 ] && [ $side = ref ] && continue
        lib=$OURS; [ $side = ref ] && lib=$REF
        dir=$OUT/$side
        rm -f "$dir/$name" "$dir/$name"-0000*
        if [ "$kind" = q ]; then
            LD_LIBRARY_PATH=$lib "$OUT/quantize_tool" "$input" "$dir/$name" "$@" 2> "$dir/$name.err"
        else
            LD_LIBRARY_PATH=$lib "$OUT/save_tool" "$input" "$dir/$name" 2> "$dir/$name.err"
        fi
        echo $? > "$dir/$name.rc"
    done
    # the files of a case: NAME, or its parts with keep_split
    outs=$(cd "$OUT/ours" && ls -1 "$name" "$name"-0000*-of-*.gguf 2> /dev/null)
    [ $check = 0 ] && outs=$( (cd "$OUT/ref" && ls -1 "$name" "$name"-0000*-of-*.gguf 2> /dev/null; cd "$OUT/ours" && ls -1 "$name" "$name"-0000*-of-*.gguf 2> /dev/null) | sort -u)
    if [ -z "$outs" ]; then
        # no file from either side: a refusal, recorded as the reference's
        # ("refused  NAME" in SHA256SUMS) when both refuse with the same
        # message (e.g. Q1_0 on a model whose rows are not whole 128-blocks:
        # there is no fallback type)
        local msg
        msg=$(grep -o 'no tensor type fallback[^"]*\|failed to quantize: .*' "$OUT/ours/$name.err" | tail -n 1)
        if [ $check = 1 ]; then
            if [ -n "$msg" ] && grep -q "^refused  $name\$" "$SUMS"; then report "$name" ok
            else report "$name" "FAIL (no output; $(tail -n 1 "$OUT/ours/$name.err"))"; fi
        elif [ -n "$msg" ] && grep -qF "$(echo "$msg" | sed 's/.*: //')" "$OUT/ref/$name.err"; then
            echo "refused  $name" >> "$OUT/SHA256SUMS.new"
            report "$name" ok
        else
            report "$name" "FAIL (no output; $(tail -n 1 "$OUT/ours/$name.err"))"
        fi
        return
    fi
    for f in $outs; do
        if [ $check = 1 ]; then
            want=$(awk -v n="$f" '$2 == n { print $1 }' "$SUMS")
            got=$(sha256sum "$OUT/ours/$f" | cut -d' ' -f1)
            if [ -z "$want" ]; then report "$f" "FAIL (no golden)"
            elif [ "$got" = "$want" ]; then report "$f" ok
            else report "$f" "FAIL (sha256 differs from the reference's)"; fi
        else
            if [ -f "$OUT/ref/$f" ]; then
                echo "$(sha256sum "$OUT/ref/$f" | cut -d' ' -f1)  $f" >> "$OUT/SHA256SUMS.new"
            fi
            if cmp -s "$OUT/ours/$f" "$OUT/ref/$f"; then report "$f" IDENTICAL
            else report "$f" "DIFF ($(cmp "$OUT/ours/$f" "$OUT/ref/$f" 2>&1 | head -n 1))"; fi
        fi
    done
}

# llama_ftype values of the file types minfer quantizes to
FTYPES="F32:0 F16:1 BF16:32 Q4_0:2 Q4_1:3 Q5_0:8 Q5_1:9 Q8_0:7 Q2_K:10 Q3_K_S:11 Q3_K_M:12 Q3_K_L:13 Q4_K_S:14 Q4_K_M:15 Q5_K_S:16 Q5_K_M:17 Q6_K:18 IQ4_NL:25 IQ4_XS:30 MXFP4_MOE:38 TQ1_0:36 TQ2_0:37 Q1_0:40 Q2_0:41"
QUICK_SMOL="Q4_K_M:15 Q8_0:7"
QUICK_SYNTH="Q4_0:2 Q5_1:9 Q2_K:10 Q3_K_M:12 Q4_K_M:15 Q5_K_S:16 Q6_K:18 IQ4_NL:25 IQ4_XS:30"

# --- SmolLM2: Q4_1 -> F16 (requantized), then F16 -> every type
run_case smollm2.F16 q "$SMOL" 1 requant
F16=$OUT/ours/smollm2.F16
list=$FTYPES; [ $quick = 1 ] && list=$QUICK_SMOL
for t in $list; do
    [ "${t%%:*}" = F16 ] && continue
    run_case "smollm2-f16.${t%%:*}" q "$F16" "${t##*:}"
done

# --- the 256-wide synthetic models: every type (quick: a subset)
list=$FTYPES; [ $quick = 1 ] && list=$QUICK_SYNTH
for m in synth-llama256 synth-gemma256 synth-qwen3moe256; do
    for t in $list; do
        [ $quick = 1 ] && [ $m != synth-llama256 ] && [ "${t%%:*}" != Q4_K_M ] && continue
        run_case "$m.${t%%:*}" q "$OUT/in/$m.gguf" "${t##*:}"
    done
done

# --- parameters (on synth-llama256)
L=$OUT/in/synth-llama256.gguf
run_case synth-llama256.Q4_K_M+pure q "$L" 15 pure
run_case synth-llama256.Q4_K_M+keep_output_f q "$L" 15 keep_output_f
run_case synth-llama256.Q4_K_M+only_copy q "$L" 15 only_copy
run_case synth-llama256.Q4_K_M+types q "$L" 15 output_type=8 embd_type=14
run_case synth-llama256.Q3_K_M+kv q "$L" 12 kv=general.name:str:renamed kv=llama.context_length:int:-4096 kv=x.f:float:0.5 kv=x.b:bool:1
run_case synth-llama256.Q4_0+prune q "$L" 2 prune=1,3
run_case synth-llama256.IQ4_NL+imatrix_empty q "$L" 25 imatrix_empty
run_case synth-llama256.Q4_K_M+tt q "$L" 15 'tt=blk\.[0-3]\.ffn:14'
run_case synth-llama256.Q8_0+mxfp4 q "$L" 7 'tt=blk\.:39'
# importance matrices: the weighted quantizers, and the type choices that
# depend on having one (the path, written into the metadata by the tool as by
# llama-quantize, is relative to the repository so the bytes do not depend on
# where it is)
IM=${OUT#"$ROOT"/}/in
for t in Q4_0:2 Q4_1:3 Q5_0:8 Q5_1:9 Q2_K:10 Q3_K_M:12 Q4_K_M:15 Q5_K_S:16 Q6_K:18 IQ4_NL:25 IQ4_XS:30; do
    run_case "synth-llama256.${t%%:*}+imatrix" q "$L" "${t##*:}" "imatrix=$IM/synth-llama256.imatrix.gguf"
done
run_case synth-llama256.Q4_K_M+imatrix_dat q "$L" 15 "imatrix=$IM/synth-llama256.imatrix.dat"
# the IQ1-IQ3 file types (their grid searches), with the imatrix and, where
# the reference allows it, without (IQ3_XXS without one: its attn_k is IQ2_S,
# which needs one; both libraries refuse)
for t in IQ2_XXS:19 IQ2_XS:20 Q2_K_S:21 IQ3_XS:22 IQ3_XXS:23 IQ1_S:24 IQ3_S:26 IQ3_M:27 IQ2_S:28 IQ2_M:29 IQ1_M:31; do
    run_case "synth-llama256.${t%%:*}+imatrix" q "$L" "${t##*:}" "imatrix=$IM/synth-llama256.imatrix.gguf"
done
for t in IQ3_S:26 IQ3_M:27; do
    run_case "synth-llama256.${t%%:*}" q "$L" "${t##*:}"
done
run_case synth-llama256.IQ1_M+imatrix_dat q "$L" 31 "imatrix=$IM/synth-llama256.imatrix.dat"
run_case synth-qwen3moe256.IQ2_XXS+imatrix q "$OUT/in/synth-qwen3moe256.gguf" 19 "imatrix=$IM/synth-qwen3moe256.imatrix.gguf"
run_case synth-qwen3moe256.Q4_K_M+imatrix q "$OUT/in/synth-qwen3moe256.gguf" 15 "imatrix=$IM/synth-qwen3moe256.imatrix.gguf"
# dots1: a dense first layer, then experts with a shared expert (Q4_K_M's
# per-layer choices see both kinds of layer)
run_case synth-dots1-256.Q4_K_M q "$OUT/in/synth-dots1-256.gguf" 15
if [ $quick = 0 ]; then
    run_case synth-llama256.Q4_K_M+nthread1 q "$L" 15 nthread=1
    run_case synth-llama256.IQ4_NL+imatrix_unused q "$L" 25 imatrix_unused
    run_case synth-llama256.Q8_0+requant q "$OUT/ours/synth-llama256.Q4_K_M" 7 requant
fi

# --- split input: merged, and kept in parts
run_case split.Q4_0 q "$OUT/in/split-00001-of-00003.gguf" 2
run_case split.Q4_0+keep_split q "$OUT/in/split-00001-of-00003.gguf" 2 keep_split

# --- llama_model_save_to_file
for m in synth-llama synth-qwen2 synth-qwen3 synth-gemma3 synth-gemma256 synth-gemma2 synth-olmo2 synth-granite synth-phi3 \
    synth-phi2 synth-starcoder2 synth-stablelm synth-gpt2 synth-falcon synth-exaone4 synth-cohere2 \
    synth-qwen3-yarn synth-phi3-longrope synth-mistral3 synth-stablelm-12b synth-qwen3moe synth-qwen2moe synth-olmoe \
    synth-granitemoe synth-llama-moe synth-gpt-oss synth-dots1; do
    run_case "save.$m" s "$OUT/in/$m.gguf"
done
run_case save.smollm2-q4_1 s "$SMOL"

if [ $check = 1 ]; then
    echo "quantize-compare: $n_ok outputs have the reference's sha256, $n_bad do not"
else
    echo "quantize-compare: $n_ok identical, $n_bad not"
fi
if [ $check = 0 ]; then
    mkdir -p "$(dirname "$SUMS")"
    mv "$OUT/SHA256SUMS.new" "$SUMS"
    echo "wrote $SUMS ($(wc -l < "$SUMS") reference outputs)"
fi
[ $n_bad = 0 ]
