"""The fixtures' ``extra_games``: more upcoming games per league, the default set unchanged."""

from __future__ import annotations

import pytest

from clobkit.sandbox.config import ConfigError, SandboxConfig
from clobkit.sandbox.fixtures import build_fixtures

ANCHOR = 1_700_000_000_000


def test_extra_games_add_quoted_markets_and_leave_the_default_set_alone() -> None:
    default = build_fixtures(0, ANCHOR)
    more = build_fixtures(0, ANCHOR, extra_games=40)
    assert more.markets[: len(default.markets)] == default.markets
    assert more.events[: len(default.events)] == default.events
    added = more.markets[len(default.markets) :]
    assert len(added) == 4 * 40
    assert all(m.status == "active" and m.house_liquidity for m in added)
    assert len({m.id for m in more.markets}) == len(more.markets)
    assert len({e.slug for e in more.events}) == len(more.events)
    assert sum(m.house_liquidity for m in more.markets) >= 200


@pytest.mark.parametrize("bad", [-1, True, "3", 1.5])
def test_extra_games_must_be_a_count(bad: object) -> None:
    with pytest.raises(ConfigError, match="extra_games"):
        SandboxConfig.from_dict({"extra_games": bad})
