"""Smoke test of the few-shot harness and its report on a tiny synthetic split."""

import csv
import dataclasses
import json

import pandas as pd
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch

from benchmarks import _bare_qmatch, fewshot, peer_tabnet, report
from benchmarks._fewshot_params import Budget, supervised_lr, tuned_params
from qmatch_sklearn import QMatchEncoder
from qmatch_sklearn._search_space import DOWNSTREAM_LEARNING_RATES, PRETEXT_LEARNING_RATES
from qmatch_sklearn._seeding import draw_seeds

TINY = Budget("tiny", {"hidden_sizes": (16,), "embedding_dim": 8},
              {"max_epochs": 2, "device": "cpu", "batch_size": 64},
              {"device": "cpu", "max_epochs": 3}, max_rows_test=50)


def tiny_split(dataset, seed, data_home=None):
    """330 synthetic rows cut like a paper split: 200 pretext (20 labeled), 30 pretext-val,
    20 val, 100 test."""
    X, y = make_classification(330, n_features=6, n_informative=4, random_state=seed)
    parts = {name: Bunch(X=X[rows], y=y[rows]) for name, rows in [
        ("pretext", slice(0, 200)), ("train", slice(0, 20)), ("pretext_val", slice(200, 230)),
        ("val", slice(230, 250)), ("test", slice(230, 330)),
    ]}
    return Bunch(**parts, preprocessor=StandardScaler())


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


def section(readme, title):
    """The lines of the README section under the heading ``title``, up to the next heading."""
    lines = readme.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start:end]


GOAL = "### Q-Match against the paper and against our other methods"


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
        assert 0 <= float(row["accuracy"]) <= 100 and 0 <= float(row["val_accuracy"]) <= 100
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
    goal = [line for line in section(readme, GOAL) if line.startswith("| Adult 1% | linear |")]
    assert len(goal) == 1 and "of 2 |" in goal[0]  # Q-Match ranked against the logreg row
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


def test_prepared_data_holds_every_part_of_the_split(harness):
    data = fewshot.prepare_data("adult_1p", 0, None, 50, None)
    sizes = {name: len(part) for name, part in data.items()}
    assert sizes == {"X_pretext": 200, "X_pretext_val": 30, "X_train": 20, "y_train": 20,
                     "X_val": 20, "y_val": 20, "X_test": 50, "y_test": 50}


def test_a_val_sample_leaves_every_other_part_as_it_was(harness):
    whole = fewshot.prepare_data("adult_1p", 0, 0.5, 50, None)
    fewshot.prepare_data.cache_clear()
    sampled = fewshot.prepare_data("adult_1p", 0, 0.5, 50, None, max_rows_val=7)
    assert len(sampled.X_val) == len(sampled.y_val) == 7

    def rows(X, y):
        return {(*row, label) for row, label in zip(X.tolist(), y.tolist(), strict=True)}

    assert rows(sampled.X_val, sampled.y_val) <= rows(whole.X_val, whole.y_val)
    for part in ("X_pretext", "X_pretext_val", "X_train", "y_train", "X_test", "y_test"):
        assert (sampled[part] == whole[part]).all(), part


def test_the_budgets_fine_tuning_values_reach_the_fine_tuning_models_only():
    budget = Budget("capped", {}, {}, {"device": "cpu"}, finetune={"max_epochs": 7})
    for method, protocol, max_epochs in [("qmatch", "linear", 500), ("qmatch", "finetune", 7),
                                         ("supervised", "finetune", 7)]:
        run = fewshot.Run("adult_1p", method, 0, "{}", (protocol,))
        encoder = QMatchEncoder() if method == "qmatch" else None
        (model,) = fewshot.downstream_candidates(run, protocol, budget, encoder)
        assert model.max_epochs == max_epochs, (method, protocol)


