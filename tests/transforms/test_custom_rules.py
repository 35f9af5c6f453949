"""stop_gradient, custom_jvp, custom_vjp, checkpoint, debug.print and debug_nans."""

import functools

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.test_util import check_grads


def f64(*values):
    return fg.tensor(np.array(values, dtype=np.float64))


@fg.custom_jvp
def log1pexp(x):
    return fnp.log1p(fnp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t / (1 + fnp.exp(-x))


@fg.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (fnp.clip(g, -1.0, 1.0),))


def test_stop_gradient_blocks_derivative():
    assert float(fg.grad(lambda x: x * fg.stop_gradient(x))(3.0)) == 3.0
    tree = fg.stop_gradient({"a": fg.tensor(1.0), "b": fg.tensor([1, 2])})
    assert set(tree) == {"a", "b"}
    assert float(fg.jacfwd(lambda x: fg.stop_gradient(x * 2))(2.0)) == 0.0


def test_custom_jvp_rule_is_used_and_stable():
    # the naive derivative overflows to nan at 1000; the rule gives 1
    assert float(fg.grad(log1pexp)(fg.tensor(1000.0, dtype=fg.float64))) == pytest.approx(1.0)
    check_grads(log1pexp, (f64(-1.0, 0.0, 2.0),), order=2)


def test_custom_jvp_under_vmap_and_jit_like_tracing():
    out = fg.vmap(fg.grad(log1pexp))(f64(0.0, 1000.0))
    np.testing.assert_allclose(np.asarray(out), [0.5, 1.0])
    out = fg.grad(lambda x: fg.vmap(log1pexp)(x).sum())(f64(0.0, 1000.0))
    np.testing.assert_allclose(np.asarray(out), [0.5, 1.0])
    assert "custom_jvp_call" in str(fg.make_ir(log1pexp)(f64(1.0)))


def test_custom_jvp_nondiff_argnums():
    @functools.partial(fg.custom_jvp, nondiff_argnums=(0,))
    def scale(n, x):
        return x * n

    @scale.defjvp
    def _scale_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return scale(n, x), t * n * 10  # deliberately not the true derivative

    assert float(fg.grad(lambda x: scale(3.0, x))(fg.tensor(1.0))) == pytest.approx(30.0)


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_differentiating_a_nondiff_argument_names_it(kind):
    # was a LeakedTracerError blaming a global or a closure
    rule = functools.partial(getattr(fg, kind), nondiff_argnums=(1,))
    f = rule(lambda x, s: fnp.sin(x) * s)
    if kind == "custom_jvp":
        f.defjvp(lambda s, p, t: (f(p[0], s), fnp.cos(p[0]) * s * t[0]))
    else:
        f.defvjp(lambda x, s: (f(x, s), x), lambda s, x, g: (g * fnp.cos(x) * s,))
    with pytest.raises(TypeError, match="argument 1 is in nondiff_argnums but depends on a "
                       "value being differentiated"):
        fg.grad(lambda s: f(fg.tensor(1.0), s))(fg.tensor(2.0))
    x = fg.tensor(1.0)  # the other argument is differentiated as before
    assert float(fg.grad(f)(x, fg.tensor(2.0))) == pytest.approx(2 * np.cos(1.0))


def test_a_custom_vjp_fwd_not_returning_a_pair_is_named():
    f = fg.custom_vjp(fnp.sin)
    f.defvjp(lambda x: f(x), lambda r, g: (g,))
    with pytest.raises(TypeError, match="fwd must return a pair \\(output, residuals\\)"):
        fg.grad(f)(fg.tensor(1.0))


def test_custom_vjp_bwd_is_used():
    g = fg.grad(lambda x: (clip_gradient(x) * 5).sum())(f64(1.0, 2.0))
    np.testing.assert_allclose(np.asarray(g), [1.0, 1.0])
    g = fg.vmap(fg.grad(lambda x: clip_gradient(x) * 5))(f64(1.0, 2.0))
    np.testing.assert_allclose(np.asarray(g), [1.0, 1.0])
    g = fg.grad(lambda x: fg.vmap(clip_gradient)(x * 5).sum())(f64(1.0, 2.0))
    np.testing.assert_allclose(np.asarray(g), [5.0, 5.0])


