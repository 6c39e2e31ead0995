"""Turn a suite file into a typed Suite, or into every problem it has at once.

Stages: load (positions) → includes → JSON Schema → templates and matrices → typed model with
semantic checks (tools named exist, critics fit arguments, arguments fit the tool's schema, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from evalspec._critics import default_critic, make_critic
from evalspec._critics.dates import DatetimeCritic
from evalspec._language.defaults import default_api_key_env
from evalspec._suite.build_base import make_loc, plain
from evalspec._suite.build_checks import ChecksPart
from evalspec._suite.build_state import RUN_TIME_REF, StatePart, StateUses
from evalspec._suite.build_tools import ToolsPart, refuse_too_many_tools
from evalspec._suite.build_turns import TurnsPart, all_expected
from evalspec._suite.build_variants import VariantsPart, variant_models
from evalspec._suite.limits import MAX_CALLS_PER_CASE
from evalspec._suite.lint import REFUSAL_FIX, Warnings, refusal_trap
from evalspec._suite.load import LDict, LList, Pos, llist, load_yaml_at, read_text
from evalspec._suite.model import (
    Budget,
    Case,
    CriticSpec,
    EmbeddingSettings,
    Expectation,
    ExpectedCall,
    Fault,
    Gate,
    Loc,
    Message,
    ModelSpec,
    Price,
    Rubric,
    RunSettings,
    Suite,
    Tool,
    Turn,
    UserSimulation,
    default,
)
from evalspec._suite.render import Renderer, expand_cases, has_template, resolve_includes
from evalspec._suite.schema import (
    did_you_mean,
    explain_value_error,
    language_validator,
    quickly_valid,
    schema_problems,
    unknown_tool_hint,
)
from evalspec._suite.stream import load_streaming
from evalspec._suite.tree import item_pos
from evalspec._suite.yaml_hints import cut_text_problems, implicit_reading, may_cut_text
from evalspec._tool_schema import tool_validator
from evalspec._util.collector import collector_paused
from evalspec._util.errors import Problem, SpecError
from evalspec._util.schemas import compiled_check

_CASE_TRIALS = default(Case, "trials")
_CASE_PASS_RULE = default(Case, "pass_rule")
_ORDERED = default(Expectation, "ordered")
_NO_TOOL_CALLS = default(Expectation, "no_tool_calls")
_MIN_CALLS = default(Expectation, "min_calls")
_TURN_RULE = default(Case, "turn_rule")
_CASE_FLAKY = default(Case, "flaky")
_NO_DUPLICATES = default(Expectation, "no_duplicates")
_IS_ORDERED, _IS_NO_TOOL_CALLS = bool(_ORDERED), bool(_NO_TOOL_CALLS)
_IS_NO_DUPLICATES = bool(_NO_DUPLICATES)
_CONVERSATION_KEYS = frozenset({"rubric", "critics", "capture", "turns", "turn_rule"})
"""The keys `conversation` reads, with `user` when it is a mapping (a simulated user)."""
_Conversation = tuple[
    Rubric, tuple[CriticSpec, ...], UserSimulation | None, Loc | None, tuple[Turn, ...] | None
]
"""A case's rubric, critics, simulated user, capture and turns (None: a turn is broken)."""


def load_suite(path: str | Path) -> Suite:
    """Load, expand and validate a suite file. Raises SpecError listing every problem.

    The garbage collector is paused meanwhile: the tree holds no cycles, and its collections
    rescanning hundreds of thousands of new containers cost 15% of a 50,000-case load.
    """
    return _paused_gc(Path(path), keep_cases=True)[0]


def check_suite(path: str | Path, warnings: Warnings | None = None) -> int:
    """Validate a suite exactly as `load_suite` does, keeping no case: its number of cases.

    What `evalspec validate` needs; a large suite is checked in the memory of a few hundred
    cases (and the names seen), however many it holds. Given one, `warnings` receives what is
    valid but most likely not meant (`evalspec._suite.lint`), each at its place."""
    return _paused_gc(Path(path), keep_cases=False, warnings=warnings)[1]


def _paused_gc(
    path: Path, *, keep_cases: bool, warnings: Warnings | None = None
) -> tuple[Suite, int]:
    with collector_paused():
        return _load_suite(path, keep_cases, Warnings() if warnings is None else warnings)


