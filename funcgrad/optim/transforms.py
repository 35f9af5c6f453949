"""Gradient transformations (Optax's building blocks): moment estimates, scaling,
clipping and weight decay.  The optimizers in ``aliases`` chain these.

Every ``update`` maps Tensors to Tensors with ``fnp`` operations only (no Python
branches on values), so it traces under ``jit``.  Formulas follow Optax's definitions;
each docstring gives the update for one leaf ``g`` of the gradient.

>>> from funcgrad import optim
>>> adam = optim.chain(optim.scale_by_adam(), optim.scale_by_learning_rate(1e-3))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import tree
from funcgrad.core import dtypes
from funcgrad.core.tensor import Tensor
from funcgrad.optim.base import (
    EmptyState,
    GradientTransformation,
    _full_like,
    _require_params,
    _safe_increment,
    _tree_cast,
    _tree_sum_of_squares,
    _tree_zeros_like,
    _zero_count,
)

__all__ = [
    "ScaleByAdamState", "ScaleByLionState", "ScaleByRmsState", "ScaleByRssState",
    "ScaleByScheduleState", "ScaleByStddevState", "TraceState", "add_decayed_weights",
    "clip", "clip_by_global_norm", "global_norm", "scale", "scale_by_adam",
    "scale_by_learning_rate", "scale_by_lion", "scale_by_rms", "scale_by_rss",
    "scale_by_schedule", "scale_by_stddev", "trace",
]


def _leaf_dtype(x):
    return x.dtype if isinstance(x, Tensor) else fnp.asarray(x).dtype


def _bias_correction(moment, decay: float, count):
    """``moment / (1 - decay ** count)``, the correction computed in float32 (float64 for
    float64 moments) as Optax does."""
    dtype = _leaf_dtype(moment)
    compute = dtypes.float64 if dtype == dtypes.float64 else dtypes.float32
    correction = 1 - fnp.power(fnp.asarray(decay, dtype=compute), count.astype(compute))
    return fnp.divide(moment, correction.astype(dtype))


def _moment(updates, moments, decay: float, order: int):
    """``decay * m + (1 - decay) * g ** order`` leaf by leaf."""
    if order == 1:
        return tree.map(lambda g, m: (1 - decay) * g + decay * m, updates, moments)
    return tree.map(lambda g, m: (1 - decay) * fnp.square(g) + decay * m, updates, moments)


def _cast_like(value, like):
    return fnp.asarray(value).astype(_leaf_dtype(like))


# --- scaling -----------------------------------------------------------------------------------


def scale(step_size: float) -> GradientTransformation:
    """Multiply every update by ``step_size``.

    >>> optim.scale(-0.5).update({"w": fg.ones(2)}, optim.EmptyState())[0]["w"]
    tensor([-0.5, -0.5], dtype=float32)
    """

    def init_fn(params):
        return EmptyState()

    def update_fn(updates, state, params=None, **extra_args):
        return tree.map(lambda g: g * step_size, updates), state

    return GradientTransformation(init_fn, update_fn)


class ScaleByScheduleState(NamedTuple):
    count: Any


def scale_by_schedule(step_size_fn: Callable) -> GradientTransformation:
    """Multiply the updates by ``step_size_fn(count)``; ``count`` (int32, from 0) lives in
    the state.

    >>> opt = optim.scale_by_schedule(optim.linear_schedule(1.0, 0.0, 10))
    """

    def init_fn(params):
        return ScaleByScheduleState(count=_zero_count())

    def update_fn(updates, state, params=None, **extra_args):
        step_size = step_size_fn(state.count)
        updates = tree.map(lambda g: g * _cast_like(step_size, g), updates)
        return updates, ScaleByScheduleState(count=_safe_increment(state.count))

    return GradientTransformation(init_fn, update_fn)


def scale_by_learning_rate(learning_rate, *, flip_sign: bool = True) -> GradientTransformation:
    """Multiply by ``-learning_rate`` (by ``learning_rate`` with ``flip_sign=False``);
    ``learning_rate`` is a number or a schedule.

    >>> opt = optim.scale_by_learning_rate(0.1)
    """
    sign = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    # checked here, not at the first update, where "0.1" * -1 was string repetition and a
    # list broadcast against the gradients
    ndim = learning_rate.ndim if isinstance(learning_rate, Tensor) else np.ndim(learning_rate)
    if learning_rate is None or isinstance(learning_rate, (str, bytes, bool)) or ndim != 0:
        raise TypeError(f"learning_rate must be a number, a scalar tensor or a schedule "
                        f"(a function of the step count), got {learning_rate!r}")
    return scale(sign * learning_rate)


# --- moment estimates --------------------------------------------------------------------------


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                  eps_root: float = 0.0, mu_dtype=None, *,
                  nesterov: bool = False) -> GradientTransformation:
    """Adam's scaling (Kingma & Ba, 2015), with bias correction:

    ``mu = b1 mu + (1 - b1) g``, ``nu = b2 nu + (1 - b2) g^2``, ``t = count + 1``,
    ``g <- mu_hat / (sqrt(nu_hat + eps_root) + eps)`` with ``mu_hat = mu / (1 - b1^t)``,
    ``nu_hat = nu / (1 - b2^t)``.  ``nesterov=True`` is NAdam's
    ``mu_hat = b1 mu / (1 - b1^(t+1)) + (1 - b1) g / (1 - b1^t)``.

    Arguments:
        b1, b2: decay rates of the first and second moments.
        eps: added to the denominator outside the square root.
        eps_root: added inside the square root.
        mu_dtype: optional dtype of the first moment (default: the parameters').

    >>> opt = optim.scale_by_adam(b1=0.9, b2=0.999)
    """

    def init_fn(params):
        return ScaleByAdamState(count=_zero_count(), mu=_tree_zeros_like(params, mu_dtype),
                                nu=_tree_zeros_like(params))

    def update_fn(updates, state, params=None, **extra_args):
        mu = _moment(updates, state.mu, b1, 1)
        nu = _moment(updates, state.nu, b2, 2)
        count = _safe_increment(state.count)
        if nesterov:
            mu_hat = tree.map(
                lambda m, g: _bias_correction(b1 * m, b1, _safe_increment(count))
                + _bias_correction((1 - b1) * g, b1, count), mu, updates)
        else:
            mu_hat = tree.map(lambda m: _bias_correction(m, b1, count), mu)
        nu_hat = tree.map(lambda v: _bias_correction(v, b2, count), nu)
        updates = tree.map(lambda m, v: m / (fnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        return updates, ScaleByAdamState(count=count, mu=_tree_cast(mu, mu_dtype), nu=nu)

    return GradientTransformation(init_fn, update_fn)


class ScaleByRmsState(NamedTuple):
    count: Any
    nu: Any


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                 eps_in_sqrt: bool = True,
                 bias_correction: bool = False) -> GradientTransformation:
    """RMSprop's scaling (Tieleman & Hinton, 2012) as Optax defines it:
    ``nu = decay nu + (1 - decay) g^2``, ``g <- g / sqrt(nu + eps)`` (or
    ``g / (sqrt(nu) + eps)`` with ``eps_in_sqrt=False``); ``nu`` starts at
    ``initial_scale``.

    >>> opt = optim.scale_by_rms(decay=0.9)
    """

    def init_fn(params):
        nu = tree.map(lambda p: _full_like(p, initial_scale), params)
        return ScaleByRmsState(count=_zero_count(), nu=nu)

    def update_fn(updates, state, params=None, **extra_args):
        nu = _moment(updates, state.nu, decay, 2)
        count = _safe_increment(state.count)
        nu_hat = tree.map(lambda v: _bias_correction(v, decay, count), nu) \
            if bias_correction else nu
        if eps_in_sqrt:
            updates = tree.map(lambda g, v: g / fnp.sqrt(v + eps), updates, nu_hat)
        else:
            updates = tree.map(lambda g, v: g / (fnp.sqrt(v) + eps), updates, nu_hat)
        return updates, ScaleByRmsState(count=count, nu=nu)

    return GradientTransformation(init_fn, update_fn)


class ScaleByStddevState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_stddev(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                    eps_in_sqrt: bool = True,
                    bias_correction: bool = False) -> GradientTransformation:
    """Centered RMSprop's scaling: divide by the running standard deviation
    ``sqrt(nu - mu^2 + eps)`` with ``mu``, ``nu`` the running first and second moments.

    >>> opt = optim.scale_by_stddev(decay=0.9)
    """

    def init_fn(params):
        nu = tree.map(lambda p: _full_like(p, initial_scale), params)
        return ScaleByStddevState(count=_zero_count(), mu=_tree_zeros_like(params), nu=nu)

    def update_fn(updates, state, params=None, **extra_args):
        mu = _moment(updates, state.mu, decay, 1)
        nu = _moment(updates, state.nu, decay, 2)
        count = _safe_increment(state.count)
        if bias_correction:
            mu_hat = tree.map(lambda m: _bias_correction(m, decay, count), mu)
            nu_hat = tree.map(lambda v: _bias_correction(v, decay, count), nu)
        else:
            mu_hat, nu_hat = mu, nu
        if eps_in_sqrt:
            updates = tree.map(lambda g, m, v: g / fnp.sqrt(v - fnp.square(m) + eps),
                               updates, mu_hat, nu_hat)
        else:
            updates = tree.map(lambda g, m, v: g / (fnp.sqrt(v - fnp.square(m)) + eps),
                               updates, mu_hat, nu_hat)
        return updates, ScaleByStddevState(count=count, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


def scale_by_rss(initial_accumulator_value: float = 0.1,
                 eps: float = 1e-7) -> GradientTransformation:
    """Adagrad's scaling (Duchi et al., 2011): ``s = s + g^2``, ``g <- g / sqrt(s + eps)``
    (0 where ``s`` is 0); ``s`` starts at ``initial_accumulator_value``.

    >>> opt = optim.scale_by_rss(initial_accumulator_value=0.1)
    """

    def init_fn(params):
        return ScaleByRssState(sum_of_squares=tree.map(
            lambda p: _full_like(p, initial_accumulator_value), params))

    def update_fn(updates, state, params=None, **extra_args):
        sum_of_squares = tree.map(lambda g, s: fnp.square(g) + s, updates,
                                  state.sum_of_squares)

        def scaled(g, s):
            inverse = fnp.where(s > 0, 1 / fnp.sqrt(s + eps), 0.0)
            return inverse * g

        updates = tree.map(scaled, updates, sum_of_squares)
        return updates, ScaleByRssState(sum_of_squares=sum_of_squares)

    return GradientTransformation(init_fn, update_fn)


class ScaleByLionState(NamedTuple):
    count: Any
    mu: Any


def scale_by_lion(b1: float = 0.9, b2: float = 0.99, mu_dtype=None) -> GradientTransformation:
    """Lion's scaling (Chen et al., 2023): ``g <- sign((1 - b1) g + b1 mu)``, then
    ``mu = b2 mu + (1 - b2) g`` with the raw gradient.

    >>> opt = optim.scale_by_lion(b1=0.9, b2=0.99)
    """

    def init_fn(params):
        return ScaleByLionState(count=_zero_count(), mu=_tree_zeros_like(params, mu_dtype))

    def update_fn(updates, state, params=None, **extra_args):
        signs = tree.map(lambda g, m: fnp.sign((1 - b1) * g + b1 * m).astype(_leaf_dtype(g)),
                         updates, state.mu)
        mu = _moment(updates, state.mu, b2, 1)
        return signs, ScaleByLionState(count=_safe_increment(state.count),
                                       mu=_tree_cast(mu, mu_dtype))

    return GradientTransformation(init_fn, update_fn)


class TraceState(NamedTuple):
    trace: Any


def trace(decay: float, nesterov: bool = False,
          accumulator_dtype=None) -> GradientTransformation:
    """Momentum: ``t = g + decay t``; the update is ``t`` (``g + decay t`` with the new
    ``t`` when ``nesterov=True``), as Optax defines it.

    >>> opt = optim.trace(decay=0.9, nesterov=True)
    """

    def init_fn(params):
        return TraceState(trace=_tree_zeros_like(params, accumulator_dtype))

    def update_fn(updates, state, params=None, **extra_args):
        step = lambda g, t: g + decay * t
        new_trace = tree.map(step, updates, state.trace)
        updates = tree.map(step, updates, new_trace) if nesterov else new_trace
        return updates, TraceState(trace=_tree_cast(new_trace, accumulator_dtype))

    return GradientTransformation(init_fn, update_fn)


# --- clipping and weight decay -----------------------------------------------------------------


def global_norm(updates) -> Tensor:
    """The l2 norm of all leaves of ``updates`` together.

    >>> optim.global_norm({"a": fg.tensor([3.0]), "b": fg.tensor([4.0])})
    tensor(5., dtype=float32)
    """
    return fnp.sqrt(_tree_sum_of_squares(updates))


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Scale the updates by ``max_norm / global_norm`` when their global norm exceeds
    ``max_norm`` (Pascanu et al., 2012); leave them alone otherwise.

    >>> opt = optim.clip_by_global_norm(1.0)
    >>> opt.update({"w": fg.tensor([3.0, 4.0])}, opt.init(None))[0]["w"]
    tensor([0.6, 0.8], dtype=float32)
    """

    if isinstance(max_norm, (int, float)) and max_norm < 0:  # would flip the gradients
        raise ValueError(f"clip_by_global_norm: max_norm must be >= 0, got {max_norm}")

    def init_fn(params):
        return EmptyState()

    def update_fn(updates, state, params=None, **extra_args):
        norm = global_norm(updates)
        keep = norm < max_norm

        def clipped(g):
            n = _cast_like(norm, g)
            return fnp.where(keep, g, g / n * max_norm)

        return tree.map(clipped, updates), state

    return GradientTransformation(init_fn, update_fn)


def clip(max_delta: float) -> GradientTransformation:
    """Clip every update element to ``[-max_delta, max_delta]``.

    >>> optim.clip(1.0).update({"w": fg.tensor([3.0, -0.5])}, optim.EmptyState())[0]["w"]
    tensor([ 1. , -0.5], dtype=float32)
    """

    def init_fn(params):
        return EmptyState()

    def update_fn(updates, state, params=None, **extra_args):
        return tree.map(lambda g: fnp.clip(g, -max_delta, max_delta), updates), state

    return GradientTransformation(init_fn, update_fn)


class WeightDecayScheduleState(NamedTuple):
    count: Any


def add_decayed_weights(weight_decay=0.0, mask=None) -> GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled weight decay,
    Loshchilov & Hutter, 2019, when chained before the learning rate).

    Arguments:
        weight_decay: the decay coefficient, or a schedule of it (a function of the step
            count, which then lives in the state).
        mask: optional pytree of Python bools with the parameters' structure or a prefix
            of it (a bool per subtree), or a function of the parameters returning one:
            decay only where True.

    >>> opt = optim.add_decayed_weights(0.1, mask=lambda p: {"w": True, "b": False})
    >>> opt = optim.add_decayed_weights(optim.linear_schedule(0.1, 0.0, 100))
    """
    scheduled = callable(weight_decay)

    def init_fn(params):
        return WeightDecayScheduleState(count=_zero_count()) if scheduled else EmptyState()

    def update_fn(updates, state, params=None, **extra_args):
        _require_params("add_decayed_weights", params)
        rate = weight_decay(state.count) if scheduled else weight_decay
        new_state = WeightDecayScheduleState(count=_safe_increment(state.count)) \
            if scheduled else state

        def decay(g, p):
            return g + (_cast_like(rate, g) if scheduled else rate) * p

        if mask is None:
            return tree.map(decay, updates, params), new_state
        leaf_mask = tree.broadcast(mask(params) if callable(mask) else mask, params)
        return tree.map(lambda g, p, m: decay(g, p) if m else g, updates, params,
                        leaf_mask), new_state

    return GradientTransformation(init_fn, update_fn)
