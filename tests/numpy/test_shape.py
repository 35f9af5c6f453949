"""funcgrad.numpy shape functions against NumPy: reshape, transpose, stacking, splitting,
tiling, padding, flipping, rolling; with 0-d and empty shapes and clear errors."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp


def test_ravel_and_flatten_take_numpys_order():
    a = np.arange(6).reshape(2, 3)
    x = fnp.asarray(a)
    np.testing.assert_array_equal(x.flatten(order="F"), a.flatten(order="F"))
    np.testing.assert_array_equal(fnp.ravel(x, order="F"), a.ravel(order="F"))
    np.testing.assert_array_equal(x.ravel(), a.ravel())
    with pytest.raises(ValueError, match="'C' or 'F'"):
        x.flatten(order="K")

RNG = np.random.default_rng(0)


def _rand(shape):
    return RNG.standard_normal(shape)


def _check(got, expected):
    assert isinstance(got, fg.Tensor)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(np.asarray(got), expected)


@pytest.mark.parametrize("shape,new", [
    ((), (1,)), ((), ()), ((6,), (2, 3)), ((2, 3), (-1,)), ((2, 3), (3, -1)),
    ((2, 3, 4), (4, 1, 6)), ((0, 3), (3, 0)), ((0, 3), (-1, 3)), ((4,), 4), ((1,), ()),
])
def test_reshape(shape, new):
    x = _rand(shape)
    _check(fnp.reshape(fg.tensor(x), new), np.reshape(x, new))


def test_reshape_errors():
    with pytest.raises(ValueError, match=r"reshape.*size 6.*\(4, -1\)"):
        fnp.reshape(fg.ones((2, 3)), (4, -1))
    with pytest.raises(ValueError, match="one unknown"):
        fnp.reshape(fg.ones((2, 3)), (-1, -1))
    with pytest.raises(ValueError, match=r"size 6.*\(7,\)"):
        fnp.reshape(fg.ones((2, 3)), 7)


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 0, 4), (2, 3, 4, 1)], ids=str)
def test_ravel_transpose_flip(shape):
    x = _rand(shape)
    _check(fnp.ravel(fg.tensor(x)), np.ravel(x))
    _check(fnp.transpose(fg.tensor(x)), np.transpose(x))
    _check(fnp.flip(fg.tensor(x)), np.flip(x))
    for axis in range(len(shape)):
        _check(fnp.flip(fg.tensor(x), axis), np.flip(x, axis))
    if len(shape) >= 2:
        perm = tuple(np.random.default_rng(1).permutation(len(shape)))
        _check(fnp.transpose(fg.tensor(x), perm), np.transpose(x, perm))
        _check(fnp.swapaxes(fg.tensor(x), 0, -1), np.swapaxes(x, 0, -1))
        _check(fnp.moveaxis(fg.tensor(x), 0, -1), np.moveaxis(x, 0, -1))
        _check(fnp.moveaxis(fg.tensor(x), -1, 0), np.moveaxis(x, -1, 0))
        _check(fnp.fliplr(fg.tensor(x)), np.fliplr(x))
        _check(fnp.flipud(fg.tensor(x)), np.flipud(x))


def test_moveaxis_multiple():
    x = _rand((2, 3, 4, 5))
    for src, dst in [((0, 1), (2, 3)), ((3, 0), (0, 1)), ((0, 2), (-1, 0)), ([1], [3])]:
        _check(fnp.moveaxis(fg.tensor(x), src, dst), np.moveaxis(x, src, dst))


def test_transpose_errors():
    with pytest.raises(ValueError, match="transpose"):
        fnp.transpose(fg.ones((2, 3)), (0, 0))
    with pytest.raises(ValueError, match="transpose: axis 2"):
        fnp.transpose(fg.ones((2, 3)), (0, 2))


@pytest.mark.parametrize("shape,axis", [((), 0), ((), -1), ((3,), 0), ((3,), 1), ((3,), -1),
                                        ((2, 3), 1), ((2, 3), (0, 2)), ((2, 3), (-1, 0)),
                                        ((0, 2), 1)])
def test_expand_dims(shape, axis):
    x = _rand(shape)
    _check(fnp.expand_dims(fg.tensor(x), axis), np.expand_dims(x, axis))


@pytest.mark.parametrize("shape,axis", [((1,), None), ((1, 3, 1), None), ((1, 3, 1), 0),
                                        ((1, 3, 1), -1), ((1, 3, 1), (0, 2)), ((), None),
                                        ((0, 1), 1), ((3,), None)])
def test_squeeze(shape, axis):
    x = _rand(shape)
    _check(fnp.squeeze(fg.tensor(x), axis), np.squeeze(x, axis))


def test_squeeze_non_unit_axis_is_an_error():
    with pytest.raises(ValueError, match=r"squeeze.*axis 1 of size 3"):
        fnp.squeeze(fg.ones((1, 3)), 1)


@pytest.mark.parametrize("shape,target", [((), (2, 3)), ((3,), (2, 3)), ((2, 1), (2, 4)),
                                          ((1,), (0,)), ((1, 3), (5, 2, 3)), ((3,), 3)])
def test_broadcast_to(shape, target):
    x = _rand(shape)
    _check(fnp.broadcast_to(fg.tensor(x), target), np.broadcast_to(x, target))


def test_broadcast_to_error_names_shapes():
    with pytest.raises(ValueError, match=r"broadcast_to.*\(2, 3\).*\(3, 3\)"):
        fnp.broadcast_to(fg.ones((2, 3)), (3, 3))
    with pytest.raises(ValueError, match="broadcast_to"):
        fnp.broadcast_to(fg.ones((2, 3)), (3,))


def test_broadcast_arrays():
    a, b = _rand((3, 1)), _rand((4,))
    out = fnp.broadcast_arrays(fg.tensor(a), fg.tensor(b))
    for got, exp in zip(out, np.broadcast_arrays(a, b), strict=True):
        _check(got, exp)


@pytest.mark.parametrize("shapes,axis", [(((2, 3), (4, 3)), 0), (((2, 3), (2, 1)), 1),
                                         (((2, 3), (2, 3), (2, 3)), -1), (((0, 3), (2, 3)), 0),
                                         (((3,), (0,), (2,)), 0), (((2, 2), (1, 2)), None)])
def test_concatenate(shapes, axis):
    xs = [_rand(s) for s in shapes]
    _check(fnp.concatenate([fg.tensor(x) for x in xs], axis=axis), np.concatenate(xs, axis=axis))


def test_concatenate_promotes_dtypes():
    out = fnp.concatenate([fg.tensor([1, 2]), fg.tensor([0.5])])
    assert out.dtype == fg.float32 and out.tolist() == [1.0, 2.0, 0.5]
    out = fnp.concatenate([fg.ones(1, dtype=fg.int8), fg.ones(1, dtype=fg.uint8)])
    assert out.dtype == fg.int16
    assert fnp.concatenate([np.zeros(2), np.ones(1)]).dtype == fg.float64


def test_concatenate_errors():
    with pytest.raises(ValueError, match=r"concatenate.*\(2, 3\).*\(2, 4\)"):
        fnp.concatenate([fg.ones((2, 3)), fg.ones((2, 4))])
    with pytest.raises(ValueError, match="zero-dimensional"):
        fnp.concatenate([fg.ones(()), fg.ones(())])
    with pytest.raises(ValueError, match="at least one"):
        fnp.concatenate([])
    with pytest.raises(ValueError, match=r"different numbers of dimensions \(2 and 1\)"):
        fnp.concatenate([fg.ones((2, 3)), fg.ones(3)])


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 2)], ids=str)
def test_stack_family(shape):
    xs = [_rand(shape) for _ in range(3)]
    ts = [fg.tensor(x) for x in xs]
    for axis in range(-len(shape) - 1, len(shape) + 1):
        _check(fnp.stack(ts, axis=axis), np.stack(xs, axis=axis))
    _check(fnp.vstack(ts), np.vstack(xs))
    _check(fnp.hstack(ts), np.hstack(xs))


def test_stack_errors():
    with pytest.raises(ValueError, match=r"stack.*\(2,\).*\(3,\)"):
        fnp.stack([fg.ones(2), fg.ones(3)])
    with pytest.raises(ValueError, match="stack"):
        fnp.stack([])


def test_column_stack():
    a, b = _rand(3), _rand((3, 2))
    _check(fnp.column_stack([fg.tensor(a), fg.tensor(b)]), np.column_stack([a, b]))


@pytest.mark.parametrize("shape,spec,axis", [((6,), 3, 0), ((6,), [1, 4], 0), ((4, 6), 2, 1),
                                             ((4, 6), [0, 2, 10], 1), ((0, 2), 1, 0),
                                             ((5,), [3, 1], 0), ((4, 2), [-1], 0)])
def test_split(shape, spec, axis):
    x = _rand(shape)
    got = fnp.split(fg.tensor(x), spec, axis=axis)
    expected = np.split(x, spec, axis=axis)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        _check(g, e)


def test_split_uneven_is_an_error():
    with pytest.raises(ValueError, match="split.*size 5.*2"):
        fnp.split(fg.ones(5), 2)


@pytest.mark.parametrize("spec", [2.0, [1.5, 3], "ab"], ids=repr)
def test_split_points_must_be_ints(spec):
    # a float count used to fail iterating it ('float' object is not iterable); float
    # points were truncated silently
    with pytest.raises(TypeError, match="split: indices_or_sections must be an int"):
        fnp.split(fg.ones(6), spec)


def test_split_points_may_be_an_int_tensor():
    pieces = fnp.split(fnp.arange(6), fg.tensor([2, 4]))
    assert [p.tolist() for p in pieces] == [[0, 1], [2, 3], [4, 5]]


@pytest.mark.parametrize("n,sections", [(7, 3), (6, 4), (2, 3), (7, [2, 5]), (7, [-1])])
def test_array_split(n, sections):
    x = _rand(n)
    pieces = fnp.array_split(fg.tensor(x), sections)
    for g, e in zip(pieces, np.array_split(x, sections), strict=True):
        _check(g, e)


def test_array_split_needs_a_positive_count():
    with pytest.raises(ValueError, match="number of sections must be positive, got 0"):
        fnp.array_split(fg.ones(3), 0)


@pytest.mark.parametrize("shape,reps", [((), 3), ((2,), 3), ((2,), (2, 2)), ((2, 3), (1, 2)),
                                        ((2, 3), 2), ((2, 1, 3), (2, 1, 1)), ((0, 2), 2),
                                        ((2,), 0)])
def test_tile(shape, reps):
    x = _rand(shape)
    _check(fnp.tile(fg.tensor(x), reps), np.tile(x, reps))


@pytest.mark.parametrize("shape,repeats,axis", [((3,), 2, None), ((2, 3), 2, None),
                                                ((2, 3), 3, 1), ((2, 3), [1, 0, 2], 1),
                                                ((2, 3), [2, 1], 0), ((), 3, None),
                                                ((0, 3), 2, 0), ((2, 3), 0, -1)])
def test_repeat(shape, repeats, axis):
    x = _rand(shape)
    _check(fnp.repeat(fg.tensor(x), repeats, axis=axis), np.repeat(x, repeats, axis=axis))



def test_repeat_and_roll_broadcast_single_repeats_and_axes_as_numpy():
    x = np.arange(5.0)
    for repeats in (np.array(2), np.array([2]), fg.tensor(2)):
        np.testing.assert_array_equal(fnp.repeat(fg.tensor(x), repeats, axis=0).numpy(),
                                      np.repeat(x, 2))
    np.testing.assert_array_equal(fnp.roll(fg.tensor(x), (1, 2), axis=0).numpy(),
                                  np.roll(x, (1, 2), axis=0))


def test_repeat_with_traced_repeats_and_a_total_length():
    # as jnp.repeat: the sum of repeats cut at total_repeat_length, or filled with the last
    # element; the length is static, so traced repeats work under jit and vmap
    x = np.array([1.5, 2.5, 3.5])
    f = fg.jit(lambda x, r: fnp.repeat(x, r, total_repeat_length=5))
    assert f(fg.tensor(x), fg.tensor([1, 3, 2])).tolist() == [1.5, 2.5, 2.5, 2.5, 3.5]
    assert f(fg.tensor(x), fg.tensor([0, 1, 1])).tolist() == [2.5, 3.5, 3.5, 3.5, 3.5]
    rows = fg.vmap(lambda r: fnp.repeat(fg.tensor([5, 6]), r, total_repeat_length=3))(
        fg.tensor([[1, 2], [3, 0], [0, 0]]))
    assert rows.tolist() == [[5, 6, 6], [5, 5, 5], [6, 6, 6]]
    m = np.arange(6).reshape(2, 3)
    _check(fnp.repeat(fg.tensor(m), [2, 1], axis=0, total_repeat_length=3),
           np.repeat(m, [2, 1], axis=0))
    assert fnp.repeat(fg.tensor(x), 2, total_repeat_length=0).shape == (0,)
    from funcgrad.test_util import check_grads

    check_grads(lambda a: fnp.repeat(a, fg.tensor([2, 1, 0]), total_repeat_length=4),
                (fg.tensor(x),), order=1)
    with pytest.raises(TypeError, match="total_repeat_length"):
        fg.jit(lambda x, r: fnp.repeat(x, r))(fg.tensor(x), fg.tensor([1, 2, 1]))
    with pytest.raises(ValueError, match="total_repeat_length must be a non-negative int"):
        fnp.repeat(fg.tensor(x), 2, total_repeat_length=-1)

_PAD_WIDTHS = [1, (1, 2), ((0, 1), (2, 0)), ((3, 3), (1, 1)), 0]


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("width", _PAD_WIDTHS, ids=str)
def test_pad_modes(mode, width):
    x = _rand((3, 4))
    _check(fnp.pad(fg.tensor(x), width, mode=mode), np.pad(x, width, mode=mode))


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("width", [1, 3, 7, (2, 9)], ids=str)
@pytest.mark.parametrize("shape", [(5,), (1,), (3, 4)], ids=str)
def test_pad_odd_reflection(mode, width, shape):
    # reflect_type="odd" mirrors through the edge value, a period at a time (numpy.pad)
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) ** 1.5
    want = np.pad(x, width, mode=mode, reflect_type="odd")
    np.testing.assert_allclose(fnp.pad(fg.tensor(x), width, mode=mode, reflect_type="odd"),
                               want, rtol=1e-12)
    got = fg.jit(lambda t: fnp.pad(t, width, mode=mode, reflect_type="odd"))(fg.tensor(x))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_pad_more_cases():
    x = _rand((2, 3))
    _check(fnp.pad(fg.tensor(x), 2, constant_values=7.5), np.pad(x, 2, constant_values=7.5))
    _check(fnp.pad(fg.tensor(np.arange(3)), (5, 4), mode="reflect"),
           np.pad(np.arange(3), (5, 4), mode="reflect").astype(np.int64))
    _check(fnp.pad(fg.tensor(np.arange(2)), (5, 4), mode="wrap"),
           np.pad(np.arange(2), (5, 4), mode="wrap"))
    _check(fnp.pad(fg.tensor(np.arange(2)), (5, 4), mode="symmetric"),
           np.pad(np.arange(2), (5, 4), mode="symmetric"))
    _check(fnp.pad(fg.tensor(np.zeros((0, 2))), 1), np.pad(np.zeros((0, 2)), 1))
    _check(fnp.pad(fg.tensor(np.float64(1.0)), 0), np.pad(np.float64(1.0), 0))
    with pytest.raises(ValueError, match="mode"):
        fnp.pad(fg.ones(2), 1, mode="bogus")
    with pytest.raises(ValueError, match="non-negative"):
        fnp.pad(fg.ones(2), -1)
    with pytest.raises(ValueError, match=r"pad: pad_width.*\(3,\)"):
        fnp.pad(fg.ones(3), ((1, 2), (3, 4)))
    with pytest.raises(TypeError, match="pad_width must be integers, got 1.5"):
        fnp.pad(fg.ones(3), 1.5)  # was cut to 1 (NumPy raises)



_STATISTIC_MODES = ["maximum", "minimum", "mean", "median", "linear_ramp"]


def _pad_extra(mode):
    return {"end_values": ((1.5, -2.0), (0.0, 4.0))} if mode == "linear_ramp" else \
        {"stat_length": ((1, 2), (3, 1))}


def test_pad_statistic_and_ramp_modes():
    x = _rand((3, 4))
    cases = [(mode, width, extra) for mode in _STATISTIC_MODES for width in _PAD_WIDTHS
             for extra in ({}, _pad_extra(mode))]

    def every_case(a):  # one program for every mode and width: one compile
        return [fnp.pad(a, width, mode=mode, **extra) for mode, width, extra in cases]

    for results in (every_case(fg.tensor(x)), fg.jit(every_case)(fg.tensor(x))):
        for (mode, width, extra), got in zip(cases, results, strict=True):
            want = np.pad(x, width, mode=mode, **extra)
            assert got.shape == want.shape and got.dtype == want.dtype, (mode, width)
            # medians and ramps may round differently in the last bit
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14, atol=1e-15,
                                       err_msg=f"{mode} {width} {extra}")


def test_pad_statistic_modes_on_integers_and_their_gradients():
    from funcgrad.test_util import check_grads

    xi = np.array([1, 2, 7, 10], np.int32)
    for mode in ("mean", "median", "linear_ramp", "maximum"):  # means rounded, ramps truncated
        got = fnp.pad(fg.tensor(xi), (2, 3), mode=mode)
        assert got.dtype == np.int32 and got.tolist() == np.pad(xi, (2, 3), mode=mode).tolist()
    assert fnp.pad(fg.tensor([1.0, 2.0]), 1, mode="empty").tolist() == [0.0, 1.0, 2.0, 0.0]
    for mode in ("maximum", "mean", "median", "linear_ramp"):
        check_grads(lambda a, mode=mode: fnp.pad(a, ((1, 1), (2, 1)), mode=mode),
                    (fg.tensor(_rand((2, 3))),), order=1)
    with pytest.raises(ValueError, match="stat_length of 0"):
        fnp.pad(fg.ones(3), 1, mode="mean", stat_length=0)
    with pytest.raises(ValueError, match="empty axis"):
        fnp.pad(fg.ones((0, 2)), 1, mode="maximum")

@pytest.mark.parametrize("shape,shift,axis", [((5,), 2, None), ((5,), -7, 0), ((2, 3), 1, None),
                                              ((2, 3), 1, 1), ((2, 3), (1, 2), (0, 1)),
                                              ((2, 3), 4, -1), ((0,), 3, None), ((3, 0), 1, 0)])
def test_roll(shape, shift, axis):
    x = _rand(shape)
    _check(fnp.roll(fg.tensor(x), shift, axis), np.roll(x, shift, axis))


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
def test_rot90(k):
    x = _rand((2, 3, 4))
    _check(fnp.rot90(fg.tensor(x), k), np.rot90(x, k))
    _check(fnp.rot90(fg.tensor(x), k, axes=(1, 2)), np.rot90(x, k, axes=(1, 2)))


@pytest.mark.parametrize("offset", [0, 1, -1, 2, -3, 5])
def test_diagonal_trace_tril_triu(offset):
    x = _rand((3, 4))
    _check(fnp.diagonal(fg.tensor(x), offset), np.diagonal(x, offset))
    np.testing.assert_allclose(np.asarray(fnp.trace(fg.tensor(x), offset)), np.trace(x, offset))
    _check(fnp.tril(fg.tensor(x), offset), np.tril(x, offset))
    _check(fnp.triu(fg.tensor(x), offset), np.triu(x, offset))
    v = _rand(3)
    _check(fnp.diag(fg.tensor(v), offset), np.diag(v, offset))
    _check(fnp.diag(fg.tensor(x), offset), np.diag(x, offset))


def test_diagonal_of_3d():
    x = _rand((2, 3, 4))
    _check(fnp.diagonal(fg.tensor(x), 0, 1, 2), np.diagonal(x, 0, 1, 2))
    _check(fnp.diagonal(fg.tensor(x), 1, 0, 2), np.diagonal(x, 1, 0, 2))


def test_atleast():
    _check(fnp.atleast_1d(fg.tensor(np.float64(1.0))), np.atleast_1d(np.float64(1.0)))
    _check(fnp.atleast_2d(fg.tensor(np.arange(3.0))), np.atleast_2d(np.arange(3.0)))


def test_shape_functions_keep_dtype():
    for dtype in ("int8", "bool", "bfloat16", "complex64"):
        x = fg.zeros((2, 3), dtype=dtype)
        for out in (fnp.reshape(x, (3, 2)), fnp.transpose(x), fnp.flip(x), fnp.tile(x, 2),
                    fnp.repeat(x, 2), fnp.pad(x, 1), fnp.roll(x, 1), fnp.stack([x, x]),
                    fnp.concatenate([x, x]), fnp.split(x, 3, axis=1)[0]):
            assert out.dtype == x.dtype, (dtype, out)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match=r"reshape: shape must be a sequence of ints.*2\.5"):
        fnp.reshape(fg.ones((2, 3)), (2.5, 2))
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative"):
        fnp.repeat(fg.ones(3), -1)
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative"):
        fnp.repeat(fg.ones(3), [1, -1, 1])
    with pytest.raises(ValueError, match="tile: reps must be non-negative"):
        fnp.tile(fg.ones(3), -1)
    with pytest.raises(ValueError, match="roll: 3 shifts"):
        fnp.roll(fg.ones((2, 2)), (1, 2, 3), axis=(0, 1))
    with pytest.raises(ValueError, match="moveaxis: axis 5"):
        fnp.moveaxis(fg.ones((2, 3)), 0, 5)
    with pytest.raises(ValueError, match="split: axis 3"):
        fnp.split(fg.ones((2, 3)), 2, axis=3)


def test_reshape_accepts_integer_like_dims():
    assert fnp.reshape(fg.ones(6), np.array([3, 2])).shape == (3, 2)
    assert fg.ones(6).reshape(fg.tensor(2), -1).shape == (2, 3)


def test_expand_dims_rejects_a_repeated_axis():
    with pytest.raises(ValueError, match="repeated axis"):
        fnp.expand_dims(fg.ones((2, 3)), (0, 0))
    with pytest.raises(ValueError, match="repeated axis"):
        fnp.expand_dims(fg.ones((2, 3)), (1, -3))


@pytest.mark.parametrize("values", [((1.0, 2.0), (3.0, 4.0)), (5.0, 6.0), 7.0])
def test_pad_with_per_axis_constant_values(values):
    a = np.arange(6.0).reshape(2, 3)
    widths = ((1, 2), (0, 1))
    want = np.pad(a, widths, constant_values=values)
    np.testing.assert_array_equal(fnp.pad(fg.tensor(a), widths, constant_values=values), want)
    np.testing.assert_array_equal(
        fg.jit(lambda x: fnp.pad(x, widths, constant_values=values))(fg.tensor(a)), want)


def test_roll_by_a_tensor_shift_concrete_traced_and_batched():
    x = np.arange(10.0).reshape(2, 5)
    for shift in (2, -7):
        want = np.roll(x, shift, axis=1)
        np.testing.assert_array_equal(fnp.roll(fg.tensor(x), fg.tensor(shift), axis=1), want)
        jitted = fg.jit(lambda x, s: fnp.roll(x, s, axis=1))(fg.tensor(x), fg.tensor(shift))
        np.testing.assert_array_equal(jitted.numpy(), want)
    rows = fg.vmap(lambda s: fnp.roll(fnp.arange(4), s))(fg.tensor([0, 1, 2]))
    np.testing.assert_array_equal(rows.numpy(), [np.roll(np.arange(4), s) for s in range(3)])


@pytest.mark.parametrize("shape", [(4, 6), (6, -1), (24,), (2, 2, 6)])
def test_reshape_in_fortran_order_matches_numpy(shape):
    x = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(fnp.reshape(fg.tensor(x), shape, order="F"),
                                  np.reshape(x, shape, order="F"))
    np.testing.assert_array_equal(fg.tensor(x).reshape(shape, order="F"),
                                  x.reshape(shape, order="F"))
    with pytest.raises(ValueError, match="order"):
        fnp.reshape(fg.tensor(x), shape, order="K")
