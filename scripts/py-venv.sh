#!/usr/bin/env bash
# Creates (once) the Python venv the tests use, under
# ${MINFER_CACHE:-~/.cache/minfer}/py-venv, and prints its python path:
#   - numpy and the gguf package (its numpy dequantizers are the reference for
#     dequantize_row), for the kernel checks;
#   - the pure-Python dependencies of llama-cpp-python 0.3.36 (typing-extensions,
#     diskcache, jinja2: its chat templates), for ffi-tests/python/. The
#     llama_cpp package itself is not installed: the tests put the sdist's
#     llama_cpp/ directory on PYTHONPATH, so its C library is never built.
# A second run installs nothing.
set -euo pipefail
CACHE="${MINFER_CACHE:-$HOME/.cache/minfer}"
VENV="$CACHE/py-venv"
PACKAGES=(numpy "gguf==0.17.1" "typing-extensions>=4.5.0" "diskcache==5.6.3" "jinja2==3.1.6")
if ! "$VENV/bin/python" -c "import numpy, gguf, typing_extensions, diskcache, jinja2" > /dev/null 2>&1; then
    command -v python3 > /dev/null || { echo "py-venv.sh: python3 missing" >&2; exit 1; }
    if [ ! -x "$VENV/bin/python" ]; then
        if ! python3 -m venv --help > /dev/null 2>&1 || ! python3 -c "import ensurepip" > /dev/null 2>&1; then
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv > /dev/null
        fi
        rm -rf "$VENV"
        python3 -m venv "$VENV" >&2
    fi
    echo "py-venv.sh: installing ${PACKAGES[*]} into $VENV (once; about a minute)" >&2
    "$VENV/bin/pip" install -q --disable-pip-version-check "${PACKAGES[@]}" >&2
fi
echo "$VENV/bin/python"
