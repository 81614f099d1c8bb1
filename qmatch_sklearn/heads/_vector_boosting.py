"""Gradient boosting with one tree of vector leaves a round: the boosted member's trees for
three classes or more.

scikit-learn's ``HistGradientBoostingClassifier`` grows one tree per class and round
(Friedman, 2001, "Greedy function approximation: a gradient boosting machine", algorithm 6),
and on a few hundred labeled rows its time goes to the trees' number, not their rows. Here
each round grows ONE regression tree on the negative gradients of all K classes' log-odds
together (squared error summed over the classes: the first-order gain of every class at
once), and each of its leaves then takes every class's diagonal Newton step,
-lr sum_i w_i g_ik / (sum_i w_i h_ik + lambda): vector leaves (Ponomareva et al., 2017,
"Compact multi-class boosted trees"; CatBoost's ``MultiClass`` trees hold such leaves
too), K times fewer trees for the same rounds. g and h are the softmax cross-entropy's
gradient and diagonal Hessian, p - y and p (1 - p), as scikit-learn's booster takes them.
"""

import numpy as np
from sklearn import config_context
from sklearn.tree import DecisionTreeRegressor

#: The share of a class absent from the rows below which its starting log-odds do not go.
MIN_CLASS_SHARE = np.finfo(np.float64).eps


class VectorLeafBoosting:
    """Boosted trees of vector leaves for ``n_classes`` classes (module docstring).

    The trees split float32 values, as scikit-learn's trees do: rows that are not
    float32-exact could be routed otherwise by the exported trees' float64 walk (the
    member reads the network's float32 input rows).

    Parameters
    ----------
    n_classes : int
        K, at least 3: the log-odds columns, one per class (a class absent from the rows
        keeps one).
    learning_rate, max_iter, l2_regularization, max_depth, max_features, min_samples_leaf :
        As ``HistGradientBoostingClassifier``'s: the shrinkage, the rounds, lambda (above
        0: a leaf of rows of weight 0 takes no step), each tree's depth, the share of
        columns each split draws (``DecisionTreeRegressor``'s, rounded down), and the
        fewest rows a leaf holds.
    random_state : int
        Seeds each round's draws of columns.
    """

    def __init__(self, n_classes, learning_rate, max_iter, l2_regularization, max_depth,
                 max_features, min_samples_leaf, random_state):
        self.n_classes = n_classes
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.l2_regularization = l2_regularization
        self.max_depth = max_depth
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state

    def fit(self, X, targets, sample_weight=None):
        """Grow ``max_iter`` trees on the rows ``X`` (missing values as NaN) and their
        class indices ``targets``; rows weigh ``sample_weight`` (1 each by default)."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        weights = (np.ones(len(targets)) if sample_weight is None
                   else np.asarray(sample_weight, dtype=np.float64))
        one_hot = np.eye(self.n_classes)[targets]
        share = weights @ one_hot / weights.sum()
        self.baseline_ = np.log(np.maximum(share, MIN_CLASS_SHARE))
        raw = np.tile(self.baseline_, (len(X), 1))
        seeds = np.random.RandomState(self.random_state).randint(
            np.iinfo(np.int32).max, size=self.max_iter)
        # scikit-learn's checks of X, which cost more than a tree of a few hundred rows,
        # only where they find the missing values its splits must route
        check_input = bool(np.isnan(X).any())
        self.trees_, self.leaf_values_ = [], []
        for seed in seeds:
            proba = np.exp(raw - raw.max(axis=1, keepdims=True))  # scipy's softmax, inline
            proba /= proba.sum(axis=1, keepdims=True)
            gradient, hessian = proba - one_hot, proba * (1.0 - proba)
            tree = DecisionTreeRegressor(
                max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf,
                max_features=self.max_features, random_state=seed,
            )
            with config_context(skip_parameter_validation=True):
                tree.fit(X, -gradient, sample_weight=sample_weight, check_input=check_input)
            leaf = tree.apply(X, check_input=False)
            if sample_weight is not None:
                gradient, hessian = weights[:, None] * gradient, weights[:, None] * hessian
            gradient_sum, hessian_sum = self._leaf_sums(leaf, tree.tree_.node_count,
                                                        gradient, hessian)
            values = -self.learning_rate * (gradient_sum / (hessian_sum + self.l2_regularization))
            raw += values[leaf]
            self.trees_.append(tree)
            self.leaf_values_.append(values)
        return self

    def _leaf_sums(self, leaf, n_nodes, *per_row):
        """For each array of ``per_row`` (rows, K), its (n_nodes, K) sums over the rows each
        node holds."""
        at = (leaf[:, None] * self.n_classes + np.arange(self.n_classes)).ravel()
        return [np.bincount(at, values.ravel(), n_nodes * self.n_classes).reshape(
            n_nodes, self.n_classes) for values in per_row]

    def decision_function(self, X):
        """The rows' log-odds (rows, K), up to a constant per row."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        raw = np.tile(self.baseline_, (len(X), 1))
        for tree, values in zip(self.trees_, self.leaf_values_, strict=True):
            raw += values[tree.apply(X, check_input=False)]
        return raw

    def export(self, columns):
        """The trees in ``_boosting.export_trees``' arrays: each tree once, its leaves
        holding every class's value (``feature`` indexes the whole input, not
        ``columns``)."""
        columns = np.asarray(columns, dtype=np.int64)
        parts = {name: [] for name in ("feature", "threshold", "missing_left", "left",
                                       "right", "value", "is_leaf", "roots")}
        n_nodes = 0
        for tree, values in zip(self.trees_, self.leaf_values_, strict=True):
            structure = tree.tree_
            is_leaf = structure.children_left < 0
            inner = ~is_leaf
            parts["roots"].append([n_nodes])
            # a leaf's feature is read before the walk stays there: any column
            parts["feature"].append(columns[np.where(inner, structure.feature, 0)])
            parts["threshold"].append(np.where(inner, structure.threshold, 0.0))
            parts["missing_left"].append(structure.missing_go_to_left.astype(bool))
            parts["left"].append(np.where(inner, structure.children_left, 0) + n_nodes)
            parts["right"].append(np.where(inner, structure.children_right, 0) + n_nodes)
            parts["value"].append(np.where(is_leaf[:, None], values, 0.0))
            parts["is_leaf"].append(is_leaf)
            n_nodes += structure.node_count
        trees = {name: np.concatenate(part) for name, part in parts.items()}
        trees["roots"] = trees["roots"].astype(np.int64)
        trees["baseline"] = self.baseline_.astype(np.float64)
        return trees
