"""The cost estimate of a plan, as the lines `evalspec plan` prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalspec._runner.estimate import ModelEstimate


def estimate_lines(estimates: list[ModelEstimate]) -> list[str]:
    """`gpt-4o-mini: 12 items, ~3,400 tokens, cost ~0.0012 (10 recorded, 2 estimated); not
    recorded (a --record auto run calls these): 2 items, ~560 tokens, cost ~0.0002`."""
    lines = []
    for e in estimates:
        cost = f", cost ~{e.total_cost:.4f}" if e.total_cost is not None else " (no price:)"
        line = (
            f"{e.model}: {_items(e.items)}, ~{e.tokens:,.0f} tokens{cost} "
            f"({e.recorded} recorded, {e.estimated} estimated"
            + (f", {e.unknown} with nothing recorded to estimate from" if e.unknown else "")
            + ")"
        )
        missing = e.estimated + e.unknown
        if missing:
            rec_cost = f", cost ~{e.to_record_cost:.4f}" if e.to_record_cost is not None else ""
            line += (
                f"; not recorded (a --record auto run calls these): {_items(missing)}, "
                f"~{e.to_record_tokens:,.0f} tokens{rec_cost}"
            )
        lines.append(line)
    return lines


def _items(n: int) -> str:
    return f"{n} item" if n == 1 else f"{n} items"
