#!/usr/bin/env bash
# benchmarks/scaling.py on a big machine at the issue's sizes (#20; docs/scale.md), and
# threads against processes for every batch kind, the command and Dask (#45).
#
# Usage, from the repository root: scripts/device_scaling.sh [WHEELS] [scaling.py options]
#   MODE=scaling (default): scaling.py's table, then its core rows under PYTHONMALLOC=malloc;
#   MODE=tvp: `clobkit bench --scaling` at 2, 4, 8, 16 workers, the command and Dask on
#   16,000,000 rows (ROWS), into $OUT/tvp.json and tvp.log (about 6 minutes on 16 cores);
#   MODE=all: both.
#   WHEELS: a directory of cp312 wheels, clobkit's own and the dependencies the
#   machine lacks (default .whl). They are installed into /tmp/site, which goes
#   first on PYTHONPATH (the command's and Dask's child processes inherit it).
#   The figures go to $OUT (default ./scaling-out): scaling.json, scaling.md and
#   the whole log, scaling.log; then the core rows again with PYTHONMALLOC=malloc,
#   scaling-malloc.{json,md,log}.
set -euo pipefail
wheels="${1:-.whl}"
[ $# -gt 0 ] && shift
out="${OUT:-$PWD/scaling-out}"
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$wheels"/*.whl
export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
cd /tmp  # clobkit from the wheel, never from the checkout's src/
python3 - <<'PY'
import clobkit
from clobkit import IMPLEMENTATION

if IMPLEMENTATION != "c":  # the pure twin would take hours at these sizes
    raise SystemExit(f"clobkit {clobkit.__file__} runs its {IMPLEMENTATION} core, not the compiled one")
print("clobkit", clobkit.__version__, "from", clobkit.__file__)
PY
bench="$(cd "$OLDPWD" && pwd)/benchmarks/scaling.py"
set -o pipefail
mode="${MODE:-scaling}"
if [ "$mode" = tvp ] || [ "$mode" = all ]; then
    python3 -m clobkit bench --scaling --rows "${ROWS:-16000000}" --json "$out/tvp.json" \
        2>&1 | tee "$out/tvp.log"
fi
[ "$mode" = tvp ] && exit 0
python3 "$bench" --rows 16000000 --dask-rows 16000000 --parts 64 --tmp /tmp \
    --json "$out/scaling.json" --markdown "$out/scaling.md" "$@" 2>&1 | tee "$out/scaling.log"
# The core rows again under glibc's malloc: CPython's own allocator returns each
# emptied arena to the system, so every batch of list results is paid again in
# the kernel's page faults, under the GIL (docs/scale.md); this shows what that
# costs on many cores.
PYTHONMALLOC=malloc python3 "$bench" --skip machine,command,dask \
    --json "$out/scaling-malloc.json" --markdown "$out/scaling-malloc.md" 2>&1 \
    | tee "$out/scaling-malloc.log"
