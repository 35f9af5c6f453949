"""Automatic differentiation: every differentiable primitive and funcgrad.numpy composite
checked against central finite differences (forward and reverse, to second order) in
float64, plus grad/value_and_grad/jacfwd/jacrev/hessian/linearize against analytic results.
"""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims import reductions as red
from funcgrad.test_util import check_grads


def t64(x):
    return fg.tensor(np.asarray(x, dtype=np.float64))


_rng = np.random.default_rng(0)


def rand(*shape, low=-1.0, high=1.0):
    return t64(_rng.uniform(low, high, shape))


def pos(*shape):
    return rand(*shape, low=0.5, high=2.0)


def unit(*shape):
    """Inside (-0.9, 0.9), for arcsin/arctanh and friends."""
    return rand(*shape, low=-0.9, high=0.9)


def distinct(*shape):
    """Well-separated values (no ties for max/min/sort), in random order."""
    n = int(np.prod(shape))
    values = np.linspace(-2.0, 2.0, n)
    return t64(_rng.permutation(values).reshape(shape))


def away_from_zero(*shape):
    return t64(_rng.uniform(0.3, 1.5, shape) * _rng.choice([-1.0, 1.0], shape))


# --- elementwise --------------------------------------------------------------------------

UNARY = [
    ("exp", fnp.exp, rand(3)),
    ("log", fnp.log, pos(3)),
    ("log1p", fnp.log1p, pos(3)),
    ("expm1", fnp.expm1, rand(3)),
    ("sin", fnp.sin, rand(3)),
    ("cos", fnp.cos, rand(3)),
    ("tan", fnp.tan, unit(3)),
    ("tanh", fnp.tanh, rand(3)),
    ("sinh", fnp.sinh, rand(3)),
    ("cosh", fnp.cosh, rand(3)),
    ("arcsin", fnp.arcsin, unit(3)),
    ("arccos", fnp.arccos, unit(3)),
    ("arctan", fnp.arctan, rand(3)),
    ("arcsinh", fnp.arcsinh, rand(3)),
    ("arccosh", fnp.arccosh, rand(3, low=1.5, high=3.0)),
    ("arctanh", fnp.arctanh, unit(3)),
    ("sqrt", fnp.sqrt, pos(3)),
    ("square", fnp.square, rand(3)),
    ("reciprocal", fnp.reciprocal, pos(3)),
    ("negative", fnp.negative, rand(3)),
    ("abs", fnp.abs, away_from_zero(4)),
    ("exp2", fnp.exp2, rand(3)),
    ("log2", fnp.log2, pos(3)),
    ("log10", fnp.log10, pos(3)),
    ("hypot_self", lambda x: fnp.hypot(x, 2.0 * x + 1.0), rand(3)),
    ("deg2rad", fnp.deg2rad, rand(3)),
    ("sinc", fnp.sinc, away_from_zero(3)),
    ("rsqrt", lambda x: ew.rsqrt(x), pos(3)),
    ("logistic", lambda x: ew.logistic(x), rand(3)),
    ("erf", lambda x: ew.erf(x), rand(3)),
    ("erf_inv", lambda x: ew.erf_inv(x), unit(3)),
    ("integer_pow3", lambda x: x ** 3, rand(3)),
    ("integer_pow_neg2", lambda x: x ** -2, pos(3)),
    ("integer_pow0", lambda x: fnp.power(x, 0) * x, rand(3)),
    ("pow_float_exponent", lambda x: x ** 1.7, pos(3)),
    ("scalar_pow_x", lambda x: 2.0 ** x, rand(3)),
    ("floor_times", lambda x: fnp.floor(x) * x, t64([0.3, 1.4, -2.6])),
    ("sign_times", lambda x: fnp.sign(x) * x, away_from_zero(3)),
    ("round_plus", lambda x: fnp.round(x) + x, t64([0.3, 1.4, -2.6])),
    ("ceil_plus", lambda x: fnp.ceil(x) + x, t64([0.3, 1.4, -2.6])),
    ("rdiv", lambda x: 1.0 / x, pos(3)),
    ("astype_roundtrip", lambda x: (x.astype(fnp.float32).astype(fnp.float64) * 0 + x), rand(3)),
]


@pytest.mark.parametrize("name,fn,x", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, fn, x):
    check_grads(fn, (x,), order=2, modes=("fwd", "rev"))


BINARY = [
    ("add", fnp.add, rand(2, 3), rand(2, 3)),
    ("add_broadcast", fnp.add, rand(2, 3), rand(3)),
    ("subtract", fnp.subtract, rand(2, 3), rand(1, 3)),
    ("multiply", fnp.multiply, rand(2, 3), rand(2, 1)),
    ("divide", fnp.divide, rand(3), pos(3)),
    ("power", fnp.power, pos(3), rand(3)),
    ("pow_operator", lambda x, y: x ** y, pos(2, 3), rand(3)),
    ("maximum", fnp.maximum, t64([1.0, -2.0, 3.0]), t64([0.5, -1.0, 4.0])),
    ("minimum", fnp.minimum, t64([1.0, -2.0, 3.0]), t64([0.5, -1.0, 4.0])),
    ("arctan2", fnp.arctan2, rand(3), pos(3)),
    ("logaddexp", fnp.logaddexp, rand(3), rand(3)),
    ("hypot", fnp.hypot, pos(3), pos(3)),
    ("fmod", fnp.fmod, t64([5.3, 4.1]), t64([2.0, 1.5])),
    ("remainder", fnp.remainder, t64([5.3, -4.1]), t64([2.0, 1.5])),
    ("where", lambda x, y: fnp.where(x > 0, x * y, y ** 2), rand(4), rand(4)),
    ("matmul", fnp.matmul, rand(2, 3), rand(3, 4)),
    ("matmul_vec", fnp.matmul, rand(3), rand(3, 2)),
    ("matmul_batched", fnp.matmul, rand(2, 2, 3), rand(2, 3, 2)),
    ("matmul_operator", lambda a, b: a @ b, rand(2, 3), rand(3)),
    ("dot", fnp.dot, rand(2, 3), rand(3, 2)),
    ("vdot", fnp.vdot, rand(4), rand(4)),
    ("inner", fnp.inner, rand(2, 3), rand(4, 3)),
    ("outer", fnp.outer, rand(3), rand(2)),
    ("tensordot", lambda a, b: fnp.tensordot(a, b, axes=([1, 2], [0, 1])), rand(2, 3, 2),
     rand(3, 2, 2)),
    ("einsum", lambda a, b: fnp.einsum("ij,kj->ik", a, b), rand(2, 3), rand(4, 3)),
    ("linalg_solve", lambda a, b: fnp.linalg.solve(a + 3 * fnp.eye(3, dtype=fnp.float64), b),
     rand(3, 3), rand(3, 2)),
    ("tensordot_int", lambda a, b: fnp.tensordot(a, b, axes=1), rand(2, 3), rand(3, 2)),
]


