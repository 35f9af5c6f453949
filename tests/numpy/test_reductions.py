"""funcgrad.numpy reductions and cumulative functions against NumPy, with JAX's dtype
rules (integer sums in int32, means of integers in float32, arg* in int32)."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 3), (3, 1, 4)]


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _check(got, expected, rtol=1e-12, atol=1e-12):
    assert isinstance(got, fg.Tensor)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=atol, equal_nan=True)


def _axes(shape):
    """axis arguments valid for ``shape``: None, each axis (also negative), pairs."""
    out = [None]
    for a in range(len(shape)):
        out += [a, a - len(shape)]
    if len(shape) >= 2:
        out += [(0, len(shape) - 1), tuple(range(len(shape)))]
    return out


def _cases(allow_empty=True):
    for shape in SHAPES:
        for axis in _axes(shape):
            for keepdims in (False, True):
                yield shape, axis, keepdims


SUM_LIKE = ["sum", "prod", "mean", "std", "var", "all", "any"]


@pytest.mark.parametrize("name", SUM_LIKE)
@pytest.mark.parametrize("shape,axis,keepdims", list(_cases()), ids=str)
def test_sum_like_float64(name, shape, axis, keepdims):
    x = _rand(shape)
    if name in ("all", "any"):
        x = x > 0
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    _check(getattr(fnp, name)(fg.tensor(x), axis=axis, keepdims=keepdims), expected)


def _nonempty_cases():
    for shape, axis, keepdims in _cases():
        axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
        if all(shape[a] > 0 for a in axes) and (shape == () or np.prod(shape) > 0 or
                                                 axis is not None):
            yield shape, axis, keepdims


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin", "ptp"])
@pytest.mark.parametrize("shape,axis,keepdims", list(_nonempty_cases()), ids=str)
def test_extrema_float64(name, shape, axis, keepdims):
    x = _rand(shape)
    expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    _check(getattr(fnp, name)(fg.tensor(x), axis=axis, keepdims=keepdims), expected)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis,keepdims",
                         [c for c in _nonempty_cases() if not isinstance(c[1], tuple)], ids=str)
def test_arg_extrema_are_int32(name, shape, axis, keepdims):
    x = np.round(_rand(shape), 1)  # ties: the first index wins
    expected = getattr(np, name)(x, axis=axis, keepdims=keepdims).astype(np.int32)
    _check(getattr(fnp, name)(fg.tensor(x), axis=axis, keepdims=keepdims), expected)


def test_arg_extrema_nan_wins():
    x = np.array([1.0, np.nan, 3.0])
    assert fnp.argmax(fg.tensor(x)).item() == 1
    assert fnp.argmin(fg.tensor(x)).item() == 1


def test_empty_extremum_errors():
    with pytest.raises(ValueError, match="max.*zero-size"):
        fnp.max(fg.zeros((0, 3)), axis=0)
    with pytest.raises(ValueError, match="argmax.*empty"):
        fnp.argmax(fg.zeros((0,)))
    with pytest.raises(ValueError, match="argmin.*empty"):
        fnp.argmin(fg.zeros((2, 0)), axis=1)
    # a zero-size reduction over a non-empty axis is fine
    _check(fnp.max(fg.tensor(np.zeros((0, 3))), axis=1), np.zeros((0,)))
    _check(fnp.max(fg.tensor(np.zeros((0, 3))), axis=0, initial=-1.0), np.full(3, -1.0))


def test_max_with_initial():
    x = np.array([[1.0, -5.0], [2.0, -7.0]])
    _check(fnp.max(fg.tensor(x), axis=0, initial=0.0), np.max(x, axis=0, initial=0.0))
    _check(fnp.min(fg.tensor(x), axis=1, initial=-6.0), np.min(x, axis=1, initial=-6.0))


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.float16, np.float32])
def test_extremum_initial_takes_the_input_dtype(dtype):
    # JAX casts initial to the input's dtype: an int32 max with initial=-10. stays int32
    x = np.array([[1, 5], [2, 3]], dtype)
    _check(fnp.max(fg.tensor(x), initial=-10.0), np.array(5, dtype))
    _check(fnp.min(fg.tensor(x), axis=0, initial=10.0), np.array([1, 3], dtype))
    _check(fnp.max(fg.tensor(x), axis=1, initial=4.0), np.array([5, 4], dtype))
    _check(fnp.max(fg.tensor(x), axis=1, initial=0.0, where=fg.tensor([True, False])),
           np.array([1, 2], dtype))
    _check(fg.jit(lambda t: fnp.min(t, initial=0.0))(fg.tensor(x)), np.array(0, dtype))


# --- JAX's dtype rules ------------------------------------------------------------------


@pytest.mark.parametrize("dtype,expected", [
    (np.bool_, np.int32), (np.int8, np.int32), (np.int16, np.int32), (np.int32, np.int32),
    (np.int64, np.int64), (np.uint8, np.uint32), (np.float16, np.float16),
    (np.float32, np.float32), (np.float64, np.float64), (np.complex64, np.complex64),
])
def test_sum_accumulation_dtype(dtype, expected):
    x = np.array([[1, 0, 1], [1, 1, 0]]).astype(dtype)
    got = fnp.sum(fg.tensor(x))
    assert got.dtype == np.dtype(expected)
    assert got.item() == 4
    assert fnp.sum(fg.tensor(x), axis=0).dtype == np.dtype(expected)


@pytest.mark.parametrize("dtype,expected", [
    (np.bool_, np.int32), (np.int8, np.int8), (np.int16, np.int16), (np.int32, np.int32),
    (np.int64, np.int64), (np.uint8, np.uint8), (np.uint16, np.uint16),
    (np.float16, np.float16), (np.float32, np.float32),
])
def test_cumulative_keeps_the_dtype(dtype, expected):
    # jnp.cumsum/cumprod keep the input's dtype (bools count in int32), unlike jnp.sum
    x = np.array([[1, 0, 1], [1, 1, 1]]).astype(dtype)
    for name in ("cumsum", "cumprod"):
        got = getattr(fnp, name)(fg.tensor(x), axis=1)
        _check(got, getattr(np, name)(x, axis=1).astype(expected))
        assert getattr(fnp, name)(fg.tensor(x), dtype=fg.int32).dtype == np.int32


def test_int8_cumsum_wraps_around_as_jax():
    x = fg.tensor(np.array([100, 100], np.int8))
    for got in (fnp.cumsum(x), fg.jit(fnp.cumsum)(x)):
        _check(got, np.array([100, -56], np.int8))


def test_int8_sum_does_not_overflow():
    x = np.full(100, 100, np.int8)
    assert fnp.sum(fg.tensor(x)).item() == 10000


def test_sum_with_dtype_argument():
    x = fg.tensor([1, 2, 3])
    assert fnp.sum(x, dtype=fg.float64).dtype == fg.float64
    assert fnp.sum(x, dtype="int8").dtype == fg.int8


@pytest.mark.parametrize("data", [np.int32([[1, 0, 2], [0, 0, 3]]),
                                  np.float32([[0.5, 0, -1], [0, 0, 0]]),
                                  np.complex64([[1j, 0, 0], [0, 0, 0]])])
def test_bool_accumulations_are_logical_eager_and_jitted(data):
    # NumPy's bool add is an OR, its multiply an AND (jit refused dtype=bool before)
    cases = [(lambda t, m: m.sum(t, axis=1, dtype=bool)), (lambda t, m: m.sum(t, dtype=bool)),
             (lambda t, m: m.prod(t, axis=0, dtype=bool)),
             (lambda t, m: m.cumsum(t, axis=1, dtype=bool)),
             (lambda t, m: m.cumprod(t, dtype=bool))]
    for case in cases:
        want = case(data, np)
        for run in (lambda f: f, fg.jit):
            got = run(lambda t: case(t, fnp))(fg.tensor(data))  # noqa: B023
            assert got.dtype == fg.bool_
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.bool_])
def test_mean_var_std_of_integers_are_float32(dtype):
    x = np.array([1, 2, 3, 4, 0, 1]).astype(dtype)
    for name in ("mean", "var", "std"):
        got = getattr(fnp, name)(fg.tensor(x))
        assert got.dtype == fg.float32, name
        np.testing.assert_allclose(got.item(), getattr(np, name)(x.astype(np.float64)),
                                   rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_float_reductions_keep_dtype(dtype):
    x = fg.tensor(np.linspace(-1, 1, 12).reshape(3, 4)).astype(dtype)
    for name in ("sum", "mean", "max", "min", "prod", "var", "std", "logsumexp"):
        assert getattr(fnp, name)(x, axis=0).dtype == x.dtype, name


def test_mean_and_var_arguments():
    x = _rand((3, 4))
    _check(fnp.var(fg.tensor(x), ddof=1), np.var(x, ddof=1))
    _check(fnp.std(fg.tensor(x), axis=0, ddof=1), np.std(x, axis=0, ddof=1))
    _check(fnp.mean(fg.tensor(x), axis=1, dtype=fg.float32), np.mean(x, axis=1).astype(np.float32),
           rtol=1e-6)


def test_complex_var():
    z = _rand((5,)) + 1j * _rand((5,), 1)
    _check(fnp.var(fg.tensor(z)), np.var(z))
    _check(fnp.sum(fg.tensor(z)), np.sum(z))
    _check(fnp.mean(fg.tensor(z)), np.mean(z))


def test_count_nonzero_and_average():
    x = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    _check(fnp.count_nonzero(fg.tensor(x)), np.int32(3))
    _check(fnp.count_nonzero(fg.tensor(x), axis=0), np.array([0, 1, 2], np.int32))
    w = np.array([1.0, 2.0, 3.0])
    _check(fnp.average(fg.tensor(x), axis=1, weights=fg.tensor(w)),
           np.average(x, axis=1, weights=w))
    _check(fnp.average(fg.tensor(x)), np.average(x))


# --- cumulative ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("shape", [(0,), (5,), (2, 3), (2, 0, 3), (3, 1, 4)], ids=str)
def test_cumulative_float64(name, shape):
    x = _rand(shape)
    for axis in [None] + list(range(-len(shape), len(shape))):
        _check(getattr(fnp, name)(fg.tensor(x), axis=axis), getattr(np, name)(x, axis=axis))


def test_cumulative_of_0d_and_ints():
    _check(fnp.cumsum(fg.tensor(np.float64(2.0))), np.cumsum(np.float64(2.0)))
    for run in (lambda f: f, fg.jit):  # axis 0 of a 0-d value: shape (1,), as NumPy
        _check(run(lambda t: fnp.cumprod(t, axis=0))(fg.tensor(np.float64(2.0))),
               np.cumprod(np.float64(2.0), axis=0))
    x = np.array([[1, 2], [3, 4]], np.int32)
    _check(fnp.cumprod(fg.tensor(x), axis=1), np.cumprod(x, axis=1).astype(np.int32))
    _check(fnp.cumsum(fg.tensor(x), axis=0), np.cumsum(x, axis=0).astype(np.int32))


# --- logsumexp ----------------------------------------------------------------------------


def _np_logsumexp(x, axis=None, keepdims=False):
    peak = np.max(x, axis=axis, keepdims=True) if x.size else np.zeros_like(
        np.sum(x, axis=axis, keepdims=True))
    peak = np.where(np.isfinite(peak), peak, 0)
    out = np.log(np.sum(np.exp(x - peak), axis=axis, keepdims=True)) + peak
    return out if keepdims else np.squeeze(out, axis=axis)


@pytest.mark.parametrize("shape,axis,keepdims", [c for c in _cases() if c[0] != (2, 0, 3)
                                                 or c[1] is not None], ids=str)
def test_logsumexp(shape, axis, keepdims):
    x = _rand(shape) * 10
    with np.errstate(all="ignore"):
        expected = _np_logsumexp(x, axis, keepdims)
    _check(fnp.logsumexp(fg.tensor(x), axis=axis, keepdims=keepdims), expected)


def test_logsumexp_extremes():
    out = fnp.logsumexp(fg.tensor([1000.0, 1000.0]))
    np.testing.assert_allclose(out.item(), 1000.0 + np.log(2.0), rtol=1e-6)
    out = fnp.logsumexp(fg.tensor([-np.inf, -np.inf]))
    assert out.item() == -np.inf
    out = fnp.logsumexp(fg.tensor(np.array([0.0, 1.0])), b=fg.tensor(np.array([2.0, 0.5])))
    np.testing.assert_allclose(out.item(), np.log(2.0 + 0.5 * np.e))
    assert fnp.logsumexp(fg.tensor([1, 2])).dtype == fg.float32


def test_logsumexp_takes_jax_argument_order_and_where():
    # (a, axis, b, keepdims, return_sign, where): a positional b was taken as keepdims
    x = np.array([[0.0, 1.0], [2.0, 3.0]])
    want = np.log(2.0 * np.exp(x).sum(axis=1))
    np.testing.assert_allclose(fnp.logsumexp(fg.tensor(x), 1, 2.0).numpy(), want)
    mask = np.array([[True, False], [True, True]])
    got = fnp.logsumexp(fg.tensor(x), axis=1, where=fg.tensor(mask))
    np.testing.assert_allclose(got.numpy(), [0.0, np.log(np.exp(2.0) + np.exp(3.0))])
    grad = fg.grad(lambda x: fnp.logsumexp(x, where=fg.tensor(mask)))(fg.tensor(x))
    np.testing.assert_allclose(grad.numpy().sum(), 1.0)
    assert grad.numpy()[0, 1] == 0.0
    assert fnp.logsumexp(fg.tensor(x), where=fg.tensor(np.zeros((2, 2), bool))).item() == -np.inf


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sum", "mean", "max", "argmax", "cumsum", "std", "all"])
def test_bad_axis_names_the_function(name):
    with pytest.raises(ValueError, match=f"{name}: axis 2 is out of bounds.*rank 2"):
        getattr(fnp, name)(fg.ones((2, 3)), axis=2)


def test_repeated_axis():
    with pytest.raises(ValueError, match="repeated axis"):
        fnp.sum(fg.ones((2, 3)), axis=(0, -2))


def test_reductions_accept_lists_and_arrays():
    _check(fnp.sum([1.0, 2.0]), np.float32(3.0))
    _check(fnp.max(np.array([1, 7, 3])), np.int64(7))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "std", "var", "any",
                                  "all", "argmax", "argmin", "cumsum"])
def test_numpy_functions_accept_tensors(name):
    # NumPy's functions call the method with out=None, as they do for JAX arrays
    data = np.array([[1.0, 2.0], [3.0, 4.0]])
    got = getattr(np, name)(fg.tensor(data))
    np.testing.assert_allclose(np.asarray(got), getattr(np, name)(data))


def test_out_argument_is_refused_with_the_reason():
    with pytest.raises(TypeError, match="immutable"):
        fg.tensor([1.0]).sum(out=np.zeros(()))


@pytest.mark.parametrize("dtype", [fg.float16, fg.bfloat16])
def test_half_precision_sums_accumulate_in_float32(dtype):
    # as JAX: 5000 float16 ones summed in float16 stop at 2048 (bfloat16: 256)
    ones = fg.ones(5000, dtype=dtype)
    exact = float(np.asarray(np.float32(5000).astype(dtype)))  # bfloat16 rounds 5000 to 4992
    matrix = fg.ones((2, 5000), dtype=dtype)
    checks = {
        "sum": (fnp.sum, (ones,), exact),
        "mean": (fnp.mean, (fg.ones(100000, dtype=dtype),), 1.0),
        "cumsum": (lambda a: fnp.cumsum(a)[-1], (ones,), exact),
        "matmul": (lambda a, b: (a @ b)[0, 0], (matrix, matrix.T), exact),
        "logsumexp": (fnp.logsumexp, (fg.zeros(5000, dtype=dtype),), np.log(5000)),
    }
    for name, (fun, args, want) in checks.items():
        for run in (fun, fg.jit(fun)):
            got = run(*args)
            assert got.dtype == dtype, name
            np.testing.assert_allclose(float(got), want, rtol=1e-2, err_msg=name)
    data = (np.random.default_rng(0).standard_normal(5000) + 10).astype(np.float32)
    spread = fnp.var(fg.tensor(data).astype(dtype))
    assert np.isfinite(float(spread)) and abs(float(spread) - data.var()) < 0.1


def test_var_and_std_with_ddof_at_least_the_count_are_inf_or_nan_as_numpy():
    with np.errstate(all="ignore"):
        for values, ddof in (([1.0, 2.0], 3), ([1.0, 1.0], 2), ([3.0], 2)):
            for fn in (fnp.var, fnp.std):
                want = getattr(np, fn.__name__)(np.array(values, np.float32), ddof=ddof)
                np.testing.assert_array_equal(fn(fg.tensor(values), ddof=ddof).numpy(), want)
    # the array API's correction= is ddof
    assert float(fnp.var(fg.tensor([1.0, 2.0, 3.0]), correction=1)) == 1.0
    with pytest.raises(ValueError, match="not both"):
        fnp.std(fg.tensor([1.0, 2.0]), ddof=1, correction=1)


_WHERE_REDUCTIONS = [
    ("sum", {}), ("prod", {}), ("mean", {}), ("var", {}), ("std", {"ddof": 1}),
    ("max", {"initial": -1.0}), ("min", {"initial": 100.0}), ("all", {}), ("any", {})]


def test_reductions_with_where_match_numpy_eager_and_jitted():
    x = np.arange(12.0).reshape(3, 4)
    mask = x % 3 != 0
    cases = [(name, kwargs, axis) for name, kwargs in _WHERE_REDUCTIONS for axis in (None, 0, 1)]

    def every_case(t, m):  # one program for all 27 cases: one compile
        return [getattr(fnp, name)(t, axis=axis, where=m, **kwargs)
                for name, kwargs, axis in cases]

    for results in (every_case(fg.tensor(x), fg.tensor(mask)),
                    fg.jit(every_case)(fg.tensor(x), fg.tensor(mask))):
        for (name, kwargs, axis), got in zip(cases, results, strict=True):
            want = getattr(np, name)(x, axis=axis, where=mask, **kwargs)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12,
                                       err_msg=f"{name} axis={axis}")


def test_where_mask_broadcasts_and_max_needs_initial():
    x = np.arange(12.0).reshape(3, 4)
    row = np.array([True, False, True, True])
    np.testing.assert_allclose(fnp.mean(fg.tensor(x), axis=1, where=fg.tensor(row)).numpy(),
                               np.mean(x, axis=1, where=row))
    with pytest.raises(ValueError, match="initial"):
        fnp.max(fg.tensor(x), where=fg.tensor(row))


def test_logsumexp_broadcasts_b_and_returns_the_sign():
    out = fnp.logsumexp(fg.tensor(2.0), b=fg.ones((1, 3, 1)))
    assert out.shape == () and float(out) == pytest.approx(2 + np.log(3))
    x, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, -2.0, 0.5])
    value, sign = fnp.logsumexp(fg.tensor(x), b=fg.tensor(b), return_sign=True)
    total = np.sum(b * np.exp(x))
    assert float(sign) == np.sign(total)
    assert float(value) == pytest.approx(np.log(abs(total)))


def test_sum_and_prod_initial_and_searchsorted_sorter_and_stack_dtype():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(fnp.sum(fg.tensor(x), axis=1, initial=10.0).numpy(),
                               np.sum(x, axis=1, initial=10.0))
    np.testing.assert_allclose(fnp.prod(fg.tensor(x) + 1, initial=2.0).numpy(),
                               np.prod(x + 1, initial=2.0))
    a = np.array([3.0, 1.0, 2.0])
    order = np.argsort(a)
    np.testing.assert_array_equal(
        fnp.searchsorted(fg.tensor(a), fg.tensor([1.5, 3.0]), sorter=fg.tensor(order)).numpy(),
        np.searchsorted(a, [1.5, 3.0], sorter=order))
    assert fnp.stack([fg.ones(2), fg.zeros(2)], dtype=fg.int32).dtype == fg.int32
    assert fnp.hstack([fg.ones(2), fg.zeros(2)], dtype=fg.float64).dtype == fg.float64
    assert fnp.vstack([fg.ones(2)], dtype=fg.int8).dtype == fg.int8


@pytest.mark.parametrize("dtype", [fg.float16, fg.bfloat16])
def test_low_precision_sums_accumulate_in_float32_also_in_gradients(dtype):
    # the transpose of a broadcast (a bias's gradient) summed 4096 bfloat16 values in
    # bfloat16 and stopped at 256; the running and plain reductions do it in float32 too
    x = fg.tensor(np.random.RandomState(0).uniform(0.2, 1.0, 4096)).astype(dtype)
    exact = x.astype(fg.float64).numpy().sum()
    loss = lambda s: fnp.sum((x * s).astype(fg.float32))  # noqa: E731
    s = fg.tensor(1.0).astype(dtype)
    for grad in (fg.grad(loss), fg.jit(fg.grad(loss))):
        np.testing.assert_allclose(grad(s).astype(fg.float64).numpy(), exact, rtol=8e-3)
    for cumsum in (lambda x: fnp.cumsum(x), fg.jit(lambda x: fnp.cumsum(x))):
        np.testing.assert_allclose(cumsum(x)[-1].astype(fg.float64).numpy(), exact, rtol=8e-3)
    vjp = fg.vjp(lambda x: fnp.cumsum(x), x)[1](fnp.ones_like(x))[0]  # a reversed cumsum
    assert vjp[0].astype(fg.float64).item() == 4096


def test_logsumexp_gradient_is_accurate_in_float16():
    # the max it shifts by is a constant to the derivative: in float16 the two terms of
    # its derivative cancelled only to ~1e-3, and the largest entry's gradient was 14% off
    x = np.random.RandomState(0).uniform(0.2, 1.0, (4, 1024))
    half = fg.tensor(x).astype(fg.float16)
    loss = lambda x: fnp.sum(fnp.logsumexp(x * 4, axis=1).astype(fg.float32))  # noqa: E731
    want = fg.grad(loss)(half.astype(fg.float64)).numpy()
    got = fg.grad(loss)(half).astype(fg.float64).numpy()
    assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()


def test_complex_max_and_min_propagate_the_first_nan_element_under_jit_too():
    # compiled complex max/min skipped NaN elements (min of [0.5+1j, nan+2j, 3] was 3)
    x = np.array([[0.5 + 1j, 2 + 0j, 3 + 0j], [complex(np.nan, 1), 1j, complex(2, np.nan)]])
    for fun, ref in ((fnp.max, np.max), (fnp.min, np.min)):
        for axis in (0, 1, None):
            want = ref(x, axis=axis)
            for f in (fun, fg.jit(fun, static_argnames="axis")):
                np.testing.assert_array_equal(f(fg.tensor(x), axis=axis).numpy(), want)
