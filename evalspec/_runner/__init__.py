"""Execute a plan: models and simulated tools talk; finished items stream to a run directory."""

from evalspec._runner.execute import RunOptions, RunOutcome, run_plan, run_plan_async

__all__ = ["RunOptions", "RunOutcome", "run_plan", "run_plan_async"]
