"""How fast `evalspec validate` starts and how it scales to a big suite.

Run: ``.venv/bin/python benchmarks/bench_validate.py [--repeat 7] [--cases 5000]
[--big 50000] [--against CHECKOUT]``

Measured in one run:
  (a) whole-process `evalspec validate suites/*.yaml` against `python -c "import yaml,
      jsonschema"` (the floor any YAML + JSON Schema validator pays), alternated, median ratio;
  (b) a generated suite of 5,000 cases (10 tools, expected calls, critics, matrix cases):
      whole-process `evalspec validate` wall time and peak RSS, and in-process `load_suite`;
  (c) which heavy libraries `validate` and `plan` import (none should be);
  (d) `evalspec validate` of a `--big`-case suite (bench_scale.py's cases) split over included
      files of 10,000 cases, against the floor of its parser: libyaml reading the same files'
      events and nothing more (issue 31: <= 2x, and < 150 MB peak RSS), and against the
      positioned tree of the same events (POSITIONED_TREE: dicts, lists, marks; CPU, <= 2x).
`--against CHECKOUT` runs (a) and (d) with this tree and another checkout (say, main)
alternately, each as `python -m evalspec` with its own tree on PYTHONPATH: both trees' ratios
to the floors measured in the same run, and this/other.
For scale: promptfoo's `validate config` takes 2.6 s and 248 MiB on a 500-test config on the
same 2-core machine.
"""

from __future__ import annotations

import argparse
import glob
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import (
    HEAVY,
    PYTHON,
    REPO,
    Child,
    byte_compile,
    evalspec_cmd,
    goal,
    goal_flag,
    interleave,
    machine,
    modules_after,
    paired_ratio,
    run_child,
    summary,
)
from bench_scale import _interleave_children, _print_children, split_suite
from bench_scale import make_suite as scale_suite

TOOLS = [
    ("send_dm_to_user", {"user_name": "string", "message": "string"}),
    ("send_message_to_channel", {"channel_name": "string", "message": "string"}),
    ("get_messages_in_channel", {"channel_name": "string", "limit": "integer"}),
    ("get_current_weather", {"city": "string", "unit": "string"}),
    ("get_forecast", {"city": "string", "date": "string"}),
    ("add", {"a": "number", "b": "number"}),
    ("multiply", {"a": "number", "b": "number"}),
    ("book_table", {"restaurant": "string", "people": "integer", "time": "string"}),
    ("search_flights", {"origin": "string", "destination": "string", "date": "string"}),
    ("convert_currency", {"amount": "number", "from_currency": "string", "to_currency": "string"}),
]
NAMES = ["johndoe", "janedoe", "wei", "aisha", "carlos", "priya", "tom", "yuki", "olga", "ahmed"]
CITIES = ["Paris", "Tokyo", "New York", "Nairobi", "Lima", "Berlin", "Sydney", "Toronto"]
WORDS = [
    "report",
    "launch",
    "migration",
    "lunch",
    "escalation",
    "review",
    "hiring",
    "offsite",
    "audit",
    "budget",
]


