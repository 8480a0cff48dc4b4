#!/usr/bin/env bash
# Regenerates the tokenizer goldens, ffi-tests/golden/tokenizer/, with the
# reference library (scripts/install-reference-lib.sh builds it): for every
# string of corpus.json (the input, kept by hand) x add_special x
# parse_special, the ids of llama_tokenize and the bytes of llama_detokenize,
# on the two test models (smollm2-135m.tsv, gemma3-270m.tsv) and on the 19
# vocab-only GGUF files of the reference source (vocab/NAME.tsv; their
# checksums in vocab/SHA256SUMS, which scripts/fetch-reference-src.sh checks).
#
# usage: ffi-tests/gen_tokenizer_goldens.sh [OUT_DIR]   (default: ffi-tests/golden/tokenizer)
# MINFER_REF_LIB: the directory of the libllama.so to run (default: the
# reference's). Run with MINFER_REF_LIB=target/release, it shows that minfer
# writes the same files.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MINFER_CACHE:-$HOME/.cache/minfer}
REF_LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
REF_LIB=$(cd "$REF_LIB" && pwd)
GOLD=$ROOT/ffi-tests/golden/tokenizer
DEST=$(mkdir -p "${1:-$GOLD}" && cd "${1:-$GOLD}" && pwd)
OUT=$ROOT/target/ffi-tests
MODELS=$CACHE/models
VOCAB=$CACHE/vocab
mkdir -p "$OUT" "$DEST/vocab"
[ -f "$REF_LIB/libllama.so" ] || { echo "no libllama.so in $REF_LIB (scripts/install-reference-lib.sh)" >&2; exit 1; }
[ -d "$VOCAB" ] || { echo "no $VOCAB (run scripts/fetch-reference-src.sh)" >&2; exit 1; }

gcc -std=c11 -O2 -Wall -I"$ROOT/include" -I"$ROOT/ffi-tests" "$ROOT/ffi-tests/test_tokenizer_goldens.c" \
    -o "$OUT/tokenizer_goldens_writer" -L"$REF_LIB" -lllama -Wl,-rpath,"$REF_LIB"
python3 "$ROOT/ffi-tests/corpus_to_hex.py" "$GOLD/corpus.json" "$OUT/corpus.hex"
[ "$DEST" = "$GOLD" ] || cp "$GOLD/corpus.json" "$DEST/corpus.json"

write() { # MODEL TSV
    "$OUT/tokenizer_goldens_writer" "$1" "$OUT/corpus.hex" --write > "$2.tmp" && mv "$2.tmp" "$2"
    echo "wrote $2 ($(wc -l < "$2") rows)"
}
write "$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" "$DEST/smollm2-135m.tsv"
write "$MODELS/gemma-3-270m-q4_k_m.gguf" "$DEST/gemma3-270m.tsv"
(cd "$VOCAB" && LC_ALL=C ls ggml-vocab-*.gguf | xargs sha256sum) > "$DEST/vocab/SHA256SUMS"
while read -r _ file; do
    name=${file#ggml-vocab-}
    write "$VOCAB/$file" "$DEST/vocab/${name%.gguf}.tsv"
done < "$DEST/vocab/SHA256SUMS"
