"""Errors a user meets without a working broker: clear messages, the right exit codes, no hang."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.cli.conftest import Result

Run = Callable[..., "Result"]


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "args",
    [
        ["topics", "list"],
        ["topics", "create", "t"],
        ["topics", "describe", "t"],
        ["produce", "t"],
        ["consume", "t"],
    ],
    ids=" ".join,
)
def test_unreachable_broker_is_a_quick_clear_error(run: Run, args: list[str]) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    result = run(*args, "--bootstrap-server", address, input="x\n", timeout=30)
    elapsed = time.monotonic() - started
    assert result.code == 1, str(result)
    assert result.err.startswith(f"error: cannot reach a broker at {address}"), result.err
    assert "Connection refused" in result.err, result.err
    assert "Traceback" not in result.err
    assert result.err.count("\n") == 1, f"one line, no librdkafka log noise: {result.err}"
    assert elapsed < 25, f"took {elapsed:.1f}s"


def test_unresolvable_host_names_the_cause(run: Run) -> None:
    result = run("topics", "list", env={"SLUICE_BOOTSTRAP": "no-such-host.invalid:9092"})
    assert result.code == 1, str(result)
    assert "cannot reach a broker at no-such-host.invalid:9092" in result.err
    assert "resolve" in result.err, result.err


def test_a_client_property_librdkafka_refuses_is_a_usage_error(run: Run) -> None:
    result = run("topics", "list", "-X", "no.such.property=1")
    assert result.code == 2, str(result)
    assert result.err.strip() == (
        'error: client config: No such configuration property: "no.such.property"'
    )


def test_broker_start_reports_a_config_error_with_file_and_line(run: Run, tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("# a comment\nnum.partitions=many\n")
    result = run("broker", "start", "--config", str(props), "--data-dir", str(tmp_path / "d"))
    assert result.code == 2, str(result)
    assert result.err.strip() == (f"error: {props}:2: num.partitions: expected int, got 'many'"), (
        result.err
    )


def test_broker_start_with_a_missing_config_file(run: Run, tmp_path: Path) -> None:
    result = run("broker", "start", "--config", str(tmp_path / "nope.properties"))
    assert result.code == 2, str(result)
    assert result.err.startswith(f"error: {tmp_path / 'nope.properties'}: cannot read"), result.err


def test_broker_start_with_a_bad_listen_address(run: Run) -> None:
    result = run("broker", "start", "--listen", "localhost")
    assert result.code == 2, str(result)
    assert "expected HOST:PORT" in result.err


def test_version_and_help(run: Run) -> None:
    version = run("--version")
    assert version.code == 0 and version.out.startswith("sluice "), str(version)
    for args in ([], ["topics"], ["broker"]):
        result = run(*args, "--help")
        assert result.code == 0, str(result)
    for command in ("broker", "topics", "produce", "consume"):
        assert command in run("--help").out
