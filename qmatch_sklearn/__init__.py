"""Self-supervised representation learning for tabular data, in scikit-learn."""

from ._classifier import QMatchClassifier, SupervisedMLPClassifier
from ._config import config_context, get_config, set_config
from ._feature_groups import one_hot_groups
from ._onnx import register_onnx_converters, to_onnx
from ._persistence import InconsistentVersionWarning, load, save
from ._regressor import QMatchRegressor, SupervisedMLPRegressor
from ._search_space import paper_param_grid
from ._version import __version__
from .methods import (
    METHODS,
    DINOEncoder,
    IMixEncoder,
    QMatchEncoder,
    SimCLREncoder,
    SimSiamEncoder,
    TabNetEncoder,
    VICRegEncoder,
    VIMEEncoder,
)

__all__ = [
    "METHODS",
    "DINOEncoder",
    "IMixEncoder",
    "InconsistentVersionWarning",
    "QMatchClassifier",
    "QMatchEncoder",
    "QMatchRegressor",
    "SimCLREncoder",
    "SimSiamEncoder",
    "SupervisedMLPClassifier",
    "SupervisedMLPRegressor",
    "TabNetEncoder",
    "VICRegEncoder",
    "VIMEEncoder",
    "__version__",
    "config_context",
    "get_config",
    "load",
    "one_hot_groups",
    "paper_param_grid",
    "register_onnx_converters",
    "save",
    "set_config",
    "to_onnx",
]
