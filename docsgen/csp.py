"""The Content-Security-Policy of every built page: whatever a page holds, the browser fetches
nothing from another host.

The policy allows the site's own files ('self') and `data:` images, blocks frames, plugins and
form submissions, and lets only the theme's own inline scripts run: Material writes a few small
scripts into each page (the storage helpers, the palette, the tabbed-content anchor), and each is
allowed by the hash of its text, computed at build time from what the page holds. Which inline
scripts are the theme's is read from the theme's templates (every `<script>` without `src` in
them, whatever page they end up on): their text, with each `{{ ... }}` standing for the page's
base address (`.`, `../..`, `/`). A script a page brings in any other way (Markdown, a page's
front matter) has no hash in the policy, and does not run.

A policy given in a `<meta>` element applies to what comes after it, so it goes first in
`<head>` (after a leading `<meta charset>`, which must stay within the page's first 1024 bytes);
the browser enforces it on everything the page, its stylesheets and its scripts load. It does
not govern a `<meta http-equiv="refresh">` or a script that navigates: docsgen/offline_check.py
refuses those when the site is built.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

from docsgen.offline_check import Markup, Tag, read_tag

DIRECTIVES = (
    "default-src 'self'",
    "script-src 'self'{hashes}",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",  # fetch, XMLHttpRequest, WebSocket, and `<a ping>`
    "worker-src 'self'",  # the search worker
    "frame-src 'none'",
    "object-src 'none'",
    "form-action 'none'",
    "base-uri 'self'",
)
META = '<meta http-equiv="Content-Security-Policy" content="{policy}">'

# What a template's `{{ ... }}` may stand for in an inline script: a page's base address, as
# MkDocs gives it (`.`, `..`, `../..`; `/` or site_url's path on the 404 page). Nothing that
# could end a string, call a function or name another host.
_BASE_ADDRESS = r"(?:\.\.?(?:/\.\.)*|(?:/[A-Za-z0-9._~%-]+)*/)"
_EXPRESSION = re.compile(r"\{\{.*?\}\}", re.DOTALL)


def theme_scripts(template_dirs: Iterable[str | Path]) -> tuple[re.Pattern[str], ...]:
    """A pattern of the text of each inline script in the theme's templates (`.html` files of
    `config.theme.dirs`). A script with Jinja statements, comments or white-space control in it
    gives none: its text cannot be told in advance, so it does not run."""
    patterns: dict[str, re.Pattern[str]] = {}
    for folder in template_dirs:
        for path in sorted(Path(folder).rglob("*.html")):
            try:
                scripts = Markup(path.read_text(encoding="utf-8", errors="replace"))
                found = scripts.inline_scripts()
            except ValueError:
                continue  # a template too costly to read: its scripts do not run
            for _tag, body in found:
                if any(mark in body for mark in ("{%", "{#", "{{-", "-}}")):
                    continue
                pattern = _BASE_ADDRESS.join(re.escape(part) for part in _EXPRESSION.split(body))
                patterns.setdefault(pattern, re.compile(pattern, re.DOTALL))
    return tuple(patterns.values())


def script_hash(text: str) -> str:
    """A CSP hash source of a script's text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def policy(page: str, theme: Iterable[re.Pattern[str]]) -> str:
    """The policy of one page: its inline scripts that are the theme's may run."""
    theme = tuple(theme)
    try:
        scripts = Markup(page).inline_scripts()
    except ValueError:
        scripts = []  # a page too costly to read: none of its scripts runs (the check refuses it)
    hashes = sorted(
        {script_hash(body) for _tag, body in scripts if any(p.fullmatch(body) for p in theme)}
    )
    return "; ".join(DIRECTIVES).format(hashes="".join(f" {h}" for h in hashes))


def protect(page: str, theme: Iterable[re.Pattern[str]]) -> str:
    """The page with its policy first in its `<head>`."""
    meta = META.format(policy=policy(page, theme))
    at = insertion_point(page)
    if page.startswith(meta, at):  # built before (`mkdocs build --dirty`): already there
        return page
    return page[:at] + meta + page[at:]


def insertion_point(page: str) -> int:
    """Where the policy goes: after the doctype, the `<html>` and `<head>` start tags and a
    `<meta charset>` right after them; before anything else (a comment, text, any other tag: the
    browser then opens the head itself, with the policy in it)."""
    at = 1 if page.startswith("\ufeff") else 0
    i = _skip_space(page, at)
    if page[i : i + 9].lower() == "<!doctype":
        end = page.find(">", i)
        if end < 0:
            return i
        at = end + 1
    for name in ("html", "head"):
        tag = _start_tag(page, _skip_space(page, at), name)
        if tag is not None:
            at = tag.end
        elif name == "head":
            return at
    charset = _start_tag(page, _skip_space(page, at), "meta")
    if charset is not None and [key for key, _ in charset.attributes] == ["charset"]:
        return charset.end
    return at


def _skip_space(page: str, i: int) -> int:
    while i < len(page) and page[i] in "\t\n\f\r ":
        i += 1
    return i


def _start_tag(page: str, i: int, name: str) -> Tag | None:
    """The start tag `name` at i, if it is one and is closed."""
    if not re.match(r"<[A-Za-z]", page[i : i + 2]):
        return None
    tag = read_tag(page, i)
    return tag if tag.name == name and tag.closed else None
