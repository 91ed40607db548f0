"""Shared by the case-study adapters: read a fedmix dataset directory, write a trajectory.

The dataset format and the trajectory format are those of docs/validating.md §1 and §3:
``iterates.npy`` (rounds × k × d float64, the models after each round, θ₀ excluded; NaN in the
slots beyond a round's models) and ``labels.npy`` (rounds × M int64, the cluster each client chose
in that round from the models broadcast at its start; −1 for a client in no cluster).
"""

import json
import os

import numpy as np


def load_dataset(path):
    """``(X_list, y_list, theta_star or None, manifest)`` of a fedmix dataset directory."""
    with open(os.path.join(path, "manifest.json")) as f:
        manifest = json.load(f)
    X = np.load(os.path.join(path, "features.npy"))
    y = np.load(os.path.join(path, "responses.npy"))
    sizes = np.load(os.path.join(path, "client_sizes.npy")).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X_list = [X[offsets[i] : offsets[i + 1]] for i in range(len(sizes))]
    y_list = [y[offsets[i] : offsets[i + 1]] for i in range(len(sizes))]
    ts = os.path.join(path, "theta_star.npy")
    theta_star = np.load(ts) if os.path.exists(ts) else None
    return X_list, y_list, theta_star, manifest


def save_trajectory(out, iterates, labels, meta):
    """Write ``iterates.npy``, ``labels.npy`` and ``candidate.json`` (how the run was driven).

    Refuses a non-finite label and any label below −1: the files must say what the candidate did.
    """
    os.makedirs(out, exist_ok=True)
    iterates = np.asarray(iterates, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if iterates.ndim != 3 or labels.ndim != 2 or labels.shape[0] != iterates.shape[0]:
        raise ValueError(f"shapes: iterates {iterates.shape}, labels {labels.shape}")
    if not (labels >= -1).all():
        raise ValueError("a label below -1")
    np.save(os.path.join(out, "iterates.npy"), iterates)
    np.save(os.path.join(out, "labels.npy"), labels)
    with open(os.path.join(out, "candidate.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
