"""Bad input raises `fedmix.FedmixError` (a `ValueError`) with the CLI's message, never a panic
or a crash."""

import os

import numpy as np
import pytest

import fedmix
from conftest import cli_path, Cli

SMALL = dict(d=5, clients=12, samples=10)
CLI_DATA = ["--setting", "sxy-balanced", "--seed", "1", "--set", "d=5", "--set", "clients=12",
            "--set", "samples=10"]


@pytest.fixture(scope="module")
def fed():
    return fedmix.generate("sxy-balanced", 1, **SMALL)


def cli_or_none():
    p = cli_path()
    if not p.exists() and os.environ.get("FEDMIX_REQUIRE_CLI"):
        pytest.fail(f"FEDMIX_REQUIRE_CLI is set but there is no fedmix binary at {p}")
    return Cli(p) if p.exists() else None


def check(excinfo, kind, fragment, cli_args, tmp_path=None, replace=None):
    """The exception's kind and message; and, with the CLI built, the message equals the CLI's."""
    e = excinfo.value
    assert isinstance(e, ValueError) and isinstance(e, fedmix.FedmixError)
    assert e.kind == kind, (e.kind, str(e))
    assert fragment in str(e), str(e)
    cli = cli_or_none()
    if cli is not None and cli_args is not None:
        expected = cli.error(*cli_args)
        if replace:
            expected = expected.replace(*replace)
        assert str(e) == expected


def test_unknown_key(fed, tmp_path):
    with pytest.raises(fedmix.FedmixError) as e:
        fedmix.run("two-phase", fed, seed=1, round=5)
    check(e, "UnknownKey", "did you mean `rounds`?",
          ["run", "--algorithm", "two-phase", *CLI_DATA, "--set", "round=5", "--out", tmp_path / "o"])


def test_data_parameter_given_to_run(fed, tmp_path):
    with pytest.raises(ValueError) as e:
        fedmix.run("phase2", fed, sigma=0.1)
    # The CLI with --data (data fixed) says the same.
    cli = cli_or_none()
    args = None
    if cli is not None:
        cli("generate", *CLI_DATA[:4], *CLI_DATA[4:], "--out", tmp_path / "D")
        args = ["run", "--algorithm", "phase2", "--data", tmp_path / "D", "--set", "sigma=0.1",
                "--out", tmp_path / "o"]
    check(e, "UnknownKey", "is a data parameter", args)


def test_inapplicable_key(fed, tmp_path):
    with pytest.raises(ValueError) as e:
        fedmix.run("local", fed, eta=0.1)
    check(e, "InvalidParameter", "algorithm `local` does not use it",
          ["run", "--algorithm", "local", *CLI_DATA, "--set", "eta=0.1", "--out", tmp_path / "o"])


def test_out_of_range_value(fed, tmp_path):
    with pytest.raises(ValueError) as e:
        fedmix.run("phase2", fed, eta=-1.0)
    check(e, "InvalidParameter", "parameter `eta` = -1 is invalid",
          ["run", "--algorithm", "phase2", *CLI_DATA, "--set", "eta=-1.0", "--out", tmp_path / "o"])


def test_wrong_type(fed, tmp_path):
    with pytest.raises(ValueError) as e:
        fedmix.run("phase2", fed, rounds=2.5)
    check(e, "Malformed", "rounds",
          ["run", "--algorithm", "phase2", *CLI_DATA, "--set", "rounds=2.5", "--out", tmp_path / "o"])


def test_unknown_algorithm(fed, tmp_path):
    with pytest.raises(ValueError) as e:
        fedmix.run("kmeans", fed)
    check(e, "InvalidParameter", "known: two-phase, phase2",
          ["run", "--algorithm", "kmeans", *CLI_DATA, "--out", tmp_path / "o"])
    with pytest.raises(fedmix.FedmixError):
        fedmix.keys("kmeans")


