"""funcgrad.numpy.linalg and the decomposition primitives against NumPy, derivatives
against finite differences, vmap against a Python loop."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.prims import linalg as lax_linalg
from funcgrad.test_util import check_grads

LA = fnp.linalg
SHAPES = [(3, 3), (1, 1), (2, 4, 4), (2, 1, 3, 3)]
TOL = {np.float64: 1e-10, np.float32: 2e-4}


def _rng(seed=0):
    return np.random.default_rng(seed)


def _general(shape, dtype=np.float64, seed=0):
    """Well-conditioned square matrices (diagonally shifted)."""
    n = shape[-1]
    return (_rng(seed).standard_normal(shape) + 2 * n ** 0.5 * np.eye(n)).astype(dtype)


def _spd(shape, dtype=np.float64, seed=0):
    a = _rng(seed).standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _close(got, want, dtype=np.float64, scale=1.0):
    tol = TOL[dtype] * scale
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


# --- values against NumPy ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_inv_solve_det_slogdet(shape, dtype):
    a = _general(shape, dtype)
    b = _rng(1).standard_normal(shape[:-1] + (2,)).astype(dtype)
    x = fg.tensor(a)
    _close(LA.inv(x), np.linalg.inv(a), dtype)
    _close(LA.solve(x, b), np.linalg.solve(a, b), dtype)
    _close(LA.det(x), np.linalg.det(a), dtype, scale=10 * abs(np.linalg.det(a)).max())
    sign, logdet = LA.slogdet(x)
    want = np.linalg.slogdet(a)
    _close(sign, want.sign, dtype)
    _close(logdet, want.logabsdet, dtype, scale=10)
    assert LA.inv(x).dtype == dtype and LA.det(x).dtype == dtype


def test_solve_vector_and_broadcast_batch():
    a = _general((2, 1, 3, 3))
    b = _rng(1).standard_normal((4, 3, 2))
    _close(LA.solve(a, b), np.linalg.solve(a, b))
    v = _rng(2).standard_normal(3)
    _close(LA.solve(a[0, 0], v), np.linalg.solve(a[0, 0], v))


def test_det_sign_from_pivoting_and_singular():
    perm = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    _close(LA.det(perm), np.linalg.det(perm))
    swap = np.array([[0.0, 1.0], [1.0, 0.0]])
    _close(LA.det(swap), -1.0 * np.ones(()))
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert float(LA.det(singular)) == 0.0
    assert float(LA.slogdet(singular).logabsdet) == -np.inf


@pytest.mark.parametrize("shape", [(0, 0), (0, 3, 3), (2, 0, 0), (0, 2, 0, 0)])
def test_empty_matrices_inv_solve_det_slogdet(shape):
    # NumPy's (and JAX's) values: det of a 0 x 0 matrix is 1, slogdet (1, 0), inv and solve
    # as empty as their inputs; eager, under jit, and the gradients empty
    a = np.zeros(shape)
    b = np.zeros(shape[:-1] + (2,))

    def every_case(x, y):
        sign, logdet = LA.slogdet(x)
        return [LA.det(x), sign, logdet, LA.inv(x), LA.solve(x, y), LA.pinv(x),
                LA.matrix_power(x, -2)]

    want = [np.linalg.det(a), *np.linalg.slogdet(a), np.linalg.inv(a), np.linalg.solve(a, b),
            np.linalg.pinv(a), np.linalg.matrix_power(a, -2) if a.ndim == 2 else a]
    for got in (every_case(fg.tensor(a), fg.tensor(b)),
                fg.jit(every_case)(fg.tensor(a), fg.tensor(b))):
        for g, w in zip(got, want, strict=True):
            _close(g, np.asarray(w))
    for fn in (lambda x: fnp.sum(LA.det(x)), lambda x: fnp.sum(LA.slogdet(x).logabsdet),
               lambda x: fnp.sum(LA.inv(x)), lambda x: fnp.sum(LA.solve(x, fg.tensor(b)))):
        for grad in (fg.grad(fn), fg.jit(fg.grad(fn))):
            _close(grad(fg.tensor(a)), np.zeros(shape))
    if len(shape) == 2:
        assert LA.solve(fg.tensor(a), fg.tensor(np.zeros(0))).shape == (0,)
        assert fg.hessian(LA.det)(fg.tensor(a)).shape == (0, 0, 0, 0)


def test_empty_matrices_under_the_decomposition_primitives():
    # lu and triangular_solve take empty inputs (NumPy's reshape(-1, m, n) would not)
    for shape in [(0, 0), (3, 0, 0), (0, 2, 2), (0, 3), (3, 0)]:
        lu, pivots, perm = lax_linalg.lu(fg.tensor(np.zeros(shape)))
        k = min(shape[-2:])
        assert (lu.shape, pivots.shape, perm.shape) == (shape, shape[:-2] + (k,), shape[:-1])
    x = lax_linalg.triangular_solve(fg.tensor(np.zeros((0, 2, 2))),
                                    fg.tensor(np.zeros((0, 2, 3))), left_side=True)
    assert x.shape == (0, 2, 3)
    with pytest.raises(ValueError, match="cond: matrices of shape \\(0, 0\\) are empty"):
        LA.cond(fg.tensor(np.zeros((0, 0))))


def test_int_input_promotes_to_float32():
    out = LA.inv(np.array([[2, 0], [0, 4]], np.int32))
    assert out.dtype == np.float32
    _close(out, np.diag([0.5, 0.25]).astype(np.float32), np.float32)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_cholesky_eigh(shape, dtype):
    a = _spd(shape, dtype)
    _close(LA.cholesky(a), np.linalg.cholesky(a), dtype, scale=10)
    _close(LA.cholesky(a, upper=True), np.linalg.cholesky(a, upper=True), dtype, scale=10)
    w, v = LA.eigh(a)
    w_np, v_np = np.linalg.eigh(a)
    _close(w, w_np, dtype, scale=100)
    # eigenvectors are unique up to sign: compare the reconstruction and |v|
    _close(fnp.abs(v), np.abs(v_np), dtype, scale=100)
    _close(LA.eigvalsh(a), w_np, dtype, scale=100)


def test_cholesky_not_positive_definite_gives_nan():
    out = LA.cholesky(np.stack([np.eye(2), -np.eye(2)]))
    # NaN in the lower triangle, zeros above, as JAX
    failed = np.asarray(out[1])
    assert np.all(np.isfinite(np.asarray(out[0])))
    assert np.isnan(failed[np.tril_indices(2)]).all() and failed[0, 1] == 0


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_svd_eigh_and_norms_of_nan_matrices_are_nan_as_jax(dtype):
    # LAPACK fails to converge on NaN entries: that raised LinAlgError (eager) or a
    # RuntimeError from the host call (jit); the other matrices of a batch are unaffected
    a = np.stack([np.diag([3.0, 2.0, 1.0]), np.full((3, 3), np.nan)]).astype(dtype)
    u, s, vh = fnp.linalg.svd(a)
    assert u.dtype == vh.dtype == dtype and s.dtype == np.real(a).dtype
    np.testing.assert_allclose(s.numpy()[0], [3, 2, 1], rtol=1e-6)
    assert np.isnan(s.numpy()[1]).all() and np.isnan(u.numpy()[1]).all()
    w, v = fnp.linalg.eigh(a)
    np.testing.assert_allclose(w.numpy()[0], [1, 2, 3], rtol=1e-6)
    assert np.isnan(w.numpy()[1]).all() and np.isnan(v.numpy()[1]).all()
    for ord_ in (2, -2, "nuc"):
        assert np.isnan(fnp.linalg.norm(a[1], ord_).numpy())
    assert np.isnan(fg.jit(lambda a: fnp.linalg.svd(a, compute_uv=False))(a).numpy()[1]).all()


def test_eigh_uplo():
    a = _rng().standard_normal((3, 3))
    for uplo in ("L", "U"):
        w = LA.eigh(a, UPLO=uplo, symmetrize_input=False).eigenvalues
        _close(w, np.linalg.eigvalsh(a, UPLO=uplo))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 5, 3), (2, 1, 3, 5)])
def test_qr_svd(shape, dtype):
    a = _rng().standard_normal(shape).astype(dtype)
    for mode in ("reduced", "complete"):
        q, r = LA.qr(a, mode=mode)
        q_np, r_np = np.linalg.qr(a, mode=mode)
        _close(q, q_np, dtype, scale=10)
        _close(r, r_np, dtype, scale=10)
    _close(LA.qr(a, mode="r"), np.linalg.qr(a, mode="r"), dtype, scale=10)
    for full in (False, True):
        u, s, vh = LA.svd(a, full_matrices=full)
        u_np, s_np, vh_np = np.linalg.svd(a, full_matrices=full)
        _close(s, s_np, dtype, scale=10)
        k = s_np.shape[-1]
        u_k, vh_k = np.asarray(u)[..., :, :k], np.asarray(vh)[..., :k, :]
        recon = (u_k * np.asarray(s)[..., None, :]) @ vh_k
        _close(recon, a, dtype, scale=10)
        assert u.shape == u_np.shape and vh.shape == vh_np.shape
    _close(LA.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), dtype, scale=10)
    _close(LA.svdvals(a), np.linalg.svd(a, compute_uv=False), dtype, scale=10)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_pinv_matrix_rank_lstsq(shape):
    a = _rng().standard_normal(shape)
    _close(LA.pinv(a), np.linalg.pinv(a), scale=100)
    _close(LA.matrix_rank(a), np.linalg.matrix_rank(a))
    low_rank = np.outer(np.arange(1.0, 5.0), np.arange(1.0, 4.0))
    assert int(LA.matrix_rank(low_rank)) == 1
    if len(shape) == 2:
        b = _rng(1).standard_normal(shape[0])
        x, residuals, rank, s = LA.lstsq(a, b)
        x_np, res_np, rank_np, s_np = np.linalg.lstsq(a, b)
        _close(x, x_np, scale=100)
        _close(residuals, res_np, scale=100)
        assert int(rank) == rank_np
        _close(s, s_np)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -2])
def test_matrix_power(n):
    a = _general((2, 3, 3)) / 3
    _close(LA.matrix_power(a, n), np.linalg.matrix_power(a, n), scale=100)


def test_multi_dot():
    xs = [_rng(i).standard_normal(s) for i, s in enumerate([(3,), (3, 4), (4, 2), (2,)])]
    _close(LA.multi_dot(xs), np.linalg.multi_dot(xs))


@pytest.mark.parametrize("ord", [None, 0, 1, 2, 3, 0.5, np.inf, -np.inf])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norm(ord, axis, keepdims):
    x = _rng().standard_normal((3, 4)) if axis is not None else _rng().standard_normal(5)
    if ord == 0:
        x[0] = 0.0
    _close(LA.norm(x, ord, axis, keepdims), np.linalg.norm(x, ord, axis, keepdims))


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
@pytest.mark.parametrize("axis", [None, (0, 1), (2, 0), (-1, -2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norm(ord, axis, keepdims):
    x = _rng().standard_normal((3, 4)) if axis is None else _rng().standard_normal((3, 4, 5))
    _close(LA.norm(x, ord, axis, keepdims), np.linalg.norm(x, ord, axis, keepdims))


def test_norm_of_complex_is_real_for_every_order():
    z = fg.tensor(np.array([3 + 4j, 0, 1j], np.complex64))
    for ord in (None, 0, 1, 2, 3, np.inf, -np.inf):
        got = LA.norm(z, ord)
        assert got.dtype == fg.float32, ord
        np.testing.assert_allclose(got, np.linalg.norm(np.asarray(z), ord), rtol=1e-6)


def test_norm_flattens_and_array_api_norms():
    x = _rng().standard_normal((2, 3, 4))
    _close(LA.norm(x), np.linalg.norm(x))
    _close(LA.norm(x, keepdims=True), np.linalg.norm(x, keepdims=True))
    _close(LA.vector_norm(x, axis=(0, 2), ord=1), np.sum(np.abs(x), axis=(0, 2)))
    _close(LA.matrix_norm(x, "nuc"), np.linalg.norm(x, "nuc", axis=(-2, -1)))
    _close(LA.norm(np.float32([3, 4])), np.float32(5.0), np.float32)


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.eigh])
def test_non_square_is_a_value_error_naming_the_shape(fn):
    with pytest.raises(ValueError, match=r"\(3, 4\)"):
        fn(np.ones((3, 4)))


@pytest.mark.parametrize("fn", [LA.qr, LA.svd, LA.pinv])
def test_vector_input_is_a_value_error(fn):
    with pytest.raises(ValueError, match=r"\(3,\)"):
        fn(np.ones(3))


def test_bad_arguments():
    with pytest.raises(ValueError, match="do not align"):
        LA.solve(np.eye(3), np.ones((4, 2)))
    with pytest.raises(ValueError, match="mode"):
        LA.qr(np.eye(2), mode="full")
    with pytest.raises(ValueError, match="ord"):
        LA.norm(np.eye(2), ord="bad")
    with pytest.raises(ValueError, match="1-d or 2-d"):
        LA.norm(np.ones((2, 2, 2)), ord=1)
    with pytest.raises(TypeError, match="float16"):
        lax_linalg.cholesky(fg.tensor(np.eye(2, dtype=np.float16)))
    with pytest.raises(ValueError, match="triangular_solve"):
        lax_linalg.triangular_solve(fg.tensor(np.eye(3)), fg.tensor(np.ones((2, 2))),
                                    left_side=True)


# --- primitives ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
@pytest.mark.parametrize("unit_diagonal", [True, False])
def test_triangular_solve(left_side, lower, transpose_a, unit_diagonal, dtype):
    a = _general((2, 3, 3))
    shape = (2, 3, 4) if left_side else (2, 4, 3)
    b = _rng(1).standard_normal(shape)
    if dtype == np.complex128:
        a = a + 1j * _rng(2).standard_normal(a.shape)
        b = b + 1j * _rng(3).standard_normal(shape)
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  unit_diagonal=unit_diagonal)
    x = np.asarray(lax_linalg.triangular_solve(fg.tensor(a), fg.tensor(b), **params))
    assert x.dtype == dtype
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - t * np.eye(3) + np.eye(3)
    op = np.swapaxes(t, -1, -2) if transpose_a else t  # transposed, not conjugated
    np.testing.assert_allclose(op @ x if left_side else x @ op, b, atol=1e-10)
    check_grads(lambda a, b: lax_linalg.triangular_solve(a, b, **params),
                (fg.tensor(a), fg.tensor(b)), order=2 if dtype == np.float64 else 1)


def test_triangular_solve_zero_pivot_gives_inf_or_nan():
    a = np.array([[0.0, 0.0], [1.0, 1.0]])
    x = lax_linalg.triangular_solve(fg.tensor(a), fg.tensor(np.ones((2, 1))), left_side=True,
                                    lower=True)
    assert not np.all(np.isfinite(np.asarray(x)))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 3)])
def test_lu(shape):
    a = _rng().standard_normal(shape)
    lu, pivots, perm = lax_linalg.lu(fg.tensor(a))
    l, u = lax_linalg.unpack_lu(lu)
    permuted = np.take_along_axis(a, np.asarray(perm)[..., None], axis=-2)
    np.testing.assert_allclose(np.asarray(l) @ np.asarray(u), permuted, atol=1e-12)
    assert pivots.dtype == np.int32 and perm.dtype == np.int32
    assert pivots.shape == shape[:-2] + (min(shape[-2:]),)
    # partial pivoting: every multiplier is at most 1 in magnitude
    assert np.all(np.abs(np.tril(np.asarray(lu), -1)) <= 1 + 1e-12)
    check_grads(lambda x: lax_linalg.lu(x)[0], (fg.tensor(a),), order=2)


# --- derivatives: finite differences, forward and reverse, to second order ----------------

_A = _general((3, 3))
_B = _rng(1).standard_normal((3, 2))
_SPD = _spd((3, 3))
_TALL = _rng(2).standard_normal((4, 3))
_WIDE = _rng(3).standard_normal((3, 4))

GRAD_CASES = {
    "inv": (LA.inv, (_A,)),
    "inv_batched": (LA.inv, (_general((2, 3, 3)),)),
    "solve": (LA.solve, (_A, _B)),
    "solve_vector": (LA.solve, (_A, _B[:, 0])),
    "det": (LA.det, (_A,)),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, (_A,)),
    "cholesky": (LA.cholesky, (_SPD,)),
    "cholesky_batched": (LA.cholesky, (_spd((2, 3, 3)),)),
    "eigh": (lambda a: tuple(LA.eigh(a)), (_SPD,)),
    "eigvalsh": (LA.eigvalsh, (_SPD,)),
    "qr_tall": (lambda a: tuple(LA.qr(a)), (_TALL,)),
    "qr_square": (lambda a: tuple(LA.qr(a)), (_A,)),
    "qr_wide": (lambda a: tuple(LA.qr(a)), (_WIDE,)),
    "qr_wide_complete": (lambda a: tuple(LA.qr(a, mode="complete")), (_WIDE,)),
    "qr_wide_batched": (lambda a: tuple(LA.qr(a)), (_rng(5).standard_normal((2, 2, 5)),)),
    "svd_tall": (lambda a: tuple(LA.svd(a, full_matrices=False)), (_TALL,)),
    "svd_wide": (lambda a: tuple(LA.svd(a, full_matrices=False)), (_WIDE,)),
    "svd_square_full": (lambda a: tuple(LA.svd(a)), (_A,)),
    "svdvals": (LA.svdvals, (_WIDE,)),
    "pinv": (LA.pinv, (_TALL,)),
    "norm_fro": (LA.norm, (_A,)),
    "norm_nuc": (lambda a: LA.norm(a, "nuc"), (_A,)),
    "norm_2": (lambda a: LA.norm(a, 2), (_A,)),
    "norm_inf": (lambda a: LA.norm(a, np.inf), (_A,)),
    "norm_vec_3": (lambda a: LA.norm(a, 3, axis=0), (_A,)),
    "matrix_power": (lambda a: LA.matrix_power(a, 3), (_A,)),
    "matrix_power_neg": (lambda a: LA.matrix_power(a, -2), (_A,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grads(name):
    fn, args = GRAD_CASES[name]
    check_grads(fn, tuple(fg.tensor(a) for a in args), order=2)


def test_grad_of_wide_qr_matches_the_square_part_and_the_projection():
    # R = [R_X, Q^T Y] for A = [X Y]: the gradient of sum(R) in Y is Q's row sums; JAX's too
    a = fg.tensor(_WIDE)
    g = fg.grad(lambda x: fnp.sum(LA.qr(x)[1]))(a).numpy()
    q = np.linalg.qr(_WIDE)[0]
    _close(g[:, 3:], np.broadcast_to(q.sum(axis=1, keepdims=True), (3, 1)))
    _close(fg.jit(fg.grad(lambda x: fnp.sum(LA.qr(x)[1])))(a), g)


def test_grad_of_logdet_is_inverse_transpose():
    a = fg.tensor(_A)
    g = fg.grad(lambda x: LA.slogdet(x).logabsdet)(a)
    _close(g, np.linalg.inv(_A).T)


def _cofactor_matrix(a):
    n = a.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                      for j in range(n)] for i in range(n)])


SINGULAR = {
    "rank_one_2x2": np.array([[1.0, 2.0], [2.0, 4.0]]),
    "zero_3x3": np.zeros((3, 3)),
    "rank_one_3x3": np.outer([1.0, 2.0, 3.0], [1.0, 1.0, 2.0]),
    "rank_two_3x3": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
    "zero_first_column": np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 7.0]]),
    "pivoted": np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [1.0, 5.0, 6.0]]),
    # 4 x 4 and larger: through the LU (smaller ones are det's polynomial)
    "zero_4x4": np.zeros((4, 4)),
    "last_pivot_zero_4x4": np.diag([1.0, 2.0, 3.0, 0.0]),
    "first_pivot_zero_4x4": np.diag([0.0, 2.0, 3.0, 4.0]),
    "rank_two_4x4": np.outer([1.0, 2.0, 0.0, 1.0], [1.0, 1.0, 2.0, 0.0])
    + np.outer([0.0, 1.0, 1.0, 3.0], [2.0, 0.0, 1.0, 1.0]),
    "rank_three_4x4": np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 0.0, 1.0, 1.0],
                                [3.0, 2.0, 4.0, 5.0], [0.0, 1.0, 1.0, 2.0]]),
    "rank_four_5x5": np.random.default_rng(5).standard_normal((5, 4))
    @ np.random.default_rng(6).standard_normal((4, 5)),
}


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_grad_of_det_is_the_cofactor_matrix_also_when_singular(name):
    # det(a) * inv(a).T is 0 * inf there; JAX and PyTorch give the cofactors
    a = SINGULAR[name]
    want = _cofactor_matrix(a)
    _close(fg.grad(LA.det)(a), want)
    _close(fg.jit(fg.grad(LA.det))(a), want)
    _close(fg.jacfwd(LA.det)(a), want)
    got32 = fg.grad(LA.det)(a.astype(np.float32))
    assert got32.dtype == np.float32
    _close(got32, want, np.float32, scale=10)


def _second_derivatives_of_det(a, eps=1e-5):
    """d cofactors / d a by central differences of the exact cofactors (by minors)."""
    out = np.zeros(a.shape * 2)
    for i, j in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[i, j] = eps
        out[..., i, j] = (_cofactor_matrix(a + step) - _cofactor_matrix(a - step)) / (2 * eps)
    return out


@pytest.mark.parametrize("name", ["rank_one_2x2", "rank_two_3x3", "zero_first_column",
                                  "rank_two_4x4", "rank_three_4x4", "rank_four_5x5",
                                  "general_5x5"])
def test_second_derivatives_of_det_at_and_near_singular_matrices(name):
    # were NaN at singular 2 x 2 and 3 x 3 matrices (the LU's zero pivot), and 16 off at a
    # nearly singular 4 x 4 one (det(U) U^-1 differentiated: a tiny pivot over its square)
    a = _general((5, 5)) if name == "general_5x5" else SINGULAR[name]
    want = _second_derivatives_of_det(a)
    scale = max(1.0, np.abs(want).max())
    for hessian in (fg.hessian(LA.det), fg.jit(fg.hessian(LA.det)),
                    fg.jacfwd(fg.jacrev(LA.det))):
        got = hessian(fg.tensor(a)).numpy()
        np.testing.assert_allclose(got / scale, want / scale, atol=1e-8)


def test_vmap_grad_of_det_mixes_singular_and_regular():
    a = np.stack([SINGULAR["rank_one_2x2"], _general((2, 2))])
    got = fg.vmap(fg.grad(LA.det))(fg.tensor(a))
    _close(got, np.stack([_cofactor_matrix(m) for m in a]))


def test_derivative_limits_raise():
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        fg.jvp(lambda a: LA.qr(a, mode="complete")[0], (fg.tensor(_TALL),), (fg.tensor(_TALL),))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        fg.jvp(lambda a: LA.svd(a)[0], (fg.tensor(_TALL),), (fg.tensor(_TALL),))


# --- vmap against a Python loop -------------------------------------------------------------

VMAP_CASES = {
    "inv": (LA.inv, (_general((3, 3, 3)),), 0),
    "solve": (LA.solve, (_general((3, 3, 3)), _rng(1).standard_normal((3, 3, 2))), 0),
    "solve_unbatched_b": (LA.solve, (_general((3, 3, 3)), _B), (0, None)),
    "det_axis1": (LA.det, (np.moveaxis(_general((4, 3, 3)), 0, 1),), 1),
    "cholesky": (LA.cholesky, (_spd((2, 3, 3)),), 0),
    "eigh": (lambda a: tuple(LA.eigh(a)), (_spd((2, 3, 3)),), 0),
    "qr": (lambda a: tuple(LA.qr(a)), (_rng().standard_normal((2, 4, 3)),), 0),
    "svd": (lambda a: tuple(LA.svd(a)), (_rng().standard_normal((2, 3, 4)),), 0),
    "norm_nuc": (lambda a: LA.norm(a, "nuc"), (_rng().standard_normal((2, 3, 4)),), 0),
    "triangular_solve_b_only": (
        lambda a, b: lax_linalg.triangular_solve(a, b, left_side=True, lower=True),
        (_A, _rng(1).standard_normal((2, 3, 2))), (None, 0)),
}


def _slice(args, in_axes, i):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    return tuple(a if ax is None else np.take(a, i, axis=ax)
                 for a, ax in zip(args, axes, strict=True))


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_loop(name):
    fn, args, in_axes = VMAP_CASES[name]
    tensors = tuple(fg.tensor(a) for a in args)
    got = fg.vmap(fn, in_axes=in_axes)(*tensors)
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(a.shape[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    loop = [fn(*(fg.tensor(a) for a in _slice(args, in_axes, i))) for i in range(size)]
    got = got if isinstance(got, tuple) else (got,)
    loop = [r if isinstance(r, tuple) else (r,) for r in loop]
    for k, out in enumerate(got):
        _close(out, np.stack([np.asarray(r[k]) for r in loop]))


def test_vmap_of_grad():
    a = _general((2, 3, 3))
    got = fg.vmap(fg.grad(lambda x: LA.det(x)))(fg.tensor(a))
    want = np.linalg.det(a)[:, None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
    _close(got, want)


def test_jit_hessian_through_cholesky_matches_eager():
    # IREE 3.13 miscompiled the batched triangular solve fused with what follows it (the
    # first row of this Hessian was wrong under jit); its lowering ends in a fusion barrier
    base = np.array([[4.0, 1, 0], [1, 3, 0.5], [0, 0.5, 2]], np.float32)

    def f(x):
        return fnp.sum(fnp.log(fnp.diagonal(fnp.linalg.cholesky(base + fnp.diag(x)))))

    x = fg.tensor([0.3, -0.2, 0.5])
    np.testing.assert_allclose(fg.jit(fg.hessian(f))(x).numpy(), fg.hessian(f)(x).numpy(),
                               rtol=1e-4, atol=1e-6)


def test_array_api_linalg_names():
    # cond, cross, diagonal, trace, outer, tensordot, matrix_transpose, vecdot in linalg, as
    # jax.numpy.linalg has them (the last two axes are the matrices)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4, 4))
    for p in (None, 2, -2, "fro", 1, np.inf, -1):
        np.testing.assert_allclose(np.asarray(fnp.linalg.cond(fg.tensor(a), p)),
                                   np.linalg.cond(a, p), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(fnp.linalg.trace(fg.tensor(a), offset=1)),
                               np.trace(a, 1, -2, -1), rtol=1e-12)
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = fnp.linalg.diagonal(fg.tensor(ints), offset=-1)
    assert got.dtype == np.int32 and got.tolist() == np.diagonal(ints, -1).tolist()
    assert fnp.linalg.trace(fg.tensor(ints), dtype=fg.float64).dtype == np.float64
    v, w = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(np.asarray(fnp.linalg.cross(fg.tensor(v), fg.tensor(w))),
                               np.cross(v, w), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fnp.linalg.outer(fg.tensor(v[0]), fg.tensor(w[0]))),
                               np.outer(v[0], w[0]), rtol=1e-12)
    b = rng.standard_normal((4, 2))
    np.testing.assert_allclose(
        np.asarray(fnp.linalg.tensordot(fg.tensor(a), fg.tensor(b), axes=1)),
        np.tensordot(a, b, axes=1), rtol=1e-12)
    assert fnp.linalg.matrix_transpose(fg.tensor(a)).shape == (3, 4, 4)
    np.testing.assert_allclose(np.asarray(fnp.linalg.vecdot(fg.tensor(v), fg.tensor(w))),
                               (v * w).sum(-1), rtol=1e-12)
    check_grads(lambda m: fnp.linalg.cond(m), (fg.tensor(a[0]),), order=1)
    with pytest.raises(ValueError, match="1-d"):
        fnp.linalg.outer(fg.tensor(a), fg.tensor(v))
    with pytest.raises(ValueError, match="size 3"):
        fnp.linalg.cross(fg.tensor(a), fg.tensor(a))


# --- tensorinv and tensorsolve -------------------------------------------------------------


def _tensor_operator(shape, seed=0):
    """A well-conditioned operator of ``shape`` whose leading axes (of total size n) make
    the rows of an n x n matrix."""
    n = int(np.sqrt(np.prod(shape)))
    return _general((n, n), seed=seed).reshape(shape)


@pytest.mark.parametrize("shape, ind", [((6, 2, 3), 1), ((3, 4, 2, 6), 2), ((2, 3, 6), 2),
                                        ((4, 4), 1)])
def test_tensorinv(shape, ind):
    a = _tensor_operator(shape)
    got = LA.tensorinv(fg.tensor(a), ind=ind)
    _close(got, np.linalg.tensorinv(a, ind=ind))
    assert got.dtype == np.float64


@pytest.mark.parametrize("a_shape, b_shape, axes", [
    ((3, 4, 2, 6), (3, 4), None), ((6, 2, 3), (6,), None), ((2, 3, 6), (2, 3), None),
    ((2, 3, 3, 2), (3, 2), (0, 1)), ((3, 2, 4, 6), (3, 4), (-3, 3))])
def test_tensorsolve(a_shape, b_shape, axes):
    a = _tensor_operator(a_shape)
    b = _rng(1).standard_normal(b_shape)
    _close(LA.tensorsolve(fg.tensor(a), fg.tensor(b), axes=axes),
           np.linalg.tensorsolve(a, b, axes=None if axes is None else
                                 tuple(ax % len(a_shape) for ax in axes)))


def test_tensorinv_and_tensorsolve_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"tensorinv: a of shape \(2, 3, 4\) with ind=1"):
        LA.tensorinv(np.ones((2, 3, 4)), ind=1)
    with pytest.raises(ValueError, match="tensorinv: ind must be a positive int"):
        LA.tensorinv(np.ones((2, 2)), ind=0)
    with pytest.raises(ValueError, match=r"leading axes of a \(shape \(2, 3, 6\)\).*\(3, 2\)"):
        LA.tensorsolve(np.ones((2, 3, 6)), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"trailing axes \(5,\) of a .*\(5 != 6\)"):
        LA.tensorsolve(np.ones((2, 3, 5)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="out of bounds"):
        LA.tensorsolve(np.ones((2, 3, 6)), np.ones((2, 3)), axes=(5,))


def test_tensorinv_and_tensorsolve_grads_and_jit():
    a = _tensor_operator((2, 2, 4))
    b = _rng(1).standard_normal((2, 2))
    check_grads(lambda a: LA.tensorinv(a, ind=2), (fg.tensor(a),), order=2)
    check_grads(LA.tensorsolve, (fg.tensor(a), fg.tensor(b)), order=2)
    inverse, solution = fg.jit(lambda a, b: (LA.tensorinv(a, ind=2), LA.tensorsolve(a, b)))(a, b)
    _close(inverse, np.linalg.tensorinv(a, ind=2))
    _close(solution, np.linalg.tensorsolve(a, b))


def test_eig_and_eigvals_match_numpy():
    a = np.random.default_rng(7).standard_normal((3, 4, 4))
    w, v = fnp.linalg.eig(fg.tensor(a))
    assert w.dtype == np.complex128 and v.dtype == np.complex128 and v.shape == (3, 4, 4)
    want = np.linalg.eigvals(a)
    np.testing.assert_allclose(np.sort_complex(w.numpy()), np.sort_complex(want), rtol=1e-10)
    # A v = v diag(w): right eigenvectors in the columns
    np.testing.assert_allclose(a @ v.numpy(), v.numpy() * w.numpy()[..., None, :], atol=1e-10)
    rotation = fnp.linalg.eigvals(fg.tensor([[0.0, -1.0], [1.0, 0.0]]))
    assert rotation.dtype == np.complex64
    np.testing.assert_allclose(np.sort_complex(rotation.numpy()), [-1j, 1j], atol=1e-6)
    assert fnp.linalg.eigvals(fg.ones((2, 2), dtype=fg.float16)).dtype == np.complex64
    with pytest.raises(ValueError, match="square matrix"):
        fnp.linalg.eig(fg.ones((2, 3)))
    with pytest.raises(TypeError, match="eig: dtype int8 not supported"):
        lax_linalg.eig(fg.ones((2, 2), dtype=fg.int8))


def test_eig_under_jit_and_vmap_equals_eager():
    a = fg.tensor(np.random.default_rng(8).standard_normal((3, 5, 5)))
    eager = fnp.linalg.eig(a)
    for got in (fg.jit(fnp.linalg.eig)(a), fg.vmap(fg.jit(fnp.linalg.eig))(a)):
        for g, e in zip(got, eager, strict=True):
            np.testing.assert_array_equal(g.numpy(), e.numpy())
    nan = fg.jit(fnp.linalg.eigvals)(fg.tensor([[np.nan, 1.0], [0.0, 1.0]]))
    assert np.isnan(nan.numpy()).all()


def test_eig_has_no_gpu_lowering():
    lowered = fg.jit(fnp.linalg.eigvals).lower(fg.ones((3, 3)))
    from funcgrad.lowering.mlir import LoweringError

    with pytest.raises(LoweringError, match="eig has no cuda lowering: it runs on the CPU"):
        lowered.compile(target="cuda", arch="sm_80")


def test_eig_derivatives():
    a = _general((4, 4), seed=9)
    # phase-invariant functions of the eigenvectors: each column's phase is arbitrary
    check_grads(lambda x: fnp.sum(fnp.real(LA.eigvals(x) ** 2) + fnp.imag(LA.eigvals(x))),
                (fg.tensor(a),), order=2)
    check_grads(lambda x: fnp.sum(fnp.abs(LA.eig(x)[1]) ** 3), (fg.tensor(a),), order=1)
    rotation = np.array([[1.0, -2.0], [3.0, 1.0]])  # complex eigenvalues 1 +- i sqrt(6)
    grad = fg.jit(fg.grad(lambda x: fnp.sum(fnp.abs(fnp.imag(LA.eigvals(x))))))
    # w = a +- i sqrt(-b c) for [[a, b], [c, a]]: sum |Im w| = 2 sqrt(-b c), whose
    # derivative in b is -c / sqrt(-b c)
    np.testing.assert_allclose(grad(fg.tensor(rotation)).numpy()[0, 1], -3 / np.sqrt(6),
                               rtol=1e-10)
