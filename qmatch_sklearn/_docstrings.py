"""Docstring entries shared by the public estimators, written once.

A class decorated with :func:`fill_doc` writes ``%(key)s`` on a line of its own (in its docstring
or its methods') where an entry of :data:`ENTRIES` (or a group of :data:`GROUPS`) goes, and gets
the text there, indented as the placeholder; why: ``docs/design.md`` ("Constructors are written
out; shared docstring entries are written once").
"""

import inspect
import re
from textwrap import indent

#: Each shared Parameters, Attributes or References entry, by key: the parameter's name, with
#: the family that shares the wording when families word it differently.
ENTRIES = {
    "encoder": """\
encoder : estimator, default=None
    An unfitted self-supervised encoder (cloned and fitted in ``fit``), or a fitted one wrapped
    in :class:`sklearn.frozen.FrozenEstimator` to reuse it across fits and CV folds. None means
    ``QMatchEncoder(passthrough=True, max_epochs=10, tol=1e-4)`` with this estimator's
    ``device``, ``precision`` and ``verbose``, in batches of 512 rows (128 on tables of up to
    4,608 rows, for at least 100 steps): at most a tenth of the paper's pretraining, less on
    large tables whose pretext loss stops falling, its head reading the input
    features beside the embedding, which did better with few labels
    (``benchmarks/results/fewlabel.md``); ``QMatchEncoder()`` gives the paper's head on the
    embedding alone. An encoder whose ``random_state`` is None is seeded from this estimator's,
    so that a seeded estimator refits to the same result.
""",
    "teacher_temperature": """\
teacher_temperature : float, default=0.04
    The (sharper) temperature tau_t of the teacher's distribution.
""",
    "corruption": """\
corruption : float, default=0.3
    Probability that an entry of either view is replaced.
""",
    "corruption_type": """\
corruption_type : {"vime", "zero"}, default="vime"
    How a corrupted entry is filled: "vime" takes the same column's value in
    another row of the batch (VIME's corruption), "zero" sets it to 0
    (TabNet's masking).
""",
    "feature_groups": """\
feature_groups : list of lists of int or str, default=None
    Columns corrupted as one unit, by index or DataFrame column name: a corrupted group takes
    all its values from one other row ("vime") or is zeroed whole ("zero") and counts as one
    entry for the corruption rate; None (as in the paper) corrupts each column alone.
    :func:`qmatch_sklearn.one_hot_groups` reads one-hot groups off a fitted ColumnTransformer.
""",
    "projection_sizes": """\
projection_sizes : tuple of int, default=(512, 128)
    The projection MLP on top of z whose output enters the loss.
""",
    "categorical_features_uncorrupted": """\
categorical_features : "from_dtype", array-like or None, default="from_dtype"
    The categorical columns of ``X``: ``"from_dtype"`` takes a DataFrame's columns of dtype
    ``category``, ``string`` or ``object`` (but objects that are all decimals, read as
    numbers); an array-like names them (indices, names or a boolean mask; integer codes
    allowed); None makes every column numeric. Each becomes a one-hot block of the
    categories seen at fit (``categories_``, at most 255), all zeros for a missing value or
    an unseen category.
""",
    "hidden_sizes_encoder": """\
hidden_sizes : tuple of int, default=None
    Hidden layer widths of the encoder. None means (512, 512) for
    ``architecture="mlp"`` and the paper's (2048, 2048, 4096, 4096, 8192)
    for ``"imix"``; it must stay None for a network of your own.
""",
    "hidden_sizes_supervised": """\
hidden_sizes : tuple of int, default=None
    Hidden widths of the encoder network; None means (512, 512) for
    ``architecture="mlp"`` and the paper's widths for ``"imix"``.
""",
    "architecture_encoder": """\
architecture : {"mlp", "imix"}, callable or torch.nn.Module, default="mlp"
    The encoder network: ``"mlp"`` (fully connected layers with batch normalisation and ReLU),
    ``"imix"`` (the paper's i-Mix maxout network, for a GPU), a callable
    ``architecture(n_features, embedding_dim)`` returning a ``torch.nn.Module`` that maps
    (batch, n_features) to (batch, embedding_dim), or such a module (deep-copied at each fit).
    ``qmatch_sklearn.save`` refuses a network of your own; pickle it instead.
""",
    "architecture_supervised": """\
architecture : {"mlp", "imix"}, callable or torch.nn.Module, default="mlp"
    As in the encoders: a built-in network, or one of your own.
""",
    "embedding_dim_encoder": """\
embedding_dim : int, default=128
    Width of the representation z returned by ``transform``.
""",
    "embedding_dim_supervised": """\
embedding_dim : int, default=128
    Width of the layer the head reads.
""",
    "passthrough": """\
passthrough : bool, default=False
    When True, ``transform`` returns each row's input features followed by its embedding,
    ``[X, z]`` (sparse when ``X`` is sparse), as ``StackingClassifier(passthrough=True)`` does;
    the embedding block is standardised and scaled to the input block's total variance
    (``embedding_mean_``, ``embedding_scale_``). A ``QMatchClassifier`` on such an encoder gives
    its head both.
""",
    "lr_encoder": """\
lr : float, default=1e-3
    AdamW learning rate of the pretext task.
""",
    "lr_predictor": """\
lr : float, default=1e-3
    AdamW learning rate of the supervised stage.
""",
    "weight_decay_encoder": """\
weight_decay : float, default=0.0
    AdamW weight decay on weight matrices (the paper pretrains without).
""",
    "weight_decay_predictor": """\
weight_decay : float, default=0.1
    AdamW weight decay on weight matrices (biases and norms are exempt).
""",
    "batch_size_encoder": """\
batch_size : int, default=512
    Rows per optimisation step.
""",
    "batch_size_predictor": """\
batch_size : int, default=512
    Labeled rows per step.
""",
    "max_epochs_encoder": """\
max_epochs : int or "auto", default=100
    Upper bound on pretraining epochs. "auto" aims at 300 optimizer
    steps within 10 to 100 epochs over the training rows: 100 on tables of
    under 1,500 rows, 10 from about 15,000 rows on.
""",
    "max_epochs_predictor": """\
max_epochs : int, default=500
    Upper bound on supervised epochs.
""",
    "patience_encoder": """\
patience : int, default=32
    Stop after this many epochs without a lower validation loss, restoring the best epoch's
    weights. A non-finite loss or weight also stops training: the best finite epoch is restored
    with a ``ConvergenceWarning`` (``FloatingPointError`` when no epoch was finite).
""",
    "tol_encoder": """\
tol : float in (0, 1) or None, default=None
    The least share of the training loss an optimizer step should remove: pretraining ends at
    the first epoch whose mean training loss fell by less than its steps would remove at that
    rate, ``1 - (1 - tol) ** steps`` of the epoch before's (relative, so that the loss's scale
    does not matter; per step, so that what is judged is the gain for the time spent,
    whatever the table's size). Judged once 300 steps have run, from the second epoch on, so
    it never shortens the 300 steps ``max_epochs="auto"`` aims at. None trains
    ``max_epochs`` epochs (fewer on early stopping).
""",
    "patience_predictor": """\
patience : int, default=32
    Stop after this many epochs without a better validation ``scoring``;
    the best epoch's weights are restored.
""",
    "validation_fraction_encoder": """\
validation_fraction : float, "auto" or None, default="auto"
    Share of the rows held out for that validation loss. "auto" holds out 10% when that is at
    least 200 rows (from 2,000 rows on), else none; without held-out rows (or with None)
    training runs ``max_epochs`` and keeps the last weights.
""",
    "validation_fraction_classifier": """\
validation_fraction : float, "auto" or None, default="auto"
    Share of the labeled rows held out (stratified when possible) for early stopping. "auto"
    holds out 10% when that is at least 200 rows (from 2,000 labeled rows on), else none;
    without held-out rows (or with None) training runs ``max_epochs``.
""",
    "validation_fraction_regressor": """\
validation_fraction : float, "auto" or None, default="auto"
    Share of the labeled rows held out (drawn at random) for early stopping. "auto" holds out
    10% when that is at least 200 rows (from 2,000 labeled rows on), else none; without held-out
    rows (or with None) training runs ``max_epochs``.
""",
    "device": """\
device : str, default="auto"
    "auto" (CUDA when available, else CPU), "cpu", "cuda", "cuda:1", ...
""",
    "precision": """\
precision : {"32-true", "bf16-mixed", "16-mixed", "auto"}, default="32-true"
    Precision of training, by Lightning's names: float32, or forward passes under bfloat16 or
    float16 autocast ("16-mixed": CUDA only); outputs stay float32. "auto" is "bf16-mixed" on
    CPUs with bf16 matrix units, else "32-true" (user guide: "CPU, GPU, and saving models").
""",
    "random_state_encoder": """\
random_state : int, RandomState instance or None, default=None
    Seeds weight initialisation, shuffling, corruption, any queue and the
    validation split through local generators, never the global ones: the
    same seed gives the same embeddings on the CPU.
""",
    "random_state_predictor": """\
random_state : int, RandomState instance or None, default=None
    Seeds the network's initialisation, shuffling and the validation split (local generators).
""",
    "verbose": """\
verbose : int, default=0
    0 is silent, 1 shows a progress bar over epochs, 2 a table of every
    epoch's losses; both end with why training stopped and which epoch was kept.
""",
    "network_encoder": """\
network_ : torch.nn.Module
    The pretrained encoder (at the best validation epoch).
""",
    "network_classifier": """\
network_ : torch.nn.Module
    The trained network: encoder followed by the linear head.
""",
    "network_regressor": """\
network_ : torch.nn.Module
    The trained network: encoder followed by the linear head, which
    outputs standardised targets.
""",
    "history_encoder": """\
history_ : skorch.History
    One entry per epoch with ``train_loss``, and ``valid_loss`` when there
    is a validation split.
""",
    "history_classifier": """\
history_ : skorch.History
    Supervised training history (``train_loss``, ``valid_loss``, ``valid_acc``).
""",
    "history_regressor": """\
history_ : skorch.History
    Supervised training history (``train_loss``, ``valid_loss``).
""",
    "n_epochs_": """\
n_epochs_ : int
    Epochs run.
""",
    "best_epoch_": """\
best_epoch_ : int
    Epoch whose weights were kept (1-based).
""",
    "best_epoch_qmatch": """\
best_epoch_ : int
    Supervised epoch whose weights were kept (1-based; 0 as above).
""",
    "device_": """\
device_ : str
    Device the network lives on.
""",
    "precision_": """\
precision_ : str
    The precision training ran in (``precision`` with "auto" resolved).
""",
    "n_features_in_": """\
n_features_in_ : int
    Number of input features.
""",
    "is_categorical_": """\
is_categorical_ : ndarray of bool or None
    Which columns of ``X`` are categorical; None when none is.
""",
    "categories_": """\
categories_ : list of ndarray or None
    The categories of each categorical column, in the order of its one-hot block.
""",
    "missing_features_": """\
missing_features_ : ndarray of int
    Input features with missing values (NaN) at fit, which the network fills
    with the column's observed mean. Empty when ``X`` had none (NaN in rows
    passed later is then read as ``center_``, with a warning).
""",
    "missing_indicators_": """\
missing_indicators_ : ndarray of int
    Those of ``missing_features_`` whose missingness was related to the rest
    of the row at fit, each given an indicator channel at the network's input.
""",
    "center_": """\
center_ : ndarray of shape (`n_features_in_`,)
    Each numeric column's center at fit, in float64: its mean, or its minimum when it holds two
    values (0 for a categorical column). The network reads ``(x - center_) / scale_``.
""",
    "scale_": """\
scale_ : ndarray of shape (`n_features_in_`,)
    Each numeric column's scale at fit: its standard deviation but at least
    a tenth of its range, or the gap between its two values (1 for a
    categorical column; float64's largest for a constant one, which then
    reads 0). The network reads ``(x - center_) / scale_`` clipped to +-10.
""",
    "embedding_mean_": """\
embedding_mean_ : ndarray of shape (embedding_dim,)
    The mean embedding over the fit rows (a random 8,192 of them when there are
    more), which ``passthrough=True`` centres by. Only when fitted with it.
""",
    "embedding_scale_": """\
embedding_scale_ : ndarray of shape (embedding_dim,)
    The factor ``passthrough=True`` multiplies the centred embedding by.
    Only when fitted with ``passthrough=True``.
""",
    "feature_names_in_": """\
feature_names_in_ : ndarray of str
    Input column names, when ``X`` had string column names.
""",
    "scoring_classifier": """\
scoring : {"loss", "accuracy"}, default="loss"
    What early stopping watches on the held-out rows: the cross-entropy
    (lower is better) or the accuracy (the paper's protocol), which on few
    held-out rows moves in coarse steps and stops training too early.
""",
    "scoring_regressor": """\
scoring : {"loss"}, default="loss"
    What early stopping watches on the held-out rows: the mean squared error of the standardised
    targets (lower is better), averaged over the outputs.
""",
    "class_weight": """\
class_weight : dict, "balanced" or None, default=None
    Weights of the classes in the supervised loss and the logistic head, as in
    ``LogisticRegression``: a dict ``{label: weight}`` (absent labels weigh 1), "balanced"
    (inversely proportional to the class frequencies among the labeled rows) or None (all 1).
    Multiplied by ``fit``'s ``sample_weight``.
""",
    "max_time": """\
max_time : float or None, default=None
    Seconds the whole fit may take (as AutoGluon's ``time_limit``): the stage running when they
    run out (pretraining, or an AdamW head) stops after its epoch, keeping its best weights,
    and a closed-form head started later skips its optional parts (the classifier's
    self-trained twins and boosted member); ``max_time_reached_`` and a warning say so. None
    sets no limit, so that results do not depend on the machine's speed.
""",
    "encoder_": """\
encoder_ : estimator
    The fitted encoder (before fine-tuning).
""",
    "head_": """\
head_ : "fine-tuned"
    The head kept: always the whole network trained with AdamW.
""",
    "frozen_encoder_qmatch": """\
frozen_encoder_ : bool
    Whether the kept head was trained on the frozen encoder (linear
    evaluation) rather than fine-tuned with it.
""",
    "frozen_encoder_supervised": """\
frozen_encoder_ : bool
    Always False: the whole network trains from random weights.
""",
    "classes_": """\
classes_ : ndarray of shape (n_classes,)
    Class labels seen among the labeled rows.
""",
    "max_time_reached_": """\
max_time_reached_ : {"pretraining", "head"} or None
    The stage of the fit during which ``max_time`` ran out; None when the
    fit took less (or ``max_time`` is None).
""",
    "clip_predictions": """\
clip_predictions : bool, default=True
    Clip each predicted target to the range of its labeled values in ``fit`` (``target_min_`` to
    ``target_max_``), as tree ensembles do by construction: a linear head on a few dozen labeled
    rows can extrapolate far from one high-leverage row (user guide: "Real tables"). False
    returns the head's output unclipped, for targets that trend beyond the labeled rows.
""",
    "n_outputs_": """\
n_outputs_ : int
    Number of targets per row (1 for a 1-D ``y``).
""",
    "target_mean_": """\
target_mean_ : ndarray of shape (n_outputs,)
    Mean of each target over the labeled rows.
""",
    "target_scale_": """\
target_scale_ : ndarray of shape (n_outputs,)
    Standard deviation of each target over the labeled rows (1 for a constant target);
    ``predict`` returns ``network_``'s output times it plus ``target_mean_`` (clipped with
    ``clip_predictions``).
""",
    "target_range_": """\
target_min_, target_max_ : ndarray of shape (n_outputs,)
    The lowest and highest value of each target over the labeled rows of ``y`` that weigh
    more than 0 (not ``y_val``); with ``clip_predictions``, ``predict`` stays within them.
""",
    "X_parameters": """\
Parameters
----------
X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Rows preprocessed like those passed to ``fit``.
""",
    "qmatch_reference": """\
Mulc, T. and Dwibedi, D. "Q-Match: Self-supervised Learning by Matching
Distributions Induced by a Queue."
""",
}
#: The encoders' entry: the plain one, and their one-hot blocks corrupted whole.
ENTRIES["categorical_features_encoder"] = (ENTRIES["categorical_features_uncorrupted"]
                                           + "    Each block is corrupted as one unit.\n")
