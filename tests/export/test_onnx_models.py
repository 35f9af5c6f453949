"""Whole models exported to ONNX and run in ONNX Runtime: an MLP, a CNN, attention, RNNs."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn.functional as F
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.export.testing import check_onnx, run_exported

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

rng = np.random.default_rng(0)


def normal(*shape, dtype=np.float32):
    return fg.tensor(rng.normal(size=shape).astype(dtype))


def mlp(params, x):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    h = fnp.maximum(h @ params["w2"] + params["b2"], 0.0)
    return F.log_softmax(h @ params["w3"], -1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_with_dict_of_weights(dtype):
    params = {"w1": normal(4, 16, dtype=dtype), "b1": normal(16, dtype=dtype),
              "w2": normal(16, 8, dtype=dtype), "b2": normal(8, dtype=dtype),
              "w3": normal(8, 3, dtype=dtype)}
    check_onnx(mlp, params, normal(5, 4, dtype=dtype))


def test_mlp_inputs_and_outputs_are_named_from_pytree_paths():
    params = {"w1": normal(4, 16), "b1": normal(16), "w2": normal(16, 8), "b2": normal(8),
              "w3": normal(8, 3)}
    model = fg.export.to_onnx(lambda params, x: {"logits": mlp(params, x), "n": x.sum()},
                              params, normal(5, 4))
    assert [i.name for i in model.graph.input] == ["params_b1", "params_b2", "params_w1",
                                                    "params_w2", "params_w3", "x"]
    assert [o.name for o in model.graph.output] == ["output_logits", "output_n"]


def test_mlp_with_weights_baked_in_as_initializers():
    params = {"w1": normal(4, 16), "b1": normal(16), "w2": normal(16, 8), "b2": normal(8),
              "w3": normal(8, 3)}
    model = fg.export.to_onnx(lambda x: mlp(params, x), normal(5, 4))
    assert [i.name for i in model.graph.input] == ["x"]
    assert len(model.graph.initializer) >= 5
    check_onnx(lambda x: mlp(params, x), normal(5, 4))


def test_cnn_module():
    k = fg.random.split(fg.random.key(0), 3)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, key=k[0]), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3, stride=2, key=k[1]), nn.GELU(), nn.AvgPool2d(1), nn.Flatten(),
        nn.Linear(8, 10, key=k[2]))
    check_onnx(lambda m, x: F.log_softmax(m(x), -1), model, normal(2, 1, 8, 8), rtol=1e-5)


def test_cnn_from_funcgrad_ops():
    """A convolution written with pad, strided slices and einsum, and a max pool."""
    w, b = normal(6, 3, 3, 3), normal(6)

    def conv(x):
        x = fnp.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        h, w_ = x.shape[2] - 2, x.shape[3] - 2
        patches = fnp.stack([x[:, :, i:i + h:2, j:j + w_:2] for i in range(3)
                             for j in range(3)], -1)
        patches = patches.reshape(*patches.shape[:-1], 3, 3)
        y = fnp.einsum("nchwij,ocij->nohw", patches, w) + b[:, None, None]
        y = fnp.maximum(y, 0.0)
        n, c, hh, ww = y.shape
        return y.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))

    check_onnx(conv, normal(2, 3, 8, 8), rtol=1e-5)


def test_attention_block_with_mask():
    wq, wk, wv = normal(8, 8), normal(8, 8), normal(8, 8)

    def attention(x, mask):
        q, k, v = x @ wq, x @ wk, x @ wv
        scores = q @ fnp.swapaxes(k, -1, -2) / np.sqrt(8.0)
        scores = fnp.where(mask, scores, -1e9)
        return F.softmax(scores, -1) @ v

    mask = fg.tensor(np.tril(np.ones((5, 5), bool)))
    check_onnx(attention, normal(2, 5, 8), mask, rtol=1e-5)


def test_multihead_attention_module_causal():
    mha = nn.MultiheadAttention(8, 2, key=fg.random.key(1))
    check_onnx(lambda m, q: m(q, q, q, is_causal=True), mha, normal(2, 5, 8), rtol=1e-5)


def test_layer_norm_and_gelu():
    ln = nn.LayerNorm(8)
    check_onnx(lambda m, x: F.gelu(m(x)), ln, normal(3, 8), rtol=1e-5)


def test_scan_rnn():
    w_x, w_h = normal(4, 6), normal(6, 6)

    def rnn(xs, h0):
        def step(h, x):
            h = fnp.tanh(x @ w_x + h @ w_h)
            return h, h.sum(-1)

        return fg.scan(step, h0, xs)

    check_onnx(rnn, normal(7, 2, 4), normal(2, 6), rtol=1e-5)


def test_gru_cell_over_a_sequence():
    cell = nn.GRUCell(8, 6, key=fg.random.key(2))

    def run(cell, xs):
        return fg.scan(lambda h, x: (cell(x, h), cell(x, h).mean()), fg.zeros((2, 6)), xs)

    check_onnx(run, cell, normal(5, 2, 8), rtol=1e-5)


def test_exported_gradient_of_a_loss():
    """fg.grad's program is an IR like any other: a training step exports."""

    def loss(w, x, y):
        return ((fnp.tanh(x @ w) - y) ** 2).mean()

    def step(w, x, y):
        return w - 0.1 * fg.grad(loss)(w, x, y)

    check_onnx(step, normal(4, 3), normal(8, 4), normal(8, 3), rtol=1e-5)


def test_written_file_runs(tmp_path):
    import onnxruntime as ort

    path = tmp_path / "mlp.onnx"
    x = normal(3, 4)
    got, want = run_exported(lambda x: fnp.sin(x) * 2, x, path=path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (from_file,) = session.run(None, {"x": np.asarray(x)})
    np.testing.assert_allclose(from_file, want[0], rtol=1e-6)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]
