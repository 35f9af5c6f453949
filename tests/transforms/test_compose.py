"""Transformations composed: grad(grad), grad(vmap), vmap(grad), jacfwd(jacrev), vmap(vmap),
vmap(jvp), jvp(grad), closures over outer tracers (perturbation confusion), and
per-example gradients of a small MLP.
"""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.test_util import check_grads


def t64(x):
    return fg.tensor(np.asarray(x, dtype=np.float64))


def rand(*shape, seed=0):
    return t64(np.random.default_rng(seed).standard_normal(shape))


def close(got, want, **kw):
    np.testing.assert_allclose(np.asarray(got.numpy() if hasattr(got, "numpy") else got),
                               np.asarray(want.numpy() if hasattr(want, "numpy") else want),
                               rtol=1e-10, atol=1e-12, **kw)


# --- grad of grad --------------------------------------------------------------------------


def test_grad_grad_scalar():
    f = lambda x: fnp.sin(x) * x ** 2
    x = t64(0.7)
    xn = 0.7
    close(fg.grad(f)(x), np.cos(xn) * xn ** 2 + 2 * xn * np.sin(xn))
    close(fg.grad(fg.grad(f))(x), -np.sin(xn) * xn ** 2 + 4 * xn * np.cos(xn) + 2 * np.sin(xn))
    third = fg.grad(fg.grad(fg.grad(f)))(x)
    want = (-np.cos(xn) * xn ** 2 - 2 * xn * np.sin(xn) + 4 * np.cos(xn) - 4 * xn * np.sin(xn)
            + 2 * np.cos(xn))
    close(third, want)


def test_grad_grad_of_exp_chain():
    # d^n/dx^n exp(2x) = 2^n exp(2x)
    f = lambda x: fnp.exp(2 * x)
    x = t64(0.3)
    g = f
    for n in range(1, 5):
        g = fg.grad(g)
        close(g(x), 2 ** n * np.exp(0.6))


def test_check_grads_of_grad():
    f = lambda x: (fnp.tanh(x) * fnp.exp(-x * x)).sum()
    check_grads(fg.grad(f), (rand(3),), order=2)


# --- grad and vmap ------------------------------------------------------------------------


def test_grad_of_vmap():
    x = rand(4)
    f = lambda x: fg.vmap(lambda s: fnp.sin(s) * s)(x).sum()
    close(fg.grad(f)(x), np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy()))


def test_grad_of_vmap_matmul_over_unbatched_weights():
    w = rand(3, 2)
    xs = rand(5, 3, seed=1)

    def loss(w):
        return fg.vmap(lambda x: fnp.tanh(x @ w).sum())(xs).sum()

    want = xs.numpy().T @ (1 - np.tanh(xs.numpy() @ w.numpy()) ** 2)
    close(fg.grad(loss)(w), want)
    check_grads(loss, (w,), order=2)


def test_vmap_of_grad():
    x = rand(5)
    got = fg.vmap(fg.grad(lambda s: fnp.sin(s) * s))(x)
    close(got, np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy()))


def test_vmap_of_grad_in_axes_1():
    x = rand(2, 4)
    got = fg.vmap(fg.grad(lambda v: (v ** 3).sum()), in_axes=1, out_axes=1)(x)
    close(got, 3 * x.numpy() ** 2)


def test_vmap_of_grad_of_vmap():
    x = rand(3, 4)
    inner = lambda row: fg.vmap(lambda s: s ** 3)(row).sum()
    close(fg.vmap(fg.grad(inner))(x), 3 * x.numpy() ** 2)


def test_vmap_of_value_and_grad_with_aux():
    x = rand(4, 2)

    def f(v):
        return (v ** 2).sum(), v.max()

    (values, aux), grads = fg.vmap(fg.value_and_grad(f, has_aux=True))(x)
    close(values, (x.numpy() ** 2).sum(1))
    close(aux, x.numpy().max(1))
    close(grads, 2 * x.numpy())


def test_vmap_of_hessian():
    x = rand(3, 2)
    got = fg.vmap(fg.hessian(lambda v: (v ** 3).sum() + v[0] * v[1]))(x)
    want = np.stack([np.diag(6 * r) + np.array([[0, 1], [1, 0]]) for r in x.numpy()])
    close(got, want)


# --- Jacobian compositions ----------------------------------------------------------------


def test_jacfwd_of_jacrev_and_reverse_orders():
    a = rand(3, 3)

    def f(x):
        return fnp.sin(a @ x).sum() + (x ** 4).sum()

    x = rand(3, seed=2)
    an, xn = a.numpy(), x.numpy()
    want = -(an.T * np.sin(an @ xn)) @ an + np.diag(12 * xn ** 2)
    for h in (fg.jacfwd(fg.jacrev(f)), fg.jacrev(fg.jacfwd(f)), fg.jacfwd(fg.jacfwd(f)),
              fg.jacrev(fg.jacrev(f)), fg.hessian(f), fg.jacfwd(fg.grad(f))):
        close(h(x), want)


