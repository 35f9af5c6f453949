"""fg.jit's API: static arguments, retracing and its log, lowering text, the compile cache
on disk, donation, device-resident results, pytrees, trace-time side effects, and
composition with grad/vmap."""

import logging
import pathlib

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.tensor import device_buffer
from funcgrad.lowering import compiler
from funcgrad.transforms.jit import DonatedBufferError


def _close(got, want, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def _f64(*shape, seed=0):
    return fg.tensor(np.random.default_rng(seed).standard_normal(shape))


# --- static arguments ---------------------------------------------------------------------


def test_static_argnums_and_argnames():
    traces = []

    def power(x, n, *, scale=1.0):
        traces.append((n, scale))
        return x ** n * scale

    f = fg.jit(power, static_argnums=1, static_argnames="scale")
    x = _f64(3)
    _close(f(x, 2, scale=3.0), np.asarray(x) ** 2 * 3)
    _close(f(x, 3, scale=3.0), np.asarray(x) ** 3 * 3)
    _close(f(x, 2, scale=3.0), np.asarray(x) ** 2 * 3)
    _close(f(x, 2, scale=0.5), np.asarray(x) ** 2 * 0.5)
    assert traces == [(2, 3.0), (3, 3.0), (2, 0.5)]


def test_non_array_argument_names_itself_and_static_argnums():
    with pytest.raises(TypeError, match=r"argument 1 is a str .*static_argnums=\(1,\)"):
        fg.jit(lambda x, act: x * 2)(fg.ones(2), "relu")
    with pytest.raises(TypeError, match=r"argument 'act' is a str .*static_argnames"):
        fg.jit(lambda x, act: x * 2)(fg.ones(2), act="relu")
    with pytest.raises(TypeError, match=r"argument 0\['f'\] is a builtin"):
        fg.jit(lambda d: d["a"] * 2)({"a": fg.ones(2), "f": print})
    with pytest.raises(TypeError, match="argument 0 is a str"):
        fg.grad(lambda x: x)("a")


def test_unhashable_static_argument_is_a_type_error_naming_it():
    f = fg.jit(lambda x, shape: fnp.reshape(x, shape), static_argnums=1)
    with pytest.raises(TypeError, match=r"static argument #1 .*list.*hashable"):
        f(_f64(6), [2, 3])
    g = fg.jit(lambda x, *, shape: fnp.reshape(x, shape), static_argnames="shape")
    with pytest.raises(TypeError, match=r"static argument 'shape'.*hashable"):
        g(_f64(6), shape=[2, 3])
    assert g(_f64(6), shape=(2, 3)).shape == (2, 3)


def test_traced_value_in_python_control_flow_names_the_fix():
    def f(x):
        if fnp.sum(x) > 0:
            return x
        return -x

    with pytest.raises(Exception, match=r"static_argnums|fg\.cond|cond"):
        fg.jit(f)(_f64(3))

    class Gate:  # a callable object (a module) is named by its class
        def __call__(self, x):
            return f(x)

    with pytest.raises(Exception, match=r"inside jit\(Gate\)"):
        fg.jit(Gate())(_f64(3))


# --- retracing ------------------------------------------------------------------------------


def test_retraces_on_new_shape_and_logs_why(caplog):
    traces = []

    def f(x):
        traces.append(x.shape)
        return x * 2

    g = fg.jit(f)
    with caplog.at_level(logging.INFO, logger="funcgrad.jit"):
        g(_f64(3))
        g(_f64(3, seed=1))
        assert not [r for r in caplog.records if "retrac" in r.getMessage()]
        g(_f64(4))
        g(fg.tensor(np.ones(4, np.float32)))
    assert traces == [(3,), (4,), (4,)]
    messages = [r.getMessage() for r in caplog.records if "retrac" in r.getMessage()]
    assert len(messages) == 2, messages
    assert "shape" in messages[0] and "[3]" in messages[0] and "[4]" in messages[0]
    assert "dtype" in messages[1] and "float32" in messages[1]


def test_python_side_effects_run_only_while_tracing(capsys):
    calls = []

    @fg.jit
    def f(x):
        calls.append(1)
        print("tracing")
        return fnp.sin(x) + 1

    x = _f64(5)
    for _ in range(3):
        _close(f(x), np.sin(np.asarray(x)) + 1, rtol=1e-12)
    assert len(calls) == 1
    assert capsys.readouterr().out.count("tracing") == 1


# --- lowering and compiling -----------------------------------------------------------------


def test_lower_as_text_and_compile():
    f = fg.jit(lambda x, y: fnp.tanh(x @ y) + fnp.sum(x, axis=0))
    x = fg.tensor(np.asarray(_f64(3, 3)).astype(np.float32))
    y = fg.tensor(np.asarray(_f64(3, 3, seed=1)).astype(np.float32))
    lowered = f.lower(x, y)
    text = lowered.as_text()
    assert "func.func" in text and "stablehlo.dot_general" in text
    assert "stablehlo.tanh" in text and "stablehlo.reduce" in text
    compiled = lowered.compile()
    want = np.tanh(np.asarray(x) @ np.asarray(y)) + np.asarray(x).sum(0)
    _close(compiled(x, y), want, rtol=1e-5, atol=1e-6)
    _close(f(x, y), want, rtol=1e-5, atol=1e-6)


def test_lower_as_text_holds_closed_over_values_as_constants():
    """As JAX's: ``@main`` takes the function's own arguments (static ones left out) and
    holds what it closes over, so the text compiles and runs on its own."""
    import iree.compiler
    import iree.runtime

    w = fg.tensor(np.asarray(_f64(3, 2)).astype(np.float32))
    f = fg.jit(lambda x, n: fnp.tanh(x @ w) * n, static_argnums=1)
    x = fg.tensor(np.asarray(_f64(4, 3, seed=2)).astype(np.float32))
    text = f.lower(x, 3).as_text()
    assert "@main(%arg0: tensor<4x3xf32>) -> tensor<4x2xf32>" in text
    assert "stablehlo.constant dense<" in text
    module = iree.runtime.load_vm_flatbuffer(
        iree.compiler.compile_str(text, target_backends=["llvm-cpu"]), driver="local-sync")
    want = np.tanh(np.asarray(x) @ np.asarray(w)) * 3
    _close(np.asarray(module.main(np.asarray(x))), want, rtol=1e-5, atol=1e-6)
    _close(f.lower(x, 3).compile()(x), want, rtol=1e-5, atol=1e-6)
    assert f.lower(x, 3).compile().as_text() == text


def test_results_keep_weak_types_as_eagerly():
    """As JAX's: a result computed from Python scalars stays weakly typed, so it does not
    promote a float16 tensor it meets later."""
    schedule = lambda s: 0.1 * 0.5 ** s  # noqa: E731
    half = fg.ones(2, dtype=fg.float16)
    eager = schedule(fg.tensor(3.0))
    for step in (fg.tensor(3.0), 3.0):
        jitted = fg.jit(schedule)(step)
        assert jitted.weak_type and eager.weak_type
        assert (half * jitted).dtype == (half * eager).dtype == fg.float16
    assert not fg.jit(lambda x: x * 2.0)(fg.ones(2)).weak_type
    assert fg.jit(fg.grad(lambda x: (x * x).sum()))(fg.ones(2)).dtype == fg.float32


def _vmfb_files(root):
    return sorted(pathlib.Path(root).rglob("*.vmfb"))


def test_disk_cache_is_written_reused_and_repaired(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path))

    def fun(x):
        return fnp.cos(x) * 3 - x

    x = _f64(4)
    want = np.cos(np.asarray(x)) * 3 - np.asarray(x)
    _close(fg.jit(fun)(x), want, rtol=1e-12)
    files = _vmfb_files(tmp_path)
    assert len(files) == 1 and files[0].stat().st_size > 0

    # a fresh process-like state (memory cache cleared, new jit object) reuses the file
    fg.clear_caches()

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled although the disk cache holds the module")

    with monkeypatch.context() as patch:
        patch.setattr(compiler, "_compile", no_compile)
        _close(fg.jit(fun)(x), want, rtol=1e-12)

    # a corrupt entry is ignored, rebuilt and rewritten
    files[0].write_bytes(b"garbage")
    fg.clear_caches()
    compiles = []
    real_compile = compiler._compile

    def counting(*args, **kwargs):
        compiles.append(1)
        return real_compile(*args, **kwargs)

    monkeypatch.setattr(compiler, "_compile", counting)
    _close(fg.jit(fun)(x), want, rtol=1e-12)
    assert compiles == [1]
    assert files[0].read_bytes() != b"garbage"
    fg.clear_caches()
    _close(fg.jit(fun)(x), want, rtol=1e-12)
    assert compiles == [1]


