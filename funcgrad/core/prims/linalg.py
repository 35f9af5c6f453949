"""Matrix decompositions and triangular solves: cholesky, triangular_solve, lu, qr, svd, eigh,
eig.

Every primitive acts on the last two axes; leading axes are a batch, so the batch rule
only moves the vmapped axis to the front.  Derivative rules are the standard ones (as in
JAX's ``lax.linalg``), written with funcgrad ops so they differentiate again.  Inputs are
float32, float64, complex64 or complex128.  For complex inputs lu and triangular_solve are
holomorphic (transposes stay plain, not conjugated, as JAX's); cholesky and eigh read a
Hermitian matrix (the lower triangle and the real part of the diagonal, as LAPACK), qr's R
has a real diagonal (LAPACK's Householder convention), and eigh's eigenvalues and svd's
singular values are real.  Eigenvector and singular vector phases are canonical: see
``_canonical_signs``.
"""

from __future__ import annotations

import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive, is_undefined
from funcgrad.core.prims.structural import (
    broadcast_in_dim,
    concatenate,
    moveaxis,
    slice_,
    transpose,
)

# --- shared checks and helpers -------------------------------------------------------------


SUPPORTED_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def _check_matrix(name, x, *, square=False):
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        kind = "square matrices (..., n, n)" if square else "matrices (..., m, n)"
        raise ValueError(f"{name}: expected {kind}, got shape {x.shape}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name}: dtype {x.dtype.name} not supported; expected float32, "
                        "float64, complex64 or complex128 (convert with .astype)")


def _declare(prim, impl, rule, jvp, batch=None, transpose=None):
    """Install the rules; the impl checks its operands against the shape rule first, so
    eager calls fail with the rule's message rather than LAPACK's."""

    def checked_impl(*args, **params):
        rule(*(ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args), **params)
        return impl(*args, **params)

    checked_impl.__wrapped__ = impl  # for callers that checked already (host calls)
    prim.impl = checked_impl
    prim.abstract_eval = rule
    prim.jvp = jvp
    prim.batch = _matrix_batch(prim) if batch is None else batch
    prim.transpose = transpose


def _matrix_batch(prim):
    """Batch rule of a one-operand matrix primitive: the batch axis goes to the front."""

    def rule(axis_size, args, dims, **params):
        x = args[0] if dims[0] == 0 else moveaxis(args[0], dims[0], 0)
        out = prim.bind(x, **params)
        return (out, [0] * len(out)) if prim.multiple_results else (out, 0)

    return rule


def _mT(x):
    """Swap the last two axes."""
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return transpose(x, perm)


def _conj(x):
    """Complex conjugate; real x itself (no operation, so real graphs are unchanged)."""
    from funcgrad.numpy._elementwise import conjugate

    return conjugate(x)


def _real(x):
    """Real part; real x itself."""
    from funcgrad.numpy._elementwise import real

    return real(x)


def _imag(x):
    from funcgrad.numpy._elementwise import imag

    return imag(x)


def _mH(x):
    """Conjugate transpose of the last two axes (the transpose for real x)."""
    return _conj(_mT(x))


def _abs2(x):
    """``|x|^2`` elementwise, real: ``x * x`` for real x (complex x: from its parts, as
    complex products compile slowly)."""
    if not dtypes.is_complex(x.dtype):
        return x * x
    re, im = _real(x), _imag(x)
    return re * re + im * im


def _mm(a, b):
    from funcgrad.numpy._linear import matmul

    return matmul(a, b)


def _tril(x, k=0):
    from funcgrad.numpy._shape import tril

    return tril(x, k)


def _triu(x, k=0):
    from funcgrad.numpy._shape import triu

    return triu(x, k)


def _eye(n, dtype):
    from funcgrad.numpy._creation import eye

    return eye(n, dtype=dtype)


def _diagonal(x):
    """The diagonals of the matrices in ``x`` (its last two axes)."""
    from funcgrad.numpy._shape import diagonal

    return diagonal(x, 0, -2, -1)


def _hermitian_from_lower(x):
    """The symmetric (complex: Hermitian) matrix whose lower triangle is x's: what LAPACK's
    'L' routines read, which for complex x also take only the real part of the diagonal."""
    if not dtypes.is_complex(x.dtype):
        return _tril(x) + _mT(_tril(x, -1))
    below = _tril(x, -1)
    return below + _mH(below) + _eye(x.shape[-1], x.dtype) * _real(x)


def _lapack_one_by_one(batch_shape, size) -> bool:
    """Whether to call LAPACK matrix by matrix rather than run one NumPy step per column
    over the whole batch: unless the matrices are many more than their size."""
    return math.prod(batch_shape) <= max(size, 4)


def _nan_where_lapack_fails(impl):
    """``impl`` (NumPy arrays in, an array or a list of arrays out) run on the whole
    batch, or, where LAPACK fails (NaN or inf entries, a matrix that is not positive
    definite), matrix by matrix with NaN results for the failing ones (as JAX) instead of
    raising ``LinAlgError``."""

    def run(a, **params):
        try:
            return impl(a, **params)
        except np.linalg.LinAlgError:
            pass
        matrices = a.reshape(math.prod(a.shape[:-2]), *a.shape[-2:])
        # the shapes and dtypes of one matrix's results (an identity never fails)
        template = impl(np.eye(*a.shape[-2:], dtype=a.dtype), **params)
        single = not isinstance(template, (list, tuple))
        failed = [np.full_like(r, np.nan) for r in ([template] if single else template)]
        rows = []
        for m in matrices:
            try:
                out = impl(m, **params)
                rows.append([out] if single else out)
            except np.linalg.LinAlgError:
                rows.append(failed)
        outs = [np.stack(col).reshape(*a.shape[:-2], *col[0].shape)
                for col in zip(*rows, strict=True)]
        return outs[0] if single else outs

    return run


# --- cholesky: A = L L^H, L lower triangular (reads A's lower triangle) ----------------------

cholesky_p = Primitive("cholesky", keeps_weak=False)


def _cholesky_impl(a):
    return np.linalg.cholesky(a).astype(a.dtype, copy=False)


def _cholesky_rule(a):
    _check_matrix("cholesky", a, square=True)
    return ShapedArray(a.shape, a.dtype)


def _cholesky_jvp(primals, tangents):
    # dL = L phi(L^-1 dA L^-H), phi = lower triangle with the diagonal halved
    # (Murray, "Differentiation of the Cholesky decomposition", 2016)
    (a,), (g,) = primals, tangents
    L = cholesky_p.bind(a)
    if g is None:
        return L, None
    sigma = _hermitian_from_lower(g)
    tmp = triangular_solve(_conj(L), sigma, left_side=False, lower=True, transpose_a=True)
    inner = triangular_solve(L, tmp, left_side=True, lower=True)
    phi = _tril(inner, -1) + inner * (_eye(a.shape[-1], a.dtype) * 0.5)
    return L, _mm(L, phi)


