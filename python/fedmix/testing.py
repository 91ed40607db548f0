"""Assertions for testing another implementation against fedmix, in the style of ``numpy.testing``.

.. code-block:: python

    import fedmix, fedmix.testing
    fed = fedmix.generate("sxy-balanced", seed=1, d=10, clients=40, samples=20)
    iterates, labels = my_phase2(fed, theta0, eta=0.05, rounds=20)   # rounds × k × d, rounds × M
    fedmix.testing.assert_matches_reference(iterates, labels, fed, "phase2",
                                            init=theta0, eta=0.05, rounds=20)
"""

from __future__ import annotations

from typing import Any, Optional

import fedmix

__all__ = ["assert_matches_reference"]


def assert_matches_reference(
    iterates: Any,
    labels: Optional[Any],
    federation: "fedmix.Federation",
    algorithm: str,
    *,
    init: Optional[Any],
    seed: int = 0,
    rtol: float = 1e-9,
    atol: float = 0.0,
    **params: Any,
) -> None:
    """Assert that a trajectory matches the fedmix reference round by round.

    ``iterates``: ``rounds × k × d`` (the models after each round, ``θ_0`` excluded);
    ``labels``: ``rounds × M`` (each client's cluster choice in each round) or ``None``.
    The reference is :func:`fedmix.validate` of ``algorithm`` on ``federation`` from ``init``
    (``k × d``; ``None`` to let the seed draw it, as the reference would) with the run keys
    ``params``. A round passes when ``max|θ_ref − θ| ≤ atol + rtol·max|θ_ref|`` and every client
    chose the same cluster; a NaN or infinite entry fails its round whatever the tolerance.

    Passes silently, or raises ``AssertionError`` naming the first round that diverged, its
    deviation (and the first NaN or infinite entry, when that is what failed it), the rounds
    beyond tolerance, the tolerance and the diagnosis. Bad input (a wrong shape, another number
    of rounds, an unknown key, a label that is not an integer) raises
    :class:`fedmix.FedmixError` instead, as it is not a mismatch; an argument of the wrong type
    (a float seed, a complex array) raises ``TypeError``, as :func:`fedmix.validate` does.
    """
    rep = fedmix.validate(
        federation,
        algorithm,
        iterates,
        labels,
        seed=seed,
        init=init,
        rtol=rtol,
        atol=atol,
        **params,
    )
    if rep.passed:
        return
    t = rep.first_failure
    assert t is not None
    i = t - 1
    bad = [int(r) for r in rep.rounds[~rep.ok]]
    shown = ", ".join(str(r) for r in bad[:10]) + (", …" if len(bad) > 10 else "")
    dis = rep.label_disagreements[i]
    labels_text = "labels not compared" if dis < 0 else f"{dis} client(s) chose a different cluster"
    entry = rep.bad_entries[i]
    entry_text = "" if entry is None else f"; first bad entry: {_entry_text(entry)}"
    raise AssertionError(
        f"trajectory differs from the fedmix reference ({rep.reference}) from round {t} of "
        f"{len(rep.rounds)} ({len(bad)} round(s) beyond tolerance: {shown})\n"
        f" round {t}: max relative deviation {rep.max_rel_deviation[i]:.3e} "
        f"(max abs. {rep.max_abs_deviation[i]:.3e}, model {rep.worst_model[i]}, "
        f"coordinate {rep.worst_coordinate[i]}){entry_text}; {labels_text}\n"
        f" tolerance: rtol={rtol!r}, atol={atol!r}\n"
        f" diagnosis: {rep.diagnosis}\n"
        f" reference keys: "
        + " ".join(f"{k}={v}" for k, v in rep.reference_params.items())
    )


def _entry_text(e: Any) -> str:
    """A report's bad entry in words (``validate``'s ``bad_entries`` item)."""
    if e["kind"] == "non_finite":
        return f"{e['side']} model {e['model']}, coordinate {e['coordinate']} is {e['value']}"
    return (
        f"candidate model {e['model']}, coordinate {e['coordinate']} is {e['value']}, but the "
        f"reference has {e['models']} model(s) in this round (must be NaN padding)"
    )
