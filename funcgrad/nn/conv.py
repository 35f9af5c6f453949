"""Convolution layers (PyTorch layouts and default initialization)."""

from __future__ import annotations

import math

import funcgrad.numpy as fnp
from funcgrad import random
from funcgrad.core import dtypes
from funcgrad.core.tensor import Tensor
from funcgrad.nn import _windows, init
from funcgrad.nn.module import Module

__all__ = ["Conv1d", "Conv2d", "ConvTranspose2d"]


def _init_params(key, weight_shape, fan_in, bias, dtype):
    """PyTorch's default: kaiming_uniform(a=sqrt(5)) weights, bias in ±1/sqrt(fan_in)."""
    dtype = dtypes.float32 if dtype is None else dtypes.canonicalize(dtype)
    wkey, bkey = random.split(key)
    weight = init.kaiming_uniform(wkey, weight_shape, dtype, a=math.sqrt(5))
    if not bias:
        return weight, None
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return weight, init.uniform(bkey, (weight_shape[0],), dtype, -bound, bound)


def _check_channels(name, in_channels, out_channels, groups):
    if groups < 1 or in_channels % groups or out_channels % groups:
        raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels "
                         f"({out_channels}) must be divisible by groups ({groups})")


# PyTorch's padding modes and NumPy's names for them (fnp.pad)
_PADDING_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "edge",
                  "circular": "wrap"}


class _ConvNd(Module):
    weight: Tensor
    bias: Tensor | None
    in_channels: int
    out_channels: int
    kernel_size: tuple
    stride: tuple
    padding: tuple | str
    dilation: tuple
    groups: int
    padding_mode: str

    _spatial = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", *, key, dtype=None):
        name, n = type(self).__name__, self._spatial
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {sorted(_PADDING_MODES)}, "
                             f"got {padding_mode!r}")
        self.padding_mode = padding_mode
        _check_channels(name, in_channels, out_channels, groups)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _windows.as_tuple(name, "kernel_size", kernel_size, n)
        self.stride = _windows.as_tuple(name, "stride", stride, n)
        self.dilation = _windows.as_tuple(name, "dilation", dilation, n)
        self.padding = padding if isinstance(padding, str) else \
            _windows.as_tuple(name, "padding", padding, n)
        _windows.padding_pairs(name, self.padding, n, self.kernel_size, self.dilation,
                               self.stride)  # validates
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        self.weight, self.bias = _init_params(key, shape, fan_in, bias, dtype)

    def forward(self, x) -> Tensor:
        name, n, padding = type(self).__name__, self._spatial, self.padding
        if self.padding_mode != "zeros":  # pad the input the mode's way, then convolve
            pairs = _windows.padding_pairs(name, padding, n, self.kernel_size,
                                           self.dilation, self.stride)
            x = fnp.asarray(x)
            x = fnp.pad(x, ((0, 0),) * (x.ndim - n) + pairs,
                        mode=_PADDING_MODES[self.padding_mode])
            padding = (0,) * n
        return _windows.conv(name, x, self.weight, self.bias, self.stride, padding,
                             self.dilation, self.groups, n)


class Conv1d(_ConvNd):
    """1-d convolution over ``(N, C_in, L)`` or ``(C_in, L)`` inputs.

    ``weight`` is ``(out_channels, in_channels / groups, k)``; weights and bias initialized
    as PyTorch's (uniform in ``±1/sqrt(fan_in)``).

    Arguments:
        in_channels, out_channels: channel counts.
        kernel_size: an int (or a 1-tuple).
        stride, padding, dilation: ints; ``padding`` also ``"valid"`` or ``"same"``.
        groups: split the channels into independent groups.
        bias: whether to add a learned bias.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        key: the random key for the initialization (keyword-only).
        dtype: the parameters' dtype (float32 by default).

    Example:
        >>> conv = nn.Conv1d(3, 8, 5, padding=2, key=fg.random.key(0))
        >>> conv(fg.ones((4, 3, 32))).shape
        (4, 8, 32)
    """

    _spatial = 1


class Conv2d(_ConvNd):
    """2-d convolution over ``(N, C_in, H, W)`` or ``(C_in, H, W)`` inputs.

    ``weight`` is ``(out_channels, in_channels / groups, kh, kw)``; weights and bias
    initialized as PyTorch's (uniform in ``±1/sqrt(fan_in)``).

    Arguments:
        in_channels, out_channels: channel counts.
        kernel_size: an int or a pair.
        stride, padding, dilation: ints or pairs; ``padding`` also ``"valid"``/``"same"``.
        groups: split the channels into independent groups.
        bias: whether to add a learned bias.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"`` (as
            PyTorch's: the input padded that way, by ``padding``).
        key: the random key for the initialization (keyword-only).
        dtype: the parameters' dtype (float32 by default).

    Example:
        >>> conv = nn.Conv2d(1, 4, 3, padding=1, key=fg.random.key(0))
        >>> conv(fg.ones((2, 1, 8, 8))).shape
        (2, 4, 8, 8)
    """

    _spatial = 2


class ConvTranspose2d(Module):
    """2-d transposed convolution (the input-gradient of ``Conv2d``), as PyTorch's.

    ``weight`` is ``(in_channels, out_channels / groups, kh, kw)``; the output size is
    ``(H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    Arguments:
        in_channels, out_channels: channel counts.
        kernel_size: an int or a pair.
        stride, padding, output_padding, dilation: ints or pairs.
        groups: split the channels into independent groups.
        bias: whether to add a learned bias.
        key: the random key for the initialization (keyword-only).
        dtype: the parameters' dtype (float32 by default).

    Example:
        >>> up = nn.ConvTranspose2d(4, 2, 2, stride=2, key=fg.random.key(0))
        >>> up(fg.ones((1, 4, 8, 8))).shape
        (1, 2, 16, 16)
    """

    weight: Tensor
    bias: Tensor | None
    in_channels: int
    out_channels: int
    kernel_size: tuple
    stride: tuple
    padding: tuple
    output_padding: tuple
    groups: int
    dilation: tuple

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, *, key, dtype=None):
        name = "ConvTranspose2d"
        _check_channels(name, in_channels, out_channels, groups)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _windows.as_tuple(name, "kernel_size", kernel_size, 2)
        self.stride = _windows.as_tuple(name, "stride", stride, 2)
        self.padding = _windows.as_tuple(name, "padding", padding, 2)
        self.output_padding = _windows.as_tuple(name, "output_padding", output_padding, 2)
        self.dilation = _windows.as_tuple(name, "dilation", dilation, 2)
        shape = (in_channels, out_channels // groups, *self.kernel_size)
        # PyTorch computes the fans from this weight as if it were (out, in, ...): fan_in is
        # out_channels / groups * kh * kw
        fan_in = out_channels // groups * math.prod(self.kernel_size)
        dtype = dtypes.float32 if dtype is None else dtypes.canonicalize(dtype)
        wkey, bkey = random.split(key)
        self.weight = init.kaiming_uniform(wkey, shape, dtype, a=math.sqrt(5))
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.bias = init.uniform(bkey, (out_channels,), dtype, -bound, bound) if bias else None

    def forward(self, x) -> Tensor:
        return _windows.conv_transpose("ConvTranspose2d", x, self.weight, self.bias,
                                       self.stride, self.padding, self.output_padding,
                                       self.groups, self.dilation, 2)
