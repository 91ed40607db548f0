#!/usr/bin/env python3
"""Drive fl-sim's IFCA (``fl_sim/algorithms/ifca/_ifca.py``: ``IFCAServer``, ``IFCAClient``) on a
fedmix dataset, from fedmix's initial models (and, optionally, participation schedule), and record
its trajectory for ``fedmix validate``.

What is theirs: the whole federated loop (``Server.train_federated``, ``fl_sim/nodes.py``), the
client's cluster choice (``IFCAClient.update``: the loss of every broadcast centre on the client's
training data, ``min(losses, key=losses.get)``), its local training of the chosen centre
(``FedAvgClient.train``: ``num_epochs`` passes over the client's ``DataLoader`` with
``torch.optim.SGD``), and the server's update (``IFCAServer.update``: each centre plus the average
of the deltas of the participants that chose it; a centre no participant chose is kept).

What the adapter supplies, as any user of the framework must:
- the data, behind fl-sim's ``FedDataset`` interface: client ``i``'s rows of the fedmix dataset as
  its training set (no validation part), one batch of all its samples (``batch_size ≥ n_i``, so
  an epoch is one full-batch gradient step); the criterion ``torch.nn.MSELoss`` — the squared loss
  ``(1/n)‖Xθ − y‖²`` — also as the ``loss`` that ``evaluate`` reports (what the choice compares);
- the model: ``torch.nn.Linear(d, 1, bias=False)`` in float64;
- the initial centres: ``IFCAServer._post_init`` starts every centre as a copy of the one model;
  the adapter sets centre ``j`` to fedmix's ``θ_0[j]`` after construction (driving, not a patch),
  or, with ``--own-start``, keeps fl-sim's start and writes it as ``init.npy`` for ``validate``;
- the participants (only with ``--participation``): the server's ``_sample_clients`` is replaced
  on the instance by fedmix's schedule for the round; without it, fl-sim samples
  ``clients_sample_ratio = 1``, i.e. every client (in an order drawn by ``np.random.choice``);
- the recording: the server's ``update`` is wrapped on the instance to copy the centres after each
  round and every participant's ``cluster_id`` (its choice at the centres broadcast at the round's
  start). fl-sim's clients choose only when they take part, so labels are written only when every
  client takes part in every round.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import load_dataset, save_trajectory  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", required=True, help="the checked-out repository")
    ap.add_argument("--data", required=True)
    ap.add_argument("--init", required=True, help="k × d float64 .npy (with --own-start: only k is read)")
    ap.add_argument("--own-start", action="store_true",
                    help="keep fl-sim's own start (every centre a copy of the model) and write it as init.npy")
    ap.add_argument("--participation", help="rounds × M 0/1 int64 .npy (default: every client)")
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0, help="fl-sim's own seed (set_seed)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    sys.path.insert(0, os.path.abspath(a.code))
    import torch
    import torch.utils.data as torchdata
    from fl_sim.algorithms.ifca import IFCAClientConfig, IFCAServer, IFCAServerConfig
    from fl_sim.data_processing.fed_dataset import FedDataset

    X_list, y_list, _, _ = load_dataset(a.data)
    init = np.load(a.init)
    if init.ndim == 3:
        init = init[0]
    k, d = init.shape
    m = len(X_list)
    n_max = max(len(y) for y in y_list)
    part = None
    if a.participation:
        part = np.load(a.participation)
        part = part[0] if part.ndim == 3 else part

    class FedmixRegression(FedDataset):
        """A fedmix dataset as an fl-sim ``FedDataset``: squared loss, training part only."""

        __name__ = "FedmixRegression"

        def __init__(self):
            self.datadir = None
            self._preload()

        def _preload(self, datadir=None):
            self.criterion = torch.nn.MSELoss()
            self._tensors = [
                (torch.from_numpy(X).double(), torch.from_numpy(y).double().reshape(-1, 1))
                for X, y in zip(X_list, y_list)
            ]

        def get_dataloader(self, train_bs, test_bs, client_idx=None):
            X, y = self._tensors[client_idx]
            dl = torchdata.DataLoader(torchdata.TensorDataset(X, y), batch_size=train_bs, shuffle=True)
            return dl, None

        @property
        def data_parts(self):
            return ["train"]

        def evaluate(self, probs, truths):
            return {"loss": torch.nn.functional.mse_loss(probs, truths).item()}

        def load_partition_data(self, batch_size=None):
            raise NotImplementedError

        def load_partition_data_distributed(self, process_id, batch_size=None):
            raise NotImplementedError

        @property
        def url(self):
            return ""

        @property
        def candidate_models(self):
            return {}

        @property
        def doi(self):
            return None

    logs = tempfile.mkdtemp(prefix="fl-sim-logs-")
    server_config = IFCAServerConfig(
        k, a.rounds, m, 1, log_dir=logs, txt_logger=False, json_logger=False,
        eval_every=a.rounds + 1, verbose=0, seed=a.seed)
    client_config = IFCAClientConfig(n_max, a.epochs, lr=a.lr, verbose=0)
    model = torch.nn.Linear(d, 1, bias=False).double()
    server = IFCAServer(model, FedmixRegression(), server_config, client_config)
    if a.own_start:
        init = np.stack([server._cluster_centers[j]["center_model_params"][0].detach().numpy().reshape(d).copy()
                         for j in range(k)])
        os.makedirs(a.out, exist_ok=True)
        np.save(os.path.join(a.out, "init.npy"), init)
    else:
        for j in range(k):
            server._cluster_centers[j]["center_model_params"] = [torch.from_numpy(init[j].copy()).reshape(1, d)]

    if part is not None:
        server._sample_clients = lambda *args, **kw: np.flatnonzero(part[server.n_iter]).tolist()

    iterates, labels = [], []
    update = server.update

    def recorded_update():
        participants = [msg["client_id"] for msg in server._received_messages]
        choices = np.full(m, -2, dtype=np.int64)
        for i in participants:
            choices[i] = server._clients[i].cluster_id
        update()
        iterates.append(np.stack([
            server._cluster_centers[j]["center_model_params"][0].detach().numpy().reshape(d).copy()
            for j in range(k)]))
        labels.append(choices)

    server.update = recorded_update
    server.train_federated()
    labels = np.array(labels)
    full = bool((labels >= -1).all())
    if not full:
        labels = np.zeros((len(iterates), 0), dtype=np.int64)
    save_trajectory(a.out, iterates, labels, {
        "candidate": "wenh06/fl-sim IFCAServer / IFCAClient (Server.train_federated)", "lr": a.lr,
        "epochs": a.epochs, "rounds": a.rounds, "participation": a.participation, "seed": a.seed,
        "start": "fl-sim's own (copies of one model)" if a.own_start else "fedmix's --init",
        "model": "torch.nn.Linear(d, 1, bias=False) float64, torch.nn.MSELoss, full-batch SGD",
        "labels": "every client's choice" if full else "not written (not every client chose)"})
    if not full:
        os.remove(os.path.join(a.out, "labels.npy"))


if __name__ == "__main__":
    main()
