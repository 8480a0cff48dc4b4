#!/usr/bin/env bash
# The AVX2-only proxy of scripts/bench.sh, for an AVX-512 machine: both
# libraries restricted to the instructions of an AVX2-only CPU (Zen 2,
# Zen 3), so that the kernels those CPUs run can be measured side by side
# where none is at hand.
#
# - ours runs with MINFER_NO_VNNI=1: the plain "avx2" kernel set (no
#   AVX-512 or VNNI instruction in any kernel it picks);
# - the reference is llama-cpp-python 0.3.36 built a second time, into its
#   own venv (default ~/.cache/minfer-ref/venv-avx2, built once: 5 to 25
#   minutes on 2 cores), with GGML_NATIVE off and AVX/AVX2/FMA/F16C/BMI2 on,
#   AVX-512 off: its AVX2 kernels (tinyBLAS<8>, the AVX2 repacks). The
#   script refuses a build whose libggml-cpu.so holds zmm instructions.
#
# A proxy, not the real thing: the Intel core's ports and caches are not
# Zen's (Zen 2 has one integer-multiply pipe, this Xeon two; its L2 is four
# times Zen 2's), so a ratio here says which way a change goes on AVX2, not
# what an AVX2-only CPU would read. The AVX2-built reference sums in other
# orders than the AVX-512 build whose logits minfer reproduces bit for bit,
# so its logits differ: a benchmark only, never a parity check.
#
# usage: scripts/bench-avx2.sh [MODEL.gguf ...]   (env as scripts/bench.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export MINFER_REF_VENV="${MINFER_REF_VENV:-$HOME/.cache/minfer-ref/venv-avx2}"
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF"
# its own build log, so the native reference's stays readable
MINFER_CACHE="${MINFER_CACHE:-$HOME/.cache/minfer}/avx2-ref" bash "$ROOT/scripts/install-reference-lib.sh" >/dev/null
unset CMAKE_ARGS

ref_dir=$(bash "$ROOT/scripts/install-reference-lib.sh" --print-lib-dir)
cpu_lib=$(ls "$ref_dir"/libggml-cpu.so* 2>/dev/null | head -n 1)
[ -n "$cpu_lib" ] || { echo "bench-avx2.sh: no libggml-cpu.so in $ref_dir" >&2; exit 1; }
zmm=$(objdump -d --no-show-raw-insn "$cpu_lib" | grep -c zmm || true)
[ "$zmm" = 0 ] || { echo "bench-avx2.sh: $cpu_lib has $zmm zmm instructions: not an AVX2-only build (rm -rf $MINFER_REF_VENV and rerun)" >&2; exit 1; }
echo "proxy: ours with MINFER_NO_VNNI=1 (the avx2 set); the reference built for AVX2 only ($MINFER_REF_VENV, 0 zmm instructions)"

export MINFER_NO_VNNI=1
exec bash "$ROOT/scripts/bench.sh" "$@"