def _load_suite(path: Path, keep_cases: bool, warnings: Warnings) -> tuple[Suite, int]:
    """The suite (without its cases unless `keep_cases`) and its number of cases."""
    builder = partial(_Builder, keep_cases=keep_cases, warnings=warnings)
    text = read_text(path)
    cut = may_cut_text(text)
    before, omitted = len(warnings), warnings.omitted
    streamed = None if cut else load_streaming(path, text, builder)
    if streamed is not None:
        return streamed
    del warnings[before:]  # the stream gave up: the whole document is read again below
    warnings.omitted = omitted
    doc, pos = load_yaml_at(path, text)
    file = pos.file
    if not isinstance(doc, LDict):
        raise SpecError(
            [
                Problem(
                    file,
                    pos.line,
                    pos.column,
                    "",
                    f"a suite must be a mapping of keys, not {_kind(doc)}",
                    "start with `suite: <name>` and `cases:`; see `evalspec init`",
                )
            ]
        )
    problems: list[Problem] = []
    resolve_includes(doc, path.resolve().parent, problems, chain=(path.resolve(),))
    refuse_too_many_tools(doc)
    included = bool(problems)
    problems.extend(schema_problems(doc))
    broken = None if included else _broken_cases(problems)
    if cut:
        problems.extend(cut_text_problems(doc, text, file))
    if broken is None:
        raise SpecError(problems)
    # One pass: cases the schema refused are left out, and every other case is still checked
    # for what only the built suite shows (unknown tools, duplicate names, ...).
    built = builder(doc, path, problems, skip=broken)
    suite = built.build()
    if problems:
        raise SpecError(problems)
    return suite, built.case_count


_CASE_PATH = re.compile(r"cases\[(\d+)\]")


def _broken_cases(problems: list[Problem]) -> frozenset[int] | None:
    """The cases these schema problems lie in; None if one outside every case leaves the
    suite's shape unsound (the tools or settings every case is checked against)."""
    broken = set()
    for p in problems:
        m = _CASE_PATH.match(p.path)
        if m is not None:
            broken.add(int(m.group(1)))
        elif not p.shape_ok:
            return None
    return frozenset(broken)


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else f"a single value ({value!r:.40})"


