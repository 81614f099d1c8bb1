"""The constructors and docstrings of the public estimators keep one contract.

Every estimator writes its ``__init__`` out in full (as scikit-learn does), and
its docstring takes the entries it shares with others from
``qmatch_sklearn._docstrings`` (written once, filled in by ``fill_doc``). These
tests keep the contract:

* every placeholder is filled, and every shared entry is used;

* a parameter shared by two or more estimators has the same default
  everywhere, except the differences listed in ``DEFAULT_EXCEPTIONS``, each
  with its reason;
* numpydoc validation passes for every estimator class and its public methods
  (every parameter documented, none documented that does not exist), and each
  documented ``default=`` is the signature's default;
* the shared parameters have the same description in every encoder, in both
  classifiers and in both regressors, and a regressor describes them as its
  classifier twin does where the meaning is the same (not ``scoring``, nor the
  validation split, which only classes can stratify);
* ``__init__`` stores its arguments and does nothing else;
* a user's subclass keeps the ``__init__`` it writes.
"""

import ast
import inspect
from collections import defaultdict

import numpy as np
import pytest
from numpydoc.docscrape import ClassDoc
from sklearn.base import clone
from sklearn.utils._testing import assert_docstring_consistency

numpydoc_validate = pytest.importorskip("numpydoc.validate")

from qmatch_sklearn import (  # noqa: E402
    METHODS,
    QMatchClassifier,
    QMatchEncoder,
    QMatchRegressor,
    SupervisedMLPClassifier,
    SupervisedMLPRegressor,
)
from qmatch_sklearn._constraints import NETWORK_CONSTRAINTS, TRAINING_CONSTRAINTS  # noqa: E402
from qmatch_sklearn._docstrings import (  # noqa: E402
    _PLACEHOLDER,
    ENTRIES,
    GROUPS,
    fill_doc,
    keys,
)

from .denoise_method import DenoiseEncoder  # noqa: E402

# the worked example of docs/adding_a_method.md is held to the same contract as the methods
ENCODERS = [*METHODS.values(), DenoiseEncoder]
CLASSIFIERS = [QMatchClassifier, SupervisedMLPClassifier]
REGRESSORS = [QMatchRegressor, SupervisedMLPRegressor]
ESTIMATORS = ENCODERS + CLASSIFIERS + REGRESSORS

#: Shared parameters whose defaults differ on purpose: {name: ({class name: default}, reason)}.
#: Every other estimator that has the parameter uses one common default.
DEFAULT_EXCEPTIONS = {
    "weight_decay": (
        {"QMatchClassifier": 0.1, "SupervisedMLPClassifier": 0.1, "QMatchRegressor": 0.1,
         "SupervisedMLPRegressor": 0.1},
        "the supervised stage is regularised (the paper fine-tunes with weight decay); "
        "pretraining is not (the paper pretrains without)",
    ),
    "max_epochs": (
        {"QMatchClassifier": 500, "SupervisedMLPClassifier": 500, "QMatchRegressor": 500,
         "SupervisedMLPRegressor": 500},
        "a supervised stage on few labeled rows runs many short epochs; early stopping ends it",
    ),
    "student_temperature": (
        {"DINOEncoder": 0.15},
        "each method's reference value: DINO's tau_s is 0.15, Q-Match's 0.1",
    ),
    "corruption": (
        {"TabNetEncoder": 0.5},
        "TabNet masks half the entries (its reconstruction task); the two-view "
        "methods and VIME corrupt 0.3",
    ),
    "precision": (
        {"QMatchClassifier": "auto", "QMatchRegressor": "auto"},
        "the few-label estimators pretrain their default encoder where they are fitted; bf16 on "
        "CPUs with bf16 matrix units makes that 1.2 to 1.6 times as fast (issue #54), while "
        "the encoders keep the paper's float32",
    ),
    "projection_sizes": (
        {"DINOEncoder": (2048, 2048, 256), "SimSiamEncoder": (2048, 2048, 2048)},
        "each head follows its paper: DINO's bottleneck MLP, SimSiam's wide projector",
    ),
}

