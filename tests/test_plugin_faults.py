"""A Python tool environment raises the faults a suite declares (`evalspec.plugins.ToolFault`):
recorded, replayed, scored and shown as declared ones; and declared `faults:` apply to a
plugin's tools too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, cli, git, results_of, review_offline, suites_repo

from evalspec import plugins
from evalspec.api import load_suite, record_answers, run
from evalspec.plugins import ChatRequest, ChatResponse, ToolFault, ToolOutcome
from evalspec.records import RunRequest

EXAMPLE = ROOT / "examples" / "plugin"
PLUGIN_ENV = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(EXAMPLE)]), "GATEWAY_KEY": ""}

GATEWAY = """\
suite: gateway
models: [{name: m, model: m-1, api_key_env: GATEWAY_KEY}]
environment: {kind: card_gateway, params: {busy: 1, lost: [B2]}}
state: {payments: []}
run: {max_turns: 6}
tools:
  - name: charge_card
    idempotent: false
    parameters:
      type: object
      properties: {order_id: {type: string}, amount: {type: number}}
      required: [order_id, amount]
cases:
  - name: busy, then charged
    user: Charge order A1, 40 dollars.
    expect:
      tool_calls: [{charge_card: {order_id: A1, amount: 40}}]
      max_retries: 2
      no_duplicates: true
      state: {/payments/0/amount: 40, /payments/1: {exists: false}}
  - name: a lost answer retried blindly
    user: Charge order B2, 25 dollars.
    expect:
      no_duplicates: true
      state: {/payments/1: {exists: false}}
  - name: a declared 503 before the gateway
    user: Charge order C3, 10 dollars.
    faults: [{tool: charge_card, kind: error, on_call: 1, status: 503}]
    expect:
      max_retries: 3
      state: {/payments/0/amount: 10, /payments/1: {exists: false}}
"""


class Retrying:
    """Charges the order in the user's text, again after any error, at most four times."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        words = next(m["content"] for m in request.messages if m["role"] == "user").split()
        seen = [m["content"] for m in request.messages if m["role"] == "tool"]
        usage = {"prompt_tokens": 10, "completion_tokens": 2}
        if seen and ('"error"' not in seen[-1] or len(seen) >= 4):
            return ChatResponse({"role": "assistant", "content": "Done."}, "stop", usage)
        args = {"order_id": words[2].rstrip(","), "amount": float(words[3])}
        call = {"id": f"c{len(seen)}", "type": "function"}
        call["function"] = {"name": "charge_card", "arguments": json.dumps(args)}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return ChatResponse(message, "tool_calls", usage)

    async def aclose(self) -> None:
        return None


def record(path: str) -> None:
    """Record the scripted answers (in a child process that has the example plugin)."""
    record_answers(load_suite(Path(path)), Retrying(), note="scripted examples")


def _record_in_child(path: Path) -> None:
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); "
    code += f"from test_plugin_faults import record; record({str(path)!r})"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **PLUGIN_ENV},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def _faults(run_dir: Path) -> dict[str, list[Any]]:
    lines = (run_dir / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    return {
        t["case"]: [c.get("fault") for c in t["tool_calls"]]
        for t in map(json.loads, lines)
        if "case" in t
    }


RATE_LIMIT = {"kind": "rate_limit", "status": 429, "retry_after": 2, "applied": False}
RAISED_429 = {**RATE_LIMIT, "raised": True}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_example_gateway_raises_faults_recorded_replayed_and_scored_as_declared(tmp_path):
    path = tmp_path / "gateway.yaml"
    path.write_text(GATEWAY, encoding="utf-8")
    _record_in_child(path)
    first = cli("run", path, "--record", "offline", "--out", tmp_path / "a", "-v", env=PLUGIN_ENV)
    out = " ".join(first.stdout.split())
    assert first.returncode == 1, first.stdout + first.stderr  # the blind retry charged twice
    assert "0 called" in out
    faults = _faults(tmp_path / "a")
    timeout = {"kind": "timeout", "seconds": 30, "applied": True, "raised": True}
    declared = {"kind": "error", "status": 503, "applied": False}
    assert faults == {
        "busy, then charged": [RAISED_429, None],
        "a lost answer retried blindly": [RAISED_429, timeout, None],
        "a declared 503 before the gateway": [declared, RAISED_429, None],
    }
    results = {r["case"]: r for r in results_of(tmp_path / "a")["results"]}
    assert results["busy, then charged"]["status"] == "pass"
    assert results["a declared 503 before the gateway"]["status"] == "pass"  # one payment
    blind = results["a lost answer retried blindly"]
    assert blind["status"] == "fail"
    assert "duplicate side effect: charge_card (call 3)" in blind["reason"]
    rows = [r["reason"] for r in results["busy, then charged"]["rows"] if r["field"] == "fault"]
    assert rows == [
        "charge_card (call 1) met a fault the tool environment raised: rate_limit, status 429, "
        "Retry-After 2"
    ]
    assert "robustness · recovery rate 67% (2 of 3 trials that met a fault" in out
    again = cli("run", path, "--record", "offline", "--out", tmp_path / "b", env=PLUGIN_ENV)
    assert again.returncode == 1
    assert _faults(tmp_path / "b") == faults


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_review_flags_only_the_case_whose_declared_fault_changed_on_a_plugin_tool(tmp_path):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "gateway.yaml").write_text(GATEWAY, encoding="utf-8")
    _record_in_child(shipped / "gateway.yaml")
    repo = suites_repo(tmp_path, shipped)
    suite = repo / "suites" / "gateway.yaml"
    suite.write_text(GATEWAY.replace("status: 503", "status: 502"), encoding="utf-8")
    git(repo, "commit", "-q", "-am", "the gateway answers 502")
    done = review_offline(repo, "GATEWAY_KEY", plugins=["example"], env=PLUGIN_ENV)
    assert "Traceback" not in done.stderr, done.stderr
    (review,) = json.loads(done.stdout)["suites"]
    flagged = {c["case"] for c in review["changes"] if c["rerun_needed"]}
    assert flagged == {"a declared 503 before the gateway"}  # the raised ones replay as recorded


