"""The line-search family's speed (issue 16 §2): DP-BLSGD against diffprivlib and its own data floor.

Every number is CPU seconds (``time.process_time``; the machine is shared, so
wall time says more about the neighbours than about dpopt; the load average is
printed), the median over ``--repeats`` seeds, all ratios measured in one run.
Sections and their targets:

1. ``adult`` — one DP-BLSGD fit on the embedded UCI Adult training split as the
   estimators see it (32,561 × 108 with the intercept column, ‖x‖₂ ≤ 1,
   logistic loss, μ = 1e-3) at ε = 0.4, δ = 1e-8, its test accuracy and its
   planned and run iterations.  Target: ≤ 2 CPU-s at accuracy ≥ 0.82.
2. ``diffprivlib`` — DP-BLSGD's fit against IBM diffprivlib's
   ``LogisticRegression`` (objective perturbation + L-BFGS, through
   :func:`dpopt.linesearch.baselines.diffprivlib_lr`) at the same ε on
   synthetic Adult-like data (binary one-hot-like columns plus numeric ones,
   rows scaled to ‖x‖₂ ≤ 1, logistic labels) at n = 1e5 and 1e6, d = 20 and
   100.  Target: DP-BLSGD ≤ 5× diffprivlib's CPU time.
3. ``floor`` — DP-BLSGD's marginal CPU time per iteration (the difference of
   fits planned for 600 and 100 iterations, so one-off work is not counted) at
   expected minibatches of 200 and 5,000 rows (n = 1e5, d = 100, q = m/n)
   against its data floor: the
   bare numpy work of the same iterations — per released gradient a row
   gather and the two products z = X_B w, X_Bᵀ r; per line search a row
   gather, z = X_B w, u = X_B g, the losses at 0 and at every candidate the
   search asked (counts from the fit's ``info``), on index sets drawn
   beforehand.  The ratio is taken per seed (fit and floor measured back to back)
   and its median reported, with the median times.  (Until 2026-11-26 the
   difference was 300 − 100 iterations and the ratio of the median times: the
   one-off work of the two fits — the plan's root finding, the first RDP curves —
   differs by a few ms, ±20–50 µs per iteration over 200 iterations, and three
   runs of one checkout gave ratios of 0.94, 1.93 and 2.59.)  Target: ≤ 1.2×.
   Beside it, the *bound*: the floor's work plus the numpy work privacy adds to it
   (clipping, the finiteness checks, the Gaussian and Laplace draws, the noisy
   comparisons, the candidates in the fit's chunks), written out by hand in one
   loop with no dpopt code (:func:`bound_seconds`).  ``bound / floor`` is what
   the privacy arithmetic itself costs; ``fit / bound`` is what dpopt's Python
   layers (sampling, ledger, checks, the algorithm's bookkeeping) add to it.
   And the *core*: the privacy core's own calls in the same releases (one Poisson sample
   per release, the ledger's check per iteration and charge per release; :func:`core_seconds`),
   which the floor leaves out and no fit can.  ``(bound + core) / floor`` leaves out what every
   iteration also does (the candidates a search evaluates beyond those it asks, the step and the
   angle average); the *flat* reference has it: the whole iteration written as one loop of numpy
   and core calls, run with the fit's budgets and timed against its own floor
   (:func:`flat_seconds`).  It is what DP-BLSGD would take with no dpopt layer above the core: at
   200-row minibatches 1.49× the floor (2026-11-26), so no Python implementation on this core
   meets 1.2× there; at 5,000 rows 0.99×.
   ``--batches`` sets the minibatch sizes (default 200 and 5,000).
4. ``reproduce`` (``--reproduce``) — ``dpopt reproduce chen2020 --quick
   --jobs 1`` in a subprocess, its CPU time (the process and its workers).
   Target: ≤ 40 CPU-s.

Run it on two checkouts for a before/after table, e.g.
``PYTHONPATH=<checkout>/src python benchmarks/bench_linesearch.py --reproduce``.
Older checkouts lack ``info["planned_iterations"]``; the table then says "-".
Minibatches are gathered in blocks of 1024 rows (with 5,000-row products,
multi-threaded BLAS was 5–70× slower on the shared 2-core machine); set
``OMP_NUM_THREADS=1`` for steadier numbers.

Usage: ``python benchmarks/bench_linesearch.py [--repeats K] [--sections adult diffprivlib floor]
[--sizes 1e5 1e6] [--dims 20 100] [--batches 200 5000] [--reproduce]``.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from dpopt.linesearch import registry
from dpopt.linesearch.algorithms import LineSearchHyper
from dpopt.linesearch.model import LinearModel
from dpopt.oracles import step_event
from dpopt.oracles.line_search import EAGER_FIRST_CHUNK, LAZY_CHUNK
from dpopt.oracles.oracle import EAGER_ENTRIES
from dpopt.privacy import Ledger, PoissonSampler

EPSILON, DELTA = 0.4, 1e-8
TARGETS = {"adult_cpu": 2.0, "adult_accuracy": 0.82, "diffprivlib": 5.0, "floor": 1.2, "reproduce": 40.0}


def adult_like(n: int = 50_000, d: int = 100, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Binary one-hot-like columns plus numeric columns in [0, 1], logistic labels."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < 0.1).astype(float)
    X[:, : min(10, d)] = rng.random((n, min(10, d)))
    w = rng.normal(size=d)
    z = X @ w
    y = np.where(z - np.median(z) + rng.logistic(size=n) > 0, 1.0, -1.0)
    return X, y


def unit_model(n: int, d: int) -> LinearModel:
    """Adult-like data scaled to ‖x‖₂ ≤ 1 (declared), logistic loss, μ = 1e-3, public n."""
    X, y = adult_like(n, d)
    X /= np.linalg.norm(X, axis=1).max()
    return LinearModel("logistic", X, y, l2=1e-3, data_norm=1.0, n_public=n)


def adult_model(rows: int | None = None):
    """(model, (X_test, y_test)): Adult's training split as the estimators see it (or ``rows`` of it,
    drawn at random; n_public then says ``rows``), and its test split."""
    from dpopt.datasets.adult import load_adult

    data = load_adult("all", drop_columns=("fnlwgt",))
    train = data.groups == "train"
    if rows is not None:
        keep = np.random.default_rng(0).choice(np.flatnonzero(train), size=rows, replace=False)
        train = np.zeros_like(train)
        train[keep] = True

    def design(X):
        return np.hstack([X, np.ones((X.shape[0], 1))]) / math.sqrt(2.0)

    model = LinearModel("logistic", design(data.X[train]), data.y[train], l2=1e-3, data_norm=1.0,
                        n_public=int(train.sum()))  # Adult's published training-split size
    return model, (design(data.X[~train]), data.y[~train])


def timed(method: str, model, seed: int, **hyper):
    cpu = time.process_time()
    result = registry.fit(method, model, epsilon=EPSILON, delta=DELTA, rng=seed, **hyper)
    return result, time.process_time() - cpu


def median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def verdict(value: float, target: float, below: bool = True) -> str:
    return "OK" if (value <= target if below else value >= target) else "MISSED"


def adult(repeats: int) -> dict:
    model, test = adult_model()
    runs = [timed("dp-blsgd", model, s) for s in range(repeats)]
    cpu = median([c for _, c in runs])
    acc = median([registry.accuracy(r, *test) for r, _ in runs])
    planned = [r.info.get("planned_iterations", "-") for r, _ in runs]
    passes = median([(r.info["gradients"] + r.info["line_searches"]) * r.info["rate"] for r, _ in runs])
    print(f"adult: DP-BLSGD {model.n}x{model.dim}, epsilon={EPSILON}: cpu {cpu:.2f} s "
          f"({verdict(cpu, TARGETS['adult_cpu'])}, target <= {TARGETS['adult_cpu']:g}), test accuracy "
          f"{acc:.4f} ({verdict(acc, TARGETS['adult_accuracy'], below=False)}, target >= "
          f"{TARGETS['adult_accuracy']:g}), iterations planned {planned} run {[r.nit for r, _ in runs]}, "
          f"data passes {passes:.1f}", flush=True)
    return {"adult_cpu": cpu, "adult_accuracy": acc}


def diffprivlib(repeats: int, sizes, dims) -> dict:
    out = {}
    for n in sizes:
        for d in dims:
            model = unit_model(n, d)
            ours = [timed("dp-blsgd", model, s) for s in range(repeats)]
            theirs = [timed("diffprivlib", model, s) for s in range(repeats)]
            a, b = median([c for _, c in ours]), median([c for _, c in theirs])
            ratio = a / b
            out[f"diffprivlib n={n:g} d={d}"] = ratio
            print(f"diffprivlib: n={n:.0e} d={d:3d}: DP-BLSGD cpu {a:6.2f} s (acc "
                  f"{median([model.accuracy(r.x) for r, _ in ours]):.4f}, {ours[0][0].nit} iterations), "
                  f"diffprivlib cpu {b:6.2f} s (acc {median([model.accuracy(r.x) for r, _ in theirs]):.4f}): "
                  f"ratio {ratio:5.2f} ({verdict(ratio, TARGETS['diffprivlib'])}, target <= "
                  f"{TARGETS['diffprivlib']:g})", flush=True)
            del model
    return out


def _replay(model: LinearModel, info: dict, seed: int):
    """The inputs :func:`floor_seconds` and :func:`bound_seconds` replay one fit's releases on: the
    index sets (drawn beforehand, Bernoulli(q) per row), a fixed point and direction, and the
    candidate steps of one search (as many as the fit asked per search, on average)."""
    rng = np.random.default_rng(seed)
    n, q = model.n, info["rate"]
    gradients, searches = info["gradients"], info["line_searches"]
    queries = info.get("line_search_queries", 2 * searches)  # older checkouts: ~2 per search
    per_search = max(1, round(queries / max(searches, 1)))
    draws = [np.flatnonzero(rng.random(n) < q) for _ in range(gradients + searches)]
    w, g = np.full(model.dim, 0.01), np.full(model.dim, -0.01)
    return draws[:gradients], draws[gradients:], w, g, 0.8 ** np.arange(per_search)


def floor_seconds(model: LinearModel, info: dict, seed: int = 1) -> float:
    """CPU seconds of the bare numpy data work of one fit's releases (see the module docstring)."""
    X, y = model.X, model.y
    gradient_draws, search_draws, w, g, steps = _replay(model, info, seed)
    cpu = time.process_time()
    for idx in gradient_draws:
        Xb = X[idx]
        r = -y[idx] / (1.0 + np.exp(y[idx] * (Xb @ w)))
        Xb.T @ r
    for idx in search_draws:
        Xb, yb = X[idx], y[idx]
        z, u = Xb @ w, Xb @ g
        np.logaddexp(0.0, -yb * z)
        for eta in steps:
            np.logaddexp(0.0, -yb * (z - eta * u))
    return time.process_time() - cpu


