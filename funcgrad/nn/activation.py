"""Activation functions as modules (for ``Sequential``)."""

from __future__ import annotations

import warnings

import numpy as np

from funcgrad.core.tensor import Tensor
from funcgrad.nn import functional as F
from funcgrad.nn.module import Module

__all__ = ["ELU", "GELU", "LeakyReLU", "LogSoftmax", "ReLU", "SiLU", "Sigmoid", "Softmax",
           "Softplus", "Tanh"]


class ReLU(Module):
    """``max(x, 0)``.

    Arguments:
        inplace: accepted for PyTorch code; tensors are immutable, so it changes nothing.

    Example:
        >>> nn.ReLU()(fg.tensor([-1.0, 2.0]))
        tensor([0., 2.], dtype=float32)
    """

    def __init__(self, inplace: bool = False):
        pass

    def forward(self, x) -> Tensor:
        return F.relu(x)


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere.

    Arguments:
        negative_slope: the slope for negative inputs.
        inplace: accepted for PyTorch code; tensors are immutable, so it changes nothing.

    Example:
        >>> nn.LeakyReLU(0.1)(fg.tensor([-1.0]))
        tensor([-0.1], dtype=float32)
    """

    negative_slope: float

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        self.negative_slope = float(negative_slope)

    def forward(self, x) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.

    Arguments:
        alpha: the scale of the negative part.
        inplace: accepted for PyTorch code; tensors are immutable, so it changes nothing.

    Example:
        >>> nn.ELU()(fg.tensor([0.0]))
        tensor([0.], dtype=float32)
    """

    alpha: float

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        self.alpha = float(alpha)

    def forward(self, x) -> Tensor:
        return F.elu(x, self.alpha)


class GELU(Module):
    """Gaussian error linear unit; ``approximate="none"`` is the exact (erf) form,
    ``"tanh"`` PyTorch's tanh approximation.

    Arguments:
        approximate: ``"none"`` or ``"tanh"``.

    Example:
        >>> nn.GELU()(fg.tensor([0.0]))
        tensor([0.], dtype=float32)
    """

    approximate: str

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x) -> Tensor:
        return F.gelu(x, self.approximate)


class SiLU(Module):
    """``x * sigmoid(x)``.

    Arguments:
        inplace: accepted for PyTorch code; tensors are immutable, so it changes nothing.

    Example:
        >>> nn.SiLU()(fg.tensor([0.0]))
        tensor([0.], dtype=float32)
    """

    def __init__(self, inplace: bool = False):
        pass

    def forward(self, x) -> Tensor:
        return F.silu(x)


class Tanh(Module):
    """Hyperbolic tangent.

    Example:
        >>> nn.Tanh()(fg.tensor([0.0]))
        tensor([0.], dtype=float32)
    """

    def forward(self, x) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """The logistic function.

    Example:
        >>> nn.Sigmoid()(fg.tensor([0.0]))
        tensor([0.5], dtype=float32)
    """

    def forward(self, x) -> Tensor:
        return F.sigmoid(x)


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``.

    Arguments:
        beta: the sharpness.
        threshold: above ``beta * x > threshold`` the identity is used.

    Example:
        >>> nn.Softplus()(fg.tensor([0.0]))
        tensor([0.6931472], dtype=float32)
    """

    beta: float
    threshold: float

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        self.beta, self.threshold = float(beta), float(threshold)

    def forward(self, x) -> Tensor:
        return F.softplus(x, self.beta, self.threshold)


class Softmax(Module):
    """Softmax along ``dim``.

    Arguments:
        dim: the axis that sums to one (default the last); ``None`` picks it as PyTorch's
            legacy rule does (axis 0 for 0-, 1- and 3-d inputs, else 1) with a warning.

    Example:
        >>> nn.Softmax(dim=-1)(fg.tensor([0.0, 0.0]))
        tensor([0.5, 0.5], dtype=float32)
    """

    dim: int | None

    def __init__(self, dim: int | None = -1):
        self.dim = None if dim is None else int(dim)

    def forward(self, x) -> Tensor:
        return F.softmax(x, _softmax_dim("softmax", x, self.dim))


class LogSoftmax(Module):
    """Log-softmax along ``dim``.

    Arguments:
        dim: the normalized axis (default the last); ``None`` picks it as ``Softmax``.

    Example:
        >>> nn.LogSoftmax(dim=-1)(fg.tensor([0.0, 0.0]))
        tensor([-0.6931472, -0.6931472], dtype=float32)
    """

    dim: int | None

    def __init__(self, dim: int | None = -1):
        self.dim = None if dim is None else int(dim)

    def forward(self, x) -> Tensor:
        return F.log_softmax(x, _softmax_dim("log_softmax", x, self.dim))


def _softmax_dim(name: str, x, dim: int | None) -> int | None:
    """``dim``, or for ``None`` PyTorch's legacy implicit choice (``_get_softmax_dim``).

    ``stacklevel=4`` points the warning at the user's ``layer(x)`` line (through
    ``forward`` and ``Module.__call__``).
    """
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                  f"call to include dim=X as an argument.", UserWarning, stacklevel=4)
    ndim = np.ndim(x)
    if ndim == 0:
        return None  # PyTorch's dim 0 of a scalar: the reduction over all (no) axes
    return 0 if ndim in (1, 3) else 1