_declare(cholesky_p, _nan_where_lapack_fails(_cholesky_impl), _cholesky_rule,
         _cholesky_jvp)


def cholesky(a):
    """Lower Cholesky factor ``L`` (``a = L L^H``) of the symmetric (complex: Hermitian)
    positive definite matrices in ``a``, read from their lower triangle."""
    return cholesky_p.bind(a)


# --- triangular_solve: op(A) X = B or X op(A) = B, linear in B ------------------------------

triangular_solve_p = Primitive("triangular_solve", linear=True, keeps_weak=False)


def _triangular_matrix(a, lower, unit_diagonal):
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t.copy()
        idx = np.arange(a.shape[-1])
        t[..., idx, idx] = 1
    return t


def _substitute(t, b, lower):
    """Forward/back substitution (inf/NaN on a zero pivot, as a compiled solver gives)."""
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
    order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            known = slice(0, i) if lower else slice(i + 1, n)
            acc = np.einsum("...k,...kj->...j", t[..., i, known], x[..., known, :])
            x[..., i, :] = (b[..., i, :] - acc) / t[..., i, i, None]
    return x


def _triangular_solve_impl(a, b, *, left_side, lower, transpose_a, unit_diagonal):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if b.size and _lapack_one_by_one(batch, a.shape[-1]):
        return _triangular_solve_lapack(a, b, left_side, lower, transpose_a, unit_diagonal)
    return _triangular_solve_numpy(a, b, left_side, lower, transpose_a, unit_diagonal)


def _triangular_solve_lapack(a, b, left_side, lower, transpose_a, unit_diagonal):
    """LAPACK's trtrs matrix by matrix (SciPy's wrapper): O(n^2) per right-hand side,
    where ``np.linalg.solve`` would factor the triangle again.  A zero pivot falls back
    to substitution (inf/NaN, as a compiled solver gives)."""
    from scipy.linalg import lapack

    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    count = math.prod(batch)
    a = np.broadcast_to(a, batch + a.shape[-2:]).reshape(count, *a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:]).reshape(count, *b.shape[-2:])
    trtrs = lapack.get_lapack_funcs("trtrs", (a, b))
    # X op(A) = B  <=>  op(A)^T X^T = B^T; the transposes stay plain for complex inputs
    trans = int(transpose_a != (not left_side))
    out = np.empty(b.shape, b.dtype)
    for i in range(b.shape[0]):
        rhs = b[i] if left_side else b[i].T
        x, info = trtrs(a[i], rhs, lower=int(lower), trans=trans, unitdiag=int(unit_diagonal))
        if info > 0:
            x = _triangular_solve_numpy(a[i], rhs, True, lower, bool(trans), unit_diagonal)
        out[i] = x if left_side else x.T
    return out.reshape(batch + b.shape[-2:])


def _triangular_solve_numpy(a, b, left_side, lower, transpose_a, unit_diagonal):
    """All the matrices at once: ``np.linalg.solve`` on the triangles (substitution where
    one is singular)."""
    t = _triangular_matrix(a, lower, unit_diagonal)
    if transpose_a:
        t, lower = np.swapaxes(t, -1, -2), not lower
    if not left_side:  # X T = B  <=>  T^T X^T = B^T
        t, b, lower = np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not lower
    try:
        x = np.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        x = _substitute(t, b, lower)
    if not left_side:
        x = np.swapaxes(x, -1, -2)
    return x.astype(b.dtype, copy=False)


def _triangular_solve_rule(a, b, *, left_side, lower, transpose_a, unit_diagonal):
    _check_matrix("triangular_solve", a, square=True)
    _check_matrix("triangular_solve", b)
    side = b.shape[-2] if left_side else b.shape[-1]
    if side != a.shape[-1] or a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"triangular_solve: a of shape {a.shape} and b of shape {b.shape} do "
                         f"not match (left_side={left_side}; batch axes must be equal)")
    if a.dtype != b.dtype:
        raise TypeError(f"triangular_solve: dtypes {a.dtype.name} and {b.dtype.name} differ")
    return ShapedArray(b.shape, b.dtype)


def _triangular_solve_jvp(primals, tangents, **params):
    a, b = primals
    ga, gb = tangents
    out = triangular_solve_p.bind(a, b, **params)
    total = None if gb is None else triangular_solve_p.bind(a, gb, **params)
    if ga is not None:
        term = _triangular_solve_jvp_a(ga, out, a, **params)
        total = term if total is None else total + term
    return out, total


def _triangular_solve_jvp_a(ga, out, a, *, left_side, lower, transpose_a, unit_diagonal):
    # d(op(A)^-1 B) = -op(A)^-1 op(dA) X, with dA restricted to the triangle that is read
    k = 1 if unit_diagonal else 0
    ga = -(_tril(ga, -k) if lower else _triu(ga, k))
    ga = _mT(ga) if transpose_a else ga
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  unit_diagonal=unit_diagonal)
    m, n = out.shape[-2:]
    # a solve costs about a product: order the two so the cheaper one comes first
    if left_side:
        if m > n:
            return triangular_solve_p.bind(a, _mm(ga, out), **params)
        return _mm(triangular_solve_p.bind(a, ga, **params), out)
    if m < n:
        return triangular_solve_p.bind(a, _mm(out, ga), **params)
    return _mm(out, triangular_solve_p.bind(a, ga, **params))


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, unit_diagonal):
    if is_undefined(a):
        raise TypeError("triangular_solve: not linear in the matrix a (only in b)")
    if ct is None:
        return [None, None]
    return [None, triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                          transpose_a=not transpose_a,
                                          unit_diagonal=unit_diagonal)]


def _to_front(x, dim, axis_size):
    if dim is None:
        return broadcast_in_dim(x, (axis_size, *x.shape), tuple(range(1, x.ndim + 1)))
    return x if dim == 0 else moveaxis(x, dim, 0)


def _triangular_solve_batch(axis_size, args, dims, **params):
    a, b = (_to_front(x, d, axis_size) for x, d in zip(args, dims, strict=True))
    return triangular_solve_p.bind(a, b, **params), 0


_declare(triangular_solve_p, _triangular_solve_impl, _triangular_solve_rule,
         _triangular_solve_jvp, _triangular_solve_batch, _triangular_solve_transpose)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, unit_diagonal: bool = False):
    """Solve ``op(a) x = b`` (``left_side``) or ``x op(a) = b`` for triangular ``a``.

    Only the ``lower`` (or upper) triangle of ``a`` is read; ``op`` transposes when
    ``transpose_a``; ``unit_diagonal`` takes the diagonal to be ones.  Defaults as JAX's
    ``lax.linalg.triangular_solve``.
    """
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a),
                                   unit_diagonal=bool(unit_diagonal))


# --- lu: P A = L U with partial pivoting -----------------------------------------------------
# Results: lu (L below the diagonal with an implicit unit diagonal, U on and above it),
# pivots (LAPACK's row swaps, 0-based, int32) and permutation (A[permutation] = L U).

