#!/usr/bin/env bash
# Regenerates the forward-pass goldens of ffi-tests/golden/parity/ with the
# reference library: for each synthetic model (random F32 weights, 2 layers,
# a reference vocabulary cut to 512 tokens; see examples/synth_model.rs), the
# teacher-forced logits of tokens512.txt, as written by ffi-tests/parity/logits.c.
#
# Needs the reference library (scripts/install-reference-lib.sh) and the vocab
# files (scripts/fetch-reference-src.sh).
# usage: scripts/make-parity-goldens.sh [--families FAMILY...]
# (--families: only the goldens of those lines of golden/parity/families.txt)
set -euo pipefail
ONLY=""
if [ "${1:-}" = "--families" ]; then
    shift
    ONLY=" $* "
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=$(bash scripts/install-reference-lib.sh --print-lib-dir)
OUT=target/parity && mkdir -p "$OUT"
cargo build --release --quiet --example synth_model
gcc -O2 -std=c11 -Iinclude ffi-tests/parity/logits.c -o "$OUT/logits" -L"$REF_LIB" -lllama -lm
gcc -O2 -std=c11 -Iinclude ffi-tests/parity/embd_logits.c -o "$OUT/embd_logits" -L"$REF_LIB" -lllama
# ref_hashes MODEL TOKENS OUT.sha256 "CHUNK LABEL [FLASH_ATTN]"...: sha256 of
# the reference's logits (n_ubatch $UBATCH or 512, $THREADS or 2 threads) decoding CHUNK
# tokens at a time, with flash_attn_type FLASH_ATTN (default -1: AUTO, on for the CPU)
ref_hashes() {
    local model=$1 tok=$2 out=$3 run
    shift 3
    : > "$out"
    for run in "$@"; do
        set -- $run
        LD_LIBRARY_PATH=$REF_LIB "$OUT/logits" "$model" "$tok" "$OUT/ref-hash.bin" "${UBATCH:-512}" "${THREADS:-2}" "$1" \
            "${3:--1}" 2> /dev/null
        echo "$(sha256sum "$OUT/ref-hash.bin" | cut -d' ' -f1)  $2" >> "$out"
    done
}
if [ -z "$ONLY" ]; then
    for arch in llama qwen2 qwen3 gemma3; do
        vocab=llama-spm; case $arch in qwen*) vocab=qwen2 ;; esac
        target/release/examples/synth_model "$arch" "$CACHE/vocab/ggml-vocab-$vocab.gguf" "$OUT/synth-$arch.gguf" 11 512
        LD_LIBRARY_PATH=$REF_LIB "$OUT/logits" "$OUT/synth-$arch.gguf" ffi-tests/golden/parity/tokens512.txt \
            "ffi-tests/golden/parity/synth-$arch.ref.bin" 2> /dev/null
    done
    # SmolLM2 Q4_1, 128 tokens: in one decode (tiled flash attention) and in
    # decodes of 32 (one-chunk attention); without flash attention (flash_attn_type
    # 0) in one decode (tinyBLAS KQ/KQV) and in decodes of 1 (ggml_vec_dot_f16)
    ref_hashes "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" ffi-tests/golden/parity/tokens-smollm2-128.txt \
        ffi-tests/golden/parity/smollm2-q4_1.sha256 "128 one-decode" "32 chunks-of-32" \
        "128 one-decode-nofa 0" "1 chunks-of-1-nofa 0"
    # SmolLM2 Q4_1, 300 tokens decoded one at a time: from cell 256 on the
    # reference's view holds 512 cells and its one-token flash attention
    # splits them into one chunk per thread (1, 2, 3 threads: their bits
    # differ)
    for t in 1 2 3; do
        THREADS=$t ref_hashes "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" \
            ffi-tests/golden/parity/tokens-smollm2-300.txt "$OUT/split-kv-$t.sha256" "1 split-kv-t$t"
    done
    cat "$OUT"/split-kv-[123].sha256 > ffi-tests/golden/parity/smollm2-q4_1-split-kv.sha256
    # Gemma 3 270M Q4_K_M (Q4_K repacked gemm/gemv, Q6_K tiled/vec_dot, Q5_0,
    # Q8_0), 128 tokens: in one decode and in decodes of 7 (gemm on 4 rows + gemv
    # on 3, k-quant vec_dot below 8 rows)
    ref_hashes "$CACHE/models/gemma-3-270m-q4_k_m.gguf" ffi-tests/golden/parity/tokens-gemma3-128.txt \
        ffi-tests/golden/parity/gemma3-q4_k_m.sha256 "128 one-decode" "7 chunks-of-7" \
        "128 one-decode-nofa 0" "7 chunks-of-7-nofa 0" "1 chunks-of-1-nofa 0"
    # SmolLM2 requantized to BF16 by the reference (llama_model_quantize with
    # allow_requantize; minfer's quantize writes the same bytes, which is how
    # run.sh makes it), 128 tokens: in one decode (llamafile's tinyBLAS<32> with
    # vdpbf16ps), token by token (ggml_vec_dot_bf16) and in decodes of 7
    BF16=$OUT/SmolLM2-135M-Instruct.BF16.gguf
    REF_PY=$(echo "$REF_LIB" | sed "s|/lib/python3[^/]*/.*||")/bin/python
    "$REF_PY" - "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$BF16" <<'PY' > /dev/null 2>&1
