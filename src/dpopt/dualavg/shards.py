"""Node shards on disk and synthetic shards generated node by node.

A shard directory holds ``shards.json`` (the public sizes q_i and the
dimension) and one ``node{i}.npz`` (X, y) per node, so that a rank opens its
own file only.  :func:`synthetic_shard` builds node i's shard from the public
seed and i alone (dense unit-norm features, labels from a planted separator
with label noise, like the ``epsilon`` set of liu2024 §5).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["write_shards", "read_index", "shard_loader", "synthetic_shard"]


def write_shards(directory, shards) -> Path:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for i, (X, y) in enumerate(shards):
        np.savez(d / f"node{i}.npz", X=np.asarray(X, dtype=float), y=np.asarray(y, dtype=float))
    index = {"sizes": [len(y) for _, y in shards], "dim": int(np.asarray(shards[0][0]).shape[1])}
    (d / "shards.json").write_text(json.dumps(index))
    return d


def read_index(directory) -> dict:
    path = Path(directory) / "shards.json"
    if not path.exists():
        raise ValueError(f"{directory} is not a shard directory (no shards.json)")
    return json.loads(path.read_text())


def shard_loader(directory):
    """node → (X, y), reading that node's file only."""
    d = Path(directory)

    def load(i: int):
        path = d / f"node{i}.npz"
        if not path.exists():
            raise FileNotFoundError(f"node {i}: shard file {path} is missing")
        with np.load(path) as data:
            return data["X"], data["y"]

    return load


def synthetic_shard(node: int, *, size: int, dim: int, seed: int = 0, label_noise: float = 0.1):
    """Node ``node``'s shard of a synthetic binary task (X rows of unit norm, y ∈ {−1, +1})."""
    w = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,))).standard_normal(dim)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, node)))
    X = rng.standard_normal((size, dim))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ w > 0, 1.0, -1.0)
    flip = rng.random(size) < label_noise
    return X, np.where(flip, -y, y)
