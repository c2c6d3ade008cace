"""The lab's two models, and how to cut a model into pipeline chunks.

Each model is an ``nn.Sequential`` of *layers* (a layer is one block: a linear or convolution
with its activation), the units :func:`split_model` cuts between.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from ppedu.validate import one_of, whole


def mlp(layers: int = 8, hidden: int = 128) -> nn.Sequential:
    """A multi-layer perceptron for 28×28 digits: ``layers`` linear layers (ReLU between them).

    >>> import torch
    >>> model = mlp(layers=3, hidden=32)
    >>> len(model), model(torch.zeros(2, 1, 28, 28)).shape
    (3, torch.Size([2, 10]))
    """
    if isinstance(layers, bool) or not isinstance(layers, int) or layers < 2:
        raise ValueError(f"an MLP needs at least 2 layers (got layers={layers!r})")
    first = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, hidden), nn.ReLU())
    middle = [nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()) for _ in range(layers - 2)]
    return nn.Sequential(first, *middle, nn.Linear(hidden, 10))


def cnn(channels: int = 16) -> nn.Sequential:
    """A small convolutional network for 28×28 digits: four 3×3 convolutions (two max-pools),
    then two linear layers; six layers in all.

    >>> import torch
    >>> model = cnn(channels=4)
    >>> len(model), model(torch.zeros(2, 1, 28, 28)).shape
    (6, torch.Size([2, 10]))
    """
    c = channels
    return nn.Sequential(
        nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU()),
        nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
        nn.Sequential(nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU()),
        nn.Sequential(nn.Conv2d(2 * c, 2 * c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
        nn.Sequential(nn.Flatten(), nn.Linear(2 * c * 7 * 7, 64), nn.ReLU()),
        nn.Linear(64, 10),
    )


#: The networks by the CLI's names.
NETWORKS: dict[str, Callable[[], nn.Sequential]] = {"mlp": mlp, "cnn": cnn}


def build_model(name: str) -> nn.Sequential:
    """A fresh model by name (``mlp`` or ``cnn``).

    >>> len(build_model("cnn"))
    6
    """
    return NETWORKS[one_of("model", name, NETWORKS)]()


def split_model(model: nn.Sequential, chunks: int) -> list[nn.Sequential]:
    """Cut ``model`` into ``chunks`` consecutive pieces of whole layers, as even as possible
    (earlier chunks take the extra layer). The pieces share the model's parameters.

    >>> [len(c) for c in split_model(mlp(layers=8), 3)]
    [3, 3, 2]
    """
    whole("chunks", chunks)
    layers = list(model)
    if chunks > len(layers):
        raise ValueError(f"cannot cut a model of {len(layers)} layers into {chunks} chunks (at most one chunk per layer)")
    size, extra = divmod(len(layers), chunks)
    out, start = [], 0
    for c in range(chunks):
        end = start + size + (c < extra)
        out.append(nn.Sequential(*layers[start:end]))
        start = end
    return out