def _clipped_sum(X, y, thresholds, w, idx):
    """Σ_B −y·min(σ(−y z), C/‖x_i‖)·x_i of the logistic loss (chen2020 eq. (6)), six in-place passes, checked."""
    Xb, yb = X.take(idx, axis=0), y.take(idx)
    s = Xb @ w
    s *= yb
    np.exp(s, out=s)
    s += 1.0
    np.reciprocal(s, out=s)
    np.fmin(s, thresholds.take(idx), out=s)
    s *= -yb
    total = Xb.T @ s
    if not np.logical_and.reduce(np.isfinite(total)):
        raise ValueError("non-finite gradient")
    return total


def _armijo_queries(steps, a, b, base, cap, armijo):
    """The Armijo queries at ``steps``: the public ``armijo`` terms plus Σ_i clip(ℓ(a_i) − ℓ(a_i − η b_i), ±cap)
    of the logistic loss ℓ (``base`` = ℓ(a)), checked finite."""
    c = np.multiply.outer(steps, b)
    c -= a
    np.logaddexp(0.0, c, out=c)
    np.subtract(base, c, out=c)
    np.fmax(c, -cap, out=c)
    np.fmin(c, cap, out=c)
    values = armijo + np.add.reduce(c, axis=1)
    if not np.logical_and.reduce(np.isfinite(values)):
        raise ValueError("non-finite query")
    return values


