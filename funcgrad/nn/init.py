"""nn.init: PyTorch's weight initializers as pure functions ``f(key, shape, dtype, ...)``.

Fan-in and fan-out follow PyTorch: for a weight of shape ``(out, in, *kernel)``,
``fan_in = in * prod(kernel)`` and ``fan_out = out * prod(kernel)``.

>>> from funcgrad.nn import init
>>> w = init.kaiming_uniform(fg.random.key(0), (4, 3), a=5 ** 0.5)
>>> w.shape
(4, 3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from funcgrad import random
from funcgrad.core import dtypes
from funcgrad.numpy import full

__all__ = [
    "calculate_gain", "compute_fans", "kaiming_normal", "kaiming_uniform", "normal", "ones",
    "uniform", "xavier_normal", "xavier_uniform", "zeros",
]

_LINEAR_GAIN_ONE = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                    "conv_transpose2d", "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """PyTorch's recommended gain for ``nonlinearity`` (``param``: leaky_relu's slope).

    >>> init.calculate_gain("relu")
    1.4142135623730951
    """
    if nonlinearity in _LINEAR_GAIN_ONE:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative_slope {slope!r} is not a number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; use one of "
                     f"{list(_LINEAR_GAIN_ONE) + ['tanh', 'relu', 'leaky_relu', 'selu']}")


def compute_fans(shape: Sequence[int]) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of ``shape`` ``(out, in, *kernel)``, as PyTorch.

    >>> init.compute_fans((16, 3, 5, 5))
    (75, 400)
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2:
        raise ValueError(f"nn.init: fan in and fan out cannot be computed for shape {shape} "
                         "(fewer than 2 dimensions)")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(shape, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"nn.init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = compute_fans(shape)
    return fan_in if mode == "fan_in" else fan_out


def _float(name, dtype):
    dtype = dtypes.canonicalize(dtype)
    if not dtypes.is_inexact(dtype):
        raise ValueError(f"nn.init.{name}: dtype must be floating, got {dtype.name}")
    return dtype


def uniform(key, shape: Sequence[int], dtype=dtypes.float32, a: float = 0.0, b: float = 1.0):
    """Uniform on ``[a, b)``.

    Arguments:
        key: a random key.
        shape: the shape of the result.
        dtype: a floating dtype.
        a, b: the bounds.

    >>> init.uniform(fg.random.key(0), (2,), a=-1.0, b=1.0).shape
    (2,)
    """
    return random.uniform(key, tuple(shape), _float("uniform", dtype), minval=a, maxval=b)


def normal(key, shape: Sequence[int], dtype=dtypes.float32, mean: float = 0.0,
           std: float = 1.0):
    """Normal with the given ``mean`` and ``std``.

    >>> init.normal(fg.random.key(0), (3,), std=0.02).shape
    (3,)
    """
    sample = random.normal(key, tuple(shape), _float("normal", dtype))
    return sample * std + mean


def zeros(key, shape: Sequence[int], dtype=dtypes.float32):
    """Zeros (``key`` is ignored; it may be None).

    >>> init.zeros(None, (2,))
    tensor([0., 0.], dtype=float32)
    """
    return full(tuple(shape), 0, dtype)


def ones(key, shape: Sequence[int], dtype=dtypes.float32):
    """Ones (``key`` is ignored; it may be None).

    >>> init.ones(None, (2,))
    tensor([1., 1.], dtype=float32)
    """
    return full(tuple(shape), 1, dtype)


def xavier_uniform(key, shape: Sequence[int], dtype=dtypes.float32, gain: float = 1.0):
    """Glorot uniform: ``U(-b, b)`` with ``b = gain * sqrt(6 / (fan_in + fan_out))``.

    >>> init.xavier_uniform(fg.random.key(0), (4, 3)).shape
    (4, 3)
    """
    fan_in, fan_out = compute_fans(shape)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform(key, shape, dtype, -bound, bound)


def xavier_normal(key, shape: Sequence[int], dtype=dtypes.float32, gain: float = 1.0):
    """Glorot normal: std ``gain * sqrt(2 / (fan_in + fan_out))``.

    >>> init.xavier_normal(fg.random.key(0), (4, 3)).shape
    (4, 3)
    """
    fan_in, fan_out = compute_fans(shape)
    return normal(key, shape, dtype, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform(key, shape: Sequence[int], dtype=dtypes.float32, a: float = 0.0,
                    mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """He uniform: ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``, ``gain`` from
    :func:`calculate_gain` (``a``: the leaky_relu slope).

    ``a=sqrt(5)`` gives ``b = 1 / sqrt(fan_in)``, PyTorch's default for Linear and Conv.

    >>> init.kaiming_uniform(fg.random.key(0), (8, 4), nonlinearity="relu").shape
    (8, 4)
    """
    gain = calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / _fan(shape, mode))
    return uniform(key, shape, dtype, -bound, bound)


def kaiming_normal(key, shape: Sequence[int], dtype=dtypes.float32, a: float = 0.0,
                   mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """He normal: std ``gain / sqrt(fan)``.

    >>> init.kaiming_normal(fg.random.key(0), (8, 4), mode="fan_out").shape
    (8, 4)
    """
    gain = calculate_gain(nonlinearity, a)
    return normal(key, shape, dtype, 0.0, gain / math.sqrt(_fan(shape, mode)))
