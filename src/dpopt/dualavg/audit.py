"""Audit target: what one node of Algorithm 1 puts on the wire.

The run is the real :func:`~dpopt.dualavg.minimize` with a *tapping*
communicator that holds node 0 only and records every message node 0 sends
(as an eavesdropper on its links would, liu2024 §2.3); node 1's messages come
back as zeros (data independent).  Setting: n = 2 nodes, q = 1 record each
(no local subsampling), ι = 1, one round, d = 1, L = 1: the message is
z + a_1·ζ = ĝ + N(0, σ²), and replacing node 0's record (x = 1, y = +1 → y = −1)
moves ĝ from −1 to +1, the full replace-one sensitivity 2L.  σ is calibrated
by the RDP accountant to (ε, δ) = :data:`DDA_NODE_SETTING`; the claim is the
run's ledger.
"""

from __future__ import annotations

import numpy as np

from ..privacy import Ledger
from ..privacy.audit import AuditTarget

__all__ = ["DDA_NODE_SETTING", "TapComm", "node_messages_target"]

#: (ε, δ) of the node-message audit.
DDA_NODE_SETTING = (2.0, 1e-5)


class TapComm:
    """Holds node 0 of ``n``; records what it sends, answers receives with zeros."""

    is_root = True

    def __init__(self, n: int = 2):
        self.n = n
        self.nodes = np.array([0])
        self.sent: list = []

    def exchange(self, sends: list, recvs: list) -> dict:
        self.sent.extend(np.array(array) for _, _, array in sends)  # copies: the rows are mixed in place afterwards
        return {key: np.zeros(shape) for _, key, shape in recvs}

    def allgather(self, local):
        return np.concatenate([local, np.zeros_like(local)], axis=1)

    def allsum(self, value):
        return value

    def broadcast(self, obj):
        return obj

    def barrier(self) -> None:
        return None


def node_messages_target(samples: int = 400_000) -> AuditTarget:
    from .api import minimize

    epsilon, delta = DDA_NODE_SETTING
    record = {"D": (np.ones((1, 1)), np.ones(1)), "D'": (np.ones((1, 1)), -np.ones(1))}

    def run(data, repetitions, rng):
        tap = TapComm()
        ledger = Ledger(epsilon, delta, "rdp", relation="replace_one")
        minimize(
            lambda i: record[data], sizes=[1, 1], epsilon=epsilon, delta=delta, ledger=ledger, iota=1.0, edges=1,
            rounds=1, lipschitz=1.0, repetitions=repetitions, seed=int(rng.integers(2**62)), comm=tap,
            regularizer="l2", strength=1.0,
        )  # fmt: skip
        message = np.stack(tap.sent)  # (R, d): one message per repetition, the only thing node 0 released
        return message[..., 0], ledger

    return AuditTarget(
        "dda-node", run, "D", "D'", description="liu2024 Algorithm 1: one node's released message (replace-one)",
        statistic_name="message", samples=samples, batch_size=200_000,
    )  # fmt: skip
