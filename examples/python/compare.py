#!/usr/bin/env python3
"""Compare two saved trajectories round by round, in plain numpy.

For checking an implementation against the reference, prefer ``fedmix validate`` (CLI) or
``fedmix.testing.assert_matches_reference`` (the Python package in ``python/``): they rerun the
reference on the same data and randomness and diagnose the first diverging round. This script
only compares two trajectories already on disk.

Usage::

    python3 compare.py REF_DIR CAND_DIR [--rtol 1e-9]

``REF_DIR`` is a ``fedmix run --save-iterates`` directory (``iterates.npy`` and
``iterate_labels.npy``) or an output of ``fedmix_numpy.py`` (``iterates.npy``, ``labels.npy``);
the same for ``CAND_DIR``.  Prints, per round, ``max_{j,l} |A − B| / max_{j,l} |A|`` (the max relative
deviation of the models) and the number of clients whose labels differ; exits 1 if any round
exceeds ``--rtol`` or any label differs, else 0. A model that is all NaN on both sides is
padding (a round with fewer models, as ``iterates.npy`` pads it); any other NaN or infinite
entry fails its round (the deviation is then NaN).
"""

import argparse
import os
import sys

import numpy as np


def load(d):
    it = np.load(os.path.join(d, "iterates.npy"))
    for name in ("labels.npy", "iterate_labels.npy"):
        p = os.path.join(d, name)
        # a fedmix run directory's labels.npy is the final (M,) assignment, not per round
        if os.path.exists(p) and np.load(p).ndim == 2:
            return it, np.load(p)
    return it, None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ref")
    p.add_argument("cand")
    p.add_argument("--rtol", type=float, default=1e-9)
    a = p.parse_args(argv)
    A, LA = load(a.ref)
    B, LB = load(a.cand)
    if A.shape != B.shape:
        print(f"shape mismatch: {A.shape} vs {B.shape}")
        return 1
    bad = None
    for t in range(A.shape[0]):
        pad = np.isnan(A[t]).all(axis=-1) & np.isnan(B[t]).all(axis=-1)
        real_a, real_b = A[t][~pad], B[t][~pad]
        finite = real_a.size > 0 and np.isfinite(real_a).all() and np.isfinite(real_b).all()
        dev = float(np.max(np.abs(real_a - real_b)) / max(np.max(np.abs(real_a)), 1e-300)) if finite else float("nan")
        dis = int(np.sum(LA[t] != LB[t])) if LA is not None and LB is not None else 0
        # `not (dev <= rtol)`: a NaN deviation fails (`dev > rtol` would pass it).
        flag = not (dev <= a.rtol) or dis > 0
        print(f"round {t + 1:4d}  max rel dev {dev:.2e}  label disagreements {dis}{'  <-- exceeds' if flag else ''}")
        if flag and bad is None:
            bad = t + 1
    print("all rounds within tolerance" if bad is None else f"first round exceeding tolerance: {bad}")
    return 0 if bad is None else 1


if __name__ == "__main__":
    sys.exit(main())