@pytest.mark.parametrize("per_protocol", [False, True])
def test_a_budget_that_pretrains_per_protocol_gives_fine_tuning_its_own_encoder(
        harness, monkeypatch, per_protocol):
    """The reference pretrains each protocol with its own tuned row: Q-Match's rows on
    Adult differ (student temperature 0.05 and 0.1, pretext lr 1e-5 and 1e-4, EMA decay 0
    and 0.99); the other budgets pretrain once. The linear row is written before the
    fine-tuning encoder trains."""
    out, command = harness
    monkeypatch.setitem(fewshot.BUDGETS, "tiny",
                        dataclasses.replace(TINY, pretext_per_protocol=per_protocol))
    pretext = tuned_params("qmatch", "adult_1p")[0]
    assert pretext["linear"]["student_temperature"] != pretext["finetune"]["student_temperature"]
    fitted, rows_written = [], []
    fit = QMatchEncoder.fit

    def recorded_fit(self, X, **kwargs):
        fitted.append(self.student_temperature)
        rows_written.append(len(read_rows(out)) if out.exists() else 0)
        return fit(self, X, **kwargs)

    monkeypatch.setattr(QMatchEncoder, "fit", recorded_fit)
    fewshot.main(command("qmatch"))
    rows = read_rows(out)
    encoders = [json.loads(r["params"])["model"]["encoder"] for r in rows]
    temperatures = [e.get("student_temperature", 0.1) for e in encoders]
    if per_protocol:
        assert fitted == temperatures == [pretext[p]["student_temperature"]
                                          for p in ("linear", "finetune")]
        assert [e["lr"] for e in encoders] == [pretext[p]["lr"] for p in ("linear", "finetune")]
        assert rows_written == [0, 1]
    else:
        assert fitted == temperatures[:1] and encoders[0] == encoders[1]
        assert rows[0]["pretrain_seconds"] == rows[1]["pretrain_seconds"]


def test_protocols_with_equal_tuned_pretext_values_share_one_pretraining(harness, monkeypatch):
    # VIME's two rows on Cover Type differ only downstream: one encoder serves both,
    # and the report counts its seconds once
    out, command = harness
    monkeypatch.setitem(fewshot.BUDGETS, "tiny",
                        dataclasses.replace(TINY, pretext_per_protocol=True))
    pretext = tuned_params("vime", "covtype_1p")[0]
    assert pretext["linear"] == pretext["finetune"]
    fitted = []
    fit = fewshot.METHODS["vime"].fit
    monkeypatch.setattr(fewshot.METHODS["vime"], "fit",
                        lambda self, X, **kwargs: fitted.append(1) or fit(self, X, **kwargs))
    argv = command("vime")
    argv[argv.index("adult_1p")] = "covtype_1p"
    fewshot.main(argv)
    frame = pd.read_csv(out)
    assert len(fitted) == 1 and frame["pretrain_seconds"].nunique() == 1
    assert report.pretrainings(frame)["pretrain_seconds"].sum() == frame["pretrain_seconds"][0]


def test_a_protocols_row_is_yielded_before_the_next_protocol_trains(harness, monkeypatch):
    """A run stopped while fine-tuning keeps its linear result."""
    fitted = []
    fit = fewshot.fit_downstream
    monkeypatch.setattr(fewshot, "fit_downstream",
                        lambda model, data: fitted.append(model.freeze_encoder) or fit(model, data))
    run = fewshot.Run("adult_1p", "qmatch", 0, "{}", ("linear", "finetune"))
    rows = fewshot.execute(run, TINY, 50, None, "here")
    assert next(rows)["protocol"] == "linear" and fitted == [True]
    assert next(rows)["protocol"] == "finetune" and fitted == [True, False]


def test_search_chooses_on_val_among_the_grid(harness, tmp_path):
    """With every grid point sampled, the tuned configuration is a candidate, so the
    search's validation accuracy is at least the tuned one's (fits are seeded)."""
    out, command = harness
    fewshot.main(command("vime"))
    fewshot.main([*command("vime"), "--search", "9"])  # vime's grid: 3 lr x 3 corruption
    tuned, searched = read_rows(out)[:2], read_rows(out)[2:]
    assert [r["sweep"] for r in searched] == ['{"search": 9}'] * 2
    for before, after in zip(tuned, searched, strict=True):
        assert before["protocol"] == after["protocol"]
        assert float(after["val_accuracy"]) >= float(before["val_accuracy"])
        model = json.loads(after["params"])["model"]
        assert model.get("lr", 1e-3) in DOWNSTREAM_LEARNING_RATES
        assert model["encoder"].get("lr", 1e-3) in PRETEXT_LEARNING_RATES
    report.main(["--csv", str(out), "--out-dir", str(tmp_path)])
    assert "Tuned values vs a search on the `val` rows" in (tmp_path / "README.md").read_text()


