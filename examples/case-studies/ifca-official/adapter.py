#!/usr/bin/env python3
"""Drive the IFCA authors' synthetic code (``synthetic/train_cluster.py`` of jichan3751/ifca) on a
fedmix dataset from fedmix's initial models, and record its trajectory for ``fedmix validate``.

What is theirs: ``TrainCluster.setup`` / ``TrainCluster.train`` (one official iteration: every
machine's MSE loss and gradient at every model, ``score = "set"`` → ``np.argmin`` of the losses,
``weight -= lr · (1/m) Σ_i s_ij ∇MSE_i``; IFCA Algorithm 2, option I, in the released code's
conventions), ``SimpleLinear`` (bias-free ``torch.nn.Linear``), ``torch.nn.MSELoss`` and float32.

What the adapter does: builds their ``dataset`` dict from the fedmix files (float32, as their
generator makes it), calls ``setup(dataset=...)`` and their ``initialize_weights`` (which draws the
official Bernoulli start), then overwrites each model's weight with row ``j`` of fedmix's
``init.npy`` (exactly representable: fedmix's ``ifca-official`` start is ``Bernoulli(½)^d`` too),
and calls ``train(lr)`` once per round. The cluster choices are read, not recomputed: the module's
``gradient_update(scores, grads)`` is wrapped so that the 0/1 ``scores`` their ``train`` passes
for each model are recorded before the original function runs.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import load_dataset, save_trajectory  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", required=True, help="the checked-out repository's synthetic/ folder")
    ap.add_argument("--data", required=True)
    ap.add_argument("--init", required=True, help="k × d (or 1 × k × d) float64 .npy")
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    import torch

    sys.path.insert(0, os.path.abspath(a.code))
    saved_argv, sys.argv = sys.argv, [sys.argv[0]]  # train_cluster parses sys.argv on import
    import train_cluster as tc

    sys.argv = saved_argv

    X_list, y_list, theta_star, _ = load_dataset(a.data)
    init = np.load(a.init)
    if init.ndim == 3:
        init = init[0]
    k, d = init.shape
    m, n = len(X_list), X_list[0].shape[0]
    dataset = {
        "data": [
            (torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32))
            for X, y in zip(X_list, y_list)
        ],
        "params": [torch.tensor(t, dtype=torch.float32) for t in theta_star],
    }
    config = {"m": m, "p": k, "n": n, "d": d, "score": "set", "lr": a.lr,
              "num_epochs": a.rounds, "train_seed": 0, "project_dir": a.out,
              "dataset_dir": a.out}
    exp = tc.TrainCluster(config)
    exp.setup(dataset=dataset)
    exp.initialize_weights()
    for j in range(k):
        exp.models[j].weight().data = torch.tensor(init[j][None, :], dtype=torch.float32)

    recorded = []
    original = tc.gradient_update

    def recording_gradient_update(scores, grads):
        recorded.append(list(scores))
        return original(scores, grads)

    tc.gradient_update = recording_gradient_update
    iterates, labels = [], []
    for _ in range(a.rounds):
        recorded.clear()
        exp.train(lr=a.lr)
        scores = np.array(recorded, dtype=np.float64)  # k × m, model p_i's scores in call order
        if scores.shape != (k, m) or not (scores.sum(axis=0) == 1).all():
            raise RuntimeError(f"unexpected scores {scores.shape}")
        labels.append(np.argmax(scores, axis=0))
        iterates.append(np.stack([exp.models[j].weight().data.double().numpy()[0]
                                  for j in range(k)]))
    save_trajectory(a.out, iterates, labels, {
        "candidate": "jichan3751/ifca synthetic/train_cluster.py", "lr": a.lr,
        "rounds": a.rounds, "dtype": "float32", "score": "set"})


if __name__ == "__main__":
    main()
