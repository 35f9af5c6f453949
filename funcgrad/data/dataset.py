"""ArrayDataset: a dataset of examples stored as aligned arrays in host memory.

>>> from funcgrad import data
>>> ds = data.ArrayDataset(np.zeros((10, 3)), np.arange(10))
>>> len(ds), ds[2][1]
(10, tensor(2, dtype=int64))
"""

from __future__ import annotations

import numpy as np

from funcgrad.core.tensor import Tensor, aligned_empty, tensor, to_numpy_array

__all__ = ["ArrayDataset"]


class ArrayDataset:
    """Examples stored as arrays that share their leading (example) dimension.

    ``dataset[i]`` is a tuple with example ``i`` of every array (as Tensors); an index
    array or slice gives the batched examples.  The arrays are kept as host NumPy arrays,
    so ``DataLoader`` gathers a batch with one fancy-indexing per array.

    Arguments:
        arrays: NumPy arrays, Tensors or anything ``np.asarray`` takes, each with the
            examples along axis 0.

    >>> from funcgrad import data
    >>> ds = data.ArrayDataset(np.ones((4, 2), np.float32), np.array([0, 1, 0, 1]))
    >>> x, y = ds[0]
    >>> x.shape, len(ds)
    ((2,), 4)
    """

    def __init__(self, *arrays):
        if not arrays:
            raise ValueError("ArrayDataset: needs at least one array")
        host = []
        for i, a in enumerate(arrays):
            # lists of Python numbers take funcgrad's dtypes (float32, int32), as fg.tensor
            a = a.numpy() if isinstance(a, Tensor) else to_numpy_array(a)
            if a.ndim == 0:
                raise ValueError(f"ArrayDataset: array {i} is a scalar; every array needs a "
                                 "leading example dimension")
            host.append(a)
        lengths = [a.shape[0] for a in host]
        if len(set(lengths)) > 1:
            shapes = ", ".join(f"array {i}: {a.shape}" for i, a in enumerate(host))
            raise ValueError(f"ArrayDataset: the arrays must have the same leading "
                             f"(example) dimension, got {shapes}")
        self.arrays: tuple[np.ndarray, ...] = tuple(host)

    def __len__(self) -> int:
        return self.arrays[0].shape[0]

    def __getitem__(self, index) -> tuple:
        if isinstance(index, Tensor):
            index = index.numpy()
        return tuple(tensor(a[index]) for a in self.arrays)

    def gather(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        """The examples at ``indices`` from every array, as new host arrays (one copy each,
        made 64-byte aligned, so that a jit call takes them without another)."""
        indices = np.asarray(indices)
        n = len(self)
        if indices.size and (indices.min() < -n or indices.max() >= n):
            bad = indices[(indices < -n) | (indices >= n)][0]
            raise IndexError(f"ArrayDataset.gather: index {bad} is out of range for "
                             f"{n} examples")
        indices = np.where(indices < 0, indices + n, indices)
        # in range now, so mode="clip" only spares np.take its buffered copy for "raise"
        return tuple(np.take(a, indices, axis=0, mode="clip",
                             out=aligned_empty(indices.shape + a.shape[1:], a.dtype))
                     for a in self.arrays)

    def __repr__(self) -> str:
        parts = ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.arrays)
        return f"ArrayDataset({parts})"
