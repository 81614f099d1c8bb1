"""Few-shot benchmark: the paper's 1%-label Tables 4 (linear) and 5 (fine-tuning), resumable.

``--datasets covtype_10p covtype_15k mnist_10p higgs_5k higgs_10k higgs_100k`` runs the
configurations of the paper's Tables 1-3 (more labels) with the same protocol, each with
the tuned values of its dataset's 1% configuration (the paper publishes no others).

For each (dataset, method, seed) the method's encoder is pretrained, then both
protocols are evaluated on it: "linear" (frozen encoder + linear head,
``QMatchClassifier(FrozenEstimator(encoder), freeze_encoder=True)``) and "finetune"
(``freeze_encoder=False``; the classifier trains a copy of the network, so the frozen
encoder stays intact). One pretraining serves both, with the linear protocol's tuned
values, unless the budget pretrains per protocol (``pretext_per_protocol``, as the
reference does): then "finetune" gets its own encoder where its tuned pretext values
differ. ``supervised`` is ``SupervisedMLPClassifier`` ("finetune"
only: the paper's supervised linear baseline is a logistic regression on the inputs,
which is ``logreg``); ``logreg``, ``hgb`` and ``mlp`` are scikit-learn classifiers on
the preprocessed features (protocol "raw").

Protocol, per seed (the paper's, reference_impl.md §5 and §1.7):

- the split is ``load_paper_split(dataset, random_state=seed)``: each seed draws its
  own rows (labeled ones included), network initialisation and test sample;
  the split's preprocessor is fitted on the pretext rows;
- pretext: ``encoder.fit(pretext.X, X_val=pretext_val.X)`` (early stopping on the
  split's pretext-validation rows; Cover Type's is its ``val`` split, as in the paper);
- downstream: the labels of the split's ``train`` rows train; the split's ``val`` rows
  (a seeded sample of them where the budget sets ``max_rows_val``) early-stop the torch
  classifiers on validation *accuracy* with patience 64, at most 500 epochs or the
  budget's ``finetune`` cap (``fit(X, y, X_val=, y_val=)``), and are where any choice
  is made: the scikit-learn baselines use them as their API allows (``logreg`` picks
  ``C`` on them, ``hgb`` early-stops on them, ``mlp`` runs at its defaults);
- hyper-parameters: the paper's tuned values (``_fewshot_params.py``) and the budget,
  or with ``--search N`` the best on ``val`` of N pretext configurations sampled from
  ``paper_param_grid`` crossed with every downstream learning rate of the paper's grid
  (chosen per protocol, as the reference tunes LC and FTC separately);
- accuracy (%) on the test rows, at most ``--max-rows-test`` of them (a seeded sample).
  The test rows are scored once per result, for the chosen model only.

Each result is appended to the CSV as soon as it is measured; results already there
(same dataset, method, protocol, seed, budget and sweep) are skipped, so an
interrupted run resumes. ``python -m benchmarks.report`` turns the CSV into
``benchmarks/results/README.md`` and figures.

    python -m benchmarks.fewshot --datasets adult_1p --methods qmatch vime supervised logreg \\
        hgb --seeds 0 1 2 --budget cpu-small
    python -m benchmarks.fewshot --datasets adult_1p --methods qmatch --queue-sizes 64 512 4096
    python -m benchmarks.fewshot --datasets adult_1p --methods qmatch vime --search 8
"""

import argparse
import functools
import itertools
import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.pipeline import Pipeline
from sklearn.utils import Bunch
from tqdm import tqdm

from qmatch_sklearn import METHODS, QMatchClassifier, SupervisedMLPClassifier, paper_param_grid
from qmatch_sklearn.datasets import (
    load_adult,
    load_covtype,
    load_higgs,
    load_mnist,
    load_paper_split,
)

from ._fewshot_params import (
    BUDGETS,
    DATASETS,
    MORE_LABELS,
    VARIANTS,
    sklearn_baselines,
    supervised_lr,
    tuned_params,
    variant,
)
from ._harness import Store, cpu_model

