"""World state in a suite: `state:`, tools' `behavior:`, `environment:`, `expect.state`.

Everything is checked at load time with a place and a fix: pointer syntax, references to
arguments the tool does not take (did you mean), unknown effect ops, limits, an environment no
plugin registered.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalspec._suite.build_base import make_loc, plain
from evalspec._suite.lint import rereads
from evalspec._suite.load import LDict, LList, Pos
from evalspec._suite.model import CriticSpec, EnvironmentSpec, Expectation, StateCheck, default
from evalspec._suite.schema import did_you_mean, locate
from evalspec._suite.state.spec import (
    MISSING_VALUE,
    compile_behavior,
    created_roots,
    merge_state,
    parse_pointer,
    read_roots,
    state_problem,
    state_roots,
    value_at,
)
from evalspec._suite.state.types import Behavior, SpecProblem, escape

_CHECK_KEYS = ("weight", "required")


@dataclass
class StateUses:
    """What behaviours, cases and checks say about the state's top-level keys: gathered while
    the suite is built, weighed once every case is read (`check_state_roots`)."""

    behaviors: list[tuple[LDict, str, Behavior]] = field(default_factory=list)
    """Each compiled behaviour, with its YAML node and document path."""
    case_keys: set[str] = field(default_factory=set)
    """Top-level keys any case's `state:` sets."""
    case_new_keys: list[tuple[Pos, str, str]] = field(default_factory=list)
    """(where, document path, key): a key a case's state adds that the suite's lacks."""
    judged_roots: list[tuple[Pos, str, str, str]] = field(default_factory=list)
    """(where, document path, key, why it matters): a check into a key the suite's state
    lacks."""
    whole_state_judged: bool = False
    """A check or `unchanged` of the whole state: it reads every key a case adds."""


