"""Learning-rate schedules (Optax's): functions from the step count to a value.

A schedule is accepted wherever a learning rate is; the optimizer keeps the step count
in its state (an int32 scalar starting at 0) and calls the schedule with it.

>>> from funcgrad import optim
>>> schedule = optim.linear_schedule(init_value=1.0, end_value=0.0, transition_steps=10)
>>> schedule(5)
tensor(0.5, dtype=float64)
>>> opt = optim.adam(learning_rate=schedule)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import funcgrad.numpy as fnp
from funcgrad.core import dtypes
from funcgrad.core.prims import elementwise as ew
from funcgrad.optim.base import Schedule

__all__ = [
    "constant_schedule", "cosine_decay_schedule", "exponential_decay", "join_schedules",
    "linear_schedule", "polynomial_schedule", "warmup_cosine_decay_schedule",
]


def _float_count(count):
    return fnp.asarray(count).astype(dtypes.float64)


def _as_float(value):
    """``value`` as a weakly typed float64 scalar: like a Python float, it takes the dtype of
    what it scales (float32 parameters stay float32) and keeps its full precision for float64
    ones (a float32 learning rate of 0.1 is off by 1.5e-9)."""
    return ew.convert_element_type(fnp.asarray(value, dtype=dtypes.float64), dtypes.float64,
                                   weak_type=True)


def constant_schedule(value: float) -> Schedule:
    """The schedule that is ``value`` at every step.

    >>> optim.constant_schedule(0.1)(100)
    tensor(0.1, dtype=float64)
    """

    def schedule(count):
        return _as_float(value)

    return schedule


def polynomial_schedule(init_value: float, end_value: float, power: float,
                        transition_steps: int, transition_begin: int = 0) -> Schedule:
    """From ``init_value`` to ``end_value`` as ``(1 - t / transition_steps) ** power``.

    ``init_value`` is held for the first ``transition_begin`` steps, ``end_value`` after
    ``transition_begin + transition_steps``.

    >>> optim.polynomial_schedule(1.0, 0.0, 2, 10)(5)
    tensor(0.25, dtype=float64)
    """
    if transition_steps <= 0:
        warnings.warn("polynomial_schedule: transition_steps <= 0, so the schedule is the "
                      "constant init_value", stacklevel=2)
        return constant_schedule(init_value)
    if transition_begin < 0:
        raise ValueError(f"polynomial_schedule: transition_begin must be >= 0, got "
                         f"{transition_begin}")

    def schedule(count):
        steps = fnp.clip(_float_count(count) - transition_begin, 0, transition_steps)
        fraction = 1 - steps / transition_steps
        return _as_float((init_value - end_value) * fnp.power(fraction, power) + end_value)

    return schedule


def linear_schedule(init_value: float, end_value: float, transition_steps: int,
                    transition_begin: int = 0) -> Schedule:
    """From ``init_value`` to ``end_value`` linearly over ``transition_steps`` steps,
    starting after ``transition_begin`` steps.

    >>> optim.linear_schedule(0.0, 1.0, transition_steps=4)(1)
    tensor(0.25, dtype=float64)
    """
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0,
                          exponent: float = 1.0) -> Schedule:
    """``init_value * ((1 - alpha) * c ** exponent + alpha)`` with
    ``c = (1 + cos(pi * min(t, decay_steps) / decay_steps)) / 2`` (Loshchilov & Hutter).

    >>> schedule = optim.cosine_decay_schedule(1.0, decay_steps=10)
    >>> float(schedule(5))
    0.5
    """
    if not decay_steps > 0:
        raise ValueError(f"cosine_decay_schedule: decay_steps must be positive, got "
                         f"{decay_steps}")

    def schedule(count):
        steps = fnp.minimum(_float_count(count), decay_steps)
        cosine = 0.5 * (1 + fnp.cos(math.pi * steps / decay_steps))
        return _as_float(init_value * ((1 - alpha) * fnp.power(cosine, exponent) + alpha))

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """``schedules[i]`` from step ``boundaries[i - 1]`` on, restarted at step 0 there.

    >>> s = optim.join_schedules([optim.constant_schedule(1.0),
    ...                           optim.linear_schedule(1.0, 0.0, 10)], [5])
    >>> s(10)
    tensor(0.5, dtype=float64)
    """
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"join_schedules: {len(schedules)} schedules need "
                         f"{len(schedules) - 1} boundaries, got {len(boundaries)}")

    def schedule(count):
        count = fnp.asarray(count)
        value = _as_float(schedules[0](count))
        for boundary, next_schedule in zip(boundaries, schedules[1:], strict=True):
            later = _as_float(next_schedule(count - boundary))
            value = fnp.where(count < boundary, value, later)
        return value

    return schedule


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                 decay_steps: int, end_value: float = 0.0,
                                 exponent: float = 1.0) -> Schedule:
    """Linear warmup from ``init_value`` to ``peak_value`` over ``warmup_steps``, then
    cosine decay to ``end_value`` until step ``decay_steps`` (which counts the warmup).

    >>> s = optim.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=10, decay_steps=110)
    >>> s(5), s(110)
    (tensor(0.5, dtype=float64), tensor(0., dtype=float64))
    """
    if not decay_steps > warmup_steps:
        raise ValueError(f"warmup_cosine_decay_schedule: decay_steps ({decay_steps}) counts "
                         f"the warmup and must exceed warmup_steps ({warmup_steps})")
    cosine_steps = decay_steps - warmup_steps

    def cosine(count):
        steps = fnp.minimum(_float_count(count), cosine_steps)
        c = 0.5 * (1 + fnp.cos(math.pi * steps / cosine_steps))
        return _as_float(end_value + (peak_value - end_value) * fnp.power(c, exponent))

    if warmup_steps <= 0:
        return cosine
    warmup = linear_schedule(init_value, peak_value, warmup_steps)
    return join_schedules([warmup, cosine], [warmup_steps])


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: float | None = None) -> Schedule:
    """``init_value * decay_rate ** ((t - transition_begin) / transition_steps)``.

    With ``staircase=True`` the exponent is floored (decay in discrete jumps);
    ``end_value`` bounds the value (from below when decaying, above when growing).

    >>> optim.exponential_decay(1.0, transition_steps=10, decay_rate=0.5)(20)
    tensor(0.25, dtype=float64)
    """
    if transition_steps <= 0:
        warnings.warn("exponential_decay: transition_steps <= 0, so the schedule is the "
                      "constant init_value", stacklevel=2)
        return constant_schedule(init_value)
    if decay_rate == 0:
        raise ValueError("exponential_decay: decay_rate must not be 0")
    if transition_begin < 0:
        raise ValueError(f"exponential_decay: transition_begin must be >= 0, got "
                         f"{transition_begin}")

    def schedule(count):
        steps = _float_count(count) - transition_begin
        exponent = steps / transition_steps
        if staircase:
            exponent = fnp.floor(exponent)
        value = init_value * fnp.power(decay_rate, exponent)
        value = fnp.where(steps <= 0, init_value, value)
        if end_value is not None:
            bound = fnp.maximum if decay_rate < 1 else fnp.minimum
            value = bound(value, end_value)
        return _as_float(value)

    return schedule