def _q(text: str) -> str:
    """A double-quoted YAML scalar."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value(kind: str, rng: random.Random, i: int) -> str:
    if kind == "integer":
        return str(rng.randint(1, 100))
    if kind == "number":
        return str(round(rng.uniform(-1000, 1000), 2))
    return _q(f"{rng.choice(WORDS)} {rng.choice(CITIES)} {rng.choice(NAMES)} {i}")


def _tools_yaml() -> list[str]:
    out = ["tools:"]
    for name, params in TOOLS:
        out.append(f"  - name: {name}")
        out.append(f"    description: {_q('Benchmark tool ' + name.replace('_', ' ') + '.')}")
        out.append("    parameters:")
        out.append("      type: object")
        out.append("      properties:")
        for p, kind in params.items():
            out.append(f"        {p}: {{type: {kind}, description: {_q('The ' + p + '.')}}}")
        out.append(f"      required: [{', '.join(params)}]")
        out.append("    responses:")
        first = next(iter(params))
        out.append(f"      - when: {{{first}: {_q('x')}}}")
        out.append("        output: {ok: true}")
        out.append("      - output: {ok: false, error: not_found}")
    return out


def make_suite(cases: int, seed: int = 7) -> str:
    """A realistic suite YAML with `cases` cases once expanded; one in ten comes from a
    10-row matrix, the rest are plain cases with one or two expected calls."""
    rng = random.Random(seed)
    lines = [
        "suite: bench",
        "system: You are a helpful assistant with tools.",
        "models: [{name: m, model: fake-model, base_url: 'http://127.0.0.1:9/v1'}]",
        "run: {mode: single_turn, concurrency: 32}",
        "rubric: {fail_threshold: 0.85, warn_threshold: 0.95, fail_on_tool_selection: true}",
        "critics:",
        "  user_name: binary",
        "  channel_name: binary",
        "  message: {similarity: 0.75, weight: 0.5}",
        "  a: binary",
        "  b: binary",
        "vars: {greeting: Hello}",
        *_tools_yaml(),
        "cases:",
    ]
    matrix_rows = 10
    matrix_cases = cases // 10 // matrix_rows
    plain = cases - matrix_cases * matrix_rows
    for i in range(plain):
        name, params = TOOLS[i % len(TOOLS)]
        args = ", ".join(f"{p}: {_value(k, rng, i)}" for p, k in params.items())
        lines.append(f"  - name: case {i}")
        lines.append(f"    user: {_q(f'Please use {name} for request number {i}.')}")
        if i % 7 == 0:
            lines.append("    tags: [smoke]")
        lines.append("    expect:")
        lines.append("      tool_calls:")
        lines.append(f"        - {name}: {{{args}}}")
        if i % 5 == 0:
            other, oparams = TOOLS[(i + 3) % len(TOOLS)]
            oargs = ", ".join(f"{p}: {_value(k, rng, i)}" for p, k in oparams.items())
            lines.append(f"        - {other}: {{{oargs}}}")
        if i % 4 == 0:
            first = next(iter(params))
            lines.append(
                f"    critics: {{{first}: {{similarity: {{metric: tfidf, threshold: 0.6}}}}}}"
            )
    for j in range(matrix_cases):
        lines.append(f"  - name: 'matrix {j} to {{{{ channel }}}}'")
        lines.append("    matrix:")
        for r in range(matrix_rows):
            lines.append(f"      - {{channel: c{j}_{r}, text: {_q(f'{rng.choice(WORDS)} {r}')}}}")
        lines.append("    user: \"{{ greeting }}! Post '{{ text }}' in #{{ channel }}\"")
        lines.append("    expect:")
        lines.append("      tool_calls:")
        lines.append(
            "        - send_message_to_channel: "
            '{channel_name: "{{ channel }}", message: "{{ text }}"}'
        )
    return "\n".join(lines) + "\n"


EVENTS_FLOOR = """
import sys, yaml, yaml.cyaml
for name in sys.argv[1:]:
    with open(name, encoding="utf-8") as fh:
        parser = yaml.cyaml.CParser(fh.read())
    while parser.get_event():
        pass
    parser.dispose()
"""
"""The parser's floor: libyaml reads every event of the files into Python, nothing is built."""

POSITIONED_TREE = str(Path(__file__).with_name("_positioned_tree.py"))
"""The positioned tree: the least a Python front end on libyaml's events does, plain dicts and
lists, each key's and value's mark kept (what an error's line:col needs); scalars stay text, no
check. Round 3 measured it at 1.8x the events alone, so `validate` is held to 2x of it:
validate's own work no more than the tree costs."""

Runner = tuple[list[str], dict[str, str]]
"""How a tree runs `evalspec`: the command's first words and the environment it adds."""


def runners(against: Path | None) -> dict[str, Runner]:
    """This tree alone through its console script, or both trees as `python -m evalspec`."""
    if against is None:
        return {"this": (evalspec_cmd(), {})}
    trees = {"this": REPO, "other": against.resolve()}
    for tree in trees.values():
        subprocess.run([PYTHON, "-m", "compileall", "-q", str(tree / "evalspec")], check=True)
    return {
        name: ([PYTHON, "-m", "evalspec"], {"PYTHONPATH": str(tree)})
        for name, tree in trees.items()
    }