def test_custom_vjp_with_residuals_matches_true_gradient():
    @fg.custom_vjp
    def sin_twice(x):
        return fnp.sin(fnp.sin(x))

    def fwd(x):
        return sin_twice(x), (x, fnp.sin(x))

    def bwd(res, g):
        x, sx = res
        return (g * fnp.cos(sx) * fnp.cos(x),)

    sin_twice.defvjp(fwd, bwd)
    check_grads(sin_twice, (f64(0.3, 1.2),), order=1, modes=("rev",))


def test_custom_vjp_forward_mode_is_a_clear_error():
    with pytest.raises(TypeError, match="forward-mode"):
        fg.jvp(clip_gradient, (f64(1.0),), (f64(1.0),))


def test_checkpoint_matches_plain_gradients_and_recomputes():
    plain = lambda x: fnp.sin(fnp.sin(x)).sum()
    remat = fg.checkpoint(plain)
    x = f64(0.5, 1.0)
    np.testing.assert_allclose(np.asarray(fg.grad(remat)(x)), np.asarray(fg.grad(plain)(x)))
    check_grads(remat, (x,), order=2)
    ir = str(fg.make_ir(fg.grad(remat))(x))
    # the backward pass recomputes sin(x) instead of saving it
    assert ir.count("= sin a") >= 2


def _two_layers(x, w1, w2):
    h = fnp.tanh(x @ w1)
    return fnp.sin(h @ w2) * h


@pytest.mark.parametrize("policy", ["nothing_saveable", "everything_saveable",
                                    "dots_saveable", "dots_with_no_batch_dims_saveable"])
def test_checkpoint_policies_keep_what_they_name(policy):
    # JAX's policies; was NotImplementedError for any policy
    rng = np.random.default_rng(0)
    x, w1, w2 = (fg.tensor(rng.standard_normal(s)) for s in ((4, 8), (8, 8), (8, 8)))
    block = fg.checkpoint(_two_layers, policy=getattr(fg.checkpoint_policies, policy))
    loss = lambda x, w1, w2: fnp.sum(block(block(x, w1, w2), w1, w2) ** 2)  # noqa: E731
    plain = lambda x, w1, w2: fnp.sum(_two_layers(_two_layers(x, w1, w2), w1, w2) ** 2)  # noqa: E731
    want = fg.grad(plain, argnums=(0, 1, 2))(x, w1, w2)
    for grad in (fg.grad(loss, argnums=(0, 1, 2)), fg.jit(fg.grad(loss, argnums=(0, 1, 2)))):
        for g, w in zip(grad(x, w1, w2), want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10)
    check_grads(lambda x: block(x, w1, w2), (x,), order=2)
    # 4 products forward and 8 backward; the backward pass recomputes the forward 4
    # unless the policy keeps them
    dots = str(fg.make_ir(fg.grad(loss))(x, w1, w2)).count("dot_general")
    assert dots == (12 if policy == "nothing_saveable" else 8)


def test_an_unknown_checkpoint_policy_is_named():
    with pytest.raises(NotImplementedError, match="dots_saveable"):
        fg.checkpoint(_two_layers, policy=lambda *args, **params: True)


def _fori_sin(a, w):
    return fg.fori_loop(0, 3, lambda i, c: fnp.sin(c) * w, a)


def _scan_where(a, w):
    def step(c, x):
        c = fnp.where(c > 0, fnp.sin(c) * w, c * c + x)
        return c, fnp.cos(c) * x

    c, ys = fg.scan(step, a, f64(0.3, -1.0, 2.0, 0.5))
    return c + ys.sum()


def _nested(a, w):
    inner = fg.checkpoint(_fori_sin)
    return fg.checkpoint(lambda b: fnp.cos(inner(b, w)) * b)(a)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("loop", [_fori_sin, _scan_where, _nested],
                         ids=["fori_loop", "scan_where", "nested_checkpoint"])
