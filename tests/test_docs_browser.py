"""The docs site in a real browser: its Content-Security-Policy keeps every page from fetching
anything from another host, and the real site runs under it without a violation.

A small site is built with the project's hook and theme (a copy of mkdocs.yml, a page of
attacks), its pages served from one 127.0.0.1 server; the attacks point at a second server on
another port (another origin). With the hook's policy the second server hears nothing; built
without it (the control) it hears every attack: the policy is what blocks them. The offline
check, which would refuse these pages, is switched off for those two builds so the browser sees
what the policy alone does; a build with it on refuses them all, and a meta refresh, which no
policy governs, is its to stop.

Drives Debian's chromium through Playwright (conftest's `browser`); skipped with the reason when
the browser, Playwright or the docs extra (MkDocs, Material) is missing.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import ROOT

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("material", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from mkdocs.commands.build import build
from mkdocs.config import load_config

from docsgen import csp, offline_check

pytestmark = pytest.mark.slow

# The page of attacks: the six of issue 32 and more of their class, each to its own address on
# the other server ({other}), so the control shows each one is fetched.
ATTACKS_PAGE = """---
description: '"><script>new Image().src="{other}/front-matter.png"</script><meta x="'
---

# Attacks

<div class="attacks">
<a id="ping" href="./" ping="{other}/ping">a link with ping</a>
<svg width="9" height="9"><image width="9" height="9"
  xlink:href="{other}/svg-xlink-href.png"/></svg>
<svg width="9" height="9"><image href="{other}/svg-href.png" width="9" height="9"/></svg>
<table background="{other}/table-background.png"><tr><td>cell</td></tr></table>
<div style='width:9px;height:9px;background-image:image-set("{other}/image-set.png" 1x)'></div>
<script>fetch("{other}/inline-fetch").catch(() => 0);
new Image().src = "{other}/inline.png"</script>
<img src="{other}/img.png" alt="">
<img srcset="{other}/srcset.png 1x" alt="">
<video poster="{other}/poster.png"></video>
<input type="image" src="{other}/input.png" alt="">
<img src="missing.png" onerror="new Image().src='{other}/onerror.png'" alt="">
<link rel="stylesheet" href="{other}/link.css">
<script src="{other}/script.js"></script>
<link rel="stylesheet" href="../attack.css">
<div class="from-css">text in the page's web font</div>
<script src="../attack.js"></script>
<style>.from-style {{ background-image: url("{other}/style-url.png") }}</style>
<div class="from-style" style="width:9px;height:9px"></div>
<iframe srcdoc="<img src='{other}/srcdoc.png'>"></iframe>
<iframe src="{other}/iframe.html"></iframe>
<object data="{other}/object.svg"></object>
<embed src="{other}/embed.svg">
<audio src="{other}/audio.mp3" preload="auto"></audio>
<link rel="prefetch" href="{other}/prefetch">
<link rel="preload" as="image" href="{other}/preload.png">
</div>
"""
ATTACK_CSS = """.from-css {{ background-image: -webkit-image-set("{other}/css-image-set.png" 1x) }}
@font-face {{ font-family: Attack; src: url({other}/font.woff2) }}
.from-css {{ font-family: Attack }}
"""
ATTACK_JS = 'fetch("{other}/docs-script-fetch").catch(() => 0)\n'
BASE_PAGE = """# Base

<div><base href="{other}/based/"><img src="relative.png" alt=""></div>
"""
REFRESH_PAGE = """# Refresh

