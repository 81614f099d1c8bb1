"""Self-supervised methods: one module each (its views, its loss, its estimator).

Adding a method: write ``methods/<name>.py`` with a ``PretextModule``, a loss
and a ``BasePretextEncoder`` subclass, then add it to ``METHODS`` below.
"""

from ._base import PretextModule
from .dino import DINOEncoder
from .imix import IMixEncoder
from .qmatch import QMatchEncoder
from .simclr import SimCLREncoder
from .simsiam import SimSiamEncoder
from .tabnet import TabNetEncoder
from .vicreg import VICRegEncoder
from .vime import VIMEEncoder

#: Every self-supervised encoder by the short name the paper's tables use.
METHODS = {
    "qmatch": QMatchEncoder,
    "vime": VIMEEncoder,
    "tabnet": TabNetEncoder,
    "simclr": SimCLREncoder,
    "simsiam": SimSiamEncoder,
    "dino": DINOEncoder,
    "vicreg": VICRegEncoder,
    "imix": IMixEncoder,
}

__all__ = ["METHODS", "PretextModule", *(cls.__name__ for cls in METHODS.values())]
