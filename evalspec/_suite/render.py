"""Expand a loaded suite: includes, {{ templates }} and case matrices.

Templates run in Jinja2's immutable sandbox with undefined variables as errors, so a spec can
neither reach Python internals nor silently render an empty string for a typo.
"""

from __future__ import annotations

import errno
import itertools
import math
import os
import re
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalspec._suite.budget import (
    MAX_TEMPLATE_TEXT,
    RenderBudget,
    SuiteBudget,
    TemplateBudgetError,
    rendering,
)
from evalspec._suite.limits import MAX_CASES_ENV, max_cases
from evalspec._suite.load import LDict, LList, Pos, ldict, llist, load_yaml, read_text
from evalspec._suite.schema import did_you_mean
from evalspec._suite.tree import share_positions
from evalspec._suite.yaml_hints import cut_text_problems, may_cut_text
from evalspec._util.errors import Problem, SpecError
from evalspec._util.reading import display_name, file_kind

MAX_INCLUDE_DEPTH = 8
MAX_INCLUDES = 100
"""Included files per suite, counting every file of the include tree."""
MAX_MATRIX_ROWS = 10_000
_LONG_TEXT = 4096
"""Texts at least this long are remembered once scanned: shorter ones cost less to scan again."""
_WHOLE_EXPR = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\}\}).)*)\}\}\s*$", re.DOTALL)


def _env() -> Any:
    from evalspec._suite.sandbox import sandbox

    return sandbox()


@lru_cache(maxsize=4096)
def _expression(source: str) -> Any:
    """Compiled once per text: a matrix renders the same template for every row."""
    return _env().compile_expression(source, undefined_to_none=False)


@lru_cache(maxsize=4096)
def _template(source: str) -> Any:
    return _env().from_string(source)


_ARG_TEMPLATE = re.compile(r"\{\{\s*args\.([A-Za-z_][\w-]*)\s*\}\}")


def _run_time_hint(text: str, name: str) -> str:
    """In a tool's behavior, `{{ }}` names load-time variables; what a call brings is written
    as a run-time reference. Say which one was meant."""
    if name in ("args", "state", "count"):
        m = _ARG_TEMPLATE.search(text)
        ref = f"${{args.{m.group(1)}}}" if m else "${args.NAME}"
        return (
            f"a call's arguments and the state are run-time references in a behavior, not "
            f"{{{{ }}}} templates: write {ref}, ${{state/POINTER}} or ${{count/POINTER}}"
        )
    return f"for the call's argument {name}, write the run-time reference ${{args.{name}}}"


def _problem(pos: Pos, path: str, message: str, hint: str = "") -> Problem:
    return Problem.at(pos, path, message, hint)


# ---------------------------------------------------------------- includes


@dataclass
class Included:
    """What the includes of one suite have read so far, shared by every file it includes."""

    files: int = 0
    templated: int = 0
    """Files whose text may hold a template: the others' cases need no search for one."""


_TEMPLATE_SIGNS = ("{{", "{%", "{#", "\\")
"""Without these in a file's text no value in it holds a template: values join lines only with
a space or a line break, and only a backslash escape writes a `{` the text does not show."""


def resolve_includes(
    doc: LDict,
    base: Path,
    problems: list[Problem],
    depth: int = 0,
    chain: tuple[Path, ...] = (),
    included: Included | None = None,
) -> None:
    """Replace `{include: file}` items of `tools` and `cases` with the file's items, in place.

    `chain` holds the files being included, outermost first, to report include cycles;
    `included` counts the files included so far in the whole tree (one for the whole suite).
    """
    included = included if included is not None else Included()
    for section in ("tools", "cases"):
        items = doc.get(section)
        if not isinstance(items, LList):
            continue
        out: list[Any] = []
        out_pos: list[Pos] = []
        for i, item in enumerate(items):
            if isinstance(item, LDict) and "include" in item:
                found = include_file(item, section, i, base, problems, depth, chain, included)
                out_items = (
                    []
                    if found is None
                    else included_items(item, section, found, problems, depth, chain, included)
                )
                out.extend(out_items)
                out_pos.extend(getattr(x, "pos", item.pos) for x in out_items)
            else:
                out.append(item)
                out_pos.append(items.item_pos[i])
        items[:] = out
        items.item_pos = out_pos


