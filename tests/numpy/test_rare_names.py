"""funcgrad.numpy._rare against NumPy (and JAX where it differs, when installed): index
tricks, block and apply helpers, compress/extract/delete/insert/place/fill_diagonal,
NaN-ignoring quantiles, poly, sort_complex, the unique_* functions, bitwise_count and the
printing, buffer and file helpers; eagerly, with gradients, under vmap and in one jit."""

import io
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.numpy import _rare as R
from funcgrad.test_util import check_grads

RNG = np.random.default_rng(0)
# names that are other modules' objects (NumPy's, or other funcgrad functions)
FOREIGN = ("euler_gamma", "ComplexWarning", "complex_", "uint", "s_", "index_exp",
           "printoptions", "get_printoptions", "set_printoptions", "bitwise_left_shift",
           "bitwise_right_shift", "mgrid", "ogrid", "r_", "c_")
DTYPES = (np.float64, np.int32)


def close(got, want, tol=1e-12):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def same(got, want):
    """Equal values, shapes and dtypes."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def test_names_exported_and_documented():
    assert len(R.__all__) == len(set(R.__all__))
    for name in R.__all__:
        assert getattr(fnp, name) is getattr(R, name), name
        if name not in FOREIGN:
            assert R.__dict__[name].__doc__ and ">>>" in R.__dict__[name].__doc__, name


def test_aliases_constants_and_numpy_objects():
    assert fnp.complex_ is fnp.complex128 and fnp.uint is fnp.uint64  # as jax.numpy
    assert fnp.complex_(1).dtype == np.complex128 and fnp.uint(3).dtype == np.uint64
    assert fnp.euler_gamma == np.euler_gamma
    assert fnp.ComplexWarning is np.exceptions.ComplexWarning
    assert fnp.s_ is np.s_ and fnp.index_exp is np.index_exp
    assert fnp.s_[1:3, ::2] == (slice(1, 3), slice(None, None, 2))
    assert fnp.bitwise_left_shift is fnp.left_shift
    assert fnp.bitwise_right_shift is fnp.right_shift
    assert fnp.printoptions is np.printoptions and fnp.get_printoptions is np.get_printoptions


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8,
                                   np.uint16, np.uint32, np.uint64])
def test_bitwise_count_matches_numpy(dtype):
    info = np.iinfo(dtype)
    values = np.array([info.min, info.max, 0, 1, 5, info.max // 3, info.max // 7], dtype)
    same(fnp.bitwise_count(values), np.bitwise_count(values))  # uint8, |x| for negatives
    same(fnp.bitwise_count(np.array([True, False])), np.array([1, 0], np.uint8))


# --- index tricks ----------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.r_["r", ...]: matrix
def test_index_tricks_match_numpy():
    a = np.arange(6.0).reshape(2, 3)
    close(fnp.mgrid[0:2, 0:3], np.mgrid[0:2, 0:3])
    close(fnp.mgrid[0:1:5j, -1:1:0.5], np.mgrid[0:1:5j, -1:1:0.5])
    close(fnp.mgrid[-1:1:0.5], np.mgrid[-1:1:0.5])
    assert fnp.mgrid[0:2, 0:3].dtype == np.int32 and fnp.mgrid[0:1:3j].dtype == np.float32
    grids = fnp.ogrid[0:2, 0:3.0]
    assert isinstance(grids, list) and len(grids) == 2
    for got, want in zip(grids, np.ogrid[0:2, 0:3.0], strict=True):
        close(got, want)
    cases = [
        (lambda m: m.r_[1:4, 7, [8, 9]]), (lambda m: m.r_[0:1:5j, 3]),
        (lambda m: m.r_["0,2", [1, 2], [3, 4]]), (lambda m: m.r_["1,2,0", [1, 2], [3, 4]]),
        (lambda m: m.r_["r", [1, 2], [3, 4]]), (lambda m: m.r_["c", [1, 2], [3, 4]]),
        (lambda m: m.r_["-1", a, a]), (lambda m: m.c_[[1, 2], [3, 4]]),
        (lambda m: m.c_[a.T, [1.0, 2.0, 3.0]]), (lambda m: m.c_[np.array([[1, 2]]), 0, 0]),
    ]
    for case in cases:
        close(case(fnp), case(np))
    assert fnp.r_[fg.tensor([1, 2]), 3].dtype == np.int32


def _as_tensors(nested):
    """Nested lists with their NumPy arrays made tensors."""
    if isinstance(nested, list):
        return [_as_tensors(x) for x in nested]
    return fg.tensor(nested) if isinstance(nested, np.ndarray) else nested


def test_block_and_broadcast_shapes():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(4).reshape(2, 2)
    for arrays in ([[a, b], [np.ones((1, 5)), np.zeros((1, 0))]], [1, 2, np.array([3, 4])],
                   [[a], [a]], [[[a]], [[a]]], [a, b]):
        close(fnp.block(_as_tensors(arrays)), np.block(arrays))
    close(fnp.block(2.5), np.block(2.5))
    assert fnp.broadcast_shapes((2, 1), (3,)) == np.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert fnp.broadcast_shapes(3, (2, 1), ()) == (2, 3)
    assert fnp.broadcast_shapes() == ()


def test_apply_along_and_over_axes_and_fromfunction():
    b = RNG.standard_normal((2, 3, 4))
    for axis in (0, 1, 2, -1):
        for func in (lambda v: v * v.sum(), lambda v: v[0] + v[-1], lambda v: v[:, None] * v):
            np_func = func
            close(fnp.apply_along_axis(func, axis, b), np.apply_along_axis(np_func, axis, b))
    close(fnp.apply_along_axis(lambda v, p: v ** p, 1, b, 2), np.apply_along_axis(
        lambda v, p: v ** p, 1, b, 2))
    for axes in ([0, 2], [1], 2):
        close(fnp.apply_over_axes(fnp.sum, b, axes), np.apply_over_axes(np.sum, b, axes))
    ints = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    same(fnp.apply_over_axes(fnp.max, ints, [1]), np.apply_over_axes(np.max, ints, [1]))
    close(fnp.fromfunction(lambda i, j: i * 3 + j, (2, 3)), np.fromfunction(
        lambda i, j: i * 3 + j, (2, 3)))
    assert fnp.fromfunction(lambda i: i, 3).dtype == np.float32  # float is float32, as JAX
    same(fnp.fromfunction(lambda i, j, k: i - j * k, (2, 3, 2), dtype=int),
         np.fromfunction(lambda i, j, k: i - j * k, (2, 3, 2), dtype=int).astype(np.int32))
    # the function sees scalars (it is batched), and keyword arguments unbatched
    close(fnp.fromfunction(lambda i, scale: fnp.stack([i, i]).sum() * scale, (3,),
                           scale=2.0), [0.0, 4.0, 8.0])


# --- comparing, selecting, deleting, inserting -----------------------------------------------


def test_array_equiv_matches_numpy():
    cases = [([1, 2], [[1, 2], [1, 2]]), ([1, 2], [1, 2, 3]), ([1, 2], [[1, 2], [1, 3]]),
             (np.ones((2, 1)), np.ones((3,))), (1.0, np.ones((2, 2)))]
    for a1, a2 in cases:
        got = fnp.array_equiv(fg.tensor(np.asarray(a1)), np.asarray(a2))
        assert got.dtype == np.bool_ and bool(got) == np.array_equiv(a1, a2), (a1, a2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_compress_and_extract_match_numpy(dtype):
    a = (RNG.standard_normal((3, 4)) * 10).astype(dtype)
    for condition, axis in [([True, False, True], 0), ([0, 1], 1), ([0, 1, 1, 0, 1], None),
                            ([True, False, True, False, False], 0), ([], 1)]:
        same(fnp.compress(condition, fg.tensor(a), axis=axis), np.compress(condition, a, axis))
    mask = a > 0
    same(fnp.extract(mask, a), np.extract(mask, a))
    # size= pads with fill_value (static shape, as JAX)
    want = np.concatenate([np.extract(mask, a), np.full(12 - mask.sum(), -7, dtype)])
    same(fnp.extract(mask, a, size=12, fill_value=-7), want)
    rows = np.array([False, True, True])
    same(fnp.compress(rows, a, axis=0, size=3),
         np.concatenate([a[rows], np.zeros((1, 4), dtype)]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_delete_and_insert_match_numpy(dtype):
    a = (RNG.standard_normal((3, 4)) * 10).astype(dtype)
    for obj, axis in [(1, None), ([0, 2], 1), (slice(0, None, 2), 1), (-1, 0), ([], 0),
                      (np.array([True, False, True]), 0), ([3, 3, 0], 1), (np.int64(2), 1)]:
        same(fnp.delete(fg.tensor(a), obj, axis=axis), np.delete(a, obj, axis=axis))
    same(fnp.delete(a, fg.tensor([2, 0]), axis=1, assume_unique_indices=True),
         np.delete(a, [2, 0], axis=1))
    for obj, values, axis in [(1, 9, None), (1, [7, 8], None), ([0, 2], [7, 8], 1),
                              (1, [7, 8, 9], 1), ([1], [[7], [8], [9]], 1), (slice(0, 2), 5, 0),
                              (-1, 5, 0), (4, [5, 6, 7], 1), ([2, 0, 2], [5, 6, 7], None),
                              (2, [[1, 2, 3, 4], [5, 6, 7, 8]], 0), ([0, 1], [[5], [6], [7]], 1),
                              (3, [1, 2, 3, 4], 0)]:
        want = np.insert(a, obj, np.asarray(values, dtype), axis=axis)
        same(fnp.insert(fg.tensor(a), obj, np.asarray(values, dtype), axis=axis), want)
    same(fnp.insert(a, fg.tensor([1, 0]), 2.0 if dtype == np.float64 else 2, axis=1),
         np.insert(a, [1, 0], 2, axis=1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_place_fill_diagonal_and_mask_indices_match_numpy(dtype):
    a = np.arange(12).reshape(3, 4).astype(dtype)
    for mask, vals in [(a % 2 == 0, [10, 20]), (a > 20, [1]), (a > 3, np.arange(20))]:
        want = a.copy()
        np.place(want, mask, np.asarray(vals, dtype))
        same(fnp.place(fg.tensor(a), mask, np.asarray(vals, dtype), inplace=False), want)
    for shape, wrap, val in [((3, 3), False, 5), ((5, 3), False, [1, 2]), ((5, 3), True, [1, 2]),
                             ((7, 3), True, [1, 2, 4]), ((3, 5), False, 9), ((2, 2, 2), False, 3)]:
        want = np.zeros(shape, dtype)
        np.fill_diagonal(want, val, wrap=wrap)
        got = fnp.fill_diagonal(np.zeros(shape, dtype), np.asarray(val, dtype), wrap=wrap,
                                inplace=False)
        same(got, want)
    for func, k in [(np.triu, 1), (np.tril, 0), (np.triu, -1)]:
        got = fnp.mask_indices(4, getattr(fnp, func.__name__), k)
        for g, w in zip(got, np.mask_indices(4, func, k), strict=True):
            same(g, w.astype(np.int32))
    rows, columns = fnp.mask_indices(3, fnp.triu, 1, size=5)
    same(rows, np.array([0, 0, 1, 0, 0], np.int32))
    same(columns, np.array([1, 2, 2, 0, 0], np.int32))


# --- NaN-ignoring order statistics, poly, sort_complex ----------------------------------------


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_nanquantile_nanpercentile_nanmedian_match_numpy(method):
    a = RNG.standard_normal((3, 4, 5))
    a[RNG.random(a.shape) < 0.3] = np.nan
    a[1, 2] = np.nan  # a slice of NaNs only: NaN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on all-NaN slices
        for q, axes in [(0.5, (None, 2, 0, (0, 2))), ([0.1, 0.5, 0.9], (None, 2, (0, 2))),
                        (1 / 3, (1, (1, 2))), ([[0.0, 1.0]], (None, 2))]:
            # (NumPy's nanquantile puts a 2-d q's axes last for a tuple axis)
            for axis in axes:
                for keepdims in (False, True):
                    got = fnp.nanquantile(fg.tensor(a), q, axis=axis, method=method,
                                          keepdims=keepdims)
                    want = np.nanquantile(a, q, axis=axis, method=method, keepdims=keepdims)
                    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        close(fnp.nanpercentile(a, [10, 90], axis=1, method=method),
              np.nanpercentile(a, [10, 90], axis=1, method=method))
        close(fnp.nanmedian(a, axis=(1, 2), keepdims=True),
              np.nanmedian(a, axis=(1, 2), keepdims=True))
    ints = np.array([[3, 1, 2], [9, 7, 8]], np.int32)
    got = fnp.nanmedian(ints, axis=1)
    assert got.dtype == np.float32  # integers become float32, as JAX
    close(got, np.nanmedian(ints, axis=1))


def test_poly_and_sort_complex_match_numpy():
    close(fnp.poly(fg.tensor([1.0, 2.0, 3.0], dtype=fnp.float64)), np.poly([1.0, 2.0, 3.0]))
    close(fnp.poly(fg.tensor([2, -1])), np.poly([2, -1]), tol=1e-6)
    assert fnp.poly(fg.tensor([2, -1])).dtype == np.float32
    matrix = RNG.standard_normal((3, 3))
    close(fnp.poly(matrix), np.poly(matrix), tol=1e-10)  # its eigenvalues' polynomial
    close(fnp.poly(np.array([1 + 1j, 1 - 1j])), np.poly([1 + 1j, 1 - 1j]))
    close(fnp.poly(3.0), [1.0, -3.0])  # a scalar is one root, as JAX
    close(fnp.poly(np.zeros(0)), 1.0)
    z = np.array([[1 + 2j, 1 - 1j, 0 + 5j, 1 + 2j], [3, 2, 1, -1j]])
    same(fnp.sort_complex(z), np.sort_complex(z))
    ints = np.array([[5, 3, 4], [6, 9, 2]], np.int32)
    got = fnp.sort_complex(ints)
    assert got.dtype == np.complex64  # as JAX (NumPy: complex128)
    close(got, np.sort_complex(ints))


# --- unique_* ---------------------------------------------------------------------------------


@pytest.mark.parametrize("values", [np.array([3, 1, 3, 2, 2, 2], np.int32),
                                    np.array([3.0, np.nan, 1, np.nan, 1, -0.0, 0.0]),
                                    np.array([[2, 1], [1, 0]], np.int32),
                                    np.zeros(0)])
def test_unique_functions_match_numpy(values):
    want = np.unique_all(values)
    got = fnp.unique_all(fg.tensor(values))
    assert type(got).__name__ == "_UniqueAllResult" and got._fields == want._fields
    for field in want._fields:
        g, w = getattr(got, field), getattr(want, field)
        np.testing.assert_array_equal(g, w)  # NaNs are distinct values, as NumPy and JAX
        assert np.asarray(g).dtype == (w.dtype if field == "values" else np.int32), field
    counts = fnp.unique_counts(values)
    assert counts._fields == ("values", "counts")
    np.testing.assert_array_equal(counts.counts, np.unique_counts(values).counts)
    inverse = fnp.unique_inverse(values)
    assert inverse._fields == ("values", "inverse_indices")
    np.testing.assert_array_equal(inverse.inverse_indices,
                                  np.unique_inverse(values).inverse_indices)
    np.testing.assert_array_equal(fnp.unique_values(values), np.unique(values, equal_nan=False))


def test_unique_functions_with_size():
    x = fg.tensor([3, 1, 3, 2])
    result = fnp.unique_all(x, size=5)
    # padded with the smallest value and its index; counts with 0 (as jax.numpy)
    same(result.values, np.array([1, 2, 3, 1, 1], np.int32))
    same(result.indices, np.array([1, 3, 0, 1, 1], np.int32))
    same(result.inverse_indices, np.array([2, 0, 2, 1], np.int32))
    same(result.counts, np.array([1, 1, 2, 0, 0], np.int32))
    same(fnp.unique_counts(x, size=2, fill_value=0).values, np.array([1, 2], np.int32))
    same(fnp.unique_values(x, size=4, fill_value=-1), np.array([1, 2, 3, -1], np.int32))


# --- printing, buffers, DLPack, files, einsum_path --------------------------------------------


def test_printing_and_iterable():
    x = fg.tensor([[1.123456, 2.0], [3.0, 4.0]])
    assert fnp.array_repr(x) == repr(x)
    assert fnp.array_repr(x, precision=2) == ("tensor([[1.12, 2.  ],\n"
                                              "        [3.  , 4.  ]], dtype=float32)")
    assert fnp.array_str(x, precision=1) == np.array_str(np.asarray(x), precision=1)
    with fnp.printoptions(precision=2):
        assert "1.12," in repr(x) and fnp.get_printoptions()["precision"] == 2
    assert fnp.get_printoptions()["precision"] == 8
    assert fnp.iterable(fg.ones(2)) and fnp.iterable([1]) and fnp.iterable(np.ones(2))
    assert not fnp.iterable(fg.tensor(1.0)) and not fnp.iterable(1)


def test_from_dlpack_buffers_and_strings():
    values = np.arange(6.0).reshape(2, 3)
    same(fnp.from_dlpack(values), values)
    got = fnp.from_dlpack(values[:, ::2])  # a strided view: copied, not aliased
    same(got, values[:, ::2])
    same(fnp.frombuffer(values.tobytes(), dtype=fnp.float64), values.ravel())
    same(fnp.frombuffer(values.tobytes()), values.ravel().astype(np.float32))  # float: f32
    same(fnp.frombuffer(b"\x01\x02\x03\x04", dtype=fnp.uint8, count=2, offset=1),
         np.array([2, 3], np.uint8))
    same(fnp.fromstring("1, 2, 3", dtype=int, sep=","), np.array([1, 2, 3], np.int32))
    same(fnp.fromstring("1.5 2", dtype=fnp.float64, sep=" "), np.array([1.5, 2.0]))
    with pytest.raises(NotImplementedError, match="fromiter: .*np.fromiter"):
        fnp.fromiter(iter([1, 2]), dtype=int)
    with pytest.raises(NotImplementedError, match="fromfile: .*fnp.load"):
        fnp.fromfile("x.bin")


def test_save_load_and_savez_round_trip():
    for x in (fg.tensor([[1.5, 2.0]]), fg.tensor([1, 2], dtype=fnp.int64),
              fg.tensor([1.5, -2.0], dtype=fnp.bfloat16)):
        buffer = io.BytesIO()
        fnp.save(buffer, x)
        buffer.seek(0)
        back = fnp.load(buffer)
        assert isinstance(back, fg.Tensor) and back.dtype == x.dtype  # bfloat16 restored
        same(back, x)
    buffer = io.BytesIO()
    fnp.savez(buffer, fg.tensor([1, 2]), weights=fg.tensor([0.5]))
    buffer.seek(0)
    archive = fnp.load(buffer)
    same(archive["arr_0"], np.array([1, 2], np.int32))
    same(archive["weights"], np.array([0.5], np.float32))


def test_einsum_path_matches_numpy():
    a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))
    path, report = fnp.einsum_path("ij,jk,kl->il", fg.tensor(a), b, c)
    want, want_report = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")
    assert path == want[1:] == [(1, 2), (0, 1)] and report == want_report
    assert fnp.einsum_path("ij,jk,kl->il", a, b, c, optimize=False)[0] == [(0, 1), (0, 1)]
    assert fnp.einsum_path(a, [0, 1], b, [1, 2], [0, 2])[0] == [(0, 1)]
    # the path is accepted by einsum
    close(fnp.einsum("ij,jk,kl->il", a, b, c, optimize=path), a @ b @ c)


# --- transformations --------------------------------------------------------------------------


def test_many_functions_in_one_jit_match_eager_and_numpy():
    a = RNG.standard_normal((3, 4))
    a[0, 1] = np.nan
    counts = np.array([5, 3, 5, 1], np.int32)

    def many(x, positions, values, keep, ints):
        return dict(
            insert=fnp.insert(x, positions, values, axis=1),
            delete=fnp.delete(x, positions, axis=1, assume_unique_indices=True),
            delete_static=fnp.delete(x, 1, axis=0),
            compress=fnp.compress(keep, x, axis=0, size=2, fill_value=-1.0),
            extract=fnp.extract(x > 0, x, size=12),
            unique=fnp.unique_all(ints, size=4),
            nanquantile=fnp.nanquantile(x, fg.tensor([0.25, 0.5]), axis=1),
            bitwise_count=fnp.bitwise_count(ints),
            fill_diagonal=fnp.fill_diagonal(x, values[0], inplace=False),
            place=fnp.place(x, x > 0.5, values, inplace=False),
            poly=fnp.poly(x[1]),
            block=fnp.block([[x, x], [x, x]]),
            r_=fnp.r_[x[1], 0:2],
            apply_along_axis=fnp.apply_along_axis(lambda v: v * fnp.nansum(v), 1, x),
            array_equiv=fnp.array_equiv(x, x[0]),
        )

    args = (fg.tensor(a), fg.tensor([3, 0]), fg.tensor([7.0, 8.0]),
            fg.tensor([True, False, True]), fg.tensor(counts))
    got = fg.jit(many)(*args)
    eager = many(*args)
    for name, value in eager.items():
        for g, e in zip(fg.tree.leaves(got[name]), fg.tree.leaves(value), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-12, err_msg=name)
    close(got["insert"], np.insert(a, [3, 0], [7.0, 8.0], axis=1))
    close(got["delete"], np.delete(a, [3, 0], axis=1))
    close(got["compress"], np.r_[a[[0, 2]]])
    same(got["bitwise_count"], np.bitwise_count(counts))
    same(got["unique"].counts, np.array([1, 1, 2, 0], np.int32))
    close(got["nanquantile"], np.nanquantile(a, [0.25, 0.5], axis=1))
    close(got["poly"], np.poly(a[1]))


def test_vmap_matches_a_loop():
    xs = RNG.standard_normal((4, 3, 4))
    xs[1, 0, 2] = np.nan

    def f(x):
        return (fnp.insert(x, 1, x[0], axis=0), fnp.nanmedian(x, axis=0),
                fnp.delete(x, [0, 2], axis=1), fnp.unique_counts(fnp.round(x), size=3).counts,
                fnp.apply_along_axis(lambda r: r * r.sum(), 1, x),
                fnp.fill_diagonal(x, x[0, 0], inplace=False))

    batched = fg.vmap(f)(fg.tensor(xs))
    for i, x in enumerate(xs):
        for got, want in zip(batched, f(fg.tensor(x)), strict=True):
            np.testing.assert_allclose(got[i], want, rtol=1e-12)
    # traced positions and values in insert, one per batch element
    got = fg.vmap(lambda i, v: fnp.insert(fg.tensor([0.0, 1.0, 2.0, 3.0]), i, v))(
        fg.tensor([0, 2, 4]), fg.tensor([9.0, 8.0, 7.0]))
    close(got, [np.insert([0.0, 1.0, 2.0, 3.0], i, v) for i, v in ((0, 9), (2, 8), (4, 7))])


def test_gradients():
    x = RNG.standard_normal((3, 4))
    nan = x.copy()
    nan[0, 1] = np.nan
    checks = [
        (lambda x: fnp.nanquantile(x, fg.tensor([0.3, 0.5]), axis=1), nan[1:]),
        (lambda x: fnp.nanmedian(fnp.where(x > 1.0, np.nan, x), axis=0), x),
        (lambda x: fnp.insert(x, [1, 3], x[0, :2] * 2), x),
        (lambda x: fnp.delete(x, [0, 2], axis=1), x),
        (lambda x: fnp.poly(x[0]), x),
        (lambda x: fnp.apply_along_axis(lambda r: r * fnp.sum(r ** 2), 1, x), x),
        (lambda x: fnp.fill_diagonal(x, x[0, 0] * 3, inplace=False), x),
        (lambda x: fnp.place(x, x > 0, x[0] ** 2, inplace=False), x),
        (lambda x: fnp.block([[x, x ** 2]]) + fnp.c_[x, x[:, 0]].sum(), x),
        (lambda x: fnp.compress(x[:, 0] > 0, x, axis=0, size=2), x),
        (lambda x: fnp.unique_values(x[0], size=4), x),
    ]
    for f, value in checks:
        check_grads(f, (fg.tensor(value),), order=1)


# --- bad input --------------------------------------------------------------------------------


BAD = [
    (lambda x: fg.jit(lambda x: fnp.delete(x, 7))(x), IndexError, "delete: obj index 7 .*size 6"),
    (lambda x: fnp.delete(x, [1, -9]), IndexError, "delete: obj index -9"),
    (lambda x: fg.jit(lambda x, i: fnp.delete(x, i))(x, fg.tensor([1])), TypeError,
     "delete: obj is traced.*assume_unique_indices=True"),
    (lambda x: fnp.delete(x, [1.5]), TypeError, "delete: obj must be integer"),
    (lambda x: fnp.delete(x, np.array([True, False])), ValueError, r"mask of shape \(6,\)"),
    (lambda x: fnp.insert(x, [1, 2], [7.0, 8.0, 9.0]), ValueError,
     "insert: obj gives 2 positions but values has 3"),
    (lambda x: fnp.insert(fnp.ones((2, 3)), [1], fnp.ones((3, 1)), axis=1), ValueError,
     r"insert: values do not broadcast to the inserted block's shape \(2, 1\)"),
    (lambda x: fnp.insert(x, 7, 1.0), IndexError, "insert: obj index 7 .*size 6"),
    (lambda x: fnp.insert(x, 1.5, 1.0), TypeError, "insert: obj must be integer"),
    (lambda x: fg.jit(lambda c, x: fnp.compress(c, x))(x > 2, x), TypeError,
     "compress: .*condition.*size="),
    (lambda x: fnp.compress([0] * 6 + [1], x), ValueError, "condition has true entries past"),
    (lambda x: fnp.compress([1] * 6, x, size=7), ValueError, r"compress: size must be in \[0, 6\]"),
    (lambda x: fnp.extract(x > 1, x, size=-1), ValueError, "compress: size"),
    (lambda x: fg.jit(fnp.unique_values)(x), TypeError, "unique_values: .*pass size="),
    (lambda x: fnp.unique_all(x, size=-1), ValueError, "unique_all: size must be non-negative"),
    (lambda x: fnp.place(x, x > 2, 1.0), ValueError, "place: .*inplace=False"),
    (lambda x: fnp.place(x, np.ones(3, bool), 1.0, inplace=False), ValueError,
     "place: arr has 6 elements but mask has 3"),
    (lambda x: fnp.fill_diagonal(fnp.ones((2, 2)), 1.0), NotImplementedError,
     "fill_diagonal: .*inplace=False"),
    (lambda x: fnp.fill_diagonal(x, 1.0, inplace=False), ValueError, "at least 2 axes"),
    (lambda x: fnp.fill_diagonal(fnp.ones((2, 2, 3)), 1.0, inplace=False), ValueError,
     "equal axes"),
    (lambda x: fnp.nanquantile(x, 0.5, weights=x), NotImplementedError, "weights"),
    (lambda x: fnp.nanquantile(x, 1.5), ValueError, r"q must be in \[0, 1\]"),
    (lambda x: fnp.nanpercentile(x, 50, method="inverted_cdf"), ValueError, "method must be"),
    (lambda x: fnp.nanmedian(x.astype(fnp.complex64)), TypeError, "a must be real"),
    (lambda x: fnp.from_dlpack(np.ones(2), copy=False), ValueError, "copy=False"),
    (lambda x: fnp.from_dlpack([1, 2]), TypeError, "DLPack"),
    (lambda x: fnp.block((x, x)), TypeError, "block: arrays is a tuple"),
    (lambda x: fnp.block([[x], []]), ValueError, r"block: arrays\[1\] is an empty list"),
    (lambda x: fnp.block([[x], x]), ValueError, "nested to different depths"),
    (lambda x: fnp.apply_over_axes(lambda a, ax: a.ravel(), fnp.ones((2, 3, 4)), [0]),
     ValueError, r"func\(a, 0\) gave shape \(24,\)"),
    (lambda x: fnp.broadcast_shapes((2,), (3,)), ValueError, "cannot be broadcast"),
    (lambda x: fnp.broadcast_shapes((2.0,)), TypeError, "tuples of non-negative ints"),
    (lambda x: fg.jit(lambda n: fnp.mgrid[0:n])(fg.tensor(3)), TypeError,
     "mgrid: the slice stop is traced"),
    (lambda x: fnp.ogrid[0:], ValueError, "ogrid: each slice needs a stop"),
    (lambda x: fnp.r_["a,b", x], ValueError, "r_: could not understand the directive"),
    (lambda x: fnp.c_[x, "r"], ValueError, "c_: a string directive must come first"),
    (lambda x: fnp.bitwise_count(x), TypeError, "bitwise_count: x must be integers"),
    (lambda x: fnp.sort_complex(1.0), ValueError, "sort_complex: a must have at least 1"),
    (lambda x: fnp.poly(fnp.ones((2, 3))), ValueError, "poly: seq_of_zeros must be"),
    (lambda x: fg.jit(fnp.array_repr)(x), TypeError, "array_repr: arr is traced"),
    (lambda x: fnp.mask_indices(3, lambda m, k: m[0]), ValueError, r"must return shape \(3, 3\)"),
    (lambda x: fnp.fromfunction(lambda i: i, (-1,)), ValueError, "shape must be non-negative"),
    (lambda x: fnp.einsum_path("ij->i", fnp.ones((2, 2)), optimize="bogus"), ValueError,
     "einsum_path: optimize must be"),
]


@pytest.mark.parametrize("call, error, match", BAD)
def test_bad_input_raises_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(fg.tensor(np.arange(6.0)))


# --- as jax.numpy, where it differs from NumPy (expectations taken from JAX 0.10) ---------


def test_matches_jax_where_jax_differs_from_numpy():
    x = np.array([3, 1, 3, 2], np.int32)
    got = fnp.unique_all(x, size=6)  # padded with the smallest value and its index
    same(got.values, np.array([1, 2, 3, 1, 1, 1], np.int32))
    same(got.indices, np.array([1, 3, 0, 1, 1, 1], np.int32))
    same(got.inverse_indices, np.array([2, 0, 2, 1], np.int32))
    same(got.counts, np.array([1, 1, 2, 0, 0, 0], np.int32))
    a = np.arange(12.0).reshape(3, 4)
    close(fnp.compress([True, False, True], a, axis=1, size=3, fill_value=-1.0),
          np.array([[0.0, 2.0, -1.0], [4.0, 6.0, -1.0], [8.0, 10.0, -1.0]]))
    close(fnp.extract(a > 4, a, size=9), np.array([5.0, 6, 7, 8, 9, 10, 11, 0, 0]))
    roots = np.array([1 + 1j, 1 - 1j], np.complex64)
    assert fnp.poly(roots).dtype == np.complex64  # complex even for conjugate pairs
    same(fnp.sort_complex(np.array([3, 1, 2], np.int32)),
         np.array([1, 2, 3], np.complex64))
    b = np.ones((2, 3))
    got_path, _ = fnp.einsum_path("ij,jk,kl->il", b, b.T, b, optimize="greedy")
    assert got_path == [(0, 1), (0, 1)]
