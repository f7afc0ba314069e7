#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Build (once) the Debian "sid" root in which the GUI tests run a real Blender 5.2 LTS under
# Xvfb. Debian 12 only packages Blender 3.4, too old for extensions; sid packages 5.2 (5.2.2
# when this was written: sid moves on, and the GUI layer prints the version it ran).
#
#   bash tools/gui_root.sh [DIR]      prints DIR when the root is ready
#
# DIR defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/rq-rotations/sid-root, outside the
# repository. The root is stamped with the suite and package list: a second call with the
# same list returns at once; a changed list rebuilds it. Needs root (debootstrap, chroot);
# exits 77 without building when it cannot (the tests skip on that code).
set -euo pipefail

SUITE=sid
MIRROR="${RQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Debian's Blender uses the system Python, and numpy is only a recommendation there.
PACKAGES=(blender python3-numpy xvfb xauth x11-apps imagemagick xdotool)
DIR="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/rq-rotations/sid-root}"
STAMP_WANTED="$SUITE ${PACKAGES[*]}"

log() { printf '[gui_root] %s\n' "$*" >&2; }

if [ "$(cat "$DIR/.rq-root-stamp" 2>/dev/null)" = "$STAMP_WANTED" ]; then
  echo "$DIR"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  log "building the Debian sid root needs root (debootstrap, chroot); not root, so no GUI root"
  exit 77
fi

mkdir -p "$(dirname "$DIR")"
# One builder at a time (two test sessions may start together).
exec 9>"$DIR.lock"
flock 9
if [ "$(cat "$DIR/.rq-root-stamp" 2>/dev/null)" = "$STAMP_WANTED" ]; then
  echo "$DIR"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap on the host"
  if ! { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }; then
    log "cannot install debootstrap; no GUI root"
    exit 77
  fi
fi

BUILD="$DIR.partial"
cleanup() { umount "$BUILD/proc" 2>/dev/null || true; }
trap cleanup EXIT
cleanup
rm -rf "$BUILD" "$DIR"
log "debootstrap $SUITE into $BUILD (a few minutes)"
if ! debootstrap --variant=minbase "$SUITE" "$BUILD" "$MIRROR" >"$DIR.log" 2>&1; then
  tail -n 20 "$DIR.log" >&2
  log "debootstrap failed (full log: $DIR.log)"
  exit 1
fi
mount -t proc proc "$BUILD/proc"
log "installing ${PACKAGES[*]}"
if ! chroot "$BUILD" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive sh -c \
    "apt-get -o Acquire::Check-Valid-Until=false update -qq && apt-get install -y -qq --no-install-recommends ${PACKAGES[*]} \
     && apt-get clean" >>"$DIR.log" 2>&1; then
  tail -n 20 "$DIR.log" >&2
  log "installing packages failed (full log: $DIR.log)"
  exit 1
fi
cleanup
echo "$STAMP_WANTED" > "$BUILD/.rq-root-stamp"
mv "$BUILD" "$DIR"
log "ready: $DIR"
echo "$DIR"
