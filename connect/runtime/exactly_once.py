"""Exactly-once source tasks (Kafka's KIP-618): records and their source offsets in one transaction.

A distributed worker with ``exactly.once.source.support=enabled`` runs every source task with a
transactional producer whose id is ``<group.id>-<connector>-<task>`` (Kafka's). Each
transaction holds the records the task produced *and* the source offsets after them, written to
the worker's offsets topic (``offset.storage.topic``) by the same producer, so that the records
are in their topics exactly when their offsets are in the offsets topic: a task killed
mid-transaction leaves an open transaction that the broker aborts — its records are never
read by a ``read_committed`` consumer — and the task, started again, resumes from the offsets of
the last committed transaction. Offsets are read ``read_committed``
(:class:`~sluice.connect.runtime.topic_store.TopicMap`).

At start a task *fences* the previous incarnations of its id: ``init_transactions()``
(InitProducerId) bumps the producer epoch, aborts whatever transaction an earlier instance left
open and makes every later write of that instance fail (``PRODUCER_FENCED``); only then are
the offsets read, to the last stable offset, and the task started.

Connector settings (Kafka's ``SourceConnectorConfig``):

- ``exactly.once.support``: ``requested`` (default) or ``required`` — a ``required``
  connector is refused unless the worker has exactly-once support enabled and the connector
  says it supports it (:meth:`~sluice.connect.SourceConnector.exactly_once_support`);
- ``transaction.boundary``: ``poll`` (default: one transaction per non-empty poll), ``interval``
  (a transaction every ``transaction.boundary.interval.ms``, default the worker's
  ``offset.flush.interval.ms``) or ``connector`` — connector-defined boundaries, which no Sluice
  connector can define (the API has no ``TransactionContext``), so it is refused at validation;
- ``offsets.storage.topic``: accepted only when it names the worker's offsets topic (per-connector
  offsets topics are not implemented, so another name is refused rather than ignored).

Worker setting ``exactly.once.source.support``: ``disabled`` (default), ``preparing`` (the rolling-
upgrade step: tasks still run at-least-once) or ``enabled``. As in Kafka, a standalone worker has
no exactly-once source support: there the key is refused unless ``disabled``, ``required``
connectors are refused, and the other connector keys are accepted and have no effect.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from sluice.connect.api.config_def import ConfigDef, at_least, one_of
from sluice.connect.api.connector import Connector, SourceConnector, SourceTask
from sluice.connect.api.errors import ConnectError
from sluice.connect.runtime.offsets import KafkaOffsetStore, OffsetStore, offset_key
from sluice.connect.runtime.source_runner import SourceTaskRunner
from sluice.errors import ConfigError

__all__ = [
    "SOURCE_CONFIG",
    "WORKER_KEY",
    "ExactlyOnceSourceTaskRunner",
    "add_problems",
    "check_worker_config",
    "exactly_once_enabled",
    "problems",
    "transactional_id",
]

log = logging.getLogger("sluice.connect")

WORKER_KEY = "exactly.once.source.support"
"""The worker setting (Kafka's ``DistributedConfig.EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG``)."""

WORKER_VALUES = ("disabled", "preparing", "enabled")

REWINDS = 5
"""Aborted transactions in a row (none committed between) after which a task fails."""

COMMIT_ATTEMPTS = 3
"""Tries of a commit that fails with a retriable error (each waits up to 60 s)."""

SOURCE_CONFIG = (
    ConfigDef()
    .define(
        "exactly.once.support",
        "string",
        "requested",
        doc="requested or required: whether the connector must run exactly-once.",
        validator=one_of("requested", "required"),
        importance="medium",
    )
    .define(
        "transaction.boundary",
        "string",
        "poll",
        doc="poll, interval or connector: where an exactly-once task commits a transaction.",
        validator=one_of("poll", "interval", "connector"),
        importance="medium",
    )
    .define(
        "transaction.boundary.interval.ms",
        "long",
        None,
        doc="With transaction.boundary=interval: how often (default offset.flush.interval.ms).",
        validator=at_least(1),
        importance="low",
    )
    .define(
        "offsets.storage.topic",
        "string",
        None,
        doc="The offsets topic; only the worker's own is supported.",
        importance="low",
    )
)
"""Kafka's exactly-once settings of a source connector."""


def check_worker_config(config: Mapping[str, Any], *, distributed: bool) -> str:
    """The worker's ``exactly.once.source.support``; ConfigError if bad (or set standalone)."""
    value = str(config.get(WORKER_KEY, "disabled")).strip().lower()
    if value not in WORKER_VALUES:
        raise ConfigError(
            f"must be one of {', '.join(WORKER_VALUES)}, got {value!r}", key=WORKER_KEY
        )
    if value != "disabled" and not distributed:
        raise ConfigError(
            "exactly-once source support needs a distributed worker (Kafka: KIP-618 is "
            "distributed-only); run `sluice connect start` or set it to disabled",
            key=WORKER_KEY,
        )
    return value


def exactly_once_enabled(worker_config: Mapping[str, Any]) -> bool:
    """Whether the worker runs source tasks exactly-once."""
    return str(worker_config.get(WORKER_KEY, "disabled")).strip().lower() == "enabled"


def transactional_id(worker_config: Mapping[str, Any], connector: str, task_id: int) -> str:
    """Kafka's transactional id of a source task: ``<group.id>-<connector>-<task>``."""
    return f"{worker_config.get('group.id', 'connect-cluster')}-{connector}-{task_id}"


def problems(
    cls: type[Connector],
    config: Mapping[str, Any],
    worker_config: Mapping[str, Any],
    *,
    distributed: bool,
) -> list[tuple[str, str]]:
    """``(key, message)`` for each exactly-once setting of ``config`` this worker refuses."""
    if not issubclass(cls, SourceConnector):
        return []
    found = [(v.name, e) for v in SOURCE_CONFIG.validate(config) for e in v.errors]
    bad = {key for key, _ in found}
    if "exactly.once.support" not in bad and config.get("exactly.once.support") == "required":
        if not exactly_once_enabled(worker_config):
            found.append(
                (
                    "exactly.once.support",
                    "This worker does not have exactly-once source support enabled "
                    f"({WORKER_KEY}=enabled, on a distributed worker).",
                )
            )
        try:
            support = cls().exactly_once_support(config)
            broken = ""
        except Exception as error:  # a plugin's bug, reported on the key
            support, broken = None, f"exactly_once_support() failed: {error!r}"
        if broken or support is not True:
            found.append(
                (
                    "exactly.once.support",
                    broken
                    or (
                        "The connector does not support exactly-once semantics with the "
                        "provided configuration."
                        if support is False
                        else "The connector does not say whether it supports exactly-once "
                        "semantics (exactly_once_support() returned None); use requested to run "
                        "it anyway."
                    ),
                )
            )
    if "transaction.boundary" not in bad and config.get("transaction.boundary") == "connector":
        found.append(
            (
                "transaction.boundary",
                "The connector does not support connector-defined transaction boundaries with "
                "the given configuration (no Sluice connector defines them). Please reconfigure "
                "it to use poll or interval.",
            )
        )
    interval = config.get("transaction.boundary.interval.ms")
    if "transaction.boundary.interval.ms" not in bad and interval is not None:
        timeout = int(worker_config.get("producer.transaction.timeout.ms", 60_000))
        if int(interval) >= timeout:
            found.append(
                (
                    "transaction.boundary.interval.ms",
                    f"must be below the producer's transaction.timeout.ms ({timeout} ms): the "
                    "broker aborts a transaction open longer, fencing the task",
                )
            )
    topic = config.get("offsets.storage.topic")
    if "offsets.storage.topic" not in bad and topic is not None:
        own = worker_config.get("offset.storage.topic")
        if not distributed:
            found.append(
                (
                    "offsets.storage.topic",
                    "a standalone worker keeps source offsets in its file "
                    "(offset.storage.file.filename); remove this key",
                )
            )
        elif str(topic) != str(own):
            found.append(
                (
                    "offsets.storage.topic",
                    f"per-connector offsets topics are not supported: remove the key (offsets "
                    f"go to the worker's {own}) or set it to {own}",
                )
            )
    return found


def add_problems(infos: dict[str, Any], found: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Add ``found`` to a ``ConfigInfos`` body (:func:`~.validation.config_infos`)."""
    entries = {c["value"]["name"]: c for c in infos["configs"]}
    for key, message in found:
        entry = entries.get(key)
        if entry is None:
            entry = {
                "definition": {
                    "name": key,
                    "type": "STRING",
                    "required": False,
                    "default_value": None,
                    "importance": "MEDIUM",
                    "documentation": "",
                    "group": "Exactly Once Support",
                    "order": -1,
                    "width": "NONE",
                    "display_name": key,
                    "dependents": [],
                },
                "value": {
                    "name": key,
                    "value": None,
                    "recommended_values": [],
                    "errors": [],
                    "visible": True,
                },
            }
            infos["configs"].append(entry)
            entries[key] = entry
        entry["value"]["errors"].append(message)
        infos["error_count"] += 1
    return infos


class ExactlyOnceSourceTaskRunner(SourceTaskRunner):
    """A source task whose records and offsets are committed in transactions; see the module."""

    def __init__(
        self,
        connector: str,
        task_id: int,
        task: SourceTask,
        config: dict[str, Any],
        worker_config: dict[str, Any],
        offsets: OffsetStore,
    ) -> None:
        if not isinstance(offsets, KafkaOffsetStore):
            raise ConfigError(
                "exactly-once source tasks need the offsets topic of a distributed worker",
                key=WORKER_KEY,
            )
        self.transactional_id = transactional_id(worker_config, connector, task_id)
        super().__init__(connector, task_id, task, config, worker_config, offsets)
        self._store = offsets
        values = SOURCE_CONFIG.parse(config)
        self.boundary: str = values["transaction.boundary"]
        interval = values["transaction.boundary.interval.ms"]
        self.boundary_interval_s = (
            self.offset_flush_interval_s if interval is None else int(interval) / 1000
        )
        self._offsets_topic = offsets.map.topic
        self._in_transaction = False
        self._started = 0.0
        self._fenced = False
        self._committed_since_rewind = False

    def producer_settings(self) -> dict[str, Any]:
        return {**super().producer_settings(), "transactional.id": self.transactional_id}

    def execute(self) -> None:
        """The task's loop; after an abortable transaction error (the broker lost the producer's
        state…) the transaction is aborted and the task started again
        — a new instance, from the committed offsets — at most :data:`REWINDS` times in a row."""
        rewinds = 0
        while True:
            try:
                super().execute()
                return
            except _AbortedTransactionError as rewind:
                rewinds = 1 if self._committed_since_rewind else rewinds + 1
                if rewinds > REWINDS or self.stopping():
                    raise ConnectError(f"task {self.name}: {rewind}") from rewind
                log.warning(
                    "task %s: %s; started again from its committed offsets", self.name, rewind
                )
                self.task = type(self.task)()
                self._pending.clear()
                self._sent = []
                self._committed_since_rewind = False

    def prepare(self) -> None:
        """Fence earlier instances of this task, then read the offsets to the stable end."""
        if not self._fenced:
            try:
                self.producer.init_transactions(60)
            except KafkaException as error:
                raise ConnectError(
                    f"task {self.name}: cannot fence earlier instances of transactional id "
                    f"{self.transactional_id}: {error}"
                ) from error
            self._fenced = True
            log.info("task %s: exactly-once, transactional id %s", self.name, self.transactional_id)
        self._store.map.sync()

    def before_send(self, items: Any) -> None:
        if items and not self._in_transaction:
            self.producer.begin_transaction()
            self._in_transaction = True
            self._started = time.monotonic()

    def after_send(self) -> None:
        self.producer.poll(0)
        if not self._in_transaction:
            return
        if self.boundary == "poll" or time.monotonic() - self._started >= self.boundary_interval_s:
            self.commit_offsets()

    def commit_offsets(self, wait: bool = True) -> bool:
        """Write the pending offsets into the open transaction and commit it."""
        if not self._in_transaction:
            return True
        for partition, offset in self._pending.values():
            value = None if offset is None else json.dumps(offset, sort_keys=True).encode()
            key = offset_key(self.connector, partition).encode()
            try:
                self.producer.produce(self._offsets_topic, value, key)
            except BufferError:
                self._produce_when_room(self._offsets_topic, value, key)
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                self.producer.commit_transaction(60)
                break
            except KafkaException as error:
                reason: KafkaError = error.args[0]
                if reason.retriable() and attempt + 1 < COMMIT_ATTEMPTS:
                    continue  # librdkafka: a retriable commit error may be retried as is
                self._failed(reason)
        self._in_transaction = False
        self._committed_since_rewind = True
        self._failures.clear()  # committed: every record was delivered
        self._pending.clear()
        sent, self._sent = self._sent, []
        for record in sent:
            self.task.commit_record(record)
        self.task.commit()
        return True

    def _failed(self, reason: KafkaError) -> None:
        """Abort the transaction; :class:`_AbortedTransactionError` if the task may go on from
        its committed offsets, else ConnectError (the task fails)."""
        self._in_transaction = False
        failures = "; ".join(self._failures[:3])
        self._failures.clear()
        self._pending.clear()
        self._sent = []
        what = f"transaction of {self.transactional_id} not committed: {reason.str()}" + (
            f" ({failures})" if failures else ""
        )
        if reason.fatal() or not reason.txn_requires_abort():
            # fenced (another instance of this task runs), or a state error: nothing to redo here
            raise ConnectError(f"task {self.name}: {what}")
        try:
            self.producer.abort_transaction(30)
        except KafkaException as error:
            raise ConnectError(f"task {self.name}: {what}; abort failed: {error}") from error
        if failures:  # a record the broker refused would be refused again
            raise ConnectError(f"task {self.name}: {what}; aborted")
        raise _AbortedTransactionError(f"{what}; aborted")

    def close_producer(self) -> None:
        if self._in_transaction:  # failed mid-transaction: nothing of it may count
            self._in_transaction = False
            try:
                self.producer.abort_transaction(30)
            except KafkaException as error:
                log.warning("task %s: open transaction not aborted: %s", self.name, error)
        super().close_producer()


class _AbortedTransactionError(Exception):
    """An aborted transaction after which the task may start again from its committed offsets."""
