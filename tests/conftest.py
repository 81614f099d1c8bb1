from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def tiny_encoder_params(**overrides):
    """A QMatchEncoder configuration that fits in well under a second."""
    params = dict(
        hidden_sizes=(32,),
        embedding_dim=8,
        projection_sizes=(16, 8),
        queue_size=64,
        batch_size=64,
        max_epochs=3,
        random_state=0,
        device="cpu",
    )
    params.update(overrides)
    return params


@pytest.fixture
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"the shared datasets are not at {SHARED_DATA}")
    return SHARED_DATA
