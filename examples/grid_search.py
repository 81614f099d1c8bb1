"""Searching the paper's hyper-parameter space with GridSearchCV (on a budget).

``paper_param_grid("qmatch", prefix="enc__")`` returns the Q-Match search space
of the paper's Appendix (pretext learning rate, student corruption, student
temperature, queue size) for the ``enc`` step of a Pipeline. The full grid has
3 x 3 x 3 x 2 = 54 points; this example searches a budgeted slice of it with
short pretraining, scoring a linear probe fitted on few labels.
"""

import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedShuffleSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from qmatch_sklearn import QMatchEncoder, paper_param_grid

BUDGET = {"enc__lr": [1e-3], "enc__student_corruption": [0.3, 0.5]}


def main():
    X, y = load_digits(return_X_y=True)
    full_grid = paper_param_grid("qmatch", prefix="enc__")
    print("paper's search space:", full_grid)
    grid = {**full_grid, **BUDGET}
    n_points = int(np.prod([len(v) for v in grid.values()]))
    print(f"searching {n_points} of {int(np.prod([len(v) for v in full_grid.values()]))} points")

    pipe = Pipeline([
        ("enc", QMatchEncoder(max_epochs=15, random_state=0, device="cpu")),
        ("scale", StandardScaler()),
        ("probe", LogisticRegression(max_iter=2000)),
    ])
    # Few labels: each split fits on 100 rows and scores on 500 others. (Pretraining
    # sees only the training rows of each split; see QMatchClassifier with y == -1 to
    # pretrain on unlabeled rows as well.)
    cv = StratifiedShuffleSplit(n_splits=2, train_size=100, test_size=500, random_state=0)
    start = time.perf_counter()
    search = GridSearchCV(pipe, grid, cv=cv, n_jobs=2).fit(X, y)
    print(f"searched in {time.perf_counter() - start:.0f} s")
    print("best parameters:", search.best_params_)
    print(f"best cross-validated accuracy: {search.best_score_:.3f}")


if __name__ == "__main__":
    main()
