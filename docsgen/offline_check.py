"""Find what a built site could load from another host: the docs must read offline.

This is the second of two layers. The first is the Content-Security-Policy that docsgen/csp.py
puts first in every page (what a page may fetch, enforced by the browser). A policy cannot stop
a `<meta http-equiv="refresh">` or a script the policy allows from leaving the site, and it says
nothing a build could print; so the build also reads every page and stylesheet, and names the
file, line, element and attribute of each:

- URL a page or its CSS can load or navigate to that leaves the site: every URL-bearing
  attribute (`href`, `xlink:href`, `src`, `srcset`, `ping`, `poster`, `background`, `action`,
  `formaction`, `data`, meta refresh `content`, ...), and in `style` attributes, `<style>` and
  .css files every `url()`, `image-set()` string, `@import` and any string that reads as an
  address on the network;
- script that is not the theme's: an inline `<script>` whose text is not one of the theme's
  templates' (docsgen/csp.py: the policy lets only those run), an event handler attribute
  (`onerror=`), a `<script src>` naming a file that is not the theme's or mkdocs.yml's, and a
  script file in the site that neither shipped;
- frames and plugins (`<iframe>`, `<object>`, `<embed>`), which the policy blocks, and
  `<base>`, which would change where every relative address goes.

A URL leaves the site when it has a scheme (`https:`, `mailto:`, `javascript:`; `data:` is
inline, and accepted where it can only be an image, font or style) or starts `//` once read as
a browser reads it: spaces and control codes trimmed, tabs and newlines dropped, `\\` as `/`.

Markup is read pessimistically, not with a tree builder: every `<` followed by a letter opens a
tag, read attribute by attribute as the HTML tokenizer does, wherever it sits (in a comment, a
script, a `<textarea>`). A parser's idea of where markup is can differ from a browser's (Python's
html.parser ends a script only at `</script>`, a browser at `</script ` too, so
`<script></script x><meta http-equiv=refresh ...>` hid the refresh from it); every tag a browser
can see is among the tags read here. CSS is read by a tokenizer after CSS Syntax Level 3
(escapes, comments, strings, `url(` tokens), so `u\\72l(`, `/**/` or an escaped scheme read as
the browser reads them.
"""

from __future__ import annotations

import bisect
import html
import json
import posixpath
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

# What a browser treats as a page, and what it reads as a stylesheet or script, by file name.
MARKUP_SUFFIXES = {".html", ".htm", ".xhtml", ".xht", ".svg", ".xml", ".xsl", ".xslt"}
SCRIPT_SUFFIXES = {".js", ".mjs", ".cjs"}

# Attributes whose value is one URL (any element: an attribute the browser ignores on one
# element is still checked). `*:href` (SVG's `xlink:href`) is matched by its ending.
_URL_ATTRIBUTES = {
    "href", "src", "action", "formaction", "poster", "background", "data", "codebase",
    "archive", "cite", "longdesc", "lowsrc", "dynsrc", "manifest", "profile", "classid", "icon",
    "usemap",
}  # fmt: skip
# Attributes whose value is a list of URLs: separated by white space, or a srcset.
_URL_LIST_ATTRIBUTES = {"ping"}
_SRCSET_ATTRIBUTES = {"srcset", "imagesrcset"}
# SVG presentation attributes that take a CSS `url(...)` value; `style` is all CSS.
_CSS_ATTRIBUTES = {
    "fill", "stroke", "filter", "mask", "clip-path", "marker", "marker-start", "marker-mid",
    "marker-end", "cursor",
}  # fmt: skip
# SVG animation sets an attribute (`<set attributeName="href" to="...">`): its values are URLs.
_ANIMATION_ELEMENTS = {"set", "animate", "animatemotion", "animatetransform", "animatecolor"}
_ANIMATION_VALUES = {"to", "from", "by", "values"}
# Elements the policy blocks (frame-src 'none', object-src 'none').
_FRAMES = {"iframe", "frame", "frameset", "object", "embed", "applet", "portal", "fencedframe"}
# `data:` can only be an image, video frame or font here, never a document or a script.
_DATA_OK_ELEMENTS = {"img", "source", "picture", "video", "audio", "track", "input", "image"}
_DATA_OK_ATTRIBUTES = {"src", "srcset", "imagesrcset", "poster", "background", "lowsrc", "href"}
# Script types that are data, never run (HTML's data blocks); any other type counts as script.
_DATA_BLOCK_TYPES = {"application/json", "application/ld+json"}
# `<link rel>` values that name an address without fetching it.
_NOT_FETCHED_RELS = {"canonical"}

