#!/usr/bin/env python3
"""A short, vectorised numpy IFCA (GCYR20 Algorithm 2, option I: gradient averaging), the
yardstick of fedmix's whole-process speed (docs/performance.md).

Every client takes part in every round; client ``i`` picks ``z_i = argmin_j ‖y_i − X_i θ_j‖²``
(ties → lowest ``j``) and the server updates ``θ_j ← θ_j − (γ/M) Σ_{i: z_i = j} ∇F_i(θ_j)`` with
``∇F_i(θ) = X_iᵀ(X_i θ − y_i)/n_i`` — the update of ``fedmix run --algorithm ifca --set
ifca_option=gradient`` (and of ``fedmix_numpy.py --algorithm ifca``, the per-client reference
used for round-by-round validation). Here each round is two whole-array products over the data
(`X Θᵀ`, `Xᵀ W`), as a user would write it for speed; the sums run in another order than fedmix's, so the final models agree
to rounding, not bit for bit.

Usage: ifca_numpy_speed.py DATA_DIR INIT.npy GAMMA ROUNDS OUT.npy
"""
import json
import os
import sys

import numpy as np


def main() -> None:
    data, init, gamma, rounds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    with open(os.path.join(data, "manifest.json")) as f:
        manifest = json.load(f)
    X = np.load(os.path.join(data, "features.npy"))  # N × d
    y = np.load(os.path.join(data, "responses.npy"))
    sizes = np.load(os.path.join(data, "client_sizes.npy")).astype(np.int64)
    assert X.shape == (int(sizes.sum()), int(manifest["d"]))
    theta = np.load(init).astype(np.float64)  # k × d
    k = theta.shape[0]
    M = sizes.shape[0]
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    inv_n = np.repeat(1.0 / sizes, sizes)  # 1/n_i per sample
    for _ in range(rounds):
        R = X @ theta.T - y[:, None]  # N × k residuals
        loss = np.add.reduceat(R * R, starts, axis=0)  # M × k
        z = np.argmin(loss, axis=1)
        zs = np.repeat(z, sizes)
        # Each sample's residual on its client's chosen model, divided by n_i, in that model's
        # column: the whole gradient step is one product Xᵀ W (no copies of X).
        W = np.zeros_like(R)
        rows = np.arange(R.shape[0])
        W[rows, zs] = R[rows, zs] * inv_n
        theta = theta - (gamma / M) * (X.T @ W).T
    np.save(out, theta)


if __name__ == "__main__":
    main()
