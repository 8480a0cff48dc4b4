#!/usr/bin/env bash
# install-reference-lib.sh — build the reference library (llama.cpp commit 0c1e570,
# as built by llama-cpp-python 0.3.36 from PyPI) for parity checks and benchmarks.
# Not needed by CI.
#
#   scripts/install-reference-lib.sh                  build if needed, print the libllama.so path
#   scripts/install-reference-lib.sh --print-lib-dir  print the directory holding libllama.so,
#                                                     or exit 1 if it is not built
#
# Creates the venv ~/.cache/minfer-ref/venv, installs
# numpy gguf scikit-build-core cmake ninja into it, then compiles
# llama-cpp-python==0.3.36 with CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
# (5 to 25 minutes on 2 cores). The library lands in
# venv/lib/python3.*/site-packages/llama_cpp/lib/libllama.so; one C program
# compiled against include/llama.h runs against it or against ours by pointing
# LD_LIBRARY_PATH at one or the other:
#   LD_LIBRARY_PATH="$(scripts/install-reference-lib.sh --print-lib-dir)" ./prog
#
# Idempotent: does nothing if the library of this version is already built.
# MINFER_REF_VENV=/path/to/venv uses (or builds into) another venv instead.
# Extra CMake options pass through the environment as usual (CMAKE_ARGS=...).
#
# On a CPU with AMX (Intel Sapphire Rapids and later) the reference is built
# with -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 and is otherwise native. At
# this commit its AMX path (ggml-cpu/amx, chosen for Q4_0, Q4_1, Q8_0, Q4_K,
# Q5_K, Q6_K, IQ4_XS and F16 weights) dies with SIGILL on the first tile load
# in a worker thread when built by GCC 12: the tile configuration it loads
# from the stack is not the one it wrote (upstream pull request 26954, open).
# Without AMX it runs its AVX-512 code, the paths minfer's numerics follow.
# The flags of the build are kept in $VENV/minfer-build-flags; a build made
# with other flags is rebuilt.
# Quiet on success apart from one note before the long build; the build's full
# output goes to ${MINFER_CACHE}/install-reference-lib.log and is shown on failure.
set -euo pipefail

VERSION="0.3.36"
CACHE="${MINFER_CACHE:-$HOME/.cache/minfer}"
# The usual location of a reference venv, so one built by hand there is found too.
VENV="${MINFER_REF_VENV:-$HOME/.cache/minfer-ref/venv}"
LOG="$CACHE/install-reference-lib.log"

die() { echo "install-reference-lib.sh: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

print_dir=0
for arg in "$@"; do
  case "$arg" in
    --print-lib-dir) print_dir=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install-reference-lib.sh: unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

# The built library, or nothing.
find_lib() {
  local f
  for f in "$VENV"/lib/python3*/site-packages/llama_cpp/lib/libllama.so; do
    if [[ -f $f ]]; then echo "$f"; return 0; fi
  done
  return 1
}

installed_version() {
  [[ -x $VENV/bin/python ]] || return 1
  "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))' 2>/dev/null
}

if [[ $print_dir == 1 ]]; then
  lib="$(find_lib)" || { echo "install-reference-lib.sh: libllama.so not built (run scripts/install-reference-lib.sh)" >&2; exit 1; }
  dirname "$lib"
  exit 0
fi

# The compiler flags this CPU needs (see the header).
BUILD_FLAGS=""
if grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
  BUILD_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
fi
FLAGS_FILE="$VENV/minfer-build-flags"
built_flags() { [[ -f $FLAGS_FILE ]] && cat "$FLAGS_FILE" || echo ""; }

if lib="$(find_lib)" && [[ "$(installed_version || true)" == "$VERSION" ]] \
   && [[ "$(built_flags)" == "$BUILD_FLAGS" ]]; then
  echo "$lib"
  exit 0
fi

command -v python3 >/dev/null || die "python3 not found"
command -v cc >/dev/null || command -v gcc >/dev/null || die "no C compiler found (apt-get install -y build-essential)"
command -v c++ >/dev/null || command -v g++ >/dev/null || die "no C++ compiler found (apt-get install -y build-essential)"

mkdir -p "$CACHE"
: >"$LOG"

# Run a command with its output appended to the log; show the log's tail on failure.
logged() {
  if ! "$@" >>"$LOG" 2>&1; then
    tail -n 60 "$LOG" >&2
    die "command failed: $* (full log: $LOG)"
  fi
}

if [[ ! -x $VENV/bin/python ]]; then
  logged python3 -m venv "$VENV"
fi
logged "$VENV/bin/python" -m pip install --disable-pip-version-check \
  numpy gguf scikit-build-core cmake ninja

jobs="$(nproc 2>/dev/null || echo 2)"
echo "install-reference-lib.sh: compiling llama-cpp-python==$VERSION with $jobs jobs (5-25 min on 2 cores); follow with: tail -f $LOG" >&2
cmake_args="${CMAKE_ARGS:-}"
if [[ -n $BUILD_FLAGS ]]; then
  echo "install-reference-lib.sh: this CPU has AMX; building the reference with $BUILD_FLAGS (see --help)" >&2
  cmake_args="$cmake_args -DCMAKE_C_FLAGS='$BUILD_FLAGS' -DCMAKE_CXX_FLAGS='$BUILD_FLAGS'"
fi
# --no-cache-dir --force-reinstall: a wheel pip cached from a build with
# other flags must not be reused.
rm -f "$FLAGS_FILE"
logged env CMAKE_BUILD_PARALLEL_LEVEL="$jobs" CMAKE_ARGS="$cmake_args" "$VENV/bin/python" -m pip install \
  --disable-pip-version-check --no-build-isolation --no-cache-dir --force-reinstall \
  -v "llama-cpp-python==$VERSION"

lib="$(find_lib)" || die "pip finished but no libllama.so under $VENV/lib/python3*/site-packages/llama_cpp/lib/ (log: $LOG)"
got="$(installed_version || true)"
[[ $got == "$VERSION" ]] || die "installed llama-cpp-python is '$got', expected $VERSION (log: $LOG)"
echo "$BUILD_FLAGS" > "$FLAGS_FILE"
echo "$lib"
