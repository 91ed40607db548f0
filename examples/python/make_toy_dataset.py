#!/usr/bin/env python3
"""Write a tiny synthetic mixed-linear-regression federation in the fedmix dataset format.

This lets the numpy example and its tests run without the Rust binary.  It is *not* one of
fedmix's seeded settings (its random numbers come from numpy, not from fedmix's ChaCha8 streams);
the manifest therefore describes external data (``setting``/``seed``/``parameters`` null), which
``fedmix run --data`` accepts as well.

Model (SXY22 eq. 1 with identity features): ``z_i`` uniform on ``0..k-1``,
``θ*_j ~ N(0, I_d/d)``, ``x ~ N(0, I_d)``, ``y = xᵀθ*_{z_i} + σ N(0, 1)``; client sizes ``n_i``
uniform on ``[n_min, n_max]``.  The ``1/√d`` scale of θ* is a choice (it makes ``‖θ*_j‖ ≈ 1``):
SXY22 App. C draws θ* from a scaled ``N(0, 1)`` whose scale factor is illegible in the extracted
text; fedmix's ``sxy-*`` settings make the same choice.

Usage::

    python3 make_toy_dataset.py --out /tmp/toy [--k 3 --d 5 --clients 20 --n-min 5 --n-max 15
                                                --sigma 0.1 --seed 0 --init-out /tmp/toy_theta0.npy]

With ``--init-out`` it also writes a ``k × d`` initial model ``θ*_j + 0.3·N(0, I_d/d)`` (a warm
start in Phase 2's basin, like the output of Phase 1).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from fedmix_numpy import write_dataset


def make_toy(k=3, d=5, clients=20, n_min=5, n_max=15, sigma=0.1, seed=0):
    """Return ``(X_list, y_list, labels, theta_star)`` for a small federation."""
    rng = np.random.default_rng(seed)
    theta_star = rng.standard_normal((k, d)) / np.sqrt(d)
    labels = np.arange(clients, dtype=np.int64) % k  # every cluster non-empty
    rng.shuffle(labels)
    sizes = rng.integers(n_min, n_max + 1, size=clients)
    X_list, y_list = [], []
    for i in range(clients):
        X = rng.standard_normal((sizes[i], d))
        y = X @ theta_star[labels[i]] + sigma * rng.standard_normal(sizes[i])
        X_list.append(X)
        y_list.append(y)
    return X_list, y_list, labels, theta_star


def warm_start(theta_star, scale=0.3, seed=1):
    """``θ*_j + scale · N(0, I_d/d)`` for every j."""
    rng = np.random.default_rng(seed)
    k, d = theta_star.shape
    return theta_star + scale * rng.standard_normal((k, d)) / np.sqrt(d)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--d", type=int, default=5)
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--n-min", type=int, default=5)
    p.add_argument("--n-max", type=int, default=15)
    p.add_argument("--sigma", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--init-out", help="also write a k × d warm-start theta0 .npy here")
    a = p.parse_args(argv)
    X_list, y_list, labels, theta_star = make_toy(a.k, a.d, a.clients, a.n_min, a.n_max, a.sigma, a.seed)
    write_dataset(a.out, X_list, y_list, labels=labels, theta_star=theta_star, k=a.k)
    print(f"wrote {a.out}: k={a.k}, d={a.d}, M={a.clients}, N={sum(len(y) for y in y_list)}")
    if a.init_out:
        np.save(a.init_out, warm_start(theta_star, seed=a.seed + 1))
        print(f"wrote {a.init_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
