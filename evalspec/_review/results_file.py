"""Reading a results.json written by another run (compare, view, review), as the declared
records of evalspec._scoring.results_file: no field is checked by hand here."""

from __future__ import annotations

from evalspec._scoring.results_file import RESULTS_FILE, ResultsFile, load_results

__all__ = ["RESULTS_FILE", "ResultsFile", "load_results"]
