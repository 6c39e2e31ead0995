"""Critics, evaluators and final-answer checks of a suite: short forms to full specs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from evalspec._critics.patterns import PatternError, compile_pattern
from evalspec._language.critics import CRITIC
from evalspec._language.vocabulary import declaration_at
from evalspec._suite.build_base import Reporter, make_loc, plain
from evalspec._suite.load import LDict, LList, Pos
from evalspec._suite.model import (
    CriticSpec,
    EvaluatorSpec,
    FinalAnswerCheck,
    Loc,
    default,
)
from evalspec._suite.schema import (
    unknown_tool_hint,
)

FUZZY_WEIGHTS = {
    "minimal": 1,
    "very_low": 2,
    "low": 3,
    "medium": 4,
    "high": 5,
    "very_high": 6,
    "critical": 7,
}
"""Arcade's FuzzyWeight buckets. A `critics:` mapping that names one has its weights normalised
to sum to 1, as Arcade normalises a case's critics (HIGH and LOW: 5/8 and 3/8)."""

_CRITIC_WEIGHT = default(CriticSpec, "weight")
_CRITIC_REQUIRED = default(CriticSpec, "required")
_ANSWER_WEIGHT = default(FinalAnswerCheck, "weight")
_EVALUATOR_WEIGHT = default(EvaluatorSpec, "weight")
_EVALUATOR_REQUIRED = default(EvaluatorSpec, "required")


def _named_weight(value: Any) -> int | None:
    return FUZZY_WEIGHTS.get(value.lower()) if isinstance(value, str) else None


