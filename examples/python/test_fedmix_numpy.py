#!/usr/bin/env python3
"""Self-checks for fedmix_numpy.py.  Run: ``python3 test_fedmix_numpy.py`` (plain asserts).

Each check compares the implementation against an independent statement of the same mathematics
(a first-order condition, a closed form, a hand computation), not against itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fedmix_numpy as fm  # noqa: E402
from make_toy_dataset import make_toy, warm_start  # noqa: E402


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def toy(seed=0, **kw):
    return make_toy(seed=seed, **kw)


# ----------------------------------------------------------------------------------------------


def test_fedprox_first_order_condition():
    """FedProx output satisfies ∇L_i(θ) + (θ − θ_prev)/η = 0."""
    rng = np.random.default_rng(3)
    for n, d, eta in [(7, 5, 0.1), (3, 8, 0.5), (40, 10, 0.02)]:  # includes n < d
        X = rng.standard_normal((n, d))
        y = rng.standard_normal(n)
        prev = rng.standard_normal(d)
        th = fm.fedprox_local(X, y, prev, eta)
        foc = X.T @ (X @ th - y) / n + (th - prev) / eta
        assert np.max(np.abs(foc)) < 1e-10, (n, d, np.max(np.abs(foc)))


def test_fedavg_local_is_repeated_gd():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((6, 4))
    y = rng.standard_normal(6)
    th0 = rng.standard_normal(4)
    th = th0.copy()
    for _ in range(3):
        th = th - 0.05 * X.T @ (X @ th - y) / 6
    assert rel(fm.fedavg_local(X, y, th0, 0.05, 3), th) < 1e-14


def test_phase2_k1_s1_is_full_batch_gd():
    """k = 1, s = 1: θ ← θ − η Σ_i (n_i/N) ∇L_i(θ) = θ − (η/N) Xᵀ(Xθ − y)."""
    Xl, yl, _, ts = toy(k=2, d=6, clients=15)
    X, y = np.concatenate(Xl), np.concatenate(yl)
    N = X.shape[0]
    eta, T = 0.1, 25
    th = np.zeros(6)
    ref = []
    for _ in range(T):
        th = th - eta * X.T @ (X @ th - y) / N
        ref.append(th.copy())
    it, lab = fm.phase2(Xl, yl, np.zeros((1, 6)), eta, 1, "fedavg", T)
    assert it.shape == (T, 1, 6) and lab.shape == (T, 15)
    assert np.all(lab == 0)
    # np.max, not the builtin max, which skips a NaN that does not come first.
    err = np.max([rel(it[t, 0], ref[t]) for t in range(T)])
    assert err < 1e-12, err


def test_phase2_lemma1_closed_form():
    """One Phase 2 round equals SXY22 eq. 11 (Lemma 1):
    θ_j ← θ_j − (η/N) Σ_{i: z_i=j} X_iᵀ P_i (X_iθ_j − y_i),
    P_i = Σ_{l<s} (I − η X_iX_iᵀ/n_i)^l (FedAvg) or (I + η X_iX_iᵀ/n_i)⁻¹ (FedProx)."""
    Xl, yl, labels, ts = toy(k=3, d=5, clients=24, n_min=3, n_max=12, seed=5)
    th0 = warm_start(ts, seed=9)
    eta, s = 0.05, 4
    N = sum(len(y) for y in yl)
    for solver in ("fedavg", "fedprox"):
        it, lab = fm.phase2(Xl, yl, th0, eta, s, solver, 1)
        z = fm.assign_clusters(Xl, yl, th0)
        assert np.array_equal(lab[0], z)
        ref = th0.copy()
        for i, (X, y) in enumerate(zip(Xl, yl)):
            n = len(y)
            A = np.eye(n) - eta * X @ X.T / n
            if solver == "fedavg":
                P = sum(np.linalg.matrix_power(A, l) for l in range(s))
            else:
                P = np.linalg.inv(np.eye(n) + eta * X @ X.T / n)
            ref[z[i]] -= eta / N * X.T @ P @ (X @ th0[z[i]] - y)
        assert rel(it[0], ref) < 1e-12, (solver, rel(it[0], ref))


def test_phase2_weights_are_n_over_N_over_all_clients():
    """A cluster chosen by a single client moves by (n_i/N)(G_i^s(θ_j) − θ_j), not to G_i^s(θ_j)."""
    rng = np.random.default_rng(6)
    X1, X2 = rng.standard_normal((4, 3)), rng.standard_normal((8, 3))
    y1, y2 = X1 @ np.array([5.0, 5, 5]), X2 @ np.array([-5.0, -5, -5])
    th0 = np.array([[4.0, 4, 4], [-4.0, -4, -4]])
    it, lab = fm.phase2([X1, X2], [y1, y2], th0, 0.1, 2, "fedavg", 1)
    assert list(lab[0]) == [0, 1]
    g1 = fm.fedavg_local(X1, y1, th0[0], 0.1, 2)
    g2 = fm.fedavg_local(X2, y2, th0[1], 0.1, 2)
    assert rel(it[0, 0], th0[0] + (4 / 12) * (g1 - th0[0])) < 1e-14
    assert rel(it[0, 1], th0[1] + (8 / 12) * (g2 - th0[1])) < 1e-14


def test_deliberately_wrong_is_wrong_from_round_one():
    Xl, yl, labels, ts = toy(k=3, d=5, clients=24, seed=21)
    th0 = warm_start(ts, seed=22)
    for solver in ("fedavg", "fedprox"):
        good, _ = fm.phase2(Xl, yl, th0, 0.1, 3, solver, 2)
        bad, _ = fm.phase2(Xl, yl, th0, 0.1, 3, solver, 2, deliberately_wrong="cluster-size")
        assert rel(bad[0], good[0]) > 1e-3
        # and it is exactly "step η instead of η N_j/N": the model moves N/N_j times further
        z = fm.assign_clusters(Xl, yl, th0)
        N = sum(len(y) for y in yl)
        for j in range(3):
            Nj = sum(len(yl[i]) for i in range(24) if z[i] == j)
            assert rel(bad[0, j] - th0[j], (N / Nj) * (good[0, j] - th0[j])) < 1e-12


def test_ties_go_to_lowest_index():
    Xl, yl, _, ts = toy(k=2, d=4, clients=10)
    th0 = np.vstack([ts[0], ts[0], ts[1]])  # models 0 and 1 identical
    z = fm.assign_clusters(Xl, yl, th0)
    assert not np.any(z == 1), z
    _, lab = fm.phase2(Xl, yl, th0, 0.05, 2, "fedavg", 1)
    assert not np.any(lab[0] == 1)
    _, lab = fm.ifca(Xl, yl, th0, 0.05, "model", 2, 1)
    assert not np.any(lab[0] == 1)


def test_empty_cluster_keeps_its_model():
    Xl, yl, _, ts = toy(k=2, d=4, clients=10)
    far = np.full(4, 1e3)
    th0 = np.vstack([ts, far])  # nobody picks model 2
    for it, lab in [
        fm.phase2(Xl, yl, th0, 0.05, 3, "fedavg", 3),
        fm.phase2(Xl, yl, th0, 0.05, 1, "fedprox", 3),
        fm.ifca(Xl, yl, th0, 0.05, "gradient", 1, 3),
        fm.ifca(Xl, yl, th0, 0.05, "model", 3, 3),
    ]:
        assert not np.any(lab == 2)
        # Phase 2 rebuilds θ_2 as Σ_i (n_i/N) θ_2: equal up to rounding; IFCA: bit-identical.
        assert np.max(np.abs(it[:, 2] - far)) <= 1e-12 * 1e3


def test_ifca_option1_hand_computed():
    """Two clients, d = 2, k = 2, hand-computed gradient-averaging step."""
    X1 = np.array([[1.0, 0.0], [0.0, 1.0]])  # n1 = 2
    y1 = np.array([1.0, 1.0])
    X2 = np.array([[1.0, 1.0]])  # n2 = 1
    y2 = np.array([-4.0])
    th0 = np.array([[0.0, 0.0], [-1.0, -1.0]])
    # client 1: ‖y1‖² = 2 vs ‖(2, 2)‖² = 8 → model 0; grad = (1/2) Xᵀ(X·0 − y1) = (−0.5, −0.5)
    # client 2: ‖−4‖² = 16 vs ‖−4 + 2‖² = 4 → model 1; grad = (1/1)(1,1)(−2 + 4) = (2, 2)
    # γ = 0.5, |M_t| = 2: θ_0 = 0 − 0.25(−0.5, −0.5) = (0.125, 0.125); θ_1 = −1 − 0.25(2, 2) = (−1.5, −1.5)
    it, lab = fm.ifca([X1, X2], [y1, y2], th0, 0.5, "gradient", 7, 1)
    assert list(lab[0]) == [0, 1]
    assert np.array_equal(it[0], np.array([[0.125, 0.125], [-1.5, -1.5]])), it[0]
    # Only client 2 participates: |M_t| = 1, θ_0 stays, θ_1 = −1 − 0.5(2, 2) = (−2, −2).
    it, lab = fm.ifca([X1, X2], [y1, y2], th0, 0.5, "gradient", 1, 1, participation=np.array([[0, 1]]))
    assert list(lab[0]) == [0, 1]  # client 1 recorded with the label it would pick
    _, lab = fm.ifca([X1, X2], [y1, y2], th0, 0.5, "gradient", 1, 1, participation=np.array([[0, 1]]),
                     mask_nonparticipants=True)
    assert list(lab[0]) == [-1, 1]
    assert np.array_equal(it[0], np.array([[0.0, 0.0], [-2.0, -2.0]])), it[0]


def test_ifca_option2_uniform_average():
    """Option II averages the returned models of the cluster's clients uniformly (not by n_i)."""
    Xl, yl, labels, ts = toy(k=2, d=4, clients=8, n_min=3, n_max=20, seed=11)
    th0 = warm_start(ts, seed=12)
    tau, g = 3, 0.05
    it, lab = fm.ifca(Xl, yl, th0, g, "model", tau, 1)
    z = lab[0]
    for j in range(2):
        members = [i for i in range(8) if z[i] == j]
        assert members
        ref = np.mean([fm.fedavg_local(Xl[i], yl[i], th0[j], g, tau) for i in members], axis=0)
        assert rel(it[0, j], ref) < 1e-14
    # k = 1, τ = 1, full participation: option I (sum / |M_t|) and option II (uniform average of
    # one GD step) both give θ − γ·mean_i ∇F_i(θ).
    it1, _ = fm.ifca(Xl, yl, th0[:1], g, "gradient", 1, 4)
    it2, _ = fm.ifca(Xl, yl, th0[:1], g, "model", 1, 4)
    assert rel(it1, it2) < 1e-13


