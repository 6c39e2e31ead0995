"""The last lines a server process wrote to its stderr, kept in bounded memory.

A server that fails to start usually says why on stderr ("ModuleNotFoundError: ...", "address
in use"); the MCP SDK only reports "Connection closed". The server's stderr goes into a pipe that
a thread drains, keeping only the last MAX_BYTES, so a chatty server can neither fill memory nor
the disk nor block on a full pipe. What is shown is untrusted text: control characters are shown
as escapes (evalspec._util.terminal.plain) and secrets scrubbed.
"""

from __future__ import annotations

import os
import threading
from typing import TextIO

from evalspec._util import redaction
from evalspec._util.terminal import plain

MAX_BYTES = 8192
"""Bytes kept from the end of the stream."""
MAX_LINES = 15
"""Lines shown in an error message."""
MAX_CHARS = 1500
"""Characters shown in an error message."""


class StderrTail:
    """A writable file (with a real descriptor, for a child process) whose end is kept."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self._read_fd = read_fd
        self.file: TextIO = os.fdopen(write_fd, "w")
        self._tail = bytearray()
        self._thread = threading.Thread(target=self._drain, name="mcp-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._read_fd, 65536):
                self._tail += chunk
                if len(self._tail) > MAX_BYTES:
                    del self._tail[: len(self._tail) - MAX_BYTES]
        finally:
            os.close(self._read_fd)

    def close(self) -> None:
        """Close our end of the pipe; the thread stops once the child's end is closed too."""
        if not self.file.closed:
            self.file.close()

    def text(self, wait_s: float = 1.0) -> str:
        """The last lines written, cleaned for a terminal; empty when the server said nothing.

        Waits up to `wait_s` for the stream to end (a server that just exited may still have
        bytes in the pipe)."""
        self.close()
        self._thread.join(wait_s)
        raw = bytes(self._tail).decode("utf-8", errors="replace")
        lines = [line.rstrip() for line in raw.splitlines() if line.strip()]
        shown = "\n".join(lines[-MAX_LINES:])[-MAX_CHARS:]
        return plain(redaction.scrub(shown))
