"""The language of stateful tools: JSON Pointer paths, run-time references and behaviours.

A tool's `behavior:` is compiled here once, at load time, into plain frozen records that the
engine (`evalspec._tools.state`) applies to a conversation's state on every call. Compiling
checks everything a suite can get wrong without running: pointer syntax, references to
arguments the tool does not take, unknown effect ops, limits. Each problem carries the place
(a list of keys under `behavior:`) so the loader can point at its line.

Run-time references are `${args.NAME}`, `${state/POINTER}` and `${count/POINTER}` (the length
of a list or mapping); `$${` writes a literal `${`. They are not `{{ }}` templates: load-time
rendering never touches them, and they are never evaluated as code. A reference inside a path
fills exactly one path part (its value is escaped, never split), so an argument `../pin` or
`/pin` names a key, it cannot move elsewhere in the state.
"""

from __future__ import annotations

import re
from typing import Any

from evalspec._language.state import BEHAVIOR
from evalspec._language.vocabulary import default_of
from evalspec._suite.state import computed
from evalspec._suite.state.computed import Compilers
from evalspec._suite.state.types import (
    Behavior,
    Check,
    Effect,
    Path,
    Ref,
    Select,
    SpecProblem,
    Text,
    Tree,
    escape,
    references,
    unescape,
)

MAX_PRECONDITIONS = 32
MAX_EFFECTS = 32
MAX_PATH_PARTS = 32
MAX_DEPTH = 64
"""Deepest nesting of the state, and of any value written into it."""
MAX_STATE_VALUES = 100_000
"""Values (every scalar, list and mapping) one conversation's state may hold."""
MAX_STATE_CHARS = 10_000_000
"""Characters one conversation's state may hold written as JSON (about: texts and keys by their
length, other values by a few characters). Counting values alone let one `where` effect copy a
100 KB text into 30,000 records: 3 GB of transcript from a 333 KB pull request."""
MAX_RENDERED_VALUES = 10_000
"""Values one rendered template (an effect's value, a response) may hold."""
MAX_TEXT = 100_000
"""Characters of one rendered text."""

EFFECT_OPS = ("set", "append", "remove", "increment", "decrement")
NUMERIC_OPS = ("increment", "decrement")
"""Effects that add `by` to a number (decrement: take it off)."""
CHECK_OPS = ("exists", "equals", "not_equals", "contains", "not_contains", "min", "max")
MAX_ALTERNATIVES = 8
"""Checks one `any_of` precondition may hold."""
MAX_ROUND = 15
"""Decimal places an increment may round to (a float holds no more)."""

_NAME = r"[A-Za-z_][A-Za-z0-9_\-]*"
MAX_REF_NESTING = 4
"""Levels of references inside a reference's pointer (`${state/orders/${args.id}/status}` has
one; a reference in `${args.id}`'s place that holds another, two)."""
_ARG_REF = re.compile(rf"(args|let)\.({_NAME})$")
_STATE_REF = re.compile(r"(state|count|each)((?:/[^/]*)*)$", re.S)
_EACH_REF = re.compile(rf"each\.({_NAME})((?:/[^/]*)*)$", re.S)


# ------------------------------------------------------------------ pointers and references


def parse_pointer(text: str, where: tuple[Any, ...] = ()) -> tuple[str, ...]:
    """The parts of a plain JSON Pointer (RFC 6901); `""` is the whole document."""
    if text == "":
        return ()
    if not text.startswith("/"):
        raise SpecProblem(where, f"{text!r} is not a JSON Pointer", _pointer_fix(text))
    parts = text[1:].split("/")
    if len(parts) > MAX_PATH_PARTS:
        raise SpecProblem(where, *_too_long(len(parts)))
    for p in parts:
        if re.search(r"~(?![01])", p):
            raise SpecProblem(where, *_tilde(text))
    return tuple(unescape(p) for p in parts)


_DOTTED = re.compile(r"[^./\[\]]+(?:\.[^./\[\]]+|\[\d+\])+")


def _pointer_fix(text: str) -> str:
    """How to write a path that does not start with '/': `events` as /events, and `a.b[0]`
    (as other path languages write it) as /a/b/0."""
    if _DOTTED.fullmatch(text):
        steps = re.findall(r"([^.\[\]]+)|\[(\d+)\]", text)
        pointer = "/" + "/".join(escape(a or b) for a, b in steps)
        return f"start it with '/' and separate keys and indexes with '/', e.g. {pointer}"
    return f"start it with '/', e.g. /{text}"


