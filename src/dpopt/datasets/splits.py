"""Seeded index splits: k folds (chen2020 §5.2 reports 10-fold cross-validation), train/test, nodes.

These shuffles only organise experiments; they are not privacy randomness.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_generator, check_int, check_open_unit

__all__ = ["kfold_indices", "train_test_indices", "partition_indices"]


def kfold_indices(n: int, k: int = 10, rng=None, *, stratify=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` pairs ``(train_idx, test_idx)`` of sorted indices; test folds partition ``range(n)``.

    With ``stratify`` (labels, shape ``(n,)``) every class is dealt round-robin over
    the folds after a shuffle, so class proportions agree across folds.
    """
    n = check_int("n", n)
    k = check_int("k", k, minimum=2)
    if k > n:
        raise ValueError(f"k must be <= n = {n}, got {k}")
    gen = as_generator(rng)
    fold = np.empty(n, dtype=np.intp)
    if stratify is None:
        perm = gen.permutation(n)
        fold[perm] = np.arange(n) % k
    else:
        labels = np.asarray(stratify)
        if labels.shape != (n,):
            raise ValueError(f"stratify must have shape ({n},), got {labels.shape}")
        offset = 0
        for cls in np.unique(labels):
            members = gen.permutation(np.flatnonzero(labels == cls))
            fold[members] = (np.arange(members.size) + offset) % k
            offset += members.size
    all_idx = np.arange(n)
    return [(all_idx[fold != j], all_idx[fold == j]) for j in range(k)]


def train_test_indices(n: int, test_fraction: float = 0.2, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """Random sorted ``(train_idx, test_idx)`` with ``round(test_fraction·n)`` test rows."""
    n = check_int("n", n, minimum=2)
    test_fraction = check_open_unit("test_fraction", test_fraction)
    gen = as_generator(rng)
    m = min(max(int(round(test_fraction * n)), 1), n - 1)
    perm = gen.permutation(n)
    return np.sort(perm[m:]), np.sort(perm[:m])


def partition_indices(n: int, parts: int, rng=None) -> list[np.ndarray]:
    """Deal ``range(n)`` at random into ``parts`` near-equal sorted pieces.

    E.g. the data of each node of liu2024 §5.1 ("randomly assign the data samples
    evenly among the n = 20 working nodes").
    """
    n = check_int("n", n)
    parts = check_int("parts", parts)
    if parts > n:
        raise ValueError(f"parts must be <= n = {n}, got {parts}")
    perm = as_generator(rng).permutation(n)
    return [np.sort(p) for p in np.array_split(perm, parts)]
