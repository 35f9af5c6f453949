"""Device-resident jit results and their host views."""

import gc

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.tensor import device_buffer


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path))


def test_host_views_outlive_their_tensors():
    f = fg.jit(lambda x: x * 2.0)
    views = [np.asarray(f(fg.full((4096,), float(i)))) for i in range(40)]
    gc.collect()
    _ = [np.ones(4096) * 7.0 for _ in range(200)]  # reuse any freed memory
    for i, view in enumerate(views):
        assert float(view[0]) == 2.0 * i and float(view[-1]) == 2.0 * i


def test_results_stay_on_the_device_until_numpy_needs_them():
    f = fg.jit(lambda x: x + 1.0)
    out = f(f(fg.ones(8)))
    assert device_buffer(out) is not None
    assert out.shape == (8,) and out.dtype == fg.float32
    assert out.ndim == 1 and out.size == 8 and out.aval.shape == (8,)
    # the metadata comes from the device buffer: no host view (a GPU result's would be a
    # CuPy array, so asking a shape on every jit call made one per argument)
    assert device_buffer(out)._host is None
    np.testing.assert_array_equal(np.asarray(out), np.full(8, 3.0, np.float32))
    with pytest.raises(ValueError):
        np.asarray(out)[0] = 1.0  # host views are read-only: tensors are immutable


# --- large results: storage passed in by funcgrad, on huge pages ------------------------------

_BIG = (4096, 2049)  # 33.6 MB of float32: over OUTPUT_STORAGE_BYTES


def _storage_of(jitted, *args):
    from funcgrad.transforms.jit import executable_for

    entry, _ = jitted._entry(args, {})
    return executable_for(entry.program).output_storage


def test_large_results_are_written_into_storage_passed_in():
    from funcgrad.lowering.runtime import OUTPUT_STORAGE_BYTES

    assert np.prod(_BIG) * 4 >= OUTPUT_STORAGE_BYTES
    a = np.random.default_rng(0).standard_normal(_BIG).astype(np.float32)
    f = fg.jit(lambda x: (x * 2.0, x.sum(), x[:3] + 1.0))
    big, total, small = f(fg.tensor(a))
    assert [shape for shape, _, _ in _storage_of(f, fg.tensor(a))] == [_BIG]  # only the big one
    np.testing.assert_array_equal(np.asarray(big), a * 2.0)
    np.testing.assert_allclose(float(total), a.sum(dtype=np.float64), rtol=1e-4)
    np.testing.assert_array_equal(np.asarray(small), a[:3] + 1.0)
    assert device_buffer(big) is not None  # still a device-resident result
    again = f(big)[0]  # and it feeds the next call
    np.testing.assert_array_equal(np.asarray(again), a * 4.0)


@pytest.mark.parametrize("fun", [
    lambda x: x,                      # the input itself: IREE copies it into the storage
    lambda x: x.reshape(-1)[None],    # a reshape of it
    lambda x: fg.numpy.zeros_like(x),  # a splat: a fill of the storage
    lambda x: (x + 1, x + 1),         # the same value as two results
    lambda x: (x.T * 1.0, x[::2]),    # a transpose, and a small strided slice
], ids=["identity", "reshape", "splat", "twice", "transpose"])
def test_large_results_of_copies_fills_and_repeats(fun):
    a = np.arange(np.prod(_BIG), dtype=np.float32).reshape(_BIG)
    want = fun(fg.tensor(a))
    got = fg.jit(fun)(fg.tensor(a))
    fg.tree.map(lambda g, w: np.testing.assert_array_equal(np.asarray(g), np.asarray(w)),
                got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int8, np.complex64, np.bool_])