def bound_seconds(model: LinearModel, info: dict, seed: int = 1) -> float:
    """CPU seconds of the floor's data work plus the numpy work that privacy adds to it, written
    out by hand in one loop with no dpopt code: a timing reference, it releases nothing.

    Per gradient: the clipped coefficients −y·min(σ(−y z), C/‖x_i‖) (chen2020 eq. (6)), the
    finiteness check of the sum, one Gaussian draw of d values, the scaling and ∇r.  Per search:
    a = y z and b = y u, the loss at 0, the threshold and query noise in one Laplace draw, and the
    clipped decreases of the floor's candidates in the fit's passes — one candidate per pass where
    the fit's searches are lazy (q·N × max_it > ``EAGER_ENTRIES``), else 3, 6, 12, … — each pass's sums
    checked and compared with the noisy threshold.  Not counted (the fit pays them): Poisson sampling,
    the ledger, argument checks and the algorithm's own bookkeeping.  Candidates: the floor's count
    (the fit's mean number asked), no more than the fit evaluates, so the bound is on the low side.
    """
    X, y = model.X, model.y
    gradient_draws, search_draws, w, g, steps = _replay(model, info, seed)
    rng = np.random.default_rng(seed)
    with np.errstate(divide="ignore"):  # C/‖x_i‖ with C = 1 (inf for a zero row), once, as the model does
        thresholds = 1.0 / np.linalg.norm(X, axis=1)
    weight, mu, cap, k = info["rate"] * model.n, model.l2, 1.0, steps.shape[0]
    armijo = -0.5 * steps * weight * float(g @ g)
    # the fit's passes (dpopt.oracles.line_search.above_threshold_search): lazy where q·N × max_it is large
    size, growth = (LAZY_CHUNK, 1) if weight * LineSearchHyper().max_it > EAGER_ENTRIES else (EAGER_FIRST_CHUNK, 2)
    chunks, start = [], 0
    while start < k:
        chunks.append((start, min(start + size, k)))
        start, size = start + size, size * growth
    cpu = time.process_time()
    for idx in gradient_draws:
        total = _clipped_sum(X, y, thresholds, w, idx)
        (total + rng.normal(0.0, 1.0, total.shape[0])) / weight + mu * w
    for idx in search_draws:
        Xb, yb = X.take(idx, axis=0), y.take(idx)
        a, b = yb * (Xb @ w), yb * (Xb @ g)
        base = np.logaddexp(0.0, -a)
        noise = rng.laplace(0.0, 1.0, k + 1)
        for start, stop in chunks:
            values = _armijo_queries(steps[start:stop], a, b, base, cap, armijo[start:stop])
            above = values + noise[1 + start : 1 + stop] >= noise[0]
            above.argmax()
    return time.process_time() - cpu


