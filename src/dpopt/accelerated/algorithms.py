"""The recursions of DP-GD, DP-HB, DP-NAG and DP-MASG (kuru2022 §2–§4), as pure math.

Each function runs T iterations on a batch of R iterates X (R, d) and asks
``oracle.gradient(points, b_t)`` for the noisy gradient of iteration t
(t = 1, …, T) with Laplace scale b_t; the oracle owns sampling, noise and the
ledger.  Iteration t maps x_{t−1} to x_t, so ``scales[t − 1]`` is the b_t of
the bounds (4.3) and (4.8).

``record`` (an int k, or an array of iteration numbers) keeps every k-th
iterate (or those listed) and x_T; the functions return
``(x_T, recorded_t, recorded_x)`` with ``recorded_x`` of shape (K, R, d).
"""

from __future__ import annotations

import numpy as np

__all__ = ["gradient_descent", "heavy_ball", "nesterov"]


class _Recorder:
    """Keeps x_t for t in ``record``: None (only x_T is returned), a stride k, or a set of t's."""

    def __init__(self, T: int, record, x0: np.ndarray):
        if record is None:
            self.keep = None
        elif np.ndim(record) == 0:
            every = int(record)
            if every < 1:
                raise ValueError(f"record must be a positive stride, got {every}")
            self.keep = {t for t in range(T + 1) if t % every == 0} | {T}
        else:
            self.keep = {int(t) for t in np.asarray(record).ravel() if 0 <= t <= T} | {T}
        self.t: list[int] = []
        self.x: list[np.ndarray] = []
        self(0, x0)

    def __call__(self, t: int, x: np.ndarray) -> None:
        if self.keep is not None and t in self.keep:
            self.t.append(t)
            self.x.append(x.copy())

    def result(self, x: np.ndarray):
        if self.keep is None:
            return x, np.zeros(0, dtype=int), np.zeros((0,) + x.shape)
        return x, np.asarray(self.t), np.stack(self.x)


def _iterations(scales) -> np.ndarray:
    scales = np.asarray(scales, dtype=float)
    if scales.ndim != 1 or scales.size == 0:
        raise ValueError("scales must be a non-empty 1-D array (one Laplace scale per iteration)")
    return scales


def _per_iteration(name: str, value, T: int) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(value, dtype=float), (T,))
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def gradient_descent(oracle, x0: np.ndarray, steps, scales, *, record=None):
    """DP-GD: x_t = x_{t−1} − α_t (∇F_{B_t}(x_{t−1}) + η_t), eq. (2.4) + noise (2.8)."""
    b = _iterations(scales)
    alpha = _per_iteration("steps", steps, b.size)
    x = np.array(x0, dtype=float)
    rec = _Recorder(b.size, record, x)
    for t in range(1, b.size + 1):
        x = x - alpha[t - 1] * oracle.gradient(x, b[t - 1])
        rec(t, x)
    return rec.result(x)


def heavy_ball(oracle, x0: np.ndarray, step: float, momentum: float, scales, *, record=None):
    """DP-HB in its smoothing form, eqs. (3.6)–(3.7), which is the update (3.1).

    ū_t = β ū_{t−1} + (1 − β)(∇F_{B_t}(x_t) + η_t),  x_{t+1} = x_t − α/(1 − β) ū_t,
    with ū_{−1} = 0 (so ū_0 = (1 − β)(∇F_{B_0}(x_0) + η_0) as in §3); this is
    x_{t+1} = x_t − α(∇F_{B_t}(x_t) + η_t) + β(x_t − x_{t−1}) with x_{−1} = x_0.
    """
    b = _iterations(scales)
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must be in [0, 1) for the heavy ball, got {momentum}")
    x = np.array(x0, dtype=float)
    u_bar = np.zeros_like(x)
    rec = _Recorder(b.size, record, x)
    for t in range(1, b.size + 1):
        u_bar = momentum * u_bar + (1.0 - momentum) * oracle.gradient(x, b[t - 1])
        x = x - step / (1.0 - momentum) * u_bar
        rec(t, x)
    return rec.result(x)


def nesterov(oracle, x0: np.ndarray, steps, momenta, scales, *, restarts=None, record=None):
    """DP-NAG, eq. (4.1), with per-iteration α_t, β_t; with ``restarts`` it is DP-MASG (eq. (4.7)).

    z = (1 + β_t) x_{t−1} − β_t x_{t−2},  x_t = z − α_t (∇F_{B_t}(z) + η_t),  x_{−1} = x_0.
    Where ``restarts[t − 1]`` is True (the first iteration of a new MASG stage)
    the momentum is reset: the previous iterate is set to the current one.
    """
    b = _iterations(scales)
    T = b.size
    alpha = _per_iteration("steps", steps, T)
    beta = _per_iteration("momenta", momenta, T)
    restart = (
        np.zeros(T, dtype=bool)
        if restarts is None
        else np.broadcast_to(np.asarray(restarts, bool), (T,))
    )
    x = np.array(x0, dtype=float)
    x_prev = x
    rec = _Recorder(T, record, x)
    for t in range(1, T + 1):
        if restart[t - 1]:
            x_prev = x
        z = (1.0 + beta[t - 1]) * x - beta[t - 1] * x_prev
        x_prev = x
        x = z - alpha[t - 1] * oracle.gradient(z, b[t - 1])
        rec(t, x)
    return rec.result(x)