@pytest.mark.parametrize("name,fn,x,y", BINARY, ids=[b[0] for b in BINARY])
def test_binary(name, fn, x, y):
    check_grads(fn, (x, y), order=2, modes=("fwd", "rev"))


def test_clip():
    x = t64([-2.0, -0.3, 0.2, 0.7, 3.0])
    check_grads(lambda x: fnp.clip(x, -0.5, 0.5), (x,), order=2)
    g = fg.grad(lambda x: fnp.clip(x, -0.5, 0.5).sum())(x)
    np.testing.assert_allclose(g.numpy(), [0, 1, 1, 0, 0])


def test_maximum_gradient_values():
    x, y = t64([1.0, -2.0]), t64([0.5, 3.0])
    gx, gy = fg.grad(lambda x, y: fnp.maximum(x, y).sum(), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx.numpy(), [1, 0])
    np.testing.assert_allclose(gy.numpy(), [0, 1])


def test_abs_gradient_is_sign():
    x = t64([-1.5, 2.0, -0.1])
    np.testing.assert_allclose(fg.grad(lambda x: fnp.abs(x).sum())(x).numpy(), [-1, 1, -1])


@pytest.mark.parametrize("wrap", [lambda f: f, fg.jit], ids=["eager", "jit"])
def test_abs_gradient_at_zero_is_one_as_jax(wrap):
    # JAX's rule: select(x >= 0, g, -g), so both zeros get +1 (PyTorch gives 0)
    x = t64([0.0, -0.0, -2.0])
    np.testing.assert_array_equal(wrap(fg.grad(lambda x: fnp.abs(x).sum()))(x).numpy(),
                                  [1.0, 1.0, -1.0])
    np.testing.assert_array_equal(fg.jacfwd(fnp.abs)(x).numpy(), np.diag([1.0, 1.0, -1.0]))


@pytest.mark.parametrize("wrap", [lambda f: f, fg.jit], ids=["eager", "jit"])
def test_complex_abs_derivatives(wrap):
    z = np.array([3 + 4j, -1e20 + 1e20j, 1e-25 - 2e-25j, 0j], np.complex64)
    g = wrap(fg.grad(lambda z: fnp.abs(z).sum()))(fg.tensor(z)).numpy()
    # the gradient of |z| in JAX's convention is conj(z) / |z|, and 0 at z = 0
    magnitude = np.abs(z.astype(np.complex128))
    expected = np.where(magnitude == 0, 0, np.conj(z) / np.where(magnitude == 0, 1, magnitude))
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    # d|z| along t is re(conj(z) t) / |z|
    out, tangent = fg.jvp(fnp.abs, (fg.tensor(np.complex128(3 + 4j)),),
                          (fg.tensor(np.complex128(1 + 2j)),))
    assert out.dtype == fg.float64 and float(tangent) == pytest.approx(11 / 5)


def test_holomorphic_derivatives_are_the_complex_derivative():
    # f(z) = z sin z: f'(z) = sin z + z cos z, by grad, jacfwd, jacrev; f'' by hessian
    z = np.array([0.3 + 1.1j, -0.5 + 0.2j])
    f = lambda z: fnp.sin(z) * z  # noqa: E731
    first = np.sin(z) + z * np.cos(z)
    second = 2 * np.cos(z) - z * np.sin(z)
    np.testing.assert_allclose(fg.grad(lambda z: f(z).sum(), holomorphic=True)(z), first,
                               rtol=1e-14)
    for jac in (fg.jacfwd, fg.jacrev):
        np.testing.assert_allclose(jac(f, holomorphic=True)(z), np.diag(first), rtol=1e-14)
    np.testing.assert_allclose(fg.hessian(lambda z: f(z).sum(), holomorphic=True)(z),
                               np.diag(second), rtol=1e-14)
    value, g = fg.value_and_grad(lambda z: z * z, holomorphic=True)(fg.tensor(1.0 + 2.0j))
    assert complex(g) == 2 + 4j and complex(value) == (1 + 2j) ** 2


def test_complex_inputs_without_holomorphic_are_refused_where_ambiguous():
    z = np.array([0.3 + 1.1j, -0.5 + 0.2j])
    # jacfwd's real basis gave the derivative along the real axis only, silently
    with pytest.raises(TypeError, match="jacfwd requires real inputs.*holomorphic=True"):
        fg.jacfwd(lambda a: fnp.abs(a) ** 2)(z)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires complex inputs"):
        fg.grad(lambda a: a * a, holomorphic=True)(t64(1.0))
    with pytest.raises(TypeError, match="jacrev with holomorphic=True requires complex outputs"):
        fg.jacrev(fnp.abs, holomorphic=True)(z)
    with pytest.raises(TypeError, match="holomorphic=True"):
        fg.grad(lambda a: (a * a).sum())(z)  # complex output without holomorphic
    # a real function of complex inputs by reverse mode: conj convention, as JAX
    np.testing.assert_allclose(fg.jacrev(lambda a: fnp.abs(a) ** 2)(z), np.diag(2 * np.conj(z)),
                               rtol=1e-14)


def test_convert_element_type_float32_grad():
    x = fg.tensor(np.array([1.0, 2.0], np.float32))
    g = fg.grad(lambda x: (x.astype(fnp.float64) ** 2).sum())(x)
    assert g.dtype == fnp.float32
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


