"""The package itself: layout, doctests, and the standard library's `platform` left alone."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "sluice": "platform",
    "sluice.broker": "broker",
    "sluice.streams": "streams",
    "sluice.connect": "connect",
    "sluice.connectors": "connectors",
    "sluice.dsl": "dsl",
}


def _modules() -> list[str]:
    """Every module of every folder (pkgutil cannot see through the folder mapping by itself)."""
    names = set(FOLDERS) - {"sluice"}  # `sluice` itself is a namespace package: no module
    for package in FOLDERS:
        path = importlib.import_module(package).__path__
        names.update(info.name for info in pkgutil.walk_packages(path, f"{package}."))
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"


def test_every_package_folder_is_listed_in_pyproject() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = set()
    for package, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]))
    found.add("sluice")
    assert found - listed == set(), f"packages missing from pyproject.toml: {found - listed}"


def test_platform_folder_never_shadows_the_standard_library() -> None:
    # Run from the repository root, where `platform/` is a folder on sys.path[0].
    out = subprocess.run(
        [sys.executable, "-c", "import platform; print(platform.system())"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "Linux", out.stderr
