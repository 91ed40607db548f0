#!/usr/bin/env python3
"""An independent numpy implementation of Phase 2 (FedAvg/FedProx + clustering) and of IFCA.

Written from SXY22 (Su, Xu, Yang, NeurIPS 2022: §4.2, the Phase 2 pseudocode and eq. 8; Lemma 1,
eq. 11, for its closed form) and from IFCA's Algorithm 2 (Ghosh, Chung, Yin, Ramchandran,
NeurIPS 2020), **not** translated from the Rust code, so that the two implementations can be
compared round by round with ``fedmix validate``.

Model (SXY22 eq. 1): client ``i`` holds ``X_i`` (``n_i × d``, row ``l`` is ``φ(x_il)``) and ``y_i``
(``n_i``); there are ``k`` models ``θ_1..θ_k`` (stored as the rows of a ``k × d`` array).

Local loss (SXY22 §4.2's square loss ``L(θ, λ; D_i)`` with the one-hot ``λ`` of eq. 8):
``L_i(θ) = (1/(2 n_i)) ‖y_i − X_i θ‖²``,
gradient ``∇L_i(θ) = (1/n_i) X_iᵀ (X_i θ − y_i)``.  IFCA's ``F_i`` is taken to be the same function
(see "Ambiguities" below).

Phase 2 (SXY22 §4.2, Phase 2 pseudocode with the cluster estimate of eq. 8), one round, given
``θ = θ_{t−1}``::

    every client i:  z_i = argmin_j ‖y_i − X_i θ_j‖²            (ties → lowest j)
                     θ_{i,z_i} = FedAvg: G_i^s(θ_{z_i}),  G_i(θ) = θ − (η/n_i) X_iᵀ(X_i θ − y_i)
                                 FedProx: (I + (η/n_i) X_iᵀX_i)⁻¹ (θ_{z_i} + (η/n_i) X_iᵀ y_i)
                     θ_{i,j}   = θ_j  for j ≠ z_i
    PS:              θ_j ← Σ_i (n_i/N) θ_{i,j}     over ALL clients, for every j

IFCA (Ghosh et al., Algorithm 2), one round ``t`` with participating clients ``M_t``::

    every i ∈ M_t:   z_i = argmin_j F_i(θ_j)                       (ties → lowest j)
    option I  (gradient averaging):
        θ_j ← θ_j − (γ/|M_t|) Σ_{i ∈ M_t, z_i = j} ∇F_i(θ_j)
    option II (model averaging):
        client i runs τ GD steps θ ← θ − γ ∇F_i(θ) from θ_{z_i} and returns θ̃_i
        θ_j ← (Σ_{i ∈ M_t, z_i = j} θ̃_i) / |{i ∈ M_t : z_i = j}|   (a model nobody chose stays put)

Ambiguities and the choices made here (keep in sync with README.md in this folder)
-------------------------------------------------------------------------------
1. **Tie-breaking of the cluster estimate.**  Decision: ties go to the lowest index.  SXY22
   eq. 8 and IFCA's Algorithm 2 (line 6) take an argmin without a tie rule, and IFCA's text
   (§4.2) says "ties can be broken arbitrarily" (OCR of ghosh-et-al-2020-ifca, line 281); a
   fixed rule makes the labels deterministic, so two implementations can be compared round by
   round.  We use ``numpy.argmin`` (first minimum = lowest j).  The compared quantity is the
   plain sum of squared residuals ``‖y_i − X_i θ_j‖²`` (computed as ``r @ r``); it has the same
   argmin as ``F_i`` but ``F_i = ‖r‖²/(2 n_i)`` rounded can turn a strict 1-ulp difference into
   a tie, so near-exact ties may be resolved differently by an implementation that compares
   ``F_i``.
2. **Scale of F_i in IFCA.**  The paper defines ``F_i`` as the empirical average of a loss ``f``;
   for linear regression it uses the squared loss without the ``1/2``,
   ``f(θ; x, y) = (y − ⟨x, θ⟩)²`` (IFCA §5.1; OCR line 368), i.e.
   ``F_i(θ) = (1/n_i) Σ_l (y_il − x_ilᵀθ)²``.  Decision: we use
   ``F_i(θ) = (1/(2 n_i)) ‖y_i − X_i θ‖²``, so that ``∇F_i`` equals Phase 2's ``∇L_i`` (SXY22
   §4.2's square loss) and IFCA and Phase 2 share one loss and one gradient.  Consequence: the
   paper's ``F_i`` is twice ours, so every gradient is halved here, and a step γ with the
   paper's loss equals a step 2γ with ours (to reproduce a paper step γ, pass 2γ).
3. **Normaliser of option I under partial participation.**  The OCR of Algorithm 2, line 14
   (OCR text line 262: ``Hj(.tﬂ) =gl 2 > ien, Siigis``, with the fraction's stray ``j m`` on
   line 264) reads ``θ_j^{(t+1)} = θ_j^{(t)} − (γ/m) Σ_{i∈M_t} s_{i,j} g_i`` with ``m`` the
   number of machines.  Decision: divide by ``|M_t|``, the number of participating clients in
   that round (fedmix's separate ``ifca-official`` mode keeps the division by ``m``).  Reason:
   with full participation (the default, and the setting of IFCA's analysis in §5 and of its
   experiments in §6.1) the two coincide; under partial participation ``|M_t|`` keeps the step
   an average over the participating clients, so its size does not shrink with the
   participation fraction.  With ``|M_t| = 0`` nothing moves.
4. **Option II average: uniform, not weighted by n_i.**  Algorithm 2 line 15 (OCR text line 265:
   ``it — > ien, Siiti) D i, Sigy``) reads ``θ_j^{(t+1)} = Σ_{i∈M_t} s_{i,j} θ̃_i / Σ_{i∈M_t} s_{i,j}``,
   i.e. the uniform average over the clients that chose ``j``, and the text (OCR lines 293–294:
   "The center machine then averages the new models from the worker machines whose cluster
   identity estimates are the same") agrees.  We use the uniform average, computed as the sum in
   client order divided by the count.  (Phase 2, in contrast, weights by ``n_i/N`` over all
   clients.)
5. **Option II with nobody in cluster j.**  The paper's formula is 0/0.  Decision: the model
   stays put, since no client returned a model for it (Phase 2 likewise keeps, in exact
   arithmetic, a model that no client chose).  Option I needs no rule: the sum is empty.
6. **Local steps in option II.**  ``LocalUpdate(θ, γ, τ)`` (Algorithm 2 lines 18–21) is τ steps of
   (stochastic) gradient descent; we use full-batch GD on ``F_i`` with step γ (no mini-batches),
   which is what "(stochastic)" reduces to for deterministic comparison.  Option I ignores τ.
7. **Labels of non-participating clients** (IFCA with a participation schedule): a client not in
   ``M_t`` makes no cluster estimate in round ``t`` and contributes nothing to the update.  What to
   *record* for it is a file-format convention, not mathematics.  Default: the cluster it would
   pick, ``argmin_j ‖y_i − X_i θ_j‖²`` at the models broadcast in round ``t`` (so ``labels[t]`` is
   always a full assignment).  This is what ``fedmix run --save-iterates`` writes to
   ``iterate_labels.npy`` (observed from its output with ``participation=0.5``: 0 mismatches in
   20 rounds × 60 clients, both options).  ``mask_nonparticipants=True`` (CLI
   ``--mask-nonparticipants``) records ``-1`` instead.
8. **Restarts** (IFCA §6: random initialisation with a few restarts; fedmix runs R random
   restarts and reports the one with the lowest final training loss, since a user cannot select
   by distance to the unknown θ*): this module runs one trajectory from the given ``theta0``;
   compare against a reference run with one restart and the same ``--init``.
9. **Phase 2 aggregation is taken literally**: ``θ_j ← Σ_i (n_i/N) θ_{i,j}`` summed over all ``M``
   clients in client order, including the unchanged copies ``θ_{i,j} = θ_j`` of clients that did
   not pick ``j``.  This equals ``θ_j + Σ_{i: z_i=j} (n_i/N)(θ_{i,j} − θ_j)`` in exact arithmetic;
   the two differ by rounding only (~1e-16 relative).
10. **FedProx solve**: ``numpy.linalg.solve`` (LU with partial pivoting) on the SPD system
    ``(I + (η/n_i) X_iᵀX_i) θ = θ_prev + (η/n_i) X_iᵀ y_i``; any backward-stable solver agrees to
    ~cond·1e-16.
11. **Iterates** are the models *after* each round: ``iterates[t]`` is ``θ_{t+1}`` (the initial
    models are not included); ``labels[t, i]`` is the cluster client ``i`` picked *in* round ``t``
    (computed from ``iterates[t−1]``, or from ``theta0`` when ``t = 0``).

Precision: everything runs in float64 unless ``dtype=np.float32`` (CLI ``--float32``), in which case
data, models and step coefficients are cast to float32 first and results are written as float64.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

__all__ = [
    "Dataset",
    "load_dataset",
    "write_dataset",
    "assign_clusters",
    "fedavg_local",
    "fedprox_system",
    "fedprox_local",
    "phase2",
    "ifca",
    "main",
]


# --------------------------------------------------------------------------------------------
# Dataset format (fedmix dataset directory, format version 1)
# --------------------------------------------------------------------------------------------


@dataclass
class Dataset:
    """A fedmix dataset split per client."""

    X_list: List[np.ndarray]  # M arrays, (n_i, d) float64
    y_list: List[np.ndarray]  # M arrays, (n_i,) float64
    sizes: np.ndarray  # (M,) int64
    labels: Optional[np.ndarray]  # (M,) int64 true clusters, or None
    theta_star: Optional[np.ndarray]  # (k, d) float64, or None
    manifest: dict


def load_dataset(path: str) -> Dataset:
    """Read a fedmix dataset directory.

    Files: ``manifest.json``; ``features.npy`` (N × d ``<f8``, C order, clients stacked in order);
    ``responses.npy`` (N ``<f8``); ``client_sizes.npy`` (M ``<i8``); optional ``labels.npy``
    (M ``<i8``) and ``theta_star.npy`` (k × d ``<f8``), present when the manifest says so.
    """
    with open(os.path.join(path, "manifest.json")) as f:
        manifest = json.load(f)
    if manifest.get("format") != "fedmix-dataset":
        raise ValueError(f"{path}: not a fedmix dataset (format={manifest.get('format')!r})")
    X = np.load(os.path.join(path, "features.npy"))
    y = np.load(os.path.join(path, "responses.npy"))
    sizes = np.load(os.path.join(path, "client_sizes.npy")).astype(np.int64)
    d, M = int(manifest["d"]), int(manifest["clients"])
    N = int(sizes.sum())
    if X.shape != (N, d) or y.shape != (N,) or sizes.shape != (M,):
        raise ValueError(
            f"{path}: shapes X{X.shape} y{y.shape} sizes{sizes.shape} disagree with d={d}, M={M}, N={N}"
        )
    if list(sizes) != list(manifest["sizes"]):
        raise ValueError(f"{path}: client_sizes.npy disagrees with the manifest")
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X_list = [np.ascontiguousarray(X[offsets[i] : offsets[i + 1]]) for i in range(M)]
    y_list = [np.ascontiguousarray(y[offsets[i] : offsets[i + 1]]) for i in range(M)]
    labels = None
    theta_star = None
    if manifest.get("has_labels") and os.path.exists(os.path.join(path, "labels.npy")):
        labels = np.load(os.path.join(path, "labels.npy")).astype(np.int64)
    if manifest.get("has_theta_star") and os.path.exists(os.path.join(path, "theta_star.npy")):
        theta_star = np.load(os.path.join(path, "theta_star.npy"))
    return Dataset(X_list, y_list, sizes, labels, theta_star, manifest)


def write_dataset(
    path: str,
    X_list: Sequence[np.ndarray],
    y_list: Sequence[np.ndarray],
    labels: Optional[np.ndarray] = None,
    theta_star: Optional[np.ndarray] = None,
    k: Optional[int] = None,
) -> None:
    """Write a dataset directory in fedmix format version 1 (readable by ``fedmix run --data``).

    The manifest describes external data (``setting``, ``seed`` and ``parameters`` are null), and
    it is written last, as fedmix does.
    """
    os.makedirs(path, exist_ok=True)
    sizes = [int(len(y)) for y in y_list]
    X = np.ascontiguousarray(np.concatenate(X_list, axis=0), dtype="<f8")
    y = np.ascontiguousarray(np.concatenate(y_list), dtype="<f8")
    d = X.shape[1]
    if k is None and theta_star is not None:
        k = int(theta_star.shape[0])
    if k is None and labels is not None:
        k = int(np.max(labels)) + 1
    np.save(os.path.join(path, "features.npy"), X)
    np.save(os.path.join(path, "responses.npy"), y)
    np.save(os.path.join(path, "client_sizes.npy"), np.asarray(sizes, dtype="<i8"))
    if labels is not None:
        np.save(os.path.join(path, "labels.npy"), np.asarray(labels, dtype="<i8"))
    if theta_star is not None:
        np.save(os.path.join(path, "theta_star.npy"), np.ascontiguousarray(theta_star, dtype="<f8"))
    manifest = {
        "format": "fedmix-dataset",
        "format_version": 1,
        "setting": None,
        "seed": None,
        "k": k,
        "d": int(d),
        "clients": len(sizes),
        "total_samples": int(sum(sizes)),
        "sizes": sizes,
        "parameters": None,
        "has_labels": labels is not None,
        "has_theta_star": theta_star is not None,
        "test_sizes": None,
    }
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


def sq_residuals(X: np.ndarray, y: np.ndarray, thetas: np.ndarray) -> np.ndarray:
    """``‖y − X θ_j‖²`` for every row ``θ_j`` of ``thetas`` (k × d); returns a length-k array."""
    out = np.empty(thetas.shape[0], dtype=thetas.dtype)
    for j in range(thetas.shape[0]):
        r = y - X @ thetas[j]
        out[j] = r @ r
    return out


def assign_clusters(X_list, y_list, thetas, clients=None) -> np.ndarray:
    """Cluster estimate ``argmin_j ‖y_i − X_i θ_j‖²`` (first minimum, i.e. ties → lowest j).

    ``clients``: indices to assign (default all); the others get ``-1``.
    """
    M = len(X_list)
    z = np.full(M, -1, dtype=np.int64)
    idx = range(M) if clients is None else clients
    for i in idx:
        z[i] = int(np.argmin(sq_residuals(X_list[i], y_list[i], thetas)))
    return z


def grad(X: np.ndarray, y: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``∇L(θ) = (1/n) Xᵀ(Xθ − y)`` for ``L(θ) = (1/(2n))‖y − Xθ‖²``."""
    n = X.shape[0]
    return (X.T @ (X @ theta - y)) / theta.dtype.type(n)