_WHITESPACE = "\t\n\f\r "
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_TAG_START = re.compile(r"<[A-Za-z?]")
_SCRIPT_END = re.compile(r"</script[\t\n\f\r />]", re.IGNORECASE)
_STYLE_END = re.compile(r"</style[\t\n\f\r />]", re.IGNORECASE)
# A page whose tags take more reading than this (unclosed quotes everywhere) is refused rather
# than read in quadratic time.
_WORK_PER_CHARACTER = 3
_WORK_FLOOR = 200_000


@dataclass(frozen=True)
class Trusted:
    """What the site may run: the scripts a `<script src>` may name (paths in the site, from the
    theme or mkdocs.yml), the theme's inline scripts (patterns of their text; docsgen/csp.py),
    and the path the site is served under (`/`, or site_url's path)."""

    scripts: frozenset[str]
    inline: tuple[re.Pattern[str], ...] = ()
    prefix: str = "/"


@dataclass(frozen=True)
class Tag:
    name: str
    attributes: tuple[tuple[str, str], ...]  # as written (duplicates kept), raw values
    start: int
    end: int  # after its `>` (the end of the text when it never closes)
    closed: bool = True

    def values(self, name: str) -> list[str]:
        return [value for key, value in self.attributes if key == name]


@dataclass
class _Report:
    where: str
    lines: list[int]
    found: list[str] = field(default_factory=list)

    def add(self, offset: int, what: str) -> None:
        line = bisect.bisect_right(self.lines, offset) + 1
        self.found.append(f"{self.where}:{line}: {what}")


# --------------------------------------------------------------------------------------- URLs


def _browser_form(url: str) -> str:
    """The URL as a browser's URL parser starts reading it."""
    url = url.strip("".join(chr(c) for c in range(0x21)))
    return re.sub(r"[\t\n\r]", "", url).replace("\\", "/")


def leaves_site(url: str, *, data_ok: bool = False) -> bool:
    """Whether `url`, on a page of the site, names something on another host (or runs script).

    A relative path, an absolute path, `?query` and `#fragment` stay on the site; a scheme or a
    leading `//` does not. `data:` counts as inline only where `data_ok` says it can only be an
    image, font or style."""
    url = _browser_form(url)
    scheme = _SCHEME.match(url)
    if scheme:
        return not (data_ok and scheme.group().lower() == "data:")
    return url.startswith("//")


def _show(value: str) -> str:
    value = value if len(value) <= 160 else value[:160] + "..."
    return json.dumps(value)


def _variants(value: str) -> list[str]:
    """A value with its character references decoded, and as written (browsers decode them, with
    rules of their own for a reference without `;`: both readings are checked)."""
    decoded = html.unescape(value)
    return [value] if decoded == value else [decoded, value]


def _srcset_urls(value: str) -> list[str]:
    """The URLs of a srcset, as HTML's srcset parser finds them, and every white-space- or
    comma-separated token besides (a token that is not a URL to the parser is still read)."""
    urls: list[str] = []
    i, n = 0, len(value)
    while True:
        while i < n and (value[i] in _WHITESPACE or value[i] == ","):
            i += 1
        if i >= n:
            break
        start = i
        while i < n and value[i] not in _WHITESPACE:
            i += 1
        url = value[start:i]
        if url.endswith(","):
            urls.append(url.rstrip(","))
            continue
        urls.append(url)
        depth = 0  # the descriptors, up to a comma outside parentheses
        while i < n:
            c = value[i]
            if c == "(":
                depth += 1
            elif c == ")" and depth:
                depth -= 1
            elif c == "," and not depth:
                i += 1
                break
            i += 1
    return urls + [t for t in re.split(r"[\s,]+", value) if t]


