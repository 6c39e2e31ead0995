"""Tool variants from a hostile pull request: a lock that leads out of the repository or to a
secret, a schema that names a remote `$ref`, names and descriptions with control codes. Review
must refuse or show them as escapes, never read the secret, fetch the address or send the codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from support import ROOT, git, review_offline, serve_in_thread, suites_repo

from evalspec.api import load_suite
from evalspec.errors import EvalspecError

SECRET = "ghp_this-is-the-secret-token"
HIDDEN = ("\x1b", "\x07", "\x9b", "\u202e")


def _search_repo(tmp_path: Path) -> Path:
    """The example search suite (two variants) committed on `main`, `pr` checked out."""
    folder = tmp_path / "suites"
    folder.mkdir()
    for path in (ROOT / "suites").glob("search.*"):
        shutil.copy(path, folder / path.name)
    return suites_repo(tmp_path, folder)


def _lock_line(repo: Path, new: str) -> None:
    suite = repo / "suites" / "search.yaml"
    text = suite.read_text(encoding="utf-8")
    old = "    lock: search.v2.tools.lock.json     # the same server with --descriptions v2\n"
    assert old in text
    suite.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["outside", "link", "absolute"])
def test_review_refuses_a_variant_lock_that_reaches_a_secret(tmp_path: Path, how: str) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"servers": {}, "token": SECRET}), encoding="utf-8")
    repo = _search_repo(tmp_path)
    if how == "link":
        (repo / "suites" / "v3.tools.lock.json").symlink_to(secret)
        value = "v3.tools.lock.json"
    else:
        value = "../../secret.json" if how == "outside" else str(secret)
    _lock_line(repo, f"    lock: {value}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "variant lock elsewhere")
    done = review_offline(repo, "OPENAI_API_KEY")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "variants[1].lock" in out and "Traceback" not in out
    assert SECRET not in out
    if how == "link":
        assert str(secret) not in out  # named as the project has it, not where it points


@pytest.mark.slow
def test_review_shows_control_codes_in_variant_names_and_locks_as_escapes(
    tmp_path: Path,
) -> None:
    repo = _search_repo(tmp_path)
    lock = repo / "suites" / "search.v2.tools.lock.json"
    text = lock.read_text(encoding="utf-8")
    lock.write_text(
        text.replace("Not for the documentation.", "Not\\u001b]0;t\\u0007\\u202e \\u009b31m."),
        encoding="utf-8",
    )
    _lock_line(
        repo,
        "    lock: search.v2.tools.lock.json\n    tools:\n"
        '      Docs.Search: {name: "Docs.\\e[2JFind\\u202e", description: "\\e]8;;x\\a docs"}\n',
    )
    git(repo, "commit", "-q", "-am", "hidden characters")
    comment = tmp_path / "comment.md"
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "review", "--base-ref", "main", "--markdown", comment],
        capture_output=True,
        text=True,
        cwd=repo,
        timeout=240,
        env={**os.environ, "OPENAI_API_KEY": ""},
    )
    out = done.stdout + done.stderr
    assert done.returncode == 3, out  # stale answers: re-run needed
    assert "variant v2: +Docs.\\x1b[2JFind\\u202e added" in out
    for shown in (out, comment.read_text(encoding="utf-8")):
        assert not any(ch in shown for ch in HIDDEN)


class _Listener(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def listener() -> Iterator[str]:
    """An address on 127.0.0.1 that serves a schema to whoever fetches it, and counts them."""
    _Listener.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Listener)
    serve_in_thread(server)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/schema.json"
    finally:
        server.shutdown()
        server.server_close()


def _search_copy(tmp_path: Path) -> Path:
    for path in (ROOT / "suites").glob("search.*"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / "search.yaml"


def _ref_in_lock(lock: Path, ref: dict[str, object]) -> None:
    data = json.loads(lock.read_text(encoding="utf-8"))
    for listed in data["servers"].values():
        for tool in listed["tools"]:
            tool["inputSchema"] = ref
    lock.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["base lock", "variant lock", "variant edit", "relative to $id"])
def test_a_remote_ref_in_a_tool_schema_is_refused_and_never_fetched(
    tmp_path: Path, listener: str, where: str
) -> None:
    """jsonschema fetches a `$ref` to an address when it validates arguments against it (the
    expected ones, when the suite loads): a pull request would make CI fetch any address."""
    suite = _search_copy(tmp_path)
    ref: dict[str, object] = {"type": "object", "properties": {"query": {"$ref": listener}}}
    if where == "relative to $id":
        base, name = listener.rsplit("/", 1)
        ref = {"$id": base + "/", "type": "object", "properties": {"query": {"$ref": name}}}
    if where in ("base lock", "relative to $id"):
        _ref_in_lock(tmp_path / "search.tools.lock.json", ref)
    elif where == "variant lock":
        _ref_in_lock(tmp_path / "search.v2.tools.lock.json", ref)
    else:
        edit = f"    tools:\n      Docs.Search: {{input_schema: {json.dumps(ref)}}}\n"
        text = suite.read_text(encoding="utf-8")
        suite.write_text(text.replace("--descriptions v2\n", "--descriptions v2\n" + edit, 1))
    with pytest.raises(EvalspecError) as caught:
        load_suite(suite)
    assert "refers to another document, which evalspec never fetches" in str(caught.value)
    assert _Listener.hits == []


@pytest.mark.slow
def test_review_of_a_tool_schema_with_a_remote_ref_fetches_nothing(
    tmp_path: Path, listener: str
) -> None:
    repo = _search_repo(tmp_path)
    _ref_in_lock(
        repo / "suites" / "search.tools.lock.json",
        {"type": "object", "properties": {"query": {"$ref": listener}}},
    )
    git(repo, "commit", "-q", "-am", "a schema from elsewhere")
    done = review_offline(repo, "OPENAI_API_KEY")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "never fetches" in out and "Traceback" not in out
    assert _Listener.hits == []


def test_a_huge_variant_lock_is_refused_unread(tmp_path: Path) -> None:
    suite = _search_copy(tmp_path)
    lock = tmp_path / "search.v2.tools.lock.json"
    with lock.open("wb") as fh:
        fh.truncate(80 * 1024 * 1024)  # sparse: 80 MiB of NUL bytes
    with pytest.raises(EvalspecError) as caught:
        load_suite(suite)
    assert "search.v2.tools.lock.json" in str(caught.value)
