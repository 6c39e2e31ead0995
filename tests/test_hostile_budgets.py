"""Sizes bounded in total, not only per item: what a suite's templates render, what a state
holds, what a conversation's tools answer, what review holds of a suite's replays and what a run
writes. Each attack is a pull request (reviewed on a git repository) or the run its review asks
for; each limit is lowered through its environment variable so the attack stays small, and each
refusal is exit 2 with a message, never a traceback and never the gate's exit 1.

Beside the attacks, unit tests of the budgets' bookkeeping (`evalspec._suite.budget`,
`evalspec._suite.render`, `evalspec._suite.limits`, `evalspec._plan`), which it imports: how
much is counted where (a text scanned once, a key hashed once) is not visible from outside.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, text_reply, tool_calls_reply
from hypothesis import given
from hypothesis import strategies as st
from support import evalspec_cli, in_process, transcript

from evalspec._plan import compile_plan, request_key
from evalspec._suite.budget import SuiteBudget
from evalspec._suite.limits import ReviewTimeUp, max_rendered_chars, review_budget, untrusted
from evalspec._suite.render import _TEMPLATE_SIGNS, Renderer, expand_case, may_hold_template
from evalspec._suite.state.spec import MAX_STATE_CHARS, compile_behavior
from evalspec._suite.tree import Pos, ldict, llist
from evalspec._tools.state import run_behavior
from evalspec.api import load_suite, load_transcripts, write_transcripts
from evalspec.errors import UsageError

SUITES = Path(__file__).resolve().parents[1] / "suites"
KEY_ENV = "EVALSPEC_TEST_KEY"


def evalspec(cwd: Path, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The command as a user types it in `cwd`, run in this process: limits read from the
    environment it is given."""
    return in_process(*args, env={KEY_ENV: "sk-test-budgets-0000", **env}, cwd=cwd)


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@e.com", "-c", "user.name=t", *args], cwd=repo, check=True
    )


def repository(tmp_path: Path) -> Path:
    """suites/weather.yaml and its recordings committed on `main`: the base of a pull request."""
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    for name in ("weather.yaml", "weather.recordings.jsonl"):
        shutil.copyfile(SUITES / name, repo / "suites" / name)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stdout + done.stderr).strip().splitlines()[-1]


# ------------------------------------------------------------------ templates, in total


def matrix_suite(rows: int, chars: int) -> str:
    return f"""\
suite: p
models: [m]
tools:
  - name: t
    parameters: {{type: object, properties: {{a: {{type: string}}}}}}
cases:
  - name: 'c {{{{ n }}}}'
    matrix: {{n: [{", ".join(map(str, range(rows)))}]}}
    user: "{{{{ 'x' * {chars} }}}}"
    expect: {{tool_calls: [{{t: {{a: b}}}}]}}
"""


@pytest.mark.timeout(120)
def test_a_matrix_rendering_a_long_template_in_every_row_is_refused_in_total(
    tmp_path: Path,
) -> None:
    """Before: 5,000 rows x a template of a million characters (a 47 KB suite) took review to
    a MemoryError at 4.4 GB: traceback, exit 1 (the gate's code), no comment."""
    repo = repository(tmp_path)
    (repo / "suites" / "p.yaml").write_text(matrix_suite(50, 10_000), encoding="utf-8")
    limit = {"EVALSPEC_MAX_RENDERED_CHARS": "100000"}
    refused = (
        "suites/p.yaml:9:11: cases[0].user: template stopped: the suite's templates render "
        "more than 100000 characters in all (whoever runs evalspec may raise "
        "EVALSPEC_MAX_RENDERED_CHARS) (matrix row 10); templates are for filling in values; "
        "write large or repeated data out"
    )
    done = evalspec(repo, "review", "--base-ref", "main", **limit)
    assert done.returncode == 2
    assert refused in done.stderr
    done = evalspec(repo, "validate", "suites/p.yaml", **limit)
    assert (done.returncode, done.stderr.splitlines()[0]) == (2, refused)
    done = evalspec(repo, "run", "suites/p.yaml", "--record", "offline", **limit)
    assert (done.returncode, done.stderr.splitlines()[0]) == (2, refused)
    # Within the total, the same suite is fine.
    assert evalspec(repo, "validate", "suites/p.yaml").returncode == 0