def _refresh_url(content: str) -> str | None:
    """The address a meta refresh goes to (HTML's shared declarative refresh steps), "" for the
    page itself, None when the browser would not refresh."""
    delay = re.match(r"[\t\n\f\r ]*([0-9]*)([0-9.]*)", content)
    assert delay is not None  # both groups may be empty
    if not delay.group(1) and not delay.group(2).startswith("."):
        return None
    text = content[delay.end() :]
    if not text:
        return ""
    if text[0] not in ";," + _WHITESPACE:
        return None
    text = text.lstrip(_WHITESPACE)
    text = text[1:] if text[:1] in (";", ",") else text
    text = text.lstrip(_WHITESPACE)
    for letter in "url":  # then `=`: each one optional, as HTML reads it
        if text[:1].lower() != letter:
            break
        text = text[1:]
    else:
        text = text.lstrip(_WHITESPACE)
        if text.startswith("="):
            text = text[1:].lstrip(_WHITESPACE)
    if text[:1] in ("'", '"'):
        text = text[1:].split(text[0], 1)[0]
    return text


def resolve(page: str, url: str, prefix: str = "/") -> str | None:
    """The site path (`assets/x.js`) a same-site URL on page `page` (`a/b/index.html`) names, or
    None when it falls outside the site (above `prefix`, the path the site is served under)."""
    url = _browser_form(url).split("#", 1)[0].split("?", 1)[0]
    path = unquote(url)
    if path.startswith("/"):
        if not path.startswith(prefix):
            return None
        joined = path[len(prefix) :]
    else:
        joined = posixpath.join(posixpath.dirname(page), path)
    parts: list[str] = []
    for part in joined.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


# ------------------------------------------------------------------------------------- markup


def _ascii_lower(text: str) -> str:
    return text.translate(_LOWER)


_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def read_tag(text: str, i: int) -> Tag:
    """The start tag at text[i] (`<` and a letter, or `<?` for an XML processing instruction),
    tokenized as HTML's tag open, tag name and attribute states do."""
    n = len(text)
    k = i + 1
    while k < n and text[k] not in "\t\n\f\r />":
        k += 1
    name = _ascii_lower(text[i + 1 : k])
    attributes: list[tuple[str, str]] = []
    while True:
        while k < n and (text[k] in _WHITESPACE or text[k] == "/"):
            k += 1  # before attribute name, or a `/` that does not end the tag
        if k >= n:
            return Tag(name, tuple(attributes), i, n, closed=False)
        if text[k] == ">":
            return Tag(name, tuple(attributes), i, k + 1)
        start = k
        k += 1  # the first character belongs to the name, even `=`
        while k < n and text[k] not in "\t\n\f\r />=":
            k += 1
        key = _ascii_lower(text[start:k])
        while k < n and text[k] in _WHITESPACE:
            k += 1
        value = ""
        if k < n and text[k] == "=":
            k += 1
            while k < n and text[k] in _WHITESPACE:
                k += 1
            if k < n and text[k] in "\"'":
                close = text.find(text[k], k + 1)
                if close < 0:
                    attributes.append((key, text[k + 1 :]))
                    return Tag(name, tuple(attributes), i, n, closed=False)
                value, k = text[k + 1 : close], close + 1
            else:
                start = k
                while k < n and text[k] not in "\t\n\f\r >":
                    k += 1
                value = text[start:k]
        attributes.append((key, value))


class Markup:
    """A page (or SVG or XML file) read as the module's docstring says: its start tags, and the
    text of its `<script>` and `<style>` elements. Newlines are normalized first, as an HTML
    parser does (CR LF and CR as LF). Reading more than a few times the page's length (unclosed
    quotes and elements everywhere) raises ValueError: such a page is refused, not read in
    quadratic time."""

    def __init__(self, text: str) -> None:
        self.text = text.replace("\r\n", "\n").replace("\r", "\n")
        self._budget = _WORK_FLOOR + _WORK_PER_CHARACTER * len(self.text)
        self._ends: dict[str, list[int]] = {}
        self.tags = [
            self._spend(read_tag(self.text, m.start())) for m in _TAG_START.finditer(self.text)
        ]

    def _spend(self, tag: Tag) -> Tag:
        self._budget -= tag.end - tag.start
        if self._budget < 0:
            raise ValueError("its tags are too long to read (unclosed quotes?)")
        return tag

    def element_text(self, tag: Tag) -> str:
        """The text of a `<script>` or `<style>`: up to its end tag, as a browser ends it."""
        if tag.name not in self._ends:
            end = _SCRIPT_END if tag.name == "script" else _STYLE_END
            self._ends[tag.name] = [m.start() for m in end.finditer(self.text)]
        ends = self._ends[tag.name]
        at = bisect.bisect_left(ends, tag.end)
        body = self.text[tag.end : ends[at] if at < len(ends) else len(self.text)]
        self._budget -= len(body)
        if self._budget < 0:
            raise ValueError("its scripts and styles are too long to read (unclosed?)")
        return body

    def inline_scripts(self) -> list[tuple[Tag, str]]:
        """Every `<script>` that runs and has no `src`, with its text."""
        return [
            (tag, self.element_text(tag))
            for tag in self.tags
            if tag.name == "script" and not _sources(tag) and is_script_block(tag)
        ]