#: The few-label estimators' entry: the plain one at their default, "auto".
ENTRIES["precision_pretrained"] = (
    ENTRIES["precision"].replace('default="32-true"', 'default="auto"')
    + "    On such CPUs (Intel AMX, AVX512-BF16) it pretrains the default encoder 1.2 to 1.6\n"
    "    times as fast; embeddings then differ from other machines' by bf16's rounding.\n")
#: Entries that follow one another in every class that has them, by one key.
GROUPS = {
    "fit_attributes": ("device_", "precision_", "n_features_in_", "is_categorical_",
                       "categories_"),
    "corruption_layout": ("corruption_type", "feature_groups"),
    "encoder_network": ("hidden_sizes_encoder", "architecture_encoder", "embedding_dim_encoder",
                        "passthrough"),
    "encoder_training": ("lr_encoder", "weight_decay_encoder", "batch_size_encoder",
                         "max_epochs_encoder", "patience_encoder", "tol_encoder",
                         "validation_fraction_encoder",
                         "device", "precision"),
    "encoder_parameters": ("categorical_features_encoder", "encoder_network", "encoder_training",
                           "random_state_encoder", "verbose"),
    "encoder_attributes": ("network_encoder", "history_encoder", "n_epochs_",
                           "best_epoch_", "fit_attributes", "missing_features_",
                           "missing_indicators_", "center_", "scale_", "embedding_mean_",
                           "embedding_scale_", "feature_names_in_"),
    "supervised_attributes": ("n_epochs_", "best_epoch_", "fit_attributes",
                              "missing_features_", "missing_indicators_", "center_",
                              "scale_", "feature_names_in_"),
    "predictor_training": ("lr_predictor", "weight_decay_predictor", "batch_size_predictor",
                           "max_epochs_predictor", "patience_predictor"),
    "target_attributes": ("n_outputs_", "target_mean_", "target_scale_", "target_range_"),
    "predictor_device": ("device", "precision", "random_state_predictor", "verbose"),
    "pretrained_device": ("device", "precision_pretrained", "random_state_predictor", "verbose"),
}

_PLACEHOLDER = re.compile(r"^( *)%\((\w+)\)s\n", re.MULTILINE)


def keys(key):
    """``key`` and, for a group of :data:`GROUPS`, every key it reaches, in order."""
    return [key, *(reached for member in GROUPS.get(key, ()) for reached in keys(member))]


def entry(key):
    """The text of ``key``: an entry of :data:`ENTRIES`, or a group's entries in order."""
    return "".join(ENTRIES[reached] for reached in keys(key) if reached not in GROUPS)


def fill_doc(cls):
    """Class decorator: every placeholder line of ``cls.__doc__``, and of the docstrings of
    the methods (static and class methods too) and properties its body defines, replaced by
    its entries (nothing to fill under ``python -OO``, which drops docstrings)."""
    for member in (cls, *vars(cls).values()):
        member = getattr(member, "__func__", member)  # a static or class method's function
        documented = member is cls or inspect.isfunction(member) or isinstance(member, property)
        if documented and member.__doc__:
            member.__doc__ = _PLACEHOLDER.sub(lambda match: indent(entry(match[2]), match[1]),
                                              member.__doc__)
    return cls
