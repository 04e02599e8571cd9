#!/usr/bin/env bash
# Run the core test suite against a compiled twin built with AddressSanitizer
# and UndefinedBehaviorSanitizer (a copy of the tree, so the normal build is
# untouched). Usage: scripts/sanitize.sh [pytest args]  (default: tests/core)
#
# scripts/sanitize.sh --thread [pytest args] builds it with ThreadSanitizer
# instead (default: the native pool's tests, many callers at once), after the
# pool's own C stress test (ext/tests, make tsan).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode=address
if [ "${1:-}" = "--thread" ]; then
    mode=thread
    shift
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$root/src" "$root/ext" "$root/setup.py" "$root/pyproject.toml" "$root/README.md" "$root/tests" "$work/"
rm -f "$work"/src/clobkit/*.so
rm -rf "$work"/ext/tests/build
cd "$work"
if [ "$mode" = thread ]; then
    make -s -C ext/tests tsan
    CLOBKIT_SANITIZE=thread python setup.py -q build_ext --inplace
    export LD_PRELOAD="$(gcc -print-file-name=libtsan.so)"
    # CPython itself is not instrumented: only races within clobkit's own C are
    # reported. halt_on_error: the first one fails the run.
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0"
    PYTHONPATH="$work/src" python -u -m pytest -q -p no:cacheprovider -p no:randomly \
        "${@:-tests/core/test_native_pool.py}"
    exit
fi
CLOBKIT_SANITIZE=1 python setup.py -q build_ext --inplace
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"  # CPython's own allocations are not ours to judge
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
PYTHONPATH="$work/src" python -u -m pytest -q -p no:cacheprovider "${@:-tests/core}"
