"""`faults:` of tools and cases: each checked for keys its kind cannot use, before any run.

A key that does nothing for its kind (`retry_after` on a malformed answer) is refused rather
than ignored: a suite author who writes it means something the run would not do.
"""

from __future__ import annotations

from typing import Any

from evalspec._language.faults import INJECTION
from evalspec._language.vocabulary import default_of
from evalspec._suite.build_base import Reporter, make_loc, plain
from evalspec._suite.load import LDict, LList
from evalspec._suite.model import Fault, ForbiddenCall, default
from evalspec._suite.schema import did_you_mean, unknown_tool_hint

ONLY_FOR: dict[str, frozenset[str]] = {
    "status": frozenset({"error"}),
    "applied": frozenset({"error", "timeout"}),
    "retry_after": frozenset({"rate_limit"}),
    "seconds": frozenset({"timeout", "latency"}),
    "message": frozenset({"error", "timeout", "rate_limit"}),
    "form": frozenset({"malformed"}),
    "keep": frozenset({"partial"}),
    "field": frozenset({"partial"}),
}
"""Keys that mean something for some kinds only."""

NEEDS = {"malformed": "form", "partial": "keep", "latency": "seconds"}
"""Keys a kind cannot do without."""

_EXAMPLE = {
    "form": "form: cut_json",
    "keep": "keep: 1",
    "seconds": "seconds: 2.5",
}


