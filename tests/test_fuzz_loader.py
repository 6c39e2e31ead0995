"""Property-based fuzzing of the suite loader: bad input of any shape is a SpecError, never a crash.

(a) random text and bytes; (b) mutations of the real example suites (lines deleted, duplicated,
swapped, re-indented, characters inserted, scalars replaced by random YAML values, truncation).
Every input either loads into a Suite or raises SpecError whose problems all have a position.
Derandomized, so a run is reproducible and a failure stays found.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import fuzz_settings

from evalspec.api import check_suite, load_suite
from evalspec.errors import SpecError
from evalspec.records import Suite

SUITES = Path(__file__).resolve().parents[1] / "suites"
EXAMPLES = {p.name: p.read_text(encoding="utf-8") for p in sorted(SUITES.glob("*.yaml"))}

FUZZ = fuzz_settings()

_DIR = tempfile.mkdtemp(prefix="evalspec-fuzz-")
atexit.register(shutil.rmtree, _DIR, True)  # not left behind in /tmp or /dev/shm
# Examples taking tools from MCP servers read them from their lock file: one lock beside the
# fuzzed file holds every example's servers.
_LOCKED = {
    key: entry
    for lock in sorted(SUITES.glob("*.tools.lock.json"))
    for key, entry in json.loads(lock.read_text(encoding="utf-8"))["servers"].items()
}
for _name in ("fuzz", "regression"):
    (Path(_DIR) / f"{_name}.tools.lock.json").write_text(json.dumps({"servers": _LOCKED}))
for _lock in SUITES.glob("*.tools.lock.json"):  # and each by its name, for tool variants
    shutil.copy(_lock, Path(_DIR) / _lock.name)


def _load(data: bytes | str, name: str = "fuzz.yaml") -> Suite | None:
    """Write the input beside the example suites' names and load it; SpecError is fine."""
    path = Path(_DIR) / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_bytes(data)
    try:
        suite = load_suite(path)
    except SpecError as exc:
        assert exc.problems, "a SpecError must carry at least one problem"
        for p in exc.problems:
            assert p.line >= 1 and p.column >= 1 and p.message, p
        return None
    assert isinstance(suite, Suite)
    return suite


# ---------------------------------------------------------------- (a) random input

YAML_ALPHABET = st.sampled_from(list("abc:-[]{},'\"&*!|>#%@`?\t\n  \\0123.~<=")) | st.characters()


@pytest.mark.slow
@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_raise_only_spec_errors(data: bytes) -> None:
    _load(data)


@pytest.mark.slow
@FUZZ
@given(st.text(YAML_ALPHABET, max_size=300))
def test_random_yaml_like_text_raises_only_spec_errors(text: str) -> None:
    _load(text.encode("utf-8", errors="replace"))


# ---------------------------------------------------------------- (b) mutated example suites

yaml_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(
        [
            "[]",
            "{}",
            "~",
            "[1, [2, {a: b}]]",
            "{{ x }}",
            "{{ ''.__class__ }}",
            "{% for %}",
            "*nope",
            "&a x",
            "!!python/name:os.system",
            "!!binary aGVsbG8=",
            "!!set {a, b}",
            "!!omap [a: 1]",
            "!!float nan",
            "2024-13-45",
            "0x1F",
            "1e400",
            "'",
            '"\\u12"',
            "<<: *a",
            "? x",
            "- -",
            "|\n  block",
        ]
    ),
)