# --- reductions ---------------------------------------------------------------------------

REDUCTIONS = [
    ("sum_all", lambda x: fnp.sum(x), rand(2, 3)),
    ("sum_axis", lambda x: fnp.sum(x, axis=1), rand(2, 3)),
    ("sum_keepdims", lambda x: fnp.sum(x, axis=0, keepdims=True), rand(2, 3)),
    ("mean", lambda x: fnp.mean(x, axis=-1), rand(2, 3)),
    ("mean_all", fnp.mean, rand(2, 3)),
    ("prod", lambda x: fnp.prod(x, axis=1), rand(2, 3)),
    ("prod_all", fnp.prod, rand(2, 3)),
    ("prod_two_axes", lambda x: fnp.prod(x, axis=(0, 2)), rand(2, 3, 2)),
    ("prod_with_zero", lambda x: fnp.prod(x), t64([0.0, 2.0, 3.0])),
    ("max", lambda x: fnp.max(x, axis=0), distinct(3, 2)),
    ("max_all", fnp.max, distinct(3, 2)),
    ("min", lambda x: fnp.min(x, axis=1), distinct(3, 2)),
    ("var", lambda x: fnp.var(x, axis=0), rand(4, 2)),
    ("var_ddof", lambda x: fnp.var(x, ddof=1), rand(4)),
    ("std", lambda x: fnp.std(x, axis=1), rand(2, 4)),
    ("logsumexp", lambda x: fnp.logsumexp(x, axis=1), rand(2, 3)),
    ("logsumexp_all", fnp.logsumexp, rand(2, 3)),
    ("cumsum", lambda x: fnp.cumsum(x, axis=1), rand(2, 3)),
    ("cumsum_flat", fnp.cumsum, rand(2, 3)),
    ("cumprod", lambda x: fnp.cumprod(x, axis=0), rand(3, 2)),
    ("cumsum_reverse", lambda x: red.cumsum(x, 0, reverse=True), rand(3, 2)),
    ("cumprod_reverse", lambda x: red.cumprod(x, 1, reverse=True), rand(2, 3)),
    ("cummax", lambda x: red.cummax(x, 0), distinct(4, 2)),
    ("cummin_reverse", lambda x: red.cummin(x, 1, reverse=True), distinct(2, 4)),
    ("linalg_det", fnp.linalg.det, rand(3, 3)),
    ("linalg_inv", lambda a: fnp.linalg.inv(a + 3 * fnp.eye(3, dtype=fnp.float64)), rand(3, 3)),
    ("linalg_norm", lambda a: fnp.linalg.norm(a), rand(2, 3)),
    ("linalg_eigvalsh", lambda a: fnp.linalg.eigvalsh(a + a.T), rand(3, 3)),
    ("fft_rfft_abs", lambda x: fnp.abs(fnp.fft.rfft(x)) ** 2, rand(4)),
    ("tensor_methods", lambda x: x.sum(axis=0) * x.mean() + x.max() - x.std(), distinct(3, 2)),
]


