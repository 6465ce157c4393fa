"""Helpers of the tests that run connectors on a real worker against the shared broker.

In process: :func:`in_process_herder` (a started standalone worker storing its source offsets
in ``tmp_path/offsets.json``, and its herder), :func:`wait` for what it does, :func:`read` for
what reached a topic. As a process of its own: :func:`standalone_worker` (``sluice connect
standalone``, logging to ``tmp_path/worker.log``, read back by :func:`worker_log`); stop it
with ``tests.conftest.stop_process``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sluice import clients
from sluice.connect.runtime import standalone
from sluice.connect.runtime.herder import Herder
from sluice.connect.runtime.offsets import FileOffsetStore
from tests.conftest import SLUICE
from tests.connect.rest_fixtures import wait_for

RUN_TIMEOUT = 60.0  # seconds: the bound on a connector's run getting somewhere


def in_process_herder(bootstrap: str, tmp_path: Path, **settings: Any) -> Herder:
    """The herder of a started standalone worker (stop it with ``herder.runtime.stop()``) that
    flushes its source offsets every 200 ms to ``tmp_path/offsets.json``; ``settings`` are
    more worker settings."""
    config = {"bootstrap.servers": bootstrap, "offset.flush.interval.ms": 200, **settings}
    runtime = standalone.standalone_worker(config, FileOffsetStore(tmp_path / "offsets.json"))
    runtime.start("127.0.0.1:8083")
    return Herder(runtime)


def wait(condition: Callable[[], Any], what: str, timeout: float = RUN_TIMEOUT) -> Any:
    """``wait_for`` with the bound of a connector's run: polls ``condition`` until it returns
    something true; returns that."""
    return wait_for(condition, what, timeout)


def read(bootstrap: str, topic: str, count: int) -> list[Any]:
    """The messages of ``topic`` from its beginning, once ``count`` came (or 30 s passed)."""
    consumer = clients.consumer(bootstrap, **{"auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    found: list[Any] = []
    deadline = time.monotonic() + 30
    while len(found) < count and time.monotonic() < deadline:
        found += [m for m in consumer.consume(100, 0.5) if m.error() is None]
    consumer.close()
    return found


def standalone_worker(
    config: Path,
    bootstrap: str,
    tmp_path: Path,
    *options: str,
    settings: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """``sluice connect standalone config`` with its offsets in ``tmp_path/offsets.json``
    (flushed every 200 ms), string keys and values unless ``settings`` (``-X`` worker settings)
    say otherwise, INFO logs appended to ``tmp_path/worker.log``; ``options`` go after
    ``--offsets`` (no REST API unless they give ``--rest``: the default port, 8083, is one for
    every test running at the same time), ``env`` adds to the environment."""
    command = [str(SLUICE), "connect", "standalone", str(config), "-b", bootstrap]
    command += ["--offsets", str(tmp_path / "offsets.json"), *options]
    if "--rest" not in options:
        command += ["--rest", ""]
    defaults = {
        "offset.flush.interval.ms": "200",
        "value.converter": "string",
        "key.converter": "string",
    }
    for key, value in {**defaults, **(settings or {})}.items():
        command += ["-X", f"{key}={value}"]
    with open(tmp_path / "worker.log", "ab") as log:  # the child keeps its own descriptor
        return subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "SLUICE_LOG_LEVEL": "INFO", **(env or {})},
        )


def worker_log(tmp_path: Path) -> str:
    """The last 3000 characters of ``tmp_path/worker.log`` (empty if there is none)."""
    path = tmp_path / "worker.log"
    return path.read_text(errors="replace")[-3000:] if path.exists() else ""
