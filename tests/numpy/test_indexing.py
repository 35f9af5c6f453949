"""Indexing against NumPy: hypothesis-generated basic and advanced indices, take,
take_along_axis, sort/argsort, nonzero, searchsorted, unique, and `.at[]` with the same
indices."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs
from hypothesis.extra import numpy as hnp

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.prims import indexing as ix


def _check(got, expected):
    assert isinstance(got, fg.Tensor)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(np.asarray(got), expected)


@hs.composite
def _index_for(draw, shape, allow_arrays=True):
    """A NumPy index for ``shape``: ints, slices (any step), None, Ellipsis, int arrays."""
    items = []
    dims = list(shape)
    use_ellipsis = draw(hs.booleans())
    consumed = draw(hs.integers(0, len(dims)))
    if use_ellipsis:
        # the ellipsis stands for some of the middle axes
        before = draw(hs.integers(0, consumed))
        axes = list(range(before)) + list(range(len(dims) - (consumed - before), len(dims)))
    else:
        before = None
        axes = list(range(consumed))
    array_shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    for k, axis in enumerate(axes):
        if use_ellipsis and k == before:
            items.append(Ellipsis)
        while draw(hs.integers(0, 4)) == 0:
            items.append(None)
        size = dims[axis]
        kinds = ["slice"]
        if size > 0:
            kinds += ["int"] + (["array"] if allow_arrays else [])
        kind = draw(hs.sampled_from(kinds))
        if kind == "int":
            items.append(draw(hs.integers(-size, size - 1)))
        elif kind == "slice":
            bound = hs.none() | hs.integers(-size - 2, size + 2)
            step = draw(hs.none() | hs.integers(-3, 3).filter(lambda s: s != 0))
            items.append(slice(draw(bound), draw(bound), step))
        else:
            items.append(draw(hnp.arrays(np.int32, array_shape,
                                         elements=hs.integers(-size, size - 1))))
    if use_ellipsis and before == len(axes):
        items.append(Ellipsis)
    if draw(hs.booleans()):
        items.append(None)
    return tuple(items)


@hs.composite
def _array_and_index(draw, allow_arrays=True):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return x, draw(_index_for(shape, allow_arrays))


@given(case=_array_and_index(allow_arrays=False))
def test_basic_indexing_matches_numpy(case):
    x, index = case
    _check(fg.tensor(x)[index], x[index])  # eagerly: NumPy's view
    # traced (under vmap): slice, rev and reshape primitives
    _check(fg.vmap(lambda t: t[index])(fg.tensor(x[None])), x[index][None])


def test_a_view_keeps_its_values_when_its_base_is_a_temporary():
    # eager basic indexing returns a NumPy view; the base's buffer must not be reused in
    # place by a later operation on the temporary it belonged to
    x = fnp.ones(100_000, dtype=fnp.float32)
    views = []

    def keep_a_view(t):
        views.append(t[:3])
        return t

    y = fnp.exp(keep_a_view(x * 2.0))
    np.testing.assert_array_equal(views[0], [2.0, 2.0, 2.0])
    np.testing.assert_allclose(y[:3], np.exp([2.0, 2.0, 2.0]), rtol=1e-6)
    row = fnp.asarray(np.arange(12.0).reshape(3, 4))[1]
    assert not row.weak_type and row.dtype == fnp.float64
    np.testing.assert_array_equal(row, [4.0, 5.0, 6.0, 7.0])
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
        fnp.asarray(np.zeros((3, 4)))[3]


@given(case=_array_and_index(), as_tensors=hs.booleans())
def test_mixed_indexing_matches_numpy(case, as_tensors):
    x, index = case
    expected = x[index]
    if as_tensors:
        index = tuple(fg.tensor(i) if isinstance(i, np.ndarray) else i for i in index)
    _check(fg.tensor(x)[index], expected)


@given(case=_array_and_index(), mode=hs.sampled_from(["set", "add", "max"]))
def test_at_update_with_generated_indices(case, mode):
    x, index = case
    selected = x[index]
    values = -np.arange(selected.size, dtype=np.float32).reshape(selected.shape) - 1
    got = getattr(fg.tensor(x).at[index], mode)(fg.tensor(values))
    expected = x.copy()
    if mode == "set":
        # with repeated positions NumPy's last write wins; funcgrad's order is unspecified,
        # so check that every selected position got one of its values
        positions = np.arange(x.size).reshape(x.shape)[index].ravel()
        got_flat = np.asarray(got).ravel()
        for p in set(positions.tolist()):
            assert got_flat[p] in values.ravel()[positions == p]
        untouched = np.setdiff1d(np.arange(x.size), positions)
        np.testing.assert_array_equal(got_flat[untouched], x.ravel()[untouched])
        return
    ufunc = {"add": np.add, "max": np.maximum}[mode]
    ufunc.at(expected, index, values)
    _check(got, expected)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), data=hs.data())
def test_boolean_masks_match_numpy(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    k = data.draw(hs.integers(1, len(shape)))
    lead = data.draw(hs.integers(0, len(shape) - k))
    mask = data.draw(hnp.arrays(np.bool_, shape[lead:lead + k]))
    index = (slice(None),) * lead + (mask,)
    _check(fg.tensor(x)[index], x[index])
    _check(fg.tensor(x)[(slice(None),) * lead + (fg.tensor(mask),)], x[index])


# --- take / take_along_axis -------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("indices", [[0, 2, 1], [[1, 0], [-1, 2]], 1, [], np.array([-2])],
                         ids=str)
def test_take(axis, indices):
    x = np.random.default_rng(0).standard_normal((3, 4))
    _check(fnp.take(fg.tensor(x), indices, axis=axis), np.take(x, indices, axis=axis))
    if not isinstance(indices, int):
        t_idx = fg.tensor(np.asarray(indices, dtype=np.int32))
        _check(fnp.take(fg.tensor(x), t_idx, axis=axis), np.take(x, indices, axis=axis))


def test_take_out_of_range_is_index_error():
    with pytest.raises(IndexError, match="axis 0 with size 3"):
        fnp.take(fg.tensor([1.0, 2.0, 3.0]), [3])


@pytest.mark.parametrize("shape,axis", [((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1),
                                        ((5,), 0), ((3, 4), None)])
def test_take_along_axis(shape, axis):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    if axis is None:
        idx = rng.integers(0, x.size, (7,))
    else:
        idx_shape = list(shape)
        idx_shape[axis] = 3
        idx = rng.integers(-shape[axis], shape[axis], idx_shape)
    _check(fnp.take_along_axis(fg.tensor(x), fg.tensor(idx.astype(np.int32)), axis),
           np.take_along_axis(x, idx, axis))


def test_take_along_axis_broadcasts_and_checks_rank():
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 3]])
    _check(fnp.take_along_axis(fg.tensor(x), idx, 1), np.take_along_axis(x, idx, 1))
    with pytest.raises(ValueError, match="rank"):
        fnp.take_along_axis(fg.tensor(x), np.array([0]), 1)


# --- sort / argsort -----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0,), (6,), (3, 4), (2, 3, 5), (4, 1)], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_])
def test_sort_and_argsort(shape, dtype):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 4, shape).astype(dtype)  # many ties: argsort must be stable
    for axis in [None] + list(range(-len(shape), len(shape))):
        _check(fnp.sort(fg.tensor(x), axis=axis), np.sort(x, axis=axis))
        _check(fnp.argsort(fg.tensor(x), axis=axis),
               np.argsort(x, axis=axis, kind="stable").astype(np.int32))


def test_sort_nans_last_and_descending():
    x = np.array([3.0, np.nan, -1.0, 2.0, np.nan])
    _check(fnp.sort(fg.tensor(x)), np.sort(x))
    _check(fnp.argsort(fg.tensor(x)), np.argsort(x, kind="stable").astype(np.int32))
    y = np.array([1.0, 3.0, 2.0, 3.0])
    _check(fnp.sort(fg.tensor(y), descending=True), np.sort(y)[::-1])
    # a stable descending argsort keeps equal elements in their original order
    _check(fnp.argsort(fg.tensor(y), descending=True), np.array([1, 3, 2, 0], np.int32))
    _check(fnp.argsort(fg.tensor(np.array([1, 3, 2, 3], np.uint8)), descending=True),
           np.array([1, 3, 2, 0], np.int32))


def test_sort_0d():
    _check(fnp.sort(fg.tensor(np.float64(3.0))), np.float64(3.0))
    _check(fnp.argsort(fg.tensor(np.float64(3.0))), np.int32(0))


# --- nonzero, searchsorted, unique --------------------------------------------------------


@pytest.mark.parametrize("x", [np.array([0, 3, 0, 4]), np.array([[1.0, 0.0], [0.0, 2.0]]),
                               np.zeros((2, 0)), np.array([True, False])], ids=str)
def test_nonzero_family(x):
    got = fnp.nonzero(fg.tensor(x))
    expected = np.nonzero(x)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        _check(g, e.astype(np.int32))
    _check(fnp.argwhere(fg.tensor(x)), np.argwhere(x).astype(np.int32))
    _check(fnp.flatnonzero(fg.tensor(x)), np.flatnonzero(x).astype(np.int32))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    a = np.array([1.0, 2.0, 2.0, 3.5, 7.0])
    v = np.array([[0.0, 2.0], [3.5, 9.0]])
    _check(fnp.searchsorted(fg.tensor(a), fg.tensor(v), side=side),
           np.searchsorted(a, v, side=side).astype(np.int32))
    _check(fnp.searchsorted(fg.tensor(a), 2.0, side=side),
           np.int32(np.searchsorted(a, 2.0, side=side)))


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("a", [[1.0, 2.0, 3.0], [1.0, 2.0, 2.0, np.nan, np.nan], [np.nan]])
def test_searchsorted_puts_nans_last_as_numpy(side, a):
    a, v = np.array(a, np.float32), np.array([np.nan, 2.0, 0.0, 5.0], np.float32)
    want = np.searchsorted(a, v, side=side)
    for run in (lambda f: f, fg.jit):
        got = run(lambda x, y: fnp.searchsorted(x, y, side=side))(fg.tensor(a), fg.tensor(v))
        np.testing.assert_array_equal(got, want)


def test_unique():
    x = np.array([3, 1, 2, 3, 1, 1], np.int32)
    _check(fnp.unique(fg.tensor(x)), np.unique(x))
    values, counts = fnp.unique(fg.tensor(x), return_counts=True)
    _check(values, np.array([1, 2, 3], np.int32))
    _check(counts, np.array([3, 1, 2], np.int32))



def test_unique_with_a_static_size_under_jit_and_vmap():
    # as jnp.unique(size=): values padded with fill_value (default the smallest), first
    # indices with the smallest value's, counts with 0; NaNs are one value
    x = np.array([[3, 1], [3, 2]], np.int32)
    want = ([1, 2, 3, 1, 1], [1, 3, 0, 1, 1], [[2, 0], [2, 1]], [1, 1, 2, 0, 0])
    f = lambda a: fnp.unique(a, size=5, return_index=True, return_inverse=True,
                             return_counts=True)
    for got in (f(fg.tensor(x)), fg.jit(f)(fg.tensor(x))):
        assert [g.tolist() for g in got] == [list(w) for w in want]
    nans = fg.tensor([2.0, np.nan, 1.0, np.nan])
    got = fg.jit(lambda a: fnp.unique(a, size=4, fill_value=-1.0))(nans)
    np.testing.assert_array_equal(np.asarray(got), [1.0, 2.0, np.nan, -1.0])
    rows = fg.vmap(lambda r: fnp.unique(r, size=3, fill_value=0))(fg.tensor([[1, 1, 2],
                                                                            [3, 2, 1]]))
    assert rows.tolist() == [[1, 2, 0], [1, 2, 3]]
    assert fnp.unique(fg.tensor([5, 6, 7]), size=2).tolist() == [5, 6]  # cut at size
    with pytest.raises(TypeError, match="size="):
        fg.jit(fnp.unique)(fg.tensor([1, 2]))
    with pytest.raises(ValueError, match="fill_value"):
        fnp.unique(fg.tensor(np.zeros(0, np.int32)), size=2)
    with pytest.raises(ValueError, match="axis=None"):
        fnp.unique(fg.tensor(x), size=2, axis=0)

# --- the gather primitive clamps, scatter drops -------------------------------------------


def test_gather_clamps_out_of_bounds_indices():
    x = fg.tensor(np.array([10.0, 20.0, 30.0]))
    out = ix.gather(x, fg.tensor(np.array([[5], [-3], [1]], np.int32)), (0,))
    _check(out, np.array([30.0, 10.0, 20.0]))


def test_scatter_drops_out_of_bounds_updates():
    x = fg.tensor(np.zeros(3))
    out = ix.scatter(x, fg.tensor(np.array([[5], [1], [-1]], np.int32)),
                     fg.tensor(np.array([1.0, 2.0, 3.0])), (0,), "add")
    _check(out, np.array([0.0, 2.0, 0.0]))


@pytest.mark.parametrize("mode", ["set", "add", "mul", "min", "max"])
def test_compiled_gather_and_scatter_agree_with_eager_out_of_range(mode):
    # IREE neither clamps gathers nor drops out-of-range scatters by itself (it read garbage,
    # corrupted memory or crashed): the lowering must, exactly as the eager impls do
    x = fg.tensor(np.arange(12.0).reshape(3, 4))
    idx = fg.tensor(np.array([[7], [1], [-2], [10**8], [2]], np.int32))
    ups = fg.tensor(np.arange(20.0).reshape(5, 4) + 100)
    eager_g, eager_s = ix.gather(x, idx, (0,)), ix.scatter(x, idx, ups, (0,), mode)
    jit_g = fg.jit(lambda a, i: ix.gather(a, i, (0,)))(x, idx)
    jit_s = fg.jit(lambda a, i, u: ix.scatter(a, i, u, (0,), mode))(x, idx, ups)
    np.testing.assert_array_equal(jit_g, eager_g)
    np.testing.assert_array_equal(jit_s, eager_s)


@pytest.mark.parametrize("mode", ["min", "max"])
def test_complex_scatter_min_max_keep_nans_under_jit(mode):
    # NaN wins as in np.minimum.at (a held NaN stays, a NaN update lands); jit kept the
    # old value where the update was NaN (min) and replaced a held NaN (max)
    x = np.array([1 + 1j, np.nan, 3, 2j], np.complex64)
    u = np.array([np.nan, 0.5, 1j * np.nan, 1], np.complex64)
    want = x.copy()
    getattr(np, {"min": "minimum", "max": "maximum"}[mode]).at(want, [0, 1, 2, 3], u)
    i = fg.tensor([0, 1, 2, 3])
    fun = lambda x, u: getattr(x.at[i], mode)(u)
    for got in (fun(fg.tensor(x), fg.tensor(u)), fg.jit(fun)(fg.tensor(x), fg.tensor(u))):
        np.testing.assert_array_equal(np.isnan(np.asarray(got)), np.isnan(want))
        np.testing.assert_array_equal(np.nan_to_num(np.asarray(got)), np.nan_to_num(want))


def test_a_loop_filling_complex_zeros_compiles():
    # IREE 3.13 rejected the complex zero constant updated in place ("'arith.constant' op
    # attribute 'value' failed to satisfy constraint"): complex constants are built from
    # real parts (found by a CUDA compile sweep; it failed on the CPU too)
    x = fg.tensor((np.arange(16.0).reshape(4, 4) * (1 + 2j)).astype(np.complex64))

    def fill(x):
        return fg.fori_loop(0, 4, lambda j, d: d.at[j].set(x[j, j]),
                            fnp.zeros((4,), np.complex64))

    np.testing.assert_array_equal(fg.jit(fill)(x).numpy(), np.diag(x.numpy()))


def test_complex_scatters_compile_and_match_eager():
    # IREE 3.13 crashes on complex scatters: set/add go through (real, imag) pairs, mul,
    # min and max one update at a time; repeated and out-of-range indices included
    rng = np.random.default_rng(3)
    idx = fg.tensor(np.array([[0], [2], [2], [7], [0], [-1]], np.int32))

    def sample(dtype, shape):
        return fg.tensor((rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
                         .astype(dtype))

    cases = [(mode, sample(dt, (3, 2)), sample(dt, (6, 2)))
             for dt in (np.complex64, np.complex128)
             for mode in ("set", "add", "mul", "min", "max")]

    def run(operands):
        return [ix.scatter(x, i, u, (0,), mode)
                for (mode, _, _), (x, i, u) in zip(cases, operands, strict=True)]

    operands = [(x, idx, u) for _, x, u in cases]
    for (mode, x, _), want, got in zip(cases, run(operands), fg.jit(run)(operands),
                                       strict=True):
        assert got.dtype == x.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6,
                                   err_msg=f"{mode} {x.dtype}")
    z = fnp.zeros(3, dtype=fnp.complex64)
    grad = fg.jit(fg.grad(lambda v, i: fnp.sum(fnp.abs(z.at[i].add(v)) ** 2)))
    np.testing.assert_allclose(grad(fnp.array([1 + 1j, 2j], dtype=fnp.complex64),
                                    fnp.array([0, 2])), [2 - 2j, -4j], rtol=1e-6)


@pytest.mark.parametrize("mode", ["set", "add"])
def test_scatter_gradient_reaches_only_the_updates_that_land(mode):
    # dropped (out-of-range) updates get no gradient, and of several `set`s to one position
    # only the one that stayed (the last, as NumPy); eager, traced indices under jit, vmap
    x, w = fnp.zeros(3), fnp.array([1.0, 2.0, 3.0])

    def loss(v, i):
        return fnp.sum(getattr(x.at[i], mode)(v, mode="drop") * w)

    v = fnp.ones(4)
    cases = {(0, 5, 2, -9): [1, 0, 3, 0], (0, 2, 2, 1): [1, 0 if mode == "set" else 3, 3, 2]}
    for idx, want in cases.items():
        i = fnp.array(idx)
        np.testing.assert_array_equal(fg.grad(loss)(v, i), want)
        np.testing.assert_array_equal(fg.jit(fg.grad(loss))(v, i), want)
    both = fnp.array(list(cases))
    np.testing.assert_array_equal(fg.vmap(fg.grad(loss), in_axes=(None, 0))(v, both),
                                  list(cases.values()))


def test_traced_out_of_range_indices_follow_jax():
    # reads clamp, take fills (NaN), .at[] updates are dropped - under jit and vmap alike
    x = fg.tensor(np.arange(12.0).reshape(3, 4))
    rows = fg.tensor(np.array([0, 5], np.int32))
    np.testing.assert_array_equal(fg.jit(lambda a, i: a[i])(x, fg.tensor(5)), [8, 9, 10, 11])
    np.testing.assert_array_equal(fg.jit(lambda a, i: fnp.take(a, i, axis=0))(x, rows),
                                  [[0, 1, 2, 3], [np.nan] * 4])
    added = fg.jit(lambda a, i: a.at[i].add(1.0))(x, rows)
    np.testing.assert_array_equal(added, np.asarray(x) + [[1], [0], [0]])
    for run in (fg.vmap, lambda f: fg.jit(fg.vmap(f))):
        per_row = run(lambda a, i: a.at[i].add(10.0))(x, fg.tensor(np.array([0, 7, 3])))
        want = np.arange(12.0).reshape(3, 4)
        want[0, 0] += 10
        want[2, 3] += 10
        np.testing.assert_array_equal(per_row, want)
    with pytest.raises(IndexError):  # a concrete index is checked, as NumPy
        x.at[5].add(1.0)


@pytest.mark.parametrize("name", ["scatter", "scatter_in_loop", "device_input"])
def test_jit_never_changes_its_input_tensors(name):
    # IREE updates a scatter's operand in place, even the caller's buffer (imported without
    # a copy, or a previous jit result): tensors are immutable, so that must not show
    start = np.arange(12.0).reshape(3, 4)
    x = fg.tensor(start)
    if name == "device_input":
        x = fg.jit(lambda a: a * 1.0)(x)
    programs = {
        "scatter": lambda a: a.at[fg.tensor(np.array([0, 1]))].add(1.0),
        "device_input": lambda a: a.at[fg.tensor(np.array([0, 1]))].min(-1.0),
        "scatter_in_loop": lambda a: fg.fori_loop(0, 3, lambda i, c: c.at[i].add(1.0), a),
    }
    out = np.asarray(fg.jit(programs[name])(x))
    np.testing.assert_array_equal(np.asarray(x), start)
    assert not np.array_equal(out, start)


def test_take_modes():
    x = fg.tensor(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(fnp.take(x, fg.tensor([100, -9]), axis=1, mode="clip"),
                                  np.take(np.asarray(x), [100, -9], axis=1, mode="clip"))
    np.testing.assert_array_equal(fnp.take(x, fg.tensor([5, -1]), axis=1, mode="wrap"),
                                  np.take(np.asarray(x), [5, -1], axis=1, mode="wrap"))
    traced = fg.jit(lambda a, i: fnp.take(a, i, mode="fill", fill_value=-1.0))
    np.testing.assert_array_equal(traced(x, fg.tensor([3, 12])), [3.0, -1.0])
    ints = fg.jit(lambda a, i: fnp.take(a, i))(fg.tensor([1, 2]), fg.tensor([0, 9]))
    assert ints.tolist() == [1, np.iinfo(np.int32).min]
    with pytest.raises(ValueError, match="mode"):
        fnp.take(x, fg.tensor([0]), mode="bogus")


@pytest.mark.parametrize("values,dtype", [
    ([-128, 5, 0, 5], np.int8), ([-2**31, 5, 0], np.int32), ([1.0, np.nan, 2.0, 1.0], np.float32),
    ([3, 1, 3, 2], np.uint8), ([True, False, True], np.bool_)])
def test_argsort_descending_is_stable_without_overflow_and_nans_first(values, dtype):
    a = np.array(values, dtype)
    # stable descending order as JAX: equal values keep their order, NaN first
    expected = (len(a) - 1 - np.argsort(a[::-1], kind="stable"))[::-1]
    for run in (lambda f: f, fg.jit):
        got = run(lambda t: fnp.argsort(t, descending=True))(fg.tensor(a))
        np.testing.assert_array_equal(got.numpy(), expected)


def test_at_add_on_bools_is_an_or_under_jit_too():
    # stablehlo.add of i1 is an XOR: a repeated index cancelled out under jit
    flags = fg.tensor(np.zeros(3, bool))
    for run in (lambda f: f, fg.jit):
        out = run(lambda t: t.at[np.array([0, 0, 2])].add(fg.tensor([True, True, False])))(flags)
        np.testing.assert_array_equal(out, [True, False, False])


def test_at_divide_and_power_as_jax():
    for run in (lambda f: f, fg.jit):
        # true division: integers give floats (the old 1/v in the int dtype gave 0)
        out = run(lambda t: t.at[0].divide(2))(fg.tensor([7, 8]))
        assert out.dtype == fg.float32
        np.testing.assert_array_equal(out.numpy(), [3.5, 8.0])
        # a repeated index multiplies the exponents: (2 ** 2) ** 2
        out = run(lambda t: t.at[fg.tensor([0, 0])].power(2.0))(fg.tensor([2.0, 8.0]))
        np.testing.assert_array_equal(out.numpy(), [16.0, 8.0])


def test_at_apply_as_jax():
    x = fg.tensor(np.array([1.0, 4.0, 9.0]))
    for run in (lambda f: f, fg.jit):
        out = run(lambda t: t.at[1:].apply(fnp.sqrt))(x)
        np.testing.assert_array_equal(out.numpy(), [1.0, 2.0, 3.0])
        out = run(lambda t: t.at[fg.tensor([2, 0])].apply(lambda v: -v))(x)
        np.testing.assert_array_equal(out.numpy(), [-1.0, 4.0, -9.0])
    grad = fg.grad(lambda t: t.at[1:].apply(fnp.sqrt).sum())(x)
    np.testing.assert_allclose(grad.numpy(), [1.0, 0.25, 1 / 6])
    np.testing.assert_array_equal(x.at[5].apply(fnp.sqrt, mode="drop").numpy(), x.numpy())


AT_MODE_CASES = [  # (operation, expected on arange(12).reshape(3, 4) with rows [0, 5, -1, -4])
    (lambda a, i: a.at[i].get(mode="fill", fill_value=-1.0),
     lambda x: np.stack([x[0], np.full(4, -1.0), x[2], np.full(4, -1.0)])),
    (lambda a, i: a.at[i].get(mode="clip"), lambda x: x[[0, 2, 2, 0]]),
    (lambda a, i: a.at[i].set(1.0, mode="drop"),
     lambda x: np.where(np.arange(3)[:, None] % 2 == 0, 1.0, x)),
    (lambda a, i: a.at[:, i].get(mode="fill", fill_value=-1.0),
     lambda x: np.stack([x[:, 0], np.full(3, -1.0), x[:, 3], x[:, 0]], 1)),
    (lambda a, i: a.at[7].get(mode="fill", fill_value=0.0), lambda x: np.zeros(4)),
]


@pytest.mark.parametrize("case", range(len(AT_MODE_CASES)))
def test_at_modes_as_jax_for_concrete_and_traced_indices(case):
    op, expected = AT_MODE_CASES[case]
    x = np.arange(12.0).reshape(3, 4)
    rows = fg.tensor([0, 5, -1, -4])
    for run in (lambda f: f, fg.jit):
        got = run(op)(fg.tensor(x), rows)
        np.testing.assert_array_equal(got.numpy(), expected(x))


def test_at_get_fill_defaults_and_bad_modes():
    got = fg.tensor([1, 2]).at[fg.tensor([5])].get(mode="fill")
    np.testing.assert_array_equal(got.numpy(), [np.iinfo(np.int32).min])
    assert np.isnan(fg.tensor([1.0]).at[fg.tensor([3])].get(mode="fill").numpy()).all()
    with pytest.raises(ValueError, match="mode must be one of"):
        fg.zeros(3).at[0].get(mode="bogus")
    with pytest.raises(ValueError, match="mode must be one of"):
        fg.zeros(3).at[0].set(1.0, mode="fill")
    x = fg.tensor(np.arange(12.0).reshape(3, 4))
    filled = fnp.take(x, fg.tensor([-1, 5, 1]), axis=1, mode="fill", fill_value=-1.0)
    np.testing.assert_array_equal(filled.numpy()[:, 1], [-1.0, -1.0, -1.0])


@pytest.mark.parametrize("method", ["set", "add", "mul", "divide", "max"])
def test_at_complex_values_into_a_real_tensor_are_an_error(method):
    # they were cast to float32, dropping the imaginary part without a word
    with pytest.raises(TypeError, match=rf"at\[\]\.{method}: complex values cannot update "
                                        "a float32 tensor"):
        getattr(fg.zeros(3).at[0], method)(1j)
    got = getattr(fg.zeros(3, dtype=fg.complex64).at[0], method)(2j)
    want = {"set": 2j, "add": 2j, "mul": 0, "divide": 0, "max": 2j}[method]
    assert got.numpy()[0] == want


def test_take_along_axis_out_of_range_as_jax():
    a, i = fg.tensor(np.arange(5.0)), fg.tensor([0, 7, -9, -1])
    filled = [0.0, np.nan, np.nan, 4.0]
    np.testing.assert_array_equal(fg.jit(lambda a, i: fnp.take_along_axis(a, i, 0))(a, i),
                                  filled)
    np.testing.assert_array_equal(fnp.take_along_axis(a, i, 0, mode="fill"), filled)
    np.testing.assert_array_equal(fnp.take_along_axis(a, i, 0, mode="clip"), [0, 4, 0, 4])
    with pytest.raises(IndexError, match="index 7"):
        fnp.take_along_axis(a, i, 0)


def test_nonzero_family_with_size_is_jittable_as_jax():
    x = fg.tensor([[0, 3, 0], [4, 0, 5]])
    rows, cols = fnp.nonzero(x, size=5)
    np.testing.assert_array_equal(rows.numpy(), [0, 1, 1, 0, 0])
    np.testing.assert_array_equal(cols.numpy(), [1, 0, 2, 0, 0])
    got = fg.jit(lambda a: fnp.argwhere(a, size=4, fill_value=(9, 8)))(x)
    np.testing.assert_array_equal(got.numpy(), [[0, 1], [1, 0], [1, 2], [9, 8]])
    np.testing.assert_array_equal(fg.jit(lambda a: fnp.flatnonzero(a, size=4))(x).numpy(),
                                  [1, 3, 5, 0])
    np.testing.assert_array_equal(fg.vmap(lambda r: fnp.nonzero(r, size=2)[0])(x).numpy(),
                                  [[1, 0], [0, 2]])
    np.testing.assert_array_equal(fg.jit(lambda a: fnp.where(a > 0, size=2, fill_value=-1)[1])(
        x).numpy(), [1, 0])
    with pytest.raises(TypeError, match="size="):
        fg.jit(fnp.nonzero)(x)


def test_an_ellipsis_between_advanced_indices_puts_their_axes_first_as_numpy():
    # found by hypothesis: even an Ellipsis standing for no axis separates them
    x = np.zeros((0, 1, 1, 0), np.float32)
    index = (slice(None), 0, Ellipsis, np.array([0], np.int32), slice(None))
    assert fg.tensor(x)[index].shape == x[index].shape == (1, 0, 0)
    y = np.arange(24.0).reshape(2, 3, 4)
    for index in ((0, Ellipsis, np.array([1, 2])), (slice(None), np.array([0, 1]), Ellipsis, 2)):
        np.testing.assert_array_equal(fg.tensor(y)[index].numpy(), y[index])


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64, np.int8])
def test_traced_indices_of_every_integer_dtype_under_jit(dtype):
    # the range checks built -size in the index dtype: OverflowError for unsigned indices
    x, i = fg.arange(300.0), fg.tensor(np.array([5, 120], dtype))
    got = fg.jit(lambda x, i: (x[i], fnp.take(x, i, mode="clip"), x.at[i].set(-1.0),
                               fnp.take_along_axis(x, i, 0)))(x, i)
    assert got[0].tolist() == got[1].tolist() == got[3].tolist() == [5.0, 120.0]
    assert got[2].numpy()[[5, 120]].tolist() == [-1.0, -1.0]


def test_uint64_indices_beyond_int64_are_out_of_range():
    # 2**64 - 1 was read as -1 (the last element), eagerly and compiled
    x = fg.tensor(np.arange(10) * 10)
    huge = fg.tensor(np.array([2**64 - 1, 2**63], np.uint64))
    with pytest.raises(IndexError, match="18446744073709551615"):
        x[huge]
    with pytest.raises(IndexError):
        x.at[huge].set(-5)
    for fn in (lambda x, i: fnp.take(x, i, mode="clip"),
               lambda x, i: fnp.take(x, i, mode="wrap"),
               lambda x, i: fnp.take(x, i, mode="fill", fill_value=-7)):
        assert fn(x, huge).tolist() == fg.jit(fn)(x, huge).tolist()
    assert fnp.take(x, huge, mode="clip").tolist() == [90, 90]
    assert fnp.take(x, huge, mode="wrap").tolist() == [50, 80]  # the true value modulo 10
    assert fnp.take(x, huge, mode="fill", fill_value=-7).tolist() == [-7, -7]
    # compiled, out-of-range indices clamp (as JAX) instead of wrapping in the int32 cast
    assert fg.jit(lambda x, i: x[i])(x, huge).tolist() == [90, 90]
    big = fg.tensor(np.array([2**32 + 1, -2**40], np.int64))
    assert fg.jit(lambda x, i: x[i])(x, big).tolist() == [90, 0]
    assert fg.jit(lambda x, i: x.at[i].add(1))(x, big).tolist() == x.tolist()


def test_updates_selecting_nothing_compile():
    # an empty scatter crashed IREE's compiler (AnnotateDispatches): x.at[n:] with n == len(x)
    x = fg.arange(5).astype(fg.float32)

    def updates(x, i, v):
        return (x.at[3:3].set(2.5), x.at[10:20].mul(2.5), x.at[i].add(2.5), x.at[5:].set(v))

    for got in fg.jit(updates)(x, fg.tensor(np.zeros(0, np.int32)), fg.zeros(0)):
        assert got.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_at_divide_power_subtract_errors_name_their_method():
    # they named at[].mul / at[].add; divide built uint8 factors and overflowed on 300
    u = fg.tensor(np.uint8([10, 20, 30]))
    np.testing.assert_allclose(u.at[1].divide(300), [10, 20 / 300, 30], rtol=1e-6)
    with pytest.raises(ValueError, match=r"at\[\]\.subtract: values has shape \(3,\)"):
        fg.zeros(3).at[:2].subtract(fg.ones(3))
    with pytest.raises(ValueError, match=r"at\[\]\.power: values has shape \(3,\)"):
        fg.zeros(3).at[:2].power(fg.ones(3))
