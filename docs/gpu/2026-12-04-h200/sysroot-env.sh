# shellcheck shell=bash
# Sourced (bash) by device-check.sh and by the local check: points a CMake configure of headprune
# at the Debian 12 -dev files copied into this folder (see MANIFEST.txt), and nothing else.
# In:  HP_SYSROOT (absolute path of this folder; default: the folder of this file).
# Out: env (LD_LIBRARY_PATH, PKG_CONFIG_*) and the bash array HP_SYSROOT_CMAKE_ARGS.
HP_SYSROOT="${HP_SYSROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
_hp_lib="$HP_SYSROOT/usr/lib/x86_64-linux-gnu"

# The shared-library symlinks, re-made in case the copy lost them (cheap; idempotent).
_hp_link() { [ -e "$_hp_lib/$2" ] || ln -sfn "$1" "$_hp_lib/$2"; }
_hp_link libboost_program_options.so.1.74.0 libboost_program_options.so
_hp_link libutf8proc.so.2.6.0 libutf8proc.so.2
_hp_link libutf8proc.so.2.6.0 libutf8proc.so
_hp_link libpcre2-8.so.0.11.2 libpcre2-8.so.0
_hp_link libpcre2-8.so.0.11.2 libpcre2-8.so
_hp_link libcsv.so.3.0.2 libcsv.so.3
_hp_link libcsv.so.3.0.2 libcsv.so
_hp_link libonnx.so.1 libonnx.so
_hp_link libonnx_proto.so.1 libonnx_proto.so
_hp_link libprotobuf.so.32.0.12 libprotobuf.so.32
_hp_link libprotobuf.so.32.0.12 libprotobuf.so
_hp_link libfmt.so.9.1.0 libfmt.so.9
_hp_link libfmt.so.9 libfmt.so
_hp_link libpkgconf.so.3.0.0 libpkgconf.so.3
chmod +x "$HP_SYSROOT/usr/bin/pkgconf" 2>/dev/null || true

export LD_LIBRARY_PATH="$_hp_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# pkg-config: only this folder's .pc files (prefix=/usr, re-rooted by the sysroot variable); keep
# -I/-L of /usr/include and /usr/lib/... (which pkg-config would otherwise drop as system paths).
export PKG_CONFIG_LIBDIR="$_hp_lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$HP_SYSROOT"
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
unset PKG_CONFIG_PATH
# The carried pkgconf (Debian 12's, glibc >= 2.34) if it runs here, else the machine's own.
HP_PKG_CONFIG=""
if "$HP_SYSROOT/usr/bin/pkgconf" --version >/dev/null 2>&1; then
  HP_PKG_CONFIG="$HP_SYSROOT/usr/bin/pkgconf"
elif command -v pkg-config >/dev/null 2>&1; then
  HP_PKG_CONFIG="$(command -v pkg-config)"
elif command -v pkgconf >/dev/null 2>&1; then
  HP_PKG_CONFIG="$(command -v pkgconf)"
fi

HP_SYSROOT_CMAKE_ARGS=(
  "-DCMAKE_PREFIX_PATH=$HP_SYSROOT/usr"
  "-DBoost_DIR=$_hp_lib/cmake/Boost-1.74.0"
  "-Dfmt_DIR=$_hp_lib/cmake/fmt"
  "-DONNX_DIR=$_hp_lib/cmake/ONNX"
  "-Dnlohmann_json_DIR=$HP_SYSROOT/usr/share/cmake/nlohmann_json"
  "-DCatch2_DIR=$HP_SYSROOT/usr/lib/cmake/Catch2"
  "-DProtobuf_INCLUDE_DIR=$HP_SYSROOT/usr/include"
  "-DProtobuf_LIBRARY_RELEASE=$_hp_lib/libprotobuf.so"
  "-DProtobuf_LIBRARY_DEBUG=$_hp_lib/libprotobuf.so"
  "-DLIBCSV_INCLUDE_DIR=$HP_SYSROOT/usr/include"
  "-DLIBCSV_LIBRARY=$_hp_lib/libcsv.so"
  "-DGLOO_INCLUDE_DIR=$HP_SYSROOT/usr/include"
)
[ -n "$HP_PKG_CONFIG" ] && HP_SYSROOT_CMAKE_ARGS+=("-DPKG_CONFIG_EXECUTABLE=$HP_PKG_CONFIG")
unset -f _hp_link