# --- buffers --------------------------------------------------------------------------------


def test_results_stay_on_the_device_and_feed_back():
    f = fg.jit(lambda x: x * 2 + 1)
    x = _f64(3)
    out = f(x)
    assert device_buffer(out) is not None
    again = f(out)
    assert device_buffer(again) is not None
    _close(again, (np.asarray(x) * 2 + 1) * 2 + 1, rtol=1e-12)
    _close(out + 1, np.asarray(x) * 2 + 2, rtol=1e-12)  # eager ops read device results


def test_donated_argument_cannot_be_used_again():
    f = fg.jit(lambda x, y: x + y, donate_argnums=0)
    x, y = _f64(3), _f64(3, seed=1)
    want = np.asarray(x) + np.asarray(y)
    out = f(x, y)
    _close(out, want, rtol=1e-12)
    with pytest.raises(DonatedBufferError, match="donated"):
        np.asarray(x)
    with pytest.raises(DonatedBufferError):
        f(x, y)
    with pytest.raises(DonatedBufferError):
        x + 1
    # its shape and dtype stay readable, as a deleted JAX array's
    assert (x.shape, x.dtype, x.ndim, x.size) == ((3,), fg.float64, 1, 3)
    _close(y, np.asarray(y))  # the other argument is untouched
    _close(f(out, y), want + np.asarray(y), rtol=1e-12)


