"""What PyTorch and Megatron-LM accept, read in their source: the rules on ``p`` and ``m`` the course
states about them, each with the file it comes from (``tests/test_frameworks.py`` builds PyTorch's
schedules and sees them accept or refuse as these rules say).

- PyTorch 2.13, ``torch/distributed/pipelining/schedules.py``: ``ScheduleInterleaved1F1B`` and
  ``ScheduleInterleavedZeroBubble`` run ``max(1, m // p)`` rounds of ``m // rounds`` micro-batches
  and raise ``ValueError`` unless ``m`` is a multiple of the rounds; ``Schedule1F1B`` raises unless
  ``m ≥ p`` (its stages); ``ScheduleDualPipeV`` unless ``m ≥ 2p`` (its stages, two per rank).
  ``ScheduleGPipe``, ``ScheduleLoopedBFS`` and ``ScheduleZBVZeroBubble`` check nothing on ``m``.
- Megatron-LM, ``megatron/core/pipeline_parallel/schedules.py``
  (``forward_backward_pipelining_with_interleaving``): the group size
  ``microbatch_group_size_per_vp_stage`` must lie in ``[p, m]`` (``ValueError``) and leave a last
  group ``m mod group`` of 0 or at least ``p`` (``RuntimeError``); ``megatron/core/model_parallel_config.py``
  sets the group to ``p`` when it is not given. So by default ``m`` must be a multiple of ``p``;
  any other ``m ≥ p`` needs the group set (``group = m`` always passes); ``m < p`` is refused.

>>> pytorch_accepts("interleaved", 4, 10), pytorch_accepts("interleaved", 4, 9), pytorch_accepts("interleaved", 4, 3)
(True, False, True)
>>> megatron_accepts(4, 10), megatron_accepts(4, 10, group=5), megatron_accepts(4, 3, group=3)
(False, True, False)
"""

from __future__ import annotations

from ppedu.validate import one_of, require_counts

#: Where each rule is read.
PYTORCH_SOURCE = "torch/distributed/pipelining/schedules.py (torch 2.13)"
MEGATRON_SOURCE = ("megatron/core/pipeline_parallel/schedules.py (forward_backward_pipelining_with_interleaving) and "
                   "megatron/core/model_parallel_config.py (microbatch_group_size_per_vp_stage defaults to p)")

#: The course's schedules PyTorch has, and the least ``m`` each asks for in stages (``None``: none).
_PYTORCH_ROUNDS = frozenset({"interleaved", "interleaved-zb"})
_PYTORCH_LEAST = {"gpipe": None, "1f1b": 1, "looped-bfs": None, "zb-v": None, "dualpipe-v": 2}


def pytorch_accepts(name: str, p: int, m: int) -> bool:
    """Whether PyTorch 2.13's schedule for the course's ``name`` takes ``m`` micro-batches on ``p`` ranks
    (:data:`PYTORCH_SOURCE`; any number of stages per rank where the schedule takes several).

    >>> [m for m in range(1, 17) if not pytorch_accepts("interleaved", 4, m)]
    [9, 11, 13, 14]
    >>> pytorch_accepts("1f1b", 4, 3), pytorch_accepts("dualpipe-v", 4, 7)
    (False, False)
    """
    one_of("PyTorch schedule", name, (*_PYTORCH_ROUNDS, *_PYTORCH_LEAST))
    require_counts(p=p, m=m)
    if name in _PYTORCH_ROUNDS:
        return m % max(1, m // p) == 0
    least = _PYTORCH_LEAST[name]
    return least is None or m >= least * p


def megatron_accepts(p: int, m: int, group: int | None = None) -> bool:
    """Whether Megatron-LM's interleaved schedule runs ``m`` micro-batches on ``p`` stages in groups of
    ``group`` (``None``: its default, ``p``) (:data:`MEGATRON_SOURCE`).

    >>> [m for m in range(1, 13) if megatron_accepts(4, m)], megatron_accepts(4, 6, group=6)
    ([4, 8, 12], True)
    """
    require_counts(p=p, m=m)
    group = p if group is None else group
    return p <= group <= m and (m % group == 0 or m % group >= p)


def megatron_runs(p: int, m: int) -> bool:
    """Whether some group size lets Megatron-LM's interleaved schedule run ``m`` micro-batches on ``p``
    stages: exactly when ``m ≥ p`` (``group = m`` always passes).

    >>> megatron_runs(4, 26), megatron_runs(4, 3)
    (True, False)
    """
    return any(megatron_accepts(p, m, g) for g in range(p, m + 1))
