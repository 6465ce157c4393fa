"""``KafkaStreams``: a topology running against a Kafka-protocol cluster.

    streams = KafkaStreams(topology, StreamsConfig("wordcount", "localhost:9092"))
    streams.start()                      # a background thread
    streams.store("counts").get("hello")  # interactive query of this instance's state
    streams.close()

``run()`` instead blocks the calling thread until SIGINT/SIGTERM (what ``App.run()`` does).
With ``metrics_listen`` in the config, Prometheus metrics are served at ``/metrics`` from
:meth:`start` (or :meth:`run`) until :meth:`close` (:mod:`sluice.streams.runtime.metrics`).
Before processing starts the state directory is locked and its process id read (or written:
:mod:`sluice.streams.runtime.state_directory`), the internal topics are created (repartition
topics sized like their inputs, compacted changelogs with one partition per task) and
co-partitioning is checked.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from sluice import clients
from sluice.errors import ConfigError
from sluice.metrics import MetricsServer, serve_metrics
from sluice.streams.config import StreamsConfig
from sluice.streams.errors import StreamsError
from sluice.streams.runtime.state_directory import StateDirectory
from sluice.streams.runtime.thread import StreamThread
from sluice.streams.runtime.topics import InternalTopics
from sluice.streams.state.base import StateStore
from sluice.streams.topology import Topology

__all__ = ["KafkaStreams", "QueryableStore"]

log = logging.getLogger("sluice.streams")


class QueryableStore:
    """Read-only view of one store over every local task (and standby-free: active only).

    Reads are eventually consistent: they see the processing thread's latest writes.
    """

    def __init__(self, streams: KafkaStreams, name: str) -> None:
        self._streams = streams
        self.name = name

    def _stores(self) -> list[StateStore]:
        thread = self._streams.thread
        if thread is None:
            raise StreamsError("the application is not running")
        if self.name in thread.globals.stores:
            return [thread.globals.stores[self.name]]
        found = [t.stores[self.name] for t in list(thread.tasks.values()) if self.name in t.stores]
        if not found and self.name not in thread.topology.stores:
            raise StreamsError(f"no store named {self.name!r}")
        return found

    def get(self, key: Any) -> Any:
        """The value of ``key`` (key-value stores), or None."""
        for store in self._stores():
            value = store.get(key)  # type: ignore[attr-defined]
            if value is not None:
                return value
        return None

    def range(self, low: Any = None, high: Any = None) -> Iterator[tuple[Any, Any]]:
        """``(key, value)`` with ``low <= key <= high``, in key order across tasks."""
        items = [kv for s in self._stores() for kv in s.range(low, high)]  # type: ignore[attr-defined]
        return iter(sorted(items, key=lambda kv: kv[0]))

    def all(self) -> Iterator[tuple[Any, Any]]:
        """Every entry (key-value, window or session store)."""
        return iter([kv for s in self._stores() for kv in s.all()])  # type: ignore[attr-defined]

    def fetch(
        self, key: Any, time_from: int | None = None, time_to: int | None = None
    ) -> list[Any]:
        """Window stores: ``(start, value)`` of ``key`` with starts in ``[time_from, time_to]``;
        session stores: ``(start, end, value)`` of every session of ``key``."""
        result: list[Any] = []
        for store in self._stores():
            if hasattr(store, "fetch_range"):
                low = 0 if time_from is None else time_from
                high = 2**62 if time_to is None else time_to
                result.extend(store.fetch_range(key, low, high))
            else:
                result.extend(store.fetch(key))  # type: ignore[attr-defined]
        return sorted(result, key=lambda item: item[0])

    def __len__(self) -> int:
        return sum(len(s) for s in self._stores())  # type: ignore[arg-type,misc]


class KafkaStreams:
    """See the module docstring."""

    def __init__(self, topology: Topology, config: StreamsConfig) -> None:
        self.topology = topology
        self.config = config
        self.thread: StreamThread | None = None
        self._runner: threading.Thread | None = None
        self._metrics: MetricsServer | None = None
        assert config.state_dir is not None
        self.state_directory = StateDirectory(config.state_dir, config.application_id)
        """Locked from start to close; holds the process id (``state_directory`` module)."""

    @property
    def metrics_port(self) -> int | None:
        """The port of the ``/metrics`` endpoint while served (None otherwise)."""
        return None if self._metrics is None else self._metrics.port

    def _serve_metrics(self) -> None:
        listen = self.config.metrics_listen
        if not listen or self._metrics is not None:
            return
        from sluice.streams.runtime.metrics import streams_registry

        try:
            self._metrics = serve_metrics(listen, streams_registry(self), key="metrics_listen")
        except ConfigError as error:
            raise StreamsError(str(error)) from None

    def _stop_metrics(self) -> None:
        if self._metrics is not None:
            self._metrics.close()
            self._metrics = None

    @property
    def state(self) -> str:
        """CREATED, STARTING, REBALANCING, RUNNING, PENDING_SHUTDOWN, NOT_RUNNING or ERROR."""
        return "CREATED" if self.thread is None else self.thread.state

    def _prepare(self) -> StreamThread:
        """The state directory locked, the metrics endpoint served (it shows the start) and the
        thread made; both are let go again when the thread cannot be made."""
        self.state_directory.lock()
        try:
            self._serve_metrics()
            return self._make_thread()
        except BaseException:
            self._stop_metrics()
            self.state_directory.unlock()
            raise

    def _make_thread(self) -> StreamThread:
        admin = clients.admin(self.config.bootstrap_servers, **self.config.admin_config)
        topics = InternalTopics(
            self.topology, self.config.application_id, self.config.replication_factor
        )
        topics.prepare(admin)
        process_id = self.state_directory.process_id()
        self.thread = StreamThread(self.topology, self.config, topics, process_id)
        return self.thread

    def start(self) -> None:
        """Start processing in a background thread."""
        thread = self._prepare()
        self._runner = threading.Thread(target=self._run_quietly, args=(thread,), daemon=True)
        self._runner.start()

    @staticmethod
    def _run_quietly(thread: StreamThread) -> None:
        try:
            thread.run()
        except BaseException:  # kept in thread.error and thread.state
            log.exception("stream thread failed")

    def run(self) -> None:
        """Process in the calling thread until SIGINT or SIGTERM; re-raise what stopped it."""
        thread = self._prepare()

        def stop(signum: int, frame: FrameType | None) -> None:
            log.info("signal %d: closing", signum)
            thread.stop()

        previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            thread.run()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self._stop_metrics()
            self.state_directory.unlock()

    def close(self, timeout_s: float = 60.0) -> None:
        """Commit, close the stores, leave the group."""
        if self.thread is not None:
            self.thread.stop()
        if self._runner is not None:
            self._runner.join(timeout_s)
            if self._runner.is_alive():
                raise StreamsError(f"the stream thread did not stop within {timeout_s} s")
        self._stop_metrics()
        self.state_directory.unlock()

    def store(self, name: str) -> QueryableStore:
        """A read-only view of a store of this instance (interactive queries)."""
        return QueryableStore(self, name)

    def metrics(self) -> dict[str, Any]:
        """Processing counters."""
        return {} if self.thread is None else self.thread.metrics()
