"""The torch QuantileTransformer that the ONNX export writes (issue #57) maps every
value as scikit-learn's ``QuantileTransformer.transform`` does."""

import warnings

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.preprocessing import QuantileTransformer

from qmatch_sklearn._quantile_graph import QuantileMap, normal_quantile


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), n_quantiles=st.integers(2, 60),
       distribution=st.sampled_from(["uniform", "normal"]), levels=st.integers(1, 8),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_tied_values_map_as_scikit_learn_maps_them(seed, n_quantiles, distribution, levels,
                                                   dtype):
    rng = np.random.default_rng(seed)
    X = np.c_[rng.integers(0, levels, 80), rng.normal(size=80), np.full(80, 2.0)].astype(dtype)
    X[rng.random(80) < 0.1, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n_quantiles above the rows, all-equal columns
        quantiles = QuantileTransformer(n_quantiles=n_quantiles,
                                        output_distribution=distribution).fit(X)
    rows = np.r_[X, X + rng.normal(size=X.shape), X * 3 - 5].astype(dtype)
    expected = quantiles.transform(rows)
    mapped = QuantileMap(quantiles)(torch.from_numpy(rows)).numpy()
    assert mapped.dtype == dtype
    np.testing.assert_array_equal(np.isnan(mapped), np.isnan(expected))
    tolerance = 1e-6 if dtype == np.float32 else 1e-8
    np.testing.assert_allclose(mapped, expected, rtol=tolerance, atol=tolerance)


def test_the_normal_quantile_function_is_scipy_s_within_its_clipped_range():
    p = np.r_[np.linspace(1e-7, 1 - 1e-7, 100_001), 0.02425, 1 - 0.02425]
    expected = stats.norm.ppf(p)
    got = normal_quantile(torch.from_numpy(p)).numpy()
    np.testing.assert_allclose(got, expected, rtol=2e-9, atol=1e-12)