#: numpydoc checks that are not enforced, and why. Everything else
#: (numpydoc.validate.ERROR_MSGS) is, PR01 and PR02 included.
IGNORED_EVERYWHERE = {
    "GL01": "summaries start on the line of the opening quotes (the project's style, as in "
    "scikit-learn)",
    "GL02": "allows short docstrings that close right after the Returns section",
    "RT02": "the Returns section names the returned object (e.g. 'Z : ndarray'), as in "
    "scikit-learn",
}
#: Enforced for the class docstrings, not for methods (as in scikit-learn's test_docstrings).
IGNORED_FOR_METHODS = {
    "ES01": "a method's one-line summary is enough; the class docstring explains",
    "SA01": "See Also lives in the class docstring",
    "EX01": "the class docstring's example shows the methods in use",
}


def _signature_defaults(cls):
    return {
        name: parameter.default
        for name, parameter in inspect.signature(cls.__init__).parameters.items()
        if name != "self"
    }


def test_every_shared_entry_is_filled_in_and_used():
    reached = set()
    for cls in ESTIMATORS:
        assert "%(" not in cls.__doc__, f"{cls.__name__} has an unfilled placeholder"
        for klass in cls.__mro__:
            if klass.__module__.startswith("qmatch_sklearn"):
                # methods, static and class methods, properties: what fill_doc fills
                for name, member in vars(klass).items():
                    doc = getattr(getattr(member, "__func__", member), "__doc__", None)
                    assert "%(" not in (doc or ""), f"{klass.__name__}.{name}: a placeholder"
                for placeholder in _PLACEHOLDER.finditer(inspect.getsource(klass)):
                    reached.update(keys(placeholder[2]))
    assert set(ENTRIES) | set(GROUPS) == reached, "an entry of _docstrings.py is used nowhere"


def test_fill_doc_indents_entries_as_the_placeholder():
    class Documented:
        """Summary.

        Parameters
        ----------
        %(verbose)s
        """

        @classmethod
        def build(cls, X):
            """Summary.

            %(X_parameters)s
            """

        @property
        def width(self):
            """Width.

            %(verbose)s
            """

    text = fill_doc(Documented).__doc__
    entry = ENTRIES["verbose"].splitlines()
    assert f"        {entry[0]}\n        {entry[1]}\n" in text
    assert ClassDoc(Documented)["Parameters"][0].name == "verbose"
    assert ENTRIES["X_parameters"].splitlines()[2] in Documented.build.__doc__
    assert f"            {entry[0]}\n" in Documented.width.__doc__


def test_every_estimator_writes_its_own_init():
    for cls in ESTIMATORS:
        assert "__init__" in vars(cls), f"{cls.__name__} has no __init__ of its own"
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        kinds = {p.name: p.kind for p in parameters}
        positional = [n for n, k in kinds.items() if k is not inspect.Parameter.KEYWORD_ONLY]
        takes_encoder = cls in (QMatchClassifier, QMatchRegressor)
        assert positional == (["encoder"] if takes_encoder else []), cls.__name__
        assert all(k is not inspect.Parameter.VAR_KEYWORD for k in kinds.values())


@pytest.mark.parametrize("cls", ENCODERS, ids=lambda cls: cls.__name__)
def test_encoders_list_method_parameters_then_shared_ones(cls):
    shared = [*NETWORK_CONSTRAINTS, "passthrough", *TRAINING_CONSTRAINTS]
    shared.insert(shared.index("patience") + 1, "tol")  # pretraining's own stopping rule
    names = list(_signature_defaults(cls))
    assert names[-len(shared):] == shared
    assert set(names) == set(cls._parameter_constraints), "one constraint per parameter"