def test_large_results_of_every_dtype(dtype):
    from funcgrad.lowering.runtime import OUTPUT_STORAGE_BYTES

    rows = -(-OUTPUT_STORAGE_BYTES // (np.dtype(dtype).itemsize * 1000)) + 1
    a = (np.arange(rows * 1000) % 7).reshape(rows, 1000).astype(dtype)
    f = fg.jit(lambda x: (fg.numpy.maximum(x, x[:1]), x.sum()))
    np.testing.assert_array_equal(np.asarray(f(fg.tensor(a))[0]), np.maximum(a, a[:1]))
    # bool travels as integer storage the run-time maps itself: no storage passed in
    assert len(_storage_of(f, fg.tensor(a))) == (0 if dtype == np.bool_ else 1)


def test_a_slice_of_a_large_result_outlives_it():
    # a small result may alias a large one's buffer: that memory belongs to the run-time's
    # buffer (not to a NumPy array of funcgrad's), so it stays valid after the large is gone
    a = np.ones(_BIG, np.float32)
    big = fg.jit(lambda x: x * 3.0)(fg.tensor(a))
    head = fg.jit(lambda x: x[:2])(big)
    view = np.asarray(big)
    del big
    gc.collect()
    _ = [np.full(_BIG, 9.0, np.float32) for _ in range(4)]  # reuse any freed memory
    np.testing.assert_array_equal(np.asarray(head), np.full((2, _BIG[1]), 3.0, np.float32))
    np.testing.assert_array_equal(view[-1], np.full(_BIG[1], 3.0, np.float32))


def test_huge_page_advice_is_harmless_on_any_range():
    from funcgrad.lowering.runtime import _advise_huge_pages

    buf = np.zeros(5 << 20, np.uint8)
    _advise_huge_pages(buf.ctypes.data, buf.nbytes)  # the whole 2 MiB pages inside
    _advise_huge_pages(buf.ctypes.data + 1, 100)  # no whole page inside: nothing to do
    buf[:] = 1
    assert int(buf.sum()) == buf.size


def test_results_of_a_small_program_feed_a_large_one_without_a_copy(monkeypatch):
    # small programs run on local-sync, large ones on local-task: both are the CPU's memory
    from funcgrad.lowering.runtime import Executable
    from funcgrad.transforms.jit import executable_for

    small = fg.jit(lambda x: x + 1.0)
    large = fg.jit(lambda x, w: fg.numpy.tanh(x @ w))
    x = small(fg.ones((256, 512)))
    w = fg.jit(lambda w: w * 0.01)(fg.ones((512, 512)))
    runs_on = lambda f, *args: executable_for(f._entry(args, {})[0].program).rt
    assert runs_on(small, fg.ones((256, 512))) is not runs_on(large, x, w)  # sync vs task
    copies = []
    monkeypatch.setattr(Executable, "import_or_copy",
                        lambda self, a: copies.append(a.shape) or Executable.to_device(self, a))
    out = large(x, w)
    assert copies == []
    np.testing.assert_allclose(np.asarray(out), np.tanh(np.full((256, 512), 2 * 0.01 * 512)),
                               rtol=1e-5)


def test_transcendental_functions_count_as_heavier_work_for_the_threads():
    """1M float32 additions stay on one thread (local-sync); 1M sines, about a hundred
    operations each, take the worker threads (local-task): 9.5 -> 5.2 ms on two cores."""
    from funcgrad.transforms.jit import _cpu_plan

    x = fg.ones(1 << 20)
    plan = lambda f: _cpu_plan(fg.jit(f)._entry((x,), {})[0].program)[1]
    assert plan(lambda v: v + 1.0) == "local-sync"
    assert plan(fnp.sin) == "local-task"
    assert plan(lambda v: fnp.sin(v[:1000])) == "local-sync"  # small: not worth waking them


def test_float64_math_without_matmuls_compiles_with_aggressive_fusion():
    """math64's float64 expansions are deep elementwise graphs that IREE splits into
    dispatches recomputing shared values unless fusing aggressively (pow 118 -> 35 ms per
    1M); float32 math and programs with a matmul (the MLP step lost 5-15%) keep the default."""
    from funcgrad.transforms.jit import _cpu_plan

    def session(f, *args):
        return _cpu_plan(fg.jit(f)._entry(args, {})[0].program)[0]

    x64, x32 = fg.ones(1 << 20, dtype=fg.float64), fg.ones(1 << 20)
    assert session(lambda a, b: a ** b, x64, x64) == "cpu-fused-task"
    assert session(lambda v: fnp.sin(v[:8]), x64) == "cpu-fused"  # small: one thread
    assert session(fnp.sin, x32) == "cpu-plain-task"
    m = fg.ones((64, 64), dtype=fg.float64)
    assert session(lambda a: fnp.tanh(a @ a), m) == "cpu-plain"
    # only elementwise, data-movement and reduction operations: no loop or indexing
    assert session(lambda v: fg.fori_loop(0, 2, lambda i, c: fnp.fmod(c, 1.5), v), x64) \
        == "cpu-plain"
    assert session(lambda v: fnp.sin(v[:8]).at[fnp.argmax(v[:8])].set(0.0), x64) \
        == "cpu-plain"
    assert session(lambda v: fnp.sum(fnp.sin(v[:8])), x64) == "cpu-fused"
    # what the program computes, not dead code: an unused sin picks nothing
    assert session(lambda v: (fnp.sin(v), v * 2.0)[1], x64) == "cpu-plain"
    assert session(lambda v: fg.jit(fnp.sin)(fnp.concatenate([v[:4], v[:4].T])), x64) \
        == "cpu-fused"


def test_a_sum_read_by_math_and_by_another_sum_is_right_in_float64():
    """With aggressive fusion IREE 3.13 put the column sums s, sin(s) and sum(x + s) in one
    dispatch and accumulated s once per row tile: sin(s) and the total came out wrong
    (2-D straight-line fuzz seed 33).  Under that flag every reduction's results now go
    behind a barrier (rules.isolate_reductions); pow over a sum keeps the flag's speed
    (1M float64 values: 218 ms without the flag, 28-33 ms with it)."""
    x = np.random.RandomState(0).uniform(-1, 1, (4, 5))

    def f(x):
        s = fnp.sum(x, axis=0)
        return fnp.sin(s), fnp.sum(x + s)

    got = fg.jit(f)(fg.tensor(x))
    s = x.sum(axis=0)
    np.testing.assert_allclose(got[0].numpy(), np.sin(s), rtol=1e-14)
    np.testing.assert_allclose(float(got[1]), (x + s).sum(), rtol=1e-13)
    from funcgrad.transforms.jit import _cpu_plan

    assert _cpu_plan(fg.jit(f)._entry((fg.tensor(x),), {})[0].program)[0] == "cpu-fused"


def test_reductions_are_isolated_only_for_aggressive_fusion():
    from funcgrad.lowering import compiler
    from funcgrad.lowering.mlir import lower_module

    program = fg.make_ir(lambda v: fnp.sin(fnp.sum(v, axis=0)) * v)(fg.ones((3, 4)))
    holder = compiler.session_for("cpu-fused")
    with holder.lock, holder.session.context:
        texts = [str(lower_module(program, holder.session.context,
                                  isolate_reductions=isolate)[0]) for isolate in (False, True)]
    assert "optimization_barrier" not in texts[0]
    lines = texts[1].splitlines()
    reduce_line = next(i for i, line in enumerate(lines) if "stablehlo.reduce" in line)
    barrier = next(line for line in lines[reduce_line:] if "optimization_barrier" in line)
    assert lines[reduce_line].split("=")[0].strip() in barrier  # the sum goes through it


def test_an_unaligned_host_array_is_copied_once_not_on_every_call(monkeypatch):
    """fnp.asarray wraps a NumPy array without copying it; one not 64-byte aligned cannot
    be handed to the run-time in place, so the Tensor keeps an aligned copy."""
    from funcgrad.lowering.runtime import Executable

    raw = np.zeros((1 << 16) + 16, np.float32)
    start = (16 - raw.ctypes.data % 64) % 64 // 4  # 16 bytes past a 64-byte boundary
    unaligned = raw[start:start + (1 << 16)]
    unaligned[:] = np.arange(1 << 16)
    assert unaligned.ctypes.data % 64 != 0
    x = fnp.asarray(unaligned)
    f = fg.jit(lambda x: x * 2.0)
    f(x)  # compiles, and swaps in the aligned copy
    copies, to_device = [], Executable.to_device
    monkeypatch.setattr(Executable, "to_device",
                        lambda self, a: copies.append(a.shape) or to_device(self, a))
    for _ in range(3):
        np.testing.assert_array_equal(f(x).numpy(), np.arange(1 << 16) * 2.0)
    assert copies == []
    small = fnp.asarray(unaligned[1:9])  # small arrays are simply copied each call
    np.testing.assert_array_equal(f(small).numpy(), np.arange(1, 9) * 2.0)


def test_host_memory_is_aliased_by_cpu_drivers_only(monkeypatch):
    """A CPU driver uses aligned host memory in place (DLPack); the cuda driver must get a
    copy: its kernels were handed the host pointer (CUDA_ERROR_ILLEGAL_ADDRESS on an H200
    for a CPU tensor captured by a jitted function)."""
    from funcgrad.lowering.runtime import Executable
    from funcgrad.transforms.jit import executable_for

    host = fg.tensor(np.arange(64.0))._buf  # 64-byte aligned, as funcgrad allocates
    exe = executable_for(fg.jit(lambda x: x * 2.0)._entry((fg.tensor(host),), {})[0].program)
    copies, to_device = [], Executable.to_device
    monkeypatch.setattr(Executable, "to_device",
                        lambda self, a: copies.append(a.shape) or to_device(self, a))
    exe.import_or_copy(host)
    assert copies == []
    monkeypatch.setattr(exe.rt, "device_name", fg.Device("cuda", 0))
    exe.import_or_copy(host)
    assert copies == [(64,)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64", "int8",
                                   "uint8", "int32", "int64", "complex64", "bool_"])
