"""End-to-end smoke test of the few-label benchmark and its report on one tiny table."""

import csv
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine
from sklearn.utils import Bunch

from benchmarks import _fewlabel_tables, fewlabel, fewlabel_report

from .conftest import installed_contenders


def tiny_mixed(data_home=None):
    """Wine with what real tables have: NaN in a numeric column and a categorical column
    with NaN."""
    data = load_wine(as_frame=True)
    X = data.data.iloc[:, :4].copy()
    rng = np.random.RandomState(0)
    X.iloc[rng.choice(len(X), 20, replace=False), 0] = np.nan
    colour = pd.Series(np.where(X.iloc[:, 1] > X.iloc[:, 1].median(), "dark", "light"))
    X["colour"] = colour.where(rng.rand(len(X)) > 0.1).astype("category")
    return Bunch(X=X, y=np.asarray(data.target))


def read_rows(path):
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_fewlabel_runs_resumes_and_reports(monkeypatch, tmp_path):
    table = _fewlabel_tables.Table("tiny_mixed", tiny_mixed, "random", "test")
    monkeypatch.setitem(_fewlabel_tables.TABLES, "tiny_mixed", table)
    _fewlabel_tables.load_table.cache_clear()
    out = tmp_path / "fewlabel.csv"
    contenders = installed_contenders(fewlabel.CONTENDERS)
    argv = ["--tables", "tiny_mixed", "--seeds", "0", "--smoke", "--out", str(out),
            "--contenders", *contenders]
    fewlabel.main(argv)
    rows = read_rows(out)
    assert list(rows[0]) == fewlabel.FIELDS
    assert [r["contender"] for r in rows] == contenders
    for row in rows:
        assert row["config"] == "smoke" and row["commit"]
        assert 0 <= float(row["accuracy"]) <= 100
        # 70% of 178 rows train; 1% labeled but at least 5 of each of the 3 classes
        assert (row["n_labeled"], row["n_unlabeled"], row["n_test"]) == ("15", "109", "54")
        json.loads(row["details"])
    by_name = {r["contender"]: r for r in rows}
    assert by_name["qmatch_clf"]["encoder_n_epochs"] == "2"  # --smoke's tiny encoder
    # the head timed again on its own (frozen encoder), outside the fit's seconds
    ours = json.loads(by_name["qmatch_clf"]["details"])
    assert ours["head_seconds"] > 0 and "fit_seconds" not in ours
    assert float(by_name["qmatch_clf"]["fit_seconds"]) >= ours["pretraining_seconds"]
    assert by_name["hgb"]["details"] == '{"min_samples_leaf": 1}'

    fewlabel.main(argv)  # every cell recorded: nothing runs again
    assert read_rows(out) == rows

    fewlabel_report.main(["--csv", str(out), "--out-dir", str(tmp_path)])
    report = (tmp_path / "fewlabel.md").read_text()
    assert "## Config `smoke`" in report
    assert "| tiny_mixed | test | 178 | 5 | 3 |" in report  # colour: categorical, with NaN
    assert "**mean of 1 tables**" in report
    # ours on the raw table (NaN and the category read natively) beside the preprocessed call
    assert "### Ours on the raw table vs on the preprocessed one" in report
    assert "| qmatch_clf | tiny_mixed |" in report and "| qmatch_lr | tiny_mixed |" in report
    assert (tmp_path / "fewlabel.png").exists()
    _fewlabel_tables.load_table.cache_clear()


def test_labeled_rows_are_stratified_with_a_floor():
    y = np.repeat([0, 1, 2], [900, 90, 10])
    rows = _fewlabel_tables.labeled_rows(y, seed=0)
    assert np.bincount(y[rows]).tolist() == [9, 5, 5]  # 1% of 1,000, at least 5 per class
    assert len(np.unique(rows)) == len(rows)


