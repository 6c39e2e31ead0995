"""The run directory: transcripts.jsonl (one line per finished item) and run.json (what ran).

A run directory is how a run survives a crash: finished items are read back on `--resume`, and
run.json lets shards of one run be recognised and merged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import msgspec

from evalspec._suite.limits import max_transcripts_bytes
from evalspec._suite.model import Suite
from evalspec._transcript import Transcript, read_line
from evalspec._util import finite
from evalspec._util.errors import InputError, UsageError
from evalspec._util.files import FILE_MODE, NOFOLLOW, lock_descriptor, write_text_atomic
from evalspec._util.paths import safe_name
from evalspec._util.project import checked, kind, named
from evalspec._util.reading import read_existing
from evalspec._util.records import RecordError, decode

if TYPE_CHECKING:
    from evalspec._plan import Plan
    from evalspec._runner.evidence import StaleTranscript

TRANSCRIPTS_FILE = "transcripts.jsonl"
MANIFEST_FILE = "run.json"

_log = logging.getLogger(__name__)


RECORDINGS = kind("recordings")
RUN_DIRECTORY = kind("run directory", directory=True)
RUN_FILE = kind("run file")
"""transcripts.jsonl, run.json, results.json and the lock of a run directory."""

LOCK_FILE = ".lock"
"""Locked by the one run writing the directory; empty, and left behind harmlessly."""


@contextlib.contextmanager
def run_dir_lock(run_dir: Path) -> Iterator[None]:
    """Let one run at a time write `run_dir`: two `--resume` of one directory at once would each
    run (and pay for) every unfinished item. The second is refused at once; the lock goes with
    the process, so a crash or kill -9 never leaves the directory locked."""
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(run_file(run_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT | NOFOLLOW, FILE_MODE)
    except OSError as exc:
        raise UsageError(f"cannot lock the run directory {run_dir}: {exc.strerror}") from None
    try:
        held = lock_descriptor(fd, wait=False)
    except BaseException:
        os.close(fd)
        raise
    if not held:
        os.close(fd)
        raise UsageError(
            f"{run_dir} is being written by another evalspec run; wait for it to end (or stop "
            "it), then resume"
        ) from None
    try:
        yield
    finally:
        os.close(fd)  # closing releases the lock


def run_file(run_dir: Path, name: str) -> Path:
    """A file of a run directory, held to the project's policy (no link in its place)."""
    return checked(name, run_dir, RUN_FILE)


def recordings_path(suite: Suite, override: Path | None = None) -> Path:
    """Recordings live beside the suite: <suite>.recordings.jsonl unless the suite says where;
    `--recordings` names a file of the caller's choosing. Held to the project's policy: a
    committed link would have a run append answers wherever it points."""
    if override:
        return named(override, RECORDINGS)
    base = Path(suite.path).resolve().parent
    given = suite.run.recordings or f"{Path(suite.path).stem}.recordings.jsonl"
    return checked(given, base, RECORDINGS)


def read_finished(run_dir: Path) -> dict[str, Transcript]:
    """Transcripts already in a run directory, by item id.

    A line that cannot be read (cut by a crash or a full disk, even inside a UTF-8 character) is
    skipped with a note: that item simply runs again."""
    path = run_file(run_dir, TRANSCRIPTS_FILE)
    done: dict[str, Transcript] = {}
    data = read_existing(path, limit=max_transcripts_bytes())  # the limit a run writes to
    if data is None:
        return done
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            t = read_line(raw, str(path), number)
        except (InputError, RecordError, UnicodeDecodeError) as exc:
            why = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else "not a transcript"
            _log.warning(
                "note: %s:%d: skipped an unreadable line (%s, e.g. cut by a crash); "
                "that item runs again",
                path,
                number,
                why,
            )
            continue
        done[t.item_id] = t
    return done


def transcripts_of(run_dir: Path, item_ids: Iterable[str]) -> list[Transcript]:
    """The transcripts of these items only, read back from the run directory: a report shows
    the calls of a few conversations without the run keeping every transcript in memory.
    Only lines that name one of the items are decoded; unreadable lines are left out."""
    wanted = {i.encode() for i in item_ids}
    if not wanted:
        return []
    found: list[Transcript] = []
    try:
        with open(run_file(run_dir, TRANSCRIPTS_FILE), "rb") as lines:  # streamed, line by line
            for number, raw in enumerate(lines, start=1):
                if any(i in raw for i in wanted):
                    with contextlib.suppress(InputError, RecordError, UnicodeDecodeError):
                        t = read_line(raw, TRANSCRIPTS_FILE, number)
                        if t.item_id.encode() in wanted:
                            found.append(t)
    except FileNotFoundError:
        return []
    return found


