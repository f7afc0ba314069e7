#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Development entry point. Every command installs what it needs first (in .venvs/), so a
# fresh clone on a fresh Debian 12 machine needs nothing else:
#
#   bash dev.sh demo [DIR]   build the demo rig in real Blender 5.2 LTS, save DIR/demo.blend
#                            (default demo_output/), draw the pictures, print the numbers
#   bash dev.sh test [LAYER] [pytest args]
#                            run the tests: every layer, or one of
#                              core              the numpy core (no Blender)
#                              blender [VERSION] Blender 4.2, 4.5 and 5.2 (bpy wheels), or one
#                              gui               a real Blender 5.2 window under Xvfb
#                              demo              the demo, end to end
#                              static            ruff, ruff format, mypy against 3 API stubs
#                            e.g. `bash dev.sh test blender 4.5 -k set_mode`, or a file
#                            or node id: `bash dev.sh test blender tests/blender/test_bake.py`
#   bash dev.sh sweep        the Blender suite on every minor release with a wheel on PyPI;
#                            writes the README's "Tested with" table
#   bash dev.sh setup [VENV...] only set up the environments (all those the tests use)
#   bash dev.sh bench [NAME...] run the benchmarks (or only those named, the others' rows
#                            from their last run here) and write the table into README.md
#   bash dev.sh zip          build the extension zip into dist/ with Blender's own tool
#
# Pythons: the Blender 4.x/5.0 wheels need CPython 3.11, 5.1+ need CPython 3.13. dev.sh finds
# each: `python3.X` on PATH when it runs, else pyenv's versions folder ($(pyenv root)/versions).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENVS="${RQ_VENVS:-$REPO/.venvs}"
export RQ_VENVS="$VENVS"
# The releases the test command runs: the manifest's minimum and the two LTS users run.
TESTED_BLENDERS=(4.2 4.5 5.2)
# Every minor release with a bpy wheel on PyPI (5.3 has none yet).
SWEEP_BLENDERS=(4.2 4.3 4.4 4.5 5.0 5.1 5.2)
# The venv whose Blender builds the zip and runs the demo: the newest LTS.
NEWEST=5.2

log() { printf '[dev.sh] %s\n' "$*" >&2; }

# find_python X.Y: print the path of a CPython X.Y interpreter that runs, or fail saying how
# to get one.
find_python() {
  local want="$1" candidate root
  local -a candidates=("python$want")
  if command -v pyenv >/dev/null 2>&1 && root="$(pyenv root 2>/dev/null)"; then
    candidates+=("$root"/versions/"$want"*/bin/"python$want")
  fi
  candidates+=("$HOME"/.pyenv/versions/"$want"*/bin/"python$want")
  for candidate in "${candidates[@]}"; do
    # A pyenv shim exists on PATH even when it cannot run: try it, do not trust `command -v`.
    if "$candidate" -c 'import sys' >/dev/null 2>&1; then
      command -v "$candidate"
      return 0
    fi
  done
  log "no CPython $want found (tried python$want on PATH and pyenv's versions folder)."
  log "Install one, e.g. \`pyenv install $want\` or your distribution's python$want package."
  return 1
}

# python_for VENV: the CPython a venv is made with.
python_for() {
  case "$1" in
    bpy-5.[1-9]*|bpy-[6-9]*) find_python 3.13 ;;
    *) find_python 3.11 ;;
  esac
}

ensure_venv_module() {
  local python="$1"
  if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      log "installing python3-venv (Debian ships venv separately)"
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    else
      log "Python's venv module is missing for $python: sudo apt-get install python3-venv"
      return 1
    fi
  fi
}

