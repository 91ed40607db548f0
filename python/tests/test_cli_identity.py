"""`fedmix.run` gives the bits of `fedmix run`: final models, labels, iterates, the trace and
`summary.json` (wall time aside), on generated and on loaded data."""

import csv
import io

import numpy as np
import pytest

import fedmix
from conftest import without_wall_time

SMALL = {"clients": 60, "d": 10, "samples": 20}


def cli_sets(d: dict) -> list:
    out = []
    for k, v in d.items():
        out += ["--set", f"{k}={v}"]
    return out


def assert_same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    assert a.tobytes() == b.tobytes()


def assert_trace_matches_csv(trace: dict, text: str) -> None:
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(trace["round"]) > 0
    for col in ("distance", "training_loss", "misclustering_clients", "anchor_error_max"):
        csv_vals = np.array([float(r[col]) if r[col] else np.nan for r in rows])
        # `{x:e}` in the CSV is the shortest round-trip text: equal bits, NaN where empty.
        np.testing.assert_array_equal(trace[col], csv_vals)
    for col in ("round", "floats_down", "floats_up", "messages", "participants"):
        np.testing.assert_array_equal(trace[col], [int(r[col]) for r in rows])
    assert list(trace["phase"]) == [r["phase"] for r in rows]


@pytest.mark.parametrize(
    "algorithm,setting,keys",
    [
        ("two-phase", "sxy-balanced", {"rounds": 30}),
        ("two-phase", "sxy-balanced", {"rounds": 15, "local_solver": "fedprox", "eta_gamma": 0.5}),
        ("ifca", "sxy-unbalanced-both", {"rounds": 20, "restarts": 2, "ifca_option": "model"}),
        ("phase2", "sxy-balanced", {"rounds": 25, "eta": 0.01}),
        ("sr-fca", "sxy-balanced", {}),
    ],
)
def test_run_is_bit_identical_to_the_cli(cli, tmp_path, algorithm, setting, keys):
    seed = 1
    ref = cli.run_dir(
        tmp_path / "run", "--algorithm", algorithm, "--setting", setting, "--seed", str(seed),
        *cli_sets(SMALL), *cli_sets(keys),
    )
    fed = fedmix.generate(setting, seed, **SMALL)
    res = fedmix.run(algorithm, fed, seed=seed, **keys)
    assert_same_bits(res.theta_hat, ref["theta_hat"])
    assert_same_bits(res.labels, ref["labels"])
    if ref["iterates"] is not None:
        assert_same_bits(res.iterates, ref["iterates"])
    if ref["iterate_labels"] is not None:
        assert_same_bits(res.iterate_labels, ref["iterate_labels"])
    else:
        assert res.iterate_labels is None
    assert without_wall_time(res.summary) == without_wall_time(ref["summary"])
    assert res.summary["final"] == ref["summary"]["final"]
    assert_trace_matches_csv(res.trace, ref["trace_csv"])


def test_loaded_data_and_init_array_match_the_cli(cli, tmp_path):
    data = tmp_path / "D"
    cli("generate", "--setting", "sxy-unbalanced-both", "--seed", "3", *cli_sets(SMALL), "--out", data)
    fed = fedmix.load(data)
    gen = fedmix.generate("sxy-unbalanced-both", 3, **SMALL)
    for name in ("features", "responses", "client_sizes", "labels", "theta_star"):
        assert_same_bits(getattr(fed, name), getattr(gen, name))
    theta0 = fed.theta_star + 0.3 * np.random.default_rng(7).standard_normal(fed.theta_star.shape)
    np.save(tmp_path / "theta0.npy", theta0)
    ref = cli.run_dir(
        tmp_path / "run", "--algorithm", "phase2", "--data", data, "--seed", "5",
        "--init", tmp_path / "theta0.npy", "--set", "rounds=12",
    )
    res = fedmix.run("phase2", fed, seed=5, init=theta0, rounds=12)
    assert_same_bits(res.theta_hat, ref["theta_hat"])
    assert_same_bits(res.iterates, ref["iterates"])
    assert res.summary["data"]["dir"] == str(data) == ref["summary"]["data"]["dir"]
    # The only difference: where the initial models came from (a file vs an array).
    s_py, s_cli = without_wall_time(res.summary), without_wall_time(ref["summary"])
    assert s_py.pop("init_file") == "<init array>"
    assert s_cli.pop("init_file") == str(tmp_path / "theta0.npy")
    ip, ic = s_py["randomness"]["supplied"]["init"], s_cli["randomness"]["supplied"]["init"]
    assert (ip.pop("path"), ic.pop("path")) == ("<init array>", str(tmp_path / "theta0.npy"))
    assert s_py == s_cli


def test_generated_arrays_match_the_dataset_files(cli, tmp_path):
    cli("generate", "--setting", "sxy-balanced", "--seed", "9", "--set", "d=4", "--set", "clients=12",
        "--set", "sigma=0.123456789012345", "--out", tmp_path / "D")
    fed = fedmix.generate("sxy-balanced", 9, d=4, clients=12, sigma=0.123456789012345)
    for name, f in [("features", "features"), ("responses", "responses"),
                    ("client_sizes", "client_sizes"), ("labels", "labels"), ("theta_star", "theta_star")]:
        assert_same_bits(getattr(fed, name), np.load(tmp_path / "D" / f"{f}.npy"))
    assert fed.manifest["parameters"]["sigma"] == 0.123456789012345
