"""Remake oracle.json: what tau-bench's own airline tools answer to the differential's calls.

    python make_oracle.py /path/to/tau-bench [COMMIT]

tau-bench's tools are loaded from the checkout's tau_bench/envs/airline/tools/*.py (each
`invoke` as tau-bench runs it), and every sequence of tests/tau_airline_calls.py is run on a
fresh copy of world.json.gz, as tau-bench's env.step runs a call (an exception is the
observation `Error: ...`). For each call the oracle keeps a digest of the answer and what it
changed in the world, as a JSON Patch (RFC 6902). The commit of the checkout is recorded
(COMMIT, for a tree that is not a git checkout); the test never needs tau-bench itself.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent.parent.parent)]  # tests/, the repo

from tau_airline_calls import WORLD, answer_digest, sequences  # noqa: E402
from tau_bench_tools import checkout_commit, load_tools, run_actions, write_oracle  # noqa: E402


def main(root: Path, commit: str = "") -> None:
    tools = load_tools(root, "airline")
    commit = commit or checkout_commit(root)
    out: dict[str, Any] = {"tau_bench_commit": commit or "unknown", "tools": sorted(tools)}
    for name, runs in sequences().items():
        out[name] = [run_actions(tools, WORLD, actions, answer_digest) for actions in runs]
    text = write_oracle(HERE / "oracle.json", out)
    print(f"oracle.json: {sum(len(out[n]) for n in sequences())} sequences, {len(text)} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]), *sys.argv[2:3])
