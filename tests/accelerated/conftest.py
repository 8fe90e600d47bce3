"""Small logistic-regression problems shared by the accelerated-family tests."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt.objectives import L2, Objective


def make_problem(n: int = 300, d: int = 5, lam: float = 0.05, seed: int = 0) -> Objective:
    """kuru2022-style data: U uniform on [0, 1]^d, labels sign(Uw); mean logistic loss + λ‖x‖²."""
    rng = np.random.default_rng(seed)
    U = rng.random((n, d))
    w = rng.standard_normal(d)
    y = np.where(U @ w >= 0, 1.0, -1.0)
    return Objective("logistic", U, y, L2(lam))


@pytest.fixture(scope="module")
def problem() -> Objective:
    return make_problem()


@pytest.fixture(scope="session")
def problem_factory():
    """``make_problem`` itself, for tests that need other sizes."""
    return make_problem
