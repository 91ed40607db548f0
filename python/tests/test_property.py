"""Property: for random small settings, `generate` → `run` gives `fedmix run`'s summary (wall
time aside) and final models, or the same error message."""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed")
from hypothesis import HealthCheck, event, given, settings, strategies as st  # noqa: E402

import fedmix  # noqa: E402
from conftest import without_wall_time  # noqa: E402

ALGORITHMS = ["two-phase", "phase2", "oracle", "ifca", "fedavg", "one-shot", "local"]


@settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    setting=st.sampled_from(["sxy-balanced", "sxy-unbalanced-data", "sxy-unbalanced-both", "ifca-linear"]),
    algorithm=st.sampled_from(ALGORITHMS),
    seed=st.integers(0, 2**32),
    k=st.integers(1, 4),
    d=st.integers(1, 6),
    clients=st.integers(4, 30),
    samples=st.integers(1, 12),
    sigma=st.floats(0.0, 2.0, allow_nan=False),
    rounds=st.integers(1, 8),
)
def test_summary_equals_the_cli(cli, tmp_path_factory, setting, algorithm, seed, k, d, clients,
                                samples, sigma, rounds):
    data = {"k": k, "d": d, "clients": clients, "samples": samples, "sigma": sigma}
    if setting == "sxy-unbalanced-both":
        data["p"] = ""  # its p = (0.2, 0.3, 0.5) needs k = 3; uniform for any k
    if setting == "sxy-unbalanced-data" or setting == "sxy-unbalanced-both":
        data["large_clients"] = min(2, clients - 1)
    keys = {} if algorithm == "local" else {"rounds": rounds}
    args = ["--algorithm", algorithm, "--setting", setting, "--seed", str(seed)]
    for key, v in {**data, **keys}.items():
        text = fedmix._set_text(key, v, data=key in data)
        args += ["--set", f"{key}={text}"]
    out = tmp_path_factory.mktemp("run")
    p = cli("run", *args, "--out", out / "r", check=False)
    try:
        fed = fedmix.generate(setting, seed, **data)
        res = fedmix.run(algorithm, fed, seed=seed, **keys)
    except fedmix.FedmixError as e:
        assert p.returncode == 2, f"python raised {e!s} but the CLI succeeded"
        assert p.stderr.rstrip("\n") == f"error: {e}"
        event(f"both refused: {e.kind}")
        return
    assert p.returncode == 0, f"the CLI failed ({p.stderr.strip()}) but python succeeded"
    import json
    ref = json.loads((out / "r" / "summary.json").read_text())
    assert without_wall_time(res.summary) == without_wall_time(ref)
    assert res.theta_hat.tobytes() == np.load(out / "r" / "theta_hat.npy").tobytes()
    event("both ran: identical summary")