def test_peer_comparison_writes_both_libraries_and_resumes(harness, monkeypatch, tmp_path):
    pytest.importorskip("pytorch_tabnet")
    monkeypatch.setitem(peer_tabnet.BUDGETS, "tiny", TINY)
    out = tmp_path / "peer.csv"
    argv = ["--seeds", "0", "--budget", "tiny", "--out", str(out)]
    peer_tabnet.main(argv)
    rows = read_rows(out)
    assert [(r["library"], r["protocol"]) for r in rows] == [
        ("pytorch-tabnet", "finetune"), ("pytorch-tabnet", "scratch"),
        ("qmatch_sklearn", "linear"), ("qmatch_sklearn", "finetune"),
    ]
    pretrained = [r for r in rows if r["protocol"] != "scratch"]
    for row in pretrained:  # samples/s = rows x epochs / seconds, from the unrounded seconds:
        samples = 200 * int(row["pretrain_epochs"])  # the CSV rounds seconds to 0.01 s
        seconds = float(row["pretrain_seconds"])
        assert (samples / (seconds + 0.005) - 0.5 <= float(row["pretrain_samples_per_s"])
                <= samples / (seconds - 0.005) + 0.5)
    assert all(0 <= float(r["accuracy"]) <= 100 for r in rows)
    peer_tabnet.main(argv)  # the seed is recorded: nothing runs again
    assert read_rows(out) == rows
    table = out.with_suffix(".md").read_text()
    assert "| pytorch-tabnet | finetune |" in table and "seed 0:" in table


@pytest.mark.parametrize("budget", sorted(fewshot.BUDGETS))
def test_every_budget_builds_valid_estimators_for_every_method(budget):
    """Each budget's parameters reach valid encoders and classifiers (a typo or a
    parameter given twice fails here, not hours into a run); nothing is fitted."""
    budget = fewshot.BUDGETS[budget]
    for method in fewshot.ALL_METHODS:
        run = fewshot.Run("covtype_1p", method, 0, "{}", ("linear", "finetune"))
        encoder = fewshot.make_encoder(run, budget) if method in fewshot.SELF_SUPERVISED else None
        if encoder is not None:
            encoder._validate_params()
        for protocol in ("linear", "finetune"):
            for model in fewshot.downstream_candidates(run, protocol, budget, encoder):
                if hasattr(model, "_validate_params"):
                    model._validate_params()


def test_sklearn_baselines_use_the_val_rows_as_their_api_allows():
    run = fewshot.Run("adult_1p", "logreg", 0, "{}", ("raw",))
    candidates = fewshot.downstream_candidates(run, "raw", TINY, None)
    assert sorted(c[-1].C for c in candidates) == [1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0]
    estimators = {name: estimator for name, (estimator, _) in fewshot.sklearn_baselines(0).items()}
    assert fewshot.takes_val(estimators["hgb"]) and not fewshot.takes_val(estimators["mlp"])
    assert fewshot.takes_val(fewshot.SupervisedMLPClassifier())


