"""A NaN or infinite entry in a candidate fails the round it is in — in `fedmix.validate`
(`passed=False`, the round's `bad_entries` naming it) and in
`fedmix.testing.assert_matches_reference` (`AssertionError`) — whatever the tolerance. (An
all-NaN candidate used to pass with deviation 0: the maximum skipped NaN.)"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedmix
import fedmix.testing

KEYS = dict(rounds=3)


@pytest.fixture(scope="module")
def fed():
    return fedmix.generate("sxy-balanced", 2, d=4, clients=10, samples=12)


@pytest.fixture(scope="module")
def own(fed):
    init = np.asarray(fed.theta_star) * 0.5
    res = fedmix.run("phase2", fed, seed=1, init=init, **KEYS)
    return init, res.iterates, res.iterate_labels


def validate(fed, own, iterates, **kw):
    init, _, labels = own
    return fedmix.validate(fed, "phase2", iterates, labels, seed=1, init=init, **KEYS, **kw)


def assert_matches(fed, own, iterates, **kw):
    init, _, labels = own
    fedmix.testing.assert_matches_reference(iterates, labels, fed, "phase2", init=init, seed=1, **KEYS, **kw)


def test_own_trajectory_passes(fed, own):
    rep = validate(fed, own, own[1])
    assert rep.passed and all(e is None for e in rep.bad_entries)
    assert_matches(fed, own, own[1])


def test_all_nan_fails_every_round(fed, own):
    nan = np.full(own[1].shape, np.nan)
    rep = validate(fed, own, nan, rtol=1e300, atol=1e300)
    assert not rep.passed and rep.first_failure == 1 and not rep.ok.any()
    assert np.isnan(rep.max_rel_deviation).all() and np.isnan(rep.max_abs_deviation).all()
    for e in rep.bad_entries:
        assert e == {"kind": "non_finite", "side": "candidate", "model": 0, "coordinate": 0, "value": "NaN"}
    with pytest.raises(AssertionError) as e:
        assert_matches(fed, own, nan)
    msg = str(e.value)
    assert "from round 1 of 3 (3 round(s) beyond tolerance: 1, 2, 3)" in msg
    assert "first bad entry: candidate model 0, coordinate 0 is NaN" in msg


@settings(max_examples=25, deadline=None)
@given(data=st.data(), value=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_one_non_finite_entry_fails_exactly_its_round(fed, own, data, value):
    rounds, k, d = own[1].shape
    t = data.draw(st.integers(0, rounds - 1), label="round")
    j = data.draw(st.integers(0, k - 1), label="model")
    c = data.draw(st.integers(0, d - 1), label="coordinate")
    cand = own[1].copy()
    cand[t, j, c] = value
    rep = validate(fed, own, cand)
    assert not rep.passed and rep.first_failure == t + 1
    assert rep.ok.tolist() == [r != t for r in range(rounds)]
    assert (rep.worst_model[t], rep.worst_coordinate[t]) == (j, c)
    entry = rep.bad_entries[t]
    assert (entry["kind"], entry["side"], entry["model"], entry["coordinate"]) == ("non_finite", "candidate", j, c)
    assert entry["value"] == {"nan": "NaN", "inf": "inf", "-inf": "-inf"}[str(value)]
    with pytest.raises(AssertionError, match=f"from round {t + 1} of {rounds} \\(1 round\\(s\\)"):
        assert_matches(fed, own, cand)


def test_padded_rounds(fed):
    """CFL's number of models grows: its own NaN-padded iterates pass; a value where a round
    has no model fails that round."""
    keys = dict(rounds=4, cfl_warmup_rounds=0, cfl_eps1=1e9, cfl_eps2=1e-12)
    res = fedmix.run("cfl", fed, seed=3, **keys)
    pad = np.isnan(res.iterates).all(axis=2)
    assert pad.any(), "CFL did not split"
    rep = fedmix.validate(fed, "cfl", res.iterates, res.iterate_labels, seed=3, **keys)
    assert rep.passed, rep.diagnosis
    t, j = map(int, np.argwhere(pad)[0])
    cand = res.iterates.copy()
    cand[t, j, 1] = 0.0
    rep = fedmix.validate(fed, "cfl", cand, res.iterate_labels, seed=3, **keys)
    assert rep.first_failure == t + 1 and rep.bad_entries[t]["kind"] == "beyond_models"
    assert rep.bad_entries[t]["models"] == rep.models[t] == j
