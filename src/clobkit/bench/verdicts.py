"""``clobkit bench`` verdicts: each operation's clobkit row against every peer and floor, in words.

A verdict compares the same work done once: the operation's first clobkit
row (one call) against each peer row (``clobkit is N× faster than ...``) and
each floor row (``... costs N× the floor``); for the file rows, each other
format against the CSV's. Batch rows (``order_ids``, ``sign_many``) stay in
the table: a peer has no batch call to set them against.
"""

from __future__ import annotations

from typing import Any

__all__ = ["headline", "verdict_text", "verdicts"]


def verdicts(operations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A verdict per peer, floor and (for files) other format; ``ratio``: its time ÷ clobkit's."""
    out = []
    for op in operations:
        if op["key"] == "floors":
            continue
        ref, *others = op["rows"]
        for r in others:
            if r["kind"] == "clobkit" and op["key"] != "order_ids_files":
                continue  # a batch row of the same library
            out.append(
                {
                    "operation": op["key"],
                    "title": op["title"],
                    "clobkit": ref["implementation"],
                    "other": r["implementation"],
                    "kind": "format" if r["kind"] == "clobkit" else r["kind"],
                    "ratio": round(r["per_op_ns"] / ref["per_op_ns"], 3),
                }
            )
    return out


def _x(ratio: float) -> str:
    return f"{ratio:,.0f}×" if ratio >= 100 else f"{ratio:.3g}×"


def verdict_text(v: dict[str, Any]) -> str:
    """``order id: clobkit order_id is 52.6× faster than py-order-utils ...`` and the like."""
    r, head = v["ratio"], f"{v['title']}: "
    if v["kind"] == "floor":
        return head + f"{v['clobkit']} costs {_x(1 / r)} the floor {v['other']}"
    if v["kind"] == "format":  # the operation's title already says clobkit order-ids
        other, ref = (n.removeprefix("clobkit order-ids ") for n in (v["other"], v["clobkit"]))
        return head + f"{other} takes {_x(r)} the time of {ref}"
    if r >= 1:
        return head + f"{v['clobkit']} is {_x(r)} faster than {v['other']}"
    return head + f"{v['clobkit']} is {_x(1 / r)} slower than {v['other']}"


def headline(report: dict[str, Any]) -> dict[str, float]:
    """The few ratios README's first paragraph quotes: the lowest and highest per peer group."""
    by = {(v["operation"], v["other"].split()[0]): v["ratio"] for v in report["verdicts"]}

    def get(op: str, peer: str) -> float:
        return float(by[(op, peer)])

    ids = [get("order_id", "py-order-utils"), get("order_id", "eth-account")]
    amounts = [get("limit_amounts", "py-clob-client"), get("market_amounts", "py-clob-client")]
    return {
        "order_id_low": min(ids),
        "order_id_high": max(ids),
        "amounts_low": min(amounts),
        "amounts_high": max(amounts),
        "headers": get("headers", "stdlib"),
        "sign_v2": get("sign_v2", "py-clob-client-v2"),
    }
