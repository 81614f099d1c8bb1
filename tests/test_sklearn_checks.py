"""scikit-learn's own estimator checks, with every expected failure and its reason."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from qmatch_sklearn import (
    METHODS,
    QMatchClassifier,
    QMatchEncoder,
    QMatchRegressor,
    SupervisedMLPClassifier,
    SupervisedMLPRegressor,
)

from .conftest import tiny_encoder_params, tiny_method_params
from .denoise_method import DenoiseEncoder

_UNLABELED = (
    "trains with the label -1, which marks unlabeled rows here, as in scikit-learn's "
    "semi-supervised estimators"
)
_FLOAT32_ROUNDING = (
    "float32 matrix products can round differently for a batch of another size (the BLAS "
    "picks kernels by shape): differences up to ~2e-7 exceed this check's atol=1e-7 (the "
    "subset check on every run here, the order check on some BLAS). tests/test_encoder.py "
    "checks the same invariance at float32 tolerance."
)
_EVERY_ESTIMATOR = {
    "check_methods_subset_invariance": _FLOAT32_ROUNDING,
    "check_methods_sample_order_invariance": _FLOAT32_ROUNDING,
}
#: Integer weights equal repeated rows only in expectation: the head trains by
#: minibatch AdamW on shuffled rows (repeated rows change every batch), and the
#: encoders pretrain on every row, whatever its weight. tests/test_weights.py
#: checks what does hold: uniform weights are the unweighted fit exactly, the
#: closed-form heads weigh rows as scikit-learn does, and weights move the fit.
_WEIGHTS_NOT_REPETITION = (
    "only the weights' ratios count (they are scaled to a mean of 1 over the labeled rows, "
    "so a penalty means the same at any scale), and they enter a minibatch SGD loss (and "
    "not pretraining): weighting a row by 2 is not repeating it"
)
_SUPERVISED_WEIGHTS = {
    "check_sample_weight_equivalence_on_dense_data": _WEIGHTS_NOT_REPETITION,
    "check_sample_weight_equivalence_on_sparse_data": _WEIGHTS_NOT_REPETITION,
}
EXPECTED_FAILURES = {
    "QMatchClassifier": {"check_classifiers_classes": _UNLABELED, **_SUPERVISED_WEIGHTS},
    "SupervisedMLPClassifier": {"check_classifiers_classes": _UNLABELED, **_SUPERVISED_WEIGHTS},
    "QMatchRegressor": _SUPERVISED_WEIGHTS,
    "SupervisedMLPRegressor": _SUPERVISED_WEIGHTS,
}


def _expected_failures(estimator):
    return {**_EVERY_ESTIMATOR, **EXPECTED_FAILURES.get(type(estimator).__name__, {})}


def _estimators():
    for name, cls in METHODS.items():
        yield cls(**tiny_method_params(name, max_epochs=2))
    yield DenoiseEncoder(**tiny_method_params("denoise", max_epochs=2))  # adding_a_method.md
    classifier_params = dict(lr=1e-2, max_epochs=40, patience=10, random_state=0, device="cpu")
    yield QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), **classifier_params)
    yield SupervisedMLPClassifier(hidden_sizes=(32,), embedding_dim=8, **classifier_params)
    # with the input beside the embedding, as the regressors' default encoder: on
    # 8 embedding columns alone the ridge head's R^2 on the check's linear target
    # is 0.18-0.50 over 6 seeds, about its threshold of 0.5
    yield QMatchRegressor(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                          **classifier_params)
    yield SupervisedMLPRegressor(hidden_sizes=(32,), embedding_dim=8, **classifier_params)


@parametrize_with_checks(
    list(_estimators()),
    expected_failed_checks=_expected_failures,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