def test_donate_argnames_by_name_or_position():
    f = fg.jit(lambda x, y: x * y, donate_argnames="x")
    for call in (lambda x, y: f(x, y), lambda x, y: f(x=x, y=y)):
        x, y = _f64(3), _f64(3, seed=1)
        want = np.asarray(x) * np.asarray(y)
        _close(call(x, y), want, rtol=1e-12)
        with pytest.raises(DonatedBufferError, match="donated"):
            np.asarray(x)
        _close(y, np.asarray(y))


@pytest.mark.parametrize("options, message", [
    (dict(static_argnames="nn"), r"static_argnames names \['nn'\]"),
    (dict(donate_argnames="z"), r"donate_argnames names \['z'\]"),
    (dict(donate_argnums=5), r"donate_argnums=\(5,\) but the function takes 2"),
    (dict(static_argnums=1, donate_argnums=1), r"both static and donated"),
    (dict(static_argnames="n", donate_argnums=1), r"both static and donated"),
])
def test_jit_options_naming_no_argument_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        fg.jit(lambda a, n: a * n, **options)


# --- pytrees --------------------------------------------------------------------------------


def test_pytree_arguments_and_outputs():
    def f(params, batch):
        hidden = fnp.tanh(batch["x"] @ params["w"] + params["b"])
        return {"out": hidden, "stats": (fnp.mean(hidden), [fnp.max(hidden)])}

    params = {"w": _f64(3, 2), "b": _f64(2, seed=1)}
    batch = {"x": _f64(4, 3, seed=2)}
    want = f(params, batch)
    got = fg.jit(f)(params, batch)
    assert fg.tree.structure(got) == fg.tree.structure(want)
    for g, w in zip(fg.tree.leaves(got), fg.tree.leaves(want), strict=False):
        _close(g, w, rtol=1e-12)


def test_weak_python_scalars_keep_the_tensor_dtype():
    f = fg.jit(lambda x, s: x * s + 1.0)
    out = f(fg.tensor(np.ones(3, np.float32)), 2.0)
    assert out.dtype == np.float32
    _close(out, np.full(3, 3.0))


# --- composition ------------------------------------------------------------------------------


def _loss(w, x):
    return fnp.sum(fnp.sin(x @ w) ** 2)


