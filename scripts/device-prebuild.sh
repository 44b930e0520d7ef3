#!/usr/bin/env bash
# Builds, HERE, the tree the GPU machine runs, and packs it to travel with .deps:
#
#   scripts/device-prebuild.sh [--arch 90-real] [--jobs N] [--log FILE (default <prefix>/prebuild.log)]
#
# The build uses only the carried dependencies (.deps/root, scripts/fetch-device-deps.sh) at the
# fixed prefix both machines share (scripts/device-env.sh), for the H100/H200's sm_90. Programs
# and libraries are stripped and packed with the CTest files into .deps/prebuilt.tar.xz (a few
# MiB), with PREBUILT.txt inside: the hash of the sources it was built from, the architecture and
# the date. scripts/device-first.sh unpacks it when the hash matches the checkout it meets there
# and builds on the GPU machine otherwise (3-4 minutes of device time). scripts/device-rehearsal.sh
# runs this inside the GPU machine's emulation, so a pack made by the rehearsal is proven there.
# Exit status 0 when the build and the pack succeeded.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$PWD
ARCH=90-real JOBS=$(nproc 2>/dev/null || echo 2) LOG=""
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) ARCH=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --log) LOG=$2; shift ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "device-prebuild: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=scripts/device-env.sh
. "$REPO/scripts/device-env.sh"
PACK=$REPO/.deps/prebuilt.tar.xz
[ -n "$LOG" ] || LOG=$ZS_DEV/prebuild.log
mkdir -p "$(dirname "$LOG")" || exit 1
t0=$SECONDS
: >"$LOG"
dev_stage "$REPO" || exit 1
dev_env "$REPO"
rm -rf "$DEV_BUILD" # always from scratch: a cached configuration may name libraries from elsewhere
why=$(dev_build "$ARCH" "$JOBS" "$LOG") || { echo "device-prebuild: $why (log: $LOG)" >&2; exit 1; }

# What runs there: every ELF program and shared library of the tree (stripped), and the files
# ctest reads. Object files, archives and the build system stay here.
LIST=$(mktemp)
trap 'rm -f "$LIST"' EXIT
(cd "$DEV_BUILD" && find . -path ./CMakeFiles -prune -o -path '*/CMakeFiles' -prune -o -type f \
  \( -name CTestTestfile.cmake -o -name CMakeCache.txt -o -perm -u+x -o -name '*.so*' \) -print |
  LC_ALL=C sort) >"$LIST"
while IFS= read -r f; do
  head -c4 "$DEV_BUILD/$f" | grep -q $'\x7fELF' && strip --strip-unneeded "$DEV_BUILD/$f" 2>>"$LOG"
done <"$LIST"
{
  echo "source_hash $(dev_source_hash)"
  echo "arch $ARCH"
  echo "prefix $ZS_DEV"
  echo "built $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
  echo "commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null)$(git -C "$REPO" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
} >"$DEV_BUILD/PREBUILT.txt"
echo ./PREBUILT.txt >>"$LIST"
# Links (libzshard.so -> .so.0 -> .so.0.1.0) travel as links; tar keeps them.
(cd "$DEV_BUILD" && find . -path '*/CMakeFiles' -prune -o -type l -print) >>"$LIST"
if ! tar -C "$DEV_BUILD" -cJf "$PACK.tmp" -T "$LIST" 2>>"$LOG"; then
  rm -f "$PACK.tmp"
  echo "device-prebuild: packing failed (log: $LOG)" >&2
  exit 1
fi
mv "$PACK.tmp" "$PACK"
echo "device-prebuild: $PACK: $(($(stat -c %s "$PACK") >> 10)) KiB, $(wc -l <"$LIST") files," \
  "sources $(dev_source_hash), arch $ARCH ($((SECONDS - t0)) s)"
