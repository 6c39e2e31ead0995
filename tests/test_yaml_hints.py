"""YAML mistakes of people who do not program, in their words (evalspec/_suite/yaml_hints.py).

The corpus in tests/invalid/ pins whole messages; these tests pin the rules around them: what
is and is not taken for a misplaced indent, a quote inside quotes, a text cut by ` #`, or a
value YAML read as something other than the text it looks like.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.api import check_suite, load_suite
from evalspec.errors import SpecError

HEAD = "suite: s\nmodels: [m]\ntools: [{name: t, parameters: {type: object}}]\ncases:\n"


def problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_suite(path)
    return [f"{p.line}:{p.column}: {p.message}; {p.hint}" for p in info.value.problems]


def loads(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    load_suite(path)


@pytest.mark.parametrize(
    ("body", "line", "depth", "like"),
    [
        ("  - name: a\n    user: hi\n   expect: {no_tool_calls: true}\n", 7, 4, "`user:`"),
        ("  - name: a\n    user: hi\n      expect: {no_tool_calls: true}\n", 7, 4, "`user:`"),
        # Lines inside a block scalar may be indented anyhow: they are not keys above it.
        (
            "  - name: a\n    user: |\n       one\n          two\n    trials: 2\n"
            "     expect: {no_tool_calls: true}\n",
            10,
            4,
            "`trials:`",
        ),
    ],
)
def test_a_misindented_key_is_called_so(
    tmp_path: Path, body: str, line: int, depth: int, like: str
) -> None:
    (found,) = problems(tmp_path, HEAD + body)
    assert found.startswith(f"{line}:1: YAML syntax error: this line is indented")
    assert f"e.g. {depth} spaces like {like}" in found
    assert "put quotes around" not in found


def test_a_colon_in_text_keeps_the_quoting_advice(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, HEAD + "  - name: a\n    user: note: this\n")
    assert "put quotes around text that contains ': '" in found


def test_double_quotes_inside_double_quotes(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, HEAD + '  - name: a\n    user: "say "hi" now"\n')
    assert found.startswith('6:11: YAML syntax error: the text in double quotes ends at the "')
    assert "'say \"hi\" now'" in found and '"say \\"hi\\" now"' in found


@pytest.mark.parametrize("text", ["a: [1, 2\nb: 3\n", "a: [1, 2\n"], ids=["key", "end"])
def test_other_syntax_errors_keep_their_own_message(tmp_path: Path, text: str) -> None:
    """No indent, quote or dash rule claims an unclosed bracket, found at a key or past the
    last line (where the parser's mark is on no line of the text)."""
    (found,) = problems(tmp_path, text)
    assert found.startswith("1:4: YAML syntax error: the [ opened here is not closed"), found
    assert "close it with ]" in found and "indented" not in found and "quote" not in found


@pytest.mark.parametrize(
    "user",
    [
        "Lunch at noon # a comment, with a space after the #",
        '"Issue #42 is fixed"',
        "'Issue #42 is fixed'",
        "Issue#42 is fixed",
        "C# and F# ## both",
    ],
)
def test_a_comment_or_a_quoted_hash_is_not_a_cut(tmp_path: Path, user: str) -> None:
    loads(tmp_path, HEAD + f"  - name: a\n    user: {user}\n    expect: {{no_tool_calls: true}}\n")


def test_a_cut_outside_text_fields_is_left_alone(tmp_path: Path) -> None:
    """A model id or a tag is not text sent to the model: `#x` there stays a comment."""
    text = HEAD.replace("models: [m]", "models:\n  - m #fast") + (
        "  - name: a\n    user: hi\n    tags: [smoke] #quick\n    expect: {no_tool_calls: true}\n"
    )
    loads(tmp_path, text)


def test_a_cut_in_a_large_suite_is_found_too(tmp_path: Path) -> None:
    """Large files are read a case at a time; a possible cut sends them the whole way."""
    cases = "".join(
        f"  - name: case {i}\n    user: Say hello number {i} with some words\n"
        "    expect: {no_tool_calls: true}\n"
        for i in range(3000)
    )
    path = tmp_path / "s.yaml"
    cut = "  - name: cut\n    user: Read #general\n    expect: {no_tool_calls: true}\n"
    path.write_text(HEAD + cases + cut, encoding="utf-8")
    assert path.stat().st_size > 256 * 1024
    with pytest.raises(SpecError) as info:
        check_suite(path)
    (found,) = info.value.problems
    assert found.path == "cases[3000].user" and found.column == 16
    assert 'put the whole text in quotes: "Read #general"' in found.hint


@pytest.mark.parametrize(
    ("written", "reading"),
    [
        ("on", "YAML reads on as true"),
        ("Off", "YAML reads Off as false"),
        ("1:30", "YAML reads 1:30 as the number 90"),
        ("0o17", None),  # YAML 1.1 has no 0o: it stays text, nothing to explain
        ("017", "YAML reads 017 as the number 15"),
        ("1_000", "YAML reads 1_000 as the number 1000"),
    ],
)
def test_values_yaml_reads_as_something_else(
    tmp_path: Path, written: str, reading: str | None
) -> None:
    text = HEAD + f"  - name: a\n    user: {written}\n    expect: {{no_tool_calls: true}}\n"
    if reading is None:
        loads(tmp_path, text)
        return
    (found,) = problems(tmp_path, text)
    assert reading in found
    assert f'put it in quotes to keep it as text: "{written}"' in found


def test_true_written_as_true_is_not_explained(tmp_path: Path) -> None:
    (found,) = problems(
        tmp_path, HEAD + "  - name: a\n    user: true\n    expect: {no_tool_calls: true}\n"
    )
    assert "expected text or a mapping, got true/false" in found and "YAML reads" not in found


def test_a_cut_in_an_included_file_is_found_there(tmp_path: Path) -> None:
    (tmp_path / "more.yaml").write_text(
        "- name: a\n  user: Read #general\n  expect: {no_tool_calls: true}\n", encoding="utf-8"
    )
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + "  - include: more.yaml\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_suite(path)
    (found,) = info.value.problems
    assert found.file.endswith("more.yaml") and (found.line, found.column) == (2, 14)
    assert 'put the whole text in quotes: "Read #general"' in found.hint


@pytest.mark.parametrize(
    ("body", "line", "column", "key", "opener", "spaces", "first"),
    [
        ("  - name: a\n  user: hi\n", 6, 3, "user", 5, 4, "name:"),
        (
            "  - name: a\n    user: hi\n    expect:\n      tool_calls:\n        - t: {}\n"
            "        x: 1\n",
            10,
            9,
            "x",
            9,
            10,
            "t:",
        ),
    ],
)
def test_a_key_lined_up_with_the_dash_of_its_item_is_named_with_the_fix(
    tmp_path, body, line, column, key, opener, spaces, first
):
    (found,) = problems(tmp_path, HEAD + body)
    assert found.startswith(
        f"{line}:{column}: YAML syntax error: `{key}:` is lined up with the `-` of the list item "
        f"on line {opener}"
    ), found
    assert f"indent it {spaces} spaces, like `{first}` on line {opener}" in found
    assert f"start a new item with `- {key}:`" in found