# venv NAME: create .venvs/NAME from tools/requirements/NAME.txt, reinstalling only when
# that file changes. Prints the venv's python.
venv() {
  local name="$1" requirements="$REPO/tools/requirements/$1.txt" dir="$VENVS/$1"
  local stamp="$dir/.requirements.sha256" want python
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [ ! -x "$dir/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    python="$(python_for "$name")"
    ensure_venv_module "$python"
    log "setting up $dir with $("$python" --version)"
    rm -rf "$dir"
    "$python" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
    echo "$want" > "$stamp"
  fi
  echo "$dir/bin/python"
}

# venvs NAME...: set up several venvs side by side (the Blender wheels are ~360 MB each).
venvs() {
  local name pid failed=0
  local -a pids=()
  for name in "$@"; do
    venv "$name" >/dev/null &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
  done
  if [ "$failed" != 0 ]; then
    log "setting up the virtual environments failed (see the messages above)"
    exit 1
  fi
}

# What each test layer needs, as venv names.
layer_venvs() {
  local version
  case "$1" in
    core) echo dev ;;
    blender)
      echo dev
      for version in "${@:2}"; do echo "bpy-$version"; done ;;
    gui|demo) printf "%s\n" dev "bpy-$NEWEST" ;;
    static)
      echo dev
      for version in "${TESTED_BLENDERS[@]}"; do echo "types-$version"; done ;;
  esac
}

run_tests() {
  local layer="all"
  local -a versions=("${TESTED_BLENDERS[@]}") paths=(tests) names=()
  case "${1:-}" in
    core|gui|demo|static) layer="$1"; paths=("tests/$1"); shift ;;
    blender)
      layer="blender"; paths=(tests/blender); shift
      if [[ "${1:-}" =~ ^[0-9]+\.[0-9]+$ ]]; then versions=("$1"); shift; fi ;;
  esac
  # Paths or node ids among the arguments (tests/...) replace the layer's own folder.
  local argument
  for argument in "$@"; do
    if [[ "$argument" == tests/* ]]; then paths=(); break; fi
  done
  if [ "$layer" = all ]; then
    for name in core blender gui demo static; do
      read -r -a more <<<"$(layer_venvs "$name" "${versions[@]}" | tr '\n' ' ')"
      names+=("${more[@]}")
    done
  else
    read -r -a names <<<"$(layer_venvs "$layer" "${versions[@]}" | tr '\n' ' ')"
  fi
  venvs $(printf '%s\n' "${names[@]}" | sort -u)
  cd "$REPO"
  RQ_BLENDER_VERSIONS="${versions[*]}" exec "$VENVS/dev/bin/python" -m pytest "${paths[@]}" "$@"
}

command="${1:-}"
shift || true
case "$command" in
  test)
    run_tests "$@"
    ;;
  setup)
    # The venvs named (default: every one the test command uses), for preparing a machine.
    if [ $# = 0 ]; then
      set -- $(for layer in core blender gui demo static; do
                 layer_venvs "$layer" "${TESTED_BLENDERS[@]}"; done | sort -u)
    fi
    venvs "$@"
    ;;
  sweep)
    names=(dev)
    for version in "${SWEEP_BLENDERS[@]}"; do names+=("bpy-$version"); done
    venvs "${names[@]}"
    cd "$REPO"
    RQ_BLENDER_VERSIONS="${SWEEP_BLENDERS[*]}" exec "$VENVS/dev/bin/python" tools/sweep.py "$@"
    ;;
  demo)
    cd "$REPO"
    output="${1:-$REPO/demo_output}"
    venvs dev "bpy-$NEWEST"
    "$VENVS/bpy-$NEWEST/bin/python" tools/demo.py "$output"
    "$VENVS/dev/bin/python" tools/demo_figures.py "$output"
    ;;
  bench)
    venvs dev bpy-4.5 "bpy-$NEWEST"
    cd "$REPO"
    exec "$VENVS/dev/bin/python" tools/bench_all.py "$@"
    ;;
  zip)
    cd "$REPO"
    venvs "bpy-$NEWEST"
    exec "$VENVS/bpy-$NEWEST/bin/python" tools/build_zip.py "$@"
    ;;
  *)
    sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
