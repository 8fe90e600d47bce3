"""method="auto": the measured table's choice, its regularization rule, and the small-budget warning."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpopt.datasets import load_sklearn
from dpopt.estimators import DPLogisticRegression, UtilityWarning
from dpopt.estimators._auto import (
    APPROX_LEARNABLE_R,
    APPROX_SGD_R,
    COUNT_SHARE,
    OBJPERT_INTERCEPT,
    PURE_LEARNABLE_S,
    choose,
    dpsgd_plan,
    dpsgd_regularization,
    objpert_regularization,
    outpert_regularization,
)


def test_pure_budget_below_the_table_threshold_returns_the_private_majority_with_numbers():
    choice = choose(n=398, d=31, epsilon=0.5, delta=0.0)
    assert choice.method == "majority"
    assert "398*0.5/31^2 = 0.207" in choice.warning and f"< {PURE_LEARNABLE_S:g}" in choice.warning
    assert choose(n=398, d=31, epsilon=1.0, delta=0.0).method == "objpert"  # s = 0.414
    assert choose(n=1000, d=108, epsilon=2.0, delta=0.0).method == "majority"  # s = 0.171: r = 18.5 is not enough


def test_a_refused_pure_auto_fit_warns_nothing():
    # an add/remove ledger (the Ledger default) is refused for auto at delta = 0 (replace-one methods); the
    # small-budget warning, which states n (private under add/remove: 40 vs 39 rows), came first
    from dpopt.privacy import BudgetExceededError, Ledger

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 5)) / 3, np.arange(40) % 2
    for rows in (40, 39):
        for ledger, error in ((Ledger(1.0), ValueError), (Ledger(0.01, relation="replace_one"), BudgetExceededError)):
            est = DPLogisticRegression(epsilon=0.05, data_norm=1.0, classes=[0, 1], ledger=ledger)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with pytest.raises(error):
                    est.fit(X[:rows], y[:rows])
    with pytest.warns(UtilityWarning, match="n\\*epsilon/d\\^2 = 40\\*0.05/6\\^2"):  # a fit that proceeds warns
        DPLogisticRegression(epsilon=0.05, data_norm=1.0, classes=[0, 1], ledger=Ledger(1.0, relation="replace_one"),
                             random_state=0).fit(X, y)


def test_a_warning_that_states_the_released_count_comes_after_the_count_is_charged():
    # add/remove: the small-budget warning states N̂ (released with the fit's budget); raised as an error it
    # showed N̂ while the ledger had charged nothing, so it comes after the fit's commit
    from dpopt.privacy import Ledger

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 5)) / 3, np.arange(40) % 2
    ledger = Ledger(1.0, 1e-3, accountant="rdp")
    est = DPLogisticRegression(epsilon=0.05, delta=1e-5, data_norm=1.0, classes=[0, 1], ledger=ledger, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UtilityWarning, match="N\\*epsilon/d"):
            est.fit(X, y)
    assert ledger.events and ledger.spent().epsilon > 0.0  # the count (and the fit) were charged


def test_pure_budget_above_the_threshold_is_objective_perturbation_with_the_rate_rule():
    choice = choose(n=32561, d=108, epsilon=1.0, delta=0.0)
    r = 32561 / 108
    assert choice.method == "objpert" and choice.warning is None
    assert choice.regularization == objpert_regularization(32561, 108, 1.0)
    # Adult: the Jacobian takes little of epsilon, so Λ is close to K/r (K = 0.12), steeper above r = 300
    assert choice.regularization == pytest.approx(0.12 / r * (300 / r) ** 0.6, rel=0.08)
    assert objpert_regularization(32561, 108, 5.0) == pytest.approx(3.1e-5, rel=0.02)  # full Adult at eps = 5
    assert objpert_regularization(100, 3, 0.01) == 0.1 and objpert_regularization(1e9, 5, 10.0) == 1e-5
    for epsilon in (1e-300, 700.0, 1e4, 1e300):  # extreme but finite budgets: the range's ends, no overflow
        assert objpert_regularization(1000, 10, epsilon) in (0.1, 1e-5)


def test_objective_perturbation_rule_counts_only_the_epsilon_that_reaches_the_noise():
    # m = nΛ solves (eps − 2 log(1 + c/m))·m = K·d: the noise's epsilon times the regularization is K·d
    for n, d, eps, c in [(537, 9, 2.0, 0.25), (323, 11, 0.5, 0.25), (398, 31, 5.0, 0.25), (1000, 20, 1.0, 1.0)]:
        m = n * objpert_regularization(n, d, eps, c)
        assert (eps - 2.0 * math.log1p(c / m)) * m == pytest.approx(0.12 * d, rel=1e-9)
    # few columns: the Jacobian's share is large, so Λ is well above K/r (pima at eps = 2: 1.4 times)
    assert objpert_regularization(537, 9, 2.0) > 1.35 * 0.12 * 9 / (537 * 2.0)
    # a loss with a larger curvature bound (the Huberized hinge, c = 1) pays more for the Jacobian
    assert objpert_regularization(537, 9, 2.0, 1.0) > objpert_regularization(537, 9, 2.0, 0.25)


def test_approximate_budget_chooses_by_the_count_it_is_given():
    # r = N*eps/d: 1k Adult rows at eps = 0.5 (r = 4.63) and breast cancer at 0.5 (6.3) lost to the majority
    # class; Adult 1k at eps = 1 (9.1) won with DP-BLSGD; from r = 20 on DP-SGD with its measured plan beat it.
    low = choose(n=5000, d=108, epsilon=0.1, delta=1e-5)
    assert low.method == "majority"
    assert "5000.0*0.1/108 = 4.63" in low.warning and f"< {APPROX_LEARNABLE_R:g}" in low.warning
    assert choose(n=398, d=31, epsilon=0.5, delta=1e-5).method == "majority"
    middle = choose(n=398, d=31, epsilon=1.0, delta=1e-5)
    assert middle.method == "dp-blsgd" and middle.warning is None
    high = choose(n=32561, d=108, epsilon=0.5, delta=1e-5)
    assert high.method == "dp-sgd" and high.warning is None and 32561 * 0.5 / 108 >= APPROX_SGD_R
    assert high.regularization == pytest.approx(dpsgd_regularization(32561 * 0.5 / 108))


@pytest.fixture(scope="module")
def breast_cancer():
    data = load_sklearn("breast_cancer")
    order = np.random.default_rng(0).permutation(len(data.y))
    tr, te = order[:398], order[398:]
    return (data.X[tr], data.y[tr]), (data.X[te], data.y[te])


def _accuracy(train, test, epsilon, seed):
    est = DPLogisticRegression(epsilon=epsilon, data_norm=1.0, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(*train)
    return float(np.mean(est.predict(test[0]) == test[1])), est


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0])
def test_auto_is_never_below_the_majority_class_on_small_data(breast_cancer, epsilon):
    # Before the table, auto was dp-nag-opt here: mean accuracy 0.43 against the majority's 0.61.
    train, test = breast_cancer
    majority = max(np.mean(test[1] == 1), np.mean(test[1] == -1))
    accs = [_accuracy(train, test, epsilon, seed)[0] for seed in range(5)]
    assert np.mean(accs) >= majority - 1e-9


def test_small_budget_warns_and_large_budget_learns(breast_cancer):
    train, test = breast_cancer
    with pytest.warns(UtilityWarning, match=r"n\*epsilon/d\^2 = 398\*0.5/31\^2"):
        DPLogisticRegression(epsilon=0.5, data_norm=1.0, random_state=0).fit(*train)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        est = DPLogisticRegression(epsilon=5.0, data_norm=1.0, random_state=0).fit(*train)
    assert est.method_ == "objpert" and est.score(*test) > 0.75


@pytest.mark.parametrize(("delta", "numbers"), [
    ("0", "60*0.01/3^2 = 0.0667"),
    ("1e-5", r"N*epsilon/d = "),
])
def test_dpopt_fit_prints_the_utility_warning_with_the_numbers(tmp_path, capsys, delta, numbers):
    from dpopt.cli import main

    rng = np.random.default_rng(0)
    lines = ["a,b,label"] + [f"{x:.3f},{z:.3f},{'yes' if x > z else 'no'}" for x, z in rng.random((60, 2))]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    code = main(["fit", "--data", str(tmp_path / "d.csv"), "--target", "label", "--epsilon", "0.01",
                 "--delta", delta, "--bounds", "a=0:1", "b=0:1", "--classes", "no,yes", "--seed", "0",
                 "--out", str(tmp_path / "m.json"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0
    assert "dpopt fit: utility warning: the budget is too small" in err and numbers in err
    if delta != "0":
        assert "/3 = " in err and "N the record count released first with 2% of the budget" in err


def _fit_approx(train, epsilon, **kw):
    est = DPLogisticRegression(epsilon=epsilon, delta=1e-5, data_norm=1.0, classes=[-1.0, 1.0], **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        return est.fit(*train)


def test_approximate_auto_releases_the_count_first_and_charges_it(breast_cancer):
    train, _ = breast_cancer
    est = _fit_approx(train, 1.0, random_state=0)  # r = 398*0.98/31 = 12.6: DP-BLSGD
    first = est.privacy_events_[0]
    assert type(first).__name__ == "Laplace" and first.sensitivity == 1.0
    assert first.scale == pytest.approx(1.0 / (COUNT_SHARE * 1.0))
    assert est.count_["source"] == "laplace" and est.count_["epsilon"] == pytest.approx(COUNT_SHARE * 1.0)
    assert est.privacy_record()["count"] == est.count_
    assert est.method_ == "dp-blsgd" and est.privacy_spent_["relation"] == "add_remove"
    assert est.privacy_spent_["epsilon"] <= 1.0 and est.privacy_spent_["delta"] <= 1e-5
    # the count is the method's public normalizer: DP-BLSGD releases no count of its own
    assert sum(type(e).__name__ == "Laplace" for e in est.privacy_events_) == 1
    info = est.diagnostics_["problems"][0]["info"]
    assert info["normalizer"] == {"count": round(est.count_["count"]), "source": "declared"}


def test_explicit_dp_sgd_plans_with_the_released_count(breast_cancer):
    train, _ = breast_cancer
    est = DPLogisticRegression(epsilon=2.0, delta=1e-5, method="dp-sgd", data_norm=1.0, classes=[-1.0, 1.0],
                               random_state=0).fit(*train)
    info = est.diagnostics_["problems"][0]["info"]
    eps = 2.0 * (1 - COUNT_SHARE)
    plan = dpsgd_plan(est.count_["count"], 31, eps, dpsgd_regularization(est.count_["count"] * eps / 31))
    assert info["steps"] == plan["steps"] and info["rate"] == pytest.approx(plan["rate"])
    assert info["lr"] == pytest.approx(plan["lr"])
    assert info["normalizer"] == {"count": round(est.count_["count"]), "source": "declared"}


def test_approximate_auto_below_the_threshold_is_the_private_majority_with_the_numbers(breast_cancer):
    train, test = breast_cancer
    with pytest.warns(UtilityWarning, match=r"N\*epsilon/d = [0-9.]+\*0\.098/31 = .* < 10 \(N the record count"):
        est = DPLogisticRegression(epsilon=0.1, delta=1e-5, data_norm=1.0, classes=[-1.0, 1.0],
                                   random_state=0).fit(*train)
    assert est.method_ == "majority"
    assert [type(e).__name__ for e in est.privacy_events_] == ["Laplace", "Exponential"]
    assert est.privacy_spent_["epsilon"] <= 0.1


def test_approximate_choice_is_a_function_of_the_released_count_only(breast_cancer, monkeypatch):
    """Data of different sizes with the same released count get the same choice and regularization; the
    data's own n reaches the choice only through the Laplace release (replaced here by a fixed count)."""
    import dpopt.estimators._budget as budget
    from dpopt.oracles import Normalizer

    train, _ = breast_cancer
    seen = []

    def fixed(count):
        def release(n_records, *, epsilon, ledger, rng, secure_noise=False):
            seen.append(n_records)
            return Normalizer(count, "noisy_count")
        return release

    for count, expected in ((30.0, "majority"), (5000.0, "dp-sgd")):
        monkeypatch.setattr(budget, "laplace_count", fixed(count))
        fits = [_fit_approx((train[0][:rows], train[1][:rows]), 1.0, random_state=0,
                            method_params={"steps": 2} if expected == "dp-sgd" else None)
                for rows in (398, 120)]
        assert [f.method_ for f in fits] == [expected, expected]
        assert fits[0].count_["count"] == fits[1].count_["count"] == count
        assert fits[0].diagnostics_["problems"][0]["info"].get("rate") == fits[1].diagnostics_["problems"][0][
            "info"].get("rate")
    assert seen == [398, 120, 398, 120]


