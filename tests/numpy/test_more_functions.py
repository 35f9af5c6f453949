"""NumPy functions beyond API.md's list that scientific code reaches for: closeness tests,
NaN-ignoring reductions, order statistics, diff, cross, kron, select, isin, triangle
indices; each against NumPy in float64, eagerly and under jit, with gradients where
the math has them."""

import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.test_util import check_grads

RNG = np.random.default_rng(0)
WITH_NANS = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [4.0, 5.0, 6.0]])


def _both(fn, *args):
    """fn on tensors, eagerly and jitted."""
    tensors = [fg.tensor(a) for a in args]
    return fn(*tensors), fg.jit(fn)(*tensors)


def test_isclose_allclose_array_equal():
    a = np.array([1.0, 2.0, np.inf, np.nan, -np.inf, 1e10])
    b = np.array([1 + 1e-9, 2.1, np.inf, np.nan, np.inf, 1.00001e10])
    for equal_nan in (False, True):
        for got in _both(lambda x, y, e=equal_nan: fnp.isclose(x, y, equal_nan=e), a, b):
            np.testing.assert_array_equal(got.numpy(), np.isclose(a, b, equal_nan=equal_nan))
    assert bool(fnp.allclose(fg.tensor([1.0, 2.0]), fg.tensor([1.0, 2.0 + 1e-9])))
    assert not bool(fnp.allclose(fg.tensor([1.0]), fg.tensor([1.1])))
    assert bool(fnp.array_equal(fg.tensor([1, 2]), fg.tensor([1, 2])))
    assert not bool(fnp.array_equal(fg.ones(2), fg.ones(3)))
    assert bool(fnp.array_equal(fg.tensor([np.nan]), fg.tensor([np.nan]), equal_nan=True))


def test_nan_reductions_match_numpy_eager_and_jitted():
    cases = [(name, axis) for name in ("nansum", "nanmean", "nanvar", "nanstd", "nanmax",
                                       "nanmin") for axis in (None, 0, 1)]

    def every_case(x):  # one program for all 18 cases: one compile
        return [getattr(fnp, name)(x, axis=axis) for name, axis in cases]

    for results in _both(every_case, WITH_NANS):
        for (name, axis), got in zip(cases, results, strict=True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = getattr(np, name)(WITH_NANS, axis=axis)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12,
                                       err_msg=f"{name} axis={axis}")


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("axis", [None, 0, 2, (0, 2)])
def test_quantile_percentile_median_match_numpy(method, axis):
    x = RNG.standard_normal((4, 5, 6))
    for q in (0.3, [0.1, 0.5, 0.9]):
        want = np.quantile(x, q, axis=axis, method=method)
        got = fnp.quantile(fg.tensor(x), q, axis=axis, method=method)
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(fnp.percentile(fg.tensor(x), [25, 75], axis=axis,
                                              keepdims=True).numpy(),
                               np.percentile(x, [25, 75], axis=axis, keepdims=True))


@pytest.mark.parametrize("method", ["lower", "higher", "nearest"])
def test_quantile_picks_infinite_order_statistics_as_numpy(method):
    # these methods return an order statistic itself (low + 0 * (inf - inf) was NaN)
    x = np.array([1.0, np.inf, 2.0, -np.inf])
    for q in (0.0, 0.4, 0.9, 1.0):
        np.testing.assert_array_equal(fnp.quantile(fg.tensor(x), q, method=method).numpy(),
                                      np.quantile(x, q, method=method))


def test_linear_quantiles_next_to_infinities_are_jaxs():
    # weighted as JAX (low * (1 - w) + high * w): two equal infinities in the middle gave
    # NaN through inf - inf; NumPy's own lerp disagrees with JAX on some of these
    inf = np.inf
    cases = [([-inf, -inf, 1.0, 2.0], 0.5, -inf), ([-inf, 1.0], 0.25, -inf),
             ([-inf, 1.0], 0.75, -inf), ([1.0, inf], 0.75, inf), ([inf, inf], 0.3, inf),
             ([-inf, inf], 0.5, np.nan), ([0.0, 1.0, 2.0, inf], 1 / 3, 1.0)]
    for data, q, want in cases:
        with np.errstate(invalid="ignore"):  # inf * 0 and inf - inf, eagerly
            for got in _both(lambda t: fnp.quantile(t, q), np.array(data)):  # noqa: B023
                np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(fnp.median(fg.tensor([-inf, -inf, 1.0, 2.0])).numpy(), -inf)


def test_median_nans_jit_and_gradient():
    x = RNG.standard_normal((3, 4))
    for got in _both(lambda t: fnp.median(t, axis=1), x):
        np.testing.assert_allclose(got.numpy(), np.median(x, axis=1), rtol=1e-12)
    with_nan = x.copy()
    with_nan[1, 2] = np.nan
    np.testing.assert_array_equal(np.isnan(fnp.median(fg.tensor(with_nan), axis=1).numpy()),
                                  [False, True, False])
    # the gradient splits between the two middle values
    np.testing.assert_allclose(fg.grad(fnp.median)(fg.tensor([3.0, 1.0, 2.0, 10.0])).numpy(),
                               [0.5, 0.0, 0.5, 0.0])


@pytest.mark.parametrize("kwargs", [{}, {"n": 2}, {"axis": 0}, {"prepend": 0},
                                    {"append": [[1.0], [2.0]]}, {"n": 0}])
