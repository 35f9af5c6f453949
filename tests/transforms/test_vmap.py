"""vmap: every funcgrad.numpy function batched over axes 0, 1, -1 and None mixes, compared
with a Python loop over the examples stacked by ``fnp.stack``; plus in_axes/out_axes
prefixes, axis_size and nesting.
"""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.prims import reductions as red

B = 3  # batch size used throughout


def t(x):
    return fg.tensor(np.asarray(x))


def f64(*shape, low=-1.0, high=1.0):
    """A spec: per-example random float64 values of ``shape``."""
    return lambda rng: rng.uniform(low, high, shape)


def pos(*shape):
    return f64(*shape, low=0.5, high=2.0)


def ints(high, *shape):
    return lambda rng: rng.integers(0, high, shape).astype(np.int32)


def nonzero_ints(*shape):
    return lambda rng: rng.integers(1, 5, shape).astype(np.int32)


def bools(*shape):
    return lambda rng: rng.random(shape) > 0.5


def distinct(*shape):
    n = int(np.prod(shape))
    return lambda rng: rng.permutation(np.linspace(-2, 2, n)).reshape(shape)


def _stack_out(outs, axis):
    return fg.tree.map(lambda *xs: fnp.stack(xs, axis=axis), *outs)


def check_vmap(fn, specs, in_axes, out_axes=0, seed=0):
    """vmap(fn) on examples stacked along ``in_axes`` equals stacking fn per example."""
    rng = np.random.default_rng(seed)
    examples = [[spec(rng) for spec in specs] for _ in range(B)]
    batched = []
    for i, axis in enumerate(in_axes):
        if axis is None:
            for ex in examples[1:]:
                ex[i] = examples[0][i]  # unmapped: every example sees the same value
            batched.append(t(examples[0][i]))
        else:
            batched.append(t(np.stack([ex[i] for ex in examples], axis=axis)))
    got = fg.vmap(fn, in_axes=tuple(in_axes), out_axes=out_axes)(*batched)
    want = _stack_out([fn(*[t(a) for a in ex]) for ex in examples], out_axes)
    got_leaves, got_tree = fg.tree.flatten(got)
    want_leaves, want_tree = fg.tree.flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)


def _unary(name, fn, spec=None):
    return (name, fn, [spec or f64(2, 3)])


UNARY_NAMES = ["exp", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh",
               "arctan", "arcsinh", "negative", "sign", "floor", "ceil", "round", "rint",
               "trunc", "abs", "square", "exp2", "deg2rad", "rad2deg", "sinc", "isfinite",
               "isnan", "isinf", "signbit", "positive", "real", "conj", "fix"]

