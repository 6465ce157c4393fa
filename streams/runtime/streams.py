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
from typing import TYPE_CHECKING, Any

from sluice import clients
from sluice.errors import ConfigError
from sluice.metrics import MetricsServer, serve_metrics
from sluice.serde import Serde
from sluice.streams.config import StreamsConfig
from sluice.streams.errors import StreamsError
from sluice.streams.runtime.instances import (
    HostInfo,
    KeyQueryMetadata,
    StreamsMetadata,
    key_query_metadata,
    partition_for,
    streams_metadata,
)
from sluice.streams.runtime.state_directory import StateDirectory
from sluice.streams.runtime.thread import StreamThread
from sluice.streams.runtime.topics import InternalTopics
from sluice.streams.state.base import StateStore
from sluice.streams.topology import Topology

if TYPE_CHECKING:
    from sluice.http_server import HttpServer

__all__ = ["KafkaStreams", "QueryableStore"]

log = logging.getLogger("sluice.streams")


class QueryableStore:
    """Read-only view of one store over every local task.

    Reads are eventually consistent: they see the processing thread's latest writes. Active
    tasks only, unless ``stale`` (Kafka's ``StoreQueryParameters.enableStaleStores()``): then
    the standby replicas kept here are read too — those at most ``max_lag`` changelog records
    behind when a bound is given.
    """

    def __init__(
        self, streams: KafkaStreams, name: str, *, stale: bool = False, max_lag: int | None = None
    ) -> None:
        self._streams = streams
        self.name = name
        self.stale = stale
        self.max_lag = max_lag

    def _stores(self) -> list[StateStore]:
        thread = self._streams.thread
        if thread is None:
            raise StreamsError("the application is not running")
        if self.name in thread.globals.stores:
            return [thread.globals.stores[self.name]]
        found = [t.stores[self.name] for t in list(thread.tasks.values()) if self.name in t.stores]
        if not found and self.name not in thread.topology.stores:
            raise StreamsError(f"no store named {self.name!r}")
        standbys = thread.standbys
        if self.stale and standbys is not None:
            for task in list(standbys.tasks.values()):
                if self.name not in task.stores:
                    continue
                lag = standbys.lag(task, self.name)
                if self.max_lag is None or (lag is not None and lag <= self.max_lag):
                    found.append(task.stores[self.name])
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
        self._queries: HttpServer | None = None

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

    def _serve_queries(self) -> None:
        """The interactive-query API at ``application_server`` (``serve_queries``); with port 0
        the port found is what the group is told."""
        if not self.config.serve_queries or self._queries is not None:
            return
        from sluice.streams.runtime.query_server import serve_queries

        assert self.config.application_server is not None  # checked by StreamsConfig
        address = HostInfo.parse(self.config.application_server)
        try:
            self._queries = serve_queries(self, address.host, address.port)
        except OSError as error:
            raise StreamsError(f"cannot serve queries on {address}: {error}") from None
        self.config.application_server = str(HostInfo(address.host, self._queries.port))

    @property
    def queries_url(self) -> str | None:
        """``http://host:port`` of the interactive-query API while served."""
        return None if self._queries is None else self._queries.url

    def _stop_servers(self) -> None:
        if self._metrics is not None:
            self._metrics.close()
            self._metrics = None
        if self._queries is not None:
            self._queries.stop()
            self._queries = None

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
            self._serve_queries()
            return self._make_thread()
        except BaseException:
            self._stop_servers()
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
            self._stop_servers()
            self.state_directory.unlock()

    def close(self, timeout_s: float = 60.0) -> None:
        """Commit, close the stores, leave the group."""
        if self.thread is not None:
            self.thread.stop()
        if self._runner is not None:
            self._runner.join(timeout_s)
            if self._runner.is_alive():
                raise StreamsError(f"the stream thread did not stop within {timeout_s} s")
        self._stop_servers()
        self.state_directory.unlock()

    def store(
        self, name: str, *, stale: bool = False, max_lag: int | None = None
    ) -> QueryableStore:
        """A read-only view of a store of this instance (interactive queries); ``stale`` reads
        standby replicas too (see :class:`QueryableStore`)."""
        return QueryableStore(self, name, stale=stale, max_lag=max_lag)

    # -- where the state is (application_server) ------------------------------------------------
    def _running(self) -> StreamThread:
        if self.thread is None or self.thread.state in ("NOT_RUNNING", "ERROR"):
            raise StreamsError("the application is not running")
        return self.thread

    def all_metadata(self) -> list[StreamsMetadata]:
        """Every instance with an ``application_server``: its stores and partitions, active and
        standby, as of the latest rebalance (Kafka's ``metadataForAllStreamsClients``)."""
        thread = self._running()
        return streams_metadata(self.topology, thread.assignment.hosts, thread.tasks_of)

    def all_metadata_for_store(self, store: str) -> list[StreamsMetadata]:
        """The instances that host ``store``, actively or as a standby (Kafka's
        ``streamsMetadataForStore``)."""
        if store not in self.topology.stores:
            raise StreamsError(f"no store named {store!r}")
        return [
            m
            for m in self.all_metadata()
            if store in m.state_store_names or store in m.standby_state_store_names
        ]

    def query_metadata_for_key(
        self, store: str, key: Any, key_serde: Serde | None = None
    ) -> KeyQueryMetadata | None:
        """Which instance holds ``key`` of ``store`` (and which keep standbys of it), found by
        partitioning the key's bytes (``key_serde``, by default the store's) as Kafka's default
        partitioner does; None when no instance with an ``application_server`` has it now."""
        thread = self._running()
        spec = self.topology.stores.get(store)
        if spec is None:
            raise StreamsError(f"no store named {store!r}")
        sub = next(s for s in self.topology.subtopologies() if store in s.stores)
        counts = [thread.topics.partitions.get(t) for t in sub.source_topics]
        known = [c for c in counts if c]
        if not known:
            raise StreamsError(f"the input partitions of {store!r} are not known yet")
        serde = key_serde or spec.build().key_serde  # type: ignore[attr-defined]
        partition = partition_for(serde.serialize(key), known[0])
        return key_query_metadata(self.topology, thread.assignment.hosts, store, partition)

    def metrics(self) -> dict[str, Any]:
        """Processing counters."""
        return {} if self.thread is None else self.thread.metrics()
