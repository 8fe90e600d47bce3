"""Save and load fitted private estimators as JSON (no pickle: a model file is data, never code).

A model file is one JSON object::

    {
      "format": "dpopt-model", "format_version": 1, "dpopt_version": "0.1.0",
      "estimator": {"class": "DPLogisticRegression", "params": {...}},
      "fitted": {"coef_": [[...]], "intercept_": [...], "classes_": [...], "n_features_in_": d,
                 "row_bound_": B, "box_": null | [[lower...], [upper...]], "method_": "..."},
      "feature_names": [...] | null,
      "preprocessing": <TableSchema.to_dict()> | null,
      "privacy": {"method", "epsilon", "delta", "notion", "relation", "guarantee", "events": [...],
                  "disclosed": [...]},
      "data": {"rows": n, ...}
    }

``privacy`` is the estimator's :meth:`privacy_record` (``privacy_spent_`` and
the event log ``privacy_events_``: ``dpopt account --events MODEL.json``
re-accounts it) plus ``disclosed``, the list of quantities the file releases
*outside* that guarantee (e.g. a label set, numeric ranges or a row count
read from the data).  A model file holds what is released and nothing else:
the estimator's ``diagnostics_`` (exact objective values, trajectories,
solver statistics, iteration counts: non-private) are never written, and
neither is the ``ledger`` parameter (a budget, not a model parameter) nor
``random_state`` (the seed of the privacy noise: it would let anyone recompute
the noise and take it off; it is stored as null).
Files are written atomically: a temporary file in the
same folder, renamed into place, so an interrupted save leaves no partial model.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..privacy import events as ev
from ..result import Diagnostics
from .linear import DPHuberSVC, DPLogisticRegression

__all__ = ["FORMAT", "FORMAT_VERSION", "ModelFormatError", "SavedModel", "model_to_dict", "save_model", "load_model"]

FORMAT = "dpopt-model"
FORMAT_VERSION = 1

#: Estimator classes a model file may name.
ESTIMATORS = {cls.__name__: cls for cls in (DPLogisticRegression, DPHuberSVC)}


class ModelFormatError(ValueError):
    """The file is not a dpopt model file this version can read."""


@dataclass
class SavedModel:
    """A loaded model file: the fitted estimator and what was stored beside it."""

    estimator: DPLogisticRegression | DPHuberSVC
    privacy: dict
    preprocessing: dict | None = None
    feature_names: tuple[str, ...] | None = None
    data: dict = field(default_factory=dict)
    dpopt_version: str = ""


def _json_scalar(value):
    """A JSON-ready version of a parameter value; refuses what JSON cannot hold faithfully."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            raise ValueError(f"cannot store the non-finite value {value!r} in a model file")
        return float(value)
    if isinstance(value, np.ndarray):
        return [_json_scalar(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): _json_scalar(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [_json_scalar(v) for v in value]
    raise TypeError(f"cannot store a {type(value).__name__} in a model file")


def _params(estimator) -> dict:
    params = estimator.get_params(deep=False)
    # Never the seed of the privacy noise: with it, anyone holding D and D' refits both and matches the
    # released coefficients exactly (a known seed voids the guarantee); a generator's state likewise.
    params["random_state"] = None
    params["ledger"] = None  # a budget shared with other fits, not part of the model
    return {k: _json_scalar(v) for k, v in params.items()}


def model_to_dict(
    estimator,
    *,
    preprocessing: Mapping | None = None,
    feature_names: Sequence[str] | None = None,
    data: Mapping | None = None,
    disclosed: Sequence[str] = (),
    privacy: Mapping | None = None,
) -> dict:
    """The JSON object of the module docstring for a fitted ``estimator``.

    ``preprocessing`` is a :meth:`TableSchema.to_dict` (or any JSON object
    that maps raw rows to the estimator's features), ``data`` a summary of
    the training data, ``disclosed`` the non-private releases to record.
    ``privacy`` replaces the estimator's own :meth:`privacy_record` by a
    record that composes more than its fit, in the same format (e.g.
    :meth:`DPBayesSearchCV.privacy_record`: every fit of a tuning run and the
    selection's releases, one ledger, kusner2015).
    """
    name = type(estimator).__name__
    if name not in ESTIMATORS:
        raise TypeError(f"can save {sorted(ESTIMATORS)}, got {name}")
    check_is_fitted(estimator)
    box = getattr(estimator, "_box_", None)
    fitted = {
        "coef_": _json_scalar(estimator.coef_),
        "intercept_": _json_scalar(estimator.intercept_),
        "classes_": _json_scalar(estimator.classes_),
        "n_features_in_": int(estimator.n_features_in_),
        "row_bound_": _json_scalar(estimator.row_bound_),
        "box_": None if box is None else [_json_scalar(box[0]), _json_scalar(box[1])],
        "method_": estimator.method_,
    }
    if feature_names is not None and len(feature_names) != estimator.n_features_in_:
        raise ValueError(f"feature_names has {len(feature_names)} names for {estimator.n_features_in_} features")
    from .. import __version__

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dpopt_version": __version__,
        "estimator": {"class": name, "params": _params(estimator)},
        "fitted": fitted,
        "feature_names": None if feature_names is None else [str(f) for f in feature_names],
        "preprocessing": None if preprocessing is None else dict(preprocessing),
        "privacy": _json_scalar(
            {
                **(estimator.privacy_record() if privacy is None else dict(privacy)),
                "disclosed": [*estimator.disclosed_, *map(str, disclosed)],
            }
        ),
        "data": {} if data is None else _json_scalar(dict(data)),
    }


def save_model(path, estimator, **kwargs) -> Path:
    """Write ``model_to_dict(estimator, **kwargs)`` to ``path`` atomically; return the path."""
    text = json.dumps(model_to_dict(estimator, **kwargs), indent=1, allow_nan=False) + "\n"
    path = Path(os.fspath(path))
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"folder {str(folder)!r} for the model file does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _require(data: Mapping, key: str, where: str):
    if key not in data:
        raise ModelFormatError(f"{where} lacks the key {key!r}")
    return data[key]


def load_model(path) -> SavedModel:
    """Read a model file written by :func:`save_model`; :class:`ModelFormatError` if it is not one."""
    path = Path(os.fspath(path))
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {str(path)!r}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"{str(path)!r} is not a dpopt model file (not JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ModelFormatError(f'{str(path)!r} is not a dpopt model file (no "format": "{FORMAT}" entry)')
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise ModelFormatError(
            f"{str(path)!r} has model format version {version!r}; this dpopt reads version {FORMAT_VERSION}"
        )
    where = f"model file {str(path)!r}"
    spec = _require(data, "estimator", where)
    name = _require(spec, "class", where)
    if name not in ESTIMATORS:
        raise ModelFormatError(f"{where} names the unknown estimator {name!r}; known: {sorted(ESTIMATORS)}")
    fitted = _require(data, "fitted", where)
    privacy = _require(data, "privacy", where)
    try:
        params = dict(_require(spec, "params", where))
        if isinstance(params.get("bounds"), list):  # JSON turned the (lower, upper) pair into a list
            params["bounds"] = tuple(params["bounds"])
        estimator = ESTIMATORS[name](**params)
        classes = np.asarray(_require(fitted, "classes_", where))
        coef = np.asarray(_require(fitted, "coef_", where), dtype=float)
        intercept = np.asarray(_require(fitted, "intercept_", where), dtype=float)
        d = int(_require(fitted, "n_features_in_", where))
        rows = 1 if len(classes) == 2 else len(classes)
        if len(classes) < 2 or coef.shape != (rows, d) or intercept.shape != (rows,):
            raise ModelFormatError(
                f"{where} is inconsistent: {len(classes)} classes, coef_ {coef.shape}, intercept_ "
                f"{intercept.shape}, {d} features"
            )
        box = fitted.get("box_")
        estimator.classes_ = classes
        estimator.coef_ = coef
        estimator.intercept_ = intercept
        estimator.n_features_in_ = d
        estimator.row_bound_ = float(_require(fitted, "row_bound_", where))
        estimator._box_ = None if box is None else (np.asarray(box[0], float), np.asarray(box[1], float))
        estimator.method_ = _require(fitted, "method_", where)
        estimator.privacy_spent_ = {
            k: privacy[k] for k in ("epsilon", "delta", "notion", "relation", "guarantee") if k in privacy
        }
        estimator.privacy_events_ = [ev.from_dict(e) for e in privacy.get("events", [])]
        estimator.disclosed_ = [str(d) for d in privacy.get("disclosed", [])]
        estimator.diagnostics_ = Diagnostics()  # never stored in a model file
    except ModelFormatError:
        raise
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise ModelFormatError(f"{where} is damaged: {exc}") from None
    names = data.get("feature_names")
    return SavedModel(
        estimator=estimator,
        privacy=privacy,
        preprocessing=data.get("preprocessing"),
        feature_names=None if names is None else tuple(names),
        data=data.get("data") or {},
        dpopt_version=str(data.get("dpopt_version", "")),
    )