def test_jacrev_of_vector_function_of_matrix():
    w = rand(2, 3)
    x = rand(3, seed=1)
    jac = fg.jacrev(lambda w: fnp.exp(w @ x))(w)
    want = np.einsum("i,ij,k->ijk", np.exp(w.numpy() @ x.numpy()), np.eye(2), x.numpy())
    close(jac, want)
    close(fg.jacfwd(lambda w: fnp.exp(w @ x))(w), want)


def test_third_derivative_via_jacobians():
    f = lambda x: (x ** 4).sum()
    x = t64([1.0, 2.0])
    third = fg.jacfwd(fg.jacrev(fg.grad(f)))(x)
    want = np.zeros((2, 2, 2))
    want[0, 0, 0], want[1, 1, 1] = 24 * 1.0, 24 * 2.0
    close(third, want)


# --- vmap of vmap, vmap of jvp, jvp of grad --------------------------------------------------


def test_vmap_vmap_pairwise_distances():
    xs, ys = rand(3, 2), rand(4, 2, seed=1)
    dist = lambda a, b: fnp.sqrt(((a - b) ** 2).sum())
    got = fg.vmap(fg.vmap(dist, in_axes=(None, 0)), in_axes=(0, None))(xs, ys)
    want = np.sqrt(((xs.numpy()[:, None] - ys.numpy()[None]) ** 2).sum(-1))
    close(got, want)


def test_vmap_of_jvp_gives_jacobian_columns():
    x = rand(3)
    f = lambda v: fnp.sin(v) * v.sum()
    push = lambda tangent: fg.jvp(f, (x,), (tangent,))[1]
    cols = fg.vmap(push)(t64(np.eye(3)))
    close(cols.T, fg.jacfwd(f)(x))


def test_vmap_of_jvp_batched_primals_and_tangents():
    xs, ts = rand(4, 2), rand(4, 2, seed=1)
    out, tangents = fg.vmap(lambda x, v: fg.jvp(fnp.exp, (x,), (v,)))(xs, ts)
    close(out, np.exp(xs.numpy()))
    close(tangents, np.exp(xs.numpy()) * ts.numpy())


def test_jvp_of_grad_is_hessian_vector_product():
    a = rand(3, 3)
    f = lambda x: (fnp.tanh(a @ x) ** 2).sum()
    x, v = rand(3, seed=1), rand(3, seed=2)
    _, hvp = fg.jvp(fg.grad(f), (x,), (v,))
    close(hvp, fg.hessian(f)(x).numpy() @ v.numpy())


def test_grad_of_jvp():
    f = lambda x: fnp.sin(x).sum()
    x, v = rand(3), rand(3, seed=1)
    g = fg.grad(lambda x: fg.jvp(f, (x,), (v,))[1])(x)
    close(g, -np.sin(x.numpy()) * v.numpy())


def test_linearize_under_vmap_and_grad():
    xs = rand(3, 2)
    got = fg.vmap(lambda x: fg.linearize(fnp.sin, x)[1](fg.ones_like(x)))(xs)
    close(got, np.cos(xs.numpy()))
    g = fg.grad(lambda x: fg.linearize(lambda y: y ** 3, x)[1](t64(1.0)))(t64(2.0))
    close(g, 12.0)


# --- perturbation confusion (closures over outer tracers) -----------------------------------


def test_perturbation_confusion_grad():
    # d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x; confusing the perturbations gives 2x + 1...
    def f(x):
        return x * fg.grad(lambda y: x * y)(t64(3.0))

    close(fg.grad(f)(t64(2.0)), 4.0)


def test_perturbation_confusion_jvp():
    # Siskind & Pearlmutter: d/dx [x * (d/dy (x + y))|_{y=1}] at x=1 is 1 (not 2)
    def outer(x):
        inner = lambda y: x + y
        return x * fg.jvp(inner, (t64(1.0),), (t64(1.0),))[1]

    _, tangent = fg.jvp(outer, (t64(1.0),), (t64(1.0),))
    close(tangent, 1.0)


def test_nested_grad_closure_uses_outer_value():
    # d/dx grad_y (sin(x * y)) at y = x: d/dx [x cos(x^2)] = cos(x^2) - 2 x^2 sin(x^2)
    def f(x):
        return fg.grad(lambda y: fnp.sin(x * y))(x)

    xn = 0.9
    close(fg.grad(f)(t64(xn)), np.cos(xn ** 2) - 2 * xn ** 2 * np.sin(xn ** 2))


def test_closure_over_outer_tracer_in_vmap_inside_grad():
    def f(w):
        return fg.vmap(lambda x: fnp.sin(w * x))(t64([1.0, 2.0])).sum()

    w = 0.4
    close(fg.grad(f)(t64(w)), 1.0 * np.cos(w) + 2.0 * np.cos(2 * w))


def test_grad_inside_vmap_closing_over_batched_value():
    xs = t64([0.5, 1.0, 1.5])
    got = fg.vmap(lambda x: fg.grad(lambda y: x * y ** 2)(x))(xs)
    close(got, 2 * xs.numpy() ** 2)


