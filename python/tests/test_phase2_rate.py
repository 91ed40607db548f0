"""`experiments/phase2_rate.py`, the closed form behind the ifca-fig3b-two-phase discussion's
σ = 0 rate: at σ = 0 with every client in its cluster, a Phase 2 round is the linear map
I − Σ_{i∈S_j} (n_i/N)(I − (I − ηH_i)^s) of cluster j's error (SXY22 Phase 2: weights n_i/N over
all clients). Its prediction must agree with fedmix's trace to rounding, and the same map with
per-cluster weights n_i/N_j (not SXY22's) must not."""

import importlib.util
import os

import numpy as np

import fedmix

os.environ.setdefault("OMP_NUM_THREADS", "1")

_SPEC = importlib.util.spec_from_file_location(
    "phase2_rate",
    os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "phase2_rate.py"))
rate = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(rate)

ROUNDS = 30


def _case():
    # IFCA's data at σ = 0 with fewer samples per client than dimensions (n = 10 < d = 30), as
    # in the full profile (n = 100 < d = 1000).
    fed = fedmix.generate("ifca-official", 2, d=30, clients=24, samples=10, k=3, sigma=0.0, r=1.0)
    X = [fed.client(i)[0] for i in range(fed.num_clients)]
    t = fed.theta_star
    init = t + np.random.default_rng(5).standard_normal(t.shape) / np.sqrt(t.shape[1])
    res = fedmix.run("phase2", fed, init=init, eta=0.01, local_steps=5, rounds=ROUNDS)
    return fed, X, init, res


def test_the_closed_form_is_fedmix_phase2_at_sigma_zero():
    fed, X, init, res = _case()
    assert (res.trace["misclustering_clients"] == 0).all()
    pred, spectra = rate.predicted_distances(X, np.asarray(fed.labels), init, fed.theta_star,
                                             0.01, 5, ROUNDS)
    got = res.trace["distance"]
    rel = np.abs(pred - got) / got
    assert rel.max() <= 1e-12, rel.max()
    # The rate is slow because each cluster moves by its share N_j/N: every eigenvalue of the
    # round lies in [1 − N_j/N, 1) (each I − (I − ηH_i)^s has eigenvalues in [0, 1] when
    # ηλ_max(H_i) ≤ 1, and the clients' row spaces together span R^d).
    labels = np.asarray(fed.labels)
    N = sum(P.shape[0] for P in X)
    for j, (hi, lo) in enumerate(spectra):
        share = sum(X[i].shape[0] for i in np.flatnonzero(labels == j)) / N
        assert 1 - share - 1e-12 <= lo <= hi < 1, (j, share, lo, hi)


def test_per_cluster_weights_are_not_fedmix_phase2():
    fed, X, init, res = _case()
    labels = np.asarray(fed.labels)
    N = sum(P.shape[0] for P in X)
    errs = []
    for j in range(fed.theta_star.shape[0]):
        members = np.flatnonzero(labels == j)
        Nj = sum(X[i].shape[0] for i in members)
        # weights n_i/N_j: the round operator with N replaced by the cluster's own N_j
        M = rate.round_operator(X, members, 0.01, 5, Nj)
        errs.append((M, init[j] - fed.theta_star[j]))
    e = [M @ x for M, x in errs]
    wrong = max(np.linalg.norm(x) for x in e)
    assert N > Nj
    # NaN must fail: finite first, then the disagreement.
    assert np.isfinite(wrong)
    assert abs(wrong - res.trace["distance"][0]) / res.trace["distance"][0] > 1e-6