def test_host_inputs_of_every_dtype_small_and_large(dtype):
    """Host arrays of each dtype, in funcgrad's aligned memory and not, reach a jit call
    with their values (bfloat16 is always copied: DLPack and ctypes refuse its format)."""
    dtype = getattr(fg, dtype)
    f = fg.jit(lambda x: x[::-1])
    for n in (5, 1 << 15):
        values = (np.arange(n + 1) % 3).astype(dtype)
        for source in (values[:n], values[1:]):  # the second starts off any boundary
            for x in (fg.tensor(source), fnp.asarray(source)):
                got = f(x).numpy()
                assert got.dtype == source.dtype
                np.testing.assert_array_equal(got, source[::-1])


# --- programs on the worker threads return at once; funcgrad waits for their fence ----------


def _executable(jitted, *args):
    from funcgrad.transforms.jit import executable_for

    return executable_for(jitted._entry(args, {})[0].program)


def test_programs_on_the_workers_are_called_asynchronously_and_waited_for():
    small = fg.jit(lambda x: x * 2.0)
    large = fg.jit(lambda x, w: fnp.tanh(x @ w).sum(axis=1))
    x = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    assert not _executable(small, fg.tensor(x[0])).asynchronous  # local-sync: as before
    assert _executable(large, fg.tensor(x), fg.tensor(x)).asynchronous
    want = np.tanh(x.astype(np.float64) @ x).sum(axis=1)
    for _ in range(5):  # the wait's estimate of the call's length changes nothing
        np.testing.assert_allclose(np.asarray(large(fg.tensor(x), fg.tensor(x))), want,
                                   rtol=1e-4, atol=1e-3)


