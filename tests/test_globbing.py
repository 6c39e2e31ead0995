"""`**` globs match what Python's glob matches, but never walk into a linked directory.

A unit test of evalspec._util.globbing, which it imports.
"""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from evalspec._util.globbing import expand

TREE = ["a.yaml", "b.yml", "s/c.yaml", "s/t/d.yaml", "s/t/u/e.yaml", ".hidden/f.yaml", "s/.g.yaml"]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in TREE:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "pattern",
    [
        "**/*.yaml",
        "s/**/*.yaml",
        "**/t/*.yaml",
        "*.y*ml",
        "s/*/*.yaml",
        "**/[cd].yaml",
        "s/**/?.yaml",
    ],
)
def test_same_matches_as_python_glob_without_links(tree: Path, pattern: str) -> None:
    assert expand(pattern) == sorted(glob.glob(pattern, recursive=True))


def test_links_to_directories_are_not_followed(tree: Path) -> None:
    (tree / "loop").symlink_to(".")
    (tree / "s" / "up").symlink_to("..")
    (tree / "s" / "link.yaml").symlink_to("c.yaml")  # a link to a file still matches
    assert expand("**/*.yaml") == [
        "a.yaml",
        "s/c.yaml",
        "s/link.yaml",
        "s/t/d.yaml",
        "s/t/u/e.yaml",
    ]
