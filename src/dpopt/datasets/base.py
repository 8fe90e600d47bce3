"""The :class:`Dataset` value every loader and generator returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from ..objectives import bounds

__all__ = ["Dataset", "PrivacyLeakWarning"]


class PrivacyLeakWarning(UserWarning):
    """A quantity was computed from the private data outside the privacy guarantee."""


@dataclass(frozen=True, eq=False)
class Dataset:
    """A preprocessed binary-classification (or regression) data set.

    Attributes
    ----------
    X, y:
        Features ``(n, d)`` (finite; float64 except where a loader documents otherwise)
        and labels ``(n,)``: ±1 for binary classification, the class index for a
        multi-class set loaded without a positive class (Fashion-MNIST).
    feature_names:
        One name per column of X (``"workclass=Private"`` for one-hot columns).
    name, source, notes:
        Registry name, where the data came from (with licence), and what was done to them.
    norm, norm_bound:
        The declared row-norm bound ``‖x_i‖_norm ≤ norm_bound`` that the loader
        enforced (``None`` when no bound was declared).
    rows_changed:
        How many rows the enforcement step projected onto the ball (0 when the
        declared scaling already guaranteed the bound).
    rows_dropped:
        How many input rows were removed (missing values).
    data_derived_bounds:
        Numeric columns whose min-max scaling used the data's own min and max.
        Such scaling depends on every record and is *not* covered by any privacy
        guarantee; declare bounds to avoid it (:func:`~dpopt.datasets.load_csv` warns).
    classes:
        ``(negative, positive)`` original label values mapped to −1 and +1.
    groups:
        Optional per-row group label, e.g. ``"train"``/``"test"`` for Adult's official split.
    info:
        Anything else (e.g. the true parameter of a synthetic generator).
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    name: str
    source: str = ""
    notes: str = ""
    norm: str = "l2"
    norm_bound: float | None = None
    rows_changed: int = 0
    rows_dropped: int = 0
    data_derived_bounds: tuple[str, ...] = ()
    classes: tuple = (-1, 1)
    groups: np.ndarray | None = None
    info: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if self.X.ndim != 2 or self.y.shape != (self.X.shape[0],):
            raise ValueError(f"X {self.X.shape} and y {self.y.shape} do not describe the same rows")
        if len(self.feature_names) != self.X.shape[1]:
            raise ValueError(f"feature_names has {len(self.feature_names)} names for {self.X.shape[1]} columns")
        if self.groups is not None and np.shape(self.groups) != self.y.shape:
            raise ValueError("groups must have one entry per row")

    @property
    def n(self) -> int:
        """Number of rows."""
        return self.X.shape[0]

    @property
    def d(self) -> int:
        """Number of features."""
        return self.X.shape[1]

    @cached_property
    def row_norms(self) -> np.ndarray:
        """L2 norm of every row (computed once; pass to the losses' clipped paths)."""
        return bounds.row_norms(self.X, "l2")

    def subset(self, idx) -> Dataset:
        """The rows ``idx`` (indices or boolean mask) as a new Dataset with the same metadata."""
        groups = None if self.groups is None else self.groups[idx]
        return replace(self, X=self.X[idx], y=self.y[idx], groups=groups)

    def group(self, name: str) -> Dataset:
        """The rows whose ``groups`` entry equals ``name`` (e.g. ``"train"``)."""
        if self.groups is None:
            raise ValueError(f"data set {self.name!r} has no groups")
        mask = self.groups == name
        if not np.any(mask):
            raise ValueError(f"data set {self.name!r} has no group {name!r}; groups: {sorted(set(self.groups))}")
        return self.subset(mask)

    def enforce_bound(self, bound: float, norm: str = "l2") -> Dataset:
        """A copy whose rows are projected onto ``{‖x‖_norm ≤ bound}`` (invariant 5).

        E.g. ``enforce_bound(20, "l1")`` before kuru2022's ``S₁ = 2·20`` (eq. (5.2)).
        ``rows_changed`` counts the rows the projection moved.
        """
        X, changed = bounds.project_rows(self.X, bound, norm)
        note = f"projected onto the {norm} ball of radius {bound:g} ({changed} rows changed)"
        notes = f"{self.notes}; {note}" if self.notes else note
        return replace(self, X=X, norm=norm, norm_bound=float(bound), rows_changed=changed, notes=notes)

    def summary(self) -> str:
        """One line: name, shape, class balance and the enforced bound."""
        if np.all(np.abs(self.y) == 1.0):
            labels = f"positive fraction={float(np.mean(self.y == 1)) if self.n else 0.0:.3f}"
        else:
            labels = f"{len(np.unique(self.y))} classes"
        bound = "none" if self.norm_bound is None else f"{self.norm} <= {self.norm_bound:g}"
        return (
            f"{self.name}: n={self.n}, d={self.d}, {labels}, "
            f"row bound {bound} ({self.rows_changed} rows projected, {self.rows_dropped} dropped)"
        )

    def __repr__(self) -> str:
        return f"Dataset({self.summary()})"
