"""IR -> ONNX: ``to_onnx`` traces a function and emits one or a few ONNX nodes per equation.

Each primitive's ``onnx`` rule (attached by ``funcgrad.export.rules``) has the signature
``rule(ctx, args, in_avals, out_avals, **params)``: ``args`` are the ONNX value names of the
equation's inputs, and it returns the value names of its outputs, built with the
``OnnxContext`` helpers below (``op``, ``const``, ``full``, ``cast``, ``emit_ir``,
``child`` for the sub-graphs of ``If``/``Loop``).  The ``onnx`` package is imported only
when a model is built, so ``import funcgrad`` never needs it.
"""

from __future__ import annotations

import inspect
import os
import re

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.ir import IR, Literal
from funcgrad.io import check_destination, write_atomically

DEFAULT_OPSET = 18
_MIN_OPSET = 18  # reductions take axes as an input, ScatterND has min/max, Bitwise* exist


def _onnx():
    try:
        import onnx
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("funcgrad.export.to_onnx needs the onnx package: "
                          "pip install 'funcgrad[export]' (or pip install onnx)") from err
    return onnx


def onnx_dtype(dtype) -> int:
    """The ``onnx.TensorProto`` element type of a NumPy dtype."""
    onnx = _onnx()
    dtype = np.dtype(dtype)
    if dtypes.is_complex(dtype):
        raise NotImplementedError(f"to_onnx: dtype {dtype.name} is not supported (ONNX "
                                  "Runtime has no complex kernels); export real and "
                                  "imaginary parts separately")
    if dtype == dtypes.bfloat16:
        return onnx.TensorProto.BFLOAT16
    return onnx.helper.np_dtype_to_tensor_dtype(dtype)


