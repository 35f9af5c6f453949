"""funcgrad.numpy.linalg: NumPy's linear algebra over the decomposition primitives.

Every function is a composition of primitives (``lu``, ``triangular_solve``, ``cholesky``,
``qr``, ``svd``, ``eigh`` and the array ops), so it differentiates, batches and compiles.
Inputs are float32, float64, complex64 or complex128 (integers and bools are promoted to
float32, as JAX); symmetric becomes Hermitian for complex inputs, and eigenvalues,
singular values and ``slogdet``'s ``logabsdet`` are real, as NumPy's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.prims import linalg as lax_linalg
from funcgrad.core.tensor import Tensor
from funcgrad.numpy import _creation, _elementwise, _reductions, _shape
from funcgrad.numpy._linear import matmul
from funcgrad.numpy._util import (
    asarray,
    broadcast_shapes,
    broadcast_to,
    normalize_axis,
    promote,
)
from funcgrad.transforms.custom import custom_jvp

__all__ = [
    "EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond",
    "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm",
    "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv",
    "tensorsolve", "trace", "vecdot", "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class EigResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


def _check_dtype(name, a):
    if a.dtype not in lax_linalg.SUPPORTED_DTYPES:
        raise TypeError(f"{name}: dtype {a.dtype.name} not supported; expected float32, "
                        "float64, complex64 or complex128 (convert with .astype)")


def _matrix(name, a, *, square=False, check_dtype=True):
    (a,) = promote(name, a, to_inexact=True)
    if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
        kind = "a square matrix (..., n, n)" if square else "a matrix (..., m, n)"
        raise ValueError(f"{name}: expected {kind}, got shape {a.shape}")
    if check_dtype:
        _check_dtype(name, a)
    return a


def _mT(x):
    return _shape.swapaxes(x, -1, -2)


def _mH(x):
    """Conjugate transpose of the last two axes (the transpose for real x)."""
    return _elementwise.conjugate(_mT(x))


def _symmetrize(x):
    return (x + _mH(x)) / 2


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor: lower ``L`` with ``a = L @ L.T`` (``upper``: ``U`` with ``a = U.T @ U``);
    for complex ``a``, ``a = L @ L.conj().T``.

    Arguments: ``a`` symmetric (complex: Hermitian) positive definite, shape (..., n, n);
    ``symmetrize_input`` decomposes ``(a + a^H) / 2``, else only ``a``'s lower triangle is
    read.  Not positive definite gives NaNs in the triangle (as JAX).

    >>> fnp.linalg.cholesky(fg.tensor([[4.0, 2.0], [2.0, 5.0]]))
    tensor([[2., 0.], [1., 2.]], dtype=float32)
    """
    a = _matrix("cholesky", a, square=True)
    # tril: the NaNs of a matrix that is not positive definite stay in the triangle, zeros
    # above it, as JAX (the factorization's failure filled every entry)
    L = _shape.tril(lax_linalg.cholesky(_symmetrize(a) if symmetrize_input else a))
    return _mH(L) if upper else L


def _lu_solve(lu, perm, b):
    """Solve ``a x = b`` given ``a``'s LU factors; ``b`` has shape (..., n, k)."""
    x = lax_linalg.permute_rows(b, perm)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)


