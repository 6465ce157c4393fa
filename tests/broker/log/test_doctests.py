"""The docstring examples of every ``sluice.broker.log`` module run."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import sluice.broker.log

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(sluice.broker.log.__path__, "sluice.broker.log.")
)


@pytest.mark.parametrize("name", ["sluice.broker.log", *MODULES])
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"
