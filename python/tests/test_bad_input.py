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


# --------------------------------------------------------------------------------------------
# Nothing crosses the Python boundary by a lossy coercion: a wrong type is a TypeError, a wrong
# value of the right type a FedmixError (with the CLI's message where the CLI has the input).
# --------------------------------------------------------------------------------------------

VALIDATE_KEYS = dict(rounds=3)


@pytest.fixture(scope="module")
def trajectory(fed):
    """The reference's own phase2 trajectory (3 rounds) from a fixed start: a passing candidate."""
    init = np.asarray(fed.theta_star) * 0.5
    res = fedmix.run("phase2", fed, seed=1, init=init, **VALIDATE_KEYS)
    return init, res.iterates, res.iterate_labels


@pytest.mark.parametrize("seed", [1.5, 1.0, np.float64(2.0), True, np.bool_(True), "1", None, 1 + 0j])
def test_seed_must_be_an_int(fed, seed):
    # 1.5 used to run seed 1, True seed 1, 1.0 seed 1: a float is refused even when integral.
    for call in (
        lambda: fedmix.generate("sxy-balanced", seed, **SMALL),
        lambda: fedmix.run("phase2", fed, seed=seed, rounds=2),
        lambda: fedmix.Session("phase2", fed, seed=seed, rounds=2),
        lambda: fedmix.validate(fed, "phase2", np.zeros((2, 3, 5)), seed=seed, rounds=2),
    ):
        with pytest.raises(TypeError, match="seed must be an int"):
            call()


def test_numpy_integer_seeds_are_ints(fed):
    a = fedmix.run("phase2", fed, seed=np.int64(3), rounds=2)
    b = fedmix.run("phase2", fed, seed=3, rounds=2)
    assert a.theta_hat.tobytes() == b.theta_hat.tobytes() and a.summary["seed"] == 3
    assert fedmix.generate("sxy-balanced", np.uint8(1), **SMALL).features.tobytes() == fed.features.tobytes()


@pytest.mark.parametrize("seed", [-1, 2**64])
def test_seed_out_of_range(fed, seed):
    with pytest.raises(fedmix.FedmixError) as e:
        fedmix.run("phase2", fed, seed=seed, rounds=2)
    assert e.value.kind == "InvalidParameter" and f"parameter `seed` = {seed} is invalid" in str(e.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a + 1j,  # complex: numpy used to drop the imaginary part with a warning
        lambda a: a.astype(object),
        lambda a: a.astype(str),
        lambda a: a > 0,  # bool
        lambda a: [[0.0] * 5, [0.0] * 4, [0.0] * 5],  # ragged
    ],
    ids=["complex", "object", "str", "bool", "ragged"],
)
def test_float_arrays_refuse_lossy_conversion(fed, trajectory, make):
    init, iterates, _ = trajectory
    with pytest.raises(TypeError, match="init"):
        fedmix.run("phase2", fed, seed=1, init=make(init), rounds=2)
    with pytest.raises(TypeError, match="iterates"):
        fedmix.validate(fed, "phase2", make(iterates), seed=1, init=init, **VALIDATE_KEYS)
    with pytest.raises(TypeError, match="init"):
        fedmix.validate(fed, "phase2", iterates, seed=1, init=make(init), **VALIDATE_KEYS)


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8, reason="longdouble is float64 here")
def test_longdouble_is_refused(fed, trajectory):
    init, iterates, _ = trajectory
    with pytest.raises(TypeError, match="rounded to float64"):
        fedmix.run("phase2", fed, seed=1, init=init.astype(np.longdouble), rounds=2)
    with pytest.raises(TypeError, match="rounded to float64"):
        fedmix.validate(fed, "phase2", iterates.astype(np.longdouble), seed=1, init=init, **VALIDATE_KEYS)


