"""MNIST loads offline: the shipped subset, a full copy named by PPEDU_MNIST_DIR, clear errors."""

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from ppedu.mnist import load_mnist
from ppedu.mnist.data import FILES, SHIPPED, _find, read_idx
from ppedu.mnist.make_subset import make_subset

# CI lays shared/ beside the clone (a worktree finds it at /work/shared); the project must not
# need it, so these tests skip without it.
FULL = next((d for d in (Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist",
                         Path("/work/shared/data/mnist")) if d.is_dir()), Path("no-full-mnist"))
needs_full = pytest.mark.skipif(not FULL.is_dir(), reason="no full MNIST copy in ../shared/data/mnist")


def test_shipped_subset_has_10000_train_and_2000_test_digits():
    images, labels = load_mnist("train")
    assert images.shape == (10_000, 1, 28, 28) and images.dtype == torch.float32
    assert labels.shape == (10_000,) and labels.dtype == torch.int64
    assert set(labels.tolist()) == set(range(10))
    assert abs(images.mean().item()) < 0.1 and abs(images.std().item() - 1) < 0.1  # normalised
    assert load_mnist("test")[0].shape == (2_000, 1, 28, 28)


def test_loading_is_deterministic_and_limit_takes_the_first_images():
    a, la = load_mnist("test", limit=50)
    b, lb = load_mnist("test")
    assert torch.equal(a, b[:50]) and torch.equal(la, lb[:50])


def test_the_subset_is_packaged_with_its_attribution():
    assert {p.name for p in SHIPPED.glob("*.gz")} == {f"{n}.gz" for pair in FILES.values() for n in pair}
    text = (SHIPPED / "README.md").read_text()
    assert all(name in text for name in ("LeCun", "Cortes", "Burges", "CC BY-SA 3.0"))


@needs_full
def test_subset_is_the_head_of_the_full_copy_and_regenerates_byte_for_byte(tmp_path):
    for name in (n for pair in FILES.values() for n in pair):
        shipped = read_idx(SHIPPED / f"{name}.gz")
        assert np.array_equal(read_idx(_find(FULL, name), len(shipped)), shipped)
    make_subset(FULL, tmp_path, train=1)  # recompressing the training images takes long: the test split
    for name in FILES["test"]:
        assert (tmp_path / f"{name}.gz").read_bytes() == (SHIPPED / f"{name}.gz").read_bytes()


@needs_full
def test_ppedu_mnist_dir_reads_a_full_copy(monkeypatch):
    monkeypatch.setenv("PPEDU_MNIST_DIR", str(FULL))
    images, labels = load_mnist("test")
    assert images.shape == (10_000, 1, 28, 28)
    monkeypatch.delenv("PPEDU_MNIST_DIR")
    assert torch.equal(load_mnist("test")[1], labels[:2000])


def test_uncompressed_files_load_too(tmp_path, monkeypatch):
    for name in FILES["test"]:
        with gzip.open(SHIPPED / f"{name}.gz") as src, open(tmp_path / name, "wb") as dst:
            shutil.copyfileobj(src, dst)
    monkeypatch.setenv("PPEDU_MNIST_DIR", str(tmp_path))
    assert torch.equal(load_mnist("test", limit=7)[1], torch.from_numpy(read_idx(SHIPPED / "t10k-labels-idx1-ubyte.gz", 7).astype(np.int64)))


def test_a_missing_file_is_named_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PPEDU_MNIST_DIR", str(tmp_path))
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte\[\.gz\] not found in .*PPEDU_MNIST_DIR") as error:
        load_mnist("train")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("split,limit", [("validation", None), ("train", 0), ("test", 2.5)])
def test_bad_arguments_name_the_rule(split, limit):
    with pytest.raises(ValueError, match="split must be|limit must be"):
        load_mnist(split, limit)