lu_p = Primitive("lu", multiple_results=True, keeps_weak=False)


def _lu_impl(a):
    *batch, m, n = a.shape
    if m and n and _lapack_one_by_one(batch, min(m, n)):
        return _lu_lapack(a)
    return _lu_columns(a)


def _lu_lapack(a):
    """LU by LAPACK's getrf (SciPy's wrapper: NumPy does not expose it), one matrix at a
    time: 128 x 128 float64 in about 0.2 ms, where the column loop takes 6 ms."""
    from scipy.linalg import lapack

    *batch, m, n = a.shape
    flat = a.reshape(math.prod(batch), m, n)
    getrf = lapack.get_lapack_funcs("getrf", (flat,))
    lus = np.empty(flat.shape, a.dtype)
    pivots = np.empty((flat.shape[0], min(m, n)), np.int32)
    perms = np.empty((flat.shape[0], m), np.int32)
    for i, matrix in enumerate(flat):
        lus[i], pivots[i], _ = getrf(matrix)  # info > 0: an exact zero pivot, left in U
        perm = list(range(m))
        for j, p in enumerate(pivots[i].tolist()):
            perm[j], perm[p] = perm[p], perm[j]
        perms[i] = perm
    return [lus.reshape(a.shape), pivots.reshape(*batch, min(m, n)), perms.reshape(*batch, m)]


def _lu_columns(a):
    """LU by partial pivoting, one column at a time for all the matrices at once."""
    *batch, m, n = a.shape
    k = min(m, n)
    # explicit sizes: reshape(-1, m, n) is ambiguous for empty matrices (m or n is 0)
    lu = np.array(a.reshape(math.prod(batch), m, n), dtype=a.dtype, copy=True)
    count = lu.shape[0]
    rows = np.arange(count)
    perm = np.tile(np.arange(m, dtype=np.int32), (count, 1))
    pivots = np.zeros((count, k), np.int32)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(_pivot_magnitude(lu[:, j:, j]), axis=1)
            pivots[:, j] = p
            lu[rows, j], lu[rows, p] = lu[rows, p], lu[rows, j].copy()
            perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
            pivot = lu[:, j, j:j + 1]
            # a zero pivot means a zero column: leave it (LAPACK does the same)
            lu[:, j + 1:, j] = np.where(pivot != 0, lu[:, j + 1:, j] / pivot, lu[:, j + 1:, j])
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
    return [lu.reshape(*batch, m, n), pivots.reshape(*batch, k), perm.reshape(*batch, m)]


def _pivot_magnitude(x):
    """What partial pivoting maximizes: ``|x|``, or ``|Re x| + |Im x|`` for complex x, as
    LAPACK's getrf (i?amax), so complex pivots are LAPACK's and JAX's."""
    return np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)


def _lu_rule(a):
    _check_matrix("lu", a)
    *batch, m, n = a.shape
    return [ShapedArray(a.shape, a.dtype), ShapedArray((*batch, min(m, n)), dtypes.int32),
            ShapedArray((*batch, m), dtypes.int32)]


def _lu_jvp(primals, tangents):
    # dL = L tril(L^-1 P dA U^-1, -1), dU = triu(L^-1 P dA U^-1) U
    (a,), (g,) = primals, tangents
    lu, pivots, perm = lu_p.bind(a)
    if g is None:
        return [lu, pivots, perm], [None, None, None]
    m, n = a.shape[-2:]
    k = min(m, n)
    l, u = unpack_lu(lu)
    if m > k:  # square L: extend with the identity's last columns
        l = _pad_last(l, m - k) + _embedded_eye(m, k, a.dtype)
    if n > k:  # square U
        u = _pad_rows(u, n - k) + _embedded_eye(n, k, a.dtype)
    x = permute_rows(g, perm)
    la = triangular_solve(l, x, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(u, la, left_side=False, lower=False)
    lu_dot = _mm(l, _tril(lau, -1)) + _mm(_triu(lau), u)
    return [lu, pivots, perm], [lu_dot, None, None]


def _pad_last(x, extra):
    from funcgrad.core.prims.structural import pad

    config = [(0, 0, 0)] * x.ndim
    config[-1] = (0, extra, 0)
    return pad(x, np.zeros((), x.dtype), config)


def _pad_rows(x, extra):
    from funcgrad.core.prims.structural import pad

    config = [(0, 0, 0)] * x.ndim
    config[-2] = (0, extra, 0)
    return pad(x, np.zeros((), x.dtype), config)


def _embedded_eye(size, start, dtype):
    """A size x size matrix with ones on the diagonal from position ``start`` on."""
    from funcgrad.numpy._util import asarray

    eye = np.eye(size, dtype=dtype)
    eye[:start, :start] = 0
    return asarray(eye)


_declare(lu_p, _lu_impl, _lu_rule, _lu_jvp)


def lu(a):
    """``(lu, pivots, permutation)`` of the partially pivoted LU factorization of ``a``."""
    return lu_p.bind(a)


def unpack_lu(lu):
    """The unit lower factor (m, k) and the upper factor (k, n) packed in ``lu``."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    from funcgrad.core.prims.structural import slice_

    lead = lu.shape[:-2]
    zeros = (0,) * len(lead)
    l_part = slice_(lu, (*zeros, 0, 0), (*lead, m, k))
    u_part = slice_(lu, (*zeros, 0, 0), (*lead, k, n))
    l = _tril(l_part, -1) + _eye_rect(m, k, lu.dtype)
    return l, _triu(u_part)


def _eye_rect(m, k, dtype):
    from funcgrad.numpy._creation import eye

    return eye(m, k, dtype=dtype)


def permute_rows(x, permutation):
    """``x[..., permutation, :]`` with ``permutation`` batched like x's leading axes."""
    from funcgrad.core.prims.indexing import take_along_axis

    idx = broadcast_in_dim(permutation, x.shape, tuple(range(x.ndim - 1)))
    return take_along_axis(x, idx, x.ndim - 2)


# --- qr: A = Q R, Householder (LAPACK's signs; complex: R's diagonal real, as LAPACK) ------

qr_p = Primitive("qr", multiple_results=True, keeps_weak=False)


def _qr_impl(a, *, full_matrices):
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)]


def _qr_rule(a, *, full_matrices):
    _check_matrix("qr", a)
    *batch, m, n = a.shape
    k = m if full_matrices else min(m, n)
    return [ShapedArray((*batch, m, k), a.dtype), ShapedArray((*batch, k, n), a.dtype)]


