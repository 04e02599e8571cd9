"""Salts: range, rejection of the biased tail, and a chi-square check."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType

import pytest

from clobkit.errors import OrderFieldError

SPAN = 10**12 + 1
REJECT_FROM = 2**64 - 2**64 % SPAN


def test_rejection_step_exists(core: ModuleType) -> None:
    """Draws in the biased tail [REJECT_FROM, 2**64) are skipped, not reduced modulo."""
    tail = (2**64 - 1).to_bytes(8, "little") + REJECT_FROM.to_bytes(8, "little")
    edge = (REJECT_FROM - 1).to_bytes(8, "little")
    small = (12345).to_bytes(8, "little")
    assert core.salts_from_bytes(tail + small + edge, 5) == [12345, (REJECT_FROM - 1) % SPAN]
    assert core.salts_from_bytes(tail, 3) == []
    assert core.salts_from_bytes(small * 4, 2) == [12345, 12345]
    assert core.salts_from_bytes(small[:7], 1) == []
    # without the rejection, 2**64 - 1 would have mapped onto a low salt
    assert (2**64 - 1) % SPAN < 2**64 % SPAN


def test_range_and_types(core: ModuleType) -> None:
    salts = core.new_salts(10_000)
    assert len(salts) == 10_000
    assert all(type(s) is int and 0 <= s <= 10**12 for s in salts)
    assert len(set(salts)) == 10_000  # 1e4 draws from 1e12: a repeat means a broken source
    assert 0 <= core.new_salt() <= 10**12
    assert core.new_salts(0) == []
    for bad in (-1, 1.5, "3", None, True):
        with pytest.raises(OrderFieldError):
            core.new_salts(bad)


def _chi2_critical(dof: int, z: float) -> float:
    # Wilson-Hilferty: chi2 quantile from the normal quantile z
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def test_chi_square_uniformity(core: ModuleType) -> None:
    """400,000 salts in 200 equal buckets and by their low digit; p < 1e-6 fails."""
    salts = core.new_salts(400_000)
    buckets: tuple[Callable[[int], int], ...] = (lambda s: s * 200 // SPAN, lambda s: s % 10)
    for bucket in buckets:
        counts: dict[int, int] = {}
        for s in salts:
            k = bucket(s)
            counts[k] = counts.get(k, 0) + 1
        k = len(counts)
        expected = len(salts) / k
        chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
        assert chi2 < _chi2_critical(k - 1, 4.753), (k, chi2)  # z for p = 1e-6
    # the top of the range is reachable in principle: the largest draw is near 10**12
    assert max(salts) > 10**12 * 0.999
