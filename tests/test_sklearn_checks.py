"""scikit-learn's own estimator checks, with every expected failure and its reason."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from qmatch_sklearn import QMatchClassifier, QMatchEncoder

from .conftest import tiny_encoder_params

EXPECTED_FAILURES = {
    "QMatchClassifier": {
        "check_classifiers_classes": (
            "trains with the label -1, which marks unlabeled rows here, as in "
            "scikit-learn's semi-supervised estimators"
        ),
    },
}


def _estimators():
    yield QMatchEncoder(**tiny_encoder_params())
    yield QMatchClassifier(
        QMatchEncoder(**tiny_encoder_params()),
        lr=1e-2,
        max_epochs=60,
        random_state=0,
        device="cpu",
    )


@parametrize_with_checks(
    list(_estimators()),
    expected_failed_checks=lambda est: EXPECTED_FAILURES.get(type(est).__name__, {}),
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