def test_ifca_participation_schedule():
    Xl, yl, labels, ts = toy(k=2, d=4, clients=10, seed=13)
    th0 = warm_start(ts, seed=14)
    rng = np.random.default_rng(0)
    part = (rng.random((5, 10)) < 0.5).astype(np.int64)
    part[2] = 0  # a round nobody takes part in
    for opt in ("gradient", "model"):
        it, lab = fm.ifca(Xl, yl, th0, 0.1, opt, 2, 5, participation=part, mask_nonparticipants=True)
        assert np.all((lab == -1) == (part == 0))
        it2, lab2 = fm.ifca(Xl, yl, th0, 0.1, opt, 2, 5, participation=part)
        assert np.array_equal(it2, it) and np.all(lab2 >= 0)
        assert np.array_equal(lab2[part == 1], lab[part == 1])
        assert np.array_equal(it[2], it[1])  # nothing moves in an empty round
        # Same as running on the participating subset only, round by round (option II exactly;
        # option I too, since it divides by |M_t|).
        th = th0
        for t in range(5):
            act = [i for i in range(10) if part[t, i]]
            if act:
                sub, _ = fm.ifca([Xl[i] for i in act], [yl[i] for i in act], th, 0.1, opt, 2, 1)
                th = sub[0]
            assert np.array_equal(it[t], th), (opt, t)


