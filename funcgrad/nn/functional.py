"""nn.functional: activations, losses, dropout, normalization, convolution, pooling and
attention as pure functions (PyTorch's names and argument names).

>>> import funcgrad.nn.functional as F
>>> F.relu(fg.tensor([-1.0, 2.0]))
tensor([0., 2.], dtype=float32)
"""

from __future__ import annotations

import math

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import random
from funcgrad.core import dtypes
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.tensor import Tensor
from funcgrad.nn import _windows
from funcgrad.numpy._util import asarray, normalize_axis
from funcgrad.transforms.custom import custom_jvp, stop_gradient

__all__ = [
    "avg_pool1d", "avg_pool2d", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "conv1d", "conv2d", "conv_transpose2d", "cross_entropy", "dropout", "elu", "gelu",
    "l1_loss", "layer_norm", "leaky_relu", "log_softmax", "max_pool1d", "max_pool2d",
    "mse_loss", "nll_loss", "normalize", "one_hot", "relu", "rms_norm",
    "scaled_dot_product_attention", "sigmoid", "silu", "softmax", "softplus", "tanh",
]

_REDUCTIONS = ("mean", "sum", "none")


def _float(x) -> Tensor:
    x = asarray(x)
    return x if dtypes.is_inexact(x.dtype) else x.astype(dtypes.float32)


# --- activations ---------------------------------------------------------------------------


def relu(input) -> Tensor:
    """``max(input, 0)``; its derivative at 0 is 0, as PyTorch's and JAX's.

    >>> F.relu(fg.tensor([-1.0, 2.0]))
    tensor([0., 2.], dtype=float32)
    """
    return _relu(asarray(input))


@custom_jvp
def _relu(x):
    return fnp.maximum(x, 0)


@_relu.defjvp
def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # maximum's rule would give half the tangent at x == 0
    return _relu(x), fnp.where(x > 0, t, fnp.zeros_like(t))


def leaky_relu(input, negative_slope: float = 0.01) -> Tensor:
    """``input`` where positive, ``negative_slope * input`` elsewhere.

    >>> F.leaky_relu(fg.tensor([-1.0, 2.0]), 0.1)
    tensor([-0.1,  2. ], dtype=float32)
    """
    input = asarray(input)
    # x > 0 picks the branch as PyTorch does: the derivative at 0 is negative_slope
    return fnp.where(input > 0, input, input * negative_slope)


def elu(input, alpha: float = 1.0) -> Tensor:
    """``input`` where positive, ``alpha * (exp(input) - 1)`` elsewhere.

    >>> F.elu(fg.tensor([0.0, 1.0]))
    tensor([0., 1.], dtype=float32)
    """
    input = _float(input)
    # expm1 of min(x, 0) by a select, not minimum: at 0 the derivative is then alpha, as
    # PyTorch's (minimum would halve it)
    return fnp.where(input > 0, input,
                     alpha * fnp.expm1(fnp.where(input > 0, fnp.zeros_like(input), input)))


def sigmoid(input) -> Tensor:
    """The logistic function ``1 / (1 + exp(-input))``.

    >>> F.sigmoid(fg.tensor([0.0]))
    tensor([0.5], dtype=float32)
    """
    return ew.logistic(_float(input))


def tanh(input) -> Tensor:
    """Hyperbolic tangent.

    >>> F.tanh(fg.tensor([0.0]))
    tensor([0.], dtype=float32)
    """
    return fnp.tanh(input)


def silu(input) -> Tensor:
    """``input * sigmoid(input)`` (swish).

    >>> F.silu(fg.tensor([0.0]))
    tensor([0.], dtype=float32)
    """
    input = _float(input)
    return input * ew.logistic(input)


