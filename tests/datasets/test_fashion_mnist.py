"""Fashion-MNIST from the Debian package (skipped where it is not installed)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from dpopt.datasets import load, load_fashion_mnist
from dpopt.datasets.fashion_mnist import FASHION_MNIST_DIR

INSTALLED = (FASHION_MNIST_DIR / "t10k-images-idx3-ubyte.gz").is_file()


@pytest.mark.skipif(not INSTALLED, reason="apt-get install dataset-fashion-mnist")
def test_test_split_shapes_labels_and_scaling():
    ds = load("fashion-mnist:test")
    assert ds.X.shape == (10_000, 784) and ds.X.dtype == np.float32
    assert ds.X.min() == -1.0 and ds.X.max() == 1.0
    np.testing.assert_array_equal(np.bincount(ds.y.astype(int)), [1000] * 10)
    assert "10 classes" in ds.summary() and "MIT" in ds.source
    binary = load_fashion_mnist("test", positive_class="Sneaker")
    assert np.sum(binary.y == 1) == 1000 and binary.classes == ("not Sneaker", "Sneaker")


def test_idx_reader_and_missing_package(tmp_path):
    # a tiny synthetic IDX pair in the layout of the real files
    images = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    header = bytes([0, 0, 8, 3]) + b"".join(int(v).to_bytes(4, "big") for v in images.shape)
    labels = np.array([3, 7], dtype=np.uint8)
    lab_header = bytes([0, 0, 8, 1]) + (2).to_bytes(4, "big")
    for prefix in ("train", "t10k"):
        (tmp_path / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(header + images.tobytes()))
        (tmp_path / f"{prefix}-labels-idx1-ubyte.gz").write_bytes(gzip.compress(lab_header + labels.tobytes()))
    ds = load_fashion_mnist("all", directory=tmp_path, dtype=np.float64)
    assert ds.X.shape == (4, 784) and list(ds.groups) == ["train", "train", "test", "test"]
    np.testing.assert_allclose(ds.X[0, :3], np.array([0, 1, 2]) / 127.5 - 1)
    np.testing.assert_array_equal(ds.y, [3, 7, 3, 7])
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist"):
        load_fashion_mnist(directory=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="positive_class must be 0..9"):
        load_fashion_mnist("test", directory=tmp_path, positive_class=12)
