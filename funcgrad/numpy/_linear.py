"""Products: matmul, dot, vdot, inner, outer, tensordot (einsum lives in _einsum)."""

from __future__ import annotations

from funcgrad.core import dtypes
from funcgrad.core.prims import structural as st
from funcgrad.core.prims.dot import dot_general
from funcgrad.numpy._util import broadcast_shapes, broadcast_to, normalize_axis, promote


def _operands(name, a, b, preferred_element_type):
    """``a`` and ``b`` promoted together; with JAX's ``preferred_element_type`` both in
    that dtype, so the products accumulate in it (int8 summed in int32). JAX's
    ``precision`` is accepted and changes nothing: products run at their dtype's full
    precision on every backend here."""
    a, b = promote(name, a, b)
    if preferred_element_type is not None:
        target = dtypes.canonicalize(preferred_element_type)
        a, b = a.astype(target), b.astype(target)
    return a, b


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules (1-d promoted, leading axes broadcast);
    ``preferred_element_type`` and ``precision`` as JAX's (see ``_operands``).

    >>> fnp.matmul(fnp.ones((2, 3)), fnp.ones((3, 4))).shape
    (2, 4)
    """
    a, b = _operands("matmul", a, b, preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must have at least one axis, got shapes {a.shape} "
                         f"and {b.shape}")
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = st.reshape(a, (1, a.shape[0]))
    if squeeze_b:
        b = st.reshape(b, (b.shape[0], 1))
    if a.shape[-1] != b.shape[-2]:
        sa = a.shape[1:] if squeeze_a else a.shape
        sb = b.shape[:1] if squeeze_b else b.shape
        raise ValueError(f"matmul: shapes {sa} and {sb} do not align "
                         f"({a.shape[-1]} != {b.shape[-2]})")
    try:
        batch = broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
    except ValueError:  # name the operands' shapes, not just their leading axes
        raise ValueError(f"matmul: the leading (batch) axes of shapes {a.shape} and "
                         f"{b.shape} do not broadcast together") from None
    if a.ndim == 2 and b.ndim == 2:
        out = dot_general(a, b, (((1,), (0,)), ((), ())))
    elif b.ndim == 2:
        # (..., m, k) @ (k, n): contract without broadcasting b
        out = dot_general(a, b, (((a.ndim - 1,), (0,)), ((), ())))
    else:
        a = broadcast_to(a, batch + a.shape[-2:])
        b = broadcast_to(b, batch + b.shape[-2:])
        nb = len(batch)
        out = dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))))
    if squeeze_a:
        out = st.reshape(out, out.shape[:-2] + out.shape[-1:])
    if squeeze_b:
        out = st.reshape(out, out.shape[:-1])
    return out


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's dot: scalars multiply, 1-d/2-d as matmul, N-d contracts a's last axis with
    b's second-to-last."""
    a, b = _operands("dot", a, b, preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    contract_b = max(b.ndim - 2, 0)
    if a.shape[-1] != b.shape[contract_b]:
        raise ValueError(f"dot: shapes {a.shape} and {b.shape} do not align "
                         f"({a.shape[-1]} != {b.shape[contract_b]})")
    if b.ndim <= 2:
        return matmul(a, b)
    return dot_general(a, b, (((a.ndim - 1,), (contract_b,)), ((), ())))


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened inputs (conjugating the first)."""
    a, b = _operands("vdot", a, b, preferred_element_type)
    if a.size != b.size:
        raise ValueError(f"vdot: sizes {a.size} and {b.size} differ")
    if dtypes.is_complex(a.dtype):
        from funcgrad.numpy._elementwise import conjugate

        a = conjugate(a)
    return dot_general(st.reshape(a, (a.size,)), st.reshape(b, (b.size,)), (((0,), (0,)), ((), ())))


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum product over the last axes."""
    a, b = _operands("inner", a, b, preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"inner: shapes {a.shape} and {b.shape} do not align "
                         f"({a.shape[-1]} != {b.shape[-1]})")
    return dot_general(a, b, (((a.ndim - 1,), (b.ndim - 1,)), ((), ())))


def outer(a, b):
    """Outer product of the flattened inputs.

    >>> fnp.outer(fg.tensor([1.0, 2.0]), fg.tensor([1.0, 10.0]))
    tensor([[ 1., 10.],
            [ 2., 20.]], dtype=float32)
    """
    a, b = promote("outer", a, b)
    a, b = st.reshape(a, (a.size,)), st.reshape(b, (b.size,))
    return dot_general(a, b, (((), ()), ((), ())))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Sum products over ``axes`` (an int N: a's last N with b's first N; or two lists).

    >>> fnp.tensordot(fnp.ones((2, 3)), fnp.ones((3, 4)), axes=1).shape
    (2, 4)
    """
    a, b = _operands("tensordot", a, b, preferred_element_type)
    if isinstance(axes, int):
        if axes < 0 or axes > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} out of range for shapes {a.shape} and "
                             f"{b.shape}")
        axes_a = tuple(range(a.ndim - axes, a.ndim))
        axes_b = tuple(range(axes))
    else:
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair (axes_a, axes_b), "
                             f"got {axes!r}")
        axes_a, axes_b = axes
        axes_a = (axes_a,) if isinstance(axes_a, int) else tuple(axes_a)
        axes_b = (axes_b,) if isinstance(axes_b, int) else tuple(axes_b)
        if len(axes_a) != len(axes_b):
            raise ValueError(f"tensordot: axes {axes_a} and {axes_b} pair up unequal numbers "
                             "of axes")
        axes_a = tuple(normalize_axis("tensordot", x, a.ndim) for x in axes_a)
        axes_b = tuple(normalize_axis("tensordot", x, b.ndim) for x in axes_b)
    for x, y in zip(axes_a, axes_b, strict=False):
        if a.shape[x] != b.shape[y]:
            raise ValueError(f"tensordot: shapes {a.shape} and {b.shape} do not align on axes "
                             f"{axes_a} / {axes_b} ({a.shape[x]} != {b.shape[y]})")
    return dot_general(a, b, ((axes_a, axes_b), ((), ())))


# the public names are this module's own functions (not the helpers it imports)
def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None):
    """Cross product of 3-vectors (or the z component for 2-vectors) along the vector
    axes, broadcast over the others, as ``numpy.cross``."""
    from funcgrad.numpy._shape import moveaxis, stack

    a, b = promote("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError(f"cross: vectors must have 2 or 3 components, got {a.shape[-1]} and "
                         f"{b.shape[-1]}")
    a0, a1, a2 = (a[..., i] if i < a.shape[-1] else None for i in range(3))
    b0, b1, b2 = (b[..., i] if i < b.shape[-1] else None for i in range(3))
    z = a0 * b1 - a1 * b0
    if a2 is None and b2 is None:
        return z
    zero = z * 0
    a2 = zero if a2 is None else a2
    b2 = zero if b2 is None else b2
    out = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z], axis=-1)
    return moveaxis(out, -1, axisc)


def kron(a, b):
    """Kronecker product: blocks ``a[i, j] * b``, as ``numpy.kron``."""
    from funcgrad.numpy._shape import reshape

    a, b = promote("kron", a, b)
    ndim = max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (ndim - a.ndim) + a.shape)
    b = reshape(b, (1,) * (ndim - b.ndim) + b.shape)
    # a's axes interleaved with b's: (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...)
    spread_a = reshape(a, tuple(d for n in a.shape for d in (n, 1)))
    spread_b = reshape(b, tuple(d for n in b.shape for d in (1, n)))
    return reshape(spread_a * spread_b, tuple(m * n for m, n in zip(a.shape, b.shape,
                                                                   strict=True)))


__all__ = [_name for _name, _value in list(globals().items()) if not _name.startswith("_")
           and getattr(_value, "__module__", None) == __name__]
