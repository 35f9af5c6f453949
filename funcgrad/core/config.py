"""Global switches: ``fg.config.update("debug_nans", True)``."""

from __future__ import annotations

import os


class Config:
    """Process-wide settings, read on every primitive application, so kept as attributes.

    - ``debug_nans``: raise ``FloatingPointError`` at the first primitive producing a NaN.
    - ``check_avals``: after every eager primitive, check its output against the
      primitive's shape/dtype rule (the test suite turns this on).
    - ``jit_background_compile``: a jitted function's first calls run its traced program
      eagerly while IREE compiles it on a background thread, then switch to the compiled
      code (first results in milliseconds instead of seconds; off by default so timings
      after one warm-up call are the compiled ones, as in JAX).
    """

    _DEFAULTS = {"debug_nans": False, "check_avals": False, "jit_background_compile": False}

    def __init__(self):
        for name, default in self._DEFAULTS.items():
            env = os.environ.get(f"FUNCGRAD_{name.upper()}")
            setattr(self, name, default if env is None else env not in ("0", "", "false"))

    def update(self, name: str, value) -> None:
        """Set one option: ``fg.config.update("debug_nans", True)``."""
        if name not in self._DEFAULTS:
            raise ValueError(f"unknown config option {name!r}; options are: "
                             f"{', '.join(sorted(self._DEFAULTS))}")
        setattr(self, name, value)

    def __repr__(self) -> str:
        return "Config(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self._DEFAULTS) + ")"


config = Config()
