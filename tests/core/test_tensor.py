"""Tensor: attributes, conversion, repr, operators, NumPy-style methods, indexing,
functional updates and immutability, each checked against NumPy."""

import operator
import pickle

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.transforms.jit import DonatedBufferError

RNG = np.random.default_rng(0)


def _assert_matches(got, expected, rtol=1e-6, atol=1e-6):
    assert isinstance(got, fg.Tensor)
    expected = np.asarray(expected)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=atol)


# --- attributes and conversion ---------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 0, 4), (1, 2, 3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_attributes(shape, dtype):
    arr = (RNG.standard_normal(shape) * 3).astype(dtype)
    t = fg.tensor(arr)
    assert isinstance(t, fg.Tensor)
    assert t.shape == shape and isinstance(t.shape, tuple)
    assert t.ndim == len(shape)
    assert t.size == int(np.prod(shape))
    assert t.dtype == np.dtype(dtype)
    assert t.device == fg.device("cpu")
    np.testing.assert_array_equal(t.numpy(), arr)
    assert isinstance(t.numpy(), np.ndarray)
    np.testing.assert_array_equal(np.asarray(t), arr)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert t.tolist() == arr.tolist()
    assert t.T.shape == shape[::-1]
    np.testing.assert_array_equal(np.asarray(t.T), arr.T)


def test_tensor_copies_the_callers_array():
    arr = np.arange(3.0)
    t = fg.tensor(arr)
    arr[0] = 100.0
    assert t.tolist() == [0.0, 1.0, 2.0]


def test_numpy_view_is_read_only():
    t = fg.tensor([1.0, 2.0])
    view = t.numpy()
    with pytest.raises(ValueError):
        view[0] = 5.0
    assert t.tolist() == [1.0, 2.0]


def test_item():
    assert fg.tensor(2.5).item() == 2.5 and isinstance(fg.tensor(2.5).item(), float)
    assert fg.tensor([[7]]).item() == 7 and isinstance(fg.tensor([[7]]).item(), int)
    assert fg.tensor(True).item() is True
    with pytest.raises(ValueError, match=r"\(2,\)"):
        fg.tensor([1.0, 2.0]).item()


def test_block_until_ready_returns_the_value_as_jax():
    t = fg.jit(lambda x: x * 2)(fg.ones(3))
    assert t.block_until_ready() is t
    tree = {"t": t, "eager": fg.ones(2), "other": [1.5, None]}
    assert fg.block_until_ready(tree) is tree
    np.testing.assert_array_equal(tree["t"].numpy(), [2.0, 2.0, 2.0])


def test_python_scalar_conversions():
    t = fg.tensor(3.0)
    assert float(t) == 3.0 and int(t) == 3 and complex(t) == 3.0 + 0j
    assert bool(fg.tensor(1)) is True and bool(fg.tensor([0])) is False
    assert [10, 20, 30][fg.tensor(1)] == 20  # __index__
    with pytest.raises(TypeError):
        [1, 2][fg.tensor(1.0)]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(fg.tensor([1, 2]))


def test_tolist_nested():
    assert fg.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert fg.tensor(1.5).tolist() == 1.5
    assert fg.zeros((2, 0)).tolist() == [[], []]


