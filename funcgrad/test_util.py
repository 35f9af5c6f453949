"""Numerical checks of derivatives: ``check_grads`` compares JVPs and VJPs with central
finite differences (and with each other), to any order.

>>> from funcgrad.test_util import check_grads
>>> check_grads(fnp.sin, (fg.tensor([0.5, 1.0], dtype=fg.float64),), order=2)
"""

from __future__ import annotations

import numpy as np
import optree

from funcgrad.core import dtypes
from funcgrad.core.tensor import Tensor, wrap

_NS = "funcgrad"
_DEFAULT_EPS = {np.dtype(np.float64): 1e-6, np.dtype(np.float32): 3e-3}
_DEFAULT_TOL = {np.dtype(np.float64): 1e-5, np.dtype(np.float32): 3e-2}


def _leaves(tree):
    return optree.tree_leaves(tree, namespace=_NS)


def _random_like(rng, tree):
    def one(x):
        x = np.asarray(x)
        if not dtypes.is_inexact(x.dtype):
            return wrap(np.zeros(x.shape, x.dtype))
        value = rng.standard_normal(x.shape)
        if x.dtype.kind == "c":
            value = value + 1j * rng.standard_normal(x.shape)
        return wrap(np.asarray(value, x.dtype))

    return optree.tree_map(one, tree, namespace=_NS)


def _axpy(a, x, y):
    """y + a * x on pytrees, skipping non-float leaves."""

    def one(xi, yi):
        yi_arr = np.asarray(yi)
        if not dtypes.is_inexact(yi_arr.dtype):
            return yi
        return wrap(np.asarray(yi_arr + a * np.asarray(xi), yi_arr.dtype))

    return optree.tree_map(one, x, y, namespace=_NS)


def _inner(x, y) -> float:
    """Re sum(x * y) over float leaves: transposes here are plain (unconjugated), so
    <J^T u, v> = <u, J v> holds for this pairing also with complex values."""
    total = 0.0
    for a, b in zip(_leaves(x), _leaves(y), strict=False):
        a, b = np.asarray(a), np.asarray(b)
        if dtypes.is_inexact(a.dtype):
            total += float(np.real(np.sum(a.astype(np.complex128) * b.astype(np.complex128))))
    return total


def _assert_close(got, want, tol, what):
    for g, w in zip(_leaves(got), _leaves(want), strict=False):
        g, w = np.asarray(g), np.asarray(w)
        if not dtypes.is_inexact(w.dtype):
            continue
        np.testing.assert_allclose(g.astype(np.complex128 if w.dtype.kind == "c" else np.float64),
                                   w, rtol=tol, atol=tol, err_msg=what)


def _precision(args):
    floats = [np.asarray(x).dtype for x in _leaves(args)
              if dtypes.is_inexact(np.asarray(x).dtype)]
    dtype = np.dtype(np.float64) if all(d in (np.float64, np.complex128) for d in floats) \
        else np.dtype(np.float32)
    return _DEFAULT_EPS[dtype], _DEFAULT_TOL[dtype]


def numerical_jvp(f, args, tangents, eps):
    """Central difference (f(x + eps t) - f(x - eps t)) / 2 eps."""
    plus = f(*_axpy(eps, tangents, args))
    minus = f(*_axpy(-eps, tangents, args))
    return optree.tree_map(
        lambda p, m: wrap(np.asarray((np.asarray(p, np.complex128 if np.asarray(p).dtype.kind == "c"
                                                 else np.float64)
                                      - np.asarray(m)) / (2 * eps))),
        plus, minus, namespace=_NS)


def check_jvp(f, args, *, eps=None, tol=None, seed=0):
    """``jvp(f)`` matches central finite differences at ``args`` for a random tangent."""
    from funcgrad.transforms.ad import jvp

    default_eps, default_tol = _precision(args)
    eps, tol = eps or default_eps, tol or default_tol
    tangents = _random_like(np.random.default_rng(seed), args)
    _, got = jvp(f, tuple(args), tuple(tangents))
    want = numerical_jvp(f, args, tangents, eps)
    _assert_close(got, want, tol, "JVP differs from finite differences")


def check_vjp(f, args, *, eps=None, tol=None, seed=0):
    """``vjp(f)`` satisfies <u, J v> == <J^T u, v> against finite differences of J v."""
    from funcgrad.transforms.ad import vjp

    default_eps, default_tol = _precision(args)
    eps, tol = eps or default_eps, tol or default_tol
    rng = np.random.default_rng(seed + 1)
    tangents = _random_like(rng, args)
    out, pullback = vjp(f, *args)
    cotangent = _random_like(rng, out)
    ct_in = pullback(cotangent)
    lhs = _inner(ct_in, tangents)
    rhs = _inner(cotangent, numerical_jvp(f, args, tangents, eps))
    scale = max(1.0, abs(rhs))
    if not abs(lhs - rhs) <= tol * scale * 10:
        raise AssertionError(f"VJP inconsistent with finite differences: <J^T u, v> = {lhs}, "
                             f"<u, J v> = {rhs}")


def check_grads(f, args, order: int = 2, modes=("fwd", "rev"), *, eps=None, tol=None,
                seed: int = 0):
    """Check forward and/or reverse derivatives of ``f`` at ``args`` up to ``order``.

    Higher orders check the derivative functions themselves (a JVP of the JVP, a VJP of
    the VJP), so rules that are themselves differentiable are exercised.
    """
    args = tuple(optree.tree_map(lambda a: a if isinstance(a, Tensor) else wrap(np.asarray(a)),
                                 arg, namespace=_NS) for arg in args)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {mode!r}; use 'fwd' and/or 'rev'")
    if "fwd" in modes:
        check_jvp(f, args, eps=eps, tol=tol, seed=seed)
    if "rev" in modes:
        check_vjp(f, args, eps=eps, tol=tol, seed=seed)
    if order <= 1:
        return
    from funcgrad.transforms.ad import jvp, vjp

    if "fwd" in modes:
        tangents = _random_like(np.random.default_rng(seed + 2), args)
        f_jvp = lambda *xs: jvp(f, xs, tuple(tangents))[1]
        check_grads(f_jvp, args, order - 1, ("fwd",), eps=eps, tol=tol, seed=seed + 3)
    if "rev" in modes:
        out = f(*args)
        cotangent = _random_like(np.random.default_rng(seed + 4), out)
        f_vjp = lambda *xs: vjp(f, *xs)[1](cotangent)
        check_grads(f_vjp, args, order - 1, ("rev",), eps=eps, tol=tol, seed=seed + 5)
