"""StableToolBench answer-tree tool nodes, in every form its repository publishes.

A converted answer's tool node holds ``{'name', 'arguments', 'response'}`` as a dict
(``data_example/model_predictions_converted``), as JSON text, or as the Python ``str(dict)`` text
of that dict, often cut off part-way (``toolbench/tooleval/results/...``). Text is read with
`ast.literal_eval` (literals only, nothing is run), and a cut-off node field by field, so the
name survives and a cut-off ``arguments`` is kept as unreadable text: the call still counts.

Finish follows StableToolBench's pass-rate rule (`tooleval/utils.py` ``get_steps`` and
`eval_pass_rate.py`): walk the first child from the root, take the last tool node's text, and
look for ``'name': 'Finish'`` in it.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evalspec._tools.toolbench_names import FINISH
from evalspec._util.finite import non_finite_as_text

MAX_NODE_CHARS = 1_000_000
"""Longer node text is not parsed as a whole (it is still read field by field)."""

_FIELD = re.compile(r"""['"](name|arguments|response)['"]\s*:\s*""")
_FINISH_MARK = "'name': 'Finish'"


@dataclass(frozen=True)
class ToolNode:
    """One tool node: its call name, argument text (complete or cut off) and response."""

    name: str
    arguments: str
    arguments_complete: bool
    response: Any


def _literal_string(text: str, start: int) -> tuple[str, bool, int]:
    """The Python string literal at `start`: (value, closed, end). A cut-off literal gives its
    readable part and closed=False."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            literal = text[start : i + 1]
            try:
                return ast.literal_eval(literal), True, i + 1
            except (ValueError, SyntaxError):
                return literal[1:-1], True, i + 1
        i += 1
    body = text[start + 1 :].rstrip("\\")
    try:
        value = ast.literal_eval(quote + body + quote)
    except (ValueError, SyntaxError):
        value = body
    return value, False, len(text)


def _fields_of_cut_text(text: str) -> dict[str, tuple[Any, bool]]:
    """Field -> (value, complete) read from `{'name': '...', 'arguments': '...', ...` text."""
    out: dict[str, tuple[Any, bool]] = {}
    pos = 0
    while True:
        m = _FIELD.search(text, pos)
        if m is None:
            return out
        start = m.end()
        if start < len(text) and text[start] in "'\"":
            value, closed, pos = _literal_string(text, start)
            out.setdefault(m.group(1), (value, closed))
        else:
            pos = start


def _as_mapping(message: Any) -> Mapping[str, Any] | None:
    if isinstance(message, Mapping):
        return message
    if not isinstance(message, str) or len(message) > MAX_NODE_CHARS:
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = non_finite_as_text(parse(message))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, Mapping):
            return value
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def read_tool_node(message: Any) -> ToolNode | None:
    """The call in one tool node's message; None when not even a name can be read."""
    whole = _as_mapping(message)
    if whole is not None:
        if "name" not in whole:
            return None
        return ToolNode(
            name=str(whole["name"]),
            arguments=_text(whole.get("arguments", "")),
            arguments_complete=True,
            response=whole.get("response"),
        )
    if not isinstance(message, str):
        return None
    fields = _fields_of_cut_text(message)
    name, name_complete = fields.get("name", (None, False))
    if not isinstance(name, str) or not name_complete:
        return None
    arguments, complete = fields.get("arguments", ("", False))
    response, response_complete = fields.get("response", (None, False))
    return ToolNode(
        name=name,
        arguments=_text(arguments),
        arguments_complete=complete,
        response=response if response_complete else (response or None),
    )


def walk(nodes: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    """Every node of an ``answer_details`` tree, depth first, in file order (no recursion, so
    a deep tree in an untrusted file cannot exhaust the stack)."""
    stack = [iter(nodes)]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        yield node
        stack.append(iter(node.get("next") or ()))


def finished(answer_details: Any) -> bool:
    """StableToolBench's rule: the last tool node on the first-child path names Finish.

    StableToolBench looks for the text ``'name': 'Finish'`` in that node; this reads the node's
    name instead, which gives the same verdict on dicts and ``str(dict)`` text (all its
    published files) and also sees Finish in JSON-text nodes, whose quotes its test misses.
    """
    if not isinstance(answer_details, list) or not answer_details:
        return False
    node = answer_details[0]
    final: Any = None
    while isinstance(node, Mapping) and "next" in node:
        if node.get("message") and node.get("role") == "tool":
            final = node["message"]
        following = node.get("next")
        if not following:
            break
        node = following[0]
    if final is None:
        return False
    call = read_tool_node(final)
    return call.name == FINISH if call is not None else _FINISH_MARK in str(final)
