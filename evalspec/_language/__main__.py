"""`python -m evalspec._language [--write | --check]`: regenerate or check the schema file."""

from __future__ import annotations

import sys

from evalspec._language.generate import schema_text
from evalspec._util.schemas import SCHEMA_PATH


def main(argv: list[str]) -> int:
    """--write rewrites the file; --check (the default) exits 1 when it is out of date."""
    text = schema_text()
    if "--write" in argv:
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        return 0
    if SCHEMA_PATH.read_text(encoding="utf-8") == text:
        return 0
    print(
        f"{SCHEMA_PATH} is out of date: run python -m evalspec._language --write", file=sys.stderr
    )
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