def test_unknown_setting(tmp_path):
    with pytest.raises(ValueError) as e:
        fedmix.generate("sxy-balance", 1)
    check(e, "UnknownSetting", "known settings: sxy-balanced",
          ["generate", "--setting", "sxy-balance", "--seed", "1", "--out", tmp_path / "o"])


def test_unknown_and_invalid_data_parameter(tmp_path):
    with pytest.raises(ValueError) as e:
        fedmix.generate("sxy-balanced", 1, dim=3)
    check(e, "UnknownParameter", "unknown parameter `dim`",
          ["generate", "--setting", "sxy-balanced", "--set", "dim=3", "--out", tmp_path / "o"])
    with pytest.raises(ValueError) as e:
        fedmix.generate("sxy-balanced", 1, d=0)
    check(e, "InvalidParameter", "`d`",
          ["generate", "--setting", "sxy-balanced", "--seed", "1", "--set", "d=0", "--out", tmp_path / "o2"])


def _init_case(fed, tmp_path, init, kind, fragment):
    with pytest.raises(ValueError) as e:
        fedmix.run("phase2", fed, seed=1, init=init, rounds=3)
    f = tmp_path / "init.npy"
    np.save(f, np.asarray(init, dtype=np.float64))
    check(e, kind, fragment,
          ["run", "--algorithm", "phase2", *CLI_DATA, "--init", f, "--set", "rounds=3", "--out", tmp_path / "o"],
          replace=(str(f), "<init array>"))


def test_init_wrong_shape(fed, tmp_path):
    _init_case(fed, tmp_path, np.zeros((3, 4)), "ShapeMismatch", "shape [3, 4], expected [any, 5]")


def test_init_wrong_rank(fed, tmp_path):
    _init_case(fed, tmp_path, np.zeros(5), "ShapeMismatch", "shape [5], expected [any, 5]")


def test_init_nan(fed, tmp_path):
    init = np.zeros((3, 5))
    init[2, 4] = np.nan
    _init_case(fed, tmp_path, init, "InvalidRandomness", "`init[2][4]`: non-finite value NaN")


def test_init_inf_in_restarts(fed, tmp_path):
    init = np.zeros((2, 3, 5))
    init[1, 0, 2] = -np.inf
    with pytest.raises(ValueError) as e:
        fedmix.run("ifca", fed, init=init, restarts=2, rounds=2)
    assert "`init[1][0][2]`: non-finite value -inf" in str(e.value)


def test_validate_bad_candidates(fed):
    with pytest.raises(ValueError) as e:
        fedmix.validate(fed, "phase2", np.zeros((3, 3, 5)), rounds=4)
    assert e.value.kind == "RoundsMismatch"
    assert "the candidate has 3 rounds but the reference ran 4: pass `--set rounds=3`" in str(e.value)
    with pytest.raises(ValueError) as e:
        fedmix.validate(fed, "phase2", np.zeros((4, 3, 6)), rounds=4)
    assert e.value.kind == "ShapeMismatch" and "<iterates array>" in str(e.value)
    with pytest.raises(ValueError) as e:
        fedmix.validate(fed, "phase2", np.zeros((4, 3, 5)), np.zeros((4, 11)), rounds=4)
    assert e.value.kind == "ShapeMismatch" and "<labels array>" in str(e.value)
    with pytest.raises(ValueError) as e:
        fedmix.validate(fed, "phase2", np.zeros((4, 3, 5)), rtol=-1.0, rounds=4)
    assert str(e.value) == "parameter `rtol` = -1 is invalid: must be finite and ≥ 0"


def test_missing_dataset_directory(tmp_path):
    with pytest.raises(fedmix.FedmixError) as e:
        fedmix.load(tmp_path / "nowhere")
    assert "nowhere" in str(e.value)


def test_unsupported_python_value(fed):
    with pytest.raises(TypeError, match="unsupported value"):
        fedmix.run("phase2", fed, eta=object())
