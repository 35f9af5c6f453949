"""Devices: listing, lookup by name, Tensor.device, device_put, and clear errors."""

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.core import devices as devices_module


def test_devices_lists_cpu_first():
    listed = fg.devices()
    assert isinstance(listed, list) and listed
    assert all(isinstance(d, fg.Device) for d in listed)
    assert listed[0] == fg.device("cpu")
    assert str(listed[0]) == "cpu"
    assert all(str(d).startswith("cuda:") for d in listed[1:])


def test_device_lookup_and_equality():
    cpu = fg.device("cpu")
    assert cpu.platform == "cpu" and cpu.id == 0
    assert fg.device("CPU") == cpu
    assert fg.device(cpu) is cpu
    assert repr(cpu) == "device('cpu')"
    assert hash(cpu) == hash(fg.device("cpu"))
    assert cpu != fg.Device("cuda", 0)


@pytest.mark.parametrize("bad", ["tpu", "cpu:1", "cuda:x", "", "metal:0"])
def test_unknown_device_string_lists_valid_ones(bad):
    with pytest.raises(ValueError, match="unknown device") as info:
        fg.device(bad)
    message = str(info.value)
    assert "cpu" in message and "cuda" in message


def test_device_of_wrong_type():
    with pytest.raises(TypeError, match="cpu"):
        fg.device(0)


def test_tensor_device_attribute():
    assert fg.tensor([1.0]).device == fg.device("cpu")
    assert fg.zeros(3).device == fg.device("cpu")
    assert (fg.ones(2) + 1).device == fg.device("cpu")
    assert fg.tensor([1.0], device="cpu").device == fg.device("cpu")


def test_device_put_on_a_tree():
    tree = {"w": fg.ones((2, 2)), "b": [np.zeros(3, np.float64), 1.5], "none": None}
    out = fg.device_put(tree, fg.device("cpu"))
    assert isinstance(out["w"], fg.Tensor) and out["w"].device == fg.device("cpu")
    assert isinstance(out["b"][0], fg.Tensor) and out["b"][0].dtype == fg.float64
    assert isinstance(out["b"][1], fg.Tensor) and out["b"][1].dtype == fg.float32
    assert out["none"] is None
    np.testing.assert_array_equal(np.asarray(out["w"]), np.ones((2, 2)))
    assert fg.device_put(fg.ones(2)).device == fg.device("cpu")
    assert fg.device_put(fg.ones(2), "cpu").tolist() == [1.0, 1.0]


def test_tensor_to_cpu():
    t = fg.tensor([1.0, 2.0])
    moved = t.to("cpu")
    assert moved.device == fg.device("cpu") and moved.tolist() == [1.0, 2.0]


@pytest.mark.skipif(len(fg.devices()) > 1, reason="a GPU is visible")
def test_cuda_without_gpu_is_runtime_error():
    with pytest.raises(RuntimeError, match="cuda:0"):
        fg.device("cuda:0")
    with pytest.raises(RuntimeError):
        fg.device("cuda")
    with pytest.raises(RuntimeError):
        fg.tensor([1.0], device="cuda:0")
    with pytest.raises(RuntimeError):
        fg.zeros(3, device="cuda")
    with pytest.raises(RuntimeError):
        fg.ones(2).to("cuda:0")


def test_cuda_without_gpu_is_runtime_error_when_cupy_sees_none(monkeypatch):
    monkeypatch.setattr(devices_module, "_cuda_device_count", lambda: 0)
    assert fg.devices() == [fg.device("cpu")]
    with pytest.raises(RuntimeError, match="not available"):
        fg.device("cuda:0")


def test_cuda_index_beyond_count(monkeypatch):
    monkeypatch.setattr(devices_module, "_cuda_device_count", lambda: 1)
    assert fg.devices() == [fg.device("cpu"), fg.Device("cuda", 0)]
    assert fg.device("cuda:0") == fg.Device("cuda", 0)
    assert fg.device("gpu") == fg.Device("cuda", 0)
    with pytest.raises(ValueError, match="cuda:3"):
        fg.device("cuda:3")
