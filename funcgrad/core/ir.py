"""The IR: a typed SSA program (like a jaxpr) that tracing produces and jit lowers.

An ``IR`` has input variables, a list of equations ``outs = prim[params](ins)`` and
outputs; constants captured while tracing are ``const_vars`` bound to ``consts``.  Printing
one shows a line per equation with shapes and dtypes::

    { lambda ; a:f32[3]. let
        b:f32[3] = sin a
        c:f32[] = reduce_sum[axes=(0,)] b
      in (c,) }
"""

from __future__ import annotations

import itertools

import numpy as np

from funcgrad.core.abstract import ShapedArray, aval_of
from funcgrad.core.tensor import wrap


class Var:
    """A value defined once in an IR (an input or an equation output)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval})"


class Literal:
    """A scalar constant written inline in an equation."""

    __slots__ = ("value", "aval")

    def __init__(self, value, weak: bool = False):
        self.value = value
        self.aval = aval_of(value)
        if weak:  # a weakly typed scalar (a Python number after promotion) stays weak
            self.aval = ShapedArray(self.aval.shape, self.aval.dtype, True)

    def __repr__(self) -> str:
        return f"Literal({self.value!r})"


class Equation:
    """``outputs = prim[params](*inputs)``."""

    __slots__ = ("prim", "inputs", "params", "outputs")

    def __init__(self, prim, inputs, params, outputs):
        self.prim = prim
        self.inputs = list(inputs)
        self.params = dict(params)
        self.outputs = list(outputs)


class IR:
    """A traced program: ``in_vars`` -> ``equations`` -> ``outputs``, with constants."""

    def __init__(self, in_vars, equations, outputs, const_vars=(), consts=()):
        self.in_vars = list(in_vars)
        self.equations = list(equations)
        self.outputs = list(outputs)
        self.const_vars = list(const_vars)
        self.consts = list(consts)
        self._has_effects = None  # see _program_has_effects

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.in_vars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outputs]

    def __str__(self) -> str:
        return pretty_print(self)

    __repr__ = __str__


def subprograms(eqn: Equation) -> list[IR]:
    """The programs in ``eqn``'s parameters (loop bodies, branches, called functions)."""
    return [sub for value in eqn.params.values()
            for sub in (value if isinstance(value, tuple) else (value,)) if isinstance(sub, IR)]


def has_effects(eqn: Equation) -> bool:
    """Whether ``eqn`` does more than compute its outputs: an effectful primitive (a debug
    print), also inside the programs in its parameters."""
    return eqn.prim.effectful or any(_program_has_effects(sub) for sub in subprograms(eqn))


def _program_has_effects(program: IR) -> bool:
    # remembered on the program: lowering asks again at every level of nesting, and a walk
    # each time would be quadratic in the depth
    found = program._has_effects
    if found is None:
        found = program._has_effects = any(has_effects(eqn) for eqn in program.equations)
    return found


def live_equations(ir: IR) -> list[Equation]:
    """``ir``'s equations that its outputs need or that have effects, in order."""
    needed = {v for v in ir.outputs if isinstance(v, Var)}
    live = []
    for eqn in reversed(ir.equations):
        if has_effects(eqn) or any(v in needed for v in eqn.outputs):
            live.append(eqn)
            needed.update(x for x in eqn.inputs if isinstance(x, Var))
    return live[::-1]


def eval_ir(ir: IR, *args, consts=None):
    """Run ``ir`` on ``args`` by binding each equation's primitive to the current
    interpreter, so evaluating an IR composes with every transformation."""
    env = {}
    for var, value in zip(ir.const_vars, ir.consts if consts is None else consts, strict=False):
        env[var] = value
    if len(args) != len(ir.in_vars):
        raise TypeError(f"IR takes {len(ir.in_vars)} inputs, got {len(args)}")
    for var, value in zip(ir.in_vars, args, strict=False):
        env[var] = value

    def read(x):
        return wrap(np.asarray(x.value)) if isinstance(x, Literal) else env[x]

    for eqn in ir.equations:
        outs = eqn.prim.bind(*[read(x) for x in eqn.inputs], **eqn.params)
        if eqn.prim.multiple_results:
            for var, value in zip(eqn.outputs, outs, strict=False):
                env[var] = value
        else:
            env[eqn.outputs[0]] = outs
    return [read(x) for x in ir.outputs]


# --- printing ---------------------------------------------------------------------------


def _names():
    for size in itertools.count(1):
        for letters in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=size):
            yield "".join(letters)


class _Namer:
    def __init__(self):
        self.names = {}
        self.fresh = _names()

    def __call__(self, x) -> str:
        if isinstance(x, Literal):
            value = np.asarray(x.value)
            return repr(value.item()) if value.ndim == 0 else f"const{value.shape}"
        if x not in self.names:
            self.names[x] = next(self.fresh)
        return self.names[x]

    def typed(self, var) -> str:
        return f"{self(var)}:{var.aval.str_short()}"


def _format_param(value, indent: int) -> str:
    if isinstance(value, IR):
        inner = pretty_print(value, indent + 4).strip()
        return inner
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, IR) for v in value):
        return "(" + ", ".join(pretty_print(v, indent + 4).strip() for v in value) + ")"
    if isinstance(value, np.dtype):
        return value.name
    return repr(value)


def pretty_print(ir: IR, indent: int = 0) -> str:
    """The readable text of an IR: one line per equation, with shapes and dtypes."""
    name = _Namer()
    pad = " " * indent
    consts = " ".join(name.typed(v) for v in ir.const_vars)
    ins = " ".join(name.typed(v) for v in ir.in_vars)
    lines = [f"{pad}{{ lambda {consts}; {ins}. let"]
    for eqn in ir.equations:
        outs = " ".join(name.typed(v) for v in eqn.outputs)
        params = ""
        if eqn.params:
            params = "[" + ", ".join(f"{k}={_format_param(v, indent + 4)}"
                                     for k, v in sorted(eqn.params.items())) + "]"
        args = " ".join(name(x) for x in eqn.inputs)
        lines.append(f"{pad}    {outs} = {eqn.prim.name}{params} {args}")
    outs = ", ".join(name(x) for x in ir.outputs)
    lines.append(f"{pad}  in ({outs},) }}")
    return "\n".join(lines)