def test_checkpoint_around_a_loop_matches_plain_gradients(loop, jitted):
    # the checkpoint's transpose recomputes the loop's primal carry; it must not be taken
    # for a linear value ("mul: transpose of a product of two linear values")
    plain = lambda a, w: loop(a, w).sum()
    remat = lambda a, w: fg.checkpoint(loop)(a, w).sum()
    a, w = f64(0.7, -0.3, 1.2), f64(0.5, 1.5, -0.8)
    wrap = fg.jit if jitted else (lambda f: f)
    got = wrap(fg.grad(remat, argnums=(0, 1)))(a, w)
    want = fg.grad(plain, argnums=(0, 1))(a, w)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12, atol=1e-12)
    if not jitted:
        check_grads(remat, (a, w), order=2)


def test_checkpoint_around_a_loop_recomputes_it_in_the_backward_pass():
    remat = lambda a: fg.checkpoint(lambda b: fg.fori_loop(0, 3, lambda i, c: fnp.sin(c), b))(
        a).sum()
    ir = str(fg.make_ir(fg.grad(remat))(f64(0.7, -0.3)))
    # the forward loop, its recomputation, and the transposed loop
    assert ir.count("scan[") == 3


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_checkpoint_around_a_while_loop_in_forward_mode(jitted):
    def loop(a):
        return fg.while_loop(lambda c: c[1] < 3, lambda c: (fnp.sin(c[0]) * 1.5, c[1] + 1),
                             (a, 0))[0]

    a, t = f64(0.7, -0.3, 1.2), f64(0.5, 1.5, -0.8)
    push = lambda f: lambda a, t: fg.jvp(f, (a,), (t,))  # noqa: E731
    wrap = fg.jit if jitted else (lambda f: f)
    got = wrap(push(fg.checkpoint(loop)))(a, t)
    want = push(loop)(a, t)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12, atol=1e-12)
    if jitted:
        return
    check_grads(fg.checkpoint(loop), (a,), order=2, modes=("fwd",))
    # reverse mode stays the while_loop's own clear error
    with pytest.raises(TypeError, match="trip count"):
        fg.grad(lambda a: fg.checkpoint(loop)(a).sum())(a)


def test_debug_print_everywhere(capsys):
    fg.debug.print("x={x}", x=fg.tensor([1.0, 2.0]))
    fg.vmap(lambda v: fg.debug.print("lane {}", v))(fg.tensor([1.0, 2.0]))
    fg.grad(lambda v: (fg.debug.print("in grad {}", v), v * 2)[1])(fg.tensor(3.0))
    out = capsys.readouterr().out.splitlines()
    assert out == ["x=[1. 2.]", "lane 1.0", "lane 2.0", "in grad 3.0"]


def test_debug_nans_names_the_primitive():
    fg.config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="'log'"):
            fnp.log(fg.tensor(-1.0))
        with pytest.raises(FloatingPointError, match="'sqrt'"):
            fg.grad(lambda x: fnp.sqrt(x - 2.0))(fg.tensor(1.0))
    finally:
        fg.config.update("debug_nans", False)
    assert np.isnan(float(fnp.log(fg.tensor(-1.0))))



@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_debug_nans_sees_half_precision(dtype, jitted):
    # bfloat16 is NumPy kind 'V', not 'f': a kind check let its NaNs through
    x = fg.tensor([-1.0, 4.0]).astype(getattr(fnp, dtype))
    f = fg.jit(fnp.sqrt) if jitted else fnp.sqrt
    fg.config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="'sqrt'"):
            f(x)
    finally:
        fg.config.update("debug_nans", False)

