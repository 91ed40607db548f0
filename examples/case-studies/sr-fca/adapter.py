#!/usr/bin/env python3
"""Drive the SR-FCA authors' code (``src/clustering/sr_fca.py`` of harshv834/sr-fca, its synthetic
linear path) on a fedmix dataset at their released configuration
(``configs/clustering/sr_fca/synthetic/best_hp.yaml``), and record what it does in the trajectory
format ``fedmix validate`` reads for ``sr-fca``.

What is theirs: ``SRFCA`` (``init`` = ONE_SHOT: every client trains its own ``OneLayer`` model,
started at ``Bernoulli(½)^d``, with Adam for ``init.iterations`` mini-batch steps; pairwise
Euclidean distances; ``correlation_clustering`` with a random pivot; ``refine`` = per cluster
``ClusterTrainer.train``: ``refine.rounds`` FedAvg rounds on ``num_clients_per_round`` sampled
members with ``refine.local_iter`` local Adam steps and a coordinate-wise trimmed mean, then
``recluster`` and ``dist_clustering(merge=True)``), their ``Client`` data loaders (batch 50,
shuffled), ``MSELoss``, float32 and their seeding (``set_seeds``: random, numpy, torch).

What the adapter does: replaces their data generator by the fedmix dataset (train and test set
both = the client's fedmix samples; fedmix datasets have one set), sets ``path`` to a scratch
directory, and records (by wrapping ``ClusterTrainer.average_model`` and reading ``cluster_map``)
- row 1: ONE_SHOT — each cluster's mean local model, labels = the ONE_SHOT clusters;
- rows 2…R+1: the cluster models after each REFINE round (R = ``refine.rounds``);
- row R+2: after RECLUSTER and MERGE: their code forms the merged clusters but computes no model
  for them (the next REFINE step, if any, trains from a fresh start), so the row holds NaN models
  (it can never match) and the merged clusters as labels.
Clusters are numbered by their smallest member (fedmix's convention; the authors' numbering
follows random pivots), which relabels but changes nothing.
"""

import argparse
import json
import os
import sys
import tempfile
from time import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import load_dataset, save_trajectory  # noqa: E402


def ordered(cluster_map):
    """The clusters (lists of client ids) of ``cluster_map``, numbered by smallest member."""
    return sorted((sorted(v) for v in cluster_map.values() if len(v) > 0), key=lambda c: c[0])


def labels_of(clusters, m):
    lab = -np.ones(m, dtype=np.int64)
    for c, members in enumerate(clusters):
        lab[members] = c
    return lab


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", required=True, help="the patched checkout of harshv834/sr-fca")
    ap.add_argument("--data", required=True)
    ap.add_argument("--seed", type=int, default=42, help="their --seed (run.py's default: 42)")
    ap.add_argument("--set", action="append", default=[],
                    help="override a best_hp.yaml key, JSON value: refine.rounds=20")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    a.data, a.out = os.path.abspath(a.data), os.path.abspath(a.out)

    code = os.path.abspath(a.code)
    sys.path.insert(0, code)
    os.chdir(code)  # their config paths are relative to the repository
    import torch
    import src.trainers as trainers
    from src.clustering.sr_fca import SRFCA
    from src.datasets.client import Client
    from src.utils import set_seeds

    X_list, y_list, _, manifest = load_dataset(a.data)
    m, d = len(X_list), X_list[0].shape[1]
    n = X_list[0].shape[0]
    scratch = tempfile.mkdtemp(prefix="srfca-")
    data_config = {
        "seed": a.seed, "dataset": {"name": "synthetic", "num_clusters": 2, "dimension": d,
                                     "num_samples": {"train": n, "test": n},
                                     "noise_scale": 0.001, "scale": 1},
        "num_clients": m, "batch": {"train": 50, "test": 512}, "clustering": "sr_fca",
        "path": {"data": scratch, "results": scratch}, "time": {"t0": time()},
    }
    set_seeds(a.seed)  # as their FLDataset does before creating the clients
    data_config["time"]["tdataset"] = time()
    client_dict = {
        i: Client(data_config, ((X.astype("float32"), y), (X.astype("float32"), y)), i)
        for i, (X, y) in enumerate(zip(X_list, y_list))
    }
    algo = SRFCA(data_config, tune=False)  # reads best_hp.yaml, builds the ClientTrainers
    for kv in a.set:
        key, value = kv.split("=", 1)
        node = algo.config
        *parents, leaf = key.split(".")
        for p in parents:
            node = node[p]
        node[leaf] = json.loads(value)
    cfg = algo.config
    refine_rounds = cfg["refine"]["rounds"]

    trained = {}  # cluster trainer id -> list of d-vectors, one per REFINE round
    original = trainers.ClusterTrainer.average_model

    def recording_average_model(self, client_trainers, selected_clients):
        original(self, client_trainers, selected_clients)
        w = self.get_model_wts()["fc.weight"].detach().double().cpu().numpy().reshape(-1)
        trained.setdefault(self.cluster_id, []).append(w)

    trainers.ClusterTrainer.average_model = recording_average_model

    class Experiment:
        pass

    exp = Experiment()
    exp.client_dict = client_dict
    os.makedirs(os.path.join(scratch, "init"), exist_ok=True)
    cfg["time"]["tcluster"] = time()
    algo.init(exp)
    one_shot_map = {k: list(v) for k, v in algo.cluster_map.items()}
    local = np.stack([algo.client_trainers[i].get_model_wts()["fc.weight"].double().numpy()
                      .reshape(-1) for i in range(m)])
    one_shot = ordered(one_shot_map)
    algo.refine(exp, 0)
    merged = ordered(algo.cluster_map)

    # REFINE trained the ONE_SHOT clusters in cluster_map order; map to smallest-member order
    order = sorted(one_shot_map, key=lambda c: min(one_shot_map[c]))
    kmax = max(len(one_shot), len(merged))
    rows, labels = [], []
    row = np.full((kmax, d), np.nan)
    for c, members in enumerate(one_shot):
        row[c] = local[members].mean(axis=0)
    rows.append(row)
    labels.append(labels_of(one_shot, m))
    for r in range(refine_rounds):
        row = np.full((kmax, d), np.nan)
        for c, cid in enumerate(order):
            row[c] = trained[cid][r]
        rows.append(row)
        labels.append(labels_of(one_shot, m))
    rows.append(np.full((kmax, d), np.nan))
    labels.append(labels_of(merged, m))

    dists = [np.linalg.norm(local[i] - local[j]) for i in range(m) for j in range(i + 1, m)]
    lp = os.path.join(a.data, "labels.npy")
    truth = np.load(lp).tolist() if os.path.exists(lp) else None
    save_trajectory(a.out, rows, labels, {
        "candidate": "harshv834/sr-fca src/clustering/sr_fca.py (SRFCA)", "seed": a.seed,
        "overrides": a.set, "config": {k: cfg[k] for k in (
            "dist_threshold", "size_threshold", "beta", "init", "refine",
            "num_clients_per_round", "optimizer", "num_refine_steps")},
        "one_shot_clusters": one_shot, "after_merge_clusters": merged,
        "one_shot_distances": {"min": float(np.min(dists)), "median": float(np.median(dists)),
                               "max": float(np.max(dists))},
        "true_labels": truth,
    })
    print(json.dumps({"one_shot": one_shot, "merged": merged}))


if __name__ == "__main__":
    main()