@pytest.mark.parametrize("name,fn,x", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction(name, fn, x):
    check_grads(fn, (x,), order=2, modes=("fwd", "rev"))


def test_max_ties_share_gradient():
    x = t64([1.0, 3.0, 3.0])
    np.testing.assert_allclose(fg.grad(fnp.max)(x).numpy(), [0, 0.5, 0.5])


# --- shape operations ---------------------------------------------------------------------

SHAPE = [
    ("reshape", lambda x: fnp.reshape(x, (3, 2)), rand(2, 3)),
    ("reshape_neg", lambda x: x.reshape(-1), rand(2, 3)),
    ("transpose", lambda x: fnp.transpose(x, (2, 0, 1)), rand(2, 3, 2)),
    ("T", lambda x: x.T, rand(2, 3)),
    ("swapaxes", lambda x: fnp.swapaxes(x, 0, 2), rand(2, 3, 2)),
    ("moveaxis", lambda x: fnp.moveaxis(x, 0, -1), rand(2, 3, 2)),
    ("broadcast_to", lambda x: fnp.broadcast_to(x, (2, 3, 3)), rand(3, 1)),
    ("concatenate", lambda x: fnp.concatenate([x, 2 * x, x[:1]], axis=0), rand(2, 3)),
    ("concatenate_axis1", lambda x: fnp.concatenate([x, x ** 2], axis=1), rand(2, 3)),
    ("stack", lambda x: fnp.stack([x, x * x], axis=1), rand(2, 3)),
    ("split", lambda x: fnp.split(x, 3, axis=1)[1] * fnp.split(x, [1], axis=1)[0], rand(2, 3)),
    ("pad", lambda x: fnp.pad(x, ((1, 0), (2, 1))), rand(2, 3)),
    ("pad_value", lambda x: fnp.pad(x, 1, constant_values=3.0), rand(2, 2)),
    ("pad_reflect", lambda x: fnp.pad(x, ((1, 1),), mode="reflect"), rand(4)),
    ("pad_edge", lambda x: fnp.pad(x, ((2, 1),), mode="edge"), rand(3)),
    ("flip", lambda x: fnp.flip(x, axis=1), rand(2, 3)),
    ("flip_all", fnp.flip, rand(2, 3)),
    ("roll", lambda x: fnp.roll(x, 2, axis=1), rand(2, 3)),
    ("roll_flat", lambda x: fnp.roll(x, -1), rand(2, 3)),
    ("tile", lambda x: fnp.tile(x, (2, 1)), rand(2, 3)),
    ("repeat", lambda x: fnp.repeat(x, 2, axis=0), rand(2, 3)),
    ("repeat_flat", lambda x: fnp.repeat(x, 2), rand(2, 2)),
    ("squeeze", lambda x: fnp.squeeze(x, axis=1), rand(2, 1, 3)),
    ("expand_dims", lambda x: fnp.expand_dims(x, (0, 2)), rand(2, 3)),
    ("diagonal", fnp.diagonal, rand(3, 3)),
    ("trace", fnp.trace, rand(3, 3)),
    ("tril", fnp.tril, rand(3, 3)),
    ("triu", lambda x: fnp.triu(x, 1), rand(3, 3)),
    ("ravel", fnp.ravel, rand(2, 3)),
]


@pytest.mark.parametrize("name,fn,x", SHAPE, ids=[s[0] for s in SHAPE])
def test_shape_op(name, fn, x):
    check_grads(fn, (x,), order=2, modes=("fwd", "rev"))


# --- indexing -----------------------------------------------------------------------------

INDEXING = [
    ("int", lambda x: x[1], rand(3, 2)),
    ("negative_int", lambda x: x[-1, 0], rand(3, 2)),
    ("slice", lambda x: x[1:, ::2], rand(3, 4)),
    ("negative_step", lambda x: x[::-1, 1], rand(3, 2)),
    ("none_ellipsis", lambda x: x[None, ..., 0], rand(2, 3)),
    ("int_array", lambda x: x[fg.tensor([2, 0, 2])], rand(3, 2)),
    ("int_array_2d", lambda x: x[fg.tensor([[0, 1], [1, 1]]), 1:], rand(3, 2)),
    ("two_arrays", lambda x: x[fg.tensor([0, 2]), fg.tensor([1, 0])], rand(3, 2)),
    ("separated_arrays", lambda x: x[fg.tensor([0, 1]), :, fg.tensor([1, 0])], rand(2, 3, 2)),
    ("bool_mask", lambda x: x[np.array([True, False, True])], rand(3, 2)),
    ("at_set", lambda x: x.at[1].set(x[0] * 2), rand(3, 2)),
    ("at_add_repeat", lambda x: x.at[fg.tensor([0, 0, 2])].add(x[:3] ** 2), rand(4)),
    ("at_mul", lambda x: x.at[1:].mul(x[:2] + 3.0), rand(3)),
    ("at_min", lambda x: x.at[fg.tensor([0, 2])].min(t64([-5.0, 5.0])), distinct(3)),
    ("at_max", lambda x: x.at[fg.tensor([0, 2])].max(t64([-5.0, 5.0])), distinct(3)),
    ("at_get", lambda x: x.at[::2].get(), rand(4)),
    ("take_flat", lambda x: fnp.take(x, fg.tensor([5, 0, 3])), rand(2, 3)),
    ("take_axis", lambda x: fnp.take(x, fg.tensor([2, 0]), axis=1), rand(2, 3)),
    ("take_along_axis", lambda x: fnp.take_along_axis(x, fg.tensor([[2, 0], [1, 1]]), axis=1),
     rand(2, 3)),
    ("take_along_argsort", lambda x: fnp.take_along_axis(x, fnp.argsort(x, axis=0), axis=0),
     distinct(3, 2)),
    ("sort", lambda x: fnp.sort(x, axis=-1), distinct(2, 4)),
    ("sort_axis0", lambda x: fnp.sort(x, axis=0), distinct(3, 2)),
    ("sort_descending", lambda x: fnp.sort(x, descending=True), distinct(4)),
]


@pytest.mark.parametrize("name,fn,x", INDEXING, ids=[i[0] for i in INDEXING])
def test_indexing(name, fn, x):
    check_grads(fn, (x,), order=2, modes=("fwd", "rev"))


def test_at_set_updates_and_operand():
    x, v = rand(4), rand(2)
    check_grads(lambda x, v: x.at[fg.tensor([3, 1])].set(v * x[0]), (x, v), order=2)
    check_grads(lambda x, v: x.at[fg.tensor([3, 1])].add(v * v), (x, v), order=2)
    check_grads(lambda x, v: x.at[fg.tensor([1, 2])].min(v), (distinct(4), t64([0.1, -5])),
                order=2)
    gx, gv = fg.grad(lambda x, v: x.at[fg.tensor([3, 1])].set(v).sum(), argnums=(0, 1))(x, v)
    np.testing.assert_allclose(gx.numpy(), [1, 0, 1, 0])
    np.testing.assert_allclose(gv.numpy(), [1, 1])


def test_gather_grad_accumulates_repeats():
    x = rand(3)
    g = fg.grad(lambda x: x[fg.tensor([0, 0, 2, 0])].sum())(x)
    np.testing.assert_allclose(g.numpy(), [3, 0, 1])


def test_sort_multiple_operands_jvp():
    from funcgrad.core.prims import sorting

    keys = distinct(5)
    check_grads(lambda k, v: sorting.sort((k, v), 0, 1)[1] * sorting.sort((k, v), 0, 1)[0],
                (keys, rand(5)), order=2)


# --- argnums, has_aux, pytrees ------------------------------------------------------------


def test_argnums_int_and_tuple():
    f = lambda x, y, z: (x * fnp.sin(y) * z).sum()
    x, y, z = rand(3), rand(3), rand(3)
    np.testing.assert_allclose(fg.grad(f, argnums=1)(x, y, z).numpy(),
                               (x * fnp.cos(y) * z).numpy())
    np.testing.assert_allclose(fg.grad(f, argnums=-1)(x, y, z).numpy(),
                               (x * fnp.sin(y)).numpy())
    gx, gz = fg.grad(f, argnums=(0, 2))(x, y, z)
    np.testing.assert_allclose(gx.numpy(), (fnp.sin(y) * z).numpy())
    np.testing.assert_allclose(gz.numpy(), (x * fnp.sin(y)).numpy())
    (gy,) = fg.grad(f, argnums=(1,))(x, y, z)
    assert isinstance((gy,), tuple) and gy.shape == (3,)



@pytest.mark.parametrize("transform", [fg.grad, fg.value_and_grad, fg.jacfwd, fg.jacrev,
                                       fg.hessian],
                         ids=["grad", "value_and_grad", "jacfwd", "jacrev", "hessian"])
@pytest.mark.parametrize("argnums", [(0, 0), (1, -1), (0, 1, 0)])
def test_repeated_argnums_are_an_error(transform, argnums):
    # differentiating twice with respect to one argument used to drop one of the gradients
    f = lambda a, b: (a * b).sum()
    with pytest.raises(ValueError, match=r"argnums .* more than once.*must appear once"):
        transform(f, argnums=argnums)(t64([1.0, 2.0]), t64([3.0, 4.0]))


def test_has_aux():
    def f(x):
        y = fnp.sin(x)
        return (y ** 2).sum(), {"y": y, "n": 3}

    x = rand(3)
    g, aux = fg.grad(f, has_aux=True)(x)
    np.testing.assert_allclose(g.numpy(), (2 * fnp.sin(x) * fnp.cos(x)).numpy())
    np.testing.assert_allclose(aux["y"].numpy(), np.sin(x.numpy()))
    assert aux["n"] == 3
    (value, aux2), g2 = fg.value_and_grad(f, has_aux=True)(x)
    np.testing.assert_allclose(value.numpy(), (np.sin(x.numpy()) ** 2).sum())
    np.testing.assert_allclose(g2.numpy(), g.numpy())
    assert not isinstance(aux2["y"], fg.core.interpreter.Tracer)


def test_pytree_args_and_grads():
    params = {"w": rand(3, 2), "b": (rand(2), rand())}

    def loss(p, x):
        w, (b, s) = p["w"], p["b"]
        return (fnp.tanh(x @ w + b) * s).sum()

    x = rand(4, 3)
    g = fg.grad(loss)(params, x)
    assert set(g) == {"w", "b"} and isinstance(g["b"], tuple)
    assert g["w"].shape == (3, 2) and g["b"][0].shape == (2,) and g["b"][1].shape == ()
    leaves, treedef = fg.tree.flatten(params)
    check_grads(lambda *ls: loss(fg.tree.unflatten(treedef, ls), x), leaves, order=2)
    # compare with a manual derivative
    w, b, s = params["w"].numpy(), params["b"][0].numpy(), params["b"][1].numpy()
    pre = x.numpy() @ w + b
    dpre = (1 - np.tanh(pre) ** 2) * s
    np.testing.assert_allclose(g["w"].numpy(), x.numpy().T @ dpre)
    np.testing.assert_allclose(g["b"][0].numpy(), dpre.sum(0))
    np.testing.assert_allclose(g["b"][1].numpy(), np.tanh(pre).sum())


def test_pytree_outputs_jvp_vjp():
    def f(x, y):
        return {"a": x * y, "b": [fnp.exp(x), (y ** 2).sum()]}

    x, y = rand(3), rand(3)
    check_grads(f, (x, y), order=2)
    out, pullback = fg.vjp(f, x, y)
    ct = {"a": fg.ones_like(x), "b": [fg.zeros_like(x), t64(1.0)]}
    gx, gy = pullback(ct)
    np.testing.assert_allclose(gx.numpy(), y.numpy())
    np.testing.assert_allclose(gy.numpy(), (x + 2 * y).numpy())
    _, tangents = fg.jvp(f, (x, y), (fg.ones_like(x), fg.zeros_like(y)))
    np.testing.assert_allclose(tangents["a"].numpy(), y.numpy())
    np.testing.assert_allclose(tangents["b"][0].numpy(), np.exp(x.numpy()))
    np.testing.assert_allclose(tangents["b"][1].numpy(), 0.0)


def test_value_and_grad():
    x = t64([1.0, 2.0, 3.0])
    value, g = fg.value_and_grad(lambda x: (x ** 3).sum())(x)
    np.testing.assert_allclose(value.numpy(), 36.0)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    value, (g0, g1) = fg.value_and_grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, 2 * x)
    np.testing.assert_allclose(value.numpy(), 28.0)
    np.testing.assert_allclose(g0.numpy(), 2 * x.numpy())
    np.testing.assert_allclose(g1.numpy(), x.numpy())


