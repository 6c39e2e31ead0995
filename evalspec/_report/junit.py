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
    from evalspec._scoring.trials import CaseSummary

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


def build_junit(report: Report) -> ET.Element:
    suite_name = report.suite.name
    root = ET.Element("testsuites", name=_clean(suite_name))
    totals = {"tests": 0, "failures": 0, "errors": 0}
    latency = report.case_latency()
    for m in report.models:
        mine = [c for c in report.cases if c.model == m.model]
        failures = sum(c.status == "fail" for c in mine)
        errors = sum(c.status == "error" for c in mine)
        ts = ET.SubElement(
            root,
            "testsuite",
            name=_clean(f"{suite_name} · {m.model}"),
            tests=str(len(mine)),
            failures=str(failures),
            errors=str(errors),
            skipped=str(sum(c.status in ("captured", "user_fault") for c in mine)),
            time=f"{m.latency_s:.3f}",
        )
        props = ET.SubElement(ts, "properties")
        for key, value in (
            ("model", m.model),
            ("mean_score", f"{m.mean_score:.4f}"),
            ("pass_at_1", f"{m.pass_at_1:.4f}"),
            ("warned", str(m.warned)),
            ("tokens", str(m.tokens)),
        ):
            ET.SubElement(props, "property", name=key, value=_clean(value))
        for c in mine:
            tc = ET.SubElement(
                ts,
                "testcase",
                name=_clean(c.case),
                classname=_clean(f"{suite_name}.{m.model}"),
                time=f"{latency.get((c.case, c.model), 0.0):.3f}",
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
        totals["tests"] += len(mine)
        totals["failures"] += failures
        totals["errors"] += errors
    for key, total in totals.items():
        root.set(key, str(total))
    return root


def write_junit(report: Report, path: Path) -> None:
    """Write atomically: a CI step never reads half a file."""
    tree = ET.ElementTree(build_junit(report))
    ET.indent(tree)
    with atomic_write(path, binary=True) as fh:
        tree.write(fh, encoding="utf-8", xml_declaration=True)