import ctypes, sys, llama_cpp
p = llama_cpp.llama_model_quantize_default_params()
p.ftype = 32; p.allow_requantize = True  # LLAMA_FTYPE_MOSTLY_BF16
sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p)))
PY
    echo "$(sha256sum "$BF16" | cut -d' ' -f1)  model" > ffi-tests/golden/parity/smollm2-bf16.sha256
    ref_hashes "$BF16" ffi-tests/golden/parity/tokens-smollm2-128.txt ffi-tests/golden/parity/smollm2-bf16.sha256.tmp \
        "128 one-decode" "1 token-by-token" "7 chunks-of-7"
    cat ffi-tests/golden/parity/smollm2-bf16.sha256.tmp >> ffi-tests/golden/parity/smollm2-bf16.sha256
    rm ffi-tests/golden/parity/smollm2-bf16.sha256.tmp
    # Embedding inputs (ffi-tests/parity/embd_logits.c: batches of token_embd
    # rows instead of token ids): sha256 of the reference's logits for the
    # synthetic llama, qwen3 and gemma3 models (512 tokens in one decode) and
    # SmolLM2 BF16 (128 tokens in decodes of 7)
    : > ffi-tests/golden/parity/embd.sha256
    for arch in llama qwen3 gemma3; do
        LD_LIBRARY_PATH=$REF_LIB "$OUT/embd_logits" "$OUT/synth-$arch.gguf" ffi-tests/golden/parity/tokens512.txt "$OUT/embd.bin" 2> /dev/null
        echo "$(sha256sum "$OUT/embd.bin" | cut -d' ' -f1)  synth-$arch" >> ffi-tests/golden/parity/embd.sha256
    done
    LD_LIBRARY_PATH=$REF_LIB "$OUT/embd_logits" "$BF16" ffi-tests/golden/parity/tokens-smollm2-128.txt "$OUT/embd.bin" 7 2> /dev/null
    echo "$(sha256sum "$OUT/embd.bin" | cut -d' ' -f1)  smollm2-bf16-chunks-of-7" >> ffi-tests/golden/parity/embd.sha256
    # SmolLM2 requantized to F16 by the reference (scripts/parity.sh caches it;
    # ffi-tests/run.sh uses the byte-identical file our llama_model_quantize makes
    # in scripts/quantize-compare.sh): F16 weights by tinyBLAS / ggml_vec_dot_f16
    ref_hashes "$CACHE/requant/SmolLM2-135M-Instruct.F16.gguf" ffi-tests/golden/parity/tokens-smollm2-128.txt \
        ffi-tests/golden/parity/smollm2-f16.sha256 "128 one-decode" "7 chunks-of-7" \
        "128 one-decode-nofa 0" "1 chunks-of-1-nofa 0"
    # SmolLM2 Q4_1, 300 tokens decoded one at a time: from cell 256 on the
    # reference's view holds 512 cells and its one-token flash attention
    # splits them into one chunk per thread (1, 2, 3 threads: their bits
    # differ)
    for t in 1 2 3; do
        THREADS=$t ref_hashes "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" \
            ffi-tests/golden/parity/tokens-smollm2-300.txt "$OUT/split-kv-$t.sha256" "1 split-kv-t$t"
    done
    cat "$OUT"/split-kv-[123].sha256 > ffi-tests/golden/parity/smollm2-q4_1-split-kv.sha256
    # Gemma 3 "27B" (62 layers: the reference scales q by 1/sqrt(n_embd / n_head),
    # not 1/sqrt(head size)), tiny, with n_embd / n_head = 16 and heads of 32:
    # 512 tokens in one decode and in decodes of 7
    target/release/examples/synth_model gemma3 "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/synth-gemma3-27b.gguf" 11 512 \
        layers=62 head_dim=32
    ref_hashes "$OUT/synth-gemma3-27b.gguf" ffi-tests/golden/parity/tokens512.txt \
        ffi-tests/golden/parity/synth-gemma3-27b.sha256 "512 one-decode" "7 chunks-of-7"
