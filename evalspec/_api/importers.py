"""Importers: other systems' data turned into suites (YAML in evalspec's language, to edit and
validate like any other) and transcripts (JSONL, for `rescore`/`evalspec score`).

Files are read through evalspec._util.reading (size, type, UTF-8, depth and NaN checked
there); content of the right syntax but the wrong shape is one UsageError naming the file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec._interop.records import MALFORMED, refused_all, refused_case, why
from evalspec._util.errors import UsageError
from evalspec._util.outputs import check_output_file
from evalspec._util.paths import folder_label, model_label
from evalspec._util.reading import display_name
from evalspec._util.terminal import plain

if TYPE_CHECKING:
    from evalspec._interop.bfcl import Read
    from evalspec._interop.pii import Redactor
    from evalspec._interop.records import Refusal, Sources
    from evalspec._interop.trace_suites import AnswerStore, SuiteWriter
    from evalspec._suite.model import Case
    from evalspec._transcript import Transcript

_MALFORMED = MALFORMED
"""What converting a file of the right syntax but the wrong content raises."""


@dataclass(frozen=True)
class SuitesWritten:
    """Suite files an importer wrote (several when one function name is defined differently
    across records: a suite offers one definition per tool name)."""

    paths: tuple[Path, ...]
    cases: int
    invalid: int = 0
    """BFCL records whose possible answer names a parameter or function the record lacks."""
    invalid_tag: str = ""
    """The tag those cases carry."""
    refused: tuple[Refusal, ...] = ()
    """Records refused, each with its file, line and reason; each stands in a suite as a case
    that fails (tagged `import-refused`)."""
    summary: str = ""
    """What was read, imported and refused, in one line."""


@dataclass(frozen=True)
class TranscriptsWritten:
    """A transcripts.jsonl an importer wrote."""

    path: Path
    count: int
    skipped: int = 0
    """Records left out: results of records that are not cases of the suite."""
    suites: tuple[Path, ...] = ()
    """Suites written beside the transcripts (StableToolBench answers with a judge)."""
    summary: str = ""
    """What was read and kept, in one line (StableToolBench answers)."""
    refused: tuple[Refusal, ...] = ()
    """Records refused, each with its file, line and reason (a record of a case still gives
    a transcript, errored, which fails)."""


@contextlib.contextmanager
def importing(source: Path, what: str) -> Iterator[None]:
    """Reading and converting `source`: content that does not fit becomes one clear line."""
    try:
        yield
    except _MALFORMED as exc:
        raise UsageError(
            f"{source} is not a valid {what} file: {why(exc)}; check that it is {what} output"
        ) from None


def _write_transcripts(out: Path, transcripts: list[Any]) -> None:
    from evalspec._transcript import write_transcripts

    out.parent.mkdir(parents=True, exist_ok=True)
    write_transcripts(out, transcripts)


def import_bfcl(
    questions: str | Path,
    out: str | Path,
    answers: str | Path | None = None,
    *,
    names: str | None = None,
    name: str | None = None,
    models: Sequence[str] | None = None,
) -> SuitesWritten:
    """Write a suite with one case per BFCL record, judged by BFCL's possible answers (none
    for the irrelevance categories: every record then expects no call).

    `names` is BFCL's tool-name rule for the model: `dotted` keeps `math.factorial`,
    `underscored` offers `math_factorial`; required when a record names a function with a dot.
    A record that cannot become a case is refused (`SuitesWritten.refused`, each naming the
    file with the fault) and stands in the suite as a case that fails; the rest import."""
    from evalspec._interop.bfcl import (
        ANSWERS,
        DEFAULT_MODEL,
        INVALID_TAG,
        NAME_RULES,
        QUESTIONS,
        read_numbered,
        write_suites,
    )
    from evalspec._interop.records import Sources

    questions, out = Path(questions), Path(out)
    check_output_file(out, "out")
    if names is not None and names not in NAME_RULES:
        raise UsageError(f"names={names!r}: use one of {', '.join(NAME_RULES)}", params=["names"])
    asked = read_numbered(questions)
    given = read_numbered(answers) if answers is not None else None
    sources = Sources(
        {QUESTIONS: display_name(questions), ANSWERS: display_name(Path(answers or ""))},
        {QUESTIONS: asked.lines, ANSWERS: given.lines if given else {}},
    )
    refused = [*asked.refused, *(given.refused if given else ())]
    if not asked.records:
        raise refused_all(refused, "a BFCL question file")
    if given is not None and not given.records:  # the answer file is wrong, not a record
        raise refused_all(given.refused, "a BFCL possible_answer file")
    settings = {"name": name or questions.stem, "models": list(models or [DEFAULT_MODEL])}
    with importing(questions, "BFCL"):  # a last guard: what no record's check caught
        suites = _bfcl_suites(asked.records, given, names, refused, sources, settings)
    # A question line that is no record still counts: a case that fails, named by its line.
    suites[0]["cases"].extend(refused_case(r) for r in asked.refused)
    paths = write_suites(out, suites)
    invalid = sum(INVALID_TAG in c["tags"] for s in suites for c in s["cases"])
    cases = sum(len(s["cases"]) for s in suites)
    summary = _bfcl_summary(asked, given, suites)
    return SuitesWritten(tuple(paths), cases, invalid, INVALID_TAG, tuple(refused), summary)


def _bfcl_summary(asked: Read, given: Read | None, suites: list[dict[str, Any]]) -> str:
    """What the two files held and what became of it: the entries of the question file, the
    cases imported and refused, the answer file's entries that are no answer or answer no
    question (they make no case, so only this line counts them)."""
    from evalspec._suite.model import REFUSED_TAG

    entries = len(asked.records) + len(asked.refused)
    refused = sum(REFUSED_TAG in c["tags"] for s in suites for c in s["cases"])
    cases = sum(len(s["cases"]) for s in suites)
    line = (
        f"{entries} question entries read: {cases - refused} imported as cases, {refused} "
        "refused (each stands as a case tagged import-refused that fails)"
    )
    if given is None:
        return line
    if given.refused:
        line += f"; {len(given.refused)} entries of the answer file refused (no case)"
    unused = sorted(set(given.lines) - set(asked.lines))
    if unused:
        line += f"; {len(unused)} possible answer(s) of no question, unused ({_some(unused)})"
    return line


def _some(names: Sequence[str], shown: int = 3) -> str:
    """The first few of `names`, each cut to 60 characters, and how many more."""
    text = ", ".join(repr(n[:60]) for n in names[:shown])
    return text + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _bfcl_suites(
    records: list[dict[str, Any]],
    given: Read | None,
    names: str | None,
    refused: list[Refusal],
    sources: Sources,
    settings: dict[str, Any],
) -> list[dict[str, Any]]:
    """The suites of BFCL records: multi-turn ones in one suite, the others by `names`."""
    from evalspec._interop.bfcl import bfcl_suite_dicts, dotted_names
    from evalspec._interop.bfcl_multi_turn import is_multi_turn, multi_turn_suite_dict

    if is_multi_turn(records):
        suite = multi_turn_suite_dict(
            records,
            given.records if given else None,
            refused=refused,
            sources=sources,
            **settings,
        )
        return [suite]
    dotted = dotted_names(records)
    if names is None and dotted:
        raise UsageError(
            f"{sources.files['questions']} names functions with a dot ({', '.join(dotted[:3])}"
            f"{' ...' if len(dotted) > 3 else ''}), which BFCL offers differently to "
            "different models: say names=dotted for a prompting model (or a "
            "function-calling one whose API allows dots), names=underscored for OpenAI, "
            "Anthropic, Mistral or Google function calling (`math_factorial`)",
            params=["names"],
        )
    return bfcl_suite_dicts(
        records,
        given.records if given else None,
        names=names or "dotted",
        refused=refused,
        sources=sources,
        **settings,
    )


V3_MULTI_TURN_NOTE = (
    "note: BFCL v3 results: v4 rewrote most multi-turn records (of 200 per category, 88 base, "
    "86 miss_param and 86 miss_func kept their question, state and ground truth); a verdict "
    "on any other record judges an answer to another question (docs/differences.md)"
)
"""Said when BFCL v3 multi-turn results are imported for a suite made of v4's questions."""