def _rows(config, contender, accuracies, table="wine", **extra):
    return [{"table": table, "seed": seed, "config": config, "contender": contender,
             "accuracy": accuracy, "machine": "AMD EPYC, 2 cores, 1 thread(s)", **extra}
            for seed, accuracy in enumerate(accuracies)]


def test_precisions_are_paired_on_the_seeds_both_have():
    frame = pd.DataFrame(_rows("auto-v16", "qmatch_clf", [80.0, 82.0, 90.0])
                         + _rows("auto-v16-bf16", "qmatch_clf", [81.0, 81.0])
                         + _rows("auto-v16-bf16", "logreg", [10.0, 10.0, 10.0]))
    header, _, row = fewlabel_report.precision_pairs(frame)
    assert "float32 (`auto-v16`)" in header and "bf16 autocast (`auto-v16-bf16`)" in header
    # seed 2 has float32 alone: left out of both columns and of the gap
    assert row == "| wine | 81.00 ± 1.41 (2) | 81.00 ± 0.00 (2) | +0.00 ± 1.41 (2) |"
    assert fewlabel_report.precision_pairs(frame[frame["config"] == "auto-v16"]) == []


def test_the_paired_timing_reads_the_last_config_alone(tmp_path):
    frame = pd.DataFrame(
        _rows("auto-v12", "qmatch_clf", [50.0], fit_seconds=9.0)
        + _rows("auto-v12", "qmatch_clf_plain", [50.0], fit_seconds=3.0)
        + _rows("auto-v16", "qmatch_clf", [52.0, 54.0], fit_seconds=2.2)
        + _rows("auto-v16", "qmatch_clf_plain", [50.0, 50.0], fit_seconds=2.0))
    frame.to_csv(tmp_path / "fewlabel_timing.csv", index=False)
    lines, config = fewlabel_report.paired_timing(tmp_path / "fewlabel_timing.csv")
    assert config == "auto-v16"
    assert lines[2] == "| wine | 2.2 | 2.0 | 1.10 (max 1.10) | +3.00 ± 1.41 (2) |"
    assert fewlabel_report.paired_timing(tmp_path / "absent.csv") == ([], None)


def test_head_steps_pair_each_step_with_the_first_on_its_seeds():
    frame = pd.DataFrame(
        _rows("auto-v16", "qmatch_clf", [50.0, 52.0], fit_seconds=4.0)
        + _rows("auto-v18", "qmatch_clf", [51.0, 55.0, 99.0], fit_seconds=5.0)
        + _rows("auto-v16", "qmatch_clf", [80.0, 80.0], table="penguins", fit_seconds=2.0)
        + _rows("auto-v18", "qmatch_clf", [80.0, 80.0], table="penguins", fit_seconds=2.0))
    header, _, wine, penguins, mean = fewlabel_report.head_steps(
        frame, fewlabel_report.HONEST_STACKING)
    assert "before (auto-v16)" in header and "honest stacking (auto-v18)" in header
    # seed 2 of auto-v18 has no auto-v16 twin: left out
    assert wine == "| wine | 51.00 ± 1.41 (2) | 53.00 ± 2.83 (2) | +2.00 ± 1.41 (2) | 1.25 |"
    assert penguins == ("| penguins | 80.00 ± 0.00 (2) | 80.00 ± 0.00 (2) | +0.00 ± 0.00 (2) "
                        "| 1.00 |")
    assert mean == "| **mean of 2 tables** |  |  | +1.00 | 1.12 |"
    assert fewlabel_report.head_steps(frame[frame["config"] == "auto-v16"],
                                      fewlabel_report.HONEST_STACKING) == []