def is_script_block(tag: Tag) -> bool:
    """Whether a `<script>` runs (or is read by the browser as rules, as importmap and
    speculationrules are): anything but a data block."""
    types = [_ascii_lower(t.strip()) for t in tag.values("type")]
    return not types or not all(t in _DATA_BLOCK_TYPES for t in types)


def _sources(tag: Tag) -> list[str]:
    """Where a script element loads its code from: HTML's `src`, SVG's `href` or `xlink:href`."""
    return [v for k, v in tag.attributes if k in ("src", "href") or k.endswith(":href")]


def check_markup(text: str, where: str, trusted: Trusted, *, is_page: bool = True) -> list[str]:
    """`where:line: what` for everything in one page (or SVG or XML file) that could load from,
    or go to, another host, or run a script that is not the theme's (`is_page`: a page the
    policy is put in; no inline script passes elsewhere)."""
    try:
        markup = Markup(text)
        report = _Report(where, [m.start() for m in re.finditer("\n", markup.text)])
        for tag in markup.tags:
            _check_tag(markup, tag, report, trusted, is_page=is_page)
    except ValueError as exc:
        return [f"{where}: not checked: {exc}"]
    return report.found


def _check_tag(
    markup: Markup, tag: Tag, report: _Report, trusted: Trusted, *, is_page: bool
) -> None:
    name = tag.name
    shown = f"<{name}>"
    if name in _FRAMES:
        report.add(
            tag.start, f"{shown}: frames and plugins are not allowed (the policy blocks them)"
        )
    if name == "base":
        report.add(tag.start, f"{shown}: a base address would move every relative link")
    if name == "style":
        raw = markup.element_text(tag)
        for css in _variants(raw):
            found = css_urls(css)
            for offset, what, url in found:
                at = tag.end + offset if css is raw else tag.start
                report.add(at, f"{shown} {what} {_show(url)} leaves the site")
            if found:
                break
    if name == "script":
        _check_script(markup, tag, report, trusted, is_page=is_page)
    for key, raw in tag.attributes:
        if key.startswith("on"):
            report.add(tag.start, f"<{name} {key}>: an event handler is inline script")
            continue
        for value in _variants(raw):
            urls = _attribute_urls(tag, key, value)
            for what, url in urls:
                report.add(tag.start, f"{what} {_show(url)} leaves the site")
            if urls:
                break  # the decoded value's, else the raw value's


def _attribute_urls(tag: Tag, key: str, value: str) -> list[tuple[str, str]]:
    """(what, url) for each URL in one attribute's value that leaves the site."""
    name = tag.name
    where = f"<{name} {key}>"
    data_ok = name in _DATA_OK_ELEMENTS and (key in _DATA_OK_ATTRIBUTES or key.endswith(":href"))
    urls: list[str] = []
    if key in _URL_ATTRIBUTES or key.endswith(":href"):
        rels = {_ascii_lower(t) for v in tag.values("rel") for t in v.split()}
        if name == "link" and key == "href" and rels and rels <= _NOT_FETCHED_RELS:
            return []  # the page's own address (`mkdocs serve` sets one): never fetched
        urls = [value]
    elif key in _SRCSET_ATTRIBUTES:
        urls, data_ok = _srcset_urls(value), True
    elif key in _URL_LIST_ATTRIBUTES:
        urls = value.split()
    elif key == "content" and any(
        _ascii_lower(v.strip()) == "refresh"
        for raw in tag.values("http-equiv")
        for v in _variants(raw)
    ):
        where = f"<{name} http-equiv=refresh content>"
        target = _refresh_url(value)
        urls = [target] if target else []
        urls += re.split(r"[\s;,='\"]+", value)  # what a reading other than HTML's would see
    elif key == "value" and name == "param":
        urls = [value]
    elif key in _ANIMATION_VALUES and name in _ANIMATION_ELEMENTS:
        urls = value.split(";")
    elif key == "style" or key in _CSS_ATTRIBUTES:
        return [(f"{where} {what}", url) for _, what, url in css_urls(value)]
    return [(where, url) for url in dict.fromkeys(urls) if leaves_site(url, data_ok=data_ok)]


