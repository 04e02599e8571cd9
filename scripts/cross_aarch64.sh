#!/usr/bin/env bash
# The compiled core on aarch64 (Linux arm64; the same C serves macOS arm64):
# cross-compiles every C source and the Cython module with setup.py's flags
# (no -m flag: the SIMD paths are x86-only behind __x86_64__/__i386__), links
# the extension, then builds the standalone C tests and runs them under
# qemu-aarch64. Needs gcc-aarch64-linux-gnu and qemu-user (Debian/Ubuntu
# packages) and a generated ext/_core_c.c (python setup.py build_ext --inplace).
# It does not import the module on aarch64 (that needs an aarch64 Python):
# cibuildwheel's test-command does, on real hardware.
set -euo pipefail
cd "$(dirname "$0")/.."
cc=${CC_AARCH64:-aarch64-linux-gnu-gcc}
out=$(mktemp -d "${TMPDIR:-/tmp}/ck_aarch64.XXXXXX")
trap 'rm -rf "$out"' EXIT INT TERM
flags="-O3 -fno-strict-aliasing -Wall -Wno-unused-function -pthread -fPIC -Werror -Iext"
pyinc=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
for f in ext/*.c; do
    # shellcheck disable=SC2086
    $cc $flags -I"$pyinc" -c "$f" -o "$out/$(basename "$f" .c).o"
done
$cc -shared -pthread "$out"/*.o -o "$out/_core_c.so"
if aarch64-linux-gnu-nm "$out"/*.o | grep -qi 'avx\|shani'; then
    echo "x86 SIMD code in the aarch64 build" >&2
    exit 1
fi
echo "aarch64: the extension compiles and links ($(basename "$out")/_core_c.so)"
t=ext/tests
$cc -std=c99 -Wall -Wextra -Iext -O2 -static -o "$out/test_keccak" $t/test_keccak.c ext/keccak.c
$cc -std=gnu11 -Wall -Wextra -Iext -pthread -O2 -static -o "$out/test_batch" \
    $t/test_batch.c ext/batch.c ext/workers.c ext/keccak.c ext/sign.c ext/sha256.c
$cc -std=gnu11 -Wall -Wextra -Iext -O2 -static -o "$out/test_sha256" $t/test_sha256.c ext/sha256.c
$cc -std=gnu11 -Wall -Wextra -Iext -O2 -static -o "$out/test_sign" \
    $t/test_sign.c ext/sign.c ext/sha256.c
for name in test_keccak test_batch test_sha256 test_sign; do
    qemu-aarch64 "$out/$name"
done
