"""The package reads as the pipeline: no import cycles, and no stage importing one above it.

Every import counts, including those inside functions and under TYPE_CHECKING: a lazy import
hides a cycle from Python's loader, not from a reader.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "evalspec"

# Lowest first. A module may import modules of its own layer or of layers below it; no
# exceptions. docs/layout.md lists the same order (a test below keeps the two the same).
LAYERS: list[tuple[str, ...]] = [
    ("evalspec._util",),
    ("evalspec._language",),
    ("evalspec._stats",),
    ("evalspec._critics", "evalspec._tool_schema"),
    ("evalspec._suite",),
    ("evalspec._plan", "evalspec._transcript"),
    ("evalspec._providers", "evalspec._tools"),
    ("evalspec._runner",),
    ("evalspec._scoring",),
    ("evalspec._compare",),
    ("evalspec._report",),
    ("evalspec._review", "evalspec._interop"),
    ("evalspec._api",),
    ("evalspec.api", "evalspec.records", "evalspec.errors", "evalspec.plugins"),
    ("evalspec._cli", "evalspec.__main__"),
]

CLI_MAY_IMPORT = (
    "evalspec.api",
    "evalspec.records",
    "evalspec.errors",
    "evalspec.plugins",
    "evalspec._cli",
    "evalspec._util",
    "evalspec._compare.console",
    "evalspec._report.console",
    "evalspec._report.estimates",
    "evalspec._report.progress",
)
"""The CLI parses and prints: it reaches the stages only through the public modules (evalspec.api,
records, errors, plugins), and otherwise only the report renderers and the shared helpers."""
ROOT = PACKAGE.parent


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a file, parsed once for all the scans below (together they read each file
    of the package and of tests/ three or four times); dropped when this module's tests end."""
    return tuple(ast.walk(_tree(path)))


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module", autouse=True)
def _parsed_once() -> Iterator[None]:
    yield
    for cached in (_nodes, _tree, _graph):
        cached.cache_clear()


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """evalspec modules that `name` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in modules:
                    found.add(target)
                elif base in modules:
                    found.add(base)
    found.discard(name)
    return found


@functools.cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module == prefix or module.startswith(prefix + ".")
            if inside and (best is None or len(prefix) > best[1]):
                best = (rank, len(prefix))
    return None if best is None else best[0]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_the_checker_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in _graph() if m != "evalspec" and _layer(m) is None)
    assert not unplaced, f"add these modules to LAYERS: {unplaced}"


def _upward(module: str, targets: set[str]) -> list[str]:
    """The modules of `targets` in a layer above `module`'s."""
    rank = _layer(module)
    if rank is None:
        return []
    return sorted(t for t in targets if (_layer(t) or 0) > rank)


def test_the_checker_finds_an_import_up_the_layers():
    # The arrow the comparison's console view once drew: a report module importing review.
    assert _upward("evalspec._report.comparison", {"evalspec._review.diff"}) == [
        "evalspec._review.diff"
    ]
    assert _upward("evalspec._compare.records", {"evalspec._report.console"}) != []
    assert _upward("evalspec._report.html", {"evalspec._compare.columns"}) == []


@pytest.mark.parametrize("module", sorted(_modules()))  # collecting parses nothing
def test_no_module_imports_from_a_layer_above_it(module):
    upward = _upward(module, _graph()[module])
    assert not upward, f"{module} (layer {_layer(module)}) imports from a layer above it: {upward}"


COMPARE_ORDER: list[tuple[str, ...]] = [
    ("words",),
    ("recordings_check", "edits", "security"),
    ("records",),
    ("classify",),
    ("columns",),
    ("noise",),
    ("suite_changes", "attribution", "variants"),
    ("evidence", "scoring"),
    ("diff", "runs"),
    ("text", "console", "markdown"),
]
"""evalspec._compare within itself, lowest first: records, then the computation in its steps,
then the views (the order docs/layout.md and the package's docstring give)."""