def checked(child: Child, what: str) -> Child:
    if child.returncode != 0:
        sys.exit(
            f"{what} failed ({child.returncode}): {child.stdout[-1000:]}{child.stderr[-2000:]}"
        )
    return child


def versus_floor(
    label: str,
    floors: dict[str, list[str]],
    args: list[str],
    trees: dict[str, Runner],
    repeat: int,
    cwd: Path,
) -> dict[str, list[Child]]:
    """`evalspec ARGS` by each tree and each baseline command (the first is "floor"),
    alternated; each tree's ratios to each baseline."""
    subjects: dict[str, Callable[[], Child]] = {
        name: lambda cmd=cmd, name=name: checked(run_child(cmd, cwd=cwd), f"the {name}")
        for name, cmd in floors.items()
    }
    for tree, (cmd, env) in trees.items():
        subjects[tree] = lambda cmd=cmd, env=env, tree=tree: checked(
            run_child([*cmd, *args], env=env, cwd=cwd), f"{tree}: evalspec {args[0]}"
        )
    children = _interleave_children(subjects, repeat)
    for name, measured in children.items():
        _print_children(f"{label} {name:>5}", measured)
    for floor in floors:
        for tree in trees:
            wall, cpu = (
                paired_ratio(
                    [getattr(c, f) for c in children[tree]],
                    [getattr(c, f) for c in children[floor]],
                )
                for f in ("wall", "cpu_s")
            )
            print(f"{label} {tree:>5}: ratio to the {floor}, wall {wall:.2f}x, CPU {cpu:.2f}x")
    if "other" in trees:
        this, other = ([c.wall for c in children[t]] for t in ("this", "other"))
        print(f"{label} RATIO this/other wall: {paired_ratio(this, other):.3f}")
    return children


