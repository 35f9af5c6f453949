"""The `>>>` examples in every funcgrad module's docstrings run and print what they say.

The modules are discovered, not listed: every module under funcgrad/ whose source has a line
starting with '>>>' (doctest's prompt) is a case, so a new module's examples are checked as soon
as it is written.
"""

import doctest
import importlib
import importlib.util
import pkgutil
import re

import numpy as np
import pytest

import funcgrad
import funcgrad.nn
import funcgrad.nn.functional
import funcgrad.nn.init
import funcgrad.numpy
import funcgrad.optim

EXTRAGLOBS = {"fg": funcgrad, "fnp": funcgrad.numpy, "np": np, "nn": funcgrad.nn,
              "F": funcgrad.nn.functional, "optim": funcgrad.optim, "init": funcgrad.nn.init}
OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# Modules whose examples need an optional dependency (pyproject's extras): they run when
# it is installed and skip, naming it, when it is not.
NEEDS: dict[str, tuple[str, ...]] = {
    "funcgrad.data": ("sklearn",),
    "funcgrad.data.datasets": ("sklearn",),
    "funcgrad.distributed": ("mpi4py",),
    "funcgrad.export": ("onnx",),
    "funcgrad.export.onnx": ("onnx", "onnxruntime"),
    "funcgrad.export.testing": ("onnx", "onnxruntime"),
}
# Modules whose examples cannot run in the test process at all, with the reason.
CANNOT_RUN: dict[str, str] = {}


def _module_names() -> list[str]:
    names = [funcgrad.__name__]
    names += [info.name for info in pkgutil.walk_packages(funcgrad.__path__, "funcgrad.")]
    return sorted(names)


def _source(name: str) -> str:
    with open(importlib.util.find_spec(name).origin, encoding="utf-8") as file:
        return file.read()


# doctest's prompt: '>>>' first on its line (not a '>>>' inside code or a comment)
_PROMPT = re.compile(r"^\s*>>>", re.MULTILINE)
MODULES_WITH_EXAMPLES = [name for name in _module_names() if _PROMPT.search(_source(name))]


def test_modules_are_found():
    assert "funcgrad" in MODULES_WITH_EXAMPLES
    assert "funcgrad.numpy.linalg" in MODULES_WITH_EXAMPLES
    assert "funcgrad.nn.functional" in MODULES_WITH_EXAMPLES


def test_skip_lists_are_accurate():
    """Every module named in NEEDS and CANNOT_RUN exists and has examples, so neither list
    goes stale as modules are renamed or lose their examples."""
    for table in (NEEDS, CANNOT_RUN):
        stale = sorted(set(table) - set(MODULES_WITH_EXAMPLES))
        assert not stale, f"names of modules without examples (or that don't exist): {stale}"
    assert all(CANNOT_RUN.values()), "every module in CANNOT_RUN needs its reason"


@pytest.mark.parametrize("name", MODULES_WITH_EXAMPLES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that save files (funcgrad.io) write them here
    if name in CANNOT_RUN:
        pytest.skip(CANNOT_RUN[name])
    missing = [p for p in NEEDS.get(name, ()) if importlib.util.find_spec(p) is None]
    if missing:
        pytest.skip(f"{name}'s examples need {', '.join(missing)} (not installed)")
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    report = []
    for test in finder.find(module, name, globs=vars(module).copy(), extraglobs=EXTRAGLOBS):
        runner.run(test, out=report.append)
    failed, attempted = runner.failures, runner.tries
    assert attempted > 0, f"{name}: its source has '>>>' but doctest found no examples"
    assert failed == 0, f"{name}: {failed} of {attempted} examples failed\n" + "".join(report)
