"""The examples in funcgrad.optim's docstrings run and print what they say."""

import doctest
import importlib

import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import optim

MODULES = ["base", "transforms", "aliases", "schedules", "lbfgs"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"funcgrad.optim.{name}")
    result = doctest.testmod(module, extraglobs={"fg": fg, "fnp": fnp, "optim": optim},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=True)
    assert result.attempted > 0 and result.failed == 0