class _Builder(ToolsPart, ChecksPart, StatePart, TurnsPart, VariantsPart):
    """Builds the typed Suite from a schema-valid document, collecting semantic problems."""

    def __init__(
        self,
        doc: LDict,
        path: Path,
        problems: list[Problem],
        *,
        keep_cases: bool = True,
        skip: frozenset[int] = frozenset(),
        warnings: Warnings | None = None,
    ):
        self.doc = doc
        self.warnings = Warnings() if warnings is None else warnings
        """Where warnings go (`check_suite`'s caller reads them)."""
        self.keep_cases = keep_cases
        """False: each Case is checked and counted, then dropped (`check_suite`)."""
        self.skip = skip
        """Indices of cases not to build: the schema refused them (reported already)."""
        self.case_critics: tuple[CriticSpec, ...] = ()
        """The critics of the case being built (`check_date` looks for its argument's)."""
        self.case_count = 0
        self.path = path
        self.problems = problems
        self.base = path.resolve().parent
        self.critic_keys = {}
        self._arg_checks: dict[tuple[str, str], tuple[Any, Any, bool]] = {}
        """Per tool argument, what `_checks_of` makes: shared by every case that uses it."""
        self._system: Message | None = None
        """The last system message made: cases that share its text share it (50,000 cases
        held 50,000 equal ones)."""
        self.state_uses = StateUses()
        self.suite_state = None
        self.environment_spec = None

    def build(self) -> Suite:
        """The whole document at once: every case is expanded before any is built."""
        doc = self.doc
        self.render_top()
        templated = has_template(doc)
        before = len(self.problems)
        expanded = expand_cases(
            doc,
            self.suite_vars,
            self.problems,
            self.renderer.budget,
            templated=templated,
            skip=self.skip,
        )
        if not expanded and (self.skip or len(self.problems) > before):
            # Every case was refused already, or expansion stopped (too many cases, a spent
            # template budget): no case is left to check, and "cases: must not be empty"
            # would only be a consequence.
            raise SpecError(self.problems)
        if templated:  # otherwise the schema check already saw exactly this data
            self.check_rendered(self.top, expanded)
        if isinstance(doc.get("cases"), list):
            doc["cases"].clear()  # each case's tree is freed once its Case is built (below)
        expanded.reverse()
        self.build_head()
        while expanded:
            self.add_case(*expanded.pop())
        return self.finish()

    def render_top(self) -> None:
        """Fill the templates of every top-level value except `cases` and `vars`."""
        doc = self.doc
        self.suite_vars = dict(doc.get("vars") or {})
        self.renderer = Renderer(self.problems)
        self.top = {
            k: self.renderer.render(v, self.suite_vars, k, self.vpos(doc, k))
            for k, v in doc.items()
            if k not in ("cases", "vars")
        }

    def build_head(self) -> None:
        """Everything but the cases: tools, rubric, suite critics, models, run settings."""
        top = self.top
        tools = self.tools(top.get("tools") or LList())
        self.tool_map = {t.name: t for t in tools}
        self.tool_names = {t.name: t.name for t in tools}
        """Each tool's name, to hand a case the suite's copy of it rather than its own."""
        self._offered_lists: dict[tuple[str, ...], tuple[str, ...]] = {}
        """A case's `tools:` as written, to the tuple of the suite's names it offers."""
        self.rubric_raw = dict(top.get("rubric") or {})
        self.suite_rubric = self.rubric(self.rubric_raw, self.doc.get("rubric"), "rubric")
        self.suite_critics = self.critics(
            top.get("critics") or {}, self.doc.get("critics"), "critics"
        )
        all_props: dict[str, Any] = {}
        for t in tools:
            all_props.update(t.parameters.get("properties") or {})
        for c in self.suite_critics if tools else ():
            self.check_field(c, {"properties": all_props}, [], "no tool of this suite takes it")
        self.built_tools = tuple(tools)
        self.suite_state = self.initial_state(top, tools)
        self.environment_spec = self.environment(top, tools)
        self.built_models = tuple(self.models(top.get("models")))
        self.built_variants = self.variants(top.get("variants"), tools)
        self.built_run = self.run_settings(top.get("run") or {})
        budgets = top.get("budgets") or {}
        self.case_budget = dict(budgets.get("case") or {})
        self.suite_case_budget = Budget(**self.case_budget)
        """A case's budget when it sets none: one (immutable) for every such case."""
        self.built_cases: list[Case] = []
        self.seen_names: dict[str, str] = {}

    def add_case(self, path: str, raw: LDict) -> None:
        """Build one expanded case; a second case of the same name is a problem."""
        case = self.case(raw, path, self.top, self.rubric_raw)
        if case is None:
            return
        name = case if isinstance(case, str) else case.name
        if name in self.seen_names:
            self.problem(
                self.vpos(raw, "name"),
                path,
                f"two cases are named {name!r} (the other is {self.seen_names[name]})",
                "give every case a unique name; with a matrix, use {{ variables }}",
            )
        self.seen_names.setdefault(name, path)
        self.case_count += 1
        if isinstance(case, Case):
            self.built_cases.append(case)

    def finish(self) -> Suite:
        self.check_models_left()
        self.check_state_roots(self.suite_state)
        top = self.top
        emb = top.get("embeddings") or {}
        return Suite(
            name=str(top["suite"]),
            path=str(self.path),
            tools=self.built_tools,
            cases=tuple(self.built_cases),
            models=self.variant_models(),
            rubric=self.suite_rubric,
            run=self.built_run,
            embeddings=EmbeddingSettings(
                model=emb.get("model"),
                cache_dir=self.written_path(emb, "cache_dir", "embeddings"),
            ),
            description=str(top.get("description", "")),
            budget=Budget(**dict((top.get("budgets") or {}).get("suite") or {})),
            gate=Gate(**dict(top.get("gate") or {})),
            state=self.suite_state,
            environment=self.environment_spec,
            variants=self.built_variants,
            labels=self.labels_file(top),
        )

    def labels_file(self, top: Any) -> str | None:
        """`labels:` as written (relative to the suite's folder), once held inside it."""
        inside = self.written_path(
            top,
            "labels",
            "",
            verb="read",
            example="labels/helpdesk.labels.jsonl",
            at=self.vpos(self.doc, "labels"),
        )
        return str(top["labels"]) if inside else None

    def variant_models(self) -> tuple[ModelSpec, ...]:
        """The models to run, once per variant; a name taken twice is a problem."""
        players: dict[str, Any] = self.__dict__.get("user_models", {})
        models = variant_models(self.built_models, self.built_variants, set(players))
        names = [m.name for m in models]
        for m in models:
            if m.variant is not None and names.count(m.name) > 1:
                self.problem(
                    Pos(m.loc.file, m.loc.line, m.loc.column),
                    m.loc.path,
                    f"model {m.base_name!r} with variant {m.variant.name!r} is named "
                    f"{m.name!r}, as another model of the suite is",
                    "rename that model or the variant",
                )
        return models

    def check_rendered(self, top: dict[str, Any], expanded: list[tuple[str, LDict]]) -> None:
        """Templates fill values in after the schema check: check what they produced too.

        `models: ["{{ m }}"]` passes the schema as text but may render to a mapping; such a
        value is reported here, at the template, instead of crashing the build.
        """
        doc = self.doc
        rendered = LDict({**top, "cases": llist(doc.pos, [c for _, c in expanded])})
        rendered.pos, rendered.key_pos, rendered.value_pos = doc.pos, doc.key_pos, doc.value_pos
        if "vars" in doc:
            rendered["vars"] = doc["vars"]
        if quickly_valid(rendered):
            return
        _numbers_to_text(rendered)
        for k in top:
            top[k] = rendered[k]
        found = schema_problems(rendered)
        if not found:
            return
        seen: set[tuple[str, int, int, str]] = set()
        for p in found:
            if (p.file, p.line, p.column, p.message) in seen:
                continue  # the same template in every matrix row: one problem
            seen.add((p.file, p.line, p.column, p.message))
            path = p.path
            m = re.match(r"cases\[(\d+)\]", path)
            if m and int(m.group(1)) < len(expanded):
                path = expanded[int(m.group(1))][0] + path[m.end() :]
            self.problems.append(
                Problem.at(
                    p,
                    path,
                    f"{p.message} (after filling in the {{{{ }}}} templates)",
                    p.hint,
                )
            )
        raise SpecError(self.problems)

    def run_settings(self, raw: dict[str, Any]) -> RunSettings:
        given: dict[str, Any] = {
            k: raw[k] for k in ("mode", "max_turns", "concurrency", "retries") if k in raw
        }
        if "timeout" in raw:
            given["timeout_s"] = float(raw["timeout"])
        return RunSettings(
            **given,
            requests_per_minute=raw.get("requests_per_minute"),
            recordings=self.written_path(raw, "recordings", "run"),
        )

    def models(self, raw: LList | None) -> list[ModelSpec]:
        if not raw:
            self.problem(
                self.doc.pos,
                "(top level)",
                "the suite names no model to evaluate",
                "add `models: [gpt-4o-mini]` (any OpenAI-compatible model id)",
            )
            return []
        out: list[ModelSpec] = []
        names: set[str] = set()
        for i, item in enumerate(raw):
            pos = raw.item_pos[i]
            if isinstance(item, str):
                spec = ModelSpec(name=item, model=item, loc=make_loc(pos, f"models[{i}]"))
            else:
                provider = item.get("provider", ModelSpec.provider)
                spec = ModelSpec(
                    name=item.get("name", item["model"]),
                    model=item["model"],
                    provider=provider,
                    base_url=item.get("base_url"),
                    api_key_env=item.get("api_key_env", default_api_key_env(provider)),
                    headers=dict(item.get("headers") or {}),
                    params=dict(item.get("params") or {}),
                    price=_price(item.get("price")),
                    requests_per_minute=item.get("requests_per_minute"),
                    loc=make_loc(pos, f"models[{i}]"),
                )
            if spec.name in names:
                self.problem(
                    pos,
                    f"models[{i}]",
                    f"two models are named {spec.name!r}",
                    "give each a distinct `name:` (e.g. gpt-4o-mini@t0)",
                )
            names.add(spec.name)
            out.append(spec)
        return out

    # ------------------------------------------------------------ tools

    def rubric(self, merged: dict[str, Any], node: Any, path: str) -> Rubric:
        rubric = Rubric(**merged)
        if rubric.fail_threshold > rubric.warn_threshold:
            own = set(node) if isinstance(node, LDict) else set()
            # Point at the key this rubric sets; name where the other value comes from.
            key = "fail_threshold" if "fail_threshold" in own or not own else "warn_threshold"
            pos = (
                node.value_pos.get(key, node.pos)
                if isinstance(node, LDict)
                else getattr(node, "pos", self.doc.pos)
            )
            origin = {
                k: "" if k in own or path == "rubric" else " (from the suite's rubric)"
                for k in ("fail_threshold", "warn_threshold")
            }
            if "fail_threshold" not in merged and "warn_threshold" in own:
                origin["fail_threshold"] = " (the default)"
            if "warn_threshold" not in merged and "fail_threshold" in own:
                origin["warn_threshold"] = " (the default)"
            self.problem(
                pos,
                f"{path}.{key}",
                f"fail_threshold {rubric.fail_threshold:g}{origin['fail_threshold']} is above "
                f"warn_threshold {rubric.warn_threshold:g}{origin['warn_threshold']}",
                "scores below fail_threshold fail and below warn_threshold warn, so "
                "fail_threshold must be the lower one",
            )
        return rubric

    def case(
        self, raw: LDict, path: str, top: dict[str, Any], rubric_raw: dict[str, Any]
    ) -> Case | str | None:
        """The typed case, or (keeping no case: `check_suite`) only its name once every check
        has run: nobody reads the record there. None when it cannot be built."""
        name = str(raw.get("name", "")).strip()
        if not name:
            self.problem(raw.pos, path, "a case needs a name", "name: direct message")
            return None
        messages = self.messages(raw, path, top)
        parts: _Conversation
        if _CONVERSATION_KEYS.isdisjoint(raw) and not isinstance(raw.get("user"), dict):
            # Most cases: what `conversation` makes of a case without the keys it reads.
            parts = (self.suite_rubric, (), None, None, ())
            self.case_critics = ()
        else:
            parts = self.conversation(raw, path, rubric_raw)
        rubric, critics, simulated, capture, turns = parts
        if turns is None:
            return None
        expect = Expectation() if turns or capture else self.expect(raw.get("expect"), raw, path)
        if expect is None:
            return None
        calls = all_expected(turns) if turns else expect
        self.check_critic_fields(critics, calls, raw, path)
        given = raw.get("evaluators")
        evaluators = self.evaluators(given, path) if given else ()
        weight = sum(e.weight for e in evaluators) if evaluators else 0
        self.refusal_traps(raw, path, rubric, expect, turns, weight)
        if turns and any(t.add_tools for t in turns):  # offered turn by turn: checked so
            offered = self.offered_tools(raw, Expectation(), path)
            self.turn_tools(raw, turns, path)
        else:
            offered = self.offered_tools(raw, calls, path)
        faults = self.case_faults(raw, path, offered)
        inject = raw.get("inject")
        injected, described = (
            self.injections(inject, path, self.offered_props(offered))
            if isinstance(inject, LList)
            else ((), ())  # what `injections` makes of no list, without the tools' arguments
        )
        state = self.unchanged_conflicts(
            self.case_state(raw, path, self.suite_state),
            [expect, *(t.expect for t in turns if t.expect is not None)] if turns else [expect],
        )
        if not self.keep_cases:
            return name
        return Case(
            name=name,
            messages=messages,
            expect=expect,
            critics=_merge_critics(self.suite_critics, critics),
            evaluators=evaluators,
            rubric=rubric,
            trials=int(raw.get("trials", top.get("trials", _CASE_TRIALS))),
            pass_rule=raw.get("pass_rule", top.get("pass_rule", _CASE_PASS_RULE)),
            tags=tuple(raw.get("tags") or ()),
            description=str(raw.get("description", "")),
            tools=offered,
            loc=make_loc(raw.pos, path),
            flaky=bool(raw.get("flaky", _CASE_FLAKY)),
            budget=Budget(**{**self.case_budget, **dict(raw["budget"] or {})})
            if "budget" in raw
            else self.suite_case_budget,
            state=state,
            turns=turns,
            turn_rule=raw.get("turn_rule", _TURN_RULE),
            simulated_user=simulated,
            faults=faults + injected,
            described=described,
            capture=capture,
        )

    def conversation(self, raw: LDict, path: str, rubric_raw: dict[str, Any]) -> _Conversation:
        """The case's rubric, critics, simulated user, capture and turns (None when a turn
        is broken), the user's own tools checked."""
        rubric = self.suite_rubric
        if raw.get("rubric"):
            rubric = self.rubric(
                {**rubric_raw, **dict(raw["rubric"])}, raw["rubric"], f"{path}.rubric"
            )
        own = raw.get("critics")
        critics = self.critics(own, own, f"{path}.critics") if own else ()
        self.case_critics = critics
        simulated = self.simulated_user(raw, path)
        capture = self.capture(raw, path)
        turns = self.turns(raw, path, judged=capture is None)
        if turns is not None and (simulated is not None or turns):  # the user's own tools
            self.user_tools(raw, path, turns, simulated)
        return rubric, critics, simulated, capture, turns

    def capture(self, raw: LDict, path: str) -> Loc | None:
        """Where `capture: true` stands, for a capture-mode case (None for any other): such a
        case has no expectations yet, and one it has would be overwritten by the captured."""
        if raw.get("capture") is not True:
            return None
        items = raw.get("turns")
        turns = items if isinstance(items, list) else []
        if "expect" in raw or any(isinstance(t, dict) and "expect" in t for t in turns):
            where = "expect" if "expect" in raw else "turns"
            self.problem(
                self.kpos(raw, where),
                f"{path}.{where}",
                "a capture case has no `expect` yet: running it records what the models call, "
                "and `evalspec capture accept` writes that as its expectations",
                "remove `capture: true` (the case is judged by its `expect`), or its `expect:`",
            )
        return make_loc(self.kpos(raw, "capture"), f"{path}.capture")

    def case_faults(
        self, raw: LDict, path: str, offered: tuple[str, ...] | None
    ) -> tuple[Fault, ...]:
        """The case's `faults:`, each on a tool the case offers."""
        faults = raw.get("faults")
        if not isinstance(faults, LList):
            return ()  # what `faults` makes of it, without the tools' arguments
        return self.faults(faults, path, None, self.offered_props(offered))

    def offered_props(self, offered: tuple[str, ...] | None) -> dict[str, set[str]]:
        """Each tool the case offers, with its arguments."""
        tools = (
            self.tool_map
            if offered is None
            else {n: self.tool_map[n] for n in offered if n in self.tool_map}
        )
        return {n: set(t.parameters.get("properties") or {}) for n, t in tools.items()}

    def refusal_traps(
        self,
        raw: LDict,
        path: str,
        rubric: Rubric,
        expect: Expectation,
        turns: tuple[Turn, ...],
        evaluator_weight: float,
    ) -> None:
        """Warn where a model that tries a tool before answering rightly would fail: the
        case's expectation, or each judged turn's (the case's evaluators judge the whole
        conversation there, not a turn)."""
        judged: list[tuple[Any, str, Expectation, float]] = []
        if turns:
            items = raw.get("turns")
            for k, turn in enumerate(turns):
                if turn.expect is not None and isinstance(items, LList):
                    judged.append((items[k].get("expect"), f"{path}.turns[{k}]", turn.expect, 0))
        else:
            judged.append((raw.get("expect"), path, expect, evaluator_weight))
        for node, where, expectation, weight in judged:
            why = refusal_trap(expectation, rubric, weight)
            if why is None:
                continue
            pos = node.key_pos.get("final_answer", node.pos) if isinstance(node, LDict) else raw.pos
            self.warn(pos, f"{where}.expect", why, REFUSAL_FIX)

    def offered_tools(self, raw: LDict, expect: Expectation, path: str) -> tuple[str, ...] | None:
        """A case's `tools:` must name suite tools, and include every tool it expects."""
        names = raw.get("tools")
        if names is None:
            return None
        node = names if isinstance(names, LList) else None
        for i, name in enumerate(names):
            if name not in self.tool_map:
                pos = node.item_pos[i] if node is not None else raw.pos
                hint = unknown_tool_hint(name, self.tool_map)
                self.problem(
                    pos, f"{path}.tools[{i}]", f"{name!r} is not a tool of this suite", hint
                )
        for call in expect.tool_calls:
            if call.tool not in names:
                p = call.loc
                self.problem(
                    Pos(p.file, p.line, p.column),
                    p.path,
                    f"the case expects a call to {call.tool!r} but does not offer it",
                    f"add {call.tool} to the case's `tools:` list",
                )
        # The suite's own name objects, and one tuple for each list of them that cases repeat:
        # 50,000 cases kept ~200,000 copies of a few names.
        given = tuple(names)
        offered = self._offered_lists.get(given)
        if offered is None:
            canonical = self.tool_names
            offered = tuple([canonical.get(n, n) for n in dict.fromkeys(names)])
            if len(self._offered_lists) < 4096:
                self._offered_lists[given] = offered
        return offered

    def system_message(self, text: str) -> Message:
        last = self._system
        if last is None or last.content != text:
            last = self._system = Message("system", text)
        return last

    def messages(self, raw: LDict, path: str, top: dict[str, Any]) -> tuple[Message, ...]:
        out: list[Message] = []
        system = raw.get("system", top.get("system"))
        if system:
            out.append(self.system_message(str(system)))
        for h in raw.get("history") or ():
            out.append(
                Message(
                    role=h["role"],
                    content=h.get("content"),
                    tool_calls=tuple(plain(h.get("tool_calls") or ())),
                    tool_call_id=h.get("tool_call_id"),
                    name=h.get("name"),
                )
            )
        user = raw.get("user")
        if raw.get("turns"):
            user = raw["turns"][0]["user"]
        if isinstance(user, dict):  # a simulated user speaks first (at run time)
            pass
        elif user is not None:
            out.append(Message("user", str(user)))
        elif not out or out[-1].role not in ("user", "tool"):
            self.problem(
                raw.pos, path, "the case has no user message", "add `user: <what the user asks>`"
            )
        return tuple(out)

    def expect(self, raw: LDict | None, case: LDict, path: str) -> Expectation | None:
        epath = f"{path}.expect"
        if raw is None:
            self.problem(
                case.pos,
                path,
                "the case says nothing about what a good model does",
                "add `expect: {tool_calls: [...]}` or `expect: {no_tool_calls: true}`; or "
                "`capture: true` to record what models call and write it with "
                "`evalspec capture accept`",
            )
            return None
        calls = []
        raw_calls = raw.get("tool_calls") or LList()
        if len(raw_calls) > MAX_CALLS_PER_CASE:
            self.problem(
                self.vpos(raw, "tool_calls"),
                f"{epath}.tool_calls",
                f"the case expects {len(raw_calls)} tool calls; the limit is "
                f"{MAX_CALLS_PER_CASE} per case",
                "split it into several cases",
            )
            raw_calls = LList()
        for i, item in enumerate(raw_calls):
            call = self.expected_call(item, item_pos(raw_calls, i), f"{epath}.tool_calls[{i}]")
            if call:
                calls.append(call)
        if len(raw) == 1 and "tool_calls" in raw:
            # Nothing but calls (most cases): what the steps below make of every other key
            # left out, and the same record.
            return Expectation(
                tool_calls=tuple(calls),
                ordered=_IS_ORDERED,
                no_tool_calls=_IS_NO_TOOL_CALLS,
                min_calls=_MIN_CALLS,
                no_duplicates=_IS_NO_DUPLICATES,
            )
        no_calls = raw.get("no_tool_calls")
        if no_calls and calls:
            self.problem(
                self.vpos(raw, "no_tool_calls"),
                f"{epath}.no_tool_calls",
                "no_tool_calls is true but tool_calls lists calls",
                "keep one of the two",
            )
        min_calls = raw.get("min_calls", _MIN_CALLS)
        if no_calls and min_calls:
            self.problem(
                self.vpos(raw, "min_calls"),
                f"{epath}.min_calls",
                f"no_tool_calls is true but min_calls asks for {min_calls} call(s)",
                "keep one of the two",
            )
        answer = raw.get("final_answer")
        checks = self.final_answer(answer, f"{epath}.final_answer") if answer else ()
        state, unchanged = self.state_checks(raw, epath, self.suite_state is not None)
        if (
            not calls
            and not no_calls
            and not raw.get("min_calls")
            and "tool_calls" not in raw
            and not checks
            and "state" not in raw
            and "unchanged" not in raw
            and not any(k in raw for k in ("forbidden_calls", "max_retries", "no_duplicates"))
        ):
            self.problem(
                raw.pos,
                epath,
                "expect names no tool call, no_tool_calls, min_calls, final_answer or state",
                "add `tool_calls: [...]`, or `no_tool_calls: true`",
            )
        return Expectation(
            tool_calls=tuple(calls),
            ordered=bool(raw.get("ordered", _ORDERED)),
            no_tool_calls=bool(raw.get("no_tool_calls", _NO_TOOL_CALLS)),
            min_calls=int(min_calls) if isinstance(min_calls, int) else _MIN_CALLS,
            final_answer=checks,
            state=state,
            unchanged=unchanged,
            forbidden_calls=self.forbidden_calls(raw.get("forbidden_calls"), epath),
            max_retries=raw.get("max_retries"),
            no_duplicates=bool(raw.get("no_duplicates", _NO_DUPLICATES)),
        )

    def expected_call(self, item: LDict, pos: Pos, path: str) -> ExpectedCall | None:
        long_keys = {"tool", "args", "critics", "output"}
        if "tool" in item:
            others = [k for k in item if k not in long_keys]
            if others:
                self.problem(
                    item.key_pos[others[0]],
                    path,
                    f"unknown key {others[0]!r} in a long-form call",
                    did_you_mean(others[0], long_keys) or "use tool, args, critics, output",
                )
                return None
            name, args, args_node = item["tool"], item.get("args") or {}, item.get("args")
        else:
            name = next(iter(item), "")
            if len(item) != 1 or name in long_keys:  # one key, a tool's name (not `tool`: above)
                self.problem(
                    pos,
                    path,
                    "write one call as `{tool_name: {arg: value}}` or `{tool: name, args: {...}}`",
                    "put each call in its own `- ` list item",
                )
                return None
            args, args_node = item[name] or {}, item[name]
            if not isinstance(args, dict):
                self.problem(
                    item.value_pos[name],
                    f"{path}.{name}",
                    f"the arguments of {name!r} must be a mapping, got {args!r:.40}",
                    f"{name}: {{arg: value}}",
                )
                return None
        tool = self.tool_map.get(name)
        if tool is None:
            name_pos = item.value_pos.get("tool", item.key_pos.get(name, pos))
            hint = unknown_tool_hint(name, self.tool_map)
            self.problem(name_pos, path, f"{name!r} is not a tool of this suite", hint)
            return None
        own = item.get("critics")
        critics = self.critics(own, own, f"{path}.critics") if own else ()
        self.check_args(tool, args, args_node, critics, path, pos)
        for c in critics:
            self.check_field(c, tool.parameters, [tool.name])
        keep = self.keep_cases  # a record `check_suite` drops: no check reads its data
        return ExpectedCall(
            tool=tool.name,  # the suite's own copy of the name, not the case's
            args=plain(args) if keep else args,
            critics=critics,
            output=plain(item.get("output")) if keep else None,
            has_output="output" in item,
            loc=make_loc(pos, path),
        )

    def check_args(
        self,
        tool: Tool,
        args: dict[str, Any],
        node: Any,
        critics: tuple[CriticSpec, ...],
        path: str,
        pos: Pos,
    ) -> None:
        """Expected arguments must be ones the tool takes, of the types its schema allows."""
        props = tool.parameters.get("properties") or {}
        loose = (
            {c.field for c in critics if c.kind in ("one_of", "regex", "ignore", "contains")}
            if critics
            else ()
        )
        for key, value in args.items():
            # Positions are read only for a problem: most arguments have none.
            if key not in props:
                if tool.parameters.get("additionalProperties", True) is False or props:
                    self.problem(
                        _pos_of(node, "key_pos", key, pos),
                        f"{path}.{key}",
                        f"{tool.name!r} has no argument {key!r}",
                        did_you_mean(key, props)
                        or f"its arguments: {', '.join(sorted(props)) or 'none'}",
                    )
                continue
            text = isinstance(value, str)
            if text and "${" in value and RUN_TIME_REF.search(value):
                self.problem(
                    _pos_of(node, "value_pos", key, pos),
                    f"{path}.{key}",
                    f"{value!r:.60} is a run-time reference, which only a tool's behavior fills "
                    "in; an expected argument is compared as written",
                    "write the value a good model sends, or a {{ variable }} from vars or the "
                    "case's matrix",
                )
                continue
            if key in loose or (text and ("{{" in value)):
                continue
            checks = self._arg_checks.get((tool.name, key))
            if checks is None:
                checks = self._arg_checks[(tool.name, key)] = self._checks_of(tool, key)
            validator, fast, dated = checks
            if text and (dated or critics or self.case_critics):
                vpos = partial(_pos_of, node, "value_pos", key, pos)
                self.check_date(tool, key, value, critics, vpos, f"{path}.{key}")
            if fast(value) if fast is not None else validator.is_valid(value):
                continue
            vpos = partial(_pos_of, node, "value_pos", key, pos)  # made for a problem alone
            errors = list(validator.iter_errors(value))
            if errors:
                message = explain_value_error(errors[0])
                hint = "fix the value, or the tool's `parameters`"
                wants = errors[0].validator_value if errors[0].validator == "type" else ()
                reading = implicit_reading(*vpos(), value) if "string" in wants else None
                if reading is not None:
                    message, hint = f"{message}: {reading[0]}", reading[1]
                self.problem(
                    vpos(),
                    f"{path}.{key}",
                    f"the expected {key} {value!r:.60} does not fit {tool.name}'s parameter: "
                    + message,
                    hint,
                )

    def check_date(
        self,
        tool: Tool,
        key: str,
        value: Any,
        critics: tuple[CriticSpec, ...],
        pos: Callable[[], Pos],
        path: str,
    ) -> None:
        """An expected value the datetime critic that judges it cannot read fails every model:
        say so now, not after a run. `pos` finds the value's position, for that problem.
        Asked only for a text that a datetime critic may judge (`check_args` knows)."""
        chosen = next(
            (c for c in (*critics, *self.case_critics, *self.suite_critics) if c.field == key),
            None,
        )
        kind, params = (
            (chosen.kind, chosen.params)
            if chosen is not None
            else default_critic((tool.parameters.get("properties") or {}).get(key))
        )
        if kind != "datetime" or not isinstance(value, str):
            return
        try:
            critic = make_critic(kind, params)
        except ValueError:
            return  # the critic's own parameters are reported where it is written
        if isinstance(critic, DatetimeCritic) and critic.reads(value):  # kind is "datetime"
            return
        dateutil = params.get("parse") == "dateutil"
        self.problem(
            pos(),
            path,
            f"the expected {key} {value!r:.60} is not a date the datetime critic can read, "
            "so every answer would fail",
            "write it as a date and time the model should produce, e.g. 2025-03-05 or "
            "2025-03-05T14:00"
            + ("" if dateutil else " (ISO 8601; `parse: dateutil` on the critic reads more)"),
        )

    def _checks_of(self, tool: Tool, key: str) -> tuple[Any, Any, bool]:
        """What every expected value of one tool argument is checked with, made once per tool
        and argument: jsonschema's validator, a compiled check when the argument's schema is
        plain, and whether a datetime critic may judge it when its case and call name no
        critic (the suite's critics name one, or its schema's format makes it the default)."""
        schema = (tool.parameters.get("properties") or {})[key]
        dated = default_critic(schema)[0] == "datetime" or any(
            c.kind == "datetime" for c in self.suite_critics
        )
        return tool_validator(schema), compiled_check(schema), dated

    def check_field(
        self, critic: CriticSpec, params: dict[str, Any], tools: list[str], why: str = ""
    ) -> None:
        props = params.get("properties") or {}
        if props and critic.field not in props:
            p = critic.loc
            pos = self.critic_keys.get((p.file, p.line, p.column), Pos(p.file, p.line, p.column))
            why = why or f"{' / '.join(tools)} takes no such argument"
            self.problem(
                pos,
                p.path,
                f"critic for {critic.field!r}, but {why}",
                did_you_mean(critic.field, props) or f"arguments: {', '.join(sorted(props))}",
            )

    def check_critic_fields(
        self, critics: tuple[CriticSpec, ...], expect: Expectation, raw: LDict, path: str
    ) -> None:
        if not critics:
            return
        tools = [self.tool_map[c.tool] for c in expect.tool_calls if c.tool in self.tool_map]
        if not tools:
            return
        props: dict[str, Any] = {}
        for t in tools:
            props.update(t.parameters.get("properties") or {})
        for c in critics:
            self.check_field(c, {"properties": props}, sorted({t.name for t in tools}))


