"""The suite-language reference page, written from the language's declarations at every build.

The declarations (evalspec/_language/) are the language's source of truth: the JSON Schema that
validation, editor completion and `evalspec schema` read is generated from them, and so is this
page, from the same schema, rather than written beside it: a key declared appears in the docs at
the next build, with its description, type, default and example. `tests/test_docs.py` checks
that every property of the schema is listed.
"""

from __future__ import annotations

import html
import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

DECLARATIONS = Path(__file__).resolve().parent.parent / "evalspec" / "_language"
"""Where the language is declared: `mkdocs serve` rebuilds when a file there changes."""

# Sections in the order a reader meets them; a definition not listed here follows, by name.
SECTION_ORDER = (
    "model",
    "tool",
    "simulated_response",
    "case",
    "expect",
    "expected_call",
    "final_answer",
    "critic",
    "evaluator",
    "rubric",
    "message",
    "budget",
    "suite_budget",
)

# Where each definition is written in a suite, said above its table.
SECTION_WHERE = {
    "model": "each entry of `models:` (a model id alone, `gpt-4o-mini`, or a mapping)",
    "tool": "each entry of `tools:`",
    "simulated_response": "each rule of a tool's `responses:`",
    "case": "each entry of `cases:`",
    "expect": "a case's `expect:`",
    "expected_call": "each entry of `expect.tool_calls`",
    "final_answer": "`expect.final_answer`",
    "critic": "each value of a `critics:` mapping (suite, case or expected call)",
    "evaluator": "each entry of a case's `evaluators:`",
    "rubric": "`rubric:` of the suite or of a case",
    "message": "each entry of a case's `history:`",
    "budget": "`budgets.case` of the suite, or a case's `budget:`",
    "suite_budget": "`budgets.suite`",
}

# Where the pages explain each definition's behaviour, linked under its table's heading.
SECTION_EXPLAINED = {
    "model": ("Models and providers", "../how-to/models.md"),
    "tool": ("Tools and simulated responses", "language.md#tools-and-simulated-responses"),
    "case": ("Cases", "language.md#cases"),
    "critic": ("Critics", "scoring.md#critics-how-each-argument-is-judged"),
    "evaluator": ("Evaluators", "scoring.md#evaluators-whole-transcript-checks"),
    "final_answer": ("Final-answer checks", "scoring.md#final-answer-checks"),
    "rubric": ("Scoring rules", "scoring.md#scoring-rules"),
    "budget": ("Budgets", "../how-to/noise.md#budgets"),
    "suite_budget": ("Budgets", "../how-to/noise.md#budgets"),
}

# Keywords whose values are data (examples, defaults), never schemas to describe.
_DATA_KEYWORDS = ("examples", "default", "enum", "const")


def load_schema(fresh: bool = False) -> dict[str, Any]:
    """The suite schema as the declarations make it; `fresh` re-reads the declaration modules
    (`mkdocs serve` keeps one process across edits)."""
    if fresh:
        for name in sorted(n for n in sys.modules if n.startswith("evalspec._language.")):
            importlib.reload(sys.modules[name])
    from evalspec._language.generate import declared_schema

    return declared_schema()


def render(schema: dict[str, Any]) -> str:
    """The whole reference page, in Markdown."""
    defs: dict[str, Any] = schema.get("$defs", {})
    parts = [
        "# Suite reference",
        "",
        "<!-- Generated from the declarations in evalspec/_language/ by "
        "docsgen/suite_reference.py at every build: edit the declarations, not this page. -->",
        "",
        "Every key a suite may hold, generated from the language's declarations (from which "
        "`schemas/suite.schema.json`, the file editors, `evalspec validate` and `evalspec "
        "schema` read, is generated too) each time these pages are built, so it always says "
        "what the installed version accepts. A key written "
        "`run.mode` is `mode:` inside `run:`; a list's entries are described once. "
        "[The suite language](language.md) explains how the pieces work together.",
        "",
        _section("Top level", "A suite file is a mapping with these keys.", schema),
    ]
    for name in sorted(defs, key=_section_rank):
        intro = f"Written as {SECTION_WHERE[name]}." if name in SECTION_WHERE else ""
        if name in SECTION_EXPLAINED:
            title, link = SECTION_EXPLAINED[name]
            intro += f" How it works: [{title}]({link})."
        parts.append(_section(name, intro.strip(), defs[name]))
    return "\n".join(parts)