def import_bfcl_results(
    suite: str | Path,
    results: str | Path,
    out: str | Path,
    *,
    model: str | None = None,
    kind: str | None = None,
) -> TranscriptsWritten:
    """Turn BFCL model results into transcripts for the cases of a suite `import_bfcl` wrote.

    Results are decoded as BFCL decodes them (never run): `kind` `prompting` (call text), `fc`
    (call lists), `json` or `llama` (JSON call objects in text), `qwen_fc`, `hermes`,
    `granite`, `glm` or `nexus` (calls between their handler's markers), by default guessed
    from the file. Results of records that are not cases of the suite are skipped (counted).
    A suite of a multi-turn category takes BFCL's multi-turn results (turns of steps of
    calls), each call answered by the suite's tools."""
    from evalspec._interop.bfcl import bfcl_transcripts
    from evalspec._interop.bfcl_decode import RESULT_FORMATS
    from evalspec._suite.validate import load_suite

    results, out = Path(results), Path(out)
    check_output_file(out, "out")
    if kind is not None and kind not in RESULT_FORMATS:
        raise UsageError(f"kind={kind!r}: use one of {', '.join(RESULT_FORMATS)}", params=["kind"])
    suite = Path(suite)
    loaded = load_suite(suite)
    refused: list[Refusal] = []
    label = (
        model_label(model, results, "bfcl")
        if model is not None
        else (loaded.models[0].name if loaded.models else "bfcl")
    )
    cases = {c.name: c for c in loaded.cases}
    if any(c.turns for c in loaded.cases):  # a multi-turn category: turns of steps of calls
        from evalspec._interop.bfcl_multi_turn_results import multi_turn_transcripts

        with importing(results, "BFCL multi-turn result"):
            made, skipped = multi_turn_transcripts(
                results, loaded, model=label, kind=kind, refused=refused
            )
        note = V3_MULTI_TURN_NOTE if results.name.startswith("BFCL_v3_") else ""
    else:
        with importing(results, "BFCL result"):
            transcripts = bfcl_transcripts(results, model=label, kind=kind, refused=refused)
        made = [_unless_refused(t, cases[t.case]) for t in transcripts if t.case in cases]
        skipped, note = [t.case for t in transcripts if t.case not in cases], ""
    if not made:
        raise UsageError(
            f"no result in {results} has the id of a case of {suite} (the results' ids: "
            f"{_some(skipped)}; the suite's cases: {_some(list(cases))}): give the result file "
            "of the BFCL category the suite was imported from"
        )
    _write_transcripts(out, made)
    summary = "; ".join(filter(None, [_results_read(made, skipped, refused, suite), note]))
    return TranscriptsWritten(
        out, len(made), skipped=len(skipped), summary=summary, refused=tuple(refused)
    )


