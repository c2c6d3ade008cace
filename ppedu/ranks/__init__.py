"""The scale lab on PyTorch's own engines (chapter 15): collectives timed across real processes, data parallelism and
sharding by hand and by PyTorch (DDP, FSDP2), each checked against the unsharded model — on CPU processes over gloo,
on GPUs over NCCL.

>>> from ppedu.ranks import bucket_plan
>>> bucket_plan([8, 8, 8], cap=16)
[[2, 1], [0]]

Names load on first use (each module imports torch).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppedu.ranks.data_parallel import METHODS, Buckets, allreduce_each, allreduce_flat, bucket_plan, compare
    from ppedu.ranks.launch import RanksFailed, backend_for, run_ranks
    from ppedu.ranks.plot import plot_busbw
    from ppedu.ranks.sharding import Zero1, adam_in, run_fsdp2, run_zero1
    from ppedu.ranks.timing import against_model, fit, measure, table
    from ppedu.ranks.traffic import Traffic
    from ppedu.ranks.workload import Workload

_HOME = {
    **dict.fromkeys(["METHODS", "Buckets", "allreduce_each", "allreduce_flat", "bucket_plan", "compare"],
                    "data_parallel"),
    **dict.fromkeys(["RanksFailed", "backend_for", "run_ranks"], "launch"),
    **dict.fromkeys(["Zero1", "adam_in", "run_fsdp2", "run_zero1"], "sharding"),
    **dict.fromkeys(["against_model", "fit", "measure", "table"], "timing"),
    "plot_busbw": "plot",
    "Traffic": "traffic",
    "Workload": "workload",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'ppedu.ranks' has no attribute {name!r}")
    try:
        module = importlib.import_module(f"ppedu.ranks.{_HOME[name]}")
    except ModuleNotFoundError as error:
        if error.name != "torch":
            raise
        from ppedu.mnist import NO_TORCH

        raise ModuleNotFoundError(NO_TORCH.replace("MNIST lab", "scale lab"), name="torch") from None
    return getattr(module, name)
