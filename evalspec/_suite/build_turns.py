"""Multi-turn cases and simulated users: `turns:`, `turn_rule:`, `user: {simulate: ...}`.

A multi-turn case keeps the shape of a single-turn one where it can: its `messages` end with
the first turn's user text (so plan ids, recordings and reports that read the opening request
work unchanged), and its `expect` is empty; each turn carries its own expectation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalspec._critics.patterns import PatternError, compile_pattern
from evalspec._suite.build_base import Reporter, make_loc
from evalspec._suite.load import LDict, LList, Pos
from evalspec._suite.model import (
    Expectation,
    ModelSpec,
    Turn,
    UserCheck,
    UserCheckKind,
    UserSimulation,
)
from evalspec._suite.schema import did_you_mean, unknown_tool_hint

_SIM_DEFAULT_TURNS = UserSimulation.__dataclass_fields__["max_turns"].default


class TurnsPart(Reporter):
    """Builds a case's turns and simulated user; the builder supplies `expect` and the models."""

    built_models: tuple[ModelSpec, ...]
    tool_map: dict[str, Any]
    expect: Callable[[Any, LDict, str], Expectation | None]
    """The builder's own expectation parser, used for each turn's `expect`."""
    check_args: Callable[..., None]
    """The builder's check of a call's arguments against its tool's schema."""

    def turns(self, raw: LDict, path: str, *, judged: bool = True) -> tuple[Turn, ...] | None:
        """The case's turns; () for a case without `turns:`, None when a turn is broken.
        `judged` False: a capture case, whose turns have no expectations yet."""
        items = raw.get("turns")
        if items is None:
            if "turn_rule" in raw:
                self.problem(
                    self.kpos(raw, "turn_rule"),
                    f"{path}.turn_rule",
                    "`turn_rule` combines the scores of `turns:`, and this case has none",
                    "remove `turn_rule:`, or write the conversation as `turns:`",
                )
            return ()
        if isinstance(raw.get("user"), dict):
            return ()  # a simulated user beside turns: `simulated_user` says it, once
        for key, why in (
            ("user", "the first turn's `user` is what the user says first"),
            ("expect", "each turn has its own `expect`"),
        ):
            if key in raw:
                self.problem(
                    self.kpos(raw, key),
                    f"{path}.{key}",
                    f"a case with `turns:` cannot also have `{key}:`",
                    f"remove `{key}:` ({why})",
                )
        out: list[Turn] = []
        ok = True
        node = items if isinstance(items, LList) else LList()
        for i, item in enumerate(items):
            at = f"{path}.turns[{i}]"
            pos = node.item_pos[i] if i < len(node.item_pos) else raw.pos
            expect = None
            if item.get("expect") is not None:
                expect = self.expect(item["expect"], item, at)
                ok = ok and expect is not None
            added = tuple(str(n) for n in item.get("add_tools") or ())
            calls = tuple(
                (str(name), dict(args or {}))
                for call in item.get("user_calls") or ()
                for name, args in call.items()
            )
            out.append(Turn(str(item["user"]), expect, make_loc(pos, at), added, calls))
        if judged and ok and out and all(t.expect is None for t in out):
            self.problem(
                self.vpos(raw, "turns"),
                f"{path}.turns",
                "no turn says what a good model does, so nothing in this case is judged",
                "add `expect:` to at least one turn",
            )
        return tuple(out) if ok else None

    def turn_tools(self, raw: LDict, turns: tuple[Turn, ...], path: str) -> None:
        """Each turn's `add_tools:` names suite tools not offered yet, and each turn's expected
        calls are to tools offered by then (the case's `tools:` and earlier turns' additions)."""
        every = raw.get("tools") is None  # offers every suite tool (add_tools is refused)
        offered = set(self.tool_map) if every else set(raw.get("tools") or ())
        items = raw.get("turns")
        node = items if isinstance(items, LList) else LList()
        for k, turn in enumerate(turns):
            item = node[k] if k < len(node) else None
            at = f"{path}.turns[{k}].add_tools"
            names = item.get("add_tools") if isinstance(item, LDict) else None
            if turn.add_tools and isinstance(item, LDict):
                where = item.value_pos.get("add_tools", item.pos)
                if k == 0:
                    self.problem(
                        where,
                        at,
                        "the first turn cannot add tools: what it offers is the case's `tools:`",
                        "move these names to the case's `tools:` list",
                    )
                elif every:
                    self.problem(
                        where,
                        at,
                        "the case has no `tools:`, so it offers every tool of the suite from the "
                        "first turn and a turn has nothing to add",
                        "list what the first turn offers in the case's `tools:`",
                    )
            for i, name in enumerate(turn.add_tools):
                pos = names.item_pos[i] if isinstance(names, LList) else raw.pos
                if name not in self.tool_map:
                    self.problem(
                        pos,
                        f"{at}[{i}]",
                        f"{name!r} is not a tool of this suite",
                        unknown_tool_hint(name, self.tool_map),
                    )
                elif name in offered and k > 0 and not every:
                    self.problem(
                        pos,
                        f"{at}[{i}]",
                        f"{name!r} is offered already (by the case's `tools:` or an earlier turn)",
                        f"remove {name} from this turn's `add_tools:`",
                    )
            offered.update(turn.add_tools)
            for call in turn.expect.tool_calls if turn.expect else ():
                if call.tool not in offered and call.tool in self.tool_map:
                    later = next(
                        (j for j in range(k + 1, len(turns)) if call.tool in turns[j].add_tools),
                        None,
                    )
                    p = call.loc
                    self.problem(
                        Pos(p.file, p.line, p.column),
                        p.path,
                        f"turn {k + 1} expects a call to {call.tool!r}, which is not offered "
                        + (f"before turn {later + 1}" if later is not None else "in this case"),
                        f"add {call.tool} to the case's `tools:` or to the `add_tools:` of turn "
                        f"{k + 1} or an earlier one",
                    )

    def simulated_user(self, raw: LDict, path: str) -> UserSimulation | None:
        """`user: {simulate: ...}` as a UserSimulation; None when the user is scripted text."""
        user = raw.get("user")
        if not isinstance(user, dict):
            return None
        sim = user["simulate"]
        at = f"{path}.user.simulate"
        names = {m.name: m for m in self.built_models}
        name = str(sim["model"])
        if name not in names:
            self.problem(
                sim.value_pos.get("model", sim.pos) if isinstance(sim, LDict) else raw.pos,
                f"{at}.model",
                f"{name!r} is not a model of this suite",
                did_you_mean(name, set(names))
                or "add the model that plays the user to `models:` and name it here; models: "
                + ", ".join(sorted(names)),
            )
        if "turns" in raw:
            self.problem(
                self.kpos(raw, "turns"),
                f"{path}.turns",
                "a case with a simulated user cannot also have scripted `turns:`",
                "keep one: `turns:` for a scripted conversation, `user: {simulate: ...}` for a "
                "simulated one",
            )
        pos = sim.pos if isinstance(sim, LDict) else raw.pos
        self.__dict__.setdefault("user_models", {})[name] = pos
        checks = tuple(
            self.user_check(c, sim, i, f"{at}.checks[{i}]")
            for i, c in enumerate(sim.get("checks") or ())
        )
        return UserSimulation(
            goal=str(sim["goal"]),
            model=name,
            persona=str(sim.get("persona", "")),
            instructions=str(sim.get("instructions", "")),
            stop_when=str(sim.get("stop_when", "")),
            max_turns=int(sim.get("max_turns", _SIM_DEFAULT_TURNS)),
            loc=make_loc(pos, at),
            tools=tuple(str(n) for n in sim.get("tools") or ()),
            checks=checks,
        )

    def user_check(self, raw: Any, sim: Any, i: int, at: str) -> UserCheck:
        """One of `simulate: {checks: ...}`, its regular expressions compiled here so a bad one
        is a problem at its place, not an error in the middle of a run."""
        node = raw if isinstance(raw, LDict) else LDict()
        items = sim.get("checks") if isinstance(sim, LDict) else None
        pos = (
            items.item_pos[i] if isinstance(items, LList) and i < len(items.item_pos) else node.pos
        )
        for key in ("hides", "until", "never", "on_script", "refusal"):
            if isinstance(raw.get(key), str):
                try:  # run on RE2, in time linear in the simulated user's text
                    compile_pattern(raw[key])
                except PatternError as exc:
                    self.problem(
                        node.value_pos.get(key, pos),
                        f"{at}.{key}",
                        f"{raw[key]!r} is not a regular expression evalspec can use: {exc}",
                        "escape the special characters (. * + ? ( ) [ ] { } | \\) with a "
                        "backslash, or fix the expression",
                    )
        kinds: tuple[UserCheckKind, ...] = ("hides", "reaches", "never", "on_script", "judged")
        kind = next(k for k in kinds if k in raw)
        judge = raw.get("judge") or {}
        reaches = raw.get("reaches") or {}
        return UserCheck(
            kind=kind,
            pattern="" if kind == "reaches" else str(raw[kind]),
            until=str(raw.get("until", "")),
            state=tuple((str(k), v) for k, v in reaches.items()),
            refusal=str(raw.get("refusal", "")),
            why=str(raw.get("why", "")),
            loc=make_loc(pos, at),
            judge=tuple((str(k), str(v)) for k, v in judge.items()),
        )

    def user_tools(
        self, raw: LDict, path: str, turns: tuple[Turn, ...], sim: UserSimulation | None
    ) -> None:
        """The user's own tools (`simulate: {tools:}`, a turn's `user_calls:`) are suite tools
        that the model is not offered: the case lists the model's in `tools:`, without them."""
        named: list[tuple[str, Any, str]] = []
        if sim is not None:
            node = raw["user"]["simulate"]
            items = node.get("tools")
            for i, n in enumerate(sim.tools):
                where = items.item_pos[i] if isinstance(items, LList) else sim_pos(node, raw)
                named.append((n, where, f"{path}.user.simulate.tools[{i}]"))
        node_turns = raw.get("turns")
        for k, turn in enumerate(turns):
            item = node_turns[k] if isinstance(node_turns, LList) else None
            calls = item.get("user_calls") if isinstance(item, LDict) else None
            for i, (n, args) in enumerate(turn.user_calls):
                where = calls.item_pos[i] if isinstance(calls, LList) else raw.pos
                at = f"{path}.turns[{k}].user_calls[{i}]"
                named.append((n, where, at))
                if n in self.tool_map and isinstance(calls, LList):
                    self.user_call_args(self.tool_map[n], args, calls[i].get(n), at, where)
        offered = raw.get("tools")
        for name, where, at in named:
            if name not in self.tool_map:
                self.problem(
                    where,
                    at,
                    f"{name!r} is not a tool of this suite",
                    unknown_tool_hint(name, self.tool_map),
                )
            elif offered is None:
                self.problem(
                    where,
                    at,
                    f"the user's tool {name!r} would be offered to the model too: the case has "
                    "no `tools:`, so it offers every tool of the suite",
                    "list the model's tools in the case's `tools:`, without the user's",
                )
            elif name in offered:
                self.problem(
                    where,
                    at,
                    f"{name!r} is both the user's tool and the model's (in the case's `tools:`)",
                    f"remove {name} from the case's `tools:`: in dual control each side holds "
                    "its own tools",
                )

    def user_call_args(
        self, tool: Any, args: dict[str, Any], node: Any, at: str, where: Pos
    ) -> None:
        """A scripted user's call takes the tool's arguments, as an expected call's do, and
        every one the tool requires: a call the tool would refuse is a mistake in the suite."""
        self.check_args(tool, args, node, (), f"{at}.{tool.name}", where)
        for name in tool.parameters.get("required") or ():
            if name not in args:
                self.problem(
                    where,
                    f"{at}.{tool.name}",
                    f"the user's call of {tool.name!r} lacks the argument {name!r}, which the "
                    "tool requires",
                    f"{tool.name}: {{{name}: ...}}",
                )

    def check_models_left(self) -> None:
        """A model that plays a user is not evaluated: some model must be left to evaluate."""
        players: dict[str, Any] = self.__dict__.get("user_models", {})
        if self.built_models and all(m.name in players for m in self.built_models):
            name, pos = next(iter(players.items()))
            self.problem(
                pos,
                "models",
                f"every model of the suite plays a simulated user ({name!r} does), so no model "
                "is left to evaluate",
                "add the model under test to `models:`; the one that plays the user is not "
                "evaluated",
            )

    def kpos(self, node: LDict, key: str) -> Any:
        return node.key_pos.get(key, node.pos)


def all_expected(turns: tuple[Turn, ...]) -> Expectation:
    """Every turn's expected calls together, for the checks that look at a case's calls
    (offered tools, critics that name an argument)."""
    return Expectation(tool_calls=tuple(c for t in turns if t.expect for c in t.expect.tool_calls))


def sim_pos(sim: Any, raw: LDict) -> Pos:
    """Where the simulated user is declared."""
    return sim.pos if isinstance(sim, LDict) else raw.pos