def _too_long(count: int) -> tuple[str, str]:
    return (
        f"the path has {count} parts; the limit is {MAX_PATH_PARTS}",
        "shorten the path: keep the state flatter",
    )


def _tilde(text: str) -> tuple[str, str]:
    return (
        f"{text!r}: a '~' in a key must be written ~0 (and a '/' in a key ~1)",
        "for the key a~b write /a~0b",
    )


def _ref(body: str, where: tuple[Any, ...], depth: int) -> Ref:
    m = _ARG_REF.match(body)
    if m:
        return Ref(m.group(1), m.group(2))
    m = _EACH_REF.match(body) or _STATE_REF.match(body)
    if m:
        kind, name = ("each", m.group(1)) if m.re is _EACH_REF else (m.group(1), "")
        if "${" in m.group(2):
            if depth >= MAX_REF_NESTING:
                raise SpecProblem(
                    where,
                    f"${{{body}}} nests references more than {MAX_REF_NESTING} deep",
                    "read the inner value with a reference of its own, or keep the state flatter",
                )
            if "$${" in m.group(2):
                raise SpecProblem(
                    where,
                    f"${{{body}}}: a reference's pointer cannot hold a literal $${{",
                    "rename the key, or read the mapping above it",
                )
            return Ref(kind, name, (), _compile_path(m.group(2), where, depth + 1))
        return Ref(kind, name, parse_pointer(m.group(2), where))
    forms = (
        "${args.NAME} (an argument), ${state/POINTER}, ${count/POINTER}, ${let.NAME}, "
        "${each/POINTER} or ${each.NAME/POINTER} (an item of a walk)"
    )
    hint = f"write {forms}; $${{ writes a literal ${{"
    word = body.strip()
    if re.fullmatch(_NAME, word):
        hint = f"for the call's argument {word} write ${{args.{word}}} (references: {forms})"
    elif re.fullmatch(r"(state|count)\.[^{}]*", word):
        kind, _, rest = word.partition(".")
        hint = f"a pointer into the state is written with '/': ${{{kind}/{rest.replace('.', '/')}}}"
    raise SpecProblem(where, f"${{{body}}} is not a reference", hint)


def _closing(text: str, start: int) -> int:
    """The index of the `}` that closes the `${` just before `start` (references inside it
    counted), or -1."""
    depth = 1
    i = start
    while i < len(text):
        if text.startswith("$${", i):
            i += 3
            continue
        if text.startswith("${", i):
            depth += 1
            i += 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        elif text[i] == "{":
            return -1  # a bare brace: no reference holds one
        i += 1
    return -1


def tokens(text: str, where: tuple[Any, ...], depth: int = 0) -> list[str | Ref]:
    """Literal text and references, in order; `$${` becomes a literal `${`. A state or count
    reference's pointer may hold references of its own (`${state/orders/${args.id}}`)."""
    out: list[str | Ref] = []
    at = 0
    i = text.find("$")
    while i != -1:
        if text.startswith("$${", i):
            out.append(text[at:i] + "${")
            at = i + 3
        elif text.startswith("${", i):
            end = _closing(text, i + 2)
            if end == -1:
                raise SpecProblem(where, f"{text!r}: '${{' is not closed", "end it with }")
            if i > at:
                out.append(text[at:i])
            out.append(_ref(text[i + 2 : end], where, depth))
            at = end + 1
        else:
            i += 1
            i = text.find("$", i)
            continue
        i = text.find("$", at)
    if at < len(text):
        out.append(text[at:])
    merged: list[str | Ref] = []
    for t in out:
        if isinstance(t, str) and merged and isinstance(merged[-1], str):
            merged[-1] += t
        elif t != "":
            merged.append(t)
    return merged


def compile_path(text: Any, where: tuple[Any, ...]) -> Path:
    """A pointer whose parts may hold references; references never split a part."""
    return _compile_path(text, where, 0)


