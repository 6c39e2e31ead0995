"""Where the people's verdicts come from: the suite's `labels:` key, `--labels` on run and
score, else `<suite>.labels.jsonl` beside the suite. A pull request's suite names no file
outside its folder, and a committed link in the labels' place is never read through."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import evalspec_cli

ROOT = Path(__file__).resolve().parents[1]
ANA = "judge final\\_answer.judge vs ana: agreement 0.800 over 10, Cohen's kappa 0.583"
BEN = "judge final\\_answer.judge vs ben: agreement 0.700 over 10"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The helpdesk suite, its recordings and judge cache in suites/; its labels moved to
    suites/people/verdicts.jsonl (nothing beside the suite)."""
    suites = tmp_path / "suites"
    (suites / "people").mkdir(parents=True)
    for name in ("helpdesk.yaml", "helpdesk.recordings.jsonl"):
        shutil.copy(ROOT / "suites" / name, suites / name)
    shutil.copy(ROOT / "suites" / "helpdesk.labels.jsonl", suites / "people" / "verdicts.jsonl")
    shutil.copytree(ROOT / "suites" / ".evalspec-cache", suites / ".evalspec-cache")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def declare(project: Path, value: str) -> Path:
    """The suite with `labels: value` as its second top-level key (line 14)."""
    suite = project / "suites" / "helpdesk.yaml"
    text = suite.read_text()
    first = text.index("\nsuite:")
    end = text.index("\n", first + 1)
    suite.write_text(text[: end + 1] + f"labels: {value}\n" + text[end + 1 :])
    return suite


def run(project: Path, *extra: str) -> tuple[int, str, str]:
    """`evalspec run` offline with a Markdown report: exit code, console, report."""
    done = evalspec_cli([
        "run", "suites/helpdesk.yaml", "--record", "offline", "--out", "run", "--markdown",
        "report.md", *extra
    ])  # fmt: skip
    report = project / "report.md"
    return done.exit_code, done.output, report.read_text() if report.exists() else ""


@pytest.mark.timeout(120)
def test_the_suite_declares_its_labels_and_run_and_score_read_them(project: Path) -> None:
    declare(project, "people/verdicts.jsonl")
    code, output, report = run(project)
    assert code == 1, output  # one answer the judge calls Unsolved fails
    assert f"{ANA} (95% CI 0.000 to 1.000) (people/verdicts.jsonl)" in report
    assert BEN in report
    done = evalspec_cli(["score", "suites/helpdesk.yaml", "-t", "run", "--markdown", "scored.md"])
    assert done.exit_code == 1, done.output
    assert (
        f"{ANA} (95% CI 0.000 to 1.000) (people/verdicts.jsonl)"
        in (project / "scored.md").read_text()
    )


@pytest.mark.timeout(120)
def test_labels_on_the_command_line_replace_the_suite_s_own(project: Path) -> None:
    """A file of the caller's choosing, even outside the project: ana's verdicts alone."""
    declare(project, "people/verdicts.jsonl")
    elsewhere = project.parent / f"{project.name}-labels" / "ana.jsonl"
    elsewhere.parent.mkdir()
    rows = (project / "suites" / "people" / "verdicts.jsonl").read_text().splitlines()
    elsewhere.write_text("\n".join(r for r in rows if '"ana"' in r) + "\n")
    code, output, report = run(project, "--labels", str(elsewhere))
    assert code == 1, output
    assert f"{ANA} (95% CI 0.000 to 1.000) (" in report
    assert "labels/ana.jsonl)" in report  # named as the command line gave it
    assert "vs ben" not in report
    done = evalspec_cli(
        ["score", "suites/helpdesk.yaml", "-t", "run", "--labels", elsewhere, "--markdown", "s.md"]
    )
    assert done.exit_code == 1, done.output
    scored = (project / "s.md").read_text()
    assert ANA in scored
    assert "vs ben" not in scored


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("../../outside.jsonl", "it leads outside the suite's directory"),
        ("/etc/passwd", "it is an absolute path"),
        ("~/labels.jsonl", "it starts with ~"),
        ("linked/verdicts.jsonl", "it goes through a symbolic link (linked)"),
    ],
)
def test_a_labels_path_leading_out_of_the_suite_s_folder_is_refused_at_its_place(
    project: Path, value: str, why: str
) -> None:
    outside = project.parent / f"{project.name}-outside"
    outside.mkdir()
    (project / "suites" / "linked").symlink_to(outside, target_is_directory=True)
    declare(project, value)
    code, output, report = run(project)
    assert code == 2, output
    assert f"suites/helpdesk.yaml:14:9: labels: {value!r} cannot be read: {why}" in output
    assert "Traceback" not in output
    assert not (project / "run").exists()
    assert report == ""


@pytest.mark.timeout(120)
def test_a_committed_link_in_place_of_the_labels_beside_the_suite_is_refused(
    project: Path,
) -> None:
    """`helpdesk.labels.jsonl -> /elsewhere`: refused before the run writes anything, the
    path named as the project has it, never where it points."""
    target = project.parent / f"{project.name}-secret.jsonl"
    shutil.copy(project / "suites" / "people" / "verdicts.jsonl", target)
    (project / "suites" / "helpdesk.labels.jsonl").symlink_to(target)
    code, output, report = run(project)
    assert code == 2, output
    assert "suites/helpdesk.labels.jsonl" in output
    assert "is a symbolic link" in output
    assert str(target) not in output
    assert not (project / "run").exists()
    assert report == ""


@pytest.mark.timeout(120)
def test_calibrate_reads_the_suite_s_own_labels_without_labels_option(project: Path) -> None:
    declare(project, "people/verdicts.jsonl")
    assert run(project)[0] == 1
    done = evalspec_cli(["calibrate", "suites/helpdesk.yaml", "-t", "run"])
    assert done.exit_code == 0, done.output
    assert "judge vs ana: agreement 0.800 over 10, Cohen's kappa 0.583" in done.output
    assert "judge vs ben: agreement 0.700 over 10, Cohen's kappa 0.375" in done.output
