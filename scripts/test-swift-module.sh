#!/usr/bin/env bash
# The Swift package's C module (bindings/swift/Sources/CLlama/module.modulemap)
# checked with clang's modules, since Swift itself is not on this machine:
# ffi-tests/swift_module_check.m imports CLlama (as Objective-C with @import,
# and as C with #pragma clang module import), links libllama and runs; its
# version line and prompt token ids must equal llama_version()'s expected
# value and examples-c/simple.c --ids. Without the module map the import must
# fail (nothing reaches llama.h another way). Installs Debian's clang if missing.
#
# usage: scripts/test-swift-module.sh [MODEL.gguf]   (default: SmolLM2 in
#        ~/.cache/minfer/models; after `cargo build --release`)
#   MINFER_LIB_DIR  the libllama.so to use (default target/release)
# Prints "ok ..." / "FAIL ..." per check and "swift_module: N passed, M failed".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIB_DIR=${MINFER_LIB_DIR:-$ROOT/target/release}
MODEL=${1:-${MINFER_CACHE:-$HOME/.cache/minfer}/models/SmolLM2-135M-Instruct.Q4_1.gguf}
MODMAP=$ROOT/bindings/swift/Sources/CLlama/module.modulemap
SRC=$ROOT/ffi-tests/swift_module_check.m
PROMPT="Hello my name is"

if ! command -v clang > /dev/null; then
    echo "installing: clang"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang > /dev/null; } \
        || { echo "could not install clang" >&2; exit 1; }
fi

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
not_ok() { fail=$((fail + 1)); echo "FAIL $1"; }

OUT=$ROOT/target/swift-module
rm -rf "$OUT" && mkdir -p "$OUT"
version=$(bash "$ROOT/scripts/version.sh")
gcc -std=c11 -O2 -I"$ROOT/include" "$ROOT/examples-c/simple.c" -o "$OUT/simple" \
    -L"$LIB_DIR" -lllama -Wl,-rpath,"$LIB_DIR" || { echo "FAIL simple.c build"; exit 1; }
expected_ids=$("$OUT/simple" "$MODEL" -n 1 --ids "$PROMPT" 2> /dev/null | grep '^prompt:')

# clang autolinks `link "llama"` only on Mach-O and COFF: on ELF -lllama is explicit
MODFLAGS=(-fmodules -fmodules-cache-path="$OUT/cache" -fmodule-map-file="$MODMAP" -I"$ROOT/include")
for lang in objective-c c; do
    bin=$OUT/check-$lang
    if clang -x "$lang" -Wall -Wextra -Werror "${MODFLAGS[@]}" "$SRC" -o "$bin" \
        -L"$LIB_DIR" -lllama -Wl,-rpath,"$LIB_DIR" 2> "$bin.build.log"; then
        out=$("$bin" "$MODEL" "$PROMPT" 2> "$bin.err")
        if [ "$(sed -n 's/^version: //p' <<< "$out")" = "minfer $version" ] \
            && [ -n "$expected_ids" ] && [ "$(grep '^prompt:' <<< "$out")" = "$expected_ids" ]; then
            ok "import CLlama ($lang): builds, links, runs (minfer $version; $expected_ids as simple.c)"
        else
            not_ok "import CLlama ($lang): output '$out', expected version minfer $version and '$expected_ids'"
            cat "$bin.err"
        fi
    else
        not_ok "import CLlama ($lang) does not build"; cat "$bin.build.log"
    fi
done

# without the module map, the import has nothing to find
if clang -x objective-c -fmodules -fmodules-cache-path="$OUT/cache" -I"$ROOT/include" -fsyntax-only "$SRC" \
    2> "$OUT/no-modmap.log"; then
    not_ok "the import compiles without the module map (it should not)"
else
    if grep -q "module 'CLlama' not found" "$OUT/no-modmap.log"; then
        ok "without the module map: module 'CLlama' not found"
    else
        not_ok "without the module map: unexpected error"; head -n 5 "$OUT/no-modmap.log"
    fi
fi

echo "swift_module: $pass passed, $fail failed"
[ "$fail" = 0 ]
