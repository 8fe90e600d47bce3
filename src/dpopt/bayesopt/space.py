"""The finite candidate set Λ of hyper-parameters (kusner2015 §2: |Λ| < ∞).

A :class:`CandidateSet` holds the candidates twice: in the user's scale
(``points``, what an estimator is fitted with) and in normalized unit-cube
coordinates (``unit``, what the kernels measure distances in, so that one
length scale fits every axis).  Axes marked ``log`` are normalized in log10,
as is usual for a regularization strength or a kernel width.

Λ never depends on the data: Sobol points come from the declared box and a
seed, a grid from the user.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import qmc

from .._validation import check_finite_array, check_int

__all__ = ["CandidateSet", "parse_axis", "MAX_CANDIDATES", "check_candidates"]

#: The most candidates |Λ| a set may hold: the GP keeps their N × N kernel matrix, and building it takes about
#: four such float arrays at the peak (measured at N = 8,192: 2.2 GB, 7 CPU-s), so 2**15 candidates need
#: ~32 GiB (:data:`dpopt._validation.MEMORY_LIMIT`) and a few minutes; more cannot run (a 1e9-point set asked
#: for 7 EB and ran or failed with numpy's MemoryError).
MAX_CANDIDATES = 2**15


def check_candidates(name: str, value) -> int:
    """A number of candidates in [1, :data:`MAX_CANDIDATES`] (the reason is in the message)."""
    return check_int(name, value, maximum=MAX_CANDIDATES,
                     why="the GP holds their N x N kernel matrix: 2**15 candidates take ~32 GiB")


def parse_axis(name: str, spec) -> tuple:
    """One axis of a search space: ``(low, high)``, ``(low, high, "log")``, or a list of values.

    Returns ``("box", low, high, log)`` or ``("grid", values, log)``; bad input
    raises ``ValueError`` naming the axis.
    """
    if isinstance(spec, tuple) and len(spec) in (2, 3) and not isinstance(spec[0], list | tuple):
        scale = spec[2] if len(spec) == 3 else "linear"
        if scale not in ("linear", "log"):
            raise ValueError(f"space[{name!r}]: scale must be 'linear' or 'log', got {scale!r}")
        low, high = float(spec[0]), float(spec[1])
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"space[{name!r}]: need finite low < high, got ({low}, {high})")
        if scale == "log" and low <= 0:
            raise ValueError(f"space[{name!r}]: a log axis needs low > 0, got {low}")
        return ("box", low, high, scale == "log")
    values = np.asarray(list(spec), dtype=float)
    if values.ndim != 1 or len(values) == 0 or not np.all(np.isfinite(values)):
        raise ValueError(
            f"space[{name!r}] must be (low, high), (low, high, 'log') or a non-empty list of finite numbers"
        )
    return ("grid", np.unique(values), bool(np.all(values > 0) and values.max() / values.min() >= 100))


@dataclass(frozen=True)
class CandidateSet:
    """Λ: ``points`` (N, d) in the user's scale, ``unit`` (N, d) in [0, 1]^d, axis ``names``."""

    points: np.ndarray
    unit: np.ndarray
    names: tuple[str, ...]
    log: tuple[bool, ...]
    integer: tuple[bool, ...] = ()

    def __len__(self) -> int:
        return len(self.points)

    @property
    def dim(self) -> int:
        return self.points.shape[1]

    def params(self, index: int) -> dict:
        """The candidate ``index`` as a dict ``{name: value}`` (ints on integer grid axes)."""
        integer = self.integer or (False,) * self.dim
        return {name: int(round(v)) if is_int else float(v)
                for name, v, is_int in zip(self.names, self.points[int(index)], integer, strict=True)}

    @classmethod
    def sobol(cls, bounds: dict, n: int, *, seed: int = 0) -> CandidateSet:
        """``n`` scrambled Sobol points in the box ``bounds`` = {name: (low, high[, "log"])}.

        The first ``n`` points of a base-2 Sobol sequence of length 2^⌈log₂ n⌉.
        """
        n = check_candidates("n_candidates", n)
        axes = [parse_axis(name, spec) for name, spec in bounds.items()]
        if not axes or any(a[0] != "box" for a in axes):
            raise ValueError("sobol needs every axis of the space as (low, high) or (low, high, 'log')")
        sampler = qmc.Sobol(d=len(axes), scramble=True, seed=seed)
        unit = sampler.random_base2(max(int(math.ceil(math.log2(n))), 0))[:n]
        points = np.empty_like(unit)
        for j, (_, low, high, log) in enumerate(axes):
            if log:
                points[:, j] = 10.0 ** (math.log10(low) + unit[:, j] * (math.log10(high) - math.log10(low)))
            else:
                points[:, j] = low + unit[:, j] * (high - low)
        return cls(points, unit, tuple(bounds), tuple(a[3] for a in axes))

    @classmethod
    def grid(cls, points, *, names=None, log=None, integer=None) -> CandidateSet:
        """A user grid: ``points`` (N, d) (or (N,) for one axis), normalized per axis by min–max.

        ``log`` (one flag per axis) normalizes that axis in log10 (its values must be > 0).
        """
        pts = check_finite_array("points", points, ndim=(1, 2))
        pts = pts[:, None] if pts.ndim == 1 else pts
        if len(pts) == 0:
            raise ValueError("points must hold at least one candidate")
        d = pts.shape[1]
        names = tuple(names) if names is not None else tuple(f"x{j}" for j in range(d))
        log = tuple(bool(v) for v in log) if log is not None else (False,) * d
        if len(names) != d or len(log) != d:
            raise ValueError(f"names and log need one entry per axis ({d})")
        coords = pts.copy()
        for j in range(d):
            if log[j]:
                if np.any(pts[:, j] <= 0):
                    raise ValueError(f"axis {names[j]!r} is log-scaled and needs values > 0")
                coords[:, j] = np.log10(pts[:, j])
        low, high = coords.min(axis=0), coords.max(axis=0)
        span = np.where(high > low, high - low, 1.0)
        integer = tuple(bool(v) for v in integer) if integer is not None else (False,) * d
        return cls(pts, (coords - low) / span, names, log, integer)

    @classmethod
    def from_space(cls, space: dict, *, n_candidates: int = 256, seed: int = 0) -> CandidateSet:
        """Sobol points when every axis is a box, the full product grid when every axis is a list."""
        if not isinstance(space, dict) or not space:
            raise ValueError("space must be a non-empty dict {name: (low, high[, 'log']) or [values]}")
        axes = {name: parse_axis(name, spec) for name, spec in space.items()}
        kinds = {a[0] for a in axes.values()}
        if kinds == {"box"}:
            return cls.sobol(space, n_candidates, seed=seed)
        if kinds == {"grid"}:
            check_candidates("the grid's size (the product of its axes' lengths)",
                             math.prod(len(a[1]) for a in axes.values()))
            mesh = np.meshgrid(*[a[1] for a in axes.values()], indexing="ij")
            pts = np.stack([m.reshape(-1) for m in mesh], axis=1)
            integer = [all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in space[name])
                       for name in space]
            return cls.grid(pts, names=tuple(space), log=[a[2] for a in axes.values()], integer=integer)
        raise ValueError("space must give every axis as a box or every axis as a list of values, not a mix")