def fedavg_local(X: np.ndarray, y: np.ndarray, theta: np.ndarray, eta: float, steps: int) -> np.ndarray:
    """``G^s(θ)``: ``steps`` full-batch GD steps ``θ ← θ − (η/n) Xᵀ(Xθ − y)``."""
    c = theta.dtype.type(eta / X.shape[0])
    th = theta.copy()
    for _ in range(steps):
        th = th - c * (X.T @ (X @ th - y))
    return th


def fedprox_system(X: np.ndarray, y: np.ndarray, eta: float, dtype=np.float64):
    """The constant parts of client ``i``'s proximal step: ``A = I + (η/n) XᵀX`` and ``(η/n) Xᵀy``."""
    c = dtype(eta / X.shape[0])
    A = np.eye(X.shape[1], dtype=dtype) + c * (X.T @ X)
    return A, c * (X.T @ y)


def fedprox_local(X: np.ndarray, y: np.ndarray, theta: np.ndarray, eta: float, system=None) -> np.ndarray:
    """Exact proximal step: ``argmin_θ (1/(2n))‖y − Xθ‖² + (1/(2η))‖θ − θ_prev‖²``,
    i.e. the solution of ``(I + (η/n) XᵀX) θ = θ_prev + (η/n) Xᵀy``.

    ``system``: the pair from :func:`fedprox_system` (precomputed once per client; optional).
    """
    A, b = fedprox_system(X, y, eta, theta.dtype.type) if system is None else system
    return np.linalg.solve(A, theta + b)


