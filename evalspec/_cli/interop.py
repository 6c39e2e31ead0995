"""`evalspec import ...`: turn other systems' data into suites and transcripts.

Suites come out as YAML in evalspec's language (they validate and can be edited like any
other); transcripts come out as JSONL for `evalspec score SUITE -t transcripts.jsonl`. Errors
are evalspec's UsageError/SpecError, which the main CLI prints with exit code 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalspec._cli.common import print_error, reports_errors
from evalspec._util.terminal import plain

if TYPE_CHECKING:
    from evalspec.records import Refusal, TranscriptsWritten

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
JudgeRoundsOpt = Annotated[
    int | None,
    typer.Option(
        help="Ask the judge this many rounds per answer at temperature 0.2 and score their "
        "mean, as StableToolBench's evaluator does (it asks 4).",
    ),
]


def say_refused(
    refused: Sequence[Refusal], records: int | None, stands_as: str, summary: str = ""
) -> None:
    """Each refused record on stderr (file:line:col, id, why), then how many (of how many), or
    the importer's `summary` of what it read, imported and refused when it gives one."""
    for refusal in refused:
        print_error(str(refusal))
    if summary:
        print_error(summary)
    elif refused:
        of = f" of {records}" if records is not None else ""
        print_error(
            f"{len(refused)}{of} record(s) refused, the rest imported; each refused record is "
            f"{stands_as} that fails (an errored record counts as failed)"
        )


