"""The documentation: it cannot drift from the schema, and its suites validate.

The site itself is built by `mkdocs build --strict` in `.ci/run` (the `docs` extra); these
tests need no MkDocs and check what the build relies on. That the site reads offline is
tests/test_docs_offline.py's and tests/test_docs_browser.py's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from docsgen.prose_check import cut_paragraphs
from docsgen.screenshots import screenshots_markdown
from docsgen.suite_reference import load_schema, render
from evalspec.api import check_suite

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATED_PAGES = {"reference/suite.md"}


def _schema_paths(node: Any, prefix: str = "") -> list[str]:
    """Every property of a schema as a dotted path, walked independently of the generator:
    nested `properties` anywhere (alternatives, list items, named-value mappings), never
    inside examples or defaults, and not across `$ref`s (each definition has its own table)."""
    if isinstance(node, list):
        return [path for item in node for path in _schema_paths(item, prefix)]
    if not isinstance(node, dict):
        return []
    found = []
    for key, value in node.items():
        if key == "properties":
            for name, sub in value.items():
                found.append(prefix + name)
                found += _schema_paths(sub, f"{prefix}{name}.")
        elif key not in ("examples", "default", "enum", "const", "$defs"):
            found += _schema_paths(value, prefix)
    return found


def _sections(markdown: str) -> dict[str, str]:
    """`## title` -> the text under it."""
    parts = re.split(r"^## (.+)$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_schema_property_is_in_the_reference_under_its_definition() -> None:
    schema = load_schema()
    sections = _sections(render(schema))
    expected = {"Top level": _schema_paths(schema)}
    expected |= {name: _schema_paths(sub) for name, sub in schema["$defs"].items()}
    missing = [
        f"{section}: {path}"
        for section, paths in expected.items()
        for path in paths
        if f"| `{path}` |" not in sections.get(section, "")
    ]
    assert not missing, f"properties missing from the suite reference: {missing}"
    assert sum(len(paths) for paths in expected.values()) > 150  # the walk found the schema


def test_a_property_added_to_the_schema_appears_with_its_description() -> None:
    schema = load_schema()
    schema["$defs"]["rubric"]["properties"]["patience"] = {
        "type": "integer",
        "minimum": 1,
        "default": 3,
        "description": "How many <tries> a case gets | at most.",
        "examples": [5],
    }
    rubric = _sections(render(schema))["rubric"]
    row = next(line for line in rubric.splitlines() if line.startswith("| `patience` |"))
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
    assert cells == [
        "`patience`",
        "whole number ≥ 1",
        "`3`",
        "How many &lt;tries&gt; a case gets \\| at most.",
        "`5`",
    ]


def test_references_between_definitions_link_to_their_sections() -> None:
    page = render(load_schema())
    headings = set(re.findall(r"^## (\S+)$", page, flags=re.MULTILINE))
    targets = set(re.findall(r"\]\(#([^)]+)\)", page))
    assert targets, "no links between definitions"
    assert targets <= headings


def _yaml_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def _whole_suites() -> list[tuple[str, str]]:
    """Every YAML block of the README and the docs that is a whole suite (has `suite:`)."""
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [
        (f"{page.relative_to(ROOT)}#{i}", block)
        for page in pages
        for i, block in enumerate(_yaml_blocks(page.read_text(encoding="utf-8")))
        if re.search(r"^suite:", block, flags=re.MULTILINE)
    ]


_INCLUDED = {
    "cases": "- {{name: {stem}, user: Hi, expect: {{no_tool_calls: true}}}}\n",
    "tools": "- {{name: {stem}, description: A tool., parameters: {{type: object}}}}\n",
}


@pytest.mark.parametrize("shown", _whole_suites(), ids=lambda shown: shown[0])
def test_suites_shown_in_the_docs_validate(shown: tuple[str, str], tmp_path: Path) -> None:
    where, block = shown
    path = tmp_path / "suite.yaml"
    path.write_text(block, encoding="utf-8")
    for include in re.findall(r"include: (\S+\.yaml)", block):  # a file it includes: one entry
        file = tmp_path / include
        file.parent.mkdir(parents=True, exist_ok=True)
        kind = "cases" if "case" in include else "tools"
        file.write_text(_INCLUDED[kind].format(stem=file.stem.replace("-", "_")), encoding="utf-8")
    assert check_suite(path) >= 1, where


def test_the_readme_and_the_first_suite_page_show_whole_suites() -> None:
    where = {w.split("#")[0] for w, _ in _whole_suites()}
    assert {"README.md", "docs/first-suite.md"} <= where


def test_the_readme_shows_the_commands_ci_runs() -> None:
    """The README's two commands are the ones .ci/run proves on a clean clone."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = ci.strip().splitlines()[-1]
    assert test_command.startswith("python3 -m venv .venv") and test_command in readme
    assert test_command.endswith(" -m pytest --all")  # the full suite: the slow tests too
    commands = [line for line in readme.splitlines() if line.startswith("python3 -m venv .venv")]
    main = [c for c in commands if c.endswith("&& .venv/bin/evalspec run suites/slack.yaml")]
    assert len(main) == 1 and " -e . " in main[0]  # installs this clone, runs the example
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert main[0] in install and test_command in install  # the install page shows the same