RESULTS = Path(__file__).parent / "results" / "fewshot.csv"
#: The configurations of the paper's Tables 4 and 5 (1% labels), run by default.
ONE_PERCENT = tuple(d for d in DATASETS if d not in MORE_LABELS)
FIELDS = [
    "dataset", "method", "protocol", "seed", "budget", "sweep", "accuracy", "val_accuracy",
    "pretrain_seconds", "eval_seconds", "pretrain_epochs", "eval_epochs",
    "n_pretext", "n_labeled", "n_test", "params", "machine", "finished",
]
#: The columns that identify a result: a row with the same values is not run again.
KEY = ("dataset", "method", "protocol", "seed", "budget", "sweep")
SELF_SUPERVISED = (*METHODS, *VARIANTS)
SKLEARN = tuple(sklearn_baselines(0))
ALL_METHODS = (*SELF_SUPERVISED, "supervised", *SKLEARN)
#: Harness-level sweep parameters, not encoder parameters: which rows are labeled, and
#: how many pretext configurations a search samples.
LABEL_FRACTION = "label_fraction"
SEARCH = "search"
HARNESS_PARAMS = (LABEL_FRACTION, SEARCH)
#: The paper's downstream early stopping: validation accuracy, 65 stale epochs at most.
DOWNSTREAM_PROTOCOL = {"scoring": "accuracy", "patience": 64}
#: The paper's downstream learning rates, searched under ``--search``.
DOWNSTREAM_LEARNING_RATES = paper_param_grid("supervised")["lr"]
_LOADERS = {"adult": load_adult, "covtype": load_covtype, "higgs": load_higgs, "mnist": load_mnist}


def protocols(method):
    """The protocols a method is evaluated with."""
    if method in SKLEARN:
        return ("raw",)
    if method == "supervised":
        return ("finetune",)
    return ("linear", "finetune")


@functools.cache
def _load_dataset(kind, data_home):
    return _LOADERS[kind](data_home=data_home)


def load_split(dataset, seed, data_home=None):
    """``load_paper_split(dataset, random_state=seed)``, reading each file once per process."""
    raw = _load_dataset(dataset.split("_")[0], data_home)
    return load_paper_split(dataset, random_state=seed, dataset=raw)


@dataclass(frozen=True)
class Run:
    """The protocols in ``todo`` of one (dataset, method, seed, sweep): one pretraining
    serves them all unless the budget pretrains per protocol (:func:`pretrain`)."""

    dataset: str
    method: str
    seed: int
    sweep: str  # canonical JSON of the swept parameters, "{}" for the main tables
    todo: tuple

    @property
    def sweep_params(self):
        return json.loads(self.sweep)


@functools.lru_cache(maxsize=1)
def prepare_data(dataset, seed, label_fraction, max_rows_test, data_home, max_rows_val=None):
    """Preprocessed float32 pretext, pretext-validation, labeled, val and test rows of a split.

    ``label_fraction`` None labels the split's ``train`` rows; a float labels that
    share of the pretext rows instead (a seeded sample), for the label-scaling figure.
    ``max_rows_test`` and ``max_rows_val`` keep a seeded sample of at most that many
    test and ``val`` rows (the pretext-validation rows stay whole, even where they are
    the ``val`` split's, as on Cover Type); the val sample is drawn last, so the other
    draws are the same with or without it.
    """
    split = load_split(dataset, seed, data_home)
    preprocessor = split.preprocessor.fit(split.pretext.X)
    rng = np.random.RandomState(seed)  # the test sample first: the same for every sweep
    test = _sample(rng, len(split.test.y), max_rows_test)
    labeled = split.train
    if label_fraction is not None:
        n_pretext = len(split.pretext.y)
        rows = rng.choice(n_pretext, max(2, round(label_fraction * n_pretext)), replace=False)
        labeled = Bunch(X=_rows(split.pretext.X, rows), y=np.asarray(split.pretext.y)[rows])
    val = _sample(rng, len(split.val.y), max_rows_val)

    def as_float(X):
        return np.asarray(preprocessor.transform(X), dtype=np.float32)

    pretext_val = split.val if split.pretext_val is None else split.pretext_val
    return Bunch(
        X_pretext=as_float(split.pretext.X), X_pretext_val=as_float(pretext_val.X),
        X_train=as_float(labeled.X), y_train=np.asarray(labeled.y),
        X_val=as_float(_rows(split.val.X, val)), y_val=np.asarray(split.val.y)[val],
        X_test=as_float(_rows(split.test.X, test)), y_test=np.asarray(split.test.y)[test],
    )