def test_jit_of_grad_and_grad_of_jit():
    w, x = _f64(3, 2), _f64(4, 3, seed=1)
    want = fg.grad(_loss)(w, x)
    _close(fg.jit(fg.grad(_loss))(w, x), want, rtol=1e-10)
    _close(fg.grad(fg.jit(_loss))(w, x), want, rtol=1e-10)
    value, grad = fg.jit(fg.value_and_grad(_loss, argnums=(0, 1)))(w, x)
    _close(value, _loss(w, x), rtol=1e-12)
    _close(grad[1], fg.grad(_loss, argnums=1)(w, x), rtol=1e-10)


def test_vmap_of_jit_and_jit_of_vmap_of_grad():
    w, xs = _f64(3, 2), _f64(5, 4, 3, seed=1)
    per_example = [fg.grad(_loss)(w, xs[i]) for i in range(5)]
    _close(fg.jit(fg.vmap(fg.grad(_loss), in_axes=(None, 0)))(w, xs),
           np.stack([np.asarray(g) for g in per_example]), rtol=1e-10)
    losses = fg.vmap(fg.jit(_loss), in_axes=(None, 0))(w, xs)
    _close(losses, [np.asarray(_loss(w, xs[i])) for i in range(5)], rtol=1e-12)


def test_nested_jit_and_higher_order():
    inner = fg.jit(lambda x: fnp.exp(x) * x)
    outer = fg.jit(lambda x: inner(x) + inner(2 * x))
    x = _f64(4)
    xn = np.asarray(x)
    _close(outer(x), np.exp(xn) * xn + np.exp(2 * xn) * 2 * xn, rtol=1e-12)
    second = fg.jit(fg.grad(fg.grad(lambda v: fnp.sum(inner(v)))))
    # d2/dx2 of x e^x = (x + 2) e^x
    _close(second(fg.tensor(np.array(0.3))), (0.3 + 2) * np.exp(0.3), rtol=1e-10)


def test_jit_with_control_flow_and_linalg_gradients():
    def f(a):
        l = fnp.linalg.cholesky(a @ a.T + 3 * fnp.eye(3))
        return fnp.sum(fg.fori_loop(0, 3, lambda i, v: v @ l / 3, l))

    a = _f64(3, 3)
    _close(fg.jit(f)(a), f(a), rtol=1e-10)
    _close(fg.jit(fg.grad(f))(a), fg.grad(f)(a), rtol=1e-8, atol=1e-10)


def test_static_arguments_by_position_or_by_name():
    # as JAX: the signature maps static_argnames to positions and static_argnums to names
    def repeat_double(a, n):
        for _ in range(n):
            a = a * 2
        return a

    x = fg.tensor([1.0, 2.0])
    assert fg.jit(repeat_double, static_argnames="n")(x, 3).tolist() == [8.0, 16.0]
    assert fg.jit(repeat_double, static_argnums=1)(x, n=3).tolist() == [8.0, 16.0]
    assert fg.jit(repeat_double, static_argnums=-1)(x, 2).tolist() == [4.0, 8.0]
    with pytest.raises(ValueError, match="static_argnums"):
        fg.jit(repeat_double, static_argnums=5)


def test_jitted_functions_are_methods():
    import functools

    class Scaler:
        factor = 3.0

        @functools.partial(fg.jit, static_argnums=0)
        def scale(self, a):
            return a * self.factor

        @fg.jit
        def shift(a, b):  # noqa: N805 - jit of a plain function stored on a class
            return a + b

        def __hash__(self):
            return 1

        def __eq__(self, other):
            return isinstance(other, Scaler)

    assert Scaler().scale(fg.tensor([1.0, 2.0])).tolist() == [3.0, 6.0]
    assert Scaler.shift(fg.tensor(1.0), fg.tensor(2.0)).item() == 3.0


def test_debug_print_inside_jit_prints_when_loaded_from_the_disk_cache(tmp_path):
    # the second process loads the compiled module without lowering it: its prints must
    # still find their handlers (they once printed nothing, or another print's format)
    import subprocess
    import sys

    script = ("import funcgrad as fg\n"
              "fg.jit(lambda s: fg.debug.print('value {s}', s=s * 2))(fg.tensor(1.5))\n")
    env = {**__import__("os").environ, "FUNCGRAD_CACHE_DIR": str(tmp_path)}
    outputs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=300).stdout for _ in range(2)]
    assert outputs == ["value 3.0\n", "value 3.0\n"]
    assert any(tmp_path.iterdir())  # the second run came from the disk cache


