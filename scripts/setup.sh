#!/usr/bin/env bash
# Set up .venv for this checkout: `bash scripts/setup.sh` (the app and the rubric command) or
# `bash scripts/setup.sh --dev` (plus the test and lint tools).
#
# The project needs Python >= 3.12. An older python3 makes pip print a wall of "No matching distribution"
# lines, and leaves a .venv that a later run would reuse: check the interpreter first, say plainly what is
# needed, and rebuild a .venv that an unsuitable interpreter made.
set -euo pipefail
cd "$(dirname "$0")/.."

extra=""
case "${1:-}" in
  "") ;;
  --dev) extra="[dev]" ;;
  *) echo "usage: bash scripts/setup.sh [--dev]" >&2; exit 2 ;;
esac

min_ok='import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)'

pick_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.14; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "$min_ok" 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if ! python=$(pick_python); then
  found=$(command -v python3 >/dev/null 2>&1 && python3 --version 2>&1 || echo "no python3 on PATH")
  cat >&2 <<EOF
setup: this project needs Python 3.12 or newer; found: $found.
Install one and run this again, for example:
  - pyenv:  pyenv install 3.13   (the checkout's .python-version then selects it)
  - Debian/Ubuntu:  apt-get install python3.12 python3.12-venv   (where the release ships it)
  - or point to one:  PYTHON=/path/to/python3.12 bash scripts/setup.sh
EOF
  exit 1
fi

# A .venv made by an older interpreter, or left half-built by a failed first try, is rebuilt.
if [ -e .venv ] && ! { [ -x .venv/bin/python ] && .venv/bin/python -c "$min_ok" 2>/dev/null \
    && .venv/bin/python -m pip --version >/dev/null 2>&1; }; then
  echo "setup: .venv was not made by Python >= 3.12 (or is broken); rebuilding it with $python"
  rm -rf .venv
fi
[ -d .venv ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet -e ".$extra"
echo "setup: .venv ready ($(.venv/bin/python --version))"
