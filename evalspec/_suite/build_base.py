"""The shared base of the suite builder's parts: problem reporting and plain-data helpers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, overload

from evalspec._suite.lint import Warnings
from evalspec._suite.load import LDict, Pos
from evalspec._suite.model import (
    Loc,
    Tool,
)
from evalspec._util.errors import Problem
from evalspec._util.paths import escape_reason


def make_loc(pos: Pos, path: str) -> Loc:
    return Loc(pos.file, pos.line, pos.column, path)


@overload
def plain(value: dict[str, Any]) -> dict[str, Any]: ...
@overload
def plain(value: Any) -> Any: ...
def plain(value: Any) -> Any:
    """LDict/LList to plain dict/list, so the model holds ordinary data."""
    if isinstance(value, dict):
        return {k: plain(v) if isinstance(v, _NESTED) else v for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) if isinstance(v, _NESTED) else v for v in value]
    return value


_NESTED = (dict, list, tuple)
"""What `plain` copies; anything else is kept as it is (without a call per value)."""


class Reporter:
    """What the builder parts share: the problems found so far, and the suite's tools."""

    problems: list[Problem]
    warnings: Warnings
    tool_map: dict[str, Tool]
    base: Path

    def problem(self, pos: Pos, path: str, message: str, hint: str = "") -> None:
        self.problems.append(Problem.at(pos, path, message, hint))

    def warn(self, pos: Pos, path: str, message: str, hint: str = "") -> None:
        """Something valid that most likely does not mean what its author meant (lint.py)."""
        self.warnings.add(Problem.at(pos, path, message, hint))

    def vpos(self, node: LDict, key: str) -> Pos:
        return node.value_pos.get(key, node.pos)

    def written_path(
        self,
        node: Any,
        key: str,
        path: str,
        *,
        verb: str = "written",
        example: str = "recordings/answers.jsonl",
        at: Pos | None = None,
    ) -> str | None:
        """`node[key]`, a path the run writes to (or reads, `verb`), resolved inside the
        suite's directory: a pull request's suite names no file elsewhere on the machine.
        `at`: the value's place when `node` (rendered) no longer knows it.

        A path leading elsewhere (absolute, `../`, through a link) is a problem at its place.
        """
        value = node.get(key) if isinstance(node, dict) else None
        if value is None:
            return None
        why = escape_reason(self.base, str(value))
        if why:
            pos = self.vpos(node, key) if isinstance(node, LDict) else Pos("", 1, 1)
            self.problem(
                at or pos,
                f"{path}.{key}" if path else key,
                f"{str(value)!r} cannot be {verb}: {why}",
                "give a path relative to the suite file that stays beside it or below it, "
                f"for example: {example}",
            )
            return None
        # Not resolved: a link on the way is refused where the file is used (_util/project.py).
        return os.path.normpath(self.base / str(value))