FUNCTIONS = [_unary(n, getattr(fnp, n)) for n in UNARY_NAMES] + [
    _unary("log", fnp.log, pos(2, 3)),
    _unary("log2", fnp.log2, pos(2, 3)),
    _unary("log10", fnp.log10, pos(2, 3)),
    _unary("sqrt", fnp.sqrt, pos(2, 3)),
    _unary("reciprocal", fnp.reciprocal, pos(2, 3)),
    _unary("arcsin", fnp.arcsin, f64(2, 3, low=-0.9, high=0.9)),
    _unary("arccos", fnp.arccos, f64(2, 3, low=-0.9, high=0.9)),
    _unary("arctanh", fnp.arctanh, f64(2, 3, low=-0.9, high=0.9)),
    _unary("arccosh", fnp.arccosh, f64(2, 3, low=1.5, high=3)),
    _unary("logical_not", fnp.logical_not, bools(2, 3)),
    _unary("invert", fnp.invert, ints(9, 2, 3)),
    _unary("nan_to_num", fnp.nan_to_num, f64(2, 3)),
    _unary("integer_pow", lambda x: x ** 3, f64(2, 3)),
    _unary("astype", lambda x: x.astype(fnp.int32), f64(2, 3, low=-5, high=5)),
    _unary("clip", lambda x: fnp.clip(x, -0.5, 0.5)),
    _unary("heaviside", lambda x: fnp.heaviside(x, 0.5)),
    # binary elementwise (with broadcasting between differently shaped operands)
    ("add", fnp.add, [f64(2, 3), f64(2, 3)]),
    ("subtract_bcast", fnp.subtract, [f64(2, 3), f64(3)]),
    ("multiply_bcast", fnp.multiply, [f64(2, 1), f64(1, 3)]),
    ("divide", fnp.divide, [f64(2, 3), pos(2, 3)]),
    ("power", fnp.power, [pos(2, 3), f64(2, 3)]),
    ("maximum", fnp.maximum, [f64(3), f64(3)]),
    ("minimum", fnp.minimum, [f64(2, 3), f64(3)]),
    ("arctan2", fnp.arctan2, [f64(3), f64(3)]),
    ("hypot", fnp.hypot, [f64(3), f64(3)]),
    ("logaddexp", fnp.logaddexp, [f64(3), f64(3)]),
    ("copysign", fnp.copysign, [f64(3), f64(3)]),
    ("floor_divide", fnp.floor_divide, [ints(20, 4), nonzero_ints(4)]),
    ("remainder", fnp.remainder, [f64(4, low=-5, high=5), pos(4)]),
    ("fmod", fnp.fmod, [f64(4, low=-5, high=5), pos(4)]),
    ("divmod", fnp.divmod, [ints(20, 4), nonzero_ints(4)]),
    ("equal", fnp.equal, [ints(3, 4), ints(3, 4)]),
    ("less", fnp.less, [f64(4), f64(4)]),
    ("greater_equal", fnp.greater_equal, [f64(4), f64(1)]),
    ("bitwise_and", fnp.bitwise_and, [ints(16, 4), ints(16, 4)]),
    ("bitwise_xor", fnp.bitwise_xor, [ints(16, 4), ints(16, 4)]),
    ("left_shift", fnp.left_shift, [ints(16, 4), ints(4, 4)]),
    ("right_shift", fnp.right_shift, [ints(16, 4), ints(4, 4)]),
    ("logical_or", fnp.logical_or, [bools(4), bools(4)]),
    ("where", fnp.where, [bools(2, 3), f64(2, 3), f64(3)]),
    ("where_scalar_cond", lambda c, x, y: fnp.where(c.sum() > 0, x, y),
     [f64(2), f64(2, 3), f64(3)]),
    ("where_scalars", lambda c: fnp.where(c, 1.0, -1.0), [bools(4)]),
    ("clip_bounds", fnp.clip, [f64(4), f64(4, low=-1, high=0), f64(4, low=0, high=1)]),
    # reductions
    ("sum", fnp.sum, [f64(2, 3)]),
    ("sum_axis", lambda x: fnp.sum(x, axis=1), [f64(2, 3)]),
    ("sum_keepdims", lambda x: fnp.sum(x, axis=0, keepdims=True), [f64(2, 3)]),
    ("sum_int", fnp.sum, [ints(5, 2, 3)]),
    ("mean", lambda x: fnp.mean(x, axis=-1), [f64(2, 3)]),
    ("prod", lambda x: fnp.prod(x, axis=(0, 2)), [f64(2, 3, 2)]),
    ("max", lambda x: fnp.max(x, axis=0), [f64(2, 3)]),
    ("min", fnp.min, [f64(2, 3)]),
    ("amax_keepdims", lambda x: fnp.amax(x, axis=1, keepdims=True), [f64(2, 3)]),
    ("argmax", lambda x: fnp.argmax(x, axis=1), [f64(2, 3)]),
    ("argmin", fnp.argmin, [f64(2, 3)]),
    ("argmax_keepdims", lambda x: fnp.argmax(x, axis=0, keepdims=True), [f64(2, 3)]),
    ("all", lambda x: fnp.all(x, axis=0), [bools(2, 3)]),
    ("any", fnp.any, [bools(2, 3)]),
    ("count_nonzero", fnp.count_nonzero, [ints(2, 2, 3)]),
    ("var", lambda x: fnp.var(x, axis=0, ddof=1), [f64(3, 2)]),
    ("std", fnp.std, [f64(3, 2)]),
    ("average", lambda x, w: fnp.average(x, axis=0, weights=w), [f64(3, 2), pos(3)]),
    ("ptp", lambda x: fnp.ptp(x, axis=1), [f64(2, 3)]),
    ("logsumexp", lambda x: fnp.logsumexp(x, axis=1), [f64(2, 3)]),
    ("logsumexp_b", lambda x, b: fnp.logsumexp(x, b=b), [f64(3), pos(3)]),
    ("cumsum", lambda x: fnp.cumsum(x, axis=1), [f64(2, 3)]),
    ("cumsum_flat", fnp.cumsum, [f64(2, 3)]),
    ("cumprod", lambda x: fnp.cumprod(x, axis=0), [f64(2, 3)]),
    ("cummax", lambda x: red.cummax(x, 1), [f64(2, 3)]),
    ("cummin_reverse", lambda x: red.cummin(x, 0, reverse=True), [f64(3, 2)]),
    # shape
    ("reshape", lambda x: fnp.reshape(x, (3, -1)), [f64(2, 3)]),
    ("ravel", fnp.ravel, [f64(2, 3)]),
    ("transpose", fnp.transpose, [f64(2, 3, 2)]),
    ("transpose_axes", lambda x: fnp.transpose(x, (1, 2, 0)), [f64(2, 3, 2)]),
    ("swapaxes", lambda x: fnp.swapaxes(x, 0, 1), [f64(2, 3)]),
    ("moveaxis", lambda x: fnp.moveaxis(x, -1, 0), [f64(2, 3, 2)]),
    ("expand_dims", lambda x: fnp.expand_dims(x, -1), [f64(2, 3)]),
    ("squeeze", fnp.squeeze, [f64(2, 1, 3)]),
    ("broadcast_to", lambda x: fnp.broadcast_to(x, (2, 2, 3)), [f64(1, 3)]),
    ("broadcast_arrays", fnp.broadcast_arrays, [f64(2, 1), f64(3)]),
    ("atleast_2d", fnp.atleast_2d, [f64(3)]),
    ("concatenate", lambda x, y: fnp.concatenate([x, y], axis=0), [f64(2, 3), f64(1, 3)]),
    ("concatenate_axis1", lambda x, y: fnp.concatenate([x, y, x], axis=-1), [f64(2, 3), f64(2, 1)]),
    ("stack", lambda x, y: fnp.stack([x, y], axis=1), [f64(2, 3), f64(2, 3)]),
    ("hstack", lambda x, y: fnp.hstack([x, y]), [f64(3), f64(2)]),
    ("vstack", lambda x, y: fnp.vstack([x, y]), [f64(3), f64(2, 3)]),
    ("column_stack", lambda x, y: fnp.column_stack([x, y]), [f64(3), f64(3)]),
    ("split", lambda x: fnp.split(x, [1, 2], axis=1), [f64(2, 4)]),
    ("array_split", lambda x: fnp.array_split(x, 2, axis=0), [f64(3, 2)]),
    ("flip", lambda x: fnp.flip(x, axis=1), [f64(2, 3)]),
    ("flip_all", fnp.flip, [f64(2, 3)]),
    ("fliplr", fnp.fliplr, [f64(2, 3)]),
    ("roll", lambda x: fnp.roll(x, 1, axis=0), [f64(2, 3)]),
    ("roll_flat", lambda x: fnp.roll(x, -2), [f64(2, 3)]),
    ("rot90", fnp.rot90, [f64(2, 3)]),
    ("tile", lambda x: fnp.tile(x, (2, 1)), [f64(2, 3)]),
    ("repeat", lambda x: fnp.repeat(x, 2, axis=1), [f64(2, 3)]),
    ("repeat_flat", lambda x: fnp.repeat(x, 2), [f64(2, 3)]),
    ("pad", lambda x: fnp.pad(x, ((1, 0), (0, 2))), [f64(2, 3)]),
    ("pad_value", lambda x: fnp.pad(x, 1, constant_values=-3.0), [f64(2, 3)]),
    ("pad_reflect", lambda x: fnp.pad(x, 1, mode="reflect"), [f64(3, 3)]),
    ("pad_edge", lambda x: fnp.pad(x, ((0, 2), (1, 0)), mode="edge"), [f64(2, 3)]),
    ("diagonal", fnp.diagonal, [f64(3, 3)]),
    ("diagonal_offset", lambda x: fnp.diagonal(x, 1), [f64(3, 4)]),
    ("trace", fnp.trace, [f64(3, 3)]),
    ("diag", fnp.diag, [f64(3)]),
    ("diag_extract", fnp.diag, [f64(3, 3)]),
    ("tril", fnp.tril, [f64(3, 3)]),
    ("triu", lambda x: fnp.triu(x, -1), [f64(3, 3)]),
    # linear algebra
    ("matmul", fnp.matmul, [f64(2, 3), f64(3, 2)]),
    ("matmul_vec", fnp.matmul, [f64(2, 3), f64(3)]),
    ("matmul_vecmat", fnp.matmul, [f64(3), f64(3, 2)]),
    ("matmul_batched", fnp.matmul, [f64(2, 2, 3), f64(2, 3, 2)]),
    ("matmul_broadcast", fnp.matmul, [f64(2, 2, 3), f64(3, 2)]),
    ("dot", fnp.dot, [f64(2, 3), f64(3, 2)]),
    ("vdot", fnp.vdot, [f64(2, 3), f64(2, 3)]),
    ("inner", fnp.inner, [f64(2, 3), f64(3)]),
    ("outer", fnp.outer, [f64(3), f64(2)]),
    ("tensordot", lambda a, b: fnp.tensordot(a, b, axes=([0, 2], [1, 0])),
     [f64(2, 3, 2), f64(2, 2, 3)]),
    ("matmul_int", fnp.matmul, [ints(5, 2, 3), ints(5, 3)]),
    ("einsum", lambda a, b: fnp.einsum("ij,jk->ki", a, b), [f64(2, 3), f64(3, 2)]),
    ("einsum_trace_batch", lambda a: fnp.einsum("bii->b", a), [f64(2, 3, 3)]),
    ("linalg_solve", lambda a, b: fnp.linalg.solve(a + 3 * fnp.eye(3, dtype=fnp.float64), b),
     [f64(3, 3), f64(3)]),
    ("linalg_inv", lambda a: fnp.linalg.inv(a + 3 * fnp.eye(3, dtype=fnp.float64)), [f64(3, 3)]),
    ("linalg_det", fnp.linalg.det, [f64(3, 3)]),
    ("linalg_slogdet", lambda a: fnp.linalg.slogdet(a)[1], [f64(3, 3)]),
    ("linalg_cholesky", lambda a: fnp.linalg.cholesky(a @ a.T + fnp.eye(3, dtype=fnp.float64)),
     [f64(3, 3)]),
    ("linalg_eigvalsh", lambda a: fnp.linalg.eigvalsh(a + a.T), [f64(3, 3)]),
    ("linalg_svdvals", fnp.linalg.svdvals, [f64(3, 2)]),
    ("linalg_norm", lambda a: fnp.linalg.norm(a, axis=-1), [f64(2, 3)]),
    ("fft_rfft_abs", lambda x: fnp.abs(fnp.fft.rfft(x)), [f64(2, 4)]),
    ("fft_roundtrip", lambda x: fnp.fft.irfft(fnp.fft.rfft(x) * 2.0, n=4), [f64(4)]),
    # indexing
    ("getitem_int", lambda x: x[1], [f64(3, 2)]),
    ("getitem_slices", lambda x: x[::-1, 1:], [f64(3, 3)]),
    ("getitem_none_ellipsis", lambda x: x[None, ..., 0], [f64(2, 3)]),
    ("getitem_array", lambda x, i: x[i], [f64(4, 2), ints(4, 3)]),
    ("getitem_array_negative", lambda x, i: x[:, i - 2], [f64(2, 4), ints(4, 3)]),
    ("getitem_two_arrays", lambda x, i, j: x[i, :, j], [f64(3, 2, 3), ints(3, 2), ints(3, 2)]),
    ("getitem_array_traced_2d", lambda x, i: x[i, 1:], [f64(4, 3), ints(4, 2, 2)]),
    ("at_set", lambda x, v: x.at[1].set(v), [f64(3, 2), f64(2)]),
    ("at_set_array", lambda x, i, v: x.at[i].set(v),
     [f64(5), lambda r: r.permutation(5)[:2].astype(np.int32), f64(2)]),
    ("at_add", lambda x, i, v: x.at[i].add(v), [f64(4), ints(4, 6), f64(6)]),
    ("at_mul", lambda x, v: x.at[::2].mul(v), [f64(4), f64(2)]),
    ("at_min", lambda x, i, v: x.at[i].min(v), [f64(4), ints(4, 3), f64(3)]),
    ("at_max", lambda x, v: x.at[1:3].max(v), [f64(4), f64(2)]),
    ("at_get", lambda x, i: x.at[i].get(), [f64(4), ints(4, 2)]),
    ("take", lambda x, i: fnp.take(x, i), [f64(2, 3), ints(6, 4)]),
    ("take_axis", lambda x, i: fnp.take(x, i, axis=1), [f64(2, 3), ints(3, 2)]),
    ("take_along_axis", lambda x, i: fnp.take_along_axis(x, i, axis=1), [f64(2, 3), ints(3, 2, 2)]),
    ("sort", lambda x: fnp.sort(x, axis=0), [f64(3, 2)]),
    ("sort_descending", lambda x: fnp.sort(x, descending=True), [f64(4)]),
    ("argsort", lambda x: fnp.argsort(x, axis=-1), [distinct(2, 3)]),
    ("argsort_descending", lambda x: fnp.argsort(x, descending=True), [distinct(4)]),
    ("searchsorted", lambda a, v: fnp.searchsorted(fnp.sort(a), v), [f64(5), f64(3)]),
    # creation inside the mapped function
    ("zeros_like", lambda x: fnp.zeros_like(x) + x, [f64(2, 3)]),
    ("ones_like_int", lambda x: fnp.ones_like(x, dtype=fnp.int32) * 2, [f64(2, 3)]),
    ("full_like", lambda x: fnp.full_like(x, 2.5) * x, [f64(2, 3)]),
    ("arange_plus", lambda x: x + fnp.arange(3, dtype=fnp.float64), [f64(2, 3)]),
    ("eye_matmul", lambda x: fnp.eye(3, dtype=fnp.float64) @ x, [f64(3, 2)]),
    ("meshgrid", lambda x, y: fnp.meshgrid(x, y), [f64(3), f64(2)]),
    # operators and methods
    ("operators", lambda x, y: (x + y) * 2 - x / (y * y + 1) + (-x) ** 2, [f64(2, 3), f64(3)]),
    ("int_operators", lambda x, y: (x // (y + 1)) + (x % (y + 1)) + (x & y) + (x | y) + (x ^ y),
     [ints(20, 4), ints(5, 4)]),
    ("comparisons", lambda x, y: fnp.stack([x < y, x <= y, x > y, x >= y, x == y, x != y]),
     [ints(3, 4), ints(3, 4)]),
    ("methods", lambda x: x.sum(0) + x.mean(axis=1).reshape(-1, 1).sum() + x.max() - x.min(1).sum()
     + x.std() + x.var(0) + x.prod(0) + x.T.flatten()[:3] + x.clip(-0.1, 0.1).ravel()[1:4]
     + x.argmax(0) + x.argmin(0) + x.squeeze().round().abs().sum(0), [f64(2, 3)]),
]

IDS = [f[0] for f in FUNCTIONS]


@pytest.mark.parametrize("name,fn,specs", FUNCTIONS, ids=IDS)
@pytest.mark.parametrize("axes", ["0", "1", "-1", "mixed"])
def test_vmap_matches_loop(name, fn, specs, axes):
    n = len(specs)
    if axes == "mixed":
        # the first argument unmapped (None), the others mapped at different positions
        if n == 1:
            check_vmap(fn, specs, (1,), out_axes=-1)
            return
        in_axes = (None,) + tuple((-1, 0)[i % 2] for i in range(n - 1))
    else:
        in_axes = (int(axes),) * n
    check_vmap(fn, specs, in_axes)


@pytest.mark.parametrize("name,fn,specs", [f for f in FUNCTIONS if len(f[2]) >= 2],
                         ids=[f[0] for f in FUNCTIONS if len(f[2]) >= 2])
def test_vmap_only_last_argument_mapped(name, fn, specs):
    check_vmap(fn, specs, (None,) * (len(specs) - 1) + (1,))


# --- in_axes / out_axes forms -----------------------------------------------------------


def test_in_axes_pytree_prefix_dict_and_tuple():
    rng = np.random.default_rng(1)
    w = t(rng.standard_normal((3, 2)))
    b = t(rng.standard_normal((B, 2)))
    xs = t(rng.standard_normal((3, B)))

    def f(params, x):
        return fnp.tanh(x @ params["w"] + params["b"])

    got = fg.vmap(f, in_axes=({"w": None, "b": 0}, 1))({"w": w, "b": b}, xs)
    want = fnp.stack([f({"w": w, "b": b[i]}, xs[:, i]) for i in range(B)])
    np.testing.assert_allclose(got.numpy(), want.numpy())
    # a list in_axes is accepted like a tuple; a prefix covering a whole tuple argument
    pair = (t(rng.standard_normal((B, 2))), t(rng.standard_normal((B, 2))))
    got = fg.vmap(lambda p, s: (p[0] * p[1]) * s, in_axes=[0, None])(pair, t(2.0))
    np.testing.assert_allclose(got.numpy(), (pair[0] * pair[1] * 2.0).numpy())


def test_out_axes_pytree_and_none():
    x = t(np.arange(6.0).reshape(B, 2))

    def f(x):
        return {"a": x * 2, "b": x.sum(), "c": t(7.0)}

    got = fg.vmap(f, out_axes={"a": 1, "b": 0, "c": None})(x)
    np.testing.assert_allclose(got["a"].numpy(), (x * 2).numpy().T)
    np.testing.assert_allclose(got["b"].numpy(), x.numpy().sum(1))
    assert got["c"].shape == () and float(got["c"].numpy()) == 7.0


def test_out_axes_broadcasts_unbatched_outputs():
    got = fg.vmap(lambda x: (x, t([1.0, 2.0])), out_axes=(0, 1))(t(np.arange(3.0)))
    np.testing.assert_allclose(got[1].numpy(), np.tile([[1.0], [2.0]], (1, 3)))


def test_axis_size_with_no_mapped_arguments():
    got = fg.vmap(lambda x: x * 2, in_axes=None, axis_size=4)(t([1.0, 2.0]))
    assert got.shape == (4, 2)
    np.testing.assert_allclose(got.numpy(), np.tile([2.0, 4.0], (4, 1)))
    got = fg.vmap(lambda x: x + 1, axis_size=3)(t(np.zeros((3, 2))))
    assert got.shape == (3, 2)


def test_kwargs_are_mapped_over_axis_0_as_jax():
    got = fg.vmap(lambda x, scale=1.0: x * scale)(t(np.arange(3.0)), scale=t([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(got.numpy(), [0.0, 2.0, 6.0])
    with pytest.raises(ValueError, match="keyword arguments are always mapped"):
        fg.vmap(lambda x, scale=1.0: x * scale)(t(np.arange(3.0)), scale=t(2.0))


def test_scalar_examples_and_scalar_outputs():
    x = t(np.arange(4.0))
    np.testing.assert_allclose(fg.vmap(lambda s: s * s + 1)(x).numpy(), x.numpy() ** 2 + 1)
    np.testing.assert_allclose(fg.vmap(lambda s: fnp.stack([s, -s]))(x).numpy(),
                               np.stack([x.numpy(), -x.numpy()], 1))


def test_python_scalar_outputs_are_broadcast():
    got = fg.vmap(lambda x: (x, 3.0))(t(np.arange(2.0)))
    assert got[1].shape == (2,)
    np.testing.assert_allclose(got[1].numpy(), [3.0, 3.0])


# --- nesting ---------------------------------------------------------------------------


def test_nested_vmap_outer_product():
    x, y = t(np.arange(3.0)), t(np.arange(4.0) + 1)
    got = fg.vmap(fg.vmap(lambda a, b: a * b, in_axes=(None, 0)), in_axes=(0, None))(x, y)
    np.testing.assert_allclose(got.numpy(), np.outer(x.numpy(), y.numpy()))


def test_nested_vmap_matches_double_loop():
    rng = np.random.default_rng(2)
    a = t(rng.standard_normal((2, 3, 4)))
    bm = t(rng.standard_normal((4, 3, 2)))

    def f(x, m):
        return fnp.tanh(x @ m).sum() * x

    got = fg.vmap(fg.vmap(f, in_axes=(0, -1)), in_axes=(1, None), out_axes=-1)(a, bm)
    want = np.stack([np.stack([f(a[j, i], bm[..., j]).numpy()
                               for j in range(2)]) for i in range(3)], axis=-1)
    np.testing.assert_allclose(got.numpy(), want)


def test_triple_nested_vmap_sum():
    x = t(np.arange(24.0).reshape(2, 3, 4))
    got = fg.vmap(fg.vmap(fg.vmap(lambda s: s * 2)))(x)
    np.testing.assert_allclose(got.numpy(), x.numpy() * 2)
    got = fg.vmap(fg.vmap(lambda r: r.sum(), in_axes=1), in_axes=2)(x)
    np.testing.assert_allclose(got.numpy(), x.numpy().sum(0).T)


def test_inner_vmap_over_closed_over_outer_tracer():
    x = t(np.arange(3.0))
    y = t(np.arange(4.0))
    got = fg.vmap(lambda a: fg.vmap(lambda b: a * b + a)(y))(x)
    np.testing.assert_allclose(got.numpy(), np.outer(x.numpy(), y.numpy()) + x.numpy()[:, None])


@pytest.mark.parametrize("name,fn,specs", [f for f in FUNCTIONS if len(f[2]) >= 2],
                         ids=[f[0] for f in FUNCTIONS if len(f[2]) >= 2])
def test_vmap_only_first_argument_mapped(name, fn, specs):
    check_vmap(fn, specs, (-1,) + (None,) * (len(specs) - 1))


# --- primitives with less common parameters, batched at every position ----------------------

from funcgrad.core.prims import dot as _dot  # noqa: E402
from funcgrad.core.prims import elementwise as _ew  # noqa: E402
from funcgrad.core.prims import indexing as _ix  # noqa: E402
from funcgrad.core.prims import sorting as _sorting  # noqa: E402
from funcgrad.core.prims import structural as _st  # noqa: E402

PRIMITIVES = [
    ("broadcast_in_dim", lambda x: _st.broadcast_in_dim(x, (2, 3, 4), (0, 2)), [f64(1, 4)]),
    ("slice_strided", lambda x: _st.slice_(x, (1, 0), (5, 3), (2, 2)), [f64(5, 3)]),
    ("pad_interior_negative", lambda x: _st.pad(x, np.asarray(0.5), ((-1, 2, 1), (1, 0, 0))),
     [f64(3, 2)]),
    ("pad_batched_value", lambda x, v: _st.pad(x, v, ((1, 0, 1), (0, 2, 0))), [f64(2, 3), f64()]),
    ("fnp_pad_batched_value", lambda x, v: fnp.pad(x, 1, constant_values=v), [f64(2, 3), f64()]),
    ("rev", lambda x: _st.rev(x, (0, 2)), [f64(2, 3, 2)]),
    ("transpose", lambda x: _st.transpose(x, (2, 0, 1)), [f64(2, 3, 2)]),
    ("reduce_max_axes", lambda x: red.reduce_max(x, (0, 2)), [f64(2, 3, 2)]),
    ("argmax_middle", lambda x: red.argmax(x, 1), [f64(2, 3, 2)]),
    ("cumsum_reverse", lambda x: red.cumsum(x, 1, reverse=True), [f64(2, 3, 2)]),
    ("cumprod", lambda x: red.cumprod(x, 0), [f64(3, 2)]),
    ("select_n_int", lambda w, x, y, z: _ew.select_n(w, x, y, z),
     [ints(3, 4), f64(4), f64(4), f64(4)]),
    ("select_n_scalar_batched_pred", lambda p, x, y: _ew.select_n(p, x, y),
     [bools(), f64(2, 3), f64(2, 3)]),
    ("gather_two_axes", lambda x, i: _ix.gather(x, i, (0, 2)),
     [f64(2, 3, 3),
      lambda r: np.stack([r.integers(0, 2, 4), r.integers(0, 3, 4)], 1).astype(np.int32)]),
    ("scatter_add_rest", lambda x, i, u: _ix.scatter(x, i, u, (0,), "add"),
     [f64(3, 2), ints(3, 4, 1), f64(4, 2)]),
    ("scatter_mul", lambda x, i, u: _ix.scatter(x, i, u, (1,), "mul"),
     [f64(2, 3), ints(3, 2, 1), f64(2, 2)]),
    ("scatter_max", lambda x, i, u: _ix.scatter(x, i, u, (0,), "max"),
     [f64(3), ints(3, 5, 1), f64(5)]),
    ("dynamic_slice", lambda x, s: _ix.dynamic_slice(x, (s, s + 1), (2, 2)), [f64(4, 4), ints(4)]),
    ("dynamic_update_slice", lambda x, u, s: _ix.dynamic_update_slice(x, u, (s, 0)),
     [f64(4, 3), f64(2, 3), ints(4)]),
    ("dot_batch_dims", lambda a, b: _dot.dot_general(a, b, (((2,), (0,)), ((0,), (1,)))),
     [f64(2, 3, 4), f64(4, 2, 5)]),
    ("dot_unsorted_contracting", lambda a, b: _dot.dot_general(a, b, (((2, 1), (0, 2)), ((), ()))),
     [f64(2, 3, 4), f64(4, 2, 3)]),
    ("sort_two_keys", lambda k1, k2, v: _sorting.sort((k1, k2, v), 0, 2),
     [ints(2, 5), ints(3, 5), f64(5)]),
    ("integer_pow", lambda x: _ew.integer_pow(x, -3), [pos(2, 3)]),
    ("iota_plus", lambda x: x + _st.iota(np.float64, (2, 3), 1), [f64(2, 3)]),
]


@pytest.mark.parametrize("name,fn,specs", PRIMITIVES, ids=[p[0] for p in PRIMITIVES])
@pytest.mark.parametrize("axes", ["0", "1", "-1", "mixed"])
def test_vmap_primitive(name, fn, specs, axes):
    n = len(specs)
    if axes == "mixed":
        in_axes = (None,) + (0,) * (n - 1) if n > 1 else (0,)
    else:
        in_axes = tuple(min(int(axes), spec_ndim) if int(axes) >= 0 else -1
                        for spec_ndim in (np.ndim(s(np.random.default_rng(0))) for s in specs))
    check_vmap(fn, specs, in_axes)


# --- vmap composed with differentiation, for every float function above ---------------------

from funcgrad.test_util import check_grads  # noqa: E402

_NOT_DIFFERENTIABLE = {"sign", "floor", "ceil", "round", "rint", "trunc", "fix", "isfinite",
                       "isnan", "isinf", "signbit", "astype", "heaviside", "argmax", "argmin",
                       "argmax_keepdims", "argsort", "argsort_descending", "searchsorted",
                       "comparisons", "less", "greater_equal", "where_scalars", "ones_like_int",
                       "methods", "remainder", "fmod", "argmax_middle", "abs", "sinc",
                       "maximum", "minimum", "clip", "clip_bounds", "max", "min", "amax_keepdims",
                       "ptp", "cummax", "cummin_reverse", "reduce_max_axes", "scatter_max",
                       "at_min", "at_max", "sort", "sort_descending", "copysign"}


def _is_float_spec(spec):
    return np.asarray(spec(np.random.default_rng(0))).dtype == np.float64


def _float_cases(table):
    cases = []
    for name, fn, specs in table:
        if name in _NOT_DIFFERENTIABLE or not any(_is_float_spec(s) for s in specs):
            continue
        cases.append((name, fn, specs))
    return cases


FLOAT_CASES = _float_cases(FUNCTIONS) + _float_cases(PRIMITIVES)


def _batched_args(specs, in_axes, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for spec, axis in zip(specs, in_axes, strict=True):
        if axis is None:
            out.append(t(spec(rng)))
        else:
            out.append(t(np.stack([spec(rng) for _ in range(B)], axis=axis)))
    return out


@pytest.mark.parametrize("name,fn,specs", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_grads_of_vmap(name, fn, specs):
    in_axes = tuple(-1 if i % 2 else 0 for i in range(len(specs)))
    args = _batched_args(specs, in_axes)
    float_positions = [i for i, a in enumerate(args) if a.dtype == np.float64]

    def of_floats(*floats):
        full = list(args)
        for i, v in zip(float_positions, floats, strict=True):
            full[i] = v
        return fg.vmap(fn, in_axes=in_axes)(*full)

    check_grads(of_floats, [args[i] for i in float_positions], order=2)


@pytest.mark.parametrize("name,fn,specs", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_vmap_of_vjp_matches_loop(name, fn, specs):
    rng = np.random.default_rng(5)
    examples = [[t(spec(rng)) for spec in specs] for _ in range(B)]
    outs = [fn(*ex) for ex in examples]
    cts = [fg.tree.map(lambda o: t(rng.standard_normal(o.shape)) if o.dtype == np.float64
                       else fnp.zeros_like(o), out) for out in outs]

    def pullback(ct, *xs):
        return fg.vjp(fn, *xs)[1](ct)

    want = [pullback(ct, *ex) for ct, ex in zip(cts, examples, strict=True)]
    got = fg.vmap(pullback)(
        _stack_out(cts, 0), *[fnp.stack([ex[i] for ex in examples]) for i in range(len(specs))])
    for i in range(len(specs)):
        if examples[0][i].dtype != np.float64:
            continue
        np.testing.assert_allclose(got[i].numpy(), np.stack([w[i].numpy() for w in want]),
                                   rtol=1e-10, atol=1e-12)


def test_in_axes_namedtuple_and_list_prefixes():
    import collections

    Pair = collections.namedtuple("Pair", "a b")
    a, b = t(np.array([[1.0, 2.0], [3.0, 4.0]])), t(np.array([1.0, 10.0]))
    want = np.array([[1.0, 20.0], [3.0, 40.0]])
    got = fg.vmap(lambda p: p.a * p.b, in_axes=(Pair(0, None),))(Pair(a, b))
    np.testing.assert_allclose(got.numpy(), want)
    got = fg.vmap(lambda p: p[0] * p[1], in_axes=([0, None],))([a, b])
    np.testing.assert_allclose(got.numpy(), want)
    got = fg.vmap(lambda p: p["a"] * p["b"]["c"], in_axes=({"a": 1, "b": None},))(
        {"a": a, "b": {"c": t(2.0)}})
    np.testing.assert_allclose(got.numpy(), 2 * a.numpy().T)