def _cast(X_list, y_list, theta0, dtype):
    X_list = [np.asarray(X, dtype=dtype) for X in X_list]
    y_list = [np.asarray(y, dtype=dtype) for y in y_list]
    theta = np.array(theta0, dtype=dtype, copy=True)
    if theta.ndim != 2 or theta.shape[1] != X_list[0].shape[1]:
        raise ValueError(f"theta0 must be k × d with d = {X_list[0].shape[1]}, got {theta.shape}")
    return X_list, y_list, theta


# --------------------------------------------------------------------------------------------
# Phase 2 (SXY22 §4.2)
# --------------------------------------------------------------------------------------------


def phase2(
    X_list,
    y_list,
    theta0,
    eta: float,
    local_steps: int = 1,
    local_solver: str = "fedavg",
    rounds: int = 1,
    dtype=np.float64,
    deliberately_wrong: Optional[str] = None,
):
    """Phase 2 of SXY22 (FedAvg/FedProx with hard clustering; SXY22 §4.2).

    Returns ``(iterates, labels)``: ``iterates`` is ``rounds × k × d`` (models after each round,
    float64) and ``labels`` is ``rounds × M`` int64 (the cluster each client picked in the round).
    ``local_steps`` is ignored by FedProx.

    ``deliberately_wrong="cluster-size"`` plants a known bug, for demonstrating that a validator
    catches it: the PS averages cluster ``j`` over the clients that picked it with weights
    ``n_i/N_{j,t}`` (``N_{j,t}`` = samples of those clients) instead of ``n_i/N`` over all clients,
    i.e. cluster ``j`` moves with step ``η`` instead of ``η N_{j,t}/N``.  Never use it otherwise.
    """
    if local_solver not in ("fedavg", "fedprox"):
        raise ValueError(f"local_solver must be fedavg or fedprox, got {local_solver!r}")
    X_list, y_list, theta = _cast(X_list, y_list, theta0, dtype)
    M = len(X_list)
    k, d = theta.shape
    sizes = np.array([X.shape[0] for X in X_list], dtype=np.int64)
    N = int(sizes.sum())
    w = (sizes / N).astype(dtype)  # n_i / N, computed in float64 then cast
    if local_solver == "fedprox":  # the proximal systems do not change across rounds
        systems = [fedprox_system(X, y, eta, dtype) for X, y in zip(X_list, y_list)]
    iterates = np.empty((rounds, k, d), dtype=np.float64)
    labels = np.empty((rounds, M), dtype=np.int64)
    for t in range(rounds):
        z = assign_clusters(X_list, y_list, theta)
        new = np.zeros_like(theta)
        for i in range(M):
            local = theta.copy()  # θ_{i,j} = θ_j for j ≠ z_i
            if local_solver == "fedavg":
                local[z[i]] = fedavg_local(X_list[i], y_list[i], theta[z[i]], eta, local_steps)
            else:
                local[z[i]] = fedprox_local(X_list[i], y_list[i], theta[z[i]], eta, systems[i])
            new += w[i] * local  # PS: Σ_i (n_i/N) θ_{i,·}, all clients, client order
        if deliberately_wrong == "cluster-size":
            new = theta.copy()
            for j in range(k):
                members = [i for i in range(M) if z[i] == j]
                if members:
                    Nj = sum(X_list[i].shape[0] for i in members)
                    acc = np.zeros(d, dtype=dtype)
                    for i in members:
                        step = (fedavg_local(X_list[i], y_list[i], theta[j], eta, local_steps)
                                if local_solver == "fedavg"
                                else fedprox_local(X_list[i], y_list[i], theta[j], eta, systems[i]))
                        acc += dtype(X_list[i].shape[0] / Nj) * step
                    new[j] = acc
        elif deliberately_wrong is not None:
            raise ValueError(f"unknown deliberately_wrong={deliberately_wrong!r}")
        theta = new
        iterates[t] = theta
        labels[t] = z
    return iterates, labels


