"""A real ZooKeeper server for the tests: Debian's ``zookeeper`` package on Java 17, started
with the files and command line of ``sluice up``'s embedded ZooKeeper
(:func:`sluice.up.zookeeper.command`), with a short tick of 200 ms (sessions may last 0.4 to
20 s), a free loopback port and no fsync. Ready when it answers ``ruok`` with ``imok``: about a
second here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from sluice.up import zookeeper

TICK_MS = 200


class ZooKeeperServer:
    """One standalone ZooKeeper in ``directory``, on ``port``; restartable on the same data."""

    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.port = port
        self.data_dir = directory / "data"
        self.log_path = directory / "zookeeper.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def hosts(self) -> str:
        """``host:port`` for ``zookeeper.connect``."""
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        """Start the JVM and wait (bounded) until it answers ``ruok``."""
        command = zookeeper.command(
            self.directory, "127.0.0.1", self.port, tick_ms=TICK_MS, sync=False, heap="128m"
        )
        with (self.directory / "stdout.log").open("ab") as out:
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"ZooKeeper exited with {self.proc.returncode} at start; "
                    f"see {self.log_path} and {self.directory / 'stdout.log'}"
                )
            if zookeeper.is_ready("127.0.0.1", self.port):
                return
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"ZooKeeper did not answer ruok on port {self.port} in {timeout}s")

    def stop(self) -> None:
        """SIGTERM by PID, then SIGKILL after 10 s; nothing if it is not running."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def __enter__(self) -> ZooKeeperServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def restart(self) -> None:
        """Stop and start again on the same port and data (sessions survive a short restart:
        they expire only after their timeout)."""
        self.stop()
        self.start()
