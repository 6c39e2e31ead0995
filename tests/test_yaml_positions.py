"""Every position the loader keeps for an error message is where PyYAML's own composer puts
that node: the tree keeps the parser's marks and makes positions only when one is read.

A unit test of the loader's tree (evalspec._suite.load), which it imports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import examples

from evalspec._suite.load import LDict, LList, Pos, load_yaml
from evalspec.api import check_suite
from evalspec.errors import SpecError

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "suites").glob("*.yaml"))

MERGED = """\
defaults: &defaults
  trials: 2
  tags: [smoke]
cases:
  - <<: *defaults
    name: first
    user: "Hi"
  - name: second
    <<: *defaults
    tags: [own]
"""


def _pos(file: str, mark: Any) -> Pos:
    return Pos(file, mark.line + 1, mark.column + 1)


def _is_alias(text: str, pos: Pos) -> bool:
    """An alias (`*name`) stands at this position of the text."""
    return text.splitlines()[pos.line - 1][pos.column - 1] == "*"


def _compare(file: str, node: yaml.Node, value: Any, text: str, seen: set[int]) -> int:
    """Assert every position under `value` against PyYAML's node; how many were compared.

    PyYAML composes an alias as the node it names (with that node's marks); evalspec keeps the
    alias's own place, where the value is used: a node met a second time is checked to sit at
    an alias, and not walked again."""
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        assert isinstance(value, LDict)
        assert value.pos == _pos(file, node.start_mark)
        compared = 1
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # merged keys keep the positions of the mapping they come from
            key = key_node.value
            assert value.key_pos[key] == _pos(file, key_node.start_mark), key
            if id(value_node) in seen:
                assert _is_alias(text, value.value_pos[key]), key
                compared += 2
                continue
            assert value.value_pos[key] == _pos(file, value_node.start_mark), key
            compared += 2 + _compare(file, value_node, value[key], text, seen)
        return compared
    if isinstance(node, yaml.SequenceNode):
        assert isinstance(value, LList)
        assert value.pos == _pos(file, node.start_mark)
        compared = 1
        for item, pos, v in zip(node.value, value.item_pos, value, strict=True):
            if id(item) in seen:
                assert _is_alias(text, pos)
                compared += 1
                continue
            assert pos == _pos(file, item.start_mark)
            compared += 1 + _compare(file, item, v, text, seen)
        return compared
    return 0


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_position_of_an_example_suite_is_where_the_yaml_puts_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    assert _compare("suite.yaml", node, load_yaml(path, text, "suite.yaml"), text, set()) > 50


def test_merged_keys_keep_the_positions_of_the_mapping_they_come_from(tmp_path: Path) -> None:
    path = tmp_path / "merged.yaml"
    path.write_text(MERGED, encoding="utf-8")
    doc = load_yaml(path, display="merged.yaml")
    first, second = doc["cases"]
    assert first.key_pos["trials"] == Pos("merged.yaml", 2, 3)
    assert first.key_pos["name"] == Pos("merged.yaml", 6, 5)
    assert second.value_pos["tags"] == Pos("merged.yaml", 10, 11)  # its own, not the merged one
    assert second.value_pos["trials"] == Pos("merged.yaml", 2, 11)


def test_a_mistake_in_an_included_case_file_names_its_line_and_column(tmp_path: Path) -> None:
    head = (REPO / "suites" / "weather.yaml").read_text(encoding="utf-8").split("cases:")[0]
    (tmp_path / "suite.yaml").write_text(head + "cases:\n  - include: more.yaml\n")
    rows = "".join(
        f"- {{name: c{i}, user: 'Weather {i}?', expect: {{tool_calls: [{{get_current_weather: "
        f"{{city: Paris}}}}]}}}}\n"
        for i in range(300)
    )
    call = "{get_current_weather: {town: Rome}}"
    wrong = f"- {{name: late, user: 'Weather?', expect: {{tool_calls: [{call}]}}}}\n"
    (tmp_path / "more.yaml").write_text(rows + wrong + rows.replace("name: c", "name: d"))
    with pytest.raises(SpecError) as caught:
        check_suite(tmp_path / "suite.yaml")
    problems = caught.value.problems
    where = [(Path(p.file).name, p.line, p.column) for p in problems]
    assert where == [("more.yaml", 301, wrong.index("town") + 1)]
    assert "town" in problems[0].message


_SCALARS = st.one_of(
    st.text(alphabet="abz XY09-_:{}", max_size=12),
    st.integers(-1000, 1000),
    st.booleans(),
    st.none(),
)
_KEYS = st.text(alphabet="abcxyz_", min_size=1, max_size=6)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=30,
)


@st.composite
def _documents(draw: st.DrawFn) -> tuple[str, Any]:
    """A mapping written out by PyYAML in block or flow style (or both, nested), some of its
    containers used twice (written as &anchor and *alias)."""
    doc = draw(st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=5))
    shared = [v for v in doc.values() if isinstance(v, list | dict) and v]
    if shared and draw(st.booleans()):
        doc["again"] = shared[0]  # the same object twice: an anchor and an alias
    style = draw(st.sampled_from([None, True, False]))
    return yaml.safe_dump(doc, default_flow_style=style, sort_keys=False), doc


@settings(
    max_examples=examples(200),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_documents())
def test_any_document_loads_as_pyyaml_reads_it_with_every_position(
    written: tuple[str, Any],
) -> None:
    """Containers inside containers are built inline and the others by the general path:
    both give PyYAML's values and PyYAML's places, whatever the nesting and the style."""
    text, _ = written
    loaded = load_yaml(Path("random.yaml"), text, "random.yaml")
    assert loaded == yaml.safe_load(text)
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    _compare("random.yaml", node, loaded, text, set())


WORDS = [
    *(
        w
        for base in ("yes", "no", "true", "false", "on", "off", "null")
        for w in (base, base.title(), base.upper())
    ),
    *("nO", "yES", "oN", "n", "o", "y", "nothing", "Onion", "noted", "yes_", "off0", "NULLs", "~"),
]
"""The booleans and nulls of YAML 1.1, and words that look like them but are text."""


def _same_as_pyyaml(words: list[str]) -> None:
    """Each word as a value, as a list item, and (when PyYAML reads it as text) as a key."""
    values = "".join(f"k{i}: {w}\n" for i, w in enumerate(words))
    values += "items: [" + ", ".join(words) + "]\n"
    assert load_yaml(Path("words.yaml"), values, "words.yaml") == yaml.safe_load(values)
    texts = {w for w in words if isinstance(yaml.safe_load(w), str)}
    keys = "".join(f"{w}: x\n" for w in sorted(texts)) or "k: x\n"
    assert load_yaml(Path("keys.yaml"), keys, "keys.yaml") == yaml.safe_load(keys)


def test_plain_words_read_as_pyyaml_reads_them() -> None:
    """`yes`, `No`, `null`, `on` are booleans and null; `name`, `nothing`, `Onion` are text:
    most words are read without the resolver's expressions, as the resolver reads them."""
    _same_as_pyyaml(WORDS)


@settings(max_examples=examples(300), derandomize=True, database=None, deadline=None)
@given(
    st.lists(
        st.text(alphabet="yYnNtTfFoOeEsSuUlLrRaA_0 ", min_size=1, max_size=6)
        .map(str.strip)
        .filter(bool),
        min_size=1,
        max_size=8,
    )
)
def test_any_plain_word_reads_as_pyyaml_reads_it(words: list[str]) -> None:
    _same_as_pyyaml(words)