class ChecksPart(Reporter):
    """Builds critics, evaluators and final-answer checks, checking their options."""

    doc: LDict
    critic_keys: dict[tuple[str, int, int], Pos]
    """Where each critic's argument name is written, by the position of its value."""

    def critics(self, raw: dict[str, Any], node: Any, path: str) -> tuple[CriticSpec, ...]:
        out = []
        named = False
        for field, value in raw.items():
            pos = node.value_pos.get(field, node.pos) if isinstance(node, LDict) else self.doc.pos
            key_pos = node.key_pos.get(field, pos) if isinstance(node, LDict) else pos
            self.critic_keys[(pos.file, pos.line, pos.column)] = key_pos
            named = named or (isinstance(value, dict) and isinstance(value.get("weight"), str))
            spec = self.critic(field, value, pos, f"{path}.{field}")
            if spec:
                out.append(spec)
        total = sum(c.weight for c in out)
        if named and total > 0:
            out = [replace(c, weight=c.weight / total) for c in out]
        return tuple(out)

    def critic(self, field: str, value: Any, pos: Pos, path: str) -> CriticSpec | None:
        loc = make_loc(pos, path)
        if isinstance(value, str):
            return self._checked(CriticSpec(field, value, loc=loc), pos)
        raw_weight = value.get("weight", _CRITIC_WEIGHT)
        weight = float(_named_weight(raw_weight) or raw_weight)
        kinds = [k for k in value if k not in ("weight", "required")]
        if len(kinds) != 1:
            self.problem(
                pos,
                path,
                f"one critic mapping names {len(kinds)} critics ({', '.join(kinds)})"
                if kinds
                else "this critic mapping has only a weight, no critic",
                f"keep exactly one critic, for example: {{similarity: 0.8, weight: {weight:g}}}",
            )
            return None
        kind = kinds[0]
        arg = value[kind]
        opt_pos = value.value_pos.get(kind, pos) if isinstance(value, LDict) else pos
        if kind == "ignore" and arg is False:
            self.problem(
                opt_pos, f"{path}.ignore", "`ignore: false` has no meaning", "remove the critic"
            )
            return None
        spec = CriticSpec(
            field,
            kind,
            weight,
            critic_params(kind, arg),
            loc,
            required=bool(value.get("required", _CRITIC_REQUIRED)),
        )
        return self._checked(spec, opt_pos)

    def _checked(self, spec: CriticSpec, pos: Pos) -> CriticSpec | None:
        """Build the critic once now, so a bad option is reported before anything runs."""
        try:
            from evalspec._critics import make_critic
        except ImportError:  # pragma: no cover - critics module always ships
            return spec
        try:
            make_critic(spec.kind, spec.params)
        except (ValueError, TypeError) as exc:
            text = str(exc)
            for prefix in (f"critic '{spec.kind}': ", f"critic '{spec.kind}' "):
                text = text[len(prefix) :] if text.startswith(prefix) else text
            self.problem(
                pos,
                f"{spec.loc.path}.{spec.kind}" if spec.params else spec.loc.path,
                f"{spec.kind} critic: {text}",
                critic_hint(spec.kind),
            )
            return None
        return spec

    # ------------------------------------------------------------ cases

    def final_answer(self, raw: LDict | None, path: str) -> tuple[FinalAnswerCheck, ...]:
        if not raw:
            return ()
        weight = float(raw.get("weight", _ANSWER_WEIGHT))
        out = []
        for kind, value in raw.items():
            params: dict[str, Any]
            if kind == "weight":
                continue
            loc = make_loc(raw.value_pos.get(kind, raw.pos), f"{path}.{kind}")
            if kind in ("contains", "not_contains"):
                params = {"values": [value] if isinstance(value, str) else list(value)}
            elif kind == "equals":
                params = {"value": value}
            elif kind == "regex":
                params = {"pattern": value}
                self._check_regex(value, loc)
            elif kind == "similarity":
                params = {"value": value} if isinstance(value, str) else dict(value)
            elif isinstance(value, dict):
                params = dict(value)
                if kind == "judge":
                    self._check_rubric(params.get("rubric"), loc)
            else:  # a plugin's short form: `max_words: 50` or `max_words: true`
                params = {} if value is True else {"value": value}
            out.append(FinalAnswerCheck(kind, params, weight, loc))
        return tuple(out)

    def _check_rubric(self, rubric: Any, loc: Loc) -> None:
        """What the schema cannot say of a rubric: its criteria's names are distinct (reports
        and labels name a criterion by it)."""
        items = rubric.get("criteria") if isinstance(rubric, dict) else None
        names = [c.get("name") for c in items or () if isinstance(c, dict)]
        twice = sorted({str(n) for n in names if names.count(n) > 1})
        if twice:
            self.problem(
                Pos(loc.file, loc.line, loc.column),
                f"{loc.path}.rubric.criteria",
                f"two rubric criteria are named {twice[0]!r}",
                "give each criterion a name of its own",
            )

    def _check_regex(self, pattern: str, loc: Loc) -> None:

        try:
            compile_pattern(pattern)
        except PatternError as exc:
            self.problem(
                Pos(loc.file, loc.line, loc.column),
                loc.path,
                f"invalid regular expression: {exc}",
                "escape special characters with \\",
            )

    def evaluators(self, raw: LList, path: str) -> tuple[EvaluatorSpec, ...]:
        out = []
        for i, item in enumerate(raw):
            pos = raw.item_pos[i]
            epath = f"{path}.evaluators[{i}]"
            if isinstance(item, str):
                out.append(EvaluatorSpec(item, {}, loc=make_loc(pos, epath)))
                continue
            kinds = [k for k in item if k not in ("weight", "required")]
            if len(kinds) != 1:
                self.problem(
                    pos,
                    epath,
                    "an evaluator item names exactly one evaluator",
                    "for example: - tool_call_order: {strict: true}",
                )
                continue
            kind = kinds[0]
            value = item[kind]
            params = dict(value) if isinstance(value, dict) else {}
            if kind == "tool_call_count":
                counts = value.get("counts") if isinstance(value, LDict) else None
                for tool in counts or {}:
                    if tool not in self.tool_map:
                        self.problem(
                            counts.key_pos.get(tool, pos) if isinstance(counts, LDict) else pos,
                            f"{epath}.{kind}.counts.{tool}",
                            f"{tool!r} is not a tool of this suite",
                            unknown_tool_hint(tool, self.tool_map),
                        )
            out.append(
                EvaluatorSpec(
                    kind,
                    plain(params),
                    float(item.get("weight", _EVALUATOR_WEIGHT)),
                    bool(item.get("required", _EVALUATOR_REQUIRED)),
                    make_loc(pos, epath),
                )
            )
        return tuple(out)


def critic_hint(kind: str) -> str:
    """An example of the critic written correctly, from the schema's own examples."""
    if kind == "regex":
        return (
            "write a valid regular expression; put \\ before ( ) [ ] . * + ? to match them as text"
        )
    try:
        examples = declaration_at(CRITIC, kind).examples or ()
    except KeyError:  # a plugin's critic: its options are its own
        return "fix the critic's options"
    if not examples:
        return "fix the critic's options"
    import json

    return f"for example: {{{kind}: {json.dumps(examples[0])}}}"


def critic_params(kind: str, arg: Any) -> dict[str, Any]:
    """Short forms to full parameters: `similarity: 0.8` → {threshold: 0.8}, ..."""
    if arg is True or arg is None:
        return {}
    if isinstance(arg, dict):
        return plain(arg)
    if kind in ("similarity", "json_similarity"):
        return {"threshold": arg}
    if kind == "regex":
        return {"pattern": arg}
    if kind == "contains":
        return {"values": [arg]}
    if kind == "one_of":
        return {"values": plain(arg)}
    return {}
