# The LoRA parity cases, sourced by scripts/make-parity-goldens.sh (the
# reference's hashes into golden/parity/lora.sha256) and ffi-tests/run.sh
# (ours against them).
#
# lora_files DIR SYNTH_MODEL SYNTH_LORA VOCAB_DIR [SMOLLM2.gguf]: writes into
# DIR the synthetic models (seed 11, 512 tokens: a 2-layer llama with its
# token embeddings and output head adapted, phi3 with fused qkv and gate/up,
# a qwen3moe and a gpt-oss whose routers and experts are adapted (gpt-oss:
# the experts' biases after the updates)) and, for each, two adapters
# (examples/synth_lora.rs): NAME-f16.gguf (F16, rank 8, alpha 16) and
# NAME-q8.gguf (Q8_0, rank 32, no alpha); a 256-wide llama (llama256) gets
# Q4_0 (rank 32) and Q4_K (rank 256) adapters instead, types the reference
# repacks in a model but multiplies unrepacked in an adapter; for SmolLM2 (tied output head: no
# token_embd pair) two of amplitude 0.05 (rank 16 / 32).
lora_files() {
    local dir=$1 synth_model=$2 synth_lora=$3 vocab=$4 smol=${5:-} m
    mkdir -p "$dir"
    "$synth_model" llama "$vocab/ggml-vocab-llama-spm.gguf" "$dir/llama.gguf" 11 512 > /dev/null
    "$synth_model" phi3 "$vocab/ggml-vocab-llama-spm.gguf" "$dir/phi3.gguf" 11 512 fused_qkv=1 > /dev/null
    "$synth_model" qwen3moe "$vocab/ggml-vocab-qwen2.gguf" "$dir/qwen3moe.gguf" 11 512 > /dev/null
    "$synth_model" gpt-oss "$vocab/ggml-vocab-llama-spm.gguf" "$dir/gpt-oss.gguf" 11 512 optional=1 \
        scaling=yarn factor=4 orig_ctx=64 > /dev/null
    "$synth_model" llama "$vocab/ggml-vocab-llama-spm.gguf" "$dir/llama256.gguf" 11 512 embd=256 ff=512 head_dim=64 \
        > /dev/null
    "$synth_lora" "$dir/llama256.gguf" "$dir/llama256-q4_0.gguf" type=q4_0 rank=32 amp=0.1 seed=6 2> /dev/null
    "$synth_lora" "$dir/llama256.gguf" "$dir/llama256-q4_k.gguf" type=q4_k rank=256 amp=0.1 seed=7 2> /dev/null
    for m in llama phi3 qwen3moe gpt-oss; do
        "$synth_lora" "$dir/$m.gguf" "$dir/$m-f16.gguf" type=f16 rank=8 alpha=16 seed=1 experts=1 2> /dev/null
        "$synth_lora" "$dir/$m.gguf" "$dir/$m-q8.gguf" type=q8_0 rank=32 alpha=0 seed=2 experts=1 2> /dev/null
    done
    if [ -n "$smol" ]; then
        "$synth_lora" "$smol" "$dir/smollm2-f16.gguf" type=f16 rank=16 alpha=32 amp=0.05 seed=3 2> /dev/null
        "$synth_lora" "$smol" "$dir/smollm2-q8.gguf" type=q8_0 rank=32 alpha=0 amp=0.05 seed=4 2> /dev/null
    fi
}

# The runs on the synthetic models, "MODEL LABEL ADAPTERS": ADAPTERS as
# logits.c's LOGITS_LORA with NAME for DIR/MODEL-NAME.gguf. Each runs on
# tokens512.txt in one decode (2 threads) and in decodes of 7 (1 thread),
# labels LABEL and LABEL-chunks-of-7.
LORA_RUNS=(
    "llama llama-f16 f16:1.0"
    "llama llama-q8 q8:0.5"
    "llama llama-both f16:1.0,q8:0.5"
    "llama llama-both-reversed q8:0.5,f16:1.0"
    "phi3 phi3-both f16:1.0,q8:0.5"
    "qwen3moe qwen3moe-both f16:1.0,q8:0.5"
    "gpt-oss gpt-oss-both f16:1.0,q8:0.5"
    "llama256 llama256-q4 q4_0:1.0,q4_k:0.5"
)

# lora_spec DIR MODEL ADAPTERS: ADAPTERS with the files' paths
lora_spec() {
    local dir=$1 model=$2 spec=$3 out="" item
    for item in ${spec//,/ }; do
        out+="${out:+,}$dir/$model-${item%%:*}.gguf:${item#*:}"
    done
    echo "$out"
}