def test_diff_matches_numpy(kwargs):
    x = np.array([[1.0, 4.0, 9.0, 16.0], [2.0, 3.0, 5.0, 8.0]])
    for got in _both(lambda t: fnp.diff(t, **kwargs), x):
        np.testing.assert_array_equal(got.numpy(), np.diff(x, **kwargs))
    check_grads(lambda t: fnp.diff(t, n=2), (fg.tensor(x),), order=1)


def test_diff_along_an_empty_axis_traces():
    # the slice [1:0] was out of range when traced (jit, to_onnx), eagerly it was empty
    x = np.zeros((2, 0))
    for got in _both(lambda t: fnp.diff(t, axis=1), x):
        assert got.shape == (2, 0)
    assert fg.jit(lambda t: fnp.diff(t, axis=1, n=2))(fg.tensor(x)).shape == (2, 0)


def test_cross_kron_and_small_elementwise_functions():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    for got in _both(fnp.cross, a, b):
        np.testing.assert_allclose(got.numpy(), np.cross(a, b), rtol=1e-12)
    np.testing.assert_allclose(fnp.cross(fg.tensor(a[:, :2]), fg.tensor(b[:, :2])).numpy(),
                               # 2-vectors: the z component (NumPy 2.5 dropped them)
                               a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0], rtol=1e-12)
    np.testing.assert_allclose(fnp.cross(fg.tensor(a.T), fg.tensor(b.T), axis=0).numpy(),
                               np.cross(a.T, b.T, axis=0), rtol=1e-12)
    for sa, sb in [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 2, 2), (3, 1))]:
        x, y = RNG.standard_normal(sa), RNG.standard_normal(sb)
        np.testing.assert_allclose(fnp.kron(fg.tensor(x), fg.tensor(y)).numpy(), np.kron(x, y))
    x = np.array([-8.0, 27.0, 0.0, -0.001, 2.0])
    np.testing.assert_allclose(fnp.cbrt(fg.tensor(x)).numpy(), np.cbrt(x), rtol=1e-12)
    p, q = np.array([1.0, np.nan, 3.0, np.nan]), np.array([np.nan, 2.0, 1.0, np.nan])
    np.testing.assert_array_equal(fnp.fmax(fg.tensor(p), fg.tensor(q)).numpy(), np.fmax(p, q))
    np.testing.assert_array_equal(fnp.fmin(fg.tensor(p), fg.tensor(q)).numpy(), np.fmin(p, q))
    z = np.array([1 + 1j, -1, 0, -1j])
    np.testing.assert_allclose(fnp.angle(fg.tensor(z)).numpy(), np.angle(z))
    np.testing.assert_allclose(fnp.angle(fg.tensor([-1.0, 2.0]), deg=True).numpy(),
                               np.angle([-1.0, 2.0], deg=True))


def test_select_isin_and_triangle_indices():
    x = np.arange(6.0)
    got = fnp.select([fg.tensor(x < 2), fg.tensor(x > 3)], [fg.tensor(x), fg.tensor(x ** 2)],
                     default=-1.0)
    np.testing.assert_array_equal(got.numpy(), np.select([x < 2, x > 3], [x, x ** 2], -1))
    np.testing.assert_array_equal(fnp.isin(fg.tensor([[1, 2], [3, 4]]), [2, 4, 7]).numpy(),
                                  np.isin([[1, 2], [3, 4]], [2, 4, 7]))
    np.testing.assert_array_equal(fnp.isin(fg.tensor([1, 5]), [5], invert=True).numpy(),
                                  [True, False])
    for ours, numpys in ((fnp.tril_indices(4, 1, 5), np.tril_indices(4, 1, 5)),
                         (fnp.triu_indices(3), np.triu_indices(3))):
        for i, j in zip(ours, numpys, strict=True):
            np.testing.assert_array_equal(i.numpy(), j)
    rows, cols = fnp.triu_indices(3, 1)
    np.testing.assert_array_equal(fg.ones((3, 3)).at[rows, cols].set(0.0).numpy(),
                                  np.tril(np.ones((3, 3))))


def test_statistics_and_selections_take_numpy_and_jax_argument_orders():
    # median(a, axis, out, overwrite_input, keepdims), quantile(a, q, axis, out,
    # overwrite_input, method, keepdims): the fourth positional argument was keepdims
    x = np.array([[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]])
    t = fg.tensor(x)
    assert fnp.median(t, 1, None, True).shape == (2,)
    np.testing.assert_allclose(fnp.median(t, 1, keepdims=True).numpy(),
                               np.median(x, 1, keepdims=True))
    np.testing.assert_allclose(fnp.quantile(t, 0.25, 1, None, False, "lower").numpy(),
                               np.quantile(x, 0.25, 1, None, False, "lower"))
    np.testing.assert_allclose(fnp.percentile(t, 50, 0, None, False, "higher", True).numpy(),
                               np.percentile(x, 50, 0, None, False, "higher", True))
    with pytest.raises(NotImplementedError, match="out argument"):
        fnp.median(t, 0, np.empty(3))
    y = np.array([np.nan, np.inf, 1.0])
    np.testing.assert_array_equal(fnp.nan_to_num(fg.tensor(y), True, 5.0).numpy(),
                                  np.nan_to_num(y, True, 5.0))
    assert fnp.take(t, fg.tensor([4, 0]), None, None, True, False, 0.0).tolist() == [3.0, 1.0]
    assert fnp.isin(fg.tensor([1, 2]), [2], True, True).tolist() == [True, False]
