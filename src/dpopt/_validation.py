"""Argument checks shared by every layer.

Each check names the offending parameter and the allowed range in its error, so
that a user who passes ``epsilon=0`` or a NaN learns exactly what to change.
"""

from __future__ import annotations

import importlib.util
import math
import numbers
import os
import tempfile

import numpy as np


def _as_real(name: str, value) -> float:
    if type(value) is float:  # the common case, without the abstract-class check
        if value != value:
            raise ValueError(f"{name} must not be NaN")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.floating | np.integer):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must not be NaN")
    return value


def check_positive(name: str, value, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float if it is > 0 (and finite unless ``allow_inf``)."""
    value = _as_real(name, value)
    if value <= 0 or (math.isinf(value) and not allow_inf):
        bound = "(0, inf]" if allow_inf else "(0, inf)"
        raise ValueError(f"{name} must be in {bound}, got {value!r}")
    return value


def check_nonnegative(name: str, value) -> float:
    """Return ``value`` as a float if it is finite and >= 0."""
    value = _as_real(name, value)
    if value < 0 or math.isinf(value):
        raise ValueError(f"{name} must be in [0, inf), got {value!r}")
    return value


def check_delta(name: str, value) -> float:
    """A failure probability: ``0 <= delta < 1``."""
    value = _as_real(name, value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


def check_conversion_delta(value, notion: str) -> float:
    """δ of a conversion from ``notion`` ("RDP", "zCDP") to (ε, δ)-DP: ``0 < delta < 1``."""
    value = _as_real("delta", value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"delta must be in (0, 1) for an {notion} to (epsilon, delta) conversion, got {value!r}")
    return value


def check_rate(name: str, value) -> float:
    """A sampling rate: ``0 < rate <= 1``."""
    value = _as_real(name, value)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return value


def check_open_unit(name: str, value) -> float:
    """A fraction strictly between 0 and 1."""
    value = _as_real(name, value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return value


#: The memory one run may plan to use, in bytes (a large workstation's).  A size whose storage alone
#: exceeds it cannot run at all: it is refused in one line naming the parameter and its usable range,
#: where it used to run silently until the machine killed it (or numpy raised a MemoryError).
MEMORY_LIMIT = 32 * 2**30

#: The most iterations one optimization run may plan (``iterations``, ``steps``,
#: ``planned_iterations``).  Every iteration is at least one privacy release: its event stays in the
#: run's ledger (measured with tracemalloc: 485 bytes an iteration for dp-gd, 336 for dp-sgd, up to
#: twice that while dp-gd plans) and costs 0.1-0.3 ms of CPU on 200 rows of 5 features (dp-gd 128 µs,
#: dp-sgd 173 µs, dp-blsgd 236 µs).  So 1e7 iterations take up to ~10 GB and 20-40 CPU-minutes,
#: within :data:`MEMORY_LIMIT`; 1e9 would need ~1 TB and days, which no machine runs.
MAX_ITERATIONS = 10**7
_ITERATIONS_WHY = "the most iterations one run may plan: each is a logged privacy release, ~1 KB and 0.1 ms or more"


def check_int(name: str, value, *, minimum: int = 1, maximum: int | None = None, why: str = "") -> int:
    """An integer ``>= minimum`` (and ``<= maximum`` when given; ``why`` says why, in the message)
    (numpy integers accepted, floats and bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral | np.integer):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be in [{minimum}, {maximum}]{f' ({why})' if why else ''}, got {value}")
    return value


def check_iterations(name: str, value, *, minimum: int = 1) -> int:
    """An iteration count in [``minimum``, :data:`MAX_ITERATIONS`] (the reason is in the message)."""
    return check_int(name, value, minimum=minimum, maximum=MAX_ITERATIONS, why=_ITERATIONS_WHY)


def check_finite_array(name: str, array, *, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """Return ``array`` as a float ndarray, refusing NaN, infinities and wrong dimensions."""
    out = np.asarray(array, dtype=float)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if out.ndim not in allowed:
            raise ValueError(f"{name} must have ndim in {allowed}, got shape {out.shape}")
    if not np.logical_and.reduce(np.isfinite(out), axis=None):  # (the ufunc: no Python-level frame of .all())
        bad = int(np.size(out) - np.count_nonzero(np.isfinite(out)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s)")
    return out


def check_bool(name: str, value) -> bool:
    """True or False (a numpy bool too): a string such as 'no' is truthy, so it is refused rather than read as True."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def check_choice(name: str, value, choices) -> str:
    """One of a fixed set of strings."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def as_generator(rng, name: str = "rng") -> np.random.Generator:
    """Accept a Generator, a seed (int >= 0) or None (fresh OS entropy) and return a Generator."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral | np.integer) and not isinstance(rng, bool) and rng < 0:
        raise ValueError(f"{name} must be a seed >= 0 (or a numpy.random.Generator, or None), got {rng}")
    if rng is None or isinstance(rng, numbers.Integral | np.integer | np.random.SeedSequence):
        return np.random.default_rng(rng)
    raise TypeError(f"{name} must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}")


#: Optional third-party modules → (what a user installs, the extra of pyproject.toml that brings it).
EXTRAS = {
    "sklearn": ("scikit-learn", "sklearn"),
    "matplotlib": ("matplotlib", "plots"),
    "torch": ("PyTorch", "torch"),
    "mpi4py": ("mpi4py", "mpi"),
}


def missing_modules(modules) -> list[str]:
    """The modules of ``modules`` that cannot be imported here (nothing is imported)."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def install_hint(modules) -> str:
    """``"needs scikit-learn, matplotlib: pip install 'dpopt[sklearn,plots]'"`` for optional modules."""
    names = ", ".join(EXTRAS[m][0] for m in modules)
    extras = ",".join(dict.fromkeys(EXTRAS[m][1] for m in modules))
    return f"needs {names}: pip install 'dpopt[{extras}]'"


def require(what: str, modules) -> None:
    """Raise a one-line ``ModuleNotFoundError`` naming the pip command if an optional module is missing."""
    missing = missing_modules(modules)
    if missing:
        raise ModuleNotFoundError(f"{what} {install_hint(missing)}", name=missing[0])


def can_write_into(folder) -> str | None:
    """``None`` if a file can be created in ``folder``, else why not (the OS's words).  Tried, not asked:
    ``os.access`` says yes to root on any file system not mounted read-only (e.g. /sys)."""
    try:
        fd, path = tempfile.mkstemp(prefix=".dpopt-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    os.unlink(path)
    return None
