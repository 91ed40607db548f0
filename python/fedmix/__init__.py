"""fedmix: clustered federated learning for mixed linear regression, from Python.

The reference implementation of the two-phase algorithm of Su, Xu & Yang (NeurIPS 2022, "SXY22"),
IFCA (Ghosh et al., NeurIPS 2020, Algorithm 2), SR-FCA and baselines, called in-process: the
functions here call the Rust library directly, through the same code path as the ``fedmix`` CLI
(``fedmix.runner`` in the Rust crate), so the same inputs give the same bits and the same error
messages as ``fedmix run`` / ``fedmix validate``.

Entry points:

- :func:`generate` / :func:`load` → :class:`Federation` (``fedmix generate`` / ``--data``);
- :func:`run` → :class:`Result` (``fedmix run``);
- :class:`Session` (one round at a time: live for the executor-loop algorithms, a replay of :func:`run` for the others);
- :func:`validate` → :class:`Report` (``fedmix validate``);
- :func:`fedmix.testing.assert_matches_reference` (``numpy.testing`` style);
- :func:`algorithms`, :func:`describe`, :func:`keys`, :func:`settings`, :func:`parameters`: what can be asked for.

Errors: a bad key, value, shape or name raises :class:`FedmixError`, a subclass of
``ValueError`` whose message is the CLI's (the text after ``error: ``) and whose ``kind``
attribute names the library's error variant (``InvalidParameter``, ``UnknownKey``,
``ShapeMismatch``, ``Divergence``, …). An argument of the wrong Python type raises
``TypeError``: nothing is coerced with a loss — seeds and indices must be ``int`` or numpy
integers (not ``bool``, not floats, even integral ones), float arrays must hold real numbers
(complex, bool, object and string arrays are refused, as is ``longdouble``), labels must be
integers (an integer array, or a float array whose entries are all integers; NaN or ``1.5`` is
a :class:`FedmixError`), tolerances real numbers (finite and ≥ 0: a :class:`FedmixError`
otherwise). Every typed error of the library, including a run that
cannot proceed (``Divergence``, ``TooFewClusters``), is a :class:`FedmixError`. A panic of the
library (a bug) is caught before it reaches Python and raised as :class:`InternalError`
(a ``RuntimeError``).

Copies: every array handed to Python is a fresh numpy array that Python owns (data is copied
once out of the library; results are moved, not copied twice); every array passed in (``init``,
candidate ``iterates``/``labels``) is copied into the library. Arrays of a :class:`Federation`
are read-only and cached after first access. Runs release the GIL.
"""

from __future__ import annotations

import json
import numbers
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._native import FedmixError, InternalError

__all__ = [
    "FedmixError",
    "InternalError",
    "Federation",
    "Result",
    "Round",
    "Session",
    "Report",
    "generate",
    "load",
    "run",
    "validate",
    "algorithms",
    "describe",
    "keys",
    "settings",
    "parameters",
    "testing",
]

__version__ = "0.1.0"

ParamValue = Union[str, bool, int, float, Sequence[Union[int, float, str]]]


# --------------------------------------------------------------------------------------------
# Parameters: Python values → the strings `--set key=value` takes
# --------------------------------------------------------------------------------------------


def _scalar_text(key: str, v: Any) -> str:
    # bool first: bool is an int subclass; numpy bools are not numbers.Integral.
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, (float, np.floating)) and np.dtype(type(v)).itemsize <= 8:
        # float.__repr__ is the shortest text that reads back to the same double (numpy
        # scalars' own repr would be `np.float64(…)`), so a float round-trips bit for bit.
        # Other reals (Fraction, Decimal, longdouble) would be rounded: refused below.
        return float.__repr__(float(v))
    if isinstance(v, str):
        return v
    raise TypeError(f"parameter {key!r}: unsupported value {v!r} ({type(v).__name__})")


def _set_text(key: str, v: Any, data: bool) -> str:
    """The text ``--set key=TEXT`` would carry for ``v``."""
    if isinstance(v, (list, tuple, np.ndarray)):
        items = [_scalar_text(key, x) for x in list(v)]
        # Data parameter `p` is comma-separated; run keys that are lists are TOML arrays.
        return ",".join(items) if data else "[" + ", ".join(items) + "]"
    return _scalar_text(key, v)


def _sets(params: Mapping[str, Any], data: bool) -> List[Tuple[str, str]]:
    return [(str(k), _set_text(str(k), v, data)) for k, v in params.items()]


# --------------------------------------------------------------------------------------------
# Arguments: checked, never coerced with a loss
# --------------------------------------------------------------------------------------------


