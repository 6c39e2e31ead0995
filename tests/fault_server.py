"""A hostile OpenAI-compatible server on loopback: every fault a careless or broken endpoint has.

    with FaultServer("echo") as server:       # point models, judge and simulator at server.url
        ...
    server.connections                         # how many TCP connections it accepted

Modes (``server.mode`` can be changed between requests):

``ok``            a well-behaved endpoint: the model calls the first tool once then answers,
                  the judge says Solved, the simulator answers ``{"error": "", "response": ...}``
``echo``          like ``ok``, but every answer carries the request's headers and URL (the key)
``echo_error``    HTTP 400 whose message carries the request's headers
``garbage``       HTTP 200 with bytes that are no JSON
``html``          HTTP 502 with an HTML error page
``cut``           a 200 whose body stops halfway (Content-Length promised, connection closed)
``drip``          a 200 sent one byte every ``drip_s`` seconds
``storm``         HTTP 429 with ``Retry-After: 120`` for every request
``huge``          a 200 answer of ``huge_mb`` megabytes
``invalid_utf8``  like ``ok``, but the answer holds bytes that are not UTF-8
``surrogate``     like ``ok``, but the answer holds a lone surrogate (an emoji cut in half)
``tripwire``      any connection is a failure the test reports (review must make none)
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = (
    "ok",
    "echo",
    "echo_error",
    "garbage",
    "html",
    "cut",
    "drip",
    "storm",
    "huge",
    "invalid_utf8",
    "surrogate",
    "tripwire",
)


def completion(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body = {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": 0,
        "model": "fault",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    return json.dumps(body).encode()


def good_content(body: dict[str, Any], extra: str = "") -> tuple[str | None, list[Any] | None]:
    """What a well-behaved model, judge or simulator would answer to this request."""
    messages = body.get("messages") or []
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    if system.startswith("You grade"):
        return json.dumps({"verdict": "Solved", "reason": f"fine {extra}"}), None
    if system.startswith("You are the server behind one API"):
        return json.dumps({"error": "", "response": {"note": f"simulated {extra}"}}), None
    tools = body.get("tools") or []
    if tools and not any(m.get("role") == "tool" for m in messages):
        name = tools[0]["function"]["name"]
        args = json.dumps({"city": "Paris", "note": extra})
        return None, [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}
        ]
    return f"It is sunny. {extra}".strip(), None


class FaultServer:
    """Threaded HTTP/1.1 server whose answers are the faults of `mode`."""

    def __init__(
        self,
        mode: str = "ok",
        *,
        drip_s: float = 0.5,
        huge_mb: int = 200,
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[float], object] = time.sleep,
    ) -> None:
        """`clock` stamps each request's arrival and `pause` spaces a drip's bytes: a test's
        fake clock (tests/conftest.py) makes both take no real time."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        self.mode = mode
        self.drip_s = drip_s
        self._clock = clock
        self._pause = pause
        self.huge_mb = huge_mb
        self.connections = 0
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                with owner._lock:
                    owner.connections += 1
                super().setup()

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                with owner._lock:
                    owner.requests.append(
                        {
                            "path": self.path,
                            "headers": headers,
                            "body": body,
                            "at": owner._clock(),
                        }
                    )
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    owner._answer(self, body, headers)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )  # polls for shutdown every 50 ms

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _send(
        self, h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str, **headers: str
    ) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            h.send_header(name.replace("_", "-"), value)
        h.end_headers()
        h.wfile.write(body)
        h.wfile.flush()

    def _answer(self, h: BaseHTTPRequestHandler, body: dict[str, Any], headers: dict) -> None:
        mode = self.mode
        echoed = f"headers={json.dumps(headers)} url={h.path}"
        if mode in ("ok", "echo", "tripwire"):
            if mode == "tripwire":
                self._send(h, 500, b'{"error": {"message": "tripwire"}}', "application/json")
                return
            content, calls = good_content(body, echoed if mode == "echo" else "")
            self._send(h, 200, completion(content, calls), "application/json")
        elif mode == "echo_error":
            error = json.dumps({"error": {"message": f"bad request: {echoed}"}}).encode()
            self._send(h, 400, error, "application/json")
        elif mode == "garbage":
            self._send(h, 200, b"\x00\x13garbage{{{not json", "application/json")
        elif mode == "html":
            page = b"<html><body><h1>502 Bad Gateway</h1><script>x()</script></body></html>"
            self._send(h, 502, page, "text/html")
        elif mode == "cut":
            full = completion("this answer is cut halfway through")
            self._start(h, len(full))
            h.wfile.write(full[: len(full) // 2])
            h.wfile.flush()
            h.close_connection = True
        elif mode == "drip":
            full = completion("slowly")
            self._start(h, len(full))
            for i in range(len(full)):
                h.wfile.write(full[i : i + 1])
                h.wfile.flush()
                self._pause(self.drip_s)
        elif mode == "storm":
            error = b'{"error": {"message": "slow down"}}'
            self._send(h, 429, error, "application/json", Retry_After="120")
        elif mode == "huge":
            self._send_huge(h)
        elif mode in ("invalid_utf8", "surrogate"):
            # A good answer with a broken character inside its text (or its call's arguments).
            content, calls = good_content(body, "MARK")
            bad = b"\xff\xfe\xc3" if mode == "invalid_utf8" else b"\\ud83d"
            self._send(h, 200, completion(content, calls).replace(b"MARK", bad), "application/json")

    def _start(self, h: BaseHTTPRequestHandler, length: int) -> None:
        """Status and headers of a 200 that promises `length` bytes of JSON."""
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(length))
        h.end_headers()

    def _send_huge(self, h: BaseHTTPRequestHandler) -> None:
        head = completion("HUGE").split(b"HUGE")
        chunk = b"x" * (1024 * 1024)
        h.send_response(200)  # no Content-Length: the client only learns the size by reading
        h.send_header("Content-Type", "application/json")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        h.wfile.write(head[0])
        for _ in range(self.huge_mb):
            h.wfile.write(chunk)
        h.wfile.write(head[1])
        h.wfile.flush()
