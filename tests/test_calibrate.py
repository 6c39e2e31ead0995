"""`evalspec calibrate`: the helpdesk suite's judge held against the two people who labelled its
example answers, offline; the numbers checked by hand and against the libraries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalspec._cli import app
from evalspec._stats.agreement import krippendorff_alpha, pair_agreement

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "suites" / "helpdesk.yaml"
LABELS = ROOT / "suites" / "helpdesk.labels.jsonl"
VERDICTS = ("Solved", "Unsure", "Unsolved")


def cli(*args: Any):
    return CliRunner().invoke(app, [str(a) for a in args])


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


def test_the_bootstrap_kappa_formula_is_scikit_learns() -> None:
    from sklearn.metrics import cohen_kappa_score

    judge = ["Solved", "Unsure", "Solved", "Unsolved", "Solved", "Unsure", "Unsolved"]
    person = ["Solved", "Solved", "Unsure", "Unsolved", "Solved", "Unsure", "Solved"]
    got = pair_agreement(judge, person, VERDICTS, resamples=1)
    assert got.kappa is not None
    assert got.kappa.estimate == pytest.approx(cohen_kappa_score(judge, person))
    # The resamples' kappa comes from each resample's confusion matrix: the same formula.
    import numpy as np

    m = np.array(got.confusion) / len(judge)
    po, pe = np.trace(m), (m.sum(axis=1) * m.sum(axis=0)).sum()
    assert (po - pe) / (1 - pe) == pytest.approx(got.kappa.estimate)


def test_alpha_is_the_hand_computation() -> None:
    # Two raters, four items, nominal: coincidences o(S,S)=4, o(U,U)=2, o(S,U)=o(U,S)=1;
    # n = 8, n_S = 5, n_U = 3; D_o = 2/8; D_e = (5*3 + 3*5) / (8*7); alpha = 1 - D_o / D_e.
    a = ["Solved", "Solved", "Unsure", "Solved"]
    b = ["Solved", "Solved", "Unsure", "Unsure"]
    got = krippendorff_alpha([a, b], VERDICTS)
    assert got is not None
    assert got.estimate == pytest.approx(1 - (2 / 8) / (30 / 56))
    assert krippendorff_alpha([["Solved"] * 3, ["Solved"] * 3], VERDICTS) is None


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
