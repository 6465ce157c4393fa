"""Fixtures of the CLI tests: the real ``sluice`` executable against a real broker.

The tests share the session's broker (``shared_broker``) and stay apart by topic names.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import BrokerProcess

SLUICE = Path(sys.executable).with_name("sluice")
RUN_TIMEOUT = 60.0


@dataclass(frozen=True)
class Result:
    """What a ``sluice`` run left behind."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        return (
            f"sluice {' '.join(self.args)} -> exit {self.code}\n"
            f"--- stdout\n{self.out}--- stderr\n{self.err}"
        )


def run_sluice(
    *args: str,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = RUN_TIMEOUT,
) -> Result:
    """Run ``sluice ARGS`` to completion; never hangs longer than ``timeout``."""
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        [str(SLUICE), *args],
        input=data if data is not None else b"",
        capture_output=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        check=False,
    )
    return Result(
        tuple(args),
        proc.returncode,
        proc.stdout.decode(errors="replace"),
        proc.stderr.decode(errors="replace"),
    )


@pytest.fixture
def bootstrap(shared_broker: BrokerProcess) -> str:
    return shared_broker.bootstrap


class Sluice:
    """``sluice(*args, input=…)``: the CLI with SLUICE_BOOTSTRAP pointing at the test broker."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def __call__(
        self, *args: str, input: str | bytes | None = None, timeout: float = RUN_TIMEOUT
    ) -> Result:
        return run_sluice(
            *args, input=input, env={"SLUICE_BOOTSTRAP": self.bootstrap}, timeout=timeout
        )


@pytest.fixture
def sluice(bootstrap: str) -> Sluice:
    return Sluice(bootstrap)


@pytest.fixture
def topic_factory(sluice: Sluice) -> Callable[..., str]:
    """Create a topic with a fresh name through the CLI: ``topic_factory(partitions=3)``."""

    def create(partitions: int = 1, configs: tuple[str, ...] = ()) -> str:
        name = f"t-{uuid.uuid4().hex[:10]}"
        args = ["topics", "create", name, "--partitions", str(partitions)]
        for config in configs:
            args += ["--config", config]
        result = sluice(*args)
        assert result.code == 0, str(result)
        return name

    return create


@pytest.fixture
def run() -> Callable[..., Result]:
    """``run(*args, input=…, env=…)``: the CLI with no broker set up (error cases)."""
    return run_sluice