def _error(kind: str, message: str) -> FedmixError:
    """A :class:`FedmixError` raised on the Python side, with ``kind`` as the library sets it."""
    e = FedmixError(message)
    e.kind = kind  # type: ignore[attr-defined]
    return e


def _type_name(v: Any) -> str:
    return type(v).__name__


def _is_int(v: Any) -> bool:
    # bool is an int subclass and numpy bools are not Integral: both are refused as integers.
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _seed(seed: Any) -> int:
    """A seed: a Python int or numpy integer in ``0..2**64`` (the CLI's ``--seed`` is a u64).

    Decision: floats are refused even when integral — a seed names a random stream, and a float
    that happens to be integral (``1e17``) may already have been rounded from another integer.
    """
    if not _is_int(seed):
        raise TypeError(f"seed must be an int (got {seed!r}, {_type_name(seed)})")
    v = int(seed)
    if not 0 <= v < 2**64:
        raise _error("InvalidParameter", f"parameter `seed` = {v} is invalid: must be an integer in 0..2^64")
    return v


def _name(what: str, v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{what} must be a str (got {v!r}, {_type_name(v)})")
    return str(v)


def _flag(what: str, v: Any) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{what} must be a bool (got {v!r}, {_type_name(v)})")
    return bool(v)


def _tolerance(what: str, v: Any) -> float:
    # Finite and ≥ 0 is the library's check (the CLI's message); here only the type.
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a real number (got {v!r}, {_type_name(v)})")
    if isinstance(v, np.floating) and np.dtype(type(v)).itemsize > 8:
        raise TypeError(f"{what}: {_type_name(v)} would be rounded to float64; convert it explicitly")
    try:
        return float(v)
    except OverflowError:  # an int beyond float64's range
        raise _error("InvalidParameter", f"parameter `{what}` = {v} is invalid: must be finite and ≥ 0") from None


def _federation(v: Any) -> "_native.NativeFederation":
    if not isinstance(v, Federation):
        raise TypeError(f"federation must be a fedmix.Federation (got {_type_name(v)}); use fedmix.generate or fedmix.load")
    return v._native


def _as_array(what: str, a: Any) -> np.ndarray:
    try:
        return np.asarray(a)
    except (ValueError, TypeError) as e:  # ragged nesting, unconvertible objects
        raise TypeError(f"{what}: not a rectangular numeric array ({e})") from None


# Integers beyond ±2^53 are not all exact as float64.
_EXACT_INT = 2**53


def _real_array(what: str, a: Any) -> np.ndarray:
    """``a`` as a C-order float64 array, refusing every conversion that loses information:
    complex, bool, object, string and other non-numeric dtypes, ``longdouble``, and integers
    beyond ±2^53 (which float64 cannot all hold)."""
    arr = _as_array(what, a)
    dt = arr.dtype
    if dt.kind == "f" and dt.itemsize <= 8:
        return np.ascontiguousarray(arr, dtype=np.float64)
    if dt.kind in "iu":
        if arr.size and (arr.min() < -_EXACT_INT or arr.max() > _EXACT_INT):
            raise _error("InvalidParameter", f"{what}: integer entries beyond ±2^53 are not exact as float64")
        return np.ascontiguousarray(arr, dtype=np.float64)
    if dt.kind == "f":
        raise TypeError(f"{what}: dtype {dt} would be rounded to float64; convert it explicitly")
    raise TypeError(f"{what}: dtype {dt} is not real numbers (complex, bool, object and string arrays are refused, not converted)")


def _label_array(a: Any) -> np.ndarray:
    """Candidate labels as int64, or as float64 for the library to check that every entry is an
    integer (NaN, ±inf and fractions are refused there, with the CLI's message for a float64
    ``labels.npy``)."""
    arr = _as_array("labels", a)
    dt = arr.dtype
    if dt.kind in "iu":
        if dt.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise _error("InvalidParameter", f"labels: {arr.max()} does not fit int64 (labels are cluster indices, -1 for unassigned)")
        return np.ascontiguousarray(arr, dtype=np.int64)
    if dt.kind == "f" and dt.itemsize <= 8:
        return np.ascontiguousarray(arr, dtype=np.float64)
    raise TypeError(f"labels: dtype {dt} is not integers (complex, bool, object and string arrays are refused, not converted)")


# --------------------------------------------------------------------------------------------
# Discovery
# --------------------------------------------------------------------------------------------


def algorithms() -> List[str]:
    """The algorithm names ``run`` accepts (``fedmix run --algorithm``), in documentation order."""
    return list(_native.algorithms())


def describe(algorithm: str) -> Dict[str, Any]:
    """What ``algorithm``'s declaration says about it (the row of ``docs/algorithms.md``).

    A dict with ``name``, ``doc`` (its description), ``keys`` (the run keys it reads, as
    :func:`keys` lists them), ``randomness`` (the files it takes: ``init``, ``anchors``, ``q0``,
    ``power-start``, ``participation``), ``live_session`` (whether :class:`Session` steps it round
    by round in the library rather than replaying a finished run) and ``one_step`` (``None``
    when ``validate(..., mode="one-step")`` is available, otherwise why it is refused).

    Raises :class:`FedmixError` for an unknown algorithm.
    """
    name, doc, ks, rnd, live, refusal = _native.describe(_name("algorithm", algorithm))
    return {"name": name, "doc": doc.strip(), "keys": list(ks), "randomness": list(rnd),
            "live_session": live, "one_step": refusal}


def keys(algorithm: str) -> Dict[str, Any]:
    """The run keys ``algorithm`` reads, each with its default.

    A default of ``None`` means the value is set by a rule from the data: ``eta`` is
    ``eta_gamma / max_i ‖φ_i‖²/n_i`` (γ = 0.8 by default), ``anchors`` ``min(⌈k ln N⌉,
    eligible)``, ``k`` the data's number of clusters, and so on (the Rust docs of ``fedmix::params``).
    Any other key given to :func:`run` for this algorithm is refused, as the CLI refuses it.

    Raises :class:`FedmixError` for an unknown algorithm.
    """
    return {k: json.loads(v) for k, v in _native.keys(_name("algorithm", algorithm))}


def settings() -> Dict[str, Dict[str, Any]]:
    """The synthetic settings (``fedmix settings``): name → ``{"doc": …, "parameters": {…}}``."""
    return {
        name: {"doc": doc, "parameters": json.loads(params)}
        for name, doc, params in _native.settings()
    }


def parameters() -> Dict[str, str]:
    """The data-generation parameters :func:`generate` accepts, with their meaning."""
    return dict(_native.parameters())


# --------------------------------------------------------------------------------------------
# Federations
# --------------------------------------------------------------------------------------------


def _readonly(a: Optional[np.ndarray]) -> Optional[np.ndarray]:
    if a is not None:
        a.setflags(write=False)
    return a


class Federation:
    """A federation of ``M`` clients (SXY22 eq. 1): client ``i`` holds ``n_i`` samples
    ``(φ(x_ij), y_ij)``; for synthetic data also its true cluster ``z_i`` and the true models
    ``θ*``. Made by :func:`generate` or :func:`load`; passed to :func:`run` and :func:`validate`.

    Arrays are copied out of the library on first access, cached, and read-only (changing them
    could not change the data a run sees). Clients are stacked in order: client ``i`` owns rows
    ``offsets[i]:offsets[i+1]`` of ``features``/``responses`` (``offsets`` = cumulative sum of
    ``client_sizes``).
    """

    def __init__(self, native: "_native.NativeFederation") -> None:
        self._native = native
        self._cache: Dict[str, Any] = {}

    def _get(self, name: str, make: Any) -> Any:
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]

    @property
    def manifest(self) -> Dict[str, Any]:
        """The dataset's ``manifest.json`` (setting, seed, k, d, M, sizes, parameters…), a new dict."""
        return json.loads(self._native.manifest_json())

    @property
    def data_dir(self) -> Optional[str]:
        """The directory given to :func:`load`, or ``None`` for generated data."""
        return self._native.data_dir

    @property
    def setting(self) -> Optional[str]:
        """Synthetic setting name (``None`` for external data)."""
        return self.manifest["setting"]

    @property
    def seed(self) -> Optional[int]:
        """Master seed of synthetic data."""
        return self.manifest["seed"]

    @property
    def k(self) -> Optional[int]:
        """Number of clusters, when known."""
        return self.manifest["k"]

    @property
    def d(self) -> int:
        """Dimension of ``φ(x)``."""
        return int(self.manifest["d"])

    @property
    def num_clients(self) -> int:
        """``M``."""
        return int(self.manifest["clients"])

    @property
    def num_samples(self) -> int:
        """``N = Σ n_i``."""
        return int(self.manifest["total_samples"])

    @property
    def features(self) -> np.ndarray:
        """``N × d`` float64, clients stacked in order (copied once, read-only)."""
        return self._get("features", lambda: _readonly(self._native.features(False)))

    @property
    def responses(self) -> np.ndarray:
        """``N`` float64 (copied once, read-only)."""
        return self._get("responses", lambda: _readonly(self._native.responses(False)))

    @property
    def client_sizes(self) -> np.ndarray:
        """``M`` int64: ``n_i`` (copied once, read-only)."""
        return self._get("client_sizes", lambda: _readonly(self._native.client_sizes(False)))

    @property
    def labels(self) -> Optional[np.ndarray]:
        """``M`` int64 true clusters ``z_i ∈ 0..k``, or ``None`` (copied once, read-only)."""
        return self._get("labels", lambda: _readonly(self._native.labels()))

    @property
    def theta_star(self) -> Optional[np.ndarray]:
        """``k × d`` float64 true models (row ``j`` = ``θ*_j``), or ``None`` (copied once, read-only)."""
        return self._get("theta_star", lambda: _readonly(self._native.theta_star()))

    @property
    def test_features(self) -> Optional[np.ndarray]:
        """Held-out features (``test_samples > 0``), or ``None`` (copied once, read-only)."""
        return self._get("test_features", lambda: _readonly(self._native.features(True)))

    @property
    def test_responses(self) -> Optional[np.ndarray]:
        """Held-out responses, or ``None`` (copied once, read-only)."""
        return self._get("test_responses", lambda: _readonly(self._native.responses(True)))

    @property
    def test_client_sizes(self) -> Optional[np.ndarray]:
        """Held-out samples per client, or ``None`` (copied once, read-only)."""
        return self._get("test_client_sizes", lambda: _readonly(self._native.client_sizes(True)))

    def client(self, i: int) -> Tuple[np.ndarray, np.ndarray]:
        """Client ``i``'s ``(φ_i, y_i)``: views (no copy) into :attr:`features`/:attr:`responses`."""
        if not _is_int(i):
            raise TypeError(f"client index must be an int (got {i!r}, {_type_name(i)})")
        sizes = self.client_sizes
        if not 0 <= i < len(sizes):
            raise IndexError(f"client {i} out of range (M = {len(sizes)})")
        start = int(sizes[:i].sum())
        stop = start + int(sizes[i])
        return self.features[start:stop], self.responses[start:stop]

    def __repr__(self) -> str:
        m = self.manifest
        src = f"setting={m['setting']!r}, seed={m['seed']}" if m["setting"] else f"data_dir={self.data_dir!r}"
        return f"Federation({src}, M={m['clients']}, N={m['total_samples']}, d={m['d']}, k={m['k']})"


