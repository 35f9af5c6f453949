"""GPU placement rules, checked on any machine with a stand-in for CuPy.

No GPU is lent to this project's machines, so the placement logic (which device an
operation runs on, when operands move, when mixing devices is an error, where results,
``.to`` and creation functions put tensors, how jit picks its executable) is tested here
against ``FakeCupy``: a NumPy-backed module with CuPy's surface as ``funcgrad.core.gpu``
uses it (arrays whose type lives in a ``cupy`` module and that know their device).  The
tests in ``test_gpu_execution.py`` run the same programs on a real GPU when one is visible.
"""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core import devices as devices_module
from funcgrad.core import gpu


class _FakeDevice:
    def __init__(self, id):
        self.id = id
        self.compute_capability = "90"

    def __enter__(self):
        FakeCupy.current.append(self.id)

    def __exit__(self, *exc):
        FakeCupy.current.pop()


class FakeGpuArray(np.ndarray):
    """A NumPy array that says it lives on GPU ``gpu_id`` (type module: ``cupy_fake``)."""

    gpu_id = 0

    @property
    def device(self):
        return _FakeDevice(self.gpu_id)

    def __array_finalize__(self, obj):
        self.gpu_id = getattr(obj, "gpu_id", FakeCupy.current[-1])

    def __float__(self):  # CuPy refuses implicit host conversion of whole arrays
        return float(np.asarray(self))


FakeGpuArray.__module__ = "cupy_fake"


class FakeCupy:
    current = [0]
    copies_to_host = 0

    class cuda:
        Device = _FakeDevice

        class runtime:
            @staticmethod
            def getDeviceCount():
                return 2

        @staticmethod
        def get_current_stream():
            return _Stream()

    @staticmethod
    def asarray(x):
        if isinstance(x, FakeGpuArray) and x.gpu_id == FakeCupy.current[-1]:
            return x
        out = np.array(x).view(FakeGpuArray)
        out.gpu_id = FakeCupy.current[-1]
        return out

    @staticmethod
    def ascontiguousarray(x):  # like CuPy's (and NumPy's): a 0-d array comes back 1-d
        out = np.ascontiguousarray(x).view(FakeGpuArray)
        out.gpu_id = FakeCupy.current[-1]
        return out

    @staticmethod
    def asnumpy(x):
        FakeCupy.copies_to_host += 1
        return np.array(x).view(np.ndarray)


class _Stream:
    def synchronize(self):
        pass


@pytest.fixture(autouse=True)
def fake_gpus(monkeypatch):
    monkeypatch.setattr(gpu, "_cupy", FakeCupy)
    monkeypatch.setattr(devices_module, "_cuda_device_count", lambda: 2)
    FakeCupy.copies_to_host = 0
    yield


CUDA0, CUDA1 = fg.Device("cuda", 0), fg.Device("cuda", 1)


def test_to_moves_and_device_reports_it():
    x = fg.tensor([1.0, 2.0]).to("cuda:0")
    assert x.device == CUDA0 and gpu.is_gpu_array(x._buf)
    assert x.to("cuda:0") is x
    assert x.to("cuda:1").device == CUDA1
    back = x.to("cpu")
    assert back.device == fg.device("cpu") and type(back._buf) is np.ndarray
    assert back.tolist() == [1.0, 2.0]
    assert "device='cuda:0'" in repr(x) and "device" not in repr(back)


def test_host_conversions_of_a_gpu_tensor_copy():
    x = fg.tensor([[1.0, 2.0]]).to("cuda:0")
    host = x.numpy()
    assert type(host) is np.ndarray and not host.flags.writeable
    np.testing.assert_array_equal(np.asarray(x), [[1.0, 2.0]])
    assert x.sum().item() == 3.0 and float(x[0, 1]) == 2.0
    assert FakeCupy.copies_to_host >= 3


def test_eager_operations_stay_on_the_gpu():
    x = fg.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3)).to("cuda:0")
    results = [x + x, x * 2.0, fnp.exp(x), x @ x.T, x.sum(axis=0), fnp.sort(-x, axis=1),
               x.reshape(3, 2), fnp.concatenate([x, x]), x[:, 1], x.at[0, 0].set(5.0)]
    for r in results:
        assert r.device == CUDA0, r
        assert gpu.is_gpu_array(r._buf)
    np.testing.assert_allclose(np.asarray(results[3]), np.asarray(x) @ np.asarray(x).T)


def test_uncommitted_cpu_operands_move_to_the_gpu():
    x = fg.tensor([1.0, 2.0]).to("cuda:0")
    y = fg.tensor([10.0, 20.0])  # placed by nobody: follows the GPU operand
    out = x + y
    assert out.device == CUDA0 and out.tolist() == [11.0, 22.0]
    assert (y * x).device == CUDA0


def test_mixing_committed_devices_raises_naming_both():
    x = fg.tensor([1.0, 2.0]).to("cuda:0")
    on_cpu = fg.tensor([1.0, 2.0], device="cpu")
    with pytest.raises(ValueError, match="cuda:0.*cpu|cpu.*cuda:0"):
        fnp.add(x, on_cpu)
    with pytest.raises(ValueError, match="cuda:0.*cuda:1"):
        x + x.to("cuda:1")