def test_shared_parameters_have_the_same_default_everywhere():
    defaults = defaultdict(dict)
    for cls in ESTIMATORS:
        for name, default in _signature_defaults(cls).items():
            defaults[name][cls.__name__] = default
    for name, (expected, reason) in DEFAULT_EXCEPTIONS.items():
        for class_name, default in expected.items():
            assert defaults[name].get(class_name, "missing") == default, (
                f"DEFAULT_EXCEPTIONS is stale: {class_name}.{name} ({reason})"
            )
    for name, by_class in defaults.items():
        if len(by_class) < 2:
            continue
        exceptions = DEFAULT_EXCEPTIONS.get(name, ({}, ""))[0]
        common = {cls: d for cls, d in by_class.items() if cls not in exceptions}
        values = [repr(d) for d in common.values()]
        assert len(set(values)) <= 1, (
            f"parameter {name!r} has different defaults: {common}; make them equal or list "
            "the difference, with its reason, in DEFAULT_EXCEPTIONS"
        )


def _public_methods(cls):
    """Public methods written in this library (those inherited from scikit-learn are its own)."""
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not callable(member) or inspect.isclass(member):
            continue
        if getattr(member, "__module__", "").startswith("qmatch_sklearn"):
            yield name


def _docstring_cases():
    for cls in ESTIMATORS:
        yield pytest.param(cls, None, id=cls.__name__)
        for method in _public_methods(cls):
            yield pytest.param(cls, method, id=f"{cls.__name__}.{method}")


@pytest.mark.parametrize("cls, method", list(_docstring_cases()))
def test_numpydoc_validation(cls, method):
    name = f"{cls.__module__}.{cls.__qualname__}" + (f".{method}" if method else "")
    ignored = set(IGNORED_EVERYWHERE) | (set(IGNORED_FOR_METHODS) if method else set())
    errors = [
        f"{code}: {message}"
        for code, message in numpydoc_validate.validate(name)["errors"]
        if code not in ignored
    ]
    assert not errors, f"{name}:\n" + "\n".join(errors)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_documented_defaults_are_the_signature_defaults(cls):
    documented = {p.name: p.type for p in ClassDoc(cls)["Parameters"]}
    for name, default in _signature_defaults(cls).items():
        type_line = documented[name]
        assert ", default=" in type_line, f"{cls.__name__}.{name}: no default= in {type_line!r}"
        text = type_line.split(", default=", 1)[1]
        assert ast.literal_eval(text) == default, (
            f"{cls.__name__}.{name} documents default={text}, the signature has {default!r}"
        )


def _descriptions(cls):
    return {p.name: "\n".join(p.desc) for p in ClassDoc(cls)["Parameters"]}


#: The training parameters a Q-Match predictor and its supervised twin describe alike.
PREDICTOR_SHARED = [name for name in TRAINING_CONSTRAINTS if name != "precision"]


@pytest.mark.parametrize(
    "family, shared",
    [
        (ENCODERS, [*NETWORK_CONSTRAINTS, "passthrough", *TRAINING_CONSTRAINTS]),
        # precision's default differs within each family (DEFAULT_EXCEPTIONS)
        (CLASSIFIERS, [*PREDICTOR_SHARED, "scoring"]),
        (REGRESSORS, [*PREDICTOR_SHARED, "scoring", "clip_predictions"]),
    ],
    ids=["encoders", "classifiers", "regressors"],
)
def test_shared_parameters_are_described_alike(family, shared):
    corrupting = [cls for cls in family if cls.__name__ not in CORRUPTING_WORDING]
    assert_docstring_consistency(family, include_params=[
        name for name in shared if name not in CORRUPTING_WORDING["IMixEncoder"]])
    assert_docstring_consistency(corrupting, include_params=shared)


#: Parameters whose entries speak of corruption, which i-Mix does not use (it mixes rows).
CORRUPTING_WORDING = {"IMixEncoder": ["categorical_features", "random_state"]}


#: The attributes every estimator reads from its table input (``_table.TableAttributes``).
TABLE_ATTRIBUTES = ["is_categorical_", "categories_", "center_", "scale_", "missing_features_",
                    "missing_indicators_"]


@pytest.mark.parametrize("family", [ENCODERS, CLASSIFIERS + REGRESSORS],
                         ids=["encoders", "classifiers and regressors"])
