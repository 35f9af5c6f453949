"""Dropout: random zeroing at training time, driven by an explicit key."""

from __future__ import annotations

from funcgrad.core.tensor import Tensor
from funcgrad.nn import functional as F
from funcgrad.nn.module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Zero each element with probability ``p``, scaling the rest by ``1 / (1 - p)``.

    Training needs ``key=``; with ``inference=True`` (at construction or at the call) it
    is the identity.

    Arguments:
        p: the drop probability.
        inference: the default mode (a call's ``inference=`` overrides it); keyword-only,
            because PyTorch's second positional argument is ``inplace`` and
            ``Dropout(0.5, True)`` must not silently turn dropout off.

    Example:
        >>> drop = nn.Dropout(0.5)
        >>> drop(fg.ones(4), key=fg.random.key(0)).shape
        (4,)
        >>> drop(fg.ones(4), inference=True)
        tensor([1., 1., 1., 1.], dtype=float32)
    """

    p: float
    inference: bool

    def __init__(self, p: float = 0.5, *, inference: bool = False):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p, self.inference = float(p), bool(inference)

    def forward(self, x, *, key=None, inference: bool | None = None) -> Tensor:
        inference = self.inference if inference is None else inference
        if not inference and self.p > 0.0 and key is None:
            raise ValueError("Dropout: training mode needs a random key; call drop(x, key=k), "
                             "or drop(x, inference=True) to disable dropout")
        return F.dropout(x, self.p, training=not inference, key=key)