def test_a_declared_count_replaces_the_release(breast_cancer):
    train, _ = breast_cancer
    est = _fit_approx(train, 1.0, random_state=0, method_params={"n_public": 50})
    assert est.method_ == "majority" and est.count_ == {"count": 50.0, "source": "declared", "epsilon": 0.0}
    assert [type(e).__name__ for e in est.privacy_events_] == ["Exponential"]


def test_approximate_auto_shares_a_ledger_and_splits_one_vs_rest(breast_cancer):
    from dpopt.privacy import Ledger

    train, _ = breast_cancer
    X, y = train
    y3 = np.where(X[:, 0] > np.median(X[:, 0]), 2, np.where(y > 0, 1, 0))
    ledger = Ledger(4.0, 1e-5, "rdp")
    est = DPLogisticRegression(epsilon=3.0, delta=1e-5, data_norm=1.0, classes=[0, 1, 2], random_state=0,
                               ledger=ledger).fit(X, y3)
    assert est.method_ == "dp-blsgd" and est.coef_.shape == (3, X.shape[1])
    assert sum(type(e).__name__ == "Laplace" for e in ledger.events) == 1  # one count for the K problems
    assert ledger.spent().epsilon <= 3.0


def test_objective_perturbation_fits_with_intercept_column_one_half_and_maps_back(breast_cancer):
    """Rows [x/B, 0.5]/sqrt(1.25) for objpert (OBJPERT_INTERCEPT); coef_ and intercept_ are on the data's scale:
    at a huge budget the fit scores rows as the non-private solution of the same design does."""
    from dpopt.linesearch import registry
    from dpopt.linesearch.model import LinearModel

    assert OBJPERT_INTERCEPT == 0.5
    (X, y), (Xt, _) = breast_cancer
    est = DPLogisticRegression(epsilon=1e6, method="objpert", regularization=1e-3, data_norm=1.0,
                               classes=[-1.0, 1.0], random_state=0).fit(X, y)
    design = np.hstack([est._clip(X), np.full((len(y), 1), 0.5)]) / np.sqrt(1.25)
    exact = registry.fit("non-private", LinearModel("logistic", design, y, l2=1e-3), epsilon=1.0, delta=0.0, rng=0)
    w = np.asarray(exact.x)
    expected = (est._clip(Xt) @ w[:-1] + 0.5 * w[-1]) / np.sqrt(1.25)
    assert np.allclose(est.decision_function(Xt), expected, atol=1e-3 * np.abs(expected).max())


