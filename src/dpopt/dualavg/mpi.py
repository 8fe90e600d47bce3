"""MPI communicator (extra ``dpopt[mpi]``: mpi4py over the MPICH wheel): one rank per node.

Rank i holds node i and only its shard.  Messages are the noisy z_j + a_t ζ_j
of eq. (5), sent point to point between the two ends of each sampled edge
(a rank off every sampled edge makes no MPI call in that round; there is no
per-round collective or barrier); nothing else about a node leaves its rank
(the final averages are gathered for the result, as post-processing of
released messages).  This module knows nothing about the algorithm or about
privacy.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["MPIComm"]


class MPIComm:
    #: seconds of polling before a waiting rank starts to nap, and its first and longest nap (see :meth:`_wait`)
    spin, first_nap, max_nap = 2e-5, 2e-5, 1e-3

    def __init__(self, n: int | None = None, comm=None):
        try:
            from mpi4py import MPI
        except ImportError as exc:  # pragma: no cover - depends on the optional extra
            raise ImportError("the MPI back end needs mpi4py: pip install 'dpopt[mpi]'") from exc
        self._MPI = MPI
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        size = self.comm.Get_size()
        self.n = size if n is None else n
        if size != self.n:
            raise ValueError(
                f"the MPI back end runs one rank per node: {self.n} nodes need mpiexec -n {self.n}, got {size}"
            )
        self.nodes = np.array([self.rank])
        self.is_root = self.rank == 0
        self._sending: list = []  # (request, buffer) of sends not yet known complete

    def exchange(self, sends: list, recvs: list) -> dict:
        requests, out = [], {}
        by_peer_send: dict[int, list] = {}
        for peer, _key, array in sends:
            by_peer_send.setdefault(peer, []).append(np.ascontiguousarray(array, dtype=float))
        by_peer_recv: dict[int, list] = {}
        for peer, key, shape in recvs:
            by_peer_recv.setdefault(peer, []).append((key, shape))
        buffers = {}
        for peer, items in by_peer_recv.items():
            size = sum(int(np.prod(s)) for _, s in items)
            buffers[peer] = np.empty(size)
            requests.append(self.comm.Irecv(buffers[peer], source=peer, tag=7))
        outgoing = [np.concatenate([a.ravel() for a in arrays]) for arrays in by_peer_send.values()]
        # sends complete in the background: a rank waits for the messages it needs, not for its
        # partner to have read its own (MPI keeps each pair's messages in order); collectives flush them
        self._sending = [(r, buf) for r, buf in self._sending if not r.Test()] + [
            (self.comm.Isend(payload, dest=peer, tag=7), payload)
            for peer, payload in zip(by_peer_send, outgoing, strict=True)
        ]
        self._wait(requests)
        for peer, items in by_peer_recv.items():
            offset = 0
            for key, shape in items:
                size = int(np.prod(shape))
                out[key] = buffers[peer][offset : offset + size].reshape(shape)
                offset += size
        return out

    def _wait(self, requests) -> None:
        """Complete ``requests``: poll for ``spin`` seconds, then poll between naps doubling up to ``max_nap``.

        MPICH's own wait polls without ever sleeping; with more ranks than
        cores (20 ranks on 2 cores) a waiting rank then takes CPU time from the
        very rank it waits for.  A message from a partner that is ready
        arrives within the spin; a partner that is still computing gets the core.
        """
        test = self._MPI.Request.Testall
        start, nap = time.perf_counter(), self.first_nap
        while not test(requests):
            if time.perf_counter() - start > self.spin:
                time.sleep(nap)
                nap = min(2.0 * nap, self.max_nap)

    def _flush(self) -> None:
        """Complete every send still in flight (before any collective, so none outlives the run)."""
        if self._sending:
            self._wait([r for r, _ in self._sending])
            self._sending = []

    def allgather(self, local: np.ndarray) -> np.ndarray:
        self._flush()
        parts = self.comm.allgather(np.ascontiguousarray(local))
        return np.concatenate(parts, axis=1)

    def allsum(self, value):
        self._flush()
        return self.comm.allreduce(value, op=self._MPI.SUM)

    def broadcast(self, obj):
        self._flush()
        return self.comm.bcast(obj, root=0)

    def barrier(self) -> None:
        self._flush()
        self.comm.Barrier()

    def abort(self, code: int = 1) -> None:
        self.comm.Abort(code)