class StatePart:
    """The state-related parts of the suite builder (mixed into validate.py's `_Builder`)."""

    doc: LDict
    problems: list[Any]
    state_uses: StateUses
    suite_state: Any
    """The suite's `state:` (None until the tools are built, or without one)."""
    environment_spec: EnvironmentSpec | None

    if TYPE_CHECKING:  # given by the builder's other parts

        def problem(self, pos: Pos, path: str, message: str, hint: str = "") -> None: ...

        def warn(self, pos: Pos, path: str, message: str, hint: str = "") -> None: ...

        def vpos(self, node: LDict, key: str) -> Pos: ...

        def critic(self, field: str, value: Any, pos: Pos, path: str) -> CriticSpec | None: ...

    def behavior(self, item: LDict, path: str, name: str, props: set[str]) -> Behavior | None:
        raw = item.get("behavior")
        if raw is None:
            return None
        bpath = f"{path}.behavior"
        if item.get("responses"):
            self.problem(
                item.key_pos.get("responses", item.pos),
                f"{path}.responses",
                "a tool with `behavior:` answers from the state; `responses:` would never be used",
                "keep one of the two",
            )
        try:
            behavior = compile_behavior(plain(raw))
        except SpecProblem as exc:
            self._spec_problem(raw, bpath, exc)
            return None
        self.state_uses.behaviors.append((raw, bpath, behavior))
        for reread in rereads(behavior):
            response = raw.get("response") if isinstance(raw, LDict) else None
            where = ("response", *_find_reference(response, str(reread.ref)[2:-1]))
            self.warn(
                locate(raw, list(where)),
                _path(bpath, where),
                reread.message(behavior.effects),
                reread.fix(),
            )
        for arg in sorted(behavior.arguments - props):
            where = _find_reference(raw, f"args.{arg}")
            hint = did_you_mean(arg, sorted(props)) or (
                f"{name}'s arguments: {', '.join(sorted(props))}" if props else ""
            )
            self.problem(
                locate(raw, list(where)),
                _path(bpath, where),
                f"${{args.{arg}}}: {name!r} has no argument {arg!r}",
                hint or f"declare {arg} under the tool's parameters",
            )
        return behavior

    def _spec_problem(self, node: Any, path: str, exc: SpecProblem) -> None:
        where = list(exc.where)
        key = bool(where) and isinstance(where[-1], str) and _is_key(node, where)
        self.problem(locate(node, where, key=key), _path(path, tuple(where)), exc.message, exc.hint)

    def initial_state(self, top: dict[str, Any], tools: list[Any]) -> Any:
        """The suite's state: `state:`, or an empty one when a tool keeps state."""
        raw = top.get("state")
        if raw is None:
            stateful = top.get("environment") or any(t.behavior for t in tools)
            return {} if stateful else None
        value = plain(raw)
        why = state_problem(value)
        if why:
            self.problem(self.vpos(self.doc, "state"), "state", why, "make the state smaller")
        return value

    def environment(self, top: dict[str, Any], tools: list[Any]) -> EnvironmentSpec | None:
        raw = top.get("environment")
        if raw is None:
            return None
        from evalspec._util import registry

        pos = self.vpos(self.doc, "environment")
        kind = raw["kind"]
        plugin = registry.find("environment", kind)
        known = registry.registered("environment") if plugin is None else {}
        if plugin is None:
            hint = did_you_mean(kind, sorted(known)) or (
                "installed environments: " + ", ".join(sorted(known))
                if known
                else "install the plugin that registers it (kind `environment`)"
            )
            kpos = raw.value_pos.get("kind", pos) if isinstance(raw, LDict) else pos
            self.problem(kpos, "environment.kind", f"no tool environment named {kind!r}", hint)
        else:
            self._check_options(raw, plugin.options, pos)
        for t in tools:
            if t.behavior is not None:
                self.problem(
                    Pos(t.loc.file, t.loc.line, t.loc.column),
                    f"{t.loc.path}.behavior",
                    f"tool {t.name!r} has a behavior, but the suite's environment answers "
                    "every call",
                    "remove `behavior:`, or the suite's `environment:`",
                )
        return EnvironmentSpec(
            kind,
            plain(dict(raw.get("params") or {})),
            make_loc(pos, ""),
            validate_arguments=raw.get(
                "validate_arguments", default(EnvironmentSpec, "validate_arguments")
            )
            is not False,
        )

    def _check_options(self, raw: Any, options: dict[str, Any], pos: Pos) -> None:
        from jsonschema import Draft202012Validator

        params = plain(dict(raw.get("params") or {}))
        for error in Draft202012Validator(options).iter_errors(params):
            parts = ["params", *error.absolute_path]
            self.problem(
                locate(raw, parts),
                _path("environment", tuple(parts)),
                error.message,
                "see the environment plugin's options",
            )
            break

    def case_state(self, raw: LDict, path: str, suite_state: Any) -> Any:
        own = raw.get("state")
        if own is None:
            return suite_state
        if isinstance(own, dict):
            self.state_uses.case_keys.update(map(str, own))
            if isinstance(suite_state, dict) and isinstance(own, LDict):
                new = self.state_uses.case_new_keys
                for key in own:
                    if key not in suite_state:
                        at = own.key_pos.get(key, own.pos)
                        new.append((at, f"{path}.state.{key}", str(key)))
        pos = self.vpos(raw, "state")
        if suite_state is None:
            self.problem(
                pos,
                f"{path}.state",
                "the case sets a state, but no tool of the suite keeps state",
                "give a tool `behavior:`, or the suite an `environment:`",
            )
            return None
        merged = merge_state(suite_state, plain(own))
        why = state_problem(merged)
        if why:
            self.problem(pos, f"{path}.state", why, "make the state smaller")
        return merged

    def check_state_roots(self, suite_state: Any) -> None:
        """A fixed path into a top-level key that no state has and no effect creates: in a
        behaviour it fails every call at run time ("the state has nothing at /item_count"),
        seen only by the model; in `unchanged` it checks nothing; in `expect.state` it can
        never hold. And a key a case's state adds that nothing reads (a misspelt override).
        Name each now."""
        uses = self.state_uses
        if not isinstance(suite_state, dict) or self.environment_spec:
            return
        users = uses.behaviors
        known = set(suite_state) | uses.case_keys
        read: set[str] = set()
        reads_any = uses.whole_state_judged
        for _, _, b in users:
            created = created_roots(b)
            if created is None:
                return  # a `set` at `/${args.NAME}` may create any key
            known |= created
            roots = read_roots(b)
            if roots is None:  # the whole state, or a key a reference names
                reads_any = True
            else:
                read |= created | roots
        for raw, bpath, behavior in users:
            for root, where in state_roots(behavior):
                if root not in known:
                    pos = locate(raw, list(where), key=isinstance(where[-1], str))
                    self._missing_root(
                        pos, _path(bpath, where), root, known, "this fails at every call"
                    )
        judged = uses.judged_roots
        for pos, path, root, why in judged:
            if root not in known:
                self._missing_root(pos, path, root, known, why)
        read |= {root for _, _, root, _ in judged}
        for pos, path, key in [] if reads_any else uses.case_new_keys:
            if key not in read:
                close = did_you_mean(key, sorted(suite_state))
                self.problem(
                    pos,
                    path,
                    f"the suite's `state:` has no {key!r} and no tool or check reads it, so "
                    "this changes nothing",
                    (f"{close} " if close else "")
                    + "a case's state is merged over the suite's key by key: use a key the "
                    "suite's `state:` has",
                )

    def unchanged_conflicts(self, state: Any, expects: list[Expectation]) -> Any:
        """A state check inside an `unchanged` place that asks for something other than what
        the place began with can never pass beside it: say so. Returns `state`."""
        for expect in expects if state is not None else ():
            for check in expect.state:
                kept = next((u for u in expect.unchanged if check.parts[: len(u)] == u), None)
                if kept is None or (check.spec.kind != "binary" and not check.absent):
                    continue
                begun = value_at(state, check.parts)
                if check.absent:
                    clash = begun is not MISSING_VALUE
                else:
                    clash = begun is MISSING_VALUE or not _same_json(begun, check.expected)
                if not clash:
                    continue
                where = "/" + "/".join(escape(p) for p in kept) if kept else "''"
                was = "nothing" if begun is MISSING_VALUE else _short_json(begun)
                self.problem(
                    Pos(check.loc.file, check.loc.line, check.loc.column),
                    check.loc.path,
                    f"{check.pointer} is expected to end "
                    + ("empty" if check.absent else f"as {_short_json(check.expected)}")
                    + f", but `unchanged` keeps {where if kept else 'the whole state'} as it "
                    f"began ({check.pointer}: {was}), so "
                    "the two can never both hold",
                    f"remove {where} from `unchanged`, or this state check",
                )
        return state

    def _unknown_root(self, parts: tuple[str, ...]) -> bool:
        """Not a key of the suite's state (cases and effects are weighed once all are read)."""
        return isinstance(self.suite_state, dict) and parts[0] not in self.suite_state

    def _missing_root(self, pos: Pos, path: str, root: str, known: set[str], why: str) -> None:
        message = f"/{escape(root)} is not in the suite's `state:` (nor in any case's), so {why}"
        written = _dotted(root, known)
        if written is not None:  # /cart[0].sku or /cart.0.sku: a path written another way
            hint = f"a JSON Pointer separates keys and indexes with '/': write {written}"
        else:
            close = did_you_mean(root, sorted(known))
            hint = (f"{close} " if close else "") + (
                f"add `{root}:` with its first value under `state:`, or fix the path"
            )
        self.problem(pos, path, message, hint)

    def state_checks(
        self, raw: LDict, epath: str, stateful: bool
    ) -> tuple[tuple[StateCheck, ...], tuple[tuple[str, ...], ...]]:
        """`expect.state` and `expect.unchanged`, each place checked."""
        node, same = raw.get("state"), raw.get("unchanged")
        if (node or same) and not stateful:
            key = "state" if node else "unchanged"
            self.problem(
                raw.key_pos.get(key, raw.pos),
                f"{epath}.{key}",
                f"expect.{key} judges the state, but no tool of the suite keeps state",
                "give the suite a `state:` and its tools `behavior:`",
            )
            return (), ()
        checks: list[StateCheck] = []
        for pointer, value in (node or {}).items():
            kpos = node.key_pos.get(pointer, node.pos) if isinstance(node, LDict) else raw.pos
            vpos = node.value_pos.get(pointer, kpos) if isinstance(node, LDict) else raw.pos
            cpath = f"{epath}.state.{pointer}"
            parts = self._pointer(pointer, kpos, cpath)
            if parts is None:
                continue
            check = self._state_check(pointer, parts, value, vpos, cpath)
            if not parts:  # the whole state: every key a case adds is judged
                self.state_uses.whole_state_judged = True
            if check is not None and parts and not check.absent and self._unknown_root(parts):
                why = "nothing is ever there to check"
                self.state_uses.judged_roots.append((kpos, cpath, parts[0], why))
            if check is not None:
                checks.append(check)
        kept: list[tuple[str, ...]] = []
        for i, pointer in enumerate(same or ()):
            pos = same.item_pos[i] if isinstance(same, LList) else raw.pos
            parts = self._pointer(pointer, pos, f"{epath}.unchanged[{i}]")
            if parts is not None:
                kept.append(parts)
                if not parts:
                    self.state_uses.whole_state_judged = True
                if parts and self._unknown_root(parts):
                    where = f"{epath}.unchanged[{i}]"
                    self.state_uses.judged_roots.append((pos, where, parts[0], "it checks nothing"))
        return tuple(checks), tuple(kept)

    def _pointer(self, text: str, pos: Pos, path: str) -> tuple[str, ...] | None:
        try:
            return parse_pointer(text)
        except SpecProblem as exc:
            self.problem(pos, path, exc.message, exc.hint)
            return None

    def _state_check(
        self, pointer: str, parts: tuple[str, ...], value: Any, pos: Pos, path: str
    ) -> StateCheck | None:
        loc = make_loc(pos, path)
        expected = value.get("value") if isinstance(value, dict) else value
        if isinstance(expected, str) and RUN_TIME_REF.search(expected):
            self.problem(
                pos,
                path,
                f"{expected!r:.60} is a run-time reference, which only a tool's behavior fills "
                "in; an expected value is compared as written",
                "write the value the state should hold, or a {{ variable }} from vars or the "
                "case's matrix",
            )
            return None
        if not isinstance(value, dict):
            spec = CriticSpec(pointer, "binary", loc=loc)
            return StateCheck(pointer, parts, spec, plain(value), loc=loc)
        if set(value) <= {"exists", *_CHECK_KEYS} and "exists" in value:
            if value["exists"] is not False:
                self.problem(
                    pos,
                    path,
                    "only `exists: false` is a state check",
                    "to require something there, give its `value:` or a critic such as "
                    "`{regex: '.'}`",
                )
                return None
            spec = CriticSpec(pointer, "absent", loc=loc, required=bool(value.get("required")))
            return StateCheck(pointer, parts, spec, None, absent=True, loc=loc)
        rest = {k: v for k, v in value.items() if k != "value"}
        critic_keys = [k for k in rest if k not in _CHECK_KEYS]
        for k in critic_keys:
            close = did_you_mean(k, ["value", "exists", "weight", "required"])
            if close and not _is_critic(k):
                self.problem(pos, f"{path}.{k}", f"unknown key {k!r} in a state check", close)
                return None
        unknown = [k for k in critic_keys if not _is_critic(k)]
        if unknown and "value" not in value:
            # A record written as the expected value: its keys are fields, not critics.
            self.problem(
                pos,
                path,
                f"a mapping here is read as a critic, and {', '.join(map(repr, unknown))} "
                + ("is no critic" if len(unknown) == 1 else "are no critics"),
                "to expect this mapping itself, write it under `value:`, e.g. "
                f"{{value: {_short_json(plain(value))}}}",
            )
            return None
        if "value" in value and not critic_keys:
            rest = {**rest, "binary": True}
        if not critic_keys and "value" not in value:
            self.problem(
                pos,
                path,
                "a mapping here is a critic (`{value: ..., similarity: 0.8}`); it names none",
                "to expect a mapping itself, write `{value: {...}}`",
            )
            return None
        judged = self.critic(pointer, rest, pos, path)
        if judged is None:
            return None
        return StateCheck(pointer, parts, judged, plain(value.get("value")), loc=loc)