def included_items(
    item: LDict,
    section: str,
    found: tuple[Path, str],
    problems: list[Problem],
    depth: int,
    chain: tuple[Path, ...],
    included: Included,
) -> list[Any]:
    """The items of the file `item` includes (`include_file` found it and read its text), its
    own includes resolved."""
    file, text = found
    pos = item.value_pos.get("include", item.pos)
    target = item["include"]
    try:
        loaded = load_yaml(file, text)
    except SpecError as exc:
        problems.extend(exc.problems)
        return []
    if may_cut_text(text):  # an included file's texts can be cut by ` #` too
        problems.extend(cut_text_problems(loaded, text, display_name(file)))
    if isinstance(loaded, LDict) and section in loaded:
        loaded = loaded[section]
    if not isinstance(loaded, LList):
        lp = getattr(loaded, "pos", Pos(str(target), 1, 1))
        problems.append(
            _problem(
                lp,
                "",
                f"an included {section} file must hold a list of {section} "
                f"(it is included from {pos.file}, line {pos.line})",
                f"write each of the {section} as a `- ` item, or put them under `{section}:`",
            )
        )
        return []
    # Nested includes resolve relative to the included file.
    wrapper = ldict(loaded.pos, {section: loaded})
    resolve_includes(wrapper, file.parent, problems, depth + 1, (*chain, file), included)
    return list(wrapper[section])


def include_file(
    item: LDict,
    section: str,
    index: int,
    base: Path,
    problems: list[Problem],
    depth: int,
    chain: tuple[Path, ...],
    included: Included,
) -> tuple[Path, str] | None:
    """The file an `{include: ...}` item names and its text, counted in `included`; None (with
    the problem in `problems`) when it cannot be included. Shared by the whole-document path
    and the stream, which parses the text itself."""
    path = f"{section}[{index}].include"
    pos = item.value_pos.get("include", item.pos)
    target = item["include"]
    if len(item) != 1:
        extra = sorted(k for k in item if k != "include")
        problems.append(
            _problem(
                item.pos,
                f"{section}[{index}]",
                f"an include item cannot also have {extra}",
                "put those keys in the included file",
            )
        )
        return None
    if not isinstance(target, str) or not target:
        problems.append(_problem(pos, path, "include needs a file path", "include: tools.yaml"))
        return None
    if depth >= MAX_INCLUDE_DEPTH:
        problems.append(
            _problem(
                pos,
                path,
                f"includes nest deeper than {MAX_INCLUDE_DEPTH} levels",
                "check for a file that includes itself",
            )
        )
        return None
    included.files += 1
    if included.files > MAX_INCLUDES:
        if included.files == MAX_INCLUDES + 1:
            problems.append(
                _problem(
                    pos,
                    path,
                    f"the suite includes more than {MAX_INCLUDES} files in all",
                    "include fewer, larger files",
                )
            )
        return None
    try:
        file = (base / target).resolve()
    except (OSError, RuntimeError):  # Python reports a symlink loop as RuntimeError
        file = None
    if file is not None and file in chain:
        loop = " -> ".join(f.name for f in (*chain[chain.index(file) :], file))
        problems.append(
            _problem(
                pos,
                path,
                f"include cycle: {loop}",
                "remove the include that leads back to a file already being included",
            )
        )
        return None
    what = _not_a_file(base / target)
    if what or file is None:
        problems.append(
            _problem(
                pos,
                path,
                f"the included file {target!r} {what or 'cannot be resolved'}",
                "check the path; it is relative to the file that includes it",
            )
        )
        return None
    try:
        text = read_text(file)
    except SpecError as exc:
        problems.extend(exc.problems)
        return None
    if may_hold_template(text):
        included.templated += 1
    return file, text


def may_hold_template(text: str) -> bool:
    """Whether any value of a file with this text may hold a template (see _TEMPLATE_SIGNS)."""
    return _BRACE_SIGNS.search(text) is not None or any(sign in text for sign in _OTHER_SIGNS)


_BRACE_SIGNS = re.compile("|".join(re.escape(sign) for sign in _TEMPLATE_SIGNS if sign[0] == "{"))
"""The signs that start with `{`, in one pass: `sign in text` for each scanned a file of flow
mappings (a `{` on every line) five times slower."""
_OTHER_SIGNS = tuple(sign for sign in _TEMPLATE_SIGNS if sign[0] != "{")


