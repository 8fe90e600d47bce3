import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpopt.privacy import events as ev

positive = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)
rates = st.floats(min_value=1e-6, max_value=1.0, exclude_min=False)


def base_events():
    return st.one_of(
        st.builds(ev.Laplace, positive, positive),
        st.builds(ev.Gaussian, positive, positive),
        st.builds(ev.VectorLaplace, positive, positive),
        st.builds(ev.Exponential, positive),
        st.builds(ev.PureDP, positive),
        st.builds(ev.ApproxDP, positive, st.floats(min_value=1e-300, max_value=0.999999)),
        st.builds(ev.AboveThreshold.laplace, positive, positive, positive),
        st.builds(ev.AboveThreshold.gaussian, positive, positive, positive),
    )


events = st.recursive(
    base_events(),
    lambda inner: st.one_of(
        st.builds(ev.Subsampled, inner, rates, st.sampled_from(["poisson", "without_replacement"])),
        st.builds(ev.Composed, st.lists(inner, min_size=1, max_size=4)),
        st.builds(ev.SelfComposed, inner, st.integers(1, 10**6)),
    ),
    max_leaves=8,
)


@given(events)
def test_json_round_trip_is_exact(event):
    again = ev.from_json(event.to_json())
    assert again == event
    assert again.to_json() == event.to_json()


def test_events_are_immutable_and_hashable():
    e = ev.Laplace(scale=2.0, sensitivity=1.0)
    with pytest.raises(AttributeError):
        e.scale = 3.0
    assert {e: 1}[ev.Laplace(2.0, 1.0)] == 1


def test_derived_parameters():
    assert ev.Laplace(2.0, 1.0).epsilon == 0.5
    assert ev.Gaussian(sigma=2.0, sensitivity=0.5).noise_multiplier == 4.0
    at = ev.AboveThreshold.laplace(0.5, 0.25, sensitivity=3.0)
    assert at.threshold_scale == 6.0 and at.query_scale == 12.0
    assert math.isclose(at.epsilon1, 0.5) and math.isclose(at.epsilon2, 0.25)
    g = ev.AboveThreshold.gaussian(1.5, 2.0, sensitivity=2.0)
    assert (g.sigma1, g.sigma2) == (1.5, 2.0)
    with pytest.raises(ValueError, match="laplace variant"):
        _ = g.epsilon1


@pytest.mark.parametrize(
    "build, name",
    [
        (lambda: ev.Laplace(scale=0.0), "scale"),
        (lambda: ev.Laplace(scale=1.0, sensitivity=-1), "sensitivity"),
        (lambda: ev.Gaussian(sigma=float("nan")), "sigma"),
        (lambda: ev.Gaussian(sigma=-1.0), "sigma"),
        (lambda: ev.Exponential(epsilon=0.0), "epsilon"),
        (lambda: ev.PureDP(epsilon=float("inf")), "epsilon"),
        (lambda: ev.Subsampled(ev.PureDP(1.0), rate=0.0), "rate"),
        (lambda: ev.Subsampled(ev.PureDP(1.0), rate=1.5), "rate"),
        (lambda: ev.Subsampled(ev.PureDP(1.0), rate=0.5, scheme="bootstrap"), "scheme"),
        (lambda: ev.SelfComposed(ev.PureDP(1.0), 0), "count"),
        (lambda: ev.AboveThreshold.laplace(0.0, 1.0), "epsilon1"),
        (lambda: ev.AboveThreshold("uniform", 1.0, 1.0), "noise"),
        (lambda: ev.ApproxDP(0.0, 1e-6), "epsilon"),
        (lambda: ev.ApproxDP(1.0, 0.0), "delta"),
        (lambda: ev.ApproxDP(1.0, 1.0), "delta"),
    ],
)
def test_bad_parameters_are_named(build, name):
    with pytest.raises(ValueError, match=name):
        build()


def test_type_errors():
    with pytest.raises(TypeError, match="count"):
        ev.SelfComposed(ev.PureDP(1.0), 2.0)
    with pytest.raises(TypeError, match="event"):
        ev.Subsampled("laplace", 0.5)
    with pytest.raises(TypeError, match="scale"):
        ev.Laplace(scale="1")


def test_unknown_type_in_json():
    with pytest.raises(ValueError, match="unknown event type"):
        ev.from_json('{"type": "magic", "epsilon": 1.0}')