def test_len_and_iteration():
    t = fg.tensor([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and rows[2].tolist() == [5, 6]
    with pytest.raises(TypeError):
        len(fg.tensor(1.0))
    with pytest.raises(TypeError):
        iter(fg.tensor(1.0)).__next__()


def test_unhashable_and_pickle():
    t = fg.tensor([1.0, 2.0])
    with pytest.raises(TypeError):
        hash(t)
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype == t.dtype and back.tolist() == t.tolist()


# --- repr ------------------------------------------------------------------------------


def test_repr_matches_contract():
    assert repr(fg.tensor([[1.0, 2.0]])) == "tensor([[1., 2.]], dtype=float32)"
    assert repr(fg.tensor(3)) == "tensor(3, dtype=int32)"
    assert repr(fg.tensor([True, False])) == "tensor([ True, False], dtype=bool)"
    assert repr(fg.tensor(np.array([1.5], np.float64))) == "tensor([1.5], dtype=float64)"
    assert repr(fg.zeros((0,))) == "tensor([], dtype=float32)"
    assert repr(fg.tensor([[1, 2], [3, 4]])) == "tensor([[1, 2],\n        [3, 4]], dtype=int32)"
    assert "bfloat16" in repr(fg.ones(2, dtype=fg.bfloat16))


def test_str_and_format():
    assert str(fg.tensor([1.0, 2.0])) == "[1. 2.]"
    assert f"{fg.tensor(3.14159):.2f}" == "3.14"


def test_f_strings_of_traced_scalars_show_the_tracer():
    # print(f"loss {loss}") inside a transformed function (an AttributeError before)
    shown = []

    def f(x):
        shown.append(f"x = {x}")
        return x * 2.0

    fg.grad(f)(fg.tensor(3.0))
    fg.vmap(f)(fg.ones(3))
    fg.jit(f)(fg.tensor(3.0))
    assert len(shown) == 3 and all(s.startswith("x = Tracer<f32[]>") for s in shown), shown


# --- construction errors ---------------------------------------------------------------


def test_ragged_list_is_value_error_naming_the_problem():
    with pytest.raises(ValueError, match="ragged"):
        fg.tensor([[1, 2], [3]])


@pytest.mark.parametrize("bad", [[object()], [1, "a"], [None, 1.0]])
def test_object_list_is_type_error(bad):
    with pytest.raises((TypeError, ValueError), match="fg.tensor"):
        fg.tensor(bad)


@pytest.mark.parametrize("bad", [None, "abc", object(), {"a": 1}])
def test_unconvertible_values_are_type_errors(bad):
    with pytest.raises(TypeError, match="fg.tensor"):
        fg.tensor(bad)


def test_object_array_is_type_error():
    with pytest.raises(TypeError, match="object"):
        fg.tensor(np.array([1, None], dtype=object))


def test_python_complex_numbers_refuse_a_real_dtype_as_numpy():
    # the imaginary part was dropped silently
    for data in ([1 + 2j], 1 + 2j, [1.0, 2j]):
        with pytest.raises(TypeError, match="cannot convert complex values to float64"):
            fg.tensor(data, dtype=fg.float64)
    assert fg.tensor([1.0, 2.0], dtype=fg.complex64).tolist() == [1 + 0j, 2 + 0j]


def test_int_overflowing_int32_says_how_to_fix():
    with pytest.raises(OverflowError, match="int64"):
        fg.tensor(2**40)
    assert fg.tensor(2**40, dtype=fg.int64).item() == 2**40


def test_list_of_tensors():
    t = fg.tensor([fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0])])
    assert t.shape == (2, 2) and t.dtype == fg.float32


def test_dtype_argument_converts():
    t = fg.tensor([1, 2], dtype=fg.float64)
    assert t.dtype == fg.float64 and t.tolist() == [1.0, 2.0]
    t2 = fg.asarray(t, dtype="int8")
    assert t2.dtype == fg.int8


# --- immutability ----------------------------------------------------------------------


def test_setitem_raises_type_error_naming_at_set():
    t = fg.zeros(3)
    with pytest.raises(TypeError, match=r"t\.at\[0\]\.set\(1\)") as info:
        t[0] = 1
    assert "immutable" in str(info.value)
    with pytest.raises(TypeError, match=r"\.at\[1:2\]\.set\(v\)"):
        t[1:2] = fg.ones(1)
    with pytest.raises(TypeError):
        del t[0]
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_copy_method_gives_an_equal_tensor():
    t = fg.tensor([1.0, 2.0])
    c = t.copy()
    assert isinstance(c, fg.Tensor) and c.dtype == t.dtype and c.tolist() == [1.0, 2.0]
    assert fg.jit(lambda v: v.copy() * 2)(t).tolist() == [2.0, 4.0]
    # a buffer of its own: it survives donating the original, as jnp.copy's does
    fg.jit(lambda v: v + 1, donate_argnums=0)(t)
    assert c.tolist() == [1.0, 2.0]
    with pytest.raises(DonatedBufferError):
        t.tolist()


def test_inplace_operators_rebind_not_mutate():
    t = fg.ones(2)
    alias = t
    t += 1
    assert t.tolist() == [2.0, 2.0] and alias.tolist() == [1.0, 1.0]


