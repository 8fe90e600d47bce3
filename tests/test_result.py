"""dpopt.result: what a DPResult states about its guarantee."""

from __future__ import annotations

import numpy as np

from dpopt.privacy import Ledger
from dpopt.privacy import events as ev
from dpopt.result import DPResult


def test_repr_states_epsilon_rounded_up():
    """20 Poisson-subsampled Gaussian(1) steps at rate 0.3 spend epsilon 10.6296354 (RDP at 1e-5): the repr read
    'epsilon=10.6296', and the 3 repetitions' 18.4330346 'epsilon=18.433 ... together'."""
    ledger = Ledger(100.0, 1e-5, "rdp", relation="add_remove")
    for _ in range(20):
        ledger.charge(ev.Subsampled(ev.Gaussian(1.0, 1.0), 0.3, "poisson"))
    res = DPResult.from_ledger(ledger, repetitions=3, x=np.zeros((3, 2)), fun=0.0, method="m")
    text = repr(res)
    shown = float(text.split("epsilon=")[1].split(",")[0])
    together = float(text.split("epsilon=")[2].split(",")[0])
    assert shown >= res.privacy.epsilon and together >= res.privacy_all.epsilon
    assert f"{res.privacy.epsilon:.6g}" != text.split("epsilon=")[1].split(",")[0]  # (a value that rounds down)


def test_repetitions_on_a_renyi_filter_ledger_keep_the_released_result():
    """A run charged to a Renyi filter's ledger (filter_order) with R > 1 repetitions: from_ledger raised
    spent_by_copies' ValueError after the runs had been charged and released (dualavg.minimize on
    Ledger(5, 1e-5, 'rdp', filter_order=4) with repetitions=2 spent the budget and returned nothing)."""
    ledger = Ledger(5.0, 1e-5, "rdp", relation="replace_one", filter_order=4.0)
    ledger.charge(ev.Gaussian(5.0))
    res = DPResult.from_ledger(ledger, repetitions=2, x=np.zeros((2, 2)), fun=0.0, method="m")
    assert res.privacy_all is None and res.privacy_record()["all_repetitions"] is None
    assert "2 runs" in repr(res) and res.privacy.epsilon == 5.0
