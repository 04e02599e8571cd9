"""``clobkit bench``: where the figures come from (CPU, cores, OS, Python, clobkit's core)."""

from __future__ import annotations

import os
import platform
from typing import Any

import clobkit

from .. import IMPLEMENTATION


def machine() -> dict[str, Any]:
    """Where the figures come from: CPU, cores, OS, Python, clobkit and its core's paths."""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    from ..core import select as _core

    paths = getattr(_core._impl, "implementation", None)
    return {
        "cpu": cpu or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.machine()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "clobkit": clobkit.__version__,
        "core": IMPLEMENTATION,
        "hash_paths": paths() if callable(paths) else None,
    }


def machine_line(m: dict[str, Any]) -> str:
    """One line naming the machine: CPU, cores, OS, Python, clobkit and its core."""
    if m["core"] == "c":
        paths = m.get("hash_paths") or {}
        core = "compiled core" + (
            ": " + ", ".join(f"{k} {v}" for k, v in sorted(paths.items())) if paths else ""
        )
    else:
        core = "pure-Python core"
    return (
        f"{m['cpu']}, {m['cores']} cores, {m['system']}, {m['python']}, "
        f"clobkit {m['clobkit']} ({core})"
    )
