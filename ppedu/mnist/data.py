"""Real MNIST digits, offline: a subset shipped inside the package, or a full copy you point to.

The shipped subset (``ppedu/mnist/data/``) holds the first 10,000 training and the first 2,000
test images of MNIST (LeCun, Cortes and Burges; CC BY-SA 3.0), in the standard gzip IDX format;
``python -m ppedu.mnist.make_subset`` regenerates it from the four standard files. Set
``PPEDU_MNIST_DIR`` to a folder with the four standard files (``.gz`` or not) to use all of MNIST.
"""

from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from ppedu.validate import whole

if TYPE_CHECKING:
    import torch

Split = Literal["train", "test"]

#: The standard file names, without ``.gz``, per split: (images, labels).
FILES: dict[str, tuple[str, str]] = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
SHIPPED = Path(__file__).with_name("data")
# The usual normalisation: the training set's pixel mean and standard deviation (on a 0…1 scale).
MEAN, STD = 0.1307, 0.3081


def load_mnist(split: Split, limit: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``split`` ("train" or "test") as (images, labels): float32 ``N×1×28×28`` normalised
    to mean 0 and unit variance, and int64 labels; at most ``limit`` images, always the first ones.

    Reads ``$PPEDU_MNIST_DIR`` when set, else the subset shipped with the package.

    >>> images, labels = load_mnist("test", limit=5)
    >>> images.shape, images.dtype, labels.tolist()
    (torch.Size([5, 1, 28, 28]), torch.float32, [7, 2, 1, 0, 4])
    """
    import torch

    images, labels = mnist_arrays(split, limit)
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return (x - MEAN) / STD, torch.from_numpy(labels.astype(np.int64))


def mnist_arrays(split: Split, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``split`` as numpy arrays, without PyTorch: ``N×28×28`` uint8 images and uint8 labels (the first
    ``limit``), from ``$PPEDU_MNIST_DIR`` or the shipped subset.

    >>> images, labels = mnist_arrays("test", limit=3)
    >>> images.shape, labels.tolist()
    ((3, 28, 28), [7, 2, 1])
    """
    if split not in FILES:
        raise ValueError(f"split must be 'train' or 'test' (got {split!r})")
    if limit is not None:
        whole("limit", limit)
    folder = Path(os.environ["PPEDU_MNIST_DIR"]) if os.environ.get("PPEDU_MNIST_DIR") else SHIPPED
    images, labels = (read_idx(_find(folder, name), limit) for name in FILES[split])
    if len(images) != len(labels):
        raise ValueError(f"MNIST in {folder} has {len(images)} {split} images but {len(labels)} labels")
    return images, labels


def read_idx(path: Path, limit: int | None = None) -> np.ndarray:
    """An IDX file (gzip or plain) as a uint8 array, its first axis cut to ``limit``."""
    with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
        zero, dtype, ndim = struct.unpack(">HBB", f.read(4))
        if zero != 0 or dtype != 0x08:
            raise ValueError(f"{path} is not an unsigned-byte IDX file")
        shape = list(struct.unpack(f">{ndim}I", f.read(4 * ndim)))
        if limit is not None:
            shape[0] = min(shape[0], limit)
        data = np.frombuffer(f.read(int(np.prod(shape))), dtype=np.uint8)
    if data.size != np.prod(shape):
        raise ValueError(f"{path} is truncated")
    return data.reshape(shape)


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write a uint8 array as a gzip IDX file, byte for byte reproducible (no time stamp)."""
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(gzip.compress(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes(), mtime=0))


def _find(folder: Path, name: str) -> Path:
    for candidate in (folder / f"{name}.gz", folder / name):
        if candidate.is_file():
            return candidate
    raise ValueError(f"MNIST file {name}[.gz] not found in {folder} (set PPEDU_MNIST_DIR to a folder with the "
                     "four standard MNIST IDX files)")
