# The embedding parity cases (encoders), sourced by
# scripts/make-parity-goldens.sh (the reference's hashes into
# golden/parity/embed.sha256) and ffi-tests/run.sh (ours against them).
#
# embed_files DIR SYNTH_MODEL QUANTIZE_TOOL VOCAB_DIR: writes into DIR the
# synthetic BERT models (random weights, 2 layers, the bge WordPiece vocab
# cut to 2000 tokens; examples/synth_model.rs):
#   bert.gguf       F32, 64 wide, 4 heads of 16 (2 KV heads), every optional
#                   bias, a classifier head of 2 labels, MEAN by default
#   bert-plain.gguf F32, no optional bias, no classifier head, CLS by default
#   bert256.gguf    F32, 256 wide, 4 heads of 64, the biases and head; and
#                   quantized by QUANTIZE_TOOL (the library under test) to
#                   bert256-q4_k_m.gguf, bert256-q8_0.gguf, bert256-f16.gguf
#   nomic.gguf      nomic-bert, F32, the optional biases (its FFN's unused),
#                   rope over 8 of each head's 16 dimensions
#   nomic256.gguf   nomic-bert, 256 wide; quantized to nomic256-q4_k_m.gguf
#   jina-gelu.gguf, jina-geglu.gguf, jina-fused.gguf: jina-bert-v2 (ALiBi),
#                   F32, 4 heads of 16, its FFN of each kind (GELU; GEGLU
#                   of ffn_gate and ffn_up; of ffn_up's two halves), with the
#                   q/k norms, attn_norm_2 and the one-score head
#   jina256.gguf    jina-bert-v2, 256 wide, fused GEGLU; quantized to
#                   jina256-q4_k_m.gguf
#   neo.gguf        neo-bert (pre-norm: RMS norms, rope, fused qkv, fused
#                   SwiGLU), with a classifier head of 2 labels
#   neo256.gguf     neo-bert, 256 wide; quantized to neo256-q4_k_m.gguf
#   modern.gguf     modern-bert (pre-norm LayerNorms without bias, GEGLU,
#                   symmetric windows of 8 in 2 layers of 3), no attn_norm in
#                   layer 0, its classifier head (GELU, cls.norm; RANK after
#                   mean pooling); modern-silu.gguf, modern-reglu.gguf: 4
#                   layers, SwiGLU and ReGLU (hidden_activation)
#   modern256.gguf  modern-bert, 256 wide, 3 layers; quantized to
#                   modern256-q4_k_m.gguf
#   gemma.gguf      gemma-embedding (Gemma 3's blocks, symmetric windows of 8
#                   in 5 layers of 6), 7 layers; gemma-dense.gguf: 6 layers
#                   and the dense modules (64 -> 128 -> 64)
#   gemma256.gguf   gemma-embedding, 256 wide, 6 layers; quantized to
#                   gemma256-q4_k_m.gguf
# (gemma-embedding models have a global layer: with every layer sliding,
# the reference's encoder aborts on its unused full mask)
#   qwen3.gguf, qwen3-rank.gguf: decoders (the qwen2 vocab cut to 2000), the
#                   second with a reranker's cls.output of 2 labels
embed_files() {
    local dir=$1 synth_model=$2 quantize_tool=$3 vocab=$4/ggml-vocab-bert-bge.gguf
    mkdir -p "$dir"
    "$synth_model" bert "$vocab" "$dir/bert.gguf" 11 2000 optional=1 cls=1 labels=2 > /dev/null
    "$synth_model" bert "$vocab" "$dir/bert-plain.gguf" 12 2000 pooling=2 > /dev/null
    "$synth_model" bert "$vocab" "$dir/bert256.gguf" 13 2000 embd=256 ff=512 head_dim=64 optional=1 cls=1 \
        > /dev/null
    "$quantize_tool" "$dir/bert256.gguf" "$dir/bert256-q4_k_m.gguf" 15 > /dev/null 2>&1
    "$quantize_tool" "$dir/bert256.gguf" "$dir/bert256-q8_0.gguf" 7 > /dev/null 2>&1
    "$quantize_tool" "$dir/bert256.gguf" "$dir/bert256-f16.gguf" 1 > /dev/null 2>&1
    "$synth_model" nomic-bert "$vocab" "$dir/nomic.gguf" 14 2000 optional=1 rot=8 > /dev/null
    "$synth_model" nomic-bert "$vocab" "$dir/nomic256.gguf" 15 2000 embd=256 ff=512 head_dim=64 > /dev/null
    "$quantize_tool" "$dir/nomic256.gguf" "$dir/nomic256-q4_k_m.gguf" 15 > /dev/null 2>&1
    local k kind=(gelu geglu fused)
    for k in 0 1 2; do
        "$synth_model" jina-bert-v2 "$vocab" "$dir/jina-${kind[$k]}.gguf" $((16 + k)) 2000 kv_heads=4 ffn_kind=$k \
            optional=1 cls=1 > /dev/null
    done
    "$synth_model" jina-bert-v2 "$vocab" "$dir/jina256.gguf" 19 2000 embd=256 ff=512 head_dim=64 kv_heads=4 ffn_kind=2 \
        optional=1 cls=1 > /dev/null
    "$quantize_tool" "$dir/jina256.gguf" "$dir/jina256-q4_k_m.gguf" 15 > /dev/null 2>&1
    "$synth_model" neo-bert "$vocab" "$dir/neo.gguf" 20 2000 fused_qkv=1 cls=1 labels=2 > /dev/null
    "$synth_model" neo-bert "$vocab" "$dir/neo256.gguf" 21 2000 fused_qkv=1 embd=256 ff=512 head_dim=64 > /dev/null
    "$quantize_tool" "$dir/neo256.gguf" "$dir/neo256-q4_k_m.gguf" 15 > /dev/null 2>&1
    "$synth_model" modern-bert "$vocab" "$dir/modern.gguf" 22 2000 fused_qkv=1 kv_heads=4 cls=1 labels=2 first_norm=0 \
        > /dev/null
    "$synth_model" modern-bert "$vocab" "$dir/modern-silu.gguf" 23 2000 fused_qkv=1 kv_heads=4 silu=1 layers=4 > /dev/null
    "$synth_model" modern-bert "$vocab" "$dir/modern-reglu.gguf" 30 2000 fused_qkv=1 kv_heads=4 reglu=1 layers=4 > /dev/null
    "$synth_model" modern-bert "$vocab" "$dir/modern256.gguf" 24 2000 fused_qkv=1 kv_heads=4 embd=256 ff=512 head_dim=64 \
        layers=3 > /dev/null
    "$quantize_tool" "$dir/modern256.gguf" "$dir/modern256-q4_k_m.gguf" 15 > /dev/null 2>&1
    "$synth_model" gemma-embedding "$vocab" "$dir/gemma.gguf" 25 2000 layers=7 > /dev/null
    "$synth_model" gemma-embedding "$vocab" "$dir/gemma-dense.gguf" 26 2000 layers=6 dense=1 > /dev/null
    "$synth_model" gemma-embedding "$vocab" "$dir/gemma256.gguf" 27 2000 embd=256 ff=512 head_dim=64 layers=6 > /dev/null
    "$quantize_tool" "$dir/gemma256.gguf" "$dir/gemma256-q4_k_m.gguf" 15 > /dev/null 2>&1
    "$synth_model" qwen3 "$4/ggml-vocab-qwen2.gguf" "$dir/qwen3.gguf" 28 2000 > /dev/null
    "$synth_model" qwen3 "$4/ggml-vocab-qwen2.gguf" "$dir/qwen3-rank.gguf" 29 2000 cls=1 labels=2 > /dev/null
}

