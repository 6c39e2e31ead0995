"""Load a large suite one case at a time, so memory holds the typed cases, not the document.

Each item of `cases:` is checked and built as soon as the parser has read it, then its tree is
dropped (the whole positioned tree of a 50,000-case suite is ~350 MB; its typed cases ~100 MB).
This is a fast path with one rule: it builds exactly the Suite that the whole-document path
builds, or it gives up and the caller loads the whole document, which words every problem with
its position. It gives up on anything out of the ordinary: any problem at all, a top-level key
after `cases:`, a top-level `<<:`, a plugin's name (the compiled checks know the language only),
a suite too small for the compiled schema check.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import yaml

from evalspec._suite.build_tools import refuse_too_many_tools
from evalspec._suite.limits import SuiteTooLarge
from evalspec._suite.load import (
    LDict,
    LList,
    Pos,
    load_list_streaming,
    load_yaml_streaming,
)
from evalspec._suite.model import Suite
from evalspec._suite.render import (
    CaseCounter,
    Included,
    Renderer,
    expand_case,
    has_template,
    include_file,
    included_items,
    may_hold_template,
    resolve_includes,
)
from evalspec._suite.schema import (
    FAST_CHECK_MIN_CASES,
    case_quickly_valid,
    case_weight,
    head_quickly_valid,
)
from evalspec._suite.yaml_hints import may_cut_text
from evalspec._util.errors import Problem, SpecError
from evalspec._util.reading import display_name

STREAM_MIN_CHARS = 256 * 1024
"""Smaller files are read whole: streaming saves nothing there."""
BATCH = 256
"""Cases parsed before they are built."""


class SuiteBuilder(Protocol):
    """The stages of validate.py's builder that a stream drives one case at a time."""

    problems: list[Problem]
    case_count: int
    suite_vars: dict[str, Any]
    renderer: Renderer
    top: dict[str, Any]

    def render_top(self) -> None: ...
    def build_head(self) -> None: ...
    def add_case(self, path: str, raw: LDict) -> None: ...
    def finish(self) -> Suite: ...


class GiveUp(Exception):
    """The suite needs the whole-document path (which reports whatever is wrong)."""