def _compile_path(text: Any, where: tuple[Any, ...], depth: int) -> Path:
    if not isinstance(text, str):
        raise SpecProblem(
            where,
            f"a path must be a JSON Pointer text, not {text!r:.40}",
            "write it as text starting with '/', e.g. /events/0/date",
        )
    if text != "" and not text.startswith("/"):
        hint = _pointer_fix(text) if "${" not in text else "start it with '/'"
        raise SpecProblem(where, f"{text!r} is not a JSON Pointer", hint)
    parts: list[list[str | Ref]] = [[]]
    for token in tokens(text, where, depth):
        if isinstance(token, Ref):
            parts[-1].append(token)
            continue
        pieces = token.split("/")
        parts[-1].append(pieces[0])
        for piece in pieces[1:]:
            parts.append([piece])
    parts = parts[1:]  # before the leading '/'
    if len(parts) > MAX_PATH_PARTS:
        raise SpecProblem(where, *_too_long(len(parts)))
    out: list[str | Text] = []
    for part in parts:
        items = [p for p in part if p != ""]
        for p in items:
            if isinstance(p, str) and re.search(r"~(?![01])", p):
                raise SpecProblem(where, *_tilde(text))
        texts = [p for p in items if isinstance(p, str)]
        if len(texts) == len(items):
            out.append(unescape("".join(texts)))
        else:
            out.append(Text(tuple(unescape(p) if isinstance(p, str) else p for p in items)))
    return Path(tuple(out), text)


def compile_value(value: Any, where: tuple[Any, ...]) -> Any:
    """A template: texts with references become `Text` / `Ref`, `$select` mappings `Select`;
    a constant subtree stays as written."""
    if isinstance(value, str):
        if "$" not in value:
            return value
        toks = tokens(value, where)
        if len(toks) == 1 and isinstance(toks[0], Ref):
            return toks[0]  # the whole value: its JSON value, not its text
        texts = [t for t in toks if isinstance(t, str)]
        if len(texts) == len(toks):
            return "".join(texts)
        return Text(tuple(toks))
    if isinstance(value, dict):
        if "$select" in value:
            return _select(value, where)
        if computed.is_form(value):
            return computed.compile_form(value, where, _COMPILERS)
        items = {str(k): compile_value(v, (*where, k)) for k, v in value.items()}
        if any(_dynamic(v) for v in items.values()):
            return Tree(items)
        return dict(value)
    if isinstance(value, list):
        listed = [compile_value(v, (*where, i)) for i, v in enumerate(value)]
        if any(_dynamic(v) for v in listed):
            return Tree(listed)
        return list(value)
    return value


def _dynamic(value: Any) -> bool:
    return isinstance(value, Ref | Text | Tree | Select)


_SELECT_KEYS = ("$select", "$where", "$first", "$key", "$ignore_case")
_SELECT_FLAGS = {
    "$first": "$first: true gives the first matching record; leave it out for a list of them all",
    "$key": "$key: true gives the keys of the matching records of a mapping (a list's indexes)",
    "$ignore_case": "$ignore_case: true matches texts in $where whatever their case",
}


def _select(value: dict[str, Any], where: tuple[Any, ...]) -> Select:
    unknown = [k for k in value if k not in _SELECT_KEYS]
    if unknown:
        raise SpecProblem(
            (*where, unknown[0]),
            f"unknown key {unknown[0]!r} in a $select",
            "a $select takes $where (what records must match), $first, $key and $ignore_case "
            "(true/false)",
        )
    for flag, hint in _SELECT_FLAGS.items():
        if not isinstance(value.get(flag, False), bool):
            raise SpecProblem((*where, flag), f"{flag} must be true or false", hint)
    filt = value.get("$where")
    if isinstance(filt, list):
        raise SpecProblem(
            (*where, "$where"),
            "$where must be a mapping of field: value (or one value the items must equal)",
            "{date: ${args.date}}",
        )
    raw = value["$select"]
    source = None
    path = Path(())
    if isinstance(raw, str) and raw.startswith("${"):
        source = compile_value(raw, (*where, "$select"))
        if not isinstance(source, Ref):
            raise SpecProblem(
                (*where, "$select"),
                f"{raw!r} is neither a JSON Pointer nor one reference",
                '$select: /orders (the state) or $select: "${args.item_ids}" (a value)',
            )
    else:
        path = compile_path(raw, (*where, "$select"))
    return Select(
        path,
        compile_value(filt, (*where, "$where")) if filt is not None else None,
        value.get("$first", False),
        value.get("$key", False),
        source,
        value.get("$ignore_case", False),
    )


# ------------------------------------------------------------------ behaviours