fi
# The families of golden/parity/families.txt: a synthetic model (F32), and
# the same shapes at embd 256 (rows the k-quants divide) quantized by the
# reference to Q4_K_M and to F16: the files' sha256 and the logits' (512
# tokens, one decode and decodes of 7)
gcc -O2 -std=c11 -Iinclude -Iffi-tests ffi-tests/quantize_tool.c -o "$OUT/quantize_tool" -L"$REF_LIB" -lllama
gcc -O2 -std=c11 -Iinclude -Iffi-tests ffi-tests/dump_model.c -o "$OUT/dump_model" -L"$REF_LIB" -lllama
gcc -O2 -std=c11 -Iinclude examples-c/simple.c -o "$OUT/simple" -L"$REF_LIB" -lllama -lggml-base
# (a line's first word is the family, or FAMILY+VARIANT for a second layout
# of one family; mixture-of-experts lines are also run in ubatches of 64)
grep -v '^#' ffi-tests/golden/parity/families.txt | while read -r family sizes; do
    [ -n "$family" ] || continue
    [ -z "$ONLY" ] || [[ "$ONLY" == *" $family "* ]] || continue
    arch=${family%%+*} moe=0
    case "$family $sizes" in *moe*|*experts=*|gpt-oss*) moe=1 ;; esac
    vocab=llama-spm; case $arch in qwen*) vocab=qwen2 ;; esac
    gold=ffi-tests/golden/parity/synth-$family.sha256 && : > "$gold"
    # shellcheck disable=SC2086
    target/release/examples/synth_model "$arch" "$CACHE/vocab/ggml-vocab-$vocab.gguf" "$OUT/fam-$family.gguf" 11 512 $sizes
    ref_hashes "$OUT/fam-$family.gguf" ffi-tests/golden/parity/tokens512.txt "$gold.f32" "512 f32-one-decode" "7 f32-chunks-of-7"
    if [ $moe = 1 ]; then
        UBATCH=64 ref_hashes "$OUT/fam-$family.gguf" ffi-tests/golden/parity/tokens512.txt "$gold.ub" "512 f32-ubatch-64"
        cat "$gold.ub" >> "$gold.f32" && rm "$gold.ub"
    fi
    # the same tokens given as embeddings (rows of token_embd: parity/embd_logits.c)
    LD_LIBRARY_PATH=$REF_LIB "$OUT/embd_logits" "$OUT/fam-$family.gguf" ffi-tests/golden/parity/tokens512.txt "$OUT/embd.bin" 2> /dev/null
    echo "$(sha256sum "$OUT/embd.bin" | cut -d' ' -f1)  f32-embd-input" >> "$gold.f32"
    # shellcheck disable=SC2086
    target/release/examples/synth_model "$arch" "$CACHE/vocab/ggml-vocab-$vocab.gguf" "$OUT/fam-$family-256.gguf" 11 512 \
        $sizes embd=256 ff=512 head_dim=64
    cat "$gold.f32" > "$gold" && rm "$gold.f32"
    for q in "15 q4_k_m" "1 f16"; do
        set -- $q
        LD_LIBRARY_PATH=$REF_LIB "$OUT/quantize_tool" "$OUT/fam-$family-256.gguf" "$OUT/fam-$family-$2.gguf" "$1" > /dev/null 2>&1
        echo "$(sha256sum "$OUT/fam-$family-$2.gguf" | cut -d' ' -f1)  $2-model" >> "$gold"
        ref_hashes "$OUT/fam-$family-$2.gguf" ffi-tests/golden/parity/tokens512.txt "$gold.q" \
            "512 $2-one-decode" "7 $2-chunks-of-7"
        cat "$gold.q" >> "$gold" && rm "$gold.q"
        if [ $moe = 1 ]; then
            UBATCH=64 ref_hashes "$OUT/fam-$family-$2.gguf" ffi-tests/golden/parity/tokens512.txt "$gold.q" "512 $2-ubatch-64"
            cat "$gold.q" >> "$gold" && rm "$gold.q"
        fi
    done
    # what the C API reports of the Q4_K_M model (description, rope type, sizes, metadata)
    LD_LIBRARY_PATH=$REF_LIB "$OUT/dump_model" "$OUT/fam-$family-q4_k_m.gguf" > "ffi-tests/golden/parity/synth-$family.model.txt" 2> /dev/null
    # greedy generation of 32 tokens from a prompt, on the Q4_K_M model
    LD_LIBRARY_PATH=$REF_LIB "$OUT/simple" "$OUT/fam-$family-q4_k_m.gguf" -n 32 --ids "The capital of France is" \
        > "ffi-tests/golden/parity/synth-$family.greedy.txt" 2> /dev/null
    # llama-cpp-python's create_completion on it (ffi-tests/python/family_completion.py)
    PYTHONPATH=$(bash scripts/fetch-reference-src.sh | sed -n 1p) LLAMA_CPP_LIB_PATH=$REF_LIB \
        "$(bash scripts/py-venv.sh)" ffi-tests/python/family_completion.py "$OUT/fam-$family-q4_k_m.gguf" \
        > "ffi-tests/python/golden/family-$family.json"