def big_over_includes(cases: int, trees: dict[str, Runner], repeat: int, tmp: Path) -> None:
    """(d) a large suite over included files of 10,000 cases against libyaml's events."""
    folder = tmp / "big-over-includes"
    folder.mkdir()
    suite = split_suite(scale_suite(cases), folder, -(-cases // 10_000))
    files = sorted(str(p) for p in folder.glob("*.yaml"))
    size = sum(Path(f).stat().st_size for f in files) / 1024 / 1024
    print(f"(d) {cases} cases over {len(files) - 1} included files ({size:.1f} MiB)")
    print(f"    floor: libyaml's events of the same files ({PYTHON} -c ...)")
    print("    positioned tree: the same events built into dicts and lists with their marks")
    floors = {
        "floor": [PYTHON, "-c", EVENTS_FLOOR, *files],
        "tree": [PYTHON, POSITIONED_TREE, *files],
    }
    children = versus_floor(f"{cases:>6}", floors, ["validate", str(suite)], trees, repeat, tmp)
    this = children["this"]
    ratio = paired_ratio([c.wall for c in this], [c.wall for c in children["floor"]])
    goal(f"validate_{cases}_over_includes_vs_events", ratio, "<=", 2.0, "{:.2f}")
    goal(
        f"validate_{cases}_over_includes_peak_rss_mb",
        max(c.maxrss_mb for c in this),
        "<",
        150.0,
        "{:.0f}",
    )
    cpu = paired_ratio([c.cpu_s for c in this], [c.cpu_s for c in children["tree"]])
    goal(f"validate_{cases}_over_includes_vs_positioned_tree", cpu, "<=", 2.0, "{:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="alternated runs of each command")
    parser.add_argument("--cases", type=int, default=5000, help="cases in the generated suite")
    parser.add_argument("--big", type=int, default=50_000, help="cases of (d); 0 skips it")
    parser.add_argument("--against", type=Path, help="another checkout: both trees, alternated")
    args = parser.parse_args()

    byte_compile()
    print(f"machine: {machine()}")
    if args.against:
        compare_trees(args.against, args.repeat, args.big)
        return
    cli = evalspec_cmd()
    suites = sorted(glob.glob(str(REPO / "suites" / "*.yaml")))
    baseline_cmd = [PYTHON, "-c", "import yaml, jsonschema"]
    validate_cmd = [*cli, "validate", *suites]
    print(f"baseline: {' '.join(baseline_cmd)}")
    print(f"subject:  evalspec validate suites/*.yaml ({len(suites)} files)")

    def timed(cmd: list[str]) -> float:
        child = run_child(cmd)
        if child.returncode != 0:
            sys.exit(f"{cmd} failed ({child.returncode}): {child.stderr[-2000:]}")
        return child.wall

    # (a) start-up
    times = interleave(
        {"baseline": lambda: timed(baseline_cmd), "validate": lambda: timed(validate_cmd)},
        args.repeat,
    )
    print(f"(a) import yaml, jsonschema: {summary(times['baseline'])}")
    print(f"    evalspec validate suites/*.yaml: {summary(times['validate'])}")
    ratios = [v / b for b, v in zip(times["baseline"], times["validate"], strict=True)]
    print(f"    per-pair ratios: {', '.join(f'{r:.2f}' for r in ratios)}")
    ratio = paired_ratio(times["validate"], times["baseline"])
    goal("validate_startup_ratio", ratio, "<=", 3.0, "{:.2f}")

    # (b) a 5,000-case suite
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        big = Path(tmp) / "big.yaml"
        big.write_text(make_suite(args.cases), encoding="utf-8")
        size_kib = big.stat().st_size / 1024
        big_cmd = [*cli, "validate", str(big)]
        first = run_child(big_cmd)
        if first.returncode != 0:
            sys.exit(f"generated suite is invalid: {first.stdout}{first.stderr[-3000:]}")
        print(f"(b) generated suite: {size_kib:.0f} KiB, {first.stdout.strip()}")
        walls, rss = [], []
        for _ in range(max(3, args.repeat // 2)):
            child = run_child(big_cmd)
            walls.append(child.wall)
            rss.append(child.maxrss_mb)
        print(f"    evalspec validate big.yaml: {summary(walls)}; peak RSS {max(rss):.0f} MiB")
        goal("validate_5000_cases_seconds", statistics.median(walls), "<", 2.0, "{:.2f}")
        print(
            f"    peak RSS of that validate: {max(rss):.0f} MiB (promptfoo: 248 MiB for 500 tests)"
        )

        sys.path.insert(0, str(REPO))
        from evalspec._suite.validate import load_suite

        loads = []
        for _ in range(3):
            start = time.perf_counter()
            suite = load_suite(big)
            loads.append(time.perf_counter() - start)
        print(f"    in-process load_suite ({len(suite.cases)} cases): {summary(loads)}")

        # (c) heavy imports
        for label, argv in (
            ("validate", ["validate", *suites]),
            ("plan", ["plan", str(REPO / "suites" / "slack.yaml"), "--json"]),
            ("plan_big", ["plan", str(big), "--json"]),
        ):
            loaded = sorted(modules_after(argv) & set(HEAVY))
            goal_flag(
                f"heavy_imports_{label}",
                ", ".join(loaded) or "none",
                not loaded,
                f"none of {', '.join(HEAVY)}",
            )

        if args.big:
            big_over_includes(args.big, runners(None), max(3, args.repeat // 2), Path(tmp))


def compare_trees(other: Path, repeat: int, big: int) -> None:
    """(a) and (d) by this tree and `other`, alternated, each against the same run's floors."""
    trees = runners(other)
    print(f"this: {REPO}; other: {other.resolve()} (both: python -m evalspec)")
    suites = sorted(glob.glob(str(REPO / "suites" / "*.yaml")))
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        print("(a) floor: python -c 'import yaml, jsonschema'")
        small = versus_floor(
            "suites/*.yaml",
            {"floor": [PYTHON, "-c", "import yaml, jsonschema"]},
            ["validate", *suites],
            trees,
            repeat,
            Path(tmp),
        )
        walls = [c.wall for c in small["this"]]
        ratio = paired_ratio(walls, [c.wall for c in small["floor"]])
        goal("validate_startup_ratio", ratio, "<=", 3.0, "{:.2f}")
        if big:
            big_over_includes(big, trees, max(3, repeat // 2), Path(tmp))


if __name__ == "__main__":
    main()
