"""Recurrent cells (PyTorch's gate order and equations); run sequences with ``fg.scan``."""

from __future__ import annotations

import math

import funcgrad.numpy as fnp
from funcgrad import random
from funcgrad.core import dtypes
from funcgrad.core.tensor import Tensor
from funcgrad.nn import functional as F
from funcgrad.nn import init
from funcgrad.nn.module import Module
from funcgrad.numpy._util import asarray

__all__ = ["GRUCell", "LSTMCell"]


class _Cell(Module):
    weight_ih: Tensor
    weight_hh: Tensor
    bias_ih: Tensor | None
    bias_hh: Tensor | None
    input_size: int
    hidden_size: int

    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, key,
                 dtype=None):
        dtype = dtypes.float32 if dtype is None else dtypes.canonicalize(dtype)
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        bound = 1 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
        rows = self._gates * hidden_size
        keys = random.split(key, 4)
        self.weight_ih = init.uniform(keys[0], (rows, input_size), dtype, -bound, bound)
        self.weight_hh = init.uniform(keys[1], (rows, hidden_size), dtype, -bound, bound)
        self.bias_ih = init.uniform(keys[2], (rows,), dtype, -bound, bound) if bias else None
        self.bias_hh = init.uniform(keys[3], (rows,), dtype, -bound, bound) if bias else None

    def _check(self, x, h):
        name = type(self).__name__
        x = asarray(x)
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: expected input of shape (N, {self.input_size}) or "
                             f"({self.input_size},), got shape {x.shape}")
        expected = x.shape[:-1] + (self.hidden_size,)
        if h is None:
            return x, fnp.zeros(expected, self.weight_ih.dtype)
        if isinstance(h, (tuple, list)):
            # a GRU state passed LSTM-style, (h, c), would become one stacked tensor
            raise TypeError(f"{name}: the hidden state must be one tensor of shape {expected}, "
                            f"got a {type(h).__name__} of {len(h)}; {name} keeps no cell "
                            "state (LSTMCell takes (h, c))")
        h = asarray(h)
        if h.shape != expected:
            raise ValueError(f"{name}: expected hidden state of shape {expected} for input of "
                             f"shape {x.shape}, got shape {h.shape}")
        return x, h

    def _affine(self, x, h):
        gi = fnp.matmul(x, self.weight_ih.T)
        gh = fnp.matmul(h, self.weight_hh.T)
        if self.bias_ih is not None:
            gi, gh = gi + self.bias_ih, gh + self.bias_hh
        return gi, gh


class GRUCell(_Cell):
    """One GRU step, as PyTorch's (gate order r, z, n)::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
        h' = (1 - z) * n + z * h

    Weights ``weight_ih`` (3H, I), ``weight_hh`` (3H, H), biases (3H,), all uniform in
    ``±1/sqrt(H)``.  Call ``cell(x, h)`` with ``x`` ``(N, I)`` or ``(I,)``; ``h=None`` is
    zeros.

    Arguments:
        input_size: ``I``.
        hidden_size: ``H``.
        bias: whether to use the biases.
        key: the random key for the initialization (keyword-only).
        dtype: the parameters' dtype (float32 by default).

    Example:
        >>> cell = nn.GRUCell(3, 5, key=fg.random.key(0))
        >>> h = cell(fg.ones((2, 3)), fg.zeros((2, 5)))
        >>> _, hs = fg.scan(lambda h, x: (cell(x, h),) * 2, h, fg.ones((7, 2, 3)))
        >>> hs.shape
        (7, 2, 5)
    """

    _gates = 3

    def forward(self, x, h=None) -> Tensor:
        x, h = self._check(x, h)
        gi, gh = self._affine(x, h)
        size = self.hidden_size
        i_r, i_z, i_n = (gi[..., j * size:(j + 1) * size] for j in range(3))
        h_r, h_z, h_n = (gh[..., j * size:(j + 1) * size] for j in range(3))
        r = F.sigmoid(i_r + h_r)
        z = F.sigmoid(i_z + h_z)
        n = fnp.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h


class LSTMCell(_Cell):
    """One LSTM step, as PyTorch's (gate order i, f, g, o)::

        i, f, o = sigmoid(...), g = tanh(...)   (each W_i* x + b_i* + W_h* h + b_h*)
        c' = f * c + i * g
        h' = o * tanh(c')

    Weights ``weight_ih`` (4H, I), ``weight_hh`` (4H, H), biases (4H,), uniform in
    ``±1/sqrt(H)``.  Call ``cell(x, (h, c))`` (or ``cell(x)`` for zeros); returns
    ``(h', c')``.

    Arguments:
        input_size: ``I``.
        hidden_size: ``H``.
        bias: whether to use the biases.
        key: the random key for the initialization (keyword-only).
        dtype: the parameters' dtype (float32 by default).

    Example:
        >>> cell = nn.LSTMCell(3, 5, key=fg.random.key(0))
        >>> h, c = cell(fg.ones(3))
        >>> h.shape, c.shape
        ((5,), (5,))
    """

    _gates = 4

    def forward(self, x, hc=None) -> tuple[Tensor, Tensor]:
        if hc is None:
            h = c = None
        else:
            if not isinstance(hc, (tuple, list)) or len(hc) != 2:
                got = type(hc).__name__
                got += f" of {len(hc)}" if isinstance(hc, (tuple, list)) else ""
                raise TypeError(f"LSTMCell: the state must be a pair (h, c) of tensors, got "
                                f"a {got}")
            h, c = hc
        x, h = self._check(x, h)
        _, c = self._check(x, c)
        gi, gh = self._affine(x, h)
        gates = gi + gh
        size = self.hidden_size
        i, f, g, o = (gates[..., j * size:(j + 1) * size] for j in range(4))
        c = F.sigmoid(f) * c + F.sigmoid(i) * fnp.tanh(g)
        h = F.sigmoid(o) * fnp.tanh(c)
        return h, c
