"""Exporting functions: ``to_onnx`` (an ONNX model for ONNX Runtime and other runtimes)
and ``to_mlir`` (the StableHLO text ``fg.jit`` compiles).

Importing this package attaches every primitive's ONNX rule (``funcgrad.export.rules``);
the ``onnx`` package itself is imported only when a model is built.

>>> import funcgrad.export
>>> model = funcgrad.export.to_onnx(lambda x: x * 2, fg.ones(3))
>>> [i.name for i in model.graph.input], [o.name for o in model.graph.output]
(['x'], ['output'])
>>> print(funcgrad.export.to_mlir(lambda x: x * 2, fg.ones(3)))
module {
  func.func @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<3xf32>
    %0 = stablehlo.multiply %arg0, %cst : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
<BLANKLINE>
"""

from funcgrad.export import rules as _rules  # noqa: F401  (attaches prim.onnx rules)
from funcgrad.export.mlir import to_mlir
from funcgrad.export.onnx import DEFAULT_OPSET, to_onnx

__all__ = ["DEFAULT_OPSET", "to_mlir", "to_onnx"]
