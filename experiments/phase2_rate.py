"""Phase 2's per-round contraction at sigma = 0, computed exactly from a dataset.

At sigma = 0 with every client in its own cluster, one Phase 2 round (SXY22 Algorithm 2: FedAvg,
s local gradient steps of size eta on F_i(theta) = ||Phi_i theta - y_i||^2 / (2 n_i), server
update theta_j += sum_{i in S_j} (n_i / N)(theta_i~ - theta_j) with N over *all* clients, as
docs/math.md §5.3 states) is linear in the error e_j = theta_j - theta*_j:

    e_j <- (I - sum_{i in S_j} (n_i/N) (I - (I - eta H_i)^s)) e_j,    H_i = Phi_i^T Phi_i / n_i.

This script builds that operator from a dataset directory written by `fedmix generate`, iterates
it from the initial models of a `fedmix run` (`--init` file), and prints the predicted
d(theta_hat, theta*) (the largest cluster error) beside the run's `trace.csv`, with the slowest
eigenvalue of each cluster's operator. Usage:

    python experiments/phase2_rate.py DATASET INIT.npy RUN_DIR

Requires numpy. It reads the step eta and s from the run's summary.json.
"""
import csv
import json
import sys

import numpy as np


def round_operator(clients, members, eta, s, N):
    """The round's linear map of cluster j's error: I - sum_{i in S_j} (n_i/N)(I - (I - eta H_i)^s)."""
    d = clients[0].shape[1]
    A = np.zeros((d, d))
    for i in members:
        P = clients[i]
        n = P.shape[0]
        lam, U = np.linalg.eigh(P @ P.T / n)
        lam = np.maximum(lam, 1e-300)
        # I - (I - eta H)^s = P^T U diag((1 - (1 - eta lam)^s) / (n lam)) U^T P on H's row space
        coef = (1.0 - (1.0 - eta * lam) ** s) / (n * lam)
        B = U.T @ P
        A += (n / N) * (B.T @ (coef[:, None] * B))
    return np.eye(d) - A


def predicted_distances(clients, client_labels, init, theta_star, eta, s, rounds):
    """d(theta_hat, theta*) (the largest cluster error) after each of `rounds` Phase 2 rounds
    from models `init` (row j starting cluster j), at sigma = 0 with every client in its
    cluster; and each cluster's slowest and fastest eigenvalue of its round."""
    N = sum(P.shape[0] for P in clients)
    ops, errs, spectra = [], [], []
    for j in range(theta_star.shape[0]):
        M = round_operator(clients, np.flatnonzero(client_labels == j), eta, s, N)
        ev = np.linalg.eigvalsh(M)
        ops.append(M)
        errs.append(init[j] - theta_star[j])
        spectra.append((ev.max(), ev.min()))
    out = []
    for _ in range(rounds):
        errs = [M @ e for M, e in zip(ops, errs)]
        out.append(max(np.linalg.norm(e) for e in errs))
    return np.array(out), spectra


def main(dataset, init_path, run_dir):
    X = np.load(f"{dataset}/features.npy")
    sizes = np.load(f"{dataset}/client_sizes.npy").astype(int)
    labels = np.load(f"{dataset}/labels.npy")  # one label per client
    theta_star = np.load(f"{dataset}/theta_star.npy")
    summary = json.load(open(f"{run_dir}/summary.json"))
    eta = next(v for k, v in _walk(summary) if k == "eta" and isinstance(v, float))
    s = summary["config"]["local_steps"]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    clients = [X[o:o + n] for o, n in zip(offsets, sizes)]
    rows = list(csv.DictReader(open(f"{run_dir}/trace.csv")))
    got = np.array([float(r["distance"]) for r in rows])
    pred, spectra = predicted_distances(clients, labels, np.load(init_path), theta_star, eta, s,
                                        len(rows))
    for j, (hi, lo) in enumerate(spectra):
        print(f"cluster {j}: {np.sum(labels == j)} clients, round eigenvalues {lo:.4f}..{hi:.4f} "
              f"(slowest: halving every {np.log(0.5) / np.log(hi):.0f} rounds)")
    print(f"eta = {eta:.6g}, s = {s}; round, predicted, run's trace, relative difference")
    rel = np.abs(pred - got) / got
    for t in sorted({1, 2, 10, 50, 100, len(rows)}):
        if t <= len(rows):
            print(f"{t:5d}  {pred[t - 1]:.6e}  {got[t - 1]:.6e}  {rel[t - 1]:.1e}")
    print(f"largest relative difference over {len(rows)} rounds: {rel.max():.1e}")


def _walk(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v)


if __name__ == "__main__":
    main(*sys.argv[1:4])
