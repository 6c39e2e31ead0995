"""The docs site's offline check and its Content-Security-Policy, without a browser or MkDocs.

docsgen/offline_check.py must refuse every way a page or its CSS can load from, or go to,
another host, naming the file, line, element and attribute; docsgen/csp.py must put a policy
first in every page that lets only the theme's own inline scripts run. What a browser makes of
the two is in tests/test_docs_browser.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docsgen import csp
from docsgen.offline_check import Trusted, check_markup, check_site, css_urls, leaves_site

OTHER = "http://127.0.0.1:9"  # another host (another origin: another port)
THEME_SCRIPT = '<script>__md_scope=new URL("{{ base_url }}",location)</script>'
TRUSTED = Trusted(
    scripts=frozenset({"assets/javascripts/bundle.js"}),
    inline=(re.compile(r'__md_scope=new URL\("(?:\.\.?(?:/\.\.)*)",location\)'),),
)

# (what, the page's markup, what the check must say about it). The six of issue 32 first, then
# more of the same class: every attribute, CSS form and evasion that once reached another host.
ATTACKS = [
    ("a ping", f'<a href="../" ping="{OTHER}/ping">x</a>', f'<a ping> "{OTHER}/ping"'),
    (
        "svg xlink:href",
        f'<svg><image xlink:href="{OTHER}/x.png" width="9"/></svg>',
        f'<image xlink:href> "{OTHER}/x.png"',
    ),
    ("table background", f'<table background="{OTHER}/t.png">', f'<table background> "{OTHER}/t'),
    (
        "css image-set",
        f"<div style='background-image: image-set(\"{OTHER}/i.png\" 1x)'></div>",
        f'<div style> image-set() "{OTHER}/i.png"',
    ),
    (
        "meta refresh",
        f'<meta http-equiv="refresh" content="0; url={OTHER}/refresh">',
        f'<meta http-equiv=refresh content> "{OTHER}/refresh"',
    ),
    (
        "inline script",
        f'<script>fetch("{OTHER}/inline")</script>',
        "<script>: inline script that is not one of the theme's",
    ),
    ("svg href", f'<svg><image href="{OTHER}/h.png"/></svg>', f'<image href> "{OTHER}/h.png"'),
    ("svg use", '<svg><use href="//127.0.0.1:9/u.svg#a"/></svg>', '<use href> "//127.0.0.1:9/u'),
    (
        "svg animation",
        f'<svg><image><set attributeName="href" to="{OTHER}/s.png"/></image></svg>',
        f'<set to> "{OTHER}/s.png"',
    ),
    ("svg fill", f'<svg><rect fill="url({OTHER}/p.svg#g)"/></svg>', "<rect fill> url()"),
    ("td background", f'<td background="{OTHER}/td.png">', f'<td background> "{OTHER}/td.png"'),
    ("img src", f'<img src="{OTHER}/img.png">', f'<img src> "{OTHER}/img.png"'),
    ("img srcset", f'<img srcset="a.png 1x, {OTHER}/2x.png 2x">', f'<img srcset> "{OTHER}/2x'),
    ("video poster", f'<video poster="{OTHER}/p.png"></video>', f'<video poster> "{OTHER}/p'),
    ("audio src", f'<audio src="{OTHER}/a.mp3"></audio>', f'<audio src> "{OTHER}/a.mp3"'),
    ("input image", f'<input type="image" src="{OTHER}/i.png">', f'<input src> "{OTHER}/i'),
    ("stylesheet", f'<link rel="stylesheet" href="{OTHER}/s.css">', f'<link href> "{OTHER}/s'),
    (
        "canonical and stylesheet",
        f'<link rel="canonical stylesheet" href="{OTHER}/c.css">',
        f'<link href> "{OTHER}/c.css"',
    ),
    (
        "preconnect",
        '<link rel="preconnect" href="https://fonts.gstatic.com">',
        '<link href> "https://fonts.gstatic.com"',
    ),
    ("preload", f'<link rel="preload" as="image" imagesrcset="{OTHER}/p.png 1x">', "<link imag"),
    ("script src", f'<script src="{OTHER}/s.js"></script>', f'<script src> "{OTHER}/s.js"'),
    (
        "script from docs/",
        '<script src="attack.js"></script>',
        "<script src> \"attack.js\" is not one of the theme's or mkdocs.yml's scripts",
    ),
    (
        "svg script from docs/",
        '<svg><script href="attack.txt"></script></svg>',
        "<script src> \"attack.txt\" is not one of the theme's or mkdocs.yml's scripts",
    ),
    (
        "refresh written with a reference",
        f'<meta http-equiv="&#82;efresh" content="0;url={OTHER}/r">',
        f'<meta http-equiv=refresh content> "{OTHER}/r"',
    ),
    (
        "style @import",
        f'<style>@import "{OTHER}/import.css";</style>',
        f'<style> @import "{OTHER}/import.css"',
    ),
    (
        "style url",
        f"<style>\n.a {{ background: url({OTHER}/u.png) }}\n</style>",
        f'page.html:3: <style> url() "{OTHER}/u.png"',  # its line, under the doctype
    ),
    (
        "style -webkit-image-set",
        f'<style>.a{{background:-webkit-image-set("{OTHER}/w.png" 1x)}}</style>',
        f'-webkit-image-set() "{OTHER}/w.png"',
    ),
    (
        "css custom property",
        f'<style>.a{{--x:"{OTHER}/var.png"}} .b{{background:image-set(var(--x) 1x)}}</style>',
        f'<style> string "{OTHER}/var.png"',
    ),
    ("iframe", '<iframe srcdoc="<img src=x>"></iframe>', "<iframe>: frames and plugins"),
    ("object", f'<object data="{OTHER}/o.svg"></object>', f'<object data> "{OTHER}/o.svg"'),
    ("embed", '<embed src="local.svg">', "<embed>: frames and plugins"),
    ("base", f'<base href="{OTHER}/">', "<base>: a base address"),
    ("form", f'<form action="{OTHER}/f"></form>', f'<form action> "{OTHER}/f"'),
    ("formaction", f'<button formaction="{OTHER}/b">', f'<button formaction> "{OTHER}/b"'),
    ("event handler", '<img src="x.png" onerror="fetch(1)">', "<img onerror>: an event handler"),
    ("javascript url", '<a href="javascript:fetch(1)">x</a>', '<a href> "javascript:fetch(1)"'),
    ("data document", '<a href="data:text/html,hi">x</a>', '<a href> "data:text/html,hi"'),
    # Read as a browser reads them.
    ("backslashes", '<img src="/\\127.0.0.1:9/x.png">', '<img src> "/\\\\127.0.0.1:9/x.png"'),
    (
        "tab in scheme",
        '<img src="h&#9;ttp://127.0.0.1:9/t">',
        '<img src> "h\\tttp://127.0.0.1:9/t"',
    ),
    ("leading space", '<img src=" //127.0.0.1:9/x">', '<img src> " //127.0.0.1:9/x"'),
    ("upper case", f'<IMG SRC="{OTHER.upper()}/X">', f'<img src> "{OTHER.upper()}/X"'),
    ("unquoted", f"<img src={OTHER}/u.png>", f'<img src> "{OTHER}/u.png"'),
    ("css escape", f"<div style='background:u\\72l({OTHER}/e.png)'>", f'url() "{OTHER}/e.png"'),
    (
        "css escaped scheme",
        "<style>.a{background:url(ht\\74p://x.test/)}</style>",
        '"http://x.test/"',
    ),
    ("css comment", f"<style>@import/**/'{OTHER}/c.css';</style>", f'@import "{OTHER}/c.css"'),
    (
        "svg style entity",
        "<svg><style>@import '&#104;ttp://x.test/s.css';</style></svg>",
        '<style> @import "http://x.test/s.css"',
    ),
    (
        "refresh hidden from html.parser",
        f'<script>x</script x><meta http-equiv=refresh content="0;url={OTHER}/hidden"></script>',
        f'<meta http-equiv=refresh content> "{OTHER}/hidden"',
    ),
    (
        "refresh in a comment",
        '<!-- --!><meta http-equiv="Refresh" content="1, URL=\'//x.test/r\'"> -->',
        '<meta http-equiv=refresh content> "//x.test/r"',
    ),
]


@pytest.mark.parametrize(("markup", "said"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_the_check_refuses_each_way_off_the_site_naming_page_and_attribute(markup, said) -> None:
    found = check_markup(f"<!doctype html>\n{markup}\n", "page.html", TRUSTED)
    assert any(said in problem for problem in found), found
    assert all(re.match(r"page\.html:\d+: <", problem) for problem in found), found


def test_each_problem_is_named_once_at_its_line() -> None:
    page = "\r\n".join(markup for _, markup, _ in ATTACKS[:6])  # CR LF: lines as a browser counts
    found = check_markup(page, "attacks/index.html", TRUSTED)
    assert [p.split(": ", 1)[0] for p in found] == [f"attacks/index.html:{n}" for n in range(1, 7)]


ALLOWED = [
    '<a href="#top">top</a><a href="../other/">other</a><a href="?q=1">q</a>',
    '<img src="data:image/png;base64,AAAA"><img srcset="data:image/png;base64,AA 1x, b.png 2x">',
    '<link rel="canonical" href="https://docs.example.org/page/">',
    '<link rel="stylesheet" href="../assets/main.css"><link rel="icon" href="/favicon.png">',
    '<script src="../../assets/javascripts/bundle.js"></script>',
    '<script src="/assets/javascripts/bundle.js"></script>',
    '<script>__md_scope=new URL("../..",location)</script>',
    '<script id="__config" type="application/json">{"search": "https://x.test/"}</script>',
    '<div style="background: url(../img/x.svg)"></div><svg><use href="#icon"/></svg>',
    "<style>.a{content:'Note: x'} .b{mask-image:url('data:image/svg+xml,<svg/>')}</style>",
    '<pre><code>&lt;img src="https://x.test/"&gt; https://x.test/</code></pre>',
    '<meta http-equiv="refresh" content="30"><meta name="og:image" content="https://x.test/">',
]


@pytest.mark.parametrize("markup", ALLOWED)
def test_what_stays_on_the_site_passes(markup: str) -> None:
    assert check_markup(markup, "a/b/index.html", TRUSTED) == []


def test_only_the_themes_own_inline_scripts_pass() -> None:
    theme = '<script>__md_scope=new URL("..",location)</script>'
    assert check_markup(theme, "a/index.html", TRUSTED) == []
    for changed in (
        '<script>__md_scope=new URL("https://x.test/",location)</script>',
        '<script>__md_scope=new URL("..",location);fetch(1)</script>',
    ):
        assert check_markup(changed, "a/index.html", TRUSTED) != [], changed
    # In an SVG file or an XML file no policy applies: no inline script passes there.
    assert check_markup(theme, "images/x.svg", TRUSTED, is_page=False) != []


def test_a_url_leaves_the_site_as_a_browser_reads_it() -> None:
    assert all(
        leaves_site(url)
        for url in ("https://x", "//x", "\\\\x", "/\\x", " \x01//x", "h\nttps://x", "JAVASCRIPT:1")
    )
    assert not any(leaves_site(url) for url in ("x", "/x", "../x", "#x", "?x", "a/b:c", "%2F%2Fx"))
    assert leaves_site("data:image/png,x") and not leaves_site("data:image/png,x", data_ok=True)


def test_css_urls_are_found_by_tokenizing() -> None:
    css = (
        "a{background:url( 'https://x.test/a' )} @import url(//x.test/b);"
        "c{background:-webkit-image-set(url(c.png) 1x, 'https://x.test/c' 2x)}"
        "/* url(https://x.test/comment) */ d{background:url(ok.png)}"
        "e{font-family:'Note: x'; content:\"https://x.test/e\"}"
    )
    assert [(what, url) for _, what, url in css_urls(css)] == [
        ("url()", "https://x.test/a"),
        ("url()", "//x.test/b"),
        ("-webkit-image-set()", "https://x.test/c"),
        ("string", "https://x.test/e"),
    ]


def test_a_site_is_checked_file_by_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(
        f'<!doctype html>\n<link rel="stylesheet" href="sub/site.css">\n<img src="{OTHER}/i">\n',
        encoding="utf-8",
    )
    (tmp_path / "sub" / "site.css").write_text(
        "a{background:url(../img/x.svg)}\n@font-face{src:url(https://x.test/f.woff2)}",
        encoding="utf-8",
    )
    (tmp_path / "sub" / "x.svg").write_text("<svg><script>alert(1)</script></svg>", "utf-8")
    (tmp_path / "assets" / "javascripts").mkdir(parents=True)
    (tmp_path / "assets" / "javascripts" / "bundle.js").write_text("1", encoding="utf-8")
    (tmp_path / "extra.js").write_text("location='https://x.test/'", encoding="utf-8")
    found = check_site(tmp_path, TRUSTED)
    assert found == [
        "extra.js: a script the theme and mkdocs.yml did not ship",
        f'index.html:3: <img src> "{OTHER}/i" leaves the site',
        'sub/site.css:2: url() "https://x.test/f.woff2" leaves the site',
        "sub/x.svg:1: <script>: inline script that is not one of the theme's (the page's policy "
        'blocks it): "alert(1)"',
    ]


@pytest.mark.parametrize(
    ("page", "why"),
    [
        ('<a x="' * 30_000, "its tags are too long to read (unclosed quotes?)"),
        ("<style>" * 30_000, "its scripts and styles are too long to read (unclosed?)"),
        ("<script>" * 30_000, "its scripts and styles are too long to read (unclosed?)"),
    ],
)
def test_a_page_too_costly_to_read_is_refused_not_read_in_quadratic_time(page, why) -> None:
    assert check_markup(page, "page.html", TRUSTED) == [f"page.html: not checked: {why}"]
    assert "'sha256-" not in csp.policy(page, TRUSTED.inline)  # and none of its scripts runs


# ------------------------------------------------------------------------------------ policy

MATERIAL_HEAD = (
    '\n<!doctype html>\n<html lang="en" class="no-js">\n  <head>\n    \n'
    '      <meta charset="utf-8">\n      <meta name="viewport" content="width=device-width">\n'
)


@pytest.mark.parametrize(
    ("page", "before"),
    [
        (MATERIAL_HEAD, '<meta charset="utf-8">'),
        ("<!DOCTYPE html><html><head><title>t</title>", "<head>"),
        ("<!doctype html><head data-x='a>b'><link rel=stylesheet href=x.css>", "'a>b'>"),
        ("<!doctype html><html><link rel=stylesheet href=x.css><head>", "<html>"),
        ("<!doctype html><!-- c --><head>", "<!doctype html>"),
        ("<img src=x.png>", ""),
    ],
)
def test_the_policy_goes_before_anything_the_page_loads(page: str, before: str) -> None:
    protected = csp.protect(page, [])
    meta = csp.META.format(policy=csp.policy(page, []))
    assert protected.replace(meta, "", 1) == page
    assert protected.index(meta) == page.index(before) + len(before)
    assert csp.protect(protected, []) == protected  # a second build adds nothing


def test_the_policy_hashes_the_themes_inline_scripts_only(tmp_path: Path) -> None:
    (tmp_path / "partials").mkdir()
    (tmp_path / "partials" / "base.html").write_text(
        f"{THEME_SCRIPT}\n"
        '<script>{% if x %}var a=1{% endif %}</script><script src="{{ base_url }}/x.js"></script>'
        '<script id="__config" type="application/json">{{ config | tojson }}</script>',
        encoding="utf-8",
    )
    theme = csp.theme_scripts([tmp_path])
    assert len(theme) == 1
    for base in (".", "..", "../..", "/", "/docs/"):
        assert theme[0].fullmatch(f'__md_scope=new URL("{base}",location)'), base
    for other in ("https://x.test/", "//x.test/", '"+fetch(1)+"', "./../x"):
        assert not theme[0].fullmatch(f'__md_scope=new URL("{other}",location)'), other
    page = (
        '<head><script>__md_scope=new URL("..",location)</script></head><body>'
        '<script>fetch("https://x.test/")</script><script type="application/json">{}</script>'
    )
    policy = csp.policy(page, theme)
    assert policy.count("'sha256-") == 1
    assert csp.script_hash('__md_scope=new URL("..",location)') in policy
    assert "'unsafe-inline'" not in policy and "connect-src 'self'" in policy
