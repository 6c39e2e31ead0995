"""Recorded answers: JSONL round trip, crash tolerance, replay modes and key hygiene.

A unit test of evalspec._providers.recordings (the recordings file, its reader and the
provider that replays it), which it imports with the OpenAI provider it wraps, the plan's
chained request keys and the line writer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, text_reply, tool_call_reply

from evalspec._providers.base import RecordingMissing
from evalspec._providers.openai_chat import OpenAIChatProvider
from evalspec._providers.recordings import RecordingProvider, Recordings
from evalspec.errors import RunError, SpecError
from evalspec.plugins import ChatRequest, ChatResponse

SECRET = "sk-test-SECRET-123"
KEY_ENV = "EVALSPEC_TEST_API_KEY"


def request(key: str = "k1", label: str = "case 'direct message' on model 'gpt-4o-mini'"):
    return ChatRequest(
        key=key,
        model="gpt-4o-mini",
        messages=({"role": "user", "content": "Schreib johndoe: «Grüß dich»"},),
        tools=({"type": "function", "function": {"name": "send_dm", "parameters": {}}},),
        params={"temperature": 0, "seed": 1},
        label=label,
    )


def answer(text: str = "hi") -> ChatResponse:
    return ChatResponse(
        message={
            "role": "assistant",
            "content": text,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "send_dm", "arguments": '{"user": "jo'},
                }
            ],
        },
        finish_reason="tool_calls",
        usage={"prompt_tokens": 12, "completion_tokens": 3},
        latency_s=0.25,
    )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeOpenAI() as fake:
        yield fake


def live(server: FakeOpenAI) -> OpenAIChatProvider:
    return OpenAIChatProvider(
        server.base_url, KEY_ENV, headers={"X-Secret-Header": "hdr-value"}, retries=0
    )


def run(provider: RecordingProvider, *requests: ChatRequest) -> list[Any]:
    async def go() -> list[Any]:
        try:
            return await asyncio.gather(
                *(provider.complete(r) for r in requests), return_exceptions=True
            )
        finally:
            await provider.aclose()

    return asyncio.run(go())


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    recordings.put(request(), answer())
    recordings.close()
    replayed = Recordings(path).get("k1")
    assert replayed is not None
    assert replayed.message == answer().message
    assert replayed.finish_reason == "tool_calls"
    assert replayed.usage == {"prompt_tokens": 12, "completion_tokens": 3}
    assert replayed.from_recording is True
    assert Recordings(path).get("other") is None


def test_file_is_reviewable_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    recordings.put(request("k1"), answer())
    recordings.put(request("k2"), answer("bye"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert "_comment" in json.loads(lines[0])
    entries = [json.loads(line) for line in lines[1:]]
    assert [e["key"] for e in entries] == ["k1", "k2"]
    assert "«Grüß dich»" in lines[1]  # readable, not \\u-escaped
    assert lines[1] == json.dumps(entries[0], ensure_ascii=False, sort_keys=True)
    assert entries[0]["request"]["params"] == {"seed": 1, "temperature": 0}
    assert entries[0]["label"] == "case 'direct message' on model 'gpt-4o-mini'"


def test_a_continued_request_holds_what_came_since_and_its_tools_only_when_they_changed(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    import msgspec

    from evalspec._plan import Earlier
    from evalspec._providers.recordings import _parse_line
    from evalspec._util.files import dumps_line

    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    first = request("k1")
    recordings.put(first, answer())
    said = ({"role": "assistant", "content": None}, {"role": "user", "content": "and Jane?"})
    second = replace(
        first,
        key="k2",
        messages=first.messages + said,
        continues=Earlier("k1", len(first.messages), first.tools),
    )
    recordings.put(second, answer())
    more = ({"type": "function", "function": {"name": "send_email", "parameters": {}}},)
    third = replace(
        second,
        key="k3",
        messages=second.messages + said,
        tools=second.tools + more,
        continues=Earlier("k2", len(second.messages), second.tools),
    )
    recordings.put(third, answer())
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    asked = {line["key"]: line["request"] for line in lines}
    assert "after" not in asked["k1"] and asked["k1"]["messages"] == list(first.messages)
    assert asked["k2"] == {"after": "k1", "messages": list(said), "params": first.params}
    assert asked["k3"]["after"] == "k2" and asked["k3"]["messages"] == list(said)
    assert asked["k3"]["tools"] == list(third.tools)  # a turn that offers more says so
    assert [Recordings(path).get(k) is not None for k in ("k1", "k2", "k3")] == [True] * 3
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:  # read as written
        assert dumps_line(msgspec.to_builtins(_parse_line(line.encode()))) == line


def test_each_answer_is_on_disk_before_close(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    Recordings(path).put(request(), answer())  # never closed: as after a crash
    assert Recordings(path).get("k1") is not None


def test_last_line_for_a_key_wins(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    recordings.put(request(), answer("old"))
    recordings.put(request(), answer("new"))
    recordings.close()
    assert Recordings(path).get("k1").message["content"] == "new"  # type: ignore[union-attr]


def test_truncated_last_line_is_ignored_and_cut_before_next_write(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    recordings.put(request("k1"), answer())
    recordings.close()
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"key": "k2", "response": {"mess')  # crash mid-write
    reloaded = Recordings(path)
    assert reloaded.keys() == ["k1"]
    reloaded.put(request("k3"), answer())
    reloaded.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line) for line in lines)
    assert Recordings(path).keys() == ["k1", "k3"]


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    recordings.put(request("k1"), answer())
    recordings.close()
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")
    reloaded = Recordings(path)
    assert reloaded.keys() == ["k1"]
    reloaded.put(request("k2"), answer())
    reloaded.close()
    assert Recordings(path).keys() == ["k1", "k2"]


def test_comment_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text('{"_comment": "Example answers, not from a real model."}\n', encoding="utf-8")
    recordings = Recordings(path)
    assert len(recordings) == 0
    recordings.put(request(), answer())
    recordings.close()
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert first == {"_comment": "Example answers, not from a real model."}
    assert len(Recordings(path)) == 1


def test_corrupt_line_in_the_middle_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    recordings.put(request("k1"), answer())
    recordings.close()
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "not json\n" + text.splitlines()[1] + "\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"rec\.jsonl:3:1: not a recorded answer"):
        Recordings(path)


@pytest.mark.parametrize(
    ("usage", "why"),
    [
        ({"prompt_tokens": "abc"}, r"usage\.prompt_tokens: expected a whole number of 0 or more"),
        ({"completion_tokens": -5}, r"usage\.completion_tokens: .*0 or more"),
        ({"prompt_tokens": [1]}, r"usage\.prompt_tokens: expected a whole number"),
    ],
)
def test_a_line_whose_token_counts_are_no_counts_is_refused_where_it_stands(
    tmp_path: Path, usage: dict[str, Any], why: str
) -> None:
    # A recordings file arrives in pull requests: its usage fed the model's and the simulated
    # user's token sums, where text or a negative number failed the conversation at replay.
    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    recordings.put(request("k1"), answer())
    recordings.close()
    head, line = path.read_text(encoding="utf-8").splitlines()
    data = json.loads(line)
    data["response"]["usage"] = usage
    path.write_text(f"{head}\n{json.dumps(data)}\n{line}\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"rec\.jsonl:2:1: not a recorded answer: response\." + why):
        Recordings(path)


def test_offline_miss_names_case_and_model_and_the_fix(tmp_path: Path) -> None:
    provider = RecordingProvider(Recordings(tmp_path / "rec.jsonl"), None, "offline")
    [error] = run(provider, request())
    assert isinstance(error, RecordingMissing)
    message = str(error)
    assert "case 'direct message'" in message and "gpt-4o-mini" in message
    assert "--record auto" in message and "--record record" in message
    assert provider.missing == ["case 'direct message' on model 'gpt-4o-mini'"]


def test_offline_never_calls_even_with_a_live_provider(tmp_path: Path, server: FakeOpenAI) -> None:
    provider = RecordingProvider(Recordings(tmp_path / "rec.jsonl"), live(server), "offline")
    [error] = run(provider, request())
    assert isinstance(error, RecordingMissing)
    assert server.requests == []


def test_auto_calls_for_misses_then_replays(tmp_path: Path, server: FakeOpenAI) -> None:
    path = tmp_path / "rec.jsonl"
    server.enqueue(tool_call_reply("send_dm", '{"user": "jo'))
    first = RecordingProvider(Recordings(path), live(server), "auto")
    [called] = run(first, request())
    assert called.from_recording is False
    assert first.counts == {
        "replayed": 0,
        "called": 1,
        "shared": 0,
        "failed": 0,
        "missing": 0,
        "sent": 1,
    }

    def no_key_needed() -> OpenAIChatProvider:
        raise AssertionError("a fully recorded run must not build the live provider")

    second = RecordingProvider(Recordings(path), no_key_needed, "offline")
    [replayed] = run(second, request())
    assert replayed.from_recording is True
    assert replayed.message == called.message
    assert replayed.message["tool_calls"][0]["function"]["arguments"] == '{"user": "jo'
    assert len(server.requests) == 1


def test_recordings_hold_no_key_and_no_headers(tmp_path: Path, server: FakeOpenAI) -> None:
    path = tmp_path / "rec.jsonl"
    run(RecordingProvider(Recordings(path), live(server), "record"), request())
    text = path.read_text(encoding="utf-8")
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in text
    assert "hdr-value" not in text and "X-Secret-Header" not in text


def test_record_mode_refreshes_and_compacts(tmp_path: Path, server: FakeOpenAI) -> None:
    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    recordings.put(request("k1"), answer("stale"))
    recordings.close()
    server.enqueue(text_reply("fresh"))
    [response] = run(RecordingProvider(Recordings(path), live(server), "record"), request("k1"))
    assert response.message["content"] == "fresh"
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    keyed = [e for e in entries if "key" in e]
    assert [e["response"]["message"]["content"] for e in keyed] == ["fresh"]


def test_replay_only_run_leaves_the_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    recordings.put(request("k1"), answer("old"))
    recordings.put(request("k1"), answer("new"))
    recordings.close()
    before = path.read_bytes()
    run(RecordingProvider(Recordings(path), None, "offline"), request("k1"))
    assert path.read_bytes() == before


def test_auto_without_a_live_provider_reports_the_miss(tmp_path: Path) -> None:
    provider = RecordingProvider(Recordings(tmp_path / "rec.jsonl"), None, "auto")
    [error] = run(provider, request())
    assert isinstance(error, RecordingMissing)


def test_record_mode_without_a_live_provider_cannot_run(tmp_path: Path) -> None:
    provider = RecordingProvider(Recordings(tmp_path / "rec.jsonl"), None, "record")
    [error] = run(provider, request())
    assert isinstance(error, RunError)


def test_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="auto, offline, record"):
        RecordingProvider(Recordings(tmp_path / "rec.jsonl"), None, "replay")  # type: ignore[arg-type]


def _two_answers(path: Path) -> list[str]:
    recordings = Recordings(path)
    recordings.put(request("k1"), answer("first"))
    recordings.put(request("k2"), answer("second"))
    recordings.close()
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    ("after", "keys", "error"),
    [
        ('{"key": "k3", "resp', ["k1", "k2"], None),  # cut short, no newline
        ('{"key": "k3", "resp\n', ["k1", "k2"], None),  # cut short at its newline
        ('{"key": "k3", "resp\n  ', ["k1", "k2"], None),  # then only blanks
        ('{"key": "k3", "resp\n\n', None, r"rec\.jsonl:4:1: not a recorded answer"),
        ("not json\n{}\n", None, r"rec\.jsonl:4:1: not a recorded answer"),
    ],
)
def test_a_bad_line_is_skipped_only_when_it_is_the_last(
    tmp_path: Path, after: str, keys: list[str] | None, error: str | None
) -> None:
    """Answers are read lazily, but every line is still checked when the file is opened."""
    path = tmp_path / "rec.jsonl"
    lines = _two_answers(path)
    path.write_text("\n".join(lines) + "\n" + after, encoding="utf-8")
    if error:
        with pytest.raises(SpecError, match=error):
            Recordings(path)
        return
    recordings = Recordings(path)
    assert recordings.keys() == keys
    assert recordings.get("k2").message["content"] == "second"  # type: ignore[union-attr]
    assert recordings.get("k3") is None


def test_a_file_that_is_no_recordings_is_refused_even_when_its_only_line_is_cut(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text('{"key": "k1", "resp', encoding="utf-8")
    with pytest.raises(SpecError, match="not a recordings file"):
        Recordings(path)


def test_answers_come_from_the_file_as_it_was_read(tmp_path: Path) -> None:
    """Another process compacting (replacing) the file mid-run moves every line; this run
    still replays the answers of the file it read."""
    path = tmp_path / "rec.jsonl"
    lines = _two_answers(path)
    recordings = Recordings(path)
    replacement = tmp_path / "other.jsonl"
    replacement.write_text(lines[0] + "\n" + lines[2] + "\n", encoding="utf-8")  # no k1
    replacement.replace(path)
    assert recordings.get("k1").message["content"] == "first"  # type: ignore[union-attr]
    assert recordings.get("k2").message["content"] == "second"  # type: ignore[union-attr]


def test_answers_asked_for_after_close_are_read_again(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    _two_answers(path)
    recordings = Recordings(path)
    recordings.close()
    assert recordings.get("k2").message["content"] == "second"  # type: ignore[union-attr]
    recordings.put(request("k1"), answer("again"))
    assert recordings.get("k1").message["content"] == "again"  # type: ignore[union-attr]
    assert len(recordings) == 2


def test_an_answer_recorded_in_this_process_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    _two_answers(path)
    recordings = Recordings(path)
    recordings.put(request("k1"), answer("newer"))
    assert recordings.get("k1").message["content"] == "newer"  # type: ignore[union-attr]
    assert recordings.keys() == ["k1", "k2"]
    recordings.compact()
    assert recordings.get("k1").message["content"] == "newer"  # type: ignore[union-attr]
    assert Recordings(path).get("k1").message["content"] == "newer"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "line",
    [
        # as evalspec writes them: keys sorted, "response" last
        '{"key": "k1", "request": {}, "response": {"message": {"content": "a"}, "usage": {}}}',
        # a "response" key nested in the answer itself, and in the request
        '{"key": "k1", "request": {"x": 1, "response": {"message": {}}}, "response": '
        '{"message": {"content": "b", "response": {"message": {"content": "no"}}}}}',
        # written by hand: "response" not last, or twice (the last one counts), odd spacing
        '{"response": {"message": {"content": "c"}}, "key": "k1", "z": {"a": 1, "response": 2}}',
        '{"key": "k1", "response": {"message": {"content": "old"}}, "response": '
        '{"message": {"content": "d"}}}',
        '{"key":"k1","response":{"message":{"content":"e, \\"response\\": {}"}}}',
    ],
)
def test_a_replayed_answer_is_the_lines_response_however_it_is_written(
    tmp_path: Path, line: str
) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    expected = json.loads(line)["response"]
    replayed = Recordings(path).get("k1")
    assert replayed is not None
    assert replayed.message == expected["message"]


_RESPONSE = b'"response": {"message": {"role": "assistant", "content": "x"}}'


@pytest.mark.parametrize(
    "value",
    [
        *(b'"ok"', b'"\xff"', b'"a\x01b"', b"01", b"[1,]", b"NaN", b"1e999", b'"\\ud800"'),
        *(b"tru", b"[" * 2000 + b"]" * 2000, b'{"a": 1, "a": 2}', b'"\xed\xa0\x80"'),
    ],
)
def test_indexing_a_line_refuses_what_reading_it_whole_refuses(value: bytes) -> None:
    """The index checks a line without building its request (replay never reads it): it
    passes and refuses exactly the lines that reading the whole answer does."""
    from evalspec._providers import recordings as rec

    line = b'{"key": "k", "request": {"messages": [{"content": ' + value + b'}], "params": '
    line += b'{"p": ' + value + b"}}, " + _RESPONSE + b"}"
    whole, indexed = rec._parse_line(line), rec._indexed(line)
    assert isinstance(indexed, str) == isinstance(whole, str)
    if isinstance(whole, str):
        assert indexed == whole
    else:
        assert (indexed.key, indexed.response) == (whole.key, whole.response)  # type: ignore[union-attr]


@pytest.mark.parametrize("order", ["file", "reversed", "shuffled", "twice"])
def test_every_answer_is_its_own_however_the_replay_asks_for_them(
    tmp_path: Path, order: str
) -> None:
    """Answers read ahead in file order: asked in that order, backwards, at random or each
    twice, with comments, blank lines and answers longer than what is read ahead between
    them, each key replays its own answer."""
    import random

    from evalspec._providers.recordings import READ_AHEAD

    path = tmp_path / "rec.jsonl"
    recordings = Recordings(path)
    texts = {
        f"k{i}": f"answer {i} " + "x" * (READ_AHEAD + 7 if i % 17 == 5 else i) for i in range(200)
    }
    for key, text in texts.items():
        recordings.put(request(key), answer(text))
    recordings.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[50:50] = ['{"_comment": "a note between answers"}', ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    keys = list(texts)
    if order == "reversed":
        keys.reverse()
    elif order == "shuffled":
        random.Random(7).shuffle(keys)
    elif order == "twice":
        keys = [k for key in keys for k in (key, key)]
    replay = Recordings(path)
    for key in keys:
        got = replay.get(key)
        assert got is not None and got.message["content"] == texts[key]