class OnnxContext:
    """Builds the nodes of one ONNX graph; ``child()`` gives a sub-graph builder that shares
    the model's value names and initializers (sub-graphs read outer values by name)."""

    def __init__(self, function_name: str, root: OnnxContext | None = None,
                 reserved=()):
        self.onnx = _onnx()
        self.function_name = function_name
        self.root = root or self
        self.nodes = []
        if root is None:
            self.initializers = []
            self._const_cache = {}
            self._counter = 0
            # the graph's input and output names, which no inner value may take
            self._reserved = frozenset(reserved)

    # -- names, constants, nodes ------------------------------------------------------------
    def fresh(self, hint: str = "v") -> str:
        root = self.root
        while True:
            root._counter += 1
            name = f"{hint}_{root._counter}"
            if name not in root._reserved:
                return name

    def const(self, value, dtype=None) -> str:
        """An initializer holding ``value`` (small scalars and index vectors are shared)."""
        array = np.asarray(value, dtype=dtype)
        root = self.root
        key = None
        if array.size <= 16:
            key = (array.dtype.name, array.shape, array.tobytes())
            if key in root._const_cache:
                return root._const_cache[key]
        name = self.fresh("const")
        root.initializers.append(_tensor_proto(self.onnx, name, array))
        if key is not None:
            root._const_cache[key] = name
        return name

    def ints(self, values) -> str:
        """A 1-D int64 initializer (shapes, axes, pads)."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1))

    def scalar(self, value, dtype) -> str:
        return self.const(np.asarray(value, dtype=dtype))

    def op(self, op_type: str, inputs, num_outputs: int = 1, **attributes):
        """Append one node; returns its output name (a list when ``num_outputs != 1``)."""
        outputs = [self.fresh(op_type.lower()) for _ in range(num_outputs)]
        attributes = {k: v for k, v in attributes.items() if v is not None}
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), outputs,
                                                     **attributes))
        return outputs[0] if num_outputs == 1 else outputs

    def cast(self, x: str, dtype) -> str:
        return self.op("Cast", [x], to=onnx_dtype(dtype))

    def full(self, value, aval: ShapedArray) -> str:
        """A tensor of ``aval``'s shape and dtype filled with ``value``."""
        if aval.shape == ():
            return self.scalar(value, aval.dtype)
        if aval.dtype == dtypes.bfloat16:  # ORT's Expand has no bfloat16 kernel
            return self.cast(self.full(value, ShapedArray(aval.shape, np.float32)), aval.dtype)
        return self.op("Expand", [self.scalar(value, aval.dtype), self.ints(aval.shape)])

    def reshape(self, x: str, shape) -> str:
        # ONNX reads a 0 in the target shape as "keep that input dimension" unless allowzero
        return self.op("Reshape", [x, self.ints(shape)], allowzero=1 if 0 in shape else None)

    def fail(self, what: str) -> NotImplementedError:
        """The error for something this model cannot express; names the function."""
        return NotImplementedError(f"to_onnx({self.function_name}): {what}")

    # -- sub-graphs ---------------------------------------------------------------------------
    def child(self) -> OnnxContext:
        return OnnxContext(self.function_name, self.root)

    def graph(self, name: str, inputs, outputs, out_avals):
        """This builder's nodes as a GraphProto with typed ``inputs`` ((name, aval) pairs)
        and ``outputs`` (each passed through an Identity so it is defined here)."""
        helper = self.onnx.helper
        out_names = [self.op("Identity", [o]) for o in outputs]
        return helper.make_graph(
            self.nodes, self.fresh(name),
            [value_info(self.onnx, n, a) for n, a in inputs],
            [value_info(self.onnx, n, a) for n, a in zip(out_names, out_avals, strict=True)])

    # -- IR ---------------------------------------------------------------------------------
    def read(self, env, x) -> str:
        if isinstance(x, Literal):
            return self.const(np.asarray(x.value).astype(x.aval.dtype))
        return env[x]

    def emit_ir(self, ir: IR, input_names) -> list[str]:
        """Emit the equations of ``ir`` with its inputs bound to ``input_names``; returns
        the names of its outputs."""
        env = {}
        for var, value in zip(ir.const_vars, ir.consts, strict=True):
            env[var] = self.const(np.asarray(value).astype(var.aval.dtype))
        if len(input_names) != len(ir.in_vars):
            raise ValueError(f"emit_ir: IR takes {len(ir.in_vars)} inputs, got "
                             f"{len(input_names)}")
        env.update(zip(ir.in_vars, input_names, strict=True))
        for eqn in ir.equations:
            rule = eqn.prim.onnx
            if rule is None:
                raise self.fail(f"primitive {eqn.prim.name!r} has no ONNX export rule")
            in_avals = [x.aval for x in eqn.inputs]
            out_avals = [v.aval for v in eqn.outputs]
            outs = rule(self, [self.read(env, x) for x in eqn.inputs], in_avals, out_avals,
                        **eqn.params)
            if len(outs) != len(eqn.outputs):
                raise RuntimeError(f"ONNX rule of {eqn.prim.name} returned {len(outs)} "
                                   f"values for {len(eqn.outputs)} outputs")
            env.update(zip(eqn.outputs, outs, strict=True))
        return [self.read(env, x) for x in ir.outputs]


def value_info(onnx, name: str, aval: ShapedArray):
    return onnx.helper.make_tensor_value_info(name, onnx_dtype(aval.dtype), list(aval.shape))


def _tensor_proto(onnx, name: str, array: np.ndarray):
    array = np.array(array, order="C", copy=True)  # (ascontiguousarray would make 0-d 1-d)
    if array.dtype == dtypes.bfloat16:
        return onnx.helper.make_tensor(name, onnx.TensorProto.BFLOAT16, array.shape,
                                       array.tobytes(), raw=True)
    onnx_dtype(array.dtype)  # rejects complex with a clear message
    return onnx.numpy_helper.from_array(array, name)


# --- naming inputs and outputs from pytree paths -----------------------------------------------


def _path_name(prefix: str, path) -> str:
    parts = [prefix] + [str(p) for p in path]
    name = re.sub(r"[^0-9A-Za-z_]", "_", "_".join(parts))
    return name if name[0].isalpha() or name[0] == "_" else f"_{name}"


def _unique(names):
    seen, out = {}, []
    for name in names:
        base, k = name, seen.get(name, 0)
        while name in seen:
            k += 1
            name = f"{base}_{k}"
        seen[base] = k
        seen[name] = 0
        out.append(name)
    return out


