"""funcgrad.numpy: NumPy's API over funcgrad Tensors, every function a composition of
primitives, so it differentiates, batches and compiles.

>>> import funcgrad.numpy as fnp
>>> fnp.sum(fnp.arange(4) * 2)
tensor(12, dtype=int32)
"""

import math as _math

import numpy as _np

from funcgrad.core.dtypes import (  # noqa: F401
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
from funcgrad.numpy._scalar_types import ABSTRACT as _ABSTRACT
from funcgrad.numpy._scalar_types import ALIASES as _ALIASES
from funcgrad.numpy._scalar_types import SCALAR_TYPES as _SCALAR_TYPES
from funcgrad.numpy._scalar_types import can_cast, isdtype, issubdtype  # noqa: F401

globals().update(_SCALAR_TYPES)  # fnp.float32(0.5) constructs, as jnp.float32
globals().update({alias: _SCALAR_TYPES[name] for alias, name in _ALIASES.items()})
globals().update(_ABSTRACT)  # fnp.floating ... for issubdtype, as jax.numpy has them
dtype = _np.dtype
from funcgrad.core.tensor import Tensor as ndarray  # noqa: E402,F401
from funcgrad.core.tensor import tensor as array  # noqa: F401
from funcgrad.numpy._creation import *  # noqa: F401,F403
from funcgrad.numpy._elementwise import *  # noqa: F401,F403
from funcgrad.numpy._elementwise import abs, pow, round  # noqa: F401,A004
from funcgrad.numpy._elementwise import divmod_ as divmod  # noqa: F401
from funcgrad.numpy._extras import *  # noqa: F401,F403
from funcgrad.numpy._indexing import (  # noqa: F401
    argsort,
    argwhere,
    flatnonzero,
    isin,
    nonzero,
    searchsorted,
    select,
    sort,
    take,
    take_along_axis,
    tril_indices,
    triu_indices,
    unique,
)
from funcgrad.numpy._linear import *  # noqa: F401,F403
from funcgrad.numpy._more import *  # noqa: F401,F403
from funcgrad.numpy._rare import *  # noqa: F401,F403
from funcgrad.numpy._reductions import *  # noqa: F401,F403
from funcgrad.numpy._reductions import all, any, max, min, sum  # noqa: F401,A004
from funcgrad.numpy._shape import *  # noqa: F401,F403
from funcgrad.numpy._signal import *  # noqa: F401,F403
from funcgrad.numpy._statistics import *  # noqa: F401,F403

pi = _math.pi
e = _math.e
inf = float("inf")
nan = float("nan")
newaxis = None

from funcgrad.numpy import (  # noqa: E402,F401
    _methods,  # noqa: E402,F401  (installs Tensor operators)
    fft,
    linalg,
)
from funcgrad.numpy._einsum import *  # noqa: E402,F401,F403
