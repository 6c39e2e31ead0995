"""The JSON Schemas in schemas/, generated from the record classes they describe.

Each file evalspec writes is declared once, as a msgspec Struct; its schema is that class as
JSON Schema (draft 2020-12), with each field's docstring as its description, so the schema, the
reader, the writer and the validation can never disagree. Run

    python -m evalspec._report.record_schemas           write schemas/*.schema.json
    python -m evalspec._report.record_schemas --check   exit 1 if a committed one differs
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, is_dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import msgspec

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "https://evalspec.dev/schemas/"
SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"


@dataclass(frozen=True)
class Described:
    """One generated schema: its file name, title, and the record classes it describes."""

    file: str
    title: str
    records: Callable[[], tuple[type, ...]]
    """The record (or, for a file whose lines are one of several records, each of them)."""


def _transcript() -> tuple[type, ...]:
    from evalspec._transcript import Transcript

    return (Transcript,)


def _results() -> tuple[type, ...]:
    from evalspec._scoring.results_file import ResultsFile

    return (ResultsFile,)


def _manifest() -> tuple[type, ...]:
    from evalspec._runner.run_dir import RunManifest

    return (RunManifest,)


def _recordings() -> tuple[type, ...]:
    from evalspec._providers.recordings import RecordedAnswer, RecordingsComment

    return (RecordedAnswer, RecordingsComment)


def _payload() -> tuple[type, ...]:
    from evalspec._report.html_data import Payload

    return (Payload,)


def _labels() -> tuple[type, ...]:
    from evalspec._scoring.labels import LabelLine, LabelsComment

    return (LabelLine, LabelsComment)


SCHEMAS = (
    Described("transcript.schema.json", "evalspec transcript", _transcript),
    Described("results.schema.json", "evalspec results file", _results),
    Described("run-manifest.schema.json", "evalspec run manifest (run.json)", _manifest),
    Described("recordings-line.schema.json", "evalspec recordings line", _recordings),
    Described("html-payload.schema.json", "evalspec HTML report data", _payload),
    Described("labels-line.schema.json", "evalspec labels line (people's verdicts)", _labels),
)


def generate(described: Described) -> dict[str, Any]:
    """The schema of one file, as committed in schemas/."""
    records = described.records()
    roots, defs = msgspec.json.schema_components(records, ref_template="#/$defs/{name}")
    classes = _classes(records)
    for name, definition in defs.items():
        if name in classes:
            _describe(definition, classes[name])
    out: dict[str, Any] = {"$schema": SCHEMA_DIALECT, "$id": BASE_ID + described.file}
    if len(roots) == 1:
        root = defs.pop(roots[0]["$ref"].rsplit("/", 1)[1])
        root.pop("title", None)
        out |= {"title": described.title, **root}
    else:
        out |= {"title": described.title, "anyOf": list(roots)}
    if defs:
        out["$defs"] = dict(sorted(defs.items()))
    return out


def _classes(records: tuple[type, ...]) -> dict[str, type]:
    """Every record class reachable from `records`, by the name msgspec gives its schema."""
    found: dict[str, type] = {}
    todo = list(records)
    while todo:
        cls = todo.pop()
        if cls.__name__ in found:
            continue
        found[cls.__name__] = cls
        info = msgspec.inspect.type_info(cls)
        for field in getattr(info, "fields", ()):
            todo.extend(_nested(field.type))
    return found


def _nested(t: Any) -> list[type]:
    ti = msgspec.inspect
    if isinstance(t, ti.StructType | ti.DataclassType):
        return [t.cls]
    out: list[type] = []
    for attr in ("types", "item_type", "value_type"):
        value = getattr(t, attr, None)
        for inner in value if isinstance(value, tuple) else (value,) if value else ():
            out.extend(_nested(inner))
    return out


def _describe(definition: dict[str, Any], cls: type) -> None:
    """The class's docstring as the definition's description, each field's as its own."""
    if cls.__doc__ and (is_dataclass(cls) or issubclass(cls, msgspec.Struct)):
        definition["description"] = _one_line(cls.__doc__)
    names = (
        {f.name: f.encode_name for f in msgspec.structs.fields(cls)}
        if issubclass(cls, msgspec.Struct)
        else {}
    )
    properties = definition.get("properties", {})
    for field, doc in field_docs(cls).items():
        key = names.get(field, field)
        if key in properties:
            properties[key] = {"description": doc, **properties[key]}


def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of a class or of the classes it inherits its
    fields from (the nearest one's), by field name."""
    docs: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if base is not object and base.__module__.startswith("evalspec"):
            docs.update(_own_field_docs(base))
    return docs


def _own_field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field in the class's own body."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs = {}
    for node, after in pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = _one_line(after.value.value)
    return docs


def _one_line(doc: str) -> str:
    return " ".join(inspect.cleandoc(doc).split())


def text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if schemas/ is not current")
    parser.add_argument("--dir", type=Path, default=SCHEMAS_DIR)
    args = parser.parse_args(argv)
    stale = []
    for described in SCHEMAS:
        path = args.dir / described.file
        wanted = text(generate(described))
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == wanted:
            continue
        stale.append(path.name)
        if not args.check:
            path.write_text(wanted, encoding="utf-8")
    if args.check and stale:
        print(
            f"out of date: {', '.join(stale)}; run python -m evalspec._report.record_schemas",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