def test_debug_nans_inside_jit_names_the_primitive():
    # the compiled result is checked; on a NaN the program reruns op by op (as JAX)
    fg.config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="'log'"):
            fg.jit(fnp.log)(fg.tensor([1.0, -1.0]))
        with pytest.raises(FloatingPointError, match="'sqrt'"):
            fg.jit(fg.grad(lambda a: fnp.sqrt(a - 1.0).sum()))(fg.tensor([1.0, -1.0]))
        assert fg.jit(lambda a: a * 2)(fg.tensor([1.0])).tolist() == [2.0]
    finally:
        fg.config.update("debug_nans", False)
    assert np.isnan(fg.jit(fnp.log)(fg.tensor([-1.0])).numpy()).all()


@pytest.mark.parametrize("wrap", [lambda f: f, fg.jit], ids=["eager", "jit"])
def test_debug_print_under_nested_vmap_prints_every_element_as_jax(capsys, wrap):
    def show(x, y):
        fg.debug.print("x={x} y={y}", x=x, y=y)
        return x

    grid = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    wrap(fg.vmap(fg.vmap(show)))(grid, grid * 10)
    # y batched by the outer vmap only, then by the inner one only
    wrap(fg.vmap(fg.vmap(show, in_axes=(0, None))))(grid, fg.tensor([7.0, 8.0]))
    wrap(fg.vmap(fg.vmap(show), in_axes=(0, None)))(grid, fg.tensor([7.0, 8.0]))
    assert capsys.readouterr().out.split("\n")[:-1] == [
        "x=1.0 y=10.0", "x=2.0 y=20.0", "x=3.0 y=30.0", "x=4.0 y=40.0",
        "x=1.0 y=7.0", "x=2.0 y=7.0", "x=3.0 y=8.0", "x=4.0 y=8.0",
        "x=1.0 y=7.0", "x=2.0 y=8.0", "x=3.0 y=7.0", "x=4.0 y=8.0"]


def test_debug_print_formats_float32_scalars_shortest(capsys):
    fg.debug.print("s={s} t={s:.2f}", s=fg.tensor(1.3))
    fg.jit(lambda s: fg.debug.print("jit s={s}", s=s))(fg.tensor(1.3))
    out = capsys.readouterr().out
    assert "s=1.3 t=1.30" in out and "jit s=1.3\n" in out


def test_checkpoint_and_make_ir_take_static_argnums():
    def repeated_sin(x, n):
        for _ in range(n):
            x = fnp.sin(x)
        return x

    ir = fg.make_ir(repeated_sin, static_argnums=1)(fg.tensor(1.0), 3)
    assert str(ir).count("sin") == 3
    got = fg.grad(fg.checkpoint(repeated_sin, static_argnums=(1,)))(fg.tensor(1.0), 2)
    want = fg.grad(lambda x: repeated_sin(x, 2))(fg.tensor(1.0))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(ValueError, match=r"static_argnums \[3\] out of range .* 2 positional"):
        fg.grad(fg.checkpoint(repeated_sin, static_argnums=(3,)))(fg.tensor(1.0), 2)


def test_custom_vjp_bwd_may_return_a_list():
    @fg.custom_vjp
    def scaled(a, b):
        return a * b

    scaled.defvjp(lambda a, b: (scaled(a, b), (a, b)), lambda res, g: [g * res[1], g * res[0]])
    got = fg.grad(lambda a, b: scaled(a, b).sum(), argnums=(0, 1))(fg.tensor([1.0, 2.0]),
                                                                   fg.tensor([3.0, 5.0]))
    np.testing.assert_allclose(got[0], [3.0, 5.0])
    np.testing.assert_allclose(got[1], [1.0, 2.0])


def test_custom_vjp_bwd_may_give_none_for_single_leaves():
    @fg.custom_vjp
    def f(p):
        return p["a"] * p["b"]

    f.defvjp(lambda p: (f(p), p), lambda p, g: ({"a": g * p["b"], "b": None},))
    params = {"a": fg.ones(3), "b": fg.full((3,), 2.0)}
    for grad in (fg.grad(lambda p: f(p).sum()), fg.jit(fg.grad(lambda p: f(p).sum()))):
        g = grad(params)
        np.testing.assert_array_equal(g["a"].numpy(), [2.0, 2.0, 2.0])
        np.testing.assert_array_equal(g["b"].numpy(), [0.0, 0.0, 0.0])