def generate(setting: str, seed: int = 0, **params: Any) -> Federation:
    """Generate synthetic setting ``setting`` under ``seed``, in memory (``fedmix generate``).

    ``params`` override the setting's parameters by their public names (:func:`parameters`):
    ``generate("sxy-balanced", 1, d=10, clients=40, sigma=0.2)``. Values are passed to the
    library as the CLI's ``--set key=value`` text: ints as decimal, floats as their shortest
    round-trip text (``repr``), bools ``true``/``false``, strings as given, a list (``p``) as
    comma-separated values. Same seed and parameters ⇒ bit-identical data to the CLI's.

    Raises :class:`FedmixError` (a ``ValueError``) for an unknown setting or parameter or an
    invalid value, with the CLI's message.
    """
    sets = _sets(params, data=True)
    return Federation(_native.generate(_name("setting", setting), _seed(seed), sets))


def load(path: Union[str, "os.PathLike[str]"]) -> Federation:
    """Read a dataset directory (the format ``fedmix generate`` writes; ``fedmix run --data``).

    Every array is validated against ``manifest.json`` as the CLI does. The path is recorded as
    given in the summary of runs on this federation (``summary["data"]["dir"]``).

    Raises :class:`FedmixError` naming the file, field or client at fault.
    """
    p = os.fspath(path)  # TypeError for anything but str, bytes or a path-like object
    return Federation(_native.load(os.fsdecode(p)))


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


