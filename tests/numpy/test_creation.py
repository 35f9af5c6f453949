"""Creation functions against NumPy: zeros/ones/full/empty(+_like), arange, linspace, eye,
tri, meshgrid; default dtypes as JAX's (float32 and int32)."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp


def _check(got, expected, rtol=0, atol=0):
    assert isinstance(got, fg.Tensor)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=atol)


SHAPES = [(), 0, 3, (2, 3), (2, 0, 4), [1, 2]]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [None, "float64", "int32", "int8", "bool", "bfloat16",
                                   "complex64"])
def test_zeros_ones_empty_full(shape, dtype):
    default = np.float32 if dtype is None else fg.zeros((), dtype=dtype).dtype
    for fg_fn, np_fn in ((fg.zeros, np.zeros), (fg.ones, np.ones), (fnp.zeros, np.zeros)):
        _check(fg_fn(shape, dtype=dtype), np_fn(shape, dtype=default))
    assert fg.empty(shape, dtype=dtype).shape == np.empty(shape).shape
    assert fg.empty(shape, dtype=dtype).dtype == default
    int_default = np.int32 if dtype is None else default
    _check(fg.full(shape, 3, dtype=dtype), np.full(shape, 3, dtype=int_default))


def test_full_infers_dtype_from_value():
    assert fg.full((2,), 1.5).dtype == fg.float32
    assert fg.full((2,), 7).dtype == fg.int32
    assert fg.full((2,), True).dtype == fg.bool_
    assert fg.full((2,), 1j).dtype == fg.complex64
    assert fg.full((2,), np.float64(1.5)).dtype == fg.float64
    assert fg.full((2,), fg.tensor(2, dtype=fg.int8)).dtype == fg.int8
    _check(fg.full((2, 3), fg.tensor([1.0, 2.0, 3.0])), np.full((2, 3), [1.0, 2.0, 3.0],
                                                                np.float32))


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.bool_, np.float32])
def test_like_functions(dtype):
    x = np.arange(6).reshape(2, 3).astype(dtype)
    t = fg.tensor(x)
    _check(fg.zeros_like(t), np.zeros_like(x))
    _check(fg.ones_like(t), np.ones_like(x))
    _check(fg.full_like(t, 1), np.full_like(x, 1))
    assert fg.empty_like(t).shape == x.shape and fg.empty_like(t).dtype == x.dtype
    _check(fg.zeros_like(t, dtype=fg.float16), np.zeros_like(x, dtype=np.float16))
    _check(fnp.ones_like(x, shape=(4,)), np.ones((4,), dtype))
    _check(fg.zeros_like(x), np.zeros_like(x))  # a NumPy array works too


def test_bad_shapes():
    with pytest.raises(ValueError, match="negative"):
        fg.zeros((2, -1))
    with pytest.raises(TypeError, match="shape"):
        fg.ones("abc")
    with pytest.raises(ValueError, match="valid dtypes"):
        fg.zeros(2, dtype="float8")


@pytest.mark.parametrize("args", [(5,), (0,), (2, 7), (7, 2), (2, 10, 3), (10, 2, -3),
                                  (-5, 5, 2), (3, 3)])
def test_arange_ints_are_int32(args):
    _check(fg.arange(*args), np.arange(*args).astype(np.int32))
    _check(fnp.arange(*args), np.arange(*args).astype(np.int32))


@pytest.mark.parametrize("args", [(5.0,), (0.5, 3.0), (0, 1, 0.1), (1.0, 0.0, -0.25),
                                  (0, 2.5), (-1, 1, 0.3)])
def test_arange_floats_are_float32(args):
    _check(fg.arange(*args), np.arange(*args).astype(np.float32), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "int8", "float16", "int64", "uint8"])
def test_arange_dtype(dtype):
    _check(fg.arange(0, 10, 2, dtype=dtype), np.arange(0, 10, 2, dtype=dtype))
    _check(fg.arange(0.5, 4.0, dtype="float64"), np.arange(0.5, 4.0, dtype=np.float64))


def test_arange_errors_and_tensor_args():
    with pytest.raises(ValueError, match="step"):
        fg.arange(0, 5, 0)
    _check(fg.arange(fg.tensor(3)), np.arange(3).astype(np.int32))


def test_arange_keeps_the_dtype_of_numpy_scalars_and_tensors():
    # NumPy values keep their dtype (API.md): np.float64 bounds give float64, as in NumPy
    _check(fg.arange(np.float64(0.0), 1.0, 0.25), np.arange(0.0, 1.0, 0.25))
    _check(fg.arange(np.int64(4)), np.arange(4, dtype=np.int64))
    _check(fg.arange(fg.tensor(np.float64(2.5))), np.arange(2.5))
    _check(fg.arange(np.float32(1.0), 3), np.arange(1.0, 3.0, dtype=np.float32))


@pytest.mark.parametrize("start,stop,num,endpoint", [
    (0.0, 1.0, 5, True), (0.0, 1.0, 5, False), (-2.0, 3.0, 1, True), (1.0, 0.0, 7, True),
    (0.0, 1.0, 0, True), (0, 10, 11, True), (2.0, 2.0, 3, True), (0.0, 1.0, 2, False),
])
def test_linspace(start, stop, num, endpoint):
    expected = np.linspace(start, stop, num, endpoint=endpoint).astype(np.float32)
    _check(fg.linspace(start, stop, num, endpoint=endpoint), expected, rtol=1e-6, atol=1e-6)
    got64 = fg.linspace(start, stop, num, endpoint=endpoint, dtype="float64")
    _check(got64, np.linspace(start, stop, num, endpoint=endpoint), rtol=1e-14, atol=1e-14)


def test_linspace_endpoint_is_exact_and_retstep():
    out = fg.linspace(0.0, 0.3, 7)
    assert out[-1].item() == np.float32(0.3)
    out, step = fg.linspace(0.0, 1.0, 5, retstep=True)
    np.testing.assert_allclose(np.asarray(step), 0.25)
    assert fg.linspace(0.0, 1.0).shape == (50,)


def test_linspace_vector_endpoints_and_int_dtype():
    start, stop = np.array([0.0, 1.0]), np.array([1.0, 3.0])
    _check(fg.linspace(fg.tensor(start), fg.tensor(stop), 4),
           np.linspace(start, stop, 4), rtol=1e-14)
    _check(fg.linspace(fg.tensor(start), fg.tensor(stop), 4, axis=1),
           np.linspace(start, stop, 4, axis=1), rtol=1e-14)
    _check(fg.linspace(0, 10, 4, dtype="int32"), np.linspace(0, 10, 4, dtype=np.int32))
    _check(fg.linspace(-5, 5, 4, dtype="int32"), np.linspace(-5, 5, 4, dtype=np.int32))
    with pytest.raises(ValueError, match="num"):
        fg.linspace(0.0, 1.0, -1)


@pytest.mark.parametrize("n,m,k", [(3, None, 0), (3, 4, 0), (4, 2, 1), (3, 3, -1), (3, 3, 5),
                                   (0, None, 0), (2, 3, -2)])
def test_eye_and_tri(n, m, k):
    _check(fg.eye(n, m, k), np.eye(n, m, k, dtype=np.float32))
    _check(fg.eye(n, m, k, dtype="int32"), np.eye(n, m, k, dtype=np.int32))
    _check(fnp.tri(n, m, k), np.tri(n, m, k, dtype=np.float32))
    _check(fnp.tri(n, m, k, dtype=fg.bool_), np.tri(n, m, k, dtype=bool))


def test_identity():
    _check(fnp.identity(3, dtype="float64"), np.identity(3))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
    xs = [np.arange(3.0), np.arange(4.0) * 2, np.arange(2.0) - 1]
    for count in (1, 2, 3):
        got = fnp.meshgrid(*[fg.tensor(x) for x in xs[:count]], indexing=indexing,
                           sparse=sparse)
        expected = np.meshgrid(*xs[:count], indexing=indexing, sparse=sparse)
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            _check(g, e)


def test_logspace():
    _check(fnp.logspace(0.0, 2.0, 3), np.logspace(0.0, 2.0, 3).astype(np.float32), rtol=1e-6)


def test_array_and_asarray_aliases():
    assert fg.asarray is fg.tensor
    _check(fnp.array([1, 2]), np.array([1, 2], np.int32))
    _check(fnp.asarray(np.arange(3.0)), np.arange(3.0))
    _check(fnp.asarray([1, 2], dtype="float64"), np.array([1.0, 2.0]))


def test_functions_take_lists_of_traced_values_as_eagerly():
    """fnp.linalg.norm([dx, dy]) works eagerly; under grad, vmap and jit the list holds
    tracers, which every function converts as fg.asarray does (stacked by operations)."""
    x = fg.tensor([3.0, 4.0, 1.0])

    def f(x):
        return fnp.linalg.norm([x[0], x[1]]) + fnp.sum(fnp.maximum([x[0], 2.0], [x[2], x[2]]))

    assert float(f(x)) == 5.0 + 3.0 + 2.0
    want = np.array([0.6 + 1.0, 0.8, 0.0])
    np.testing.assert_allclose(fg.grad(f)(x).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(fg.jit(fg.grad(f))(x).numpy(), want, rtol=1e-6)
    got = fg.vmap(lambda a: fnp.sum(fnp.stack([a, a]) * fnp.asarray([a, 1.0])))(x)
    np.testing.assert_allclose(got.numpy(), x.numpy() ** 2 + x.numpy())
    assert fg.vmap(lambda a: fnp.sum([a, a]))(x).tolist() == [6.0, 8.0, 2.0]


def test_creation_on_a_device():
    assert fg.zeros(2, device="cpu").device == fg.device("cpu")
    assert fg.ones(2, device=fg.device("cpu")).device == fg.device("cpu")
    assert fg.arange(3, device="cpu").device == fg.device("cpu")
    with pytest.raises(ValueError, match="unknown device"):
        fg.zeros(2, device="tpu")


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="negative dimensions"):
        fg.eye(-1)
    with pytest.raises(ValueError, match="negative dimensions"):
        fnp.tri(2, -3)
    with pytest.raises(TypeError, match="linspace: num must be an int"):
        fg.linspace(0.0, 1.0, 2.5)
    with pytest.raises(ValueError, match="arange"):
        fg.arange(float("inf"))
    with pytest.raises(TypeError, match="shape"):
        fg.zeros(2.5)


def test_python_ints_out_of_range_for_the_requested_dtype_raise():
    # as NumPy 2 and jnp.array: no silent wrap-around
    for data, dtype in (([300], fg.int8), (300, fg.int8), ([-1], fg.uint8), ([2**31], fg.int32)):
        with pytest.raises(OverflowError, match="out of bounds"):
            fg.tensor(data, dtype=dtype)
    assert fg.tensor([2**40], dtype=fg.int64).tolist() == [2**40]
    assert fg.tensor([255], dtype=fg.uint8).tolist() == [255]


def test_eye_and_linspace_take_a_device():
    assert fg.eye(2, device="cpu").device == fg.device("cpu")
    values, step = fnp.linspace(0, 1, 3, retstep=True, device="cpu")
    assert values.tolist() == [0.0, 0.5, 1.0] and float(step) == 0.5


def test_numpy_namespace_dtypes_construct_like_jnp():
    # fnp.float32(x) makes a 0-d tensor (as jnp.float32), and is still a dtype everywhere
    half = fnp.float32(0.5)
    assert isinstance(half, fg.Tensor) and half.dtype == np.float32 and half.item() == 0.5
    assert fnp.int32(fg.tensor([1.7, -2.2])).tolist() == [1, -2]
    assert fg.jit(lambda x: fnp.int32(x) + 1)(fg.tensor([1.5])).tolist() == [2]
    assert fnp.float32 == np.float32 and np.dtype("float32") == fnp.float32
    assert fg.ones(2, dtype=fnp.bfloat16).dtype == fg.bfloat16
    assert fg.tensor([1, 2]).astype(fnp.float64).dtype == np.float64
    assert {np.dtype("int8"): "found"}[fnp.int8] == "found"
    assert fnp.float32.name == "float32" and fnp.finfo(fnp.float16).bits == 16


def test_top_level_dtypes_are_the_same_constructors():
    # fg.float32 is fnp.float32: a dtype everywhere, and callable as jnp.float32
    import copy
    import pickle

    assert fg.float32 is fnp.float32 and fg.bool_ is fnp.bool_
    assert fg.float32(1.5).dtype == np.float32 and fg.float32(1.5).item() == 1.5
    assert fg.int8(fg.tensor([3.9, -1.2])).tolist() == [3, -1]
    assert fg.zeros(3, dtype=fg.float64).dtype == fg.float64 == np.float64
    assert np.zeros(2, fg.uint8).dtype == np.uint8
    assert fg.promote_types(fg.int8, fg.float16) == fg.float16
    for dtype in (fg.float32, fg.bool_, fg.bfloat16, fg.complex64):
        assert pickle.loads(pickle.dumps(dtype)) is dtype and copy.deepcopy(dtype) is dtype


def test_dtype_introspection_as_jax_numpy():
    assert fnp.issubdtype(fnp.bfloat16, fnp.floating)  # NumPy alone says False
    assert fnp.issubdtype(fg.int8, fnp.signedinteger) and not fnp.issubdtype(fg.uint8,
                                                                               fnp.signedinteger)
    assert fnp.issubdtype(np.float32, np.float32) and not fnp.issubdtype(np.float32, np.float64)
    assert fnp.isdtype(fnp.bfloat16, "real floating") and fnp.isdtype(fg.complex64,
                                                                        "complex floating")
    assert fnp.isdtype(fg.int8, ("integral", fg.float32)) and not fnp.isdtype(fg.bool_,
                                                                               "numeric")
    assert fnp.can_cast(fg.int8, fg.float16) and fnp.can_cast(fg.bfloat16, fg.float32)
    assert not fnp.can_cast(fg.bfloat16, fg.float16) and not fnp.can_cast(fg.int64, fg.int32)
    assert fnp.double is fnp.float64 and fnp.single is fnp.float32 and fnp.bool is fnp.bool_
    assert fnp.cdouble(1.0).dtype == np.complex128 and fnp.dtype("int16") == fg.int16
    with pytest.raises(ValueError, match="unknown kind"):
        fnp.isdtype(fg.float32, "float")


def test_asarray_and_copy_do_not_share_memory_with_numpy_arrays():
    """As jnp.asarray: a Tensor is immutable, so later changes to the NumPy array it was
    made from do not reach it (eagerly or through jit); copy=False opts into sharing."""
    arr = np.arange(4, dtype=np.float32)
    made = [fnp.asarray(arr), fnp.copy(arr), fnp.asarray(arr, dtype=fnp.float32),
            fnp.array(arr)]
    shared = fnp.asarray(arr, copy=False)
    double = fg.jit(lambda x: x * 2)
    before = [double(t).numpy() for t in made]
    arr[:] = 7
    for t, b in zip(made, before, strict=True):
        np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])
        np.testing.assert_array_equal(double(t).numpy(), b)
    np.testing.assert_array_equal(shared.numpy(), [7, 7, 7, 7])
    t = fg.tensor([1.0, 2.0])
    assert fnp.asarray(t) is t and fnp.copy(t) is not t and fnp.copy(t).tolist() == [1.0, 2.0]
    assert fnp.asarray(2.0).weak_type and fnp.asarray(2.0).dtype == fnp.float32
    assert fnp.asarray(t, dtype=fnp.float64).dtype == fnp.float64
    with pytest.raises(ValueError, match="order='F'"):
        fnp.asarray(arr, order="F")


def test_like_functions_take_a_device_eye_an_integer_diagonal_tensor_a_range():
    x = fg.ones((2, 3), dtype=fg.float16)
    for make in (fnp.zeros_like, fnp.ones_like, fnp.empty_like,
                 lambda x, **kw: fnp.full_like(x, 2.0, **kw)):
        out = make(x, device="cpu")
        assert out.shape == (2, 3) and out.dtype == fg.float16 and out.device == fg.device("cpu")
    with pytest.raises(ValueError, match="k .* must be an integer, got 1.5"):
        fnp.eye(3, k=1.5)
    np.testing.assert_array_equal(fnp.eye(3, k=np.int64(1)).numpy(), np.eye(3, k=1))
    assert fg.tensor(range(3)).tolist() == [0, 1, 2] and fg.tensor(range(3)).dtype == fg.int32


def test_traced_sizes_name_the_argument_and_the_fix():
    from funcgrad.core.interpreter import ConcretizationError

    x = fg.tensor([1.0, 2.0, 3.0])
    for make in (lambda a, n: fnp.zeros(n), lambda a, n: fnp.ones((n, 2)),
                 lambda a, n: fnp.full(n, 2.0), lambda a, n: fnp.arange(n)):
        with pytest.raises(ConcretizationError, match=r"argument n.*static_argnums"):
            fg.jit(make)(x, 3)
    assert fg.jit(lambda a, n: fnp.zeros(n), static_argnums=1)(x, 3).shape == (3,)


@pytest.mark.parametrize("args", [(0, 5, 1.5), (0.5, 5, 1.5), (5, 0, -1.5), (-2.5, 3.0)])
def test_integer_arange_with_float_arguments_follows_numpy(args):
    for dtype in (np.int32, np.int8, np.uint8):
        if dtype == np.uint8 and min(args) < 0:
            continue
        np.testing.assert_array_equal(fnp.arange(*args, dtype=dtype).numpy(),
                                      np.arange(*args, dtype=dtype))


def test_full_broadcasts_a_list_and_huge_ints_are_named():
    np.testing.assert_array_equal(fg.full((2, 3), [1, 2, 3]).numpy(), [[1, 2, 3]] * 2)
    with pytest.raises(ValueError, match="broadcast"):
        fg.full((2,), [1, 2, 3])
    with pytest.raises(OverflowError, match="does not fit any integer dtype"):
        fg.tensor([10**30])
