"""Compiling for NVIDIA GPUs works on any machine; running needs one (skipped otherwise)."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path))


def _mlp(x, w1, w2):
    return fnp.tanh(fnp.tanh(x @ w1) @ w2).sum()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_for_cuda_and_the_ptx_targets_the_architecture(arch):
    args = (fg.ones((8, 16)), fg.ones((16, 32)), fg.ones((32, 4)))
    artifact = fg.jit(fg.grad(_mlp, argnums=1)).lower(*args).compile(target="cuda", arch=arch)
    assert isinstance(artifact, bytes) and len(artifact) > 1000
    assert f".target {arch}".encode() in artifact  # the embedded PTX
    assert b".entry" in artifact and b"main_dispatch" in artifact  # named kernels


def test_unknown_architecture_is_a_clear_error():
    with pytest.raises(ValueError, match="sm_80"):
        fg.jit(fnp.sin).lower(fg.ones(3)).compile(target="cuda", arch="sm_7")


def test_cuda_device_without_gpu_raises_runtime_error():
    if any(d.platform == "cuda" for d in fg.devices()):
        pytest.skip("a GPU is present; this checks the no-GPU error")
    with pytest.raises(RuntimeError, match="cuda"):
        fg.device("cuda:0")


@pytest.mark.skipif(not any(d.platform == "cuda" for d in fg.devices()),
                    reason="needs an NVIDIA GPU visible to CuPy (none on this machine)")
def test_runs_on_the_gpu():
    x = fg.device_put(fg.tensor(np.arange(4.0, dtype=np.float32)), fg.device("cuda:0"))
    np.testing.assert_allclose(np.asarray(fg.jit(fnp.sin)(x)), np.sin(np.arange(4.0)))