def solve(a, b):
    """Solve ``a @ x = b`` for ``x`` (``b`` of shape (..., n) only when 1-d, as NumPy 2).

    >>> fnp.linalg.solve(fg.tensor([[2.0, 0.0], [0.0, 4.0]]), fg.tensor([2.0, 2.0]))
    tensor([1. , 0.5], dtype=float32)
    """
    a, b = promote("solve", a, b, to_inexact=True)
    a = _matrix("solve", a, square=True)
    vector = b.ndim == 1
    if vector:
        b = _shape.reshape(b, (b.shape[0], 1))
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: a of shape {a.shape} and b of shape "
                         f"{b.shape[:-1] if vector else b.shape} do not align "
                         f"({a.shape[-1]} != {b.shape[-2] if b.ndim >= 2 else b.shape})")
    batch = broadcast_shapes("solve", a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    if b.size == 0:  # nothing to solve for (n, k or a batch axis is 0): x is as empty as b
        x = b
    else:
        lu, _, perm = lax_linalg.lu(a)
        x = _lu_solve(lu, perm, b)
    return _shape.reshape(x, x.shape[:-1]) if vector else x


def inv(a):
    """Inverse of the square matrices in ``a`` (shape (..., n, n)).

    >>> fnp.linalg.inv(fg.tensor([[2.0, 0.0], [0.0, 4.0]]))
    tensor([[0.5 , 0.  ], [0.  , 0.25]], dtype=float32)
    """
    a = _matrix("inv", a, square=True)
    if a.size == 0:  # 0 x 0 matrices, or none: the inverses are as empty
        return a
    eye = broadcast_to(_creation.eye(a.shape[-1], dtype=a.dtype), a.shape)
    lu, _, perm = lax_linalg.lu(a)
    return _lu_solve(lu, perm, eye)


def tensorinv(a, ind: int = 2):
    """Inverse of ``a`` as a tensor map: ``tensordot(tensorinv(a, ind), b, ind)`` solves
    ``tensordot(a, x, a.ndim - ind) = b``; the result has shape
    ``a.shape[ind:] + a.shape[:ind]``.

    Arguments: ``a`` whose first ``ind`` axes hold as many elements as the others; ``ind``
    a positive int.

    >>> fnp.linalg.tensorinv(fnp.eye(4).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
    """
    (a,) = promote("tensorinv", a, to_inexact=True)
    _check_dtype("tensorinv", a)
    if not isinstance(ind, (int, np.integer)) or isinstance(ind, bool) or ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive int, got {ind!r}")
    leading, trailing = a.shape[:ind], a.shape[ind:]
    rows, cols = math.prod(leading), math.prod(trailing)
    if rows != cols:
        raise ValueError(f"tensorinv: a of shape {a.shape} with ind={ind} is not square: its "
                         f"first {ind} axes {leading} hold {rows} elements and the rest "
                         f"{trailing} hold {cols}; pick ind so the two products match")
    return _shape.reshape(inv(_shape.reshape(a, (rows, cols))), trailing + leading)


def tensorsolve(a, b, axes=None):
    """Solve ``tensordot(a, x, x.ndim) = b`` for ``x`` of shape ``a.shape[b.ndim:]``.

    Arguments: ``a`` with ``a.shape[:b.ndim] == b.shape`` and as many elements in its other
    axes as ``b`` has; ``axes``, when given, are the axes of ``a`` moved to the end (in that
    order) first, as NumPy.

    >>> fnp.linalg.tensorsolve(fnp.eye(4).reshape(2, 2, 4), fnp.ones((2, 2))).shape
    (4,)
    """
    a, b = promote("tensorsolve", a, b, to_inexact=True)
    _check_dtype("tensorsolve", a)
    if axes is not None:
        axes = tuple(normalize_axis("tensorsolve", axis, a.ndim) for axis in axes)
        a = _shape.moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    if a.shape[:b.ndim] != b.shape:
        raise ValueError(f"tensorsolve: the leading axes of a (shape {a.shape}) must match b "
                         f"of shape {b.shape}, got {a.shape[:b.ndim]}")
    solution_shape = a.shape[b.ndim:]
    size = math.prod(b.shape)
    if math.prod(solution_shape) != size:
        raise ValueError(f"tensorsolve: the trailing axes {solution_shape} of a (shape "
                         f"{a.shape}) must hold as many elements as b of shape {b.shape} "
                         f"({math.prod(solution_shape)} != {size})")
    x = solve(_shape.reshape(a, (size, size)), _shape.reshape(b, (size,)))
    return _shape.reshape(x, solution_shape)


def _lu_sign_and_diagonal(a, factors=None):
    """The permutation's sign and U's diagonal, from ``factors = lu(a)`` (computed when
    not given)."""
    lu, pivots, _ = lax_linalg.lu(a) if factors is None else factors
    diag = _shape.diagonal(lu, 0, -2, -1)
    swaps = _reductions.sum(pivots != _creation.arange(a.shape[-1], dtype=pivots.dtype),
                            axis=-1)
    parity = 1 - 2 * (swaps % 2)
    return parity.astype(a.dtype), diag


def det(a):
    """Determinant of the square matrices in ``a`` (the polynomial in the entries up to
    3 x 3, else from the LU factorization).

    Its derivative is the cofactor matrix, exact for singular matrices too (where
    ``det(a) * inv(a).T`` is 0 * inf), as JAX's; so are second derivatives, except for
    4 x 4 and larger matrices whose LU meets an exactly zero pivot (NaN there, as JAX's).

    >>> fnp.linalg.det(fg.tensor([[2.0, 1.0], [0.0, 3.0]]))
    tensor(6., dtype=float32)
    """
    a = _matrix("det", a, square=True)
    if a.size == 0:
        return _empty_det(a)
    if a.shape[-1] <= 3:
        return _det_by_minors(a)
    return _det(a)


def _det_by_minors(a):
    """det of 1 x 1, 2 x 2 and 3 x 3 matrices as the polynomial in their entries (as
    JAX's): every derivative exact, at singular matrices too, and no LU."""
    n = a.shape[-1]
    at = lambda i, j: a[..., i, j]  # noqa: E731
    if n == 1:
        return at(0, 0)
    if n == 2:
        return at(0, 0) * at(1, 1) - at(0, 1) * at(1, 0)
    return (at(0, 0) * (at(1, 1) * at(2, 2) - at(1, 2) * at(2, 1))
            - at(0, 1) * (at(1, 0) * at(2, 2) - at(1, 2) * at(2, 0))
            + at(0, 2) * (at(1, 0) * at(2, 1) - at(1, 1) * at(2, 0)))


def _empty_det(a):
    """det of 0 x 0 matrices (1, the empty product; JAX's and NumPy's value) or of no
    matrices, without the LU (and its gathers on size-0 axes), still depending on ``a``."""
    return _reductions.sum(a, axis=(-2, -1)) + 1


@custom_jvp
def _det(a):
    parity, diag = _lu_sign_and_diagonal(a)
    return parity * _reductions.prod(diag, axis=-1)


@_det.defjvp
def _det_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    # the primal through _det again (not from the cofactors' LU): differentiating this rule
    # once more then differentiates det by this rule too
    return _det(a), _reductions.sum(_cofactors(a) * t, axis=(-2, -1))


def _cofactors(a):
    """The cofactor matrices ``adj(a).T`` of square ``a`` (shape (..., n, n), n >= 2).

    With ``P a = L U``: ``adj(a) = det(P) adj(U) L^-1 P``.  Splitting off U's last row and
    column, ``U = [[U1, v], [0, u]]``, ``adj(U) = [[u adj(U1), -adj(U1) v], [0, det U1]]``
    never divides by ``u``, the pivot partial pivoting leaves smallest: derivatives of
    these cofactors (second derivatives of det) stay exact at and near matrices of rank
    n - 1, where ``det(U) U^-1`` differentiated is 1/u**2 times u."""
    lu, _, perm = factors = lax_linalg.lu(a)
    n = a.shape[-1]
    parity, diag = _lu_sign_and_diagonal(a, factors)
    upper = _shape.triu(lu)
    corner = upper[..., :-1, :-1]
    adj_corner = _triangular_adjugate(corner, diag[..., :-1])
    adj_upper = _shape.concatenate([
        _shape.concatenate([adj_corner * diag[..., -1, None, None],
                            -matmul(adj_corner, upper[..., :-1, -1:])], axis=-1),
        _shape.concatenate([_creation.zeros_like(upper[..., -1:, :-1]),
                            _reductions.prod(diag[..., :-1], axis=-1)[..., None, None]],
                           axis=-1)], axis=-2)
    eye = broadcast_to(_creation.eye(n, dtype=a.dtype), a.shape)
    inv_lower = lax_linalg.triangular_solve(lu, eye, left_side=True, lower=True,
                                            unit_diagonal=True)
    permutation = (perm[..., :, None] == _creation.arange(n, dtype=perm.dtype)).astype(a.dtype)
    adj = matmul(matmul(adj_upper, inv_lower), permutation)
    return _shape.swapaxes(adj * parity[..., None, None], -1, -2)


def _triangular_adjugate(upper, diag):
    """``adj(U)`` of upper triangular matrices ``U`` with diagonal ``diag``: ``det(U) U^-1``
    with no zero pivot; with one zero pivot ``k`` the rank-one ``p (V e_k)(e_k^T V)``, where
    ``V`` inverts ``U`` with that pivot set to 1 and ``p`` is the product of the others;
    taken as zero with more (as JAX does).  Zero pivots are set to 1 before solving, so no
    branch holds an inf or NaN for gradients."""
    zero = diag == 0
    indicator = zero.astype(upper.dtype)
    count = _reductions.sum(zero.astype(np.int32), axis=-1)[..., None, None]
    product = _reductions.prod(_elementwise.where(zero, _creation.ones_like(diag), diag),
                               axis=-1)[..., None, None]
    eye = broadcast_to(_creation.eye(upper.shape[-1], dtype=upper.dtype), upper.shape)
    inverse = lax_linalg.triangular_solve(upper + eye * indicator[..., None, :], eye,
                                          left_side=True, lower=False)
    e = indicator[..., :, None]
    rank_one = matmul(matmul(inverse, e), matmul(_shape.swapaxes(e, -1, -2), inverse))
    return product * _elementwise.where(count == 0, inverse,
                                        _elementwise.where(count == 1, rank_one,
                                                           _creation.zeros_like(inverse)))


def slogdet(a):
    """``(sign, logabsdet)`` of the determinants of ``a``: stable for large or tiny ones.

    For complex ``a`` the sign is the determinant's phase ``det / |det|`` (complex) and
    ``logabsdet`` is real, as NumPy; a singular ``a`` gives ``(0, -inf)``.

    >>> fnp.linalg.slogdet(fg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    SlogdetResult(sign=tensor(-1., dtype=float32), logabsdet=tensor(0.69314..., dtype=float32))
    """
    a = _matrix("slogdet", a, square=True)
    if a.size == 0:  # det 1: sign 1, logabsdet 0
        return SlogdetResult(_empty_det(a),
                             _reductions.sum(_elementwise.abs(a), axis=(-2, -1)))
    parity, diag = _lu_sign_and_diagonal(a)
    if dtypes.is_complex(a.dtype):
        # the phases z / |z| (0 for a zero pivot), written out so they differentiate
        zero = diag == 0
        magnitude = _elementwise.where(zero, 1, _elementwise.abs(diag))
        phases = _elementwise.where(zero, 0, diag / magnitude)
    else:
        phases = _elementwise.sign(diag)
    sign = parity * _reductions.prod(phases, axis=-1)
    logabsdet = _reductions.sum(_elementwise.log(_elementwise.abs(diag)), axis=-1)
    return SlogdetResult(sign, logabsdet)


def qr(a, mode: str = "reduced"):
    """QR decomposition ``a = Q @ R``; ``mode`` is "reduced", "complete" or "r".

    >>> Q, R = fnp.linalg.qr(fnp.ones((3, 2)))
    >>> Q.shape, R.shape
    ((3, 2), (2, 2))
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    a = _matrix("qr", a)
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition ``a = U @ diag(S) @ Vh``, ``S`` descending (and real
    also for complex ``a``; each pair of singular vectors gets the canonical phase of
    ``eigh``'s eigenvectors, from ``U``'s column).

    Returns ``SVDResult(U, S, Vh)``, or only ``S`` when ``compute_uv=False``.

    >>> fnp.linalg.svd(fg.tensor([[3.0, 0.0], [0.0, 4.0]]), compute_uv=False)
    tensor([4., 3.], dtype=float32)
    """
    a = _matrix("svd", a)
    if not compute_uv:
        return lax_linalg.svd(a, compute_uv=False)[0]
    s, u, vt = lax_linalg.svd(a, full_matrices=full_matrices)
    return SVDResult(u, s, vt)


def svdvals(a):
    """Singular values of ``a``, descending.

    >>> fnp.linalg.svdvals(fg.tensor([[3.0, 0.0], [0.0, 4.0]]))
    tensor([4., 3.], dtype=float32)
    """
    return svd(a, compute_uv=False)


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric ``a`` (complex:
    Hermitian, with real eigenvalues).

    With ``symmetrize_input`` (the default, as JAX) ``(a + a^H) / 2`` is decomposed, so
    gradients are symmetric; otherwise only the ``UPLO`` ("L" or "U") triangle is read.
    Each eigenvector's sign (complex: phase) is fixed so that ``sum_k v_k exp(-k / n)`` is
    real and positive, the same eagerly and under ``jit``.

    >>> w, v = fnp.linalg.eigh(fg.tensor([[2.0, 0.0], [0.0, 1.0]]))
    >>> w
    tensor([1., 2.], dtype=float32)
    """
    a = _matrix("eigh", a, square=True)
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    if symmetrize_input:
        a = _symmetrize(a)
    elif UPLO == "U":  # the lower triangle of a^H holds the upper one of a
        a = _mH(a)
    w, v = lax_linalg.eigh(a)
    return EighResult(w, v)


def eig(a):
    """Eigenvalues and right eigenvectors (unit columns) of a general square ``a``, complex
    and in no particular order (LAPACK's geev), as ``jax.numpy.linalg.eig``.

    Works under ``jit`` (on the CPU only, as in JAX: the compiled program calls LAPACK),
    ``vmap`` and ``grad``. Eigenvector derivatives keep each column's unit length; the
    phase of an eigenvector is arbitrary, so only phase-invariant functions of ``v``
    (``abs(v)``, ``v @ diag(w) @ inv(v)``) have meaningful gradients.  Repeated
    eigenvalues give infinite derivatives.  For symmetric matrices ``eigh`` is faster and
    orders its eigenvalues.

    >>> w, v = fnp.linalg.eig(fg.tensor([[0.0, -1.0], [1.0, 0.0]]))
    >>> w
    tensor([0.+1.j, 0.-1.j], dtype=complex64)
    """
    a = _matrix("eig", a, square=True, check_dtype=False)
    if a.dtype.itemsize < 4:  # float16, bfloat16: LAPACK computes in float32
        a = a.astype(np.float32)
    _check_dtype("eig", a)
    w, v = lax_linalg.eig(a)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of a general square ``a`` (complex), as ``jax.numpy.linalg.eigvals``;
    under ``jit`` on the CPU only, like ``eig``.

    >>> fnp.linalg.eigvals(fg.tensor([[2.0, 0.0], [0.0, 3.0]]))
    tensor([2.+0.j, 3.+0.j], dtype=complex64)
    """
    return eig(a)[0]


def eigvalsh(a, UPLO: str | None = "L"):
    """Eigenvalues (ascending) of symmetric ``a``.

    >>> fnp.linalg.eigvalsh(fg.tensor([[2.0, 0.0], [0.0, 1.0]]))
    tensor([1., 2.], dtype=float32)
    """
    return eigh(a, UPLO)[0]


def matrix_power(a, n: int):
    """``a`` multiplied by itself ``n`` times (``n < 0``: powers of the inverse).

    >>> fnp.linalg.matrix_power(fg.tensor([[1.0, 1.0], [0.0, 1.0]]), 3)
    tensor([[1., 3.], [0., 1.]], dtype=float32)
    """
    (a,) = promote("matrix_power", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"matrix_power: expected a square matrix (..., n, n), got shape "
                         f"{a.shape}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"matrix_power: exponent must be an int, got {type(n).__name__}")
    if n == 0:
        return broadcast_to(_creation.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if n < 0:
        a, n = inv(a), -n
    result = None
    while n:  # binary powering
        if n & 1:
            result = a if result is None else matmul(result, a)
        n >>= 1
        if n:
            a = matmul(a, a)
    return result


def multi_dot(arrays):
    """Product of a sequence of matrices (first may be 1-d, last may be 1-d).

    >>> fnp.linalg.multi_dot([fnp.ones((2, 3)), fnp.ones((3, 4)), fnp.ones(4)]).shape
    (2,)
    """
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("multi_dot: needs at least two arrays")
    out = arrays[0]
    for x in arrays[1:]:
        out = matmul(out, x)
    return out


def _default_rtol(a):
    return 10 * max(a.shape[-2:]) * float(dtypes.finfo(a.dtype).eps)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse from the SVD, dropping singular values below
    ``rtol * max(s)`` (default ``10 * max(m, n) * eps``, as JAX).

    >>> fnp.linalg.pinv(fg.tensor([[2.0, 0.0], [0.0, 0.0]]))
    tensor([[0.5, 0. ], [0. , 0. ]], dtype=float32)
    """
    a = _matrix("pinv", a)
    if a.size == 0:  # the pseudo-inverses are as empty (shape (..., n, m)), as JAX's
        return _mH(a)
    rtol = rcond if rtol is None else rtol
    rtol = _default_rtol(a) if rtol is None else rtol
    return _pinv(a, asarray(rtol, dtypes.real_dtype(a.dtype)))


@custom_jvp
def _pinv(a, rtol):
    s, u, vt = lax_linalg.svd(a, full_matrices=False)
    cutoff = rtol[..., None] * _reductions.max(s, axis=-1, keepdims=True)
    kept = s > cutoff
    s_inv = _elementwise.where(kept, 1 / _elementwise.where(kept, s, 1), 0)
    return matmul(_mH(vt) * s_inv[..., None, :], _mH(u))


@_pinv.defjvp
def _pinv_jvp(primals, tangents):
    # Golub and Pereyra's derivative of the pseudo-inverse (as JAX), from P itself: the
    # SVD's derivative divides by differences of singular values, NaN where two are equal
    # (the identity, orthonormal columns); rtol's tangent is ignored (0 almost everywhere)
    (a, rtol), (t, _) = primals, tangents
    p = _pinv(a, rtol)
    m, n = a.shape[-2], a.shape[-1]
    t_h = _mH(t)
    eye_m = _creation.eye(m, dtype=a.dtype)
    eye_n = _creation.eye(n, dtype=a.dtype)
    dp = (-matmul(matmul(p, t), p)
          + matmul(matmul(matmul(p, _mH(p)), t_h), eye_m - matmul(a, p))
          + matmul(matmul(eye_n - matmul(p, a), t_h), matmul(_mH(p), p)))
    return p, dp


def matrix_rank(a, rtol=None, *, tol=None):
    """Number of singular values above ``tol`` (or ``rtol * max(s)``).

    >>> fnp.linalg.matrix_rank(fnp.ones((3, 3)))
    tensor(1, dtype=int32)
    """
    a = _matrix("matrix_rank", a)
    s = svd(a, compute_uv=False)
    if tol is None:
        rtol = _default_rtol(a) if rtol is None else rtol
        tol = rtol * _reductions.max(s, axis=-1, keepdims=True)
    return _reductions.sum(s > tol, axis=-1)


def lstsq(a, b, rcond=None):
    """Least-squares solution of ``a @ x = b``: ``(x, residuals, rank, s)`` as NumPy.

    >>> x, *_ = fnp.linalg.lstsq(fg.tensor([[1.0], [1.0]]), fg.tensor([1.0, 3.0]))
    >>> fnp.round(x, 5)   # the mean of 1 and 3
    tensor([2.], dtype=float32)
    """
    a, b = promote("lstsq", a, b, to_inexact=True)
    _check_dtype("lstsq", a)
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ValueError(f"lstsq: a must be (m, n) and b (m,) or (m, k) with the same m, got "
                         f"shapes {a.shape} and {b.shape}")
    m, n = a.shape
    rtol = float(dtypes.finfo(a.dtype).eps) * max(m, n) if rcond is None else rcond
    s = svd(a, compute_uv=False)
    x = matmul(pinv(a, rtol=rtol), b)
    rank = _reductions.sum(s > rtol * _reductions.max(s, initial=0), axis=-1)
    residual = b - matmul(a, x)
    # NumPy leaves residuals empty for rank-deficient a; that needs a concrete rank, so
    # (as JAX) they are returned whenever m > n
    if m > n:
        squares = residual * _elementwise.conjugate(residual)
        residuals = _reductions.sum(_elementwise.real(squares), axis=0)
        residuals = _shape.reshape(residuals, (1,)) if b.ndim == 1 else residuals
    else:
        residuals = _creation.zeros((0,), dtype=dtypes.real_dtype(a.dtype))
    return x, residuals, rank, s


# --- norms -----------------------------------------------------------------------------------

_VECTOR_ORDS = (None, 0, 1, 2, math.inf, -math.inf)
_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _vector_norm(x, ord, axes, keepdims):
    absx = _elementwise.abs(x)
    if ord is None or ord == 2:
        return _elementwise.sqrt(_reductions.sum(absx * absx, axis=axes, keepdims=keepdims))
    if ord == math.inf:
        return _reductions.max(absx, axis=axes, keepdims=keepdims)
    if ord == -math.inf:
        return _reductions.min(absx, axis=axes, keepdims=keepdims)
    if ord == 0:
        return _reductions.sum((x != 0).astype(absx.dtype), axis=axes, keepdims=keepdims)
    if ord == 1:
        return _reductions.sum(absx, axis=axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid ord {ord!r} for a vector norm")
    return _reductions.sum(absx ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    row, col = axes
    if ord not in _MATRIX_ORDS:
        raise ValueError(f"norm: invalid ord {ord!r} for a matrix norm; expected one of "
                         f"{_MATRIX_ORDS}")
    if ord is None or ord == "fro":
        return _vector_norm(x, 2, axes, keepdims)
    absx = _elementwise.abs(x)
    if ord in (1, -1, math.inf, -math.inf):
        # 1: max over columns of column sums; inf: max over rows of row sums
        summed, over = (row, col) if ord in (1, -1) else (col, row)
        sums = _reductions.sum(absx, axis=summed, keepdims=True)
        pick = _reductions.max if ord > 0 else _reductions.min
        out = pick(sums, axis=over, keepdims=True)
    else:
        moved = _shape.moveaxis(x, (row, col), (-2, -1))
        s = svd(moved, compute_uv=False)
        if ord == "nuc":
            out = _reductions.sum(s, axis=-1)
        else:
            out = (_reductions.max if ord == 2 else _reductions.min)(s, axis=-1)
        if not keepdims:
            return out
        out = _shape.expand_dims(_shape.expand_dims(out, -1), -1)
        return _shape.moveaxis(out, (-2, -1), (row, col))
    if keepdims:
        return out
    return _shape.squeeze(out, axis=(row, col))


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector or matrix norm as ``numpy.linalg.norm``.

    ``axis`` an int: vector norm (``ord`` None/2, 1, inf, -inf, 0 or any p); a pair of ints
    or a 2-d ``x`` with ``axis=None``: matrix norm (``ord`` None/"fro", "nuc", 1, -1, 2, -2,
    inf, -inf); ``axis=None`` with ``ord=None``: 2-norm of the flattened ``x``.

    >>> fnp.linalg.norm(fg.tensor([3.0, 4.0]))
    tensor(5., dtype=float32)
    """
    (x,) = promote("norm", x, to_inexact=True)
    if axis is None:
        if ord is None:
            out = _vector_norm(_shape.ravel(x), None, 0, False)
            return _shape.reshape(out, (1,) * x.ndim) if keepdims else out
        if x.ndim == 1:
            axis = 0
        elif x.ndim == 2:
            axis = (0, 1)
        else:
            raise ValueError(f"norm: ord={ord!r} with axis=None needs a 1-d or 2-d input, "
                             f"got shape {x.shape}")
    if isinstance(axis, (tuple, list)) and len(axis) == 1:
        axis = axis[0]
    if isinstance(axis, (tuple, list)):
        if len(axis) != 2:
            raise ValueError(f"norm: axis must be an int or a pair, got {axis}")
        axes = tuple(normalize_axis("norm", a, x.ndim) for a in axis)
        if axes[0] == axes[1]:
            raise ValueError(f"norm: duplicate axes {axis}")
        return _matrix_norm(x, ord, axes, keepdims)
    return _vector_norm(x, ord, normalize_axis("norm", axis, x.ndim), keepdims)


def vector_norm(x, axis=None, keepdims: bool = False, ord=2):
    """Vector norm over ``axis`` (None: all axes), as the array API's ``vector_norm``.

    >>> fnp.linalg.vector_norm(fg.tensor([[3.0], [4.0]]))
    tensor(5., dtype=float32)
    """
    (x,) = promote("vector_norm", x, to_inexact=True)
    if axis is None:
        out = _vector_norm(_shape.ravel(x), ord, 0, False)
        return _shape.reshape(out, (1,) * x.ndim) if keepdims else out
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(normalize_axis("vector_norm", a, x.ndim) for a in axes)
    return _vector_norm(x, ord, axes, keepdims)


def matrix_norm(x, ord="fro", keepdims: bool = False):
    """Matrix norm over the last two axes, as the array API's ``matrix_norm``.

    >>> fnp.linalg.matrix_norm(fnp.eye(2))
    tensor(1.4142135, dtype=float32)
    """
    (x,) = promote("matrix_norm", x, to_inexact=True)
    if x.ndim < 2:
        raise ValueError(f"matrix_norm: expected (..., m, n), got shape {x.shape}")
    return _matrix_norm(x, ord, (x.ndim - 2, x.ndim - 1), keepdims)


# --- the array API's linalg names for functions of funcgrad.numpy ------------------------------


def cross(x1, x2, /, *, axis: int = -1):
    """Cross product of 3-vectors along ``axis`` (the array API's form of ``fnp.cross``).

    >>> fnp.linalg.cross(fg.tensor([1.0, 0.0, 0.0]), fg.tensor([0.0, 1.0, 0.0]))
    tensor([0., 0., 1.], dtype=float32)
    """
    from funcgrad.numpy._linear import cross as _cross

    x1, x2 = promote("linalg.cross", x1, x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"linalg.cross: both inputs need size 3 along axis {axis}, got "
                         f"shapes {x1.shape} and {x2.shape}")
    return _cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset: int = 0):
    """The diagonals of the matrices in the last two axes.

    >>> fnp.linalg.diagonal(fg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([1., 4.], dtype=float32)
    """
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"linalg.diagonal: expected a matrix (..., m, n), got shape {x.shape}")
    return _shape.diagonal(x, offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset: int = 0, dtype=None):
    """Sums of the diagonals of the matrices in the last two axes.

    >>> fnp.linalg.trace(fg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor(5., dtype=float32)
    """
    out = _reductions.sum(diagonal(x, offset=offset), axis=-1)
    return out if dtype is None else out.astype(dtype)


def outer(x1, x2, /):
    """Outer product of two 1-d tensors (others are an error, as the array API says).

    >>> fnp.linalg.outer(fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0]))
    tensor([[3., 4.],
            [6., 8.]], dtype=float32)
    """
    from funcgrad.numpy._linear import outer as _outer

    x1, x2 = promote("linalg.outer", x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"linalg.outer: both inputs must be 1-d, got shapes {x1.shape} and "
                         f"{x2.shape}")
    return _outer(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    """``fnp.tensordot`` with ``axes`` keyword-only, as the array API's."""
    from funcgrad.numpy._linear import tensordot as _tensordot

    return _tensordot(x1, x2, axes)


def matrix_transpose(x, /):
    """The matrices in the last two axes transposed."""
    from funcgrad.numpy._extras import matrix_transpose as _matrix_transpose

    return _matrix_transpose(x)


def vecdot(x1, x2, /, *, axis: int = -1):
    """Dot products along ``axis``, conjugating ``x1`` (``fnp.vecdot``)."""
    from funcgrad.numpy._extras import vecdot as _vecdot

    return _vecdot(x1, x2, axis=axis)


def cond(x, p=None):
    """Condition number of the matrices in the last two axes: the ratio of the largest to
    the smallest singular value (``p`` None, 2 or -2, the inverse ratio for -2), else
    ``norm(x, p) * norm(inv(x), p)``, as ``numpy.linalg.cond``.

    >>> fnp.linalg.cond(fg.tensor([[2.0, 0.0], [0.0, 0.5]]))
    tensor(4., dtype=float32)
    """
    x = _matrix("cond", x)
    if 0 in x.shape[-2:]:
        raise ValueError(f"cond: matrices of shape {x.shape[-2:]} are empty; their condition "
                         "number is undefined (as JAX)")
    if p is None or p == 2 or p == -2:
        s = svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
