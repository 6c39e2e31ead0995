"""`evalspec review`: every suite of a repository against a base git ref, in one verdict.

For each suite the glob patterns name: read its base version from git (the base tree's regular
files are exported, so includes, recordings and caches come from the same commit), replay the
base suite on the base's recordings, replay the head suite on the head's recordings (they answer
the cases whose base evidence is stale or missing), and diff. Nothing is sent anywhere: replays
are offline. Paths in the result are relative to the repository.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalspec._compare.diff import diff_suites
from evalspec._compare.recordings_check import RecordingsChange, recordings_change
from evalspec._compare.records import (
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_SECURITY,
    EXIT_UNVERIFIED,
    NEW_SUITE_NOTE,
    Comparison,
)
from evalspec._compare.security import known_settings
from evalspec._review.calibration import calibration_review
from evalspec._review.git_base import at_ref, export_tree, repo_root, resolve_commit
from evalspec._suite.limits import MAX_REPLAY_CHARS_ENV, max_replay_chars
from evalspec._suite.load import is_include_file
from evalspec._suite.mcp_drift import locks_drift
from evalspec._suite.model import GateOn, Suite
from evalspec._transcript import Transcript
from evalspec._util.errors import SpecError, UsageError
from evalspec._util.globbing import TooManyMatches, expand

DEFAULT_PATTERNS = ("suites/*.yaml",)
EXIT_PRECEDENCE = (EXIT_SECURITY, EXIT_REGRESSION, EXIT_UNVERIFIED)


@dataclass(frozen=True)
class SuiteReview:
    path: str
    """Repository-relative, with forward slashes."""
    comparison: Comparison | None
    """None: the suite exists only in the base (removed by this change)."""
    calibration: tuple[str, ...] = ()
    """The judge changed while people's labels hold it to account: calibration stale, and
    the agreement before and after when both can be measured."""

    @property
    def exit_code(self) -> int:
        return self.comparison.exit_code if self.comparison is not None else EXIT_OK

    @property
    def untouched(self) -> bool:
        """Nothing to say: no change to the suite, no skip, no case that moved or lacks
        evidence."""
        c = self.comparison
        if c is None:
            return False
        return (
            not self.calibration
            and not c.security
            and not c.skipped
            and not c.suite_wide
            and not c.suite_changes
            and not c.recordings
            and not c.tool_drift
            and c.exit_code == EXIT_OK
            and all(
                ch.kind == "unchanged" and not ch.unverified and not ch.named for ch in c.changes
            )
        )


@dataclass(frozen=True)
class Review:
    """A pull request's review: one entry per suite, most severe first, and one exit code."""

    base_ref: str
    suites: tuple[SuiteReview, ...]

    @property
    def exit_code(self) -> int:
        codes = {s.exit_code for s in self.suites}
        return next((code for code in EXIT_PRECEDENCE if code in codes), EXIT_OK)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_ref": self.base_ref,
            "exit_code": self.exit_code,
            "suites": [
                {"path": s.path, "removed": s.comparison is None, "calibration": s.calibration}
                | (s.comparison.to_dict() if s.comparison is not None else {})
                for s in self.suites
            ],
        }


def suite_rank(s: SuiteReview) -> tuple[int, str]:
    """Most severe first: security, regressions, missing evidence, other changes, untouched."""
    if s.untouched:
        return 9, s.path
    code = s.exit_code
    rank = EXIT_PRECEDENCE.index(code) if code in EXIT_PRECEDENCE else len(EXIT_PRECEDENCE)
    return rank, s.path


def find_suites(root: Path, patterns: Sequence[str]) -> list[str]:
    """Repository-relative suite paths the patterns name under `root` (sorted, no escapes)."""
    found: set[str] = set()
    for pattern in patterns:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise UsageError(f"{pattern}: suite patterns are relative to the repository")
        try:
            matches = expand(str(root / pattern))
        except TooManyMatches as exc:
            raise UsageError(str(exc)) from None
        for match in matches:
            path = Path(match).resolve()
            if path.is_file() and path.is_relative_to(root) and not is_include_file(path):
                found.add(path.relative_to(root).as_posix())  # an include file: with its suite
    return sorted(found)