def _qr_jvp(primals, tangents, *, full_matrices):
    (a,), (g,) = primals, tangents
    q, r = qr_p.bind(a, full_matrices=full_matrices)
    if g is None:
        return [q, r], [None, None]
    m, n = a.shape[-2:]
    if full_matrices and m > n:
        raise NotImplementedError(f"qr: no derivative of the complete decomposition of a "
                                  f"tall matrix (shape {a.shape}): Q's last {m - n} columns "
                                  "are not determined by A; use full_matrices=False")
    if m >= n:
        return [q, r], list(_qr_tall_jvp(q, r, g))
    # wide: A = [X Y] with X square gives R = [R_X, Q^H Y] (Householder only sees X)
    batch = a.shape[:-2]
    cut = [(0,) * (len(batch) + 2), (*batch, m, m)], [(*(0,) * len(batch), 0, m), a.shape]
    (gx, gy), y = (slice_(g, *c) for c in cut), slice_(a, *cut[1])
    dq, drx = _qr_tall_jvp(q, slice_(r, *cut[0]), gx)
    dry = _mm(_mH(dq), y) + _mm(_mH(q), gy)
    return [q, r], [dq, concatenate((drx, dry), a.ndim - 1)]


def _qr_tall_jvp(q, r, g):
    """(dQ, dR) of the reduced QR of a matrix with m >= n rows (Townsend, "Differentiating
    the QR decomposition", 2018)."""
    n = r.shape[-1]
    dx_rinv = triangular_solve(r, g, left_side=False, lower=False)
    qt_dx_rinv = _mm(_mH(q), dx_rinv)
    lower = _tril(qt_dx_rinv, -1)
    omega = lower - _mH(lower)  # skew-symmetric (complex: skew-Hermitian)
    if dtypes.is_complex(r.dtype):
        # LAPACK's R has a real diagonal: dR's diagonal must stay real too
        omega = omega + _eye(n, r.dtype) * (qt_dx_rinv - _real(qt_dx_rinv))
    return _mm(q, omega - qt_dx_rinv) + dx_rinv, _mm(qt_dx_rinv - omega, r)


_declare(qr_p, _qr_impl, _qr_rule, _qr_jvp)


def qr(a, full_matrices: bool = False):
    """``(q, r)`` of the QR decomposition of ``a`` (reduced unless ``full_matrices``)."""
    return qr_p.bind(a, full_matrices=bool(full_matrices))


# --- svd: A = U diag(s) Vh, s descending -------------------------------------------------------
# Results: [s] or [s, u, vh] (as JAX's primitive); s is real also for complex a, and Vh is
# V's conjugate transpose.

svd_p = Primitive("svd", multiple_results=True, keeps_weak=False)


def _svd_impl(a, *, full_matrices, compute_uv):
    real = dtypes.real_dtype(a.dtype)
    if not compute_uv:
        return [np.linalg.svd(a, compute_uv=False).astype(real, copy=False)]
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    # canonical signs (phases), and full bases completed by a Householder QR of the thin
    # ones: the convention the compiled svd follows (see _svd_lowered), so both give equal
    # results; U's column j and V's (Vh's row j conjugated) share one phase
    signs = _canonical_signs_numpy(u, -2)
    u, vh = u * signs, vh * np.conj(np.swapaxes(signs, -1, -2))
    if full_matrices:
        u = _complete_basis(u)
        vh = np.conj(np.swapaxes(_complete_basis(np.conj(np.swapaxes(vh, -1, -2))), -1, -2))
    return [s.astype(real, copy=False), u.astype(a.dtype, copy=False),
            vh.astype(a.dtype, copy=False)]


def _complete_basis(u):
    """``u``'s orthonormal columns followed by the trailing columns of its QR's full Q."""
    m, k = u.shape[-2:]
    if m == k:
        return u
    q = np.linalg.qr(u, mode="complete")[0]
    return np.concatenate([u, q[..., :, k:]], axis=-1)


def _svd_rule(a, *, full_matrices, compute_uv):
    _check_matrix("svd", a)
    *batch, m, n = a.shape
    k = min(m, n)
    s = ShapedArray((*batch, k), dtypes.real_dtype(a.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray((*batch, m, ku), a.dtype), ShapedArray((*batch, kv, n), a.dtype)]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (a,), (g,) = primals, tangents
    m, n = a.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(f"svd: derivative of full_matrices=True needs a square "
                                  f"matrix, got shape {a.shape}; use full_matrices=False")
    s, u, vh = svd_p.bind(a, full_matrices=False, compute_uv=True)
    outs = [s, u, vh] if compute_uv else [s]
    if g is None:
        return outs, [None] * len(outs)
    complex_input = dtypes.is_complex(a.dtype)
    v = _mH(vh)
    ds_mat = _mm(_mm(_mH(u), g), v)
    ds = _diagonal(_real(ds_mat))
    if not compute_uv:
        return outs, [ds]
    k = s.shape[-1]
    eye = _eye(k, s.dtype)
    s_row = s[..., None, :]
    s_col = s[..., :, None]
    # F_ij = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it
    f = 1 / ((s_row + s_col) * (s_row - s_col) + eye) - eye
    dss = ds_mat * s_row
    sds = s_col * ds_mat
    du = _mm(u, f * (dss + _mH(dss)))
    dv = _mm(v, f * (sds + _mH(sds)))
    if complex_input:
        # Im(U^H dA V)_jj / s_j: the part of U's and V's phase change the product sees
        # (put on U, as JAX), then the common drift keeping the phases canonical
        where, nonzero = _fnp().where, s_row > 0
        s_inv = where(nonzero, 1 / where(nonzero, s_row, 1), 0)
        du = du + _mm(u, (ds_mat - _mH(ds_mat)) * (0.5 * eye * s_inv))
    if m > n:
        dav = _mm(g, v)
        du = du + (dav - _mm(u, _mm(_mH(u), dav))) / s_row
    if n > m:
        dau = _mm(_mH(g), u)
        dv = dv + (dau - _mm(v, _mm(vh, dau))) / s_row
    if complex_input:
        drift = _canonical_phase_drift(u, du)
        du, dv = du + u * drift, dv + v * drift
    return outs, [ds, du, _mH(dv)]


_declare(svd_p, _nan_where_lapack_fails(_svd_impl), _svd_rule, _svd_jvp)


def svd(a, full_matrices: bool = False, compute_uv: bool = True):
    """``[s]`` or ``[s, u, vt]`` of the singular value decomposition of ``a``."""
    return svd_p.bind(a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))


# --- eigh: symmetric (complex: Hermitian) eigendecomposition (reads the lower triangle) -----
# Results: [w, v] with eigenvalues w ascending (real, also for complex a) and eigenvectors in
# v's columns, with the canonical signs or phases of _canonical_signs.

eigh_p = Primitive("eigh", multiple_results=True, keeps_weak=False)


def _eigh_impl(a):
    w, v = np.linalg.eigh(a, UPLO="L")
    v = v * _canonical_signs_numpy(v, -2)  # LAPACK's signs are arbitrary: see _eigh_lowered
    return [w.astype(dtypes.real_dtype(a.dtype), copy=False), v.astype(a.dtype, copy=False)]


def _eigh_rule(a):
    _check_matrix("eigh", a, square=True)
    return [ShapedArray(a.shape[:-1], dtypes.real_dtype(a.dtype)), ShapedArray(a.shape, a.dtype)]