def test_fit_seconds_leave_out_the_rows_of_a_lent_gpu_machine():
    cpu, gpu = "AMD EPYC, 2 cores, 1 thread(s)", "Xeon, 16 cores, 4 thread(s), GPU NVIDIA H200"
    frame = pd.DataFrame(
        _rows("auto-v18", "qmatch_clf", [60.0, 62.0], fit_seconds=100.0, machine=cpu,
              encoder_best_epoch=1, encoder_n_epochs=2)
        + [{**row, "seed": row["seed"] + 2} for row in
           _rows("auto-v18", "qmatch_clf", [61.0], fit_seconds=7.0, machine=gpu,
                 encoder_best_epoch=1, encoder_n_epochs=2)]
        + _rows("defaults", "logreg", [50.0], fit_seconds=3.0, machine=gpu))
    header, _, wine = fewlabel_report.timing_rows(frame, ["wine"])
    cells = dict(zip(header.strip("|").split("|"), wine.strip("|").split("|"), strict=True))
    # ours: the two CPU rows alone (the GPU row's 7 s is left out); logreg: only GPU rows
    assert cells[" qmatch_clf s "].strip() == "100.0"
    assert cells[" logreg s "].strip() == "-"
    # the filter keeps the rows of machines without a GPU
    assert fewlabel_report.timed_alone(frame)["machine"].eq(cpu).all()
    # a step's seconds ratio: the seeds both steps timed alone (seed 1 of auto-v18 ran on
    # the GPU machine: 2 s against 8 s would halve the ratio)
    steps = pd.DataFrame(_rows("auto-v16", "qmatch_clf", [50.0, 50.0], fit_seconds=4.0)
                         + _rows("auto-v18", "qmatch_clf", [50.0], fit_seconds=8.0)
                         + [{**row, "seed": 1} for row in _rows(
                             "auto-v18", "qmatch_clf", [50.0], fit_seconds=2.0, machine=gpu)])
    _, _, wine, _ = fewlabel_report.head_steps(steps, fewlabel_report.HONEST_STACKING)
    assert wine.endswith("| 2.00 |")


def test_a_steps_seconds_ratio_needs_both_steps_on_one_machine():
    epyc, xeon = "AMD EPYC, 2 cores, 1 thread(s)", "Intel Xeon, 2 cores, 1 thread(s)"
    # seed 0: both on the EPYC (8 s against 4 s); seed 1: the second step on the Xeon
    steps = pd.DataFrame(_rows("auto-v18", "qmatch_clf", [50.0, 50.0], fit_seconds=4.0,
                               machine=epyc)
                         + _rows("auto-v19", "qmatch_clf", [51.0], fit_seconds=8.0,
                                 machine=epyc)
                         + [{**row, "seed": 1} for row in _rows(
                             "auto-v19", "qmatch_clf", [51.0], fit_seconds=1.0, machine=xeon)])
    _, _, wine, mean = fewlabel_report.head_steps(steps, fewlabel_report.LEAF_CAP)
    assert wine == "| wine | 50.00 ± 0.00 (2) | 51.00 ± 0.00 (2) | +1.00 ± 0.00 (2) | 2.00 |"
    # no seed on one machine: the gap stands, the ratio is left blank
    on_xeon = steps[~((steps["config"] == "auto-v19") & (steps["seed"] == 0))]
    _, _, wine, mean = fewlabel_report.head_steps(on_xeon, fewlabel_report.LEAF_CAP)
    assert wine == "| wine | 50.00 ± 0.00 (2) | 51.00 (1) | +1.00 (1) | - |"
    assert mean == "| **mean of 1 tables** |  |  | +1.00 | - |"


