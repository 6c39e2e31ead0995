"""`evalspec calibrate`: the helpdesk suite's judge held against the two people who labelled its
example answers, offline; the numbers checked by hand and against the libraries."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from support import evalspec_cli

from evalspec._stats.agreement import krippendorff_alpha, pair_agreement

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "suites" / "helpdesk.yaml"
LABELS = ROOT / "suites" / "helpdesk.labels.jsonl"
VERDICTS = ("Solved", "Unsure", "Unsolved")


def cli(*args: Any):
    return evalspec_cli([str(a) for a in args])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The helpdesk suite replayed offline from its example recordings."""
    out = tmp_path_factory.mktemp("run")
    done = cli("run", SUITE, "--record", "offline", "--out", out / "run")
    assert done.exit_code == 1, done.output  # one answer the judge calls Unsolved fails
    return out / "run"


def test_kappa_is_the_hand_computation_and_scikit_learns() -> None:
    judge = ["Solved"] * 8 + ["Unsure", "Unsolved"]
    person = ["Solved"] * 6 + ["Unsolved", "Unsolved", "Unsolved", "Unsolved"]
    got = pair_agreement(judge, person, VERDICTS)
    # po = 7/10; pe = (8*6 + 1*0 + 1*4) / 100 = 0.52; kappa = (0.7 - 0.52) / 0.48
    assert got.agreement == pytest.approx(0.7)
    assert got.kappa is not None
    assert got.kappa.estimate == pytest.approx(0.375)
    assert got.kappa.low <= 0.375 <= got.kappa.high
    assert got.confusion == ((6, 0, 2), (0, 0, 1), (0, 0, 1))
    # Seeded: the same interval every time.
    assert pair_agreement(judge, person, VERDICTS).kappa == got.kappa


def test_the_bootstrap_interval_is_scikit_learns_kappa_on_each_resample() -> None:
    """The resamples' kappas come from their confusion matrices in one vectorised step: the
    same draws scored one by one with scikit-learn give the same percentile interval."""
    import warnings

    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    judge = ["Solved", "Unsure", "Solved", "Unsolved", "Solved", "Unsure", "Unsolved", "Solved"]
    person = ["Solved", "Solved", "Unsure", "Unsolved", "Solved", "Unsure", "Solved", "Solved"]
    got = pair_agreement(judge, person, VERDICTS, resamples=300, seed=7)
    assert got.kappa is not None
    assert got.kappa.estimate == pytest.approx(cohen_kappa_score(judge, person))
    draws = np.random.default_rng(7).integers(0, len(judge), size=(300, len(judge)))
    kappas = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for idx in draws:
            k = cohen_kappa_score([judge[i] for i in idx], [person[i] for i in idx])
            if np.isfinite(k):
                kappas.append(k)
    low, high = np.quantile(kappas, [0.025, 0.975])
    assert (got.kappa.low, got.kappa.high) == pytest.approx(
        (min(low, got.kappa.estimate), max(high, got.kappa.estimate))
    )


