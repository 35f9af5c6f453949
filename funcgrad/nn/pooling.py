"""Pooling layers (stride defaults to the kernel size, as PyTorch)."""

from __future__ import annotations

from funcgrad.core.tensor import Tensor
from funcgrad.nn import _windows
from funcgrad.nn.module import Module

__all__ = ["AvgPool2d", "MaxPool2d"]


class MaxPool2d(Module):
    """Maximum over ``kernel_size`` windows of ``(N, C, H, W)`` or ``(C, H, W)`` inputs.

    Arguments:
        kernel_size: an int or a pair.
        stride: an int or a pair; defaults to ``kernel_size``.
        padding: implicit ``-inf`` padding on both sides (at most half the kernel).
        dilation: spacing between window elements.
        ceil_mode: keep partial windows at the end (output size rounded up), as PyTorch.

    The gradient goes to the first maximal element of each window, as PyTorch's.

    Example:
        >>> nn.MaxPool2d(2)(fg.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    kernel_size: tuple
    stride: tuple
    padding: tuple
    dilation: tuple
    ceil_mode: bool

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        from funcgrad.nn.functional import _no_indices

        _no_indices("MaxPool2d", return_indices)
        self.ceil_mode = bool(ceil_mode)
        self.kernel_size = _windows.as_tuple("MaxPool2d", "kernel_size", kernel_size, 2)
        self.stride = self.kernel_size if stride is None else \
            _windows.as_tuple("MaxPool2d", "stride", stride, 2)
        self.padding = _windows.as_tuple("MaxPool2d", "padding", padding, 2)
        self.dilation = _windows.as_tuple("MaxPool2d", "dilation", dilation, 2)

    def forward(self, x) -> Tensor:
        return _windows.pool("MaxPool2d", x, self.kernel_size, self.stride, self.padding,
                             self.dilation, "max", 2, ceil_mode=self.ceil_mode)


class AvgPool2d(Module):
    """Mean over ``kernel_size`` windows of ``(N, C, H, W)`` or ``(C, H, W)`` inputs.

    Arguments:
        kernel_size: an int or a pair.
        stride: an int or a pair; defaults to ``kernel_size``.
        padding: implicit zero padding on both sides (at most half the kernel).
        ceil_mode: keep partial windows at the end (output size rounded up), as PyTorch.
        count_include_pad: whether the padded zeros count in the mean's denominator.
        divisor_override: if given, every window's sum is divided by it instead.

    Example:
        >>> nn.AvgPool2d(2)(fg.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    kernel_size: tuple
    stride: tuple
    padding: tuple
    ceil_mode: bool
    count_include_pad: bool
    divisor_override: int | None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        self.ceil_mode = bool(ceil_mode)
        self.divisor_override = None if divisor_override is None else int(divisor_override)
        self.kernel_size = _windows.as_tuple("AvgPool2d", "kernel_size", kernel_size, 2)
        self.stride = self.kernel_size if stride is None else \
            _windows.as_tuple("AvgPool2d", "stride", stride, 2)
        self.padding = _windows.as_tuple("AvgPool2d", "padding", padding, 2)
        self.count_include_pad = bool(count_include_pad)

    def forward(self, x) -> Tensor:
        return _windows.pool("AvgPool2d", x, self.kernel_size, self.stride, self.padding, 1,
                             "avg", 2, self.count_include_pad, self.ceil_mode,
                             self.divisor_override)
