"""The shipped examples, the starter suite and the published schema are all valid."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from support import in_process

from evalspec.api import load_suite

ROOT = Path(__file__).resolve().parents[1]
SUITES = sorted((ROOT / "suites").glob("*.yaml"))
MODELINE = "# yaml-language-server: $schema=../schemas/suite.schema.json"


# Without installed plugins: the schema compared here is the language's own.
pytestmark = pytest.mark.usefixtures("no_plugins")


def _evalspec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """evalspec as a user types it in `cwd`, run in this process."""
    return in_process(*args, cwd=cwd)


def test_there_are_example_suites() -> None:
    assert len(SUITES) >= 3


@pytest.mark.parametrize("path", SUITES, ids=lambda p: p.name)
def test_every_example_suite_validates(path: Path) -> None:
    suite = load_suite(path)
    assert suite.cases and suite.models and suite.tools


@pytest.mark.parametrize("path", SUITES, ids=lambda p: p.name)
def test_example_suites_start_with_the_editor_modeline(path: Path) -> None:
    assert path.read_text(encoding="utf-8").splitlines()[0] == MODELINE
    assert (path.parent / MODELINE.split("=", 1)[1]).resolve().is_file()


def test_init_writes_a_suite_that_validates(tmp_path: Path) -> None:
    made = _evalspec("init", "suites/calendar.yaml", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    path = tmp_path / "suites" / "calendar.yaml"
    assert load_suite(path).name == "calendar"
    checked = _evalspec("validate", "suites/calendar.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith("1 suite valid")
    # The editor modeline points at a schema file that exists, relative to the suite.
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    schema = (path.parent / first.split("=", 1)[1]).resolve()
    assert schema.is_file() and json.loads(schema.read_text(encoding="utf-8"))["$defs"]


def _modeline_target(suite: Path) -> Path:
    first = suite.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    return suite.parent / first.split("=", 1)[1]


@pytest.mark.parametrize("where", ["weather.yaml", "suites/weather.yaml", "a/b/weather.yaml"])
def test_the_schema_reference_init_writes_survives_sharing_the_project(
    where: str, tmp_path: Path, printed_schema: dict[str, Any]
) -> None:
    """The modeline points into the project (its own `schemas/` copy), not into the
    installation that wrote it: the project moved elsewhere, at another depth, on a machine
    where evalspec lives elsewhere, still finds the schema."""
    project = tmp_path / "mine"
    project.mkdir()
    made = _evalspec("init", where, cwd=project)
    assert made.returncode == 0, made.stderr
    assert made.stdout == (
        f"wrote {where} and schemas/suite.schema.json (the suite language, for editors); "
        f"next: evalspec validate {where}\n"
    )
    shared = tmp_path / "elsewhere" / "deeper" / "theirs"
    shutil.copytree(project, shared)
    shutil.rmtree(project)
    target = _modeline_target(shared / where).resolve()
    assert target == shared / "schemas" / "suite.schema.json"
    assert json.loads(target.read_text(encoding="utf-8")) == printed_schema


def test_init_reuses_the_projects_schema_copy_and_refreshes_an_old_one(
    tmp_path: Path, printed_schema: dict[str, Any]
) -> None:
    (tmp_path / "schemas").mkdir()
    old = {**printed_schema, "description": "an older evalspec's schema"}
    (tmp_path / "schemas" / "suite.schema.json").write_text(json.dumps(old), encoding="utf-8")
    made = _evalspec("init", "suites/one.yaml", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "and schemas/suite.schema.json" in made.stdout  # refreshed
    assert _modeline_target(tmp_path / "suites" / "one.yaml").resolve() == (
        tmp_path / "schemas" / "suite.schema.json"
    )
    again = _evalspec("init", "suites/two.yaml", cwd=tmp_path)
    assert again.stdout == "wrote suites/two.yaml; next: evalspec validate suites/two.yaml\n"
    schema = json.loads((tmp_path / "schemas" / "suite.schema.json").read_text(encoding="utf-8"))
    assert schema == printed_schema


def test_init_leaves_another_file_at_the_schemas_place_alone(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "suite.schema.json").write_text('{"$id": "mine"}', encoding="utf-8")
    made = _evalspec("init", "one.yaml", cwd=tmp_path)
    assert made.returncode == 2 and "Traceback" not in made.stderr
    assert "is not evalspec's suite schema" in made.stderr
    assert not (tmp_path / "one.yaml").exists()
    assert (tmp_path / "schemas" / "suite.schema.json").read_text() == '{"$id": "mine"}'


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("suite: keep me\n", encoding="utf-8")
    again = _evalspec("init", "mine.yaml", cwd=tmp_path)
    assert again.returncode == 2
    assert "exists" in again.stderr and "Traceback" not in again.stderr
    assert (tmp_path / "mine.yaml").read_text(encoding="utf-8") == "suite: keep me\n"


@pytest.fixture
def printed_schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = _evalspec("schema", cwd=tmp_path_factory.mktemp("schema"))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_schema_command_prints_a_valid_draft_2020_12_schema(printed_schema: dict) -> None:
    assert printed_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(printed_schema)
    assert printed_schema == json.loads(
        (ROOT / "schemas" / "suite.schema.json").read_text(encoding="utf-8")
    )


def test_validating_a_large_suite_leaves_the_printed_schema_as_published(tmp_path: Path) -> None:
    """A suite of 2,000 turns or more is checked by a compiled validator first. Before:
    compiling it rewrote the language schema's `$ref`s in place (`#/$defs/case` became
    `https://evalspec.dev/...#/$defs/case`), so `evalspec schema` and the copy `init` writes
    differed from schemas/suite.schema.json for the rest of the process."""
    turns = "".join(
        f"      - {{user: q{i}, expect: {{no_tool_calls: true}}}}\n" for i in range(100)
    )
    cases = "".join(f"  - name: c{i}\n    turns:\n{turns}" for i in range(20))
    suite = tmp_path / "long.yaml"
    suite.write_text(f"suite: long\nmodels: [m]\ntools: []\ncases:\n{cases}", encoding="utf-8")
    assert _evalspec("validate", str(suite), cwd=tmp_path).returncode == 0
    printed = _evalspec("schema", cwd=tmp_path)
    assert json.loads(printed.stdout) == json.loads(
        (ROOT / "schemas" / "suite.schema.json").read_text(encoding="utf-8")
    )


def test_the_schema_accepts_the_example_suites_as_plain_data(printed_schema: dict) -> None:
    import yaml

    validator = Draft202012Validator(printed_schema)
    for path in SUITES:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert not list(validator.iter_errors(data)), path.name


def _properties(node: Any, where: str = "#") -> list[tuple[str, dict[str, Any]]]:
    """Every (path, schema) declared under a `properties` keyword, skipping example data."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            if isinstance(sub, dict):
                found.append((f"{where}/properties/{name}", sub))
        for key, sub in node.items():
            if key not in ("examples", "default", "const", "enum"):
                found.extend(_properties(sub, f"{where}/{key}"))
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            found.extend(_properties(sub, f"{where}/{i}"))
    return found


def test_every_property_has_a_description_and_an_example(printed_schema: dict) -> None:
    props = _properties(printed_schema)
    assert len(props) > 100
    missing = [
        where
        for where, sub in props
        if "description" not in sub or not ("examples" in sub or "$ref" in sub)
    ]
    assert missing == []
