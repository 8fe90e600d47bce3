"""The communicator interface Algorithm 1 talks to, and its in-process implementation.

A communicator holds some of the n nodes (``nodes``, sorted global ids) and
moves *messages* — the noisy z_j + a_t ζ_j of eq. (5), nothing else — between
nodes held by different processes.  :class:`SimulatedComm` holds every node,
so nothing ever crosses a process; :class:`dpopt.dualavg.mpi.MPIComm` holds
one node per rank.  Neither imports the algorithm, and neither sees the
privacy code (noise is added before a message reaches them).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["Communicator", "SimulatedComm"]


class Communicator(Protocol):
    n: int
    nodes: np.ndarray
    is_root: bool

    def exchange(self, sends: list, recvs: list) -> dict:
        """Send ``(peer, key, array)`` items, receive ``(peer, key, shape)`` items → {key: array}.

        ``peer`` is the global id of the node on the other side; all holders
        list the same keys in the same order (they follow the public plan).
        """

    def allgather(self, local: np.ndarray) -> np.ndarray:
        """Concatenate per-holder arrays along axis 1 (the node axis), in node order, on every holder."""

    def allsum(self, value):
        """Sum of a number or array over holders."""

    def broadcast(self, obj):
        """The root's ``obj`` on every holder."""

    def barrier(self) -> None: ...


class SimulatedComm:
    """All n nodes in this process (the vectorized simulator's communicator)."""

    is_root = True

    def __init__(self, n: int):
        self.n = n
        self.nodes = np.arange(n)

    def exchange(self, sends: list, recvs: list) -> dict:
        if sends or recvs:
            raise RuntimeError("the simulated communicator holds every node; nothing is remote")
        return {}

    def allgather(self, local: np.ndarray) -> np.ndarray:
        return local

    def allsum(self, value):
        return value

    def broadcast(self, obj):
        return obj

    def barrier(self) -> None:
        return None
