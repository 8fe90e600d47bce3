"""Shape and finiteness helpers shared by the objectives (cheap checks only).

Parameters may be one vector ``w`` of shape ``(d,)`` or a batch of ``R``
independent vectors of shape ``(R, d)`` (DESIGN.md: repetitions are a batch
dimension).  Data matrices are validated once, where they enter (``Objective``,
the data sets); the per-call checks here are O(R·d + n) so that the hot path
stays within a small factor of two plain passes over ``X``.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_choice, check_finite_array, check_positive

#: Relative safety margin applied to every clip/projection bound so that the
#: *computed* norm of a clipped or projected vector never exceeds the bound in
#: floating point (a factor 1 - 2**-40, i.e. about 9e-13 relative).
SAFETY = 1.0 - 2.0**-40


#: The precisions a data pass can compute in (see :func:`to_precision`).
PRECISIONS = ("float64", "float32")


def compute_dtype(X) -> type:
    """The dtype the data passes over ``X`` compute in: float32 for float32 data, else float64."""
    return np.float32 if np.asarray(X).dtype == np.float32 else np.float64


def to_precision(X, precision: str, name: str = "X") -> np.ndarray:
    """``X`` in ``precision``, every entry rounded toward zero.

    Rounding toward zero makes ``|x'_ij| ≤ |x_ij|``, so no row's L1, L2 or L∞
    norm grows: a bound enforced on the float64 rows (DESIGN.md invariant 5)
    still holds for the float32 rows the fast data passes read.
    """
    dtype = np.dtype(check_choice("precision", precision, PRECISIONS))
    X = np.asarray(X)
    with np.errstate(over="ignore"):
        out = X.astype(dtype)
    if out.dtype == X.dtype:
        return out
    if np.any(np.isinf(out) & np.isfinite(X)):
        raise ValueError(f"{name} has values beyond the range of {precision}")
    grew = np.abs(out) > np.abs(X)
    out[grew] = np.nextafter(out[grew], 0)
    return out


def as_params(w, d: int | None = None, name: str = "w") -> np.ndarray:
    """Return ``w`` as a float array of shape ``(d,)`` or ``(R, d)``, refusing NaN/inf."""
    w = check_finite_array(name, w, ndim=(1, 2))
    if d is not None and w.shape[-1] != d:
        raise ValueError(f"{name} must have last dimension {d} (the number of features), got shape {w.shape}")
    return w


def as_data_matrix(X, name: str = "X") -> np.ndarray:
    """Return ``X`` as a 2-D float array after rejecting NaN and infinities (one full pass)."""
    X = check_finite_array(name, X, ndim=2)
    if X.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row, got shape {X.shape}")
    return X


def check_xy_shapes(X, y) -> tuple[np.ndarray, np.ndarray]:
    """Cheap shape checks for a data matrix and its labels (no finiteness pass)."""
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n, d), got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X {X.shape}, got {y.shape}")
    return X, y


def ensure_finite_result(out, **inputs) -> None:
    """Raise a clear error if a reduction came out non-finite, naming the culprit input.

    Inputs are only scanned (a full pass) when the result is already known to be
    bad, so the common case costs O(size of the result).
    """
    if np.logical_and.reduce(np.isfinite(out), axis=None):  # (the ufunc: no Python frame of .all())
        return
    for name, value in inputs.items():
        if value is not None:
            check_finite_array(name, value)
    raise FloatingPointError(
        "the result is not finite although every input is finite (overflow: "
        "the parameters are probably too large for this loss)"
    )


def as_bound(name: str, value) -> float:
    """A clipping or projection bound: finite and > 0."""
    return check_positive(name, value)


def per_row(value, x: np.ndarray, name: str) -> float | np.ndarray:
    """A positive scalar, or one value per repetition broadcast against ``x`` of shape (R, d)."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return check_positive(name, float(arr))
    if x.ndim != 2 or arr.shape != (x.shape[0],):
        raise ValueError(
            f"{name} must be a scalar or have shape ({x.shape[0] if x.ndim == 2 else 'R'},) "
            f"matching the batch, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0 in every entry")
    return arr[:, None]
