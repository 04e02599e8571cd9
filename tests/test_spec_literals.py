"""Each rule of the API has one home: no rule is spelled as a literal elsewhere.

The rules (page size, error codes and texts, the 6-decimal unit, the salt
bound, the environment's names, the order statuses) live in ``_spec.py`` (and
``_parse.py``, the shared parsing rules). This test reads every other module of
``src/clobkit`` with ``ast`` (constants in code: docstrings and comments are
prose and are not read) and the compiled twin's ``ext/*.pyx`` / ``*.pxi`` with
regular expressions (docstrings and comments removed first), and fails on any
rule spelled there. Each check looks only where a value means its rule (a 100
next to a page size, 1_000_000 scaling an amount), so the unrelated 100s and
millions of the code pass; ``test_guard_flags_*`` prove each check can fail.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from clobkit.core import spec as _spec

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "clobkit"
HOMES = {"src/clobkit/core/spec.py", "src/clobkit/core/parse.py"}

#: Known residues: (path, rule, text). Emptied when the branches meet.
ALLOWED: set[tuple[str, str, str]] = set()

PAGE = "page size"
ERRORS = "error code/text"
UNIT = "6-decimal unit"
SALT = "salt bound"
ENV = "environment name"
STATUS = "order status"
OUTCOME = "outcome name"
SWITCH = "core switch outside its home"

STATUSES = frozenset(_spec.ORDER_STATUSES)
#: The outcome names "a" / "b", flagged where an outcome is meant: both in one table, a
#: side of a comparison or a keyword, variable or parameter named for an outcome.
OUTCOMES = frozenset(_spec.OUTCOMES)
OUTCOME_WORD = re.compile(r"outcome|winner", re.IGNORECASE)
#: The error codes: every ``CODE_*`` of ``_spec`` and the risk code; any other
#: ``ORDER_*`` code must be added there first.
CODES = frozenset(
    value for name, value in vars(_spec).items() if name.startswith("CODE_") or name == "RISK_CODE"
)
CODE_SHAPE = re.compile(r"ORDER_[A-Z][A-Z_]*")
#: The error texts of section 7, compared case-insensitively.
TEXTS = frozenset(
    [value.casefold() for name, value in vars(_spec).items() if name.startswith("ERROR_")]
    + [_spec.forbidden_scope("").strip().casefold()]
)
#: The texts also found within a message: each of several words, but the status
#: table's bare "not found", which ends texts of their own ("user not found").
WITHIN = frozenset(t for t in TEXTS if " " in t) - {_spec.ERROR_NOT_FOUND.casefold()}
#: The environment names of ``_spec`` (spelled only there) and the core's own
#: switches, each read in one place (see docs/architecture.md, "Where each rule lives").
ENV_NAMES = frozenset(value for name, value in vars(_spec).items() if name.startswith("ENV_"))
CORE_SWITCHES = {
    "CLOBKIT_NO_EXTENSIONS": ("src/clobkit/core/choice.py",),
    "CLOBKIT_KECCAK": ("ext/",),
}
ENV_SHAPE = re.compile(r"CLOBKIT_[A-Z][A-Z0-9_]*")
#: Names that make a 100 nearby a page size: any name with "page" in it, the
#: endpoint of the open orders, and ``limit`` as a parameter, keyword or string
#: (a variable ``limit`` is also a limit price, in cents of 100).
PAGE_WORDS = re.compile(r"page|^OPEN_ORDERS$", re.IGNORECASE)
PAGE_PARAMS = frozenset(("limit",))
#: Nanosecond clocks: ``ns // 1_000_000`` is milliseconds, not an amount.
NS_NAME = re.compile(r"(^|_)ns$|_ns\b|time_ns|perf_counter_ns|monotonic_ns")
#: Names a 1_000_000 assigned to is a unit scale.
UNIT_NAME = re.compile(r"unit|micro|scale|usdc|share", re.IGNORECASE)
SALT_TEXT = re.compile(r"10\s*\*\*\s*12|10\^12|(?<![\w.])1_?000_?000_?000_?00[01](?![\d_.])")
QUANTUM_TEXT = re.compile(r"^0\.0{5}1$|^1e-0?6$", re.IGNORECASE)


# -- Python ---------------------------------------------------------------------------


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module, its classes and functions."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
        ):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _words(node: ast.AST, *, variables: bool = True) -> Iterator[str]:
    """The names in an expression: keywords, parameters, short strings and (unless
    ``variables`` is false) identifiers and attributes."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and variables:
            yield sub.id
        elif isinstance(sub, ast.Attribute) and variables:
            yield sub.attr
        elif isinstance(sub, (ast.keyword, ast.arg)) and sub.arg:
            yield sub.arg
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and len(sub.value) < 30:
            yield sub.value