def test_a_pull_request_renders_less_than_an_own_suite() -> None:
    assert max_rendered_chars() == 256_000_000
    with untrusted():
        assert max_rendered_chars() == 32_000_000


class _Counted(str):
    """A text that counts how often it is searched."""

    searched = 0

    def __contains__(self, part: object) -> bool:
        _Counted.searched += 1
        return super().__contains__(part)  # type: ignore[operator]


def test_a_long_text_shared_by_every_matrix_row_is_scanned_once() -> None:
    """R2-18, before: each of 10,000 rows scanned a 3 MB text for templates again (validate
    over 300 s)."""
    pos = Pos("s.yaml", 1, 1)
    long_text = _Counted("y" * 10_000)
    matrix = ldict(pos, {"n": llist(pos, list(range(100)))})
    case = ldict(pos, {"name": "c {{ n }}", "user": long_text, "matrix": matrix})
    out: list[tuple[str, Any]] = []
    problems: list[Any] = []
    assert expand_case(case, "cases[0]", {}, Renderer(problems, SuiteBudget()), problems, out)
    assert problems == [] and len(out) == 100
    assert all(body["user"] is long_text for _, body in out)
    assert _Counted.searched <= 3  # once for each kind of template syntax, not once a row


# ------------------------------------------------------------------ state, in characters


