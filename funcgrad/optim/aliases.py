"""The standard optimizers (Optax's names, arguments and defaults), each a ``chain`` of
transformations ending in the learning rate.

``learning_rate`` is a number or a schedule (a function of the step count).

>>> from funcgrad import optim
>>> opt = optim.adamw(learning_rate=1e-3, weight_decay=1e-2)
>>> params = {"w": fg.ones(3)}
>>> state = opt.init(params)
>>> updates, state = opt.update({"w": fg.ones(3)}, state, params)
>>> params = optim.apply_updates(params, updates)
"""

from __future__ import annotations

from funcgrad.optim.base import GradientTransformation, chain, identity
from funcgrad.optim.lbfgs import scale_by_lbfgs, scale_by_zoom_linesearch
from funcgrad.optim.transforms import (
    add_decayed_weights,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_lion,
    scale_by_rms,
    scale_by_rss,
    scale_by_stddev,
    trace,
)

__all__ = ["adagrad", "adam", "adamw", "lbfgs", "lion", "rmsprop", "sgd"]

_DEFAULT_LINESEARCH = object()


def sgd(learning_rate, momentum: float | None = None, nesterov: bool = False,
        accumulator_dtype=None) -> GradientTransformation:
    """Stochastic gradient descent, with optional (Nesterov) momentum.

    Arguments:
        learning_rate: a number or a schedule.
        momentum: the momentum decay (``None``: plain SGD).
        nesterov: Nesterov momentum, as Optax's ``trace`` defines it.
        accumulator_dtype: optional dtype of the momentum buffer.

    >>> opt = optim.sgd(learning_rate=0.1, momentum=0.9, nesterov=True)
    """
    momentum_step = (trace(decay=momentum, nesterov=nesterov,
                           accumulator_dtype=accumulator_dtype)
                     if momentum is not None else identity())
    return chain(momentum_step, scale_by_learning_rate(learning_rate))