@pytest.mark.parametrize("seed", range(40))
def test_kappa_and_confusion_are_scikit_learns_on_random_verdicts(seed: int) -> None:
    """evalspec computes kappa and the confusion matrix itself (importing scikit-learn cost
    every run with labels two seconds): on random verdicts, with labels outside the declared
    scale and one-sided raters, they are scikit-learn's."""
    import warnings

    import numpy as np
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    rng = np.random.default_rng(seed)
    scale = [*VERDICTS, "Other"]
    n = int(rng.integers(1, 15))
    first = [scale[i] for i in rng.integers(0, 1 + seed % 4, size=n)]
    second = [scale[i] for i in rng.integers(0, 4, size=n)]
    got = pair_agreement(first, second, VERDICTS, resamples=50)
    assert got.confusion == tuple(
        tuple(int(x) for x in row)
        for row in confusion_matrix(first, second, labels=list(got.labels))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = float(cohen_kappa_score(first, second, labels=list(got.labels)))
    if np.isfinite(expected):
        assert got.kappa is not None
        assert got.kappa.estimate == pytest.approx(expected)
    else:
        assert got.kappa is None


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_run_with_labels_does_not_import_scikit_learn(tmp_path: Path) -> None:
    """The calibration block of a report costs the run no scikit-learn import (it took a
    replay of the helpdesk suite from 2.5 s / 73 MB to 4.3 s / 201 MB)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from evalspec._cli import app\n"
        f"done = CliRunner().invoke(app, ['run', {str(SUITE)!r}, '--record', 'offline',"
        f" '--out', {str(tmp_path / 'run')!r}])\n"
        "print(done.exit_code, 'sklearn' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=100, check=False
    )
    assert done.stdout.split() == ["1", "False"], done.stderr
    assert "Cohen's kappa" in (tmp_path / "run" / "results.json").read_text()


def test_alpha_is_the_hand_computation() -> None:
    # Two raters, four items, nominal: coincidences o(S,S)=4, o(U,U)=2, o(S,U)=o(U,S)=1;
    # n = 8, n_S = 5, n_U = 3; D_o = 2/8; D_e = (5*3 + 3*5) / (8*7); alpha = 1 - D_o / D_e.
    a = ["Solved", "Solved", "Unsure", "Solved"]
    b = ["Solved", "Solved", "Unsure", "Unsure"]
    got = krippendorff_alpha([a, b], VERDICTS)
    assert got is not None
    assert got.estimate == pytest.approx(1 - (2 / 8) / (30 / 56))
    assert krippendorff_alpha([["Solved"] * 3, ["Solved"] * 3], VERDICTS) is None


def test_each_alpha_resample_is_the_krippendorff_packages_alpha_of_that_resample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bootstrap asks the package once, for the estimate, and computes its 2,000 resamples
    at once (before: one call each, 0.3 s for ten items, twice in every calibration); each
    resample's alpha is the package's on the same items, missing ratings included."""
    import krippendorff
    import numpy as np

    from evalspec._stats import agreement

    rng = random.Random(7)
    rows = [[rng.choice([*VERDICTS, None]) for _ in range(12)] for _ in range(3)]
    calls: list[object] = []
    package = krippendorff.alpha
    monkeypatch.setattr(krippendorff, "alpha", lambda **kw: calls.append(kw) or package(**kw))
    assert krippendorff_alpha(rows, VERDICTS) is not None
    assert len(calls) == 1
    draws = np.random.default_rng(3)
    resample = [draws.integers(0, 12, size=12) for _ in range(300)]
    expected = [agreement._alpha(rows, list(VERDICTS), items) for items in resample]
    assert agreement._alpha_resamples(rows, list(VERDICTS), 300, 3) == pytest.approx(
        [a for a in expected if a is not None], abs=1e-12
    )


@pytest.mark.timeout(120)
def test_calibrate_reports_the_judge_against_each_labeller_offline(run_dir: Path) -> None:
    done = cli("calibrate", SUITE, "--labels", LABELS, "-t", run_dir)
    assert done.exit_code == 0, done.output
    out = done.output
    assert "final_answer.judge: 10 labelled answers" in out
    # ana: judge S8 U1 N1, ana S6 U2 N2, 8 agree: pe = (48 + 2 + 2)/100; (0.8 - 0.52) / 0.48
    assert "judge vs ana: agreement 0.800 over 10, Cohen's kappa 0.583" in out
    assert "judge vs ben: agreement 0.700 over 10, Cohen's kappa 0.375" in out
    assert "Krippendorff's alpha, people:" in out
    assert "percentile bootstrap over items (2000 resamples, seed 0" in out
    as_json = json.loads(cli("calibrate", SUITE, "-l", LABELS, "-t", run_dir, "--json").stdout)
    (judge,) = as_json["judges"]
    ben = next(x for x in judge["labellers"] if x["labeller"] == "ben")["agreement"]
    assert ben["labels"] == list(VERDICTS)
    assert ben["confusion"] == [[6, 0, 2], [0, 0, 1], [0, 0, 1]]
    rows = [json.loads(x) for x in LABELS.read_text().splitlines()[1:]]
    people = {(r["labeller"], r["case"]): r["verdict"] for r in rows}
    cases = sorted({r["case"] for r in rows})
    alpha = judge["people_alpha"]["estimate"]
    import krippendorff

    codes = {v: i for i, v in enumerate(VERDICTS)}
    data = [[codes[people[(p, c)]] for c in cases] for p in ("ana", "ben")]
    assert alpha == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("line", "column", "words"),
    [
        ('{"case": "paypal", "labeller": "ana", "verdict": "Good"}', 1, "is not a verdict"),
        ('{"case": "paypal", "labeller": "ana", "verdict": "Solved", "score": 1}', 1, "score"),
        ('{"case": "paypal", "labeller": "ana", "verdict": ', 50, "invalid JSON"),
        ('["paypal"]', 1, "a label is a JSON object"),
    ],
)
def test_a_bad_labels_line_is_named_with_its_place(
    run_dir: Path, tmp_path: Path, line: str, column: int, words: str
) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"case": "paypal", "labeller": "ana", "verdict": "Solved"}\n' + line + "\n")
    done = cli("calibrate", SUITE, "--labels", labels, "-t", run_dir)
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    assert f"labels.jsonl:2:{column}: " in done.output
    assert words in done.output


