"""The comparison: what a change does to scores (`diff`, `compare`, `review`), in one package.

Lowest first; a module imports only the ones above it in this list:

- words: numbers and lists in a reviewer's words
- recordings_check, edits, security: what changed between two versions of a suite's files
- records: Side, Column, CaseChange, ModelNoise, Comparison (the gate's verdict, exit codes)
- classify: how one pair moved, the rows that explain it, the reviewer's order
- columns: runs read back as (run, model) columns, and which to pair
- noise: the paired test per model
- suite_changes, attribution, variants: the suite changes a case sees, which one moved its
  verdict; the head's tool variants paired
- evidence, scoring: which transcripts answer the head suite; each side scored
- diff, runs: the computations (two suite versions; results files)
- text, console, markdown: the views (the JSON form is the records' `to_dict`; the HTML view is
  the run report's page, evalspec._report.html, reading `columns`)
"""
