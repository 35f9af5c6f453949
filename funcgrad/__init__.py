"""funcgrad: pure functions over immutable tensors, transformed by grad, vmap and jit.

>>> import funcgrad as fg
>>> x = fg.tensor([1.0, 2.0, 3.0])
>>> (x * 2).sum()
tensor(12., dtype=float32)
"""

# ruff: noqa: E402, F401, I001  (the import order is the order of the layers)

# core: tensors, dtypes, devices, and every primitive registered
from funcgrad.core import prims as _prims
from funcgrad.core.config import config
from funcgrad.core.devices import Device, device, devices
from funcgrad.core.dtypes import finfo, iinfo, promote_types, result_type
from funcgrad.core.tensor import Tensor, asarray, tensor

# the dtypes are also constructors, as jnp.float32: fg.float32(0.5) is a 0-d float32 tensor
from funcgrad.numpy._scalar_types import SCALAR_TYPES as _SCALAR_TYPES

bfloat16, bool_, complex64, complex128 = (_SCALAR_TYPES[n] for n in (
    "bfloat16", "bool_", "complex64", "complex128"))
float16, float32, float64 = (_SCALAR_TYPES[n] for n in ("float16", "float32", "float64"))
int8, int16, int32, int64 = (_SCALAR_TYPES[n] for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (_SCALAR_TYPES[n] for n in ("uint8", "uint16", "uint32",
                                                             "uint64"))

# the NumPy API, random keys and pytrees
from funcgrad import numpy
from funcgrad import random, tree
from funcgrad.numpy._creation import (
    arange,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)

# transformations
from funcgrad.transforms.ad import (
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    value_and_grad,
    vjp,
)
from funcgrad.transforms.batching import vmap
from funcgrad.transforms.control_flow import cond, fori_loop, scan, switch, while_loop
from funcgrad.transforms.custom import (
    checkpoint,
    checkpoint_policies,
    custom_jvp,
    custom_vjp,
    remat,
    stop_gradient,
)
from funcgrad.transforms.jit import clear_caches, jit
from funcgrad.transforms.tracing import make_ir
from funcgrad import debug

# built on the public API
from funcgrad import data, export, nn, optim
from funcgrad.io import load, save

__version__ = "0.1.0"


def device_put(tree, device=None):
    """Place every Tensor leaf of ``tree`` on ``device`` (a copy-free no-op on the CPU).

    >>> fg.device_put({"w": fg.ones(2)}, fg.device("cpu"))
    {'w': tensor([1., 1.], dtype=float32)}
    """
    import optree

    target = _devices.device("cpu" if device is None else device)

    def put(leaf):
        if isinstance(leaf, Tensor):
            return leaf.to(target)
        return tensor(leaf, device=target)

    return optree.tree_map(put, tree, namespace="funcgrad")


def block_until_ready(tree):
    """Wait until every Tensor leaf of ``tree`` is computed; returns ``tree`` (as JAX's).

    >>> fg.block_until_ready({"loss": fg.jit(lambda x: (x * x).sum())(fg.ones(3))})
    {'loss': tensor(3., dtype=float32)}
    """
    import optree

    for leaf in optree.tree_leaves(tree, namespace="funcgrad"):
        if isinstance(leaf, Tensor):
            leaf.block_until_ready()
    return tree


from funcgrad.core import devices as _devices

__all__ = [
    "Device", "Tensor", "arange", "asarray", "bfloat16", "block_until_ready", "bool_",
    "checkpoint", "checkpoint_policies", "clear_caches", "complex64", "complex128", "cond",
    "config", "custom_jvp", "custom_vjp", "data", "debug", "device", "device_put", "devices",
    "empty", "empty_like", "export", "eye", "finfo", "float16", "float32", "float64", "fori_loop",
    "full", "full_like", "grad", "hessian", "iinfo", "int8", "int16", "int32", "int64", "jacfwd",
    "jacrev", "jit", "jvp", "linearize", "linspace", "load", "make_ir", "nn", "numpy", "ones",
    "ones_like", "optim", "promote_types", "random", "remat", "result_type", "save", "scan",
    "stop_gradient", "switch", "tensor", "tree", "uint8", "uint16", "uint32", "uint64",
    "value_and_grad", "vjp", "vmap", "while_loop", "zeros", "zeros_like",
]