def test_a_stand_in_configuration_takes_the_papers_values_and_column(harness, tmp_path):
    # higgs_1p_sample stands in for higgs_1p: its tuned values, and its paper numbers,
    # flagged as not comparable since its pretext set is not the paper's size.
    assert tuned_params("qmatch", "higgs_1p_sample") == tuned_params("qmatch", "higgs_1p")
    assert supervised_lr("higgs_1p_sample") == supervised_lr("higgs_1p")
    out, command = harness
    argv = command("qmatch")
    argv[argv.index("adult_1p")] = "higgs_1p_sample"
    fewshot.main(argv)
    report.main(["--csv", str(out), "--out-dir", str(tmp_path)])
    readme = (tmp_path / "README.md").read_text()
    paper_linear, paper_finetune = (report.PAPER[p]["qmatch"][1][0] for p in report.PAPER)
    goal = [line for line in section(readme, GOAL) if line.startswith("| Higgs 1% (10,984-row")]
    assert [line.split(" | ")[3] for line in goal] == [f"{paper_linear:.2f}",
                                                      f"{paper_finetune:.2f}"]
    assert all(line.split(" | ")[4] == "not comparable" for line in goal)
    assert "| Higgs 1% (10,984-row sample) ours | Higgs100k 1% paper |" in readme
    assert "200 pretext rows instead of the paper's 98,000" in readme


def test_a_more_labels_configuration_is_reported_beside_the_papers_tables_1_to_3(
        harness, tmp_path):
    # covtype_15k (the paper's Table 2) runs with covtype_1p's tuned values and is
    # reported in its own table, with Q-Match's paper numbers for both protocols, not in
    # the 1% tables (Tables 4-5).
    assert tuned_params("qmatch", "covtype_15k") == tuned_params("qmatch", "covtype_1p")
    assert "covtype_15k" not in fewshot.parse_args([]).datasets  # the default: 1% only
    out, command = harness
    argv = command("qmatch", "logreg")
    argv[argv.index("adult_1p")] = "covtype_15k"
    fewshot.main(argv)
    report.main(["--csv", str(out), "--out-dir", str(tmp_path)])
    readme = (tmp_path / "README.md").read_text()
    table = section(readme, "## The paper's Tables 1-3: more labels")
    rows = {r["protocol"]: float(r["accuracy"]) for r in read_rows(out)}
    for protocol, paper in (("linear", "73.79 ± 0.22"), ("finetune", "82.76 ± 0.07")):
        line = next(line for line in table if "(`covtype_15k`)" in line
                    and f"| {protocol} |" in line)
        cells = line.strip("| ").split(" | ")
        assert cells[0] == "2" and cells[3] == paper
        assert cells[4] == f"{rows[protocol]:.2f} (1), not comparable"  # 200 pretext rows
        assert cells[5] == f"LogisticRegression {rows['raw']:.2f} (1)"
    assert "ours: 200 pretext / 20 labeled rows" in readme
    assert "covtype_15k" not in readme.split("## The paper's Tables 1-3")[0]
    ran_all = int(next(r["eval_epochs"] for r in read_rows(out)
                       if r["protocol"] == "finetune") == "500")
    assert f"Cover Type 15k `tiny` {ran_all} of 1." in "\n".join(table)


def test_report_lists_every_configuration_tried_for_qmatch(harness, tmp_path, monkeypatch):
    # Where Q-Match falls short, the report shows each configuration run (the tuned
    # values, a search) with its distance to the paper's number.
    monkeypatch.setitem(report.PAPER_PRETEXT_ROWS, "adult_1p", 200)  # the tiny split's size
    out, command = harness
    fewshot.main(command("qmatch"))
    fewshot.main([*command("qmatch"), "--search", "2"])
    report.main(["--csv", str(out), "--out-dir", str(tmp_path)])
    table = section((tmp_path / "README.md").read_text(),
                    "## Q-Match against the paper in every configuration tried")
    assert ("| Dataset | Protocol | paper | budget `tiny`, tuned values | "
            "budget `tiny`, `--search 2` |") in table
    rows = read_rows(out)
    for protocol, paper in (("linear", 80.33), ("finetune", 77.75)):
        line = next(line for line in table
                    if line.startswith(f"| Adult 1% | {protocol} | {paper:.2f} |"))
        cells = line.strip("| ").split(" | ")[3:]
        for cell, sweep in zip(cells, ("{}", '{"search": 2}'), strict=True):
            accuracy = next(float(r["accuracy"]) for r in rows
                            if r["protocol"] == protocol and r["sweep"] == sweep)
            assert cell == f"{accuracy:.2f} (1), {accuracy - paper:+.2f}"


