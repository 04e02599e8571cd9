"""Seeded, deterministic sports fixtures: leagues, teams, events and moneyline markets.

Identifiers (UUIDs, token ids, condition ids, slugs) depend only on the seed;
timestamps are laid out around an anchor (the sandbox's start, floored to the
hour) so that "upcoming" events stay in the future.

Per league: eight games (two ended, two live, four upcoming) and one futures
event (``is_future``, one Yes/No market per team, ``neg_risk``). Two-outcome
leagues (nba, nfl, lol) have one moneyline market per game whose outcomes are
the two teams; the three-way league (epl) has home / draw / away Yes/No
markets, ``neg_risk`` like the real service's soccer markets.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

from ..core.spec import OUTCOME_A, OUTCOME_B, UNIT
from ..order_id import keccak256

__all__ = ["EventFixture", "Fixtures", "League", "MarketFixture", "Team", "build_fixtures"]

_NAMESPACE = uuid.UUID("6f1c3c52-9a51-4c57-9d0e-8f5e2a7c0b11")
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


@dataclass(frozen=True)
class Team:
    id: int
    name: str
    short_name: str
    name_zh: str
    short_name_zh: str
    abbreviation: str
    logo: str


@dataclass(frozen=True)
class League:
    id: str
    name: str
    sport: str
    category: str
    subcategory: str
    series_id: str
    three_way: bool
    teams: tuple[Team, ...]


@dataclass
class MarketFixture:
    id: str
    external_id: str
    condition_id: str
    token_id_a: str
    token_id_b: str
    event_id: str
    question: str
    description: str
    category: str
    subcategory: str
    outcome_a: str
    outcome_b: str
    price_a_cents: int
    volume_units: int
    end_date_ms: int
    game_start_ms: int
    status: str  # "active" or "resolved"
    winner: str | None
    market_type: str
    group_item_title: str
    neg_risk: bool
    is_featured: bool
    created_ms: int
    updated_ms: int
    house_liquidity: bool
    house_level_units: int  # USDC the house quotes per ladder level (at the first level)
    min_order_size_units: int
    fee_rate_bps: int
    kind: str  # "moneyline", "home_win", "draw", "away_win" or "future"


@dataclass
class EventFixture:
    id: str
    external_id: str
    slug: str
    title: str
    description: str
    league: League
    start_date_ms: int
    start_time_ms: int
    end_date_ms: int
    volume_units: int
    trader_count: int
    live: bool
    ended: bool
    is_featured: bool
    is_future: bool
    team_match_status: str
    home_team: Team
    away_team: Team
    game_id: int
    created_ms: int
    updated_ms: int
    market_ids: list[str] = field(default_factory=list)
    # enriched_markets: (market id, outcome) of the home and away win
    home_win: tuple[str, str] = ("", OUTCOME_A)
    away_win: tuple[str, str] = ("", OUTCOME_A)


@dataclass
class Fixtures:
    leagues: tuple[League, ...]
    events: list[EventFixture]
    markets: list[MarketFixture]


def _logo(league: str, abbr: str) -> str:
    return f"https://static.sandbox.clobkit.invalid/logos/{league}/{abbr.lower()}.png"


def _teams(
    league: str, first_id: int, rows: list[tuple[str, str, str, str, str]]
) -> tuple[Team, ...]:
    return tuple(
        Team(first_id + i, name, short, zh, short_zh, abbr, _logo(league, abbr))
        for i, (name, short, zh, short_zh, abbr) in enumerate(rows)
    )


LEAGUES: tuple[League, ...] = (
    League(
        "nba",
        "NBA",
        "basketball",
        "sports",
        "basketball",
        "nba-2025-26",
        False,
        _teams(
            "nba",
            101,
            [
                ("Los Angeles Lakers", "Lakers", "洛杉矶湖人", "湖人", "LAL"),
                ("Boston Celtics", "Celtics", "波士顿凯尔特人", "凯尔特人", "BOS"),
                ("Golden State Warriors", "Warriors", "金州勇士", "勇士", "GSW"),
                ("Milwaukee Bucks", "Bucks", "密尔沃基雄鹿", "雄鹿", "MIL"),
                ("Denver Nuggets", "Nuggets", "丹佛掘金", "掘金", "DEN"),
                ("Miami Heat", "Heat", "迈阿密热火", "热火", "MIA"),
            ],
        ),
    ),
    League(
        "epl",
        "Premier League",
        "soccer",
        "sports",
        "soccer",
        "epl-2025-26",
        True,
        _teams(
            "epl",
            201,
            [
                ("Arsenal", "Arsenal", "阿森纳", "阿森纳", "ARS"),
                ("Chelsea", "Chelsea", "切尔西", "切尔西", "CHE"),
                ("Liverpool", "Liverpool", "利物浦", "利物浦", "LIV"),
                ("Manchester City", "Man City", "曼彻斯特城", "曼城", "MCI"),
                ("Manchester United", "Man United", "曼彻斯特联", "曼联", "MUN"),
                ("Tottenham Hotspur", "Spurs", "托特纳姆热刺", "热刺", "TOT"),
            ],
        ),
    ),
    League(
        "nfl",
        "NFL",
        "american_football",
        "sports",
        "american_football",
        "nfl-2025",
        False,
        _teams(
            "nfl",
            301,
            [
                ("Kansas City Chiefs", "Chiefs", "堪萨斯城酋长", "酋长", "KC"),
                ("Philadelphia Eagles", "Eagles", "费城老鹰", "老鹰", "PHI"),
                ("Dallas Cowboys", "Cowboys", "达拉斯牛仔", "牛仔", "DAL"),
                ("San Francisco 49ers", "49ers", "旧金山49人", "49人", "SF"),
                ("Buffalo Bills", "Bills", "布法罗比尔", "比尔", "BUF"),
                ("Baltimore Ravens", "Ravens", "巴尔的摩乌鸦", "乌鸦", "BAL"),
            ],
        ),
    ),
    League(
        "lol",
        "League of Legends",
        "esports",
        "esports",
        "league_of_legends",
        "lol-2026",
        False,
        _teams(
            "lol",
            401,
            [
                ("T1", "T1", "T1战队", "T1", "T1"),
                ("Gen.G", "Gen.G", "Gen.G战队", "GEN", "GEN"),
                ("JD Gaming", "JDG", "京东电子竞技俱乐部", "京东", "JDG"),
                ("Bilibili Gaming", "BLG", "哔哩哔哩电子竞技俱乐部", "哔哩哔哩", "BLG"),
                ("G2 Esports", "G2", "G2电子竞技俱乐部", "G2", "G2"),
                ("Fnatic", "Fnatic", "Fnatic战队", "FNC", "FNC"),
            ],
        ),
    ),
)


def _uuid(*parts: object) -> str:
    return str(uuid.uuid5(_NAMESPACE, ":".join(str(p) for p in parts)))


def _game(
    event_id: str,
    league: League,
    home: Team,
    away: Team,
    game_id: int,
    start: int,
    anchor: int,
    trader_count: int,
) -> EventFixture:
    """An upcoming regular-season game of ``league`` starting at ``start`` (ms)."""
    return EventFixture(
        id=event_id,
        external_id=f"{league.id}-{game_id}",
        slug=f"{league.id}-{home.abbreviation.lower()}-{away.abbreviation.lower()}-{game_id}",
        title=f"{home.name} vs. {away.name}",
        description=f"{league.name} regular season: {home.name} host {away.name}.",
        league=league,
        start_date_ms=start - 7 * DAY_MS,
        start_time_ms=start,
        end_date_ms=start + 3 * HOUR_MS,
        volume_units=0,
        trader_count=trader_count,
        live=False,
        ended=False,
        is_featured=False,
        is_future=False,
        team_match_status="auto_matched",
        home_team=home,
        away_team=away,
        game_id=game_id,
        created_ms=start - 7 * DAY_MS,
        updated_ms=anchor,
    )


def _token(market_id: str, outcome: str) -> str:
    return str(
        int.from_bytes(keccak256(f"clobkit-sandbox:token:{market_id}:{outcome}".encode()), "big")
    )


def _condition(market_id: str) -> str:
    return "0x" + keccak256(f"clobkit-sandbox:condition:{market_id}".encode()).hex()


class _Market(NamedTuple):
    """What differs between the markets of one event (the rest comes from the event)."""

    kind: str
    question: str
    description: str
    outcome_a: str
    outcome_b: str
    price: int  # cents of outcome a
    group: str
    neg_risk: bool
    house: bool
    min_size: int  # shares
    fee: int  # bps


def _moneyline(home: Team, away: Team, game_id: int, price: int, house: bool, fee: int) -> _Market:
    """The one market of a two-outcome game: outcome a is the home team."""
    return _Market(
        "moneyline",
        f"{home.name} vs. {away.name}",
        f"Resolves to the winner of {home.name} vs. {away.name} (game {game_id}).",
        home.name,
        away.name,
        price,
        "Moneyline",
        False,
        house,
        1,
        fee,
    )


def _three_way(
    home: Team, away: Team, prices: tuple[int, int, int], house: bool, fee: int
) -> tuple[_Market, _Market, _Market]:
    """The home / draw / away Yes/No markets of a soccer match (``neg_risk``)."""
    h, d, a = prices
    return (
        _Market(
            "home_win",
            f"Will {home.name} beat {away.name}?",
            f"Resolves Yes if {home.name} beat {away.name} in regulation time.",
            "Yes",
            "No",
            h,
            home.name,
            True,
            house,
            1,
            fee,
        ),
        _Market(
            "draw",
            f"Will {home.name} vs. {away.name} end in a draw?",
            "Resolves Yes if the match is drawn after regulation time.",
            "Yes",
            "No",
            d,
            "Draw",
            True,
            house,
            1,
            fee,
        ),
        _Market(
            "away_win",
            f"Will {away.name} beat {home.name}?",
            f"Resolves Yes if {away.name} beat {home.name} in regulation time.",
            "Yes",
            "No",
            a,
            away.name,
            True,
            house,
            1,
            fee,
        ),
    )


def _future(league: League, team: Team, weight: int, house: bool) -> _Market:
    """One team's Yes/No market of a league's championship event."""
    return _Market(
        "future",
        f"Will {team.name} win the {league.name} title in 2026?",
        f"Resolves Yes if {team.name} are {league.name} champions in 2026.",
        "Yes",
        "No",
        weight,
        team.name,
        True,
        house,
        5,
        0,
    )


def _future_event(
    event_id: str, league: League, game_id: int, anchor: int, trader_count: int
) -> EventFixture:
    """A league's championship event, settled two months after ``anchor`` (ms)."""
    start = anchor + 60 * DAY_MS
    return EventFixture(
        id=event_id,
        external_id=f"{league.id}-{game_id}",
        slug=f"{league.id}-champion-2026",
        title=f"{league.name} Champion 2026",
        description=f"Which team wins the {league.name} title in 2026?",
        league=league,
        start_date_ms=anchor - 90 * DAY_MS,
        start_time_ms=start,
        end_date_ms=start + 30 * DAY_MS,
        volume_units=0,
        trader_count=trader_count,
        live=False,
        ended=False,
        is_featured=league.id == "nba",
        is_future=True,
        team_match_status="auto_matched",
        home_team=league.teams[0],
        away_team=league.teams[1],
        game_id=game_id,
        created_ms=anchor - 90 * DAY_MS,
        updated_ms=anchor,
    )


