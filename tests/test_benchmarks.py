"""Smoke test of the few-shot harness and its report on a tiny synthetic split."""

import csv
import json

import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch

from benchmarks import fewshot, report
from benchmarks._fewshot_params import Budget

TINY = Budget("tiny", {"hidden_sizes": (16,), "embedding_dim": 8},
              {"max_epochs": 2, "device": "cpu", "batch_size": 64},
              {"device": "cpu", "max_epochs": 3}, max_rows_test=50)


def tiny_split(dataset, seed, data_home=None):
    """300 synthetic rows cut like a paper split: 200 pretext (20 labeled), 100 test."""
    X, y = make_classification(300, n_features=6, n_informative=4, random_state=seed)
    parts = {name: Bunch(X=X[rows], y=y[rows]) for name, rows in [
        ("pretext", slice(0, 200)), ("train", slice(0, 20)), ("val", slice(200, 220)),
        ("test", slice(200, 300)),
    ]}
    return Bunch(**parts, pretext_val=None, preprocessor=StandardScaler())


@pytest.fixture
def harness(monkeypatch, tmp_path):
    monkeypatch.setitem(fewshot.BUDGETS, "tiny", TINY)
    monkeypatch.setattr(fewshot, "load_split", tiny_split)
    fewshot.prepare_data.cache_clear()
    out = tmp_path / "fewshot.csv"
    yield out, lambda *methods: ["--datasets", "adult_1p", "--methods", *methods, "--seeds", "0",
                                 "--budget", "tiny", "--out", str(out)]
    fewshot.prepare_data.cache_clear()


def read_rows(path):
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_fewshot_writes_rows_and_resumes(harness):
    out, command = harness
    argv = command("qmatch", "supervised", "logreg")
    fewshot.main(argv)
    rows = read_rows(out)
    assert list(rows[0]) == fewshot.FIELDS
    assert [(r["method"], r["protocol"]) for r in rows] == [
        ("qmatch", "linear"), ("qmatch", "finetune"), ("supervised", "finetune"),
        ("logreg", "raw"),
    ]
    for row in rows:
        assert 0 <= float(row["accuracy"]) <= 100
        assert (row["n_pretext"], row["n_labeled"], row["n_test"]) == ("200", "20", "50")
        assert json.loads(row["params"])["budget"] == "tiny"
    encoder = json.loads(rows[0]["params"])["model"]["encoder"]
    assert encoder["estimator"] == "QMatchEncoder" and encoder["hidden_sizes"] == [16]
    assert rows[0]["pretrain_seconds"] == rows[1]["pretrain_seconds"]  # pretrained once

    fewshot.main(argv)  # everything is there: nothing runs again
    assert read_rows(out) == rows

    with out.open("w", newline="") as f:  # an interrupted run: the last result is missing
        writer = csv.DictWriter(f, fewshot.FIELDS)
        writer.writeheader()
        writer.writerows(rows[:-1])
    fewshot.main(argv)
    resumed = read_rows(out)
    assert resumed[:-1] == rows[:-1]
    assert (resumed[-1]["method"], resumed[-1]["accuracy"]) == ("logreg", rows[-1]["accuracy"])


def test_sweep_rows_and_report(harness, tmp_path):
    out, command = harness
    fewshot.main(command("qmatch", "logreg"))
    fewshot.main([*command("qmatch"), "--queue-sizes", "16", "32"])
    sweeps = [r["sweep"] for r in read_rows(out) if r["sweep"] != "{}"]
    assert sweeps == ['{"queue_size": 16}'] * 2 + ['{"queue_size": 32}'] * 2

    report.main(["--csv", str(out), "--out-dir", str(tmp_path)])
    readme = (tmp_path / "README.md").read_text()
    assert "## Budget `tiny`" in readme and "| Q-Match |" in readme
    assert (tmp_path / "queue_size.png").exists()
    assert not (tmp_path / "corruption_heatmap.png").exists()
    assert "--corruption-grid" in readme  # the command that would produce the missing figure

    fewshot.main([*command("qmatch"), "--corruption-grid", "0", "0.3"])
    fewshot.main([*command("qmatch", "logreg"), "--label-fractions", "0.1", "0.5"])
    report.main(["--csv", str(out), "--out-dir", str(tmp_path)])
    for figure in report.FIGURES:
        assert (tmp_path / figure.filename).exists()
        assert f"]({figure.filename})" in (tmp_path / "README.md").read_text()


def test_encoder_sweep_needs_a_method_with_the_parameter(harness):
    _, command = harness
    with pytest.raises(SystemExit):
        fewshot.parse_args([*command("qmatch", "logreg"), "--queue-sizes", "16"])
    args = fewshot.parse_args([*command("qmatch", "logreg"), "--label-fractions", "0.5"])
    assert args.label_fractions == [0.5]
