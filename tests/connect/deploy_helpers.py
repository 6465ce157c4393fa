"""Shared helpers for the deployment-file tests (``test_deploy_*.py``)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from sluice.connect.deploy import (
    ConnectorSpec,
    DeploymentError,
    loads,
)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems(text: str, source: str = "c.yaml", **kwargs: Any) -> list[str]:
    """Every problem ``loads`` reports, as ``file:line: key: message`` lines."""
    with pytest.raises(DeploymentError) as caught:
        loads(textwrap.dedent(text).lstrip("\n"), source, **kwargs)
    return [str(problem) for problem in caught.value.problems]


def one(text: str, **kwargs: Any) -> ConnectorSpec:
    specs = loads(textwrap.dedent(text).lstrip("\n"), "c.yaml", **kwargs)
    assert len(specs) == 1, f"expected one connector, got {specs}"
    return specs[0]
