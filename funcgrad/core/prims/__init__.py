"""Every primitive family; importing this package registers them all."""

from funcgrad.core.prims import (  # noqa: F401
    bitcast,
    dot,
    elementwise,
    fft,
    indexing,
    linalg,
    reductions,
    sorting,
    structural,
)