class FaultsPart(Reporter):
    """Builds `faults:` lists into Fault objects."""

    def faults(
        self, raw: Any, path: str, tool: str | None, props: dict[str, set[str]]
    ) -> tuple[Fault, ...]:
        """The faults of a tool (`tool` names it) or of a case (each fault names its tool);
        `props` holds each suite tool's arguments, for checking `when`."""
        if not isinstance(raw, LList):
            return ()
        out = []
        for i, item in enumerate(raw):
            fpath = f"{path}.faults[{i}]"
            if not isinstance(item, LDict):
                continue
            fault = self._fault(item, fpath, tool, props)
            if fault is not None:
                out.append(fault)
        return tuple(out)

    def _fault(
        self, item: LDict, path: str, tool: str | None, props: dict[str, set[str]]
    ) -> Fault | None:
        kind = str(item.get("kind"))
        named = item.get("tool")
        ok = True
        if tool is None and named is None:
            self.problem(
                item.pos,
                path,
                "a case's fault must name the tool whose calls meet it",
                f"add `tool: {next(iter(sorted(props)), 'charge_card')}`",
            )
            return None
        if tool is not None and named is not None and named != tool:
            self.problem(
                self.vpos(item, "tool"),
                f"{path}.tool",
                f"this fault sits under tool {tool!r} but names tool {named!r}",
                "remove `tool:`, or move the fault to the case's `faults:`",
            )
            ok = False
        target = str(named if tool is None else tool)
        if not self._offered(item, path, target, props):
            return None
        for key, kinds in ONLY_FOR.items():
            if key in item and kind not in kinds:
                self.problem(
                    item.key_pos.get(key, item.pos),
                    f"{path}.{key}",
                    f"`{key}` means nothing to a fault of kind {kind!r}",
                    f"remove it; `{key}` is for kind {' or '.join(sorted(kinds))}",
                )
                ok = False
        need = NEEDS.get(kind)
        if need is not None and need not in item:
            self.problem(
                item.pos,
                path,
                f"a fault of kind {kind!r} needs `{need}`",
                f"add `{_EXAMPLE[need]}`",
            )
            ok = False
        if "seed" in item and "rate" not in item:
            self.problem(
                item.key_pos.get("seed", item.pos),
                f"{path}.seed",
                "`seed` chooses the calls of a `rate`, and this fault has none",
                "add `rate: 0.2` (a share of the calls), or remove `seed`",
            )
            ok = False
        when = item.get("when")
        ok = self._when_fits(item, path, target, props[target]) and ok
        if not ok:
            return None
        return Fault(
            tool=target,
            kind=item["kind"],
            on_call=item.get("on_call"),
            when=plain(when) if when is not None else None,
            rate=float(item["rate"]) if "rate" in item else None,
            seed=int(item.get("seed", default(Fault, "seed"))),
            message=item.get("message"),
            status=item.get("status"),
            seconds=item.get("seconds"),  # as written: 5 is sent as 5, not 5.0
            retry_after=item.get("retry_after", default(Fault, "retry_after")),
            applied=bool(item.get("applied", default(Fault, "applied"))),
            form=item.get("form"),
            keep=item.get("keep"),
            field=item.get("field"),
            loc=make_loc(item.pos, path),
        )

    def forbidden_calls(self, raw: Any, path: str) -> tuple[ForbiddenCall, ...]:
        """`expect.forbidden_calls`: each names a suite tool, its `args` that tool's."""
        if not isinstance(raw, LList):
            return ()
        out = []
        for i, item in enumerate(raw):
            where, pos = f"{path}.forbidden_calls[{i}]", raw.item_pos[i]
            name = item.get("tool") if isinstance(item, LDict) else item
            args = item.get("args") if isinstance(item, LDict) else None
            tool = self.tool_map.get(str(name))
            if tool is None:
                hint = unknown_tool_hint(str(name), self.tool_map)
                self.problem(pos, where, f"{name!r} is not a tool of this suite", hint)
                continue
            props = set(tool.parameters.get("properties") or {})
            for key in args or {}:
                if props and key not in props:
                    self.problem(
                        args.key_pos.get(key, pos) if isinstance(args, LDict) else pos,
                        f"{where}.args.{key}",
                        f"{tool.name!r} has no argument {key!r}",
                        did_you_mean(key, props) or f"arguments: {', '.join(sorted(props))}",
                    )
            out.append(
                ForbiddenCall(
                    tool.name, plain(args) if args is not None else None, make_loc(pos, where)
                )
            )
        return tuple(out)

    def injections(
        self, raw: Any, path: str, props: dict[str, set[str]]
    ) -> tuple[tuple[Fault, ...], tuple[tuple[str, str], ...]]:
        """A case's `inject:`: text into outputs (as faults of kind `inject`) and text into
        descriptions ((tool, text) pairs)."""
        if not isinstance(raw, LList):
            return (), ()
        faults: list[Fault] = []
        described: list[tuple[str, str]] = []
        for i, item in enumerate(raw):
            where = f"{path}.inject[{i}]"
            if not isinstance(item, LDict):
                continue
            tool = str(item.get("tool"))
            if not self._offered(item, where, tool, props):
                continue
            if item.get("into", default_of(INJECTION, "into")) == "description":
                wrong = [k for k in ("on_call", "when", "field") if k in item]
                for key in wrong:
                    self.problem(
                        item.key_pos.get(key, item.pos),
                        f"{where}.{key}",
                        f"`{key}` chooses calls, and a description is sent with every request",
                        f"remove `{key}`, or inject `into: output`",
                    )
                if not wrong:
                    described.append((tool, str(item["text"])))
                continue
            when = item.get("when")
            self._when_fits(item, where, tool, props[tool])
            faults.append(
                Fault(
                    tool=tool,
                    kind="inject",
                    on_call=item.get("on_call"),
                    when=plain(when) if when is not None else None,
                    field=item.get("field"),
                    text=str(item["text"]),
                    loc=make_loc(item.pos, where),
                )
            )
        return tuple(faults), tuple(described)

    def _offered(self, item: LDict, where: str, tool: str, props: dict[str, set[str]]) -> bool:
        """Whether `tool` is one the case offers; a problem at `tool:` when not."""
        if tool in props:
            return True
        self.problem(
            self.vpos(item, "tool"),
            f"{where}.tool",
            f"this case offers no tool {tool!r}",
            did_you_mean(tool, set(props)) or f"tools: {', '.join(sorted(props))}",
        )
        return False

    def _when_fits(self, item: LDict, where: str, tool: str, args: set[str]) -> bool:
        """Whether every key of the item's `when` is an argument of `tool`."""
        when = item.get("when")
        ok = True
        for key in when or {}:
            if args and key not in args:
                self.problem(
                    when.key_pos.get(key, item.pos) if isinstance(when, LDict) else item.pos,
                    f"{where}.when.{key}",
                    f"{tool!r} has no argument {key!r}",
                    did_you_mean(key, args) or f"arguments: {', '.join(sorted(args))}",
                )
                ok = False
        return ok