def test_vmap_inside_grad_closing_over_both():
    def f(x):
        return fg.vmap(lambda a: fg.grad(lambda y: a * x * y * y)(x))(t64([1.0, 2.0])).sum()

    # inner grad: 2 a x^2 ; sum over a in {1, 2}: 6 x^2 ; d/dx: 12 x
    close(fg.grad(f)(t64(1.5)), 18.0)


def test_jacfwd_jacrev_closing_over_outer_tracer():
    def f(x):
        return fg.jacrev(lambda y: x * fnp.sin(y))(x).sum()

    x = t64([0.3, 0.8])
    # jacobian is diag(x * cos(x)); sum = sum x cos x; gradient: cos x - x sin x
    close(fg.grad(f)(x), np.cos(x.numpy()) - x.numpy() * np.sin(x.numpy()))


# --- per-example gradients of a small MLP ----------------------------------------------------


def _mlp_params(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "l1": {"w": t64(rng.standard_normal((4, 3)) * 0.5), "b": t64(rng.standard_normal(3))},
        "l2": {"w": t64(rng.standard_normal((3, 2)) * 0.5), "b": t64(rng.standard_normal(2))},
    }


def _mlp_loss(params, x, y):
    h = fnp.tanh(x @ params["l1"]["w"] + params["l1"]["b"])
    logits = h @ params["l2"]["w"] + params["l2"]["b"]
    logp = logits - fnp.logsumexp(logits, axis=-1, keepdims=True)
    return -(logp * y).sum()


def test_per_example_gradients_mlp():
    params = _mlp_params()
    rng = np.random.default_rng(1)
    xs = t64(rng.standard_normal((5, 4)))
    ys = t64(np.eye(2)[rng.integers(0, 2, 5)])
    per_example = fg.vmap(fg.grad(_mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    loop = [fg.grad(_mlp_loss)(params, xs[i], ys[i]) for i in range(5)]
    for path in (("l1", "w"), ("l1", "b"), ("l2", "w"), ("l2", "b")):
        got = per_example[path[0]][path[1]]
        want = np.stack([g[path[0]][path[1]].numpy() for g in loop])
        assert got.shape == (5, *params[path[0]][path[1]].shape)
        close(got, want)
    # and the mean of the per-example gradients is the batch gradient
    batch = fg.grad(lambda p: fg.vmap(_mlp_loss, in_axes=(None, 0, 0))(p, xs, ys).mean())(params)
    close(per_example["l1"]["w"].mean(axis=0), batch["l1"]["w"])


def test_per_example_gradient_norms_clipped_dp_sgd_style():
    params = _mlp_params(3)
    rng = np.random.default_rng(4)
    xs = t64(rng.standard_normal((4, 4)))
    ys = t64(np.eye(2)[rng.integers(0, 2, 4)])

    def clipped(p, x, y):
        g = fg.grad(_mlp_loss)(p, x, y)
        leaves = fg.tree.leaves(g)
        norm = fnp.sqrt(sum((leaf ** 2).sum() for leaf in leaves))
        scale = fnp.minimum(1.0, 0.5 / norm)
        return fg.tree.map(lambda leaf: leaf * scale, g)

    got = fg.vmap(clipped, in_axes=(None, 0, 0))(params, xs, ys)
    for i in range(4):
        want = clipped(params, xs[i], ys[i])
        close(got["l2"]["w"][i], want["l2"]["w"])


@pytest.mark.parametrize("order", ["grad_vmap_grad", "vmap_grad_grad"])
def test_three_level_compositions(order):
    xs = t64([0.2, 0.5, 0.9])
    f = lambda x: fnp.sin(x) ** 2
    if order == "grad_vmap_grad":
        got = fg.grad(lambda v: fg.vmap(fg.grad(f))(v).sum())(xs)
    else:
        got = fg.vmap(fg.grad(fg.grad(f)))(xs)
    close(got, 2 * np.cos(2 * xs.numpy()))


def test_vmap_of_grad_through_pad_with_batched_value():
    xs, vs = rand(3, 2, 2), t64([0.5, 1.0, -1.0])
    f = lambda v, x: (fnp.pad(x, 1, constant_values=v) ** 2).sum()
    got = fg.vmap(fg.grad(f))(vs, xs)
    close(got, 2 * vs.numpy() * 12)  # 16 - 4 padded positions, d/dv v^2 = 2v
    gx = fg.vmap(fg.grad(f, argnums=1))(vs, xs)
    close(gx, 2 * xs.numpy())


def test_vmap_of_grad_through_where_with_batched_scalar_predicate():
    xs = rand(4, 3)
    f = lambda x: fnp.where(x.sum() > 0, x ** 2, -x).sum()
    got = fg.vmap(fg.grad(f))(xs)
    want = np.stack([2 * r if r.sum() > 0 else -np.ones(3) for r in xs.numpy()])
    close(got, want)