def test_float32_gap():
    Xl, yl, labels, ts = toy(k=3, d=8, clients=30, seed=15)
    th0 = warm_start(ts, seed=16)
    a, la = fm.phase2(Xl, yl, th0, 0.1, 5, "fedavg", 20)
    b, lb = fm.phase2(Xl, yl, th0, 0.1, 5, "fedavg", 20, dtype=np.float32)
    assert b.dtype == np.float64
    gap = rel(b, a)
    assert 1e-9 < gap < 1e-4, gap  # really float32, and close
    assert np.array_equal(la, lb)


def test_phase2_converges_on_toy():
    Xl, yl, labels, ts = toy(k=3, d=5, clients=60, n_min=20, n_max=30, sigma=0.05, seed=17)
    th0 = warm_start(ts, seed=18)
    for solver in ("fedavg", "fedprox"):
        it, lab = fm.phase2(Xl, yl, th0, 0.3, 5, solver, 200)
        assert np.max(np.linalg.norm(it[-1] - ts, axis=1)) < 0.05, solver
        assert np.array_equal(lab[-1], labels)


def test_dataset_roundtrip_and_cli():
    Xl, yl, labels, ts = toy(k=3, d=5, clients=12, seed=19)
    with tempfile.TemporaryDirectory() as tmp:
        dd = os.path.join(tmp, "data")
        fm.write_dataset(dd, Xl, yl, labels=labels, theta_star=ts)
        ds = fm.load_dataset(dd)
        assert len(ds.X_list) == 12 and ds.manifest["k"] == 3
        assert all(np.array_equal(a, b) for a, b in zip(ds.X_list, Xl))
        assert all(np.array_equal(a, b) for a, b in zip(ds.y_list, yl))
        assert np.array_equal(ds.labels, labels) and np.array_equal(ds.theta_star, ts)
        th0 = warm_start(ts, seed=20)
        np.save(os.path.join(tmp, "theta0.npy"), th0)
        out = os.path.join(tmp, "out")
        cmd = [sys.executable, os.path.join(HERE, "fedmix_numpy.py"), "--data", dd,
               "--algorithm", "phase2", "--init", os.path.join(tmp, "theta0.npy"), "--eta", "0.1",
               "--local-steps", "5", "--local-solver", "fedavg", "--rounds", "7", "--out", out]
        subprocess.run(cmd, check=True, capture_output=True)
        it = np.load(os.path.join(out, "iterates.npy"))
        lab = np.load(os.path.join(out, "labels.npy"))
        assert it.dtype == np.float64 and it.shape == (7, 3, 5)
        assert lab.dtype == np.int64 and lab.shape == (7, 12)
        ref, rlab = fm.phase2(Xl, yl, th0, 0.1, 5, "fedavg", 7)
        assert np.array_equal(it, ref) and np.array_equal(lab, rlab)
        part = np.ones((4, 12), dtype=np.int64)
        part[1, ::2] = 0
        np.save(os.path.join(tmp, "part.npy"), part)
        out2 = os.path.join(tmp, "out2")
        cmd = [sys.executable, os.path.join(HERE, "fedmix_numpy.py"), "--data", dd,
               "--algorithm", "ifca", "--init", os.path.join(tmp, "theta0.npy"), "--step", "0.1",
               "--option", "model", "--local-steps", "3", "--rounds", "4",
               "--participation", os.path.join(tmp, "part.npy"), "--out", out2]
        subprocess.run(cmd, check=True, capture_output=True)
        ref, rlab = fm.ifca(Xl, yl, th0, 0.1, "model", 3, 4, participation=part)
        assert np.array_equal(np.load(os.path.join(out2, "iterates.npy")), ref)
        assert np.array_equal(np.load(os.path.join(out2, "labels.npy")), rlab)


def main():
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and callable(f)]
    for name, f in tests:
        f()
        print(f"ok   {name}")
    print(f"{len(tests)} checks passed")


if __name__ == "__main__":
    main()
