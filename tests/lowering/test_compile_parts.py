"""Large programs compile in parts side by side (funcgrad.lowering.parts) and give the
results of the program compiled in one piece."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.ir import Var
from funcgrad.lowering import parts
from funcgrad.transforms import jit as jit_module


@pytest.fixture
def two_compilers(monkeypatch):
    monkeypatch.setenv("FUNCGRAD_COMPILE_WORKERS", "2")
    monkeypatch.setattr(parts, "MIN_WEIGHT", 4)


def _mlp_step(p, x, y):
    def loss(p):
        h = fnp.maximum(x @ p["w1"] + p["b1"], 0.0)
        z = h @ p["w2"]
        z = z - fnp.max(z, axis=-1, keepdims=True)
        logz = fnp.log(fnp.sum(fnp.exp(z), axis=-1, keepdims=True))
        return -fnp.mean(fnp.sum(y * (z - logz), axis=-1))

    value, grads = fg.value_and_grad(loss)(p)
    return value, {k: p[k] - 0.1 * grads[k] for k in p}, x  # x passes straight through


def _inputs():
    rng = np.random.default_rng(0)
    p = {"w1": rng.standard_normal((6, 5)), "b1": np.zeros(5), "w2": rng.standard_normal((5, 3))}
    x = rng.standard_normal((4, 6))
    y = np.eye(3)[[0, 2, 1, 1]]
    return ({k: fnp.asarray(v) for k, v in p.items()}, fnp.asarray(x), fnp.asarray(y))



def test_a_training_step_compiled_in_parts_gives_the_same_values(two_compilers):
    args = _inputs()
    entry, _ = fg.jit(_mlp_step)._entry(args, {})
    pieces = parts.plan(entry.program, 2)
    assert pieces is not None and len(pieces) == 2
    assert all(parts.weight(piece) > 0 for piece in pieces)
    split = fg.jit(_mlp_step)(*args)
    eager = _mlp_step(*args)
    for got, want in zip(fg.tree.leaves(split), fg.tree.leaves(eager), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    exe = jit_module.executable_for(entry.program)
    assert isinstance(exe, parts.PipelineExecutable) and len(exe.parts) == 2


def test_parts_pass_only_what_later_parts_use():
    def f(x):
        a = fnp.sum(x, axis=0)
        b = fnp.cumsum(x, axis=1)
        c = fnp.sort(b, axis=0)
        return fnp.max(c) + a[0], b, 2.0

    entry, _ = fg.jit(f)._entry((fnp.ones((3, 4)),), {})
    pieces = parts._parts(entry.program, [0, 2, len(entry.program.equations)])
    first, last = pieces
    defined = {v for eqn in first.equations for v in eqn.outputs}
    later = {v for eqn in last.equations for v in eqn.inputs if isinstance(v, Var)}
    later |= {v for v in entry.program.outputs if isinstance(v, Var)}
    assert set(first.outputs) == defined & later
    assert last.outputs == entry.program.outputs


def test_parts_with_loops_conds_and_updates_in_place(two_compilers):
    def f(x, i):
        def body(k, carry):
            return carry.at[k].set(fnp.sin(carry[k]) * 2.0)

        y = fg.fori_loop(0, 3, body, x)
        z = fg.cond(fnp.sum(y) > 0, lambda v: v @ v.T, lambda v: -(v @ v.T), y)
        s = fnp.sort(z, axis=1)
        return fnp.cumsum(s, axis=0)[i], fnp.argmax(z, axis=0), x

    x = fnp.asarray(np.arange(12.0).reshape(3, 4) / 7)
    before = np.asarray(x).copy()
    jitted = fg.jit(f)
    got = jitted(x, 1)
    entry, _ = jitted._entry((x, 1), {})
    assert isinstance(jit_module.executable_for(entry.program), parts.PipelineExecutable)
    want = f(x, 1)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_array_equal(x, before)  # the input stays intact


def test_light_programs_and_one_worker_compile_in_one_piece(monkeypatch):
    entry, _ = fg.jit(lambda x: fnp.sum(x * 2))._entry((fnp.ones(3),), {})
    assert parts.plan(entry.program, 4) is None
    args = _inputs()
    entry, _ = fg.jit(_mlp_step)._entry(args, {})
    assert parts.plan(entry.program, 1) is None
    monkeypatch.setenv("FUNCGRAD_COMPILE_WORKERS", "many")
    with pytest.raises(ValueError, match="FUNCGRAD_COMPILE_WORKERS"):
        jit_module._compile_workers()
