"""The encoder network's construction (issue #58): no default initialisation spent."""

import pytest
import torch
from torch import nn

from qmatch_sklearn._networks import Encoder, build_encoder, isolated_global_rng, lecun_normal_


@pytest.mark.parametrize("architecture, hidden_sizes", [("mlp", (32, 16)), ("imix", (32, 16))])
def test_the_encoder_is_built_as_default_initialised_layers_overwritten(architecture,
                                                                        hidden_sizes):
    """Built on the meta device and initialised once, the encoder holds exactly what
    building it with torch's default initialisation and overwriting it gives."""
    built = build_encoder(9, hidden_sizes, 4, architecture, torch.Generator().manual_seed(5))
    with isolated_global_rng():
        expected = lecun_normal_(Encoder(9, hidden_sizes, 4, architecture),
                                 torch.Generator().manual_seed(5))
    assert built.state_dict().keys() == expected.state_dict().keys()
    for name, tensor in expected.state_dict().items():
        assert built.state_dict()[name].device.type == "cpu"
        torch.testing.assert_close(built.state_dict()[name], tensor, rtol=0, atol=0, msg=name)
    assert sum(isinstance(layer, nn.BatchNorm1d) for layer in built.modules())


def test_the_encoder_is_built_where_the_caller_builds():
    """Under a meta-device context (the file schema's check of a saved network's
    shapes) nothing is allocated."""
    with torch.device("meta"):
        built = build_encoder(9, (4096, 4096), 4, "mlp", torch.Generator())
    assert {tensor.device.type for tensor in built.state_dict().values()} == {"meta"}
