"""Order ids of a Dask DataFrame, partition by partition (the ``dask`` extra).

``with_order_ids(df, wallet)`` adds the ``clob_order_id`` of every row as a
column. Each partition is hashed where it lives by ``OrderHasher.order_ids``
on its columns as Arrow / numpy arrays, and its ids come back as one Arrow
string array (``out="arrow"``) held by a ``string[pyarrow]`` column: no
Python object per row on the way in (with Arrow-backed or numpy columns) or
out. The same code runs on a laptop (the default scheduler or a
``LocalCluster``) and on any Dask cluster
(``dask.distributed.Client("tcp://scheduler:8786")``).
``parquet_options(df)`` gives ``to_parquet`` the writer settings of
``clobkit order-ids`` for the id column (and no dictionary where values never
repeat); ``to_parquet(df, path)`` writes with them, each partition read,
hashed and written in one task. See docs/scale.md.

The columns are those of ``clobkit order-ids``: ``token_id``,
``maker_amount``, ``taker_amount``, ``side``, ``salt``; ``fee_rate_bps``,
``nonce``, ``expiration`` (V1, optional, 0 when absent) or ``timestamp``
(required), ``metadata``, ``builder`` (V2/V3, optional, zero when absent);
``neg_risk`` (optional, False when absent). Values are read as ``clobkit
order-ids`` reads a file's columns (``_orderids.rows.read_arrow`` /
``read_values``, the one home of that reading): sides "BUY"/"SELL" in any case
or 0/1, ``neg_risk`` a bool, 0/1 or "true"/"false", a null in an optional
column its default (docs/scale.md has the table).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Any

from .cli.orderids.rows import LAYOUTS, read_arrow, read_values, version_note
from .core.columns import WORD
from .core.parse import BATCH_KEYWORDS, COLUMN_KINDS
from .core.wallet import _WALLET_FIELDS, _field, wallet_data
from .errors import MissingExtra, OrderFieldError, ValidationError
from .order_id import OrderHasher

try:
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    # documented here (docs.dask.org: dask.dataframe.utils.make_meta), defined in .dispatch
    from dask.dataframe.utils import make_meta  # type: ignore[attr-defined]
except ImportError:
    from .core.extras import install_hint

    raise MissingExtra(f"clobkit.dask needs Dask: {install_hint('dask')}") from None

from .core import arrow_compute as ac

__all__ = ["parquet_options", "to_parquet", "with_order_ids"]

_KEYWORDS = BATCH_KEYWORDS  # DataFrame column -> keyword of OrderHasher.order_ids
_ROW = re.compile(r"(\w+)\[(\d+)\]\Z")
_ID_DTYPE = pd.StringDtype("pyarrow")  # "string[pyarrow]": an Arrow string array inside
# the column Dask's to_parquet writes an unnamed index as (dask.dataframe's own label)
_DASK_INDEX = "__null_dask_index__"


def _columns(version: int) -> tuple[str, ...]:
    """The DataFrame columns an order of this version reads (required ones first)."""
    return LAYOUTS[1 if version == 1 else 2].fields


def _argument(series: pd.Series, name: str) -> Any:
    """A pandas column as ``order_ids`` takes it fastest (numpy ints/bools, else Arrow), or as
    Python values where Arrow would read it otherwise than ``order_ids``' list path does;
    read as ``clobkit order-ids`` reads a file's column (``read_arrow`` / ``read_values``)."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "iub":
        return series.to_numpy()
    values = series.array
    # an Arrow-backed (or masked) array hands pyarrow its own data through the
    # __arrow_array__ protocol, as pa.array(series) would, without the Series' checks
    given = values if hasattr(values, "__arrow_array__") else series
    try:
        arr = pa.array(given, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        # mixed Python objects, ints past 64 bits (uint256 token ids): the list path
        return _python_values(series, name)
    t = pa.types
    if t.is_floating(arr.type) and isinstance(dtype, np.dtype) and dtype.kind == "O":
        # Arrow made a float of every int beside one float: the list path names that row
        return _python_values(series, name)
    if t.is_null(arr.type):  # an object column of None / NaN only (in this partition)
        word = COLUMN_KINDS[_KEYWORDS[name]] == WORD
        arr = pa.nulls(len(arr), pa.binary(32) if word else pa.int64())
    arr = read_arrow(pa, ac, arr, name)
    if isinstance(arr, pa.Array | pa.ChunkedArray) and (
        t.is_binary(arr.type) or t.is_large_binary(arr.type)
    ):
        return arr.to_pylist()  # bytes words: the list path checks each length (None: zero)
    return arr


def _python_values(series: pd.Series, name: str) -> Any:
    """An object column's values, pandas' nulls (None, NaN, NA) as None, read as a file's."""
    values = series.tolist()
    if series.hasnans:
        nulls = series.isna().tolist()
        values = [None if null else v for v, null in zip(values, nulls, strict=True)]
    return read_values(name, values)


def _ids(
    part: pd.DataFrame,
    wallet: dict[str, Any],
    version: int,
    column: str,
    partition_info: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """One partition with its order ids (a bad row raises an error naming it)."""
    hasher = _hasher(wallet, version)
    names = [name for name in _columns(version) if name in part]
    args = {_KEYWORDS[name]: _argument(part[name], name) for name in names}
    try:
        # the ids straight into an Arrow buffer; the column holds that array, no copy per id.
        # An empty partition (the frame's meta too) has its columns' types checked: a dtype
        # the core refuses is refused when with_order_ids is called, before any partition
        ids = hasher.order_ids(**args, out="arrow")
    except ValidationError as exc:
        raise _row_error(exc, part, partition_info) from None
    out = part.copy(deep=False)
    out[column] = pd.array(ids, dtype=_ID_DTYPE)  # an array, row for row: no index to align
    return out


def _hasher(wallet: dict[str, Any], version: int) -> OrderHasher:
    """The partition's hasher: one per wallet and version in each worker process (building
    one checks each address's EIP-55 checksum, tens of µs a partition)."""
    try:
        return _cached_hasher(frozenset(wallet.items()), version)
    except TypeError:  # a value that cannot be a key: the hasher refuses it, by name
        return OrderHasher(wallet, version=version)


@functools.lru_cache(maxsize=8)
def _cached_hasher(wallet: frozenset[tuple[str, Any]], version: int) -> OrderHasher:
    return OrderHasher(dict(wallet), version=version)


def _row_error(
    exc: ValidationError, part: pd.DataFrame, partition_info: dict[str, Any] | None
) -> OrderFieldError:
    """The core's error (``salts[12]``) with the DataFrame's column name and row label."""
    names = {v: k for k, v in _KEYWORDS.items()}
    where = "" if partition_info is None else f"partition {partition_info['number']}, "
    match = _ROW.match(exc.field)
    if match is None:  # a whole column (its type)
        return OrderFieldError(
            f"{where}column {names.get(exc.field, exc.field)}", exc.value, exc.reason
        )
    keyword, i = match.group(1), int(match.group(2))
    label = part.index[i]
    return OrderFieldError(
        f"{where}row {label!r}: {names.get(keyword, keyword)}", exc.value, exc.reason
    )


def _wallet_data(wallet: object) -> dict[str, Any]:
    """The wallet as plain picklable data (each worker builds its own hasher from it)."""
    wallet = wallet_data(wallet)  # the saved {success, data} envelope too, as the CLI takes it
    if isinstance(wallet, Mapping):
        return {name: wallet[name] for name in _WALLET_FIELDS if name in wallet}
    return {name: _field(wallet, name) for name in _WALLET_FIELDS}


def with_order_ids(
    df: dd.DataFrame, wallet: object, *, column: str = "order_id", version: int | None = None
) -> dd.DataFrame:
    """``df`` with ``column`` holding each row's ``clob_order_id`` ("0x" + 64 hex digits).

    ``wallet`` is a ``WalletInfo``, the ``GET /wallet`` data or its saved
    ``{"success": true, "data": ...}`` envelope; ``version``
    (1, 2 or 3) as in ``OrderHasher``. A column whose dtype its field cannot
    hold (a float, a bool ``side``) raises ``OrderFieldError`` here, naming it.
    Lazy otherwise, like every Dask operation: a bad row raises
    ``OrderFieldError`` naming its partition, row label, column and value when
    the result is computed. An existing ``column`` is replaced.
    """
    data = _wallet_data(wallet)
    resolved = OrderHasher(data, version=version).version  # a bad wallet fails here, not later
    layout = LAYOUTS[1 if resolved == 1 else 2]
    missing = [name for name in layout.required if name not in df.columns]
    if missing:
        note = version_note(missing, layout, "version=")
        raise OrderFieldError(
            "df", list(df.columns), f"lacks the column(s) {', '.join(missing)}{note}"
        )
    names = list(df.columns)
    repeated = [name for name in layout.fields if names.count(name) > 1]
    if repeated:  # a partition's df[name] would be a DataFrame, not one column
        listed = ", ".join(repeated)
        raise OrderFieldError("df", names, f"has the column(s) {listed} more than once")
    # make_meta is Dask's public way to a collection's empty partition (it may hand
    # back the collection's own: _ids copies before it adds the column)
    empty: pd.DataFrame = make_meta(df)  # type: ignore[no-untyped-call]
    meta = _ids(empty, data, resolved, column)
    out: dd.DataFrame = df.map_partitions(  # type: ignore[no-untyped-call]
        _ids, data, resolved, column, meta=meta
    )
    return out


def parquet_options(
    df: dd.DataFrame, *, column: str = "order_id", compression: str = "snappy"
) -> dict[str, Any]:
    """Keyword arguments of ``df.to_parquet`` that write ``column`` as ``clobkit order-ids`` does.

    ``df`` is ``with_order_ids``'s result. The ids (random hex) are written
    plain, uncompressed and without min/max statistics, which only cost time on
    them: on the project's 2-core machine that is about half of a partition's
    writing (docs/scale.md). The salts (random by rule) and Dask's unnamed
    index (0, 1, 2, ... per file) are written without a dictionary, which on
    values that never repeat costs a hash per value until the writer gives it
    up (about 6% of a partition's CPU in a profile); an unnamed integer index
    (row numbers) is delta-encoded, a few bytes a page where plain takes 8 a row. Every
    other column is written as ``to_parquet`` writes it by default, with
    ``compression`` and dictionaries.
    The file's columns and values are the same either way.
    """
    if column not in df.columns:
        raise OrderFieldError("column", column, "is not a column of df (call with_order_ids first)")
    others = [str(name) for name in df.columns if name != column]
    others += [_DASK_INDEX] if df.index.name is None else [str(df.index.name)]
    distinct = {"salt", _DASK_INDEX}  # never repeat: a dictionary only costs
    options: dict[str, Any] = {
        "compression": {**dict.fromkeys(others, compression), column: "none"},
        "use_dictionary": [name for name in others if name not in distinct],
        "write_statistics": others,
    }
    if df.index.name is None and pd.api.types.is_integer_dtype(df.index.dtype):
        # row numbers, each a small step from the last: a few bytes a page as deltas,
        # where plain they take 8 bytes a row and snappy finds little to take out
        options["column_encoding"] = {_DASK_INDEX: "DELTA_BINARY_PACKED"}
    return options


def to_parquet(
    df: dd.DataFrame,
    path: str | os.PathLike[str],
    *,
    column: str = "order_id",
    compression: str = "snappy",
    **kwargs: Any,
) -> None:
    """Write ``with_order_ids``'s result to Parquet at ``path``, as ``clobkit order-ids`` writes.

    ``df.to_parquet(path, **parquet_options(df, ...), **kwargs)`` (``kwargs``
    win over those settings), computed with Dask's blockwise fusion
    (``optimize(fuse=True)``): each partition is read, hashed and written in
    one task. Dask 2026.8's ``compute()`` fuses nothing, so a plain
    ``df.to_parquet`` runs five tasks a partition (read, ids, index reset,
    rename, write), each a round trip to the scheduler; on a 16-core
    ``LocalCluster`` that was a fifth of the workers' time (docs/scale.md).
    The files are the same either way. Blocks until written, like
    ``to_parquet``'s default.
    """
    options = {**parquet_options(df, column=column, compression=compression), **kwargs}
    written = df.to_parquet(path, compute=False, **options)  # type: ignore[no-untyped-call]
    written.optimize(fuse=True).compute()
