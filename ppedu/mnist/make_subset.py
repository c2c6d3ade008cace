"""Regenerate the MNIST subset shipped in ``ppedu/mnist/data/`` from the four standard files.

    python -m ppedu.mnist.make_subset /path/to/mnist [--train 10000] [--test 2000]

The subset is the first ``--train`` training and first ``--test`` test images with their
labels; the output is byte for byte the same on every run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ppedu.mnist.data import FILES, SHIPPED, _find, read_idx, write_idx


def make_subset(source: Path, target: Path = SHIPPED, train: int = 10_000, test: int = 2_000) -> list[Path]:
    """Copy the first ``train``/``test`` images and labels of MNIST in ``source`` to ``target``.

    >>> import tempfile
    >>> from ppedu.mnist.data import SHIPPED
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in make_subset(SHIPPED, Path(d), train=3, test=2)][:2]
    ['train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz']
    """
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for split, count in (("train", train), ("test", test)):
        for name in FILES[split]:
            out = target / f"{name}.gz"
            write_idx(out, read_idx(_find(source, name), count))
            written.append(out)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="folder with the four standard MNIST IDX files (.gz or not)")
    parser.add_argument("--train", type=int, default=10_000)
    parser.add_argument("--test", type=int, default=2_000)
    parser.add_argument("--out", type=Path, default=SHIPPED)
    args = parser.parse_args(argv)
    for path in make_subset(args.source, args.out, args.train, args.test):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