def test_the_labels_schema_takes_the_shipped_file_and_refuses_what_the_reader_refuses() -> None:
    import jsonschema

    schema = json.loads((ROOT / "schemas" / "labels-line.schema.json").read_text())
    for line in LABELS.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema)
    for bad in (
        {"case": "paypal", "labeller": "ana", "verdict": "Good"},
        {"case": "paypal", "labeller": "ana", "verdict": "Solved", "score": 1},
        {"case": "", "labeller": "ana", "verdict": "Solved"},
        {"case": "paypal", "labeller": "ana", "verdict": "Solved", "turn": 0},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_a_huge_value_in_a_labels_file_is_quoted_short(run_dir: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"case": "x", "labeller": "a", "verdict": "S" * 100_000}) + "\n")
    done = cli("calibrate", SUITE, "--labels", labels, "-t", run_dir)
    assert done.exit_code == 2
    assert len(done.output) < 400, done.output


def test_thousands_of_unmatched_labels_print_a_bounded_report(
    run_dir: Path, tmp_path: Path
) -> None:
    labels = tmp_path / "labels.jsonl"
    lines = [
        {"case": f"no such case {i}", "labeller": "ana", "verdict": "Solved"} for i in range(3000)
    ]
    labels.write_text("".join(json.dumps(x) + "\n" for x in lines))
    done = cli("calibrate", SUITE, "--labels", labels, "-t", run_dir)
    assert done.exit_code == 3
    assert "skipped label: and 2980 more (--json lists every one)" in done.output
    assert len(done.output.splitlines()) < 30


@pytest.mark.timeout(60)
def test_labels_on_answers_the_judge_never_saw_need_a_judge_run(
    run_dir: Path, tmp_path: Path
) -> None:
    cache = json.loads((ROOT / "suites" / ".evalspec-cache" / "judge.json").read_text())
    suite = tmp_path / "helpdesk.yaml"
    suite.write_text(SUITE.read_text())
    (tmp_path / ".evalspec-cache").mkdir()
    kept = dict(list(cache.items())[:5])  # half the verdicts: the other answers need a run
    (tmp_path / ".evalspec-cache" / "judge.json").write_text(json.dumps(kept))
    done = cli("calibrate", suite, "--labels", LABELS, "-t", run_dir)
    assert done.exit_code == 3, done.output
    assert "no judge verdict" in done.output
    assert "evalspec judge" in done.output


