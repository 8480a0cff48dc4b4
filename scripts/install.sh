#!/usr/bin/env bash
# Installs libllama as a system library: builds the release library if it is
# not up to date, then lays out under PREFIX
#   lib/libllama.so.0.<minor>.<patch>   the shared library (SONAME libllama.so.0)
#   lib/libllama.so.0 -> libllama.so.0.<minor>.<patch>
#   lib/libllama.so   -> libllama.so.0   (what -lllama finds)
#   lib/libllama.a                       the static library
#   include/llama.h
#   lib/pkgconfig/llama.pc               for `pkg-config --cflags --libs llama`
# <minor>.<patch> come from the version in Cargo.toml. The SONAME is the
# reference's (llama.cpp's libllama.so.0, set in build.rs), so programs
# linked against either library load the other.
#
# usage: PREFIX=/usr/local scripts/install.sh
#   PREFIX           where to install (default /usr/local)
#   DESTDIR          staging root prepended to every path (packaging); the .pc
#                    file still says PREFIX
#   MINFER_FEATURES  cargo features of the build (default none; the tests pass
#                    test-hooks so that the library they built is reused as is)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
case "$PREFIX" in
    /*) ;;
    *) echo "PREFIX must be an absolute path (got '$PREFIX')" >&2; exit 1 ;;
esac
PREFIX=${PREFIX%/}

# must match SONAME in build.rs
SONAME=libllama.so.0
version=$(bash scripts/version.sh)
minor_patch=${version#*.}
real=$SONAME.$minor_patch

features=()
[ -n "${MINFER_FEATURES:-}" ] && features=(--features "$MINFER_FEATURES")
cargo build --release --lib "${features[@]}" --quiet
LIB=$ROOT/target/release
for f in libllama.so libllama.a; do
    [ -f "$LIB/$f" ] || { echo "the build did not produce $LIB/$f" >&2; exit 1; }
done

libdir=$DESTDIR$PREFIX/lib
incdir=$DESTDIR$PREFIX/include
install -d "$libdir" "$libdir/pkgconfig" "$incdir"
install -m 755 "$LIB/libllama.so" "$libdir/$real"
ln -sfn "$real" "$libdir/$SONAME"
ln -sfn "$SONAME" "$libdir/libllama.so"
install -m 644 "$LIB/libllama.a" "$libdir/libllama.a"
install -m 644 include/llama.h "$incdir/llama.h"

# Libs.private: the native libraries Rust's standard library needs in a
# static link, as `cargo rustc --release --lib --crate-type staticlib --
# --print native-static-libs` lists them on Linux.
cat > "$libdir/pkgconfig/llama.pc" <<EOF
prefix=$PREFIX
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: llama
Description: minfer: an LLM inference runtime, a drop-in replacement for llama.cpp's libllama
Version: $version
Libs: -L\${libdir} -lllama
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
Cflags: -I\${includedir}
EOF
chmod 644 "$libdir/pkgconfig/llama.pc"

# The loader's cache knows the new library only after ldconfig (for the
# directories it is configured with, e.g. /usr/local/lib on Debian).
if [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] && command -v ldconfig > /dev/null \
    && { [ "$PREFIX" = /usr/local ] || [ "$PREFIX" = /usr ]; }; then
    ldconfig
fi

echo "installed minfer $version into ${DESTDIR}$PREFIX: lib/$real (+ $SONAME, libllama.so), lib/libllama.a, include/llama.h, lib/pkgconfig/llama.pc"