def _pos_of(node: Any, table: str, key: str, default: Pos) -> Pos:
    """Where `node`'s key or value `key` stands (`table`: key_pos or value_pos)."""
    found: Pos = getattr(node, table).get(key, default) if isinstance(node, LDict) else default
    return found


def _numbers_to_text(doc: LDict) -> None:
    """`"{{ n }}"` renders to the number n; where the schema wants text, it becomes text again."""
    for error in language_validator().iter_errors(doc):
        value = error.instance
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int | float):
            text = str(value)
        else:
            continue
        if error.validator == "type":
            wants = error.validator_value
        elif error.validator == "anyOf":
            wants = [b.get("type") for b in error.validator_value]
        else:
            continue
        if "string" not in ([wants] if isinstance(wants, str) else list(wants)):
            continue
        parts = list(error.absolute_path)
        parent: Any = doc
        for part in parts[:-1]:
            parent = parent[part]
        if parts:
            parent[parts[-1]] = text


def _merge_critics(
    suite: tuple[CriticSpec, ...], case: tuple[CriticSpec, ...]
) -> tuple[CriticSpec, ...]:
    if not case:
        return suite
    fields = {c.field for c in case}
    return tuple(c for c in suite if c.field not in fields) + case


def _price(raw: Any) -> Price | None:
    """A model's `price:` (the schema has checked both numbers are there)."""
    return Price(float(raw["input"]), float(raw["output"])) if raw else None
