#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Development entry point. Every command installs what it needs first (in .venvs/), so a
# fresh clone on a fresh Debian 12 machine with Python 3.11 needs nothing else:
#
#   bash dev.sh demo [DIR]  build the demo rig in real Blender, save DIR/demo.blend (default
#                           demo_output/), draw the pictures and print the numbers behind them
#   bash dev.sh test        run every test layer (core, Blender 4.2 and 5.0, packaging, static)
#   bash dev.sh bench       run the benchmarks and write the table into README.md
#   bash dev.sh zip         build the extension zip into dist/ with Blender's own tool
#
# Extra arguments after `test` go to pytest (for example `bash dev.sh test -k core`).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENVS="${RQ_VENVS:-$REPO/.venvs}"
PYTHON="${PYTHON:-python3.11}"

log() { printf '[dev.sh] %s\n' "$*" >&2; }

ensure_python() {
  if ! command -v "$PYTHON" >/dev/null 2>&1; then
    log "$PYTHON not found: the Blender wheels need CPython 3.11 (Debian 12: apt-get install python3)."
    exit 1
  fi
  if ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      log "installing python3-venv (Debian ships venv separately)"
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    else
      log "Python's venv module is missing: sudo apt-get install python3-venv"
      exit 1
    fi
  fi
}

# venv NAME: create .venvs/NAME from tools/requirements/NAME.txt, reinstalling only when
# that file changes. Prints the venv's python.
venv() {
  local name="$1" requirements="$REPO/tools/requirements/$1.txt" dir="$VENVS/$1"
  local stamp="$dir/.requirements.sha256" want
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [ ! -x "$dir/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "setting up $dir"
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
    echo "$want" > "$stamp"
  fi
  echo "$dir/bin/python"
}

setup_all() {
  ensure_python
  local name pid failed=0
  local -a pids=()
  # The two Blender wheels are large (~360 MB each): fetch them side by side.
  for name in bpy-4.2 bpy-5.0 types-4.2 types-5.0; do
    venv "$name" >/dev/null &
    pids+=("$!")
  done
  venv dev >/dev/null || failed=1
  for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
  done
  if [ "$failed" != 0 ]; then
    log "setting up the virtual environments failed (see pip's messages above)"
    exit 1
  fi
}

command="${1:-}"
shift || true
case "$command" in
  test)
    setup_all
    cd "$REPO"
    exec "$VENVS/dev/bin/python" -m pytest tests "$@"
    ;;
  demo)
    ensure_python
    cd "$REPO"
    output="${1:-$REPO/demo_output}"
    blender_python="$(venv bpy-5.0)"
    dev_python="$(venv dev)"
    "$blender_python" tools/demo.py "$output"
    "$dev_python" tools/demo_figures.py "$output"
    ;;
  bench)
    setup_all
    cd "$REPO"
    exec "$VENVS/dev/bin/python" tools/bench_all.py "$@"
    ;;
  zip)
    ensure_python
    cd "$REPO"
    exec "$(venv bpy-5.0)" tools/build_zip.py "$@"
    ;;
  *)
    sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
