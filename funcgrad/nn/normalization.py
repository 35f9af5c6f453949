"""LayerNorm, RMSNorm and BatchNorm (with explicit running-statistics state)."""

from __future__ import annotations

from typing import NamedTuple

import funcgrad.numpy as fnp
from funcgrad.core import dtypes
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.tensor import Tensor
from funcgrad.nn import functional as F
from funcgrad.nn.module import Module
from funcgrad.numpy._util import asarray

__all__ = ["BatchNorm", "BatchNormState", "LayerNorm", "RMSNorm"]


def _dtype(dtype):
    return dtypes.float32 if dtype is None else dtypes.canonicalize(dtype)


def _shape(normalized_shape) -> tuple:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` axes, then scale and shift.

    Arguments:
        normalized_shape: an int or the trailing shape to normalize over.
        eps: added to the variance.
        elementwise_affine: learn ``weight`` (ones) and ``bias`` (zeros) of that shape.
        bias: whether to learn the bias (with ``elementwise_affine``).
        dtype: the parameters' dtype (float32 by default).

    Example:
        >>> ln = nn.LayerNorm(4)
        >>> ln(fg.ones((2, 4))).shape
        (2, 4)
    """

    weight: Tensor | None
    bias: Tensor | None
    normalized_shape: tuple
    eps: float

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, *, dtype=None):
        self.normalized_shape, self.eps = _shape(normalized_shape), float(eps)
        dtype = _dtype(dtype)
        self.weight = fnp.ones(self.normalized_shape, dtype) if elementwise_affine else None
        self.bias = fnp.zeros(self.normalized_shape, dtype) if elementwise_affine and bias \
            else None

    def forward(self, x) -> Tensor:
        x = asarray(x)
        n = len(self.normalized_shape)
        if x.ndim < n or x.shape[x.ndim - n:] != self.normalized_shape:
            raise ValueError(f"LayerNorm: expected input with trailing dimensions "
                             f"{self.normalized_shape}, got shape {x.shape}")
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the trailing ``normalized_shape`` axes.

    Arguments:
        normalized_shape: an int or the trailing shape to normalize over.
        eps: added to the mean square; ``None`` uses the input dtype's machine epsilon
            (PyTorch's ``eps=None``).
        elementwise_affine: learn a ``weight`` (ones) of that shape.
        dtype: the parameters' dtype (float32 by default).

    Example:
        >>> nn.RMSNorm(4)(fg.ones((2, 4))).shape
        (2, 4)
    """

    weight: Tensor | None
    normalized_shape: tuple
    eps: float | None

    def __init__(self, normalized_shape, eps: float | None = 1e-6,
                 elementwise_affine: bool = True, *, dtype=None):
        self.normalized_shape = _shape(normalized_shape)
        self.eps = None if eps is None else float(eps)
        self.weight = fnp.ones(self.normalized_shape, _dtype(dtype)) if elementwise_affine \
            else None

    def forward(self, x) -> Tensor:
        x = asarray(x)
        n = len(self.normalized_shape)
        if x.ndim < n or x.shape[x.ndim - n:] != self.normalized_shape:
            raise ValueError(f"RMSNorm: expected input with trailing dimensions "
                             f"{self.normalized_shape}, got shape {x.shape}")
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)


class BatchNormState(NamedTuple):
    """BatchNorm's running statistics (a pytree): float running averages and an int32
    count of the training batches seen."""

    running_mean: Tensor
    running_var: Tensor
    num_batches_tracked: Tensor


class BatchNorm(Module):
    """Batch normalization over the channel axis 1 of ``(N, C)``, ``(N, C, L)``,
    ``(N, C, H, W)``... inputs, with its running statistics as explicit state.

    Training, ``y, state = bn(x, state)``, normalizes with the batch mean and biased
    variance and updates the running averages as PyTorch does:
    ``running = (1 - momentum) * running + momentum * batch`` with the *unbiased* batch
    variance (``momentum=None``: the cumulative average over the batches seen).
    ``y, state = bn(x, state, inference=True)`` uses the running averages and returns the
    state unchanged.  The module itself only holds the float ``weight`` and ``bias``, so
    ``fg.grad`` of a model containing it needs no filtering.

    An unbatched image ``(C, H, W)`` is taken as a batch of one (so a model composes with
    ``fg.vmap``, typically with ``inference=True``) where the batched reading cannot hold:
    ``C`` on axis 0 and not on axis 1; a ``(C, C, W)`` input is read as ``(N, C, L)``.

    Arguments:
        num_features: the number of channels ``C``.
        eps: added to the variance.
        momentum: the running averages' update factor, or None for a cumulative average.
        affine: learn ``weight`` (ones) and ``bias`` (zeros).
        track_running_stats: False normalizes with the batch statistics also in inference
            and leaves the state as it is (PyTorch's ``track_running_stats=False``).
        dtype: the parameters' and statistics' dtype (float32 by default).

    Example:
        >>> bn = nn.BatchNorm(3)
        >>> state = bn.initial_state()
        >>> y, state = bn(fg.ones((8, 3, 4, 4)), state)
        >>> y, _ = bn(fg.ones((8, 3, 4, 4)), state, inference=True)
    """

    weight: Tensor | None
    bias: Tensor | None
    num_features: int
    eps: float
    momentum: float | None
    track_running_stats: bool
    dtype: object

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, *, dtype=None):
        self.num_features, self.eps = int(num_features), float(eps)
        self.track_running_stats = bool(track_running_stats)
        self.momentum = None if momentum is None else float(momentum)
        self.dtype = _dtype(dtype)
        self.weight = fnp.ones((num_features,), self.dtype) if affine else None
        self.bias = fnp.zeros((num_features,), self.dtype) if affine else None

    def initial_state(self) -> BatchNormState:
        """Running mean zeros, running variance ones, zero batches seen."""
        return BatchNormState(fnp.zeros((self.num_features,), self.dtype),
                              fnp.ones((self.num_features,), self.dtype),
                              fnp.zeros((), dtypes.int32))

    def forward(self, x, state: BatchNormState, *, inference: bool = False):
        x = asarray(x)
        if x.ndim == 3 and x.shape[0] == self.num_features != x.shape[1]:
            y, state = self.forward(x[None], state, inference=inference)
            return y[0], state
        if x.ndim < 2 or x.shape[1] != self.num_features:
            raise ValueError(f"BatchNorm: expected input of shape (N, {self.num_features}, ...) "
                             f"with the channels on axis 1 (or an unbatched image "
                             f"({self.num_features}, H, W)), got shape {x.shape}")
        if not isinstance(state, tuple) or len(state) != 3:
            raise TypeError("BatchNorm: the second argument must be the state from "
                            "bn.initial_state() (or the state a previous call returned)")
        state = state if isinstance(state, BatchNormState) else BatchNormState(*state)
        for name in ("running_mean", "running_var"):
            value = getattr(state, name)
            if value is not None and tuple(fnp.shape(value)) != (self.num_features,):
                raise ValueError(f"BatchNorm: state.{name} has shape {tuple(fnp.shape(value))}, "
                                 f"this layer's is ({self.num_features},); pass the state "
                                 "from this layer's initial_state()")
        if not dtypes.is_inexact(x.dtype):
            x = x.astype(dtypes.float32)
        axes = (0,) + tuple(range(2, x.ndim))
        shape = (1, self.num_features) + (1,) * (x.ndim - 2)
        if inference and self.track_running_stats:
            mean = fnp.reshape(state.running_mean, shape).astype(x.dtype)
            var = fnp.reshape(state.running_var, shape).astype(x.dtype)
        else:
            count = x.size // self.num_features
            if count < 2:
                raise ValueError(f"BatchNorm: training needs more than one value per channel, "
                                 f"got input of shape {x.shape}; use inference=True")
            mean = fnp.mean(x, axis=axes, keepdims=True)
            var = fnp.mean(fnp.square(x - mean), axis=axes, keepdims=True)
            if self.track_running_stats and not inference:
                state = self._updated(state, fnp.reshape(mean, (-1,)),
                                      fnp.reshape(var, (-1,)), count)
        y = (x - mean) * ew.rsqrt(var + self.eps)
        if self.weight is not None:
            y = y * fnp.reshape(self.weight, shape).astype(y.dtype)
        if self.bias is not None:
            y = y + fnp.reshape(self.bias, shape).astype(y.dtype)
        return y, state

    def _updated(self, state: BatchNormState, mean, var, count: int) -> BatchNormState:
        from funcgrad.transforms.custom import stop_gradient

        mean, var = stop_gradient(mean), stop_gradient(var)
        tracked = state.num_batches_tracked + 1
        unbiased = var * (count / (count - 1))
        if self.momentum is None:
            factor = 1.0 / tracked.astype(state.running_mean.dtype)
        else:
            factor = self.momentum
        dtype = state.running_mean.dtype
        running_mean = (1 - factor) * state.running_mean + factor * mean.astype(dtype)
        running_var = (1 - factor) * state.running_var + factor * unbiased.astype(dtype)
        return BatchNormState(running_mean.astype(dtype), running_var.astype(dtype),
                              tracked.astype(state.num_batches_tracked.dtype))