@pytest.mark.parametrize("params", [{}, {"architecture": "imix", "hidden_sizes": (16, 32),
                                         "embedding_dim": 8, "projection_sizes": (12, 6),
                                         "queue_size": 20, "teacher_corruption": 0.2}])
def test_bare_qmatch_is_the_library_network(params):
    """The throughput benchmark's bare loop trains what fit trains: same seeds, weights, losses."""
    estimator = QMatchEncoder(random_state=0, **params)
    assert _bare_qmatch.fit_seeds(0) == draw_seeds(0, 4)
    library, criterion = estimator._build_pretext(7, torch.Generator().manual_seed(5), None)
    bare = _bare_qmatch.build(estimator, 7, seed=5)
    generators = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-2) for m in (library, bare)]
    for step in range(3):
        x = torch.randn(64, 7, generator=torch.Generator().manual_seed(step))
        outputs = library(x, generators[0])
        losses = criterion(outputs), bare.loss(x, generators[1])
        for loss, optimizer in zip(losses, optimizers, strict=True):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        library.after_step(outputs)
        bare.after_step()
        assert torch.equal(*losses)
    weights = {k.replace("queue.embeddings", "queue"): v for k, v in library.state_dict().items()}
    assert weights.keys() == bare.state_dict().keys()
    assert all(torch.equal(v, bare.state_dict()[k]) for k, v in weights.items())


def test_bare_qmatch_under_bf16_autocast_computes_the_librarys_float32_loss():
    """In bf16 the bare loop runs the networks under autocast and the loss in float32
    from the float32-cast projections, as ``PretextNet`` does: the same loss."""
    estimator = QMatchEncoder(random_state=0, hidden_sizes=(16,), embedding_dim=8,
                              projection_sizes=(12, 6), queue_size=20)
    library, criterion = estimator._build_pretext(7, torch.Generator().manual_seed(5), None)
    bare = _bare_qmatch.build(estimator, 7, seed=5)
    x = torch.randn(64, 7, generator=torch.Generator().manual_seed(0))
    with torch.autocast("cpu", torch.bfloat16):
        outputs = library(x, torch.Generator().manual_seed(1))
        bare_loss = bare.loss(x, torch.Generator().manual_seed(1))
    outputs = type(outputs)(*(field.float() for field in outputs))
    assert bare_loss.dtype == torch.float32
    assert torch.equal(criterion(outputs), bare_loss)
    assert torch.equal(outputs.teacher, bare.last_teacher)


def test_harness_store_refuses_other_columns_and_grid_resumes(tmp_path):
    """A results CSV with other columns is refused by name; a grid run twice measures
    each (cell, contender) once, and a cell whose data is None is skipped."""
    import argparse

    from benchmarks._harness import Store, run_grid

    path = tmp_path / "results.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="has columns"):
        Store(path, ["a", "c"], ("a",)).done()
    store = Store(tmp_path / "grid.csv", ["cell", "contender", "commit", "value", "machine",
                                          "finished"], ("cell", "contender"))
    args = argparse.Namespace(contenders=["x", "y"], threads=1, max_minutes=None)
    calls = []

    def measure(contender, data, cell):
        calls.append((cell["cell"], contender))
        return {"value": data}

    cells = [{"cell": 0}, {"cell": 1}]
    for _ in range(2):
        run_grid(args, store, cells, lambda cell: None if cell["cell"] else 7, measure, str)
    assert calls == [(0, "x"), (0, "y")]
    assert store.done() == {("0", "x"), ("0", "y")}


@pytest.mark.parametrize("enabled", [False, True])
def test_tf32_matmuls_hold_only_inside_their_block(enabled):
    from benchmarks.precision import tf32_matmuls

    flags = torch.backends.cuda.matmul, torch.backends.cudnn
    before = [flag.allow_tf32 for flag in flags]
    with tf32_matmuls(enabled):
        assert [flag.allow_tf32 for flag in flags] == [enabled, enabled]
    assert [flag.allow_tf32 for flag in flags] == before