def core_seconds(model: LinearModel, info: dict, seed: int = 1) -> float:
    """CPU seconds of the privacy core's own calls in one fit's releases, with no data work: one Poisson
    sample from a :class:`~dpopt.privacy.PoissonStream` per release, one ``Ledger.can_afford`` of the
    iteration's event per iteration and one ``Ledger.charge`` per release, on a Rényi filter at the fit's
    order, with the events of the fit's first iteration (:func:`dpopt.oracles.step_event`).  The draws
    of the noise are in the bound already.  The floor does none of this (its index sets are drawn
    beforehand); a fit cannot skip it (the sampling and the charges are the guarantee), so
    bound + core is what a flat fit on this core, with no other Python, would take.
    """
    step = step_event(info["rho_grad_initial"], info["budget_bt_initial"], c_grad=info["c_grad_initial"],
                      c_obj=info["c_obj"], noise=info["noise"], rate=info["rate"], dim=model.dim)
    gradient, search = step.events
    ledger = Ledger(1e6, DELTA, "rdp")  # room for every charge; the fit's filter order
    ledger.fix_filter_order(info["filter_order"])
    stream = PoissonSampler(info["rate"]).stream(model.n, np.random.default_rng(seed))
    iterations, gradients, searches = info["iterations"], info["gradients"], info["line_searches"]
    cpu = time.process_time()
    for _ in range(iterations):
        ledger.can_afford(step)
    for _ in range(gradients):
        stream.next()
        ledger.charge(gradient)
    for _ in range(searches):
        stream.next()
        ledger.charge(search)
    return time.process_time() - cpu


