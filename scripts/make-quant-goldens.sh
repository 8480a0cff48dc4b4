#!/usr/bin/env bash
# Regenerates tests/goldens/quant/ from the reference library (needs
# scripts/install-reference-lib.sh to have run; CI does not run this, the
# goldens are committed). See scripts/quant-goldens/make_goldens.c.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIB=${MINFER_REF_LIB:-$HOME/.cache/minfer-ref/venv/lib/python3.11/site-packages/llama_cpp/lib}
OUT="$ROOT/tests/goldens/quant"
mkdir -p "$OUT" "$ROOT/target"
gcc -O1 -std=c11 -Wall -Werror -o "$ROOT/target/make_quant_goldens" \
    "$ROOT/scripts/quant-goldens/make_goldens.c" -L"$LIB" -lggml-base -Wl,-rpath,"$LIB"
"$ROOT/target/make_quant_goldens" "$OUT"
# The activation quantizers of the reference's CPU backend (what its matmul
# runs), which on x86 differ from the *_ref ones above.
SRC=${MINFER_REF_SRC:-$HOME/.cache/minfer/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp}
gcc -O1 -std=c11 -Wall -Werror -I"$SRC/ggml/include" -o "$ROOT/target/make_act_goldens" \
    "$ROOT/scripts/quant-goldens/make_act_goldens.c" -L"$LIB" -lggml-cpu -lggml-base -Wl,-rpath,"$LIB"
"$ROOT/target/make_act_goldens" "$OUT"
# The reference's mul_mat of k-quant and repacked weights for 1..12 rows
# (tiled, vec_dot, repacked gemm/gemv paths; see src/kernels/ggml_paths).
gcc -O1 -std=c11 -Wall -Werror -I"$SRC/ggml/include" -o "$ROOT/target/make_matmul_goldens" \
    "$ROOT/scripts/quant-goldens/make_matmul_goldens.c" -L"$LIB" -lggml-cpu -lggml-base -lggml -Wl,-rpath,"$LIB"
"$ROOT/target/make_matmul_goldens" "$OUT" 2> /dev/null
# The reference's mul_mat of F32 and BF16 weights (llamafile's tinyBLAS,
# ggml_vec_dot_f32 / _bf16; see src/kernels/ggml_paths/tinyblas_*.rs).
gcc -O1 -std=c11 -Wall -Werror -I"$SRC/ggml/include" -o "$ROOT/target/make_float_matmul_goldens" \
    "$ROOT/scripts/quant-goldens/make_float_matmul_goldens.c" -L"$LIB" -lggml-cpu -lggml-base -lggml -Wl,-rpath,"$LIB"
"$ROOT/target/make_float_matmul_goldens" "$OUT" > /dev/null 2>&1
# The reference's ggml_soft_max_ext (attention without flash attention).
gcc -O1 -std=c11 -Wall -Werror -I"$SRC/ggml/include" -o "$ROOT/target/make_softmax_golden" \
    "$ROOT/scripts/quant-goldens/make_softmax_golden.c" -L"$LIB" -lggml-cpu -lggml-base -lggml -Wl,-rpath,"$LIB"
"$ROOT/target/make_softmax_golden" "$OUT" 2> /dev/null
du -ch "$OUT"/* | tail -n 1