def _load_bases(
    base_root: Path, paths: Sequence[str], ref: str
) -> tuple[dict[str, Suite], dict[str, str]]:
    """The suites at the base that load, and for the others their first problem, named as at
    the ref: a pull request that mends a broken suite is reviewed as bringing it in anew."""
    from evalspec._suite.validate import load_suite

    bases: dict[str, Suite] = {}
    broken: dict[str, str] = {}
    for rel in paths:
        try:
            bases[rel] = load_suite(base_root / rel)
        except SpecError as exc:
            problems = [at_ref(p, base_root, ref) for p in exc.problems]
            more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
            broken[rel] = (str(problems[0]) if problems else "a problem") + more
    return bases, broken


class ReplayBudget:
    """What the replays of one suite's base and head hold, which review keeps until the suite is
    scored: model answers, tool outputs and states, in characters. Past the limit
    (REVIEW_MAX_REPLAY_CHARS) review stops at once (100 cases whose tools answered 10 MB each
    took 4.8 GB)."""

    def __init__(self) -> None:
        self.limit = max_replay_chars()
        self.chars = 0
        self._states: dict[int, Any] = {}
        """Top-level collections of states already counted, by identity (kept, so an id is
        never another's): cases share the ones their calls leave alone."""

    def add(self, where: str, t: Transcript) -> None:
        """Charge one replayed transcript; UsageError (exit 2) past the limit."""
        from evalspec._suite.state.spec import weigh

        for m in t.messages:
            if m.get("role") != "system" and m.get("role") != "user":
                self.chars += _text_chars(m.get("content")) + _text_chars(m.get("tool_calls"))
        for call in t.tool_calls:
            self.chars += _text_chars(call.output) + _text_chars(call.arguments)
        state = t.state
        for value in state.values() if type(state) is dict else [state]:
            if id(value) not in self._states:
                self._states[id(value)] = value
                self.chars += weigh(value, 1 << 62, self.limit)[2]
        if self.chars > self.limit:
            raise UsageError(
                f"{where}: its recordings replay to more than {self.limit} characters of "
                f"model answers, tool outputs and states (at case {t.case!r}), more than a "
                f"review holds; make the tools answer less, or whoever runs the review may "
                f"raise {MAX_REPLAY_CHARS_ENV}"
            )


def _text_chars(value: Any) -> int:
    """Characters of a message's or an output's value, about (its texts and keys)."""
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    from evalspec._suite.state.spec import weigh

    return weigh(value, 1 << 62, 1 << 62)[2]


def _replay(suite: Suite, root: Path, budget: ReplayBudget) -> list[Transcript]:
    """The suite's recorded answers, replayed offline; items with no recording are left out.

    Each transcript is charged to the review's budget as it finishes; a case stopped at one of
    evalspec's limits (too many calls, too much tool output) stops the review."""
    from evalspec._plan import compile_plan
    from evalspec._runner.execute import OVER_LIMIT, RunOptions, run_plan
    from evalspec._runner.run_dir import recordings_path

    recordings = recordings_path(suite).resolve()
    if not recordings.is_relative_to(root):
        raise UsageError(
            f"{suite.path}: its recordings ({suite.run.recordings}) are outside the repository"
        )
    if not recordings.is_file():
        return []

    path = Path(suite.path).resolve()
    where = path.relative_to(root).as_posix() if path.is_relative_to(root) else suite.path

    def done(t: Transcript) -> None:
        if t.finish_reason in OVER_LIMIT:
            raise UsageError(f"{where}: its recordings for case {t.case!r}: {t.error}")
        budget.add(where, t)

    outcome = run_plan(compile_plan(suite), RunOptions(record="offline"), on_done=done)
    return [t for t in outcome.transcripts if not t.error]


