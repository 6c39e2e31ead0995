"""The state language of simulated tools (a tool's `behavior:`), one job per module, lowest first:

- `types`: the shapes a compiled behaviour is made of (references, templates, checks, effects)
  and the walk that lists their references;
- `computed`: the computed values (`$calc`, `$if`, `$each`, `$sorted`, walks): their grammar,
  compiled;
- `spec`: a behaviour compiled and checked at load time (pointers, references, limits), with
  the place of each problem;
- `evaluate`: the computed values evaluated when a tool is called.

Its keys are declared in evalspec._language.state; the engine that applies a compiled behaviour
to a conversation's state is evalspec._tools.state, and the suite builder that reports problems
at their line is evalspec._suite.build_state.
"""