def test_output_perturbation_regularization_follows_r_and_the_noise():
    # measured best within x3 of 0.3/r (Laplace) and 0.1/r (Gaussian); a fixed 1e-3 lost to the majority class
    assert outpert_regularization(30.0) == pytest.approx(0.01)
    assert outpert_regularization(30.0, gaussian=True) == pytest.approx(0.1 / 30)
    assert outpert_regularization(0.01) == 0.3 and outpert_regularization(1e9) == 1e-3  # never below chen2020's
    est = DPLogisticRegression(epsilon=0.5, method="outpert", data_norm=1.0, random_state=0, classes=[0, 1])
    X = np.random.default_rng(0).uniform(-0.1, 0.1, size=(400, 4))
    y = (X[:, 0] > 0).astype(int)
    assert est._plan("outpert", X.shape, 0.5, 0.0) == ("outpert", pytest.approx(0.3 / (400 * 0.5 / 4)), None)
    assert est._plan("outpert", X.shape, 0.5, 1e-5)[1] == pytest.approx(0.1 / (400 * 0.5 / 4))
    est.fit(X, y)
    assert est.privacy_spent_["epsilon"] <= 0.5


def test_a_named_method_below_the_table_threshold_warns_with_the_numbers(breast_cancer):
    """A method the user names is fitted as asked, with the numbers auto's majority warning states (pure: before
    anything is spent, n public; add/remove: the released N̂, after its charge); a learnable budget warns nothing."""
    train, _ = breast_cancer
    with pytest.warns(UtilityWarning, match=r"n\*epsilon/d\^2 = 398\*0.5/31\^2 .* fitting dp-gd as asked"):
        est = DPLogisticRegression(epsilon=0.5, method="dp-gd", data_norm=1.0, random_state=0).fit(*train)
    assert est.method_ == "dp-gd"
    with pytest.warns(UtilityWarning, match=r"N\*epsilon/d = .* fitting dp-sgd as asked"):
        est = DPLogisticRegression(epsilon=1e-3, delta=1e-6, method="dp-sgd", data_norm=1.0, classes=[-1.0, 1.0],
                                   random_state=0).fit(*train)
    assert est.method_ == "dp-sgd" and len(est.privacy_events_) > 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        DPLogisticRegression(epsilon=5.0, method="dp-gd", data_norm=1.0, random_state=0).fit(*train)
        DPLogisticRegression(epsilon=0.01, method="majority", data_norm=1.0, random_state=0).fit(*train)


def test_dp_agd_below_the_table_threshold_states_no_row_count(breast_cancer):
    """DP-AGD's relation is add/remove (n private) and it releases its own normalizer inside the run, so the
    estimator has no released count to state: the warning showed the data's own n ('N*epsilon/d =
    398.0*...'), a row count no mechanism released, and whether it came followed n."""
    train, _ = breast_cancer
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        est = DPLogisticRegression(epsilon=0.02, delta=1e-6, method="dp-agd", data_norm=1.0, classes=[-1.0, 1.0],
                                   random_state=0).fit(*train)
    assert est.privacy_spent_["relation"] == "add_remove"
