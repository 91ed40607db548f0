#!/usr/bin/env python3
"""Drive inflorescence's Flower IFCA (``inflorescence/strategy/ifca.py``: ``IFCA.aggregate_fit``;
``inflorescence/client/ifca_client.py``: ``IFCAClient.fit`` / ``evaluate``) on a fedmix dataset,
from fedmix's initial models and participation schedule, and record its trajectory for
``fedmix validate``.

What is theirs: the client's cluster choice (``evaluate``: loss of every cluster model on the
client's evaluation data, ``np.argmin``), its local training of the chosen model (``fit``), and the
server's per-cluster aggregation (``aggregate_fit``: Flower's ``aggregate``, an average weighted
by ``num_examples``; a cluster no participant chose is set back to ``initial_parameters``).

What the adapter supplies, as any user of the framework must:
- the model, behind inflorescence's ``Model`` interface: bias-free linear, loss the mean squared
  error ``(1/n)‖Xθ − y‖²`` (no ½, as Keras' ``"mse"``), ``fit`` = ``epochs`` full-batch gradient
  steps ``θ ← θ − lr·(2/n)Xᵀ(Xθ − y)`` (the adapter requires ``batch_size ≥ n``);
- the evaluation data = the training data (fedmix clients have one sample set; IFCA Algorithm 2
  line 6 chooses on the client's own data);
- the rounds: instead of Flower's simulation engine (which samples clients itself), round ``t``
  calls ``IFCAClient.fit`` on the participants of fedmix's schedule and passes the results to
  ``IFCA.aggregate_fit``; every client's choice of the round is ``IFCAClient.evaluate`` on the
  models broadcast at its start (what Flower's evaluate round computes).
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import load_dataset, save_trajectory  # noqa: E402


class LinearMSE:
    """A bias-free linear model with inflorescence's ``Model`` methods (squared loss)."""

    def __init__(self, d, lr):
        self.theta = np.zeros(d)
        self.lr = lr

    def fit(self, X, y, epochs, batch_size, verbose=0):
        if batch_size < len(y):
            raise ValueError("this model runs full-batch gradient descent only")
        for _ in range(epochs):
            self.theta = self.theta - self.lr * (2.0 / len(y)) * (X.T @ (X @ self.theta - y))

    def evaluate(self, X, y):
        r = X @ self.theta - y
        return float(r @ r) / len(y), {}

    def get_weights(self):
        return [self.theta.copy()]

    def set_weights(self, weights):
        self.theta = np.array(weights[0], dtype=np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", required=True, help="the checked-out repository")
    ap.add_argument("--data", required=True)
    ap.add_argument("--init", required=True, help="k × d float64 .npy")
    ap.add_argument("--participation", help="rounds × M 0/1 int64 .npy (default: every client)")
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    sys.path.insert(0, os.path.abspath(a.code))
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
    from inflorescence.client.ifca_client import IFCAClient
    from inflorescence.strategy.ifca import IFCA

    X_list, y_list, _, _ = load_dataset(a.data)
    init = np.load(a.init)
    if init.ndim == 3:
        init = init[0]
    k, d = init.shape
    m = len(X_list)
    part = np.ones((a.rounds, m), dtype=np.int64)
    if a.participation:
        part = np.load(a.participation)
        part = part[0] if part.ndim == 3 else part
    clients = [IFCAClient(LinearMSE, str(i), X, y, X, y, a.epochs, len(y), d, a.lr)
               for i, (X, y) in enumerate(zip(X_list, y_list))]
    strategy = IFCA(k_clusters=k, initial_parameters=ndarrays_to_parameters(list(init)))
    params = list(init)
    iterates, labels = [], []
    for t in range(a.rounds):
        labels.append([int(c.evaluate(params, {})[2]["cluster"]) for c in clients])
        results = []
        for i in np.flatnonzero(part[t]):
            weights, num_examples, metrics = clients[i].fit(params, {})
            res = FitRes(status=Status(code=Code.OK, message=""),
                         parameters=ndarrays_to_parameters(weights),
                         num_examples=num_examples, metrics=metrics)
            results.append((None, res))
        aggregated, _ = strategy.aggregate_fit(t + 1, results, [])
        params = parameters_to_ndarrays(aggregated)
        iterates.append(np.stack(params))
    save_trajectory(a.out, iterates, labels, {
        "candidate": "alexkyllo/inflorescence IFCA strategy + IFCAClient", "lr": a.lr,
        "epochs": a.epochs, "rounds": a.rounds, "participation": a.participation,
        "model": "bias-free linear, MSE (1/n)||X theta - y||^2, full-batch GD"})


if __name__ == "__main__":
    main()
