"""``dpopt.neural.train``: private training of a PyTorch module, the face a PyTorch user expects."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._validation import as_generator, check_delta, check_iterations, check_positive, check_rate
from ..oracles import count_event, normalizer_note, public_normalizer
from ..privacy import Ledger
from ..privacy import events as ev
from ..privacy.calibration import calibrate_run, run_accountant
from ..privacy.mechanisms import check_ledger
from ..privacy.rdp import DENSE_ORDERS
from ..progress import Progress
from ..result import DPResult
from .methods import METHODS, NeuralHyper, iteration_event, make_oracle, run, steps_from_epochs
from .model import TorchModel, as_tensors

__all__ = ["train", "Trained"]

_NOTES = (
    "Privacy loss distributions (or Renyi DP, as the record's notion says) under add/remove-one with "
    "Poisson subsampling at rate q; every iteration is charged as its "
    "amplified event before release."
)  # followed by the normalizer's sentence (dpopt.oracles.normalizer_note)


@dataclass
class Trained:
    """What :func:`train` returns: the trained module, per-iteration history and the privacy record.

    ``history`` holds arrays ``iteration``, ``epsilon`` (spent after that iteration) and
    ``step_size`` (DP-BLSGD: the step NoisyBTLS chose).
    """

    module: torch.nn.Module
    history: dict
    result: DPResult

    def __iter__(self):
        yield self.module
        yield self.history
        yield self.result


def train(model, data, *, method: str = "dp-sgd", epsilon: float, delta: float, epochs: float | None = None,
          steps: int | None = None, batch_rate: float, clip: float = 1.0, lr: float | None = None,
          l2: float = 0.0, loss="cross_entropy", ledger: Ledger | None = None, device=None, seed=None,
          noise_multiplier: float | None = None, n_public: int | None = None, progress=None, callback=None,
          chunk_size: int = 256, accountant=None, secure_noise: bool = False,
          **hyper) -> Trained:
    """Train ``model`` on ``data`` with ``method`` in ``"dp-sgd"``, ``"dp-adam"``, ``"dp-blsgd"`` (chen2020 §5.7).

    Parameters
    ----------
    model:
        A ``torch.nn.Module`` (no BatchNorm); trained in place and returned.
    data:
        ``(X, y)`` arrays or tensors, or a ``TensorDataset``.
    epsilon, delta:
        The (ε, δ) budget of the whole run (add/remove-one; see ``accountant``).
    epochs, steps:
        Length of the run: exactly one of them; ``epochs`` means ⌈epochs/q⌉ iterations.
    batch_rate:
        Poisson sampling rate q ∈ (0, 1] (§5.4: 1/200).
    clip:
        C_grad, the per-example gradient clipping threshold (eq. (6)).
    lr:
        DP-SGD/DP-Adam step (default 0.2 / 0.001); DP-BLSGD chooses its own (``eta0=``).
    l2:
        μ of (μ/2)‖w‖² (§5.1: 0.001).
    ledger:
        A ledger to charge (a parent's ``child`` budget, say), of the add/remove-one relation
        (another is refused before anything is charged); default a new one of (ε, δ) with the
        run's accountant.
    accountant:
        What calibrates z and checks the budget: ``"rdp"`` (on
        :data:`~dpopt.privacy.rdp.DENSE_ORDERS`, never looser than Opacus's accountant, or the
        given RDP ledger's orders), ``"pld"``, or ``"auto"``/None — the tightest that applies
        (:func:`~dpopt.privacy.calibration.run_accountant`: PLD unless ``ledger`` checks by RDP).
    secure_noise:
        Release every noisy gradient through the exact discrete Gaussian sampler on a grid, from
        the OS CSPRNG (:mod:`dpopt.privacy.secure`), so nothing leaks through floating-point
        low-order bits; z is calibrated for the discrete event that is charged. The vectorized
        exact sampler costs about 1.5-2.5 µs per parameter per iteration on the CPU
        (measured with ``secure.discrete_gaussian_array``, σ from 3 to 1.5·10⁷ grid units).
    device:
        Where to train (``"cpu"``, ``"cuda"``); default the module's device.
    seed:
        Seed or ``numpy.random.Generator`` for sampling and noise (None: OS entropy).
    noise_multiplier:
        z with ρ_iter = 1/(2z²) per iteration; default: the smallest z for which the planned
        iterations of ``method`` fit (ε, δ).  Give the same z to compare methods at equal
        per-iteration RDP; the run then stops early if the budget runs out.
    n_public:
        The public record count N that normalizes sums (q·N is the expected batch).  Without it
        N is a noisy count, released first with 2 % of the run's zCDP budget
        (:func:`dpopt.oracles.public_normalizer`, as DP-BLSGD on a convex model) and composed
        into the calibration; the data's own n is never used (it is private under
        add/remove-one).  ``result.info["normalizer"]`` says which.
    progress:
        ``True`` for a progress line, or a callable ``progress(done, total, label)``.
    callback:
        ``callback(iteration, module)`` after every iteration (e.g. to evaluate on public or test data).
    hyper:
        Further :class:`~dpopt.neural.methods.NeuralHyper` fields (``eta0``, ``alpha``, ``beta``, ``max_it``,
        ``c_obj``, ``betas``, ...).

    Returns
    -------
    :class:`Trained` ``(module, history, result)``; ``result`` is the :class:`~dpopt.result.DPResult`
    with the event log; ``result.info["stop"]`` is ``"completed"``, ``"budget"`` or ``"interrupted"``
    (Ctrl-C: the last completed iterate is kept and ``result.privacy`` is the true ε spent so far).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    epsilon = check_positive("epsilon", epsilon)
    delta = check_delta("delta", delta)
    if delta == 0.0:
        raise ValueError("delta must be in (0, 1): the Gaussian mechanism has no pure-DP guarantee")
    rate = check_rate("batch_rate", batch_rate)
    clip = check_positive("clip", clip)
    if (epochs is None) == (steps is None):
        raise ValueError("give exactly one of epochs and steps")
    if steps is None:  # ⌈epochs/q⌉ iterations
        steps = check_iterations("the iterations ceil(epochs/batch_rate)", steps_from_epochs(epochs, rate))
    elif not isinstance(steps, int | np.integer) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    else:
        steps = check_iterations("steps", steps)
    params = NeuralHyper(lr=lr, **hyper)
    if ledger is not None:  # before anything is charged (the noisy count comes first, then the oracle's releases)
        check_ledger(ledger, "add_remove", why=" for neural training (Poisson sampling, add/remove sensitivities)")
    orders = ledger.remaining_rdp()[0] if ledger is not None and ledger.notion == "rdp" else DENSE_ORDERS
    acc = run_accountant(accountant, ledger, orders=orders)
    if ledger is None:
        ledger = Ledger(epsilon, delta, acc.copy())
    if device is not None:
        model = model.to(device)
    rng = as_generator(seed)
    X, y = as_tensors(data)
    target = TorchModel(model, X, y, loss=loss, l2=l2, chunk_size=chunk_size)
    generator = torch.Generator(device=target.device)
    generator.manual_seed(int(rng.integers(2**63 - 1)))
    secure = bool(secure_noise)
    # Without a declared n_public the sums' normalizer is a noisy count released first
    # (dpopt.oracles.public_normalizer, as DP-BLSGD does; the data's own n is private under
    # add/remove-one); its event is composed into the calibration, so the whole run fits (ε, δ).
    count = count_event(target, n_public=n_public, epsilon=epsilon, delta=delta, secure_noise=secure)

    def run_event(z):
        iterations = ev.SelfComposed(iteration_event(method, z, params, rate=rate, clip=clip, dim=target.dim,
                                                     secure_noise=secure), int(steps))
        return iterations if count is None else ev.Composed((count, iterations))

    if noise_multiplier is None:
        z = calibrate_run(run_event, epsilon, delta, acc)
    else:
        z = check_positive("noise_multiplier", noise_multiplier)
    normalizer = public_normalizer(target, n_public=n_public, ledger=ledger, rng=rng, epsilon=epsilon, delta=delta,
                                   secure_noise=secure)
    oracle = make_oracle(target, ledger=ledger, rng=rng, rate=rate, clip=clip, hyper=params, normalizer=normalizer,
                         secure_noise=secure)
    if progress is True:
        progress = Progress(f"train {method}")
    out = run(target, method, oracle=oracle, generator=generator, steps=int(steps), z=z, hyper=params,
              progress=progress or None, callback=callback)
    info = {"stop": out["stop"], "noise_multiplier": z, "rho_iter": 1.0 / (2.0 * z * z),
            "rho_grad": out["rho_grad"], "rho_search": out["rho_search"], "sigma": out["sigma"],
            "batch_rate": rate, "clip": clip, "c_obj": params.c_obj, "steps_planned": int(steps),
            "final_eta0": out["eta0_final"], "secure_noise": secure,
            "normalizer": normalizer.describe()}
    result = DPResult.from_ledger(ledger, x=target.get_tensor().cpu().numpy(), fun=None, method=method,
                                  nit=len(out["history"]["iteration"]), info=info,
                                  notes=_NOTES + " " + normalizer_note(normalizer))
    return Trained(model, out["history"], result)
