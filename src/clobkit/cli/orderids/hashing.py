"""The hashing stage of ``clobkit order-ids``: a batch of orders in, ids and refusals out.

``hash_batch`` takes an ``Orders`` of any reader: columns of Python values
(the exact CSV reader, JSONL), hashed column-wise and row by row when the core
refuses a value (so each bad row is named), or Arrow columns (Parquet, a CSV
block), hashed into an Arrow array of ids. Either way the rows ``POST
/orders/raw`` would refuse (a V1 salt past its range, amounts that break the
raw-order ratio rule) get no id: column-wise first where the columns are
Arrow integers. With a signer each order is signed too (``sign_many``).
The one stage between the readers and the writers: it imports neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from ...amounts import check_raw_amounts, raw_amounts_flagged
from ...core.arrow_values import scalar
from ...core.arrow_values import values as arrow_values
from ...core.parse import BATCH_KEYWORDS, parse_side
from ...core.spec import SALT_MAX, SALT_RANGE
from ...errors import AmountError, ValidationError, _short_repr
from ...order_id import OrderHasher
from ...signing import Signer
from .rows import DEFAULTS, V1, Hashed, InputError, Layout, Orders, column_values, read_values

__all__ = ["check_signer", "hash_batch"]


def check_signer(hasher: OrderHasher, signer: Signer, layout: Layout) -> None:
    """``--sign`` with a key that cannot sign this wallet's orders: ``InputError``, once,
    before any row (``sign_many``'s own check, on a batch of no orders)."""
    empty: dict[str, Any] = {key: [] for key in layout.keywords}
    try:
        hasher.sign_many(signer, **empty)
    except ValidationError as exc:
        raise InputError(f"--sign: {exc}") from None


def hash_batch(
    hasher: OrderHasher,
    orders: Orders,
    threads: int | None,
    layout: Layout = V1,
    signer: Signer | None = None,
    whole: bool = False,
) -> Hashed | None:
    """Order ids of a batch (``None`` for a row refused), their signatures, the refusals.

    ``threads``: the core's threads for this batch. ``whole``: None instead when
    any row would be refused (a CSV block, which the exact reader then reads).
    """
    if orders.arrow:
        return _hash_arrow(hasher, orders, threads, layout, signer, whole)
    done = _hash_values(hasher, orders, threads, layout, signer)
    return None if whole and done[2] else done


def _hash_values(
    hasher: OrderHasher,
    orders: Orders,
    threads: int | None,
    layout: Layout,
    signer: Signer | None,
) -> Hashed:
    """``hash_batch`` of columns of Python values: column-wise, row by row when the core
    refuses a value (so each bad row is named)."""
    n = len(orders.lines)
    if n == 0:
        return [], None if signer is None else [], []
    cols = [orders.columns[name] for name in layout.fields]
    batch = dict(zip(layout.keywords, cols, strict=True))
    try:
        if signer is None:
            done: list[str] = hasher.order_ids(**batch, threads=threads)
            return _refuse_unservable(orders, list[str | None](done), None, [], layout)
        signed = hasher.sign_many(signer, **batch, threads=threads)
        ids = list[str | None]([s.order_id for s in signed])
        return _refuse_unservable(orders, ids, [s.signature for s in signed], [], layout)
    except ValidationError:
        pass
    # one row at a time: the core names the field and value of each bad row
    ids = []
    sigs: list[str] | None = None if signer is None else []
    rejects: list[tuple[int, str]] = []
    seqs = [not isinstance(c, (str, int)) and isinstance(c, Sequence) for c in cols]
    for i, line in enumerate(orders.lines):
        row = [c[i] if seq else c for c, seq in zip(cols, seqs, strict=True)]  # type: ignore[index]
        order = dict(zip(layout.fields, row, strict=True))
        try:
            if sigs is None:
                ids.append(hasher.order_id(**order))
            else:
                one = hasher.sign(signer, **order)
                ids.append(one.order_id)
                sigs.append(one.signature)
        except ValidationError as exc:
            ids.append(None)
            if sigs is not None:
                sigs.append("")
            rejects.append((line, str(exc)))
    return _refuse_unservable(orders, ids, sigs, rejects, layout)


_SALT_MAX_DIGITS = str(SALT_MAX)


def _too_big(salt: object) -> bool:
    if type(salt) is str:
        digits, most = salt.lstrip("0"), _SALT_MAX_DIGITS
        return len(digits) > len(most) or (len(digits) == len(most) and digits > most)
    return type(salt) is int and salt > SALT_MAX


def _ints(values: list[Any]) -> list[int]:
    """The ints of values the core took (ints and decimal strings of at most 78
    digits after their leading zeros, which ``int()`` may refuse to read past
    Python's digit limit)."""
    try:
        return list(map(int, values))
    except ValueError:
        return [int(v.lstrip("0") or "0") if type(v) is str else int(v) for v in values]


def _column(orders: Orders, name: str) -> list[Any]:
    values = orders.columns[name]
    return values if isinstance(values, list) else [values] * len(orders.lines)


def _refuse_unservable(
    orders: Orders,
    ids: list[str | None],
    sigs: list[str] | None,
    rejects: list[tuple[int, str]],
    layout: Layout = V1,
) -> Hashed:
    """Rows the service would refuse get no id: a salt outside [0, 10**12] (POST
    /orders/raw, V1 orders), or amounts that break the raw-order ratio rule
    (zero, an implied price outside (0, 1), over the single-order maximum).

    The exchange struct hashes any uint256, so the core does not refuse these;
    an id for an order the service will not take is a lost order.
    """
    salts = _column(orders, "salt")
    raw_flow = layout is V1  # the salt range is POST /orders/raw's rule
    bad = [i for i, salt in enumerate(salts) if raw_flow and _too_big(salt) and ids[i] is not None]
    for i in bad:
        ids[i] = None
        rejects.append(
            (
                orders.lines[i],
                f"salt: must lie in {SALT_RANGE} for POST /orders/raw"
                f" (got {_short_repr(salts[i])})",
            )
        )
    # the hashed rows passed the core's checks: their amounts read as ints
    makers, takers = _column(orders, "maker_amount"), _column(orders, "taker_amount")
    sides = _column(orders, "side")
    rows = [i for i, oid in enumerate(ids) if oid is not None]
    # hashed rows have sides the core took (str or int): a handful of values
    side_of = {key: parse_side(key[1]) for key in {(type(sides[i]), sides[i]) for i in rows}}
    if len(rows) == len(ids):
        triples = zip(
            [side_of[(type(v), v)] for v in sides], _ints(makers), _ints(takers), strict=True
        )
    else:
        triples = zip(
            [side_of[(type(sides[i]), sides[i])] for i in rows],
            _ints([makers[i] for i in rows]),
            _ints([takers[i] for i in rows]),
            strict=True,
        )
    for i, (side, maker, taker) in zip(rows, triples, strict=True):
        try:
            check_raw_amounts(side, maker, taker)
        except AmountError as exc:
            ids[i] = None
            rejects.append((orders.lines[i], f"{exc} (POST /orders/raw refuses it)"))
    rejects.sort()
    return ids, sigs, rejects


def _hash_arrow(
    hasher: OrderHasher,
    orders: Orders,
    threads: int | None,
    layout: Layout,
    signer: Signer | None,
    whole: bool,
) -> Hashed | None:
    """``hash_batch`` of Arrow columns. The ids are one Arrow string array when no row
    is refused (no Python object per id), else a list with None for each refused row."""
    import pyarrow as pa  # loaded already: the reader made these columns

    from ...core import arrow_compute as ac

    args = {BATCH_KEYWORDS[name]: col for name, col in orders.columns.items()}
    if whole:  # checked before hashing: a block in doubt is not hashed twice
        flagged = _flagged(pa, ac, args, layout)
        if flagged is None or ac.any_(flagged):
            return None  # the exact reader names the rows
    try:
        if signer is None:
            found: Any = hasher.order_ids(**args, threads=threads, out="arrow")
            sigs = None
        else:
            signed = hasher.sign_many(signer, **args, threads=threads)
            found = [s.order_id for s in signed]
            sigs = [s.signature for s in signed]
    except ValidationError:
        if whole:
            return None  # the exact reader names the row and the value
        return _row_by_row(hasher, orders, threads, layout, signer)
    if whole:
        return found, sigs, []
    flagged = _flagged(pa, ac, args, layout)  # the core took them: no negative salt
    return _service_rules(pa, ac, orders, args["sides"], layout, flagged, found, sigs)


def _row_by_row(
    hasher: OrderHasher,
    orders: Orders,
    threads: int | None,
    layout: Layout,
    signer: Signer | None,
) -> Hashed:
    """A record batch the core refused as a whole, through Python values: it names each
    bad row."""
    batch = orders.table
    names = set(batch.schema.names)
    columns: dict[str, object] = {}
    for name in layout.fields:
        if name in names:
            col = batch.column(name)
            # the values the core's columnar path reads (decimals as ints...), as read_arrow
            values = column_values(col, name)
            columns[name] = read_values(name, col.to_pylist() if values is None else values)
        else:
            columns[name] = DEFAULTS[name]
    return _hash_values(hasher, Orders(orders.lines, columns), threads, layout, signer)


def _service_rules(
    pa: Any,
    ac: Any,
    orders: Orders,
    sides: Any,
    layout: Layout,
    flagged: Any,
    found: Any,
    sigs: list[str] | None,
) -> Hashed:
    """The service's own rules on the rows the core took (``flagged``: the rows found
    column-wise, None to look at each): ``found`` (an Arrow array or a list of ids) as
    it is when none is refused, else a list with None for each refused row."""
    n = len(orders.lines)
    idx = range(n) if flagged is None else ac.nonzero(flagged).to_pylist()
    if not idx:
        return found, sigs, []
    ids = found if isinstance(found, list) else found.to_pylist()
    take = arrow_values(pa, idx, pa.int64())
    cols: dict[str, list[Any]] = {
        name: ac.take(orders.columns[name], take).to_pylist()
        for name in ("salt", "maker_amount", "taker_amount")
    }
    taken = ac.take(sides, take)
    taken = ac.decode(taken) if pa.types.is_dictionary(taken.type) else taken
    cols["side"] = taken.to_pylist()
    final: dict[str, object] = {
        k: [int(v) if isinstance(v, Decimal) else v for v in vs] for k, vs in cols.items()
    }
    sub = [ids[i] for i in idx]
    sub, _, rejects = _refuse_unservable(
        Orders([orders.lines[i] for i in idx], final), sub, None, [], layout
    )
    for k, i in enumerate(idx):
        ids[i] = sub[k]
    return ids, sigs, rejects


def _flagged(pa: Any, ac: Any, args: dict[str, Any], layout: Layout) -> Any:
    """A boolean Arrow array of the rows the service's rules may refuse, found
    column-wise; None where they are not all Arrow integer columns."""
    t = pa.types
    cols: list[Any] = [args.get(kw) for kw in ("maker_amounts", "taker_amounts", "salts", "sides")]
    if not all(isinstance(col, pa.Array) for col in cols):
        return None
    makers, takers, salts, sides = cols
    if not (t.is_integer(makers.type) and t.is_integer(takers.type) and t.is_integer(salts.type)):
        return None
    if t.is_dictionary(sides.type):
        sides = ac.decode(sides)
    if not t.is_integer(sides.type):
        return None
    i8, u64 = pa.int8(), pa.uint64()
    bad = raw_amounts_flagged(sides if sides.type == i8 else ac.cast(sides, i8), makers, takers)
    if layout is V1:  # POST /orders/raw's salt range
        salts = salts if salts.type == u64 else ac.cast(salts, u64)  # none negative here
        bad = ac.or_(bad, ac.greater(salts, scalar(pa, SALT_MAX, u64)))
    return bad
