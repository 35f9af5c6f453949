"""Convolution and pooling as compositions of primitives: pad, strided slices gathering the
shifted windows, stack, then one ``dot_general`` (convolution) or a reduction (pooling).

Being compositions, they differentiate, batch and compile with no rules of their own.
Layouts are PyTorch's: inputs ``(N, C, *spatial)``, weights ``(out, in / groups, *kernel)``
(``(in, out / groups, *kernel)`` for transposed convolution).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.prims import structural as st
from funcgrad.core.prims.dot import dot_general
from funcgrad.core.tensor import Tensor
from funcgrad.numpy._util import asarray, promote

# the least value each window argument may take (dilation 0 gave a wrong output shape,
# stride 0 a ZeroDivisionError)
_LEAST = {"kernel_size": 1, "stride": 1, "dilation": 1, "padding": 0, "output_padding": 0}


def as_tuple(name: str, what: str, value, n: int) -> tuple[int, ...]:
    """``value`` (an int or a sequence of ``n`` ints) as a tuple of ``n`` ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        values = (int(value),) * n
    else:
        try:
            values = tuple(int(v) for v in value)
        except TypeError:
            raise TypeError(f"{name}: {what} must be an int or a tuple of {n} ints, got "
                            f"{value!r}") from None
        if len(values) != n:
            raise ValueError(f"{name}: {what} must be an int or a tuple of {n} ints, got "
                             f"{value!r}")
    least = _LEAST.get(what, 0)
    if any(v < least for v in values):
        raise ValueError(f"{name}: {what} must be at least {least}, got {value!r}")
    return values