# --- operators -------------------------------------------------------------------------

_ARITH = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow]


@pytest.mark.parametrize("op", _ARITH, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shapes", [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 4)),
                                    ((0, 3), (3,))])
def test_float_arithmetic_operators(op, shapes):
    a = RNG.uniform(0.5, 2.0, shapes[0])
    b = RNG.uniform(0.5, 2.0, shapes[1])
    expected = op(a, b)
    _assert_matches(op(fg.tensor(a), fg.tensor(b)), expected, rtol=1e-12)
    # NumPy array on the other side
    _assert_matches(op(fg.tensor(a), b), expected, rtol=1e-12)
    _assert_matches(op(a, fg.tensor(b)), expected, rtol=1e-12)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.floordiv,
                                operator.mod], ids=lambda f: f.__name__)
def test_int_arithmetic_operators_python_semantics(op):
    a = np.array([7, -7, 7, -7, 0, 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, 1], np.int32)
    _assert_matches(op(fg.tensor(a), fg.tensor(b)), op(a, b))


def test_int_true_division_is_float32():
    out = fg.tensor([1, 2, 3]) / fg.tensor([2, 2, 2])
    assert out.dtype == fg.float32
    assert out.tolist() == [0.5, 1.0, 1.5]
    assert (fg.tensor([1, 2]) / 2).dtype == fg.float32


def test_int_power():
    _assert_matches(fg.tensor([2, 3, -2]) ** 3, np.array([8, 27, -8], np.int32))
    _assert_matches(2 ** fg.tensor([0, 1, 5]), np.array([1, 2, 32], np.int32))
    _assert_matches(fg.tensor([1.5, 2.0]) ** 2, np.array([2.25, 4.0], np.float32))
    _assert_matches(fg.tensor([4.0, 9.0]) ** 0.5, np.array([2.0, 3.0], np.float32))


def test_reflected_python_scalar_operators():
    t = fg.tensor([1.0, 2.0, 4.0])
    _assert_matches(1 - t, np.array([0.0, -1.0, -3.0], np.float32))
    _assert_matches(8 / t, np.array([8.0, 4.0, 2.0], np.float32))
    _assert_matches(7 // t, np.array([7.0, 3.0, 1.0], np.float32))
    _assert_matches(7 % t, np.array([0.0, 1.0, 3.0], np.float32))
    _assert_matches(2.0 * t, np.array([2.0, 4.0, 8.0], np.float32))


def test_unary_operators():
    a = np.array([-1.5, 0.0, 2.0])
    _assert_matches(-fg.tensor(a), -a)
    _assert_matches(+fg.tensor(a), a)
    _assert_matches(abs(fg.tensor(a)), np.abs(a))
    _assert_matches(~fg.tensor([1, -2, 0]), ~np.array([1, -2, 0], np.int32))
    _assert_matches(~fg.tensor([True, False]), np.array([False, True]))


@pytest.mark.parametrize("op", [operator.eq, operator.ne, operator.lt, operator.le,
                                operator.gt, operator.ge], ids=lambda f: f.__name__)
def test_comparisons_return_bool(op):
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = np.array([2.0, 2.0, 2.0])
    got = op(fg.tensor(a), fg.tensor(b))
    _assert_matches(got, op(a, b))
    assert got.dtype == fg.bool_
    _assert_matches(op(fg.tensor(a), 2), op(a, 2.0))


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor],
                         ids=lambda f: f.__name__)
def test_bitwise_operators(op):
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    _assert_matches(op(fg.tensor(a), fg.tensor(b)), op(a, b))
    x, y = np.array([12, 10, -3], np.int32), np.array([10, 6, 5], np.int32)
    _assert_matches(op(fg.tensor(x), fg.tensor(y)), op(x, y))
    _assert_matches(op(fg.tensor(x), 3), op(x, np.int32(3)))


def test_shift_operators():
    x = np.array([1, 8, -16], np.int32)
    _assert_matches(fg.tensor(x) << 2, x << 2)
    _assert_matches(fg.tensor(x) >> 1, x >> 1)