def test_grad_keeps_dtype_and_python_scalar_input():
    x32 = fg.tensor([1.0, 2.0])
    g = fg.grad(lambda x: (x * x).sum())(x32)
    assert g.dtype == fg.float32
    np.testing.assert_allclose(fg.grad(lambda x: x ** 3)(2.0).numpy(), 12.0)


def test_integer_argument_not_differentiated_gets_zero_cotangent():
    def f(x, n):
        return (x * n).sum()

    x, n = rand(3), fg.tensor([1, 2, 3])
    _, pullback = fg.vjp(f, x, n)
    gx, gn = pullback(t64(1.0))
    np.testing.assert_allclose(gx.numpy(), [1, 2, 3])
    assert gn.dtype == n.dtype and np.all(gn.numpy() == 0)
    np.testing.assert_allclose(fg.grad(f)(x, n).numpy(), [1, 2, 3])


def test_stop_gradient_like_constant_closure():
    c = rand(3)
    g = fg.grad(lambda x: (x * c).sum())(rand(3))
    np.testing.assert_allclose(g.numpy(), c.numpy())


def test_unused_input_gradient_is_zero():
    g = fg.grad(lambda x, y: (y * 2).sum(), argnums=(0, 1))(rand(3), rand(2))
    np.testing.assert_allclose(g[0].numpy(), 0)
    assert g[0].shape == (3,) and g[0].dtype == fg.float64
    np.testing.assert_allclose(g[1].numpy(), 2)


def test_constant_output_gradient_is_zero():
    np.testing.assert_allclose(fg.grad(lambda x: t64(3.0))(rand(2)).numpy(), [0, 0])
    _, tangent = fg.jvp(lambda x: t64([1.0, 2.0]), (rand(2),), (rand(2),))
    np.testing.assert_allclose(tangent.numpy(), 0)


# --- Jacobians and Hessians vs analytic results ---------------------------------------------


def test_jacfwd_jacrev_elementwise():
    x = rand(3)
    want = np.diag(np.cos(x.numpy()))
    np.testing.assert_allclose(fg.jacfwd(fnp.sin)(x).numpy(), want)
    np.testing.assert_allclose(fg.jacrev(fnp.sin)(x).numpy(), want)


