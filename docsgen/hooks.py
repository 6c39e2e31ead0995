"""MkDocs hooks (mkdocs.yml `hooks:`): the generated suite reference, and the site's offline
promise.

`on_files` adds reference/suite.md, written from schemas/suite.schema.json at each build, so
the reference cannot drift from the language; `on_page_markdown` shows the report's
screenshots that exist; `on_post_build` puts the Content-Security-Policy first in every page
(docsgen/csp.py: the browser fetches nothing from another host, whatever a page holds), then
fails the build naming file, line, element and attribute of anything that would load from or go
to another host, or run a script the theme and mkdocs.yml did not ship
(docsgen/offline_check.py). `mkdocs serve` leaves the policy out: its live reload is an inline
script of its own; the check runs all the same.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# MkDocs loads this file by path; the repository root makes `docsgen` importable from here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from docsgen import csp, offline_check
from docsgen.screenshots import fill_marker
from docsgen.suite_reference import DECLARATIONS, load_schema, render

SUITE_REFERENCE_PAGE = "reference/suite.md"
PAGE_SUFFIXES = (".html", ".htm")
SHOWN = 200  # problems listed when the build fails

# Set by the build's earlier events for on_post_build, which is given only the config.
_build: dict[str, Any] = {"serve": False, "trusted": None}


def on_startup(command: str, dirty: bool) -> None:
    _build["serve"] = command == "serve"


def on_files(files: Files, config: Any) -> Files:
    files.append(
        File.generated(
            config, SUITE_REFERENCE_PAGE, content=render(load_schema(fresh=_build["serve"]))
        )
    )
    return files


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    server.watch(str(DECLARATIONS))  # `mkdocs serve` rebuilds when a declaration changes
    return server


def on_env(env: Any, config: Any, files: Files) -> Any:
    """What the site may run, once every file is known: the theme's scripts and mkdocs.yml's
    `extra_javascript`, never a script from docs/ that mkdocs.yml does not name."""
    docs = Path(config["docs_dir"]).resolve()
    named = {str(script) for script in config["extra_javascript"]}
    scripts = {
        f.dest_uri
        for f in files
        if f.abs_src_path is None
        or not Path(f.abs_src_path).resolve().is_relative_to(docs)
        or f.src_uri in named
    }
    prefix = urlsplit(config["site_url"] or "/").path or "/"
    _build["trusted"] = offline_check.Trusted(
        scripts=offline_check.script_files(scripts),
        inline=csp.theme_scripts(config["theme"].dirs),
        prefix=prefix if prefix.endswith("/") else prefix + "/",
    )
    return env


def on_post_build(config: Any) -> None:
    site = Path(config["site_dir"])
    trusted = _build["trusted"]
    if not _build["serve"]:
        for page in sorted(site.rglob("*")):
            if page.suffix.lower() in PAGE_SUFFIXES and page.is_file():
                text = page.read_text(encoding="utf-8", errors="replace")
                page.write_text(csp.protect(text, trusted.inline), encoding="utf-8")
    found = offline_check.check_site(site, trusted)
    if found:
        listed = "\n  ".join(found[:SHOWN])
        more = f"\n  ... and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
        raise PluginError(
            "the site could load from or go to another host, or run a script the theme did not "
            f"ship (it must read offline):\n  {listed}{more}"
        )


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """The report's screenshots where a page asks for them, whichever exist."""
    depth = page.file.src_uri.count("/")
    return fill_marker(markdown, Path(config["docs_dir"]), depth=depth)
