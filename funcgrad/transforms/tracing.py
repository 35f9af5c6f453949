"""Tracing to IR: an interpreter that records primitive applications as equations.

With ``stage_all=True`` (make_ir, jit, control-flow bodies) every application is
recorded.  With ``stage_all=False`` it is a partial evaluator: applications whose inputs
are all known (not this interpreter's tracers) run at once in the parent, and only those
touching unknown values are recorded; linearize uses this to split a JVP into the primal
computation (done now) and the linear tangent program (the IR).
"""

from __future__ import annotations

import numpy as np

from funcgrad.core import interpreter as _interp
from funcgrad.core.abstract import ShapedArray, aval_of
from funcgrad.core.devices import CPU
from funcgrad.core.interpreter import Interpreter, Tracer
from funcgrad.core.ir import IR, Equation, Literal, Var, eval_ir
from funcgrad.core.tensor import Tensor


class IRTracer(Tracer):
    """A value being traced into an IR: it stands for one IR variable.  Inputs carry a
    ``label`` (which argument they are) so errors can name it."""

    __slots__ = ("ir_var", "label")

    def __init__(self, interp, var, label=None):
        self._interp = interp
        self.ir_var = var
        self.label = label

    @property
    def aval(self) -> ShapedArray:
        return self.ir_var.aval

    @property
    def device(self):
        """The device the traced program is compiled for (jit: its arguments' GPU)."""
        return self._interp.device


def _derived_label(args):
    """Where a traced value came from, for error messages: the first labelled input."""
    for a in args:
        label = getattr(a, "label", None) if isinstance(a, IRTracer) else None
        if label:
            return label if label.startswith("a value computed") else \
                f"a value computed from {label}"
    return None


def check_callable(transform: str, fun):
    """Refuse a non-callable ``fun`` when the transformation is made (as JAX), not at its
    first call, where the error would point away from the mistake."""
    if not callable(fun):
        raise TypeError(f"{transform}: expected a function (a callable) to transform, got "
                        f"{type(fun).__name__} {fun!r:.60}; pass the function itself, "
                        f"e.g. fg.{transform}(f), not its result f(x)")


def check_not_leaked(value):
    if isinstance(value, Tracer) and not value._interp.active:
        raise _interp._leaked(value)


class TraceInterpreter(Interpreter):
    """Records primitive applications into an IR (see the module docstring)."""

    def __init__(self, parent, *, stage_all: bool = True, name: str = "make_ir"):
        super().__init__(parent)
        self.stage_all = stage_all
        self.name = name
        # the device the program runs on (IRTracer.device); nested traces inherit it
        self.device = getattr(parent, "device", None) or CPU
        self.equations: list[Equation] = []
        self.const_vars: list[Var] = []
        self.consts: list = []
        self._const_ids: dict[int, Var] = {}

    def new_arg(self, aval: ShapedArray, label=None) -> IRTracer:
        return IRTracer(self, Var(aval), label)

    def is_own(self, x) -> bool:
        return isinstance(x, IRTracer) and x._interp is self

    def to_var(self, x):
        if isinstance(x, IRTracer) and x._interp is self:
            return x.ir_var
        check_not_leaked(x)
        if isinstance(x, (bool, int, float, complex)):
            return Literal(np.asarray(x))
        if isinstance(x, np.ndarray) and x.ndim == 0:
            return Literal(x)
        if type(x) is Tensor and x.ndim == 0 and x.size == 1:
            return Literal(x._host(), x._weak)
        var = self._const_ids.get(id(x))
        if var is None:
            var = Var(aval_of(x).strip_weak() if not isinstance(x, Tensor) else x.aval)
            self._const_ids[id(x)] = var
            self.const_vars.append(var)
            self.consts.append(x)
        return var

    def process(self, prim, args, params):
        if not self.stage_all:
            if not any(self.is_own(a) for a in args):
                return self.forward(prim, args, params)
            if prim.partial_eval is not None:
                return prim.partial_eval(self, args, params)
        inputs = [self.to_var(a) for a in args]
        out_avals = prim.abstract_eval(*[v.aval for v in inputs], **params)
        label = _derived_label(args)
        if prim.multiple_results:
            outs = [Var(a) for a in out_avals]
            self.equations.append(Equation(prim, inputs, params, outs))
            return [IRTracer(self, v, label) for v in outs]
        out = Var(out_avals)
        self.equations.append(Equation(prim, inputs, params, [out]))
        return IRTracer(self, out, label)

    def stage(self, prim, args, params, out_avals):
        """Record ``prim`` applied to ``args`` with the given output avals."""
        inputs = [self.to_var(a) for a in args]
        outs = [Var(a) for a in out_avals]
        self.equations.append(Equation(prim, inputs, params, outs))
        return [IRTracer(self, v) for v in outs]

    def build(self, in_tracers, outputs) -> IR:
        """The IR from ``in_tracers`` to ``outputs`` (tracers or constants)."""
        in_vars = [t.ir_var for t in in_tracers]
        out_vars = [self.to_var(o) for o in outputs]
        self.active = False
        return IR(in_vars, self.equations, out_vars, self.const_vars, self.consts)


