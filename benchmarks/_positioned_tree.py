"""The positioned tree: the least a Python front end on libyaml's events does.

Plain dicts and lists, each key's and value's mark kept (what an error's line:col needs);
scalars stay text, no check. A baseline, not evalspec: `bench_validate.py` holds `validate` to
2x of it, and `_plain_replay.py` reads a suite's cases with it. Run as a script, it reads the
files it is given and does nothing else.
"""

import sys
from typing import Any

import yaml
import yaml.cyaml
from yaml.events import (
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)


def tree(parser: Any) -> Any:
    """The document's tree from the parser's events, its marks kept beside each container."""
    stack: list[list[Any]] = []  # frames: [container, marks, pending key or None, start mark]
    done = None
    event = parser.get_event()
    while event is not None:
        kind = type(event)
        if kind is MappingStartEvent or kind is SequenceStartEvent:
            stack.append([{} if kind is MappingStartEvent else [], [], None, event.start_mark])
            event = parser.get_event()
            continue
        if kind is ScalarEvent:
            value, mark = event.value, event.start_mark
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            value, _, _, mark = stack.pop()
        else:
            event = parser.get_event()
            continue
        if not stack:
            done = value
        else:
            frame = stack[-1]
            container, marks = frame[0], frame[1]
            if type(container) is list:
                container.append(value)
                marks.append(mark)
            elif frame[2] is None:
                frame[2] = value
                marks.append(mark)
            else:
                container[frame[2]] = value
                marks.append(mark)
                frame[2] = None
        event = parser.get_event()
    return done


def read(name: str) -> Any:
    """The positioned tree of one YAML file."""
    with open(name, encoding="utf-8") as fh:
        parser = yaml.cyaml.CParser(fh.read())
    try:
        return tree(parser)
    finally:
        parser.dispose()


if __name__ == "__main__":
    for name in sys.argv[1:]:
        read(name)