def _eigh_jvp(primals, tangents):
    # dw = diag(V^H dA V), dV = V (F * V^H dA V) with F_ij = 1 / (w_j - w_i) off the diagonal
    # (complex: plus the phase drift that keeps V's phases canonical)
    (a,), (g,) = primals, tangents
    w, v = eigh_p.bind(a)
    if g is None:
        return [w, v], [None, None]
    vh_g_v = _mm(_mm(_mH(v), _hermitian_from_lower(g)), v)
    dv = _mm(v, _inverse_gaps(w) * vh_g_v)
    if dtypes.is_complex(a.dtype):
        dv = dv + v * _canonical_phase_drift(v, dv)
    return [w, v], [_diagonal(_real(vh_g_v)), dv]


def _inverse_gaps(w):
    """``F_ij = 1 / (w_j - w_i)`` off the diagonal, 0 on it: how eigenvector derivatives
    weigh the eigenvalue gaps (infinite for repeated eigenvalues)."""
    eye = _eye(w.shape[-1], w.dtype)
    return 1 / (eye + w[..., None, :] - w[..., :, None]) - eye


_declare(eigh_p, _nan_where_lapack_fails(_eigh_impl), _eigh_rule, _eigh_jvp)


def eigh(a):
    """``[w, v]``: ascending eigenvalues and eigenvectors of symmetric (complex: Hermitian)
    ``a``, read from its lower triangle."""
    return eigh_p.bind(a)


# --- eig: A V = V diag(w), general square A; complex results, in LAPACK's order -----------

eig_p = Primitive("eig", multiple_results=True, keeps_weak=False)


def _eig_impl(a):
    complex_dtype = dtypes.complex_dtype(a.dtype)
    w, v = np.linalg.eig(a)
    return [w.astype(complex_dtype, copy=False), v.astype(complex_dtype, copy=False)]


def _eig_rule(a):
    _check_matrix("eig", a, square=True)
    complex_dtype = dtypes.complex_dtype(a.dtype)
    return [ShapedArray(a.shape[:-1], complex_dtype), ShapedArray(a.shape, complex_dtype)]


def _eig_jvp(primals, tangents):
    # with M = V^-1 dA V: dw = diag(M), dV = V (F * M), F_ij = 1 / (w_j - w_i) off the
    # diagonal; then the part of dV along each column that would change its unit length
    # is removed (the phase of each eigenvector stays free, as in JAX)
    (a,), (g,) = primals, tangents
    w, v = eig_p.bind(a)
    if g is None:
        return [w, v], [None, None]
    from funcgrad.core.prims.elementwise import convert_element_type

    m = _mm(_fnp().linalg.solve(v, convert_element_type(g, w.dtype)), v)
    dv = _mm(v, _inverse_gaps(w) * m)
    dv = dv - v * _real(_diagonal(_mm(_mH(v), dv))).astype(v.dtype)[..., None, :]
    return [w, v], [_diagonal(m), dv]


_declare(eig_p, _nan_where_lapack_fails(_eig_impl), _eig_rule, _eig_jvp)


def eig(a):
    """``[w, v]``: eigenvalues and right eigenvectors (unit columns) of general square
    ``a``, both complex, in LAPACK's order (geev)."""
    return eig_p.bind(a)


def _eig_not_compiled(ctx, args, in_avals, out_avals):
    from funcgrad.lowering.mlir import LoweringError

    raise LoweringError(f"eig has no {ctx.platform} lowering: it runs on the CPU only, "
                        "where LAPACK computes it (as in JAX); move the operand to the CPU "
                        "(fg.device_put(x, fg.device('cpu'))) or use eigh for a symmetric matrix")


# --- MLIR lowering ------------------------------------------------------------------------------
# On the CPU every decomposition is a host call of its implementation above (LAPACK, as
# XLA's CPU backend does; funcgrad.lowering.host_calls).  For GPUs, and on the CPU under
# ``host_calls.without_host_calls()``, each lowers as a composition of primitives that
# do lower: one-hot masks select a row or column (``where`` + ``sum``, exact), and loops
# run as fori_loop/scan/while_loop.  Each follows the textbook algorithm and LAPACK's
# conventions, so jitted results equal the eager (LAPACK) ones up to rounding.  Complex
# inputs take the same algorithms with complex rotations and reflectors; where cheap, their
# arithmetic is done on the real and imaginary parts, since IREE compiles complex products,
# divisions and magnitudes to long expansions (a complex eigh or svd compiles about twice
# as long as a real one).


def _fnp():
    import funcgrad.numpy as fnp

    return fnp


def _divide_by_real(x, r):
    """``x / r`` for real ``r``: complex x has its parts divided, as a complex division
    compiles to Smith's algorithm (some thirty operations, a slow IREE compile)."""
    if not dtypes.is_complex(x.dtype):
        return x / r
    from funcgrad.core.prims.elementwise import complex_

    return complex_(_real(x) / r, _imag(x) / r)


def _divide(x, y):
    """``x / y``; complex: ``x conj(y) / |y|^2``, cheaper to compile than Smith's algorithm
    but, like the real ``_householder_qr``'s squares, overflowing for |y| near sqrt(max)."""
    if not dtypes.is_complex(y.dtype):
        return x / y
    return _divide_by_real(x * _conj(y), _abs2(y))


def _take(x, i, axis):
    """``x``'s entries at the (traced) index ``i`` along ``axis``, that axis dropped: a
    row (axis -2) or column (axis -1) of each matrix, an entry of each vector (-1)."""
    from funcgrad.core.prims.indexing import dynamic_slice

    axis %= x.ndim
    starts = [0] * x.ndim
    starts[axis] = i
    sizes = list(x.shape)
    sizes[axis] = 1
    return dynamic_slice(x, starts, sizes).reshape(x.shape[:axis] + x.shape[axis + 1:])


def _put(x, i, axis, value):
    """``x`` with ``value`` (shaped like ``_take(x, i, axis)``) written at index ``i``."""
    from funcgrad.core.prims.indexing import dynamic_update_slice

    axis %= x.ndim
    starts = [0] * x.ndim
    starts[axis] = i
    value = value.astype(x.dtype).reshape(x.shape[:axis] + (1,) + x.shape[axis + 1:])
    return dynamic_update_slice(x, value, starts)


def _matvec(m, v):
    """``m @ v`` for stacks of matrices and vectors."""
    return _mm(m, v[..., :, None])[..., 0]


def _cholesky_lowered(a):
    """Column by column: L[:, j] = (A[:, j] - L L[j, :]^H) / sqrt(that at j), below j."""
    from funcgrad.transforms.control_flow import fori_loop

    fnp = _fnp()
    n = a.shape[-1]
    rows = fnp.arange(n)
    complex_input = dtypes.is_complex(a.dtype)

    def column(j, L):
        v = _take(a, j, -1) - _matvec(L, _conj(_take(L, j, -2)))
        # the diagonal of a Hermitian matrix is real: its imaginary part is not read
        pivot = fnp.sqrt(_real(_take(v, j, -1)))
        col = fnp.where(rows >= j, _divide_by_real(v, pivot[..., None]), 0)
        if complex_input:
            col = fnp.where(rows == j, pivot[..., None], col)
        return _put(L, j, -1, col)

    L = fori_loop(0, n, column, fnp.zeros_like(a))
    # not positive definite: the whole factor is NaN, as the eager one
    ok = fnp.all(fnp.isfinite(L), axis=(-2, -1), keepdims=True)
    return fnp.where(ok, L, np.nan)