@pytest.mark.parametrize("method,args", [
    ("reshape", (4, 3)), ("transpose", ()), ("astype", (np.float64,)), ("sum", ()),
    ("mean", (0,)), ("max", ()), ("min", ()), ("argmax", ()), ("argmin", (1,)), ("prod", ()),
    ("std", ()), ("var", ()), ("squeeze", ()), ("expand_dims", (0,)), ("flatten", ()),
    ("ravel", ()), ("clip", (0.2, 0.5)), ("round", (1,)), ("abs", ()), ("exp", ()),
    ("log", ()), ("sqrt", ())])
def test_every_tensor_method_works_on_traced_values(method, args):
    # tracers subclass Tensor: none of their own attributes may hide a method (.var did)
    x = fg.tensor(np.linspace(0.1, 0.9, 12).reshape(3, 4))
    eager = getattr(x, method)(*args)
    np.testing.assert_allclose(fg.jit(lambda a: getattr(a, method)(*args))(x), eager,
                               rtol=1e-6)


def test_log_retrace_environment_variable_prints_without_logging_setup(tmp_path):
    import os
    import subprocess
    import sys

    script = ("import funcgrad as fg\n"
              "f = fg.jit(lambda x: x * 2)\n"
              "f(fg.ones(2))\n"
              "f(fg.ones(3))\n")
    env = {**os.environ, "FUNCGRAD_LOG_RETRACE": "1", "FUNCGRAD_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert "retracing because" in done.stderr and "shape" in done.stderr


@pytest.mark.parametrize("value", [3, 2.5, 1 + 1j, True])
@pytest.mark.parametrize("make", [
    lambda s: fnp.full((3,), s), lambda s: fnp.asarray(s), lambda s: fnp.zeros(3) * 0 + s,
    lambda s: fnp.broadcast_to(s, (2,)), lambda s: fnp.stack([s, s]),
    lambda s: fnp.sum(s), lambda s: fnp.cumsum(s), lambda s: fnp.zeros_like(s),
    lambda s: fnp.full_like(s, 2)],
    ids=["full", "asarray", "arith", "broadcast_to", "stack", "sum", "cumsum", "zeros_like",
         "full_like"])
def test_arrays_made_from_python_number_arguments_have_the_eager_dtype(make, value):
    # a Python number is weak 64-bit inside jit; what it alone decides comes out at the
    # default width, as eagerly (fnp.full gave float64 under jit)
    eager = make(value)
    got = fg.jit(make)(value)
    assert got.dtype == eager.dtype
    assert str(got.dtype) in ("bool", "int32", "float32", "complex64")
    np.testing.assert_array_equal(np.asarray(got), np.asarray(eager))


def test_python_number_arguments_keep_full_precision():
    # weak 64-bit inside the program: float64 code sees 0.1 exactly as eagerly, int64 code
    # takes 2**40; a float32 operand still wins, and Python-only results are 32-bit (JAX)
    x64 = fg.tensor(np.array([1.0]))
    assert fg.jit(lambda x, dt: x * dt)(x64, 0.1).item() == 0.1
    big = fg.tensor(np.array([1], np.int64))
    assert fg.jit(lambda a, b: a + b)(big, 2**40).item() == 2**40 + 1
    x32 = fg.tensor([1.0])
    assert fg.jit(lambda x, dt: x * dt + 1.0)(x32, 0.1).dtype == fg.float32
    assert fg.jit(lambda a, b: a * b)(2.0, 3.0).dtype == fg.float32
    assert fg.jit(lambda a: a + 1)(5).dtype == fg.int32
    # reductions, means and gradients of such numbers keep them weak (float64 before)
    assert fg.jit(fnp.mean)(3).dtype == fg.float32
    assert fg.jit(fnp.std)(1.5).dtype == fg.float32
    # ... and through control flow, which traces its operands strongly typed: a float32 x
    # scaled by them stays float32 (the cond refused its branches, the fori_loop its carry)
    x32 = fg.ones(3)
    for fun in (lambda x, lr: fg.cond(lr > 0, lambda a: a * x, lambda a: x, lr),
                lambda x, lr: fg.fori_loop(0, 3, lambda i, c: (c[0] - c[1] * c[0], c[1]),
                                           (x, lr))[0],
                lambda x, lr: fg.scan(lambda c, _: (c * 2, c), lr, None, length=2)[0] * x):
        want = fun(x32, 0.1)
        got = fg.jit(fun)(x32, 0.1)
        assert got.dtype == want.dtype == fg.float32
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert fg.jit(fg.grad(lambda a: a ** 2))(3.0).dtype == fg.float32
    assert fg.jit(fg.grad(lambda a: fnp.sum(a * a)))(1.5).item() == 3.0
    # an int beyond int32 is an int64, not cut to int32 (it was wrapped to 0)
    assert fg.jit(lambda a: a)(2**40).item() == 2**40
    assert fg.jit(lambda a: a - 1)(-2**40).item() == -2**40 - 1
    calls = []
    traced = fg.jit(lambda a, b: (calls.append(1), a * b)[1])
    traced(x64, 0.1)
    traced(x64, 0.7)  # another value: no retrace
    assert len(calls) == 1


def test_jit_wrappers_of_one_function_share_its_traces_as_jax():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    for _ in range(3):  # fg.jit(f)(x) inside a loop traces once
        fg.jit(f)(fg.ones(3))
    assert len(calls) == 1
    fg.jit(f, static_argnums=())(fg.ones(4))  # a new signature traces again
    assert len(calls) == 2
    fg.clear_caches()
    fg.jit(f)(fg.ones(3))
    assert len(calls) == 3


def test_compiled_takes_keywords_and_names_mismatched_arguments():
    x = fg.ones(3)
    compiled = fg.jit(lambda x, y: x + y).lower(x, y=x).compile()
    np.testing.assert_array_equal(compiled(x, y=x).numpy(), [2.0, 2.0, 2.0])
    scaled = fg.jit(lambda x, n: x * n, static_argnums=1).lower(x, 2).compile()
    np.testing.assert_array_equal(scaled(x).numpy(), [2.0, 2.0, 2.0])  # static ones left out
    with pytest.raises(TypeError, match=r"changed shape: float32\[3\] -> float32\[4\]"):
        scaled(fg.ones(4))
    with pytest.raises(TypeError, match="tree structure"):
        scaled(x, 2)


def test_negative_static_argnums_count_from_the_last_argument_passed():
    """As JAX: with a defaulted parameter left out, -1 is the last argument given."""
    f = fg.jit(lambda a, n, m=1: fnp.zeros(n) + m, static_argnums=-1)
    x = fg.tensor([1.0, 2.0])
    np.testing.assert_array_equal(f(x, 3).numpy(), np.ones(3))  # n static
    np.testing.assert_array_equal(f(x, 2, m=2).numpy(), np.full(2, 2.0))
    assert fg.jit(lambda a, n: fnp.zeros(n), static_argnums=-1)(x, 2).shape == (2,)


def test_an_output_that_is_not_an_array_is_named():
    with pytest.raises(TypeError, match=r"output\['b'\]\[0\] is a str"):
        fg.jit(lambda x: {"a": x, "b": ("s", x)})(fg.ones(2))


def test_disk_cache_key_leaves_out_the_addresses_of_derivative_rules():
    """A custom_jvp/custom_vjp rule is a closure printed with its memory address, new in
    each process: programs using F.relu were compiled again in every one."""
    from funcgrad.transforms.jit import _ir_key_text

    def make_relu():
        @fg.custom_jvp
        def relu(x):
            return fnp.maximum(x, 0.0)

        relu.defjvp(lambda p, t: (relu(p[0]), t[0] * (p[0] > 0)))
        return relu

    first, second = make_relu(), make_relu()  # as two processes would make them
    keys = [_ir_key_text(fg.make_ir(lambda x, r=r: r(x) * 2.0)(fg.ones(3)))
            for r in (first, second)]
    assert "custom_jvp_call" in keys[0] and " at 0x" not in keys[0]
    assert keys[0] == keys[1]