def completed(run_dir: Path) -> dict[str, Transcript]:
    """Transcripts that need no re-run on resume: finished without a run error."""
    return {k: t for k, t in read_finished(run_dir).items() if not t.error}


@dataclass(frozen=True)
class ResumeState:
    """What `--resume` keeps of a run directory, and what it runs again though it finished."""

    kept: dict[str, Transcript] = field(default_factory=dict)
    """Finished items of the plan whose every request is still the suite's, by item id."""
    stale: tuple[StaleTranscript, ...] = ()
    """Finished items whose tool answers differ under the suite as it is now: they run again."""


def resume_state(run_dir: Path, plan: Plan) -> ResumeState:
    """The finished items of `plan` in `run_dir`, checked against the suite as it is now.

    An item's id covers its opening request only; the tools' answers after it are checked here
    (see `evidence`), so an item recorded under a simulated output since edited runs again
    rather than being kept with an answer the suite no longer gives.
    """
    from evalspec._runner.evidence import stale_transcripts

    ids = {it.id for it in plan.items}
    done = {k: t for k, t in completed(run_dir).items() if k in ids}
    stale = stale_transcripts(plan.suite, list(done.values()), plan=plan)
    for s in stale:
        del done[s.transcript.item_id]
    return ResumeState(done, tuple(stale))


class Selection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What part of the suite a run directory holds: `run`'s options as given (null: all).
    A key a writer left out stays out when the manifest is written back."""

    cases: list[str] | msgspec.UnsetType | None = msgspec.UNSET
    models: list[str] | msgspec.UnsetType | None = msgspec.UNSET
    trials: Annotated[int, msgspec.Meta(ge=1)] | msgspec.UnsetType | None = msgspec.UNSET
    shard: str | msgspec.UnsetType | None = msgspec.UNSET
    """`I/N` of a sharded run; a merged run has none."""
    merged_from: list[str] | msgspec.UnsetType = msgspec.UNSET
    """The run directories a merged run was made from."""


class RunManifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """run.json: which suite and selection a run directory belongs to. Unknown keys are
    refused: a manifest that cannot be read wholly is not trusted to vouch for a run."""

    suite: str
    path: str = ""
    """The suite file's absolute path when the run started."""
    selection: Selection | msgspec.UnsetType = msgspec.UNSET


def write_manifest(run_dir: Path, suite: Suite, selection: Selection) -> None:
    """run.json (atomic write)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = RunManifest(
        suite=suite.name, path=str(Path(suite.path).resolve()), selection=selection
    )
    write_text_atomic(run_file(run_dir, MANIFEST_FILE), manifest_text(manifest))


def manifest_text(manifest: RunManifest) -> str:
    """run.json's text: indented, as 1.0 wrote it."""
    data = msgspec.to_builtins(manifest)
    return finite.dumps(data, MANIFEST_FILE, indent=2, ensure_ascii=False) + "\n"


def read_manifest(run_dir: Path) -> RunManifest | None:
    """The run.json of a run directory, or None when it has none (or one that is not a
    manifest: the run is then treated as having none, with a note)."""
    path = run_file(run_dir, MANIFEST_FILE)
    try:
        raw = read_existing(path)
    except OSError:
        return None
    if raw is None:
        return None
    try:
        return decode(raw, RunManifest, str(path), root="the file")
    except (InputError, RecordError, UnicodeDecodeError) as exc:
        _log.warning("note: %s is not a run manifest (%s); ignored", path, exc)
        return None


def default_run_dir(suite: Suite) -> Path:
    """runs/<suite>/<time> under the working directory: no link on the way."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    named(Path("runs") / safe_name(suite.name), RUN_DIRECTORY)
    return claim_new_dir(Path("runs") / safe_name(suite.name) / stamp)


def claim_new_dir(wanted: Path) -> Path:
    """Create and return a directory no other run uses: `wanted`, else `wanted-2`, `-3`, ...

    `mkdir` fails when the directory exists, so two runs started in the same second never
    share one, even in parallel processes."""
    wanted.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        candidate = wanted if n == 1 else wanted.with_name(f"{wanted.name}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(f"no free run directory name beside {wanted}")


def refuse_used_out(out: Path) -> None:
    """An --out that already holds files belongs to another run: refused (use --resume)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        what = "is not a directory" if not out.is_dir() else "already holds files of a run"
        raise UsageError(
            f"out={out} {what}; give a new directory, or finish that run with resume={out}",
            params=["out", "resume"],
        )
