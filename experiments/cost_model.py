#!/usr/bin/env python3
"""Cost model of the full profile's IFCA experiments (d = 1000): predicts every cell's wall time
on the 2-core machine from (d, N, k, anchors H, Phase 1 iterations T, rounds R, series), sums
them per experiment, and sets the sums beside the wall times the sweeps logged
(``experiments/results/full/<experiment>/runs.jsonl``).

    python3 experiments/cost_model.py            # the table of docs/sweeps.md

Unit costs (2 threads, machine otherwise idle), each measured on one whole `fedmix` run of the
IFCA Fig. 3(a) setting (ifca-official, R = 0.5, σ = 0.1, seed 1: d = 1000, M = 100, n = 100,
k = 2) and checked on the Fig. 3(b) setting (M = 400, k = 4), 2026-11-28 (docs/sweeps.md):

- Phase 1, d > 256, anchors advanced together: C1 seconds per anchor-iteration and per N·d·b,
  b = max(k + 8, 2k) the Krylov block (≈ 19 block applications, each 4·N·d·b flops);
- Phase 2 (FedAvg, s local steps): C2 per round and per N·d·(k + s);
- IFCA's official protocol (30 runs, batched): C3 per iteration and per N·d·(k + 1), 300 iterations;
- data generation: C4 per N·d.

Nothing here is fitted on the cells it is checked against.
"""

from __future__ import annotations

import json
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent
FULL = ROOT / "results" / "full"

# Unit costs, seconds (see the module doc and docs/sweeps.md for the measurements).
C1 = 2.73e-9  # (7.55 s − 0.71 s − one round) / 25 anchor-iterations / (1e7 · 10)
C1_OLD = 8.75e-9  # the anchors one at a time (perf_report's Phase 1 table, Fig. 3(a) row)
C2 = 3.6e-10  # 10.1 s / 400 rounds / (1e7 · (2 + 5))
C3 = 2.2e-9  # 19.78 s / 300 iterations / (1e7 · 3)
C4 = 7.1e-8  # 0.71 s / 1e7 (`fedmix generate`, process start included)

SETTING = {"d": 1000, "clients": 100, "samples": 100, "k": 2}


def cell_time(data: dict, configs: list, old_phase1: bool = False) -> float:
    """Predicted wall seconds of one cell (every series of it, one after another)."""
    p = dict(SETTING)
    for key, value in data:
        if key in p:
            p[key] = float(value)
    d, k = int(p["d"]), int(p["k"])
    n = int(p["clients"]) * int(p["samples"])
    nd = n * d
    t = C4 * nd
    for c in configs:
        alg = c.get("algorithm")
        if alg == "ifca-official":
            t += c.get("ifca_official_iterations", 300) * C3 * nd * (k + 1)
        elif alg == "two-phase":
            h = c.get("anchors") or math.ceil(k * math.log(n))
            iters = c.get("phase1_iterations") or 10
            rounds = c.get("rounds") or 400
            s = c.get("local_steps") or 5
            b = max(k + 8, 2 * k)
            t += h * iters * (C1_OLD if old_phase1 else C1) * nd * b
            t += rounds * C2 * nd * (k + s)
        else:
            raise SystemExit(f"no cost model for {alg}")
    return t


def plan_cells(name: str) -> list[dict]:
    """The cells of an experiment: from its plan.json when a sweep has started, else built from
    the companion experiment's plan (same grid and data seeds) with this file's series."""
    plan = FULL / name / "plan.json"
    if not plan.exists():
        return []
    p = json.loads(plan.read_text())
    series = p["experiment"]["series"]
    cells = p["cells"]
    for c in cells:
        # Plans written before configs named their algorithm: the series order says it.
        for conf, ser in zip(c["configs"], series):
            conf.setdefault("algorithm", ser["algorithm"])
            for key, value in ser.get("config", {}).items():
                conf.setdefault(key, value)
    return cells


