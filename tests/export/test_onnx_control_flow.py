"""cond/switch, while_loop, fori_loop and scan exported as ONNX If and Loop; calls inlined."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.export.testing import check_onnx

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

rng = np.random.default_rng(0)


def normal(*shape):
    return fg.tensor(rng.normal(size=shape).astype(np.float32))


@pytest.mark.parametrize("flag", [True, False])
def test_cond(flag):
    w = normal(3)  # captured by a branch

    def f(p, x):
        return fg.cond(p, lambda x: (fnp.sin(x) * w, x.sum()), lambda x: (x - 1, x.max()), x)

    check_onnx(f, fg.tensor(flag), normal(3))


@pytest.mark.parametrize("index", [-1, 0, 1, 2, 5])
def test_switch_clamps_index(index):
    branches = [lambda x: x + 1, lambda x: x * 2, lambda x: -x]
    check_onnx(lambda i, x: fg.switch(i, branches, x), fg.tensor(np.int32(index)), normal(4))


def test_cond_on_a_computed_predicate():
    check_onnx(lambda x: fg.cond(x.sum() > 0, lambda v: v * 2, lambda v: v / 2, x), normal(5))


def test_while_loop():
    def collatz_steps(n):
        def body(state):
            n, steps = state
            n = fnp.where(n % 2 == 0, n // 2, 3 * n + 1)
            return n, steps + 1

        return fg.while_loop(lambda s: s[0] != 1, body, (n, fg.tensor(np.int32(0))))

    for n in (1, 6, 27):
        check_onnx(collatz_steps, fg.tensor(np.int32(n)))


def test_while_loop_with_captured_values():
    limit = fg.tensor(np.float32(10.0))
    check_onnx(lambda x: fg.while_loop(lambda v: v.sum() < limit, lambda v: v * 1.5 + 0.1, x),
               fg.tensor(np.array([0.5, 0.25], np.float32)))


def test_fori_loop():
    check_onnx(lambda x: fg.fori_loop(0, 5, lambda i, v: v * 2 + i, x), normal(3))
    check_onnx(lambda n, x: fg.fori_loop(0, n, lambda i, v: v + i.astype(v.dtype), x),
               fg.tensor(np.int32(4)), normal(3))


@pytest.mark.parametrize("reverse", [False, True])
def test_scan(reverse):
    def f(init, xs, ys):
        def step(carry, x):
            a, b = carry
            return (a + x["u"] * b, b * 0.9), {"cum": a, "both": x["u"] + x["v"]}

        return fg.scan(step, init, {"u": xs, "v": ys}, reverse=reverse)

    check_onnx(f, (normal(2), normal(2)), normal(6, 2), normal(6, 2), rtol=1e-5)


def test_scan_with_length_only_and_empty():
    check_onnx(lambda c: fg.scan(lambda c, _: (c * 2, c), c, None, length=4), normal(2))
    check_onnx(lambda c, xs: fg.scan(lambda c, x: (c + x, c), c, xs), normal(2),
               fg.zeros((0, 2)))


def test_nested_control_flow():
    def f(xs):
        def step(c, x):
            c = fg.cond(x.sum() > 0, lambda c: c + x, lambda c: c - x, c)
            c = fg.while_loop(lambda v: fnp.abs(v).max() > 4.0, lambda v: v / 2, c)
            return c, c.sum()

        return fg.scan(step, fg.zeros(3), xs)

    check_onnx(f, normal(5, 3) * 3, rtol=1e-5)


def test_calls_are_inlined():
    @fg.custom_jvp
    def softplus(x):
        return fnp.log1p(fnp.exp(x))

    @softplus.defjvp
    def _softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t / (1 + fnp.exp(-x))

    @fg.custom_vjp
    def clip_grad(x):
        return x * 1.0

    clip_grad.defvjp(lambda x: (x * 1.0, None), lambda _, g: (fnp.clip(g, -1, 1),))
    inner = fg.jit(lambda x: fnp.cos(x) * 3)
    remat = fg.checkpoint(lambda x: fnp.sin(fnp.sin(x)))

    def f(x):
        return softplus(x) + clip_grad(x) + inner(x) + remat(x) + fg.stop_gradient(x)

    check_onnx(f, normal(4), rtol=1e-5)
    # the gradient uses the custom rules, traced before export
    check_onnx(fg.grad(lambda x: f(x).sum()), normal(4), rtol=1e-5)


def test_jit_inside_vmap():
    f = fg.vmap(fg.jit(lambda x, w: fnp.tanh(x @ w)), in_axes=(0, None))
    check_onnx(f, normal(3, 2, 4), normal(4, 5), rtol=1e-5)