<div><meta http-equiv="refresh" content="0; url={other}/refresh"></div>
"""
PAGES = {
    "index.md": "# Test site\n\nA page with nothing in it.\n",
    "attacks.md": ATTACKS_PAGE,
    "attack.css": ATTACK_CSS,
    "attack.js": ATTACK_JS,
    "base.md": BASE_PAGE,
    "refresh.md": REFRESH_PAGE,
}
# What the control must see fetched (the page's own theme files come too, through `<base>`).
FETCHED = {
    "/front-matter.png", "/ping", "/svg-xlink-href.png", "/svg-href.png", "/table-background.png",
    "/image-set.png", "/inline-fetch", "/inline.png", "/img.png", "/srcset.png", "/poster.png",
    "/input.png", "/onerror.png", "/link.css", "/script.js", "/css-image-set.png", "/font.woff2",
    "/docs-script-fetch", "/style-url.png", "/srcdoc.png", "/iframe.html", "/object.svg",
    "/embed.svg", "/audio.mp3", "/prefetch", "/preload.png", "/based/relative.png",
}  # fmt: skip
VISITED = ("attacks/", "base/")


class _Recorder(http.server.BaseHTTPRequestHandler):
    """The other host: answers 404 to everything and keeps the path of every request."""

    heard: list[str]

    def do_GET(self) -> None:
        self.heard.append(self.path)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_HEAD = do_GET

    def log_message(self, *args: Any) -> None:
        pass


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def _serve(handler: Any) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="module")
def other() -> Iterator[tuple[str, list[str]]]:
    """The other host's address, and the paths it was asked for."""
    heard: list[str] = []
    server, address = _serve(type("Recorder", (_Recorder,), {"heard": heard}))
    yield address, heard
    server.shutdown()


def _write_project(root: Path, other: str) -> Path:
    """A copy of the docs' mkdocs.yml (theme, extensions, validation, the project's hook) over
    the attack pages; its path."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    for name, text in PAGES.items():
        (docs / name).write_text(text.format(other=other), encoding="utf-8")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config.pop("nav")  # every page, and the generated suite reference, in the navigation
    config |= {
        "docs_dir": str(docs),
        "site_dir": str(root / "site"),
        "hooks": [str(ROOT / "docsgen" / "hooks.py")],
        "plugins": ["search"],  # mkdocstrings renders the Python API page, not built here
    }
    # The generated suite reference links to pages this site does not have.
    config["validation"] |= {"not_found": "info", "anchors": "info"}
    path = root / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _build_unchecked(config_file: Path, *, policy: bool) -> Path:
    """The site built by the project's hook with the offline check off (and, for the control,
    the policy off too); the site's folder."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offline_check, "check_site", lambda site, trusted: [])
        if not policy:
            patch.setattr(csp, "protect", lambda page, theme: page)
        config = load_config(config_file=str(config_file))
        config.plugins.on_startup(command="build", dirty=False)
        try:
            build(config)
        finally:
            config.plugins.on_shutdown()
    return Path(config["site_dir"])


@pytest.fixture(scope="module")
def sites(tmp_path_factory, other) -> Iterator[dict[str, str]]:
    """The attack site built with the policy and without it (the control), each served from a
    127.0.0.1 server of its own: name -> address."""
    served = {}
    servers = []
    for name, policy in (("policy", True), ("control", False)):
        config_file = _write_project(tmp_path_factory.mktemp(name), other[0])
        site = _build_unchecked(config_file, policy=policy)
        server, served[name] = _serve(functools.partial(_Quiet, directory=str(site)))
        servers.append(server)
    yield served
    for server in servers:
        server.shutdown()


def _visit(browser: Any, address: str, pages: tuple[str, ...]) -> list[str]:
    """Open each page as a reader would (and click the link with a ping); the policy violations
    the browser reported."""
    context = browser.new_context()
    violations: list[str] = []
    page = context.new_page()
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    for path in pages:
        page.goto(f"{address}/{path}")
        page.wait_for_load_state("networkidle")
        if page.locator("#ping").count():
            page.click("#ping")
            page.wait_for_load_state("networkidle")
    context.close()
    return violations


def _heard_after(heard: list[str], wanted: set[str], seconds: float) -> set[str]:
    """What the other host was asked for, once it has heard all of `wanted` or `seconds` passed
    (a bound on waiting for requests already sent, not a measurement)."""
    deadline = time.monotonic() + seconds
    while not wanted <= set(heard) and time.monotonic() < deadline:
        time.sleep(0.05)
    return set(heard)


def test_with_the_policy_no_page_fetches_anything_from_another_host(browser, sites, other):
    _, heard = other
    heard.clear()
    violations = _visit(browser, sites["policy"], VISITED)
    # The control shows every request is sent by the time the pages are idle; wait a little
    # longer all the same, for a request the browser would still send.
    assert _heard_after(heard, {"never"}, 1.0) == set()
    assert any("Content Security Policy" in v for v in violations)  # blocked, not absent


