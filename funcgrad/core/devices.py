"""Devices: the CPU always, CUDA GPUs when CuPy sees one.

A ``Device`` names where a Tensor's buffer lives.  CPU tensors hold NumPy arrays, GPU
tensors CuPy arrays (``funcgrad.core.gpu``); jit runs on IREE's ``local-*`` drivers or its
``cuda`` driver accordingly.  Asking for ``cuda:N`` without a usable GPU raises a clear
``RuntimeError``.
"""

from __future__ import annotations

import functools
import re


class Device:
    """A place a Tensor's buffer can live: ``Device("cpu", 0)`` or ``Device("cuda", 1)``."""

    __slots__ = ("platform", "id")

    def __init__(self, platform: str, id: int = 0):
        self.platform = platform
        self.id = id

    def __repr__(self) -> str:
        return f"device({str(self)!r})"

    def __str__(self) -> str:
        return "cpu" if self.platform == "cpu" else f"{self.platform}:{self.id}"

    def __eq__(self, other) -> bool:
        return (isinstance(other, Device) and other.platform == self.platform
                and other.id == self.id)

    def __hash__(self) -> int:
        return hash((self.platform, self.id))


CPU = Device("cpu", 0)
_DEVICE_PATTERN = re.compile(r"^(cpu|cuda|gpu)(?::(\d+))?$")


@functools.lru_cache(maxsize=1)
def _cuda_device_count() -> int:
    try:
        import cupy  # noqa: F401  (optional extra)

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def devices() -> list[Device]:
    """Every device funcgrad can use: ``cpu``, then ``cuda:N`` for each GPU CuPy sees.

    >>> fg.devices()   # then the GPUs, if any
    [device('cpu')...]
    """
    return [CPU] + [Device("cuda", i) for i in range(_cuda_device_count())]


def device(spec: str | Device = "cpu") -> Device:
    """Look up a device by name: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    >>> fg.device("cpu")
    device('cpu')
    """
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"device: expected a string like 'cpu' or 'cuda:0', got {spec!r}")
    match = _DEVICE_PATTERN.match(spec.strip().lower())
    if match is None:
        raise ValueError(f"unknown device {spec!r}; valid devices look like 'cpu', 'cuda', "
                         f"'cuda:N'; available here: {', '.join(map(str, devices()))}")
    platform, index = match.group(1), int(match.group(2) or 0)
    if platform == "cpu":
        if index != 0:
            raise ValueError(f"unknown device {spec!r}: there is one CPU device, 'cpu'; valid "
                             f"devices look like 'cpu', 'cuda', 'cuda:N'; available here: "
                             f"{', '.join(map(str, devices()))}")
        return CPU
    count = _cuda_device_count()
    if count == 0:
        raise RuntimeError(
            f"device {spec!r} is not available: no CUDA GPU is visible to CuPy (install "
            "`cupy-cuda12x` on a machine with an NVIDIA GPU); "
            f"available devices: {', '.join(map(str, devices()))}")
    if index >= count:
        raise ValueError(f"device {spec!r} does not exist: {count} CUDA device(s) visible; "
                         f"available devices: {', '.join(map(str, devices()))}")
    return Device("cuda", index)
