"""Every family of primitives exported to ONNX and run in ONNX Runtime, across dtypes."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.primitive import registry
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims import indexing, sorting
from funcgrad.core.prims import structural as st
from funcgrad.export.testing import check_onnx

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

rng = np.random.default_rng(0)
FLOATS = ["float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
LOW_PRECISION = ["float16", "bfloat16"]


def sample(dtype, shape=(12,), low=-0.9, high=0.9):
    dtype = np.dtype(getattr(fg, dtype) if dtype == "bfloat16" else dtype)
    if dtype == np.bool_:
        return fg.tensor(rng.random(shape) > 0.5)
    if dtype.kind == "f" or dtype == fg.bfloat16:
        return fg.tensor(rng.uniform(low, high, shape).astype(dtype))
    info = np.iinfo(dtype)
    return fg.tensor(rng.integers(max(info.min, int(low * 20)), min(info.max, int(high * 20)),
                                  shape).astype(dtype))


def bind(name, **params):
    return lambda *xs: registry[name].bind(*xs, **params)


def through(dtype, fun):
    """``fun`` on ``dtype`` values built from float32 inputs inside the model (ONNX
    Runtime's Python API cannot feed bfloat16), with float32 results."""

    def wrapped(*xs):
        outs = fun(*[ew.convert_element_type(x, dtype) for x in xs])
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return [ew.convert_element_type(o, np.float32) if o.dtype == dtype else o
                for o in outs]

    return wrapped


UNARY_FLOAT = ["neg", "sign", "floor", "ceil", "round", "is_finite", "exp", "log1p", "expm1",
               "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
               "cosh", "asinh", "atanh", "abs", "erf", "erf_inv"]
POSITIVE_FLOAT = ["log", "sqrt", "rsqrt"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY_FLOAT + POSITIVE_FLOAT + ["acosh"])
def test_unary_float(name, dtype):
    x = sample(dtype, low=0.1 if name in POSITIVE_FLOAT else -0.9)
    if name == "acosh":
        x = x + 1.5
    rtol = 1e-12 if dtype == "float64" else 2e-6
    check_onnx(bind(name), x, rtol=rtol * (100 if name == "erf_inv" else 1))


@pytest.mark.parametrize("dtype", LOW_PRECISION)
@pytest.mark.parametrize("name", ["exp", "tanh", "sin", "sqrt", "abs", "floor"])
def test_unary_low_precision(name, dtype):
    check_onnx(through(np.dtype(getattr(fg, dtype)), bind(name)),
               sample("float32", low=0.1), rtol=1e-2)


def test_special_float_values():
    x = fg.tensor(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -3.5, 2.5], np.float32))
    for name in ("is_finite", "abs", "sign", "round", "expm1", "log1p"):
        check_onnx(bind(name), x)
    check_onnx(lambda a, b: (fnp.maximum(a, b), fnp.minimum(a, b), fnp.arctan2(a, b)),
               x, x[::-1])


BINARY_FLOAT = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "eq", "ne",
                "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", BINARY_FLOAT)
def test_binary_float(name, dtype):
    low = 0.1 if name == "pow" else -0.9
    check_onnx(bind(name), sample(dtype, low=low), sample(dtype, low=low))


BINARY_INT = ["add", "sub", "mul", "div", "rem", "max", "min", "and", "or", "xor", "eq", "ne",
              "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", BINARY_INT)
def test_binary_int(name, dtype):
    x, y = sample(dtype), sample(dtype)
    if name in ("div", "rem"):
        y = y.at[0].set(0)  # division by zero gives XLA's values, not a crash
    check_onnx(bind(name), x, y)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_division_overflow(dtype):
    info = np.iinfo(dtype)
    x = fg.tensor(np.array([info.min, info.min, 7, -7, 7, -7], dtype))
    y = fg.tensor(np.array([-1, 0, 2, 2, -2, 0], dtype))
    check_onnx(lambda a, b: (bind("div")(a, b), bind("rem")(a, b)), x, y)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", ["shift_left", "shift_right_logical",
                                  "shift_right_arithmetic"])
def test_shifts(name, dtype):
    bits = np.dtype(dtype).itemsize * 8
    x = sample(dtype, low=-1.0, high=1.0)
    amounts = np.array([0, 1, 3, bits - 1, bits, bits + 3, 2, 5, 1, 0, 7, 4])
    if np.dtype(dtype).kind == "i":
        amounts[-1] = -1
    y = fg.tensor(amounts.astype(dtype))
    check_onnx(bind(name), x, y)


