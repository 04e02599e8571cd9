"""The house's moving price: a seeded random walk of each house-quoted market's mid.

A bot author's first hour is against this sandbox: a market that never moves
tests nothing of a quoting loop. Every ``every_seconds`` (while serving) each
market the house quotes, active and not replayed, moves its mid up or down with
probability ``chance``: one cent, or with probability ``jump_chance`` a jump of 2
to 4 cents (news: what moves through a quote before its bot can requote), never
more than ``band_cents`` from the price it opened at (nor to the edge of the
grid, where the house could not quote both sides). The draws come from one
``random.Random(seed)`` (the sandbox's seed by default) in the markets' id order,
one draw set per step for every market, so a run's sequence of prices depends
on the seed and the number of steps alone. Config key ``walk`` (``null``: a
still book, as tests that need one ask)::

    "walk": {"every_seconds": 1.0, "chance": 0.3, "jump_chance": 0.1, "band_cents": 10,
             "seed": null}

The house requotes around the new mid at once; a house level that would cross
a user's resting order trades with it at that order's price (house.py), so the
book stays two-sided whatever users rest.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..core.checks import seconds
from ..errors import ValidationError
from .errors import ConfigError

__all__ = ["Walk", "WalkConfig"]

#: The walk's bounds: at most a day between steps; a band of at most 49 cents.
MAX_EVERY_SECONDS = 86_400
MAX_BAND_CENTS = 49


@dataclass(frozen=True)
class WalkConfig:
    """``every_seconds`` between steps; ``chance`` (0..1) that a market moves at a step,
    ``jump_chance`` (0..1) that a move is a jump of 2 to 4 cents rather than one;
    ``band_cents`` it may wander from its opening price; ``seed`` of the draws (``None``:
    the sandbox's ``seed``)."""

    every_seconds: float = 1.0
    chance: float = 0.3
    jump_chance: float = 0.1
    band_cents: int = 10
    seed: int | None = None

    def __post_init__(self) -> None:
        try:
            every = seconds(self.every_seconds, "walk.every_seconds")
        except ValidationError as exc:
            raise ConfigError(str(exc)) from None
        if every > MAX_EVERY_SECONDS:
            raise ConfigError(f"walk.every_seconds must be at most {MAX_EVERY_SECONDS:,}")
        for name in ("chance", "jump_chance"):
            share = getattr(self, name)
            if isinstance(share, bool) or not isinstance(share, (int, float)):
                raise ConfigError(f"walk.{name} must be a number in [0, 1], got {share!r}")
            if not 0 <= share <= 1:
                raise ConfigError(f"walk.{name} must lie in [0, 1], got {share!r}")
        band = self.band_cents
        if type(band) is not int or not 0 <= band <= MAX_BAND_CENTS:
            raise ConfigError(
                f"walk.band_cents must be an integer from 0 to {MAX_BAND_CENTS}, got {band!r}"
            )
        if self.seed is not None and type(self.seed) is not int:
            raise ConfigError(f"walk.seed must be an integer or null, got {self.seed!r}")
        object.__setattr__(self, "every_seconds", every)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WalkConfig:
        if not isinstance(data, Mapping):
            raise ConfigError(f"walk must be an object or null, got {data!r}")
        extra = set(data) - {f.name for f in fields(cls)}
        if extra:
            raise ConfigError(f"unknown walk keys: {sorted(extra)}")
        return cls(**dict(data))


class Walk:
    """The draws of one sandbox's walk: ``moves(markets)`` gives each market's step."""

    def __init__(self, config: WalkConfig, sandbox_seed: int) -> None:
        self.config = config
        seed = sandbox_seed if config.seed is None else config.seed
        self._random = random.Random(f"clobkit-walk:{seed}")
        #: Steps taken so far.
        self.steps = 0

    def moves(self, markets: Iterable[tuple[str, int, int]]) -> dict[str, int]:
        """The new mid (cents) of each market that moves this step, from ``(id, mid,
        opening price)`` of every market that may; the same draws per market, moved or
        not."""
        self.steps += 1
        config, r = self.config, self._random
        low_edge, high_edge = 2, 98  # a level either side of the mid stays on the grid
        moved: dict[str, int] = {}
        for market_id, mid, opened in sorted(markets):
            move, up, jump = r.random() < config.chance, r.random() < 0.5, r.random()
            size = r.randint(2, 4) if jump < config.jump_chance else 1
            if not move:
                continue
            low = max(opened - config.band_cents, low_edge)
            high = min(opened + config.band_cents, high_edge)
            step = size if up else -size
            if not low <= mid + step <= high:
                step = -step  # at the band's edge: it turns back
            target = min(max(mid + step, low), high)
            if target != mid:
                moved[market_id] = target
        return moved