def _recordings_change(head: Suite, root: Path, base_root: Path) -> RecordingsChange | None:
    """The head's recordings file against the same file of the base, and its requests checked
    (see recordings_check): a changed recordings file is always named."""
    from evalspec._runner.run_dir import recordings_path

    path = recordings_path(head)
    rel = path.relative_to(root).as_posix()
    return recordings_change(base_root / rel, path, rel)


TEXT_ONLY = "the file's text changed (comments or layout: no case, tool or setting differs)"


def _same_text(base: Path, head: Path) -> bool:
    return base.read_bytes() == head.read_bytes()


def _text_changed(comparison: Comparison) -> Comparison:
    """A suite file that differs is never untouched: a change nothing else names is said."""
    nothing_named = not (
        comparison.suite_wide
        or comparison.suite_changes
        or comparison.security
        or any(c.named for c in comparison.changes)
    )
    if not nothing_named:
        return comparison
    return replace(comparison, suite_changes=(*comparison.suite_changes, TEXT_ONLY))


def review_repository(
    patterns: Sequence[str],
    base_ref: str,
    *,
    cwd: Path | None = None,
    allow_stale: bool = False,
    gate: GateOn | None = None,
) -> Review:
    """Diff every suite the patterns name against its version at `base_ref`.

    `gate` (any_regression, significant_drop, none) overrides the `mode:` of each suite's gate."""
    from evalspec._suite.validate import load_suite

    root = repo_root(cwd or Path.cwd())
    commit = resolve_commit(root, base_ref)
    head_paths = find_suites(root, patterns)
    with tempfile.TemporaryDirectory(prefix="evalspec-review-") as tmp:
        base_root = Path(tmp).resolve()
        export_tree(root, commit, base_root)
        base_paths = find_suites(base_root, patterns)
        if not head_paths and not base_paths:
            raise UsageError(f"no suite matches {' '.join(patterns)} in {root.name}")
        bases, broken = _load_bases(base_root, base_paths, base_ref)
        known = known_settings(list(bases.values()))
        # Paths a suite names (an embedding model) are relative to the working directory.
        here = (cwd or Path.cwd()).resolve()
        model_root = base_root / here.relative_to(root) if here.is_relative_to(root) else base_root
        reviews = []
        for rel in head_paths:
            held = ReplayBudget()
            head = load_suite(root / rel)
            base = bases.get(rel)
            base_tx = _replay(base, base_root, held) if base is not None else []
            head_tx = _replay(head, root, held)
            comparison = diff_suites(
                base,
                head,
                base_tx if base is not None else head_tx,
                head_transcripts=head_tx,
                base_label=f"{base_ref}:{rel}",
                head_label=rel,
                source=f"the recordings of {base_ref}" if base is not None else "its recordings",
                allow_stale=allow_stale,
                known_endpoints=known,
                model_root=model_root,
            )
            if base is not None and not _same_text(base_root / rel, root / rel):
                comparison = _text_changed(comparison)
            if rel in broken:  # a change that mends a suite the base cannot load
                why = f"the suite at {base_ref} does not load ({broken[rel]}): every case is new"
                notes = tuple(why if n == NEW_SUITE_NOTE else n for n in comparison.notes)
                comparison = replace(comparison, notes=notes)
            changed = _recordings_change(head, root, base_root)
            if changed is not None:
                comparison = replace(comparison, recordings=(changed,))
            drift = locks_drift(base_root / rel, root / rel) if base is not None else []
            if drift:
                comparison = replace(comparison, tool_drift=tuple(drift))
            if gate is not None:
                comparison = replace(comparison, gate=replace(comparison.gate, mode=gate))
            stale = calibration_review(base, head, base_tx, head_tx, rel)
            reviews.append(SuiteReview(rel, comparison, stale))
        reviews += [SuiteReview(rel, None) for rel in base_paths if rel not in head_paths]
    return Review(base_ref, tuple(sorted(reviews, key=suite_rank)))