@pytest.mark.parametrize("dtype", INTS + ["bool"])
def test_not_and_unsigned_unary(dtype):
    x = sample(dtype)
    check_onnx(bind("not"), x)
    if dtype != "bool":
        check_onnx(lambda a: (bind("neg")(a), bind("abs")(a), bind("sign")(a)), x)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_pow_and_pow(dtype):
    x = fg.tensor(np.array([-3, -1, 0, 1, 2, 5], dtype))
    y = fg.tensor(np.array([2, 3, 0, -2, -1, 3], dtype))
    check_onnx(bind("pow"), x, y)
    for n in (0, 1, 2, 3, 7):
        check_onnx(bind("integer_pow", y=n), x)


@pytest.mark.parametrize("n", [-3, -1, 0, 2, 5])
def test_integer_pow_float(n):
    check_onnx(bind("integer_pow", y=n), sample("float32", low=0.5, high=2.0), rtol=1e-5)


def test_bool_ops():
    a, b = sample("bool"), sample("bool")
    check_onnx(lambda a, b: (a & b, a | b, a ^ b, ~a, a == b, a != b, fnp.maximum(a, b),
                             fnp.minimum(a, b), fnp.where(a, b, ~b)), a, b)


@pytest.mark.parametrize("dtype", INTS + FLOATS + ["bool", "float16"])
def test_select_n_and_convert(dtype):
    cases = [sample(dtype) for _ in range(3)]
    which = fg.tensor(rng.integers(0, 3, 12).astype(np.int32))
    check_onnx(lambda w, a, b, c: ew.select_n(w, a, b, c), which, *cases)
    check_onnx(lambda p, a, b: ew.select_n(p, a, b), sample("bool"), *cases[:2])
    for target in ("float32", "int32", "bool", "uint8"):
        check_onnx(lambda x, t=target: ew.convert_element_type(x, np.dtype(t)), cases[0])


