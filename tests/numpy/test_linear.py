"""Products against NumPy in float64: matmul, dot, vdot, inner, outer, tensordot, over
0-d, 1-d, batched and empty shapes, with dtype promotion and shape errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs

import funcgrad as fg
import funcgrad.numpy as fnp

RNG = np.random.default_rng(0)


def _rand(shape):
    return RNG.standard_normal(shape)


def _check(got, expected, rtol=1e-12, atol=1e-12):
    assert isinstance(got, fg.Tensor)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=atol)


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((3,), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
                 ((1, 2, 3), (4, 3, 2)), ((2, 1, 2, 3), (3, 3, 1)), ((0, 3), (3, 2)),
                 ((2, 0), (0, 3)), ((0, 2, 3), (3, 1)), ((5, 2, 3), (3,))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes):
    a, b = _rand(shapes[0]), _rand(shapes[1])
    _check(fnp.matmul(fg.tensor(a), fg.tensor(b)), np.matmul(a, b))


DOT_SHAPES = [((), ()), ((), (3,)), ((2, 3), ()), ((3,), (3,)), ((2, 3), (3,)),
              ((3,), (3, 4)), ((2, 3), (3, 4)), ((2, 3), (4, 3, 5)), ((2, 4, 3), (3, 5)),
              ((2, 4, 3), (6, 3, 2)), ((0,), (0,))]


@pytest.mark.parametrize("shapes", DOT_SHAPES, ids=str)
def test_dot(shapes):
    a, b = _rand(shapes[0]), _rand(shapes[1])
    _check(fnp.dot(fg.tensor(a), fg.tensor(b)), np.dot(a, b))
    _check(fg.tensor(a).dot(fg.tensor(b)), np.dot(a, b))


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (6,)), ((2, 2), (2, 2)),
                                    ((0,), (0,))], ids=str)
def test_vdot(shapes):
    a, b = _rand(shapes[0]), _rand(shapes[1])
    _check(fnp.vdot(fg.tensor(a), fg.tensor(b)), np.vdot(a, b))
    za = a + 1j * _rand(shapes[0])
    zb = b - 2j * _rand(shapes[1])
    _check(fnp.vdot(fg.tensor(za), fg.tensor(zb)), np.vdot(za, zb))


@pytest.mark.parametrize("shapes", [((), ()), ((3,), ()), ((3,), (3,)), ((2, 3), (3,)),
                                    ((2, 3), (4, 3)), ((2, 2, 3), (4, 3)), ((0, 3), (2, 3))],
                         ids=str)
def test_inner(shapes):
    a, b = _rand(shapes[0]), _rand(shapes[1])
    _check(fnp.inner(fg.tensor(a), fg.tensor(b)), np.inner(a, b))


@pytest.mark.parametrize("shapes", [((3,), (4,)), ((), (2,)), ((2, 2), (3,)), ((0,), (3,)),
                                    ((), ())], ids=str)
def test_outer(shapes):
    a, b = _rand(shapes[0]), _rand(shapes[1])
    _check(fnp.outer(fg.tensor(a), fg.tensor(b)), np.outer(a, b))


@pytest.mark.parametrize("shapes,axes", [
    (((2, 3), (3, 4)), 1), (((2, 3, 4), (3, 4, 5)), 2), (((2, 3), (4, 5)), 0),
    (((2, 3, 4), (4, 3, 2)), ([1, 2], [1, 0])), (((3, 4), (4, 3)), ([0], [1])),
    (((3, 4), (4, 3)), (1, 0)), (((2, 3), (2, 3)), ([-1, 0], [-1, 0])),
    (((), ()), 0), (((0, 3), (3, 2)), 1),
])
def test_tensordot(shapes, axes):
    a, b = _rand(shapes[0]), _rand(shapes[1])
    _check(fnp.tensordot(fg.tensor(a), fg.tensor(b), axes), np.tensordot(a, b, axes))


@given(batch=hs.lists(hs.integers(1, 3), max_size=2), m=hs.integers(0, 3),
       k=hs.integers(0, 3), n=hs.integers(0, 3), squeeze_a=hs.booleans(),
       squeeze_b=hs.booleans(), drop=hs.integers(0, 2))
def test_matmul_shapes_hypothesis(batch, m, k, n, squeeze_a, squeeze_b, drop):
    a_shape = (k,) if squeeze_a else (*batch, m, k)
    b_shape = (k,) if squeeze_b else (*batch[drop:], k, n)
    a, b = _rand(a_shape), _rand(b_shape)
    _check(fnp.matmul(fg.tensor(a), fg.tensor(b)), np.matmul(a, b))


# --- dtypes --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int8",
                                   "complex64"])
def test_products_keep_dtype(dtype):
    a = fg.tensor(np.arange(6).reshape(2, 3) % 3).astype(dtype)
    b = fg.tensor(np.arange(12).reshape(3, 4) % 4).astype(dtype)
    for out in (a @ b, fnp.dot(a, b), fnp.tensordot(a, b, 1), fnp.inner(a, a),
                fnp.outer(a, b), fnp.vdot(a, a)):
        assert out.dtype == a.dtype
    expected = (np.arange(6).reshape(2, 3) % 3) @ (np.arange(12).reshape(3, 4) % 4)
    np.testing.assert_allclose(np.asarray(a @ b).astype(np.float64), expected)


def test_products_promote_mixed_dtypes():
    a = fg.ones((2, 3), dtype=fg.float32)
    assert (a @ fg.ones(3, dtype=fg.float64)).dtype == fg.float64
    assert (a @ fg.ones(3, dtype=fg.int32)).dtype == fg.float32
    assert fnp.dot(fg.ones(3, dtype=fg.int8), fg.ones(3, dtype=fg.uint8)).dtype == fg.int16
    assert fnp.dot(a, 2.0).dtype == fg.float32
    _check(fnp.matmul(np.eye(2), fg.tensor(np.array([1.0, 2.0]))), np.array([1.0, 2.0]))


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("a,b", [((2, 3), (4, 2)), ((3,), (4,)), ((2, 3), (2,)),
                                 ((4,), (3, 2)), ((5, 2, 3), (5, 4, 2))])
def test_matmul_mismatch_names_op_and_shapes(a, b):
    with pytest.raises(ValueError, match="matmul") as info:
        fnp.matmul(fg.ones(a), fg.ones(b))
    assert str(a) in str(info.value) and str(b) in str(info.value)


def test_matmul_batch_mismatch():
    # the whole shapes, not only the leading axes ("shapes (2,) and (3,)")
    with pytest.raises(ValueError, match=r"matmul: the leading \(batch\) axes of shapes "
                                         r"\(2, 2, 3\) and \(3, 3, 4\)"):
        fnp.matmul(fg.ones((2, 2, 3)), fg.ones((3, 3, 4)))


def test_matmul_of_scalars_is_an_error():
    with pytest.raises(ValueError, match="matmul.*at least one axis"):
        fnp.matmul(fg.ones(()), fg.ones(3))


@pytest.mark.parametrize("fn,a,b", [(fnp.dot, (2, 3), (2, 3)), (fnp.dot, (2, 3), (4, 2, 5)),
                                    (fnp.inner, (2, 3), (2, 4)), (fnp.vdot, (3,), (4,))])
def test_product_mismatch_names_function_and_shapes(fn, a, b):
    with pytest.raises(ValueError, match=fn.__name__) as info:
        fn(fg.ones(a), fg.ones(b))
    if fn is not fnp.vdot:
        assert str(a) in str(info.value) and str(b) in str(info.value)


def test_tensordot_errors():
    with pytest.raises(ValueError, match=r"tensordot.*\(2, 3\).*\(2, 3\)"):
        fnp.tensordot(fg.ones((2, 3)), fg.ones((2, 3)), 1)
    with pytest.raises(ValueError, match="tensordot: axes=3"):
        fnp.tensordot(fg.ones((2, 3)), fg.ones((2, 3)), 3)


def test_tensordot_bad_axes_arguments():
    with pytest.raises(ValueError, match="tensordot: axes must be an int or a pair"):
        fnp.tensordot(fg.ones((2, 3)), fg.ones((3, 4)), axes=([1],))
    with pytest.raises(ValueError, match="tensordot.*unequal"):
        fnp.tensordot(fg.ones((2, 3)), fg.ones((3, 4)), axes=([1, 0], [0]))
    with pytest.raises(ValueError, match="tensordot: axis 5 is out of bounds"):
        fnp.tensordot(fg.ones((2, 3)), fg.ones((3, 4)), axes=([5], [0]))


def test_gradients_of_products_with_a_wider_preferred_element_type():
    # the transpose multiplied the float64 cotangent by a float32 operand ("dot_general:
    # dtypes float64 and float32 differ"; found compiling every primitive sample for CUDA)
    from funcgrad.core.prims.dot import dot_general_p

    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    b = np.arange(12.0, dtype=np.float32).reshape(3, 4)

    def total(a, b):
        out = dot_general_p.bind(a, b, dimension_numbers=(((1,), (0,)), ((), ())),
                                 preferred_element_type=np.dtype(np.float64))
        return (out * out).sum()

    for grad in (fg.grad(total, argnums=(0, 1)), fg.jit(fg.grad(total, argnums=(0, 1)))):
        ga, gb = grad(fg.tensor(a), fg.tensor(b))
        assert ga.dtype == gb.dtype == fg.float32
        np.testing.assert_allclose(ga.numpy(), 2 * (a @ b) @ b.T, rtol=1e-6)
        np.testing.assert_allclose(gb.numpy(), 2 * a.T @ (a @ b), rtol=1e-6)


def test_products_take_jax_precision_and_preferred_element_type():
    # int8 products accumulate in the preferred dtype instead of wrapping around
    a = fg.tensor(np.array([[100, 100]], np.int8))
    b = fg.tensor(np.array([[100], [100]], np.int8))
    for got in (fnp.matmul(a, b, preferred_element_type=np.int32),
                fnp.dot(a, b, precision="highest", preferred_element_type=fg.int32),
                fnp.tensordot(a, b, 1, preferred_element_type=np.int32),
                fnp.inner(a, b.T, precision=None, preferred_element_type=np.int32)):
        assert got.dtype == fg.int32 and got.tolist() == [[20000]]
    assert fnp.vdot(a, b, preferred_element_type=np.int32).item() == 20000
    x = fg.tensor([[3.0, 1.0, 2.0]])
    assert fnp.take_along_axis(x, fnp.argsort(x)).tolist() == [[1.0, 2.0, 3.0]]  # axis=-1