def _triangular_solve_lowered(a, b, *, left_side, lower, transpose_a, unit_diagonal):
    """Forward (lower) or back (upper) substitution, one row of X per step."""
    from funcgrad.transforms.control_flow import fori_loop

    fnp = _fnp()
    n = a.shape[-1]
    t = _tril(a) if lower else _triu(a)
    if unit_diagonal:
        t = fnp.where(fnp.eye(n, dtype=bool), 1, t)
    if transpose_a:
        t, lower = _mT(t), not lower
    if not left_side:  # X T = B  <=>  T^T X^T = B^T
        t, b, lower = _mT(t), _mT(b), not lower

    def substitute(step, x):
        i = step if lower else n - 1 - step
        t_row = _take(t, i, -2)
        known = _mm(t_row[..., None, :], x)[..., 0, :]  # unknown rows of x are still 0
        x_i = (_take(b, i, -2) - known) / _take(t_row, i, -1)[..., None]
        return _put(x, i, -2, x_i)

    x = fori_loop(0, n, substitute, fnp.zeros_like(b))
    return x if left_side else _mT(x)


def _lu_lowered(a):
    """Right-looking LU with partial pivoting, as ``_lu_impl`` (LAPACK's getrf)."""
    from funcgrad.transforms.control_flow import fori_loop

    fnp = _fnp()
    *batch, m, n = a.shape
    k = min(m, n)
    rows, cols = fnp.arange(m), fnp.arange(n)
    complex_input = dtypes.is_complex(a.dtype)

    def swap(x, j, p, axis):
        """Entries j and p of ``x`` along ``axis`` exchanged (p traced, per matrix)."""
        xj, xp = _take(x, j, axis), _take(x, p, axis)
        return _put(_put(x, j, axis, xp), p, axis, xj)

    def eliminate(j, carry):
        lu, pivots, perm = carry
        col = _take(lu, j, -1)
        magnitude = fnp.abs(col) if not complex_input else \
            fnp.abs(fnp.real(col)) + fnp.abs(fnp.imag(col))  # as _pivot_magnitude
        p = fnp.argmax(fnp.where(rows >= j, magnitude, -1), axis=-1).astype(np.int32)
        if batch:  # a pivot row per matrix: swapped by masks
            at_j, at_p = rows == j, rows == p[..., None]
            row_j, row_p = _take(lu, j, -2), fnp.sum(fnp.where(at_p[..., None], lu, 0), -2)
            lu = fnp.where(at_j[..., None], row_p[..., None, :],
                           fnp.where(at_p[..., None], row_j[..., None, :], lu))
            perm_j, perm_p = _take(perm, j, -1), fnp.sum(fnp.where(at_p, perm, 0), -1)
            perm = fnp.where(at_j, perm_p[..., None], fnp.where(at_p, perm_j[..., None], perm))
        else:
            lu, perm = swap(lu, j, p, -2), swap(perm, j, p, -1)
        pivots = _put(pivots, j, -1, p)
        col = _take(lu, j, -1)
        pivot = _take(col, j, -1)[..., None]
        scale = (rows > j) & (pivot != 0)
        l_col = fnp.where(scale, col / fnp.where(scale, pivot, 1), col)
        lu = _put(lu, j, -1, l_col)
        u_row = _take(lu, j, -2)
        below_right = (rows > j)[:, None] & (cols > j)
        lu = fnp.where(below_right, lu - l_col[..., :, None] * u_row[..., None, :], lu)
        return lu, pivots, perm

    init = (a, fnp.zeros((*batch, k), np.int32),
            fnp.broadcast_to(fnp.arange(m, dtype=np.int32), (*batch, m)))
    return list(fori_loop(0, k, eliminate, init))


def _householder_qr(a):
    """Householder QR with LAPACK's conventions (geqrf + orgqr/ungqr): ``(Q (m, m), R (m, n))``.

    Reflector j maps column j below the diagonal to ``beta = -sign(Re alpha) * norm``, real
    also for complex columns; a column already zero below the diagonal with a real alpha
    gets no reflection (tau = 0), as in dlarfg/zlarfg."""
    from funcgrad.transforms.control_flow import fori_loop

    fnp = _fnp()
    *batch, m, n = a.shape
    rows = fnp.arange(m)
    complex_input = dtypes.is_complex(a.dtype)

    def reflect(j, carry):
        r, q = carry
        col = _take(r, j, -1)
        alpha = _take(col, j, -1)
        below = fnp.where(rows > j, col, 0)
        tail = fnp.sum(_abs2(below), axis=-1)
        norm = fnp.sqrt(_abs2(alpha) + tail)
        beta = fnp.where(_real(alpha) >= 0, -norm, norm)
        active = (tail > 0) | (_imag(alpha) != 0) if complex_input else tail > 0
        v = fnp.where(rows == j, 1, _divide(below, fnp.where(active, alpha - beta, 1)[..., None]))
        tau = fnp.where(active, _divide_by_real(beta - alpha, fnp.where(active, beta, 1)), 0)
        # H = I - tau v v^H: R takes H^H (conj(tau) v v^H), Q accumulates H
        tv = _conj(tau)[..., None] * v
        r = r - tv[..., :, None] * _mm(_conj(v)[..., None, :], r)  # H^H R
        q = q - _mm(q, v[..., :, None]) * _conj(tv)[..., None, :]  # Q H
        # column j is now exactly (.., beta, 0, ...): write it so R is exactly triangular
        top = fnp.where(active, beta, alpha)[..., None]
        exact = fnp.where(rows == j, top, fnp.where(rows > j, 0, col))
        return _put(r, j, -1, exact), q

    q0 = fnp.broadcast_to(fnp.eye(m, dtype=a.dtype), (*batch, m, m))
    r, q = fori_loop(0, min(m, n), reflect, (a, q0))
    return q, _triu(r)


def _qr_lowered(a, *, full_matrices):
    q, r = _householder_qr(a)
    if not full_matrices:
        k = min(a.shape[-2:])
        q, r = q[..., :, :k], r[..., :k, :]
    return [q, r]