done
# EXAONE 4 "32B" (64 layers: sliding windows on 3 of every 4, the others
# without rope), tiny: 512 tokens in one decode and in decodes of 7
if [ -z "$ONLY" ] || [[ "$ONLY" == *" exaone4 "* ]]; then
    target/release/examples/synth_model exaone4 "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/synth-exaone4-32b.gguf" \
        11 512 layers=64
    ref_hashes "$OUT/synth-exaone4-32b.gguf" ffi-tests/golden/parity/tokens512.txt \
        ffi-tests/golden/parity/synth-exaone4-32b.sha256 "512 one-decode" "7 chunks-of-7"
fi
# StableLM's two layouts besides its families.txt line: 1.6B's (no q/k
# norms or q/k/v biases) and 2 12B's (LayerNorms of each head of q and k, no
# ffn_norm: the FFN on the attention's input)
if [ -z "$ONLY" ] || [[ "$ONLY" == *" stablelm "* ]]; then
    for o in "1.6b rot=8" "12b rot=8 optional=1 ffn_norm=0"; do
        set -- $o
        v=$1 && shift
        target/release/examples/synth_model stablelm "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/synth-stablelm-$v.gguf" \
            11 512 "$@"
        ref_hashes "$OUT/synth-stablelm-$v.gguf" ffi-tests/golden/parity/tokens512.txt \
            "ffi-tests/golden/parity/synth-stablelm-$v.sha256" "512 one-decode" "7 chunks-of-7"
    done
fi
# Rope scaling (golden/parity/rope.sha256): YaRN on a synthetic qwen3 (factor
# 4 from 128 tokens), LongRoPE on a synthetic phi3 with its long factors (the
# 256-cell context is past the original 128) and its short ones (original
# 1024), and the caller's overrides of a synthetic llama's rope (logits.c's
# LOGITS_ROPE: base, scale, scaling type, original context)
if [ -z "$ONLY" ] || [[ "$ONLY" == *" rope "* ]]; then
    R=ffi-tests/golden/parity/rope.sha256 && : > "$R"
    S=target/release/examples/synth_model
    $S qwen3 "$CACHE/vocab/ggml-vocab-qwen2.gguf" "$OUT/rope-qwen3-yarn.gguf" 11 512 scaling=yarn factor=4 orig_ctx=128
    for o in "long 128" "short 1024"; do
        set -- $o
        $S phi3 "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/rope-phi3-$1.gguf" 11 512 fused_qkv=1 scaling=longrope \
            orig_ctx="$2" attn_factor=1.19
    done
    $S llama "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/rope-llama.gguf" 11 512
    ref_hashes "$OUT/rope-qwen3-yarn.gguf" ffi-tests/golden/parity/tokens512.txt "$R.tmp" "512 qwen3-yarn" \
        "7 qwen3-yarn-chunks-of-7" && cat "$R.tmp" >> "$R"
    for f in long short; do
        ref_hashes "$OUT/rope-phi3-$f.gguf" ffi-tests/golden/parity/tokens512.txt "$R.tmp" "512 phi3-longrope-$f" \
            "7 phi3-longrope-$f-chunks-of-7" && cat "$R.tmp" >> "$R"
    done
    for o in "linear 500000 0.5 1 0" "yarn 0 0 2 64" "yarn-scaled 0 0.25 2 128" "none 0 0.25 0 0"; do
        set -- $o
        LOGITS_ROPE="$2 $3 $4 $5" ref_hashes "$OUT/rope-llama.gguf" ffi-tests/golden/parity/tokens512.txt "$R.tmp" \
            "512 llama-ctx-$1" && cat "$R.tmp" >> "$R"
    done
    rm -f "$R.tmp"