class Shelf:
    """A shelf whose listing comes back cut short and whose price comes back broken."""

    def __init__(self, state: Any, params: dict[str, Any]) -> None:
        self.items = list(state["items"])

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name == "list_items":
            raise ToolFault("partial", output={"items": self.items}, keep=1, field="/items")
        raise ToolFault("malformed", output={"price": 4.5}, form="wrong_types")

    def snapshot(self) -> Any:
        return {"items": self.items}


SHELF = """\
suite: shelf
models: [{name: m, model: m-1, api_key_env: SHELF_KEY}]
environment: {kind: shelf}
state: {items: [tea, jam, bread]}
tools:
  - {name: list_items, parameters: {type: object, properties: {}}}
  - {name: price, parameters: {type: object, properties: {}}}
cases:
  - name: look
    user: What is on the shelf, and what does it cost?
    expect: {tool_calls: [{list_items: {}}, {price: {}}]}
"""


class BothTools:
    async def complete(self, request: ChatRequest) -> ChatResponse:
        usage = {"prompt_tokens": 10, "completion_tokens": 2}
        if any(m["role"] == "tool" for m in request.messages):
            return ChatResponse({"role": "assistant", "content": "Tea."}, "stop", usage)
        calls = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
            for i, n in enumerate(("list_items", "price"))
        ]
        message = {"role": "assistant", "content": None, "tool_calls": calls}
        return ChatResponse(message, "tool_calls", usage)

    async def aclose(self) -> None:
        return None


@pytest.fixture
def shelf():
    plugins.register("environment", "shelf")(Shelf)
    yield
    plugins.unregister("environment", "shelf")


def test_an_answer_the_environment_cuts_or_breaks_is_recorded_as_that_fault(tmp_path, shelf):
    path = tmp_path / "shelf.yaml"
    path.write_text(SHELF, encoding="utf-8")
    record_answers(load_suite(path), BothTools())
    outcome = run(RunRequest(path, record="offline", out=tmp_path / "run"))
    (result,) = outcome.report.cases[0].results
    assert result.status == "pass", result.reason
    faults = _faults(outcome.run_dir)["look"]
    assert faults == [
        {"kind": "partial", "keep": 1, "field": "/items", "raised": True},
        {"kind": "malformed", "form": "wrong_types", "raised": True},
    ]
    lines = (outcome.run_dir / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    (t,) = [json.loads(x) for x in lines if '"case"' in x]
    assert [c["output"] for c in t["tool_calls"]] == [{"items": ["tea"]}, {"price": "4.5"}]
    assert result.details["robustness"] == {"faults": 2}


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda: ToolFault("crash"), "ToolFault kind 'crash': choose one of error, timeout"),
        (
            lambda: ToolFault("malformed", output={}, retry_after=2),
            "ToolFault('malformed'): `retry_after` means nothing to this kind; it is for kind "
            "rate_limit",
        ),
        (lambda: ToolFault("partial", output=[]), "ToolFault('partial') needs `keep`"),
        (lambda: ToolFault("malformed", form="garbled"), "ToolFault form 'garbled': choose one"),
        (lambda: ToolFault("partial", keep=-1), "ToolFault keep=-1: a whole number of items"),
        (lambda: ToolFault("error", status=True), "ToolFault status=True: an HTTP status"),
        (lambda: ToolFault("error", message=503), "ToolFault message=503: the text the model"),
        (lambda: ToolFault("rate_limit", retry_after=-2), "ToolFault retry_after=-2: a number"),
    ],
)
def test_a_fault_a_plugin_could_not_declare_is_refused_with_what_to_fix(make, said):
    with pytest.raises(ValueError) as raised:
        make()
    assert said in str(raised.value)
