"""Linear, Flatten and Embedding layers."""

from __future__ import annotations

import math

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import random
from funcgrad.core import dtypes
from funcgrad.core.tensor import Tensor
from funcgrad.nn import init
from funcgrad.nn.module import Module
from funcgrad.numpy._util import asarray
from funcgrad.transforms.custom import stop_gradient

__all__ = ["Embedding", "Flatten", "Linear"]


def _dtype(dtype):
    return dtypes.float32 if dtype is None else dtypes.canonicalize(dtype)


class Linear(Module):
    """``y = x @ weight.T + bias`` on the last axis of an ``(*, in_features)`` input.

    Initialized as PyTorch's: ``weight`` (out_features, in_features) from
    ``kaiming_uniform(a=sqrt(5))`` (uniform in ``±1/sqrt(in_features)``), ``bias`` uniform
    in ``±1/sqrt(in_features)``.

    Arguments:
        in_features: the size of the input's last axis.
        out_features: the size of the output's last axis.
        bias: whether to add a learned bias.
        key: the random key for the initialization (keyword-only).
        dtype: the parameters' dtype (float32 by default).

    Example:
        >>> lin = nn.Linear(3, 2, key=fg.random.key(0))
        >>> lin(fg.ones((5, 3))).shape
        (5, 2)
    """

    weight: Tensor
    bias: Tensor | None
    in_features: int
    out_features: int

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, key,
                 dtype=None):
        dtype = _dtype(dtype)
        for what, size in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 0:
                raise ValueError(f"Linear: {what} must be a non-negative int, got {size!r}")
        wkey, bkey = random.split(key)
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = init.kaiming_uniform(wkey, (out_features, in_features), dtype,
                                           a=math.sqrt(5))
        if bias:
            bound = 1 / math.sqrt(in_features) if in_features > 0 else 0.0
            self.bias = init.uniform(bkey, (out_features,), dtype, -bound, bound)
        else:
            self.bias = None

    def forward(self, x) -> Tensor:
        x = asarray(x)
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"Linear: expected input with last dimension {self.in_features}, "
                             f"got shape {x.shape}")
        y = fnp.matmul(x, self.weight.T)
        return y if self.bias is None else y + self.bias


class Flatten(Module):
    """Flatten the axes ``start_dim`` to ``end_dim`` (inclusive) into one, as PyTorch's.

    Note ``start_dim=1`` keeps the first axis as the batch axis; inside ``fg.vmap`` (one
    unbatched example) use ``Flatten(start_dim=0)``.

    Arguments:
        start_dim: the first axis to flatten.
        end_dim: the last axis to flatten.

    Example:
        >>> nn.Flatten()(fg.ones((2, 3, 4, 4))).shape
        (2, 48)
    """

    start_dim: int
    end_dim: int

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = int(start_dim), int(end_dim)

    def forward(self, x) -> Tensor:
        x = asarray(x)
        ndim = max(x.ndim, 1)
        start, end = self.start_dim, self.end_dim
        if not (-ndim <= start < ndim and -ndim <= end < ndim):
            raise ValueError(f"Flatten: start_dim={start}, end_dim={end} out of range for "
                             f"input of shape {x.shape}")
        if x.ndim == 0:
            return fnp.reshape(x, (1,))
        start, end = start % ndim, end % ndim
        if start > end:
            raise ValueError(f"Flatten: start_dim={self.start_dim} comes after "
                             f"end_dim={self.end_dim} for input of shape {x.shape}")
        shape = x.shape[:start] + (math.prod(x.shape[start:end + 1]),) + x.shape[end + 1:]
        return fnp.reshape(x, shape)


class Embedding(Module):
    """A lookup table: integer indices of any shape to vectors of ``embedding_dim``.

    ``weight`` (num_embeddings, embedding_dim) is initialized from ``N(0, 1)``, as PyTorch;
    the row ``padding_idx`` (if given) starts at zero and gets no gradient. Concrete indices
    outside ``[0, num_embeddings)`` raise ``IndexError`` (negative ones too, as PyTorch).

    Arguments:
        num_embeddings: the number of rows.
        embedding_dim: the size of each vector.
        padding_idx: optional index whose row is zero and not trained.
        key: the random key for the initialization (keyword-only).
        dtype: the table's dtype (float32 by default).

    Example:
        >>> emb = nn.Embedding(10, 4, key=fg.random.key(0))
        >>> emb(fg.tensor([[1, 2, 3]])).shape
        (1, 3, 4)
    """

    weight: Tensor
    num_embeddings: int
    embedding_dim: int
    padding_idx: int | None

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 *, key, dtype=None):
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} out of range for "
                                 f"{num_embeddings} embeddings")
            padding_idx = int(padding_idx) % num_embeddings
        self.padding_idx = padding_idx
        weight = init.normal(key, (num_embeddings, embedding_dim), _dtype(dtype))
        if padding_idx is not None:
            weight = weight.at[padding_idx].set(0.0)
        self.weight = weight

    def forward(self, indices) -> Tensor:
        indices = asarray(indices)
        if not dtypes.is_integer(indices.dtype):
            raise TypeError(f"Embedding: expected integer indices, got dtype "
                            f"{indices.dtype.name}")
        if type(indices) is Tensor and indices.size:  # concrete; traced indices are not checked
            values = np.asarray(indices)
            out_of_range = (values < 0) | (values >= self.num_embeddings)
            if out_of_range.any():
                # PyTorch raises for negative indices too, where NumPy-style take would wrap.
                raise IndexError(f"Embedding: index {values[out_of_range].flat[0]} is out of "
                                 f"range for {self.num_embeddings} embeddings (valid indices "
                                 f"are 0 to {self.num_embeddings - 1})")
        out = fnp.take(self.weight, indices, axis=0)
        if self.padding_idx is not None:
            padded = fnp.expand_dims(indices == self.padding_idx, -1)
            out = fnp.where(padded, stop_gradient(out), out)
        return out