def _sample(rng, n_rows, max_rows):
    """The sorted indices of a seeded sample of at most ``max_rows`` of ``n_rows`` rows;
    all rows, drawing nothing, when they are no more than that."""
    if max_rows is None or n_rows <= max_rows:
        return np.arange(n_rows)
    return np.sort(rng.choice(n_rows, max_rows, replace=False))


def _rows(X, rows):
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


def make_encoder(run, budget, candidate=None, protocol="linear"):
    """The method's unfitted encoder for ``protocol``: budget, tuned values (the
    protocol's own where the budget pretrains per protocol, else the linear protocol's),
    the sweep, a search candidate."""
    base, variant_params = variant(run.method)
    tuned = tuned_params(run.method, run.dataset)[0][
        protocol if budget.pretext_per_protocol else "linear"]
    sweep = {k: v for k, v in run.sweep_params.items() if k not in HARNESS_PARAMS}
    params = {**budget.network, **budget.pretext, **budget.heads.get(base, {}), **tuned,
              **variant_params, **sweep, **(candidate or {})}
    return METHODS[base](**params, random_state=run.seed)


def pretext_candidates(run):
    """The pretext configurations to try: the tuned one, or a seeded sample of the paper's grid."""
    n_search = run.sweep_params.get(SEARCH)
    if run.method not in SELF_SUPERVISED or n_search is None:
        return [None]
    grid = paper_param_grid(variant(run.method)[0])
    return list(ParameterSampler(grid, min(n_search, len(ParameterGrid(grid))),
                                 random_state=run.seed))


def downstream_candidates(run, protocol, budget, encoder):
    """The unfitted downstream estimators of ``run.method`` under ``protocol`` to choose from.

    One, with the tuned learning rate; every learning rate of the paper's grid under
    ``--search``; for ``logreg`` one per ``C``.
    """
    if run.method in SKLEARN:
        estimator, grid = sklearn_baselines(run.seed)[run.method]
        return [clone(estimator).set_params(**params) for params in ParameterGrid(grid)]
    common = {**budget.downstream, **DOWNSTREAM_PROTOCOL, "random_state": run.seed,
              **(budget.finetune if protocol == "finetune" else {})}
    if run.method == "supervised":
        make = functools.partial(SupervisedMLPClassifier, **budget.network, **common)
        tuned_lr = supervised_lr(run.dataset)
    else:
        variant_params = variant(run.method)[1]
        make = functools.partial(
            QMatchClassifier, FrozenEstimator(encoder), freeze_encoder=protocol == "linear",
            **{**common, **variant_params},
        )
        tuned_lr = tuned_params(run.method, run.dataset)[1][protocol]
    searched = SEARCH in run.sweep_params
    return [make(lr=lr) for lr in (DOWNSTREAM_LEARNING_RATES if searched else [tuned_lr])]


def fit_downstream(estimator, data):
    """Fit on the labeled rows; the split's ``val`` rows early-stop where the API allows."""
    if takes_val(estimator):
        return estimator.fit(data.X_train, data.y_train, X_val=data.X_val, y_val=data.y_val)
    return estimator.fit(data.X_train, data.y_train)


def takes_val(estimator):
    """Whether ``estimator.fit`` takes the validation rows (``X_val``, ``y_val``)."""
    return isinstance(estimator, QMatchClassifier | SupervisedMLPClassifier) or (
        isinstance(estimator, HistGradientBoostingClassifier) and estimator.early_stopping
    )


def describe(estimator):
    """The parameters of ``estimator`` that differ from its defaults, nested, as JSON data.

    ``random_state`` and ``verbose`` are left out (the seed is its own column).
    """
    if isinstance(estimator, Pipeline):
        return {name: describe(step) for name, step in estimator.steps}
    if isinstance(estimator, FrozenEstimator):
        return describe(estimator.estimator)
    defaults = type(estimator)().get_params(deep=False)
    changed = {"estimator": type(estimator).__name__}
    for name, value in estimator.get_params(deep=False).items():
        if name in ("random_state", "verbose"):
            continue
        if hasattr(value, "get_params"):
            changed[name] = describe(value)
        elif value != defaults[name]:
            changed[name] = list(value) if isinstance(value, tuple) else value
    return changed