class CaseStream:
    """Receives `cases:` items from the YAML tree builder and builds a Case from each."""

    def __init__(self, path: Path, builder: Callable[..., SuiteBuilder]) -> None:
        self.path = path
        self.base = path.resolve().parent
        self.chain = (path.resolve(),)
        self.make_builder = builder
        self.problems: list[Problem] = []
        self.builder: SuiteBuilder | None = None
        self.count = 0
        self.weight = 0
        """Cases counted as the schema check's work: a multi-turn case counts its turns."""
        self.counter = CaseCounter()
        self.included = Included()  # one count of included files for the whole suite
        self.pending: list[tuple[Any, Pos, bool]] = []

    def start(self, root: LDict) -> None:
        resolve_includes(root, self.base, self.problems, chain=self.chain, included=self.included)
        refuse_too_many_tools(root)
        if self.problems or not head_quickly_valid(root):
            raise GiveUp
        builder = self.make_builder(root, self.path, self.problems)
        builder.render_top()
        if has_template(root) and not head_quickly_valid(builder.top):
            raise GiveUp
        builder.build_head()
        self._no_problems()
        self.builder = builder

    def case(self, item: Any, pos: Pos, braces: bool) -> None:
        self.pending.append((item, pos, braces))
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Build the cases read so far. In batches: parsing a few hundred cases, then building
        them, runs 15% faster than alternating case by case (the memory each stage touches
        stays in the processor's caches)."""
        pending, self.pending = self.pending, []
        for item, _pos, braces in pending:
            if isinstance(item, LDict) and "include" in item:
                self.include(item, self.base, self.chain, 0)
            else:
                self.build(item, braces)

    def build(self, tree: Any, braces: bool) -> None:
        """Check one case's tree and hand its cases (a matrix's rows) to the builder."""
        builder = self.builder
        assert builder is not None  # start() came first
        path = f"cases[{self.count}]"
        self.count += 1
        if not isinstance(tree, LDict) or not case_quickly_valid(tree):
            raise GiveUp
        self.weight += case_weight(tree)
        if not self.counter.add(tree, path, self.problems):
            # Said now: the whole-document path would read every included file again
            # (seconds and hundreds of MB at 50,000 cases) to refuse the same case.
            raise SuiteTooLarge(self.problems)
        expanded: list[tuple[str, LDict]] = []
        templated = braces and has_template(tree)
        spent = not expand_case(
            tree,
            path,
            builder.suite_vars,
            builder.renderer,
            self.problems,
            expanded,
            templated=templated,
        )
        if spent or self.problems:
            raise GiveUp
        rendered = templated or "matrix" in tree
        for where, body in expanded:
            if rendered and not case_quickly_valid(body):
                raise GiveUp  # templates filled in something the schema refuses
            builder.add_case(where, body)
        self._no_problems()

    def include(self, item: LDict, base: Path, chain: tuple[Path, ...], depth: int) -> None:
        """Build the cases of the file an `{include: ...}` item names, streamed like the
        suite's own: the tree of a 10,000-case file is never whole in memory."""
        found = include_file(item, "cases", 0, base, self.problems, depth, chain, self.included)
        self._no_problems()
        if found is None:
            raise GiveUp
        file, text = found
        cases = IncludedCases(self, file, (*chain, file), depth + 1, may_hold_template(text))
        if may_cut_text(text):
            # The whole-document path checks its texts for a ` #` that cut them: read it whole.
            trees = included_items(item, "cases", found, self.problems, depth, chain, self.included)
            self._no_problems()
            for tree in trees:
                self.build(tree, self.included.templated > 0)
            return
        built = load_list_streaming(text, display_name(file), cases)
        root = built[0] if built is not None else None
        if isinstance(root, LDict) and isinstance(root.get("cases"), LList):
            for tree in root["cases"]:  # a file that writes `cases:` is read whole
                cases.case(tree, root.pos, True)
        elif not isinstance(root, LList):
            raise GiveUp  # empty, or not a list: the whole-document path says so
        cases.flush()

    def key_after_cases(self, key: str) -> None:
        raise GiveUp  # the cases already built did not see it

    def _no_problems(self) -> None:
        if self.problems:
            raise GiveUp


class IncludedCases:
    """Receives the items of an included file of cases from its parser, in batches."""

    def __init__(
        self, stream: CaseStream, file: Path, chain: tuple[Path, ...], depth: int, signs: bool
    ) -> None:
        self.stream = stream
        self.base = file.parent  # nested includes resolve relative to the included file
        self.chain = chain
        self.depth = depth
        self.signs = signs
        """Whether the file's text may hold a template (otherwise none of its cases does)."""
        self.pending: list[Any] = []

    def start(self, root: LDict) -> None:
        raise GiveUp  # an included file has no suite head (never called: it streams its root)

    def case(self, item: Any, pos: Pos, braces: bool) -> None:
        self.pending.append(item)
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        for item in pending:
            if isinstance(item, LDict) and "include" in item:
                self.stream.include(item, self.base, self.chain, self.depth)
            else:
                self.stream.build(item, self.signs)

    def key_after_cases(self, key: str) -> None:
        raise GiveUp


def load_streaming(
    path: Path, text: str, builder: Callable[..., SuiteBuilder]
) -> tuple[Suite, int] | None:
    """The suite in `text` and its number of cases, built a case at a time; None when the
    whole document is needed. `builder(root, path, problems)` makes validate.py's builder."""
    if len(text) < STREAM_MIN_CHARS and "include" not in text:
        return None  # a short file that includes others may still hold many cases
    stream = CaseStream(path, builder)
    try:
        built = load_yaml_streaming(text, display_name(path), stream)
        if built is None or not isinstance(built[0], LDict) or stream.builder is None:
            return None
        # The last batch, read by now but not built: an included file it names is parsed
        # here, so its syntax errors must go to the whole-document path like the others.
        stream.flush()
    except SuiteTooLarge:
        raise  # the whole-document path would refuse it too, after reading it all again
    except (GiveUp, SpecError, yaml.YAMLError):
        return None
    if stream.weight < FAST_CHECK_MIN_CASES:
        return None  # the whole-document path checks small suites with full jsonschema
    suite = stream.builder.finish()
    return None if stream.problems else (suite, stream.builder.case_count)
