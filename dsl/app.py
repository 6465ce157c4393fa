"""``App``: where a stream processing application is declared, tested and run.

>>> from sluice.dsl import App
>>> app = App("wordcount")
>>> counts = (app.stream("lines")
...     .flat_map_values(str.split)
...     .group_by(lambda key, word: word.lower())
...     .count(name="counts"))
>>> counts.to_stream().to("word-counts")
>>> with app.test_driver() as d:
...     d.pipe("lines", None, "the cat and the hat")
...     d.store("counts").get("the"), len(d.read_output("word-counts"))
(2, 5)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sluice.dsl.builder import Builder, StoreKind
from sluice.dsl.signatures import check_function
from sluice.dsl.stream import KStream
from sluice.dsl.table import GlobalKTable, KTable
from sluice.errors import ConfigError
from sluice.metrics import ENV_LISTEN, parse_listen
from sluice.serde import JSON, STRING, SerdeSpec, serde_from
from sluice.streams.config import (
    ENV_CONFIG,
    ProcessingGuarantee,
    StreamsConfig,
    settings_from_text,
    settings_of,
)
from sluice.streams.driver import TestDriver
from sluice.streams.errors import HandlerSpec, StreamsError
from sluice.streams.operators.aggregate import TableSource
from sluice.streams.state.base import StoreSpec
from sluice.streams.topology import TimestampExtractor, Topology

if TYPE_CHECKING:
    from sluice.serde import Serde
    from sluice.streams.runtime.instances import KeyQueryMetadata, StreamsMetadata
    from sluice.streams.runtime.streams import KafkaStreams

__all__ = ["ENV_INSTANCE", "App"]

ENV_INSTANCE = "SLUICE_INSTANCE"
"""The instance number ``sluice up`` gives each process of a program (0, 1…)."""


class App:
    """A Streams application: ``application_id`` is its consumer group and topic prefix.

    Keyword arguments are :class:`~sluice.streams.config.StreamsConfig` settings
    (``processing_guarantee``, ``num_standby_replicas``, ``state_dir``, ``commit_interval_ms``,
    the error handlers, ``dead_letter_topic``…), under their Python names or Kafka's dotted ones
    (``**{"processing.exception.handler": "log_and_continue"}``); ``stores`` picks the backend
    of key-value, window and session stores (``"rocksdb"``, Kafka's default, or ``"memory"``).

    Bad records (see :mod:`sluice.streams.errors`): ``deserialization_exception_handler``,
    ``processing_exception_handler`` and ``production_exception_handler`` are
    ``"log_and_fail"`` (the default), ``"log_and_continue"``, Kafka's class names, or a function
    ``handler(error) -> bool``; with ``dead_letter_topic`` set, a skipped record is written
    there with Kafka's ``__streams.errors.*`` headers (:mod:`sluice.streams.runtime.dead_letter`).

    ``metrics_listen="HOST:PORT"`` serves Prometheus metrics at ``/metrics`` while the app runs
    (:mod:`sluice.streams.runtime.metrics`); when not given, the environment variable
    ``SLUICE_METRICS_LISTEN`` is used (what ``sluice up`` sets for the apps it starts), and
    ``""`` turns it off.

    ``state_dir`` defaults to ``.sluice/streams``, or ``.sluice/streams/instance-<N>`` when the
    environment variable ``SLUICE_INSTANCE`` is set (``sluice up`` sets it to 0, 1… for the
    instances of a program): two running instances of an application cannot share a state
    directory (:mod:`sluice.streams.runtime.state_directory`).

    ``schema_registry_url`` (or Confluent's ``schema.registry.url`` among the settings, also
    from ``sluice up``'s ``config:``) is where schema-aware serdes (``AvroSerde``,
    ``JsonSchemaSerde``, ``ProtobufSerde`` of :mod:`sluice.schemas.serdes`) that name no
    ``schema.registry.url`` of their own register and look up schemas (default:
    ``$SLUICE_SCHEMA_REGISTRY_URL``, else ``http://127.0.0.1:8081``). The topology binds each
    such serde to its topic: the subjects are ``<topic>-key|value``, ``<application
    id>-<store>-changelog-key|value`` for stores.
    """

    def __init__(
        self,
        application_id: str,
        bootstrap_servers: str = "localhost:9092",
        *,
        processing_guarantee: ProcessingGuarantee | None = None,
        stores: StoreKind = "rocksdb",
        state_dir: str | Path | None = None,
        deserialization_exception_handler: HandlerSpec | None = None,
        processing_exception_handler: HandlerSpec | None = None,
        production_exception_handler: HandlerSpec | None = None,
        dead_letter_topic: str | None = None,
        metrics_listen: str | None = None,
        schema_registry_url: str | None = None,
        **settings: Any,
    ) -> None:
        if metrics_listen is None:
            metrics_listen = os.environ.get(ENV_LISTEN) or None
            if metrics_listen:
                try:
                    parse_listen(metrics_listen, key=ENV_LISTEN)
                except ConfigError as error:
                    raise StreamsError(str(error)) from None
        given = {
            "processing_guarantee": processing_guarantee,
            "state_dir": None if state_dir is None else Path(state_dir),
            "deserialization_exception_handler": deserialization_exception_handler,
            "processing_exception_handler": processing_exception_handler,
            "production_exception_handler": production_exception_handler,
            "dead_letter_topic": dead_letter_topic,
            "schema_registry_url": schema_registry_url,
        }
        merged = settings_of({**{k: v for k, v in given.items() if v is not None}, **settings})
        for name, deployed in _deployed_settings().items():
            # client settings (dicts): the deployment's on top of the code's
            merged[name] = (
                {**merged.get(name, {}), **deployed} if isinstance(deployed, dict) else deployed
            )
        instance = os.environ.get(ENV_INSTANCE)
        if "state_dir" not in merged and instance:
            merged["state_dir"] = Path(".sluice") / "streams" / f"instance-{instance}"
        for name in ("application_id", "bootstrap_servers"):
            if name in merged:
                raise StreamsError(f"{name} is App's first argument, not a setting")
        self.config = StreamsConfig(
            application_id,
            bootstrap_servers,
            metrics_listen=metrics_listen or None,
            **merged,
        )
        self._builder = Builder(application_id, stores)
        self._builder.topology.schema_registry_url = self.config.schema_registry_url
        self._runtime: KafkaStreams | None = None

    @property
    def application_id(self) -> str:
        """The application id (consumer group id)."""
        return self.config.application_id

    @property
    def topology(self) -> Topology:
        """The topology built so far."""
        return self._builder.topology

    def describe(self) -> str:
        """The topology as text."""
        return self.topology.describe()

    # -- inputs -----------------------------------------------------------------------------
    def stream(
        self,
        topics: str | Iterable[str],
        *,
        key_serde: SerdeSpec = STRING,
        value_serde: SerdeSpec = JSON,
        timestamp_extractor: TimestampExtractor | None = None,
        name: str | None = None,
    ) -> KStream:
        """A stream of ``topics`` (keys are strings and values JSON unless said otherwise)."""
        if timestamp_extractor is not None:
            check_function(
                "App.stream", "timestamp_extractor(record, partition_time)", timestamp_extractor
            )
        key_serde, value_serde = serde_from(key_serde), serde_from(value_serde)
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        node = self._builder.name("KSTREAM-SOURCE", name)
        self.topology.add_source(
            node,
            topic_list,
            key_serde=key_serde,
            value_serde=value_serde,
            timestamp_extractor=timestamp_extractor,
        )
        return KStream(self._builder, node, key_serde, value_serde, topics=frozenset(topic_list))

    def table(
        self,
        topic: str,
        *,
        key_serde: SerdeSpec = STRING,
        value_serde: SerdeSpec = JSON,
        timestamp_extractor: TimestampExtractor | None = None,
        name: str | None = None,
        caching: bool = True,
    ) -> KTable:
        """A table of ``topic``: the latest value per key. The store is named ``name`` (or
        generated) and restored from ``topic`` itself (no changelog of its own). Its updates
        go downstream through a record cache unless ``caching=False`` (Kafka's
        ``Materialized.withCachingDisabled()``; :mod:`sluice.streams.state.cache`)."""
        if timestamp_extractor is not None:
            check_function(
                "App.table", "timestamp_extractor(record, partition_time)", timestamp_extractor
            )
        key_serde, value_serde = serde_from(key_serde), serde_from(value_serde)
        builder = self._builder
        source = builder.name("KTABLE-SOURCE")
        self.topology.add_source(
            source,
            [topic],
            key_serde=key_serde,
            value_serde=value_serde,
            timestamp_extractor=timestamp_extractor,
        )
        # the store is restored from the topic: its serdes are the topic's (Kafka Streams too)
        store = builder.kv_store(
            builder.name("KTABLE-SOURCE-STATE-STORE", name),
            self.topology.bind(key_serde, topic, is_key=True),
            self.topology.bind(value_serde, topic, is_key=False),
            logged=False,
        )
        self.topology.use_source_as_changelog(store, topic)
        node = builder.add(
            "KTABLE-SOURCE-PROCESSOR",
            lambda: TableSource(store, caching=caching),
            source,
            stores=(store,),
        )
        return KTable(builder, node, key_serde, value_serde, store=store, topics=frozenset([topic]))

    def global_table(
        self,
        topic: str,
        *,
        key_serde: SerdeSpec = STRING,
        value_serde: SerdeSpec = JSON,
        name: str | None = None,
    ) -> GlobalKTable:
        """A table of every partition of ``topic`` on every instance."""
        builder = self._builder
        store = builder.name("GLOBALKTABLE-STATE-STORE", name)
        backend = builder._backend()
        from sluice.streams.state.keyvalue import KeyValueStore

        key_serde = self.topology.bind(serde_from(key_serde), topic, is_key=True)
        value_serde = self.topology.bind(serde_from(value_serde), topic, is_key=False)

        spec = StoreSpec(
            store,
            lambda: KeyValueStore(key_serde, value_serde, backend(key_serde, value_serde)),
            logged=False,
        )
        self.topology.add_global_store(spec, topic, key_serde=key_serde, value_serde=value_serde)
        return GlobalKTable(store, key_serde, value_serde)

    def state_store(
        self, name: str, *, key_serde: SerdeSpec = STRING, value_serde: SerdeSpec = JSON
    ) -> str:
        """A key-value store for Processor API processors: ``process(..., stores=[name])``."""
        return self._builder.kv_store(name, serde_from(key_serde), serde_from(value_serde))

    # -- running ----------------------------------------------------------------------------
    def test_driver(self, **options: Any) -> TestDriver:
        """A broker-free driver over this topology (see :class:`~sluice.streams.TestDriver`)."""
        options.setdefault("application_id", self.application_id)
        for setting in (
            "deserialization_exception_handler",
            "processing_exception_handler",
            "production_exception_handler",
            "dead_letter_topic",
            "statestore_cache_max_bytes",
        ):
            options.setdefault(setting, getattr(self.config, setting))
        return TestDriver(self.topology, **options)

    def start(self) -> KafkaStreams:
        """Start processing in a background thread; returns the running instance."""
        from sluice.streams.runtime.streams import KafkaStreams

        self._runtime = KafkaStreams(self.topology, self.config)
        self._runtime.start()
        return self._runtime

    def run(self) -> None:
        """Process until interrupted (Ctrl-C or SIGTERM); more processes with the same
        application id share the partitions."""
        from sluice.streams.runtime.streams import KafkaStreams

        self._runtime = KafkaStreams(self.topology, self.config)
        self._runtime.run()

    def close(self) -> None:
        """Stop a started app: commit, close stores, leave the group."""
        if self._runtime is not None:
            self._runtime.close()

    def _running(self) -> KafkaStreams:
        if self._runtime is None:
            raise StreamsError("the app is not running: call start() or run() first")
        return self._runtime

    def store(self, name: str, *, stale: bool = False, max_lag: int | None = None) -> Any:
        """Query a store of this running instance: ``get``, ``range``, ``fetch``…; ``stale``
        reads its standby replicas too (those at most ``max_lag`` records behind, if given)."""
        return self._running().store(name, stale=stale, max_lag=max_lag)

    def query_metadata_for_key(
        self, store: str, key: Any, key_serde: Serde | None = None
    ) -> KeyQueryMetadata | None:
        """Which instance (its ``application_server``) holds ``key`` of ``store``, and which
        keep standbys of it (Kafka's ``queryMetadataForKey``)."""
        return self._running().query_metadata_for_key(store, key, key_serde)

    def all_metadata_for_store(self, store: str) -> list[StreamsMetadata]:
        """The instances that host ``store``, actively or as a standby."""
        return self._running().all_metadata_for_store(store)

    def all_metadata(self) -> list[StreamsMetadata]:
        """Every instance of the application that set ``application_server``."""
        return self._running().all_metadata()


def _deployed_settings() -> dict[str, Any]:
    """What :data:`ENV_CONFIG` holds, by field name (nothing when it is not set)."""
    text = os.environ.get(ENV_CONFIG)
    if not text:
        return {}
    try:
        values = json.loads(text)
    except ValueError as error:
        raise StreamsError(f"{ENV_CONFIG} is not JSON: {error}") from None
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise StreamsError(f"{ENV_CONFIG} must be a JSON object of strings, got {text!r}")
    return settings_from_text(values)
