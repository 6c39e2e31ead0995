"""Merge the run directories of shards (`--shard i/n`) into one run, then score it as `run` does.

Each shard's run.json names its suite; shards of different suites are refused, because their
item ids and case names would not mean the same thing. Transcripts are combined by item id, the
last directory given winning, so a re-run shard listed later replaces an earlier attempt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from evalspec._runner.run_dir import Selection
from evalspec._suite.model import Suite
from evalspec._transcript import Transcript
from evalspec._util.errors import UsageError


@dataclass
class Merged:
    """The combined transcripts of several run directories, and what the merge noticed."""

    suite_path: Path
    transcripts: list[Transcript]
    duplicates: int = 0
    """Items found in more than one directory (the last one kept)."""
    sources: list[Path] = field(default_factory=list)


def suite_of(run_dir: Path) -> tuple[str, str] | None:
    """(suite name, suite path) a run directory belongs to, from run.json or results.json."""
    from evalspec._runner.run_dir import read_manifest, run_file
    from evalspec._util.errors import InputError
    from evalspec._util.reading import read_text
    from evalspec._util.records import RecordError, decode

    manifest = read_manifest(run_dir)
    if manifest is not None:
        return manifest.suite, manifest.path
    file = run_file(run_dir, "results.json")
    try:
        owner = decode(read_text(file, str(file)), _Owner, str(file))
    except (InputError, RecordError):
        return None
    return (owner.suite, owner.path or "") if owner.suite is not None else None


class _Owner(msgspec.Struct, frozen=True):
    """The two keys of a results.json (evalspec._scoring.results_file) that name its suite;
    the rest is not read here."""

    suite: str | None = None
    path: str | None = None


def combine(run_dirs: Sequence[Path], suite: Path | None = None) -> Merged:
    """Read every shard's transcripts (last wins per item id); check they share one suite."""
    from evalspec._runner.run_dir import TRANSCRIPTS_FILE, read_finished

    if not run_dirs:
        raise UsageError("merge needs at least one run directory")
    owners: dict[Path, tuple[str, str] | None] = {}
    for run_dir in run_dirs:
        if not (run_dir / TRANSCRIPTS_FILE).is_file():
            raise UsageError(f"{run_dir} is not a run directory: it has no {TRANSCRIPTS_FILE}")
        owners[run_dir] = suite_of(run_dir)
    names = {o[0] for o in owners.values() if o}
    if len(names) > 1:
        listing = "; ".join(f"{d}: suite {o[0]!r}" for d, o in owners.items() if o)
        raise UsageError(
            f"these run directories belong to different suites ({listing}); "
            "merge only shards of one suite"
        )
    suite_path = suite
    if suite_path is None:
        paths = {o[1] for o in owners.values() if o and o[1]}
        if len(paths) != 1:
            raise UsageError(
                "cannot tell which suite file these runs belong to"
                + (f" (they name {', '.join(sorted(paths))})" if paths else "")
                + "; pass suite=SUITE",
                params=["suite"],
            )
        suite_path = Path(paths.pop())
    merged: dict[str, Transcript] = {}
    duplicates = 0
    for run_dir in run_dirs:
        for item_id, t in read_finished(run_dir).items():
            duplicates += item_id in merged
            merged.pop(item_id, None)  # re-insert so the order follows the winning directory
            merged[item_id] = t
    return Merged(suite_path, list(merged.values()), duplicates, list(run_dirs))


@dataclass
class MergeOutcome:
    """A merged run directory, written; what remains is to score it."""

    suite: Suite
    transcripts: list[Transcript]
    missing: int
    """Planned items found in none of the directories (a shard not run or not finished)."""
    planned: int
    note: str


def merge_runs(run_dirs: Sequence[Path], out: Path, *, suite: Path | None = None) -> MergeOutcome:
    """Write one run directory (transcripts.jsonl, run.json) from the shards' directories."""
    from evalspec._plan import compile_plan
    from evalspec._runner.run_dir import (
        RUN_DIRECTORY,
        TRANSCRIPTS_FILE,
        read_manifest,
        run_file,
        write_manifest,
    )
    from evalspec._suite.validate import load_suite
    from evalspec._transcript import write_transcripts
    from evalspec._util.project import named

    out = named(out, RUN_DIRECTORY)
    if out.resolve() in {d.resolve() for d in run_dirs}:
        raise UsageError(
            f"out={out} is one of the run directories; choose a new directory", params=["out"]
        )
    if out.is_dir() and any(out.iterdir()):
        # Merging into another run's directory would mix its transcripts with the shards'.
        raise UsageError(
            f"out={out} already holds files of a run; choose a new directory", params=["out"]
        )
    merged = combine(run_dirs, suite)
    loaded = load_suite(merged.suite_path)
    names = {o[0] for o in map(suite_of, run_dirs) if o}
    if names and loaded.name not in names:
        raise UsageError(
            f"{merged.suite_path} is suite {loaded.name!r}, but the runs are of suite "
            f"{names.pop()!r}"
        )
    first = read_manifest(run_dirs[0])
    selection = Selection()
    if first is not None and first.selection is not msgspec.UNSET:
        selection = msgspec.structs.replace(first.selection, shard=msgspec.UNSET)
    plan = compile_plan(
        loaded,
        cases=selection.cases or None,
        models=selection.models or None,
        trials=selection.trials or None,
    )
    wanted = [it.id for it in plan.items]
    by_id = {t.item_id: t for t in merged.transcripts}
    ordered = [by_id[i] for i in wanted if i in by_id]
    planned = set(wanted)
    ordered += [t for t in merged.transcripts if t.item_id not in planned]
    missing = len([i for i in wanted if i not in by_id])
    out.mkdir(parents=True, exist_ok=True)
    write_transcripts(run_file(out, TRANSCRIPTS_FILE), ordered)
    merged_from = [str(d) for d in run_dirs]
    write_manifest(out, loaded, msgspec.structs.replace(selection, merged_from=merged_from))
    errored = sum(1 for t in ordered if t.error)
    note = f"(merged from {len(run_dirs)} run directories" + (
        f", {merged.duplicates} duplicates replaced" if merged.duplicates else ""
    )
    note += f", {errored} errored)" if errored else ")"
    return MergeOutcome(loaded, ordered, missing, len(wanted), note)
