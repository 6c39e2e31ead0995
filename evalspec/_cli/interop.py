"""`evalspec import ...`: turn other systems' data into suites and transcripts.

Suites come out as YAML in evalspec's language (they validate and can be edited like any
other); transcripts come out as JSONL for `evalspec score SUITE -t transcripts.jsonl`. Errors
are evalspec's UsageError/SpecError, which the main CLI prints with exit code 2.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from evalspec._cli.common import check_output_file, reports_errors
from evalspec._util.errors import UsageError

import_app = typer.Typer(
    help="Import other systems' data: BFCL, StableToolBench, OpenTelemetry traces.\n\n"
    "Suites are written as YAML you can edit; transcripts as JSONL for `evalspec score`.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


Out = Annotated[Path, typer.Option("--out", "-o", help="File to write.")]
JudgeBaseUrlOpt = Annotated[
    str | None,
    typer.Option(help="The judge's OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)."),
]
JudgeKeyEnvOpt = Annotated[
    str | None, typer.Option(help="Environment variable holding the judge's API key.")
]


_MALFORMED = (
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    IndexError,
    RecursionError,
    StopIteration,
)
"""What converting a file of the right syntax but the wrong content raises."""


@contextlib.contextmanager
def importing(source: Path, what: str) -> Iterator[None]:
    """Reading and converting `source`: content that does not fit becomes one clear line.

    Files are read through evalspec._util.reading (size, type, UTF-8, depth and NaN checked there);
    this catches what the converters find later, such as a record missing a key.
    """
    try:
        yield
    except _MALFORMED as exc:
        if isinstance(exc, KeyError):
            why = f"a record lacks the key {exc.args[0]!r}" if exc.args else "a key is missing"
        elif isinstance(exc, StopIteration):
            why = "an entry that must name something is empty"
        elif isinstance(exc, TypeError | AttributeError):
            why = f"a value has the wrong type ({exc})"
        else:
            why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise UsageError(
            f"{source} is not a valid {what} file: {why}; check that it is {what} output"
        ) from None


def _write_transcripts(out: Path, transcripts: list[Any]) -> None:
    from evalspec._transcript import write_transcripts

    out.parent.mkdir(parents=True, exist_ok=True)
    write_transcripts(out, transcripts)
    typer.echo(f"wrote {len(transcripts)} transcripts to {out}")


@import_app.command("bfcl")
@reports_errors
def bfcl(
    questions: Annotated[Path, typer.Argument(help="BFCL question file (JSON Lines).")],
    out: Out,
    answers: Annotated[
        Path | None,
        typer.Argument(
            help="The matching possible-answer file; none for the irrelevance categories "
            "(every record then expects no call)."
        ),
    ] = None,
    names: Annotated[
        str | None,
        typer.Option(
            help="BFCL's tool-name rule for the model: 'dotted' keeps `math.factorial` "
            "(prompting models, and function-calling models whose API allows dots); "
            "'underscored' offers `math_factorial` (OpenAI, Anthropic, Mistral, Google "
            "function calling). Asked for when a record names a function with a dot."
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Suite name (default: the file's).")] = None,
    model: Annotated[
        list[str] | None, typer.Option("--model", "-m", help="Model(s) the suite names.")
    ] = None,
) -> None:
    """Write a suite with one case per BFCL record, judged by BFCL's possible answers.

    Records that define one function name differently go to extra suites beside OUT
    (suite-2.yaml, ...), since a suite offers one definition per tool name.

    Example:

      evalspec import bfcl BFCL_v4_simple_python.json \
        possible_answer/BFCL_v4_simple_python.json --names dotted --out suites/bfcl_simple.yaml
    """
    from evalspec._interop.bfcl import (
        DEFAULT_MODEL,
        INVALID_TAG,
        NAME_RULES,
        bfcl_suite_dicts,
        dotted_names,
        read_records,
        write_suites,
    )

    check_output_file(out, "--out")
    if names is not None and names not in NAME_RULES:
        raise UsageError(f"--names {names!r}: use one of {', '.join(NAME_RULES)}")
    with importing(questions, "BFCL"):
        records = read_records(questions)
        dotted = dotted_names(records)
        if names is None and dotted:
            raise UsageError(
                f"{questions} names functions with a dot ({', '.join(dotted[:3])}"
                f"{' ...' if len(dotted) > 3 else ''}), which BFCL offers differently to "
                "different models: say --names dotted for a prompting model (or a "
                "function-calling one whose API allows dots), --names underscored for OpenAI, "
                "Anthropic, Mistral or Google function calling (`math_factorial`)"
            )
        suites = bfcl_suite_dicts(
            records,
            read_records(answers) if answers is not None else None,
            name=name or questions.stem,
            models=model or [DEFAULT_MODEL],
            names=names or "dotted",
        )
        paths = write_suites(out, suites)
    for p in paths:
        typer.echo(f"wrote {p}")
    invalid = sum(INVALID_TAG in c["tags"] for s in suites for c in s["cases"])
    if invalid:
        typer.echo(
            f"{invalid} record(s) tagged {INVALID_TAG}: a possible answer names a parameter "
            "its function does not define (scored as BFCL scores them)"
        )
    typer.echo(f"{len(records)} cases in {len(paths)} suite(s); next: evalspec validate {paths[0]}")


@import_app.command("bfcl-results")
@reports_errors
def bfcl_results(
    suite: Annotated[Path, typer.Argument(help="A suite written by `evalspec import bfcl`.")],
    results: Annotated[Path, typer.Argument(help="BFCL result file: {id, result} lines.")],
    out: Out,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model label (default: the suite's first).")
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            help="The decoder BFCL applies: 'prompting' (call text such as `[f(a=1)]`) or "
            "'fc' (function-calling results, `[{name: arguments}]`; text is no call). "
            "Default: 'fc' when the file holds call lists, else 'prompting'."
        ),
    ] = None,
) -> None:
    """Turn BFCL model results into transcripts for the suite's cases.

    Results are decoded as BFCL decodes them (never run). Results of records that are not
    cases of SUITE are skipped (BFCL files may be split over several suites).

    Example:

      evalspec import bfcl-results suites/bfcl_simple.yaml \
        BFCL_v4_simple_python_result.json --out transcripts.jsonl
    """
    from evalspec._interop.bfcl import bfcl_transcripts
    from evalspec._interop.bfcl_decode import KINDS
    from evalspec._suite.validate import load_suite

    check_output_file(out, "--out")
    if kind is not None and kind not in KINDS:
        raise UsageError(f"--kind {kind!r}: use one of {', '.join(KINDS)}")
    loaded = load_suite(suite)
    label = model or (loaded.models[0].name if loaded.models else "bfcl")
    with importing(results, "BFCL result"):
        transcripts = bfcl_transcripts(results, model=label, kind=kind)
    names = {c.name for c in loaded.cases}
    kept = [t for t in transcripts if t.case in names]
    if not kept:
        raise UsageError(f"no result in {results} has the id of a case of {suite}")
    if len(kept) < len(transcripts):
        sys.stderr.write(f"skipped {len(transcripts) - len(kept)} results of other records\n")
    _write_transcripts(out, kept)


@import_app.command("stabletoolbench")
@reports_errors
def stabletoolbench(
    queries: Annotated[Path, typer.Argument(help="A test_instruction file (JSON list).")],
    out: Out,
    ids: Annotated[
        Path | None, typer.Option(help="A test_query_ids file: keep only these queries.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Suite name (default: the file's).")] = None,
    model: Annotated[
        list[str] | None, typer.Option("--model", "-m", help="Model(s) the suite names.")
    ] = None,
    judge: Annotated[
        str | None, typer.Option(help="Also judge the final answer with this model (LLM judge).")
    ] = None,
    judge_base_url: JudgeBaseUrlOpt = None,
    judge_key_env: JudgeKeyEnvOpt = None,
) -> None:
    """Write a suite with one case per StableToolBench query, expecting its gold APIs.

    With --judge, each case also has StableToolBench's SoPR judge on the final answer; ask it
    about imported answers with `evalspec judge SUITE -t TRANSCRIPTS`.

    Example:

      evalspec import stabletoolbench test_instruction/G1_instruction.json \
        --ids test_query_ids/G1_instruction.json --out suites/stb_g1.yaml
    """
    from evalspec._interop.bfcl import DEFAULT_MODEL
    from evalspec._interop.stabletoolbench import load_queries
    from evalspec._interop.stabletoolbench_suites import stabletoolbench_suites

    try:
        loaded = load_queries(queries, ids)
    except OSError as exc:
        raise UsageError(f"cannot read {exc.filename}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"not a StableToolBench query file: {exc}") from None
    try:
        suites = stabletoolbench_suites(
            loaded,
            name=name or f"stabletoolbench-{queries.stem}",
            models=model or [DEFAULT_MODEL],
            judge=judge,
            judge_endpoint=_judge_endpoint(judge, judge_base_url, judge_key_env),
        )
    except _MALFORMED as exc:
        raise UsageError(f"{queries}: a query lacks {exc}") from None
    from evalspec._interop.bfcl import write_suites

    for p in write_suites(out, suites):
        typer.echo(f"wrote {p}")
    typer.echo(f"{len(loaded)} cases in {len(suites)} suite(s)")


def _judge_endpoint(judge: str | None, base_url: str | None, key_env: str | None) -> dict[str, str]:
    """The judge's endpoint settings given on the command line (only with --judge)."""
    given = {"base_url": base_url, "api_key_env": key_env}
    if not judge and any(given.values()):
        raise UsageError("--judge-base-url and --judge-key-env need --judge MODEL")
    return {k: v for k, v in given.items() if v}


