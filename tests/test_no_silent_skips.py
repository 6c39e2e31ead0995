"""No test skips because of where the clone sits or which of the repository's files it has.

`python -m pytest` in any clone must run what it promises. A skip may depend on the machine
(an installed package or program, a kernel feature), never on a path above the repository (a
sibling checkout) or on a file of the repository existing: a file the tests need is shipped in
tests/data, and a missing one is a failure, not a skip. A skip for a missing package says which
and how to get it (the README's environment has the `test` extra only; CI runs the rest where
the other extras are).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
ABOVE = "skips on a path above the repository root"
MISSING = "skips when a file of the repository is missing"
NO_REASON = "skips for a missing package without a reason= saying how to install it"
EXISTENCE = {"exists", "is_file", "is_dir", "isfile", "isdir", "glob", "rglob", "iterdir"}


@dataclass(frozen=True)
class Problem:
    where: str  # file:line
    what: str


class _Paths:
    """How far each expression of one module climbs from its file (`__file__` is 0 levels up);
    None when it is not a path of the repository. Names are resolved through every assignment
    in the module, whatever the scope (over-approximating is what a lint wants)."""

    def __init__(self, tree: ast.Module, depth: int) -> None:
        self.root_level = depth  # levels from the file up to the repository root
        self.values: dict[str, list[ast.expr]] = {}
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
                targets, value = [node.target], node.value
            for target in targets:
                if isinstance(target, ast.Name):
                    self.values.setdefault(target.id, []).append(value)

    def up(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> int | None:
        """Levels above the file, for a path built from `__file__` or from a relative text."""
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return 0
            if node.id in seen:
                return None
            return _most(self.up(v, seen | {node.id}) for v in self.values.get(node.id, []))
        if isinstance(node, ast.Attribute):
            below = self.up(node.value, seen)
            if below is None or node.attr != "parent":
                return below
            return below + 1
        if isinstance(node, ast.Subscript):
            base = node.value
            if isinstance(base, ast.Attribute) and base.attr == "parents":
                below = self.up(base.value, seen)
                index = node.slice
                if below is not None and isinstance(index, ast.Constant):
                    return below + int(index.value) + 1
            return self.up(base, seen)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # base / "../x"
            below = self.up(node.left, seen)
            return None if below is None else below + self._climbs(node.right)
        if isinstance(node, ast.BoolOp):  # os.environ.get(...) or DEFAULT
            return _most(self.up(v, seen) for v in node.values)
        if isinstance(node, ast.Call):
            name = _name(node.func)
            args = [*node.args, *(k.value for k in node.keywords)]
            if name == "dirname" and args:
                below = self.up(args[0], seen)
                return None if below is None else below + 1
            if name in ("resolve", "absolute", "expanduser") and isinstance(
                node.func, ast.Attribute
            ):
                return self.up(node.func.value, seen)
            if name in ("Path", "PurePath", "join", "normpath", "abspath", "realpath"):
                levels = [self._text(a) if _is_text(a) else self.up(a, seen) for a in args]
                known = [level for level in levels if level is not None]
                return max(known) + sum(self._climbs(a) for a in args[1:]) if known else None
        return None

    def _text(self, node: ast.expr) -> int | None:
        """A text path: relative ones resolve from the repository root (pytest's cwd)."""
        text = node.value if isinstance(node, ast.Constant) else ""
        if not isinstance(text, str) or text.startswith("/"):
            return None  # a machine path (/proc, /usr/bin/chromium): not the repository
        return self.root_level + Path(text).parts.count("..")

    @staticmethod
    def _climbs(node: ast.expr) -> int:
        text = node.value if isinstance(node, ast.Constant) else ""
        return Path(text).parts.count("..") if isinstance(text, str) else 0


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _most(levels: Iterable[int | None]) -> int | None:
    known = [level for level in levels if level is not None]
    return max(known) if known else None


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is_pytest_attr(node: ast.expr, *names: str) -> bool:
    """`pytest.skip`, `pytest.mark.skipif`, ... (or the bare name after `from pytest import`)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    parts.reverse()
    return tuple(parts[-len(names) :]) == names


def _skip_conditions(tree: ast.Module) -> Iterator[ast.expr]:
    """The conditions under which anything in the module skips."""
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if _is_pytest_attr(node.func, "mark", "skipif"):
            yield from node.args[:1]
            yield from (k.value for k in node.keywords if k.arg == "condition")
        elif _is_pytest_attr(node.func, "skip"):
            at: ast.AST | None = node
            while at is not None and not isinstance(at, ast.FunctionDef | ast.AsyncFunctionDef):
                above = parents.get(at)
                if isinstance(above, ast.If | ast.While) and at in above.body + above.orelse:
                    yield above.test
                at = above


def problems_in(source: str, path: Path) -> list[Problem]:
    """Skips in one module that depend on a path above the repository or a repository file."""
    depth = len(path.resolve().relative_to(ROOT).parts)  # tests/test_x.py: the root is 2 up
    tree = ast.parse(source)
    paths = _Paths(tree, depth)
    found = []
    for condition in _skip_conditions(tree):
        where = f"{path.relative_to(ROOT)}:{condition.lineno}"
        nodes = list(ast.walk(condition))
        if any((paths.up(node) or 0) > depth for node in nodes):
            found.append(Problem(where, ABOVE))
        elif any(
            isinstance(node, ast.Call)
            and _name(node.func) in EXISTENCE
            and paths.up(_asked_about(node)) is not None
            for node in nodes
        ):
            found.append(Problem(where, MISSING))
    return found


def unexplained_skips(source: str, path: Path) -> list[Problem]:
    """`pytest.importorskip` calls with no reason: pytest's own says only what failed to import."""
    return [
        Problem(f"{path.relative_to(ROOT)}:{node.lineno}", NO_REASON)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and _is_pytest_attr(node.func, "importorskip")
        and not any(k.arg == "reason" for k in node.keywords)
    ]


def _asked_about(call: ast.Call) -> ast.expr:
    """`os.path.isfile(p)` asks about its argument, `p.is_file()` about its receiver."""
    func = call.func
    module = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
    if isinstance(func, ast.Attribute) and not (module and _name(func.value) == "path"):
        return func.value
    return call.args[0] if call.args else ast.Constant(None)


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts)


