"""MkDocs hooks (mkdocs.yml `hooks:`): the generated suite reference, and the offline check.

`on_files` adds reference/suite.md, written from schemas/suite.schema.json at each build, so
the reference cannot drift from the language; `on_page_markdown` shows the report's
screenshots that exist; `on_post_build` fails the build when a page would fetch anything from
another host.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# MkDocs loads this file by path; the repository root makes `docsgen` importable from here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from docsgen.offline_check import external_references
from docsgen.screenshots import fill_marker
from docsgen.suite_reference import SCHEMA_PATH, load_schema, render

SUITE_REFERENCE_PAGE = "reference/suite.md"


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, SUITE_REFERENCE_PAGE, content=render(load_schema())))
    return files


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    server.watch(str(SCHEMA_PATH))  # `mkdocs serve` rebuilds when the schema changes
    return server


def on_post_build(config: Any) -> None:
    found = external_references(Path(config["site_dir"]))
    if found:
        listed = "\n  ".join(found[:20])
        raise PluginError(
            f"the site would fetch from other hosts (it must read offline):\n  {listed}"
        )


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """The report's screenshots where a page asks for them, whichever exist."""
    depth = page.file.src_uri.count("/")
    return fill_marker(markdown, Path(config["docs_dir"]), depth=depth)
