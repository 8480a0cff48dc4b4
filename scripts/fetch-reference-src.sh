#!/usr/bin/env bash
# fetch-reference-src.sh — fetch the reference source (llama-cpp-python 0.3.36,
# which vendors llama.cpp commit 0c1e570, the commit our ABI pins) and the 19
# vocab-only GGUF files it carries.
#
#   scripts/fetch-reference-src.sh [--print-paths]
#
# Into ${MINFER_CACHE:-$HOME/.cache/minfer}/:
#   ref-src/llama_cpp_python-0.3.36/   the unpacked source distribution
#                                      (vendor/llama.cpp/: llama.h, grammars,
#                                      chat templates, the reference's examples)
#   vocab/ggml-vocab-*.gguf            the 19 vocab-only files, checked against
#                                      ffi-tests/golden/tokenizer/vocab/SHA256SUMS
#   tools-venv/                        a venv with scikit-build-core + cmake, which
#                                      pip needs for the sdist's metadata step
#
# The sdist is fetched with pip from PyPI (no compiling happens). Set
# LLAMA_CPP_PYTHON_SDIST=/path/to/llama_cpp_python-0.3.36.tar.gz to unpack an
# existing copy instead.
#
# Idempotent: an existing unpacked source is reused, present vocab files are
# only re-verified (a second run takes well under a second). The source is
# unpacked under a temporary name and renamed into place.
# Prints the source dir and the vocab dir on stdout, one per line; what it
# downloads or installs is said on stderr.
# --print-paths: fetch nothing, just print them; exit 1 if either is missing.
set -euo pipefail

VERSION="0.3.36"
NAME="llama_cpp_python-$VERSION"
CACHE="${MINFER_CACHE:-$HOME/.cache/minfer}"
REF_SRC="$CACHE/ref-src"
DEST="$REF_SRC/$NAME"
VOCAB="$CACHE/vocab"
TOOLS_VENV="$CACHE/tools-venv"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "fetch-reference-src.sh: error: $*" >&2; exit 1; }
note() { echo "fetch-reference-src.sh: $*" >&2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

print_only=0
for arg in "$@"; do
  case "$arg" in
    --print-paths) print_only=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fetch-reference-src.sh: unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

if [[ $print_only == 1 ]]; then
  echo "$DEST"
  echo "$VOCAB"
  [[ -d $DEST && -d $VOCAB ]] || { echo "fetch-reference-src.sh: not fetched yet (run scripts/fetch-reference-src.sh)" >&2; exit 1; }
  exit 0
fi

# The checksums of the vocab files, committed with their tokenizer goldens.
SUMS="$SCRIPT_DIR/../ffi-tests/golden/tokenizer/vocab/SHA256SUMS"
[[ -f $SUMS ]] || die "$SUMS is missing (is this a complete checkout?)"
SUMS="$(cd "$(dirname "$SUMS")" && pwd)/SHA256SUMS"

command -v python3 >/dev/null || die "python3 not found"
command -v sha256sum >/dev/null || die "sha256sum not found"
command -v tar >/dev/null || die "tar not found"

WORK=""
cleanup() { if [[ -n $WORK ]]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT
workdir() {
  if [[ -z $WORK ]]; then
    mkdir -p "$REF_SRC"
    WORK="$(mktemp -d "$REF_SRC/.fetch.XXXXXX")" # same filesystem as DEST: mv is atomic
  fi
}

# Run a command with its output kept in a log that is shown only on failure.
quiet() {
  local log="$WORK/cmd.log"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    die "command failed: $*"
  fi
}

# ---- the source distribution ----------------------------------------------
ensure_tools_venv() {
  local py="$TOOLS_VENV/bin/python"
  if [[ ! -x $py ]]; then
    quiet python3 -m venv "$TOOLS_VENV"
  fi
  if ! "$py" -c 'import scikit_build_core, cmake' >/dev/null 2>&1; then
    note "installing scikit-build-core and cmake into $TOOLS_VENV (pip needs them to read the sdist's metadata)"
    quiet "$py" -m pip install --disable-pip-version-check -q scikit-build-core cmake
  fi
}

fetch_sdist() {
  [[ -f $DEST/vendor/llama.cpp/include/llama.h ]] && return 0
  [[ -e $DEST ]] && die "$DEST exists but has no vendor/llama.cpp/include/llama.h; remove it and re-run"
  workdir
  local tarball
  if [[ -n ${LLAMA_CPP_PYTHON_SDIST:-} ]]; then
    [[ -f $LLAMA_CPP_PYTHON_SDIST ]] || die "LLAMA_CPP_PYTHON_SDIST=$LLAMA_CPP_PYTHON_SDIST: no such file"
    tarball="$LLAMA_CPP_PYTHON_SDIST"
  else
    ensure_tools_venv
    note "downloading the llama-cpp-python $VERSION source distribution from PyPI (77 MB; it vendors llama.cpp 0c1e570)"
    quiet "$TOOLS_VENV/bin/python" -m pip download --disable-pip-version-check -q \
      --no-deps --no-binary :all: --no-build-isolation \
      -d "$WORK/dl" "llama-cpp-python==$VERSION"
    tarball="$WORK/dl/$NAME.tar.gz"
    [[ -f $tarball ]] || die "pip download did not produce $tarball (got: $(ls "$WORK/dl"))"
  fi
  note "unpacking it into $DEST"
  mkdir -p "$WORK/x"
  quiet tar -xzf "$tarball" -C "$WORK/x"
  [[ -f $WORK/x/$NAME/vendor/llama.cpp/include/llama.h ]] \
    || die "$tarball does not contain $NAME/vendor/llama.cpp/include/llama.h"
  mv "$WORK/x/$NAME" "$DEST"
}

# ---- the vocab files -------------------------------------------------------
install_vocab() {
  local models="$DEST/vendor/llama.cpp/models" name n=0
  mkdir -p "$VOCAB"
  while read -r _ name; do
    [[ -n $name ]] || continue
    n=$((n + 1))
    [[ -s $VOCAB/$name ]] && continue
    [[ -f $models/$name ]] || die "$models/$name is missing from the source distribution"
    [[ $n == 1 ]] && note "copying the vocab-only GGUF files into $VOCAB"
    cp "$models/$name" "$VOCAB/.$name.tmp"
    mv "$VOCAB/.$name.tmp" "$VOCAB/$name"
  done <"$SUMS"
  [[ $n -gt 0 ]] || die "$SUMS lists no files"

  local bad
  if ! bad="$(cd "$VOCAB" && sha256sum --check --quiet --strict "$SUMS" 2>&1)"; then
    # Remove the files that failed so the next run copies them afresh.
    while IFS=: read -r name _; do
      [[ $name == ggml-vocab-*.gguf ]] && rm -f "${VOCAB:?}/$name"
    done <<<"$bad"
    die "vocab files do not match $SUMS:
$bad
(the mismatching files were removed from $VOCAB)"
  fi
}

fetch_sdist
install_vocab

echo "$DEST"
echo "$VOCAB"
