"""funcgrad: pure functions over immutable tensors, transformed by grad, vmap and jit.

>>> import funcgrad as fg
>>> x = fg.tensor([1.0, 2.0, 3.0])
>>> (x * 2).sum()
tensor(12., dtype=float32)
"""

from funcgrad.core import prims as _prims  # noqa: F401  (registers every primitive)
from funcgrad.core.config import config
from funcgrad.core.devices import Device, device, devices
from funcgrad.core.dtypes import (
    bfloat16,
    bool_,
    complex64,
    complex128,
    finfo,
    float16,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    uint8,
    uint16,
    uint32,
    uint64,
)
from funcgrad.core.tensor import Tensor, asarray, tensor
from funcgrad import numpy  # noqa: E402
from funcgrad import random, tree  # noqa: E402,F401
from funcgrad.numpy._creation import (  # noqa: E402
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

__version__ = "0.1.0"


def device_put(tree, device=None):
    """Place every Tensor leaf of ``tree`` on ``device`` (a copy-free no-op on the CPU).

    >>> fg.device_put({"w": fg.ones(2)}, fg.device("cpu"))
    """
    import funcgrad.core.devices as _devices
    from funcgrad.core.tensor import tensor as _tensor

    target = _devices.device("cpu" if device is None else device)
    import optree

    def put(leaf):
        if isinstance(leaf, Tensor):
            return leaf.to(target)
        return _tensor(leaf, device=target)

    return optree.tree_map(put, tree, namespace="funcgrad")


__all__ = [
    "Device", "Tensor", "arange", "asarray", "bfloat16", "bool_", "complex64", "complex128",
    "config", "device", "device_put", "devices", "empty", "empty_like", "eye", "finfo",
    "float16", "float32", "float64", "full", "full_like", "iinfo", "int8", "int16", "int32",
    "int64", "linspace", "numpy", "ones", "random", "tree", "ones_like", "promote_types", "result_type",
    "tensor", "uint8", "uint16", "uint32", "uint64", "zeros", "zeros_like",
]

from funcgrad.transforms.ad import (  # noqa: E402
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    value_and_grad,
    vjp,
)
from funcgrad.transforms.batching import vmap  # noqa: E402
from funcgrad.transforms.tracing import make_ir  # noqa: E402

__all__ += ["grad", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "make_ir",
            "value_and_grad", "vjp", "vmap"]
from funcgrad.transforms.control_flow import (  # noqa: E402
    cond,
    fori_loop,
    scan,
    switch,
    while_loop,
)

__all__ += ["cond", "fori_loop", "scan", "switch", "while_loop"]
from funcgrad import debug  # noqa: E402
from funcgrad.transforms.custom import (  # noqa: E402
    checkpoint,
    custom_jvp,
    custom_vjp,
    remat,
    stop_gradient,
)

__all__ += ["checkpoint", "custom_jvp", "custom_vjp", "debug", "remat", "stop_gradient"]
from funcgrad.transforms.jit import clear_caches, jit  # noqa: E402

__all__ += ["clear_caches", "jit"]