def flat_seconds(model: LinearModel, info: dict, seed: int = 1) -> tuple[float, dict]:
    """(CPU seconds, counts) of DP-BLSGD's iterations written as one flat loop: numpy and the privacy
    core's calls only, no dpopt layer above the core — a timing reference, it publishes nothing.

    Per iteration, as the fit at its initial budgets (``info``): the ledger's check of the step; a
    gradient release (a Poisson sample from a :class:`~dpopt.privacy.PoissonStream`, the clipped
    coefficients −y·min(σ(−y z), C/‖x_i‖), Xᵀr, the finiteness check, the charge, the Gaussian
    draw, ÷ q·N + μw); a line search (a sample, a = y·Xw and b = y·Xg, the loss at 0, the charge,
    the threshold's and the queries' Laplace noise in one draw, the Armijo queries on clipped
    decreases in passes of 3, 6, 12, … up to the first above the threshold, as the fit's passes);
    on success the step, the angle average of eq. (7) and intelligent backtracking (§4.2).  A failed
    search ends the iteration (no CHEB).  Its counts (gradients, searches, queries asked) are
    returned so that its own floor can be measured (:func:`floor_seconds`).
    """
    X, y, n, d = model.X, model.y, model.n, model.dim
    rate, mu, weight = info["rate"], model.l2, info["rate"] * model.n
    rho, bt = info["rho_grad_initial"], info["budget_bt_initial"]
    step = step_event(rho, bt, c_grad=info["c_grad_initial"], c_obj=info["c_obj"], noise=info["noise"],
                      rate=rate, dim=d)
    gradient, search = step.events
    sigma = info["c_grad_initial"] / math.sqrt(2.0 * rho)
    at = search.event  # the AboveThreshold inside the Poisson amplification
    ledger = Ledger(1e6, DELTA, "rdp")  # room for every charge; the fit's filter order
    ledger.fix_filter_order(info["filter_order"])
    rng = np.random.default_rng(seed)
    sample = PoissonSampler(rate).stream(n, rng).next
    with np.errstate(divide="ignore"):
        thresholds = info["c_grad_initial"] / np.linalg.norm(X, axis=1)
    hyper = LineSearchHyper()
    k, cap, eta0 = hyper.max_it, info["c_obj"], info["eta0_initial"]
    w, previous, theta, omega, queries = np.zeros(d), None, 90.0, [], 0
    iterations = info["iterations"]
    cpu = time.process_time()
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for t in range(iterations):
            if not ledger.can_afford(step):
                break
            idx = sample()
            total = _clipped_sum(X, y, thresholds, w, idx)
            ledger.charge(gradient)
            g = (total + rng.normal(0.0, sigma, d)) / weight + mu * w
            idx = sample()
            Xb, yb = X.take(idx, axis=0), y.take(idx)
            a, b = yb * (Xb @ w), yb * (Xb @ g)
            base = np.logaddexp(0.0, -a)
            steps = eta0 * hyper.beta ** np.arange(k)
            gg = float(g @ g)
            armijo = steps * (-hyper.alpha * weight * gg + weight * mu * float(w @ g) - 0.5 * weight * mu * gg * steps)
            ledger.charge(search)
            unit = rng.laplace(0.0, 1.0, k + 1)
            threshold, noise = at.threshold_scale * float(unit[0]), at.query_scale * unit[1:]
            chosen, start, size = -1, 0, 3
            while start < k:
                stop = min(start + size, k)
                values = _armijo_queries(steps[start:stop], a, b, base, cap, armijo[start:stop])
                above = values + noise[start:stop] >= threshold
                first = int(above.argmax())
                if above[first]:
                    chosen = start + first
                    break
                start, size = stop, 2 * size
            queries += chosen + 1 if chosen >= 0 else k
            if chosen >= 0:
                eta = float(steps[chosen])
                w = w - eta * g
                if previous is not None:
                    norm = math.sqrt(g @ g) * math.sqrt(previous @ previous)
                    cosine = min(max(float(g @ previous) / norm, -1.0), 1.0)
                    theta = hyper.psi * theta + (1.0 - hyper.psi) * math.degrees(math.acos(cosine))
                previous = g
                omega.append(eta)
            if (t + 1) % hyper.tau == 0:
                eta0, omega = (min(hyper.varsigma * max(omega), eta0) if omega else eta0), []
    seconds = time.process_time() - cpu
    counts = {"rate": rate, "gradients": t + 1, "line_searches": t + 1, "line_search_queries": queries}
    return seconds, counts


