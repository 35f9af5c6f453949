"""Device-resident jit results and their host views."""

import gc

import numpy as np
import pytest

import funcgrad as fg
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
    np.testing.assert_array_equal(np.asarray(out), np.full(8, 3.0, np.float32))
    with pytest.raises(ValueError):
        np.asarray(out)[0] = 1.0  # host views are read-only: tensors are immutable