# --------------------------------------------------------------------------------------------
# IFCA (Algorithm 2 of Ghosh et al. 2020)
# --------------------------------------------------------------------------------------------


def ifca(
    X_list,
    y_list,
    theta0,
    step: float,
    option: str = "gradient",
    local_steps: int = 1,
    rounds: int = 1,
    participation: Optional[np.ndarray] = None,
    dtype=np.float64,
    mask_nonparticipants: bool = False,
):
    """IFCA with gradient averaging (option I) or model averaging (option II).

    ``participation``: ``rounds × M`` 0/1 array (``participation[t, i] = 1`` iff client ``i`` is in
    ``M_t``); ``None`` means every client takes part in every round.  ``local_steps`` is τ
    (option II only).  Returns ``(iterates, labels)`` as :func:`phase2`.  A client outside ``M_t``
    is recorded with the cluster it would have picked (``-1`` if ``mask_nonparticipants``); it
    never influences the update.  See the module docstring for every ambiguity resolved.
    """
    if option not in ("gradient", "model"):
        raise ValueError(f"option must be gradient or model, got {option!r}")
    X_list, y_list, theta = _cast(X_list, y_list, theta0, dtype)
    M = len(X_list)
    k, d = theta.shape
    if participation is None:
        participation = np.ones((rounds, M), dtype=np.int64)
    participation = np.asarray(participation)
    if participation.shape != (rounds, M):
        raise ValueError(f"participation must be rounds × M = {(rounds, M)}, got {participation.shape}")
    if not np.all((participation == 0) | (participation == 1)):
        raise ValueError("participation must contain only 0 and 1")
    gamma = dtype(step)
    iterates = np.empty((rounds, k, d), dtype=np.float64)
    labels = np.empty((rounds, M), dtype=np.int64)
    for t in range(rounds):
        active = [i for i in range(M) if participation[t, i] == 1]
        # Every client's estimate is recorded; only those of clients in M_t (`active`) are used.
        z = assign_clusters(X_list, y_list, theta)
        if mask_nonparticipants:
            z[participation[t] == 0] = -1
        if option == "gradient":
            if active:
                scale = gamma / dtype(len(active))  # γ / |M_t|
                gsum = np.zeros_like(theta)
                for i in active:
                    gsum[z[i]] += grad(X_list[i], y_list[i], theta[z[i]])
                theta = theta - scale * gsum  # rows with an empty sum are unchanged
        else:
            msum = np.zeros_like(theta)
            count = np.zeros(k, dtype=np.int64)
            for i in active:
                msum[z[i]] += fedavg_local(X_list[i], y_list[i], theta[z[i]], step, local_steps)
                count[z[i]] += 1
            new = theta.copy()
            for j in range(k):
                if count[j] > 0:
                    new[j] = msum[j] / dtype(count[j])  # uniform average over the cluster's clients
            theta = new
        iterates[t] = theta
        labels[t] = z
    return iterates, labels