def _check_script(
    markup: Markup, tag: Tag, report: _Report, trusted: Trusted, *, is_page: bool
) -> None:
    # An HTML script's `src`, an SVG script's `href` or `xlink:href`.
    sources = _sources(tag)
    for src in sources:
        for value in _variants(src):
            if leaves_site(value):
                break  # named by the attribute check
            if resolve(report.where, value, trusted.prefix) not in trusted.scripts:
                report.add(
                    tag.start,
                    f"<script src> {_show(value)} is not one of the theme's or mkdocs.yml's "
                    "scripts",
                )
                break
    if sources or not is_script_block(tag):
        return
    body = markup.element_text(tag)
    if not is_page or not any(p.fullmatch(body) for p in trusted.inline):
        report.add(
            tag.start,
            "<script>: inline script that is not one of the theme's (the page's policy "
            f"blocks it): {_show(body.strip())}",
        )


# ---------------------------------------------------------------------------------------- CSS


@dataclass(frozen=True)
class _Token:
    kind: str  # "url", "bad-url", "string", "function", "at", "ident", "(", ")", "{", "}", ...
    value: str
    start: int


_HEX = "0123456789abcdefABCDEF"


def normalize_css(css: str) -> str:
    """CSS's preprocessing: CR LF, CR and FF as LF, NUL as U+FFFD."""
    return css.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n").replace("\0", "\ufffd")


def _css_tokens(css: str) -> Iterator[_Token]:
    """CSS Syntax Level 3's tokens, the kinds a URL can hide in; the rest as single characters."""
    css = normalize_css(css)
    n = len(css)
    i = 0

    def valid_escape(at: int) -> bool:
        return at < n and css[at] == "\\" and (at + 1 >= n or css[at + 1] != "\n")

    def escape(at: int) -> tuple[str, int]:  # css[at] is the character after `\`
        if at >= n:
            return "\ufffd", at
        if css[at] in _HEX:
            end = at
            while end < n and end - at < 6 and css[end] in _HEX:
                end += 1
            code = int(css[at:end], 16)
            if end < n and css[end] in " \t\n":
                end += 1
            valid = 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF
            return (chr(code) if valid else "\ufffd"), end
        return css[at], at + 1

    def ident_start(c: str) -> bool:
        return not c.isascii() or c.isalpha() or c == "_"

    def name_char(c: str) -> bool:
        return ident_start(c) or c in "0123456789-"

    def starts_ident(at: int) -> bool:
        if at >= n:
            return False
        if css[at] == "-":
            nxt = css[at + 1] if at + 1 < n else ""
            return (nxt != "" and (ident_start(nxt) or nxt == "-")) or valid_escape(at + 1)
        return valid_escape(at) if css[at] == "\\" else ident_start(css[at])

    def name(at: int) -> tuple[str, int]:
        out = []
        while at < n:
            if name_char(css[at]):
                out.append(css[at])
                at += 1
            elif valid_escape(at):
                ch, at = escape(at + 1)
                out.append(ch)
            else:
                break
        return "".join(out), at

    def url_token(at: int) -> tuple[str, str, int]:
        """A `url(` token from `at` (after its white space): "url" or "bad-url", text, end."""
        out: list[str] = []
        while at < n:
            c = css[at]
            if c == ")":
                return "url", "".join(out), at + 1
            if c in " \t\n":
                after = at
                while after < n and css[after] in " \t\n":
                    after += 1
                if after >= n or css[after] == ")":
                    return "url", "".join(out), min(after + 1, n)
                break
            if c in "\"'(" or (not c.isprintable() and c.isascii()):
                break
            if c == "\\":
                if not valid_escape(at):
                    break
                ch, at = escape(at + 1)
                out.append(ch)
                continue
            out.append(c)
            at += 1
        # A bad url: the browser loads nothing, but what it held up to `)` is read all the same.
        end = css.find(")", at)
        end = n if end < 0 else end
        return "bad-url", "".join(out) + css[at:end], min(end + 1, n)

    while i < n:
        c = css[i]
        start = i
        if css.startswith("/*", i):
            end = css.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if c in "\"'":
            out = []
            i += 1
            while i < n and css[i] != c:
                if css[i] == "\n":
                    break  # a bad string ends at the line
                if css[i] == "\\":
                    if i + 1 < n and css[i + 1] == "\n":
                        i += 2
                        continue
                    ch, i = escape(i + 1)
                    out.append(ch)
                    continue
                out.append(css[i])
                i += 1
            if i < n and css[i] == c:
                i += 1
            yield _Token("string", "".join(out), start)
            continue
        if c == "@" and starts_ident(i + 1):
            word, i = name(i + 1)
            yield _Token("at", _ascii_lower(word), start)
            continue
        if starts_ident(i):
            word, i = name(i)
            if i < n and css[i] == "(":
                i += 1
                if _ascii_lower(word) == "url":
                    j = i
                    while j < n and css[j] in " \t\n":
                        j += 1
                    if j >= n or css[j] not in "\"'":
                        kind, url, i = url_token(j)
                        yield _Token(kind, url, start)
                        continue
                yield _Token("function", _ascii_lower(word), start)
                continue
            yield _Token("ident", word, start)
            continue
        if c == "\\" and not valid_escape(i):
            i += 1
            yield _Token("delim", c, start)
            continue
        i += 1
        yield _Token(c if c in "(){}[];:," else ("space" if c in " \t\n" else "delim"), c, start)