def _init_array(init: Any) -> Optional[np.ndarray]:
    # Copied to float64 C order (a float64 array the CLI would read from init.npy), refusing a
    # lossy conversion; the library then checks its shape and entries as it checks `--init`.
    return None if init is None else _real_array("init", init)


def _as_frame(columns: Mapping[str, np.ndarray]) -> Any:
    try:
        import pandas as pd  # optional dependency
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("trace_frame() needs pandas (pip install pandas)") from e
    return pd.DataFrame({k: list(v) if v.dtype == object else v for k, v in columns.items()})


@dataclass(frozen=True)
class Result:
    """What :func:`run` returns: everything a ``fedmix run`` directory holds, as numpy arrays.

    - ``theta_hat``: ``K̂ × d`` float64, the final models in the run's label order
      (``theta_hat.npy``);
    - ``labels``: ``M`` int64, each client's final cluster, ``-1`` = unassigned (``labels.npy``);
    - ``trace``: one numpy array per column of ``trace.csv``, same names and order, one entry
      per round. Floats are ``NaN`` where the CSV field is empty; the integer columns
      ``anchor_clusters`` and ``empty_clusters`` are ``-1`` there; ``phase`` is a str array;
      the list columns (``per_cluster_errors``, ``anchor_errors``, ``sigma_hat``,
      ``step_sizes``) are object arrays of float64 arrays (empty where the CSV field is);
    - ``iterates``: ``rounds × K̂_max × d`` float64 (the models after each round that records
      models — Phase 2 rounds for ``two-phase``; NaN-padded where fewer models existed, as
      ``iterates.npy``), or ``None`` when not saved;
    - ``iterate_labels``: ``rounds × M`` int64 (each client's choice in that round), or
      ``None`` (not saved, or an algorithm without per-round labels);
    - ``iterate_rounds`` / ``label_rounds``: int64, the trace round (1-based) of each entry of
      ``iterates`` / ``iterate_labels``, or ``None`` when not saved;
    - ``summary``: exactly the object ``summary.json`` holds (keys after defaults, seeds,
      data constants, final metrics, termination, communication, wall time of this call).
    """

    algorithm: str
    theta_hat: np.ndarray
    labels: np.ndarray
    trace: Dict[str, np.ndarray]
    summary: Dict[str, Any]
    iterates: Optional[np.ndarray] = None
    iterate_labels: Optional[np.ndarray] = None
    iterate_rounds: Optional[np.ndarray] = None
    label_rounds: Optional[np.ndarray] = None

    @property
    def rounds(self) -> int:
        """Rows of the trace (every round, Phase 1 rounds included)."""
        return len(self.trace["round"])

    def trace_frame(self) -> Any:
        """The trace as a ``pandas.DataFrame`` (needs pandas, an optional dependency)."""
        return _as_frame(self.trace)

    def __repr__(self) -> str:
        f = self.summary.get("final", {})
        return (
            f"Result(algorithm={self.algorithm!r}, rounds={self.rounds}, models={self.theta_hat.shape[0]}, "
            f"distance={f.get('distance')!r}, training_loss={f.get('training_loss')!r})"
        )


