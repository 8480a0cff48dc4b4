#!/usr/bin/env bash
# Models of real shapes for the benchmarks at real sizes: random weights with
# the exact tensor shapes, vocabulary and tied/untied head of
#
#   llama-3.2-1b   llama: n_embd 2048, 16 layers, 32 heads of 64, 8 KV heads,
#                  n_ff 8192, Llama 3's 128256-token vocabulary, head tied to
#                  token_embd (a Q4_K_M file of ~808 MB, Q6_K head)
#   qwen3-1.7b     qwen3: n_embd 2048, 28 layers, 16 heads of 128, 8 KV heads,
#                  n_ff 6144, q/k norms, Qwen's 151936-token vocabulary, tied
#   llama-3.1-8b   llama: n_embd 4096, 32 layers, 32 heads of 128, 8 KV heads,
#                  n_ff 14336, untied (~4.9 GB at Q4_K_M). Its F32 model is 32
#                  GB, written in memory: only with that much memory and disk
#                  free (the script checks and refuses otherwise)
#   granite-moe-1b granitemoe (a mixture of experts, Granite 3.0 1B-A400M):
#                  n_embd 1024, 24 layers, 16 heads of 64, 8 KV heads, 32
#                  experts of 512 rows, 8 per token, no shared expert, tied;
#                  StarCoder's 49152-token vocabulary (Granite's has 3
#                  more tokens)
#
# written by examples/synth_model (the vocabularies of llama.cpp's
# models/ggml-vocab-*.gguf, fetched by scripts/fetch-reference-src.sh) and
# quantized by minfer's llama_model_quantize (ffi-tests/quantize_tool.c; the
# reference's bytes) to each requested type; the F32 model is removed once
# its quantizations exist. Written once into $CACHE/real/NAME.TYPE.gguf;
# prints one path per line.
#
# usage: scripts/real-shape-models.sh [NAME[:TYPE,TYPE...] ...]
#        (default: llama-3.2-1b and qwen3-1.7b at Q4_K_M, Q8_0 and Q4_0;
#        granite-moe-1b and llama-3.1-8b only when named;
#        TYPE one of Q4_K_M Q8_0 Q4_0 Q6_K IQ4_NL BF16)
# env:   MINFER_LIB_DIR (target/release: the library that quantizes)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
OURS=${MINFER_LIB_DIR:-$ROOT/target/release}
DIR=$CACHE/real
mkdir -p "$DIR"

# shape NAME: "ARCH VOCAB KEY=N..." for synth_model
shape() {
    case $1 in
        llama-3.2-1b) echo "llama llama-bpe embd=2048 layers=16 heads=32 kv_heads=8 head_dim=64 ff=8192 ctx=8192 tied=1" ;;
        qwen3-1.7b) echo "qwen3 qwen2 embd=2048 layers=28 heads=16 kv_heads=8 head_dim=128 ff=6144 ctx=8192 tied=1" ;;
        llama-3.1-8b) echo "llama llama-bpe embd=4096 layers=32 heads=32 kv_heads=8 head_dim=128 ff=14336 ctx=8192" ;;
        granite-moe-1b) echo "granitemoe starcoder embd=1024 layers=24 heads=16 kv_heads=8 head_dim=64 ff=512 experts=32 used=8 shexp=0 ctx=4096 tied=1" ;;
        *) echo "real-shape-models.sh: unknown shape $1 (llama-3.2-1b qwen3-1.7b llama-3.1-8b granite-moe-1b)" >&2; return 1 ;;
    esac
}

# ftype TYPE: its llama_ftype value
ftype() {
    case $1 in
        Q4_0) echo 2 ;; Q8_0) echo 7 ;; Q4_K_M) echo 15 ;; Q6_K) echo 18 ;; IQ4_NL) echo 25 ;; BF16) echo 32 ;;
        *) echo "real-shape-models.sh: no ftype for $1" >&2; return 1 ;;
    esac
}

# f32_bytes NAME: the F32 model's size (parameters x 4), from its shape
f32_bytes() {
    local s kv e=0 l=0 h=0 k=0 d=0 f=0 v tied=0 x=1
    s=$(shape "$1")
    for kv in $s; do
        case $kv in embd=*) e=${kv#*=} ;; layers=*) l=${kv#*=} ;; heads=*) h=${kv#*=} ;; kv_heads=*) k=${kv#*=} ;;
            head_dim=*) d=${kv#*=} ;; ff=*) f=${kv#*=} ;; tied=*) tied=${kv#*=} ;; experts=*) x=${kv#*=} ;; esac
    done
    case $1 in qwen3*) v=151936 ;; granite*) v=49152 ;; *) v=128256 ;; esac
    echo $(( 4 * (v * e * (2 - tied) + l * (e * h * d * 2 + e * k * d * 2 + 3 * e * f * x)) ))
}

REQ=("$@")
[ ${#REQ[@]} -gt 0 ] || REQ=(llama-3.2-1b qwen3-1.7b)
for req in "${REQ[@]}"; do
    name=${req%%:*} types=Q4_K_M,Q8_0,Q4_0
    [ "$name" = "$req" ] || types=${req#*:}
    read -r arch vocab keys <<< "$(shape "$name")"
    todo=()
    for t in ${types//,/ }; do
        ftype "$t" > /dev/null
        [ -f "$DIR/$name.$t.gguf" ] || todo+=("$t")
    done
    if [ ${#todo[@]} -gt 0 ]; then
        f32=$DIR/$name.F32.gguf need=$(f32_bytes "$name")
        if [ ! -f "$f32" ]; then
            # synth_model holds the model in memory while it writes the file
            mem=$(awk '/MemAvailable/ {printf "%.0f", $2 * 1024}' /proc/meminfo)
            disk=$(df -B1 --output=avail "$DIR" | tail -n 1)
            if [ "$need" -gt "$mem" ] || [ "$need" -gt "$disk" ]; then
                echo "real-shape-models.sh: $name needs $((need >> 30)) GiB of memory and of disk for its F32 model" \
                    "($((mem >> 30)) and $((disk >> 30)) GiB free): skipped" >&2
                continue
            fi
            voc=$CACHE/vocab/ggml-vocab-$vocab.gguf
            [ -f "$voc" ] || bash "$ROOT/scripts/fetch-reference-src.sh" >&2
            (cd "$ROOT" && cargo build --release --quiet --example synth_model) >&2
            # shellcheck disable=SC2086
            "$ROOT/target/release/examples/synth_model" "$arch" "$voc" "$f32.tmp" 11 999999 $keys > /dev/null
            mv "$f32.tmp" "$f32"
        fi
        gcc -O2 -std=c11 -I"$ROOT/include" "$ROOT/ffi-tests/quantize_tool.c" -o "$DIR/quantize_tool" -L"$OURS" -lllama
        for t in "${todo[@]}"; do
            LD_LIBRARY_PATH=$OURS "$DIR/quantize_tool" "$f32" "$DIR/$name.$t.gguf.tmp" "$(ftype "$t")" > /dev/null
            mv "$DIR/$name.$t.gguf.tmp" "$DIR/$name.$t.gguf"
        done
        rm -f "$f32"
    fi
    for t in ${types//,/ }; do
        [ ! -f "$DIR/$name.$t.gguf" ] || echo "$DIR/$name.$t.gguf"
    done
done