def padding_pairs(name: str, padding, n: int, kernel, dilation, stride) -> tuple:
    """``(low, high)`` per spatial axis from an int, a tuple, ``"valid"`` or ``"same"``."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' needs stride 1, got stride {stride}")
            pairs = []
            for k, d in zip(kernel, dilation, strict=True):
                total = d * (k - 1)
                pairs.append((total // 2, total - total // 2))
            return tuple(pairs)
        raise ValueError(f"{name}: padding must be an int, a tuple, 'valid' or 'same', got "
                         f"{padding!r}")
    pads = as_tuple(name, "padding", padding, n)
    if any(p < 0 for p in pads):
        raise ValueError(f"{name}: padding must be non-negative, got {padding!r}")
    return tuple((p, p) for p in pads)


def with_batch(name: str, x, n_spatial: int, channels: int | None,
               channel_text: str | None = None) -> tuple[Tensor, bool]:
    """``x`` as ``(N, C, *spatial)`` and whether it was unbatched ``(C, *spatial)``."""
    x = asarray(x)
    spatial = ", ".join("HW"[i] if n_spatial == 2 else "L" for i in range(n_spatial))
    c = "C" if channels is None else str(channels)
    expected = f"(N, {c}, {spatial}) or ({c}, {spatial})"
    if x.ndim == n_spatial + 1:
        x, unbatched = st.reshape(x, (1, *x.shape)), True
    elif x.ndim == n_spatial + 2:
        unbatched = False
    else:
        raise ValueError(f"{name}: expected input of shape {expected}, got shape {x.shape}")
    if channels is not None and x.shape[1] != channels:
        got = x.shape[1:] if unbatched else x.shape
        raise ValueError(f"{name}: expected input of shape {expected} "
                         f"({channel_text or 'channels'} = {channels}), got shape {got}")
    return x, unbatched


def _windows(x: Tensor, kernel, stride, dilation, name: str) -> tuple[Tensor, tuple]:
    """Stack the ``prod(kernel)`` shifted, strided views of padded ``x`` (N, C, *spatial)
    along a new axis 2: ``(N, C, K, *out)``; also returns the output spatial shape."""
    n, c, *spatial = x.shape
    out = []
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))
    for size, span, s in zip(spatial, spans, stride, strict=True):
        if size < span:
            raise ValueError(f"{name}: the (padded) input has spatial size {tuple(spatial)}, "
                             f"smaller than the (dilated) kernel {spans}")
        out.append((size - span) // s + 1)
    views = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        start = [0, 0] + [o * d for o, d in zip(offsets, dilation, strict=True)]
        limit = [n, c] + [o * d + (m - 1) * s + 1 for o, d, m, s in
                          zip(offsets, dilation, out, stride, strict=True)]
        views.append(st.slice_(x, start, limit, [1, 1, *stride]))
    stacked = st.concatenate([st.reshape(v, (n, c, 1, *out)) for v in views], 2)
    return stacked, tuple(out)


def _pad(x: Tensor, pairs, value, interior=None) -> Tensor:
    if all(lo == 0 and hi == 0 for lo, hi in pairs) and not interior:
        return x
    interior = interior or (0,) * len(pairs)
    config = [(0, 0, 0), (0, 0, 0)] + [(lo, hi, i) for (lo, hi), i in
                                       zip(pairs, interior, strict=True)]
    return st.pad(x, st.full((), value, x.dtype), config)


def conv(name: str, x, weight, bias, stride, padding, dilation, groups: int,
         n_spatial: int) -> Tensor:
    """N-d convolution (cross-correlation, as PyTorch) of ``x`` with ``weight``."""
    weight = asarray(weight)
    if weight.ndim != n_spatial + 2:
        raise ValueError(f"{name}: weight must have {n_spatial + 2} dimensions (out, in/groups, "
                         f"*kernel), got shape {weight.shape}")
    if groups < 1 or weight.shape[0] % groups:
        raise ValueError(f"{name}: out_channels {weight.shape[0]} is not divisible by groups "
                         f"{groups}")
    x, unbatched = with_batch(name, x, n_spatial, weight.shape[1] * groups,
                              "in_channels = weight.shape[1] * groups")
    x, weight = promote(name, x, weight, to_inexact=True)
    kernel = weight.shape[2:]
    stride = as_tuple(name, "stride", stride, n_spatial)
    dilation = as_tuple(name, "dilation", dilation, n_spatial)
    pairs = padding_pairs(name, padding, n_spatial, kernel, dilation, stride)
    y = _conv_padded(name, _pad(x, pairs, 0), weight, stride, dilation, groups)
    y = _add_bias(name, y, bias, n_spatial)
    return st.reshape(y, y.shape[1:]) if unbatched else y


def _add_bias(name: str, y: Tensor, bias, n_spatial: int) -> Tensor:
    """``y`` (N, C_out, *spatial) plus ``bias`` (C_out,) per channel; None adds nothing."""
    if bias is None:
        return y
    bias = asarray(bias)
    if bias.shape != (y.shape[1],):  # the broadcast's own error named neither
        raise ValueError(f"{name}: bias must have shape (out_channels,) = ({y.shape[1]},), "
                         f"got {bias.shape}")
    return y + st.reshape(bias.astype(y.dtype), (1, y.shape[1]) + (1,) * n_spatial)


def _conv_padded(name, x, weight, stride, dilation, groups) -> Tensor:
    n, c = x.shape[:2]
    o, c_group = weight.shape[:2]
    kernel = weight.shape[2:]
    k = math.prod(kernel)
    patches, out = _windows(x, kernel, stride, dilation, name)
    size = math.prod(out)
    patches = st.reshape(patches, (n, groups, c_group, k, size))
    w = st.reshape(weight, (groups, o // groups, c_group, k))
    # (groups, N, S, out/groups): contract the in-channels and kernel taps
    y = dot_general(patches, w, (((2, 3), (2, 3)), ((1,), (0,))))
    y = st.transpose(y, (1, 0, 3, 2))
    return st.reshape(y, (n, o, *out))


def conv_transpose(name: str, x, weight, bias, stride, padding, output_padding, groups: int,
                   dilation, n_spatial: int) -> Tensor:
    """N-d transposed convolution (the gradient of ``conv`` with respect to its input)."""
    weight = asarray(weight)
    if weight.ndim != n_spatial + 2:
        raise ValueError(f"{name}: weight must have {n_spatial + 2} dimensions (in, "
                         f"out/groups, *kernel), got shape {weight.shape}")
    c_in = weight.shape[0]
    if groups < 1 or c_in % groups:
        raise ValueError(f"{name}: in_channels {c_in} is not divisible by groups {groups}")
    x, unbatched = with_batch(name, x, n_spatial, c_in, "in_channels = weight.shape[0]")
    x, weight = promote(name, x, weight, to_inexact=True)
    kernel = weight.shape[2:]
    stride = as_tuple(name, "stride", stride, n_spatial)
    dilation = as_tuple(name, "dilation", dilation, n_spatial)
    pads = as_tuple(name, "padding", padding, n_spatial)
    extra = as_tuple(name, "output_padding", output_padding, n_spatial)
    for e, s, d in zip(extra, stride, dilation, strict=True):
        if not 0 <= e < max(s, d):
            raise ValueError(f"{name}: output_padding {extra} must be smaller than stride "
                             f"{stride} or dilation {dilation}")
    # dilate the input by the stride, pad by dilation * (k - 1) - padding, and correlate
    # with the flipped kernel, its in/out channels swapped within each group
    pairs = [(d * (k - 1) - p, d * (k - 1) - p + e)
             for k, d, p, e in zip(kernel, dilation, pads, extra, strict=True)]
    x = _pad(x, pairs, 0, interior=[s - 1 for s in stride])
    c_out_group = weight.shape[1]
    w = st.reshape(weight, (groups, c_in // groups, c_out_group, *kernel))
    w = st.transpose(w, (0, 2, 1, *range(3, 3 + n_spatial)))
    w = st.reshape(w, (groups * c_out_group, c_in // groups, *kernel))
    w = st.rev(w, tuple(range(2, 2 + n_spatial)))
    y = _conv_padded(name, x, w, (1,) * n_spatial, dilation, groups)
    y = _add_bias(name, y, bias, n_spatial)
    return st.reshape(y, y.shape[1:]) if unbatched else y


def _pooled_size(size: int, kernel: int, stride: int, pad: int, dilation: int,
                 ceil_mode: bool) -> int:
    """PyTorch's output length of pooling; with ``ceil_mode`` a last partial window counts
    when it starts inside the input or its left padding."""
    span = dilation * (kernel - 1) + 1
    out = (size + 2 * pad - span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def pool(name: str, x, kernel_size, stride, padding, dilation, kind: str, n_spatial: int,
         count_include_pad: bool = True, ceil_mode: bool = False,
         divisor_override: int | None = None) -> Tensor:
    """Max or average pooling over windows of ``kernel_size`` (stride defaults to it), as
    PyTorch: ``ceil_mode`` keeps partial last windows, padding never counts in a maximum,
    and the gradient of a maximum goes to the first maximal element of its window."""
    from funcgrad.core.prims.reductions import reduce_sum
    from funcgrad.numpy import argmax, take_along_axis

    x, unbatched = with_batch(name, x, n_spatial, None)
    kernel = as_tuple(name, "kernel_size", kernel_size, n_spatial)
    stride = kernel if stride is None else as_tuple(name, "stride", stride, n_spatial)
    dilation = as_tuple(name, "dilation", dilation, n_spatial)
    pads = as_tuple(name, "padding", padding, n_spatial)
    if any(2 * p > k for p, k in zip(pads, kernel, strict=True)):
        raise ValueError(f"{name}: padding {pads} must be at most half the kernel size "
                         f"{kernel}")
    if divisor_override is not None and int(divisor_override) <= 0:
        raise ValueError(f"{name}: divisor_override must be a positive int, got "
                         f"{divisor_override}")
    spatial = x.shape[2:]
    # ceil_mode: extra padding on the right so the partial last windows exist
    extra = []
    for size, k, s, p, d in zip(spatial, kernel, stride, pads, dilation, strict=True):
        out = _pooled_size(size, k, s, p, d, ceil_mode)
        extra.append(max(0, (out - 1) * s + d * (k - 1) + 1 - (size + 2 * p)))
    pairs = [(p, p + e) for p, e in zip(pads, extra, strict=True)]
    if kind == "max":
        low = -np.inf if dtypes.is_inexact(x.dtype) else np.iinfo(x.dtype).min
        patches, _ = _windows(_pad(x, pairs, low), kernel, stride, dilation, name)
        # the first maximum of each window, so its gradient is not split between ties
        first = argmax(patches, axis=2, keepdims=True)
        y = take_along_axis(patches, first, axis=2)[:, :, 0]
    else:
        if not dtypes.is_inexact(x.dtype):
            x = x.astype(dtypes.float32)
        patches, _ = _windows(_pad(x, pairs, 0), kernel, stride, dilation, name)
        y = reduce_sum(patches, (2,))
        if divisor_override is not None:
            y = y / int(divisor_override)
        elif not any(extra) and (count_include_pad or not any(pads)):
            y = y / math.prod(kernel)
        else:
            # how many elements each window averages: padding counts only when
            # count_include_pad, and the ceil_mode extension never does (as PyTorch)
            ones = st.full((1, 1, *spatial), 1, x.dtype)
            if count_include_pad:
                ones = _pad(ones, [(p, p) for p in pads], 1)
                mask = _pad(ones, [(0, e) for e in extra], 0)
            else:
                mask = _pad(ones, pairs, 0)
            counts, _ = _windows(mask, kernel, stride, dilation, name)
            y = y / reduce_sum(counts, (2,))
    return st.reshape(y, y.shape[1:]) if unbatched else y