def test_jacobian_of_matvec():
    a, x = rand(2, 3), rand(3)
    f = lambda a, x: fnp.tanh(a @ x)
    pre = a.numpy() @ x.numpy()
    d = 1 - np.tanh(pre) ** 2
    want_x = d[:, None] * a.numpy()
    want_a = np.einsum("i,ij,k->ijk", d, np.eye(2), x.numpy())
    for jac in (fg.jacfwd, fg.jacrev):
        np.testing.assert_allclose(jac(f, argnums=1)(a, x).numpy(), want_x)
        ja, jx = jac(f, argnums=(0, 1))(a, x)
        assert ja.shape == (2, 2, 3) and jx.shape == (2, 3)
        np.testing.assert_allclose(ja.numpy(), want_a)
        np.testing.assert_allclose(jx.numpy(), want_x)


def test_jacobian_matrix_input_output_shapes():
    x = rand(2, 3)
    f = lambda x: x.T ** 2
    want = np.zeros((3, 2, 2, 3))
    for i in range(2):
        for j in range(3):
            want[j, i, i, j] = 2 * x.numpy()[i, j]
    np.testing.assert_allclose(fg.jacfwd(f)(x).numpy(), want)
    np.testing.assert_allclose(fg.jacrev(f)(x).numpy(), want)


def test_jacobian_pytree_in_and_out():
    def f(p):
        return {"s": (p["a"] * p["b"]).sum(), "v": p["a"] ** 2}

    p = {"a": rand(2), "b": rand(2)}
    for jac in (fg.jacfwd, fg.jacrev):
        j = jac(f)(p)
        np.testing.assert_allclose(j["s"]["a"].numpy(), p["b"].numpy())
        np.testing.assert_allclose(j["s"]["b"].numpy(), p["a"].numpy())
        np.testing.assert_allclose(j["v"]["a"].numpy(), np.diag(2 * p["a"].numpy()))
        np.testing.assert_allclose(j["v"]["b"].numpy(), np.zeros((2, 2)))


def test_jacobian_has_aux():
    x = rand(3)
    for jac in (fg.jacfwd, fg.jacrev):
        j, aux = jac(lambda x: (x * 2, x.sum()), has_aux=True)(x)
        np.testing.assert_allclose(j.numpy(), 2 * np.eye(3))
        np.testing.assert_allclose(aux.numpy(), x.numpy().sum())


def test_hessian_quadratic_and_cubic():
    a = rand(3, 3)
    sym = a.numpy() + a.numpy().T
    x = rand(3)
    np.testing.assert_allclose(fg.hessian(lambda x: x @ a @ x)(x).numpy(), sym)
    np.testing.assert_allclose(fg.hessian(lambda x: (x ** 3).sum())(x).numpy(),
                               np.diag(6 * x.numpy()))


def test_hessian_rosenbrock():
    def rosen(x):
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()

    x = t64([1.2, 0.8])
    x0, x1 = x.numpy()
    want = np.array([[1200 * x0 ** 2 - 400 * x1 + 2, -400 * x0], [-400 * x0, 200]])
    np.testing.assert_allclose(fg.hessian(rosen)(x).numpy(), want)
    np.testing.assert_allclose(fg.jacrev(fg.grad(rosen))(x).numpy(), want)
    np.testing.assert_allclose(fg.jacfwd(fg.jacfwd(rosen))(x).numpy(), want)


def test_hessian_argnums_tuple():
    h = fg.hessian(lambda x, y: (x * x * y).sum(), argnums=(0, 1))(t64([2.0]), t64([3.0]))
    np.testing.assert_allclose(h[0][0].numpy(), [[6.0]])
    np.testing.assert_allclose(h[0][1].numpy(), [[4.0]])
    np.testing.assert_allclose(h[1][0].numpy(), [[4.0]])
    np.testing.assert_allclose(h[1][1].numpy(), [[0.0]])


# --- linearize and jvp/vjp basics ---------------------------------------------------------


def test_linearize_matches_jvp():
    f = lambda x, y: fnp.sin(x) * y + fnp.exp(x).sum()
    x, y = rand(3), rand(3)
    out, f_jvp = fg.linearize(f, x, y)
    np.testing.assert_allclose(out.numpy(), f(x, y).numpy())
    for seed in range(2):
        rng = np.random.default_rng(seed)
        tx, ty = t64(rng.standard_normal(3)), t64(rng.standard_normal(3))
        _, want = fg.jvp(f, (x, y), (tx, ty))
        np.testing.assert_allclose(f_jvp(tx, ty).numpy(), want.numpy())


def test_linearize_is_linear_and_does_no_primal_work_twice():
    calls = []

    def f(x):
        calls.append(1)
        return x ** 2

    x = rand(3)
    _, f_jvp = fg.linearize(f, x)
    a, b = f_jvp(t64([1.0, 0, 0])), f_jvp(t64([0, 2.0, 0]))
    np.testing.assert_allclose((a + b).numpy(), f_jvp(t64([1.0, 2.0, 0])).numpy())
    assert len(calls) == 1


def test_jvp_and_vjp_values():
    x = t64([0.5, 1.0])
    out, tangent = fg.jvp(lambda x: x * fnp.sin(x), (x,), (t64([1.0, 1.0]),))
    want = np.sin(x.numpy()) + x.numpy() * np.cos(x.numpy())
    np.testing.assert_allclose(tangent.numpy(), want)
    out, pullback = fg.vjp(lambda x: x * fnp.sin(x), x)
    (ct,) = pullback(t64([1.0, 1.0]))
    np.testing.assert_allclose(ct.numpy(), want)


def test_jvp_has_aux():
    out, tangent, aux = fg.jvp(lambda x: (x ** 2, x + 1), (t64(3.0),), (t64(1.0),),
                               has_aux=True)
    np.testing.assert_allclose(tangent.numpy(), 6.0)
    np.testing.assert_allclose(aux.numpy(), 4.0)


def test_vjp_has_aux():
    out, pullback, aux = fg.vjp(lambda x: (x ** 2, "aux"), t64(3.0), has_aux=True)
    assert aux == "aux"
    np.testing.assert_allclose(pullback(t64(1.0))[0].numpy(), 6.0)


