"""Find what a built site would fetch from another host: the docs must read offline.

Every HTML attribute that names a URL (`src`, `href`, `srcset`, ...) and every CSS `url(...)` or
`@import` is checked; a link with a scheme (`https:`, `mailto:` ...) or starting `//` is
reported. Pages mention addresses as text in code, never as links or resources.

The theme's script names a CDN in two fallbacks only: a polyfill for browsers without
ResizeObserver (every current one has it), and the diagram library for a `mermaid` block, which
is reported here, as these pages must not have one.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

_URL_ATTRIBUTES = {"src", "href", "srcset", "action", "poster", "data", "formaction", "manifest"}
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")
_EXTERNAL = re.compile(r"^\s*(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")
_LOCAL_SCHEMES = ("data:", "blob:")


def external_references(site: Path) -> list[str]:
    """`file: url` for every reference to another host in the site's HTML and CSS."""
    found: list[str] = []
    for path in sorted(site.rglob("*")):
        if path.suffix == ".html":
            urls = _html_urls(path.read_text(encoding="utf-8"))
        elif path.suffix == ".css":
            text = path.read_text(encoding="utf-8")
            urls = [a or b for a, b in _CSS_URL.findall(text)]
        else:
            continue
        found += [f"{path.relative_to(site)}: {url}" for url in urls if _is_external(url)]
    return found


def _is_external(url: str) -> bool:
    return bool(_EXTERNAL.match(url)) and not url.strip().startswith(_LOCAL_SCHEMES)


def _html_urls(text: str) -> list[str]:
    collector = _UrlCollector()
    collector.feed(text)
    collector.close()
    return collector.urls


class _UrlCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_style = tag == "style"
        if tag == "link" and "canonical" in (dict(attrs).get("rel") or "").split():
            return  # the page's own address (`mkdocs serve` sets one): named, never fetched
        for name, value in attrs:
            if value is None:
                continue
            if name == "class" and "mermaid" in value.split():
                self.urls.append("https://unpkg.com/mermaid (a mermaid diagram loads it)")
            if name == "srcset":
                self.urls += [part.split()[0] for part in value.split(",") if part.split()]
            elif name in _URL_ATTRIBUTES:
                self.urls.append(value)
            elif name == "style":
                self.urls += [a or b for a, b in _CSS_URL.findall(value)]

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.urls += [a or b for a, b in _CSS_URL.findall(data)]