def test_bitwise_on_floats_is_a_clear_type_error():
    with pytest.raises(TypeError, match="bitwise_and.*float32"):
        fg.tensor([1.0]) & fg.tensor([1.0])
    with pytest.raises(TypeError, match="invert.*float32"):
        ~fg.tensor([1.0])
    with pytest.raises(TypeError, match="left_shift.*float32"):
        fg.tensor([1.0]) << 1


@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)),
                                    ((3,), (3,)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 1)),
                                    ((1, 2, 3), (4, 3, 2)), ((0, 3), (3, 2))])
def test_matmul_operator(shapes):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    _assert_matches(fg.tensor(a) @ fg.tensor(b), a @ b, rtol=1e-12, atol=1e-12)
    _assert_matches(a @ fg.tensor(b), a @ b, rtol=1e-12, atol=1e-12)


def test_operator_shape_errors_name_op_and_shapes():
    with pytest.raises(ValueError, match=r"add.*\(2, 3\).*\(4,\)"):
        fg.ones((2, 3)) + fg.ones(4)
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*\(4, 2\)"):
        fg.ones((2, 3)) @ fg.ones((4, 2))


def test_numpy_array_on_the_left_defers_to_tensor():
    out = np.ones(3) + fg.ones(3, dtype=fg.float64)
    assert isinstance(out, fg.Tensor)
    out = np.ones(3, np.float32) * fg.tensor([1.0, 2.0, 3.0])
    assert isinstance(out, fg.Tensor) and out.dtype == fg.float32


# --- methods ---------------------------------------------------------------------------


_X = RNG.standard_normal((2, 3, 4))


@pytest.mark.parametrize("name,kwargs", [
    ("sum", {}), ("sum", {"axis": 1}), ("sum", {"axis": (0, 2), "keepdims": True}),
    ("mean", {}), ("mean", {"axis": -1}), ("max", {}), ("max", {"axis": 0}),
    ("min", {"axis": 2, "keepdims": True}), ("prod", {"axis": 1}), ("std", {}),
    ("std", {"axis": 1}), ("var", {"axis": (1, 2)}), ("argmax", {}), ("argmax", {"axis": 1}),
    ("argmin", {"axis": -1}), ("argmin", {}),
])
def test_reduction_methods(name, kwargs):
    got = getattr(fg.tensor(_X), name)(**kwargs)
    expected = getattr(_X, name)(**kwargs)
    if name in ("argmax", "argmin"):
        expected = np.asarray(expected).astype(np.int32)
    _assert_matches(got, expected, rtol=1e-10)


def test_shape_methods():
    t = fg.tensor(_X)
    _assert_matches(t.reshape(6, 4), _X.reshape(6, 4))
    _assert_matches(t.reshape((4, -1)), _X.reshape((4, -1)))
    _assert_matches(t.transpose(), _X.transpose())
    _assert_matches(t.transpose(1, 0, 2), _X.transpose(1, 0, 2))
    _assert_matches(t.transpose((2, 0, 1)), _X.transpose((2, 0, 1)))
    _assert_matches(t.flatten(), _X.flatten())
    _assert_matches(t.ravel(), _X.ravel())
    _assert_matches(t.expand_dims(1), np.expand_dims(_X, 1))
    _assert_matches(t.reshape(1, 2, 1, 12).squeeze(), _X.reshape(1, 2, 1, 12).squeeze())
    _assert_matches(t.reshape(1, 2, 1, 12).squeeze(2), _X.reshape(1, 2, 1, 12).squeeze(2))
    _assert_matches(t.swapaxes(0, 2), _X.swapaxes(0, 2))


def test_elementwise_methods():
    pos = np.abs(_X) + 0.1
    t = fg.tensor(_X)
    _assert_matches(t.clip(-0.5, 0.5), _X.clip(-0.5, 0.5))
    _assert_matches(t.round(), _X.round())
    _assert_matches(t.round(2), _X.round(2), rtol=1e-12)
    _assert_matches(t.abs(), np.abs(_X))
    _assert_matches(t.exp(), np.exp(_X), rtol=1e-12)
    _assert_matches(fg.tensor(pos).log(), np.log(pos), rtol=1e-12)
    _assert_matches(fg.tensor(pos).sqrt(), np.sqrt(pos), rtol=1e-12)