# The quantized files, whose bytes are compared too (label NAME-model).
EMBED_QUANTIZED=(bert256-q4_k_m bert256-q8_0 bert256-f16 nomic256-q4_k_m jina256-q4_k_m neo256-q4_k_m modern256-q4_k_m
    gemma256-q4_k_m)

# The models examples-c/embedding.c runs on (its four sentences, mean
# pooling; the output against golden/parity/embedding-MODEL.txt).
EMBED_EXAMPLE=(bert nomic jina-fused neo modern gemma)

# The runs, "MODEL POOLING THREADS FLASH_ATTN TOKENS": parity/embeddings.c on
# DIR/MODEL.gguf with golden/parity/tokens-embed-TOKENS.txt (short: 3
# sequences, 31 tokens, one-chunk attention; long: 4 sequences of 7 to 100,
# 204 tokens, tiled attention), llama_pooling_type POOLING (-1: the model's,
# 0 none, 1 mean, 2 cls, 3 last, 4 rank), flash_attn_type FLASH_ATTN (-1
# auto, 0 disabled). Label: MODEL-pPOOLING-tTHREADS-faFLASH_ATTN-TOKENS.
# Decoders run with kv_unified (EMBD_KV_UNIFIED=1, a label ending -kvu):
# with a cache stream per sequence the reference splits a batch of unequal
# sequences into equal parts and pools only the last (ARCHITECTURE.md's
# deviations).
EMBED_RUNS=()
for t in short long; do
    for p in -1 0 1 2 3 4; do
        EMBED_RUNS+=("bert $p 2 -1 $t")
    done
    EMBED_RUNS+=("bert 1 1 -1 $t" "bert 0 1 -1 $t" "bert 0 2 0 $t" "bert 1 2 0 $t" "bert 4 2 0 $t")
    EMBED_RUNS+=("bert-plain -1 2 -1 $t" "bert-plain 1 1 -1 $t" "bert-plain 4 2 -1 $t")
    EMBED_RUNS+=("nomic -1 2 -1 $t" "nomic 0 1 -1 $t" "nomic 1 2 0 $t" "nomic256 1 2 -1 $t")
    EMBED_RUNS+=("neo 0 2 -1 $t" "neo 1 1 -1 $t" "neo 4 2 -1 $t" "neo 2 2 0 $t" "neo256 1 2 -1 $t")
    EMBED_RUNS+=("modern 0 2 -1 $t" "modern 1 1 -1 $t" "modern 4 2 -1 $t" "modern 4 1 0 $t" "modern-silu 1 2 -1 $t")
    EMBED_RUNS+=("modern256 0 2 -1 $t" "modern-reglu 1 2 -1 $t" "modern-reglu 0 1 0 $t")
    EMBED_RUNS+=("gemma 0 2 -1 $t" "gemma 1 1 -1 $t" "gemma 2 2 0 $t" "gemma-dense 1 2 -1 $t" "gemma-dense 0 2 0 $t")
    for p in 1 2 3 4; do
        EMBED_RUNS+=("qwen3 $p 2 -1 $t kvu" "qwen3-rank $p 1 -1 $t kvu")
    done
    for j in jina-gelu jina-geglu jina-fused; do
        EMBED_RUNS+=("$j 0 2 -1 $t" "$j 1 1 -1 $t" "$j 4 2 -1 $t" "$j 0 2 0 $t")
    done
    for q in bert256 "${EMBED_QUANTIZED[@]}"; do
        EMBED_RUNS+=("$q 0 2 -1 $t" "$q 1 1 -1 $t" "$q 4 2 -1 $t")
    done
done
