"""Values, dtypes and derivatives at the special points where a differential audit against
jax.numpy (0.10, x64) found funcgrad apart from it; each case names what it was before."""

import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn.functional as F
import funcgrad.numpy as fnp
from funcgrad.test_util import check_grads


def f64(x):
    return fg.tensor(np.asarray(x, dtype=np.float64))


# --- values and dtypes -------------------------------------------------------------------


def test_quantile_over_the_last_axis_of_3d_input_compiles():
    # IREE failed ('vector.store' outside a workgroup context) on the NaN check's reduction
    x = fg.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    got = fg.jit(lambda a: fnp.quantile(a, 0.3, axis=2))(x)
    np.testing.assert_allclose(got, np.quantile(x.numpy(), 0.3, axis=2), rtol=1e-6)


@pytest.mark.parametrize("values", [[-np.inf], [1, -np.inf, -np.inf], [1, np.inf, np.inf]],
                         ids=str)
def test_median_of_infinite_middles(values):
    # inf * 0 in the interpolation weights made them NaN
    x = np.array(values, np.float32)
    assert fnp.median(x).item() == np.median(x)
    assert fg.jit(fnp.median)(x).item() == np.median(x)


def test_float_power_keeps_complex_and_promotes_as_jax():
    z = fg.tensor(np.complex64([1 + 2j, -1j]))
    np.testing.assert_allclose(fnp.float_power(z, 2), [-3 + 4j, -1 + 0j], atol=1e-6)
    assert fnp.float_power(z, 2).dtype == fg.complex64  # the imaginary part was dropped
    assert fnp.float_power(fg.tensor([2, 3]), -1).dtype == fg.float32


def test_average_of_float64_data_with_float32_weights_is_float64_accurate():
    x = np.random.default_rng(1).normal(size=(3, 4))
    w = np.random.default_rng(2).uniform(0.5, 2, (3, 4)).astype(np.float32)
    got = fnp.average(fg.tensor(x), weights=fg.tensor(w))
    assert abs(got.item() - np.average(x, weights=w.astype(np.float64))) < 1e-15


def test_diff_and_diag_keep_dtypes():
    assert fnp.diff(fg.tensor([True, False, False])).tolist() == [True, False]
    assert fnp.diff(fg.tensor(np.int16([1, 5])), append=0).dtype == np.int16
    assert fnp.diag(fg.tensor([True, False])).dtype == fg.bool_


def test_log2_log10_exp2_of_complex_infinities():
    z = np.array([complex(np.inf, 1), complex(-np.inf, 1), 1 + 2j], np.complex64)
    for fn, ref in ((fnp.log2, np.log2), (fnp.log10, np.log10)):
        np.testing.assert_allclose(fn(z), ref(z), rtol=1e-6)  # imaginary parts were NaN
    w = np.array([complex(-np.inf, 0.5), 1 + 2j], np.complex64)
    np.testing.assert_allclose(fg.jit(fnp.exp2)(w), np.exp2(w), rtol=1e-6)


def test_float_results_of_64_bit_integers_are_float64():
    assert fnp.angle(np.arange(3)).dtype == fg.float64
    assert fnp.nanmedian(np.arange(3)).dtype == fg.float64


def test_where_of_two_python_numbers_is_weak_eagerly_as_traced():
    x = fg.tensor(np.array([1.0, -1.0]), dtype=fg.bfloat16)
    picked = fnp.where(x > 0, -np.inf, np.inf)
    assert picked.weak_type and (picked * x).dtype == fg.bfloat16
    assert fnp.spacing(x).dtype == fg.jit(fnp.spacing)(x).dtype == fg.bfloat16


def test_ldexp_exponents_beyond_int32():
    got = fnp.ldexp(fg.tensor([1.5, 1.5]), fg.tensor(np.uint32([2**32 - 3, 3])))
    assert got.tolist() == [np.inf, 12.0]  # 2**32 - 3 wrapped to -3 (0.1875)


def test_argwhere_and_nonzero_of_0d():
    assert fnp.argwhere(fg.tensor(1.0)).shape == (1, 0)
    assert fnp.argwhere(fg.tensor(0.0)).shape == (0, 0)
    with pytest.raises(ValueError, match="0-d tensor"):
        fnp.nonzero(fg.tensor(1.0), size=4)


# --- derivatives -------------------------------------------------------------------------