def _not_a_file(path: Path) -> str:
    """Why `path` cannot be included, in words ("" when it is a regular file)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link that loops back on itself"
        return "does not exist"
    return "" if stat.S_ISREG(info.st_mode) else f"is {file_kind(info.st_mode)}"


# ---------------------------------------------------------------- templates


class Renderer:
    """Renders every string of a subtree with a set of variables, collecting problems."""

    def __init__(self, problems: list[Problem], budget: SuiteBudget | None = None):
        self.problems = problems
        self.budget = budget or SuiteBudget()
        """Template time left for the whole suite, shared by every renderer of one load."""
        self.undefined: list[tuple[int, str]] = []
        """(index in problems, variable name) of every undefined-variable problem."""
        self._plain: dict[int, str] = {}
        """Long texts found to hold no template, by identity: a matrix renders a case's body
        once a row, and each row's body shares the case's texts (a 3 MB text in a case of
        10,000 rows was scanned 10,000 times: validate took over 300 s)."""

    def render(self, node: Any, variables: dict[str, Any], path: str, pos: Pos) -> Any:
        if isinstance(node, str):
            return self._string(node, variables, path, pos)
        if isinstance(node, LDict):
            out = LDict()
            out.pos, out.key_pos, out.value_pos = node.pos, node.key_pos, node.value_pos
            for key, value in node.items():
                vpos = node.value_pos.get(key, node.pos)
                out[key] = self.render(value, variables, f"{path}.{key}" if path else key, vpos)
            return out
        if isinstance(node, LList):
            items = [
                self.render(v, variables, f"{path}[{i}]", node.item_pos[i])
                for i, v in enumerate(node)
            ]
            return llist(node.pos, items, list(node.item_pos))
        return node

    def _string(self, text: str, variables: dict[str, Any], path: str, pos: Pos) -> Any:
        if len(text) >= _LONG_TEXT:
            known = self._plain.get(id(text))
            if known is text:
                return text
        if "{{" not in text and "{%" not in text and "{#" not in text:
            if len(text) >= _LONG_TEXT:
                self._plain[id(text)] = text  # kept, so its id is not another text's
            return text
        from jinja2 import TemplateAssertionError, TemplateError, TemplateSyntaxError
        from jinja2.exceptions import SecurityError, UndefinedError

        try:
            with rendering(self.budget) as budget:
                whole = _WHOLE_EXPR.match(text)
                if whole:
                    # A string that is one expression keeps its type: "{{ n }}" with n: 5 gives 5.
                    value = _finite(_plain(_expression(whole["expr"])(**variables)))
                    self.budget.add_chars(_chars(value))
                    return value
                return _bounded_render(_template(text), variables, budget)
        except TemplateBudgetError as exc:
            self.problems.append(
                _problem(
                    pos,
                    path,
                    f"template stopped: {exc}",
                    "templates are for filling in values; write large or repeated data out",
                )
            )
        except _NotFinite:
            self.problems.append(
                _problem(
                    pos,
                    path,
                    "the template produces NaN or an infinite number",
                    "make it produce a finite number",
                )
            )
        except SecurityError as exc:
            self.problems.append(
                _problem(
                    pos,
                    path,
                    f"template refused by the sandbox: {str(exc).rstrip('.')}",
                    "templates may only use variables and filters",
                )
            )
        except UndefinedError as exc:
            name = _undefined_name(str(exc))
            self.undefined.append((len(self.problems), name))
            known = ", ".join(sorted(variables)) or "none"
            close = did_you_mean(name, list(variables))
            hint = f"{close} " * bool(close) + (
                f"define it in vars or the case's matrix (defined: {known})"
            )
            if ".behavior." in f"{path}." and name in ("args", "state", "count"):
                hint = _run_time_hint(text, name)
            elif ".behavior." in f"{path}.":
                hint = _run_time_hint(text, name) + "; else " + hint
            self.problems.append(
                _problem(pos, path, f"template uses undefined variable {name!r}", hint)
            )
        except TemplateAssertionError as exc:
            named = re.search(r"filter named '([^']+)'", str(exc))
            close = did_you_mean(named.group(1), list(_env().filters)) if named else ""
            self.problems.append(
                _problem(
                    pos,
                    path,
                    f"template error: {str(exc).rstrip('.')}",
                    close or "use a built-in Jinja2 filter, like upper, lower, replace or default",
                )
            )
        except TemplateSyntaxError as exc:
            self.problems.append(
                _problem(
                    pos,
                    path,
                    f"template syntax error: {str(exc).rstrip('.')}",
                    "write variables as {{ name }}: every {{ needs a closing }}",
                )
            )
        except TemplateError as exc:
            self.problems.append(
                _problem(pos, path, f"template error: {exc}", "check the {{ }} expression")
            )
        except Exception as exc:  # a template's filter can raise anything (e.g. 1/0)
            self.problems.append(
                _problem(
                    pos,
                    path,
                    f"template failed: {type(exc).__name__}: {exc}",
                    "check the {{ }} expression",
                )
            )
        return text


class _NotFinite(Exception):
    """A template produced NaN or an infinity, which no number of a suite may be."""


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise _NotFinite
    if isinstance(value, dict):
        for v in value.values():
            _finite(v)
    elif isinstance(value, list):
        for v in value:
            _finite(v)
    return value


def _bounded_render(template: Any, variables: dict[str, Any], budget: RenderBudget) -> str:
    """Render chunk by chunk, stopping as soon as the text passes the size limit."""
    out: list[str] = []
    size = 0
    for chunk in template.generate(**variables):
        size += len(chunk)
        if size > MAX_TEMPLATE_TEXT:
            raise TemplateBudgetError(
                f"the template renders more than {MAX_TEMPLATE_TEXT} characters"
            )
        budget.step()
        budget.suite.add_chars(len(chunk))
        out.append(chunk)
    return "".join(out)


def _chars(value: Any) -> int:
    """About how many characters a template's value holds (its texts, one per other value)."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            total += sum(len(k) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            total += 1
            stack.extend(item)
        else:
            total += 1
    return total