def trace_to_ir(fun, in_avals, *, name: str = "make_ir", stage_all: bool = True, labels=None,
                device=None):
    """Trace ``fun(*tracers) -> list of values`` into an IR with the given input avals
    (``labels`` name the inputs in error messages; ``device``: where the program will
    run, what the tracers' ``.device`` reports, by default where the tracing runs)."""
    tracer = TraceInterpreter(_interp.current(), stage_all=stage_all, name=name)
    if device is not None:
        tracer.device = device
    labels = labels or [None] * len(in_avals)
    args = [
        tracer.new_arg(a, label and f"argument {label}")
        for a, label in zip(in_avals, labels, strict=False)
    ]
    try:
        with _interp.using(tracer):
            outs = fun(*args)
    except BaseException:
        tracer.active = False
        raise
    return tracer.build(args, outs)


def hoist_consts(ir: IR) -> tuple[IR, list]:
    """The same program with its constants turned into leading inputs."""
    closed = IR(ir.const_vars + ir.in_vars, ir.equations, ir.outputs)
    return closed, list(ir.consts)


def ir_as_function(ir: IR):
    """A Python function evaluating ``ir`` (for re-tracing under a transformation)."""
    return lambda *args: eval_ir(ir, *args)


def _holds_arrays(value) -> bool:
    """Whether every leaf of ``value`` is an array or a number (a traceable argument)."""
    import optree

    leaves = optree.tree_leaves(value, namespace="funcgrad")
    return bool(leaves) and all(
        isinstance(x, (Tensor, np.ndarray, np.generic, bool, int, float, complex))
        for x in leaves)


def make_ir(fun, static_argnums=()):
    """``make_ir(fun)(*args)`` traces ``fun`` on arguments like ``args`` and returns the IR;
    arguments at ``static_argnums`` are passed as Python values, not traced.

    >>> print(fg.make_ir(lambda x: fnp.sin(x).sum())(fg.ones(3)))
    { lambda ; a:f32[3]. let
        b:f32[3] = sin a
        c:f32[] = reduce_sum[axes=(0,)] b
      in (c,) }
    """
    import functools

    import optree

    from funcgrad.transforms.ad import as_tensor

    check_callable("make_ir", fun)
    static = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)

    @functools.wraps(fun)
    def traced(*args, **kwargs):
        # keyword arguments holding arrays are inputs too, after the positional ones (as
        # make_jaxpr's); others (a mode string) are passed as they are
        fixed = {i % len(args) for i in static if -len(args) <= i < len(args)}
        dynamic = [a for i, a in enumerate(args) if i not in fixed]
        traced_kw = {k: v for k, v in kwargs.items() if _holds_arrays(v)}
        flat, in_tree = optree.tree_flatten((dynamic, traced_kw), namespace="funcgrad")
        flat = [as_tensor(x) for x in flat]

        def flat_fun(*tracers):
            dyn, kw = optree.tree_unflatten(in_tree, list(tracers))
            it = iter(dyn)
            full = [args[i] if i in fixed else next(it) for i in range(len(args))]
            out = fun(*full, **{**kwargs, **kw})
            return optree.tree_leaves(out, namespace="funcgrad")

        return trace_to_ir(flat_fun, [x.aval for x in flat])

    return traced