def test_astype_and_to():
    t = fg.tensor([1.7, -2.2])
    assert t.astype(fg.int32).tolist() == [1, -2]
    assert t.astype("float64").dtype == fg.float64
    assert t.astype(np.float16).dtype == fg.float16
    assert t.to("cpu") is t or t.to("cpu").tolist() == t.tolist()
    assert t.to(fg.device("cpu")).device == fg.device("cpu")


def test_reduction_method_errors():
    with pytest.raises(ValueError, match="axis 3"):
        fg.ones((2, 2)).sum(axis=3)
    with pytest.raises(ValueError, match="squeeze"):
        fg.ones((2, 2)).squeeze(0)
    with pytest.raises(ValueError, match=r"reshape.*size 4.*\(3,"):
        fg.ones((2, 2)).reshape(3, 2)


# --- indexing --------------------------------------------------------------------------

_A = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)

_BASIC_INDICES = [
    0, -1, 1, (1, 2), (0, -1, 2, -3), slice(None), slice(1, None), slice(None, None, -1),
    (slice(None), slice(0, 3, 2)), (Ellipsis, 1), (1, Ellipsis), (None,), (0, None, 1),
    (Ellipsis, None), (slice(None, None, -2), Ellipsis, slice(4, 0, -3)),
    (slice(10, 20),), (slice(-100, 100),), (slice(2, 1),), (1, slice(None), None, -2),
    (None, Ellipsis, None), Ellipsis, (),
]


@pytest.mark.parametrize("index", _BASIC_INDICES, ids=repr)
def test_basic_indexing(index):
    _assert_matches(fg.tensor(_A)[index], _A[index])


_ADVANCED_INDICES = [
    np.array([0, 1, 0]),
    np.array([-1, 0]),
    (slice(None), np.array([2, 0])),
    (np.array([0, 1]), np.array([1, 2])),
    (np.array([[0], [1]]), np.array([1, 2])),          # broadcast index arrays
    (np.array([0, 1]), slice(None), np.array([1, 3])),  # separated: advanced dims go first
    (slice(None), np.array([0, 2]), np.array([1, 3])),  # adjacent: stay in place
    (1, slice(None), np.array([0, 3])),                 # int + array separated
    (Ellipsis, np.array([4, 0])),
    (None, np.array([1]), Ellipsis),
    np.array(1),
    [0, 1],
    (slice(None), [2, 1, 0]),
    np.array([], dtype=np.int32),
]


@pytest.mark.parametrize("index", _ADVANCED_INDICES, ids=repr)
def test_integer_array_indexing(index):
    _assert_matches(fg.tensor(_A)[index], _A[index])
    # the same with tensors as index arrays
    if isinstance(index, tuple):
        t_index = tuple(fg.tensor(i) if isinstance(i, np.ndarray) else i for i in index)
    elif isinstance(index, np.ndarray):
        t_index = fg.tensor(index)
    else:
        t_index = index
    _assert_matches(fg.tensor(_A)[t_index], _A[index])


@pytest.mark.parametrize("mask_shape", [(2,), (2, 3), (2, 3, 4)])
def test_boolean_mask_indexing(mask_shape):
    mask = RNG.random(mask_shape) > 0.4
    _assert_matches(fg.tensor(_A)[mask], _A[mask])
    _assert_matches(fg.tensor(_A)[fg.tensor(mask)], _A[mask])


def test_boolean_mask_with_other_indices():
    mask = np.array([True, False, True, True])
    _assert_matches(fg.tensor(_A)[:, 1, mask], _A[:, 1, mask])
    _assert_matches(fg.tensor(_A)[..., mask, :], _A[..., mask, :])
    t = fg.tensor([1.0, -2.0, 3.0])
    _assert_matches(t[t > 0], np.array([1.0, 3.0], np.float32))


@pytest.mark.parametrize("index,axis,size", [(3, 0, 2), (-3, 0, 2), ((0, 5), 1, 3),
                                             ((0, 0, 0, 5), 3, 5), ((Ellipsis, -6), 3, 5)])
def test_out_of_range_int_index_names_axis_and_size(index, axis, size):
    with pytest.raises(IndexError, match=f"axis {axis} with size {size}"):
        fg.tensor(_A)[index]


