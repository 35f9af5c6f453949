"""The export API: every primitive has an ONNX rule, clear errors, options, to_mlir."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import export
from funcgrad.core.primitive import registry
from funcgrad.export.testing import check_onnx

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def test_every_primitive_has_an_onnx_rule():
    missing = sorted(name for name, prim in registry.items() if prim.onnx is None)
    assert not missing, f"primitives without an ONNX rule: {missing}"


def test_a_primitive_without_a_rule_is_named(monkeypatch):
    monkeypatch.setattr(registry["sin"], "onnx", None)

    def my_model(x):
        return fnp.sin(x)

    with pytest.raises(NotImplementedError, match=r"my_model.*'sin' has no ONNX"):
        export.to_onnx(my_model, fg.ones(3))


@pytest.mark.parametrize("fun, name", [
    (lambda x: fnp.linalg.cholesky(x @ x.T + fnp.eye(3)), "cholesky"),
    (lambda x: fnp.linalg.svd(x)[1], "svd"),
    (lambda x: fnp.abs(fnp.fft.fft(x)), "complex"),  # the fft of a real x starts there
    (lambda x: x + fg.random.normal(fg.random.key(0), (3, 3)), "bitcast_convert_type"),
])
def test_unsupported_primitives_are_named(fun, name):
    with pytest.raises(NotImplementedError, match=rf"to_onnx\(.*'{name}' cannot be exported"):
        export.to_onnx(fun, fg.ones((3, 3)))


def test_debug_print_cannot_be_exported():
    def noisy(x):
        fg.debug.print("x = {x}", x=x)
        return x * 2

    with pytest.raises(NotImplementedError, match=r"noisy.*debug_print.*side effect"):
        export.to_onnx(noisy, fg.ones(3))


def test_complex_values_are_rejected():
    with pytest.raises(NotImplementedError, match="complex"):
        export.to_onnx(lambda z: z * 2, fg.tensor(np.ones(3, np.complex64)))


def test_opset_option():
    with pytest.raises(ValueError, match="opset 13"):
        export.to_onnx(lambda x: x + 1, fg.ones(3), opset=13)
    model = export.to_onnx(lambda x: x + 1, fg.ones(3), opset=20)
    assert model.opset_import[0].version == 20


def test_constant_outputs_and_passthrough():
    check_onnx(lambda x: (x, x, fg.tensor(3.0), x.shape[0] * fg.ones(2)), fg.ones(3))


def test_names_are_unique_and_sanitized():
    model = export.to_onnx(lambda a, *rest: {"a b": a, "a_b": rest[0], 1: rest[1]},
                           fg.ones(1), fg.ones(2), {"k-1": fg.ones(3)})
    assert [i.name for i in model.graph.input] == ["a", "arg1", "arg2_k_1"]
    outputs = [o.name for o in model.graph.output]
    assert len(set(outputs)) == 3 and all(n.replace("_", "").isalnum() for n in outputs)


def test_argument_names_never_clash_with_outputs_or_inner_values():
    # "output" as an argument, or names like the inner values' (mul_1, const_2), made
    # models that failed the checker
    def scale(output, mul_1, const_2):
        return output * 2 + mul_1 * const_2

    model = export.to_onnx(scale, fg.ones(3), fg.ones(3), fg.ones(3))
    assert [i.name for i in model.graph.input] == ["output", "mul_1", "const_2"]
    assert [o.name for o in model.graph.output] == ["output_1"]
    check_onnx(scale, fg.ones(3), fg.tensor([1.0, 2.0, 3.0]), fg.full((3,), 0.5))


def test_a_modules_inputs_are_named_by_its_forward():
    from funcgrad import nn, random

    model = export.to_onnx(nn.Linear(3, 2, key=random.key(0)), fg.ones((4, 3)))
    assert [i.name for i in model.graph.input] == ["x"]
    assert model.graph.name == "Linear"  # the class, not a repr listing the parameters


def test_path_writes_a_checked_model(tmp_path):
    import onnx

    path = tmp_path / "model.onnx"
    returned = export.to_onnx(lambda x: fnp.exp(x), fg.ones(3), path=path)
    loaded = onnx.load(str(path))
    onnx.checker.check_model(loaded)
    assert loaded.SerializeToString() == returned.SerializeToString()
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]  # no temporary left


def test_a_path_that_cannot_be_written_is_named_before_tracing(tmp_path):
    traced = []

    def f(x):
        traced.append(x)
        return x * 2

    with pytest.raises(FileNotFoundError, match="to_onnx: the directory of .*missing"):
        export.to_onnx(f, fg.ones(3), path=tmp_path / "missing" / "m.onnx")
    with pytest.raises(IsADirectoryError, match="to_onnx: .* is a directory"):
        export.to_onnx(f, fg.ones(3), path=tmp_path)
    assert traced == []


def test_to_mlir_is_what_jit_compiles():
    def f(x):
        return fnp.sin(x).sum()

    text = export.to_mlir(f, fg.ones(3))
    assert "func.func" in text and "tensor<3xf32>" in text
    assert text == fg.jit(f).lower(fg.ones(3)).as_text()