def compile_behavior(raw: Any) -> Behavior:
    """A tool's `behavior:` mapping as a Behavior; SpecProblem at the first thing wrong."""
    if not isinstance(raw, dict):
        raise SpecProblem((), "behavior must be a mapping", "preconditions:, effects:, response:")
    keys = ("let", "preconditions", "effects", "response")
    unknown = [k for k in raw if k not in keys]
    if unknown:
        raise SpecProblem(
            (unknown[0],),
            f"unknown key {unknown[0]!r} in behavior",
            _did_you_mean(unknown[0], keys) + "a behavior has let, preconditions, effects and "
            "response",
        )
    lets = computed.compile_lets(raw.get("let"), _COMPILERS)
    pre = _listed(raw, "preconditions", MAX_PRECONDITIONS)
    eff = _listed(raw, "effects", MAX_EFFECTS)
    checks = tuple(_check(c, ("preconditions", i)) for i, c in enumerate(pre))
    effects = tuple(_effect(e, ("effects", i)) for i, e in enumerate(eff))
    response = compile_value(raw.get("response"), ("response",))
    nodes = (*(v for _, v in lets), *checks, *effects, response)
    names = {r.name for node in nodes for r in references(node) if r.kind == "args"}
    places: list[tuple[tuple[Any, ...], Any]] = [
        (("preconditions", i), c) for i, c in enumerate(checks)
    ]
    places += [(("effects", i), e) for i, e in enumerate(effects)]
    computed.check_names(lets, [*places, (("response",), response)])
    return Behavior(checks, effects, response, "response" in raw, frozenset(names), lets)


