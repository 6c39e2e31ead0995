"""Secret forms: what evalspec registers for each secret it sends, and how writers scrub.

A unit test of evalspec._util.redaction, which it imports.
"""

from __future__ import annotations

import base64
import io
import json
import threading

from evalspec._util import redaction
from evalspec._util.files import write_text_atomic
from evalspec._util.redaction import secret_scope


def test_url_userinfo_is_registered_plain_and_as_basic_auth() -> None:
    with secret_scope():
        redaction.register_forms(redaction.url_secrets("http://svc:p%40ss-word@host:8000/v1"))
        basic = base64.b64encode(b"svc:p@ss-word").decode()
        text = f"Authorization: Basic {basic}; url http://svc:p%40ss-word@host; pw p@ss-word"
        scrubbed = redaction.scrub(text)
        assert "p@ss-word" not in scrubbed and "p%40ss-word" not in scrubbed
        assert basic not in scrubbed


def test_short_values_are_not_secrets() -> None:
    before = redaction.registered()
    with secret_scope():
        redaction.register("abc", "", None)
        assert redaction.registered() == before
        assert redaction.scrub("abc") == "abc"


def test_scrub_value_reaches_keys_and_nested_strings() -> None:
    with secret_scope():
        redaction.register("tok-SECRET-1")
        value = {"tok-SECRET-1": ["x tok-SECRET-1", {"n": 1, "s": "tok-SECRET-1"}]}
        assert redaction.scrub_value(value) == {"***": ["x ***", {"n": 1, "s": "***"}]}


def test_files_written_whole_are_scrubbed(tmp_path) -> None:
    path = tmp_path / "results.json"
    with secret_scope():
        redaction.register("tok-SECRET-2")
        write_text_atomic(path, json.dumps({"reason": "echo tok-SECRET-2"}))
    assert json.loads(path.read_text()) == {"reason": "echo ***"}
    write_text_atomic(path, json.dumps({"reason": "echo tok-SECRET-2"}))  # its scope has ended
    assert json.loads(path.read_text()) == {"reason": "echo tok-SECRET-2"}


def test_scrubbing_stream_survives_a_lone_surrogate() -> None:
    with secret_scope():
        redaction.register("tok-SECRET-3")
        raw = io.BytesIO()
        inner = io.TextIOWrapper(raw, encoding="utf-8")
        stream = redaction.ScrubbingStream(inner)
        stream.write("tok-SECRET-3 cut \ud83d emoji\n")
        inner.flush()
        assert raw.getvalue() == b"*** cut \\ud83d emoji\n"


def test_a_scope_keeps_its_secrets_to_itself_and_joins_an_open_one() -> None:
    before = redaction.registered()
    with secret_scope():
        redaction.register("tok-SCOPE-outer")
        with secret_scope():  # a run inside a command: the command's scope
            redaction.register("tok-SCOPE-inner")
        assert redaction.scrub("tok-SCOPE-inner tok-SCOPE-outer") == "*** ***"
        seen_in_a_plain_thread: list[str] = []
        worker = threading.Thread(
            target=lambda: seen_in_a_plain_thread.append(redaction.scrub("tok-SCOPE-inner"))
        )
        worker.start()
        worker.join()
        assert seen_in_a_plain_thread == ["***"]  # no context there: every open scope counts
    assert redaction.registered() == before
    assert redaction.scrub("tok-SCOPE-inner") == "tok-SCOPE-inner"


def test_a_scope_ends_even_when_its_block_raises() -> None:
    before = redaction.registered()
    try:
        with secret_scope():
            redaction.register("tok-SCOPE-raised")
            raise KeyError("boom")
    except KeyError:
        pass
    assert redaction.registered() == before