def adam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         eps_root: float = 0.0, mu_dtype=None, *,
         nesterov: bool = False) -> GradientTransformation:
    """Adam (Kingma & Ba, 2015), with bias correction.

    Arguments:
        learning_rate: a number or a schedule.
        b1, b2: decay rates of the first and second moment estimates.
        eps: added to the denominator outside the square root; eps_root inside.
        mu_dtype: optional dtype of the first moment.
        nesterov: use NAdam's Nesterov-corrected first moment.

    >>> opt = optim.adam(learning_rate=1e-3)
    """
    return chain(scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                               nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          eps_root: float = 0.0, mu_dtype=None, weight_decay=1e-4, mask=None, *,
          nesterov: bool = False) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019):
    ``update = -learning_rate * (adam_direction + weight_decay * params)``.

    Arguments:
        learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov: as ``adam``.
        weight_decay: the decay coefficient, or a schedule of it.
        mask: optional pytree of bools with the parameters' structure or a prefix of it
            (or a function of the parameters returning one) selecting those that decay.

    >>> opt = optim.adamw(learning_rate=1e-3, weight_decay=1e-2)
    """
    return chain(scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                               nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
            eps_in_sqrt: bool = True, centered: bool = False, momentum: float | None = None,
            nesterov: bool = False, bias_correction: bool = False) -> GradientTransformation:
    """RMSprop (Tieleman & Hinton, 2012) as Optax formulates it:
    ``nu = decay nu + (1 - decay) g^2``, ``update = -learning_rate g / sqrt(nu + eps)``,
    then optional momentum on the scaled update.

    Arguments:
        learning_rate: a number or a schedule.
        decay: the decay of the squared-gradient average.
        eps: added inside the square root (outside with ``eps_in_sqrt=False``).
        initial_scale: the initial value of the average.
        centered: divide by the running standard deviation instead (centered RMSprop).
        momentum, nesterov: optional momentum applied after the learning rate.
        bias_correction: correct the average's bias towards ``initial_scale``.

    >>> opt = optim.rmsprop(learning_rate=1e-2, momentum=0.9)
    """
    scaling = scale_by_stddev if centered else scale_by_rms
    return chain(scaling(decay=decay, eps=eps, initial_scale=initial_scale,
                         eps_in_sqrt=eps_in_sqrt, bias_correction=bias_correction),
                 scale_by_learning_rate(learning_rate),
                 trace(decay=momentum, nesterov=nesterov) if momentum is not None
                 else identity())


def adagrad(learning_rate, initial_accumulator_value: float = 0.1,
            eps: float = 1e-7) -> GradientTransformation:
    """Adagrad (Duchi et al., 2011): ``s = s + g^2``,
    ``update = -learning_rate g / sqrt(s + eps)``.

    Arguments:
        learning_rate: a number or a schedule.
        initial_accumulator_value: the initial value of ``s``.
        eps: added inside the square root.

    >>> opt = optim.adagrad(learning_rate=0.1)
    """
    return chain(scale_by_rss(initial_accumulator_value=initial_accumulator_value, eps=eps),
                 scale_by_learning_rate(learning_rate))


def lion(learning_rate, b1: float = 0.9, b2: float = 0.99, mu_dtype=None,
         weight_decay=1e-3, mask=None) -> GradientTransformation:
    """Lion (Chen et al., 2023, "Symbolic Discovery of Optimization Algorithms"):
    ``update = -learning_rate (sign((1 - b1) g + b1 mu) + weight_decay params)``,
    ``mu = b2 mu + (1 - b2) g``.

    Arguments:
        learning_rate: a number or a schedule (typically 3-10x smaller than Adam's).
        b1: interpolation between the gradient and the momentum for the sign.
        b2: the momentum decay.
        mu_dtype: optional dtype of the momentum.
        weight_decay, mask: decoupled weight decay, as ``adamw``.

    >>> opt = optim.lion(learning_rate=1e-4)
    """
    return chain(scale_by_lion(b1=b1, b2=b2, mu_dtype=mu_dtype),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def lbfgs(learning_rate=None, memory_size: int = 10, scale_init_precond: bool = True,
          linesearch=_DEFAULT_LINESEARCH) -> GradientTransformation:
    """L-BFGS (Nocedal & Wright, Algorithm 7.5): quasi-Newton steps from the last
    ``memory_size`` gradient differences, with a strong-Wolfe zoom line search.

    Call ``update(grad, state, params, value=value, grad=grad, value_fn=f)`` to run the
    line search (``f`` maps the parameters to the scalar objective); without ``value_fn``
    the step is the plain quasi-Newton step ``-learning_rate * H g`` (``-H g`` when
    ``learning_rate`` is None).

    Arguments:
        learning_rate: optional scale of the direction before the line search (a number
            or a schedule); ``None`` for the unscaled quasi-Newton direction.
        memory_size: the number of past steps kept.
        scale_init_precond: scale the initial inverse Hessian (see ``scale_by_lbfgs``).
        linesearch: the line search transformation (default
            ``scale_by_zoom_linesearch(max_linesearch_steps=20)``; ``None`` for none).

    >>> f = lambda x: fnp.sum((x - 1.0) ** 2)
    >>> opt = optim.lbfgs()
    >>> x = fg.zeros(3)
    >>> state = opt.init(x)
    >>> for _ in range(3):
    ...     value, g = fg.value_and_grad(f)(x)
    ...     updates, state = opt.update(g, state, x, value=value, grad=g, value_fn=f)
    ...     x = optim.apply_updates(x, updates)
    """
    if linesearch is _DEFAULT_LINESEARCH:
        linesearch = scale_by_zoom_linesearch(max_linesearch_steps=20)
    base_scaling = scale(-1.0) if learning_rate is None else \
        scale_by_learning_rate(learning_rate)
    return chain(scale_by_lbfgs(memory_size=memory_size,
                                scale_init_precond=scale_init_precond),
                 base_scaling,
                 linesearch if linesearch is not None else identity())
