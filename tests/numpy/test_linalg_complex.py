"""funcgrad.numpy.linalg on complex64/complex128 matrices: values against NumPy, jit against
eager, vmap against a Python loop, derivatives against finite differences (JAX's
convention: transposes are plain, not conjugated)."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.prims import linalg as lax_linalg
from funcgrad.test_util import check_grads

LA = fnp.linalg
DTYPES = [np.complex128, np.complex64]
REAL = {np.complex128: np.float64, np.complex64: np.float32}
TOL = {np.complex128: 1e-10, np.complex64: 3e-4}


def _rng(seed=0):
    return np.random.default_rng(seed)


def _complex(shape, dtype=np.complex128, seed=0):
    rng = _rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _general(shape, dtype=np.complex128, seed=0):
    """Well-conditioned square matrices (diagonally shifted)."""
    n = shape[-1]
    return (_complex(shape, seed=seed) + 2 * n ** 0.5 * np.eye(n)).astype(dtype)


def _hpd(shape, dtype=np.complex128, seed=0):
    """Hermitian positive definite matrices."""
    a = _complex(shape, seed=seed)
    return (a @ _mH(a) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _mH(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _close(got, want, dtype=np.complex128, scale=1.0):
    tol = TOL[dtype] * scale
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _phase_overlaps(v, v_np):
    """|v_j^H v_np_j| per column: 1 when the columns agree up to a phase."""
    return np.abs(np.sum(np.conj(np.asarray(v)) * v_np, axis=-2))


def _canonical_score(v):
    """The score that eigh and svd make real and positive for each column."""
    n = v.shape[-2]
    return np.sum(np.asarray(v) * np.exp(-np.arange(n) / n)[:, None], axis=-2)


# --- the LU family: inv, solve, det, slogdet, tensorinv, tensorsolve, matrix_power ---------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_inv_solve_det_slogdet(shape, dtype):
    a = _general(shape, dtype)
    b = _complex(shape[:-1] + (2,), dtype, seed=1)
    x = fg.tensor(a)
    _close(LA.inv(x), np.linalg.inv(a), dtype)
    _close(LA.solve(x, b), np.linalg.solve(a, b), dtype)
    if len(shape) == 2:  # a 1-d b
        _close(LA.solve(x, b[:, 0]), np.linalg.solve(a, b[:, 0]), dtype)
    det = np.linalg.det(a)
    _close(LA.det(x), det, dtype, scale=10 * np.abs(det).max())
    sign, logdet = LA.slogdet(x)
    want = np.linalg.slogdet(a)
    _close(sign, want.sign, dtype, scale=10)
    _close(logdet, want.logabsdet, dtype, scale=10)
    assert LA.inv(x).dtype == dtype and LA.det(x).dtype == dtype
    assert sign.dtype == dtype and logdet.dtype == REAL[dtype]


def test_slogdet_singular_and_real_inputs_mixed_with_complex():
    singular = np.array([[1 + 1j, 2 - 1j], [1 + 1j, 2 - 1j]])
    sign, logdet = LA.slogdet(singular)
    assert complex(sign) == 0 and float(logdet) == -np.inf
    assert complex(LA.det(singular)) == 0
    # a real a with a complex b promotes to complex, as NumPy
    a, b = _general((3, 3)).real, _complex((3,), seed=1)
    got = LA.solve(a, b)
    assert got.dtype == np.complex128
    _close(got, np.linalg.solve(a, b))


# LAPACK (and JAX) pivot on |Re| + |Im|: here row 1 (|2+2j| < 3 but 2 + 2 > 3)
_PIVOTING = np.array([[3, 1, 0], [2 + 2j, 1j, 1], [0.5, 1, 2 - 1j]], np.complex128)


def test_lu_pivots_on_re_plus_im_as_lapack():
    lu, pivots, perm = lax_linalg.lu(fg.tensor(_PIVOTING))
    assert pivots.tolist() == [1, 1, 2] and pivots.dtype == np.int32  # scipy's lu_factor
    assert perm.tolist() == [1, 0, 2]


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (4, 3), (3, 5)])
def test_lu(shape):
    a = _complex(shape)
    lu, pivots, perm = lax_linalg.lu(fg.tensor(a))
    assert lu.dtype == np.complex128 and pivots.shape == shape[:-2] + (min(shape[-2:]),)
    l, u = lax_linalg.unpack_lu(lu)
    permuted = np.take_along_axis(a, np.asarray(perm)[..., None], axis=-2)
    _close(np.asarray(l) @ np.asarray(u), permuted)
    # pivots maximize |Re| + |Im|, which bounds every multiplier's modulus by sqrt(2)
    assert np.all(np.abs(np.tril(np.asarray(lu), -1)) <= np.sqrt(2) + 1e-12)
    check_grads(lambda x: lax_linalg.lu(x)[0], (fg.tensor(a),), order=1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorinv_tensorsolve_matrix_power(dtype):
    a = _general((6, 6), dtype).reshape(6, 2, 3)
    _close(LA.tensorinv(a, ind=1), np.linalg.tensorinv(a, ind=1), dtype)
    b = _complex((6,), dtype, seed=1)
    _close(LA.tensorsolve(a, b), np.linalg.tensorsolve(a, b), dtype)
    m = _general((2, 3, 3), dtype) / 3
    for n in (-2, -1, 3):
        got = LA.matrix_power(m, n)
        assert got.dtype == dtype
        _close(got, np.linalg.matrix_power(m, n), dtype, scale=100)


def test_lu_family_jit_matches_eager():
    # one program (each jit compile costs seconds): the lowered lu and triangular solves,
    # and a gradient through lu's derivative (its row permutation and diagonal transpose
    # without the complex scatter-add IREE 3.13 crashes on)
    a = _general((2, 3, 3))
    b = _complex((2, 3, 2), seed=1)
    logdet_grad = fg.grad(lambda x: fnp.sum(LA.slogdet(x).logabsdet))

    def f(a, b, p):
        sign, logdet = LA.slogdet(a)
        return (LA.inv(a), LA.solve(a, b), LA.det(a), sign, logdet, logdet_grad(a),
                *lax_linalg.lu(p))

    got = fg.jit(f)(a, b, _PIVOTING)
    want = f(fg.tensor(a), fg.tensor(b), fg.tensor(_PIVOTING))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        _close(g, np.asarray(w), scale=10)
    _close(got[0], np.linalg.inv(a))
    _close(got[5], np.swapaxes(np.linalg.inv(a), -1, -2))
    assert got[-2].tolist()[0] == 1  # pivots as LAPACK


def _slice(args, in_axes, i):
    return tuple(x if ax is None else np.take(x, i, axis=ax)
                 for x, ax in zip(args, in_axes, strict=True))


VMAP_CASES = {
    "inv": (LA.inv, (_general((3, 3, 3)),), (0,)),
    "solve": (LA.solve, (_general((3, 3, 3)), _complex((3, 3, 2), seed=1)), (0, 0)),
    "solve_unbatched_b": (LA.solve, (_general((3, 3, 3)), _complex((3, 2), seed=1)), (0, None)),
    "det_axis1": (LA.det, (np.moveaxis(_general((4, 3, 3)), 0, 1),), (1,)),
    "slogdet": (lambda a: tuple(LA.slogdet(a)), (_general((3, 3, 3)),), (0,)),
    "cholesky": (LA.cholesky, (_hpd((2, 3, 3)),), (0,)),
    "eigh": (lambda a: tuple(LA.eigh(a)), (_hpd((2, 3, 3)),), (0,)),
    "qr": (lambda a: tuple(LA.qr(a)), (_complex((2, 4, 3)),), (0,)),
    "svd": (lambda a: tuple(LA.svd(a)), (_complex((2, 3, 4)),), (0,)),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_loop(name):
    fn, args, in_axes = VMAP_CASES[name]
    got = fg.vmap(fn, in_axes=in_axes)(*(fg.tensor(x) for x in args))
    size = next(x.shape[ax] for x, ax in zip(args, in_axes, strict=True) if ax is not None)
    loop = [fn(*(fg.tensor(x) for x in _slice(args, in_axes, i))) for i in range(size)]
    got = got if isinstance(got, tuple) else (got,)
    loop = [r if isinstance(r, tuple) else (r,) for r in loop]
    for k, out in enumerate(got):
        _close(out, np.stack([np.asarray(r[k]) for r in loop]))


# --- derivatives: finite differences, forward and reverse -------------------------------------

_A = _general((3, 3))
_B = _complex((3, 2), seed=1)
_HPD = _hpd((3, 3))
_TALL = _complex((4, 3), seed=2)
_WIDE = _complex((3, 4), seed=3)

GRAD_CASES = {  # name: (function, arguments, order)
    "inv": (LA.inv, (_A,), 2),
    "inv_batched": (LA.inv, (_general((2, 3, 3)),), 1),
    "solve": (LA.solve, (_A, _B), 2),
    "det": (LA.det, (_A,), 2),
    "slogdet": (lambda a: tuple(LA.slogdet(a)), (_A,), 1),
    "lu": (lambda a: lax_linalg.lu(a)[0], (_complex((3, 3)),), 1),
    "tensorsolve": (LA.tensorsolve, (_general((4, 4)).reshape(2, 2, 4), _B[:2]), 1),
    "matrix_power_neg": (lambda a: LA.matrix_power(a, -2), (_A,), 1),
    "cholesky": (LA.cholesky, (_HPD,), 2),
    "cholesky_upper": (lambda a: LA.cholesky(a, upper=True), (_HPD,), 1),
    "eigh": (lambda a: tuple(LA.eigh(a)), (_HPD,), 1),
    "eigvalsh": (LA.eigvalsh, (_HPD,), 1),
    "qr_tall": (lambda a: tuple(LA.qr(a)), (_TALL,), 1),
    "qr_square": (lambda a: tuple(LA.qr(a)), (_A,), 1),
    "svd_tall": (lambda a: tuple(LA.svd(a, full_matrices=False)), (_TALL,), 1),
    "svd_wide": (lambda a: tuple(LA.svd(a, full_matrices=False)), (_WIDE,), 1),
    "svd_square_full": (lambda a: tuple(LA.svd(a)), (_A,), 1),
    "svdvals": (LA.svdvals, (_WIDE,), 1),
    "pinv": (LA.pinv, (_TALL,), 1),
    "norm_nuc": (lambda a: LA.norm(a, "nuc"), (_A,), 1),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grads(name):
    fn, args, order = GRAD_CASES[name]
    check_grads(fn, tuple(fg.tensor(x) for x in args), order=order)


def test_grads_complex64():
    a = _general((3, 3), np.complex64)
    check_grads(LA.inv, (fg.tensor(a),), order=1)
    check_grads(lambda x: tuple(LA.eigh(x)), (fg.tensor(_HPD.astype(np.complex64)),), order=1)


def test_vmap_of_grad_of_det():
    # Re(det) of holomorphic det: the gradient is det'(a) = det(a) inv(a).T, unconjugated
    a = _general((2, 3, 3))
    got = fg.vmap(fg.grad(lambda x: fnp.real(LA.det(x))))(fg.tensor(a))
    _close(got, np.linalg.det(a)[:, None, None] * np.swapaxes(np.linalg.inv(a), -1, -2))


def test_grad_of_real_functions_follows_jax():
    # for real f of complex z, grad gives conj(df/dx + i df/dy): for log|det a| that is
    # inv(a).T, not conjugated (as jax.grad)
    got = fg.grad(lambda x: LA.slogdet(x).logabsdet)(fg.tensor(_A))
    _close(got, np.linalg.inv(_A).T)
    # d/da sum(w) = d tr(a) for Hermitian a: the identity
    _close(fg.grad(lambda x: fnp.sum(LA.eigvalsh(x)))(fg.tensor(_HPD)), np.eye(3))


# --- Hermitian: cholesky, eigh; and qr, svd -----------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(dtype):
    a = _hpd((2, 3, 3), dtype)
    L = LA.cholesky(a)
    _close(L, np.linalg.cholesky(a), dtype, scale=10)
    _close(LA.cholesky(a, upper=True), np.linalg.cholesky(a, upper=True), dtype, scale=10)
    assert L.dtype == dtype
    # symmetrize_input=False reads the lower triangle and the diagonal's real part only
    garbage = a + np.triu(_complex((3, 3), seed=5), 1) + 0.5j * np.eye(3)
    _close(LA.cholesky(garbage, symmetrize_input=False), np.linalg.cholesky(a), dtype, scale=10)
    failed = np.asarray(LA.cholesky(-a))  # NaN in the triangle, zeros above (as JAX)
    assert np.isnan(failed[..., np.tril_indices(a.shape[-1])[0],
                           np.tril_indices(a.shape[-1])[1]]).all()
    assert (failed[..., np.triu_indices(a.shape[-1], 1)[0],
                   np.triu_indices(a.shape[-1], 1)[1]] == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh(dtype):
    a = _hpd((2, 4, 4), dtype)
    w, v = LA.eigh(a)
    w_np, v_np = np.linalg.eigh(a)
    assert w.dtype == REAL[dtype] and v.dtype == dtype
    _close(w, w_np, dtype, scale=100)
    _close(np.asarray(a) @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :], dtype,
           scale=100)
    _close(_phase_overlaps(v, v_np), np.ones(w_np.shape), dtype, scale=100)
    score = _canonical_score(v)
    _close(score.imag, np.zeros(score.shape), dtype, scale=10)
    assert np.all(score.real > 0)
    _close(LA.eigvalsh(a), w_np, dtype, scale=100)
    # symmetrize_input=False reads one triangle: change the other
    for uplo, other in (("L", np.triu(a, 1)), ("U", np.tril(a, -1))):
        garbled = a + 3 * other
        got = LA.eigh(garbled, UPLO=uplo, symmetrize_input=False).eigenvalues
        _close(got, np.linalg.eigvalsh(garbled, UPLO=uplo), dtype, scale=100)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_qr(shape, dtype):
    a = _complex(shape, dtype)
    for mode in ("reduced", "complete"):
        q, r = LA.qr(a, mode=mode)
        q_np, r_np = np.linalg.qr(a, mode=mode)
        assert q.dtype == dtype and r.dtype == dtype
        _close(q, q_np, dtype, scale=10)  # LAPACK's convention: R's diagonal is real
        _close(r, r_np, dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_svd(shape, dtype):
    a = _complex(shape, dtype)
    for full in (False, True):
        u, s, vh = LA.svd(a, full_matrices=full)
        u_np, s_np, vh_np = np.linalg.svd(a, full_matrices=full)
        assert s.dtype == REAL[dtype] and u.dtype == dtype and vh.dtype == dtype
        assert u.shape == u_np.shape and vh.shape == vh_np.shape
        _close(s, s_np, dtype, scale=10)
        k = s_np.shape[-1]
        u_k, vh_k = np.asarray(u)[..., :, :k], np.asarray(vh)[..., :k, :]
        _close((u_k * np.asarray(s)[..., None, :]) @ vh_k, a, dtype, scale=10)
        _close(_phase_overlaps(u_k, u_np[..., :, :k]), np.ones(s_np.shape), dtype, scale=10)
        score = _canonical_score(u_k)
        _close(score.imag, np.zeros(score.shape), dtype, scale=10)
        assert np.all(score.real > 0)
        for basis in (np.asarray(u), _mH(np.asarray(vh))):  # unitary, completed or not
            eye = np.eye(basis.shape[-1]) + np.zeros(basis.shape[:-2] + (1, 1))
            _close(_mH(basis) @ basis, eye, dtype, scale=10)
    _close(LA.svdvals(a), np.linalg.svd(a, compute_uv=False), dtype, scale=10)


def test_svd_based_functions():
    a = _complex((4, 3))
    _close(LA.pinv(a), np.linalg.pinv(a), scale=100)
    assert int(LA.matrix_rank(a)) == 3
    assert int(LA.matrix_rank(np.outer(_complex((4,)), _complex((3,), seed=1)))) == 1
    for ord in ("nuc", 2, -2, "fro", 1, np.inf):
        _close(LA.norm(a, ord), np.linalg.norm(a, ord), scale=100)
    _close(LA.cond(a[:3]), np.linalg.cond(a[:3]), scale=100)
    b = _complex((4,), seed=1)
    x, residuals, rank, s = LA.lstsq(a, b)
    x_np, res_np, rank_np, s_np = np.linalg.lstsq(a, b)
    _close(x, x_np, scale=100)
    _close(residuals, res_np, scale=100)
    assert residuals.dtype == np.float64 and int(rank) == rank_np
    _close(s, s_np, scale=10)


def test_cholesky_qr_svd_jit_match_eager():
    # one program (each jit compile costs seconds); a wide b: svd's bases come from the
    # transposed problem and V's basis is completed
    a = _hpd((2, 3, 3))
    b = _complex((2, 3, 4), seed=1)

    def f(a, b):
        q, r = LA.qr(b)
        u, s, vh = LA.svd(b)
        return LA.cholesky(a), q, r, u, s, vh

    got = fg.jit(f)(a, b)
    want = f(fg.tensor(a), fg.tensor(b))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        _close(g, np.asarray(w), scale=1000)


def test_eigh_jit_complex64_with_a_repeated_eigenvalue():
    # the second matrix has a double eigenvalue: its Jacobi eigenvectors stay a unitary
    # basis (picking one vector per pair of the 2n x 2n real embedding would not)
    q = np.linalg.qr(_complex((3, 3)))[0]
    repeated = (q * np.array([1.0, 1.0, 3.0])) @ _mH(q)
    a = np.stack([_hpd((3, 3), seed=1), repeated]).astype(np.complex64)
    w, v = fg.jit(LA.eigh)(a)
    w_eager, v_eager = LA.eigh(a)
    assert w.dtype == np.float32 and v.dtype == np.complex64
    _close(w, np.asarray(w_eager), np.complex64, scale=100)
    _close(v[0], np.asarray(v_eager)[0], np.complex64, scale=100)  # canonical phases
    v = np.asarray(v).astype(np.complex128)
    _close(_mH(v) @ v, np.broadcast_to(np.eye(3), (2, 3, 3)), np.complex64, scale=10)
    _close(a @ v, v * np.asarray(w)[..., None, :], np.complex64, scale=100)


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.cholesky, LA.eigh, LA.qr, LA.svd])
def test_unsupported_dtype_is_a_type_error_naming_function_and_dtypes(fn):
    name = fn.__name__
    with pytest.raises(TypeError, match=rf"{name}: dtype float16 not supported; expected "
                                        r"float32, float64, complex64 or complex128"):
        fn(np.eye(2, dtype=np.float16))


def test_primitive_dtype_errors():
    with pytest.raises(TypeError, match="lu: dtype float16 .* complex128"):
        lax_linalg.lu(fg.tensor(np.eye(2, dtype=np.float16)))
    with pytest.raises(TypeError, match="complex128 and float64 differ"):
        lax_linalg.triangular_solve(fg.tensor(_A), fg.tensor(_B.real), left_side=True)
    assert LA.inv(np.eye(2, dtype=bool)).dtype == np.float32


def test_jit_of_grad_through_pivoting_and_diagonals_matches_eager():
    # the gradients of lu's row permutation and of diagonals are complex scatter-adds
    a = fg.tensor(_general((3, 3), np.complex128, seed=4))

    def f(x):
        return LA.slogdet(x).logabsdet + fnp.real(fnp.sum(LA.solve(x, fnp.ones(3, x.dtype))))

    np.testing.assert_allclose(np.asarray(fg.jit(fg.grad(f))(a)), np.asarray(fg.grad(f)(a)),
                               rtol=1e-10, atol=1e-12)