fi
# Control vectors (golden/parity/cvec.sha256, logits.c's LOGITS_CVEC): a
# synthetic 4-layer llama with directions on layers 1-3, on 2-3 only, with a
# buffer for layer 1 alone (2-3 add zeros), and set then cleared
if [ -z "$ONLY" ] || [[ "$ONLY" == *" cvec "* ]]; then
    C=ffi-tests/golden/parity/cvec.sha256 && : > "$C"
    target/release/examples/synth_model llama "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/cvec-llama.gguf" 11 512 layers=4
    for o in "all 0 3 3" "range 2 3 3" "short 0 3 1" "cleared 0 3 3 clear"; do
        set -- $o
        LOGITS_CVEC="$2 $3 $4 ${5:-}" ref_hashes "$OUT/cvec-llama.gguf" ffi-tests/golden/parity/tokens512.txt "$C.tmp" \
            "512 cvec-$1" && cat "$C.tmp" >> "$C"
    done
    rm -f "$C.tmp"
fi
# LoRA adapters (golden/parity/lora.sha256, logits.c's LOGITS_LORA): the
# cases of ffi-tests/parity/lora_cases.sh (synthetic models and adapters, each
# adapter file's sha256 too), SmolLM2 Q4_1 with two adapters (128 tokens in
# one decode and in decodes of 7); and the metadata getters on an aLoRA
# adapter (golden/parity/lora-meta.txt, ffi-tests/test_lora.c --dump)
if [ -z "$ONLY" ] || [[ "$ONLY" == *" lora "* ]]; then
    L=ffi-tests/golden/parity/lora.sha256 && : > "$L"
    cargo build --release --quiet --example synth_lora
    . ffi-tests/parity/lora_cases.sh
    SMOL=$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
    lora_files "$OUT/lora" target/release/examples/synth_model target/release/examples/synth_lora "$CACHE/vocab" "$SMOL"
    for f in "$OUT"/lora/*-f16.gguf "$OUT"/lora/*-q8.gguf "$OUT"/lora/*-q4_*.gguf; do
        echo "$(sha256sum "$f" | cut -d' ' -f1)  adapter-$(basename "$f" .gguf)" >> "$L"
    done
    for run in "${LORA_RUNS[@]}"; do
        set -- $run
        LOGITS_LORA=$(lora_spec "$OUT/lora" "$1" "$3") ref_hashes "$OUT/lora/$1.gguf" \
            ffi-tests/golden/parity/tokens512.txt "$L.tmp" "512 $2" "7 $2-chunks-of-7" && cat "$L.tmp" >> "$L"
    done
    LOGITS_LORA=$(lora_spec "$OUT/lora" smollm2 f16:1.0,q8:0.5) ref_hashes "$SMOL" \
        ffi-tests/golden/parity/tokens-smollm2-128.txt "$L.tmp" "128 smollm2-both" "7 smollm2-both-chunks-of-7" \
        && cat "$L.tmp" >> "$L"
    rm -f "$L.tmp"
    target/release/examples/synth_lora "$OUT/lora/llama.gguf" "$OUT/lora/alora.gguf" alora=7,8,9 seed=4 2> /dev/null
    gcc -O2 -std=c11 -Iinclude ffi-tests/test_lora.c -o "$OUT/test_lora" -L"$REF_LIB" -lllama -lm
    LD_LIBRARY_PATH=$REF_LIB "$OUT/test_lora" --dump "$OUT/lora/llama.gguf" "$OUT/lora/alora.gguf" \
        > ffi-tests/golden/parity/lora-meta.txt
fi
# A model from the caller's metadata and tensors (llama_model_init_from_user,
# ffi-tests/parity/from_user.c built against ggml) for each line of
# golden/parity/from_user.families.txt: the reference's logits, its save of
# that model, and what the program printed (golden/parity/from_user.sha256,
# from_user.txt)
if [ -z "$ONLY" ] || [[ "$ONLY" == *" from-user "* ]]; then
    gcc -O2 -std=c11 -DWITH_GGML -Iinclude -Iffi-tests/parity ffi-tests/parity/from_user.c -o "$OUT/from_user_ref" \
        -L"$REF_LIB" -lllama -lggml-base -lm
    : > ffi-tests/golden/parity/from_user.txt
    : > ffi-tests/golden/parity/from_user.sha256
    grep -v '^#' ffi-tests/golden/parity/from_user.families.txt | while read -r name output override opts; do
        [ -n "$name" ] || continue
        arch=${name%%+*} vocab=llama-spm; case $arch in qwen*) vocab=qwen2 ;; esac
        # shellcheck disable=SC2086 # (the options: one word each)
        target/release/examples/synth_model $arch "$CACHE/vocab/ggml-vocab-$vocab.gguf" "$OUT/from-user-$name.gguf" \
            11 512 $opts
        echo "== $name" >> ffi-tests/golden/parity/from_user.txt
        rm -f "$OUT/from-user-saved.gguf"
        LD_LIBRARY_PATH=$REF_LIB "$OUT/from_user_ref" "$OUT/from-user-$name.gguf" ffi-tests/golden/parity/tokens512.txt \
            "$OUT/from-user.bin" "$OUT/from-user-saved.gguf" "$override" "$output" >> ffi-tests/golden/parity/from_user.txt
        echo "$(sha256sum "$OUT/from-user.bin" | cut -d' ' -f1)  $name-${output%-nosave}" >> ffi-tests/golden/parity/from_user.sha256
        [ "$output" = embd-nosave ] \
            || echo "$(sha256sum "$OUT/from-user-saved.gguf" | cut -d' ' -f1)  $name-saved" >> ffi-tests/golden/parity/from_user.sha256
    done
fi
# A mixture of experts in other block types (golden/parity/moe-types.sha256):
# a 256-wide 8-expert qwen3moe quantized by the reference to each type of
# ffi-tests/run.sh's MOE_TYPES, its logits in one decode and decodes of 7
if [ -z "$ONLY" ] || [[ "$ONLY" == *" moe-types "* ]]; then
    M=ffi-tests/golden/parity/moe-types.sha256 && : > "$M"
    target/release/examples/synth_model qwen3moe "$CACHE/vocab/ggml-vocab-qwen2.gguf" "$OUT/moe-types.gguf" 11 512 \
        embd=256 heads=4 kv_heads=2 head_dim=64 ff=512
    for t in $(sed -n 's/^MOE_TYPES="\(.*\)"/\1/p' ffi-tests/run.sh); do
        set -- ${t/:/ }
        LD_LIBRARY_PATH=$REF_LIB "$OUT/quantize_tool" "$OUT/moe-types.gguf" "$OUT/moe-$1.gguf" "$2" > /dev/null 2>&1
        ref_hashes "$OUT/moe-$1.gguf" ffi-tests/golden/parity/tokens512.txt "$M.tmp" "512 $1-one-decode" \
            "7 $1-chunks-of-7" && cat "$M.tmp" >> "$M"
    done
    # gpt-oss as its files come, MXFP4 experts (llama_ftype MXFP4_MOE)
    target/release/examples/synth_model gpt-oss "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/gpt-oss-mx.gguf" 11 512 \
        optional=1 scaling=yarn factor=4 orig_ctx=64 embd=256 ff=512 head_dim=64
    LD_LIBRARY_PATH=$REF_LIB "$OUT/quantize_tool" "$OUT/gpt-oss-mx.gguf" "$OUT/gpt-oss-mx-q.gguf" 38 > /dev/null 2>&1
    ref_hashes "$OUT/gpt-oss-mx-q.gguf" ffi-tests/golden/parity/tokens512.txt "$M.tmp" "512 gpt-oss-mxfp4-one-decode" \
        "7 gpt-oss-mxfp4-chunks-of-7" && cat "$M.tmp" >> "$M"
    # MXFP4 in dense matrices too (every block matrix: the repacked gemm on
    # groups of 4 rows, gemv on the rest), on a 256-wide llama
    target/release/examples/synth_model llama "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/mxfp4-dense.gguf" 11 512 \
        embd=256 ff=512 head_dim=64
    LD_LIBRARY_PATH=$REF_LIB "$OUT/quantize_tool" "$OUT/mxfp4-dense.gguf" "$OUT/mxfp4-dense-q.gguf" 7 'tt=blk\.:39' \
        > /dev/null 2>&1
    ref_hashes "$OUT/mxfp4-dense-q.gguf" ffi-tests/golden/parity/tokens512.txt "$M.tmp" "512 mxfp4-dense-one-decode" \
        "7 mxfp4-dense-chunks-of-7" && cat "$M.tmp" >> "$M"
    # the ternary types in every matrix of that llama (pure)
    for t in TQ1_0:36 TQ2_0:37 Q1_0:40 Q2_0:41; do
        set -- ${t/:/ }
        LD_LIBRARY_PATH=$REF_LIB "$OUT/quantize_tool" "$OUT/mxfp4-dense.gguf" "$OUT/$1-dense-q.gguf" "$2" pure > /dev/null 2>&1
        ref_hashes "$OUT/$1-dense-q.gguf" ffi-tests/golden/parity/tokens512.txt "$M.tmp" "512 $1-dense-one-decode" \
            "7 $1-dense-chunks-of-7" && cat "$M.tmp" >> "$M"
    done
    rm -f "$M.tmp"
fi
# The IQ1-IQ3 types and NVFP4 (golden/parity/block-types.sha256). The IQ
# types, which minfer reads but does not quantize to yet: the 256-wide llama
# of the moe-types section with every layer matrix random blocks of the type
# (synth_model blocks=T), and the 8-expert qwen3moe with every layer
# matrix, experts included, in it. NVFP4 (no llama_ftype: a tensor type
# override): every layer matrix of that llama.
if [ -z "$ONLY" ] || [[ "$ONLY" == *" block-types "* ]]; then
    M=ffi-tests/golden/parity/block-types.sha256 && : > "$M"
    for t in $(sed -n 's/^IQ_TYPES="\(.*\)"/\1/p' ffi-tests/run.sh); do
        set -- ${t/:/ }
        target/release/examples/synth_model llama "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/$1-dense-iq.gguf" 11 512 \
            embd=256 ff=512 head_dim=64 blocks=$2
        ref_hashes "$OUT/$1-dense-iq.gguf" ffi-tests/golden/parity/tokens512.txt "$M.tmp" "512 $1-dense-one-decode" \
            "7 $1-dense-chunks-of-7" && cat "$M.tmp" >> "$M"
        target/release/examples/synth_model qwen3moe "$CACHE/vocab/ggml-vocab-qwen2.gguf" "$OUT/$1-moe-iq.gguf" 11 512 \
            embd=256 heads=4 kv_heads=2 head_dim=64 ff=512 blocks=$2
        ref_hashes "$OUT/$1-moe-iq.gguf" ffi-tests/golden/parity/tokens512.txt "$M.tmp" "512 $1-moe-one-decode" \
            "7 $1-moe-chunks-of-7" && cat "$M.tmp" >> "$M"
    done
    target/release/examples/synth_model llama "$CACHE/vocab/ggml-vocab-llama-spm.gguf" "$OUT/nvfp4-dense.gguf" 11 512 \
        embd=256 ff=512 head_dim=64
    LD_LIBRARY_PATH=$REF_LIB "$OUT/quantize_tool" "$OUT/nvfp4-dense.gguf" "$OUT/nvfp4-dense-q.gguf" 7 'tt=blk\.:40' \
        > /dev/null 2>&1
    ref_hashes "$OUT/nvfp4-dense-q.gguf" ffi-tests/golden/parity/tokens512.txt "$M.tmp" "512 NVFP4-dense-one-decode" \
        "7 NVFP4-dense-chunks-of-7" && cat "$M.tmp" >> "$M"
    rm -f "$M.tmp"
fi
# Encoders (golden/parity/embed.sha256): the cases of
# ffi-tests/parity/embed_cases.sh (synthetic bert and nomic-bert models, the
# 256-wide ones quantized by the reference), each run's output as
# ffi-tests/parity/embeddings.c writes it; and the real all-MiniLM-L6-v2
# (scripts/fetch-minilm.sh: its F16 file and the embeddings of
# golden/parity/tokens-embed-minilm.txt), examples-c/embedding.c's output on
# it (golden/embedding_minilm.txt), llama-cpp-python's embed on it and on the
# synthetic bert256-q4_k_m (python/golden/embed-*.json)
if [ -z "$ONLY" ] || [[ "$ONLY" == *" embed "* ]]; then
    E=ffi-tests/golden/parity/embed.sha256 && : > "$E"
    gcc -O2 -std=c11 -Iinclude ffi-tests/parity/embeddings.c -o "$OUT/embeddings" -L"$REF_LIB" -lllama -lm
    gcc -O2 -std=c11 -Iinclude ffi-tests/quantize_tool.c -o "$OUT/quantize_tool" -L"$REF_LIB" -lllama
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$REF_LIB" "$OUT/quantize_tool" > "$OUT/quantize_ref.sh"
    chmod +x "$OUT/quantize_ref.sh"
    . ffi-tests/parity/embed_cases.sh
    embed_files "$OUT/embed" target/release/examples/synth_model "$OUT/quantize_ref.sh" "$CACHE/vocab"
    for q in "${EMBED_QUANTIZED[@]}"; do
        echo "$(sha256sum "$OUT/embed/$q.gguf" | cut -d' ' -f1)  $q-model" >> "$E"
    done
    for run in "${EMBED_RUNS[@]}"; do
        set -- $run
        EMBD_KV_UNIFIED=$([ -n "${6:-}" ] && echo 1 || echo 0) LD_LIBRARY_PATH=$REF_LIB "$OUT/embeddings" \
            "$OUT/embed/$1.gguf" "ffi-tests/golden/parity/tokens-embed-$5.txt" "$OUT/embed.bin" "$2" "$3" "$4" \
            > /dev/null 2>&1
        echo "$(sha256sum "$OUT/embed.bin" | cut -d' ' -f1)  $1-p$2-t$3-fa$4-$5${6:+-$6}" >> "$E"
    done
    MINILM=$(bash scripts/fetch-minilm.sh f16)
    echo "$(sha256sum "$MINILM" | cut -d' ' -f1)  minilm-f16-model" >> "$E"
    for run in "-1 2 -1" "0 2 -1" "2 1 -1" "4 2 0" "1 1 0"; do
        set -- $run
        LD_LIBRARY_PATH=$REF_LIB "$OUT/embeddings" "$MINILM" ffi-tests/golden/parity/tokens-embed-minilm.txt \
            "$OUT/embed.bin" "$1" "$2" "$3" > /dev/null 2>&1
        echo "$(sha256sum "$OUT/embed.bin" | cut -d' ' -f1)  minilm-f16-p$1-t$2-fa$3" >> "$E"
    done
    gcc -O2 -std=c11 -Iinclude examples-c/embedding.c -o "$OUT/embedding" -L"$REF_LIB" -lllama -lm
    LD_LIBRARY_PATH=$REF_LIB "$OUT/embedding" "$MINILM" > ffi-tests/golden/embedding_minilm.txt 2> /dev/null
    # examples-c/embedding on one synthetic model of each family
    for m in "${EMBED_EXAMPLE[@]}"; do
        LD_LIBRARY_PATH=$REF_LIB "$OUT/embedding" "$OUT/embed/$m.gguf" > "ffi-tests/golden/parity/embedding-$m.txt" 2> /dev/null
    done
    SDIST=$(bash scripts/fetch-reference-src.sh --print-paths | sed -n 1p)
    PY=$(bash scripts/py-venv.sh)
    PYTHONPATH=$SDIST LLAMA_CPP_LIB_PATH=$REF_LIB "$PY" ffi-tests/python/embed_text.py "$MINILM" \
        > ffi-tests/python/golden/embed-minilm.json
    PYTHONPATH=$SDIST LLAMA_CPP_LIB_PATH=$REF_LIB "$PY" ffi-tests/python/embed_text.py "$OUT/embed/bert256-q4_k_m.gguf" \
        > ffi-tests/python/golden/embed-bert256-q4_k_m.json
fi
ls -l ffi-tests/golden/parity/