def _trace(columns: Dict[str, Any]) -> Dict[str, np.ndarray]:
    out: Dict[str, np.ndarray] = {}
    for k, v in columns.items():
        if isinstance(v, list):
            if k == "phase":
                out[k] = np.array(v, dtype=str)
            else:
                arr = np.empty(len(v), dtype=object)
                for i, x in enumerate(v):
                    arr[i] = x
                out[k] = arr
        else:
            out[k] = v
    return out


def run(
    algorithm: str,
    federation: Federation,
    seed: int = 0,
    init: Optional[Any] = None,
    save_iterates: bool = True,
    **params: Any,
) -> Result:
    """Run ``algorithm`` on ``federation`` under master ``seed``: ``fedmix run``, in-process.

    ``params`` are the run keys (``fedmix run --set key=value``), checked per algorithm exactly
    as the CLI checks them: an unknown key, or one the algorithm does not read, raises
    :class:`FedmixError` (a ``ValueError``) with the CLI's message. Values are converted to
    ``--set`` text as in :func:`generate` (a list becomes a TOML array). The keys of every
    algorithm with their defaults are listed below (and by :func:`keys`).

    ``init``: initial models, ``k × d`` (``R × k × d`` for every IFCA restart; ``two-phase``
    and ``fedavg`` take ``1 × d``), converted (copied) to float64 — what ``--init init.npy``
    supplies, with the same checks (shape, finite entries) and the same meaning. In the summary
    it is recorded as ``"<init array>"`` where the CLI records the file's path.

    ``save_iterates``: keep every round's models and labels (``--save-iterates``); it changes
    nothing else (same bits, same summary).

    ``seed`` drives the algorithm's own streams (initialisation, sampling, anchors…); the same
    seed and data give the same bits as ``fedmix run`` (with ``--setting S --seed s`` the CLI
    uses ``s`` for the data too: pass ``generate(S, s)`` and ``seed=s``). The GIL is released
    while the algorithm runs.
    """
    res = _native.run(
        _name("algorithm", algorithm),
        _federation(federation),
        _seed(seed),
        _init_array(init),
        _flag("save_iterates", save_iterates),
        _sets(params, data=False),
    )
    return _result(res, algorithm)