def test_ldexp_and_frexp_derivatives():
    # the bit operations differentiated to 0 (and 1 at x1 = 0)
    assert fg.grad(lambda a: fnp.ldexp(a, 3))(fg.tensor(1.5)).item() == 8.0
    grads = fg.jit(fg.grad(lambda a: fnp.ldexp(a, fg.tensor([3, -2])).sum()))(fg.tensor([1.0, 0.0]))
    assert grads.tolist() == [8.0, 0.25]
    frexp_grad = fg.grad(lambda a: fnp.frexp(a)[0].sum())(fg.tensor([8.0, -3.5]))
    assert frexp_grad.tolist() == [2.0**-4, 2.0**-2]


@pytest.mark.parametrize("matrix", [np.eye(2), np.diag([1.0, 1.0, 2.0]), np.zeros((2, 2)),
                                    np.eye(3)[:, :2]], ids=["eye", "repeated", "zero", "cols"])
def test_pinv_gradient_with_repeated_singular_values(matrix):
    # the SVD's derivative divided by s_i - s_j = 0: every entry NaN
    grad = fg.grad(lambda m: fnp.sum(fnp.linalg.pinv(m)))(f64(matrix))
    assert np.isfinite(grad.numpy()).all()
    if matrix.shape == (2, 2) and matrix.any():
        np.testing.assert_allclose(grad, -np.ones((2, 2)))


def test_pinv_gradients_against_finite_differences():
    rng = np.random.default_rng(0)
    for shape in [(3, 3), (4, 2), (2, 4)]:
        check_grads(fnp.linalg.pinv, (f64(rng.normal(size=shape)),), order=2)


def test_nanvar_gradient_ignores_the_nans():
    for fn, want in ((fnp.nanvar, [-1.0, 0.0, 1.0]), (fnp.nanstd, [-0.5, 0.0, 0.5])):
        np.testing.assert_allclose(fg.grad(fn)(f64([1.0, np.nan, 3.0])), want)


def test_piecewise_branches_differentiate_only_where_taken():
    def f(v):
        return fnp.piecewise(v, [v < 0, v >= 0], [lambda u: u**2, fnp.sqrt]).sum()

    for fn in (fg.grad(f), fg.jit(fg.grad(f))):
        np.testing.assert_allclose(fn(f64([-1.0, 4.0])), [-2.0, 0.25])  # was [nan, 0.25]


def test_sinc_derivatives_of_every_order_at_zero():
    zero = f64(0.0)
    assert fg.grad(fnp.sinc)(zero).item() == 0.0
    np.testing.assert_allclose(fg.hessian(fnp.sinc)(zero), -math.pi**2 / 3)  # was 0
    fourth = fg.grad(fg.grad(fg.grad(fg.grad(fnp.sinc))))(zero)
    np.testing.assert_allclose(fourth, math.pi**4 / 5)
    check_grads(fnp.sinc, (f64([0.3, -1.7]),), order=2)


def test_floor_divide_is_flat_also_at_a_zero_divisor():
    gx, gy = fg.grad(lambda x, y: fnp.floor_divide(x, y).sum(), argnums=(0, 1))(
        fg.tensor([1.0, 2.0]), fg.tensor([0.0, 3.0]))
    assert gx.tolist() == [0.0, 0.0] and gy.tolist() == [0.0, 0.0]


def test_binary_cross_entropy_gradient_at_certain_probabilities():
    # PyTorch's (p - y) / max(p (1 - p), 1e-12); the clamped logs gave 0 * inf = NaN
    grad = fg.grad(lambda p: F.binary_cross_entropy(p, fg.tensor([0.0, 1.0])))
    assert grad(fg.tensor([0.0, 1.0])).tolist() == [0.0, 0.0]
    wrong = fg.grad(lambda p: F.binary_cross_entropy(p, fg.tensor([1.0, 0.0])))
    np.testing.assert_allclose(wrong(fg.tensor([0.0, 1.0])), [-5e11, 5e11])
    check_grads(F.binary_cross_entropy, (f64([0.2, 0.7]), f64([0.3, 1.0])), order=2)


def test_normalize_of_a_zero_vector_has_a_finite_gradient():
    grad = fg.grad(lambda x: F.normalize(x).sum())(fnp.zeros((1, 3)))
    np.testing.assert_allclose(grad, np.full((1, 3), 1e12))  # PyTorch's 1 / eps
    check_grads(F.normalize, (f64(np.random.default_rng(3).random((2, 3))),), order=2)


def test_cholesky_of_a_matrix_not_positive_definite_keeps_zeros_above():
    # every entry was NaN; JAX keeps the other triangle's zeros
    a = f64([[1.0, 2.0], [2.0, 1.0]])
    lower = fnp.linalg.cholesky(a).numpy()
    assert np.isnan(lower[np.tril_indices(2)]).all() and lower[0, 1] == 0.0
    assert fnp.linalg.cholesky(a, upper=True).numpy()[1, 0] == 0.0
