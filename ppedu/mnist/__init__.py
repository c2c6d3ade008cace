"""The lab: a real MNIST model cut into pipeline chunks and trained under any ppedu schedule.

>>> from ppedu.mnist import load_mnist, mlp, split_model
>>> [len(c) for c in split_model(mlp(), 4)]
[2, 2, 2, 2]

Names load on first use, so that ``ppedu simulate`` does not pay for importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppedu.mnist.data import load_mnist
    from ppedu.mnist.executor import StepResult, max_grad_diff, reference_gradients, run_schedule
    from ppedu.mnist.measure import AGREEMENT, gap, measure_step
    from ppedu.mnist.models import NETWORKS, build_model, cnn, mlp, split_model
    from ppedu.mnist.plot import plot_processes, plot_step
    from ppedu.mnist.processes import ProcessRun, run_processes
    from ppedu.mnist.training import TrainResult, train

_HOME = {
    "load_mnist": "data",
    **dict.fromkeys(["StepResult", "max_grad_diff", "reference_gradients", "run_schedule"], "executor"),
    **dict.fromkeys(["AGREEMENT", "gap", "measure_step"], "measure"),
    **dict.fromkeys(["NETWORKS", "build_model", "cnn", "mlp", "split_model"], "models"),
    **dict.fromkeys(["TrainResult", "train"], "training"),
    **dict.fromkeys(["plot_processes", "plot_step"], "plot"),
    **dict.fromkeys(["ProcessRun", "run_processes"], "processes"),
}
__all__ = sorted(_HOME)
#: What a light install (no torch) says when the lab is asked for.
NO_TORCH = ("the MNIST lab needs PyTorch, which this install of the course left out (a light install): install the "
            "course again without --light (`python install.py`, or `make lab`)")


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'ppedu.mnist' has no attribute {name!r}")
    try:
        module = importlib.import_module(f"ppedu.mnist.{_HOME[name]}")
    except ModuleNotFoundError as error:
        if error.name != "torch":
            raise
        raise ModuleNotFoundError(NO_TORCH, name="torch") from None
    return getattr(module, name)
