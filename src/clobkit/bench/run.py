"""``clobkit bench``: build, check and time every operation into one JSON-ready report."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

from ._timing import Contender, Operation, Settings, floors, time_operations
from .amounts import amounts_operations
from .files import file_operation
from .machine import machine
from .memory import measure_memory
from .order_ids import order_id_operation
from .orders_v2 import v2_operations
from .request_headers import signing_operation
from .verdicts import verdicts


def run(s: Settings, say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Build, check and time every operation; returns the report (JSON-ready)."""
    t0, load0 = time.monotonic(), _load()
    notes: list[str] = []
    f, sh = floors(s.floor_bytes)
    ops = [order_id_operation(s, notes, say), *v2_operations(s, notes, say)]
    amount_ops, grid = amounts_operations(s, notes, say)
    ops += [*amount_ops, signing_operation(s), file_operation(s, notes, say)]
    for note in notes:
        say(note)
    for op in ops:
        say(f"timing {op.title}: {len(op.contenders)} contenders + floors, {s.rounds} rounds")
        time_operations([op], [f, sh], s)
    memory = []
    if s.memory_orders:
        say(f"memory: order_ids of {s.memory_orders:,} orders, threads 1 and 2 (subprocesses)")
        memory = measure_memory(s.memory_orders)
    operations = _operations(ops, f, sh)
    ok = all(r["mismatches"] == 0 for op in operations for r in op["rows"] if r["expect_equal"])
    return {
        "tool": "clobkit bench",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "settings": dataclasses.asdict(s),
        "floors_ns": {"F": round(f.best_ns, 3), "S": round(sh.best_ns, 3)},
        "operations": operations,
        "amounts_grid": grid,
        "verdicts": verdicts(operations),
        "memory": memory,
        "seconds": round(time.monotonic() - t0, 1),
        "load_average": [load0, _load()],
        "notes": notes,
        "ok": ok,
    }


def _operations(ops: list[Operation], f: Contender, sh: Contender) -> list[dict[str, Any]]:
    """Each operation's rows as JSON, ratios to its first row and to the floors; floors last."""
    fl, sl = f.best_ns, sh.best_ns

    def row(c: Contender, ref: float | None) -> dict[str, Any]:
        return {
            "implementation": c.name,
            "kind": c.kind,
            "per_op_ns": round(c.best_ns, 3),
            "x_clobkit": None if ref is None else round(c.best_ns / ref, 4),
            "x_F": round(c.best_ns / fl, 4),
            "x_S": round(c.best_ns / sl, 4),
            "correctness": c.correctness,
            "compared": c.compared,
            "mismatches": c.mismatches,
            "expect_equal": c.expect_equal,
        }

    out = [
        {
            "key": op.key,
            "title": op.title,
            "rows": [row(c, op.contenders[0].best_ns) for c in op.contenders],
        }
        for op in ops
    ]
    out.append({"key": "floors", "title": "floors", "rows": [row(f, None), row(sh, None)]})
    return out


def _load() -> float | None:
    """The 1-minute load average (other work sharing the machine), where the OS reports one."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # Windows has none
        return None
