"""`Session` steps (live) or replays `run`'s rounds bit for bit, its state inspectable between rounds; the discovery functions and docstrings come
from the library; parameter values convert to `--set` text exactly; runs are deterministic
across threads (the GIL is released during a run)."""

import threading

import numpy as np
import pytest
from pathlib import Path

import fedmix


@pytest.fixture(scope="module")
def fed():
    return fedmix.generate("sxy-balanced", 2, d=8, clients=60, samples=15)


@pytest.mark.parametrize("algorithm,keys", [("two-phase", {"rounds": 6}), ("ifca", {"rounds": 5}),
                                            ("fedavg", {"rounds": 4}), ("sr-fca", {}),
                                            ("ifca-official", {"ifca_official_inits": 1,
                                                               "ifca_official_iterations": 4,
                                                               "ifca_official_sigma": 0.5,
                                                               "ifca_official_lrs": [0.1]})])
def test_session_replays_run(fed, algorithm, keys):
    res = fedmix.run(algorithm, fed, seed=3, **keys)
    s = fedmix.Session(algorithm, fed, seed=3, **keys)
    rounds = list(s)
    assert len(rounds) == res.rounds == s.rounds
    assert s.step() is None
    with pytest.raises(StopIteration):
        next(s)
    with_models = [r for r in rounds if r.iterate is not None]
    assert len(with_models) == res.iterates.shape[0]
    # Each saved model set is shown at the round that recorded it, not by position.
    assert [r.round for r in with_models] == res.iterate_rounds.tolist()
    for j, r in enumerate(with_models):
        assert r.iterate.tobytes() == res.iterates[j].tobytes()
        if res.iterate_labels is not None:
            assert r.labels.tobytes() == res.iterate_labels[j].tobytes()
    for t, r in enumerate(rounds):
        assert r.round == t + 1 and r.phase == res.trace["phase"][t]
        d = res.trace["distance"][t]
        assert (np.isnan(d) and np.isnan(r.metrics["distance"])) or r.metrics["distance"] == d
    if algorithm == "two-phase":
        assert rounds[0].phase == "phase1" and rounds[0].iterate is None
        assert rounds[-1].phase == "phase2"
    # The last round's models are the run's final models (Phase 2 ends on its last round).
    if algorithm not in ("ifca", "sr-fca", "ifca-official"):  # θ̂ chosen among runs / served models
        assert with_models[-1].iterate.tobytes() == res.theta_hat.tobytes()


@pytest.mark.parametrize("algorithm,keys,live", [
    ("two-phase", {"rounds": 6}, True), ("fedavg", {"rounds": 4, "participation": 0.5}, True),
    ("phase2", {"rounds": 5}, True), ("oracle-labels", {"rounds": 3}, True), ("cfl", {"rounds": 6}, True),
    ("sr-fca", {}, True), ("fedsoft", {"rounds": 5, "fedsoft_interval": 2}, True),
    ("ifca", {"rounds": 5, "restarts": 3}, True), ("local", {}, False), ("one-shot", {"rounds": 5}, True)])
def test_live_session_runs_each_round_on_step(fed, algorithm, keys, live):
    s = fedmix.Session(algorithm, fed, seed=3, **keys)
    assert s.live is live is fedmix.describe(algorithm)["live_session"]
    if not live:
        with pytest.raises(fedmix.FedmixError, match="live session"):
            s.state()
        return
    native = s._native
    assert not native.stopped and native.returned == 0
    seen = []
    while True:
        before_models, before_labels = s.state()
        r = s.step()
        if r is None:
            break
        seen.append(r)
        if r.iterate is None:  # a Phase 1 row, recorded before the first round
            continue
        # The state after the step is the round's models and labels; nothing beyond it has run.
        after_models, after_labels = s.state()
        assert after_models.tobytes() == r.iterate.tobytes()
        if r.labels is not None:
            assert after_labels.tobytes() == r.labels.tobytes()
        assert native.returned == len(seen)
        if r.round < len(seen) + 1 and not native.stopped:
            assert before_models.shape[1] == r.iterate.shape[1]
    assert native.stopped
    res = fedmix.run(algorithm, fed, seed=3, **keys)
    assert [x.round for x in seen] == list(range(1, res.rounds + 1))
    got = s.result
    assert got.theta_hat.tobytes() == res.theta_hat.tobytes()
    assert got.labels.tobytes() == res.labels.tobytes()
    assert got.iterates.tobytes() == res.iterates.tobytes()
    for k, v in res.trace.items():
        if v.dtype == object:
            assert [np.asarray(a).tobytes() for a in got.trace[k]] == [np.asarray(a).tobytes() for a in v], k
        else:
            assert got.trace[k].tobytes() == v.tobytes(), k
    a, b = dict(got.summary), dict(res.summary)
    a.pop("wall_time_seconds"), b.pop("wall_time_seconds")
    assert a == b


def test_live_session_result_runs_the_rest_and_step_still_returns_it(fed):
    s = fedmix.Session("phase2", fed, seed=4, rounds=6)
    first = s.step()
    assert first.round == 1 and not s._native.stopped
    assert s.rounds == 6 and s._native.stopped  # reading the result ran rounds 2–6
    rest = list(s)
    assert [r.round for r in rest] == [2, 3, 4, 5, 6]
    assert rest[-1].iterate.tobytes() == s.result.theta_hat.tobytes()