def _with_jvp_rule(rule):
    @fg.custom_jvp
    def double(a):
        return a * 2

    double.defjvp(lambda p, t: rule(double, p[0], t[0]))
    return double


@pytest.mark.parametrize("rule, match", [
    (lambda f, a, t: (f(a), t[:2]), r"tangent output has shape \(2,\).*primal output has "
                                    r"shape \(3,\)"),
    (lambda f, a, t: (f(a), t.astype(fg.float16)), r"tangent output .*dtype float16.*"
                                                   r"primal output .*dtype float32"),
    (lambda f, a, t: (f(a)[:2], t[:2]), r"primal output has shape \(2,\).*the function's "
                                        r"output has shape \(3,\)"),
    (lambda f, a, t: (f(a).astype(fg.float16), t), r"primal output .*dtype float16.*the "
                                                   r"function's output .*dtype float32"),
], ids=["tangent-shape", "tangent-dtype", "primal-shape", "primal-dtype"])
def test_custom_jvp_rule_outputs_must_match_the_function(rule, match):
    # JAX raises TypeError; these used to give silently wrong derivatives
    double = _with_jvp_rule(rule)
    x = fg.tensor([0.5, 1.5, -0.3])
    with pytest.raises(TypeError, match="custom_jvp function double: .*" + match):
        fg.grad(lambda a: double(a).sum())(x)
    with pytest.raises(TypeError, match=match):
        fg.jvp(double, (x,), (x,))
    with pytest.raises(TypeError, match=match):
        fg.vmap(fg.grad(lambda a: double(a).sum()))(fg.ones((2, 3)))


def test_custom_jvp_rule_error_names_the_pytree_output():
    @fg.custom_jvp
    def pair(a):
        return {"u": a, "v": a * 2}

    pair.defjvp(lambda p, t: (pair(p[0]), {"u": t[0], "v": t[0][:1]}))
    with pytest.raises(TypeError, match=r"tangent output\['v'\] has shape \(1,\)"):
        fg.jvp(pair, (fg.ones(3),), (fg.ones(3),))


def test_custom_vjp_bwd_cotangent_shape_is_checked():
    @fg.custom_vjp
    def double(a):
        return a * 2

    double.defvjp(lambda a: (double(a), None), lambda _, g: (g[:2],))
    x = fg.tensor([0.5, 1.5, -0.3])
    match = (r"custom_vjp function double: bwd output\[0\] has shape \(2,\) and dtype float32.*"
             r"argument 0, which has shape \(3,\) and dtype float32")
    with pytest.raises(ValueError, match=match):
        fg.grad(lambda a: double(a).sum())(x)
    with pytest.raises(ValueError, match=match):
        fg.jacrev(double)(x)


def test_custom_vjp_bwd_error_names_the_argument_and_leaf():
    @functools.partial(fg.custom_vjp, nondiff_argnums=(0,))
    def scaled(n, p):
        return p["w"] * n

    scaled.defvjp(lambda n, p: (scaled(n, p), None),
                  lambda n, _, g: ({"w": g.sum()},))
    with pytest.raises(ValueError, match=r"bwd output\[0\]\['w'\] has shape \(\).*argument 1, "
                                         r"which has shape \(3,\)"):
        fg.grad(lambda p: scaled(2.0, p).sum())({"w": fg.ones(3)})


def test_custom_vjp_bwd_may_return_another_float_dtype_as_jax():
    @fg.custom_vjp
    def double(a):
        return a * 2

    double.defvjp(lambda a: (double(a), None), lambda _, g: ((g * 2).astype(fg.float16),))
    g = fg.grad(lambda a: double(a).sum())(fg.ones(3))
    np.testing.assert_array_equal(np.asarray(g, dtype=np.float32), [2.0, 2.0, 2.0])


