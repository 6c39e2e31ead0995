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


SCHEMA_COPY = Path("schemas") / "suite.schema.json"
"""Where in a project its copy of the suite schema lives (as in evalspec's own repository)."""


def project_schema(suite: Path, cwd: Path | None = None) -> Path:
    """The project's copy of the suite schema for a suite written at `suite`: a
    `schemas/suite.schema.json` that exists already in the suite's folder or a folder above it
    inside the project, else one in the project folder. The project folder is the current one
    when the suite is inside it, else the suite's own folder."""
    here = (cwd or Path.cwd()).resolve()
    folder = suite.resolve().parent
    project = here if folder.is_relative_to(here) else folder
    for candidate in (folder, *folder.parents):
        if (candidate / SCHEMA_COPY).is_file():
            return candidate / SCHEMA_COPY
        if candidate == project:
            break
    return project / SCHEMA_COPY


def write_project_schema(target: Path) -> bool:
    """Make `target` a copy of the suite schema evalspec carries; False when it is one
    already. A file there that is not evalspec's suite schema is left alone (UsageError)."""
    import json

    from evalspec._util.errors import UsageError
    from evalspec._util.files import write_text_atomic
    from evalspec._util.schemas import schema_file

    text = schema_file().read_text(encoding="utf-8")
    if target.is_file():
        old = target.read_text(encoding="utf-8", errors="replace")
        if old == text:
            return False
        try:
            ours = json.loads(old).get("$id") == json.loads(text)["$id"]
        except (ValueError, AttributeError):
            ours = False
        if not ours:
            raise UsageError(
                f"{target} exists and is not evalspec's suite schema; move it away, and "
                "`evalspec init` writes the schema there for editors"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, text)
    return True


def starter_suite(path: Path, schema: Path | None = None) -> str:
    """The starter text for `path`; its modeline points at `schema` (default: the project's
    copy, `project_schema`) relative to the suite, so it still resolves once the project folder
    is shared or moved (a path into evalspec's installation would not)."""
    target = schema or project_schema(path)
    try:
        rel = Path(os.path.relpath(target, path.resolve().parent)).as_posix()
    except ValueError:  # another drive
        rel = target.as_posix()
    return _TEMPLATE.format(schema=rel, name=path, stem=path.stem.replace("-", "_"))