def test_every_contender_view_shows_the_calls_of_ours_that_ran():
    frame = pd.DataFrame(_rows("auto-v19", "qmatch_clf", [60.0, 62.0])
                         + _rows("defaults", "logreg", [59.0, 59.0])
                         + _rows("peers-v1", "catboost", [61.0, 60.0]))
    header, _, wine, mean = fewlabel_report.against_every_contender(frame)
    # no raw call in this config: no column for it
    assert "qmatch_clf_raw" not in header and header.endswith("| qmatch_clf \u2212 best other |")
    assert wine.endswith("| catboost | +0.50 ± 2.12 (2) [+0.3 s.e.] |")
    assert mean.endswith("| 60.50 (per-table best) | +0.50 |")
    raw = pd.DataFrame(_rows("auto-v19", "qmatch_clf_raw", [58.0, 60.0]))
    header, _, wine, _ = fewlabel_report.against_every_contender(pd.concat([frame, raw]))
    assert header.endswith("| qmatch_clf \u2212 best other | qmatch_clf_raw \u2212 best other |")
    assert wine.endswith("| catboost | +0.50 ± 2.12 (2) [+0.3 s.e.] "
                         "| -1.50 ± 2.12 (2) ✗ [-1.0 s.e.] |")
    assert fewlabel_report.against_every_contender(frame[frame["contender"] != "qmatch_clf"]) \
        == []


def test_the_picked_contender_is_chosen_on_the_other_half_of_the_seeds():
    # logreg leads the even seeds, catboost the odd ones: each is picked for, and
    # scored on, the other half, where it is the worse one
    frame = pd.DataFrame(
        _rows("auto-v18", "qmatch_clf", [60.0, 60.0, 60.0, 60.0])
        + _rows("defaults", "logreg", [70.0, 50.0, 70.0, 50.0])
        + _rows("defaults", "hgb", [40.0, 40.0, 40.0, 40.0])
        + _rows("peers-v1", "catboost", [55.0, 65.0, 55.0, 65.0])
        + _rows("peers-v1", "selftrain_lr", [30.0, 30.0, 30.0, 30.0, 99.0])
        + _rows("peers-v1", "selftrain_hgb", [30.0, 30.0, 30.0, 30.0]))
    header, _, wine, mean = fewlabel_report.picked_without_hindsight(frame)
    assert "picked for even / odd seeds" in header
    # even seeds get catboost (best on odd: 65), odd seeds logreg (best on even: 70);
    # seed 4 has selftrain_lr alone and is left out
    assert wine == ("| wine | 60.00 ± 0.00 (4) | catboost / logreg | 52.50 ± 2.89 (4) "
                    "| +7.50 ± 2.89 (4) [+5.2 s.e.] |")
    assert mean == "| **mean of 1 tables** |  |  | 52.50 | +7.50 |"
    assert fewlabel_report.picked_without_hindsight(
        frame[~frame["contender"].isin(fewlabel_report.PEERS)]) == []


def test_every_contender_seconds_leave_out_gpu_rows_and_name_tiny_fits():
    gpu = "Intel Xeon, 16 cores, 4 thread(s), GPU NVIDIA H200"
    frame = pd.DataFrame(_rows("auto-v19", "qmatch_clf", [60.0, 62.0], fit_seconds=4.0)
                         + _rows("peers-v1", "catboost", [61.0], fit_seconds=3.0)
                         + [{**row, "seed": 1} for row in _rows(
                             "peers-v1", "catboost", [60.0], fit_seconds=1.0, machine=gpu)]
                         + _rows("peers-v1", "lightgbm", [50.0, 50.0], fit_seconds=0.01))
    header, _, wine = fewlabel_report.seconds_of_every_contender(frame)
    assert header == "| Table | qmatch_clf s | catboost s | lightgbm s |"
    # the GPU machine's catboost seconds are not a fit's alone: seed 0's stand
    assert wine == "| wine | 4.0 | 3.0 | <0.1 |"


@pytest.mark.parametrize("gap, cell", [
    ([1.0, 3.0], "+2.00 ± 1.41 (2) [+2.0 s.e.]"),
    ([-1.0, -3.0, -2.0], "-2.00 ± 1.00 (3) ✗ [-3.5 s.e.]"),
    ([-1.0, -1.0], "-1.00 ± 0.00 (2) ✗"),  # no spread: no standard error to count in
    ([0.4], "+0.40 (1)"),  # one seed: no standard error
    ([], "-"),
])
def test_gaps_in_standard_errors(gap, cell):
    assert fewlabel_report.gap_cell(pd.Series(gap, dtype=float), in_standard_errors=True) == cell