def _argument_names(fun, count: int):
    # a Module's __call__ takes *args: its forward names them
    forward = getattr(fun, "forward", None)
    try:
        params = list(inspect.signature(forward if callable(forward) else fun)
                      .parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(count):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        else:
            names.append(f"arg{i}")
    return names


def _function_name(fun) -> str:
    """A function's name, or a callable object's class name (a Module's repr lists its
    parameters)."""
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) \
        or type(fun).__qualname__


# --- the entry point ---------------------------------------------------------------------------


def to_onnx(fun, *example_args, path: str | os.PathLike | None = None,
            opset: int = DEFAULT_OPSET, model_name: str | None = None):
    """Export ``fun`` traced on ``example_args`` as an ONNX model (a ``ModelProto``).

    Arguments and outputs are pytrees of tensors; each leaf becomes one graph input or
    output, named from its path (``params_w1``, ``x``, ``output_logits``).  Shapes and
    dtypes are fixed to the examples'.  The model is checked with ``onnx.checker`` and,
    with ``path``, written atomically.  A primitive ONNX cannot express raises
    ``NotImplementedError`` naming it and ``fun``.

    Arguments:
        fun: the function to export (pure; Python side effects cannot be exported).
        example_args: arguments like those the model will be called with.
        path: where to write the ``.onnx`` file (optional).
        opset: the ONNX operator set version (at least 18).
        model_name: the graph's name (default: ``fun``'s name).

    >>> import funcgrad.export, onnxruntime
    >>> model = funcgrad.export.to_onnx(lambda x: fnp.tanh(x) * 2, fg.ones(3))
    >>> session = onnxruntime.InferenceSession(model.SerializeToString())
    >>> session.run(None, {"x": np.ones(3, np.float32)})
    [array([1.5231884, 1.5231884, 1.5231884], dtype=float32)]
    """
    import optree

    from funcgrad.export import rules  # noqa: F401  (attaches every primitive's rule)
    from funcgrad.transforms.ad import as_tensor
    from funcgrad.transforms.tracing import trace_to_ir

    onnx = _onnx()
    if opset < _MIN_OPSET:
        raise ValueError(f"to_onnx: opset {opset} is too old; funcgrad exports opset "
                         f">= {_MIN_OPSET}")
    if path is not None:
        check_destination(os.fspath(path), "to_onnx")
    name = _function_name(fun)
    paths, leaves, in_tree = optree.tree_flatten_with_path(example_args, namespace="funcgrad")
    leaves = [as_tensor(x) for x in leaves]
    arg_names = _argument_names(fun, len(example_args))
    in_names = _unique([_path_name(arg_names[p[0]], p[1:]) for p in paths])
    store = {}

    def flat_fun(*tracers):
        out = fun(*optree.tree_unflatten(in_tree, list(tracers)))
        out_paths, out_leaves, _ = optree.tree_flatten_with_path(out, namespace="funcgrad")
        store["paths"] = out_paths
        return [as_tensor(x) for x in out_leaves]

    ir = trace_to_ir(flat_fun, [x.aval for x in leaves], name="to_onnx",
                     labels=in_names)
    # outputs are named after the inputs, so "output" as an argument keeps its name
    out_names = _unique(in_names + [_path_name("output", p) for p in store["paths"]])
    out_names = out_names[len(in_names):]

    ctx = OnnxContext(name, reserved=in_names + out_names)
    results = ctx.emit_ir(ir, in_names)
    for result, out_name in zip(results, out_names, strict=True):
        ctx.nodes.append(onnx.helper.make_node("Identity", [result], [out_name]))
    graph = onnx.helper.make_graph(
        ctx.nodes, model_name or re.sub(r"[^0-9A-Za-z_]", "_", name),
        [value_info(onnx, n, v.aval) for n, v in zip(in_names, ir.in_vars, strict=True)],
        [value_info(onnx, n, v.aval) for n, v in zip(out_names, ir.outputs, strict=True)],
        initializer=ctx.initializers)
    opsets = [onnx.helper.make_opsetid("", opset)]
    model = onnx.helper.make_model(graph, opset_imports=opsets, producer_name="funcgrad",
                                   ir_version=onnx.helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model, full_check=True)
    if path is not None:
        data = model.SerializeToString()

        def write(temporary: str) -> None:
            with open(temporary, "wb") as f:
                f.write(data)

        write_atomically(os.fspath(path), write, who="to_onnx")
    return model
