"""What the Spark driver asks the cluster: the partitions of a subscription and their offset bounds.

One AdminClient per source, created on first use (the reader objects that hold a
:class:`KafkaMetadata` are pickled to Spark's workers; the client is left behind). Every call is
bounded by ``timeout`` seconds and raises :class:`KafkaMetadataError` with what it asked for.
Topics are listed, never described by name, so that a broker with ``auto.create.topics.enable``
does not create a misspelt topic.
"""

from __future__ import annotations

import re
from typing import Any

from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]  # no __all__

from sluice.connectors.spark._offsets import PartitionOffsets, TopicPartition
from sluice.connectors.spark._options import SourceOptions

__all__ = ["KafkaMetadata", "KafkaMetadataError"]


class KafkaMetadataError(RuntimeError):
    """The cluster could not answer, or the subscription names topics or partitions it lacks."""


class KafkaMetadata:
    """Partitions and offset bounds of a subscription, read with an AdminClient."""

    def __init__(self, options: SourceOptions, timeout: float = 30.0) -> None:
        self._options = options
        self._timeout = timeout
        self._admin: AdminClient | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_admin": None}

    def close(self) -> None:
        """Forget the AdminClient (librdkafka closes it when it is collected)."""
        self._admin = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(self._options.admin_config())
        return self._admin

    def partitions(self, *, strict: bool) -> list[TopicPartition]:
        """The subscribed partitions that exist now, sorted.

        ``strict``: a topic named by ``subscribe`` or ``assign`` that does not exist (or an
        assigned partition beyond its topic's count) raises; otherwise it is left out.
        """
        sub = self._options.subscription
        try:
            topics = self.admin.list_topics(timeout=self._timeout).topics
        except KafkaException as exc:
            raise KafkaMetadataError(
                f"cannot list the topics of {self._options.bootstrap_servers} "
                f"within {self._timeout:.0f} s: {exc}"
            ) from exc
        counts = {name: len(meta.partitions) for name, meta in topics.items() if meta.error is None}
        if sub.kind == "subscribePattern":
            pattern = re.compile(sub.pattern)
            return sorted(
                (name, p)
                for name, count in counts.items()
                if pattern.fullmatch(name) and not name.startswith("__")
                for p in range(count)
            )
        wanted = sub.topics or tuple(dict.fromkeys(topic for topic, _ in sub.assign))
        missing = [name for name in wanted if name not in counts]
        if missing and strict:
            raise KafkaMetadataError(
                f"topic(s) {', '.join(missing)} do not exist on {self._options.bootstrap_servers} "
                f"(option '{sub.kind}'); create them first"
            )
        if sub.kind == "subscribe":
            return sorted(
                (name, p) for name in wanted if name in counts for p in range(counts[name])
            )
        beyond = [(t, p) for t, p in sub.assign if t in counts and p >= counts[t]]
        if beyond and strict:
            listed = ", ".join(f"{t}-{p} (topic has {counts[t]})" for t, p in beyond)
            raise KafkaMetadataError(
                f"option 'assign' names partitions that do not exist: {listed}"
            )
        return sorted((t, p) for t, p in sub.assign if t in counts and p < counts[t])

    def earliest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        """Each partition's log start offset."""
        return self._list_offsets(partitions, OffsetSpec.earliest(), "earliest")  # type: ignore[no-untyped-call]

    def latest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        """Each partition's end: the high watermark, or the last stable offset when reading
        committed records only (``kafka.isolation.level=read_committed``)."""
        return self._list_offsets(partitions, OffsetSpec.latest(), "latest")  # type: ignore[no-untyped-call]

    def _list_offsets(
        self, partitions: list[TopicPartition], spec: OffsetSpec, what: str
    ) -> PartitionOffsets:
        if not partitions:
            return {}
        isolation = (
            IsolationLevel.READ_COMMITTED
            if self._options.isolation_level == "read_committed"
            else IsolationLevel.READ_UNCOMMITTED
        )
        request = {KafkaTopicPartition(topic, p): spec for topic, p in partitions}
        out: PartitionOffsets = {}
        try:
            futures = self.admin.list_offsets(
                request, isolation_level=isolation, request_timeout=self._timeout
            )
            for tp, future in futures.items():
                out[tp.topic, tp.partition] = int(future.result(timeout=self._timeout).offset)
        except (KafkaException, TimeoutError) as exc:
            raise KafkaMetadataError(
                f"cannot list the {what} offsets of {len(partitions)} partition(s) on "
                f"{self._options.bootstrap_servers} within {self._timeout:.0f} s: {exc}"
            ) from exc
        return out