def _undefined_name(message: str) -> str:
    m = re.search(r"'([^']+)' is undefined", message)
    return m.group(1) if m else message


def _plain(value: Any) -> Any:
    """Template results become plain JSON-like data (no Jinja objects leak into the suite)."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


# ---------------------------------------------------------------- matrix


def matrix_rows(case: LDict, path: str, problems: list[Problem]) -> list[dict[str, Any]] | None:
    """The variable rows a case runs with: None when it has no matrix."""
    matrix = case.get("matrix")
    if matrix is None:
        return None
    pos = case.value_pos.get("matrix", case.pos)
    if isinstance(matrix, LList):
        rows = []
        for i, row in enumerate(matrix):
            if not isinstance(row, dict):
                problems.append(
                    _problem(
                        matrix.item_pos[i],
                        f"{path}.matrix[{i}]",
                        "a matrix row must be a mapping of variables",
                        "- {city: Paris}",
                    )
                )
                continue
            rows.append(dict(row))
        if not rows:
            problems.append(_problem(pos, f"{path}.matrix", "the matrix has no rows", ""))
        return rows
    if isinstance(matrix, LDict):
        names = list(matrix)
        values = []
        for name in names:
            vals = matrix[name]
            if not isinstance(vals, list) or not vals:
                problems.append(
                    _problem(
                        matrix.value_pos[name],
                        f"{path}.matrix.{name}",
                        "each matrix variable needs a non-empty list of values",
                        f"{name}: [a, b]",
                    )
                )
                return []
            values.append(vals)
        total = 1
        for v in values:
            total *= len(v)
        if total > MAX_MATRIX_ROWS:
            problems.append(
                _problem(
                    pos,
                    f"{path}.matrix",
                    f"the matrix makes {total} combinations",
                    f"keep it under {MAX_MATRIX_ROWS}",
                )
            )
            return []
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]
    problems.append(
        _problem(
            pos,
            f"{path}.matrix",
            "matrix must be a list of rows or a mapping",
            "matrix: [{city: Paris}, {city: Rome}]",
        )
    )
    return []


def has_template(node: Any) -> bool:
    """Whether any text in this value holds template syntax (an iterative scan, no copies)."""
    stack = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if "{" in value and ("{{" in value or "{%" in value or "{#" in value):
                return True
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def expand_cases(
    doc: LDict,
    suite_vars: dict[str, Any],
    problems: list[Problem],
    budget: SuiteBudget | None = None,
    *,
    templated: bool = True,
    skip: frozenset[int] = frozenset(),
) -> list[tuple[str, LDict]]:
    """Every case after matrix expansion and rendering, with its display path.

    `templated=False` says the caller found no template anywhere in the cases, so no case is
    scanned for one again. Cases whose index is in `skip` are left out."""
    renderer = Renderer(problems, budget)
    out: list[tuple[str, LDict]] = []
    cases = doc.get("cases")
    if not isinstance(cases, LList):
        return out
    counter = CaseCounter()
    for i, case in enumerate(cases):
        path = f"cases[{i}]"
        if not isinstance(case, LDict) or i in skip:
            continue
        if not counter.add(case, path, problems):
            return out
        if not expand_case(case, path, suite_vars, renderer, problems, out, templated=templated):
            return out
    return out


class CaseCounter:
    """Counts cases as matrices will expand them, and says when the suite has too many."""

    def __init__(self) -> None:
        self.total = 0
        self.limit = max_cases()

    def add(self, case: LDict, path: str, problems: list[Problem]) -> bool:
        """False (with the problem reported) once this case takes the suite over the limit."""
        self.total += _case_count(case)
        if self.total <= self.limit:
            return True
        problems.append(
            _problem(
                case.value_pos.get("matrix", case.pos),
                path,
                f"with this case the suite has more than {self.limit} cases after matrix expansion",
                f"keep the suite under {self.limit} cases: split it into several suites, "
                f"or raise the limit with {MAX_CASES_ENV}",
            )
        )
        return False


def expand_case(
    case: LDict,
    path: str,
    suite_vars: dict[str, Any],
    renderer: Renderer,
    problems: list[Problem],
    out: list[tuple[str, LDict]],
    *,
    templated: bool = True,
) -> bool:
    """Append one case's expansions (a matrix row each) to `out`, rendered, with their paths.

    False once the template budget is spent: its problem is reported, the rest would repeat it."""
    if "matrix" not in case and "vars" not in case and not (templated and has_template(case)):
        out.append((path, case))  # most cases: nothing to take out, nothing to render
        return True
    given_vars = case.get("vars")
    case_vars: dict[str, Any] = given_vars if isinstance(given_vars, dict) else {}
    body = LDict()
    for k, v in case.items():
        if k not in ("matrix", "vars"):
            body[k] = v
    share_positions(body, case)
    rows = matrix_rows(case, path, problems)
    reported: set[tuple[Any, ...]] = set()
    if rows is None:
        if not templated or not has_template(body):  # most cases: nothing to render
            out.append((path, body))
            return True
        variables = {**suite_vars, **dict(case_vars)}
        out.append((path, renderer.render(body, variables, path, case.pos)))
        return not renderer.budget.spent
    row_vars = {name for row in rows for name in row}
    for r, row in enumerate(rows):
        variables = {**suite_vars, **dict(case_vars), **row}
        before = len(problems)
        renderer.undefined.clear()
        rendered = renderer.render(body, variables, path, case.pos)
        undefined = {i - before: name for i, name in renderer.undefined}
        new = problems[before:]
        del problems[before:]
        for i, p in enumerate(new):
            name = undefined.get(i)
            if name in row_vars:
                # Other rows define it: the mistake is this row's, so point at the row.
                p = _row_lacks(case, path, r, name, p)
            # The same mistake in every row is one problem, reported for its first row.
            key = (p.file, p.line, p.column, p.message)
            if key not in reported:
                reported.add(key)
                problems.append(
                    Problem.at(
                        p,
                        p.path,
                        f"{p.message} (matrix row {r + 1})"
                        if "matrix row" not in p.message
                        else p.message,
                        p.hint,
                    )
                )
        out.append((f"{path} (matrix row {r + 1})", rendered))
        if renderer.budget.spent:
            return False
    return True


def _case_count(case: LDict) -> int:
    """How many cases a case becomes, counted before anything is expanded."""
    matrix = case.get("matrix")
    if isinstance(matrix, LList):
        return max(len(matrix), 1)
    if isinstance(matrix, LDict):
        return math.prod(len(v) if isinstance(v, list) else 1 for v in matrix.values())
    return 1


def _row_lacks(case: LDict, path: str, r: int, name: str, used: Problem) -> Problem:
    """A matrix row without a variable that the other rows give and a template uses."""
    matrix = case.get("matrix")
    pos = matrix.item_pos[r] if isinstance(matrix, LList) and r < len(matrix.item_pos) else None
    pos = pos or case.value_pos.get("matrix", case.pos)
    return Problem.at(
        pos,
        f"{path}.matrix[{r}]",
        f"matrix row {r + 1} has no variable {name!r}, which {used.path} uses",
        f"add `{name}: ...` to this row, as the other rows have",
    )
