#!/usr/bin/env bash
# minfer installed as a system library: scripts/install.sh into a temporary
# prefix, then checks the layout (SONAME, symlinks, header, llama.pc) and
# builds examples-c/simple.c as a user would, once with
# `pkg-config --cflags --libs llama` (shared, found through an rpath) and once
# statically with `pkg-config --static --libs llama` (libllama.a); both run on
# SmolLM2 and must print the same generated text.
#
# usage: ffi-tests/test_install.sh SMOLLM2.gguf
# Prints one "ok ..." or "FAIL ..." line per check (ffi-tests/run.sh counts
# them) and ends with "install: N passed, M failed".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL=${1:?usage: test_install.sh SMOLLM2.gguf}
N_PREDICT=16

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
not_ok() { fail=$((fail + 1)); echo "FAIL $1"; }
finish() { echo "install: $pass passed, $fail failed"; [ "$fail" = 0 ]; exit; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/minfer-install.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PREFIX=$WORK/prefix
version=$(bash "$ROOT/scripts/version.sh")
real=libllama.so.0.${version#*.}

# the same features as the library the other C tests use, so the build is reused
if PREFIX=$PREFIX MINFER_FEATURES=test-hooks bash "$ROOT/scripts/install.sh" > "$WORK/install.log" 2>&1; then
    ok "scripts/install.sh into a temporary prefix"
else
    not_ok "scripts/install.sh into a temporary prefix"; cat "$WORK/install.log"; finish
fi

# --- the layout
L=$PREFIX/lib
if [ -f "$L/$real" ] && [ ! -L "$L/$real" ] && [ "$(readlink "$L/libllama.so.0")" = "$real" ] \
    && [ "$(readlink "$L/libllama.so")" = libllama.so.0 ] && [ -f "$L/libllama.a" ]; then
    ok "lib/$real, libllama.so.0 -> $real, libllama.so -> libllama.so.0, libllama.a"
else
    not_ok "library files and symlinks"; ls -l "$L"
fi
soname=$(readelf -d "$L/$real" | sed -nE 's/.*\(SONAME\).*\[(.*)\]/\1/p')
if [ "$soname" = libllama.so.0 ]; then ok "readelf -d: SONAME libllama.so.0"; else not_ok "SONAME is '$soname'"; fi
if cmp -s "$ROOT/include/llama.h" "$PREFIX/include/llama.h"; then ok "include/llama.h"; else not_ok "include/llama.h"; fi

export PKG_CONFIG_PATH=$L/pkgconfig
pc_version=$(pkg-config --modversion llama 2> "$WORK/pc.err")
if [ "$pc_version" = "$version" ] && [ "$(pkg-config --variable=libdir llama)" = "$L" ] \
    && [ "$(pkg-config --cflags llama | xargs)" = "-I$PREFIX/include" ]; then
    ok "pkg-config: llama $pc_version, libdir and cflags under the prefix"
else
    not_ok "pkg-config: version '$pc_version' (want $version)"; cat "$WORK/pc.err" "$L/pkgconfig/llama.pc"
fi

# --- simple.c, shared: the -lllama of `pkg-config --libs` finds libllama.so
# -> libllama.so.0; the program then needs the SONAME, found by the rpath
# shellcheck disable=SC2046
if gcc -std=c11 -O2 "$ROOT/examples-c/simple.c" -o "$WORK/simple_shared" $(pkg-config --cflags --libs llama) \
    -Wl,-rpath,"$L" 2> "$WORK/shared.log"; then
    needed=$(readelf -d "$WORK/simple_shared" | sed -nE 's/.*\(NEEDED\).*\[(libllama.*)\]/\1/p')
    resolved=$(ldd "$WORK/simple_shared" | awk '$1 == "libllama.so.0" {print $3}')
    if [ "$needed" = libllama.so.0 ] && [ "$resolved" = "$L/libllama.so.0" ]; then
        ok "simple (shared) needs libllama.so.0, resolved in the prefix"
    else
        not_ok "simple (shared) needs '$needed', resolved to '$resolved'"
    fi
else
    not_ok "simple.c with pkg-config --cflags --libs llama"; cat "$WORK/shared.log"
fi

# --- simple.c, static: `pkg-config --static` adds Libs.private; -l:libllama.a
# picks the archive over the shared library beside it
static_libs=$(pkg-config --static --libs llama)
# shellcheck disable=SC2046,SC2086
if gcc -std=c11 -O2 "$ROOT/examples-c/simple.c" -o "$WORK/simple_static" $(pkg-config --cflags llama) \
    ${static_libs/-lllama/-l:libllama.a} 2> "$WORK/static.log"; then
    if readelf -d "$WORK/simple_static" | grep -q 'NEEDED.*libllama'; then
        not_ok "simple (static) still needs a shared libllama"
    else
        ok "simple (static) links libllama.a (no libllama in NEEDED)"
    fi
else
    not_ok "simple.c with pkg-config --static --libs llama"; cat "$WORK/static.log"
fi

# --- both generate the same text
if [ -x "$WORK/simple_shared" ] && [ -x "$WORK/simple_static" ]; then
    "$WORK/simple_shared" "$MODEL" -n $N_PREDICT > "$WORK/shared.txt" 2> "$WORK/shared.err"; rc_shared=$?
    "$WORK/simple_static" "$MODEL" -n $N_PREDICT > "$WORK/static.txt" 2> "$WORK/static.err"; rc_static=$?
    decoded=$(sed -nE 's/^decoded ([0-9]+) tokens.*/\1/p' "$WORK/shared.err")
    if [ $rc_shared = 0 ] && [ $rc_static = 0 ] && [ "${decoded:-0}" = $N_PREDICT ] \
        && cmp -s "$WORK/shared.txt" "$WORK/static.txt"; then
        ok "shared and static simple print the same $N_PREDICT generated tokens: $(head -c 120 "$WORK/shared.txt")"
    else
        not_ok "shared (rc $rc_shared, $decoded tokens) and static (rc $rc_static) output"
        cat "$WORK/shared.txt" "$WORK/static.txt"; tail -n 5 "$WORK/shared.err" "$WORK/static.err"
    fi
fi
finish
