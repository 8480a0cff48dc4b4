#!/usr/bin/env bash
# Prints minfer's version: the [package] version of Cargo.toml (what
# llama_version() reports and scripts/install.sh names the library after).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
v=$(sed -nE '/^\[package\]/,/^\[/ s/^version = "([^"]+)"/\1/p' "$ROOT/Cargo.toml" | head -n 1)
[ -n "$v" ] || { echo "no version in $ROOT/Cargo.toml" >&2; exit 1; }
echo "$v"