def test_without_the_policy_the_same_pages_fetch_from_the_other_host(browser, sites, other):
    """The control: the pages do reach the other host, so the policy is what stops them."""
    _, heard = other
    heard.clear()
    _visit(browser, sites["control"], VISITED)
    assert _heard_after(heard, FETCHED, 15.0) >= FETCHED


def test_a_meta_refresh_is_not_the_policys_to_stop_but_the_checks(browser, sites, other):
    """No policy governs where a page refreshes to: the build's check is what refuses it."""
    _, heard = other
    heard.clear()
    _visit(browser, sites["policy"], ("refresh/",))
    assert "/refresh" in _heard_after(heard, {"/refresh"}, 15.0)


def test_the_build_refuses_every_attack_naming_page_and_attribute(tmp_path, other):
    config_file = _write_project(tmp_path, other[0])
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config_file)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=120,
    )
    assert result.returncode != 0
    said = result.stderr
    for named in (
        r"attacks/index\.html:\d+: <a ping> \"http://",
        r"attacks/index\.html:\d+: <image xlink:href> \"http://",
        r"attacks/index\.html:\d+: <table background> \"http://",
        r"attacks/index\.html:\d+: <div style> image-set\(\) \"http://",
        r"attacks/index\.html:\d+: <script>: inline script that is not one of the theme's",
        r"refresh/index\.html:\d+: <meta http-equiv=refresh content> \"http://",
        r"base/index\.html:\d+: <base>: a base address",
        r"attacks/index\.html:\d+: <img onerror>: an event handler",
        r"attacks/index\.html:\d+: <script src> \"\.\./attack\.js\" is not one of the theme's",
        r"attack\.js: a script the theme and mkdocs\.yml did not ship",
        r"attack\.css:1: -webkit-image-set\(\) \"http://",
    ):
        assert re.search(named, said), f"{named} not in:\n{said}"


# ------------------------------------------------------------------------------ the real site

REAL_PAGES = ("", "reference/suite/", "how-to/compare/", "reference/python-api/", "404.html")


@pytest.fixture(scope="module")
def real_site(tmp_path_factory) -> Iterator[tuple[Path, str]]:
    """The documentation as .ci/run builds it, served; its folder and address."""
    pytest.importorskip("mkdocstrings", reason="the docs extra is not installed")
    site = tmp_path_factory.mktemp("real") / "site"
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    server, address = _serve(functools.partial(_Quiet, directory=str(site)))
    yield site, address
    server.shutdown()


def test_every_real_page_carries_the_policy_first_in_its_head(real_site):
    site, _ = real_site
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        text = page.read_text(encoding="utf-8")
        at = text.find('<meta http-equiv="Content-Security-Policy"')
        assert 0 < at == csp.insertion_point(text) < 1024 - 300, page  # charset stays in 1 KB
        assert "'unsafe-inline'" not in text[at : text.find(">", at)]


def test_the_real_site_runs_under_its_policy_without_a_violation(browser, real_site):
    _, address = real_site
    context = browser.new_context()
    page = context.new_page()
    said: list[str] = []
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => console.error("
        "'violation', e.violatedDirective, e.blockedURI, e.sourceFile, e.lineNumber))"
    )
    page.on("console", lambda m: said.append(f"{m.type}: {m.text}") if m.type != "log" else None)
    page.on("pageerror", lambda e: said.append(f"error: {e}"))
    for path in REAL_PAGES:
        page.goto(f"{address}/{path}")
        page.wait_for_load_state("networkidle")
        # The theme's inline scripts ran (their hashes are in the policy), its bundle ran, and
        # its stylesheet applies.
        assert page.evaluate("typeof __md_get") == "function", path
        assert "js" in page.evaluate("document.documentElement.className").split(), path
        header = page.evaluate("getComputedStyle(document.querySelector('.md-header')).position")
        assert header == "sticky", path
    page.goto(f"{address}/")
    page.wait_for_load_state("networkidle")
    results = page.locator(".md-search-result__item")
    page.click("input.md-search__input")
    page.keyboard.type("judge", delay=20)  # as a reader types: the theme listens for keys
    deadline = time.monotonic() + 20  # a bound on the worker's indexing, not a measurement
    while not results.count() and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert results.count() > 0, "search found nothing"
    context.close()
    assert said == []