def test_catboost_time_ratios_pair_seeds_of_the_configs_own_run():
    xeon = "Intel Xeon, 2 cores, 1 thread(s)"
    frame = pd.DataFrame(
        _rows("budget", "qmatch_clf", [90.0, 92.0, 94.0], fit_seconds=8.0,
              details='{"head_seconds": 4.5, "pretraining_seconds": 3.0}')
        + _rows("budget", "catboost", [80.0, 82.0], fit_seconds=1.0)
        # seed 2's CatBoost ran on another machine: not a pair
        + [{**row, "seed": 2, "machine": xeon}
           for row in _rows("budget", "catboost", [84.0], fit_seconds=1.0)]
        # another config's CatBoost rows (another run) are not read
        + _rows("peers", "catboost", [70.0, 70.0, 70.0], fit_seconds=100.0)
        + _rows("budget", "qmatch_clf", [50.0, 60.0], table="penguins", fit_seconds=2.0)
        + _rows("budget", "catboost", [50.0, 50.0], table="penguins", fit_seconds=1.0))
    header, _, wine, penguins, mean = fewlabel_report.against_catboost_time(frame, "budget")
    assert header.startswith("| Table | qmatch_clf s | catboost s | qmatch_clf / catboost")
    assert header.endswith("| pretraining s | rest s (head, set-up, prediction) | head s |")
    # 3 s of wine's 8 pretrained, the other 5 the rest; its head alone 4.5, not under 3
    assert wine == ("| wine | 8.0 | 1.0 | 8.0 ✗ | 91.00 ± 1.41 (2) | 81.00 ± 1.41 (2) "
                    "| 3.0 | 5.0 | 4.5 ✗ |")
    # penguins' rows predate the measurements: no split
    assert penguins.startswith("| penguins | 2.0 | 1.0 | 2.0 |")
    assert penguins.endswith("|  |  |  |")
    # the geometric mean of 8 and 2 is 4, above the 2x goal
    assert mean == "| **geometric mean of 2 tables** |  |  | 4.0 ✗ |  |  |  |  |  |"
    assert fewlabel_report.against_catboost_time(frame, "peers") == []


def test_the_pareto_figure_has_a_panel_a_table(tmp_path):
    frame = pd.DataFrame(
        _rows("auto", "qmatch_clf", [90.0, 92.0], fit_seconds=8.0)
        + _rows("auto", "catboost", [80.0, 82.0], fit_seconds=0.0)  # a fit under 10 ms
        + _rows("auto", "logreg", [50.0, 60.0], table="penguins", fit_seconds=2.0))
    path = tmp_path / "pareto.png"
    fewlabel_report.pareto_plot(path, frame, ["wine", "penguins"], "auto")
    assert path.stat().st_size > 0


def test_a_steps_base_may_take_each_seed_from_the_first_config_that_has_it():
    frame = pd.DataFrame(_rows("shared", "qmatch_clf", [60.0], fit_seconds=1.0)
                         + _rows("v20", "qmatch_clf", [50.0, 52.0], fit_seconds=1.0)
                         + _rows("input", "qmatch_clf", [61.0, 55.0], fit_seconds=1.0))
    steps = (("before", ("shared", "v20"), "qmatch_clf"), ("after", "input", "qmatch_clf"))
    _, _, wine, _ = fewlabel_report.head_steps(frame, steps, in_standard_errors=True)
    # seed 0 from "shared" (60), seed 1 from "v20" (52): gaps +1 and +3
    assert wine.startswith("| wine | 56.00 ± 5.66 (2) | 58.00 ± 4.24 (2) | +2.00 ± 1.41 (2) ")
