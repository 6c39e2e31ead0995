"""What `evalspec.api` offers, one module per job: a run, re-scoring, review, importers.

Each function takes plain values (paths, suites, transcripts) and returns a typed record; it
prints nothing. The CLI translates options into these calls and renders what they return.
"""