# --- structural -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint64", "bool", "bfloat16"])
def test_structural(dtype):
    if dtype == "bfloat16":
        wrap = lambda f: through(np.dtype(fg.bfloat16), f)
        x = sample("float32", (2, 3, 4))
    else:
        wrap = lambda f: f
        x = sample(dtype, (2, 3, 4))
    zero = lambda x: np.zeros((), x.dtype)
    funs = [
        lambda x: st.broadcast_in_dim(x, (5, 2, 3, 4), (1, 2, 3)),
        lambda x: st.broadcast_in_dim(st.slice_(x, (0, 0, 0), (2, 1, 4)), (2, 3, 4), (0, 1, 2)),
        lambda x: st.reshape(x, (6, 4)),
        lambda x: st.transpose(x, (2, 0, 1)),
        lambda x: st.slice_(x, (0, 1, 0), (2, 3, 4), (1, 1, 3)),
        lambda x: st.pad(x, zero(x), ((1, 0, 0), (0, 2, 1), (-1, 1, 2))),
        lambda x: st.concatenate((x, x, x), 1),
        lambda x: st.rev(x, (0, 2)),
    ]
    for fun in funs:
        check_onnx(wrap(fun), x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int16", "uint8"])
def test_iota(dtype):
    check_onnx(lambda: (st.iota(np.dtype(dtype), (3, 4), 1), st.iota(np.dtype(dtype), (5,), 0)))


def test_numpy_shape_functions():
    x = sample("float32", (3, 4))
    check_onnx(lambda x: (fnp.flip(x, 0), fnp.roll(x, 1, 1), fnp.tile(x, (2, 1)),
                          fnp.repeat(x, 2, 0), fnp.pad(x, ((1, 2), (0, 1)), mode="edge"),
                          fnp.split(x, 2, 1), fnp.moveaxis(x[None], 0, 2), x.T, x[::-1, 1::2]),
               x)


# --- dot_general ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "uint64"])
def test_dot_general(dtype):
    a, b = sample(dtype, (2, 3, 4)), sample(dtype, (2, 4, 5))
    check_onnx(lambda a, b: (a @ b, fnp.einsum("bij,bjk->ik", a, b), a[0] @ b[0],
                             a[0, 0] @ b[0], fnp.tensordot(a, b, ((0, 2), (0, 1))),
                             fnp.einsum("bij,cjk->bcik", a, b)), a, b, rtol=1e-5)


def test_dot_general_preferred_type():
    from funcgrad.core.prims.dot import dot_general

    a, b = sample("int8", (3, 4)), sample("int8", (4, 5))
    check_onnx(lambda a, b: dot_general(a, b, (((1,), (0,)), ((), ())), np.int32), a, b)


# --- reductions, cumulative, sort --------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int32", "uint32", "uint64"])
def test_reductions(dtype):
    x = sample(dtype, (3, 4, 5), low=-0.1 if dtype != "float32" else -0.9, high=0.15)
    check_onnx(lambda x: (x.sum(), x.sum((0, 2)), x.max(1), x.min((0, 1)),
                          fnp.prod(x, -1), fnp.argmax(x, 1), fnp.argmin(x, 2),
                          fnp.cumsum(x, 1), fnp.cumprod(x, 2)), x, rtol=1e-5)


def test_bool_reductions_and_empty_axes():
    x = sample("bool", (3, 4))
    check_onnx(lambda x: (fnp.all(x, 1), fnp.any(x, 0), fnp.any(x[:, :0], 1),
                          fnp.all(x[:, :0], 1)), x)


def test_argmax_nan_and_ties():
    x = fg.tensor(np.array([[1.0, 3.0, 3.0, np.nan, 0.0], [2.0, 2.0, 1.0, 1.0, 0.0]],
                           np.float32))
    check_onnx(lambda x: (fnp.argmax(x, 1), fnp.argmin(x, 1)), x)


def test_cumulative_reverse():
    from funcgrad.core.prims import reductions as rd

    x = sample("float32", (3, 6))
    check_onnx(lambda x: [rd.cumsum(x, 1, True), rd.cumprod(x, 1, True), rd.cummax(x, 1),
                          rd.cummin(x, 0, True), rd.cummax(x, 1, True)], x, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint32", "uint64", "bool"])
def test_sort_is_stable(dtype):
    x = sample(dtype, (3, 7), low=-0.2, high=0.2)  # many ties
    check_onnx(lambda x: (fnp.sort(x, 1), fnp.argsort(x, 1), fnp.sort(x, 0)), x)


def test_sort_puts_nan_last():
    x = fg.tensor(np.array([[3.0, np.nan, -np.inf, 1.0, np.inf, np.nan, 1.0]], np.float64))
    check_onnx(lambda x: (fnp.sort(x, 1), fnp.argsort(x, 1)), x)


def test_sort_several_keys():
    keys = fg.tensor(np.array([[2, 1, 2, 1, 0, 2]], np.int32))
    second = fg.tensor(np.array([[0.5, 0.2, 0.1, 0.2, 0.9, 0.5]], np.float32))
    payload = fg.tensor(np.arange(6, dtype=np.float32)[None])
    check_onnx(lambda a, b, c: sorting.sort((a, b, c), 1, num_keys=2), keys, second, payload)


# --- gather and scatter --------------------------------------------------------------------------


def test_numpy_indexing():
    x = sample("float32", (5, 4, 3))
    idx = fg.tensor(np.array([0, 2, -1, 1], np.int32))
    mask = fg.tensor(np.array([True, False, True, True]))
    check_onnx(lambda x, i, m: (x[i], x[:, i[:2]], x[1:, 2], x[i, :, i[:3, None]],
                                fnp.take(x, i, 1), x[..., None, 0],
                                fnp.take_along_axis(x, fnp.argsort(x, 2), 2),
                                fnp.where(m[None, :, None], x, 0.0)), x, idx, mask)


def test_gather_clamps_out_of_range():
    x = sample("int32", (4, 3))
    idx = np.array([[0, 2], [7, 1], [-5, -1], [3, 9]], np.int32)
    check_onnx(lambda x: indexing.gather(x, idx, (0, 1)), x)
    check_onnx(lambda x: indexing.gather(x, idx[:, :1], (1,)), x)


@pytest.mark.parametrize("mode", ["set", "add", "mul", "min", "max"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int16", "uint64"])
def test_scatter_modes_drop_out_of_range(mode, dtype):
    x = sample(dtype, (4, 3, 2))
    idx = np.array([[0, 2], [1, 1], [9, 0], [1, 1], [-1, 0]], np.int32)
    updates = sample(dtype, (5, 2), low=0.2, high=0.9)
    check_onnx(lambda x, u: indexing.scatter(x, idx, u, (0, 1), mode), x, updates)
    # axes out of order, duplicates
    check_onnx(lambda x, u: indexing.scatter(x, idx[:, ::-1] % 2, u, (2, 0), mode),
               x, sample(dtype, (5, 3), low=0.2, high=0.9))


def test_at_updates():
    x = sample("float32", (5, 3))
    i = fg.tensor(np.array([0, 2, 2, 4], np.int32))
    check_onnx(lambda x, i: (x.at[i].add(1.0), x.at[i, 1].set(-1.0), x.at[1:3].mul(2.0),
                             x.at[i].max(0.5), x.at[i].min(0.0)), x, i)


def test_dynamic_slicing():
    x = sample("float32", (6, 5))
    start = fg.tensor(np.int32(3))
    check_onnx(lambda x, s: (indexing.dynamic_slice(x, (s, 1), (2, 3)),
                             indexing.dynamic_update_slice(x, fg.ones((4, 2)), (s, s))),
               x, start)


@pytest.mark.parametrize("fun", [lambda a: a.max(), lambda a: a.min(),
                                 lambda a: fnp.max(a.reshape(2, 2), axis=1)])
def test_max_and_min_reductions_keep_nan(fun):
    # onnxruntime's ReduceMax/ReduceMin skip NaNs; the export must not
    check_onnx(fun, fg.tensor(np.array([1.0, np.nan, 3.0, 0.5], np.float32)))


def test_bool_scatter_min_max_run_in_onnx_runtime():
    # ORT's ScatterND has no bool min/max kernel: the model passed the checker, then failed
    x = fg.tensor(np.array([True, True, False]))
    check_onnx(lambda x: x.at[0].min(False), x)
    check_onnx(lambda x: x.at[fg.tensor([2, 2])].max(fg.tensor([True, False])), x)


def test_integer_sums_wrap_on_overflow_as_funcgrad():
    # ORT's int32 ReduceSum saturated at 2**31 - 1
    check_onnx(lambda x: fnp.sum(x), fg.tensor(np.array([2**31 - 1, 1], np.int32)))
    check_onnx(lambda x: fnp.sum(x, axis=0), fg.tensor(np.full((3, 2), 2**31 - 9, np.uint32)))


def test_float64_tan_of_large_arguments():
    # the Cody-Waite composition was wrong beyond |x| ~ 2e8 (tan(1e20): 0.0022, not -0.84)
    x = fg.tensor(np.array([0.5, -3.0, 1e10, 1e15, 1e20, 1e38, np.pi / 2, 1e300]))
    got = check_onnx(fnp.tan, x)[0]
    np.testing.assert_allclose(got, np.tan(x.numpy()), rtol=1e-14)


# --- found by a differential fuzz of exported programs against eager ------------------------


@pytest.mark.parametrize("source", ["float32", "float64", "float16"])
@pytest.mark.parametrize("target", ["int8", "int32", "int64", "uint8", "uint32", "uint64"])
def test_float_to_int_casts_saturate_as_eager(source, target):
    # a plain Cast gave INT_MIN for NaN, inf and 3e9; eager and jit saturate, NaN -> 0
    values = [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20, -1e20, -3.7, 3.7, 255.9, 256.0,
              -0.5, 127.5, -128.5, 2.0**31 - 128, -2.0**31]
    if source == "float64":
        values += [2.0**63, 2.0**63 - 1024, -2.0**63, 2.0**64, 2.0**64 - 2048, 1e300]
    x = fg.tensor(np.array(values, source))
    check_onnx(lambda a: ew.convert_element_type(a, np.dtype(target)), x)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32", "uint64"])
def test_integer_pow_with_tensor_exponents_is_exact(dtype):
    # ORT's integer Pow computes in double: 3 ** 39 came out 4052555153018976256
    signed = np.dtype(dtype).kind == "i"
    more_x, more_y = ([-3, -1, -1, 2], [5, 7, -3, -2]) if signed else ([4, 1, 3, 2],
                                                                         [3, 200, 41, 64])
    x = fg.tensor(np.array([3, 5, 7, 2, 0, 1, 2, 9] + more_x, dtype))
    y = fg.tensor(np.array([39, 27, 22, 0, 0, 9, 63, 11] + more_y, dtype))
    check_onnx(bind("pow"), x, y)


def test_float64_trig_is_accurate_near_multiples_of_half_pi():
    # ORT's float64 kernels alone gave cos(pi/2) = -0.0 and tan(pi/2) = -inf
    x = fg.tensor(np.array([np.pi / 2, np.pi, 3 * np.pi / 2, 1e5 * np.pi, 0.0, -0.0, 1e-300,
                            -7.5, 2.1e8, 1e10, 1e300, np.inf, np.nan]))
    for fun in (fnp.sin, fnp.cos, fnp.tan):
        got, want = check_onnx(fun, x, rtol=4e-16, atol=0)[0], fun(x).numpy()
        numbers = ~np.isnan(want)
        assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))  # -0.0


def test_float64_erf_and_erf_inv_are_accurate_for_small_arguments():
    # 1 - erfc(|x|) has an absolute error of 1e-16: erf_inv(1e-40) came out 0
    x = fg.tensor(np.array([0.0, -0.0, 1e-40, 1e-8, -1e-300, 0.3, -0.5, 0.7]))
    for fun in (ew.erf, ew.erf_inv):
        got = check_onnx(fun, x, rtol=4e-16, atol=0)[0]
        assert np.array_equal(np.signbit(got), np.signbit(fun(x).numpy()))


def test_zero_sized_shapes():
    # ONNX's Reshape reads a 0 in the target shape as "keep this dimension" (allowzero=0)
    x = fg.zeros((2, 0))
    check_onnx(lambda x: (fnp.sum(x, axis=0, keepdims=True), fnp.max(x, axis=0, keepdims=True),
                          x.reshape(0, 2), x[None], fnp.diff(x, axis=1)), x)
    check_onnx(lambda x: fnp.argsort(x, axis=1), fg.zeros((2, 0, 4)))