def test_a_diverging_live_session_raises_at_its_round_and_stays_over(fed):
    # Models at 1e307 overflow the first local gradient (φᵀφθ) to infinity.
    s = fedmix.Session("phase2", fed, seed=4, rounds=50, init=np.full((3, 8), 1e307))
    with pytest.raises(fedmix.FedmixError) as e:
        while s.step() is not None:
            pass
    assert e.value.kind == "Divergence"
    assert s.step() is None
    with pytest.raises(fedmix.FedmixError, match="failed"):
        s.result


def test_same_seed_same_bits_across_threads(fed):
    results = [None, None]

    def work(i):
        results[i] = fedmix.run("two-phase", fed, seed=5, rounds=10)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    a, b = results
    assert a.theta_hat.tobytes() == b.theta_hat.tobytes()
    assert a.iterates.tobytes() == b.iterates.tobytes()
    c = fedmix.run("two-phase", fed, seed=6, rounds=10)
    assert c.theta_hat.tobytes() != a.theta_hat.tobytes()  # the seed matters


def test_discovery_and_help():
    algs = fedmix.algorithms()
    assert algs[0] == "two-phase" and "sr-fca" in algs and len(set(algs)) == len(algs)
    # The names are docs/algorithms.md's rows (generated from the same declaration).
    table = (Path(__file__).resolve().parents[2] / "docs" / "algorithms.md").read_text()
    assert [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")] == algs
    for a in algs:
        d = fedmix.describe(a)
        assert d["name"] == a and d["keys"] == list(fedmix.keys(a)) and d["doc"]
        assert (d["one_step"] is None) == (f"| yes |" in next(
            line for line in table.splitlines() if line.startswith(f"| `{a}` |")))
    assert fedmix.describe("phase2")["live_session"] and not fedmix.describe("local")["live_session"]
    assert fedmix.describe("local")["one_step"].startswith("it has no rounds")
    with pytest.raises(fedmix.FedmixError, match="algorithm"):
        fedmix.describe("two_phase")
    k = fedmix.keys("phase2")
    assert k["eta_gamma"] == 0.8 and k["rounds"] == 400 and k["local_steps"] == 5 and k["eta"] is None
    assert "phase1_iterations" in fedmix.keys("two-phase") and "phase1_iterations" not in k
    assert fedmix.keys("oracle-labels") == {"eta": None, "eta_gamma": 0.8, "local_steps": 5,
                                            "local_solver": "fedavg", "rounds": 400}
    doc = fedmix.run.__doc__
    assert "    sr-fca:" in doc and "srfca_refine_steps = " in doc and "eta_gamma = 0.8" in doc
    st = fedmix.settings()
    assert st["sxy-balanced"]["parameters"]["d"] == 100
    assert "sigma" in fedmix.parameters()
    for f in (fedmix.generate, fedmix.load, fedmix.run, fedmix.validate, fedmix.Session,
              fedmix.testing.assert_matches_reference, fedmix.keys, fedmix.algorithms,
              fedmix.describe):
        assert f.__doc__ and len(f.__doc__) > 40


def test_set_text_round_trips_floats(fed):
    from fedmix import _set_text
    for x in (0.1, 1e-5, 2.1104469268591686, 1 / 3, 1e300, np.float64(0.3), np.float32(0.1)):
        t = _set_text("eta", x, data=False)
        assert float(t) == float(x)
    assert _set_text("k", np.int64(4), False) == "4"
    assert _set_text("x", True, False) == "true"
    assert _set_text("p", [0.2, 0.3, 0.5], data=True) == "0.2,0.3,0.5"
    assert _set_text("ifca_official_lrs", [0.1, 0.5], data=False) == "[0.1, 0.5]"
    # A float key given as np.float64 runs exactly like the same float.
    a = fedmix.run("phase2", fed, seed=1, rounds=3, eta=np.float64(1 / 30))
    b = fedmix.run("phase2", fed, seed=1, rounds=3, eta=1 / 30)
    assert a.theta_hat.tobytes() == b.theta_hat.tobytes()
    assert a.summary["config"]["eta"] == 1 / 30


def test_federation_arrays(fed):
    assert fed.features.shape == (fed.num_samples, 8) and fed.features.dtype == np.float64
    assert fed.client_sizes.sum() == fed.num_samples and fed.client_sizes.dtype == np.int64
    assert fed.theta_star.shape == (3, 8) and fed.labels.shape == (60,)
    assert not fed.features.flags.writeable
    X, y = fed.client(2)
    assert X.shape == (15, 8) and np.shares_memory(X, fed.features)
    # y = φθ*_z + noise: the true model explains client 2's data far better than another's.
    z = fed.labels[2]
    r_true = np.linalg.norm(y - X @ fed.theta_star[z])
    r_other = np.linalg.norm(y - X @ fed.theta_star[(z + 1) % 3])
    assert r_true < r_other
    assert fed.test_features is None


def test_result_fields(fed):
    r = fedmix.run("two-phase", fed, seed=1, rounds=5, save_iterates=False)
    assert r.iterates is None and r.iterate_labels is None
    assert r.theta_hat.shape == (3, 8) and r.labels.shape == (60,)
    assert set(r.trace) >= {"round", "phase", "distance", "per_cluster_errors", "floats_down"}
    assert r.trace["per_cluster_errors"].dtype == object
    assert r.summary["rounds_recorded"] == r.rounds
    full = fedmix.run("two-phase", fed, seed=1, rounds=5)
    assert full.theta_hat.tobytes() == r.theta_hat.tobytes()  # saving iterates changes nothing


def test_trace_frame(fed):
    pd = pytest.importorskip("pandas")
    r = fedmix.run("phase2", fed, seed=1, rounds=4)
    df = r.trace_frame()
    assert isinstance(df, pd.DataFrame) and len(df) == 4
    assert list(df.columns) == list(r.trace)