def ifca_official_update(X_list, y_list, theta0, lr: float, rounds: int, dtype=np.float64):
    """The update of IFCA's released synthetic code (``TrainCluster.train``, ``score = "set"``),
    written as a PyTorch port would compute it, in numpy.

    Per iteration every machine takes part; machine ``i`` picks ``argmin_j MSE_i(θ_j)`` with
    torch's ``MSELoss`` (``MSE_i(θ) = (1/n_i) ‖X_i θ − y_i‖²``, a mean **without** the ½) and
    computes ``∇MSE_i(θ_j) = (2/n_i) X_iᵀ(X_i θ_j − y_i)``; the server divides each cluster's
    gradient sum by ``m``, the number of **all** machines (``gradient_update`` divides by
    ``len(grads)``), and steps ``θ_j ← θ_j − lr · (1/m) Σ_{i: z_i = j} ∇MSE_i(θ_j)``.

    Since ``∇MSE_i = 2 ∇F_i`` for ``F_i = (1/(2n_i))‖y_i − X_i θ‖²``, this is IFCA option I with
    ``γ = 2 lr`` (the relation ``validate_against_fedmix.sh`` checks round by round).
    """
    X_list, y_list, theta = _cast(X_list, y_list, theta0, dtype)
    M = len(X_list)
    k, d = theta.shape
    iterates = np.empty((rounds, k, d), dtype=np.float64)
    labels = np.empty((rounds, M), dtype=np.int64)
    for t in range(rounds):
        mse = [np.array([np.mean((X @ theta[j] - y) ** 2) for j in range(k)])
               for X, y in zip(X_list, y_list)]
        z = np.array([int(np.argmin(l)) for l in mse], dtype=np.int64)
        gsum = np.zeros_like(theta)
        for i in range(M):
            X, y = X_list[i], y_list[i]
            gsum[z[i]] += dtype(2) * (X.T @ (X @ theta[z[i]] - y)) / dtype(X.shape[0])
        theta = theta - dtype(lr) * (gsum / dtype(M))
        iterates[t] = theta
        labels[t] = z
    return iterates, labels


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="Independent numpy Phase 2 / IFCA; writes OUT/iterates.npy and OUT/labels.npy."
    )
    p.add_argument("--data", required=True, help="fedmix dataset directory")
    p.add_argument("--algorithm", required=True, choices=["phase2", "ifca", "ifca-official-update"],
                   help="ifca-official-update: the released IFCA code's update with its learning "
                        "rate --eta = lr (fedmix reference: ifca option I with eta = 2 lr)")
    p.add_argument("--init", required=True, help="initial models, k × d float64 .npy")
    p.add_argument("--eta", "--step", dest="eta", type=float, required=True,
                   help="step size η (Phase 2) or γ (IFCA)")
    p.add_argument("--local-steps", type=int, default=1, help="s (Phase 2 FedAvg) or τ (IFCA option II)")
    p.add_argument("--local-solver", choices=["fedavg", "fedprox"], default="fedavg")
    p.add_argument("--ifca-option", "--option", dest="option", choices=["gradient", "model"], default="gradient",
                   help="IFCA option I (gradient) or II (model)")
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--participation", help="IFCA: rounds × M int64 0/1 .npy (default: all clients)")
    p.add_argument("--deliberately-wrong", choices=["cluster-size"],
                   help="Phase 2: plant a known aggregation bug (weights n_i/N_j within the cluster "
                        "instead of n_i/N over all clients) to check that a validator catches it")
    p.add_argument("--mask-nonparticipants", action="store_true",
                   help="IFCA: record -1 as the label of a client outside M_t (default: its argmin)")
    p.add_argument("--float32", action="store_true", help="compute in float32 (files stay float64)")
    p.add_argument("--out", required=True, help="output directory")
    a = p.parse_args(argv)

    ds = load_dataset(a.data)
    theta0 = np.load(a.init)
    dtype = np.float32 if a.float32 else np.float64
    if a.algorithm == "phase2":
        if a.participation:
            p.error("--participation applies to --algorithm ifca only (Phase 2 uses every client)")
        it, lab = phase2(ds.X_list, ds.y_list, theta0, a.eta, a.local_steps, a.local_solver,
                         a.rounds, dtype=dtype, deliberately_wrong=a.deliberately_wrong)
    elif a.algorithm == "ifca-official-update":
        if a.participation or a.deliberately_wrong:
            p.error("--participation and --deliberately-wrong do not apply to ifca-official-update")
        it, lab = ifca_official_update(ds.X_list, ds.y_list, theta0, a.eta, a.rounds, dtype=dtype)
    else:
        if a.deliberately_wrong:
            p.error("--deliberately-wrong applies to --algorithm phase2 only")
        part = np.load(a.participation) if a.participation else None
        it, lab = ifca(ds.X_list, ds.y_list, theta0, a.eta, a.option, a.local_steps, a.rounds,
                       part, dtype=dtype, mask_nonparticipants=a.mask_nonparticipants)
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "iterates.npy"), np.ascontiguousarray(it, dtype="<f8"))
    np.save(os.path.join(a.out, "labels.npy"), np.ascontiguousarray(lab, dtype="<i8"))
    # params.json in fedmix's key names, so that `fedmix validate --candidate OUT` reruns the
    # reference with exactly these keys (--data stays explicit: the candidate does not own it).
    keys = {"eta": a.eta, "local_steps": a.local_steps, "rounds": a.rounds}
    reference = a.algorithm
    if a.algorithm == "phase2":
        keys["local_solver"] = a.local_solver
    elif a.algorithm == "ifca-official-update":
        # The official lr on torch's MSELoss is fedmix's IFCA option I step γ = 2 lr.
        reference = "ifca"
        keys = {"eta": 2 * a.eta, "ifca_option": "gradient", "restarts": 1, "rounds": a.rounds}
    else:
        keys["ifca_option"] = a.option
    params = {"algorithm": reference, "set": keys, "init": os.path.abspath(a.init),
              "participation": os.path.abspath(a.participation) if a.participation else None}
    with open(os.path.join(a.out, "params.json"), "w") as f:
        json.dump(params, f, indent=2)
    print(f"{a.algorithm}: {a.rounds} rounds, k={it.shape[1]}, d={it.shape[2]}, M={lab.shape[1]}; "
          f"wrote {a.out}/iterates.npy and {a.out}/labels.npy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