def test_grad_of_mlp_matches_manual_backprop():
    w1, b1, w2 = rand(3, 4), rand(4), rand(4)
    x = rand(5, 3)
    y = rand(5)

    def loss(w1, b1, w2):
        h = fnp.tanh(x @ w1 + b1)
        return fnp.mean((h @ w2 - y) ** 2)

    g1, gb, g2 = fg.grad(loss, argnums=(0, 1, 2))(w1, b1, w2)
    xn, hpre = x.numpy(), x.numpy() @ w1.numpy() + b1.numpy()
    h = np.tanh(hpre)
    r = h @ w2.numpy() - y.numpy()
    dout = 2 * r / 5
    dh = np.outer(dout, w2.numpy()) * (1 - h ** 2)
    np.testing.assert_allclose(g2.numpy(), h.T @ dout)
    np.testing.assert_allclose(gb.numpy(), dh.sum(0))
    np.testing.assert_allclose(g1.numpy(), xn.T @ dh)
    check_grads(loss, (w1, b1, w2), order=2)


def test_at_mul_updates_with_repeats_and_zeros():
    idx = fg.tensor([0, 2, 0, 0])
    x, u = rand(3), t64([1.5, -0.7, 0.0, 2.0])
    check_grads(lambda x, u: x.at[idx].mul(u), (x, u), order=2)
    gu = fg.grad(lambda u: x.at[idx].mul(u).sum())(u)
    x0 = x.numpy()[0]
    np.testing.assert_allclose(gu.numpy(), [x0 * 0.0 * 2.0, x.numpy()[2], x0 * 1.5 * 2.0, 0.0])
    # traced indices take the pairwise path
    f = lambda u, i: x.at[i].mul(u).sum()
    g_traced = fg.vmap(fg.grad(f), in_axes=(None, 0))(u, fg.tensor([[0, 2, 0, 0], [1, 2, 0, 1]]))
    np.testing.assert_allclose(g_traced[0].numpy(), gu.numpy())
    np.testing.assert_allclose(g_traced[1].numpy(),
                               fg.grad(f)(u, fg.tensor([1, 2, 0, 1])).numpy())


# --- primitives called directly, with the less common parameters ----------------------------

from funcgrad.core.prims import dot as _dot  # noqa: E402
from funcgrad.core.prims import indexing as _ix  # noqa: E402
from funcgrad.core.prims import structural as _st  # noqa: E402

PRIMITIVES = [
    ("broadcast_in_dim_size1", lambda x: _st.broadcast_in_dim(x, (2, 3, 4), (0, 2)), rand(1, 4)),
    ("broadcast_in_dim_scalar", lambda x: _st.broadcast_in_dim(x, (2, 2), ()), rand()),
    ("slice_strided", lambda x: _st.slice_(x, (1, 0), (6, 3), (2, 2)), rand(6, 3)),
    ("slice_empty", lambda x: _st.slice_(x, (1,), (1,)).sum() + x[0], rand(3)),
    ("pad_interior", lambda x: _st.pad(x, t64(0.5), ((1, 2, 1), (0, 1, 2))), rand(2, 3)),
    ("pad_negative", lambda x: _st.pad(x, t64(0.0), ((-1, 2, 0), (1, -2, 1))), rand(3, 4)),
    ("pad_value_grad", lambda v: _st.pad(t64(np.ones((2, 2))), v, ((1, 1, 1), (0, 1, 0))), rand()),
    ("rev_two_axes", lambda x: _st.rev(x, (0, 2)), rand(2, 3, 2)),
    ("concatenate_three", lambda x: _st.concatenate((x, x * 2, x[:1] ** 2), 0), rand(2, 3)),
    ("transpose3", lambda x: _st.transpose(x, (1, 2, 0)), rand(2, 3, 4)),
    ("reduce_sum_two_axes", lambda x: red.reduce_sum(x, (0, 2)), rand(2, 3, 2)),
    ("reduce_max_two_axes", lambda x: red.reduce_max(x, (0, 2)), distinct(2, 3, 2)),
    ("reduce_prod_middle", lambda x: red.reduce_prod(x, (1,)), rand(2, 3, 2)),
    ("cumsum_middle", lambda x: red.cumsum(x, 1), rand(2, 3, 2)),
    ("cumprod_middle_reverse", lambda x: red.cumprod(x, 1, reverse=True), rand(2, 3, 2)),
    ("select_n_int3", lambda x: ew.select_n(fg.tensor([0, 2, 1, 2]), x, x * x, -x), rand(4)),
    ("select_n_scalar_pred", lambda x: ew.select_n(fg.tensor(True), x, x * x), rand(3)),
    ("gather_two_axes", lambda x: _ix.gather(x, fg.tensor([[0, 2], [1, 0], [1, 2]]), (0, 2)),
     rand(2, 3, 3)),
    ("gather_middle_axis", lambda x: _ix.gather(x, fg.tensor([[[1], [1]], [[0], [2]]]), (1,)),
     rand(2, 3, 2)),
    ("scatter_rest_dims", lambda x: _ix.scatter(x, fg.tensor([[2], [0]]), x[:2] * 3, (0,), "add"),
     rand(3, 2)),
    ("scatter_set_axis1", lambda x: _ix.scatter(x, fg.tensor([[1]]), x[:, :1].T ** 2, (1,), "set"),
     rand(2, 3)),
    ("dynamic_slice", lambda x: _ix.dynamic_slice(x, (fg.tensor(1), fg.tensor(5)), (2, 2)),
     rand(3, 4)),
    ("dynamic_update_slice", lambda x: _ix.dynamic_update_slice(x, x[:1, :2] * 2, (1, 1)),
     rand(3, 4)),
    ("dot_batch_dims", lambda a: _dot.dot_general(a, _st.transpose(a[:, :1, :], (2, 1, 0)) * 1.5,
                                                   (((2,), (0,)), ((0,), (2,)))), rand(3, 2, 4)),
    ("dot_two_contracting_unsorted", lambda a: _dot.dot_general(
        a, _st.transpose(a, (2, 0, 1)), (((2, 1), (0, 2)), ((), ()))), rand(2, 3, 4)),
    ("dot_scalar_outer", lambda a: _dot.dot_general(a, a * 2, (((), ()), ((), ()))), rand(3)),
    ("atan2_y_first", lambda x: ew.atan2(x, x * x + 1), rand(3)),
    ("rem_both", lambda x: ew.rem(x * 3, x + 2), rand(3, low=0.1, high=0.5)),
    ("expand_after_reduce_mean", lambda x: x - fnp.mean(x, axis=1, keepdims=True), rand(2, 3)),
]


