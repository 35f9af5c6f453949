"""to_mlir: the StableHLO MLIR text that ``fg.jit`` compiles for given arguments."""

from __future__ import annotations


def to_mlir(fun, *example_args) -> str:
    """The MLIR module ``fg.jit(fun)`` lowers to for arguments like ``example_args``.

    Arguments:
        fun: the function (pytrees of tensors in and out).
        example_args: arguments fixing the shapes, dtypes and tree structure.

    >>> import funcgrad.export
    >>> print(funcgrad.export.to_mlir(lambda x: fnp.sin(x).sum(), fg.ones(3)))
    module {
      func.func @main(%arg0: tensor<3xf32>) -> tensor<f32> {
    ...
    """
    from funcgrad.transforms.jit import jit

    return jit(fun).lower(*example_args).as_text()