# Functions whose string arguments are URLs (CSS Values 4's `src()`, CSS Images' `image()`,
# `image-set()` and `cross-fade()`, with their prefixed forms).
_URL_FUNCTIONS = {
    "url", "src", "image", "image-set", "-webkit-image-set", "cross-fade", "-webkit-cross-fade",
}  # fmt: skip
# Schemes whose address reaches a host even without `//` (`http:evil.example` on an http page).
_NETWORK = re.compile(r"(?:https?|wss?|ftp|file):|//", re.IGNORECASE)


def css_urls(css: str) -> list[tuple[int, str, str]]:
    """(offset, what, url) for each URL in a stylesheet or a style attribute's value that leaves
    the site: `url()` and its kin, `image-set()` strings, `@import`; and any string anywhere that
    reads as a network address (a custom property's string can become one: `--x: "https://...";
    background: image-set(var(--x) 1x)`). Offsets are in the text with its newlines normalized."""
    found: list[tuple[int, str, str]] = []
    stack: list[str] = []  # open functions and blocks
    after_import = False
    for token in _css_tokens(css):
        kind = token.kind
        if kind in ("url", "bad-url"):
            what = "url()"
        elif kind == "string":
            inside = stack[-1] if stack else ""
            if after_import:
                what = "@import"
            elif inside in _URL_FUNCTIONS:
                what = f"{inside}()"
            elif _NETWORK.match(_browser_form(token.value)):
                what = "string"
            else:
                after_import = False
                continue
        else:
            if kind == "function":
                stack.append(token.value)
            elif kind in ("(", "[", "{"):
                stack.append(kind)
            elif kind in (")", "]", "}") and stack:
                stack.pop()
            if kind != "space":
                after_import = kind == "at" and token.value == "import"
            continue
        after_import = False
        if leaves_site(token.value, data_ok=True):
            found.append((token.start, what, token.value))
    return found


# --------------------------------------------------------------------------------------- site


def check_site(site: Path, trusted: Trusted) -> list[str]:
    """`file:line: what` for everything in a built site that could load from or go to another
    host, or run a script the theme and mkdocs.yml did not ship; empty when there is none."""
    found: list[str] = []
    for path in sorted(site.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(site).as_posix()
        suffix = path.suffix.lower()
        if suffix in SCRIPT_SUFFIXES and rel not in trusted.scripts:
            found.append(f"{rel}: a script the theme and mkdocs.yml did not ship")
        elif suffix in MARKUP_SUFFIXES:
            is_page = suffix in (".html", ".htm")
            found += check_markup(_read(path), rel, trusted, is_page=is_page)
        elif suffix == ".css":
            css = normalize_css(_read(path))
            report = _Report(rel, [m.start() for m in re.finditer("\n", css)])
            for offset, what, url in css_urls(css):
                report.add(offset, f"{what} {_show(url)} leaves the site")
            found += report.found
    return found


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def script_files(paths: Collection[str]) -> frozenset[str]:
    """The scripts among site paths."""
    return frozenset(p for p in paths if Path(p).suffix.lower() in SCRIPT_SUFFIXES)
