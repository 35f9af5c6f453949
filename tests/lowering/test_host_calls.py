"""Host calls: compiled CPU programs run matrix decompositions by LAPACK (as XLA does).

Checked: the lowering (an import per call site, recorded in the module's reflection), that
results equal the eager ones exactly (the same implementation runs), inside loops, under
grad and vmap, in programs run asynchronously on the worker threads, from the disk cache
in a new process, and that a failing host kernel raises instead of hanging the caller.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive, registry
from funcgrad.lowering import host_calls
from funcgrad.transforms import jit as jit_module
from funcgrad.transforms.control_flow import fori_loop, scan


def _spd(n, seed=0, batch=()):
    x = np.random.default_rng(seed).standard_normal((*batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def test_a_decomposition_is_a_recorded_host_call():
    text = fg.jit(lambda a: fnp.linalg.qr(a)).lower(fg.tensor(_spd(5))).as_text()
    assert "func.func private @fghost.qr_0(tensor<5x5xf64>) -> (tensor<5x5xf64>" in text
    assert "call @fghost.qr_0(" in text
    assert host_calls.REFLECTION_KEY in text and '\\22prim\\22: \\22qr\\22' in text


def test_without_host_calls_lowers_the_column_algorithms_instead():
    a = fg.tensor(_spd(4), dtype=fg.float64)
    with host_calls.without_host_calls():
        assert not host_calls.enabled()
        text = fg.jit(fnp.linalg.cholesky).lower(a).as_text()
        got = fg.jit(lambda x: fnp.linalg.cholesky(x) * 1).__call__(a)
    assert host_calls.enabled()
    assert "fghost" not in text and "stablehlo.while" in text
    np.testing.assert_allclose(got.numpy(), np.linalg.cholesky(_spd(4)), rtol=1e-12)


@pytest.mark.parametrize("name, fun", [
    ("solve", lambda a, b: fnp.linalg.solve(a, b)),
    ("inv", lambda a, b: fnp.linalg.inv(a)),
    ("eigh", lambda a, b: fnp.linalg.eigh(a)[1]),
    ("svd", lambda a, b: fnp.linalg.svd(a)[0]),
    ("cholesky-solve", lambda a, b: fnp.linalg.cholesky(a) @ b),
])
def test_jit_equals_eager_exactly(name, fun):
    a = fg.tensor(_spd(6, batch=(2,)), dtype=fg.float64)
    b = fg.tensor(np.random.default_rng(1).standard_normal((2, 6, 3)))
    np.testing.assert_array_equal(fg.jit(fun)(a, b).numpy(), fun(a, b).numpy())


def test_host_calls_in_loops_and_under_grad_and_vmap():
    a = fg.tensor(_spd(6), dtype=fg.float64)

    def body(i, x):
        return fnp.linalg.cholesky(x @ x.T + 6 * fnp.eye(6)) / 3

    def step(c, x):
        c = fnp.linalg.cholesky(c @ c.T + 6 * fnp.eye(6)) / 3 + x
        return c, fnp.linalg.det(c)

    loop = lambda x: fori_loop(0, 5, body, x)
    np.testing.assert_array_equal(fg.jit(loop)(a).numpy(), loop(a).numpy())
    xs = fg.tensor(np.random.default_rng(2).standard_normal((7, 6, 6)))
    for got, want in zip(fg.jit(lambda c, xs: scan(step, c, xs))(a, xs),
                         scan(step, a, xs), strict=True):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    logdet = fg.jit(lambda x: fnp.linalg.slogdet(x)[1])
    np.testing.assert_allclose(fg.grad(logdet)(a).numpy(), np.linalg.inv(_spd(6)).T,
                               rtol=1e-10)
    batch = fg.tensor(_spd(5, batch=(3,)), dtype=fg.float64)
    np.testing.assert_allclose(fg.vmap(fg.jit(fnp.linalg.cholesky))(batch).numpy(),
                               np.linalg.cholesky(_spd(5, batch=(3,))), rtol=1e-13)


def test_a_program_on_the_worker_threads_waits_for_its_host_calls():
    """A matmul big enough runs the program on local-task with coarse fences: the host
    kernel waits for its operands' fence and signals its results'."""
    rng = np.random.default_rng(3)
    big = fg.tensor(rng.standard_normal((1024, 1024)).astype(np.float32))
    a = fg.tensor(_spd(8))

    def body(i, x):  # host calls inside a loop of the asynchronous program
        return fnp.linalg.cholesky(x @ x.T + 8 * fnp.eye(8)) / 3

    f = fg.jit(lambda m, x: (m @ m, fnp.linalg.cholesky(x + m[:8, :8] * 0),
                             fori_loop(0, 3, body, x + m[0, 0] * 0)))
    product, factor, looped = f(big, a)
    np.testing.assert_array_equal(looped.numpy(), fori_loop(0, 3, body, a).numpy())
    program = next(iter(f._cache.values())).program
    assert jit_module._cpu_plan(program)[1] == "local-task"
    assert program._executable.asynchronous
    np.testing.assert_allclose(product.numpy(), big.numpy() @ big.numpy(), rtol=1e-3,
                               atol=1e-2)
    np.testing.assert_allclose(factor.numpy(), np.linalg.cholesky(_spd(8)), rtol=1e-5)


@pytest.fixture
def failing_primitive():
    prim = Primitive("_test_host_failure")

    def impl(x):
        raise FloatingPointError("the host kernel failed on purpose")

    prim.impl = impl
    prim.abstract_eval = lambda x: ShapedArray(x.shape, x.dtype)
    prim.lower = host_calls.on_host(prim, None)
    try:
        yield prim
    finally:
        del registry[prim.name]


@pytest.mark.parametrize("size", [4, 1024])  # local-sync; local-task with fences
def test_a_failing_host_kernel_raises_instead_of_hanging(failing_primitive, size):
    x = fg.tensor(np.ones((size, size), np.float32))
    f = fg.jit(lambda x: failing_primitive.bind(x @ x) + 1)
    with pytest.raises(RuntimeError, match="failed on purpose"):
        f(x)


def test_a_cached_module_finds_its_host_kernels_in_a_new_process(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, funcgrad as fg, funcgrad.numpy as fnp
        a = np.random.default_rng(0).standard_normal((5, 5))
        a = a @ a.T + 5 * np.eye(5)
        w, v = fg.jit(fnp.linalg.eigh)(fg.tensor(a, dtype=fg.float64))
        want = np.linalg.eigh(a)[0]
        assert np.allclose(w.numpy(), want, rtol=1e-12), (w, want)
        print("ok")
    """)
    env = dict(os.environ, FUNCGRAD_CACHE_DIR=str(tmp_path), FUNCGRAD_LOG_COMPILES="1")
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0 and "ok" in run.stdout, run.stderr[-2000:]
    assert "compiled" in runs[0].stderr and "compiled" not in runs[1].stderr


def test_empty_operands_and_results():
    empty = fg.tensor(np.zeros((0, 3, 3)))
    np.testing.assert_array_equal(fg.jit(fnp.linalg.cholesky)(empty).numpy(),
                                  np.zeros((0, 3, 3)))
    w, v = fg.jit(fnp.linalg.eigh)(empty)
    assert w.shape == (0, 3) and v.shape == (0, 3, 3)


def test_a_long_fft_is_a_host_call_and_matches_numpy():
    x = np.random.default_rng(4).standard_normal((3, 1000))
    f = fg.jit(lambda x: fnp.fft.irfft(fnp.fft.rfft(x) * 2, n=1000))
    assert "fghost.fft_0" in f.lower(fg.tensor(x)).as_text()
    np.testing.assert_allclose(f(fg.tensor(x)).numpy(), 2 * x, rtol=1e-12, atol=1e-12)
    short = fg.jit(lambda x: fnp.fft.rfft(x)).lower(fg.tensor(x[:, :64])).as_text()
    assert "fghost" not in short  # short transforms stay compiled DFT products
