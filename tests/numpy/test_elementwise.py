"""funcgrad.numpy elementwise functions against NumPy: float64 values over several shapes
(0-d and empty included), dtype rules, broadcasting (hypothesis) and errors."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs
from hypothesis.extra import numpy as hnp

import funcgrad as fg
import funcgrad.numpy as fnp

SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 3), (3, 1, 4)]


def _rand(shape, low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def _check(got, expected, rtol=1e-12, atol=1e-12):
    assert isinstance(got, fg.Tensor)
    expected = np.asarray(expected)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=atol, equal_nan=True)


# name: (domain low, high)
UNARY = {
    "exp": (-3, 3), "log": (0.1, 5), "log1p": (-0.9, 3), "expm1": (-3, 3), "sin": (-5, 5),
    "cos": (-5, 5), "tan": (-1.4, 1.4), "tanh": (-3, 3), "sinh": (-3, 3), "cosh": (-3, 3),
    "arcsin": (-0.99, 0.99), "arccos": (-0.99, 0.99), "arctan": (-5, 5),
    "arcsinh": (-3, 3), "arccosh": (1.01, 4), "arctanh": (-0.99, 0.99), "sqrt": (0, 5),
    "square": (-3, 3), "abs": (-3, 3), "sign": (-3, 3), "floor": (-3, 3), "ceil": (-3, 3),
    "round": (-3, 3), "negative": (-3, 3), "positive": (-3, 3), "trunc": (-3, 3),
    "exp2": (-3, 3), "log2": (0.1, 5), "log10": (0.1, 5), "reciprocal": (0.5, 3),
    "deg2rad": (-180, 180), "rad2deg": (-3, 3), "rint": (-3, 3), "signbit": (-3, 3),
    "sinc": (-3, 3), "isnan": (-3, 3), "isfinite": (-3, 3), "isinf": (-3, 3),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float64_matches_numpy(name, shape):
    x = _rand(shape, *UNARY[name])
    if name == "sinc" and x.size:
        x.flat[0] = 0.0
    _check(getattr(fnp, name)(fg.tensor(x)), getattr(np, name)(x))


@pytest.mark.parametrize("name", ["exp", "log", "sin", "sqrt", "tanh", "arctan", "log1p",
                                  "expm1", "abs", "floor", "square"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_unary_low_precision_keeps_dtype(name, dtype):
    x64 = _rand((7,), 0.1, 2.0)
    x = fg.tensor(x64).astype(dtype)
    out = getattr(fnp, name)(x)
    assert out.dtype == x.dtype
    tol = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    expected = getattr(np, name)(np.asarray(x).astype(np.float64))
    np.testing.assert_allclose(np.asarray(out).astype(np.float64), expected, rtol=tol * 4,
                               atol=tol)


@pytest.mark.parametrize("name", ["exp", "log", "sin", "sqrt", "tanh", "arctan", "cos"])
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.bool_])
def test_unary_of_integers_is_float32(name, dtype):
    x = np.array([1, 2, 0, 1]).astype(dtype)
    out = getattr(fnp, name)(fg.tensor(x))
    assert out.dtype == fg.float32
    np.testing.assert_allclose(np.asarray(out), getattr(np, name)(x.astype(np.float64)),
                               rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_64_bit_integers_become_float64(dtype):
    # NumPy data (np.arange is int64): its ratios, roots and means are float64, as in NumPy
    # and in JAX with 64-bit types; a float32 would round 2**53 - 1 to 2**53
    x = fg.tensor(np.array([2 ** 53 - 1, 3, 8], dtype=dtype))
    for out in (x / 1, fnp.sqrt(x), fnp.mean(x), fnp.true_divide(x, x), fg.jit(lambda v: v / 2)(x)):
        assert out.dtype == fg.float64, out.dtype
    assert float((x / 1)[0]) == 2.0 ** 53 - 1
    assert (fg.tensor(np.array([1, 2], np.int32)) / 2).dtype == fg.float32  # JAX's default


def test_integer_identities_keep_dtype():
    x = fg.tensor([-3, 0, 4], dtype=fg.int16)
    for fn in (fnp.floor, fnp.ceil, fnp.round, fnp.trunc, fnp.abs, fnp.negative, fnp.sign,
               fnp.square):
        assert fn(x).dtype == fg.int16, fn
    _check(fnp.abs(x), np.abs(np.array([-3, 0, 4], np.int16)))
    _check(fnp.sign(x), np.array([-1, 0, 1], np.int16))


def test_complex_unary():
    z = np.array([1 + 2j, -0.5 + 0.1j, 3 - 1j])
    t = fg.tensor(z)
    _check(fnp.exp(t), np.exp(z))
    _check(fnp.abs(t), np.abs(z))
    _check(fnp.real(t), z.real)
    _check(fnp.imag(t), z.imag)
    _check(fnp.conjugate(t), np.conj(z))
    _check(fnp.conj(t), np.conj(z))
    _check(fnp.real(fg.tensor([1.0, 2.0])), np.array([1.0, 2.0], np.float32))
    _check(fnp.imag(fg.tensor([1.0, 2.0])), np.zeros(2, np.float32))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_abs_neither_overflows_nor_underflows(dtype):
    big = np.finfo(np.float32 if dtype == np.complex64 else np.float64).max / 2
    z = np.array([big + big * 1j, 1e-30 + 1e-30j, 3 - 4j, complex(np.inf, np.nan),
                  complex(np.nan, -np.inf), complex(np.nan, 1), 0j], dtype)
    for fn in (fnp.abs, fg.jit(fnp.abs)):
        out = fn(fg.tensor(z))
        assert out.dtype == np.abs(z).dtype
        np.testing.assert_allclose(out.numpy(), np.abs(z), rtol=1e-6)


def test_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0])
    t = fg.tensor(x)
    _check(fnp.isnan(t), np.isnan(x))
    _check(fnp.isfinite(t), np.isfinite(x))
    _check(fnp.isinf(t), np.isinf(x))
    _check(fnp.signbit(t), np.signbit(x))
    _check(fnp.nan_to_num(t), np.nan_to_num(x))
    _check(fnp.exp(t), np.exp(x))
    with np.errstate(all="ignore"):
        _check(fnp.log(fg.tensor(np.array([-1.0, 0.0]))), np.log(np.array([-1.0, 0.0])))
    _check(fnp.isnan(fg.tensor([1, 2])), np.array([False, False]))
    _check(fnp.isfinite(fg.tensor([1, 2])), np.array([True, True]))


def test_round_half_to_even_and_decimals():
    x = np.array([0.5, 1.5, 2.5, -0.5, 2.675, 1.25])
    _check(fnp.round(fg.tensor(x)), np.round(x))
    _check(fnp.round(fg.tensor(x), 1), np.round(x, 1))
    _check(fnp.around(fg.tensor(x), 2), np.around(x, 2), rtol=1e-10)


@pytest.mark.parametrize("decimals", [0, 1])
def test_round_of_complex_rounds_each_part_eager_and_jitted(decimals):
    z = np.array([1.5 + 2.5j, -0.25 + 3.75j, 0.5 - 1.5j], np.complex64)
    for run in (lambda f: f, fg.jit, fg.vmap):
        got = run(lambda t: fnp.round(t, decimals))(fg.tensor(z))
        assert got.dtype == fg.complex64
        np.testing.assert_allclose(got, np.round(z, decimals), rtol=1e-6)


BINARY = {
    "add": (-3, 3), "subtract": (-3, 3), "multiply": (-3, 3), "divide": (0.5, 3),
    "maximum": (-3, 3), "minimum": (-3, 3), "power": (0.5, 2), "arctan2": (-3, 3),
    "logaddexp": (-3, 3), "hypot": (-3, 3), "floor_divide": (-5, 5), "remainder": (-5, 5),
    "mod": (-5, 5), "fmod": (-5, 5), "copysign": (-3, 3), "true_divide": (0.5, 3),
    "equal": (-1, 1), "not_equal": (-1, 1), "less": (-1, 1), "less_equal": (-1, 1),
    "greater": (-1, 1), "greater_equal": (-1, 1), "heaviside": (-1, 1),
}


@pytest.mark.parametrize("shapes", [((), ()), ((0,), (0,)), ((4,), (4,)), ((2, 3), (3,)),
                                    ((2, 1), (1, 3)), ((), (2, 3)), ((2, 0, 1), (1, 3))],
                         ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float64_matches_numpy(name, shapes):
    lo, hi = BINARY[name]
    x, y = _rand(shapes[0], lo, hi, 1), _rand(shapes[1], lo, hi, 2)
    if name in ("floor_divide", "remainder", "mod", "fmod"):
        y = np.where(np.abs(y) < 0.3, 1.0, y)
    if name in ("equal", "not_equal", "less", "less_equal", "greater_equal", "greater",
                "heaviside"):
        x, y = np.round(x), np.round(y)
    _check(getattr(fnp, name)(fg.tensor(x), fg.tensor(y)), getattr(np, name)(x, y))


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "floor_divide", "remainder",
                                  "maximum", "minimum", "bitwise_and", "bitwise_or",
                                  "bitwise_xor", "left_shift", "right_shift", "fmod"])
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.int64])
def test_binary_integers_match_numpy(name, dtype):
    rng = np.random.default_rng(3)
    low = 0 if dtype == np.uint8 else -20
    x = rng.integers(low, 20, (3, 4)).astype(dtype)
    y = rng.integers(1, 6, (4,)).astype(dtype)
    if low < 0 and name not in ("left_shift", "right_shift"):
        y[::2] *= -1
    _check(getattr(fnp, name)(fg.tensor(x), fg.tensor(y)), getattr(np, name)(x, y))


def test_integer_division_by_zero_does_not_raise():
    out = fnp.floor_divide(fg.tensor([1, 2]), fg.tensor([0, 1]))
    assert out.dtype == fg.int32 and out[1].item() == 2
    out = fnp.remainder(fg.tensor([1, 2]), fg.tensor([0, 1]))
    assert out.dtype == fg.int32


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
def test_integer_division_by_zero_gives_zero_as_numpy(dtype):
    # NumPy's x % 0, fmod(x, 0), x // 0 and divmod(x, 0) are 0 (JAX's remainder and fmod
    # too); eager, under jit and vmap alike, and without NumPy's warnings
    signed = np.dtype(dtype).kind == "i"
    x = np.array([7, -7, 5, 0, 9, -9] if signed else [7, 5, 5, 0, 9, 200], dtype)
    y = np.array([0, 0, 3, 0, -2, 4] if signed else [0, 0, 3, 0, 2, 4], dtype)

    def every_case(a, b):
        return [fnp.remainder(a, b), fnp.fmod(a, b), fnp.floor_divide(a, b), a % b, a // b,
                *fnp.divmod(a, b), fnp.remainder(a, 0), fnp.floor_divide(a, 0)]

    with np.errstate(all="ignore"):
        want = [np.remainder(x, y), np.fmod(x, y), np.floor_divide(x, y), x % y, x // y,
                *np.divmod(x, y), np.remainder(x, dtype(0)), np.floor_divide(x, dtype(0))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager = every_case(fg.tensor(x), fg.tensor(y))
    for got in (eager, fg.jit(every_case)(fg.tensor(x), fg.tensor(y)),
                fg.vmap(every_case)(fg.tensor(x), fg.tensor(y))):
        for g, w in zip(got, want, strict=True):
            _check(g, w)


def test_float_division_by_zero_unchanged():
    x = np.array([7.0, -7.0, 0.0, 1.5])
    y = np.zeros(4)
    with np.errstate(all="ignore"):
        for name in ("remainder", "fmod", "floor_divide", "divide"):
            _check(getattr(fnp, name)(fg.tensor(x), fg.tensor(y)), getattr(np, name)(x, y))


def test_integer_power():
    x = np.array([-3, -1, 0, 1, 2, 5], np.int32)
    _check(fnp.power(fg.tensor(x), 3), x ** 3)
    _check(fnp.power(fg.tensor(x), fg.tensor([0, 1, 2, 3, 4, 5])),
           np.power(x, np.array([0, 1, 2, 3, 4, 5], np.int32)))
    with pytest.raises(ValueError, match="negative"):
        fnp.power(fg.tensor([2]), -1)
    # uint64 powers above 2**53 are exact (they were rounded through float64)
    u = np.array([3, 5, 7, 2], np.uint64)
    n = np.array([39, 27, 22, 63], np.uint64)
    got = fg.tensor(u) ** fg.tensor(n)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got.numpy(), u ** n)


def test_logical_functions():
    a = np.array([0.0, 1.0, -2.0, 0.0])
    b = np.array([1, 0, 3, 0])
    for name in ("logical_and", "logical_or", "logical_xor"):
        _check(getattr(fnp, name)(fg.tensor(a), fg.tensor(b)), getattr(np, name)(a, b))
    _check(fnp.logical_not(fg.tensor(a)), np.logical_not(a))
    _check(fnp.invert(fg.tensor([True, False])), np.array([False, True]))


@pytest.mark.parametrize("shapes", [((3,), (3,), (3,)), ((2, 3), (3,), ()), ((2, 1), (1, 4), (4,)),
                                    ((), (0,), ())], ids=str)
def test_where_matches_numpy(shapes):
    rng = np.random.default_rng(4)
    c = rng.random(shapes[0]) > 0.5
    x, y = rng.standard_normal(shapes[1]), rng.standard_normal(shapes[2])
    _check(fnp.where(fg.tensor(c), fg.tensor(x), fg.tensor(y)), np.where(c, x, y))
    # non-bool conditions use truthiness
    _check(fnp.where(fg.tensor(c.astype(np.int32) * 3), fg.tensor(x), 0.0), np.where(c, x, 0.0))


def test_where_promotes_and_keeps_weak_scalars():
    x = fg.ones(3, dtype=fg.float16)
    assert fnp.where(fg.tensor([True, False, True]), x, 0.0).dtype == fg.float16
    assert fnp.where(fg.tensor([True, False]), 1, 2.0).dtype == fg.float32
    i = fg.tensor([1, 2], dtype=fg.int8)
    assert fnp.where(fg.tensor([True, False]), i, fg.tensor([1.0, 2.0])).dtype == fg.float32


def test_where_single_argument_is_nonzero():
    out = fnp.where(fg.tensor([0, 3, 0, 4]))
    assert len(out) == 1 and out[0].tolist() == [1, 3]
    with pytest.raises(ValueError, match="both"):
        fnp.where(fg.tensor([True]), 1.0)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_clip_matches_numpy(shape):
    x = _rand(shape, -3, 3)
    _check(fnp.clip(fg.tensor(x), -1.0, 0.5), np.clip(x, -1.0, 0.5))
    _check(fnp.clip(fg.tensor(x), None, 0.5), np.clip(x, None, 0.5))
    _check(fnp.clip(fg.tensor(x), min=-0.5), np.clip(x, -0.5, None))
    lo = np.full(shape, -0.1)
    _check(fnp.clip(fg.tensor(x), fg.tensor(lo), 1.0), np.clip(x, lo, 1.0))


def test_clip_keeps_dtype():
    assert fnp.clip(fg.tensor([1, 5, 9]), 2, 6).tolist() == [2, 5, 6]
    assert fnp.clip(fg.tensor([1, 5, 9]), 2, 6).dtype == fg.int32
    assert fnp.clip(fg.ones(2, dtype=fg.bfloat16), 0.0, 0.5).dtype == fg.bfloat16
    # Python int bounds past an integer dtype's range limit nothing (np.clip(uint8, -1, 3))
    small = fg.tensor(np.array([5, 0, 200], np.uint8))
    assert small.clip(-1, 3).tolist() == [3, 0, 3] and small.clip(-1, 3).dtype == fg.uint8
    assert small.clip(None, 300).tolist() == [5, 0, 200]
    assert fg.tensor(np.array([5, -100], np.int8)).clip(-300, 300).tolist() == [5, -100]


def test_maximum_propagates_nan():
    x = np.array([np.nan, 1.0, 2.0])
    y = np.array([0.0, np.nan, 1.0])
    _check(fnp.maximum(fg.tensor(x), fg.tensor(y)), np.maximum(x, y))
    _check(fnp.minimum(fg.tensor(x), fg.tensor(y)), np.minimum(x, y))


def test_maximum_on_bools():
    a, b = np.array([True, False, False]), np.array([False, False, True])
    _check(fnp.maximum(fg.tensor(a), fg.tensor(b)), np.maximum(a, b))
    _check(fnp.minimum(fg.tensor(a), fg.tensor(b)), np.minimum(a, b))


@pytest.mark.parametrize("wrap", [lambda f: f, fg.jit], ids=["eager", "jit"])
def test_logaddexp_gradient_is_the_softmax_weights_also_at_ties(wrap):
    x = fg.tensor(np.array([1.0, 2.0, -3.0]))
    y = fg.tensor(np.array([1.0, 0.0, -3.0]))
    gx, gy = wrap(fg.grad(lambda x, y: fnp.logaddexp(x, y).sum(), argnums=(0, 1)))(x, y)
    out = np.logaddexp(x.numpy(), y.numpy())
    np.testing.assert_allclose(gx.numpy(), np.exp(x.numpy() - out), rtol=1e-12)
    np.testing.assert_allclose(gy.numpy(), np.exp(y.numpy() - out), rtol=1e-12)


def test_logaddexp_is_stable():
    big = fnp.logaddexp(fg.tensor([1000.0, -math.inf]), fg.tensor([1000.0, -math.inf]))
    np.testing.assert_allclose(np.asarray(big), [1000.0 + math.log(2.0), -math.inf])


def test_scalar_arguments_are_accepted():
    _check(fnp.add(1.0, 2.0), np.float32(3.0))
    _check(fnp.multiply(2, 3), np.int32(6))
    _check(fnp.maximum([1.0, 5.0], 3.0), np.array([3.0, 5.0], np.float32))
    _check(fnp.exp(np.array(0.0)), np.float64(1.0))
    _check(fnp.sin(np.array([0.0])), np.array([0.0]))


# --- broadcasting (hypothesis) ----------------------------------------------------------

_BINARY_FOR_HYPOTHESIS = ["add", "subtract", "multiply", "divide", "maximum", "minimum",
                          "arctan2", "less", "equal", "logaddexp"]


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                               min_side=0, max_side=3),
       name=hs.sampled_from(_BINARY_FOR_HYPOTHESIS),
       seed=hs.integers(0, 2**16))
def test_binary_broadcasting_matches_numpy(shapes, name, seed):
    x = _rand(shapes.input_shapes[0], 0.5, 2.0, seed)
    y = _rand(shapes.input_shapes[1], 0.5, 2.0, seed + 1)
    got = getattr(fnp, name)(fg.tensor(x), fg.tensor(y))
    assert got.shape == shapes.result_shape
    _check(got, getattr(np, name)(x, y))


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3,
                                               max_side=3))
def test_where_broadcasting_matches_numpy(shapes):
    rng = np.random.default_rng(0)
    c = rng.random(shapes.input_shapes[0]) > 0.5
    x = rng.standard_normal(shapes.input_shapes[1])
    y = rng.standard_normal(shapes.input_shapes[2])
    _check(fnp.where(fg.tensor(c), fg.tensor(x), fg.tensor(y)), np.where(c, x, y))


@given(a=hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4),
       b=hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
def test_incompatible_shapes_name_the_op_and_both_shapes(a, b):
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(ValueError, match="multiply") as info:
            fnp.multiply(fg.ones(a), fg.ones(b))
        assert str(a) in str(info.value) and str(b) in str(info.value)
    else:
        assert fnp.multiply(fg.ones(a), fg.ones(b)).shape == np.broadcast_shapes(a, b)


def test_dtype_errors_name_the_op():
    with pytest.raises(TypeError, match="bitwise_or.*float32"):
        fnp.bitwise_or(fg.ones(2), fg.ones(2))
    with pytest.raises(TypeError, match="arctan2.*complex"):
        fnp.arctan2(fg.tensor([1j]), fg.tensor([1j]))
    with pytest.raises(OverflowError, match="300.*uint8"):
        fg.ones(2, dtype=fg.uint8) + 300


@pytest.mark.parametrize("dtype,decimals", [(np.int32, -1), (np.int8, -2), (np.int64, -3),
                                            (np.uint8, -1), (np.int16, -6)])
def test_round_integers_to_negative_decimals_as_numpy(dtype, decimals):
    data = np.array([15, 25, -35, 44, -45, 5, 149, -150, 127, 0], np.int64)
    data = data[(data >= np.iinfo(dtype).min) & (data <= np.iinfo(dtype).max)].astype(dtype)
    want = np.round(data, decimals)
    np.testing.assert_array_equal(fnp.round(fg.tensor(data), decimals), want)
    np.testing.assert_array_equal(fg.jit(lambda x: x.round(decimals))(fg.tensor(data)), want)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
def test_float_to_int_saturates_and_maps_nan_to_zero(dtype):
    # as JAX/XLA (a plain C cast is undefined there); eager and jit agree
    info = np.iinfo(dtype)
    data = np.array([np.nan, 1e30, -1e30, np.inf, -np.inf, 3.7, -2.5], np.float32)
    want = np.array([0, info.max, info.min, info.max, info.min, 3,
                     -2 if info.min < 0 else 0], dtype)
    np.testing.assert_array_equal(fg.tensor(data).astype(dtype), want)
    np.testing.assert_array_equal(fg.jit(lambda x: x.astype(dtype))(fg.tensor(data)), want)


def test_bool_arithmetic_and_ordering_eager_and_compiled():
    # as NumPy and JAX: + is or, * is and, max/min are or/and, False < True
    a = np.array([True, False, True, False])
    b = np.array([True, True, False, False])
    cases = [lambda x, y: x + y, lambda x, y: x * y, fnp.maximum, fnp.minimum,
             lambda x, y: x < y, lambda x, y: x >= y]
    for fun in cases:
        want = fun(a, b) if fun not in (fnp.maximum, fnp.minimum) else \
            (np.maximum if fun is fnp.maximum else np.minimum)(a, b)
        for run in (fun, fg.jit(fun)):
            got = run(fg.tensor(a), fg.tensor(b))
            assert got.dtype == np.bool_
            np.testing.assert_array_equal(got, want)


def test_shift_edge_cases_agree_eager_and_compiled():
    # amounts out of [0, bits), negative ones included, as XLA: 0 or the sign fill
    x = fg.tensor(np.array([8, -8], np.int32))
    for amount, right, left in (
        (-1, [0, -1], [0, 0]),
        (40, [0, -1], [0, 0]),
        (1, [4, -4], [16, -16]),
    ):
        for run in (lambda f: f, fg.jit):
            np.testing.assert_array_equal(run(lambda a: a >> amount)(x), right)  # noqa: B023
            np.testing.assert_array_equal(run(lambda a: a << amount)(x), left)  # noqa: B023
    with pytest.raises(TypeError, match="integer"):
        fg.tensor([8.0]) >> fg.tensor([1.0])


def test_bfloat16_to_int_saturates_eagerly_too():
    x = fg.tensor(np.array([np.nan, np.inf, -np.inf, 3.5], np.float32)).astype(fg.bfloat16)
    want = [0, np.iinfo(np.int32).max, np.iinfo(np.int32).min, 3]
    np.testing.assert_array_equal(x.astype(fg.int32), want)
    np.testing.assert_array_equal(fg.jit(lambda a: a.astype(fg.int32))(x), want)


def test_float_floor_divide_is_numpys_exact_rule():
    a = np.array([7.0, -7.0, 7.0, -7.0, np.inf, -5, -5, 0.0, -0.0, 5.0, 1.0, 3.0], np.float32)
    b = np.array([0.1, 0.1, -0.1, -0.1, 2, np.inf, -np.inf, 3.0, 3.0, 0.0, -0.0, np.nan],
                 np.float32)
    with np.errstate(all="ignore"):
        want = np.floor_divide(a, b)
    for run in (lambda f: f, fg.jit):
        got = run(fnp.floor_divide)(fg.tensor(a), fg.tensor(b)).numpy()
        np.testing.assert_array_equal(got, want)  # 7 // 0.1 is 69, not floor(7 / 0.1) = 70
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    x, y = np.random.default_rng(0).standard_normal((2, 500)) * [[10.0], [1.0]]
    np.testing.assert_array_equal((fg.tensor(x) // fg.tensor(y)).numpy(), x // y)


def test_ieee_edge_cases_as_numpy():
    inf, nan = np.inf, np.nan
    a = np.array([3, inf, nan, 1e30, 0, -2], np.float32)
    b = np.array([4, nan, inf, 1e30, 0, 1e-30], np.float32)
    signs = np.array([-nan, nan, -0.0, 0.0, -1, 1, -inf], np.float32)
    z = np.array([complex(nan, 1), complex(1, nan), complex(2, inf)], np.complex64)
    for run in (lambda f: f, fg.jit):
        # hypot without overflow in the squares, inf beats NaN
        np.testing.assert_array_equal(run(fnp.hypot)(fg.tensor(a), fg.tensor(b)).numpy(),
                                      np.hypot(a, b))
        np.testing.assert_array_equal(run(fnp.signbit)(fg.tensor(signs)).numpy(),
                                      np.signbit(signs))
        np.testing.assert_array_equal(
            run(lambda x: fnp.heaviside(x, 0.5))(fg.tensor([nan, -1.0, 0.0, 2.0])).numpy(),
            np.heaviside([nan, -1.0, 0.0, 2.0], 0.5))
        np.testing.assert_array_equal(run(fnp.nan_to_num)(fg.tensor(z)).numpy(),
                                      np.nan_to_num(z))


def test_complex_logaddexp():
    a = np.array([1 + 1j, -3 + 0.2j, 50 + 1j], np.complex64)
    b = np.array([2 - 0.5j, 1 + 2j, 49 - 1j], np.complex64)
    want = np.log(np.exp(a.astype(complex)) + np.exp(b.astype(complex)))
    for run in (lambda f: f, fg.jit):
        np.testing.assert_allclose(run(fnp.logaddexp)(fg.tensor(a), fg.tensor(b)).numpy(),
                                   want, rtol=1e-5)


def test_arithmetic_without_a_boolean_meaning_counts_bools_as_int32_as_jax():
    t, f = fg.tensor([True, False]), fg.tensor([True, True])
    for fn, want in ((fnp.floor_divide, [1, 0]), (fnp.remainder, [0, 0]), (fnp.fmod, [0, 0]),
                     (fnp.power, [1, 0]), (lambda a, b: fnp.square(a), [1, 0])):
        for run in (lambda g: g, fg.jit):
            out = run(fn)(t, f)
            assert out.dtype == fg.int32
            np.testing.assert_array_equal(out.numpy(), want)


def test_conjugate_of_real_tensors_is_the_tensor_also_under_jit():
    for values in ([1, 2], [True, False], [1.5]):
        t = fg.tensor(values)
        for run in (lambda f: f, fg.jit):
            out = run(fnp.conj)(t)
            assert out.dtype == t.dtype
            np.testing.assert_array_equal(out.numpy(), t.numpy())


def test_bool_bit_shifts_shift_as_int32():
    """As JAX: bools shift as int32 (True << True is 2); floats are refused."""
    b = fg.tensor([True, False])
    for got in (b << True, fg.jit(lambda a: a << a)(b)):
        assert got.dtype == fg.int32 and got.tolist() == [2, 0]
    assert fnp.right_shift(b, b).tolist() == [0, 0]
    with pytest.raises(TypeError, match="bit shifts need integer operands, got float32"):
        fg.tensor([1.0]) << 1
