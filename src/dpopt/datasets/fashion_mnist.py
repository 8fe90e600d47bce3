"""Fashion-MNIST from Debian's package ``dataset-fashion-mnist`` (read by path, MIT licence).

``apt-get install dataset-fashion-mnist`` puts the four original IDX files under
``/usr/share/datasets/fashion-mnist/`` (Xiao, Rasul & Vollgraf 2017, Zalando SE,
MIT).  60,000 training and 10,000 test images of 28 × 28 grey pixels, 10 classes.
Pixels are rescaled to ``[−1, 1]`` as chen2020 §5.2 does for its image sets; no
row-norm bound is imposed by default (the neural-network methods clip per-example
gradients instead).  The set is large: 70,000 × 784 float32 is 220 MB.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from .._validation import check_choice
from .base import Dataset

__all__ = ["FASHION_MNIST_DIR", "FASHION_MNIST_CLASSES", "FASHION_MNIST_REQUIREMENT", "load_fashion_mnist"]

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_REQUIREMENT = "apt-get install dataset-fashion-mnist"
FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


def _idx(path: Path) -> np.ndarray:
    """Read an IDX file (big-endian header: magic with the number of dimensions, then sizes)."""
    raw = gzip.decompress(path.read_bytes())
    ndim = raw[3]
    if raw[:2] != b"\x00\x00" or raw[2] != 0x08:
        raise OSError(f"{path} is not an unsigned-byte IDX file")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise OSError(f"{path} is truncated")
    return data.reshape(shape)


def load_fashion_mnist(split: str = "train", *, positive_class=None, dtype=np.float32, directory=None) -> Dataset:
    """Load Fashion-MNIST ``"train"`` (60,000), ``"test"`` (10,000) or ``"all"`` (``groups`` marks them).

    Features: 784 pixels in ``[−1, 1]``.  Labels: the class index 0–9 as floats
    (multi-class), or ±1 with ``positive_class`` (an index or a name from
    :data:`FASHION_MNIST_CLASSES`, one-vs-rest).
    """
    check_choice("split", split, ("train", "test", "all"))
    root = Path(directory) if directory is not None else FASHION_MNIST_DIR
    if not all((root / f).is_file() for pair in _FILES.values() for f in pair):
        raise FileNotFoundError(
            f"Fashion-MNIST is not installed (expected the IDX files in {root}): {FASHION_MNIST_REQUIREMENT}"
        )
    parts = ["train", "test"] if split == "all" else [split]
    images, labels, groups = [], [], []
    for part in parts:
        img, lab = (_idx(root / f) for f in _FILES[part])
        images.append(img.reshape(img.shape[0], -1))
        labels.append(lab)
        groups.append(np.full(lab.shape[0], part))
    X = np.concatenate(images).astype(dtype) / np.asarray(127.5, dtype=dtype) - np.asarray(1, dtype)
    target = np.concatenate(labels)
    if positive_class is None:
        y, classes = target.astype(float), FASHION_MNIST_CLASSES
    else:
        k = FASHION_MNIST_CLASSES.index(positive_class) if isinstance(positive_class, str) else int(positive_class)
        if not 0 <= k < 10:
            raise ValueError(f"positive_class must be 0..9 or a class name, got {positive_class!r}")
        y = np.where(target == k, 1.0, -1.0)
        classes = (f"not {FASHION_MNIST_CLASSES[k]}", FASHION_MNIST_CLASSES[k])
    return Dataset(
        X=X,
        y=y,
        feature_names=tuple(f"pixel_{r}_{c}" for r in range(28) for c in range(28)),
        name="fashion-mnist" if split == "all" else f"fashion-mnist:{split}",
        source=(
            "Fashion-MNIST, Xiao, Rasul & Vollgraf 2017 (Zalando SE, MIT licence), "
            f"Debian package dataset-fashion-mnist ({root})"
        ),
        notes="pixels rescaled to [-1, 1] (chen2020 §5.2); no row bound",
        norm_bound=None,
        classes=classes,
        groups=np.concatenate(groups),
    )
