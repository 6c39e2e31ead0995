"""JUnit XML, the format every CI system can show: one testsuite per model, a testcase per case.

A failing case becomes <failure> (its message is the reason, its body the rows that failed), an
errored one <error>; a warning passes but says so in <system-out>. Text from models can hold
characters XML 1.0 forbids (NUL, most control characters); they are replaced, or the file would
not parse.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from evalspec._report.text import value_text
from evalspec._util.files import atomic_write

if TYPE_CHECKING:
    from evalspec._report.records import Report
    from evalspec._scoring.trials import CaseSummary, ModelSummary

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    return _INVALID_XML.sub("\ufffd", text)


def _rows_text(summary: CaseSummary, only_failing: bool) -> str:
    """The explanation rows, one per line, for the body of a failure or a system-out."""
    lines: list[str] = []
    for r in summary.results:
        if summary.trials > 1:
            lines.append(f"trial {r.trial}: {r.status.upper()} {r.score:.3f}: {r.reason}")
        for row in r.rows:
            if only_failing and row.match:
                continue
            where = row.field + (f" (call {row.call + 1})" if row.call is not None else "")
            lines.append(
                f"  {where}: score {row.score:.2f} × weight {row.weight:g}: {row.reason}"
                f" [expected {value_text(row.expected)}; actual {value_text(row.actual)}]"
            )
    return "\n".join(lines)


def write_junit(report: Report, path: Path) -> None:
    """Write atomically: a CI step never reads half a file. Written a thousand test cases at
    a time (a 50,000-case tree took 25 MiB), as `ET.indent` and `ElementTree.write` lay it
    out."""
    suite_name = report.suite.name
    latency = report.case_latency()
    mine = {m.model: [c for c in report.cases if c.model == m.model] for m in report.models}
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for cases in mine.values():
        totals["tests"] += len(cases)
        totals["failures"] += sum(c.status == "fail" for c in cases)
        totals["errors"] += sum(c.status == "error" for c in cases)
    root = ET.Element("testsuites", name=_clean(suite_name))
    for key, total in totals.items():
        root.set(key, str(total))
    with atomic_write(path, binary=True) as fh:
        fh.write(b"<?xml version='1.0' encoding='utf-8'?>\n")
        if not report.models:
            fh.write(_element(root, 0))
            return
        fh.write(_start(root))
        for m in report.models:
            fh.write(b"\n  " + _start(_testsuite(suite_name, m, mine[m.model])))
            fh.write(b"\n    " + _element(_properties(m), 2))
            cases = mine[m.model]
            for start in range(0, len(cases), _CHUNK):
                chunk = ET.Element("chunk")
                for c in cases[start : start + _CHUNK]:
                    seconds = latency.get((c.case, c.model), 0.0)
                    chunk.append(_testcase(suite_name, m.model, c, seconds))
                fh.write(_children(chunk))
            fh.write(b"\n  </testsuite>")
        fh.write(b"\n</testsuites>")


_CHUNK = 1000
"""Test cases serialized together: one serializer call each cost 2.5x the whole tree's."""


def _children(chunk: ET.Element) -> bytes:
    """The test cases in `chunk`, each on its own line at a test suite's depth, as they sit
    in the whole document (the chunk's own tags and last newline cut)."""
    ET.indent(chunk, space="  ", level=1)
    text: bytes = ET.tostring(chunk, encoding="utf-8", xml_declaration=False)
    return text[len(b"<chunk>") : -len(b"\n  </chunk>")]


def _start(element: ET.Element) -> bytes:
    """An element's start tag, as the serializer writes it."""
    empty: bytes = ET.tostring(element, encoding="utf-8", xml_declaration=False)
    return empty[: -len(b" />")] + b">"


def _element(element: ET.Element, level: int) -> bytes:
    """An element and what it holds, indented as `ET.indent` indents it at `level`."""
    ET.indent(element, space="  ", level=level)
    text: bytes = ET.tostring(element, encoding="utf-8", xml_declaration=False)
    return text


def _testsuite(suite_name: str, m: ModelSummary, cases: list[CaseSummary]) -> ET.Element:
    return ET.Element(
        "testsuite",
        name=_clean(f"{suite_name} · {m.model}"),
        tests=str(len(cases)),
        failures=str(sum(c.status == "fail" for c in cases)),
        errors=str(sum(c.status == "error" for c in cases)),
        skipped=str(sum(c.status in ("captured", "user_fault") for c in cases)),
        time=f"{m.latency_s:.3f}",
    )


def _properties(m: ModelSummary) -> ET.Element:
    props = ET.Element("properties")
    for key, value in (
        ("model", m.model),
        ("mean_score", f"{m.mean_score:.4f}"),
        ("pass_at_1", f"{m.pass_at_1:.4f}"),
        ("warned", str(m.warned)),
        ("tokens", str(m.tokens)),
    ):
        ET.SubElement(props, "property", name=key, value=_clean(value))
    return props


def _testcase(suite_name: str, model: str, c: CaseSummary, seconds: float) -> ET.Element:
    tc = ET.Element(
        "testcase",
        name=_clean(c.case),
        classname=_clean(f"{suite_name}.{model}"),
        time=f"{seconds:.3f}",
    )
    if c.status in ("fail", "error"):
        el = ET.SubElement(
            tc,
            "failure" if c.status == "fail" else "error",
            message=_clean(f"score {c.score:.3f}: {c.reason}"),
            type=c.status,
        )
        el.text = _clean(_rows_text(c, only_failing=True))
    elif c.status in ("captured", "user_fault"):  # not the model's verdict
        ET.SubElement(tc, "skipped", message=_clean(c.reason))
    elif c.status == "warn":
        out = ET.SubElement(tc, "system-out")
        rows = _rows_text(c, only_failing=True)
        out.text = _clean(f"WARN: score {c.score:.3f}: {c.reason}\n{rows}".rstrip())
    return tc
