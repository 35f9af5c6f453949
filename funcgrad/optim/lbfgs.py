"""L-BFGS: the limited-memory quasi-Newton direction and a zoom line search for it.

``scale_by_lbfgs`` turns a gradient into ``H g`` with ``H`` the L-BFGS approximation of
the inverse Hessian (the two-loop recursion over the last ``memory_size`` steps,
Nocedal & Wright, "Numerical Optimization", Algorithm 7.4).  ``scale_by_zoom_linesearch``
then picks a step size along the resulting direction satisfying the strong Wolfe
conditions (Algorithms 3.5 and 3.6 there, with cubic interpolation), when ``update`` is
given ``value``, ``grad`` and ``value_fn``.  Both run under ``jit``: the memory is a
shift register with static indices, and the line search a loop of ``fg.cond`` steps.

>>> from funcgrad import optim
>>> f = lambda x: fnp.sum((x - 3.0) ** 2)
>>> opt = optim.lbfgs()
>>> x = fg.zeros(2)
>>> state = opt.init(x)
>>> for _ in range(3):
...     value, g = fg.value_and_grad(f)(x)
...     updates, state = opt.update(g, state, x, value=value, grad=g, value_fn=f)
...     x = optim.apply_updates(x, updates)
>>> x
tensor([3., 3.], dtype=float32)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import tree
from funcgrad.core.tensor import Tensor, tensor
from funcgrad.optim.base import (
    GradientTransformation,
    _full_like,
    _require_params,
    _safe_increment,
    _scalar_dtype,
    _tree_sum_of_squares,
    _tree_vdot,
    _tree_zeros_like,
    _zero_count,
)

__all__ = [
    "ScaleByLbfgsState", "ScaleByZoomLinesearchState", "scale_by_lbfgs",
    "scale_by_zoom_linesearch",
]


class ScaleByLbfgsState(NamedTuple):
    count: Any
    params: Any  # the parameters at the previous step
    updates: Any  # the gradient at the previous step
    diff_params_memory: Any  # per leaf (memory_size, *shape): s_k = x_{k+1} - x_k, newest first
    diff_updates_memory: Any  # y_k = g_{k+1} - g_k, newest first
    weights_memory: Any  # (memory_size,): rho_k = 1 / <s_k, y_k>, 0 for unused entries


def _push(memory, new, keep):
    """``memory`` with ``new`` in front and the oldest entry dropped, where ``keep``."""
    new = fnp.asarray(new).astype(memory.dtype)
    shifted = fnp.concatenate([fnp.expand_dims(new, 0), memory[:-1]], axis=0)
    return fnp.where(keep, shifted, memory)


def scale_by_lbfgs(memory_size: int = 10, scale_init_precond: bool = True
                   ) -> GradientTransformation:
    """Precondition the gradient by the L-BFGS inverse-Hessian approximation.

    Pairs with ``<s, y> <= 0`` (no positive curvature, as happens without a line search
    on non-convex functions) are not stored, which keeps the approximation positive
    definite.

    Arguments:
        memory_size: the number of past (step, gradient change) pairs kept.
        scale_init_precond: scale the initial inverse Hessian by ``<s, y> / <y, y>`` of
            the newest pair (by ``min(1, 1 / |g|)`` at the first step), else use identity.

    >>> opt = optim.chain(optim.scale_by_lbfgs(), optim.scale(-1.0))
    """
    if memory_size < 1:
        raise ValueError(f"scale_by_lbfgs: memory_size must be at least 1, got {memory_size}")

    def init_fn(params):
        dtype = _scalar_dtype(params)

        def memory(p):
            return _full_like(p, 0, shape=(memory_size, *fnp.asarray(p).shape))

        return ScaleByLbfgsState(
            count=_zero_count(), params=_tree_zeros_like(params),
            updates=_tree_zeros_like(params),
            diff_params_memory=tree.map(memory, params),
            diff_updates_memory=tree.map(memory, params),
            weights_memory=tensor(np.zeros((memory_size,), dtype=dtype)))

    def update_fn(updates, state, params=None, **extra_args):
        _require_params("scale_by_lbfgs", params)
        dtype = state.weights_memory.dtype
        has_previous = state.count > 0
        diff_params = tree.map(fnp.subtract, params, state.params)
        diff_updates = tree.map(fnp.subtract, updates, state.updates)
        curvature = _tree_vdot(diff_params, diff_updates).astype(dtype)
        usable = has_previous & (curvature > 0)
        weight = fnp.where(usable, 1 / fnp.where(usable, curvature, 1), 0).astype(dtype)
        s_memory = tree.map(lambda m, s: _push(m, s, usable), state.diff_params_memory,
                            diff_params)
        y_memory = tree.map(lambda m, y: _push(m, y, usable), state.diff_updates_memory,
                            diff_updates)
        weights = _push(state.weights_memory, weight, usable)

        if scale_init_precond:
            # gamma = <s, y> / <y, y> of the newest stored pair (Nocedal & Wright eq. 7.20)
            newest_s = tree.map(lambda m: m[0], s_memory)
            newest_y = tree.map(lambda m: m[0], y_memory)
            sy = _tree_vdot(newest_s, newest_y).astype(dtype)
            yy = _tree_sum_of_squares(newest_y).astype(dtype)
            ok = (sy > 0) & (yy > 0)
            gamma = fnp.where(ok, sy / fnp.where(ok, yy, 1), 1.0)
            grad_norm = fnp.sqrt(_tree_sum_of_squares(updates)).astype(dtype)
            first = fnp.minimum(1.0, 1 / fnp.maximum(grad_norm, fnp.finfo(dtype).tiny))
            gamma = fnp.where(state.count > 0, gamma, first).astype(dtype)
        else:
            gamma = fnp.ones((), dtype=dtype)

        direction = _two_loop(updates, s_memory, y_memory, weights, gamma, memory_size)
        new_state = ScaleByLbfgsState(
            count=_safe_increment(state.count), params=params, updates=updates,
            diff_params_memory=s_memory, diff_updates_memory=y_memory,
            weights_memory=weights)
        return direction, new_state

    return GradientTransformation(init_fn, update_fn)


def _two_loop(grads, s_memory, y_memory, weights, gamma, memory_size):
    """``H g`` by the two-loop recursion; unused entries have weight 0 and change nothing."""
    q = grads
    alphas = []
    for i in range(memory_size):  # newest to oldest
        s_i = tree.map(lambda m, i=i: m[i], s_memory)
        y_i = tree.map(lambda m, i=i: m[i], y_memory)
        alpha = weights[i] * _tree_vdot(s_i, q)
        q = tree.map(lambda v, y, a=alpha: v - _like(a, v) * y, q, y_i)
        alphas.append(alpha)
    r = tree.map(lambda v: _like(gamma, v) * v, q)
    for i in reversed(range(memory_size)):  # oldest to newest
        s_i = tree.map(lambda m, i=i: m[i], s_memory)
        y_i = tree.map(lambda m, i=i: m[i], y_memory)
        beta = weights[i] * _tree_vdot(y_i, r)
        r = tree.map(lambda v, s, c=alphas[i] - beta: v + _like(c, v) * s, r, s_i)
    return r


def _like(scalar, leaf):
    dtype = leaf.dtype if isinstance(leaf, Tensor) else fnp.asarray(leaf).dtype
    return scalar.astype(dtype)


# --- line search ------------------------------------------------------------------------------


class ScaleByZoomLinesearchState(NamedTuple):
    learning_rate: Any  # the step size the last search accepted
    value: Any  # the function value at the accepted point
    num_linesearch_steps: Any  # function evaluations the last search used


class _Search(NamedTuple):
    """The loop state of the zoom line search (all scalars)."""

    iteration: Any
    done: Any
    zooming: Any
    trial: Any  # the step size evaluated next
    previous: Any  # bracketing: the last trial step, its value and slope
    previous_value: Any
    low: Any  # zoom interval: the end with the lowest value meeting the decrease condition
    low_value: Any
    low_slope: Any
    high: Any
    high_value: Any
    high_slope: Any
    best: Any  # the accepted step (the lowest value meeting the decrease condition so far)
    best_value: Any


def scale_by_zoom_linesearch(max_linesearch_steps: int = 20, slope_rtol: float = 1e-4,
                             curv_rtol: float = 0.9, initial_guess: float = 1.0,
                             increase_factor: float = 2.0,
                             approx_dec_rtol: float | None = 1e-6) -> GradientTransformation:
    """Scale the update direction ``d`` by a step size meeting the strong Wolfe conditions

    ``f(x + t d) <= f(x) + slope_rtol * t <g, d>`` and
    ``|<g(x + t d), d>| <= curv_rtol * |<g, d>|``,

    where, as Optax, the first may be met instead by Hager and Zhang's approximate decrease
    ``<g(x + t d), d> <= (2 slope_rtol - 1) <g, d>`` with ``f(x + t d) <= f(x) +
    approx_dec_rtol * |f(x)|`` (``None``: Armijo's alone): near a minimum, where ``f``
    changes only in its last bits, no step meets Armijo's test and the search would
    return 0 every time from then on.

    found by bracketing (growing ``t`` by ``increase_factor``) and zooming with cubic
    interpolation.  It needs ``update(d, state, params, value=f(x), grad=g, value_fn=f)``;
    without ``value_fn`` the direction passes through unchanged (a plain step).  When no
    step satisfies both conditions within ``max_linesearch_steps`` evaluations, the one
    with the lowest value that satisfies the decrease condition is taken (0 if none).
    A direction that is not a descent direction is replaced by ``-grad``.

    >>> opt = optim.chain(optim.scale_by_lbfgs(), optim.scale(-1.0),
    ...                   optim.scale_by_zoom_linesearch(max_linesearch_steps=20))
    """
    import funcgrad as fg

    def init_fn(params):
        dtype = _scalar_dtype(params)
        return ScaleByZoomLinesearchState(
            learning_rate=tensor(np.ones((), dtype=dtype)),
            value=tensor(np.full((), np.inf, dtype=dtype)),
            num_linesearch_steps=_zero_count())

    def update_fn(updates, state, params=None, *, value=None, grad=None, value_fn=None,
                  **extra_args):
        if value_fn is None:
            return updates, state
        _require_params("scale_by_zoom_linesearch", params)
        if value is None or grad is None:
            value, grad = fg.value_and_grad(value_fn)(params)
        dtype = state.learning_rate.dtype
        value = fnp.asarray(value).astype(dtype)
        slope = _tree_vdot(grad, updates).astype(dtype)
        descent = slope < 0
        direction = tree.map(lambda d, g: fnp.where(descent, d, -g), updates, grad)
        slope = fnp.where(descent, slope, -_tree_sum_of_squares(grad).astype(dtype))
        decrease_tol = slope_rtol * slope
        curvature_tol = curv_rtol * fnp.abs(slope)

        def scalar(x):
            return fnp.asarray(x, dtype=dtype)

        def evaluate(step):
            point = tree.map(lambda p, d: p + _like(step, d) * d, params, direction)
            f, g = fg.value_and_grad(value_fn)(point)
            f = fnp.asarray(f).astype(dtype)
            return fnp.where(fnp.isfinite(f), f, fnp.inf), _tree_vdot(g, direction).astype(dtype)

        def interpolate(a, fa, sa, b, fb, sb):
            """The cubic minimizer between a and b, or the midpoint when it is unsafe."""
            width = b - a
            d1 = sa + sb - 3 * (fa - fb) / fnp.where(width == 0, 1, -width)
            discriminant = d1 * d1 - sa * sb
            d2 = fnp.sign(width) * fnp.sqrt(fnp.maximum(discriminant, 0))
            denominator = sb - sa + 2 * d2
            cubic = b - width * (sb + d2 - d1) / fnp.where(denominator == 0, 1, denominator)
            margin = 0.1 * fnp.abs(width)
            safe = ((discriminant >= 0) & (denominator != 0) & fnp.isfinite(cubic)
                    & (cubic >= fnp.minimum(a, b) + margin)
                    & (cubic <= fnp.maximum(a, b) - margin))
            return fnp.where(safe, cubic, (a + b) / 2)

        def body_fun(s):
            t = s.trial
            f, g = evaluate(t)
            decrease_fails = f > value + t * decrease_tol
            if approx_dec_rtol is not None:
                approx_fails = ((g > (2 * slope_rtol - 1) * slope)
                                | (f > value + approx_dec_rtol * fnp.abs(value)))
                decrease_fails = decrease_fails & approx_fails
            curvature_ok = fnp.abs(g) <= curvature_tol
            good = ~decrease_fails & (f < s.best_value)
            # bracketing (Algorithm 3.5): grow t until [previous, t] holds a good step
            high_end = decrease_fails | ((s.iteration > 0) & (f >= s.previous_value))
            b_done = ~high_end & curvature_ok
            b_flip = ~high_end & ~curvature_ok & (g >= 0)
            b_zoom = high_end | b_flip
            # zoom (Algorithm 3.6): shrink [low, high] around a good step
            z_high = decrease_fails | (f >= s.low_value)
            z_done = ~z_high & curvature_ok
            z_flip = ~z_high & ~curvature_ok & (g * (s.high - s.low) >= 0)

            zoom = s.zooming
            done = fnp.where(zoom, z_done, b_done)
            # the new interval ends, (low, high), each with value and slope
            prev_slope = fnp.where(s.iteration > 0, s.low_slope, slope)
            low = fnp.where(zoom, fnp.where(z_high, s.low, t),
                            fnp.where(high_end, s.previous, t))
            low_value = fnp.where(zoom, fnp.where(z_high, s.low_value, f),
                                  fnp.where(high_end, s.previous_value, f))
            low_slope = fnp.where(zoom, fnp.where(z_high, s.low_slope, g),
                                  fnp.where(high_end, prev_slope, g))
            high = fnp.where(zoom, fnp.where(z_high, t, fnp.where(z_flip, s.low, s.high)),
                             fnp.where(high_end, t, s.previous))
            high_value = fnp.where(
                zoom, fnp.where(z_high, f, fnp.where(z_flip, s.low_value, s.high_value)),
                fnp.where(high_end, f, s.previous_value))
            high_slope = fnp.where(
                zoom, fnp.where(z_high, g, fnp.where(z_flip, s.low_slope, s.high_slope)),
                fnp.where(high_end, g, prev_slope))
            zooming = zoom | b_zoom
            next_trial = fnp.where(
                zooming, interpolate(low, low_value, low_slope, high, high_value, high_slope),
                t * increase_factor)
            # while bracketing, low_slope carries the slope at `previous`
            low_slope = fnp.where(zooming, low_slope, g)
            best = fnp.where(good | done, t, s.best)
            best_value = fnp.where(good | done, f, s.best_value)
            return _Search(
                iteration=s.iteration + 1, done=done, zooming=zooming,
                trial=scalar(next_trial), previous=scalar(t), previous_value=scalar(f),
                low=scalar(low), low_value=scalar(low_value), low_slope=scalar(low_slope),
                high=scalar(high), high_value=scalar(high_value),
                high_slope=scalar(high_slope), best=scalar(best),
                best_value=scalar(best_value))

        zero = scalar(0)
        start = _Search(
            iteration=_zero_count(), done=fnp.asarray(False), zooming=fnp.asarray(False),
            trial=scalar(initial_guess), previous=zero, previous_value=value,
            low=zero, low_value=value, low_slope=slope, high=zero, high_value=value,
            high_slope=slope, best=zero, best_value=value)
        # stops at the first accepted step; jit compiles it as one loop (a 20-step
        # fori_loop skipping finished steps by fg.cond took 5x as long to compile)
        result = fg.while_loop(lambda s: ~s.done & (s.iteration < max_linesearch_steps),
                               body_fun, start)
        step = result.best
        updates = tree.map(lambda d: _like(step, d) * d, direction)
        return updates, ScaleByZoomLinesearchState(
            learning_rate=step, value=result.best_value,
            num_linesearch_steps=result.iteration)

    return GradientTransformation(init_fn, update_fn)