def _round_robin(n):
    """Parallel Jacobi ordering: ``(rounds, n, n // 2)`` one-hot tables of the p and q
    indices of the disjoint pairs each round rotates (circle method; with n odd one
    index sits out each round)."""
    players = n + n % 2
    rounds = players - 1
    mp = np.zeros((rounds, n, n // 2))
    mq = np.zeros((rounds, n, n // 2))
    for r in range(rounds):
        others = list(range(1, players))
        order = [0] + others[r:] + others[:r]
        pairs = [tuple(sorted((order[i], order[players - 1 - i]))) for i in range(players // 2)]
        pairs = [pq for pq in pairs if pq[1] < n]
        for k, (p, q) in enumerate(pairs):
            mp[r, p, k] = 1
            mq[r, q, k] = 1
    return mp, mq


def _jacobi_rotation(app, aqq, apq):
    """``(c, s)`` such that ``J = [[c, s], [-conj(s), c]]`` diagonalizes the symmetric
    (complex: Hermitian) ``[[app, apq], [conj(apq), aqq]]`` as ``J^H A J`` (Golub & Van Loan,
    sym.schur2).  A complex ``apq = |apq| e`` takes the real rotation of ``|apq|`` conjugated
    by ``diag(1, conj(e))``: ``c`` stays real and ``s`` gets the phase ``e``."""
    fnp = _fnp()
    if dtypes.is_complex(apq.dtype):
        # not fnp.abs (compiled as a careful hypot): the real rotation squares entries too
        magnitude = fnp.sqrt(_abs2(apq))
        phase = _divide_by_real(apq, fnp.where(magnitude > 0, magnitude, 1))
        c, s = _jacobi_rotation(_real(app), _real(aqq), magnitude)
        return c, s * phase
    nonzero = apq != 0
    tau = (aqq - app) / (2 * fnp.where(nonzero, apq, 1))
    t = fnp.where(tau >= 0, 1, -1) / (fnp.abs(tau) + fnp.sqrt(1 + tau * tau))
    t = fnp.where(nonzero, t, 0)
    c = 1 / fnp.sqrt(1 + t * t)
    return c, t * c


def _rotation_matrix(c, s, mp, mq):
    """J with J[p,p] = J[q,q] = c, J[p,q] = s, J[q,p] = -conj(s) for every pair, else
    identity (c and the one-hot tables mp, mq are real)."""
    fnp = _fnp()
    n = mp.shape[0]
    if dtypes.is_complex(s.dtype):  # from real parts: complex arithmetic compiles slowly
        from funcgrad.core.prims.elementwise import complex_

        s_imag = _imag(s)[..., None, :]
        imag = _mm(mp * s_imag, _mT(mq)) + _mm(mq * s_imag, _mT(mp))
        return complex_(_rotation_matrix(c, _real(s), mp, mq), imag)
    diagonal = 1 + _mm(mp, (c - 1)[..., :, None])[..., 0] + _mm(mq, (c - 1)[..., :, None])[..., 0]
    off = _mm(mp * s[..., None, :], _mT(mq)) - _mm(mq * _conj(s)[..., None, :], _mT(mp))
    return fnp.eye(n, dtype=c.dtype) * diagonal[..., None, :] + off


def _jacobi_sweeps(x, v, pair_entries, apply, converged, max_sweeps=30):
    """Run sweeps of parallel Jacobi rounds on ``(x, v)`` until ``converged(x)``."""
    from funcgrad.core.prims.elementwise import convert_element_type
    from funcgrad.numpy._util import asarray
    from funcgrad.transforms.control_flow import scan, while_loop

    n = v.shape[-1]
    tables = _round_robin(n)
    mp_all, mq_all = (asarray(t.astype(dtypes.real_dtype(x.dtype))) for t in tables)

    def one_round(carry, masks):
        x, v = carry
        mp, mq = masks
        c, s = _jacobi_rotation(*pair_entries(x, mp, mq))
        j = _rotation_matrix(c, s, mp, mq)
        return (apply(x, j), _mm(v, j)), None

    def sweep(carry):
        count, x, v = carry
        (x, v), _ = scan(one_round, (x, v), (mp_all, mq_all))
        return count + 1, x, v

    def go_on(carry):
        count, x, _ = carry
        return (count < max_sweeps) & ~converged(x)

    zero = convert_element_type(asarray(np.int32(0)), np.int32)
    return while_loop(go_on, sweep, (zero, x, v))[1:]


def _canonical_weights(v, axis):
    """The weights ``exp(-k/n)`` of the vectors' scores, shaped to broadcast along ``axis``."""
    n = v.shape[axis]
    shape = [1] * v.ndim
    shape[axis] = n
    return np.exp(-np.arange(n) / max(n, 1)).astype(v.dtype).reshape(shape)


def _canonical_signs(v, axis):
    """+1/-1 per vector along ``axis`` making its score ``sum_k v_k exp(-k/n)`` non-negative
    or, for complex v, the phase ``conj(score) / |score|`` making it real and non-negative
    (1 for a zero score): the convention shared by the eager and compiled eigh/svd (LAPACK's
    signs and phases are arbitrary)."""
    fnp = _fnp()
    score = fnp.sum(v * _canonical_weights(v, axis), axis=axis, keepdims=True)
    if not dtypes.is_complex(v.dtype):
        return fnp.where(score < 0, -1, 1).astype(v.dtype)
    magnitude = fnp.abs(score)
    nonzero = magnitude > 0
    return fnp.where(nonzero, _divide_by_real(_conj(score), fnp.where(nonzero, magnitude, 1)), 1)


def _canonical_signs_numpy(v, axis):
    score = np.sum(v * _canonical_weights(v, axis), axis=axis, keepdims=True)
    if not np.iscomplexobj(v):
        return np.where(score < 0, -1, 1).astype(v.dtype)
    magnitude = np.abs(score)
    nonzero = magnitude > 0
    return np.where(nonzero, np.conj(score) / np.where(nonzero, magnitude, 1), 1).astype(v.dtype)


def _canonical_phase_drift(v, dv):
    """``i alpha`` per column of complex ``v`` (canonically phased, see _canonical_signs)
    such that ``dv + i alpha v`` keeps the columns' scores real: ``dv`` is a tangent of the
    columns in any phase gauge, and ``alpha = -Im(score(dv)) / score(v)``."""
    fnp = _fnp()
    weights = _canonical_weights(v, -2)
    score = _real(fnp.sum(v * weights, axis=-2, keepdims=True))
    drift = _imag(fnp.sum(dv * weights, axis=-2, keepdims=True))
    return (-drift / fnp.where(score > 0, score, 1)) * 1j


def _eigh_lowered(a):
    """Cyclic two-sided Jacobi (parallel ordering), then ascending order, canonical signs.

    Complex Hermitian ``a`` takes complex rotations (see ``_jacobi_rotation``), not the real
    symmetric ``[[Re, -Im], [Im, Re]]`` of twice the size: that one's eigenvalues come in
    pairs, and for a repeated eigenvalue of ``a`` picking one vector per pair can pick ``u``
    and ``i u``, losing a dimension."""
    fnp = _fnp()
    n = a.shape[-1]
    complex_input = dtypes.is_complex(a.dtype)
    x = _hermitian_from_lower(a)
    v = fnp.broadcast_to(fnp.eye(n, dtype=a.dtype), a.shape)
    if n >= 2:
        eps = float(np.finfo(a.dtype).eps)
        off_mask = ~fnp.eye(n, dtype=bool)

        def pair_entries(x, mp, mq):
            diagonal = _diagonal(_real(x))
            app = _mm(diagonal[..., None, :], mp)[..., 0, :]
            aqq = _mm(diagonal[..., None, :], mq)[..., 0, :]
            columns = _mm(x, mq)
            # complex: a select, not a complex product with the real table
            rows = fnp.where(mp != 0, columns, 0) if complex_input else columns * mp
            return app, aqq, fnp.sum(rows, axis=-2)

        def converged(x):
            off = fnp.sum(fnp.where(off_mask, _abs2(x), 0), axis=(-2, -1))
            total = fnp.sum(_abs2(x), axis=(-2, -1))
            return fnp.all(off <= (eps * eps) * total)

        x, v = _jacobi_sweeps(x, v, pair_entries, lambda x, j: _mm(_mm(_mH(j), x), j),
                              converged)
    w = _diagonal(_real(x))
    order = fnp.argsort(w, axis=-1)
    w = fnp.take_along_axis(w, order, axis=-1)
    v = fnp.take_along_axis(v, fnp.broadcast_to(order[..., None, :], v.shape), axis=-1)
    return [w, v * _canonical_signs(v, -2)]


def _svd_lowered(a, *, full_matrices, compute_uv):
    """One-sided Jacobi (see ``_svd_tall``) on the tall orientation, then the canonical
    signs of ``_svd_impl`` and, for ``full_matrices``, the completed bases."""
    fnp = _fnp()
    m, n = a.shape[-2:]
    if m >= n:
        s, u, v, extra_u, extra_v = *_svd_tall(a, compute_uv, phase_from_v=False), None
    else:  # a^H = V S U^H
        s, v, u, extra_v, extra_u = *_svd_tall(_mH(a), compute_uv, phase_from_v=True), None
    if not compute_uv:
        return [s]
    if not dtypes.is_complex(a.dtype):  # complex: phased in _svd_tall already
        signs = _canonical_signs(u, -2)
        u, v = u * signs, v * signs
    if full_matrices:
        u = u if extra_u is None else fnp.concatenate([u, extra_u], axis=-1)
        v = v if extra_v is None else fnp.concatenate([v, extra_v], axis=-1)
    return [s, u, _mH(v)]


def _svd_tall(a, compute_uv, phase_from_v):
    """``(s, u, v, completion)`` of a tall ``a`` (m >= n) by one-sided Jacobi (Hestenes):
    rotate column pairs (complex rotations for complex a) until orthogonal; s = column
    norms, descending; u from a Householder QR of the rotated columns, whose trailing Q
    columns complete u's basis.  Complex columns get their canonical phases (those of u,
    or of v when ``phase_from_v``: the left vectors of the untransposed matrix) before the
    QR, as a reflector changes with its column's phase (a real one not with its sign)."""
    fnp = _fnp()
    m, n = a.shape[-2:]
    complex_input = dtypes.is_complex(a.dtype)
    v = fnp.broadcast_to(fnp.eye(n, dtype=a.dtype), (*a.shape[:-2], n, n))
    x = a
    if n >= 2:
        tol = float(np.finfo(a.dtype).eps) * n
        off_mask = ~fnp.eye(n, dtype=bool)

        def pair_entries(x, mp, mq):  # the 2 x 2 blocks of the Gram matrix x^H x
            norms = fnp.sum(_abs2(x), axis=-2)[..., None, :]
            xq = _mm(x, mq)
            return (_mm(norms, mp)[..., 0, :], _mm(norms, mq)[..., 0, :],
                    fnp.sum(_conj(_mm(x, mp)) * xq, axis=-2))

        def converged(x):
            gram = _mm(_mH(x), x)
            if complex_input:  # compare squares: |gram| compiles as a careful hypot
                d2 = _diagonal(_real(gram))
                scale2 = d2[..., :, None] * d2[..., None, :]
                cos2 = _abs2(gram) / fnp.where(scale2 > 0, scale2, 1)
                return fnp.all(fnp.where(off_mask, cos2, 0) <= tol * tol)
            d = fnp.sqrt(_diagonal(gram))
            scale = d[..., :, None] * d[..., None, :]
            cos = fnp.abs(gram) / fnp.where(scale > 0, scale, 1)
            return fnp.all(fnp.where(off_mask, cos, 0) <= tol)

        x, v = _jacobi_sweeps(x, v, pair_entries, _mm, converged)
    s = fnp.sqrt(fnp.sum(_abs2(x), axis=-2))
    order = fnp.argsort(-s, axis=-1)
    s = fnp.take_along_axis(s, order, axis=-1)
    if not compute_uv:
        return s, None, None, None
    x = fnp.take_along_axis(x, fnp.broadcast_to(order[..., None, :], x.shape), axis=-1)
    v = fnp.take_along_axis(v, fnp.broadcast_to(order[..., None, :], v.shape), axis=-1)
    if complex_input:
        phases = _canonical_signs(v if phase_from_v else x, -2)
        x, v = x * phases, v * phases
    q, r = _householder_qr(x)  # R is diagonal, with real entries +-s (LAPACK's convention)
    u = q[..., :, :n]
    u = u * fnp.where(_diagonal(_real(r)) < 0, -1, 1).astype(a.dtype)[..., None, :]
    return s, u, v, (q[..., :, n:] if m > n else None)


def _behind_barrier(rule):
    """``rule`` with its results behind a fusion barrier: IREE 3.13 miscompiled a batched
    triangular solve fused with the products and scatter-add after it (the first row of
    jit(hessian) through cholesky was wrong); its loop materializes the result anyway."""
    from funcgrad.lowering import rules

    def lower(ctx, args, in_avals, out_avals, **params):
        outs = rule(ctx, args, in_avals, out_avals, **params)
        return rules.fusion_barrier(ctx, list(outs), [a.strip_weak() for a in out_avals])

    return lower


def _declare_lowerings():
    """On the CPU each decomposition is a call of its eager implementation (LAPACK, as
    XLA's CPU backend does; funcgrad.lowering.host_calls); on GPUs, a compiled column
    algorithm written with funcgrad primitives."""
    from funcgrad.lowering import rules
    from funcgrad.lowering.host_calls import on_host

    cholesky_p.lower = on_host(cholesky_p, rules.via(_cholesky_lowered))
    triangular_solve_p.lower = on_host(
        triangular_solve_p, _behind_barrier(rules.via(_triangular_solve_lowered)))
    lu_p.lower = on_host(lu_p, rules.via(_lu_lowered))
    qr_p.lower = on_host(qr_p, rules.via(_qr_lowered))
    eigh_p.lower = on_host(eigh_p, rules.via(_eigh_lowered))
    svd_p.lower = on_host(svd_p, rules.via(_svd_lowered))
    eig_p.lower = on_host(eig_p, _eig_not_compiled)


_declare_lowerings()
