"""Fixtures of the schema registry tests: real ``sluice schema-registry start`` processes on the
session's broker, each test with its own ``_schemas`` topic and election group.

Every registry process is stopped by the fixture's teardown, by PID.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from tests.conftest import SLUICE, BrokerProcess, free_port, stop_process, wait_for_port

START_TIMEOUT = 60.0


class RegistryProcess:
    """One registry instance; restartable on the same topic and group."""

    def __init__(self, bootstrap: str, topic: str, group: str, log_path: Path) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.group = group
        self.port = free_port()
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> RegistryProcess:
        cmd = [
            str(SLUICE),
            "schema-registry",
            "start",
            "--listen",
            f"127.0.0.1:{self.port}",
            "--bootstrap-server",
            self.bootstrap,
            "--topic",
            self.topic,
            "--group-id",
            self.group,
        ]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.proc, timeout=START_TIMEOUT)
        return self

    def kill(self) -> None:
        """kill -9."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


ClientFactory = Callable[[str], SchemaRegistryClient]


class RegistryFactory:
    """``factory()`` starts an instance on a fresh topic and group; ``factory(like=other)``
    one more on ``other``'s topic and group."""

    def __init__(self, bootstrap: str, tmp_path: Path) -> None:
        self.bootstrap = bootstrap
        self.tmp_path = tmp_path
        self.started: list[RegistryProcess] = []
        self._names = uuid.uuid4().hex[:8]

    def __call__(self, like: RegistryProcess | None = None) -> RegistryProcess:
        topic = like.topic if like else f"_schemas-{self._names}"
        group = like.group if like else f"schema-registry-{self._names}"
        log = self.tmp_path / f"registry{len(self.started)}.log"
        proc = RegistryProcess(self.bootstrap, topic, group, log)
        self.started.append(proc)
        return proc.start()


@pytest.fixture
def registry_factory(shared_broker: BrokerProcess, tmp_path: Path) -> Iterator[RegistryFactory]:
    """Registry instances on the session's broker, stopped at teardown."""
    factory = RegistryFactory(shared_broker.bootstrap, tmp_path)
    yield factory
    for proc in factory.started:
        proc.stop()


@pytest.fixture
def registry(registry_factory: RegistryFactory) -> RegistryProcess:
    """One registry instance."""
    return registry_factory()


def call(
    url: str, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
    content_type: str = "application/vnd.schemaregistry.v1+json",
) -> tuple[int, Any]:  # fmt: skip
    """``(status, decoded JSON body)`` of one request (any status)."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(
        url + path, data=data, method=method, headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as answer:
        with answer:
            return answer.code, json.loads(answer.read() or b"null")


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll ``condition`` until it returns something true; returns that."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; last: {last!r}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the registry processes' logs to a failing test's report."""
    report = yield
    factory = getattr(item, "funcargs", {}).get("registry_factory")
    if report.failed and isinstance(factory, RegistryFactory):
        for proc in factory.started:
            report.sections.append((f"registry log {proc.url}", proc.log_text()[-4000:]))
    return report
