"""Benchmark fixtures, the hashing floors, and the ratio table printed after a run.

Figures are ratios measured in one run (these machines are noisy): clobkit vs
each peer, and clobkit vs the floors F (five Keccak-f[1600] permutations, one
order id's work, as OpenSSL does it single-stream through hashlib.sha3_256),
S (one SHA-256 compression through hashlib.sha256) and E (one bare
libsecp256k1 signature through coincurve's ``PrivateKey.sign_recoverable``). Each benchmark stores
``extra_info["per"]``: how many operations one timed call performs.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

import pytest

RESULTS = Path(__file__).parent / "results"

# (name, benchmark, reference, kind, target): kind "floor" divides by a floor
# (or by another benchmark named as the reference), "speedup" divides the
# reference's time by the benchmark's; a target of None shows the figure alone.
TARGETS: list[tuple[str, str, str, str, float | None]] = [
    (
        "order_ids 100k, 1 thread, x F per order (#5: <= 0.8)",
        "test_order_ids_batch[c-1]",
        "F",
        "floor",
        0.8,
    ),
    (
        "order_ids 100k, threads=2 vs 1, throughput (#5: >= 1.8)",
        "test_order_ids_batch[c-2]",
        "test_order_ids_batch[c-1]",
        "speedup",
        1.8,
    ),
    ("order_id single call, x F (#5: <= 1.5)", "test_order_id_single[c]", "F", "floor", 1.5),
    (
        "V2 order_ids 500k, 1 thread, x F per order (#10: <= 0.64)",
        "test_order_ids_v2_batch[1]",
        "F",
        "floor",
        0.64,
    ),
    (
        "V2 order_ids 500k, threads=2 vs 1, throughput",
        "test_order_ids_v2_batch[2]",
        "test_order_ids_v2_batch[1]",
        "speedup",
        1.8,
    ),
    ("V2 order_id single call, x F (#10: <= 1.2)", "test_order_id_v2_single[c]", "F", "floor", 1.2),
    (
        "V2 order_id vs py-clob-client-v2 build_order_hash, speedup",
        "test_order_id_v2_single[c]",
        "test_order_id_v2_py_clob_client_v2",
        "speedup",
        50.0,
    ),
    (
        "order_ids V1 on pyarrow columns, x list path per order (#14: <= 1.0)",
        "test_order_ids_columns[v1-arrow-1]",
        "test_order_ids_columns[v1-list-1]",
        "floor",
        1.0,
    ),
    (
        "order_ids V2 on pyarrow columns, x list path per order (#14: <= 1.0)",
        "test_order_ids_columns[v2-arrow-1]",
        "test_order_ids_columns[v2-list-1]",
        "floor",
        1.0,
    ),
    (
        "order_ids V2 on pyarrow columns, threads=2, x list path per order (#14: <= 1.0)",
        "test_order_ids_columns[v2-arrow-2]",
        "test_order_ids_columns[v2-list-2]",
        "floor",
        1.0,
    ),
    (
        "order_ids V2 on pyarrow columns, 1 thread, x F per order",
        "test_order_ids_columns[v2-arrow-1]",
        "F",
        "floor",
        0.64,
    ),
    # in process, without the start-up: #14's targets are on the whole command over
    # 1M orders, which benchmarks/order_ids_command.py times
    (
        "order-ids run(), Parquet, 200k orders over 5,000 markets, x F (#14: <= 0.4)",
        "test_order_ids_file[markets-parquet]",
        "F",
        "floor",
        0.4,
    ),
    (
        "order-ids run(), quoted CSV, 200k orders over 5,000 markets, x F (#14: <= 0.8)",
        "test_order_ids_file[markets-csv]",
        "F",
        "floor",
        0.8,
    ),
    (
        "order-ids run(), Parquet, 200k orders, every token id distinct, x F",
        "test_order_ids_file[distinct-parquet]",
        "F",
        "floor",
        None,
    ),
    (
        "order-ids run(), quoted CSV, 200k orders, every token id distinct, x F",
        "test_order_ids_file[distinct-csv]",
        "F",
        "floor",
        None,
    ),
    (
        "headers_many vs hmac+hashlib+secrets, speedup",
        "test_headers_many[c]",
        "test_headers_many_stdlib",
        "speedup",
        3.0,
    ),
    (
        "headers vs hmac+hashlib+secrets, speedup",
        "test_headers[c]",
        "test_headers_stdlib",
        "speedup",
        1.5,
    ),
    (
        "headers_many per 300-byte raw-order request, x S (#5)",
        "test_headers_many[c]",
        "S",
        "floor",
        12.0,
    ),
    (
        "limit_amounts vs py-clob-client, speedup",
        "test_limit_amounts[c]",
        "test_limit_amounts_py_clob_client",
        "speedup",
        10.0,
    ),
    (
        "market_amounts vs py-clob-client, speedup",
        "test_market_amounts[c]",
        "test_market_amounts_py_clob_client",
        "speedup",
        10.0,
    ),
    (
        "order_id vs py-order-utils, speedup",
        "test_order_id_single[c]",
        "test_order_id_py_order_utils",
        "speedup",
        50.0,
    ),
    (
        "order_id vs eth-account encode_typed_data, speedup",
        "test_order_id_single[c]",
        "test_order_id_eth_account",
        "speedup",
        50.0,
    ),
    (
        "sign_many 2000 ids, 1 thread, x E per order (#10: <= 1.15)",
        "test_sign_many[1]",
        "E",
        "floor",
        1.15,
    ),
    (
        "sign_many 2000 ids, threads=2 vs 1, throughput (#10: >= 1.7)",
        "test_sign_many[2]",
        "test_sign_many[1]",
        "speedup",
        1.7,
    ),
    (
        "OrderSigner.sign single call, x bare coincurve call",
        "test_order_signer_sign",
        "test_ecdsa_single",
        "floor",
        1.15,
    ),
    (
        "OrderSigner.sign vs eth-account unsafe_sign_hash, speedup",
        "test_order_signer_sign",
        "test_sign_eth_account",
        "speedup",
        1.0,
    ),
    (
        "hasher.sign (V2 hash + sign), x bare coincurve call (#10: <= 1.25)",
        "test_hasher_sign",
        "test_ecdsa_single",
        "floor",
        1.25,
    ),
    (
        "hasher.sign_many 2000 V2 orders, 1 thread, x E per order (#10: <= 1.15)",
        "test_hasher_sign_many[1]",
        "E",
        "floor",
        1.15,
    ),
    (
        "hasher.sign_many 2000 V2 orders, threads=2 vs 1 (#10: >= 1.7)",
        "test_hasher_sign_many[2]",
        "test_hasher_sign_many[1]",
        "speedup",
        1.7,
    ),
    (
        "hasher.sign vs py-clob-client-v2 build_signed_order (#10: >= 12)",
        "test_hasher_sign",
        "test_build_signed_order_py_clob_client_v2",
        "speedup",
        12.0,
    ),
    (
        "OrderSigner.sign vs py-clob-client-v2 build_signed_order (sign only)",
        "test_order_signer_sign",
        "test_build_signed_order_py_clob_client_v2",
        "speedup",
        12.0,
    ),
]


def per_op(bench: Any) -> float:
    """Best (minimum) seconds per single operation of a benchmark."""
    return float(bench.stats.min) / float(bench.extra_info.get("per", 1))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: Any) -> None:
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    by_name = {b.name: b for b in session.benchmarks if b}
    floors = {}
    if "test_floor_keccak" in by_name:
        floors["F"] = per_op(by_name["test_floor_keccak"]) * 5
    if "test_floor_sha256" in by_name:
        floors["S"] = per_op(by_name["test_floor_sha256"])
    if "test_floor_ecdsa" in by_name:
        floors["E"] = per_op(by_name["test_floor_ecdsa"])
    rows = []
    for label, name, ref, kind, target in TARGETS:
        if name not in by_name or (ref not in floors and ref not in by_name):
            continue
        t = per_op(by_name[name])
        if kind == "floor":
            ratio = t / (floors[ref] if ref in floors else per_op(by_name[ref]))
            ok = target is None or ratio <= target
            rows.append(
                {
                    "what": label,
                    "ratio": round(ratio, 3),
                    "target": "none" if target is None else f"<= {target}",
                    "ok": ok,
                    "ns": round(t * 1e9, 1),
                }
            )
        else:
            ratio = per_op(by_name[ref]) / t
            ok = target is None or ratio >= target
            rows.append(
                {
                    "what": label,
                    "ratio": round(ratio, 2),
                    "target": "none" if target is None else f">= {target}",
                    "ok": ok,
                    "ns": round(t * 1e9, 1),
                    "peer_ns": round(per_op(by_name[ref]) * 1e9, 1),
                }
            )
    if not rows:
        return
    write = terminalreporter.write_line
    write("")
    shown = ", ".join(f"{k} = {v * 1e9:.1f} ns" for k, v in floors.items())
    write(f"clobkit ratios (one run; {shown})")
    for r in rows:
        mark = "ok  " if r["ok"] else "MISS"
        write(f"  {mark} {r['what']:<58} {r['ratio']:>8}  (target {r['target']})")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": " ".join(
            (platform.machine(), platform.python_implementation(), platform.python_version())
        ),
        "floors_ns": {k: round(v * 1e9, 1) for k, v in floors.items()},
        "ratios": rows,
        "per_op_ns": {name: round(per_op(b) * 1e9, 1) for name, b in sorted(by_name.items())},
    }
    # core.json for runs that include bench_core.py, as before; sign.json etc. otherwise
    stems = sorted({Path(b.fullname.split("::")[0]).stem for b in session.benchmarks if b})
    name = "core" if "bench_core" in stems else "+".join(s.removeprefix("bench_") for s in stems)
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
