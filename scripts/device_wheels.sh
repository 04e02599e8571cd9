#!/usr/bin/env bash
# The wheels scripts/device_scaling.sh installs on a lent machine that has no
# network (#20; docs/development/scale-measurements.md): clobkit's own cp312
# wheel built from this checkout (replacing any older one, which would measure
# old code), and the CPython 3.12 manylinux wheel of each dependency such a
# machine lacked when last lent (its pyarrow, numpy and pandas were there), one
# version of each: a package with a wheel in WHEELS already is left as it is.
# Run here, from the repository root; keep WHEELS out of git
# (.git/info/exclude) and name it in the device call's carry.
#
# Usage: scripts/device_wheels.sh [WHEELS]   (default .whl)
#   PYTHON312: the interpreter that builds clobkit's wheel (default python3.12)
set -euo pipefail
wheels="${1:-.whl}"
py="${PYTHON312:-python3.12}"
mkdir -p "$wheels"
rm -f "$wheels"/clobkit-*.whl
# the compiled core or nothing: a pure wheel would take hours at the issue's sizes
CLOBKIT_REQUIRE_EXTENSIONS=1 "$py" -m pip wheel -q --no-deps -w "$wheels" .
# each as NAME or NAME:SPECIFIER (pyproject.toml's bound where it has one)
for spec in "coincurve:coincurve>=20,<22" msgspec pycryptodome websockets httptools sniffio \
    dask distributed partd locket tblib tornado zict; do
    name="${spec%%:*}"
    compgen -G "$wheels/$name-*.whl" > /dev/null && continue
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$wheels" "${spec#*:}"
done
ls "$wheels"