def test_lossless_arrays_are_accepted(fed, trajectory):
    init, iterates, labels = trajectory
    # float32 and small integers convert exactly; a list of lists is an array.
    rep = fedmix.validate(fed, "phase2", iterates, labels.astype(np.int32), seed=1,
                          init=init.tolist(), **VALIDATE_KEYS)
    assert rep.passed
    z = fedmix.run("phase2", fed, seed=1, init=np.zeros((3, 5), dtype=np.int64), rounds=2)
    assert z.theta_hat.tobytes() == fedmix.run("phase2", fed, seed=1, init=np.zeros((3, 5)), rounds=2).theta_hat.tobytes()
    with pytest.raises(fedmix.FedmixError, match="beyond ±2\\^53"):
        fedmix.run("phase2", fed, seed=1, init=np.full((3, 5), 2**60, dtype=np.int64), rounds=2)


def _labels_case(fed, trajectory, tmp_path, labels, kind, fragment):
    """Python's error for candidate `labels` (a float array) is the CLI's for the same float64
    labels.npy (its path replaced by `<labels array>`)."""
    init, iterates, _ = trajectory
    with pytest.raises(fedmix.FedmixError) as e:
        fedmix.validate(fed, "phase2", iterates, labels, seed=1, init=init, **VALIDATE_KEYS)
    files = {n: tmp_path / f"{n}.npy" for n in ("init", "iterates", "labels")}
    for n, a in (("init", init), ("iterates", iterates), ("labels", np.asarray(labels, dtype=np.float64))):
        np.save(files[n], a)
    check(e, kind, fragment,
          ["validate", "--algorithm", "phase2", *CLI_DATA, "--init", files["init"], "--set", "rounds=3",
           "--iterates", files["iterates"], "--labels", files["labels"], "--quiet"],
          replace=(str(files["labels"]), "<labels array>"))


@pytest.mark.parametrize("value,fragment", [
    (np.nan, "label of client 4 in round 2 is NaN, not an integer"),
    (1.5, "label of client 4 in round 2 is 1.5, not an integer"),
    (np.inf, "label of client 4 in round 2 is inf, not an integer"),
])
def test_labels_must_be_integers(fed, trajectory, tmp_path, value, fragment):
    # NaN used to be cast to int64 with a numpy warning, 1.5 silently truncated to 1.
    labels = trajectory[2].astype(np.float64)
    labels[1, 4] = value
    _labels_case(fed, trajectory, tmp_path, labels, "LabelNotInteger", fragment)


@pytest.mark.parametrize("value", [3, -2])
def test_labels_must_be_a_model_of_their_round(fed, trajectory, tmp_path, value):
    labels = trajectory[2].astype(np.float64)
    labels[2, 0] = value
    _labels_case(fed, trajectory, tmp_path, labels, "CandidateLabelOutOfRange",
                 f"client 0 in round 3 has label {value}, but the reference has 3 model(s)")


def test_integral_float_labels_and_unassigned(fed, trajectory):
    init, iterates, labels = trajectory
    assert fedmix.validate(fed, "phase2", iterates, labels.astype(np.float32), seed=1, init=init, **VALIDATE_KEYS).passed
    l = labels.copy()
    l[0, 5] = -1  # "unassigned" is a label value; here it disagrees with the reference
    rep = fedmix.validate(fed, "phase2", iterates, l, seed=1, init=init, **VALIDATE_KEYS)
    assert not rep.passed and rep.first_failure == 1 and rep.disagreeing_clients[0] == [5]


@pytest.mark.parametrize("make", [lambda l: l + 0j, lambda l: l.astype(str), lambda l: l > 0,
                                  lambda l: l.astype(object)],
                         ids=["complex", "str", "bool", "object"])
def test_labels_of_other_dtypes_are_refused(fed, trajectory, make):
    init, iterates, labels = trajectory
    with pytest.raises(TypeError, match="labels: dtype"):
        fedmix.validate(fed, "phase2", iterates, make(labels), seed=1, init=init, **VALIDATE_KEYS)