def floor(repeats: int, n: int = 100_000, d: int = 100, short: int = 100, long: int = 600,
          batches=(200, 5000)) -> dict:
    """Marginal CPU per iteration, (fit(T=long) − fit(T=short))/(long − short), so that the one-off
    work of a fit (its plan, the ledger) is not counted, against the same difference of floors and
    of bounds (:func:`bound_seconds`); the median over seeds of the per-seed ratios."""
    model = unit_model(n, d)
    out = {}
    for batch in batches:
        fits, floors, bounds, cores, ratios, bound_ratios, flat_ratios = [], [], [], [], [], [], []
        for s in range(repeats):
            (r1, c1), (r2, c2) = (timed("dp-blsgd", model, s, rate=batch / n, planned_iterations=t)
                                  for t in (short, long))
            steps = max(r2.nit - r1.nit, 1)
            fits.append((c2 - c1) / steps)
            floors.append((floor_seconds(model, r2.info, s) - floor_seconds(model, r1.info, s)) / steps)
            bounds.append((bound_seconds(model, r2.info, s) - bound_seconds(model, r1.info, s)) / steps)
            cores.append((core_seconds(model, r2.info, s) - core_seconds(model, r1.info, s)) / steps)
            ratios.append(fits[-1] / floors[-1])
            bound_ratios.append(bounds[-1] / floors[-1])
            (f1, n1), (f2, n2) = flat_seconds(model, r1.info, s), flat_seconds(model, r2.info, s)
            flat_ratios.append((f2 - f1) / (floor_seconds(model, n2, s) - floor_seconds(model, n1, s)))
        fit, bare, ratio = median(fits), median(floors), median(ratios)
        out[f"floor m={batch}"] = ratio
        out[f"bound m={batch}"] = median(bound_ratios)
        out[f"bound+core m={batch}"] = median([(b + c) / f for b, c, f in zip(bounds, cores, floors, strict=True)])
        out[f"flat m={batch}"] = median(flat_ratios)
        print(f"floor: n={n:.0e} d={d} minibatch {batch:5d}: {1e3 * fit:7.3f} ms/iteration, data floor "
              f"{1e3 * bare:7.3f} ms/iteration: ratio {ratio:5.2f} ({verdict(ratio, TARGETS['floor'])}, "
              f"target <= {TARGETS['floor']:g}); {r2.info.get('line_search_queries', '-')} queries in "
              f"{r2.info['line_searches']} searches", flush=True)
        print(f"       references (x the floor): privacy's numpy work, hand-fused (bound) "
              f"{out[f'bound m={batch}']:5.2f}, "
              f"the fit {median([f / b for f, b in zip(fits, bounds, strict=True)]):5.2f} x the bound; the core's "
              f"sampling and ledger calls {1e3 * median(cores):6.3f} ms/iteration, bound + core "
              f"{out[f'bound+core m={batch}']:5.2f}; the iteration as one flat loop on this core (flat) "
              f"{out[f'flat m={batch}']:5.2f}", flush=True)
    return out


def reproduce() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "dpopt", "reproduce", "chen2020", "--quick", "--jobs", "1",
                        "--quiet", "--out", os.path.join(tmp, "out")], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print(f"reproduce: dpopt reproduce chen2020 --quick --jobs 1: cpu {cpu:.1f} s "
          f"({verdict(cpu, TARGETS['reproduce'])}, target <= {TARGETS['reproduce']:g})", flush=True)
    return {"reproduce": cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="seeds per configuration")
    parser.add_argument("--sections", nargs="+", default=["adult", "diffprivlib", "floor"],
                        choices=["adult", "diffprivlib", "floor"])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6])
    parser.add_argument("--dims", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--batches", type=int, nargs="+", default=[200, 5000],
                        help="expected minibatch sizes of the floor section")
    parser.add_argument("--reproduce", action="store_true", help="also time dpopt reproduce chen2020 --quick")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if "adult" in args.sections:
        adult(args.repeats)
    if "diffprivlib" in args.sections:
        diffprivlib(args.repeats, [int(n) for n in args.sizes], args.dims)
    if "floor" in args.sections:
        floor(args.repeats, batches=args.batches)
    if args.reproduce:
        reproduce()
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