def machine_description(budget):
    """CPU model and threads, or the GPU's name when the budget's networks run on one."""
    if budget.pretext.get("device") != "cpu" and torch.cuda.is_available():
        return f"GPU {torch.cuda.get_device_name()}"
    return f"{cpu_model()}, {os.cpu_count()} cores, torch {torch.get_num_threads()} thread(s)"


def pretrain(run, budget, data, candidate, protocols):
    """Yield (protocol, encoder, seconds) for each of ``protocols``: the run's encoder
    for it fitted on the pretext rows, once per distinct set of parameters (protocols
    that share one get the same encoder and seconds); ``(protocol, None, 0.0)`` for
    methods without one."""
    fitted = {}  # the encoder's parameters -> (encoder, seconds)
    for protocol in protocols:
        if run.method not in SELF_SUPERVISED:
            yield protocol, None, 0.0
            continue
        encoder = make_encoder(run, budget, candidate, protocol)
        params = repr(sorted(encoder.get_params().items()))
        if params not in fitted:
            start = time.perf_counter()
            encoder.fit(data.X_pretext, X_val=data.X_pretext_val)
            fitted[params] = encoder, time.perf_counter() - start
        yield protocol, *fitted[params]


@dataclass
class Choice:
    """The best downstream model of one protocol so far, by validation accuracy."""

    val_accuracy: float = -1.0
    model: object = None
    encoder: object = None
    pretrain_seconds: float = 0.0  # every candidate's pretraining of this protocol's encoder
    eval_seconds: float = 0.0  # every candidate's fit and validation scoring


def execute(run, budget, max_rows_test, data_home, machine):
    """Pretrain each candidate, choose per protocol on ``val``, yield one CSV row per protocol.

    A protocol's row is yielded as soon as its last candidate is scored, so that a long
    run (the paper's network on a CPU) keeps its linear result if it is stopped while
    fine-tuning.
    """
    data = prepare_data(run.dataset, run.seed, run.sweep_params.get(LABEL_FRACTION),
                        max_rows_test, data_home, max_rows_val=budget.max_rows_val)
    choices = {protocol: Choice() for protocol in run.todo}
    candidates = pretext_candidates(run)
    for i, candidate in enumerate(candidates, start=1):
        for protocol, encoder, seconds in pretrain(run, budget, data, candidate, run.todo):
            choice = choices[protocol]
            choice.pretrain_seconds += seconds
            for model in downstream_candidates(run, protocol, budget, encoder):
                start = time.perf_counter()
                val_accuracy = 100 * fit_downstream(model, data).score(data.X_val, data.y_val)
                choice.eval_seconds += time.perf_counter() - start
                if val_accuracy > choice.val_accuracy:
                    choice.val_accuracy, choice.model, choice.encoder = val_accuracy, model, encoder
            if i == len(candidates):
                yield result_row(run, protocol, choice, budget, data, max_rows_test, machine)


