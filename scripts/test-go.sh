#!/usr/bin/env bash
# The Go binding (bindings/go/llama): installs Debian's golang-go if go is
# missing, builds examples-c/simple.c (the test compares with its tokens),
# then runs `go test` with cgo pointed at include/ and the built library.
# No network: no external modules, GOPROXY=off, GOTOOLCHAIN=local.
#
# usage: scripts/test-go.sh [MODEL.gguf]   (default: SmolLM2-135M-Instruct Q4_1
#        in ~/.cache/minfer/models; after `cargo build --release`)
#   MINFER_LIB_DIR  the libllama.so to use (default target/release)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIB_DIR=${MINFER_LIB_DIR:-$ROOT/target/release}
MODEL=${1:-${MINFER_CACHE:-$HOME/.cache/minfer}/models/SmolLM2-135M-Instruct.Q4_1.gguf}

if ! command -v go > /dev/null; then
    echo "installing: golang-go"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go > /dev/null; } \
        || { echo "could not install golang-go" >&2; exit 1; }
fi
[ -f "$LIB_DIR/libllama.so" ] || { echo "no $LIB_DIR/libllama.so: build the library first" >&2; exit 1; }
[ -f "$MODEL" ] || { echo "no model $MODEL (run scripts/fetch-models.sh)" >&2; exit 1; }

OUT=$ROOT/target/go
mkdir -p "$OUT"
gcc -std=c11 -O2 -Wall -Wextra -Werror -I"$ROOT/include" "$ROOT/examples-c/simple.c" -o "$OUT/simple" \
    -L"$LIB_DIR" -lllama -Wl,-rpath,"$LIB_DIR"

export CGO_ENABLED=1
export CGO_CFLAGS="-I$ROOT/include"
export CGO_LDFLAGS="-L$LIB_DIR -Wl,-rpath,$LIB_DIR"
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOSUMDB=off
export GOCACHE=${GOCACHE:-$ROOT/target/go/cache} GOPATH=${GOPATH:-$ROOT/target/go/path}
export MINFER_MODEL=$MODEL MINFER_SIMPLE_BIN=$OUT/simple
cd "$ROOT/bindings/go/llama"
go vet ./...
exec go test -v -count=1 ./...
