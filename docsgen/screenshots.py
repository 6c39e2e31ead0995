"""The HTML report's screenshots, shown on the page that describes the report.

The browser tests write them as docs/images/report-*.png. The page holds a marker rather than
image links, so the docs build (which fails on a link to a missing file) never depends on
which screenshots exist yet.
"""

from __future__ import annotations

import re
from pathlib import Path

MARKER = "<!-- report-screenshots:"


def screenshots_markdown(docs_dir: Path, *, depth: int) -> str:
    """An image per docs/images/report-*.png, by name, for a page `depth` folders down."""
    images = sorted((docs_dir / "images").glob("report-*.png"))
    return "\n\n".join(
        f"![{_caption(image)}]({'../' * depth}images/{image.name})" for image in images
    )


def fill_marker(markdown: str, docs_dir: Path, *, depth: int) -> str:
    """The page with its marker line replaced by the screenshots (nothing, if there are none)."""
    if MARKER not in markdown:
        return markdown
    shown = screenshots_markdown(docs_dir, depth=depth)
    lines = markdown.split("\n")
    return "\n".join(shown if line.startswith(MARKER) else line for line in lines)


def _caption(image: Path) -> str:
    """`report-300-cases-3-models.png` -> "The report: 300 cases 3 models";
    `report-case-390.png` (a trailing width) -> "The report: case, 390 px wide"."""
    name = image.stem.removeprefix("report-")
    width = re.fullmatch(r"(.+)-(\d{3,4})", name)
    if width:
        return f"The report: {width.group(1).replace('-', ' ')}, {width.group(2)} px wide"
    return "The report: " + name.replace("-", " ")
