"""Small datasets that ship with common packages, as ``ArrayDataset`` splits.

>>> from funcgrad import data
>>> train, test = data.datasets.digits()
>>> len(train), len(test)
(1437, 360)
"""

from __future__ import annotations

import math

import numpy as np

from funcgrad.data.dataset import ArrayDataset

__all__ = ["digits"]

_SPLIT_SEED = 0  # the fixed train/test split: a funcgrad permutation, the same everywhere


def digits() -> tuple[ArrayDataset, ArrayDataset]:
    """The 8x8 handwritten digits scikit-learn ships (1797 images, 10 classes), split
    80/20 into ``(train, test)`` by a fixed permutation.

    Each split is ``ArrayDataset(images, labels)``: images float32 ``(n, 1, 8, 8)``
    scaled to [0, 1] (NCHW, one channel), labels int32 in 0..9.  Needs scikit-learn
    (``pip install funcgrad[data]``).

    >>> from funcgrad import data
    >>> train, test = data.datasets.digits()
    >>> train[0][0].shape, train.arrays[1].dtype
    ((1, 8, 8), dtype('int32'))
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as error:
        raise ImportError("data.datasets.digits needs scikit-learn; install it with "
                          "`pip install funcgrad[data]` (or `pip install scikit-learn`)"
                          ) from error
    from funcgrad import random

    bunch = load_digits()
    images = (np.asarray(bunch.images, dtype=np.float32) / 16.0).reshape(-1, 1, 8, 8)
    labels = np.asarray(bunch.target, dtype=np.int32)
    n = labels.shape[0]
    order = np.asarray(random.permutation(random.key(_SPLIT_SEED), n))
    n_train = n - math.ceil(0.2 * n)  # as train_test_split(test_size=0.2): 1437 / 360
    train, test = order[:n_train], order[n_train:]
    return (ArrayDataset(images[train], labels[train]),
            ArrayDataset(images[test], labels[test]))