def _scalar_text(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


@st.composite
def mutated_suites(draw: st.DrawFn) -> str:
    text = EXAMPLES[draw(st.sampled_from(sorted(EXAMPLES)))]
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(
            st.sampled_from(
                ["delete", "duplicate", "swap", "indent", "dedent", "insert", "scalar", "truncate"]
            )
        )
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "indent":
            lines[i] = " " * draw(st.integers(1, 6)) + lines[i]
        elif op == "dedent":
            lines[i] = lines[i].lstrip()
        elif op == "insert":
            at = draw(st.integers(0, len(lines[i])))
            chars = draw(st.text(YAML_ALPHABET, min_size=1, max_size=4))
            lines[i] = lines[i][:at] + chars + lines[i][at:]
        elif op == "scalar" and ": " in lines[i]:
            key = lines[i].split(": ", 1)[0]
            lines[i] = f"{key}: {_scalar_text(draw(yaml_values))}"
        elif op == "truncate":
            lines = lines[:i]
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@FUZZ
@given(mutated_suites())
def test_mutated_example_suites_raise_only_spec_errors(text: str) -> None:
    _load(text.encode("utf-8", errors="replace"))


def _outcome(read: Callable[[Path], int], path: Path) -> tuple[str, object]:
    """What reading `path` says: its number of cases, or every problem, in order."""
    try:
        return "valid", read(path)
    except SpecError as exc:
        return "invalid", exc.problems


def _validate_agrees_with_loading(text: str) -> None:
    """`validate` keeps no case (it builds none of the records), yet says exactly what loading
    says: the same number of cases, or the same problems at the same places."""
    path = Path(_DIR) / "agree.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    assert _outcome(check_suite, path) == _outcome(lambda p: len(load_suite(p).cases), path)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_validate_says_what_loading_says_of_each_example_suite(name: str) -> None:
    _validate_agrees_with_loading(EXAMPLES[name])


@pytest.mark.slow
@FUZZ
@given(mutated_suites())
def test_validate_says_what_loading_says_of_mutated_example_suites(text: str) -> None:
    _validate_agrees_with_loading(text)


# ---------------------------------------------------------------- (c) templates of any type

# Every slot a `"{{ v }}"` template can fill; the schema sees the template text, the builder
# sees whatever `v` renders to (a whole-expression template keeps its value's type).
TEMPLATE_SUITE = """\
suite: s
vars: {{v: {value}}}
system: {system}
description: {description}
models:
  - {model}
  - {{name: other, model: {model_id}, base_url: {base_url}, params: {{temperature: 0}}}}
run: {{recordings: {recordings}}}
embeddings: {{model: {emb}}}
tools:
  - name: get_weather
    description: {tool_description}
    parameters: {{type: object, properties: {{city: {{type: string}}, days: {{type: integer}}}}}}
    cache: {{dir: {cache_dir}}}
    simulate: {{model: {sim_model}, cache: {sim_cache}}}
    responses:
      - when: {{city: {when}}}
        output: {output}
      - error: {error}
cases:
  - name: {case_name}
    user: {user}
    history: [{{role: assistant, content: {content}}}]
    tags: [{tag}]
    expect:
      tool_calls:
        - get_weather: {{city: {city}, days: {days}}}
      final_answer: {{contains: {contains}}}
"""
SLOTS = [
    "system", "description", "model", "model_id", "base_url", "recordings", "emb",
    "tool_description", "cache_dir", "sim_model", "sim_cache", "when", "output", "error",
    "case_name", "user", "content", "tag", "city", "days", "contains",
]  # fmt: skip
DEFAULTS = {slot: f"x{i}" for i, slot in enumerate(SLOTS)} | {"days": "3"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


@pytest.mark.slow
@FUZZ
@given(json_values, st.sets(st.sampled_from(SLOTS), min_size=1, max_size=4))
def test_templates_rendering_any_type_raise_only_spec_errors(value: object, slots: set) -> None:
    import json

    fields = {**DEFAULTS, **{slot: '"{{ v }}"' for slot in slots}}
    _load(TEMPLATE_SUITE.format(value=json.dumps(value), **fields))


# Found by the fuzzers above: each crashed the loader once.
REGRESSIONS = {
    "model rendered to a mapping": ("models: ['{{ m }}']", "models[0]: missing required key"),
    "cache dir rendered to a number": (
        "models: [gpt-4o-mini]\ntools: [{name: t, cache: {dir: '{{ n }}'}}]",
        None,
    ),
    "simulated model rendered to a mapping": (
        "models: [gpt-4o-mini]\ntools: [{name: t, simulate: {model: '{{ m }}'}}]",
        "tools[0].simulate.model: expected text, got a mapping",
    ),
    "recordings rendered to a mapping": (
        "models: [gpt-4o-mini]\nrun: {recordings: '{{ m }}'}",
        "run.recordings: expected text, got a mapping (after filling in the {{ }} templates)",
    ),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regressions_found_by_fuzzing(name: str) -> None:
    body, message = REGRESSIONS[name]
    text = (
        "suite: s\nvars: {m: {a: 1}, n: 5}\n"
        + body
        + "\ncases: [{name: c, user: hi, expect: {no_tool_calls: true}}]\n"
    )
    if message is None:
        assert _load(text) is not None  # a number where text belongs becomes text
        return
    with pytest.raises(SpecError) as info:
        load_suite(_write(text))
    assert any(message in str(p) for p in info.value.problems), info.value


def _write(text: str) -> Path:
    path = Path(_DIR) / "regression.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_unmutated_examples_load(name: str) -> None:
    assert _load(EXAMPLES[name]) is not None


def teardown_module() -> None:
    for p in Path(_DIR).glob("*"):
        p.unlink()
    os.rmdir(_DIR)
