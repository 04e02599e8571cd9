#!/usr/bin/env bash
# Run the core test suite against a compiled twin built with AddressSanitizer
# and UndefinedBehaviorSanitizer (a copy of the tree, so the normal build is
# untouched). Usage: scripts/sanitize.sh [pytest args]  (default: tests/core)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$root/src" "$root/ext" "$root/setup.py" "$root/pyproject.toml" "$root/README.md" "$root/tests" "$work/"
rm -f "$work"/src/clobkit/*.so
cd "$work"
CLOBKIT_SANITIZE=1 python setup.py -q build_ext --inplace
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"  # CPython's own allocations are not ours to judge
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
PYTHONPATH="$work/src" python -u -m pytest -q -p no:cacheprovider "${@:-tests/core}"
