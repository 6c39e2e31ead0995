"""`evalspec capture accept`: a capture run's calls written into its suite as expectations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalspec._util.errors import UsageError
from evalspec._util.outputs import check_output_file


@dataclass(frozen=True)
class CaptureAccepted:
    """What `accept_capture` wrote: the suite, the cases given expectations, those left."""

    path: Path
    written: tuple[str, ...]
    """Cases whose `capture: true` became an `expect:` block."""
    left: tuple[tuple[str, str], ...] = ()
    """(case, why) for capture cases left as they are: no finished run of them, ..."""


def accept_capture(
    suite: str | Path, run_dir: str | Path, *, models: Sequence[str] | None = None
) -> CaptureAccepted:
    """Write what the models of `run_dir` called in each capture case of `suite` as that
    case's expectations, in the suite file itself (everything else in it as written).

    `models` keeps those models' runs only (default: every model in the run). The edited file
    is validated before it replaces the suite: a change that would not validate is refused
    (UsageError) and nothing is written."""
    from evalspec._interop.capture import (
        NotWritable,
        apply_edits,
        block,
        capture_edits,
        expectation,
        runs_of,
    )
    from evalspec._runner.run_dir import read_finished
    from evalspec._suite.load import read_text
    from evalspec._suite.validate import load_suite
    from evalspec._util.reading import display_name

    path, run_dir = Path(suite), Path(run_dir)
    check_output_file(path, "suite")  # rewritten in place: a link there is refused
    if not (run_dir / "transcripts.jsonl").is_file():
        raise UsageError(f"{run_dir} holds no transcripts.jsonl: give the run directory of a run")
    loaded = load_suite(path)
    finished = [t for t in read_finished(run_dir).values() if not t.error]
    if models:
        finished = [t for t in finished if t.model in set(models)]
    text = read_text(path)
    lines = text.split("\n")
    tools = {t.name: t.parameters for t in loaded.tools}
    here = Path(path).resolve()
    edits, written, left = [], [], []
    places: dict[tuple[str, int], int] = {}
    for case in loaded.cases:
        if case.capture is not None:
            key = (case.capture.file, case.capture.line)
            places[key] = places.get(key, 0) + 1
    for case in (c for c in loaded.cases if c.capture is not None):
        assert case.capture is not None
        mine = [t for t in finished if t.case == case.name]
        if not mine:
            left.append((case.name, f"no finished run of it in {display_name(run_dir)}"))
            continue
        if Path(case.capture.file).resolve() != here:
            left.append((case.name, f"it is written in {case.capture.file}: accept that file"))
            continue
        if places[(case.capture.file, case.capture.line)] > 1:
            left.append((case.name, "several cases come from it (a matrix): write them by hand"))
            continue
        runs = runs_of(mine, len(case.turns))
        blocks = [block(*expectation(runs, k, tools), 0) for k in range(max(len(case.turns), 1))]
        try:
            edits.extend(capture_edits(case, lines, blocks))
        except NotWritable as exc:
            left.append((case.name, str(exc)))
            continue
        written.append(case.name)
    if written:
        _replace_validated(path, apply_edits(text, edits))
    return CaptureAccepted(path, tuple(written), tuple(left))


def _replace_validated(path: Path, text: str) -> None:
    """Replace `path` with `text` only if it validates there (includes are read beside it)."""
    import os
    import tempfile

    from evalspec._suite.validate import load_suite
    from evalspec._util.errors import SpecError
    from evalspec._util.files import atomic_write

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        try:
            load_suite(tmp)
        except SpecError as exc:
            why = str(exc).splitlines()[0].replace(tmp, str(path))  # the user's file, not ours
            raise UsageError(
                f"the expectations written into {path} would not validate, so nothing was "
                f"written: {why}"
            ) from None
    finally:
        os.unlink(tmp)
    with atomic_write(path) as fh:
        fh.write(text)