def rows(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every property reachable from `schema` without following a $ref: (dotted path, schema)."""
    found: list[tuple[str, dict[str, Any]]] = []
    _collect(schema, "", found)
    return found


def _section_rank(name: str) -> tuple[int, str]:
    return (SECTION_ORDER.index(name) if name in SECTION_ORDER else len(SECTION_ORDER), name)


def _section(title: str, intro: str, schema: dict[str, Any]) -> str:
    lines = [f"## {title}", ""]
    if intro:
        lines += [intro, ""]
    if schema.get("description") and title != "Top level":
        lines += [_text(schema["description"]), ""]
    found = rows(schema)
    if not found:
        lines += [f"Type: {_type_of(schema)}.", ""]
        return "\n".join(lines)
    lines += ["| key | type | default | meaning | example |", "|---|---|---|---|---|"]
    for path, node in found:
        cells = [
            f"`{path}`",
            _type_of(node),
            _code(node["default"]) if "default" in node else "",
            _text(node.get("description", "")),
            _code(node["examples"][0]) if node.get("examples") else "",
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines.append("")
    return "\n".join(lines)


def _collect(node: Any, prefix: str, found: list[tuple[str, dict[str, Any]]]) -> None:
    if not isinstance(node, dict):
        return
    for name, sub in (node.get("properties") or {}).items():
        path = f"{prefix}{name}"
        found.append((path, sub))
        _collect(sub, f"{path}.", found)
    for keyword, value in node.items():
        if keyword in _DATA_KEYWORDS or keyword in ("properties", "$defs"):
            continue
        if isinstance(value, dict):
            _collect(value, prefix, found)
        elif isinstance(value, list):
            for item in value:
                _collect(item, prefix, found)


def _type_of(node: Any) -> str:
    """A short, readable type: `number 0–1`, `list of [tool](#tool)`, `one of a, b`."""
    if not isinstance(node, dict) or not node:
        return "any value"
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name})"
    if "enum" in node:
        return "one of " + ", ".join(_code(v) for v in node["enum"])
    if "const" in node:
        return _code(node["const"])
    for keyword in ("anyOf", "oneOf"):
        if keyword in node:
            return " or ".join(dict.fromkeys(_type_of(alt) for alt in node[keyword]))
    types = node.get("type")
    names = types if isinstance(types, list) else [types] if types else []
    described = [_one_type(name, node) for name in names]
    return " or ".join(described) if described else "any value"


def _one_type(name: str, node: dict[str, Any]) -> str:
    if name == "array":
        items = node.get("items")
        return f"list of {_type_of(items)}" if isinstance(items, dict) and items else "list"
    if name == "object":
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"mapping of names to {_type_of(extra)}"
        return "mapping"
    word = {"string": "text", "integer": "whole number", "boolean": "true or false"}.get(name, name)
    bounds = []
    if "minimum" in node:
        bounds.append(f"≥ {node['minimum']}")
    if "exclusiveMinimum" in node:
        bounds.append(f"> {node['exclusiveMinimum']}")
    if "maximum" in node:
        bounds.append(f"≤ {node['maximum']}")
    return f"{word} {', '.join(bounds)}" if bounds else word


def _code(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def _text(text: str) -> str:
    """Schema prose as Markdown: `code` kept, and outside it `<suite>` or `*` shown as typed."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    return "".join(p if p.startswith("`") else _escape(p) for p in parts)


def _escape(text: str) -> str:
    """Outside code: `<`, `&` as typed, and no emphasis, link or cell break by accident."""
    text = html.escape(text, quote=False)
    return re.sub(r"([\\*_\[\]|])", r"\\\1", text)


def _cell(text: str) -> str:
    """Table-safe: a newline would end the row (a `|` in code is safe; `_escape` does prose)."""
    return " ".join(text.split())
