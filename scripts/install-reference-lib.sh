#!/usr/bin/env bash
# install-reference-lib.sh — build the reference library (llama.cpp commit 0c1e570,
# as built by llama-cpp-python 0.3.36 from PyPI) for parity checks and benchmarks.
# Not needed by CI.
#
#   scripts/install-reference-lib.sh                  build if needed, print the libllama.so path
#   scripts/install-reference-lib.sh --print-lib-dir  print the directory holding libllama.so,
#                                                     or exit 1 if it is not built
#
# Creates the venv ~/.cache/minfer-ref/venv (the path ../shared/ref/README.md uses), installs
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
# Quiet on success apart from one note before the long build; the build's full
# output goes to ${MINFER_CACHE}/install-reference-lib.log and is shown on failure.
set -euo pipefail

VERSION="0.3.36"
CACHE="${MINFER_CACHE:-$HOME/.cache/minfer}"
# The location ../shared/ref/README.md names, so a reference built by hand is found.
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

if lib="$(find_lib)" && [[ "$(installed_version || true)" == "$VERSION" ]]; then
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
logged env CMAKE_BUILD_PARALLEL_LEVEL="$jobs" "$VENV/bin/python" -m pip install \
  --disable-pip-version-check --no-build-isolation -v "llama-cpp-python==$VERSION"

lib="$(find_lib)" || die "pip finished but no libllama.so under $VENV/lib/python3*/site-packages/llama_cpp/lib/ (log: $LOG)"
got="$(installed_version || true)"
[[ $got == "$VERSION" ]] || die "installed llama-cpp-python is '$got', expected $VERSION (log: $LOG)"
echo "$lib"
