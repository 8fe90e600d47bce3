"""Time per private step of dpopt.neural against Opacus 1.6 and the non-private step, on CPU.

Models (chen2020 §5.7, 28×28 grey images, 10 classes): the MLP 784-256-256-10
and the CNN conv 6 → max-pool → conv 16 → max-pool → fc 256 → fc 128 → 10
(5×5 kernels).  Batch 256, same clip (1.0) and noise multiplier (1.0) for every
private mode:

* ``non-private`` — forward, mean cross-entropy, backward, SGD update;
* ``opacus-hooks`` — Opacus's default (``grad_sample_mode="hooks"``: materialized
  per-sample gradients), fixed batch, DPOptimizer step;
* ``opacus-ghost`` — Opacus's ghost clipping (``grad_sample_mode="ghost"``: norms
  without materializing, then a second backward);
* ``dpopt`` — one DP-SGD iteration of :func:`dpopt.neural.methods.run` (clipped sum by ghost
  norms and book-keeping, Gaussian noise charged to a ledger, update);
* ``dpopt-blsgd`` — one DP-BLSGD iteration (the same gradient plus NoisyBTLS's forward passes
  on a batch of 256; the number of passes is whatever the search asks, ≤ max_it + 1; the first
  Linear/Conv2d layer is evaluated along the ray once, so a candidate step runs the later layers only).

Timing: all modes of one model run round-robin in one process (``--rounds`` rounds of
``--steps`` steps after a warm-up), so they share the machine's load; the median per step is
reported, and ratios are taken within the run.  Peak memory: each (model, mode) runs again
in its own process, which reports the growth of its peak resident set over a few steps
(VmHWM after − before the first step).  ``--threads`` sets torch's intra-op threads
(default 1: the benchmark machine is shared).

Usage: ``python benchmarks/bench_neural.py [--steps 5] [--rounds 5] [--threads 1] [--no-memory]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
from torch import nn

BATCH = 256
CLIP = 1.0
NOISE = 1.0
MODES = ("non-private", "opacus-hooks", "opacus-ghost", "dpopt", "dpopt-blsgd")


def build(name: str) -> nn.Module:
    torch.manual_seed(0)
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, 10))
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def _data():
    gen = torch.Generator().manual_seed(0)
    return torch.rand((BATCH, 1, 28, 28), generator=gen) * 2 - 1, torch.randint(0, 10, (BATCH,), generator=gen)


def make_step(model_name: str, mode: str):
    """A zero-argument callable performing one training step of ``mode``."""
    x, y = _data()
    module = build(model_name)
    if mode == "non-private":
        opt = torch.optim.SGD(module.parameters(), lr=0.1)

        def step():
            opt.zero_grad()
            nn.functional.cross_entropy(module(x), y).backward()
            opt.step()
        return step
    if mode.startswith("opacus"):
        import warnings

        from opacus import PrivacyEngine

        warnings.filterwarnings("ignore")
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH)
        engine = PrivacyEngine(accountant="rdp")
        opt = torch.optim.SGD(module.parameters(), lr=0.1)
        if mode == "opacus-ghost":
            module, opt, criterion, _ = engine.make_private(
                module=module, optimizer=opt, data_loader=loader, criterion=nn.CrossEntropyLoss(),
                noise_multiplier=NOISE, max_grad_norm=CLIP, poisson_sampling=False, grad_sample_mode="ghost")
        else:
            module, opt, _ = engine.make_private(module=module, optimizer=opt, data_loader=loader,
                                                 noise_multiplier=NOISE, max_grad_norm=CLIP, poisson_sampling=False)
            criterion = nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            criterion(module(x), y).backward()
            opt.step()
        return step
    from dpopt.neural.methods import NeuralHyper, make_oracle, run
    from dpopt.neural.model import TorchModel
    from dpopt.privacy import Ledger

    model = TorchModel(module, x, y)
    hyper = NeuralHyper(lr=0.1)
    method = "dp-blsgd" if mode == "dpopt-blsgd" else "dp-sgd"
    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(0)

    # batch_rate 1 on these 256 records: the gradient and the search see exactly the batch
    oracle = make_oracle(model, ledger=Ledger(1e9, 1e-5, "rdp"), rng=rng, rate=1.0, clip=CLIP, hyper=hyper,
                         normalizer=BATCH)

    def step():
        run(model, method, oracle=oracle, generator=gen, steps=1, z=NOISE, hyper=hyper)
    return step


def time_modes(model_name: str, steps: int, rounds: int) -> dict:
    fns = {mode: make_step(model_name, mode) for mode in MODES}
    for fn in fns.values():  # warm-up
        fn()
        fn()
    samples = {mode: [] for mode in MODES}
    for _ in range(rounds):
        for mode, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(steps):
                fn()
            samples[mode].append((time.perf_counter() - t0) / steps)
    return {mode: statistics.median(v) for mode, v in samples.items()}


def _peak_rss_kib() -> int:
    """VmHWM, this process's peak resident set (unlike ``ru_maxrss``, not inherited from the parent)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def peak_memory(model_name: str, mode: str, steps: int = 3) -> float:
    """Growth of the peak resident set (MiB) over ``steps`` steps, in this process."""
    fn = make_step(model_name, mode)
    before = _peak_rss_kib()
    for _ in range(steps):
        fn()
    return (_peak_rss_kib() - before) / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--memory-of", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.memory_of:
        print(json.dumps(peak_memory(*args.memory_of)))
        return
    print(f"torch {torch.__version__}, {args.threads} thread(s), batch {BATCH}, clip {CLIP}, noise multiplier {NOISE}")
    for model_name in ("mlp", "cnn"):
        times = time_modes(model_name, args.steps, args.rounds)
        memory = {}
        if not args.no_memory:
            for mode in MODES:
                out = subprocess.run([sys.executable, __file__, "--threads", str(args.threads), "--memory-of",
                                      model_name, mode], check=True, capture_output=True, text=True)
                memory[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        base = times["non-private"]
        fastest = min(times["opacus-hooks"], times["opacus-ghost"])
        print(f"\n{model_name}: ms/step, x non-private, x Opacus's fastest mode, peak memory growth (MiB)")
        for mode in MODES:
            mem = f"{memory[mode]:8.1f}" if mode in memory else "       -"
            ratios = f"{times[mode] / base:7.2f}x {times[mode] / fastest:7.2f}x"
            print(f"  {mode:13s} {1e3 * times[mode]:8.2f} {ratios} {mem}")


if __name__ == "__main__":
    main()