def _default_start(i: int, anchor: int) -> int:
    """When game ``i`` of a league starts (ms): 0-1 ended, 2-3 live, 4-7 upcoming."""
    if i < 2:
        return anchor - (3 + i) * DAY_MS - 5 * HOUR_MS
    if i < 4:
        return anchor - (1 + i % 2) * HOUR_MS
    return anchor + (i - 3) * DAY_MS + (19 - i) * HOUR_MS


class _Builder:
    """The fixture set under construction: one seeded generator drawn in a fixed order."""

    def __init__(self, seed: int, anchor_ms: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.anchor = anchor_ms - anchor_ms % HOUR_MS
        self.events: list[EventFixture] = []
        self.markets: list[MarketFixture] = []
        self.game_id = 90_000 + seed % 1000 * 100

    def next_game_id(self) -> int:
        self.game_id += 1
        return self.game_id

    def add_market(self, event: EventFixture, spec: _Market) -> MarketFixture:
        """A market of ``event``; a market of an ended event is resolved at random."""
        rng = self.rng
        market_id = _uuid("market", self.seed, event.id, len(event.market_ids))
        resolved = event.ended
        winner = None
        if resolved:
            winner = OUTCOME_A if rng.random() < spec.price / 100 else OUTCOME_B
        m = MarketFixture(
            id=market_id,
            external_id=f"{event.external_id}-{spec.kind}",
            condition_id=_condition(market_id),
            token_id_a=_token(market_id, OUTCOME_A),
            token_id_b=_token(market_id, OUTCOME_B),
            event_id=event.id,
            question=spec.question,
            description=spec.description,
            category=event.league.category,
            subcategory=event.league.subcategory,
            outcome_a=spec.outcome_a,
            outcome_b=spec.outcome_b,
            price_a_cents=spec.price,
            volume_units=rng.randrange(5_000, 400_000) * UNIT,
            end_date_ms=event.end_date_ms,
            game_start_ms=event.start_time_ms,
            status="resolved" if resolved else "active",
            winner=winner,
            market_type="moneyline",
            group_item_title=spec.group,
            neg_risk=spec.neg_risk,
            is_featured=event.is_featured,
            created_ms=event.created_ms,
            updated_ms=event.updated_ms,
            house_liquidity=spec.house and not resolved,
            house_level_units=rng.choice((250, 500, 1000, 2000)) * UNIT,
            min_order_size_units=spec.min_size * UNIT,
            fee_rate_bps=spec.fee,
            kind=spec.kind,
        )
        self.markets.append(m)
        event.market_ids.append(market_id)
        return m

    def add_event(self, event: EventFixture) -> None:
        """Close an event: its volume is its markets' volume."""
        event.volume_units = sum(m.volume_units for m in self.markets if m.event_id == event.id)
        self.events.append(event)

    def default_game(self, league: League, i: int) -> None:
        """Game ``i`` (0-7) of a league: its event and its moneyline or three-way markets."""
        teams = league.teams
        home, away = teams[(2 * i) % 6], teams[(2 * i + 1 + i // 3) % 6]
        if away == home:
            away = teams[(teams.index(home) + 1) % 6]
        game_id = self.next_game_id()
        event_id = _uuid("event", self.seed, league.id, i)
        start = _default_start(i, self.anchor)
        trader_count = self.rng.randrange(20, 5_000)
        ev = _game(event_id, league, home, away, game_id, start, self.anchor, trader_count)
        ev.live, ev.ended, ev.is_featured = 2 <= i < 4, i < 2, i in (2, 4)
        house = not (league.id == "lol" and i == 7) and not (league.id == "nfl" and i == 6)
        fee = 200 if league.category == "esports" else 0
        if league.three_way:
            h = self.rng.randrange(30, 56)
            d = self.rng.randrange(18, 30)
            hm, _, am = (
                self.add_market(ev, spec)
                for spec in _three_way(home, away, (h, d, 100 - h - d), house, fee)
            )
            ev.home_win, ev.away_win = (hm.id, OUTCOME_A), (am.id, OUTCOME_A)
        else:
            price = self.rng.randrange(25, 76)
            m = self.add_market(ev, _moneyline(home, away, game_id, price, house, fee))
            ev.home_win, ev.away_win = (m.id, OUTCOME_A), (m.id, OUTCOME_B)
        self.add_event(ev)

    def future(self, league: League) -> None:
        """A league's championship event: one Yes/No market per team, mutually exclusive."""
        event_id = _uuid("event", self.seed, league.id, "future")
        game_id = self.next_game_id()
        trader_count = self.rng.randrange(500, 20_000)
        ev = _future_event(event_id, league, game_id, self.anchor, trader_count)
        weights = [30, 22, 16, 13, 10, 9]
        ids = [
            self.add_market(ev, _future(league, team, weights[k], k < 3)).id
            for k, team in enumerate(league.teams)
        ]
        ev.home_win, ev.away_win = (ids[0], OUTCOME_A), (ids[1], OUTCOME_A)
        self.add_event(ev)

    def extra_game(self, league: League, i: int, extra: random.Random) -> None:
        """Extra upcoming game ``i`` of a league, one house-quoted moneyline market."""
        teams = league.teams
        home, away = teams[i % 6], teams[(i + 1 + i // 6) % 6]
        if away == home:
            away = teams[(i + 2) % 6]
        start = self.anchor + (1 + i // 4) * DAY_MS + (12 + i % 4 * 2) * HOUR_MS
        game_id = self.next_game_id()
        event_id = _uuid("event", self.seed, league.id, "extra", i)
        trader_count = extra.randrange(20, 5_000)
        ev = _game(event_id, league, home, away, game_id, start, self.anchor, trader_count)
        fee = 200 if league.category == "esports" else 0
        spec = _moneyline(home, away, game_id, extra.randrange(25, 76), True, fee)
        m = self.add_market(ev, spec)
        ev.home_win, ev.away_win = (m.id, OUTCOME_A), (m.id, OUTCOME_B)
        self.add_event(ev)


def build_fixtures(seed: int, anchor_ms: int, extra_games: int = 0) -> Fixtures:
    """The deterministic fixture set for ``seed``, laid out around ``anchor_ms``;
    ``extra_games`` more upcoming games per league, each with one moneyline market
    quoted by the house (for tests and benchmarks over many markets)."""
    build = _Builder(seed, anchor_ms)
    for league in LEAGUES:
        for i in range(8):
            build.default_game(league, i)
        build.future(league)
    # a separate generator: the default fixtures stay the same whatever extra_games is
    extra = random.Random(f"{seed}-extra")
    for league in LEAGUES:
        for i in range(extra_games):
            build.extra_game(league, i, extra)
    return Fixtures(LEAGUES, build.events, build.markets)