def measured(name: str) -> tuple[float, int, set]:
    """Summed wall seconds of the logged invocations, cells computed, commits."""
    log = FULL / name / "runs.jsonl"
    if not log.exists():
        return 0.0, 0, set()
    wall, ran, commits = 0.0, 0, set()
    for line in log.read_text().splitlines():
        r = json.loads(line)
        wall += r.get("wall_seconds", 0.0)
        ran += r.get("ran", 0)
        commits.add(r.get("commit", "?")[:7])
    return wall, ran, commits


def computed(name: str) -> set:
    """Ids of the cells on disk (`cells/<id>.json`)."""
    d = FULL / name / "cells"
    return {f.stem for f in d.glob("*.json")} if d.exists() else set()


def companion_cells(base: str, anchors: int) -> list[dict]:
    """A two-phase companion's cells: the official experiment's grid, one two-phase series."""
    cells = plan_cells(base)
    return [
        {
            "id": c["id"],
            "data": c["data"],
            "configs": [{"algorithm": "two-phase", "anchors": anchors, "phase1_iterations": 5}],
        }
        for c in cells
    ]


def main() -> None:
    rows = []
    experiments = [
        ("ifca-fig3a", plan_cells("ifca-fig3a")),
        ("ifca-fig3b", plan_cells("ifca-fig3b")),
        ("ifca-fig3b-two-phase", companion_cells("ifca-fig3b", 17)),
        ("ifca-fig3c", plan_cells("ifca-fig3c")),
        ("ifca-fig3d", plan_cells("ifca-fig3d")),
        ("ifca-fig3d-two-phase", companion_cells("ifca-fig3d", 17)),
    ]
    total_new = 0.0
    for name, cells in experiments:
        new = sum(cell_time(c["data"], c["configs"]) for c in cells)
        old = sum(cell_time(c["data"], c["configs"], old_phase1=True) for c in cells)
        wall, ran, commits = measured(name)
        done = computed(name)
        new_done = sum(cell_time(c["data"], c["configs"]) for c in cells if c["id"] in done)
        total_new += new
        rows.append((name, len(cells), new, old, wall, ran, commits, new_done))
    out = sys.stdout
    out.write(
        "| experiment | cells | predicted, anchors together | predicted, anchors one at a time "
        "| logged wall (cells computed) | logged / predicted (the Phase 1 it ran with: one at a time; "
        "the companions together) "
        "| predicted for the cells computed (anchors together) |\n"
        "|---|---|---|---|---|---|---|\n"
    )
    for name, n, new, old, wall, ran, commits, new_done in rows:
        # Against the Phase 1 the cells ran with: the two companions' cells were all computed
        # after the anchors were advanced together (their first cells were committed after
        # that change); the others' two-phase series, one anchor at a time.
        ran_with = new if name.endswith("-two-phase") else old
        ratio = f"{wall / ran_with:.2f}" if ran == n and wall > 0 else "—"
        logged = f"{wall / 3600:.2f} h ({ran})" if ran else "—"
        done = f"{new_done / 3600:.2f} h; logged / predicted {wall / new_done:.2f}" if (
            0 < ran < n and new_done > 0
        ) else "—"
        out.write(
            f"| {name} | {n} | {new / 3600:.2f} h | {old / 3600:.2f} h | {logged} | {ratio} "
            f"| {done} |\n"
        )
    out.write(
        f"| **IFCA experiments** | | **{total_new / 3600:.1f} h** | | | | |\n"
    )
    # The others run at d = 100 (Phase 1 forms Y; nothing above changed them): their logged
    # wall times (sxy22-fig1..3 measured whole; srfca-linear and communication over two
    # invocations, cells kept from disk not logged twice).
    others = 0.0
    for name in ["sxy22-fig1", "sxy22-fig2", "sxy22-fig3", "communication", "srfca-linear"]:
        wall, ran, _ = measured(name)
        others += wall
        out.write(f"| {name} | {ran} | logged: {wall / 3600:.2f} h | | | | |\n")
    out.write(
        f"\nWhole full profile from scratch, predicted: **{(total_new + others) / 3600:.1f} h** "
        f"on 2 cores ({total_new / 3600:.1f} h predicted for the IFCA experiments + "
        f"{others / 3600:.1f} h logged for the others).\n"
    )


if __name__ == "__main__":
    main()
