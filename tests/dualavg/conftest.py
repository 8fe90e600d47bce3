import numpy as np
import pytest


def make_shards(n=6, q=40, d=5, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    shards = []
    for _ in range(n):
        X = rng.normal(size=(q, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        y = np.where(X @ w + 0.3 * rng.normal(size=q) > 0, 1.0, -1.0)
        shards.append((X, y))
    return shards


@pytest.fixture
def shards():
    return make_shards()