def test_the_comparison_package_keeps_its_own_order():
    rank = {f"evalspec._compare.{m}": i for i, names in enumerate(COMPARE_ORDER) for m in names}
    inside = {m: t for m, t in _graph().items() if m.startswith("evalspec._compare.")}
    assert set(inside) == set(rank), "add these modules to COMPARE_ORDER"
    wrong = {m: sorted(t for t in ts if rank.get(t, -1) > rank[m]) for m, ts in inside.items()}
    assert not {m: t for m, t in wrong.items() if t}, wrong


def test_the_layout_page_lists_the_layers_in_their_order():
    """docs/layout.md is where a contributor learns the order: it must be this one."""
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    section = page.split("## Layers", 1)[1].split("\n## ", 1)[0]
    listed = [
        tuple(re.findall(r"`([\w.]+)`", line))
        for line in section.splitlines()
        if re.match(r"\d+\. ", line)
    ]
    assert listed == LAYERS


def _inside(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _cli_may_import(module: str) -> bool:
    return module == "evalspec" or _inside(module, CLI_MAY_IMPORT)


def test_the_cli_reaches_the_stages_only_through_the_api():
    graph = _graph()
    wrong = {
        module: sorted(t for t in targets if not _cli_may_import(t))
        for module, targets in graph.items()
        if _inside(module, ("evalspec._cli",))
    }
    wrong = {m: t for m, t in wrong.items() if t}
    assert not wrong, f"CLI modules importing stages directly (use evalspec.api): {wrong}"


def _cli_imports(path: Path) -> list[str]:
    """What a file takes from evalspec._cli: `module.name` per imported name."""
    found = []
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("evalspec._cli")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evalspec._cli"):
            found += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "evalspec":
            found += [f"evalspec.{a.name}" for a in node.names if a.name == "_cli"]
    return found


@pytest.mark.slow  # a scan of the repository: runs with --all (CI), see CONTRIBUTING
def test_tests_examples_and_benchmarks_take_only_app_and_main_from_the_cli():
    # FLAGS: the one table of parameter to option, which a test holds every library error to.
    allowed = {"evalspec._cli.app", "evalspec._cli.main", "evalspec._cli.flags.FLAGS"}
    wrong = {}
    for folder in ("tests", "examples", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            taken = [name for name in _cli_imports(path) if name not in allowed]
            if taken:
                wrong[path.relative_to(ROOT).as_posix()] = taken
    assert not wrong, f"use evalspec.api instead of CLI internals: {wrong}"


def test_the_import_checkers_see_what_they_must(tmp_path):
    sample = tmp_path / "t.py"
    sample.write_text(
        "from evalspec._cli import app, main\nfrom evalspec._cli.run import execute\n"
        "def f():\n    import evalspec._cli.review\n",
        encoding="utf-8",
    )
    assert _cli_imports(sample) == [
        "evalspec._cli.app",
        "evalspec._cli.main",
        "evalspec._cli.run.execute",
        "evalspec._cli.review",
    ]
    assert _cli_may_import("evalspec._report.console") and _cli_may_import("evalspec")
    assert not _cli_may_import("evalspec._reporting")
    assert not _cli_may_import("evalspec._runner.execute")


# ----------------------------------------------------------------------------------- the tests

TESTS = PACKAGE.parent / "tests"


def _test_import_problems(source: str, name: str) -> list[str]:
    """What a module of tests/ imports that it should not: a test module or conftest (shared
    helpers live in support.py, fixtures in conftest.py, which pytest loads by itself), or a
    helper through the `tests` package (a second copy of a module already loaded by its name);
    and, outside conftest.py, a `write_suite` other than the fixture."""
    return _import_problems(ast.walk(ast.parse(source)), name)


def _import_problems(nodes: Iterable[ast.AST], name: str) -> list[str]:
    """_test_import_problems over nodes already parsed."""
    found: list[tuple[int, str]] = []
    for node in nodes:
        imported: list[str] = []
        bound: list[str] = []
        if isinstance(node, ast.Import):
            imported = [a.name for a in node.names]
            bound = [a.asname or a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            imported = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            bound = [a.asname or a.name for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            imported = [str(node.args[0].value)]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and name != "conftest.py":
            bound = [node.name]
        problems = [
            f"imports {module}"
            for module in imported
            if any(p.startswith("test_") or p == "conftest" for p in module.split("."))
        ]
        problems += [f"imports {m}, not {m.split('.')[1]}" for m in imported if m[:6] == "tests."]
        if "write_suite" in bound:
            problems.append("a write_suite other than the fixture")
        if problems:
            found.append((node.lineno, problems[0]))
    return [f"{name}:{line}: {problem}" for line, problem in sorted(found)]


def test_the_checker_finds_imports_of_test_modules():
    bad = [
        "from test_run_e2e import cli",
        "import test_model_rate_limits as limits",
        "from tests.conftest import transcript",
        "from tests import test_html_browser",
        "from tests.fake_openai import FakeOpenAI",
        "importlib.import_module('test_provider')",
        "def write_suite(directory, url): ...",
        "from support import write_fault_suite as write_suite",
    ]
    found = _test_import_problems("\n".join(bad), "test_x.py")
    assert [int(f.split(":")[1]) for f in found] == list(range(1, len(bad) + 1)), found
    good = (
        "from support import cli, transcript\nfrom fake_openai import FakeOpenAI\nimport pytest\n"
    )
    assert _test_import_problems(good, "test_x.py") == []
    assert _test_import_problems("def write_suite(tmp_path): ...\n", "conftest.py") == []


@pytest.mark.slow  # a scan of the repository: runs with --all (CI), see CONTRIBUTING
def test_test_modules_take_helpers_from_support_and_fixtures_from_conftest():
    found = [
        problem
        for path in sorted(TESTS.rglob("*.py"))
        if "data" not in path.relative_to(TESTS).parts
        for problem in _import_problems(_nodes(path), path.name)
    ]
    assert not found, "move shared helpers to tests/support.py:\n" + "\n".join(found)


ONE_MEANING = ("Count", "DeclaredEndpoint", "Endpoint", "Finding", "Kind", "PluginKind")
ONE_MEANING += ("ResultFormat", "StaleReason", "language_schema", "suite_schema")
"""Names that once meant two or three things in different modules; each now means one."""


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in _tree(path).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_each_of_these_names_is_defined_in_one_module():
    where: dict[str, list[str]] = {name: [] for name in ONE_MEANING}
    for module, path in _modules().items():
        for name in _top_level_names(path) & set(ONE_MEANING):
            where[name].append(module)
    assert {name: found for name, found in where.items() if len(found) != 1} == {}


TEST_ONLY = {
    "stats": "EmbeddingStore's cache counters, which the embedding tests observe",
}
"""Library names only tests reach, and why each is still there."""


def _referenced(paths: list[Path]) -> set[str]:
    """Every name a file uses: read, called, imported or named in a string."""
    found: set[str] = set()
    for path in paths:
        for node in _nodes(path):
            if isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif isinstance(node, ast.alias):
                found.add(node.name.rsplit(".", 1)[-1])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    return found


def _defined(path: Path) -> list[str]:
    """Functions, classes and methods defined at the top of a module or of its classes; not
    those a decorator registers (a command, a check, a tool environment), reached by it."""
    tree = _tree(path)
    nodes = [*tree.body]
    nodes += [n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body]
    kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    return [
        n.name
        for n in nodes
        if isinstance(n, kinds) and not n.name.startswith("__") and not _registered(n)
    ]


def _registered(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    return any(isinstance(d, ast.Call) for d in node.decorator_list)


@pytest.mark.slow  # a scan of the repository: runs with --all (CI), see CONTRIBUTING
def test_no_library_code_is_reached_only_from_tests():
    library = sorted(PACKAGE.rglob("*.py"))
    outside = [p for d in ("tests", "benchmarks", "examples") for p in (ROOT / d).rglob("*.py")]
    used, tried = _referenced(library), _referenced(outside)
    only_tests = ({name for path in library for name in _defined(path)} - used) & tried
    assert only_tests <= set(TEST_ONLY), sorted(only_tests - set(TEST_ONLY))
