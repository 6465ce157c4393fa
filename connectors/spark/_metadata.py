"""What the Spark driver asks the cluster: the partitions of a subscription and their offset bounds.

One AdminClient per source, created on first use (the reader objects that hold a
:class:`KafkaMetadata` are pickled to Spark's workers; the client is left behind). Every call is
bounded by ``timeout`` seconds and raises :class:`KafkaMetadataError` with what it asked for and
the client's last error; a failed authentication or TLS handshake fails at once (librdkafka
would retry it until the timeout, but a wrong password or an untrusted certificate stays so).
Topics are listed, never described by name, so that a broker with ``auto.create.topics.enable``
does not create a misspelt topic.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import IsolationLevel, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]  # no __all__

from sluice.connectors.spark._offsets import PartitionOffsets, TopicPartition
from sluice.connectors.spark._options import SourceOptions

__all__ = ["KafkaMetadata", "KafkaMetadataError", "is_security_failure"]

_T = TypeVar("_T")
_VISIBILITY = " (or, under ACLs, grant the source's principal Read on them: it cannot see them)"
_SLICE_S = 1.0  # a blocking call is retried in slices this long, to notice an error in between


def is_security_failure(error: KafkaError) -> bool:
    """Whether ``error`` is a failed authentication or TLS handshake, which retrying does not
    cure (a wrong password, an unknown user, a certificate that is not trusted)."""
    code = error.code()
    if code in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._SSL):
        return True
    return code == KafkaError._TRANSPORT and "SSL handshake failed" in error.str()


class KafkaMetadataError(RuntimeError):
    """The cluster could not answer, or the subscription names topics or partitions it lacks."""


class KafkaMetadata:
    """Partitions and offset bounds of a subscription, read with an AdminClient."""

    def __init__(self, options: SourceOptions, timeout: float = 30.0) -> None:
        self._options = options
        self._timeout = timeout
        self._admin: AdminClient | None = None
        self._last_error: KafkaError | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_admin": None, "_last_error": None}

    def close(self) -> None:
        """Forget the AdminClient (librdkafka closes it when it is collected)."""
        self._admin = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            config: dict[str, Any] = {**self._options.admin_config(), "error_cb": self._on_error}
            try:
                self._admin = AdminClient(config)
            except (KafkaException, ValueError, TypeError) as exc:
                raise KafkaMetadataError(
                    f"librdkafka refuses the source's kafka.* options (option 'kafka.<property>' "
                    f"for the property it names): {exc}"
                ) from None
        return self._admin

    def _on_error(self, error: KafkaError) -> None:
        self._last_error = error

    def _failure(self) -> str:
        """What the client last reported, for an error message."""
        error = self._last_error
        return f"; the client's last error: {error.str()}" if error is not None else ""

    def _bounded(self, call: Callable[[float], _T], what: str) -> _T:
        """``call(timeout)`` retried in short slices until it answers or ``timeout`` passes,
        failing at once when the client cannot authenticate or establish TLS."""
        admin = self.admin
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                return call(min(_SLICE_S, max(0.1, deadline - time.monotonic())))
            except (KafkaException, TimeoutError) as exc:
                admin.poll(0)  # serve error_cb
                error = self._last_error
                if error is not None and is_security_failure(error):
                    raise KafkaMetadataError(
                        f"cannot {what}: {error.str()} (check the options "
                        "kafka.security.protocol, kafka.sasl.mechanism, kafka.sasl.jaas.config "
                        "and kafka.ssl.truststore.location)"
                    ) from None
                if time.monotonic() >= deadline:
                    raise KafkaMetadataError(
                        f"cannot {what} within {self._timeout:.0f} s: {exc}{self._failure()}"
                    ) from exc

    def partitions(self, *, strict: bool) -> list[TopicPartition]:
        """The subscribed partitions that exist now, sorted.

        ``strict``: a topic named by ``subscribe`` or ``assign`` that does not exist (or an
        assigned partition beyond its topic's count) raises; otherwise it is left out.
        """
        sub = self._options.subscription
        topics = self._bounded(
            lambda timeout: self.admin.list_topics(timeout=timeout).topics,
            f"list the topics of {self._options.bootstrap_servers}",
        )
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
                f"{_VISIBILITY if self._options.secured else ''}"
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
                f"{self._failure()}"
            ) from exc
        return out