@dataclass(frozen=True)
class Round:
    """One round of a :class:`Session`.

    ``round`` (1-based, Phase 1 rounds first, as the trace), ``phase`` (``"phase1"`` or
    ``"phase2"``), ``iterate`` (``K̂ × d`` models after the round, or ``None`` in a round that
    records no models, e.g. SXY22 Phase 1), ``labels`` (``M`` int64 choices in the round, or
    ``None``), ``metrics`` (the trace row: column → value).
    """

    round: int
    phase: str
    iterate: Optional[np.ndarray]
    labels: Optional[np.ndarray]
    metrics: Dict[str, Any]


def _result(res: Dict[str, Any], algorithm: str) -> Result:
    summary = json.loads(res["summary_json"])
    return Result(
        algorithm=summary.get("algorithm", algorithm),
        theta_hat=res["theta_hat"],
        labels=res["labels"],
        trace=_trace(res["trace"]),
        summary=summary,
        iterates=res["iterates"],
        iterate_labels=res["iterate_labels"],
        iterate_rounds=res["iterate_rounds"],
        label_rounds=res["label_rounds"],
    )


def _row_metrics(tr: Mapping[str, Any], t: int) -> Dict[str, Any]:
    return {k: (v[t].item() if v.dtype != object and hasattr(v[t], "item") else v[t]) for k, v in tr.items()}