def softplus(input, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * input)) / beta``, linear above ``threshold`` (as PyTorch).

    >>> F.softplus(fg.tensor([0.0]))
    tensor([0.6931472], dtype=float32)
    """
    input = _float(input)
    scaled = input * beta
    soft = fnp.logaddexp(scaled, 0.0) / beta
    return fnp.where(scaled > threshold, input, soft)


def gelu(input, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: ``x * Phi(x)`` with the normal CDF ``Phi`` (exact, via
    erf, for ``approximate="none"``; PyTorch's tanh formula for ``"tanh"``).

    >>> F.gelu(fg.tensor([0.0, 1.0]))
    tensor([0.       , 0.8413447], dtype=float32)
    """
    input = _float(input)
    if approximate == "none":
        return input * 0.5 * (1.0 + ew.erf(input * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + fnp.tanh(inner))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def softmax(input, dim: int = -1) -> Tensor:
    """``exp(input) / sum(exp(input))`` along ``dim`` (computed stably).

    >>> F.softmax(fg.tensor([0.0, 0.0]), dim=-1)
    tensor([0.5, 0.5], dtype=float32)
    """
    input = _float(input)
    if dim is not None:  # (None: over every axis, as JAX)
        dim = normalize_axis("softmax: dim", dim, input.ndim)
    shifted = input - stop_gradient(fnp.max(input, axis=dim, keepdims=True))
    e = fnp.exp(shifted)
    return e / fnp.sum(e, axis=dim, keepdims=True)


def log_softmax(input, dim: int = -1) -> Tensor:
    """``input - logsumexp(input)`` along ``dim``.

    >>> F.log_softmax(fg.tensor([0.0, 0.0]), dim=-1)
    tensor([-0.6931472, -0.6931472], dtype=float32)
    """
    input = _float(input)
    if dim is not None:  # (None: over every axis, as JAX)
        dim = normalize_axis("log_softmax: dim", dim, input.ndim)
    shifted = input - stop_gradient(fnp.max(input, axis=dim, keepdims=True))
    return shifted - fnp.log(fnp.sum(fnp.exp(shifted), axis=dim, keepdims=True))


def one_hot(tensor, num_classes: int = -1, dtype=dtypes.int32) -> Tensor:
    """One-hot encoding of integer class indices, a new last axis of ``num_classes``.

    Arguments:
        tensor: integer class indices of any shape.
        num_classes: the number of classes; ``-1`` infers ``max + 1`` (eager only).
        dtype: the result dtype (PyTorch gives int64; funcgrad's default int is int32).

    >>> F.one_hot(fg.tensor([0, 2]), 3)
    tensor([[1, 0, 0],
            [0, 0, 1]], dtype=int32)
    """
    tensor = asarray(tensor)
    if not dtypes.is_integer(tensor.dtype):
        raise TypeError(f"one_hot: expected integer class indices, got dtype "
                        f"{tensor.dtype.name}")
    if num_classes == -1:
        num_classes = int(np.max(np.asarray(tensor))) + 1 if tensor.size else 0
    if type(tensor) is Tensor and tensor.size:
        # concrete labels are checked, as PyTorch does (a bad one gave a row of zeros;
        # traced ones cannot be, and still do, as JAX's one_hot)
        labels = tensor.numpy()
        bad = labels[(labels < 0) | (labels >= num_classes)]
        if bad.size:
            raise IndexError(f"one_hot: class {int(bad[0])} is out of bounds for "
                             f"num_classes={num_classes}")
    classes = fnp.arange(num_classes, dtype=tensor.dtype)
    return (fnp.expand_dims(tensor, -1) == classes).astype(dtype)


# --- losses ----------------------------------------------------------------------------------


def _reduce(name: str, loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return fnp.mean(loss)
    if reduction == "sum":
        return fnp.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _check_reduction(name, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _class_axis_last(name: str, input: Tensor, target_shape: tuple) -> Tensor:
    """Move the class axis (1, or 0 for an unbatched (C,) input) last, checking shapes."""
    if input.ndim == 0:
        raise ValueError(f"{name}: input must have a class dimension, got a scalar")
    if input.ndim == 1:
        expected = ()
    else:
        expected = (input.shape[0],) + input.shape[2:]
    if tuple(target_shape) != expected:
        raise ValueError(f"{name}: input of shape {input.shape} (class axis "
                         f"{0 if input.ndim == 1 else 1}) needs integer targets of shape "
                         f"{expected}, got {tuple(target_shape)}")
    return input if input.ndim == 1 else fnp.moveaxis(input, 1, -1)


def _signed_labels(target):
    """Unsigned integer labels (uint8 images' labels, say) widened to a signed dtype, so
    they compare with a negative ``ignore_index`` (PyTorch accepts byte labels)."""
    if target.dtype.kind == "u":
        return target.astype(dtypes.int32 if target.dtype.itemsize < 4 else dtypes.int64)
    return target


def _weighted_nll(name, logp_last, target, weight, ignore_index):
    """Per-element ``-weight[t] * logp[t]`` and the weights ``weight[t]`` (0 where ignored)."""
    num_classes = logp_last.shape[-1]
    if type(target) is Tensor:
        # concrete labels are checked, as PyTorch does (traced ones cannot be: a negative
        # one would count from the end, a too large one is clamped)
        labels = target.numpy()
        bad = labels[(labels != ignore_index) & ((labels < 0) | (labels >= num_classes))]
        if bad.size:
            raise IndexError(f"{name}: target {int(bad[0])} is out of bounds for "
                             f"{num_classes} classes (ignore_index={ignore_index})")
    ignored = target == ignore_index
    safe = fnp.where(ignored, 0, target)
    picked = fnp.take_along_axis(logp_last, fnp.expand_dims(safe, -1), axis=-1)[..., 0]
    if weight is None:
        w = fnp.where(ignored, 0.0, 1.0).astype(logp_last.dtype)
    else:
        weight = asarray(weight).astype(logp_last.dtype)
        if weight.shape != (num_classes,):
            raise ValueError(f"{name}: weight must have shape ({num_classes},), got "
                             f"{weight.shape}")
        w = fnp.where(ignored, 0.0, fnp.take(weight, safe))
    return -w * picked, w


def nll_loss(input, target, weight=None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of integer ``target`` under log-probabilities ``input``.

    Arguments:
        input: log-probabilities ``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``.
        target: class indices ``(N,)``, ``()`` or ``(N, d1, ...)``.
        weight: optional per-class weights ``(C,)``.
        ignore_index: targets equal to it contribute nothing.
        reduction: ``"mean"`` (divided by the summed weights of the targets, as PyTorch),
            ``"sum"`` or ``"none"``.

    >>> F.nll_loss(fg.tensor([[-0.5, -1.0]]), fg.tensor([1]))
    tensor(1., dtype=float32)
    """
    _check_reduction("nll_loss", reduction)
    input, target = _float(input), asarray(target)
    if not dtypes.is_integer(target.dtype):
        raise TypeError(f"nll_loss: target must be integer class indices, got dtype "
                        f"{target.dtype.name}")
    target = _signed_labels(target)
    logp = _class_axis_last("nll_loss", input, target.shape)
    loss, w = _weighted_nll("nll_loss", logp, target, weight, ignore_index)
    if reduction == "mean":
        return _mean_over(fnp.sum(loss), fnp.sum(w))
    return _reduce("nll_loss", loss, reduction)


def _mean_over(total, count):
    """``total / count``, PyTorch's "mean" of weighted targets: NaN when nothing counts
    (every target ignored), with a zero gradient there rather than NaN (inf * 0), so one
    fully padded batch does not turn the parameters into NaN."""
    empty = count == 0
    return fnp.where(empty, fnp.nan, total / fnp.where(empty, 1.0, count))


def cross_entropy(input, target, weight=None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits ``input`` and integer labels or class probabilities.

    Follows PyTorch exactly, including how ``weight``, ``ignore_index`` and
    ``label_smoothing`` combine under ``reduction="mean"``.

    Arguments:
        input: unnormalized logits ``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``.
        target: integer class indices (shape of ``input`` without the class axis), or
            floating class probabilities of the shape of ``input``.
        weight: optional per-class weights ``(C,)``.
        ignore_index: integer targets equal to it contribute nothing.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        label_smoothing: in ``[0, 1]``: mixes the target with the uniform distribution.

    >>> logits = fg.tensor([[2.0, 0.5, -1.0]])
    >>> F.cross_entropy(logits, fg.tensor([0]))
    tensor(0.2413..., dtype=float32)
    """
    _check_reduction("cross_entropy", reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing}")
    input, target = _float(input), asarray(target)
    class_axis = 0 if input.ndim == 1 else 1
    if dtypes.is_inexact(target.dtype):
        if target.shape != input.shape:
            raise ValueError(f"cross_entropy: probability targets must have the input's shape "
                             f"{input.shape}, got {target.shape}")
        num_classes = input.shape[class_axis]
        logp = log_softmax(input, dim=class_axis)
        target = target.astype(logp.dtype)
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / num_classes
        if weight is not None:
            shape = [1] * input.ndim
            shape[class_axis] = num_classes
            logp = logp * fnp.reshape(asarray(weight).astype(logp.dtype), shape)
        loss = -fnp.sum(logp * target, axis=class_axis)
        return _reduce("cross_entropy", loss, reduction)
    if not dtypes.is_integer(target.dtype):
        raise TypeError(f"cross_entropy: target must be integer class indices or floating "
                        f"probabilities, got dtype {target.dtype.name}")
    target = _signed_labels(target)
    logp = _class_axis_last("cross_entropy", log_softmax(input, dim=class_axis), target.shape)
    loss, w = _weighted_nll("cross_entropy", logp, target, weight, ignore_index)
    nll = _mean_over(fnp.sum(loss), fnp.sum(w)) if reduction == "mean" else \
        _reduce("cross_entropy", loss, reduction)
    if not label_smoothing:
        return nll
    num_classes = logp.shape[-1]
    if weight is None:
        smooth = -fnp.sum(logp, axis=-1)
    else:
        smooth = -fnp.sum(logp * asarray(weight).astype(logp.dtype), axis=-1)
    kept = target != ignore_index
    smooth = fnp.where(kept, smooth, 0.0)
    if reduction == "mean":
        smooth = _mean_over(fnp.sum(smooth), fnp.sum(w) if weight is not None else fnp.sum(kept))
    else:
        smooth = _reduce("cross_entropy", smooth, reduction)
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / num_classes)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction: str = "mean",
                                     pos_weight=None) -> Tensor:
    """Binary cross entropy of ``sigmoid(input)`` against ``target`` in [0, 1], computed
    stably from the logits.

    Arguments:
        input: logits of any shape.
        target: probabilities of the same shape.
        weight: optional weight broadcast against the loss.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        pos_weight: optional weight of the positive term, broadcast along the last axis.

    >>> F.binary_cross_entropy_with_logits(fg.tensor([0.0]), fg.tensor([1.0]))
    tensor(0.6931472, dtype=float32)
    """
    _check_reduction("binary_cross_entropy_with_logits", reduction)
    input = _float(input)
    target = asarray(target).astype(input.dtype)
    if target.shape != input.shape:
        raise ValueError(f"binary_cross_entropy_with_logits: target shape {target.shape} "
                         f"differs from input shape {input.shape}")
    # -log(sigmoid(x)) = log(1 + exp(-x)), without overflow and with the exact
    # derivative -sigmoid(-x) at x = 0 too
    neg_log_sigmoid = fnp.logaddexp(-input, 0.0)
    if pos_weight is None:
        loss = (1 - target) * input + neg_log_sigmoid
    else:
        log_weight = 1 + (asarray(pos_weight).astype(input.dtype) - 1) * target
        loss = (1 - target) * input + log_weight * neg_log_sigmoid
    if weight is not None:
        loss = loss * asarray(weight).astype(input.dtype)
    return _reduce("binary_cross_entropy_with_logits", loss, reduction)


def binary_cross_entropy(input, target, weight=None, reduction: str = "mean") -> Tensor:
    """Binary cross entropy of probabilities ``input`` against ``target`` (logs clamped at
    -100, as PyTorch).

    >>> F.binary_cross_entropy(fg.tensor([0.5]), fg.tensor([1.0]))
    tensor(0.6931472, dtype=float32)
    """
    _check_reduction("binary_cross_entropy", reduction)
    input = _float(input)
    target = asarray(target).astype(input.dtype)
    loss = _binary_cross_entropy(input, target)
    if weight is not None:
        loss = loss * asarray(weight).astype(input.dtype)
    return _reduce("binary_cross_entropy", loss, reduction)


@custom_jvp
def _binary_cross_entropy(input, target):
    return -(target * fnp.maximum(fnp.log(input), -100.0)
             + (1 - target) * fnp.maximum(fnp.log1p(-input), -100.0))


@_binary_cross_entropy.defjvp
def _binary_cross_entropy_jvp(primals, tangents):
    # PyTorch's derivative, (p - y) / max(p (1 - p), 1e-12): finite at p = 0 and 1, where
    # the clamped logs' own derivative is 0 * inf = NaN
    (p, y), (dp, dy) = primals, tangents
    by_p = (p - y) / fnp.maximum(p * (1 - p), 1e-12)
    by_y = fnp.maximum(fnp.log1p(-p), -100.0) - fnp.maximum(fnp.log(p), -100.0)
    return _binary_cross_entropy(p, y), by_p * dp + by_y * dy


def _check_same_shape(name, input, target):
    if input.shape != target.shape:
        raise ValueError(f"{name}: input shape {input.shape} and target shape {target.shape} "
                         "differ; PyTorch would broadcast them, which is almost always a bug "
                         "(reshape one explicitly)")


def mse_loss(input, target, reduction: str = "mean") -> Tensor:
    """Mean squared error ``(input - target) ** 2`` (reduced).

    >>> F.mse_loss(fg.tensor([1.0, 2.0]), fg.tensor([1.0, 0.0]))
    tensor(2., dtype=float32)
    """
    _check_reduction("mse_loss", reduction)
    input, target = _float(input), asarray(target)
    _check_same_shape("mse_loss", input, target)
    return _reduce("mse_loss", fnp.square(input - target), reduction)


def l1_loss(input, target, reduction: str = "mean") -> Tensor:
    """Mean absolute error ``|input - target|`` (reduced).

    >>> F.l1_loss(fg.tensor([1.0, 2.0]), fg.tensor([1.0, 0.0]))
    tensor(1., dtype=float32)
    """
    _check_reduction("l1_loss", reduction)
    input, target = _float(input), asarray(target)
    _check_same_shape("l1_loss", input, target)
    diff = input - target
    # |d| as d * sign(d) for real d: the derivative at input == target is then 0, as
    # PyTorch's (abs's is 1 there)
    error = fnp.abs(diff) if dtypes.is_complex(diff.dtype) else diff * fnp.sign(diff)
    return _reduce("l1_loss", error, reduction)


# --- dropout and normalization -------------------------------------------------------------


def dropout(input, p: float = 0.5, training: bool = True, *, key=None) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Arguments:
        input: any tensor.
        p: the drop probability.
        training: ``False`` returns ``input`` unchanged (PyTorch's flag).
        key: the random key (required when ``training`` and ``p > 0``).

    >>> F.dropout(fg.ones(4), 0.5, key=fg.random.key(0))
    tensor([0., 0., 2., 2.], dtype=float32)
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    input = asarray(input)
    if not training or p == 0.0:
        return input
    if key is None:
        raise ValueError("dropout: training mode needs a random key; pass key=... (or "
                         "training=False / inference=True to disable dropout)")
    if p == 1.0:
        return fnp.zeros_like(input)
    keep = random.bernoulli(key, 1.0 - p, input.shape)
    return fnp.where(keep, input / (1.0 - p), 0.0).astype(input.dtype)


def _normalized_axes(name: str, input: Tensor, normalized_shape) -> tuple:
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) \
        else tuple(normalized_shape)
    n = len(shape)
    if n == 0 or input.shape[input.ndim - n:] != shape or input.ndim < n:
        raise ValueError(f"{name}: expected input with trailing dimensions {shape}, got shape "
                         f"{input.shape}")
    return tuple(range(input.ndim - n, input.ndim))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` axes (biased variance), then scale
    by ``weight`` and shift by ``bias`` if given.

    >>> F.layer_norm(fg.tensor([[1.0, 3.0]]), (2,))
    tensor([[-0.99999..., 0.99999...]], dtype=float32)
    """
    input = _float(input)
    axes = _normalized_axes("layer_norm", input, normalized_shape)
    mean = fnp.mean(input, axis=axes, keepdims=True)
    centered = input - mean
    var = fnp.mean(fnp.square(centered), axis=axes, keepdims=True)
    y = centered * ew.rsqrt(var + eps)
    if weight is not None:
        y = y * asarray(weight).astype(y.dtype)
    if bias is not None:
        y = y + asarray(bias).astype(y.dtype)
    return y


def rms_norm(input, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    """``input / sqrt(mean(input ** 2) + eps)`` over the trailing ``normalized_shape`` axes,
    times ``weight`` if given (``eps=None``: the dtype's machine epsilon, as PyTorch).

    >>> F.rms_norm(fg.tensor([[3.0, 4.0]]), (2,), eps=0.0)
    tensor([[0.84852815, 1.1313709 ]], dtype=float32)
    """
    input = _float(input)
    axes = _normalized_axes("rms_norm", input, normalized_shape)
    if eps is None:
        eps = float(dtypes.finfo(input.dtype).eps)
    y = input * ew.rsqrt(fnp.mean(fnp.square(input), axis=axes, keepdims=True) + eps)
    if weight is not None:
        y = y * asarray(weight).astype(y.dtype)
    return y


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``.

    >>> F.normalize(fg.tensor([[3.0, 4.0]]))
    tensor([[0.6, 0.8]], dtype=float32)
    """
    input = _float(input)
    total = fnp.sum(fnp.abs(input) ** p, axis=dim, keepdims=True)
    # the root of a zero total held away from 0: its infinite derivative there made a zero
    # vector's gradient NaN (PyTorch's is 1 / eps, from the eps branch)
    zero = total == 0
    norm = fnp.where(zero, 0.0, fnp.where(zero, 1.0, total) ** (1.0 / p))
    return input / fnp.maximum(norm, eps)


# --- convolution and pooling --------------------------------------------------------------


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """1-d convolution (cross-correlation) of ``(N, C_in, L)`` or ``(C_in, L)`` with a
    ``(C_out, C_in / groups, k)`` weight; ``padding`` may be ``"valid"`` or ``"same"``.

    >>> F.conv1d(fg.ones((1, 1, 5)), fg.ones((1, 1, 3))).shape
    (1, 1, 3)
    """
    return _windows.conv("conv1d", input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """2-d convolution (cross-correlation, as PyTorch) of ``(N, C_in, H, W)`` or
    ``(C_in, H, W)`` with a ``(C_out, C_in / groups, kh, kw)`` weight.

    Arguments:
        input: the images.
        weight: the filters.
        bias: optional ``(C_out,)``.
        stride, padding, dilation: ints or pairs; ``padding`` also ``"valid"``/``"same"``.
        groups: split the channels into this many independent groups.

    >>> F.conv2d(fg.ones((1, 3, 5, 5)), fg.ones((2, 3, 3, 3)), padding=1).shape
    (1, 2, 5, 5)
    """
    return _windows.conv("conv2d", input, weight, bias, stride, padding, dilation, groups, 2)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups: int = 1, dilation=1):
    """2-d transposed convolution with a ``(C_in, C_out / groups, kh, kw)`` weight; the
    output size is ``(H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    >>> F.conv_transpose2d(fg.ones((1, 2, 4, 4)), fg.ones((2, 3, 3, 3)), stride=2).shape
    (1, 3, 9, 9)
    """
    return _windows.conv_transpose("conv_transpose2d", input, weight, bias, stride, padding,
                                   output_padding, groups, dilation, 2)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Maximum over ``kernel_size`` windows of ``(N, C, H, W)`` or ``(C, H, W)``;
    ``stride`` defaults to ``kernel_size``, padding counts as ``-inf``, ``ceil_mode`` keeps
    partial last windows (as PyTorch).  The gradient goes to the first maximal element
    of each window, as PyTorch's.

    >>> F.max_pool2d(fg.ones((1, 1, 4, 4)), 2).shape
    (1, 1, 2, 2)
    """
    _no_indices("max_pool2d", return_indices)
    return _windows.pool("max_pool2d", input, kernel_size, stride, padding, dilation, "max", 2,
                         ceil_mode=ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """Mean over ``kernel_size`` windows; zero padding is counted in the mean unless
    ``count_include_pad=False``; ``ceil_mode`` and ``divisor_override`` as PyTorch.

    >>> F.avg_pool2d(fg.ones((1, 1, 4, 4)), 2).shape
    (1, 1, 2, 2)
    """
    return _windows.pool("avg_pool2d", input, kernel_size, stride, padding, 1, "avg", 2,
                         count_include_pad, ceil_mode, divisor_override)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """1-d max pooling of ``(N, C, L)`` or ``(C, L)``.

    >>> F.max_pool1d(fg.ones((1, 1, 4)), 2).shape
    (1, 1, 2)
    """
    _no_indices("max_pool1d", return_indices)
    return _windows.pool("max_pool1d", input, kernel_size, stride, padding, dilation, "max", 1,
                         ceil_mode=ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-d average pooling of ``(N, C, L)`` or ``(C, L)``.

    >>> F.avg_pool1d(fg.ones((1, 1, 4)), 2).shape
    (1, 1, 2)
    """
    return _windows.pool("avg_pool1d", input, kernel_size, stride, padding, 1, "avg", 1,
                         count_include_pad, ceil_mode)


def _no_indices(name: str, return_indices: bool) -> None:
    if return_indices:
        raise NotImplementedError(f"{name}: return_indices=True is not supported (there is "
                                  "no max_unpool); compute fnp.argmax over the windows instead")


# --- attention ----------------------------------------------------------------------------


def _masked_fill_value(dtype) -> float:
    return -np.inf


def attention_weights(scores: Tensor, *, allowed=None, additive=None,
                      dropout_p: float = 0.0, dropout_key=None) -> Tensor:
    """Softmax over the last axis of ``scores`` after masking (``allowed`` False entries
    get -inf) and adding ``additive``; then dropout. A row with every score -inf (nothing
    allowed) gets zero weights, not NaN (PyTorch's safe softmax): its gradient stays finite
    too, so one fully padded query does not turn every gradient into NaN."""
    if additive is not None:
        scores = scores + additive
    if allowed is not None:
        scores = fnp.where(allowed, scores, _masked_fill_value(scores.dtype))
    if allowed is None and additive is None:
        return _dropped(softmax(scores, dim=-1), dropout_p, dropout_key)
    empty = fnp.all(scores == -np.inf, axis=-1, keepdims=True)
    # the softmax of an empty row is computed on zeros, so its (unused) gradient is finite
    weights = softmax(fnp.where(empty, 0.0, scores), dim=-1)
    return _dropped(fnp.where(empty, 0.0, weights), dropout_p, dropout_key)


def _dropped(weights, dropout_p, dropout_key):
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, key=dropout_key)
    return weights


def causal_mask(target_length: int, source_length: int) -> Tensor:
    """Boolean ``(L, S)`` mask, True where attention is allowed (``j <= i``)."""
    rows = fnp.arange(target_length)[:, None]
    cols = fnp.arange(source_length)[None, :]
    return cols <= rows


def check_attention_mask(name: str, mask) -> None:
    """Refuse an attention mask that is neither bool nor floating (as PyTorch): a 0/1
    integer mask would be added to the scores, masking nothing."""
    if mask.dtype != np.bool_ and not dtypes.is_inexact(mask.dtype):
        raise TypeError(f"{name}: a mask must be bool or floating (added to the scores), "
                        f"got {mask.dtype.name}; for a 0/1 mask use mask.astype(bool)")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None, *,
                                 dropout_key=None) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value``, as PyTorch's.

    Careful: here (as in PyTorch's function) a boolean ``attn_mask`` is True where
    attention IS allowed; ``nn.MultiheadAttention``'s boolean mask is the opposite (True =
    not allowed), also as in PyTorch.

    Arguments:
        query: ``(..., L, E)``.
        key: ``(..., S, E)``.
        value: ``(..., S, Ev)``.
        attn_mask: boolean (True = take part in attention) or float (added to the
            scores), broadcastable to ``(..., L, S)``.
        dropout_p: dropout probability on the attention weights (needs ``dropout_key``).
        is_causal: apply a causal mask (``j <= i``); not together with ``attn_mask``.
        scale: defaults to ``1 / sqrt(E)``.
        dropout_key: the random key for dropout.

    Returns ``(..., L, Ev)``.

    >>> q = fg.ones((2, 4, 8))
    >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    (2, 4, 8)
    """
    query, key, value = _float(query), _float(key), _float(value)
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise ValueError(f"scaled_dot_product_attention: query, key and value need at least 2 "
                         f"dimensions (..., L, E); got shapes {query.shape}, {key.shape}, "
                         f"{value.shape}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: shapes do not align: query "
                         f"{query.shape} (..., L, E), key {key.shape} (..., S, E), value "
                         f"{value.shape} (..., S, Ev)")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass either attn_mask or "
                         "is_causal=True, not both (as PyTorch)")
    if dropout_p > 0.0 and dropout_key is None:
        raise ValueError("scaled_dot_product_attention: dropout_p > 0 needs dropout_key=...; "
                         "pass dropout_p=0.0 in inference")
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = fnp.matmul(query, fnp.swapaxes(key, -1, -2)) * scale
    allowed = additive = None
    if is_causal:
        allowed = causal_mask(query.shape[-2], key.shape[-2])
    elif attn_mask is not None:
        attn_mask = asarray(attn_mask)
        check_attention_mask("scaled_dot_product_attention", attn_mask)
        try:
            np.broadcast_shapes(attn_mask.shape, scores.shape)
        except ValueError:
            raise ValueError(f"scaled_dot_product_attention: attn_mask of shape "
                             f"{attn_mask.shape} does not broadcast to the scores' shape "
                             f"{scores.shape} (..., L, S)") from None
        if attn_mask.dtype == np.bool_:
            allowed = attn_mask
        else:
            additive = attn_mask.astype(scores.dtype)
    weights = attention_weights(scores, allowed=allowed, additive=additive,
                                dropout_p=dropout_p, dropout_key=dropout_key)
    return fnp.matmul(weights, value)
