"""Shared fixtures: the `fedmix` CLI binary (for bit-identity with `fedmix run`) and the
independent numpy implementation in `examples/python/`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "python"))


def cli_path() -> Path:
    """`$FEDMIX_BIN`, else `${CARGO_TARGET_DIR:-<repo>/target}/release/fedmix`."""
    if os.environ.get("FEDMIX_BIN"):
        return Path(os.environ["FEDMIX_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    return target / "release" / "fedmix"


class Cli:
    def __init__(self, path: Path):
        self.path = path

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run([str(self.path), *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"fedmix {' '.join(map(str, args))} failed ({p.returncode}): {p.stderr}")
        return p

    def error(self, *args: str) -> str:
        """The one-line message of a CLI failure (exit 2), without its `error: ` prefix."""
        p = self(*args, check=False)
        assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
        line = p.stderr.rstrip("\n")
        assert line.startswith("error: "), line
        return line[len("error: "):]

    def run_dir(self, out: Path, *args: str) -> dict:
        """`fedmix run … --out OUT --save-iterates`; returns the run directory's files."""
        self("run", *args, "--save-iterates", "--out", out)
        files = {
            "theta_hat": np.load(out / "theta_hat.npy"),
            "labels": np.load(out / "labels.npy"),
            "summary": json.loads((out / "summary.json").read_text()),
            "trace_csv": (out / "trace.csv").read_text(),
        }
        for name in ("iterates", "iterate_labels"):
            f = out / f"{name}.npy"
            files[name] = np.load(f) if f.exists() else None
        return files


@pytest.fixture(scope="session")
def cli() -> Cli:
    path = cli_path()
    if not path.exists():
        if os.environ.get("FEDMIX_REQUIRE_CLI"):  # CI builds it: a missing binary is a failure
            pytest.fail(f"FEDMIX_REQUIRE_CLI is set but there is no fedmix binary at {path}")
        pytest.skip(
            f"the fedmix CLI binary is not built at {path} (cargo build --release --bin fedmix, "
            "or set FEDMIX_BIN); .ci/run builds it"
        )
    return Cli(path)


def without_wall_time(summary: dict) -> dict:
    s = dict(summary)
    s.pop("wall_time_seconds", None)
    return s
