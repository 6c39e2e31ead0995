"""Multi-turn cases and simulated users: `turns:`, `turn_rule:`, `user: {simulate: ...}`.

A multi-turn case keeps the shape of a single-turn one where it can: its `messages` end with
the first turn's user text (so plan ids, recordings and reports that read the opening request
work unchanged), and its `expect` is empty; each turn carries its own expectation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalspec._suite.build_base import Reporter, make_loc
from evalspec._suite.load import LDict, LList
from evalspec._suite.model import Expectation, ModelSpec, Turn, UserSimulation
from evalspec._suite.schema import did_you_mean

_SIM_DEFAULT_TURNS = UserSimulation.__dataclass_fields__["max_turns"].default


class TurnsPart(Reporter):
    """Builds a case's turns and simulated user; the builder supplies `expect` and the models."""

    built_models: tuple[ModelSpec, ...]
    expect: Callable[[Any, LDict, str], Expectation | None]
    """The builder's own expectation parser, used for each turn's `expect`."""

    def turns(self, raw: LDict, path: str) -> tuple[Turn, ...] | None:
        """The case's turns; () for a case without `turns:`, None when a turn is broken."""
        items = raw.get("turns")
        if items is None:
            return ()
        for key, why in (
            ("user", "the first turn's `user` is what the user says first"),
            ("expect", "each turn has its own `expect`"),
            ("evaluators", "evaluators judge one answer; put checks in each turn's `expect`"),
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
            out.append(Turn(str(item["user"]), expect, make_loc(pos, at)))
        if ok and out and all(t.expect is None for t in out):
            self.problem(
                self.vpos(raw, "turns"),
                f"{path}.turns",
                "no turn says what a good model does, so nothing in this case is judged",
                "add `expect:` to at least one turn",
            )
        return tuple(out) if ok else None

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
        return UserSimulation(
            goal=str(sim["goal"]),
            model=name,
            persona=str(sim.get("persona", "")),
            instructions=str(sim.get("instructions", "")),
            stop_when=str(sim.get("stop_when", "")),
            max_turns=int(sim.get("max_turns", _SIM_DEFAULT_TURNS)),
            loc=make_loc(pos, at),
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
