"""faust-streaming, unmodified, on Sluice: the word-count example with a table and its changelog.

The worker of ``examples/faust_wordcount`` runs as a subprocess (faust is never imported here: it
would bring its import-time warnings into a process where warnings are errors). Lines go in through
``wordcount-lines`` with confluent-kafka; the counts are read from the worker's web page and from
the table's changelog topic; then the worker restarts with an empty data directory and must rebuild
the table from the changelog before it counts on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.conftest import BrokerProcess, free_port

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "faust_wordcount"
LINES = "wordcount-lines"
CHANGELOG = "wordcount-word-counts-changelog"
PARTITIONS = 4

FIRST = [
    "the quick brown fox",
    "jumps over the lazy dog",
    "The dog sleeps, the fox runs",
]
SECOND = [
    "a quick dog",
    "the end",
]


def word_counts(lines: list[str]) -> Counter[str]:
    """What the app must count: lowercase words, punctuation dropped."""
    return Counter(w.strip(",.").lower() for line in lines for w in line.split())


class FaustWorker:
    """``python app.py worker`` on a data directory of its own, its web server on a free port."""

    def __init__(self, bootstrap: str, data_dir: Path, log_path: Path) -> None:
        self.bootstrap = bootstrap
        self.data_dir = data_dir
        self.log_path = log_path
        self.web_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> FaustWorker:
        env = {
            **os.environ,
            "SLUICE_BOOTSTRAP": f"kafka://{self.bootstrap}",
            "WORDCOUNT_DATA_DIR": str(self.data_dir),
            "WORDCOUNT_PARTITIONS": str(PARTITIONS),
        }
        cmd = [
            sys.executable,
            "app.py",
            "worker",
            "-l",
            "info",
            "--web-host",
            "127.0.0.1",
            "--web-bind",  # faust binds 0.0.0.0 unless told: loopback only
            "127.0.0.1",
            "--web-port",
            str(self.web_port),
        ]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=EXAMPLE, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        return self

    def log_tail(self, chars: int = 4000) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text[-chars:]

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until faust says the worker is ready (joined, table recovered, fetching)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"faust worker exited with {self.proc.returncode}:\n{self.log_tail()}")
            if "[^Worker]: Ready" in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.2)
        pytest.fail(f"faust worker not ready within {timeout}s:\n{self.log_tail()}")

    def counts(self) -> dict[str, int] | None:
        """The table as the worker's web page serves it; None while the page does not answer."""
        url = f"http://127.0.0.1:{self.web_port}/counts/"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return dict(json.loads(response.read()))
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def wait_counts(self, expected: dict[str, int], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            seen = self.counts()
            if seen == expected:
                return
            time.sleep(0.3)
        pytest.fail(
            f"table counts within {timeout}s: expected {expected}, got {seen}\n{self.log_tail()}"
        )

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait for faust's clean shutdown (it leaves the group, commits)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"faust worker ignored SIGTERM for {timeout}s:\n{self.log_tail()}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def faust_worker(tmp_path: Path) -> Iterator[Callable[[str], FaustWorker]]:
    """Start faust workers on fresh data directories; every one is stopped by PID at teardown."""
    started: list[FaustWorker] = []

    def start(bootstrap: str) -> FaustWorker:
        n = len(started)
        worker = FaustWorker(bootstrap, tmp_path / f"faust{n}", tmp_path / f"faust{n}.log")
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        try:
            if worker.proc is not None and worker.proc.poll() is None:
                worker.proc.send_signal(signal.SIGTERM)
                worker.proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
        finally:
            worker.kill()


def produce_lines(bootstrap: str, lines: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for line in lines:
        producer.produce(LINES, line.encode())
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} lines not delivered within 30s"


def read_changelog(bootstrap: str, timeout: float = 30.0) -> dict[str, int]:
    """The table as its changelog holds it: the last value of each key, over all partitions."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "wordcount-test-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        meta = consumer.list_topics(CHANGELOG, timeout=10)
        partitions = sorted(meta.topics[CHANGELOG].partitions)
        assert len(partitions) == PARTITIONS, f"changelog partitions: {partitions}"
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(CHANGELOG, p), 10)[1]
            for p in partitions
        }
        pending = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(CHANGELOG, p, 0) for p in partitions])
        table: dict[str, int] = {}
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, f"changelog: {msg.error()}"
                pending.discard(msg.partition())
                continue
            key = json.loads(msg.key())
            if msg.value() is None:
                table.pop(key, None)
            else:
                table[key] = json.loads(msg.value())
            if msg.offset() + 1 >= ends[msg.partition()]:
                pending.discard(msg.partition())
        assert not pending, f"changelog partitions {pending} not read to {ends} within {timeout}s"
        return table
    finally:
        consumer.close()


def test_word_count_table_survives_a_restart_from_its_changelog(
    broker_factory: Callable[..., BrokerProcess],
    faust_worker: Callable[[str], FaustWorker],
) -> None:
    bootstrap = broker_factory(**{"group.initial.rebalance.delay.ms": "0"}).bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(LINES, PARTITIONS, 1)]).values():
        future.result(30)

    first = faust_worker(bootstrap)
    first.wait_ready()
    produce_lines(bootstrap, FIRST)
    expected = dict(word_counts(FIRST))
    first.wait_counts(expected)
    assert first.stop() == 0, f"faust worker exit code\n{first.log_tail()}"
    assert read_changelog(bootstrap) == expected
    resource = ConfigResource(ConfigResource.Type.TOPIC, CHANGELOG)
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["cleanup.policy"].value == "compact", "faust creates its changelog compacted"

    # A fresh data directory: nothing local to restore from, only the changelog topic.
    second = faust_worker(bootstrap)
    assert not second.data_dir.exists()
    second.wait_ready()
    assert "Restoring state from changelog topics" in second.log_tail(100_000), (
        f"the table was not restored from its changelog:\n{second.log_tail()}"
    )
    second.wait_counts(expected, timeout=30)

    produce_lines(bootstrap, SECOND)
    expected = dict(word_counts(FIRST + SECOND))
    second.wait_counts(expected)
    assert second.stop() == 0, f"faust worker exit code\n{second.log_tail()}"
    assert read_changelog(bootstrap) == expected
