"""What the harnesses of the group and the transaction tests share.

Both run helper scripts (``groups/member.py``, ``transactions/txn_worker.py``) as processes of
their own, so that a test can ``kill -9`` one; each process writes what it did as JSON lines
(``{"t": monotonic_ns, "ev": ..., **fields}``), flushed at once, to a file the test reads back
as :class:`Event` s. :class:`LoggedProcess` is such a process: its log, its stderr file, and
starting (or restarting, appending to the same log) and stopping it.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from confluent_kafka import Consumer, TopicPartition

TIMEOUT = 15.0  # seconds: the bound on a single client call


def wait_until(condition: Callable[[], Any], timeout: float, what: Callable[[], str]) -> Any:
    """Poll ``condition`` until it returns something truthy; else fail with ``what()``."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what()}")
        time.sleep(0.1)


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset of every partition (OffsetFetch; -1001 = none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = consumer.committed(
            [TopicPartition(topic, p) for p in range(partitions)], timeout=TIMEOUT
        )
        return {tp.partition: tp.offset for tp in tps}
    finally:
        consumer.close()


@dataclass(frozen=True)
class Event:
    t: int
    ev: str
    fields: dict[str, Any]


class LoggedProcess:
    """A helper script run as a process: it logs to ``<workdir>/<name>.jsonl`` (``out``) and its
    stderr goes to ``<workdir>/<name>.stderr``; a subclass sets ``cmd``."""

    cmd: list[str]

    def __init__(self, name: str, workdir: Path) -> None:
        self.name = name
        self.out = workdir / f"{name}.jsonl"
        self.stderr_path = workdir / f"{name}.stderr"
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def start(self) -> Self:
        """Start (or restart) the process; a restart appends to the same log."""
        assert self.proc is None or self.proc.poll() is not None, f"{self.name} is running"
        with self.stderr_path.open("ab") as err:
            self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=err)
        self.runs += 1
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Teardown: whatever state it is in, the process is gone afterwards."""
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def stderr_tail(self, chars: int) -> str:
        """The last ``chars`` characters of its stderr (all runs)."""
        if not self.stderr_path.exists():
            return ""
        return self.stderr_path.read_text(errors="replace")[-chars:]
