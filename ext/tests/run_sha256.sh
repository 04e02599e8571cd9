#!/bin/sh
# Build and run the standalone SHA-256 and request-signing tests
# (ext/tests/test_sha256.c, ext/tests/test_sign.c).
#
#   ext/tests/run_sha256.sh          tests: ASan+UBSan, plain (+ valgrind),
#                                    setup.py flags, portable-only build
#   ext/tests/run_sha256.sh bench    micro-benchmarks (setup.py's -O3 flags): per
#                                    block, and per signed request, next to
#                                    OpenSSL's per-block cost via hashlib
#
# CC (default gcc) and PYTHON (default python3; used only by bench) may be set.
# Binaries go to a temporary directory that is removed on exit.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
ext=$(dirname "$here")
CC=${CC:-gcc}
PYTHON=${PYTHON:-python3}
out=$(mktemp -d "${TMPDIR:-/tmp}/ck_sha256.XXXXXX")
trap 'rm -rf "$out"' EXIT INT TERM

src="$here/test_sha256.c $ext/sha256.c"
warn="-std=c99 -Wall -Wextra -Werror -pedantic"

sign_src="$here/test_sign.c $ext/sign.c $ext/sha256.c"

build() {  # build NAME FLAGS...: both test programs, NAME and NAME-sign
    name=$1; shift
    # shellcheck disable=SC2086
    $CC $warn "$@" $src -o "$out/$name"
    # shellcheck disable=SC2086
    $CC $warn "$@" $sign_src -o "$out/$name-sign"
}

run() {  # run NAME [WRAPPER...]: both test programs
    name=$1; shift
    "$@" "$out/$name"
    "$@" "$out/$name-sign"
}

if [ "${1:-}" = bench ]; then
    build bench -O3 -fno-strict-aliasing  # the flags setup.py uses
    openssl=$("$PYTHON" -c '
import hashlib, time
b = b"\0" * (64 << 20)
best = min((lambda t0: (hashlib.sha256(b), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(7))
print("%.3f" % (best / (len(b) / 64) * 1e9))')
    echo "OpenSSL per-block cost: hashlib.sha256 over 64 MiB, best of 7 ($PYTHON)"
    "$out/bench" bench "$openssl"
    "$out/bench-sign" bench "$openssl"
    exit 0
fi

echo "== ASan + UBSan, -O2"
build asan -O2 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 run asan

echo "== plain -O2"
build plain -O2 -g
run plain

if command -v valgrind >/dev/null 2>&1; then
    # Valgrind does not emulate SHA-NI and hides it from CPUID, so only the
    # portable path (and the fallback of the runtime detection) runs here.
    echo "== valgrind (plain -O2 build)"
    run plain valgrind -q --error-exitcode=1 --leak-check=full
else
    echo "== valgrind not found: skipped"
fi

echo "== setup.py flags: -O3 -fno-strict-aliasing"
build setup -O3 -fno-strict-aliasing
run setup

echo "== portable-only build (as on ARM / MSVC): -DCK_SHA256_NO_SHANI"
build portable -O2 -DCK_SHA256_NO_SHANI
run portable

echo "all sha256 and sign test builds passed"
