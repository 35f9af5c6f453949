"""Launching small programs under ``mpiexec`` for the distributed tests.

The tests skip, saying why, when mpi4py or the ``mpiexec`` launcher is missing (install
them with ``pip install -e ".[distributed]"``).
"""

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
REPO = HERE.parent.parent
TIMEOUT_S = 120


def mpiexec_path() -> str | None:
    """The launcher next to this Python (the MPICH wheel's), else one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _skip_reason() -> str | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return ("mpi4py is not installed; install the extra with "
                "pip install -e '.[distributed]' to run the MPI tests")
    if mpiexec_path() is None:
        return "no mpiexec launcher next to the Python or on PATH (pip install mpich)"
    return None


SKIP_REASON = _skip_reason()
needs_mpi = pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")


def launch(args: list[str], n: int = 2, timeout: float = TIMEOUT_S,
           mpi: bool = True) -> subprocess.CompletedProcess:
    """Run ``python *args`` in ``n`` MPI processes (or once without ``mpiexec``)."""
    command = [sys.executable, *args]
    if mpi:
        command = [mpiexec_path(), "-n", str(n), *command]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"{' '.join(command)} did not finish in {timeout} s (a hang?)\n"
                    f"stdout: {err.stdout}\nstderr: {err.stderr}")


def run_program(name: str, out_dir: Path, n: int = 2) -> list:
    """Run ``mpi_programs.NAME`` on ``n`` ranks; the per-rank results, in rank order."""
    done = launch([str(HERE / "mpi_programs.py"), name, str(out_dir)], n=n)
    assert done.returncode == 0, f"mpiexec failed:\n{done.stdout}\n{done.stderr}"
    results = []
    for rank in range(n):
        with open(out_dir / f"{name}.{rank}.pkl", "rb") as f:
            results.append(pickle.load(f))
    return results