def _name(node: ast.AST | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _is_million(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value == _spec.UNIT
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Pow)
        and isinstance(node.left, ast.Constant)
        and node.left.value == 10
        and isinstance(node.right, ast.Constant)
        and node.right.value == _spec.DECIMALS
    )


def _is_salt_bound(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value in (_spec.SALT_MAX, _spec.SALT_MAX + 1)
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Pow)
        and isinstance(node.left, ast.Constant)
        and node.left.value == 10
        and isinstance(node.right, ast.Constant)
        and node.right.value == 12
    )


class _Finder(ast.NodeVisitor):
    """Walks one module, keeping the statement (and the ``if`` tests) around each node."""

    def __init__(self, tree: ast.AST, status_params: dict[str, set[int]]) -> None:
        self.found: list[tuple[int, str, str]] = []
        self.docstrings = _docstrings(tree)
        self.parents: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.status_params = status_params

    def flag(self, node: ast.AST, rule: str, text: str | None = None) -> None:
        line = getattr(node, "lineno", 0)
        self.found.append((line, rule, ast.unparse(node) if text is None else text))

    def _context(self, node: ast.AST) -> list[ast.AST]:
        """The parts of the innermost statement holding ``node`` (a compound statement's
        header only) and the tests of the ``if`` / ``while`` statements around it."""
        parts: list[ast.AST] = []
        cur: ast.AST | None = node
        stmt: ast.AST | None = None
        while cur is not None:
            if isinstance(cur, ast.stmt):
                if stmt is None:
                    stmt = cur
                    if isinstance(cur, (ast.If, ast.While)):
                        parts.append(cur.test)
                    elif isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        parts.append(cur.args)
                    elif not hasattr(cur, "body"):
                        parts.append(cur)
                elif isinstance(cur, (ast.If, ast.While)):
                    parts.append(cur.test)
                elif isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    break
            cur = self.parents.get(id(cur))
        return parts

    def _page_context(self, node: ast.AST) -> bool:
        parts = self._context(node)
        return any(PAGE_WORDS.search(w) for part in parts for w in _words(part)) or any(
            w in PAGE_PARAMS for part in parts for w in _words(part, variables=False)
        )

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if id(node) in self.docstrings:
            return
        parent = self.parents.get(id(node))
        if type(value) is int:
            if value == _spec.PAGE_SIZE_MAX and self._page_context(node):
                self.flag(node, PAGE)
            if _is_salt_bound(node):
                self.flag(node, SALT)
            if value == _spec.UNIT:
                self._million(node)
        elif isinstance(value, str):
            self._text(node, value, parent)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if _is_salt_bound(node):
            self.flag(node, SALT)
        elif _is_million(node):
            self._million(node)
        else:
            self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        # Decimal(...).scaleb(±6): a unit scale spelled by its exponent
        if _name(node.func) == "scaleb" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub):
                arg = arg.operand
            if isinstance(arg, ast.Constant) and arg.value == _spec.DECIMALS:
                self.flag(node, UNIT)
        # a status passed where a function of the package takes one
        for index in self.status_params.get(_name(node.func), ()):
            given = node.args[index] if index < len(node.args) else None
            if isinstance(given, ast.Constant) and given.value in STATUSES:
                self.flag(given, STATUS)
        self.generic_visit(node)

    def _million(self, node: ast.AST) -> None:
        """Flag 1_000_000 scaling an amount (an operand of * / // %, or a unit's name)."""
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.BinOp) and isinstance(
            parent.op, (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
        ):
            other = parent.left if parent.right is node else parent.right
            if not any(NS_NAME.search(w) for w in _words(other)):
                self.flag(node, UNIT)
        elif isinstance(parent, (ast.Assign, ast.AnnAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            if any(UNIT_NAME.search(_name(t)) for t in targets):
                self.flag(node, UNIT)

    def _text(self, node: ast.Constant, value: str, parent: ast.AST | None) -> None:
        code = CODE_SHAPE.fullmatch(value) and not hasattr(_spec, value)  # not a name
        folded = value.casefold()
        # a code, a text, or a text of several words within a message
        if value in CODES or code or folded in TEXTS or any(t in folded for t in WITHIN):
            self.flag(node, ERRORS)
        if SALT_TEXT.search(value):
            self.flag(node, SALT)
        if QUANTUM_TEXT.match(value):
            self.flag(node, UNIT)
        for env in ENV_SHAPE.findall(value):
            if env in CORE_SWITCHES:
                self.flag(node, SWITCH, env)  # residue() keeps it outside its home
            else:
                self.flag(node, ENV)
        if value in STATUSES and self._status_place(node, parent):
            self.flag(node, STATUS)
        if value in OUTCOMES and self._outcome_place(node, parent):
            self.flag(node, OUTCOME)

    def _outcome_place(self, node: ast.AST, parent: ast.AST | None) -> bool:
        """Whether "a" / "b" stands where an outcome is meant (module doc: OUTCOMES)."""
        while isinstance(parent, ast.IfExp):  # "a" if side == BID else "b"
            node, parent = parent, self.parents.get(id(parent))
        table = isinstance(parent, (ast.Tuple, ast.List, ast.Set)) and parent.elts
        if table and {e.value for e in table if isinstance(e, ast.Constant)} == OUTCOMES:
            return True
        if isinstance(parent, ast.Compare):
            return any(OUTCOME_WORD.search(w) for w in _words(parent))
        if isinstance(parent, ast.keyword):
            return bool(OUTCOME_WORD.search(parent.arg or ""))
        if isinstance(parent, (ast.Assign, ast.AnnAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return any(OUTCOME_WORD.search(_name(t)) for t in targets)
        if isinstance(parent, ast.Call):  # an argument of a function's outcome parameter
            return node in [
                parent.args[i]
                for i in self.status_params.get("outcome " + _name(parent.func), ())
                if i < len(parent.args)
            ]
        return False

    def _status_place(self, node: ast.AST, parent: ast.AST | None) -> bool:
        """Whether a status string stands where a status is meant."""
        while isinstance(parent, ast.IfExp):  # "won" if wins else "lost"
            node, parent = parent, self.parents.get(id(parent))
        if isinstance(parent, (ast.Tuple, ast.List, ast.Set)):
            items = parent.elts
            if len(items) > 1 and all(
                isinstance(e, ast.Constant) and e.value in STATUSES for e in items
            ):
                return True  # a table of statuses
            node, parent = parent, self.parents.get(id(parent))
        return _status_slot(node, parent)


def _status_slot(node: ast.AST, parent: ast.AST | None) -> bool:
    """Whether ``parent`` makes its child ``node`` a status: a key of a status table, a side
    of a comparison, or the value of a keyword, variable or parameter named ``*status``."""
    if isinstance(parent, ast.Dict):
        keys = [k for k in parent.keys if k is not None]
        return len(keys) > 1 and all(
            isinstance(k, ast.Constant) and k.value in STATUSES for k in keys
        )
    if isinstance(parent, ast.Compare):  # a status word compared is a status
        return True
    if isinstance(parent, ast.keyword):
        return (parent.arg or "").endswith("status")
    if isinstance(parent, ast.Assign):
        return any(_name(t).endswith("status") for t in parent.targets)
    if isinstance(parent, (ast.AnnAssign, ast.AugAssign)):
        return _name(parent.target).endswith("status")
    if isinstance(parent, ast.arguments):  # a parameter's default
        defaults = parent.defaults
        params = (parent.posonlyargs + parent.args)[-len(defaults) :] if defaults else []
        pairs = [
            *zip(params, defaults, strict=True),
            *zip(parent.kwonlyargs, parent.kw_defaults, strict=True),
        ]
        return any(d is node and a.arg.endswith("status") for a, d in pairs)
    return False


def status_params(tree: ast.AST, into: dict[str, set[int]]) -> dict[str, set[int]]:
    """Add the positional index of each function's ``*status`` parameter (less ``self``)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [a.arg for a in node.args.posonlyargs + node.args.args]
            if params and params[0] in ("self", "cls"):
                params = params[1:]
            for i, param in enumerate(params):
                if param.endswith("status"):
                    into.setdefault(node.name, set()).add(i)
                elif OUTCOME_WORD.search(param):  # and its outcome parameters
                    into.setdefault("outcome " + node.name, set()).add(i)
    return into


def scan_python(
    source: str, functions: dict[str, set[int]] | None = None
) -> list[tuple[int, str, str]]:
    """(line, rule, text) of each rule spelled in Python ``source``; ``functions``: the
    status parameters of the package's functions (else those ``source`` defines)."""
    tree = ast.parse(source)
    finder = _Finder(tree, status_params(tree, dict(functions or {})))
    finder.visit(tree)
    return finder.found


# -- Cython ---------------------------------------------------------------------------

_PROSE = re.compile(r'"""(?:.|\n)*?"""|\'\'\'(?:.|\n)*?\'\'\'|#[^\n]*')
_PYX_RULES = [
    (PAGE, re.compile(r"\b(?:page_size|per_page|limit)\b[^\n]*?(?<![\w.])100(?![\w.])")),
    (SALT, SALT_TEXT),
    # 1_000_000 not next to a nanosecond clock (tv_nsec / 1000000 is milliseconds)
    (UNIT, re.compile(r"(?<!nsec / )(?<!_ns // )(?<![\w.])1_?000_?000(?![\w.])(?!ULL)")),
    (UNIT, re.compile(r"0\.000001|scaleb\(-?6\)")),
    (ERRORS, re.compile(r"\bORDER_[A-Z][A-Z_]*\b")),
    (
        ERRORS,
        re.compile("|".join(re.escape(t) for t in sorted(TEXTS) if " " in t), re.IGNORECASE),
    ),
    (ENV, re.compile("|".join(sorted(ENV_NAMES)))),
    (STATUS, re.compile(rf"status\s*(?:==|!=|=)\s*[\"'](?:{'|'.join(sorted(STATUSES))})[\"']")),
]


def scan_cython(source: str) -> list[tuple[int, str, str]]:
    """(line, rule, text) of each rule spelled in Cython ``source`` outside its prose."""
    # blank the prose, keeping line numbers
    code = _PROSE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)
    hits = [(rule, m) for rule, pattern in _PYX_RULES for m in pattern.finditer(code)]
    hits += [
        (SWITCH if m.group() in CORE_SWITCHES else ENV, m)
        for m in ENV_SHAPE.finditer(code)
        if m.group() not in ENV_NAMES
    ]
    return [(code.count("\n", 0, m.start()) + 1, rule, m.group()) for rule, m in hits]


# -- the tree -------------------------------------------------------------------------


def _files() -> list[Path]:
    py = sorted(SRC.rglob("*.py"))
    ext = sorted((ROOT / "ext").glob("*.pyx")) + sorted((ROOT / "ext").glob("*.pxi"))
    return [p for p in py + ext if p.relative_to(ROOT).as_posix() not in HOMES]


def _switch_home_ok(rel: str, text: str) -> bool:
    """A core switch spelled in its one home."""
    homes = CORE_SWITCHES.get(text)
    return homes is not None and any(rel.startswith(h) for h in homes)


def _package_functions() -> dict[str, set[int]]:
    """The status and outcome parameters of every function of the package."""
    functions: dict[str, set[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        status_params(ast.parse(path.read_text(encoding="utf-8")), functions)
    return functions


def residue() -> list[str]:
    functions = _package_functions()
    out = []
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        source = path.read_text(encoding="utf-8")
        found = scan_python(source, functions) if path.suffix == ".py" else scan_cython(source)
        out += [
            f"{rel}:{line}: {rule}: {text}"
            for line, rule, text in found
            if (rel, rule, text) not in ALLOWED
            and not (rule == SWITCH and _switch_home_ok(rel, text))
        ]
    return out


def test_no_rule_spelled_outside_its_home() -> None:
    assert residue() == []


def test_a_core_switch_is_allowed_only_at_home() -> None:
    assert _switch_home_ok("src/clobkit/core/choice.py", "CLOBKIT_NO_EXTENSIONS")
    assert _switch_home_ok("ext/_core_c.pyx", "CLOBKIT_KECCAK")
    assert not _switch_home_ok("src/clobkit/cli/parser.py", "CLOBKIT_NO_EXTENSIONS")
    assert not _switch_home_ok("src/clobkit/core/choice.py", "CLOBKIT_KECCAK")


def test_the_files_are_there() -> None:
    rels = {p.relative_to(ROOT).as_posix() for p in _files()}
    assert "src/clobkit/client/_endpoints.py" in rels
    assert any(r.startswith("ext/") and r.endswith(".pyx") for r in rels)
    assert not rels & HOMES


def test_allowed_residues_still_exist() -> None:
    """An allow-list entry that no longer matches must be dropped."""
    functions = _package_functions()
    for rel, rule, text in ALLOWED:
        path = ROOT / rel
        source = path.read_text(encoding="utf-8") if path.exists() else ""
        scan = scan_python(source, functions) if path.suffix == ".py" else scan_cython(source)
        found = any((r, t) == (rule, text) for _, r, t in scan)
        assert found, (rel, rule, text)


# -- the guard can fail -----------------------------------------------------------------

BAD_PY = [
    ("def f(page_size: int = 100): pass", PAGE),
    ("x = c.list_orders(page=1, page_size=100)", PAGE),
    ('_positive_int(limit, "limit", 100)', PAGE),
    ("if len(page.orders) < 100: pass", PAGE),
    ('if code == "ORDER_FAILED_PLACE_BET": pass', ERRORS),
    ('raise Rejected(400, "x", "ORDER_SOMETHING_NEW")', ERRORS),
    ('if "order book not found" in lower: pass', ERRORS),
    ('raise Rejected(404, "Event not found")', ERRORS),
    ('prefix = "forbidden: missing scope "', ERRORS),
    ('raise Rejected(429, "rate limit exceeded", code="RATE_LIMITED")', ERRORS),
    ('raise Rejected(400, "x", code="MARKET_NOT_ACTIVE")', ERRORS),
    ('body = {"error": "internal error (injected fault)"}', ERRORS),
    ('message = {404: "not found"}[status]', ERRORS),
    ("UNIT = 1_000_000", UNIT),
    ("x = usdc * 1_000_000", UNIT),
    ("x = usdc * 10**6", UNIT),
    ('q = Decimal("0.000001")', UNIT),
    ("s = Decimal(units).scaleb(-6)", UNIT),
    ("ok = salt <= 10**12", SALT),
    ("span = 1_000_000_000_001", SALT),
    ('big = digits > "1000000000000"', SALT),
    ('m = f"salt: must lie in [0, 10**12] (got {x})"', SALT),
    ('key = os.environ.get("CLOBKIT_API_KEY")', ENV),
    ('key = os.environ.get("CLOBKIT_SOMETHING_NEW")', ENV),
    ('on = os.environ.get("CLOBKIT_KECCAK")', SWITCH),
    ('if order.status == "live": pass', STATUS),
    ('if nxt == "submitted": pass', STATUS),
    ('ok = o.status in ("pending", "signing")', STATUS),
    ('order.status = "won" if wins else "lost"', STATUS),
    ('r = CancelResult(order_id=i, status="cancelled")', STATUS),
    ("class O:\n    status: str = 'pending'", STATUS),
    ('nxt = {"pending": "signing", "signing": "submitted"}[s]', STATUS),
    ('def _finish(self, order, status, now): pass\nx._finish(o, "cancelled", 1)', STATUS),
    ('if order.outcome == "a": pass', OUTCOME),
    ('outcome = "a" if side == BID else "b"', OUTCOME),
    ('if winner not in ("a", "b"): pass', OUTCOME),
    ("Outcome = Literal['a', 'b']", OUTCOME),
    ('o = Order(outcome="b")', OUTCOME),
    ('def token(self, outcome): pass\nm.token("b")', OUTCOME),
]

GOOD_PY = [
    'def f():\n    """Salts on [0, 10**12]; 1 USDC = 1_000_000 units; page_size 100."""',
    "x = 100 - cents",
    "price = Decimal(limit) / 100",
    "ms = recv_ns // 1_000_000",
    "ms = time.time_ns() // 1_000_000",
    "run(batch=1_000_000)",
    "x = 10**76",
    'slots = ("matched", "order", "price")',
    'live = q_bool(p, "live")',
    'row = {"live": event.live}',
    'h = "connection (default: the CLOBKIT_* environment)"',
    "pool = httpx.Limits(max_connections=100)",
    'msg = "user not found"',
    '__all__ = ["ORDER_STATUSES"]',
    "limit = usdc * 100 // shares",
    'if k == "b": pass',
    'f = open(path, "a")',
    'fmt = {8: "b", 16: "h"}',
]


@pytest.mark.parametrize(("source", "rule"), BAD_PY)
def test_guard_flags_python(source: str, rule: str) -> None:
    assert rule in {r for _, r, _ in scan_python(source)}


@pytest.mark.parametrize("source", GOOD_PY)
def test_guard_passes_unrelated_python(source: str) -> None:
    assert scan_python(source) == []


BAD_PYX = [
    ("cdef uint64_t SALT_SPAN = 1_000_000_000_001ULL", SALT),
    ("cdef int64_t UNIT = 1000000", UNIT),
    ("q = Decimal('0.000001')", UNIT),
    ('raise E("ORDER_INVALID_SALT")', ERRORS),
    ("url = _os.environ.get('CLOBKIT_BASE_URL')", ENV),
    ("url = _os.environ.get('CLOBKIT_ELSE')", ENV),
    ("n = _os.environ.get('CLOBKIT_NO_EXTENSIONS')", SWITCH),
    ("def f(page_size=100): pass", PAGE),
    ('if status == "live": pass', STATUS),
]

GOOD_PYX = [
    'def f():\n    """Uniform on [0, 10**12]; 1 USDC = 1_000_000."""\n    pass',
    "    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;",
    "if c > 1_000_000_000_000_000ULL // 10_000: pass",
    "x = 1  # 10**12 and CLOBKIT_API_KEY in a comment",
]


@pytest.mark.parametrize(("source", "rule"), BAD_PYX)
def test_guard_flags_cython(source: str, rule: str) -> None:
    assert rule in {r for _, r, _ in scan_cython(source)}


@pytest.mark.parametrize("source", GOOD_PYX)
def test_guard_passes_unrelated_cython(source: str) -> None:
    assert scan_cython(source) == []


# -- a status is typed: a mistyped one fails mypy strict ---------------------------------


@pytest.mark.slow
def test_a_mistyped_sandbox_status_fails_mypy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox's order status is ``_spec.OrderStatus``, not ``str``."""
    from mypy import api  # a dev dependency, as for test_style

    monkeypatch.setenv("MYPYPATH", str(ROOT / "src"))  # this tree's clobkit, not an install
    good = "from clobkit.core.spec import LIVE\nfrom clobkit.sandbox.state import Order\n\n\n"
    bad = tmp_path / "bad.py"
    bad.write_text(good + "def f(o: Order) -> None:\n    o.status = 'livee'\n")
    ok = tmp_path / "ok.py"
    ok.write_text(good + "def f(o: Order) -> None:\n    o.status = LIVE\n")
    # one run over both files: mypy reads clobkit's import graph once (half the time)
    out, err, status = api.run(
        ["--strict", "--no-incremental", "--follow-imports=silent", str(bad), str(ok)]
    )
    assert status == 1, out + err
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert errors, out
    assert all(line.startswith(str(bad)) for line in errors), out
    assert "Literal['pending'" in out, out


def test_the_version_is_spelled_once() -> None:
    """The version's literal lives in ``__init__.py`` alone (``pyproject.toml`` reads it
    there: tests/test_packaging.py); everything else says ``clobkit.__version__``."""
    import clobkit

    version = clobkit.__version__
    where = [
        path.relative_to(ROOT).as_posix()
        for path in sorted(SRC.rglob("*.py"))
        if any(
            isinstance(node, ast.Constant) and node.value == version
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    ]
    where += [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "ext").glob("*.p*x*"))
        if f'"{version}"' in path.read_text(encoding="utf-8")
    ]
    assert where == ["src/clobkit/__init__.py"]
