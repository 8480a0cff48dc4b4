#!/usr/bin/env bash
# Creates (once) the Python venv the kernel checks use, with numpy and the
# gguf package (its numpy dequantizers are the reference for dequantize_row),
# under ${MINFER_CACHE:-~/.cache/minfer}/py-venv, and prints its python path.
# A second run installs nothing.
set -euo pipefail
CACHE="${MINFER_CACHE:-$HOME/.cache/minfer}"
VENV="$CACHE/py-venv"
GGUF_VERSION=0.17.1
if ! "$VENV/bin/python" -c "import numpy, gguf" > /dev/null 2>&1; then
    command -v python3 > /dev/null || { echo "py-venv.sh: python3 missing" >&2; exit 1; }
    if ! python3 -m venv --help > /dev/null 2>&1 || ! python3 -c "import ensurepip" > /dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv > /dev/null
    fi
    rm -rf "$VENV"
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install -q --disable-pip-version-check numpy "gguf==$GGUF_VERSION" >&2
fi
echo "$VENV/bin/python"
