"""The examples in funcgrad.nn's docstrings run and print what they say."""

import doctest
import importlib

import pytest

import funcgrad as fg
import funcgrad.nn.functional as F
import funcgrad.numpy as fnp
from funcgrad import nn

MODULES = ["module", "linear", "conv", "pooling", "normalization", "attention", "recurrent",
           "activation", "dropout", "functional", "init"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"funcgrad.nn.{name}")
    result = doctest.testmod(module, extraglobs={"fg": fg, "fnp": fnp, "nn": nn, "F": F,
                                                 "init": nn.init},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=True)
    assert result.failed == 0