RUN_TIME_REF = re.compile(r"(?<!\$)\$\{(args\.|state/|count/)")
"""`${args.x}` and the like: a behaviour's run-time references, filled in nowhere else."""
_DOTTED = re.compile(r"([^.\[\]]+)((?:\.[^.\[\]]+|\[\d+\])+)$")


def _dotted(root: str, known: set[str]) -> str | None:
    """A key of the state followed by `.key` / `[0]` steps, as other path languages write
    them: the JSON Pointer meant, or None."""
    m = _DOTTED.match(root)
    if m is None or m.group(1) not in known:
        return None
    steps = re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", m.group(2))
    return "/" + "/".join([escape(m.group(1)), *(escape(a or b) for a, b in steps)])


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON, loosely (5 and 5.0, "5" and 5): a clash is reported only when sure."""
    return (
        a == b or json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) or str(a) == str(b)
    )


def _short_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_critic(kind: str) -> bool:
    from evalspec._util import registry

    return registry.find("critic", kind) is not None


def _is_key(node: Any, where: list[Any]) -> bool:
    """Whether the last part of `where` names a key (not a value) of the node above it."""
    parent = node
    for p in where[:-1]:
        try:
            parent = parent[p]
        except (KeyError, IndexError, TypeError):
            return False
    return isinstance(parent, dict) and where[-1] in parent


def _path(base: str, where: tuple[Any, ...]) -> str:
    return base + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where)


def _find_reference(node: Any, needle: str) -> tuple[Any, ...]:
    """Where in a behaviour a text naming `needle` is written (for the problem's place)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(node, ())]
    while stack:
        value, where = stack.pop(0)
        if isinstance(value, str) and "${" + needle + "}" in value:
            return where
        if isinstance(value, dict):
            stack.extend((v, (*where, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*where, i)) for i, v in enumerate(value))
    return ()