def _say_written(written: TranscriptsWritten) -> None:
    typer.echo(f"wrote {written.count} transcripts to {written.path}")


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
    (suite-2.yaml, ...), since a suite offers one definition per tool name. A record that
    cannot become a case is refused alone (named on stderr with the file holding the fault)
    and stands as a case tagged import-refused that fails; exit 2 only when every record is.

    Example:

      evalspec import bfcl BFCL_v4_simple_python.json \
        possible_answer/BFCL_v4_simple_python.json --names dotted --out suites/bfcl_simple.yaml
    """
    from evalspec.api import import_bfcl

    written = import_bfcl(questions, out, answers, names=names, name=name, models=model)
    for p in written.paths:
        typer.echo(f"wrote {p}")
    if written.invalid:
        typer.echo(
            f"{written.invalid} record(s) tagged {written.invalid_tag}: a possible answer "
            "names a parameter or function the record does not define (scored as BFCL scores "
            "them)"
        )
    typer.echo(
        f"{written.cases} cases in {len(written.paths)} suite(s); "
        f"next: evalspec validate {written.paths[0]}"
    )
    say_refused(written.refused, written.cases, "a case tagged import-refused", written.summary)


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
            help="The decoder BFCL applies: 'prompting' (call text such as `[f(a=1)]`), "
            "'fc' (function-calling results, `[{name: arguments}]`; text is no call), "
            '\'json\' (text `{"name": f, "arguments": {...}}`, BFCL\'s xLAM handlers), '
            '\'llama\' (`{"name": f, "parameters": {...}}`, its Llama 3.1 handler), '
            "'qwen_fc' (`<tool_call>` blocks: its Qwen FC handler), 'hermes' (the same blocks, "
            "one line each, `'` read as `\"`: its former Hermes 2 Pro handler), "
            "'granite' (`<function_call> {...}`: granite-20b-functioncalling), 'glm' (a name, "
            "then a line of JSON arguments: GLM-4) or 'nexus' (`f(a=1); g(b=2);`: Nexusflow "
            "Raven). Default: 'fc' when the file holds call "
            "lists, else the kind most of its answers are written in, else 'prompting'."
        ),
    ] = None,
) -> None:
    """Turn BFCL model results into transcripts for the suite's cases.

    Results are decoded as BFCL decodes them (never run). Results of records that are not
    cases of SUITE are skipped (BFCL files may be split over several suites). A suite of a
    multi-turn category takes BFCL's multi-turn results (the model's calls turn by turn and
    step by step), each call answered by the suite's tools.

    Example:

      evalspec import bfcl-results suites/bfcl_simple.yaml \
        BFCL_v4_simple_python_result.json --out transcripts.jsonl
    """
    from evalspec.api import import_bfcl_results

    written = import_bfcl_results(suite, results, out, model=model, kind=kind)
    _say_written(written)
    stands_as = "(where it is of a case) an errored transcript"
    say_refused(written.refused, None, stands_as, written.summary)


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
    judge_rounds: JudgeRoundsOpt = None,
) -> None:
    """Write a suite with one case per StableToolBench query, expecting its gold APIs.

    With --judge, each case also has StableToolBench's SoPR judge on the final answer; ask it
    about imported answers with `evalspec judge SUITE -t TRANSCRIPTS`.

    Example:

      evalspec import stabletoolbench test_instruction/G1_instruction.json \
        --ids test_query_ids/G1_instruction.json --out suites/stb_g1.yaml
    """
    from evalspec.api import import_stabletoolbench

    written = import_stabletoolbench(
        queries,
        out,
        ids=ids,
        name=name,
        models=model,
        judge=judge,
        judge_base_url=judge_base_url,
        judge_key_env=judge_key_env,
        judge_rounds=judge_rounds,
    )
    for p in written.paths:
        typer.echo(f"wrote {p}")
    typer.echo(f"{written.cases} cases in {len(written.paths)} suite(s)")
    say_refused(written.refused, written.cases, "a case tagged import-refused", written.summary)


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
    judge_rounds: JudgeRoundsOpt = None,
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
    from evalspec.api import import_stabletoolbench_answers

    written = import_stabletoolbench_answers(
        converted,
        out,
        model=model,
        suite_out=suite_out,
        judge=judge,
        judge_base_url=judge_base_url,
        judge_key_env=judge_key_env,
        judge_rounds=judge_rounds,
    )
    for p in written.suites:
        typer.echo(f"wrote {p}")
    _say_written(written)
    typer.echo(plain(written.summary))
    say_refused(written.refused, written.count, "an errored transcript")


@import_app.command("tau-bench")
@reports_errors
def tau_bench(
    trajectories: Annotated[
        Path, typer.Argument(help="A tau-bench trajectory file (historical_trajectories/*.json).")
    ],
    out: Out,
    world: Annotated[
        Path, typer.Option(help="tau-bench's data as one JSON mapping: the suite's state.")
    ],
    tools: Annotated[
        Path, typer.Option(help="The domain's tools in the state language (a tools YAML file).")
    ],
    suite_out: Annotated[
        Path, typer.Option(help="The suite to write: one case per task, judged as tau-bench.")
    ],
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model label (default: the file's name).")
    ] = None,
) -> None:
    """Turn tau-bench's published runs into transcripts, and its tasks into a suite.

    Each task becomes a case judged as tau-bench's reward judges a run: every record of the
    world must end as the task's gold actions (run through --tools) leave it, and each
    required output must be in the answer. Then `evalspec score SUITE -t TRANSCRIPTS` gives
    each run's verdict beside the reward the file publishes. A record that is not a run is
    refused alone (named on stderr) and stands as a case tagged import-refused that fails;
    the others are imported.

    Example:

      evalspec import tau-bench gpt-4o-airline.json --world airline.json \
        --tools airline-tools.yaml --suite-out tau_airline.yaml --out transcripts.jsonl
    """
    from evalspec.api import import_tau_bench

    written = import_tau_bench(
        trajectories, out, world=world, tools=tools, suite_out=suite_out, model=model
    )
    typer.echo(f"wrote {written.suite}")
    written_lines = written.count + len(written.refused)  # an errored one per refused record
    typer.echo(f"wrote {written_lines} transcripts to {written.transcripts}")
    passed = sum(1 for r in written.rewards.values() if r == 1)
    typer.echo(f"published rewards: {passed} of {len(written.rewards)} runs at 1")
    say_refused(written.refused, written_lines, "a case tagged import-refused")


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
    from evalspec.api import import_otel

    written = import_otel(spans, out, case=case, model=model)
    _say_written(written)
    typer.echo(plain(written.summary))
    say_refused(written.refused, None, "(where its trace is known) an errored transcript")


@import_app.command("traces")
@reports_errors
def traces(
    spans: Annotated[
        Path,
        typer.Argument(
            help="OpenTelemetry spans: JSON Lines (an OTLP export, a span or a span's "
            "attributes per line), or one JSON document.",
            metavar="TRACES",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The suite to write.")],
    transcripts: Annotated[
        Path | None,
        typer.Option(help="Also write each conversation as a transcript of its case."),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Suite name (default: the file's).")] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Model label (default: the traces' request model)."),
    ] = None,
    capture: Annotated[
        bool,
        typer.Option(
            "--capture",
            help="Write no expectations: mark each case `capture: true`, to run and accept "
            "(`evalspec capture accept`) after review.",
        ),
    ] = False,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Also write the suite's recordings: the traced model's answers, which "
            "`evalspec run --record offline` replays.",
        ),
    ] = False,
    redact: Annotated[
        list[str] | None,
        typer.Option(
            help="Replace personal data in every text before anything is written: email, "
            "phone, ip, card, or regex:PATTERN (repeatable).",
        ),
    ] = None,
) -> None:
    """Turn traced conversations into a suite: one case per trace (or per conversation its
    traces name: gen_ai.conversation.id, session.id), its user messages as turns, the calls
    the model made as expected calls, each tool answering as it did.

    Reads the GenAI semantic conventions (gen_ai.input.messages, gen_ai.output.messages,
    execute_tool spans; the older message events on spans or log records) and OpenInference
    (llm.input_messages.*, tool.name). A line or trace
    that cannot be read is refused alone (named on stderr) and stands as a case tagged
    import-refused that fails; exit 2 only when every one is.

    Example:

      evalspec import traces traces.jsonl --out suites/production.yaml \
        --transcripts production.jsonl --redact email --redact 'regex:ACC-[0-9]+'
    """
    from evalspec.api import import_traces

    written = import_traces(
        spans,
        out,
        transcripts=transcripts,
        name=name,
        model=model,
        capture=capture,
        redact=redact or (),
        record=record,
    )
    typer.echo(f"wrote {written.suite}: {written.cases} conversations as cases")
    if written.transcripts is not None:
        typer.echo(f"wrote {written.transcripts}: the conversations as transcripts")
    if written.recordings is not None:
        typer.echo(f"wrote {written.recordings}: the traced model's answers, to replay")
    typer.echo(f"next: evalspec validate {written.suite}")
    say_refused(written.refused, None, "a case tagged import-refused")