def test_a_where_effect_copying_a_text_into_every_record_is_the_calls_error() -> None:
    """Before: the limit counted values, so one `where` copied 100 KB into 30,000 records: a
    333 KB pull request took review to 2.9 GB, and `run` wrote 286 MB that `score` refused."""
    fill = compile_behavior(
        {
            "effects": [
                {"set": "/records", "where": {"k": 1}, "at": "/body", "value": "${state/text}"}
            ]
        }
    )
    text = "w" * 100_000
    records = [{"k": 1}] * (MAX_STATE_CHARS // len(text) + 1)
    state = {"text": text, "records": records}
    out = run_behavior(fill, state, len(records) * 2 + 3, {})
    assert out.error == (
        f"the state would hold more than {MAX_STATE_CHARS} characters written as JSON"
    )
    assert out.state is state  # all or nothing
    fits = run_behavior(fill, {"text": text, "records": records[:50]}, 103, {})
    assert fits.error is None and fits.chars > 50 * len(text)


def test_increments_are_charged_the_digits_they_add() -> None:
    grow = compile_behavior({"effects": [{"increment": "/x", "by": "${args.by}"}]})
    out = run_behavior(grow, {"x": 1}, 2, {"by": 10**4000})
    assert out.error is None and out.chars > 3900  # 4,001 digits


def test_a_suite_state_larger_than_the_limit_is_refused(tmp_path: Path) -> None:
    text = "s" * 1_000_000
    (tmp_path / "s.yaml").write_text(
        "suite: s\nmodels: [m]\nstate:\n  t: &t "
        + json.dumps(text)
        + "\n  copies: ["
        + ", ".join(["*t"] * 10)
        + "]\ntools:\n  - name: t\n    parameters: {type: object}\n    behavior: {response: ok}\n"
        "cases:\n  - {name: c, user: hi, expect: {no_tool_calls: true}}\n",
        encoding="utf-8",
    )
    done = evalspec(tmp_path, "validate", "s.yaml")
    assert done.returncode == 2
    assert f"the state holds more than {MAX_STATE_CHARS} characters written as JSON" in (
        done.stderr
    )


# ------------------------------------------------------------------ tool output, per conversation

READER = """\
suite: p
models:
  - {{name: m, model: fake-m, base_url: "{url}", api_key_env: EVALSPEC_TEST_KEY}}
run: {{mode: single_turn, retries: 0, timeout: 30}}
state: {{text: "{text}"}}
tools:
  - name: read
    parameters: {{type: object, properties: {{}}}}
    behavior: {{response: "${{state/text}}"}}
cases:
{cases}"""


def recorded_reader(tmp_path: Path, cases: int, calls: int, text: int) -> Path:
    """A pull request adding a suite whose tools answer `text` characters from the state,
    `calls` times in each case, recorded from a loopback server as its author would."""
    repo = repository(tmp_path)
    rows = "".join(
        f"  - {{name: c{i}, user: read it, expect: {{final_answer: {{contains: done}}}}}}\n"
        for i in range(cases)
    )

    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return text_reply("done")
        return tool_calls_reply(*[("read", {})] * calls)

    with FakeOpenAI(answer) as server:
        suite = READER.format(url=server.base_url, text="z" * text, cases=rows)
        (repo / "suites" / "p.yaml").write_text(suite, encoding="utf-8")
        done = evalspec(repo, "run", "suites/p.yaml", "--record", "record", "--out", "../rec")
    assert done.returncode in (0, 1), done.stderr
    assert (repo / "suites" / "p.recordings.jsonl").is_file()
    return repo


@pytest.mark.timeout(240)
def test_tools_answering_more_than_a_conversation_may_hold_stop_the_case(
    tmp_path: Path,
) -> None:
    """Before: 100 cases x 100 calls x 100,000 characters (a 107 KB pull request): review held
    every transcript at once, 4.8 GB; the run wrote 2 GB of transcripts that `score` refuses."""
    repo = recorded_reader(tmp_path, cases=3, calls=20, text=1_000)
    limit = {"EVALSPEC_MAX_TOOL_OUTPUT_CHARS": "10000"}
    done = evalspec(repo, "review", "--base-ref", "main", **limit)
    assert done.returncode == 2
    assert re.fullmatch(
        "error: suites/p.yaml: its recordings for case 'c[0-2]': the tools answered more than "
        "10000 characters in one conversation \\(at call 10, 'read'\\), so the case stopped "
        "there; answer with less, or raise EVALSPEC_MAX_TOOL_OUTPUT_CHARS",
        last_line(done),
    )
    out = tmp_path / "run"
    done = evalspec(repo, "run", "suites/p.yaml", "--record", "offline", "--out", out, **limit)
    assert done.returncode == 1, done.stderr  # each case failed; the run completed
    lines = (out / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    stopped = [json.loads(line) for line in lines]
    assert {t["finish_reason"] for t in stopped} == {"too_much_tool_output"}
    assert all(len(t["tool_calls"]) == 9 for t in stopped)  # no call past the limit is kept
    assert evalspec(repo, "score", "suites/p.yaml", "-t", out, **limit).returncode == 1


@pytest.mark.timeout(240)
def test_review_refuses_replays_larger_than_it_holds(tmp_path: Path) -> None:
    """Review keeps a suite's transcripts, base and head, until it is scored: their model
    answers, tool outputs and states are bounded together."""
    repo = recorded_reader(tmp_path, cases=3, calls=5, text=1_000)
    done = evalspec(repo, "review", "--base-ref", "main", EVALSPEC_MAX_REPLAY_CHARS="15000")
    assert done.returncode == 2
    assert re.fullmatch(
        "error: suites/p.yaml: its recordings replay to more than 15000 characters of model "
        "answers, tool outputs and states \\(at case 'c[0-2]'\\), more than a review holds; "
        "make the tools answer less, or whoever runs the review may raise "
        "EVALSPEC_MAX_REPLAY_CHARS",
        last_line(done),
    )
    assert evalspec(repo, "review", "--base-ref", "main").returncode == 4  # new endpoint


# ------------------------------------------------------------------ the transcripts file


@pytest.mark.timeout(240)
def test_a_run_never_writes_a_transcripts_file_that_score_refuses(tmp_path: Path) -> None:
    repo = recorded_reader(tmp_path, cases=4, calls=2, text=1_000)
    out = tmp_path / "run"
    limit = {"EVALSPEC_MAX_TRANSCRIPTS_BYTES": "15000"}
    done = evalspec(repo, "run", "suites/p.yaml", "--record", "offline", "--out", out, **limit)
    assert done.returncode == 2, done.stderr
    assert last_line(done).startswith("error: the transcript of 'c")
    assert (
        "would take transcripts.jsonl past 15000 bytes, the most `score` and `--resume` read, so "
        "the run stopped before writing it; every transcript saved before is intact. Run fewer "
        "cases (--case, --shard) or raise EVALSPEC_MAX_TRANSCRIPTS_BYTES" in done.stderr
    )
    written = (out / "transcripts.jsonl").read_bytes()
    assert 0 < len(written) <= 15000 and written.endswith(b"\n")
    scored = evalspec(repo, "score", "suites/p.yaml", "-t", out, **limit)
    assert scored.returncode in (0, 1), scored.stderr  # what the run wrote, score reads
    # A larger file (from elsewhere) is refused by the same limit, with the same setting named.
    refused = evalspec(
        repo, "score", "suites/p.yaml", "-t", out, EVALSPEC_MAX_TRANSCRIPTS_BYTES="100"
    )
    assert refused.returncode == 2
    assert "EVALSPEC_MAX_TRANSCRIPTS_BYTES" in refused.stderr


def test_transcripts_written_whole_stay_within_what_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge of shards or an import writes its transcripts at once: past the limit, no file."""
    monkeypatch.setenv("EVALSPEC_MAX_TRANSCRIPTS_BYTES", "1000")
    many = [transcript(f"c{i}", ("t", {"a": "x" * 100})) for i in range(10)]
    out = tmp_path / "t.jsonl"
    with pytest.raises(UsageError, match="larger than 1000 bytes, the most evalspec reads back"):
        write_transcripts(out, many)
    assert list(tmp_path.iterdir()) == []  # not even a temporary file
    write_transcripts(out, many[:2])
    assert [t.case for t in load_transcripts(out)] == ["c0", "c1"]


def test_running_out_of_memory_anyway_is_exit_2_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last guard behind the limits: never a traceback, never the gate's exit 1."""
    from evalspec._review import repo as review_repo

    def greedy(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(review_repo, "review_repository", greedy)
    monkeypatch.chdir(repository(tmp_path))
    done = evalspec_cli(["review", "--base-ref", "main"])
    assert done.exit_code == 2
    assert done.output.startswith("error: out of memory: ")


def test_a_long_opening_shared_by_every_matrix_row_is_encoded_and_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After R2-18, review of the same pull request took 480 s: each row's request key
    encoded and hashed the 3 MB message again (30 GB of work)."""
    from evalspec import _plan

    (tmp_path / "s.yaml").write_text(
        matrix_suite(50, 1).replace("\"{{ 'x' * 1 }}\"", "y" * 20_000), encoding="utf-8"
    )
    suite = load_suite(tmp_path / "s.yaml")
    long_work: list[int] = []
    encode, hash_text = _plan._encode, _plan._hash

    def counted_encode(value: Any) -> str:
        text = encode(value)
        long_work.extend([len(text)] if len(text) > 20_000 else [])
        return text

    def counted_hash(text: str) -> str:
        long_work.extend([len(text)] if len(text) > 20_000 else [])
        return hash_text(text)

    monkeypatch.setattr(_plan, "_encode", counted_encode)
    monkeypatch.setattr(_plan, "_hash", counted_hash)
    plan = compile_plan(suite)
    assert len(plan.items) == 50 and len(long_work) == 2  # one encoding, one hash
    monkeypatch.undo()
    for item in plan.items:  # the same keys as computed afresh
        assert item.first_key == request_key(item.model, item.messages, item.tools, item.trial)


def test_review_budget_holds_without_a_timer_signal(monkeypatch):
    """Windows has no SIGALRM: review's time budget still ends a review that runs too long."""
    monkeypatch.delattr(signal, "SIGALRM")
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "0.05")
    never = threading.Event()
    with pytest.raises(ReviewTimeUp, match=r"time budget of 0\.05 s"), review_budget("review"):
        while not never.wait(0.01):
            pass
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "600")
    with review_budget("review"):
        done = "in time"
    assert done == "in time"


@given(st.text(alphabet="{}%#\\ab\n", max_size=12))
def test_a_file_may_hold_a_template_exactly_when_its_text_shows_a_sign(text: str) -> None:
    """`may_hold_template` scans the signs starting with `{` in one pass: it still says yes for
    a text holding any sign and no for any other (a no skips every template check)."""
    assert may_hold_template(text) == any(sign in text for sign in _TEMPLATE_SIGNS)
    assert may_hold_template(f"- {{name: c0}}\n{text}") == may_hold_template(text)
