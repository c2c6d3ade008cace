"""Failures at scale: how often a synchronous job stops, what a checkpoint costs, how often to take one, and what is
left of the time (goodput).

A synchronous step needs every GPU, so one failure stops the job: with ``N`` GPUs that each fail at rate ``λ``, the
job fails at ``N·λ`` — its mean time between failures shrinks as ``1/N``. After a failure the job restarts from its
last checkpoint: it loses the restart time ``R`` and, on average, half the interval ``τ`` between checkpoints;
every checkpoint pauses it for ``C``. To first order the share of time that trains (**goodput**) is
``1 − C/τ − λ_job·(τ/2 + R)``, largest at ``τ* = √(2C/λ_job)`` (Young, 1974; Daly, 2006, adds higher-order
terms, which matter only when ``C`` is not small against the MTBF).

>>> round(young_daly(checkpoint_s=10.0, mtbf_s=3600.0), 1)  # checkpoint every ~4.5 min if the job fails hourly
268.3
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ppedu.validate import whole


def young_daly(checkpoint_s: float, mtbf_s: float) -> float:
    """The checkpoint interval (seconds) that loses the least time: ``√(2·C·MTBF)``."""
    _positive(checkpoint_s=checkpoint_s, mtbf_s=mtbf_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def goodput(interval_s: float, checkpoint_s: float, mtbf_s: float, restart_s: float) -> float:
    """The share of time that trains (first order): ``1 − C/τ − (τ/2 + R)/MTBF``.

    >>> round(goodput(268.3, 10.0, 3600.0, 600.0), 3)  # hourly failures that cost 10 minutes each
    0.759
    """
    _positive(interval_s=interval_s, checkpoint_s=checkpoint_s, mtbf_s=mtbf_s)
    return 1.0 - checkpoint_s / interval_s - (interval_s / 2.0 + restart_s) / mtbf_s


def job_mtbf_s(gpus: int, failures: int, days: float, on_gpus: int) -> float:
    """The mean time between failures (seconds) of a job on ``gpus`` GPUs, from ``failures`` seen in ``days`` on a
    job of ``on_gpus``: each GPU's failure rate is ``failures / (days · on_gpus)``, a job's ``gpus`` times that.

    >>> round(job_mtbf_s(16384, 419, 54, 16384) / 3600, 2), round(job_mtbf_s(1024, 419, 54, 16384) / 3600, 1)
    (3.09, 49.5)
    """
    whole("gpus", gpus), whole("on_gpus", on_gpus), whole("failures", failures)
    _positive(days=days)
    return days * 86400.0 / failures * on_gpus / gpus


@dataclass(frozen=True)
class Budget:
    """What a measured share of training time allows: the checkpoint interval that loses least, and the restart
    time per failure the rest of the loss leaves."""

    interval_s: float
    checkpoint_share: float
    lost_work_share: float
    restart_s: float


def restart_budget(effective: float, checkpoint_s: float, mtbf_s: float) -> Budget:
    """Given a job's effective training time (``effective``, a share), checkpoints taking ``checkpoint_s`` and
    failures every ``mtbf_s``: at the Young–Daly interval, what share goes to checkpoints and to lost work, and
    the most restart time per failure that still leaves ``effective`` (0 if nothing is left).

    >>> b = restart_budget(0.9, 10.0, 3600.0)
    >>> round(b.interval_s), round(b.restart_s)
    (268, 92)
    """
    if not 0 < effective < 1:
        raise ValueError(f"effective training time is a share between 0 and 1 (got {effective!r})")
    tau = young_daly(checkpoint_s, mtbf_s)
    ckpt, lost = checkpoint_s / tau, tau / 2.0 / mtbf_s
    return Budget(tau, ckpt, lost, max(0.0, (1.0 - effective - ckpt - lost) * mtbf_s))


def _positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds or days (got {value!r})")