class Session:
    """Step through a run one round at a time: ``for r in Session("phase2", fed, init=θ0): …``.

    For an algorithm whose rounds are one executor loop (``describe(algorithm)["live_session"]``,
    e.g. ``phase2``; the list is ``docs/algorithms.md``'s) the session is
    **live** (:attr:`live` is ``True``): each :meth:`step` runs the next round in the library,
    and between rounds :meth:`state` returns the models and labels the next round starts from.
    The rounds are :func:`run`'s bit for bit — ``run`` drives the same object to its end. What
    precedes the rounds (SXY22 Phase 1 of ``two-phase``, SR-FCA's ONE_SHOT, the ``R > 1`` restarts of ``ifca``
    among which the stepped one is chosen) runs in the
    constructor; its rows are returned first. The other algorithms (e.g. ``local``, ``one-shot``)
    run only to completion: the constructor performs the whole run (exactly
    :func:`run`) and :meth:`step` replays it (:attr:`live` is ``False``).

    :meth:`step` returns the next :class:`Round`, or ``None`` after the last; iterating raises
    ``StopIteration`` there. A round's error (e.g. ``Divergence``) is raised by the
    :meth:`step` that runs it; the session is over after it. :attr:`result` is the full
    :class:`Result` (in a live session, reading it, or :attr:`rounds`, runs the remaining
    rounds first; :meth:`step` still returns them afterwards).
    """

    def __init__(
        self,
        algorithm: str,
        federation: Federation,
        seed: int = 0,
        init: Optional[Any] = None,
        **params: Any,
    ) -> None:
        self._algorithm = _name("algorithm", algorithm)
        self._native = _native.session(
            self._algorithm,
            _federation(federation),
            _seed(seed),
            _init_array(init),
            _sets(params, data=False),
        )
        self._result: Optional[Result] = None
        self._next = 0
        if self._native is None:
            self._result = run(algorithm, federation, seed=seed, init=init, save_iterates=True, **params)
            # The trace row (1-based round) of each saved model set and label vector.
            r = self._result
            self._iterate_at = {} if r.iterate_rounds is None else {int(t): j for j, t in enumerate(r.iterate_rounds)}
            self._labels_at = {} if r.label_rounds is None else {int(t): j for j, t in enumerate(r.label_rounds)}

    @property
    def live(self) -> bool:
        """Whether :meth:`step` runs each round (``False``: it replays a finished run)."""
        return self._native is not None

    @property
    def result(self) -> Result:
        """The whole run's :class:`Result` (a live session runs its remaining rounds first)."""
        if self._result is None:
            self._result = _result(self._native.result(), self._algorithm)
        return self._result

    @property
    def rounds(self) -> int:
        """Number of rounds (rows of the trace) of the whole run."""
        return self.result.rounds

    def state(self) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """The models (``K̂ × d``) and labels (``M``, or ``None``) the next round starts from:
        the start before the first round, the final ones at the end. Live sessions only."""
        if self._native is None:
            raise _error("NotLive", "state() needs a live session (this algorithm runs only to completion)")
        st = self._native.state()
        if st is None:
            raise _error("Failed", "the session's run failed; it has no state")
        return st

    def step(self) -> Optional[Round]:
        """The next round, or ``None`` when the run is over."""
        if self._native is not None:
            row = self._native.next_row()
            if row is None:
                return None
            tr = _trace(row["metrics"])
            return Round(round=int(tr["round"][0]), phase=str(tr["phase"][0]), iterate=row["iterate"],
                         labels=row["labels"], metrics=_row_metrics(tr, 0))
        t = self._next
        r = self.result
        if t >= r.rounds:
            return None
        self._next += 1
        tr = r.trace
        iterate = labels = None
        if t + 1 in self._iterate_at:
            iterate = r.iterates[self._iterate_at[t + 1]]
        if t + 1 in self._labels_at:
            labels = r.iterate_labels[self._labels_at[t + 1]]
        return Round(round=int(tr["round"][t]), phase=str(tr["phase"][t]), iterate=iterate, labels=labels,
                     metrics=_row_metrics(tr, t))

    def __iter__(self) -> Iterator[Round]:
        return self

    def __next__(self) -> Round:
        r = self.step()
        if r is None:
            raise StopIteration
        return r


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """What :func:`validate` returns (``fedmix validate --json``, with arrays).

    - ``passed``: every round within tolerance (and, when both sides gave labels, identical
      cluster choices);
    - ``first_failure``: the first round (1-based) beyond tolerance, or ``None``;
    - ``diagnosis``: what diverged there (cluster choices, or how far each side moved), or ``None``;
    - ``max_rel_deviation`` / ``max_abs_deviation``: per round, ``max|θ_ref − θ_cand| / max|θ_ref|``
      and ``max|θ_ref − θ_cand|`` (NaN when any entry's difference is NaN: never skipped);
      ``worst_model`` / ``worst_coordinate`` where it occurred, or where the round's bad entry is;
    - ``bad_entries``: per round, ``None`` or a dict naming the first entry that fails the round
      whatever the tolerance — ``{"kind": "non_finite", "side": "candidate" | "reference",
      "model", "coordinate", "value": "NaN" | "inf" | "-inf"}``, or ``{"kind": "beyond_models",
      …, "models"}`` for a value where the reference has no model (rounds with fewer models
      than the candidate's model axis: those slots must be NaN padding);
      ``models``: per round, the number of models the reference has; ``candidate_models``: the
      number the candidate has (its model slots that are not all NaN padding);
      ``label_disagreements``: per round, the number of clients whose choice differs (``-1``
      when labels were not compared); ``disagreeing_clients``: their ids per round;
      ``ok``: per round, within tolerance;
    - ``mode``: ``"trajectory"`` or ``"one-step"``; ``failures``: ``[(round, diagnosis), …]``
      for the diagnosed failing rounds (the first only in trajectory mode, every one in one-step
      mode); ``summary``: one line across the failing rounds, or ``None`` when all passed;
    - ``rtol``, ``atol``; ``reference``: the reference algorithm's name;
      ``reference_params``: the keys it read with the values it ran with (``eta`` resolved);
    - ``raw``: the JSON report as a dict.
    """

    passed: bool
    first_failure: Optional[int]
    diagnosis: Optional[str]
    rounds: np.ndarray
    max_rel_deviation: np.ndarray
    max_abs_deviation: np.ndarray
    worst_model: np.ndarray
    worst_coordinate: np.ndarray
    models: np.ndarray
    candidate_models: np.ndarray
    bad_entries: List[Optional[Dict[str, Any]]]
    label_disagreements: np.ndarray
    disagreeing_clients: List[Optional[List[int]]]
    ok: np.ndarray
    rtol: float
    atol: float
    reference: str
    reference_params: Dict[str, Any]
    mode: str
    failures: List[Tuple[int, str]]
    summary: Optional[str]
    raw: Dict[str, Any] = field(repr=False)

    def __bool__(self) -> bool:
        return self.passed