def _results_read(
    made: Sequence[Transcript], skipped: Sequence[str], refused: Sequence[Refusal], suite: Path
) -> str:
    """What a result file held: the transcripts made (errored ones counted), the results left
    out, named (a BFCL file may be split over several suites, but a result left out by
    mistake, its id mistyped, would otherwise pass unseen), and the entries refused that are
    of no record (not JSON, no id)."""
    named = {t.case for t in made} | set(skipped)
    unnamed = sum(r.record not in named for r in refused)
    errored = sum(t.error is not None for t in made)
    line = (
        f"{len(made) + len(skipped) + unnamed} result entries read: {len(made)} transcript(s) "
        f"of cases of {suite} ({errored} errored: each fails), {len(skipped)} skipped, "
        f"{unnamed} refused"
    )
    if skipped:
        line += f"; skipped {len(skipped)} result(s) whose id is no case of it: {_some(skipped)}"
    return line


def _unless_refused(transcript: Transcript, case: Case) -> Transcript:
    """The transcript, or an errored one for a case standing for a record refused at import
    (it fails whatever the model answered, as BFCL fails an errored record)."""
    from evalspec._interop.bfcl import errored_transcript
    from evalspec._suite.model import REFUSED_TAG

    if REFUSED_TAG not in case.tags:
        return transcript
    return errored_transcript(case.name, transcript.model, case.description or REFUSED_TAG)


