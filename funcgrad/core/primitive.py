"""Primitive: one operation the whole library is built from, with all of its rules.

A primitive is declared once, in the module of its family, with every rule side by side:

- ``impl``: the NumPy implementation (eager execution);
- ``abstract_eval``: the shape/dtype rule, from ``ShapedArray``s to ``ShapedArray``(s);
- ``jvp``: ``jvp(primals, tangents, **params) -> (primal_out, tangent_out)``, where a
  ``None`` tangent is a symbolic zero; written with funcgrad ops so it differentiates again;
- ``transpose``: for linear primitives, ``transpose(cotangent, *args, **params)`` returning
  one cotangent (or ``None``) per argument; linear arguments arrive as ``UndefinedPrimal``;
- ``batch``: ``batch(axis_size, args, dims, **params) -> (out, out_dim)``;
- ``lower``: the MLIR lowering rule (jit), ``onnx``: the ONNX export rule;
- ``partial_eval`` (higher-order primitives only): how linearize splits an application
  with some unknown inputs into work done now and work recorded.

``prim.bind(*args, **params)`` hands the application to the current interpreter.
"""

from __future__ import annotations

from funcgrad.core import interpreter as _interp

registry: dict[str, Primitive] = {}


class Primitive:
    """A named operation with its rules; see the module docstring.

    ``linear`` marks primitives that are linear in their (floating) arguments and so
    need a transpose rule; ``keeps_weak`` marks primitives whose output stays weakly
    typed when every input is; ``effectful`` ones do more than compute their outputs (a
    debug print), so they run even when nothing reads their results.
    """

    def __init__(self, name: str, *, multiple_results: bool = False, linear: bool = False,
                 keeps_weak: bool = True, differentiable: bool = True, effectful: bool = False):
        if name in registry:
            raise ValueError(f"primitive {name!r} is declared twice")
        self.name = name
        self.multiple_results = multiple_results
        self.linear = linear
        self.keeps_weak = keeps_weak
        self.differentiable = differentiable
        self.effectful = effectful
        self.impl = None
        self.abstract_eval = None
        self.jvp = None
        self.transpose = None
        self.batch = None
        self.lower = None
        self.onnx = None
        self.partial_eval = None
        # eager impl receives Tensors, not NumPy arrays (jit_call keeps device buffers)
        self.takes_tensors = False
        registry[name] = self

    def bind(self, *args, **params):
        return _interp.current().process(self, args, params)

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


class UndefinedPrimal:
    """Stands for a linear argument during transposition; only its abstract value is known."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval})"


def is_undefined(x) -> bool:
    return isinstance(x, UndefinedPrimal)
