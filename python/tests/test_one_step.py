"""One-step (teacher-forced) validation from Python: `fedmix.validate(..., mode="one-step")` and
`fedmix.testing.assert_each_step_matches_reference`. A candidate with twice the step fails every
round with the same diagnosis (trajectory mode: from round 1, one diagnosis); the reference's own
trajectory passes; an algorithm without a one-step round is refused; a bad mode is an error."""

import numpy as np
import pytest

import fedmix
import fedmix.testing

KEYS = dict(rounds=6, local_steps=1)


@pytest.fixture(scope="module")
def fed():
    return fedmix.generate("sxy-balanced", 2, d=4, clients=10, samples=12)


@pytest.fixture(scope="module")
def init(fed):
    return np.asarray(fed.theta_star) * 0.5


def run(fed, init, eta):
    res = fedmix.run("phase2", fed, seed=1, init=init, eta=eta, **KEYS)
    return res.iterates, res.iterate_labels


def test_own_trajectory_passes_one_step(fed, init):
    it, lab = run(fed, init, 0.05)
    rep = fedmix.validate(fed, "phase2", it, lab, seed=1, init=init, eta=0.05, mode="one-step", **KEYS)
    assert rep.passed and rep.mode == "one-step" and rep.failures == [] and rep.summary is None
    fedmix.testing.assert_each_step_matches_reference(it, lab, fed, "phase2", init=init, seed=1, eta=0.05, **KEYS)


def test_a_doubled_step_fails_every_round_with_one_diagnosis(fed, init):
    it, lab = run(fed, init, 0.1)
    traj = fedmix.validate(fed, "phase2", it, lab, seed=1, init=init, eta=0.05, **KEYS)
    assert traj.mode == "trajectory" and traj.first_failure == 1 and len(traj.failures) == 1
    one = fedmix.validate(fed, "phase2", it, lab, seed=1, init=init, eta=0.05, mode="one-step", **KEYS)
    assert [r for r, _ in one.failures] == list(range(1, 7))
    assert all("ratio 2.0000" in d for _, d in one.failures)
    assert one.summary == "rounds 1–6 all differ by the factor 2.000 in the step: a step twice the reference's"
    with pytest.raises(AssertionError, match="factor 2.000"):
        fedmix.testing.assert_each_step_matches_reference(it, lab, fed, "phase2", init=init, seed=1, eta=0.05, **KEYS)


def test_refusals_and_bad_modes(fed, init):
    it, lab = run(fed, init, 0.05)
    with pytest.raises(fedmix.FedmixError, match="not available for `local`"):
        fedmix.validate(fed, "local", it[:1], None, seed=1, mode="one-step")
    with pytest.raises(fedmix.FedmixError, match="mode"):
        fedmix.validate(fed, "phase2", it, lab, seed=1, init=init, eta=0.05, mode="onestep", **KEYS)
    with pytest.raises(TypeError):
        fedmix.validate(fed, "phase2", it, lab, seed=1, init=init, eta=0.05, mode=1, **KEYS)
