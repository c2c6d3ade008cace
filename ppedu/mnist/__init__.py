"""The lab: a real MNIST model cut into pipeline chunks and trained under any ppedu schedule.

>>> from ppedu.mnist import load_mnist, mlp, split_model
>>> [len(c) for c in split_model(mlp(), 4)]
[2, 2, 2, 2]
"""

from ppedu.mnist.data import load_mnist
from ppedu.mnist.executor import StepResult, max_grad_diff, reference_gradients, run_schedule
from ppedu.mnist.models import MODELS, build_model, cnn, mlp, split_model

__all__ = ["MODELS", "StepResult", "build_model", "cnn", "load_mnist", "max_grad_diff", "mlp", "reference_gradients",
           "run_schedule", "split_model"]