def import_stabletoolbench(
    queries: str | Path,
    out: str | Path,
    *,
    ids: str | Path | None = None,
    name: str | None = None,
    models: Sequence[str] | None = None,
    judge: str | None = None,
    judge_base_url: str | None = None,
    judge_key_env: str | None = None,
    judge_rounds: int | None = None,
) -> SuitesWritten:
    """Write a suite with one case per StableToolBench query (only those in `ids`, a
    test_query_ids file, when given), expecting its gold APIs; with `judge` (a model), also
    StableToolBench's SoPR judge on the final answer (`judge_rounds`: asked that many rounds
    at StableToolBench's temperature 0.2 and combined as it combines them; it uses 4)."""
    from evalspec._interop.bfcl import DEFAULT_MODEL, write_suites
    from evalspec._interop.stabletoolbench import placed_queries
    from evalspec._interop.stabletoolbench_suites import stabletoolbench_suites

    queries, out = Path(queries), Path(out)
    refused: list[Refusal] = []
    endpoint = _judge_endpoint(judge, judge_base_url, judge_key_env, judge_rounds)
    placed, entries = placed_queries(queries, ids)
    with importing(queries, "StableToolBench query"):  # a last guard
        suites = stabletoolbench_suites(
            [q for _, q in placed],
            name=name or f"stabletoolbench-{queries.stem}",
            models=list(models or [DEFAULT_MODEL]),
            judge=judge,
            judge_endpoint=endpoint,
            refused=refused,
            source=display_name(queries),
            places=[p for p, _ in placed],
        )
    cases = sum(len(s["cases"]) for s in suites)
    kept = f", {len(placed)} with an id of {display_name(Path(ids))}" if ids is not None else ""
    summary = (
        f"{entries} queries read{kept}: {cases - len(refused)} imported as cases, "
        f"{len(refused)} refused (each stands as a case tagged import-refused that fails)"
    )
    paths = tuple(write_suites(out, suites))
    return SuitesWritten(paths, cases, refused=tuple(refused), summary=summary)


STB_JUDGE_TEMPERATURE = 0.2
"""The temperature of StableToolBench's evaluator (tooleval_gpt-3.5-turbo_default/config.yaml):
its rounds differ only by sampling."""


def _judge_endpoint(
    judge: str | None, base_url: str | None, key_env: str | None, rounds: int | None = None
) -> dict[str, Any]:
    """The judge's settings besides model and criteria: its endpoint, and StableToolBench's
    rounds with its temperature when `rounds` is given (only with a judge)."""
    given = {"base_url": base_url, "api_key_env": key_env}
    if not judge and any(given.values()):
        raise UsageError(
            "judge_base_url= and judge_key_env= need judge=MODEL",
            params=["judge_base_url", "judge_key_env", "judge"],
        )
    if not judge and rounds is not None:
        raise UsageError("judge_rounds= needs judge=MODEL", params=["judge_rounds", "judge"])
    settings: dict[str, Any] = {k: v for k, v in given.items() if v}
    if rounds is not None:
        if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 20:
            raise UsageError(
                f"judge_rounds={rounds!r}: give a whole number from 1 to 20 (StableToolBench "
                "asks 4)",
                params=["judge_rounds"],
            )
        settings |= {"rounds": rounds, "temperature": STB_JUDGE_TEMPERATURE}
    return settings


def import_stabletoolbench_answers(
    converted: str | Path,
    out: str | Path,
    *,
    model: str | None = None,
    suite_out: str | Path | None = None,
    judge: str | None = None,
    judge_base_url: str | None = None,
    judge_key_env: str | None = None,
    judge_rounds: int | None = None,
) -> TranscriptsWritten:
    """Turn a StableToolBench converted answer file into transcripts (one per query).

    With `suite_out` and `judge` (together), also a suite of the file's queries, judged as
    StableToolEval judges them, so `judge` gives the SoPR of any published answer file. Nothing
    is written when a tool node names no call (the scores would be wrong)."""
    from evalspec._interop.stabletoolbench import read_converted_answers

    converted, out = Path(converted), Path(out)
    suite_path = Path(suite_out) if suite_out is not None else None
    check_output_file(out, "out")
    check_output_file(suite_path, "suite_out")
    endpoint = _judge_endpoint(judge, judge_base_url, judge_key_env, judge_rounds)
    if (suite_path is None) != (judge is None):
        raise UsageError(
            "suite_out= and judge= go together: the suite's one check is the judge",
            params=["suite_out", "judge"],
        )
    try:
        answers = read_converted_answers(converted, model)
    except OSError as exc:
        raise UsageError(f"cannot read {converted}: {exc.strerror}") from None
    except _MALFORMED as exc:
        raise UsageError(f"{converted} is not a converted answer file: {exc}") from None
    refused = list(answers.refused)
    suites: tuple[Path, ...] = ()
    if suite_path is not None and judge is not None:
        suites = _answer_suites(
            converted, suite_path, answers.transcripts, judge, endpoint, refused
        )
    _write_transcripts(out, answers.transcripts)
    return TranscriptsWritten(
        out,
        len(answers.transcripts),
        suites=suites,
        summary=answers.summary(),
        refused=tuple(refused),
    )