@import_app.command("stabletoolbench-answers")
@reports_errors
def stabletoolbench_answers(
    converted: Annotated[Path, typer.Argument(help="A model_predictions_converted file.")],
    out: Out,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model label (default: the folder name).")
    ] = None,
    suite_out: Annotated[
        Path | None,
        typer.Option(
            help="Also write a suite of these answers' queries, judged for SoPR (needs --judge)."
        ),
    ] = None,
    judge: Annotated[
        str | None, typer.Option(help="The judge model of the --suite-out suite.")
    ] = None,
    judge_base_url: JudgeBaseUrlOpt = None,
    judge_key_env: JudgeKeyEnvOpt = None,
) -> None:
    """Turn StableToolBench converted answers into transcripts (one per query).

    A converted answer file also holds each query and the functions its run was offered:
    --suite-out writes a suite of them, one case per query judged as StableToolEval judges it
    (no gold APIs: the file has none), so `evalspec judge` gives the SoPR of any published
    answer file, whether or not its queries are in a test_instruction file.

    Example:

      evalspec import stabletoolbench-answers \
        virtual_chatgpt_cot/G1_instruction.json --out transcripts.jsonl \
        --suite-out stb.yaml --judge gpt-4o-mini
    """
    from evalspec._interop.stabletoolbench import read_converted_answers

    check_output_file(out, "--out")
    check_output_file(suite_out, "--suite-out")
    endpoint = _judge_endpoint(judge, judge_base_url, judge_key_env)
    if (suite_out is None) != (judge is None):
        raise UsageError("--suite-out and --judge go together: the suite's one check is the judge")
    try:
        answers = read_converted_answers(converted, model)
    except OSError as exc:
        raise UsageError(f"cannot read {converted}: {exc.strerror}") from None
    except _MALFORMED as exc:
        raise UsageError(f"{converted} is not a converted answer file: {exc}") from None
    if answers.nodes_dropped:
        shown = "; ".join(answers.nodes_dropped[:3])
        raise UsageError(
            f"{converted}: {len(answers.nodes_dropped)} tool node(s) name no call ({shown}); "
            "nothing written, since scores without those calls would be wrong. "
            "Check the file is a model_predictions_converted answer file."
        )
    if suite_out is not None and judge is not None:
        _answer_suites(converted, suite_out, answers.transcripts, judge, endpoint)
    _write_transcripts(out, answers.transcripts)
    typer.echo(answers.summary())


