"""``dpopt tune``: private hyper-parameter tuning of a classifier on a CSV file (kusner2015).

Reads and encodes FILE.csv exactly as ``dpopt fit`` does (same ``--bounds``,
``--categories`` and the same privacy warnings), splits it once at random
(``--validation-size``), and runs DPBayesSearchCV: GP-UCB over ``--space``,
then the chosen hyper-parameters and the best validation score are released
by the exponential and Laplace mechanisms with the budget ``--epsilon``.

``--estimator logistic`` or ``huber-svc`` (dpopt's private classifiers) also
protects the training rows: each fit spends ``--train-epsilon`` (and
``--train-delta``) and the report's ε composes every fit with the selection.
With ``--train-delta 0`` (the default) the fits are pure ε-DP (``--method``
auto, objpert, outpert, dp-gd, ...); with ``--train-delta D > 0`` any method
(auto, dp-blsgd, dp-sgd, dp-agd, ...) fits with (ε, δ) and each fit is
charged one (ε, δ) guarantee, the same whatever its hyper-parameters, under
the search's replace-one relation ((2ε, (1 + e^ε)δ) for the add/remove
methods); the report's (ε, δ) is their sum with the selection's ε (basic
composition, ``approx`` accounting).  ``--estimator
sklearn-logistic`` (scikit-learn's non-private LogisticRegression without
intercept, tuned over C) protects the validation rows only, and is the
estimator of ``--algorithm 3`` (worst-case ε-DP; rows clipped to ``--data-norm``).
Algorithms 1 and 2 hold only under the GP assumption with the stated ``--k1``.
``--secure-noise`` releases the parameters and the score with exact,
floating-point-safe noise from the OS CSPRNG at the same ε (the exact
exponential mechanism and discrete Laplace on a grid), and with a dpopt
estimator its training fits too (their ``--method`` must accept it, e.g. dp-gd).

The report (``--out``, JSON) holds the released parameters and score, the
privacy record with every event, and what was disclosed; no per-candidate
validation score (those are not covered by the guarantee).

With a private estimator the refit model (the released hyper-parameters,
fitted once more on the training part) is saved as ``dpopt fit`` saves one
(``--model-out``, default the report's name with ``.model.json``; ``dpopt
predict`` applies it): same schema, feature names, data summary and
disclosures, and as its privacy record the search's one ledger, every fit
and both releases composed (kusner2015 with a private tuned estimator).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import warnings
from pathlib import Path

from . import FIRST_PROGRESS, UserError, check_out
from .fit import add_data_arguments, disclosures, load_encoded, parse_classes, save_fitted, warn

#: ``--estimator`` choices.
ESTIMATORS = ("logistic", "huber-svc", "sklearn-logistic")


def register(sub) -> None:
    p = sub.add_parser(
        "tune",
        help="tune a classifier's hyper-parameters privately (Bayesian optimization, kusner2015)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_data_arguments(p)
    p.add_argument("--estimator", default="logistic", metavar="KIND", help="logistic (default), huber-svc or "
                   "sklearn-logistic (non-private: protects the validation rows only)")
    p.add_argument("--space", required=True, nargs="+", metavar="NAME=LO:HI[:log]",
                   help="search space, e.g. regularization=1e-4:1e-1:log, or NAME=V1,V2,... for a grid")
    p.add_argument("--epsilon", required=True, type=float, metavar="E", help="budget of the two releases, > 0")
    p.add_argument("--delta", type=float, default=1e-3, metavar="D",
                   help="failure probability of Algorithms 1-2, in (0, 1) (default 1e-3)")
    p.add_argument("--algorithm", type=int, default=1, choices=(1, 2, 3), help="kusner2015 Algorithm (default 1)")
    p.add_argument("--n-iter", type=int, default=20, metavar="T", help="Bayesian-optimization steps (default 20)")
    p.add_argument("--n-candidates", type=int, default=128, metavar="N", help="Sobol candidates (default 128)")
    p.add_argument("--validation-size", type=float, default=0.25, metavar="F",
                   help="fraction of rows held out for validation (default 0.25)")
    p.add_argument("--k1", type=float, default=0.95, help="assumed k1(V, V') of Algorithms 1-2 (default 0.95)")
    p.add_argument("--A", type=float, dest="A", help="Algorithm 2: de Freitas et al.'s constant A")
    p.add_argument("--tau", type=float, help="Algorithm 2: de Freitas et al.'s constant tau")
    p.add_argument("--train-epsilon", type=float, metavar="E",
                   help="budget of each private training fit (default: --epsilon)")
    p.add_argument("--train-delta", type=float, default=0.0, metavar="D",
                   help="delta of each private training fit, in [0, 1) (default 0: pure epsilon-DP fits); "
                   "> 0 for the (epsilon, delta) methods (dp-blsgd, dp-sgd, dp-agd, ...)")
    p.add_argument("--method", default="auto", metavar="M",
                   help="optimizer of the private estimator (as dpopt fit, default auto; the (epsilon, delta) "
                   "methods need --train-delta > 0)")
    p.add_argument("--secure-noise", action="store_true",
                   help="floating-point-safe releases (exact discrete noise from the OS CSPRNG, same epsilon); "
                   "with a dpopt estimator its fits too (a --method that accepts it, e.g. dp-gd)")
    p.add_argument("--seed", type=int, help="seed of the split, the candidates and the noise (default: OS entropy)")
    p.add_argument("--out", type=Path, metavar="REPORT.json",
                   help="where to write the report (default ./<data name>.tune.json)")
    p.add_argument("--model-out", type=Path, metavar="MODEL.json",
                   help="where to save the refit private model for dpopt predict (default: the report's name "
                   "with .model.json)")
    p.add_argument("--quiet", action="store_true", help="print nothing but warnings and errors")
    p.set_defaults(func=run, requires=("sklearn",))


def parse_space(spec) -> dict:
    """``["C=1e-3:1e3:log", "k=1,2,3"]`` → ``{"C": (1e-3, 1e3, "log"), "k": [1, 2, 3]}``."""
    out = {}
    for item in spec:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value:
            raise UserError(f"--space items look like NAME=LO:HI[:log] or NAME=V1,V2,..., got {item!r}")
        name = name.strip()
        try:
            if ":" in value:
                parts = value.split(":")
                if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("log", "linear")):
                    raise ValueError
                lo, hi = float(parts[0]), float(parts[1])
                if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi) or (parts[-1] == "log" and lo <= 0):
                    raise UserError(f"--space {name}: need finite LO < HI (and LO > 0 on a log axis), got {value!r}")
                out[name] = (lo, hi, parts[2]) if len(parts) == 3 else (lo, hi)
            else:
                out[name] = [int(v) if v.strip().lstrip("-").isdigit() else float(v) for v in value.split(",")]
        except ValueError:
            raise UserError(f"--space {name}: expected LO:HI, LO:HI:log or V1,V2,..., got {value!r}") from None
    return out


def _estimator(args, data_norm: float):
    from ..estimators import DPHuberSVC, DPLogisticRegression

    if args.estimator == "sklearn-logistic":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(fit_intercept=False, max_iter=1000)
    cls = DPLogisticRegression if args.estimator == "logistic" else DPHuberSVC
    train_eps = args.epsilon if args.train_epsilon is None else args.train_epsilon
    return cls(
        epsilon=train_eps, delta=args.train_delta, method=args.method, data_norm=data_norm, random_state=args.seed,
        classes=parse_classes(args.classes), secure_noise=args.secure_noise,
    )  # fmt: skip


def _check(args) -> None:
    from .._validation import check_delta, check_open_unit
    from ..bayesopt import check_steps
    from ..bayesopt.space import check_candidates
    from ..estimators import METHODS
    from ..estimators._dispatch import check_epsilon

    try:
        check_epsilon("--epsilon", args.epsilon)
        check_delta("--train-delta", args.train_delta)
        check_open_unit("--delta", args.delta)
        check_open_unit("--validation-size", args.validation_size)
        if args.train_epsilon is not None:
            check_epsilon("--train-epsilon", args.train_epsilon)
        if not 0.0 <= args.k1 <= 1.0:
            raise ValueError(f"--k1 must be in [0, 1], got {args.k1!r}")
        check_steps("--n-iter", args.n_iter)  # before the data are read (sizes that cannot run at all)
        check_candidates("--n-candidates", args.n_candidates)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.estimator not in ESTIMATORS:
        raise UserError(f"--estimator must be one of {', '.join(ESTIMATORS)}, got {args.estimator!r}")
    if args.estimator != "sklearn-logistic" and args.method != "auto" and args.method not in METHODS:
        raise UserError(f"unknown --method {args.method!r}; choose auto or one of {', '.join(METHODS)}")
    from ..estimators._dispatch import needs_delta

    if args.estimator != "sklearn-logistic" and needs_delta(args.method) and args.train_delta == 0.0:
        raise UserError(f"--method {args.method} gives (epsilon, delta)-DP: give --train-delta > 0 (e.g. "
                        "--train-delta 1e-6; --delta is the search's, not the fits')")
    if args.algorithm == 3 and args.estimator != "sklearn-logistic":
        raise UserError("--algorithm 3 needs exact minimizers: use --estimator sklearn-logistic with --space C=LO:HI")
    if args.algorithm == 2 and (args.A is None or args.tau is None):
        raise UserError("--algorithm 2 releases its score with de Freitas et al.'s constants: give --A and --tau")


def run(args) -> int:
    from ..estimators import DPBayesSearchCV
    from ..progress import Progress

    _check(args)
    space = parse_space(args.space)
    tunable = sorted(_estimator(args, 1.0).get_params(deep=False))  # the names only: no data read yet
    unknown = [name for name in space if name not in tunable]
    if unknown:
        raise UserError(f"--space names {', '.join(map(repr, unknown))}, not a parameter of --estimator "
                        f"{args.estimator}; its parameters are {', '.join(tunable)}")
    out = args.out if args.out is not None else Path(f"{args.data.stem}.tune.json")
    model_out = None
    if args.estimator != "sklearn-logistic":
        model_out = args.model_out if args.model_out is not None else out.with_name(f"{out.stem}.model.json")
    for option, path in (("--out", out), ("--model-out", model_out)):
        if path is not None:
            check_out(option, path)
    progress = Progress("dpopt tune", quiet=args.quiet, first=FIRST_PROGRESS)
    pending: list[tuple[str, str]] = []  # the data's warnings, printed once the search has run (as dpopt fit)
    # never silent for more than a few seconds; the steps are shown only when slow (a refusal prints one line)
    with progress.keepalive():
        progress.note(0, 1, f"reading {args.data.name}")
        schema, X, y, rows_read = load_encoded(args, pending)
        data_norm = args.data_norm if args.data_norm is not None else schema.row_bound
        search = DPBayesSearchCV(
            _estimator(args, data_norm), space, epsilon=args.epsilon, delta=args.delta, algorithm=args.algorithm,
            n_iter=args.n_iter, n_candidates=args.n_candidates, validation_size=args.validation_size, k1=args.k1,
            A=args.A, tau=args.tau, data_norm=data_norm, random_state=args.seed, secure_noise=args.secure_noise,
        )  # fmt: skip
        progress.note(0, 1, f"searching ({args.n_iter} Bayesian-optimization steps)")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                search.fit(X, y)
            except ValueError as exc:
                raise UserError(str(exc)) from None
    for message, kind in pending:
        warn("tune", message, kind)
    # once each: the first step's fit and the refit both warned that the label set was read from the data
    for message in dict.fromkeys(str(w.message) for w in caught):
        warn("tune", message.replace("classes= (every", "--classes A,B,... (every"))
    privacy = search.privacy_
    report = {
        "file": args.data.name,
        "target": args.target,
        "estimator": args.estimator,
        "space": {k: list(v) for k, v in space.items()},
        "best_params": search.best_params_,
        "best_score": search.best_score_,
        # the Laplace scale of that release: the paper's bound at these public settings (it can exceed the
        # score's own range, and then the released score says little)
        "best_score_noise_scale": float(search.result_.info["score_scale"]),
        "privacy": privacy,
        "disclosed": [
            *disclosures(schema, int(X.shape[0]), args.missing == "drop"),
            *getattr(search.best_estimator_, "disclosed_", []),
        ],
        "rows_read": rows_read,
    }
    if model_out is not None:  # (written whole or not at all)
        disclosed = disclosures(schema, int(X.shape[0]), args.missing == "drop")
        save_fitted(args, model_out, search.best_estimator_, schema, X, search.privacy_record(), disclosed)
    tmp = out.with_name(f".{out.name}.tmp")
    try:  # the report whole, or neither file: a model without its report (or half a report) is no result
        tmp.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, out)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if model_out is not None:
            model_out.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise UserError(f"cannot write the report to {out}: {exc}") from None
        raise
    if not args.quiet:
        from ..result import format_bound

        params = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in search.best_params_.items())
        exact = " (exact, floating-point safe)" if args.secure_noise else ""
        print(f"best       {params} (released by the exponential mechanism{exact})")
        print(f"score      {search.best_score_:.6g} (released with {'discrete ' if exact else ''}Laplace noise of "
              f"scale {report['best_score_noise_scale']:.3g})")
        delta = f", delta = {format_bound(privacy['delta_ledger'], 3)}" if privacy["delta_ledger"] else ""
        print(f"privacy    epsilon = {format_bound(privacy['epsilon'], 6)}{delta} ({privacy['notion']} accounting, "
              f"{len(privacy['events'])} events), selection {privacy['selection_guarantee']}; protects "
              f"{privacy['protects']}")
        print(f"assumption {privacy['selection']['notes']}")
        print(f"saved      {out}")
        if model_out is not None:
            print(f"model      {model_out} (the refit model with the composed privacy record; dpopt predict)")
    return 0