def _answer_suites(
    converted: Path,
    out: Path,
    transcripts: list[Transcript],
    judge: str,
    endpoint: dict[str, str],
    refused: list[Refusal],
) -> tuple[Path, ...]:
    """Write the suite(s) of a converted answer file's queries, labelled as its transcripts."""
    from evalspec._interop.bfcl import write_suites
    from evalspec._interop.stabletoolbench_suites import answer_file_suites
    from evalspec._util.reading import read_json

    label = transcripts[0].model if transcripts else folder_label(converted, "stabletoolbench")
    cases_refused: list[Refusal] = []
    with importing(converted, "StableToolBench converted answer"):
        suites = answer_file_suites(
            read_json(converted),
            name=f"stabletoolbench-{converted.stem}",
            models=[label],
            judge=judge,
            judge_endpoint=endpoint,
            refused=cases_refused,
            source=display_name(converted),
        )
    # A query refused where its answer was read is said once; one whose case alone cannot be
    # made (a function the suite cannot offer) is said too, not left to the suite to show.
    known = {r.record for r in refused}
    refused.extend(r for r in cases_refused if r.record not in known)
    return tuple(write_suites(out, suites))


def import_otel(
    spans: str | Path, out: str | Path, *, case: str, model: str = "otel"
) -> TranscriptsWritten:
    """Turn OpenTelemetry traces (an OTLP JSON export, or a JSON list of spans) into
    transcripts of one case, one per trace, labelled `model`."""
    from evalspec._interop.otel import otel_transcripts

    spans, out = Path(spans), Path(out)
    check_output_file(out, "out")
    model = model_label(model, spans, "otel")
    refused: list[Refusal] = []
    with importing(spans, "OpenTelemetry JSON"):
        transcripts = otel_transcripts(spans, case=case, model=model, refused=refused)
    if all(t.error for t in transcripts) and refused:
        raise refused_all(refused, "an OpenTelemetry JSON export")
    _write_transcripts(out, transcripts)
    summary = _otel_summary(transcripts)
    return TranscriptsWritten(out, len(transcripts), summary=summary, refused=tuple(refused))


def _otel_summary(transcripts: Sequence[Any]) -> str:
    """What the traces held, so a trace of which nothing was read (spans in a shape the
    importer does not know) is said, not passed on as an answer that called no tool."""
    read = [t for t in transcripts if not t.error]
    calls = sum(len(t.tool_calls) for t in read)
    answers = sum(t.final_answer is not None for t in read)
    line = f"{len(read)} trace(s) read: {calls} tool call(s), {answers} final answer(s)"
    empty = [
        plain(t.item_id.removeprefix(f"otel:{t.case}:")[:60], single_line=True)
        for t in read
        if not t.tool_calls and t.final_answer is None
    ]
    if not empty:
        return line
    shown = ", ".join(empty[:3]) + (f" and {len(empty) - 3} more" if len(empty) > 3 else "")
    return (
        f"{line}; nothing read from {len(empty)} trace(s) ({shown}): no tool span (one with "
        "tool.name or gen_ai.tool.name) and no root span with output.value, so each stands as "
        "an answer that called no tool"
    )


@dataclass(frozen=True)
class TracesImported:
    """What `import_traces` wrote: a suite of one case per traced conversation and, when
    asked, the conversations as transcripts of those cases."""

    suite: Path
    cases: int
    """Conversations imported (refused records not counted)."""
    model: str
    """The model label of the suite and the transcripts."""
    transcripts: Path | None = None
    refused: tuple[Refusal, ...] = ()
    """Records refused (a line that is not JSON, a trace with no conversation in it), each
    standing in the suite as a case that fails (tagged `import-refused`)."""
    recordings: Path | None = None
    """The suite's recordings of the traced model's answers, when asked for (`record`)."""


