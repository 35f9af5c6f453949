"""Checking an export: run the ONNX model in ONNX Runtime and compare with funcgrad.

>>> from funcgrad.export.testing import check_onnx
>>> check_onnx(lambda x: fnp.tanh(x) * 2, fg.ones(3))
[array([1.5231884, 1.5231884, 1.5231884], dtype=float32)]
"""

from __future__ import annotations

import numpy as np

from funcgrad.core import dtypes


def _leaves(tree):
    import optree

    return [np.asarray(x) for x in optree.tree_leaves(tree, namespace="funcgrad")]


def run_exported(fun, *args, path=None):
    """``(ONNX Runtime's outputs, funcgrad's outputs)`` of ``fun(*args)`` as lists of
    NumPy arrays (the leaves of the output pytree), exporting with ``to_onnx`` first."""
    import onnxruntime

    from funcgrad.export.onnx import to_onnx

    model = to_onnx(fun, *args, path=path)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(model.graph.input, _leaves(args), strict=True)}
    return session.run(None, feeds), _leaves(fun(*args))


def _tolerance(dtype) -> float:
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return 1e-12
    if dtype == np.float32:
        return 2e-6
    if dtypes.is_inexact(dtype):
        return 1e-2
    return 0.0


def check_onnx(fun, *args, rtol: float | None = None, atol: float | None = None):
    """Export ``fun``, run it in ONNX Runtime on ``args`` and assert the results equal
    funcgrad's: same shapes and dtypes, values exact for integers and bools and within
    ``rtol``/``atol`` (by default a few ulps of the dtype) for floats.  Returns ONNX
    Runtime's outputs."""
    got, want = run_exported(fun, *args)
    assert len(got) == len(want), f"{len(got)} outputs from ONNX Runtime, {len(want)} expected"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, f"output {k}: shape {g.shape}, expected {w.shape}"
        assert g.dtype == w.dtype, f"output {k}: dtype {g.dtype}, expected {w.dtype}"
        tol = _tolerance(w.dtype) if rtol is None else rtol
        if tol == 0:
            np.testing.assert_array_equal(g, w, err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol,
                                       atol=tol if atol is None else atol, equal_nan=True,
                                       err_msg=f"output {k}")
    return got
