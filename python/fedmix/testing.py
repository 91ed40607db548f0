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

__all__ = ["assert_matches_reference", "assert_each_step_matches_reference"]


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
    mode: str = "trajectory",
    **params: Any,
) -> None:
    """Assert that a trajectory matches the fedmix reference round by round.

    ``mode="one-step"``: as :func:`assert_each_step_matches_reference`.

    ``iterates``: ``rounds × k × d`` (the models after each round, ``θ_0`` excluded);
    ``labels``: ``rounds × M`` (each client's cluster choice in each round) or ``None``.
    The reference is :func:`fedmix.validate` of ``algorithm`` on ``federation`` from ``init``
    (``k × d``; ``None`` to let the seed draw it, as the reference would) with the run keys
    ``params``. A round passes when ``max|θ_ref − θ| ≤ atol + rtol·max|θ_ref|`` and every client
    chose the same cluster; a NaN or infinite entry fails its round whatever the tolerance.

    Passes silently, or raises ``AssertionError`` naming the first round that diverged, its
    deviation (and the first NaN or infinite entry, when that is what failed it), the rounds
    beyond tolerance, the tolerance and the diagnosis; another number of models than the
    reference's in a round is such a mismatch ("the candidate has 4 model(s), the reference 1").
    Bad input (another ``d``, another number of rounds, an unknown key, a label that is not an
    integer) raises
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
        mode=mode,
        **params,
    )
    if rep.passed:
        return
    if rep.mode == "one-step":
        raise AssertionError(_one_step_text(rep, rtol, atol))
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


def assert_each_step_matches_reference(
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
    """Assert that every round of a trajectory is the reference's round from the candidate's
    own previous models (one-step, teacher-forced: :func:`fedmix.validate` with
    ``mode="one-step"``).

    Round ``t`` of the reference runs from the candidate's models after round ``t − 1`` (round 1
    from ``init``, or the reference's own start) and must match the candidate's round ``t`` under
    the tolerance rule of :func:`assert_matches_reference`. Unlike it, every failing round is
    judged on its own: a tie broken differently fails only its round, a wrong step every round.
    Raises ``AssertionError`` listing the failing rounds, each with its diagnosis (the first
    ten), and what they have in common; :class:`fedmix.FedmixError` for bad input or an
    algorithm without a one-step round (``fedmix.describe(algorithm)["one_step"]`` says why).
    """
    assert_matches_reference(
        iterates,
        labels,
        federation,
        algorithm,
        init=init,
        seed=seed,
        rtol=rtol,
        atol=atol,
        mode="one-step",
        **params,
    )


def _one_step_text(rep: "fedmix.Report", rtol: float, atol: float) -> str:
    """The failure message of a one-step report: the summary, then each failing round."""
    shown = [f"  {d}" for _, d in rep.failures[:10]]
    more = len(rep.failures) - len(shown)
    if more > 0:
        shown.append(f"  … and {more} more failing round(s)")
    return (
        f"one-step comparison with the fedmix reference ({rep.reference}): "
        f"{len(rep.failures)} of {len(rep.rounds)} round(s) differ\n"
        f" across rounds: {rep.summary}\n"
        + "\n".join(shown)
        + f"\n tolerance: rtol={rtol!r}, atol={atol!r}\n reference keys: "
        + " ".join(f"{k}={v}" for k, v in rep.reference_params.items())
    )
