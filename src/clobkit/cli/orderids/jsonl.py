"""Reader: JSONL for ``clobkit order-ids``, one JSON object per line.

Each batch of lines becomes an ``Orders``: the hash columns as Python values,
each kept line's text and its decoded object (what the JSONL writer adds keys
to, and the cells of another format's table). A line that is not JSON, not an
object, repeats a key, lacks a required field or has a field of the other
order version is refused here, by line number; a blank line is no row.
``first_object`` reads ahead to the first object, whose keys are another
format's columns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import chain, repeat
from typing import Any, TextIO

import msgspec

from ...core.jsondepth import json_too_deep
from .rows import V1, Layout, Orders, _lines, _other_version, _union_keys, read_values, version_note

__all__ = ["JsonlOrders", "first_object"]

_decode = msgspec.json.decode


class _Blank:
    """A blank JSONL line: not a row."""


_BLANK = _Blank()


def _decode_line(text: str) -> object:
    if not text.strip():
        return _BLANK
    try:
        if json_too_deep(text.encode("utf-8", "surrogatepass")):
            raise RecursionError  # before the decoder can overflow the C stack
        return _decode(text)
    except msgspec.DecodeError as exc:
        return _Bad(f"invalid JSON ({exc})")
    except RecursionError:
        return _Bad("invalid JSON (nested too deeply)")


class _Bad(str):
    """A JSONL line that is not JSON; the string is the reason."""


def _with_duplicates(texts: list[str], objs: list[Any]) -> dict[int, str]:
    """The lines whose object repeats a key, and why they are refused.

    The decoder keeps a repeated key's last value silently; an order whose
    field is given twice is ambiguous, so its line is refused. In text
    without a backslash no string holds a quote, so every ``":`` ends a key,
    and a key is written only one way: when no key has space before its
    colon and the batch has as many ``":`` as its objects have keys, none
    repeats one (two passes over the batch). Otherwise the lines that escape
    a character or name a key twice are read again, exactly (``_duplicate``).
    """
    blob = "\n".join(texts)
    if "\\" not in blob and _SPACED_COLON.search(blob) is None:
        keys = sum(len(obj) for obj in objs if type(obj) is dict)
        if blob.count('":') == keys:
            return {}
    found = {}
    for k, (text, obj) in enumerate(zip(texts, objs, strict=True)):
        if type(obj) is dict and ("\\" in text or any(text.count(f'"{key}"') > 1 for key in obj)):
            why = _duplicate(text)
            if why:
                found[k] = why
    return found


_SPACED_COLON = re.compile(r'"[ \t\r]+:')


def _duplicate(text: str) -> str:
    """Why the object of ``text`` is refused: a key of its own repeated ("" if none)."""
    calls: list[list[str]] = []  # per object decoded, innermost first: the line's own is last

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in items]
        calls.append([key for i, key in enumerate(keys) if key in keys[:i]])
        return dict(items)

    try:
        json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):  # msgspec read it: its reading stands
        return ""
    if not calls or not calls[-1]:
        return ""
    return f"duplicate key {json.dumps(calls[-1][0])} (which value is meant is unclear)"


def first_object(source: TextIO) -> tuple[dict[str, Any] | None, Iterator[str]]:
    """The first JSON object of a JSONL input (its keys are another format's columns),
    and every line read, the ones read here first."""
    read: list[str] = []
    for line in source:
        read.append(line)
        try:
            obj = _decode(line)
        except msgspec.DecodeError:
            continue  # a bad line: refused in its turn
        if isinstance(obj, dict):
            return obj, chain(read, source)
    return None, chain(read, source)


class JsonlOrders:
    """The JSONL reader: one JSON object per line."""

    def __init__(self, layout: Layout = V1) -> None:
        self.layout = layout

    def parse(self, first: int, lines: list[str]) -> Orders:
        """A batch of lines, the first numbered ``first``."""
        texts = _lines(lines, str.rstrip)
        objs = _decode_batch(texts)
        numbers = list(range(first, first + len(texts)))
        rejects: list[tuple[int, str]] = []
        for k, why in _with_duplicates(texts, objs).items():
            objs[k] = _Bad(why)
        dicts = set(map(type, objs)) == {dict}
        layout = self.layout
        columns = {
            name: list(map(dict.get, objs, repeat(name))) if dicts else [] for name in layout.fields
        }
        if (
            not dicts
            or any(None in columns[name] for name in layout.required)
            or _other_version(_union_keys(objs), layout)
        ):  # the slow path: some line is refused, each is looked at
            keep = _keep_rows(objs, numbers, layout, rejects)
            objs = [objs[k] for k in keep]
            texts = [texts[k] for k in keep]
            numbers = [numbers[k] for k in keep]
            columns = {name: list(map(dict.get, objs, repeat(name))) for name in layout.fields}
        return Orders(numbers, _final_columns(columns), rejects, texts=texts, objects=objs)


def _decode_batch(texts: list[str]) -> list[Any]:
    """Every line decoded, the batch in one go unless it may nest too deeply."""
    try:
        # lines one by one only when the batch as a whole may nest too deeply
        if json_too_deep("\n".join(texts).encode("utf-8", "surrogatepass")):
            raise RecursionError
        return list(map(_decode, texts))
    except (msgspec.DecodeError, RecursionError):
        return list(map(_decode_line, texts))


def _keep_rows(
    objs: list[Any], numbers: list[int], layout: Layout, rejects: list[tuple[int, str]]
) -> list[int]:
    """Indexes of the usable objects; each other non-blank line's refusal goes to ``rejects``."""
    keep = []
    for k, obj in enumerate(objs):
        if obj is _BLANK:
            continue
        why = _refusal(obj, layout)
        if why is None:
            keep.append(k)
        else:
            rejects.append((numbers[k], why))
    return keep


def _refusal(obj: Any, layout: Layout) -> str | None:
    """Why a decoded line is refused; None when it is an order of ``layout``."""
    if isinstance(obj, _Bad):
        return str(obj)
    if not isinstance(obj, dict):
        return "not a JSON object"
    missing = [name for name in layout.required if obj.get(name) is None]
    if missing:
        return f"missing {', '.join(missing)}{version_note(missing, layout)}"
    return _other_version(obj, layout) or None


def _final_columns(columns: dict[str, list[Any]]) -> dict[str, object]:
    """The columns as the hasher takes them (``read_values``: an absent key or a null is
    an optional field's default)."""
    return {name: read_values(name, values) for name, values in columns.items()}