def test_labels_beyond_int64(fed, trajectory):
    init, iterates, labels = trajectory
    with pytest.raises(fedmix.FedmixError, match="does not fit int64"):
        fedmix.validate(fed, "phase2", iterates, np.full(labels.shape, 2**63, dtype=np.uint64),
                        seed=1, init=init, **VALIDATE_KEYS)


@pytest.mark.parametrize("name,value,cli_value", [
    ("rtol", float("nan"), "NaN"), ("rtol", float("inf"), "inf"), ("atol", -1e-3, "-0.001"),
])
def test_tolerances_finite_and_non_negative(fed, trajectory, tmp_path, name, value, cli_value):
    init, iterates, _ = trajectory
    with pytest.raises(fedmix.FedmixError) as e:
        fedmix.validate(fed, "phase2", iterates, seed=1, init=init, **{name: value}, **VALIDATE_KEYS)
    f = tmp_path / "it.npy"
    np.save(f, iterates)
    check(e, "InvalidParameter", f"parameter `{name}`",
          ["validate", "--algorithm", "phase2", *CLI_DATA, "--set", "rounds=3", "--iterates", f,
           f"--{name}={cli_value}"])
    with pytest.raises(fedmix.FedmixError, match=f"parameter `{name}`"):
        fedmix.testing.assert_matches_reference(iterates, None, fed, "phase2", init=init, seed=1,
                                                **{name: value}, **VALIDATE_KEYS)


def test_tolerance_beyond_float64(fed, trajectory):
    init, iterates, _ = trajectory
    with pytest.raises(fedmix.FedmixError, match="parameter `rtol` = 1000"):
        fedmix.validate(fed, "phase2", iterates, seed=1, init=init, rtol=10**400, **VALIDATE_KEYS)


@pytest.mark.parametrize("value", ["1e-9", True, 1e-9 + 0j, None, [1e-9]])
def test_tolerances_are_real_numbers(fed, trajectory, value):
    init, iterates, _ = trajectory
    for name in ("rtol", "atol"):
        with pytest.raises(TypeError, match=f"{name} must be a real number"):
            fedmix.validate(fed, "phase2", iterates, seed=1, init=init, **{name: value}, **VALIDATE_KEYS)


def test_other_arguments_are_checked(fed, tmp_path):
    with pytest.raises(TypeError, match="save_iterates must be a bool"):
        fedmix.run("phase2", fed, save_iterates="no", rounds=2)
    with pytest.raises(TypeError, match="federation must be a fedmix.Federation"):
        fedmix.run("phase2", fed._native, rounds=2)
    with pytest.raises(TypeError, match="algorithm must be a str"):
        fedmix.run(b"phase2", fed, rounds=2)
    with pytest.raises(TypeError, match="algorithm must be a str"):
        fedmix.keys(None)
    with pytest.raises(TypeError, match="setting must be a str"):
        fedmix.generate(1, 1)
    for i in (1.0, True):
        with pytest.raises(TypeError, match="client index must be an int"):
            fed.client(i)
    assert fed.client(np.int64(2))[0].shape[1] == 5
    with pytest.raises(TypeError):
        fedmix.load(123)


@pytest.mark.parametrize("value", [__import__("fractions").Fraction(1, 3), __import__("decimal").Decimal("0.1")])
def test_parameter_values_are_not_rounded(fed, value):
    with pytest.raises(TypeError, match="unsupported value"):
        fedmix.run("phase2", fed, eta=value, rounds=2)


def test_nan_parameter_value(fed, tmp_path):
    with pytest.raises(fedmix.FedmixError) as e:
        fedmix.run("phase2", fed, eta=float("nan"), rounds=2)
    check(e, "InvalidParameter", "parameter `eta` = NaN is invalid",
          ["run", "--algorithm", "phase2", *CLI_DATA, "--set", "eta=nan", "--set", "rounds=2",
           "--out", tmp_path / "o"])
