"""dynamic_slice and dynamic_update_slice: windows of static size at traced starts.

Checked against NumPy slicing with XLA's clamping, eager and compiled, under grad and vmap
(batched starts take the gather path), and for IREE's in-place updates, which must never
write into the caller's input buffers."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.prims.indexing import dynamic_slice, dynamic_update_slice
from funcgrad.test_util import check_grads

X = np.arange(30.0).reshape(5, 6)


def _clamp(start, dim, size):
    return min(max(start, 0), dim - size)


def _slice_np(x, starts, sizes):
    at = [_clamp(s, d, n) for s, d, n in zip(starts, x.shape, sizes, strict=True)]
    return x[tuple(slice(a, a + n) for a, n in zip(at, sizes, strict=True))]


def _update_np(x, update, starts):
    out = x.copy()
    at = [_clamp(s, d, n) for s, d, n in zip(starts, x.shape, update.shape, strict=True)]
    out[tuple(slice(a, a + n) for a, n in zip(at, update.shape, strict=True))] = update
    return out


STARTS = [(0, 0), (2, 3), (4, 5), (-3, 1), (9, -1), (1, 100)]


def test_eager_and_jit_clamp_as_xla_does():
    update = -np.ones((2, 3))
    sl = fg.jit(lambda x, i, j: dynamic_slice(x, (i, j), (2, 3)))
    up = fg.jit(lambda x, u, i, j: dynamic_update_slice(x, u, (i, j)))
    for i, j in STARTS:
        want = _slice_np(X, (i, j), (2, 3))
        np.testing.assert_array_equal(dynamic_slice(fnp.asarray(X), (i, j), (2, 3)), want)
        np.testing.assert_array_equal(sl(fnp.asarray(X), i, j), want)
        want = _update_np(X, update, (i, j))
        np.testing.assert_array_equal(dynamic_update_slice(fnp.asarray(X), fnp.asarray(update),
                                                           (i, j)), want)
        np.testing.assert_array_equal(up(fnp.asarray(X), fnp.asarray(update), i, j), want)


@pytest.mark.parametrize("dtype", ["int8", "bool", "float16", "complex64", "complex128"])
def test_jit_other_dtypes(dtype):
    x = (X % 3).astype(dtype)
    update = np.ones((1, 6), dtype)

    def f(x, u, i):
        return dynamic_slice(x, (i, 0), (2, 6)), dynamic_update_slice(x, u, (i, 0))

    got = fg.jit(f)(fnp.asarray(x), fnp.asarray(update), 3)
    np.testing.assert_array_equal(got[0], x[3:5])
    np.testing.assert_array_equal(got[1], _update_np(x, update, (3, 0)))


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32"])
def test_jit_updates_of_constants_and_the_gradient_of_a_traced_row(dtype):
    # complex64: IREE 3.13 failed to compile an update of a splat constant ("'arith.constant'
    # op attribute 'value' failed to satisfy constraint"), which the gradient of x[k] is
    x = (X + 1j * X[::-1]).astype(dtype) if "complex" in dtype else X.astype(dtype)

    def fill(u, k):
        return fnp.zeros(x.shape, dtype).at[k].set(u), fnp.full(x.shape, 2, dtype).at[k].set(u)

    for got, want in zip(fg.jit(fill)(x[0], 3), fill(x[0], 3), strict=True):
        np.testing.assert_array_equal(got, want)
    loss = lambda x, k: fnp.sum(fnp.abs(x[k]) ** 2)  # noqa: E731
    np.testing.assert_allclose(fg.jit(fg.grad(loss))(x, 3), fg.grad(loss)(x, 3), rtol=1e-6)


def test_grads_match_finite_differences_and_the_transpose():
    x, u = fnp.asarray(X / 10), fnp.asarray(np.linspace(-1, 1, 6).reshape(2, 3))

    def f(x, u):
        window = dynamic_slice(x, (1, 2), (3, 2))
        updated = dynamic_update_slice(x, u * u, (3, 1))
        return fnp.sum(window ** 2) + fnp.sum(fnp.sin(updated))

    check_grads(f, (x, u), order=2)
    gx, gu = fg.jit(fg.grad(f, argnums=(0, 1)))(x, u)
    ex, eu = fg.grad(f, argnums=(0, 1))(x, u)
    np.testing.assert_allclose(gx, ex, rtol=1e-12)
    np.testing.assert_allclose(gu, eu, rtol=1e-12)
    # the slice's transpose writes the cotangent at the (clamped) window, zeros elsewhere
    g = fg.grad(lambda x: fnp.sum(dynamic_slice(x, (7, 0), (2, 2))))(x)
    want = np.zeros_like(X)
    want[3:5, 0:2] = 1
    np.testing.assert_array_equal(g, want)
    # the update's: the overwritten window gets no cotangent from x
    g = fg.grad(lambda x: fnp.sum(dynamic_update_slice(x, fnp.zeros((2, 3), x.dtype), (0, 0))))(x)
    want = np.ones_like(X)
    want[:2, :3] = 0
    np.testing.assert_array_equal(g, want)


def test_vmap_with_batched_starts_operands_and_updates():
    xs = np.stack([X, -X, X * 2])
    starts = np.array([0, 4, 9], np.int32)
    ups = np.arange(18.0).reshape(3, 2, 3)
    sl = lambda x, i: dynamic_slice(x, (i, 1), (2, 3))  # noqa: E731
    up = lambda x, u, i: dynamic_update_slice(x, u, (1, i))  # noqa: E731
    for in_axes, args in [((0, 0), (xs, starts)), ((None, 0), (X, starts)),
                          ((0, None), (xs, 2))]:
        got = fg.vmap(sl, in_axes=in_axes)(*args)
        got_jit = fg.jit(fg.vmap(sl, in_axes=in_axes))(*args)
        for k in range(3):
            x = xs[k] if in_axes[0] == 0 else X
            i = starts[k] if in_axes[1] == 0 else 2
            np.testing.assert_array_equal(got[k], _slice_np(x, (i, 1), (2, 3)))
            np.testing.assert_array_equal(got_jit[k], _slice_np(x, (i, 1), (2, 3)))
    for in_axes in [(0, 0, 0), (None, 0, 0), (0, None, 0), (None, None, 0), (0, 0, None)]:
        args = [xs if in_axes[0] == 0 else X, ups if in_axes[1] == 0 else ups[0],
                starts if in_axes[2] == 0 else 4]
        got = fg.vmap(up, in_axes=in_axes)(*args)
        got_jit = fg.jit(fg.vmap(up, in_axes=in_axes))(*args)
        for k in range(3):
            x, u, i = (a[k] if ax == 0 else a for a, ax in zip(args, in_axes, strict=True))
            want = _update_np(x, u, (1, i))
            np.testing.assert_array_equal(got[k], want)
            np.testing.assert_array_equal(got_jit[k], want)


def test_vmap_of_grad_with_batched_starts():
    x = fnp.asarray(X)
    g = fg.vmap(fg.grad(lambda x, i: fnp.sum(dynamic_slice(x, (i, i), (2, 2)) ** 2)),
                in_axes=(None, 0))(x, fnp.asarray([0, 3, 8]))
    for k, i in enumerate([0, 3, 8]):
        want = np.zeros_like(X)
        a, b = _clamp(i, 5, 2), _clamp(i, 6, 2)
        want[a:a + 2, b:b + 2] = 2 * X[a:a + 2, b:b + 2]
        np.testing.assert_array_equal(g[k], want)


def _fresh():
    # funcgrad's own aligned allocation: a jit call imports it without a copy
    return fnp.asarray(X.copy())


@pytest.mark.parametrize("case", ["direct", "through_reshape", "loop_carry", "twice"])
def test_jit_never_writes_into_its_inputs(case):
    """IREE 3.13 updates in place in the caller's buffer (IREE issue 16168): a jit call
    changed its input, or failed with "operation requires DISCARD_WRITE"."""
    row = fnp.ones((1, 6), X.dtype)
    functions = {
        "direct": lambda x, u: dynamic_update_slice(x, u, (2, 0)),
        "through_reshape": lambda x, u: dynamic_update_slice(x.reshape(3, 10), u[:, :5],
                                                             (1, 2)).reshape(5, 6),
        "loop_carry": lambda x, u: fg.fori_loop(
            0, 3, lambda k, c: dynamic_update_slice(c, u * k, (k, 0)), x),
        "twice": lambda x, u: (dynamic_update_slice(x, u, (0, 0)),
                               dynamic_update_slice(x, -u, (4, 0))),
    }
    f = fg.jit(functions[case])
    x = _fresh()
    for _ in range(2):
        got = f(x, row)
        want = functions[case](_fresh(), row)
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want], strict=True):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(x, X)


def test_bad_operands_are_named():
    x = fnp.asarray(X)
    with pytest.raises(ValueError, match="window of shape"):
        dynamic_slice(x, (0, 0), (6, 1))
    with pytest.raises(ValueError, match="needs 2 start indices"):
        dynamic_slice(x, (0,), (1, 1))
    with pytest.raises(TypeError, match="integer scalars"):
        fg.jit(lambda x, i: dynamic_slice(x, (i, 0), (1, 1)))(x, 1.5)
    with pytest.raises(TypeError, match="update dtype"):
        fg.jit(lambda x: dynamic_update_slice(x, fnp.ones((1, 1), fnp.float32), (0, 0)))(x)


# --- NumPy-style indexing with traced scalars goes through them ----------------------------

Y = np.arange(24.0).reshape(2, 3, 4)


def _getitems(y, i, j):
    return (y[i], y[:, j], y[i, 1:, j], y[..., j, None], y[i, None, -1], y[-1, j])


@pytest.mark.parametrize("i,j", [(0, 0), (1, 2), (-1, -3), (5, -9)])
def test_indexing_with_traced_scalars_is_a_dynamic_slice(i, j):
    f = fg.jit(lambda y, i, j: _getitems(y, i, j))
    got = f(fnp.asarray(Y), i, j)
    # negative indices wrap, out-of-range ones are clamped (as JAX does), axis by axis

    def c(index, size):
        return min(max(index + size if index < 0 else index, 0), size - 1)

    want = (Y[c(i, 2)], Y[:, c(j, 3)], Y[c(i, 2), 1:, c(j, 4)], Y[..., c(j, 4), None],
            Y[c(i, 2), None, -1], Y[-1, c(j, 3)])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    text = f.lower(fnp.asarray(Y), i, j).as_text()
    assert "stablehlo.dynamic_slice" in text and "gather" not in text


def _updates(y, i, j):
    return (y.at[i].set(-1.0), y.at[:, j].add(10.0), y.at[i, 1:, j].set(fnp.asarray([7., 8.])),
            y.at[-1, j, 2].add(5.0), y.at[i, j].set(fnp.arange(4.0)),
            y.at[i, 1].mul(fnp.asarray([2., 3., 4., 5.])), y.at[:, j].min(3.0),
            y.at[i, :, j].max(9.0))


def _updates_np(i, j):
    def apply(index, combine):
        y = Y.copy()
        try:
            y[index] = combine(y[index])
        except IndexError:  # out of range: the update is dropped, as JAX's
            pass
        return y

    return (apply(i, lambda _: -1.0), apply((slice(None), j), lambda v: v + 10),
            apply((i, slice(1, None), j), lambda _: [7., 8.]),
            apply((-1, j, 2), lambda v: v + 5), apply((i, j), lambda _: np.arange(4.0)),
            apply((i, 1), lambda v: v * [2., 3., 4., 5.]),
            apply((slice(None), j), lambda v: np.minimum(v, 3.0)),
            apply((i, slice(None), j), lambda v: np.maximum(v, 9.0)))


@pytest.mark.parametrize("i,j", [(0, 0), (1, 2), (-1, -2), (5, -9), (-3, 3)])
def test_updates_at_traced_scalars_are_in_place_and_drop_out_of_range(i, j):
    f = fg.jit(lambda y, i, j: _updates(y, i, j))
    for g, w in zip(f(fnp.asarray(Y), i, j), _updates_np(i, j), strict=True):
        np.testing.assert_array_equal(g, w)
    text = f.lower(fnp.asarray(Y), i, j).as_text()
    assert "stablehlo.dynamic_update_slice" in text and "scatter" not in text


def test_traced_scalar_indexing_under_grad_and_vmap():
    y = fnp.asarray(Y)
    g = fg.grad(lambda y, i: fnp.sum(y.at[i].set(0.0) ** 2) + fnp.sum(y[i, 1]))(y, fnp.int32(1))
    want = 2 * Y
    want[1] = 0
    want[1, 1] += 1
    np.testing.assert_array_equal(g, want)
    got = fg.vmap(lambda i: (y[i, i], y.at[i, i].add(1.0)))(fnp.arange(2))
    for k in range(2):
        np.testing.assert_array_equal(got[0][k], Y[k, k])
        want = Y.copy()
        want[k, k] += 1
        np.testing.assert_array_equal(got[1][k], want)


def test_products_and_extrema_at_a_traced_scalar_differentiate_as_scatters():
    """The window path (mul, min, max) gives the scatter's derivatives, ties shared evenly;
    and jit(jacfwd(grad)) of a mul at a traced column compiles in seconds (as a scatter, its
    jvp's pairwise collision products made a dispatch IREE 3.13 never finished compiling
    under aggressive fusion: 2-D straight-line fuzz seed 15)."""
    x = fnp.asarray(np.random.RandomState(0).uniform(-1, 1, (4, 5)))

    def f(x):
        k = fnp.argmax(x[0])
        return fnp.sum(x.at[:, k].mul(fnp.tanh(fnp.sum(x, axis=1) * 0.1)) ** 2)

    def h(y):
        return fg.grad(f)(x.at[0].set(y))[0]

    check_grads(f, (x,), order=2)
    np.testing.assert_allclose(fg.jit(fg.jacfwd(h))(x[0]), fg.jacfwd(h)(x[0]), rtol=1e-10)
    assert "scatter" not in str(fg.make_ir(fg.jacfwd(fg.grad(f)))(x))
    # ties: min(2, 2) passes half the cotangent to each side, as the scatter's rule does
    y, i = fnp.asarray([1.0, 2.0, 3.0]), fnp.int32(1)
    for mode in ("min", "max"):
        g = fg.grad(lambda y, v, m=mode: fnp.sum(getattr(y.at[i], m)(v)), argnums=(0, 1))(y, 2.0)
        np.testing.assert_array_equal(g[0], [1.0, 0.5, 1.0])
        assert float(g[1]) == 0.5


def test_updates_at_traced_scalars_keep_the_dtype_rules():
    f = fg.jit(lambda b, n, i: (b.at[i].add(True), n.at[i].add(2.5), n.at[..., i].set(7)))
    b, n = fnp.zeros(3, bool), fnp.zeros((3, 3), fnp.int32)
    added, scaled, column = f(b, n, 1)
    np.testing.assert_array_equal(added, [False, True, False])  # bool add: a logical or
    want = np.zeros((3, 3), np.int32)
    want[1] = 2  # the values take the tensor's dtype, as JAX's
    np.testing.assert_array_equal(scaled, want)
    assert scaled.dtype == np.int32
    want = np.zeros((3, 3), np.int32)
    want[:, 1] = 7
    np.testing.assert_array_equal(column, want)


# IREE 3.13 ordered the in-place zeroing of a cotangent (the transpose of x.at[i].add(v)
# for x, once a dynamic_update_slice) before its other reads: the slice for v's cotangent
# (random-program sweep seed 9834) or a matmul (straight-line sweep seed 58), so jit(grad)
# read zeros.  The transpose now selects zeros in the window instead
_W = np.arange(25.0).reshape(5, 5) / 50


def _added_at_traced_index(x, i):
    c = (x * 0.8) ** 2 * x
    c = c.at[i].add(0.2 * fnp.sum(x))
    return fnp.sum((c * 0.8) ** 2 + fnp.asarray(_W) @ x) ** 2


@pytest.mark.parametrize("i", [0, 2, 4])
def test_jit_grad_reads_a_cotangent_before_zeroing_it_in_place(i):
    x = np.array([0.3, -0.7, 1.1, 0.45, -0.2])
    want = fg.grad(_added_at_traced_index)(fnp.asarray(x), i)
    got = fg.jit(fg.grad(_added_at_traced_index))(fnp.asarray(x), fnp.int32(i))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    h = 1e-6
    fd = [(_added_at_traced_index(fnp.asarray(x + e), i)
           - _added_at_traced_index(fnp.asarray(x - e), i)) / (2 * h) for e in np.eye(5) * h]
    np.testing.assert_allclose(want, np.array([float(v) for v in fd]), rtol=1e-6)


def test_jit_grad_of_a_loop_adding_at_a_traced_index():
    w = fnp.asarray(_W)

    def loss(x):
        def body(i, c):
            return fnp.sin(c.at[i % 5].add(0.2 * fnp.sum(x)) * 0.8) + w @ x

        return fnp.sum(0.44 * fg.fori_loop(1, 5, body, x * 2.0)) ** 2

    x = fnp.asarray(np.array([0.3, -0.7, 1.1, 0.45, -0.2]))
    np.testing.assert_allclose(fg.jit(fg.grad(loss))(x), fg.grad(loss)(x), rtol=1e-12)


def test_jit_grad_of_an_add_at_a_traced_index_beside_a_matmul():
    w = fnp.asarray(_W - 0.2)

    def f(x, i):
        v = x + fnp.tanh(x[1])
        y = x.at[(i + 3) % 5].add(v[i] * x[2]) + w @ v
        return fnp.sum((y * 1.1 + y) ** 2)

    x = fnp.asarray(np.array([0.3, -0.7, 1.1, 0.45, -0.2]))
    for i in range(5):
        np.testing.assert_allclose(fg.jit(fg.grad(f))(x, fnp.int32(i)), fg.grad(f)(x, i),
                                   rtol=1e-12)


def test_the_cotangent_of_an_update_is_selected_not_written_in_place():
    def f(x, i):
        return fnp.sum(fnp.sin(x.at[i].add(fnp.sum(x))))

    program = fg.make_ir(fg.grad(f))(fnp.ones(5), fnp.int32(1))
    made_by = {v: eqn.prim.name for eqn in program.equations for v in eqn.outputs}
    targets = [made_by.get(eqn.inputs[0], "input") for eqn in program.equations
               if eqn.prim.name == "dynamic_update_slice"]
    # the forward update of x, and the transpose of the read x[i] (into zeros)
    assert sorted(targets) == ["broadcast_in_dim", "input"]


def test_a_slice_of_a_value_updated_in_place_is_read_behind_a_barrier():
    # IREE 3.13 cloned such a slice into its consumer's dispatch and ran it after the
    # update (the MLIR of seed 9834's gradient, before the transpose above changed)
    def f(x, i):
        y = x * 2.0
        return y.at[i].set(0.0) + y[(i + 1) % 5]

    lines = fg.jit(f).lower(fnp.ones(5), fnp.int32(1)).as_text().splitlines()
    reads = [n for n, line in enumerate(lines) if "stablehlo.dynamic_slice" in line]
    assert len(reads) == 2 and all("optimization_barrier" in lines[n + 1] for n in reads)
    np.testing.assert_array_equal(fg.jit(f)(fnp.arange(5.0), 4), [0, 2, 4, 6, 0])


def test_jit_hessian_of_an_update_whose_target_is_read_again():
    # IREE 3.13 updated v (and its tangents) in place and then read the updated buffer for
    # the later v + y * y (straight-line sweep seed 165): such an update works on a copy
    def f(x, i):
        v = x + x[fnp.argmax(x)]
        y = v.at[i].add(v[0])
        return fnp.sum((v + y * y) ** 2)

    x = fnp.asarray(np.array([0.3, -0.7, 1.1, 0.45, -0.2]))
    for i in range(5):
        want = fg.jacfwd(fg.grad(f))(x, i)
        np.testing.assert_allclose(fg.jit(fg.jacfwd(fg.grad(f)))(x, fnp.int32(i)), want,
                                   rtol=1e-12)
        np.testing.assert_allclose(want, fg.jacrev(fg.grad(f))(x, i), rtol=1e-12)


def test_an_update_copies_its_target_only_when_the_target_is_read_elsewhere():
    def read_after(x, i):
        v = x * 2.0
        return v.at[i].add(1.0) + v

    def read_before(x, i):
        v = x * 2.0
        return v.at[i].add(v[2] * fnp.sum(v))

    for f, copies in ((read_after, 1), (read_before, 0)):
        text = fg.jit(f).lower(fnp.ones(5), fnp.int32(1)).as_text()
        assert text.count("stablehlo.pad") == copies
        np.testing.assert_allclose(fg.jit(f)(fnp.arange(5.0), 3), f(fnp.arange(5.0), 3))