def import_traces(
    traces: str | Path,
    out: str | Path,
    *,
    transcripts: str | Path | None = None,
    name: str | None = None,
    model: str | None = None,
    capture: bool = False,
    redact: Sequence[str] = (),
    record: bool = False,
) -> TracesImported:
    """Turn traced conversations (OpenTelemetry GenAI or OpenInference spans; JSON Lines or
    one JSON document) into a suite: one case per trace (traces naming one
    `gen_ai.conversation.id` or `session.id`: one per conversation, a trace per turn in time
    order), its user messages as turns, the
    calls the model made as expected calls (none, with `capture`: the cases are marked
    `capture: true` for `evalspec capture accept`), the tools answering as they answered.

    `redact` rules (`email`, `phone`, `ip`, `card`, `regex:PATTERN`) replace personal data in
    every text before anything is written. `transcripts` also writes each conversation as a
    transcript of its case, for `evalspec score` with no model called. `record` also writes
    the suite's recordings: the traced model's answers, which `evalspec run --record offline`
    replays (each conversation's answers wait on disk, not in memory, until they are
    recorded)."""
    from evalspec._interop.pii import redactor
    from evalspec._interop.trace_suites import AnswerStore

    traces, out = Path(traces), Path(out)
    transcripts = Path(transcripts) if transcripts is not None else None
    check_output_file(out, "out")
    check_output_file(transcripts, "transcripts")
    recordings = out.with_name(f"{out.stem}.recordings.jsonl") if record else None
    _distinct(
        traces,
        ("--out", out),
        ("--transcripts", transcripts),
        ("the recordings of --record", recordings),
    )
    rules = redactor(redact)  # a wrong rule is refused before anything is read
    with contextlib.ExitStack() as stack:
        answers = stack.enter_context(contextlib.closing(AnswerStore())) if record else None
        suite = _write_trace_suite(traces, out, transcripts, name, model, capture, rules, answers)
        recordings = _record_traced(out, answers, traces) if answers is not None else None
    return TracesImported(
        out, suite.count, suite.model, transcripts, tuple(suite.refused), recordings
    )


def _write_trace_suite(
    traces: Path,
    out: Path,
    transcripts: Path | None,
    name: str | None,
    model: str | None,
    capture: bool,
    rules: Redactor,
    answers: AnswerStore | None,
) -> SuiteWriter:
    """The suite (and transcripts) of the traces, each part written as it is read."""
    from evalspec._interop.trace_suites import SuiteWriter, redacted_refusals, work_dir
    from evalspec._interop.traces import read_traces
    from evalspec._util.files import atomic_write

    refused: list[Refusal] = []
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(work_dir(out)))
        suite_fh = stack.enter_context(atomic_write(out))
        t_fh = stack.enter_context(atomic_write(transcripts)) if transcripts else None
        with (work / "cases.yaml").open("w", encoding="utf-8") as cases_fh:
            writer = SuiteWriter(
                name or traces.stem,
                model or "",
                capture,
                rules,
                display_name(traces),
                work,
                t_fh,
                cases_fh,
            )
            writer.answers = answers
            writer.refused = refused
            for conversation in read_traces(traces, refused):
                writer.add(conversation)
            refused = writer.refused = redacted_refusals(refused, rules)
            if writer.count == 0:
                if refused:
                    raise refused_all(refused, "an OpenTelemetry JSON export of GenAI spans")
                raise UsageError(f"{traces} holds no span: nothing to import")
            writer.write_refused(refused, writer.model)
        writer.suite_text(suite_fh)
        with (work / "cases.yaml").open(encoding="utf-8") as cases_fh:
            for line in cases_fh:
                suite_fh.write(line)
    return writer


def _distinct(source: Path, *outputs: tuple[str, Path | None]) -> None:
    """Refuse an output that is the file being read, or another output: written in its place
    when the import ends, it would lose the traces (or one output the other)."""
    seen = {source.resolve(): "the traces file being read"}
    for what, path in outputs:
        if path is None:
            continue
        other = seen.setdefault(path.resolve(), what)
        if other != what:
            raise UsageError(f"{what} ({path}) would be written over {other}; name another file")


def _record_traced(suite: Path, answers: AnswerStore, traces: Path) -> Path:
    """The suite's recordings: each request answered as the traced model answered it."""
    from evalspec._api.stages import record_answers
    from evalspec._interop.trace_suites import TraceAnswers
    from evalspec._suite.validate import load_suite

    note = (
        f"answers of the traced model, read from {display_name(traces)} by `evalspec import "
        "traces --record`: what it said in production, not a run made here"
    )
    return record_answers(load_suite(suite), TraceAnswers(answers), note=note)