def test_gradients_and_vmap_of_gpu_tensors_stay_on_the_gpu():
    w = fg.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)).to("cuda:0")

    def loss(w):
        return fnp.tanh(w @ w.T).sum()

    g = fg.grad(loss)(w)
    assert g.device == CUDA0
    w_host = np.asarray(w)
    expected = fg.grad(loss)(fg.tensor(w_host))
    np.testing.assert_allclose(np.asarray(g), np.asarray(expected), rtol=1e-6)
    rows = fg.vmap(lambda r: (r * r).sum())(w)
    assert rows.device == CUDA0
    np.testing.assert_allclose(np.asarray(rows), (w_host ** 2).sum(1), rtol=1e-6)


def test_control_flow_runs_on_the_gpu():
    x = fg.tensor([1.0, 2.0, 3.0]).to("cuda:0")
    carry, ys = fg.scan(lambda c, v: (c + v, c * v), fg.tensor(0.0).to("cuda:0"), x)
    assert carry.device == CUDA0 and ys.device == CUDA0
    assert carry.item() == 6.0 and ys.tolist() == [0.0, 2.0, 9.0]
    picked = fg.cond(x.sum() > 0, lambda v: v * 2, lambda v: v, x)
    assert picked.device == CUDA0 and picked.tolist() == [2.0, 4.0, 6.0]


def test_creation_functions_take_a_device():
    assert fg.zeros(3, device="cuda:1").device == CUDA1
    assert fg.ones((2, 2), dtype=fg.float64, device="cuda:0").dtype == fg.float64
    assert fnp.arange(4, device="cuda:0").tolist() == [0, 1, 2, 3]
    assert fg.full((2,), 7.0, device="cuda:0").device == CUDA0
    x = fg.ones(2).to("cuda:1")
    assert fnp.zeros_like(x).device == CUDA1 and fnp.full_like(x, 3).device == CUDA1
    assert fg.tensor([1, 2], device="cuda:0").device == CUDA0
    assert fg.device_put({"a": fg.ones(2)}, "cuda:1")["a"].device == CUDA1


def test_a_gpu_array_given_to_tensor_is_copied_and_stays_there():
    raw = FakeCupy.asarray(np.ones(3, np.float32))
    t = fg.tensor(raw)
    assert t.device == CUDA0 and t._buf is not raw
    assert fg.tensor(t, dtype=fg.float64).device == CUDA0


def test_jit_picks_the_executable_of_the_operands_device(monkeypatch):
    from funcgrad.transforms import jit as jit_module

    asked = []
    cpu_executable_for = jit_module.executable_for

    def fake_gpu_executable(program, device):
        asked.append(device)
        return cpu_executable_for(program)  # runs the CPU build; the routing is the test

    monkeypatch.setattr(jit_module, "_gpu_executable", fake_gpu_executable)
    f = fg.jit(lambda a, b: a * b + 1.0)
    host = fg.tensor([1.0, 2.0])
    assert f(host, host).tolist() == [2.0, 5.0] and asked == []
    on_gpu = host.to("cuda:1")
    f(on_gpu, host)
    assert asked == [CUDA1]
    with pytest.raises(ValueError, match="cuda:1.*cuda:0"):
        f(on_gpu, host.to("cuda:0"))


def test_jit_retraces_when_only_the_device_changes(caplog):
    traces = []

    def f(a):
        traces.append(1)
        return a + 1.0

    jitted = fg.jit(f)
    x = fg.tensor([1.0])
    jitted.lower(x)
    with caplog.at_level("INFO", logger="funcgrad.jit"):
        jitted.lower(x.to("cuda:0"))
    assert len(traces) == 2
    assert "device" in caplog.text and "cuda:0" in caplog.text


def test_traced_values_report_the_device_they_compute_on():
    # a constant placed with ``t.to(x.device)`` inside grad/vmap/jit of GPU values must go
    # to that GPU (tracers said "cpu", and the constant then clashed with x)
    seen = []

    def loss(x):
        seen.append(x.device)
        labels = fg.tensor([1.0, 0.0, 2.0]).to(x.device)
        return (x * labels).sum()

    x = fg.tensor([1.0, 2.0, 3.0]).to("cuda:1")
    assert fg.grad(loss)(x).tolist() == [1.0, 0.0, 2.0]
    assert fg.vmap(loss)(fg.ones((2, 3)).to("cuda:1")).tolist() == [3.0, 3.0]
    fg.jit(loss).lower(x)
    fg.jit(fg.grad(loss)).lower(x)
    fg.jit(loss).lower(fg.tensor([1.0, 2.0, 3.0]))  # CPU arguments: traced for the CPU
    assert seen == [CUDA1] * 4 + [fg.device("cpu")]


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_contiguous_keeps_the_shape_of_gpu_arrays(shape):
    # jit hands GPU arguments to IREE through gpu.contiguous; a 0-d one came out 1-d
    # ("input2 shape rank mismatch; expected 0 (scalar) but have 1" on an H200)
    x = fg.tensor(np.arange(float(np.prod(shape))).reshape(shape)).to("cuda:0")._buf
    assert gpu.contiguous(x).shape == shape
    if len(shape) == 2:
        transposed = gpu.contiguous(x.T)
        assert transposed.shape == (3, 2) and transposed.flags.c_contiguous
        np.testing.assert_array_equal(np.asarray(transposed), np.asarray(x).T)
