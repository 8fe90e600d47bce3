"""Neighbouring tables (one record added) with in-range extreme values: the encoding neither raises
nor warns on one of them only, so a declared range never turns one record into a refusal."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpopt.datasets.preprocess import learn_schema


def _encode(values, bounds, missing="impute"):
    labels = np.array(["a", "b"] * (len(values) // 2) + ["a"] * (len(values) % 2))
    cols = {"x": np.array(values), "label": labels}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schema, kept = learn_schema(cols, "label", numeric_bounds={"x": bounds}, missing=missing, norm_bound=None,
                                    infer=False)
        return schema.encode({"x": cols["x"][kept]}).X[:, 0]


@pytest.mark.parametrize("added", ["1e308", "-1e308", "1.7e308", "?"])
def test_a_range_spanning_beyond_the_float_range_encodes_every_record(added):
    # hi - lo = inf: (1e308 - lo)/(hi - lo) was inf/inf = NaN with a RuntimeWarning, on this neighbour only
    base = ["0", "1", "-5e307"]
    without, with_record = _encode(base, (-1e308, 1e308)), _encode([*base, added], (-1e308, 1e308))
    np.testing.assert_array_equal(with_record[:3], without)
    np.testing.assert_allclose(without, [0.5, 0.5, 0.25])
    assert 0.0 <= with_record[3] <= 1.0


def test_the_imputed_middle_of_a_range_near_the_float_maximum_is_finite():
    # (lo + hi)/2 overflowed to inf, so a missing value was refused as "non-finite" on that neighbour only
    base = ["1.1e308", "1.2e308"]
    np.testing.assert_allclose(_encode(base, (1e308, 1.5e308)), [0.2, 0.4])
    np.testing.assert_allclose(_encode([*base, "?"], (1e308, 1.5e308)), [0.2, 0.4, 0.5])
