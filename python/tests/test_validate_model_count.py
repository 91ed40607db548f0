"""A candidate with another number of models than the reference in a round (it clusters
differently) fails that round — `fedmix.validate` returns `passed=False` with the model counts in
the diagnosis, `fedmix.testing.assert_matches_reference` raises `AssertionError` — instead of
being refused as a shape error; a wrong `d` stays a `FedmixError`."""

import numpy as np
import pytest

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


def widened(iterates, extra_round):
    """The candidate's models with one more slot: NaN padding, a model in `extra_round` (1-based)."""
    rounds, k, d = iterates.shape
    wide = np.full((rounds, k + 1, d), np.nan)
    wide[:, :k] = iterates
    wide[extra_round - 1, k] = 0.5
    return wide


@pytest.mark.parametrize("mode", ["trajectory", "one-step"])
def test_more_models_fail_their_round(fed, own, mode):
    init, iterates, labels = own
    k = iterates.shape[1]
    rep = fedmix.validate(fed, "phase2", widened(iterates, 2), labels, seed=1, init=init, mode=mode, **KEYS)
    assert not rep.passed and rep.first_failure == 2 and list(rep.ok) == [True, False, True]
    assert list(rep.candidate_models) == [k, k + 1, k] and list(rep.models) == [k, k, k]
    assert rep.raw["rounds"][1]["candidate_models"] == k + 1
    assert rep.diagnosis.startswith(f"round 2: the candidate has {k + 1} model(s), the reference {k}")
    with pytest.raises(AssertionError, match=f"the candidate has {k + 1} model"):
        fedmix.testing.assert_matches_reference(widened(iterates, 2), labels, fed, "phase2", init=init, seed=1, **KEYS)


def test_nan_padding_slot_passes_and_a_wrong_d_is_refused(fed, own):
    init, iterates, labels = own
    padded = widened(iterates, 2)
    padded[1, -1] = np.nan
    assert fedmix.validate(fed, "phase2", padded, labels, seed=1, init=init, **KEYS).passed
    with pytest.raises(fedmix.FedmixError):
        fedmix.validate(fed, "phase2", iterates[:, :, :3], labels, seed=1, init=init, **KEYS)