README_VENV = re.compile(r"(?<![\w.-])\.venv(?![\w-])")
"""The README's environment, `.venv` (not `.venv-checks` or `.venv-diff`)."""


def readme_environment_problems(ci: str) -> list[str]:
    """Why .ci/run would not prove the README's test command on a fresh clone: it must run last,
    right after `rm -rf .venv`, and no earlier step may use `.venv` (an extra installed there
    by another check hid tests that fail without it)."""
    steps = [s.strip() for s in ci.splitlines() if s.strip() and not s.lstrip().startswith("#")]
    if len(steps) < 2 or steps[-2] != "rm -rf .venv":
        return ["the README's test command does not follow `rm -rf .venv`"]
    return [f"an earlier step uses .venv: {s}" for s in steps[:-2] if README_VENV.search(s)]


@pytest.mark.parametrize(
    "ci",
    [
        "rm -rf .venv\npython3 -m venv .venv && .venv/bin/pip install -e '.[test,ray]'\n"
        "rm -rf .venv\npython3 -m venv .venv && .venv/bin/python -m pytest\n",
        "python3 -m venv .venv-checks\n.venv/bin/ruff check\nrm -rf .venv\nREADME\n",
        "rm -rf .venv\n.venv-checks/bin/mypy\nREADME\n",
    ],
    ids=["extras installed first", "a check in it", "not removed right before"],
)
def test_the_ci_check_finds_a_used_readme_environment(ci: str) -> None:
    assert readme_environment_problems(ci)


def test_ci_runs_the_readme_test_command_in_an_untouched_environment() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert readme_environment_problems(ci) == []


def _nav_pages(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    written = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert sorted(set(nav)) == sorted(written | GENERATED_PAGES)
    assert len(nav) == len(set(nav))


def test_links_between_pages_name_pages_that_exist() -> None:
    broken = []
    for page in DOCS.rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text):
            resolved = (page.parent / target).resolve().relative_to(DOCS.resolve())
            if not (DOCS / resolved).exists() and str(resolved) not in GENERATED_PAGES:
                broken.append(f"{page.relative_to(DOCS)} -> {target}")
    assert not broken


def test_report_screenshots_are_shown_whichever_exist(tmp_path: Path) -> None:
    assert screenshots_markdown(tmp_path, depth=1) == ""
    (tmp_path / "images").mkdir()
    for name in (
        "report-list.png",
        "report-300-cases-3-models.png",
        "report-case-390.png",
        "x.png",
    ):
        (tmp_path / "images" / name).write_bytes(b"\x89PNG")
    assert screenshots_markdown(tmp_path, depth=1).split("\n\n") == [
        "![The report: 300 cases 3 models](../images/report-300-cases-3-models.png)",
        "![The report: case, 390 px wide](../images/report-case-390.png)",
        "![The report: list](../images/report-list.png)",
    ]


CUT_PAGE = """\
# Large suites

To spread a run over several machines, install the extra, then:

## Split a suite over files

One suite file holds at most 16 MiB.

## Spread a run

The recordings file is owned by one actor on the driver's machine (workers

## How a Ray run works

out request slots to every worker, so each limit holds for the whole cluster.
"""


def test_a_paragraph_cut_by_a_heading_is_found() -> None:
    """The three cuts docs/how-to/large-suites.md had: a colon whose promise sits under another
    heading, a sentence that stops before a heading, and one that goes on after it."""
    found = cut_paragraphs(CUT_PAGE)
    assert [f.split(":")[0] for f in found] == ["line 5", "line 13", "line 13"]
    assert "then:" in found[0] and "(workers" in found[1] and "out request slots" in found[2]


def test_what_is_not_running_text_is_not_a_cut() -> None:
    page = (
        "# Title\n\n"
        "```bash\nevalspec run x.yaml --ray auto\n```\n\n## After code\n\n"
        "- a list item without a stop\n  that goes on\n\n## After a list\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n## After a table\n\n"
        '!!! note "Note"\n    an admonition without a stop\n\n## After a note\n\n'
        "See [the reference](reference/suite.md).\n\n## After a link\n\n"
        "evalspec starts a sentence with its own name.\n\n"
        "## Names\n\nτ-bench's tasks are named too.\n"
    )
    assert cut_paragraphs(page) == []


@pytest.mark.parametrize("page", sorted(DOCS.rglob("*.md")), ids=lambda p: str(p.relative_to(DOCS)))
def test_no_heading_cuts_a_paragraph(page: Path) -> None:
    assert cut_paragraphs(page.read_text(encoding="utf-8")) == []