def test_the_table_input_attributes_are_described_alike(family):
    assert_docstring_consistency(family, include_attrs=TABLE_ATTRIBUTES)


#: Parameters a regressor describes otherwise than its classifier twin, and why.
REGRESSOR_WORDING = {
    "scoring": "the regressors watch the loss only (no accuracy), a mean squared error",
    "validation_fraction": "only classes can stratify the held-out rows",
    "freeze_encoder": "the closed-form head is a ridge regression, not a logistic one",
}


@pytest.mark.parametrize(
    "regressor, classifier",
    [(QMatchRegressor, QMatchClassifier), (SupervisedMLPRegressor, SupervisedMLPClassifier)],
    ids=["qmatch", "supervised"],
)
def test_regressors_describe_parameters_as_their_classifier_twins(regressor, classifier):
    # classes have weights, and pseudo-labels (a regression self-trained on its own
    # predictions is the same regression); real-valued targets do not. Real-valued
    # predictions have a range to stay within; probabilities are in theirs already
    classifier_only = {"class_weight", "self_training", "label_spreading"}
    regressor_only = {"clip_predictions"}
    assert [name for name in _signature_defaults(regressor) if name not in regressor_only] == [
        name for name in _signature_defaults(classifier) if name not in classifier_only]
    assert_docstring_consistency([regressor, classifier], include_params=True,
                                 exclude_params=[*REGRESSOR_WORDING, *classifier_only,
                                                 *regressor_only])


def test_corruption_type_is_described_alike_in_every_encoder_that_corrupts():
    """The corruption kind is one component shared by every method that corrupts rows."""
    having = [cls for cls in ENCODERS if "corruption_type" in _signature_defaults(cls)]
    assert {cls.__name__ for cls in ENCODERS} - {cls.__name__ for cls in having} == {
        "IMixEncoder"  # mixes rows, corrupts none
    }
    reference = _descriptions(having[0])["corruption_type"]
    for cls in having[1:]:
        assert _descriptions(cls)["corruption_type"] == reference, cls.__name__


class _Sentinel:
    """A value no validation would accept: __init__ must store it without looking."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<sentinel {self.name}>"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_init_only_stores_its_arguments(cls):
    names = list(_signature_defaults(cls))
    sentinels = {name: _Sentinel(name) for name in names}
    estimator = cls(**sentinels)
    params = estimator.get_params(deep=False)
    assert params.keys() == sentinels.keys()
    assert all(params[name] is sentinels[name] for name in names)
    assert vars(estimator).keys() == sentinels.keys()

    default = cls()
    assert vars(default).keys() == set(names)
    for name, value in default.get_params(deep=False).items():
        assert value is _signature_defaults(cls)[name] or value == _signature_defaults(cls)[name]


def test_unknown_parameter_is_a_type_error():
    with pytest.raises(TypeError, match="queue_sise"):
        QMatchEncoder(queue_sise=64)
    with pytest.raises(TypeError):
        QMatchEncoder(64)  # keyword-only


def test_a_subclass_keeps_the_init_it_writes():
    class WideQueueEncoder(QMatchEncoder):
        def __init__(self, *, queue_size=128, max_epochs=1, random_state=0):
            super().__init__(
                queue_size=queue_size,
                max_epochs=max_epochs,
                random_state=random_state,
                hidden_sizes=(16,),
                embedding_dim=4,
                projection_sizes=(8, 4),
                batch_size=32,
                device="cpu",
            )

    assert vars(WideQueueEncoder)["__init__"] is WideQueueEncoder.__init__
    encoder = WideQueueEncoder()
    assert encoder.queue_size == 128 and encoder.embedding_dim == 4
    assert encoder.get_params() == {"queue_size": 128, "max_epochs": 1, "random_state": 0}
    assert clone(encoder).queue_size == 128
    X = np.random.default_rng(0).normal(size=(64, 5)).astype(np.float32)
    assert encoder.fit_transform(X).shape == (64, 4)