def test_out_of_range_index_array_is_index_error():
    with pytest.raises(IndexError, match="axis 0 with size 2"):
        fg.tensor(_A)[np.array([0, 2])]
    with pytest.raises(IndexError, match="axis 1 with size 3"):
        fg.tensor(_A)[:, fg.tensor([-4])]


def test_bad_indices():
    with pytest.raises(IndexError, match="too many indices"):
        fg.tensor(_A)[0, 0, 0, 0, 0]
    with pytest.raises(IndexError, match="ellipsis"):
        fg.tensor(_A)[..., 0, ...]
    with pytest.raises(TypeError, match="float"):
        fg.tensor(_A)[fg.tensor([1.0])]
    with pytest.raises(TypeError):
        fg.tensor(_A)["a"]
    with pytest.raises(TypeError):
        fg.tensor(_A)[1.5]


def test_indexing_keeps_dtype():
    t = fg.tensor(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert t[0].dtype == fg.int64
    assert t[0, 1].shape == ()
    assert t[np.array([1, 0])].dtype == fg.int64


# --- functional updates ----------------------------------------------------------------


def _np_update(a, index, values, mode):
    out = a.copy()
    if mode == "set":
        out[index] = values
    else:
        ufunc = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[mode]
        ufunc.at(out, index, values)
    return out


_UPDATE_INDICES = [0, -1, (1, 2), slice(1, 3), (slice(None), 0), (Ellipsis, slice(None, None, -2)),
                   np.array([0, 2, 2]), (np.array([1, 0]), np.array([3, 3])),
                   np.array([True, False, True]), (None, 1)]


@pytest.mark.parametrize("mode", ["set", "add", "mul", "min", "max"])
@pytest.mark.parametrize("index", _UPDATE_INDICES, ids=repr)
def test_at_updates_match_numpy(mode, index):
    a = RNG.standard_normal((3, 4))
    selected = a[index]
    values = RNG.standard_normal(selected.shape)
    if mode == "set" and isinstance(index, np.ndarray) and index.dtype != bool:
        values = RNG.standard_normal(a[np.unique(index)].shape)  # no repeats for set
        index = np.unique(index)
    t = fg.tensor(a)
    got = getattr(t.at[index], mode)(fg.tensor(values))
    _assert_matches(got, _np_update(a, index, values, mode), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(t), a)  # the original is untouched


def test_at_scalar_values_broadcast_and_keep_dtype():
    t = fg.zeros((2, 3), dtype=fg.int32)
    out = t.at[:, 1].set(7)
    assert out.dtype == fg.int32
    assert out.tolist() == [[0, 7, 0], [0, 7, 0]]
    out = fg.ones(4, dtype=fg.float16).at[1:].add(1.0)
    assert out.dtype == fg.float16 and out.tolist() == [1.0, 2.0, 2.0, 2.0]
    assert fg.zeros(3).at[1].set(5.0).tolist() == [0.0, 5.0, 0.0]


def test_at_get_is_getitem():
    t = fg.tensor(_A)
    for index in (1, (slice(None), 2), np.array([1, 0]), (Ellipsis, np.array([0, 4]))):
        _assert_matches(t.at[index].get(), _A[index])


def test_at_repeated_indices_accumulate():
    out = fg.zeros(3).at[fg.tensor([1, 1, 2, 1])].add(1.0)
    assert out.tolist() == [0.0, 3.0, 1.0]
    out = fg.ones(3).at[np.array([0, 0])].mul(3.0)
    assert out.tolist() == [9.0, 1.0, 1.0]


def test_at_value_shape_mismatch():
    with pytest.raises(ValueError, match=r"\(4,\).*\(3,\)"):
        fg.zeros(3).at[:].set(fg.ones(4))


def test_at_out_of_range_python_int_is_index_error():
    with pytest.raises(IndexError, match="axis 0 with size 3"):
        fg.zeros(3).at[3].set(1.0)


def test_methods_are_available_on_fnp_ndarray_alias():
    assert fnp.ndarray is fg.Tensor
    assert isinstance(fnp.array([1, 2]), fnp.ndarray)


def test_comparison_with_non_arrays_defers_to_python():
    t = fg.tensor([1, 2])
    assert (t == None) is False  # noqa: E711  (as JAX: unknown operands are not equal)
    assert (t != "a") is True
    assert t not in [None, "x"]
    with pytest.raises(TypeError, match="unsupported operand"):
        t + "a"
    with pytest.raises(TypeError, match="unsupported operand"):
        None * t
    _assert_matches(t == [1, 3], np.array([True, False]))


def test_empty_list_index():
    _assert_matches(fg.tensor(_A)[[]], _A[[]])
    _assert_matches(fg.tensor(_A)[0, []], _A[0, []])


def test_boolean_mask_shape_mismatch_is_index_error():
    with pytest.raises(IndexError, match=r"boolean index of shape \(2,\).*\(3,\)"):
        fg.tensor([1, 2, 3])[np.array([True, False])]
    with pytest.raises(IndexError, match=r"boolean index of shape \(3,\).*\(2,\)"):
        fg.tensor([1, 2])[np.array([True, False, True])]
    with pytest.raises(IndexError, match=r"boolean index of shape \(2, 2\)"):
        fg.tensor(_A)[:, np.ones((2, 2), bool)]


def test_at_values_that_do_not_fit_the_selection():
    with pytest.raises(ValueError, match=r"at\[\]\.set.*\(3,\).*\(\)"):
        fg.tensor([1, 2]).at[0].set(fg.ones(3))
    with pytest.raises(ValueError, match=r"at\[\]\.add.*\(1, 2\).*\(2,\)"):
        fg.zeros((2, 2)).at[0].add(fg.ones((1, 2)))


def test_nbytes_itemsize_and_item_with_an_index():
    t = fg.tensor(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert t.itemsize == 8 and t.nbytes == 48
    assert t.item(4) == 4.0 and t.item(1, 2) == 5.0


def test_lists_of_traced_values_stack_and_stay_differentiable_as_jax():
    x = fg.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(fg.jit(lambda x: fg.tensor([x[0], 1.0]))(x).numpy(), [1, 1])
    grad = fg.grad(lambda x: fg.tensor([x[0], x[1] * 2]).sum())(x)
    np.testing.assert_array_equal(grad.numpy(), [1.0, 2.0, 0.0])
    rows = fg.vmap(lambda r: fg.asarray([r[1], r[0]]))(fg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(rows.numpy(), [[2.0, 1.0], [4.0, 3.0]])


@pytest.mark.parametrize("data,dtype", [
    ([fg.tensor(1.0), 2.0], fg.float32), ([fg.tensor(1), fg.tensor(2.5)], fg.float32),
    ([fg.tensor(1), 2], fg.int32), ([fg.tensor(1.0, dtype=fg.float16), 2.0], fg.float16),
    ([np.float32(1), 2.0], fg.float32), ([np.array([1.0, 2.0]), [3, 4]], fg.float64)])
def test_mixed_lists_promote_as_jax(data, dtype):
    assert fg.tensor(data).dtype == dtype


def test_small_numpy_conformance_cases():
    assert repr(fg.zeros((2, 0))) == "tensor([], shape=(2, 0), dtype=float32)"
    assert repr(fg.zeros((0,))) == "tensor([], dtype=float32)"
    q, r = divmod(7, fg.tensor([3, -3]))
    np.testing.assert_array_equal(q.numpy(), [2, -3])
    np.testing.assert_array_equal(r.numpy(), [1, -2])
    with pytest.raises(TypeError, match="shape"):
        fg.zeros((2.5,))
    assert fg.zeros(fg.tensor(3)).shape == (3,)
    t = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t[fg.tensor(True)].shape == (1, 2, 2) and t[fg.tensor(False)].shape == (0, 2, 2)
    with pytest.raises(TypeError, match="integers"):
        fg.numpy.take_along_axis(t, fg.tensor([[0.0], [1.0]]), axis=1)


def test_numpy_functions_take_tensors_as_with_jax_arrays():
    t = fg.tensor([0.5, -2.0, 3.0])
    host = np.asarray([0.5, -2.0, 3.0], np.float32)
    for got, want in [(np.sin(t), np.sin(host)), (np.add(host, t), host * 2),
                      (np.maximum(t, 0), np.maximum(host, 0)), (np.isnan(t), np.isnan(host))]:
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, want)
    assert type(host + t) is fg.Tensor and type(host < t) is fg.Tensor  # Tensor.__radd__...
    a = host.copy()
    a += t  # rebinds a to a Tensor; the NumPy array stays as it was
    assert type(a) is fg.Tensor
    np.testing.assert_array_equal(a.numpy(), host * 2)
    from funcgrad.core.interpreter import ConcretizationError

    with pytest.raises(ConcretizationError, match="traced value"):
        fg.jit(lambda x: np.sin(x))(t)


def test_round_builtin_integer_decimals_and_array_copy_false():
    t = fg.tensor([1.25, 2.5])
    np.testing.assert_array_equal(round(t).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(round(t, 1).numpy(), np.round(np.float32([1.25, 2.5]), 1))
    with pytest.raises(TypeError, match="decimals must be an integer, got 1.5"):
        t.round(1.5)
    with pytest.raises(ValueError, match="Unable to avoid a copy"):
        np.array(t, dtype=np.float64, copy=False)
    np.testing.assert_array_equal(np.array(t, copy=False), [1.25, 2.5])


def test_a_lone_python_bool_index_adds_an_axis_as_numpy():
    x = fg.tensor([1.0, 2.0, 3.0])
    assert x[True].shape == (1, 3) and x[False].shape == (0, 3)
    assert x[np.True_].shape == (1, 3)
    np.testing.assert_array_equal(x[True].numpy(), np.float32([1, 2, 3])[True])



def test_zero_d_bools_among_other_indices_act_as_numpy():
    # a 0-d bool inside a tuple raised (NumPy's nonzero of a 0-d array); several act as one
    # index array of shape (1,) or (0,): where the first stands, or in front if separated
    x = np.arange(24.0).reshape(2, 3, 4)
    t = fg.tensor(x)
    for index in [(Ellipsis, True), (None, np.True_), (0, False, slice(1, 3)),
                  (slice(None), True, Ellipsis, False), (True, slice(None), True),
                  (np.array(True), 1, Ellipsis), (1, None, True, slice(None, None, -1))]:
        np.testing.assert_array_equal(t[index].numpy(), x[index])
        as_tensors = tuple(fg.tensor(i) if isinstance(i, (bool, np.bool_)) else i
                           for i in index)
        assert t[as_tensors].shape == x[index].shape
    y = fg.tensor([1.0, 2.0])
    assert y.at[fg.tensor(True)].set(0.0).tolist() == [0.0, 0.0]
    assert y.at[..., np.array(False)].set(5.0).tolist() == [1.0, 2.0]
    assert fg.grad(lambda y: (y[..., True] * 3).sum())(y).tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="beside index arrays is not supported"):
        y[fg.tensor([0]), True]


def test_narrow_integer_index_arrays_on_long_axes():
    # negative indices were wrapped in the index's own dtype: uint8 + 300 overflowed
    x = fg.arange(300.0)
    assert x[np.array([5, 255], np.uint8)].tolist() == [5.0, 255.0]
    assert x[np.array([-100], np.int8)].tolist() == [200.0]
    assert x.at[np.array([5], np.uint8)].set(0.0).numpy()[5] == 0.0


def test_at_add_and_mul_combine_in_the_promoted_dtype_as_jax():
    # float values on an int tensor were cast to int first (mul(1.5) multiplied by 1)
    x = fg.tensor(np.array([3, 10], np.int32))
    assert x.at[:].mul(1.5).tolist() == [4, 15] and x.at[:].mul(1.5).dtype == fg.int32
    assert x.at[1].add(fg.tensor(np.float32(-0.5))).tolist() == [3, 9]
    assert fg.jit(lambda x: x.at[:].mul(1.5))(x).tolist() == [4, 15]


def test_builtin_round_gives_an_integer_and_astype_takes_jax_keywords():
    assert round(fg.tensor(2.5)).dtype == fg.int32 and round(fg.tensor(2.5)).item() == 2
    assert round(fg.tensor(np.float64(3.7))).dtype == fg.int64
    assert round(fg.tensor(2.567), 1).dtype == fg.float32
    assert fg.tensor([1.0]).astype("float64", copy=False).dtype == fg.float64