def validate(
    federation: Federation,
    algorithm: str,
    iterates: Any,
    labels: Optional[Any] = None,
    *,
    seed: int = 0,
    init: Optional[Any] = None,
    rtol: float = 1e-9,
    atol: float = 0.0,
    mode: str = "trajectory",
    **params: Any,
) -> Report:
    """Compare another implementation's trajectory with the reference: ``fedmix validate``.

    Reruns ``algorithm`` on ``federation`` with ``seed``, ``init`` and the run keys ``params``
    (checked as :func:`run` checks them) and compares, round by round, the candidate's
    ``iterates`` (``rounds × k × d``: the models *after* each round, ``θ_0`` excluded) and,
    when given, ``labels`` (``rounds × M``: the cluster each client chose *in* the round, ``-1``
    for unassigned). A round is within tolerance when ``max|Δ| ≤ atol + rtol·max|θ_ref|``, no
    entry on either side is NaN or infinite (such an entry fails its round whatever the
    tolerance, and is named in ``bad_entries``), and the labels agree.
    With ``init`` given (and not ``two-phase``), the diagnosis of a failure in round 1 compares
    how far each side moved from the common start.

    Defaults as the CLI's: ``rtol=1e-9``, ``atol=0`` (real numbers, finite and ≥ 0). Candidate
    arrays are copied (to float64 / int64) without loss: ``iterates`` must hold real numbers
    (complex, bool, object or string arrays raise ``TypeError``); ``labels`` must be integers —
    an integer array, or a float array whose entries are all integers — and each ``-1`` or a
    model of its round: NaN, ``1.5`` or a label out of range raises :class:`FedmixError`, as in
    ``fedmix validate --labels``. ``seed`` is an int (``TypeError`` for a float or a bool). A
    candidate with another number of rounds than the reference raises :class:`FedmixError`
    (pass ``rounds=…``), as does another ``d`` or a bad key. Another number of models in a round
    (a candidate that clusters differently; unused slots are NaN padding) is not an error: that
    round fails, ``candidate_models`` beside ``models`` says so, and the diagnosis
    says "the candidate has 4 model(s), the reference 1"; labels may then name the candidate's
    own model slots.

    ``mode="one-step"`` (``fedmix validate --one-step``): round ``t`` of the reference is run from
    the candidate's own models after round ``t − 1`` (round 1 from the common start) and compared
    with the candidate's round ``t``, for every round, so a tie broken differently fails only its
    round and a wrong step fails every round with the same diagnosis (``failures``, ``summary``).
    Refused (:class:`FedmixError`) for an algorithm without one step
    (``describe(algorithm)["one_step"]`` says why).
    """
    mode = _name("mode", mode)
    if mode not in ("trajectory", "one-step"):
        raise _error("InvalidParameter", f"parameter `mode` = {mode!r} is invalid: must be \"trajectory\" or \"one-step\"")
    res = _native.validate(
        _name("algorithm", algorithm),
        _federation(federation),
        _real_array("iterates", iterates),
        None if labels is None else _label_array(labels),
        _seed(seed),
        _init_array(init),
        _tolerance("rtol", rtol),
        _tolerance("atol", atol),
        _sets(params, data=False),
        mode,
    )
    rep = json.loads(res["report_json"])
    rounds = rep["rounds"]
    col = lambda name, dtype: np.array([r[name] for r in rounds], dtype=dtype)  # noqa: E731
    dis = [r["label_disagreements"] for r in rounds]
    return Report(
        passed=bool(rep["passed"]),
        first_failure=rep["first_failure"],
        diagnosis=rep["diagnosis"],
        rounds=col("round", np.int64),
        max_rel_deviation=col("max_rel_deviation", np.float64),
        max_abs_deviation=col("max_abs_deviation", np.float64),
        worst_model=col("worst_model", np.int64),
        worst_coordinate=col("worst_coordinate", np.int64),
        models=col("models", np.int64),
        candidate_models=col("candidate_models", np.int64),
        bad_entries=[r["bad_entry"] for r in rounds],
        label_disagreements=np.array([-1 if x is None else len(x) for x in dis], dtype=np.int64),
        disagreeing_clients=dis,
        ok=col("ok", bool),
        rtol=float(rep["tolerance"]["rtol"]),
        atol=float(rep["tolerance"]["atol"]),
        reference=res["reference"],
        reference_params={k: v for k, v in json.loads(res["reference_params_json"])},
        mode=rep["mode"],
        failures=[(int(f["round"]), f["diagnosis"]) for f in rep["failures"]],
        summary=rep["summary"],
        raw=rep,
    )


# --------------------------------------------------------------------------------------------
# help(fedmix.run): the keys of every algorithm, generated from the library
# --------------------------------------------------------------------------------------------


def _keys_table() -> str:
    lines = ["", "Run keys per algorithm (default; None = set by a rule from the data):", ""]
    for a in algorithms():
        ks = keys(a)
        lines.append(f"    {a}:")
        if not ks:
            lines.append("        (none)")
        for k, v in ks.items():
            lines.append(f"        {k} = {v!r}")
    lines += ["", "What each run key means:", ""]
    for k, doc in _native.key_docs():
        lines.append(f"    {k}: {doc}")
    return "\n".join(lines) + "\n"


if run.__doc__ is not None:
    run.__doc__ += _keys_table()

from . import testing  # noqa: E402  (needs the names above)