def _answer_suites(
    converted: Path, out: Path, transcripts: list[Any], judge: str, endpoint: dict[str, str]
) -> None:
    """Write the suite(s) of a converted answer file's queries, labelled as its transcripts."""
    from evalspec._interop.bfcl import write_suites
    from evalspec._interop.stabletoolbench_suites import answer_file_suites
    from evalspec._util.reading import read_json

    label = transcripts[0].model if transcripts else converted.parent.name
    with importing(converted, "StableToolBench converted answer"):
        suites = answer_file_suites(
            read_json(converted),
            name=f"stabletoolbench-{converted.stem}",
            models=[label],
            judge=judge,
            judge_endpoint=endpoint,
        )
    for p in write_suites(out, suites):
        typer.echo(f"wrote {p}")


@import_app.command("otel")
@reports_errors
def otel(
    spans: Annotated[Path, typer.Argument(help="OTLP JSON export, or a JSON list of spans.")],
    case: Annotated[str, typer.Option(help="The case these traces ran.")],
    out: Out,
    model: Annotated[str, typer.Option("--model", "-m", help="Model label.")] = "otel",
) -> None:
    """Turn OpenTelemetry traces into transcripts of one case (one per trace).

    Example:

      evalspec import otel traces.json --case "direct message" --model gpt-4o-mini --out t.jsonl
    """
    from evalspec._interop.otel import otel_transcripts

    check_output_file(out, "--out")
    with importing(spans, "OpenTelemetry JSON"):
        transcripts = otel_transcripts(spans, case=case, model=model)
    _write_transcripts(out, transcripts)
