"""A real OpenAI-compatible HTTP server on loopback, scriptable per request, for tests.

It speaks enough of the chat-completions protocol (HTTP/1.1 keep-alive, Content-Length) for the
``openai`` client to parse its answers, and can inject the faults a real endpoint produces:
error statuses with Retry-After, slow answers, dropped connections, malformed tool calls.

    with FakeOpenAI(responder=lambda body: tool_call_reply("add", {"a": 1})) as server:
        server.fail_next(429, retry_after=0.3)
        ...  # point a client at server.base_url; inspect server.requests afterwards

Each request takes the first applicable action: the FIFO queue (``enqueue``, ``fail_next``,
``drop_next``, ``delay_next``), then predicate rules (``when``), then ``responder``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


@dataclass(frozen=True)
class Reply:
    """A successful answer: the assistant message, wrapped into a completion by the server."""

    message: dict[str, Any]
    finish_reason: str = "stop"
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 5}
    )


@dataclass(frozen=True)
class Fault:
    """A failure to inject: an HTTP error status, a dropped connection, or a slow answer."""

    kind: str
    """``status``, ``drop`` or ``delay``."""
    status: int = 500
    retry_after: str | float | None = None
    retry_after_ms: float | None = None
    message: str = ""
    delay_s: float = 0.0
    then: Reply | None = None
    """For ``delay``: what to answer after the delay (the responder's answer if None)."""


Action = Reply | Fault | dict[str, Any]
"""A dict is sent as the complete response body, for replies no builder makes."""
Responder = Callable[[dict[str, Any]], Action]


def text_reply(content: str | None, *, finish_reason: str = "stop") -> Reply:
    return Reply({"role": "assistant", "content": content}, finish_reason)


def _call(name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": raw},
    }


def tool_call_reply(
    name: str, arguments: dict[str, Any] | str, *, content: str | None = None
) -> Reply:
    """One tool call; a str ``arguments`` is sent as is, so it may be malformed JSON."""
    return tool_calls_reply((name, arguments), content=content)


def tool_calls_reply(*calls: tuple[str, dict[str, Any] | str], content: str | None = None) -> Reply:
    """Several tool calls in one answer (parallel calls)."""
    message = {"role": "assistant", "content": content, "tool_calls": [_call(*c) for c in calls]}
    return Reply(message, "tool_calls")


def status_fault(
    status: int,
    *,
    retry_after: str | float | None = None,
    retry_after_ms: float | None = None,
    message: str = "",
) -> Fault:
    return Fault("status", status, retry_after, retry_after_ms, message)


def drop_fault() -> Fault:
    return Fault("drop")


def delay_fault(seconds: float, then: Reply | None = None) -> Fault:
    return Fault("delay", delay_s=seconds, then=then)


def fixed_tool_call_responder(
    name: str, arguments: dict[str, Any] | str, final_answer: str = "Done."
) -> Responder:
    """Calls one tool on the first turn and answers with text once a tool result came back."""

    def respond(body: dict[str, Any]) -> Action:
        messages = body.get("messages") or []
        if messages and messages[-1].get("role") == "tool":
            return text_reply(final_answer)
        return tool_call_reply(name, arguments)

    return respond


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    """Header names in lower case."""
    at: float
    """time.monotonic() when the request arrived."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    fake: FakeOpenAI


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request"}})
            return
        fake = self.server.fake
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._received(Received(self.path, body, headers, fake.clock()))
        if not self.path.rstrip("/").endswith(fake.route):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        action = fake._action_for(body)
        if fake.latency_s:
            fake.pause(fake.latency_s)
        try:
            self._perform(action, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timed out) first

    def _perform(self, action: Action, body: dict[str, Any]) -> None:
        fake = self.server.fake
        if isinstance(action, Fault):
            if action.kind == "drop":
                self.close_connection = True  # close without a byte of answer
                return
            if action.kind == "delay":
                fake.pause(action.delay_s)
                action = action.then or fake.responder(body)
                self._perform(action, body)
                return
            headers = {}
            if action.retry_after is not None:
                headers["Retry-After"] = str(action.retry_after)
            if action.retry_after_ms is not None:
                headers["retry-after-ms"] = str(action.retry_after_ms)
            message = action.message or f"injected HTTP {action.status}"
            self._json(action.status, fake.error_body(action.status, message), headers)
            return
        if not isinstance(action, dict):
            action = fake.render(action, body)
        self._json(200, action)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def completion(reply: Reply, model: str) -> dict[str, Any]:
    """The full chat.completion body for a reply."""
    prompt = reply.usage.get("prompt_tokens", 0)
    done = reply.usage.get("completion_tokens", 0)
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"content": None, **reply.message, "role": "assistant"},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": done,
            "total_tokens": prompt + done,
        },
    }


class FakeOpenAI:
    """The server, started on 127.0.0.1 with an ephemeral port by ``with FakeOpenAI() as s``."""

    route = "/chat/completions"
    """Path suffix of the one POST endpoint served."""

    def render(self, reply: Any, body: dict[str, Any]) -> dict[str, Any]:
        """The response body for a scripted reply."""
        return completion(reply, body.get("model", "fake-model"))

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "fake_error", "code": str(status)}}

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[float], object] = time.sleep,
    ) -> None:
        self.responder: Responder = responder or (lambda body: text_reply("ok"))
        self.latency_s = latency_s
        """Fixed delay before every answer, for benchmarks."""
        self.clock = clock
        """Stamps each request's arrival: a test's fake clock (tests/conftest.py) or the real."""
        self.pause = pause
        """Waits out a delay (`delay_next`, `latency_s`): on a fake clock, at once."""
        self.requests: list[Received] = []
        self._queue: deque[Action] = deque()
        self._rules: list[list[Any]] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def enqueue(self, *actions: Action) -> None:
        """Answer the next requests with these actions, in order."""
        with self._lock:
            self._queue.extend(actions)

    def fail_next(
        self,
        status: int,
        *,
        times: int = 1,
        retry_after: str | float | None = None,
        retry_after_ms: float | None = None,
        message: str = "",
    ) -> None:
        fault = status_fault(
            status, retry_after=retry_after, retry_after_ms=retry_after_ms, message=message
        )
        self.enqueue(*[fault] * times)

    def drop_next(self, *, times: int = 1) -> None:
        self.enqueue(*[drop_fault()] * times)

    def delay_next(self, seconds: float, *, times: int = 1) -> None:
        self.enqueue(*[delay_fault(seconds)] * times)

    def when(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        action: Action,
        *,
        times: int | None = None,
    ) -> None:
        """Answer matching requests with ``action``, ``times`` times (None = always)."""
        with self._lock:
            self._rules.append([predicate, action, times])

    def _received(self, received: Received) -> None:
        with self._lock:
            self.requests.append(received)

    def _action_for(self, body: dict[str, Any]) -> Action:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            for rule in self._rules:
                predicate, action, times = rule
                if (times is None or times > 0) and predicate(body):
                    if times is not None:
                        rule[2] = times - 1
                    return action
        return self.responder(body)

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