def git(repo: Path, *args: str) -> None:
    import subprocess

    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo), *args],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def helpdesk_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository holding the helpdesk suite, its recordings, judge cache and labels."""
    import shutil

    suites = tmp_path / "suites"
    suites.mkdir()
    for name in ("helpdesk.yaml", "helpdesk.recordings.jsonl", "helpdesk.labels.jsonl"):
        shutil.copy(ROOT / "suites" / name, suites / name)
    (suites / ".evalspec-cache").mkdir()
    shutil.copy(ROOT / "suites" / ".evalspec-cache" / "judge.json", suites / ".evalspec-cache")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.timeout(180)
def test_review_flags_a_changed_rubric_as_calibration_stale(helpdesk_repo: Path) -> None:
    suite = helpdesk_repo / "suites" / "helpdesk.yaml"
    untouched = cli("review", "--base-ref", "HEAD", "--json")
    assert json.loads(untouched.stdout)["suites"][0]["calibration"] == []
    text = suite.read_text()
    suite.write_text(text.replace("answers the customer's", "answers exactly the customer's"))
    done = cli("review", "--base-ref", "HEAD", "--json", "--markdown", "comment.md")
    (review,) = json.loads(done.stdout)["suites"]
    lines = review["calibration"]
    assert lines[0].startswith("calibration stale: the judge's criteria changed")
    assert "suites/helpdesk.labels.jsonl" in lines[0]
    # The changed judge has no verdicts cached: before and after cannot be compared yet.
    assert "cannot be shown without a run: 10 labelled answers" in lines[1]
    comment = (helpdesk_repo / "comment.md").read_text()
    assert "### Judge calibration" in comment
    assert "calibration stale" in comment


@pytest.mark.timeout(180)
def test_review_shows_agreement_before_and_after_a_new_judge_model(helpdesk_repo: Path) -> None:
    from evalspec._scoring.final_answer import LLMJudge

    suite = helpdesk_repo / "suites" / "helpdesk.yaml"
    suite.write_text(
        suite.read_text().replace(
            "model: gpt-4o-mini\n      criteria", "model: gpt-4o\n      criteria"
        )
    )
    # The new judge's verdicts, cached as `evalspec judge` would: it agrees with ana throughout.
    cache_path = helpdesk_repo / "suites" / ".evalspec-cache" / "judge.json"
    cache = json.loads(cache_path.read_text())
    old, new = LLMJudge("gpt-4o-mini"), LLMJudge("gpt-4o")
    from evalspec._scoring.final_answer import judge_prompt
    from evalspec.api import load_suite, load_transcripts

    ana = {
        json.loads(x)["case"]: json.loads(x)["verdict"]
        for x in LABELS.read_text().splitlines()[1:]
        if json.loads(x)["labeller"] == "ana"
    }
    loaded = load_suite(suite)
    run = cli("run", suite, "--record", "offline", "--out", helpdesk_repo / "run")
    assert run.exit_code == 1, run.output
    scores = {"Solved": 1.0, "Unsure": 0.5, "Unsolved": 0.0}
    for t in load_transcripts(helpdesk_repo / "run"):
        case = next(c for c in loaded.cases if c.name == t.case)
        criteria = case.expect.final_answer[0].params["criteria"]
        prompt = judge_prompt(case.messages[-1].content, t.final_answer, criteria)
        assert old._key(prompt) in cache
        cache[new._key(prompt)] = {"score": scores[ana[t.case]], "reason": "as ana"}
    cache_path.write_text(json.dumps(cache))
    done = cli("review", "--base-ref", "HEAD", "--json")
    (review,) = json.loads(done.stdout)["suites"]
    lines = review["calibration"]
    assert lines[0].startswith("calibration stale: the judge's model (gpt-4o-mini → gpt-4o)")
    # ana: 0.800 → 1.000 (kappa 0.583 → 1.000); ben: 0.700 → 0.800 (kappa 0.375 → 0.655...)
    assert (
        "final_answer.judge vs ana: agreement 0.800 → 1.000, Cohen's kappa 0.583 → 1.000" in lines
    )
    from sklearn.metrics import cohen_kappa_score

    ben = {
        json.loads(x)["case"]: json.loads(x)["verdict"]
        for x in LABELS.read_text().splitlines()[1:]
        if json.loads(x)["labeller"] == "ben"
    }
    cases = sorted(ana)
    kappa = cohen_kappa_score([ana[c] for c in cases], [ben[c] for c in cases])
    agree = sum(ana[c] == ben[c] for c in cases) / len(cases)
    assert (
        f"final_answer.judge vs ben: agreement 0.700 → {agree:.3f}, Cohen's kappa 0.375 → "
        f"{kappa:.3f}" in lines
    )