def test_asynchronous_calls_from_several_threads():
    import threading

    f = fg.jit(lambda x, w: fnp.tanh(x @ w) * 2.0)
    rng = np.random.default_rng(1)
    w = rng.standard_normal((384, 384)).astype(np.float32) / 20
    xs = [rng.standard_normal((384, 384)).astype(np.float32) for _ in range(4)]
    f(fg.tensor(xs[0]), fg.tensor(w))  # compiled once, before the threads start
    results, errors = {}, []

    def work(i):
        try:
            for _ in range(10):
                results[i] = np.asarray(f(fg.tensor(xs[i]), fg.tensor(w)))
        except Exception as e:  # reported below: a thread's exception would be lost
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i, x in enumerate(xs):
        np.testing.assert_allclose(results[i], np.tanh(x @ w) * 2.0, rtol=1e-4, atol=1e-5)


def test_debug_print_from_an_asynchronous_program(capsys):
    def f(x, w):
        y = fnp.tanh(x @ w)
        fg.debug.print("total={t}", t=y.sum())
        return y

    x = fg.ones((512, 512)) * 0.001
    assert _executable(fg.jit(f), x, x).asynchronous
    fg.jit(f)(x, x).block_until_ready()
    printed = capsys.readouterr().out
    want = 512 * 512 * np.tanh(512 * np.float64(np.float32(0.001)) ** 2)  # 134.2177...
    assert printed.startswith("total=") and abs(float(printed.split("=")[1]) - want) < 1e-3