def result_row(run, protocol, choice, budget, data, max_rows_test, machine):
    """The CSV row of a protocol's chosen model, scored on the test rows (once, here)."""
    start = time.perf_counter()
    accuracy = 100 * choice.model.score(data.X_test, data.y_test)
    params = {"budget": budget.name, "sweep": run.sweep_params, "max_rows_test": max_rows_test,
              "max_rows_val": budget.max_rows_val, "model": describe(choice.model)}
    return {
        "dataset": run.dataset, "method": run.method, "protocol": protocol,
        "seed": run.seed, "budget": budget.name, "sweep": run.sweep,
        "accuracy": round(accuracy, 4), "val_accuracy": round(choice.val_accuracy, 4),
        "pretrain_seconds": round(choice.pretrain_seconds, 2),
        "eval_seconds": round(choice.eval_seconds + time.perf_counter() - start, 2),
        "pretrain_epochs": getattr(choice.encoder, "n_epochs_", ""),
        "eval_epochs": getattr(choice.model, "n_epochs_", ""),
        "n_pretext": len(data.X_pretext), "n_labeled": len(data.y_train),
        "n_test": len(data.y_test), "params": json.dumps(params, sort_keys=True),
        "machine": machine, "finished": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def sweeps(args):
    """The swept parameter sets, as canonical JSON; ["{}"] without a sweep option."""
    if args.queue_sizes:
        grid = [{"queue_size": k} for k in args.queue_sizes]
    elif args.corruption_grid:
        grid = [{"student_corruption": s, "teacher_corruption": t}
                for s, t in itertools.product(args.corruption_grid, repeat=2)]
    elif args.label_fractions:
        grid = [{LABEL_FRACTION: f} for f in args.label_fractions]
    elif args.search:
        grid = [{SEARCH: args.search}]
    else:
        grid = [{}]
    return [json.dumps(params, sort_keys=True) for params in grid]


def pending_runs(args, budget, done):
    """Every run with at least one protocol missing from ``done``, data-sharing runs adjacent."""
    runs = []
    for dataset, seed, sweep, method in itertools.product(
        args.datasets, args.seeds, sweeps(args), args.methods
    ):
        todo = tuple(p for p in protocols(method)
                     if (dataset, method, p, str(seed), budget.name, sweep) not in done)
        if todo:
            runs.append(Run(dataset, method, seed, sweep, todo))
    return runs


def check_sweep_methods(parser, args):
    """Encoder sweeps need methods whose encoder has the swept parameters."""
    swept = {k for sweep in sweeps(args) for k in json.loads(sweep) if k not in HARNESS_PARAMS}
    for method in args.methods if swept else ():
        base = variant(method)[0]
        if base not in METHODS or not swept <= set(METHODS[base]().get_params()):
            parser.error(f"the sweep over {sorted(swept)} needs encoder parameters that "
                         f"{method!r} does not have; use e.g. --methods qmatch.")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(ONE_PERCENT),
                        help="default: the 1%% configurations (Tables 4-5); the paper's "
                             "Tables 1-3 are " + " ".join(MORE_LABELS))
    parser.add_argument("--methods", nargs="+", choices=ALL_METHODS, default=list(ALL_METHODS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--budget", choices=sorted(BUDGETS), default="cpu-small")
    parser.add_argument("--max-rows-test", type=int, default=None,
                        help="score at most this many test rows (default: the budget's)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--data-home", default=None, help="folder of the raw dataset files")
    parser.add_argument("--out", type=Path, default=RESULTS)
    sweep = parser.add_mutually_exclusive_group()
    sweep.add_argument("--queue-sizes", nargs="+", type=int,
                       help="sweep the Q-Match queue size (figure: linear accuracy vs K)")
    sweep.add_argument("--corruption-grid", nargs="+", type=float,
                       help="sweep student x teacher corruption over these values (heatmap)")
    sweep.add_argument("--label-fractions", nargs="+", type=float,
                       help="label this share of the pretext rows instead of the split's "
                            "train rows (figure: accuracy vs fraction of labels)")
    sweep.add_argument("--search", type=int, metavar="N",
                       help="choose on the val rows among N pretext configurations sampled "
                            "from paper_param_grid and every downstream learning rate")
    args = parser.parse_args(argv)
    check_sweep_methods(parser, args)
    return args


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    budget = BUDGETS[args.budget]
    max_rows_test = budget.max_rows_test if args.max_rows_test is None else args.max_rows_test
    machine = machine_description(budget)
    store = Store(args.out, FIELDS, KEY)
    runs = pending_runs(args, budget, store.done())
    progress = tqdm(runs, unit="run", desc=f"few-shot ({budget.name})")
    for run in progress:
        progress.set_postfix_str(f"{run.dataset} {run.method} seed {run.seed} {run.sweep}")
        for row in execute(run, budget, max_rows_test, args.data_home, machine):
            store.append([row])
            progress.write(f"{row['dataset']} {row['method']} {row['protocol']} seed {row['seed']} "
                           f"{row['sweep']}: {row['accuracy']:.2f}% (pretrain "
                           f"{row['pretrain_seconds']} s, eval {row['eval_seconds']} s)")


if __name__ == "__main__":
    main()