@pytest.mark.parametrize("name,fn,x", PRIMITIVES, ids=[p[0] for p in PRIMITIVES])
def test_primitive(name, fn, x):
    check_grads(fn, (x,), order=2, modes=("fwd", "rev"))


def test_dot_general_two_operands():
    lhs, rhs = rand(2, 3, 4), rand(4, 2, 5)
    numbers = (((2,), (0,)), ((0,), (1,)))
    check_grads(lambda a, b: _dot.dot_general(a, b, numbers), (lhs, rhs), order=2)
    want = np.einsum("bij,jbk->bik", lhs.numpy(), rhs.numpy())
    np.testing.assert_allclose(_dot.dot_general(lhs, rhs, numbers).numpy(), want)



@pytest.mark.parametrize("lhs_shape,rhs_shape,numbers", [
    ((5, 3), (5, 4), (((0,), (0,)), ((), ()))),            # x^T g: weight gradient layout
    ((3, 5), (4, 5), (((1,), (1,)), ((), ()))),            # x g^T
    ((2, 5, 3), (2, 5, 4), (((1,), (0 + 1,)), ((0,), (0,)))),  # batched x^T g
    ((5, 2, 3), (2, 4, 5), (((0,), (2,)), ((1,), (0,)))),  # batch dims not leading
    ((3, 4, 5), (5, 2), (((2,), (0,)), ((), ()))),         # two free dims on one side
])
def test_dot_general_transposes_in_every_layout(lhs_shape, rhs_shape, numbers):
    lhs, rhs = rand(*lhs_shape), rand(*rhs_shape)
    check_grads(lambda a, b: _dot.dot_general(a, b, numbers), (lhs, rhs), order=2,
                modes=("rev",))


def test_weight_gradient_is_one_product_without_a_transpose():
    # dL/dW of x @ W is x^T g: the transpose rule swaps the product's operands so the result
    # comes out in W's layout (a transpose after it costs a compiled dispatch)
    x, w = rand(4, 3), rand(3, 2)
    ir = fg.make_ir(fg.grad(lambda w, x: fnp.sum(fnp.tanh(x @ w)), argnums=0))(w, x)
    names = [eqn.prim.name for eqn in ir.equations]
    assert "transpose" not in names, names
    assert names.count("dot_general") == 2
    np.testing.assert_allclose(
        fg.grad(lambda w: fnp.sum(fnp.tanh(x @ w)))(w).numpy(),
        x.numpy().T @ (1 - np.tanh(x.numpy() @ w.numpy()) ** 2), rtol=1e-12)

# --- broadcasting sweep and float32 --------------------------------------------------------

_SHAPES = [(), (3,), (2, 1), (1, 3), (2, 3)]


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "power", "maximum",
                                "arctan2"])
@pytest.mark.parametrize("shape_x", _SHAPES, ids=str)
@pytest.mark.parametrize("shape_y", [(), (2, 1), (2, 3)], ids=str)
def test_binary_broadcasting_sweep(op, shape_x, shape_y):
    rng = np.random.default_rng(len(shape_x) * 10 + len(shape_y))
    x = t64(rng.uniform(0.5, 2.0, shape_x))
    if op == "divide":
        y = t64(rng.uniform(0.5, 2.0, shape_y))
    elif op == "maximum":  # far from x (no ties), some above and some below
        y = t64(rng.uniform(2.5, 3.0, shape_y) * rng.choice([-1, 1], shape_y))
    else:
        y = t64(rng.uniform(-1.0, 1.0, shape_y))
    check_grads(getattr(fnp, op), (x, y), order=2)


F32_UNARY = ["exp", "log", "sin", "cos", "tanh", "sqrt", "arctan", "square", "expm1", "log1p"]


@pytest.mark.parametrize("name", F32_UNARY)
def test_unary_float32(name):
    fn = getattr(fnp, name)
    x = fg.tensor(np.random.default_rng(3).uniform(0.5, 1.5, (3,)).astype(np.float32))
    check_grads(fn, (x,), order=1)
    assert fg.grad(lambda x: fn(x).sum())(x).dtype == fg.float32
    assert fg.jvp(fn, (x,), (fg.ones_like(x),))[1].dtype == fg.float32


def test_hessian_has_aux_and_namedtuple_args():
    import collections

    x = t64([0.5, 1.5])
    h, aux = fg.hessian(lambda x: ((x ** 3).sum(), x * 2), has_aux=True)(x)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * x.numpy()))
    np.testing.assert_allclose(aux.numpy(), 2 * x.numpy())
    Pair = collections.namedtuple("Pair", "a b")
    g = fg.grad(lambda p: p.a.sum() * p.b)(Pair(x, t64(3.0)))
    assert isinstance(g, Pair)
    np.testing.assert_allclose(g.a.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(g.b.numpy(), 2.0)


def test_linearize_with_aux_as_jax():
    x = t64(0.5)
    y, f_jvp, aux = fg.linearize(lambda x: (fnp.sin(x), {"c": fnp.cos(x)}), x, has_aux=True)
    np.testing.assert_allclose(float(y), np.sin(0.5))
    np.testing.assert_allclose(float(f_jvp(t64(2.0))), 2 * np.cos(0.5))
    np.testing.assert_allclose(float(aux["c"]), np.cos(0.5))


@pytest.mark.parametrize("argnums", ["x", (0, 1.0), 1.0])
def test_argnums_of_the_wrong_type_name_the_expected_type(argnums):
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        fg.grad(lambda x: x.sum(), argnums=argnums)(fg.ones(2))