def test_custom_jvp_binds_defaults_and_keywords_as_jax():
    @fg.custom_jvp
    def scale(a, factor=2.0):
        return a * factor

    @scale.defjvp
    def _scale_jvp(primals, tangents):
        assert len(primals) == 2  # the default is a primal, as in JAX
        return scale(*primals), tangents[0] * primals[1]

    x = fg.tensor([0.5, 1.5, -0.3])
    np.testing.assert_array_equal(fg.grad(lambda a: scale(a).sum())(x).numpy(), [2.0] * 3)
    np.testing.assert_array_equal(fg.grad(lambda a: scale(a, factor=3.0).sum())(x).numpy(),
                                  [3.0] * 3)
    np.testing.assert_array_equal(fg.grad(lambda a: scale(a=a, factor=3.0).sum())(x).numpy(),
                                  [3.0] * 3)


def test_custom_vjp_binds_defaults_and_keywords_as_jax():
    @fg.custom_vjp
    def scale(a, factor=2.0):
        return a * factor

    scale.defvjp(lambda a, factor: (scale(a, factor), factor), lambda f, g: (g * f, None))
    x = fg.tensor([0.5, 1.5, -0.3])
    np.testing.assert_array_equal(fg.grad(lambda a: scale(a).sum())(x).numpy(), [2.0] * 3)
    np.testing.assert_array_equal(fg.grad(lambda a: scale(a, factor=3.0).sum())(x).numpy(),
                                  [3.0] * 3)

    @functools.partial(fg.custom_vjp, nondiff_argnums=(0,))
    def power(n, a, offset=1.0):
        return (a + offset) ** n

    power.defvjp(lambda n, a, offset: (power(n, a, offset), a + offset),
                 lambda n, base, g: (g * n * base ** (n - 1), None))
    np.testing.assert_allclose(fg.grad(lambda a: power(2, a).sum())(x).numpy(),
                               [3.0, 5.0, 1.4], rtol=1e-6)


def test_custom_jvp_keyword_only_arguments_are_a_clear_error():
    @fg.custom_jvp
    def scale(a, *, factor=2.0):
        return a * factor

    scale.defjvp(lambda p, t: (scale(*p), t[0]))
    with pytest.raises(TypeError, match=r"scale: keyword-only arguments \['factor'\]"):
        fg.grad(lambda a: scale(a, factor=3.0).sum())(fg.ones(3))


def test_make_ir_traces_array_keyword_arguments_as_inputs():
    """As make_jaxpr: an array passed by keyword is an input, not a baked-in constant; a
    keyword holding no array is passed as it is."""
    x = fg.tensor([1.0, 2.0])
    ir = fg.make_ir(lambda a, b, mode="mul": a * b if mode == "mul" else a + b)(x, b=x,
                                                                                mode="add")
    assert len(ir.in_vars) == 2 and not ir.consts
    assert [e.prim.name for e in ir.equations] == ["add"]


def test_defjvps_with_pytree_outputs():
    # the terms were added with + (TypeError for dicts), and rules all None gave one zero
    x = fg.tensor(np.array([0.1, 0.2, 0.3]))

    @fg.custom_jvp
    def q(a, b):
        return {"s": a * b, "d": a - b}

    q.defjvps(lambda t, ans, a, b: {"s": t * b * 5.0, "d": t},
              lambda t, ans, a, b: {"s": t * a, "d": -t * 3.0})
    _, tangent = fg.jvp(q, (x, x + 1), (fg.ones_like(x), 2 * fg.ones_like(x)))
    np.testing.assert_allclose(tangent["s"].numpy(), 5 * (x.numpy() + 1) + 2 * x.numpy())
    np.testing.assert_allclose(tangent["d"].numpy(), [-5.0] * 3)

    @fg.custom_jvp
    def r(a, b):
        return (a * b, a)

    r.defjvps(None, None)
    _, (t0, t1) = fg.jvp(r, (x, x + 1), (x, x))
    assert t0.tolist() == [0.0] * 3 and t1.tolist() == [0.0] * 3
