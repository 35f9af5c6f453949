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

    Example:
        >>> nn.MaxPool2d(2)(fg.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    kernel_size: tuple
    stride: tuple
    padding: tuple
    dilation: tuple

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1):
        self.kernel_size = _windows.as_tuple("MaxPool2d", "kernel_size", kernel_size, 2)
        self.stride = self.kernel_size if stride is None else \
            _windows.as_tuple("MaxPool2d", "stride", stride, 2)
        self.padding = _windows.as_tuple("MaxPool2d", "padding", padding, 2)
        self.dilation = _windows.as_tuple("MaxPool2d", "dilation", dilation, 2)

    def forward(self, x) -> Tensor:
        return _windows.pool("MaxPool2d", x, self.kernel_size, self.stride, self.padding,
                             self.dilation, "max", 2)


class AvgPool2d(Module):
    """Mean over ``kernel_size`` windows of ``(N, C, H, W)`` or ``(C, H, W)`` inputs.

    Arguments:
        kernel_size: an int or a pair.
        stride: an int or a pair; defaults to ``kernel_size``.
        padding: implicit zero padding on both sides (at most half the kernel).
        count_include_pad: whether the padded zeros count in the mean's denominator.

    Example:
        >>> nn.AvgPool2d(2)(fg.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    kernel_size: tuple
    stride: tuple
    padding: tuple
    count_include_pad: bool

    def __init__(self, kernel_size, stride=None, padding=0, count_include_pad: bool = True):
        self.kernel_size = _windows.as_tuple("AvgPool2d", "kernel_size", kernel_size, 2)
        self.stride = self.kernel_size if stride is None else \
            _windows.as_tuple("AvgPool2d", "stride", stride, 2)
        self.padding = _windows.as_tuple("AvgPool2d", "padding", padding, 2)
        self.count_include_pad = bool(count_include_pad)

    def forward(self, x) -> Tensor:
        return _windows.pool("AvgPool2d", x, self.kernel_size, self.stride, self.padding, 1,
                             "avg", 2, self.count_include_pad)
