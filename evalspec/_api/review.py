"""`diff`, `compare` and `review`: what a change does to the scores, as a `Comparison`.

None of them calls a model: they re-score recorded transcripts (diff, review) or read
results.json files (compare).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalspec._util.errors import UsageError
from evalspec._util.outputs import check_output_file

if TYPE_CHECKING:
    from evalspec._compare.records import Comparison
    from evalspec._review.repo import Review
    from evalspec._suite.model import Gate, GateOn, Suite
    from evalspec._transcript import Transcript

GATE_NAMES: tuple[GateOn, ...] = ("any_regression", "significant_drop", "none")
"""What may fail a comparison: a passing case now failing, a significant drop, or neither."""


def gate_override(name: str | None, suite_gate: Gate | None = None) -> Gate | None:
    """The gate `name` asks for over the suite's (None: the suite's); UsageError when unknown."""
    from dataclasses import replace

    from evalspec._suite.model import Gate

    mode = gate_mode(name)
    return None if mode is None else replace(suite_gate or Gate(), mode=mode)


def gate_mode(name: str | None) -> GateOn | None:
    """`name` as a gate mode (None: the suite's); UsageError when it names none."""
    if name is None:
        return None
    for mode in GATE_NAMES:
        if name == mode:
            return mode
    raise UsageError(f"gate={name!r}: choose one of {', '.join(GATE_NAMES)}", params=["gate"])


def diff(
    base: Suite | str | Path | None,
    head: Suite | str | Path,
    transcripts: Sequence[Transcript] | str | Path,
    *,
    base_ref: str | None = None,
    allow_stale: bool = False,
    gate: str | None = None,
    markdown: Path | None = None,
    show_unchanged: bool = False,
) -> Comparison:
    """Score the same transcripts under a base and a head suite, without calling any model.

    Suites and transcripts may be files or in memory. With `base_ref` (head a file, base None)
    the base suite and its includes are read from git at that ref, and the change is treated as
    a pull request's: review's limits and time budget apply. `markdown` also writes the diff
    as a pull-request comment there (`show_unchanged` lists unchanged cases in it too)."""
    from evalspec._compare.diff import diff_suites
    from evalspec._review.git_base import lock_drift_at, suite_from_git
    from evalspec._suite.limits import review_budget, untrusted
    from evalspec._transcript import load_transcripts

    gate_mode(gate)  # an unknown name is refused before anything is read
    check_output_file(markdown, "markdown")
    if base_ref is not None and base is not None:
        raise UsageError(
            "with base_ref=, pass base=None (the base suite comes from git)", params=["base_ref"]
        )
    if base_ref is None and base is None:
        raise UsageError("pass a base suite, or base_ref=REF with a head suite file")
    if base_ref is not None and not isinstance(head, str | Path):
        raise UsageError("with a base ref, the head suite is a file in the repository")
    pull_request = base_ref is not None
    with (
        untrusted() if pull_request else nullcontext(),
        review_budget("diff with base_ref=", ["base_ref"]) if pull_request else nullcontext(),
    ):
        if isinstance(transcripts, str | Path):
            source = Path(transcripts).as_posix()
            recorded = load_transcripts(Path(transcripts))
        else:
            source, recorded = "", list(transcripts)
        head_suite, head_label = _suite(head)
        base_label: str | None
        if base_ref is not None:
            head_path = Path(head)  # type: ignore[arg-type]  # a file: checked above
            base_suite: Suite | None = suite_from_git(base_ref, head_path)
            base_label = f"{base_ref}:{head_path.as_posix()}"
        else:
            base_suite, base_label = _suite(base)  # type: ignore[arg-type]  # not None above
        comparison = diff_suites(
            base_suite,
            head_suite,
            recorded,
            base_label=base_label,
            head_label=head_label,
            source=source,
            allow_stale=allow_stale,
            gate=gate_override(gate, (base_suite or head_suite).gate),
        )
        if base_ref is not None and base_suite is not None:  # as review says it
            drift = lock_drift_at(base_ref, Path(head))  # type: ignore[arg-type]  # a file
            comparison = replace(comparison, tool_drift=tuple(drift))
    if markdown:
        from evalspec._compare.markdown import write_diff_markdown

        write_diff_markdown(comparison, markdown, show_unchanged=show_unchanged)
    return comparison


def _suite(given: Suite | str | Path) -> tuple[Suite, str | None]:
    """A suite and its label: a file is loaded and labelled by its path."""
    from evalspec._suite.validate import load_suite

    if isinstance(given, str | Path):
        return load_suite(given), Path(given).as_posix()
    return given, None  # in memory: the comparison's own default label


def compare(
    runs: Sequence[str | Path],
    *,
    gate: str | None = None,
    markdown: Path | None = None,
    html: Path | None = None,
    show_unchanged: bool = False,
) -> Comparison:
    """Put runs (directories or results.json files, earliest first) side by side, by case.

    One run compares its models, each against the first; two runs compare before and after;
    more make a matrix, the first against the last. The gate is the one the earliest run's
    suite had (its results file records it); `gate` changes its mode. `markdown` and `html`
    also write the comparison there. UsageError when there are fewer than two columns."""
    from evalspec._compare.records import RunData
    from evalspec._compare.runs import compare_runs, recorded_gate
    from evalspec._review.results_file import load_results

    check_output_file(markdown, "markdown")
    check_output_file(html, "html")
    paths = [Path(p) for p in runs]
    loaded = [RunData(p.as_posix(), load_results(p)) for p in paths]
    comparison = compare_runs(loaded, gate=gate_override(gate, recorded_gate(loaded)))
    if len(comparison.columns) < 2:
        raise UsageError("nothing to compare: pass a run with several models, or two or more runs")
    if html:
        from evalspec._report.html import write_runs_html
        from evalspec._report.runs import html_run

        write_runs_html([html_run(r.label, r.data, Path(r.label)) for r in loaded], html)
    if markdown:
        from evalspec._compare.markdown import write_diff_markdown

        write_diff_markdown(comparison, markdown, show_unchanged=show_unchanged)
    return comparison


def review(
    patterns: Sequence[str] | None = None,
    *,
    base_ref: str = "origin/main",
    allow_stale: bool = False,
    gate: str | None = None,
    plugins: Sequence[str] = (),
    markdown: Path | None = None,
    full_markdown: Path | None = None,
    cwd: Path | None = None,
) -> Review:
    """Review every suite of a pull request (the git repository at `cwd`, by default the
    current directory) against `base_ref`, in one verdict.

    Both versions of each suite are replayed on their recordings offline; nothing the pull
    request names or ships runs, and installed plugins load only when named in `plugins`.
    `markdown` writes the pull-request comment (shortened to GitHub's limit), `full_markdown`
    the whole review."""
    import sys

    from evalspec._review.markdown import write_review_markdown
    from evalspec._review.repo import DEFAULT_PATTERNS, review_repository
    from evalspec._suite.limits import review_budget, untrusted
    from evalspec._util import registry

    mode = gate_mode(gate)  # an unknown name is refused before anything is read
    check_output_file(markdown, "markdown")
    check_output_file(full_markdown, "full_markdown")
    with registry.allow_only(plugins), untrusted(), review_budget("review"):
        result = review_repository(
            list(patterns or DEFAULT_PATTERNS),
            base_ref,
            cwd=cwd,
            allow_stale=allow_stale,
            gate=mode,
        )
    if markdown:
        write_review_markdown(result, markdown)
    if full_markdown:
        write_review_markdown(result, full_markdown, limit=sys.maxsize)
    return result