HERE = TESTS / "test_example.py"


@pytest.mark.parametrize(
    ("source", "what"),
    [
        # A sibling checkout's data, the way these tests once reached for it.
        (
            'FULL = Path(__file__).resolve().parents[2] / "shared"\n'
            "G1 = FULL / 'g1.json'\n"
            'needs = pytest.mark.skipif(not G1.exists(), reason="not shipped")\n',
            ABOVE,
        ),
        ('pytestmark = pytest.mark.skipif(not Path("../x").is_dir(), reason="r")\n', ABOVE),
        (
            "ROOT = Path(__file__).parent.parent\n"
            "@pytest.mark.skipif(not (ROOT / '..' / 'x').is_file(), reason='r')\n"
            "def test_x(): ...\n",
            ABOVE,
        ),
        # A shipped file, but a skip (not a failure) when it goes missing.
        (
            'DATA = Path(__file__).parent / "data"\n'
            "def test_x():\n"
            "    root = Path(os.environ.get('DIR') or DATA)\n"
            "    if not (root / 'models.json').is_file():\n"
            "        pytest.skip('missing')\n",
            MISSING,
        ),
        (
            "HERE = os.path.dirname(__file__)\n"
            "def test_x():\n"
            "    if not os.path.isfile(os.path.join(HERE, 'x.json')):\n"
            "        pytest.skip('missing')\n",
            MISSING,
        ),
        ("m = pytest.mark.skipif(not Path('examples/x').exists(), reason='r')\n", MISSING),
    ],
)
def test_the_checker_finds_a_skip_on_the_clone(source: str, what: str) -> None:
    assert [p.what for p in problems_in(source, HERE)] == [what]


@pytest.mark.parametrize(
    "source",
    [
        'ray = pytest.importorskip("ray")\n',
        'pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")\n',
        "m = pytest.mark.skipif(importlib.util.find_spec('x') is None, reason='r')\n",
        'CHROMIUM = Path(os.environ.get("C") or "/usr/bin/chromium")\n'
        "if not CHROMIUM.is_file():\n    pytest.skip('no chromium', allow_module_level=True)\n",
        '@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="r")\n'
        "def test_x(): ...\n",
        # Reading a repository file is fine; failing when it is missing is the point.
        'DATA = Path(__file__).parent / "data"\n'
        "def test_x():\n    assert (DATA / 'x.json').is_file()\n",
    ],
)
def test_the_checker_allows_skips_on_the_machine(source: str) -> None:
    assert problems_in(source, HERE) == []


@pytest.mark.slow  # a scan of the repository: runs with --all (CI), see CONTRIBUTING
def test_no_test_module_skips_on_the_clone() -> None:
    found = [
        f"{p.where}: {p.what}"
        for path in _modules()
        for p in problems_in(path.read_text(encoding="utf-8"), path)
    ]
    assert not found, (
        "ship what the test needs in tests/data and let a missing file fail:\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('ray = pytest.importorskip("ray")\n', [NO_REASON]),
        ('def test_x():\n    importorskip("mcp", minversion="1")\n', [NO_REASON]),
        ('ray = pytest.importorskip("ray", reason="the ray extra is not installed")\n', []),
    ],
)
def test_the_checker_finds_a_package_skip_without_a_reason(source: str, found: list[str]) -> None:
    assert [p.what for p in unexplained_skips(source, HERE)] == found


@pytest.mark.slow  # a scan of the repository: runs with --all (CI), see CONTRIBUTING
def test_every_package_skip_says_how_to_install_it() -> None:
    found = [
        f"{p.where}: {p.what}"
        for path in _modules()
        for p in unexplained_skips(path.read_text(encoding="utf-8"), path)
    ]
    assert not found, "\n".join(found)
