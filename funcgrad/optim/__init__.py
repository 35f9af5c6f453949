"""funcgrad.optim: optimizers as pure gradient transformations, with Optax's API.

An optimizer is a pair of pure functions, so its state is an explicit pytree of Tensors
and a whole training step can be jitted:

>>> from funcgrad import optim
>>> opt = optim.adam(learning_rate=1e-3)
>>> params = {"w": fg.ones(3)}
>>> state = opt.init(params)
>>> grads = {"w": fg.ones(3)}
>>> updates, state = opt.update(grads, state, params)
>>> params = optim.apply_updates(params, updates)

Learning rates may be schedules (``optim.cosine_decay_schedule(...)``); the step count
lives in the optimizer state.
"""

from funcgrad.optim.aliases import adagrad, adam, adamw, lbfgs, lion, rmsprop, sgd
from funcgrad.optim.base import (
    EmptyState,
    GradientTransformation,
    Schedule,
    apply_updates,
    chain,
    identity,
    set_to_zero,
)
from funcgrad.optim.lbfgs import (
    ScaleByLbfgsState,
    ScaleByZoomLinesearchState,
    scale_by_lbfgs,
    scale_by_zoom_linesearch,
)
from funcgrad.optim.schedules import (
    constant_schedule,
    cosine_decay_schedule,
    exponential_decay,
    join_schedules,
    linear_schedule,
    polynomial_schedule,
    warmup_cosine_decay_schedule,
)
from funcgrad.optim.transforms import (
    ScaleByAdamState,
    ScaleByLionState,
    ScaleByRmsState,
    ScaleByRssState,
    ScaleByScheduleState,
    ScaleByStddevState,
    TraceState,
    add_decayed_weights,
    clip,
    clip_by_global_norm,
    global_norm,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_lion,
    scale_by_rms,
    scale_by_rss,
    scale_by_schedule,
    scale_by_stddev,
    trace,
)

__all__ = [
    "EmptyState", "GradientTransformation", "Schedule", "ScaleByAdamState",
    "ScaleByLbfgsState", "ScaleByLionState", "ScaleByRmsState", "ScaleByRssState",
    "ScaleByScheduleState", "ScaleByStddevState", "ScaleByZoomLinesearchState",
    "TraceState", "adagrad", "adam", "adamw", "add_decayed_weights", "apply_updates",
    "chain", "clip", "clip_by_global_norm", "constant_schedule", "cosine_decay_schedule",
    "exponential_decay", "global_norm", "identity", "join_schedules", "lbfgs", "lion",
    "linear_schedule", "polynomial_schedule", "rmsprop", "scale", "scale_by_adam",
    "scale_by_lbfgs", "scale_by_learning_rate", "scale_by_lion", "scale_by_rms",
    "scale_by_rss", "scale_by_schedule", "scale_by_stddev", "scale_by_zoom_linesearch",
    "set_to_zero", "sgd", "trace", "warmup_cosine_decay_schedule",
]