def _did_you_mean(word: Any, choices: tuple[str, ...]) -> str:
    from difflib import get_close_matches

    close = get_close_matches(str(word), choices, n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def _listed(raw: dict[str, Any], key: str, limit: int) -> list[Any]:
    value = raw.get(key) or []
    if not isinstance(value, list):
        raise SpecProblem((key,), f"{key} must be a list", f"{key}: [...]")
    if len(value) > limit:
        raise SpecProblem(
            (key,),
            f"{len(value)} {key}; the limit is {limit} per tool",
            f"keep at most {limit}; split what the tool does between two tools",
        )
    return value


def _check(raw: Any, where: tuple[Any, ...], nested: bool = False) -> Check:
    if not isinstance(raw, dict):
        raise SpecProblem(where, "a precondition is a mapping", "{path: /contacts, exists: true}")
    if "any_of" in raw:
        return _any_of(raw, where, nested)
    if "for_each" in raw:
        return computed.for_each_check(raw, where, nested, _COMPILERS)
    unknown = [k for k in raw if k not in (*CHECK_OPS, "path", "value", "error")]
    if unknown:
        from difflib import get_close_matches

        keys = [*CHECK_OPS, "path", "value", "error", "any_of"]
        close = get_close_matches(unknown[0], keys, n=1)
        raise SpecProblem(
            (*where, unknown[0]),
            f"unknown key {unknown[0]!r} in a precondition",
            f"did you mean {close[0]!r}?" if close else "tests: " + ", ".join(CHECK_OPS),
        )
    if ("path" in raw) == ("value" in raw):
        raise SpecProblem(
            where,
            "a precondition tests either a `path` of the state or a `value`",
            "write path: /contacts or value: ${args.NAME}",
        )
    tests = [(op, raw[op]) for op in raw if op in CHECK_OPS]
    if not tests:
        raise SpecProblem(where, "the precondition tests nothing", "tests: " + ", ".join(CHECK_OPS))
    compiled: list[tuple[str, Any]] = []
    for op, operand in tests:
        if op == "exists" and not isinstance(operand, bool):
            raise SpecProblem(
                (*where, op),
                "exists must be true or false",
                "exists: true (something must be there) or exists: false (nothing may be)",
            )
        if op in ("min", "max") and (
            isinstance(operand, bool) or not isinstance(operand, int | float | str | dict)
        ):
            raise SpecProblem(
                (*where, op),
                f"{op} must be a number (or a reference, or a computed value)",
                f"for example {op}: 1, or {op}: ${{args.NAME}}",
            )
        compiled.append((op, compile_value(operand, (*where, op))))
    path = compile_path(raw["path"], (*where, "path")) if "path" in raw else None
    value = compile_value(raw.get("value"), (*where, "value"))
    error = compile_value(raw["error"], (*where, "error")) if "error" in raw else None
    return Check(path, value, tuple(compiled), error)


def _any_of(raw: dict[str, Any], where: tuple[Any, ...], nested: bool) -> Check:
    """`{any_of: [check, ...], error: ...}`: holds when one of its checks holds."""
    if nested:
        raise SpecProblem(
            (*where, "any_of"),
            "an any_of inside an any_of",
            "list every alternative in the outer any_of: one of them holding is enough",
        )
    extra = [k for k in raw if k not in ("any_of", "error")]
    if extra:
        raise SpecProblem(
            (*where, extra[0]),
            f"{extra[0]!r} beside any_of",
            "an any_of precondition holds only alternatives and an `error:`; "
            "put the test inside one of the alternatives",
        )
    alternatives = raw["any_of"]
    if not isinstance(alternatives, list) or not alternatives:
        raise SpecProblem(
            (*where, "any_of"),
            "any_of must be a list of preconditions",
            "any_of: [{path: /a, equals: 1}, {value: ${args.x}, contains: gift}]",
        )
    if len(alternatives) > MAX_ALTERNATIVES:
        raise SpecProblem(
            (*where, "any_of"),
            f"{len(alternatives)} alternatives; the limit is {MAX_ALTERNATIVES}",
            "split the tool, or keep the state so that fewer cases need checking",
        )
    checks = tuple(
        _check(alt, (*where, "any_of", i), nested=True) for i, alt in enumerate(alternatives)
    )
    error = compile_value(raw["error"], (*where, "error")) if "error" in raw else None
    return Check(None, None, (), error, checks)


def _effect(raw: Any, where: tuple[Any, ...]) -> Effect:
    if not isinstance(raw, dict):
        raise SpecProblem(where, "an effect is a mapping", "{set: /events/0/status, value: done}")
    ops = [k for k in raw if k in EFFECT_OPS]
    keys = (*EFFECT_OPS, "value", "where", "at", "by", "round", "first", "when", "for_each")
    unknown = [k for k in raw if k not in keys]
    if unknown or not ops:
        from difflib import get_close_matches

        word = unknown[0] if unknown else ""
        close = get_close_matches(word, keys, n=1)
        if close and close[0] not in EFFECT_OPS:
            message = f"unknown key {word!r} in an effect"
        else:
            message = f"unknown effect op {word!r}" if word else "the effect names no op"
        raise SpecProblem(
            (*where, word) if word else where,
            message,
            (f"did you mean {close[0]!r}? " if close else "")
            + "an effect is one of set, append, remove, increment and decrement at a path, "
            "with value, "
            "where, at or by as the op needs",
        )
    if len(ops) > 1:
        raise SpecProblem(
            where,
            f"one effect names {len(ops)} ops ({', '.join(ops)})",
            "give each op an effect of its own: a new `- ` item under effects:",
        )
    op = ops[0]
    path = compile_path(raw[op], (*where, op))
    if op in ("set", "append") and "value" not in raw:
        raise SpecProblem(where, f"{op} needs a value", f"{op}: {path}, value: ...")
    if op in ("remove", *NUMERIC_OPS) and "value" in raw:
        hint = f"{op} takes by:" if op in NUMERIC_OPS else "remove takes no value"
        raise SpecProblem((*where, "value"), f"{op} takes no value", hint)
    if op not in NUMERIC_OPS and "by" in raw:
        raise SpecProblem(
            (*where, "by"),
            "only increment and decrement take by",
            "remove `by:`, or make the op increment",
        )
    digits = raw.get("round")
    if "round" in raw:
        if op not in NUMERIC_OPS:
            raise SpecProblem(
                (*where, "round"), "only increment and decrement take round", "remove `round:`"
            )
        if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= MAX_ROUND:
            raise SpecProblem(
                (*where, "round"),
                f"round must be a whole number of decimal places from 0 to {MAX_ROUND}",
                "round: 2 keeps cents",
            )
    filt = raw.get("where")
    if filt is not None and not isinstance(filt, dict):
        raise SpecProblem(
            (*where, "where"),
            "where must be a mapping of field: value",
            'for example where: {id: "${args.id}"}',
        )
    if "at" in raw and filt is None:
        raise SpecProblem(
            (*where, "at"),
            "`at:` without `where:`: at is the place inside each record `where` picks",
            "add `where: {field: value}` to pick records of the list, or remove `at:` and write "
            "the whole place in the path",
        )
    if op == "append" and filt is not None:
        raise SpecProblem(
            (*where, "where"),
            "append takes no where",
            "append adds one item to the list at its path; to change the records that match, "
            "use set, increment, decrement or remove with where",
        )
    first = raw.get("first", default_of(BEHAVIOR, "effects", "first"))
    if "first" in raw and (filt is None or not isinstance(first, bool)):
        raise SpecProblem(
            (*where, "first"),
            "first is true or false, beside where",
            "first: true changes only the first record `where` picks",
        )
    at = compile_path(raw["at"], (*where, "at")) if "at" in raw else None
    if op in ("set", *NUMERIC_OPS) and filt is not None and at is None:
        raise SpecProblem(
            where, f"{op} with where needs `at`: the place inside each record", "at: /status"
        )
    by = compile_value(raw.get("by", 1), (*where, "by"))
    if isinstance(by, bool) or not isinstance(by, int | float | Ref | Text | Select | Tree):
        raise SpecProblem(
            (*where, "by"),
            "by must be a number (or a reference)",
            "for example by: 2, or by: ${args.NAME} (leave it out to add 1)",
        )
    c = _COMPILERS
    return Effect(
        op,
        path,
        compile_value(raw.get("value"), (*where, "value")),
        compile_value(filt, (*where, "where")) if filt is not None else None,
        at,
        by,
        digits,
        computed.conditions(raw["when"], (*where, "when"), c) if "when" in raw else (),
        computed.compile_walk(raw["for_each"], (*where, "for_each"), c)
        if "for_each" in raw
        else None,
        first,
    )


_COMPILERS = Compilers(compile_value, _check, tokens)
"""What `computed` compiles the templates and checks inside a computed form with."""


def _root(path: Path | None) -> str | None:
    if path is None or not path.parts or not isinstance(path.parts[0], str):
        return None
    return path.parts[0]


def state_roots(behavior: Behavior) -> list[tuple[str, tuple[Any, ...]]]:
    """The top-level keys of the state a behaviour's fixed paths need, each with where it is
    written (keys under `behavior:`). A precondition testing `exists` may name a missing key."""
    out: list[tuple[str, tuple[Any, ...]]] = []
    for i, check in enumerate(behavior.preconditions):
        places: list[tuple[Check, tuple[Any, ...]]] = [(check, ("preconditions", i))]
        places += [(alt, ("preconditions", i, "any_of", j)) for j, alt in enumerate(check.any_of)]
        for one, where in places:
            root = _root(one.path)
            if root is not None and not any(op == "exists" for op, _ in one.tests):
                out.append((root, (*where, "path")))
    for i, effect in enumerate(behavior.effects):
        root = _root(effect.path)
        if root is not None and not (effect.op == "set" and len(effect.path.parts) == 1):
            out.append((root, ("effects", i, effect.op)))
    for ref in references(behavior.response):
        if ref.kind != "args" and ref.root is not None:
            out.append((ref.root, ("response",)))
    stack: list[Any] = [behavior.response]
    while stack:
        node = stack.pop()
        if isinstance(node, Select):
            root = _root(node.path)
            if root is not None and node.source is None:
                out.append((root, ("response",)))
            stack.extend((node.where, node.source))
        elif isinstance(node, Tree):
            stack.extend(node.value.values() if isinstance(node.value, dict) else node.value)
    return out


def read_roots(behavior: Behavior) -> set[str] | None:
    """Every top-level key of the state a behaviour may touch through a fixed first key:
    its paths, `${state/...}` and `${count/...}` anywhere, and `$select`s anywhere. None when
    it may read any key: the whole state (`${state}`, `$select: ""`) or a first key that a
    reference names (`$select: /${args.kind}`)."""
    out = {root for root, _ in state_roots(behavior)}
    stack: list[Any] = [*behavior.preconditions, *behavior.effects, behavior.response]
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            if node.kind in ("state", "count"):
                if node.root is None:
                    return None
                out.add(node.root)
            if node.path is not None:
                stack.append(node.path)
        elif isinstance(node, Select | Check | Effect):
            if isinstance(node, Select) and node.source is not None:
                stack.extend((node.source, node.where))
                continue
            if node.path is not None:  # a precondition on a value has none
                root = _root(node.path)
                if root is None:  # the whole state, or a first key a reference names
                    return None
                out.add(root)
            if isinstance(node, Select):
                stack.extend((node.path, node.where))
            elif isinstance(node, Check):
                stack.extend((node.path, node.value, node.error, *(t[1] for t in node.tests)))
                stack.extend((*node.any_of, node.for_each, *node.checks))
            else:
                stack.extend((node.path, node.value, node.where, node.at, node.by))
                stack.extend((*node.when, node.for_each))
        elif isinstance(node, Text):
            stack.extend(node.parts)
        elif isinstance(node, Tree):
            stack.extend(node.value.values() if isinstance(node.value, dict) else node.value)
        elif isinstance(node, Path):
            stack.extend(node.parts)
    return out


def created_roots(behavior: Behavior) -> set[str] | None:
    """Top-level keys a behaviour's `set` effects create when missing; None when a `set`
    names its key with a reference (it may create any)."""
    out: set[str] = set()
    for e in behavior.effects:
        if e.op == "set" and e.where is None and len(e.path.parts) == 1:
            key = e.path.parts[0]
            if not isinstance(key, str):
                return None
            out.add(key)
    return out


# ------------------------------------------------------------------ states


MISSING_VALUE = object()
"""What `value_at` finds where the state has nothing."""


def value_at(state: Any, parts: tuple[str, ...]) -> Any:
    """The value at a pointer's parts, or MISSING_VALUE."""
    node = state
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING_VALUE
    return node


def merge_state(base: Any, override: Any) -> Any:
    """A case's state over the suite's: mappings merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            out[k] = merge_state(base[k], v) if k in base else v
        return out
    return override


_SCALARS = frozenset({str, int, float, bool, type(None)})


def measure(value: Any, limit: int) -> tuple[int, int]:
    """(number of values, depth) of a JSON value, counting stops just past `limit`."""
    count, depth, _ = weigh(value, limit)
    return count, depth


def weigh(value: Any, limit: int, char_limit: int = MAX_STATE_CHARS) -> tuple[int, int, int]:
    """(number of values, depth, characters as JSON, about) of a JSON value; counting stops
    just past `limit` values or `char_limit` characters. A text shared by many places counts
    at each, as JSON writes it."""
    if type(value) in _SCALARS:  # most rendered references: an argument, a field
        return 1, 1, scalar_chars(value)
    count = 0
    chars = 0
    deepest = 0
    stack = [(value, 1)]
    while stack and count <= limit and chars <= char_limit:
        node, depth = stack.pop()
        count += 1
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            chars += 2 + sum(len(k) + 4 for k in node)
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            chars += 2 + len(node)
            stack.extend((v, depth + 1) for v in node)
        else:
            chars += scalar_chars(node)
    return count, deepest, chars


def scalar_chars(value: Any) -> int:
    """About how many characters JSON writes for a text, number, true/false or null."""
    if type(value) is str:
        return len(value) + 2
    if type(value) is int:
        return value.bit_length() * 3 // 10 + 2
    return 8


_WEIGHED: dict[int, tuple[Any, tuple[int, int, int]]] = {}
"""The last states weighed whole, by identity (each kept alive, so its id stays its own)."""
_WEIGHED_KEPT = 8


def weigh_state(state: Any) -> tuple[int, int, int]:
    """`weigh(state, MAX_STATE_VALUES)`, remembered: a suite's state is weighed when it is
    validated and again when a run or replay opens its conversations (states are never changed
    in place, so the figure stays right). τ-bench's retail world takes 0.2 s to weigh."""
    known = _WEIGHED.get(id(state))
    if known is not None and known[0] is state:
        return known[1]
    figures = weigh(state, MAX_STATE_VALUES)
    if type(state) in _SCALARS:
        return figures
    if len(_WEIGHED) >= _WEIGHED_KEPT:
        del _WEIGHED[next(iter(_WEIGHED))]
    _WEIGHED[id(state)] = (state, figures)
    return figures


def state_problem(value: Any) -> str | None:
    """Why a state cannot be used (too large, too deep), or None."""
    count, depth, chars = weigh_state(value)
    if count > MAX_STATE_VALUES:
        return f"the state holds more than {MAX_STATE_VALUES} values"
    if chars > MAX_STATE_CHARS:
        return f"the state holds more than {MAX_STATE_CHARS} characters written as JSON"
    if depth > MAX_DEPTH:
        return f"the state is nested {depth} deep; the limit is {MAX_DEPTH}"
    return None
