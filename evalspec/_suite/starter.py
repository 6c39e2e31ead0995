"""The starter suite `evalspec init` writes: small, commented, valid."""

from __future__ import annotations

import os
from pathlib import Path

_TEMPLATE = """\
# yaml-language-server: $schema={schema}
#
# A starter evalspec suite. Check it with `evalspec validate {name}`,
# run it with `evalspec run {name}` (needs OPENAI_API_KEY, or a local endpoint).

suite: {stem}
description: What this suite checks, in one sentence.

system: You are a helpful assistant. Use the tools when they help.

models:
  - gpt-4o-mini                 # any OpenAI-compatible model id
  # - name: local
  #   model: llama3.1
  #   base_url: http://localhost:11434/v1

rubric:
  fail_threshold: 0.8           # below this a case fails
  warn_threshold: 0.9           # from fail_threshold up to this it passes with a warning

tools:
  - name: get_weather
    description: Current weather for a city.
    parameters:
      type: object
      properties:
        city: {{type: string, description: "City name, e.g. Paris."}}
        unit: {{type: string, enum: [celsius, fahrenheit]}}
      required: [city]
    responses:                  # simulated answers: first match wins
      - when: {{city: Paris}}
        output: {{temperature: 21, unit: celsius, sky: sunny}}
      - error: city not found   # fallback for every other call

cases:
  - name: weather in Paris
    user: How warm is it in Paris right now?
    expect:
      tool_calls:
        - get_weather: {{city: Paris}}
    critics:
      city: {{binary: true, required: true}}   # exactly right, or the case fails

  - name: small talk needs no tool
    user: Thanks, that's all!
    expect:
      no_tool_calls: true
"""


def starter_suite(path: Path) -> str:
    """The starter text for `path`; its modeline points at the schema file evalspec carries,
    relative to where the suite is written (absolute across drives)."""
    from evalspec._util.schemas import schema_file

    schema = schema_file()
    try:
        rel = os.path.relpath(schema, path.resolve().parent)
    except ValueError:
        rel = str(schema)
    return _TEMPLATE.format(schema=rel, name=path, stem=path.stem.replace("-", "_"))
