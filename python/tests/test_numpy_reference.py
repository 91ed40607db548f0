"""The independent numpy implementation of SXY22 Phase 2 (§4.2) and IFCA (Algorithm 2) in
`examples/python/fedmix_numpy.py` passes `assert_matches_reference`; planted bugs fail it at
the round where they first act."""

import os

import numpy as np
import pytest

import fedmix
import fedmix.testing
import fedmix_numpy as fnp  # examples/python, put on sys.path by conftest

os.environ.setdefault("OMP_NUM_THREADS", "1")

SETTINGS = [
    ("sxy-balanced", 1, {"d": 10, "clients": 40, "samples": 20}),
    ("sxy-unbalanced-both", 3, {"d": 10, "clients": 60, "samples": 12, "sizes": "lognormal",
                                "size_min": 2, "size_max": 60}),
]
ROUNDS = 15
ETA = 0.05


def clients(fed):
    X, y = zip(*(fed.client(i) for i in range(fed.num_clients)))
    return list(X), list(y)


def start(fed, seed=7):
    t = fed.theta_star
    return t + 0.3 * np.random.default_rng(seed).standard_normal(t.shape) / np.sqrt(t.shape[1])


@pytest.fixture(params=SETTINGS, ids=[s[0] for s in SETTINGS])
def data(request):
    name, seed, params = request.param
    fed = fedmix.generate(name, seed, **params)
    return fed, clients(fed), start(fed)


@pytest.mark.parametrize("solver", ["fedavg", "fedprox"])
def test_numpy_phase2_matches(data, solver):
    fed, (X, y), theta0 = data
    it, lab = fnp.phase2(X, y, theta0, eta=ETA, local_steps=5, local_solver=solver, rounds=ROUNDS)
    fedmix.testing.assert_matches_reference(
        it, lab, fed, "phase2", init=theta0, rtol=1e-9,
        eta=ETA, local_steps=5, local_solver=solver, rounds=ROUNDS,
    )
    # And the deviation is at the level of rounding, far inside rtol.
    rep = fedmix.validate(fed, "phase2", it, lab, init=theta0, eta=ETA, local_steps=5,
                          local_solver=solver, rounds=ROUNDS)
    assert rep.passed and rep.max_rel_deviation.max() < 1e-12
    assert (rep.label_disagreements == 0).all()


@pytest.mark.parametrize("option,steps", [("gradient", 1), ("model", 5)])
def test_numpy_ifca_matches(data, option, steps):
    fed, (X, y), theta0 = data
    it, lab = fnp.ifca(X, y, theta0, step=ETA, option=option, local_steps=steps, rounds=ROUNDS)
    keys = {"eta": ETA, "ifca_option": option, "restarts": 1, "rounds": ROUNDS}
    if option == "model":
        keys["local_steps"] = steps
    fedmix.testing.assert_matches_reference(it, lab, fed, "ifca", init=theta0, **keys)


def test_per_cluster_weights_fail_at_round_1(data):
    # Weights n_i/N_j (per cluster) instead of SXY22 Phase 2's n_i/N: wrong from the first round.
    fed, (X, y), theta0 = data
    it, lab = fnp.phase2(X, y, theta0, eta=ETA, local_steps=5, rounds=ROUNDS,
                         deliberately_wrong="cluster-size")
    with pytest.raises(AssertionError, match=r"from round 1 of 15") as e:
        fedmix.testing.assert_matches_reference(it, lab, fed, "phase2", init=theta0,
                                                eta=ETA, local_steps=5, rounds=ROUNDS)
    msg = str(e.value)
    assert "rtol=1e-09" in msg and "round 1: max relative deviation" in msg
    assert "moved by" in msg and "n_i/N" in msg  # the diagnosis compares the two steps


def test_step_off_by_two_fails_at_round_1(data):
    fed, (X, y), theta0 = data
    it, lab = fnp.phase2(X, y, theta0, eta=2 * ETA, local_steps=5, rounds=ROUNDS)
    with pytest.raises(AssertionError, match=r"from round 1 of 15"):
        fedmix.testing.assert_matches_reference(it, lab, fed, "phase2", init=theta0,
                                                eta=ETA, local_steps=5, rounds=ROUNDS)


def test_a_late_perturbation_is_named_at_its_round(data):
    fed, (X, y), theta0 = data
    it, lab = fnp.phase2(X, y, theta0, eta=ETA, local_steps=5, rounds=ROUNDS)
    it = it.copy()
    it[6, 1, 3] *= 1 + 1e-7  # round 7, far beyond rtol = 1e-9, far below any label flip
    with pytest.raises(AssertionError, match=r"from round 7 of 15") as e:
        fedmix.testing.assert_matches_reference(it, lab, fed, "phase2", init=theta0,
                                                eta=ETA, local_steps=5, rounds=ROUNDS)
    assert "model 1, coordinate 3" in str(e.value)
    # rtol bites both ways: 1e-7 relative passes at rtol = 1e-6.
    fedmix.testing.assert_matches_reference(it, lab, fed, "phase2", init=theta0, rtol=1e-6,
                                            eta=ETA, local_steps=5, rounds=ROUNDS)


def test_a_flipped_label_fails_with_a_label_diagnosis(data):
    fed, (X, y), theta0 = data
    it, lab = fnp.phase2(X, y, theta0, eta=ETA, local_steps=5, rounds=ROUNDS)
    lab = lab.copy()
    lab[3, 5] = (lab[3, 5] + 1) % fed.k
    with pytest.raises(AssertionError, match=r"from round 4 of 15") as e:
        fedmix.testing.assert_matches_reference(it, lab, fed, "phase2", init=theta0,
                                                eta=ETA, local_steps=5, rounds=ROUNDS)
    assert "1 client(s) chose a different cluster" in str(e.value)
    assert "clients 5" in str(e.value)


def test_report_fields(data):
    fed, (X, y), theta0 = data
    it, lab = fnp.phase2(X, y, theta0, eta=ETA, local_steps=5, rounds=ROUNDS)
    rep = fedmix.validate(fed, "phase2", it, None, init=theta0, eta=ETA, local_steps=5, rounds=ROUNDS)
    assert rep.passed and rep.first_failure is None and rep.diagnosis is None
    assert rep.rounds.tolist() == list(range(1, ROUNDS + 1))
    assert (rep.label_disagreements == -1).all()  # labels not given: not compared
    assert rep.reference == "phase2"
    assert rep.reference_params["eta"] == ETA and rep.reference_params["rounds"] == ROUNDS
    assert rep.reference_params["local_steps"] == 5 and rep.reference_params["local_solver"] == "fedavg"
