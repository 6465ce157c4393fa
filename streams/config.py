"""The settings of a Streams application, under Kafka Streams' names in snake case.

>>> c = StreamsConfig("orders-app", processing_guarantee="exactly_once_v2")
>>> c.commit_interval_ms   # Kafka's default under exactly-once
100
>>> StreamsConfig("a").commit_interval_ms
30000
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sluice.errors import ConfigError
from sluice.metrics import parse_listen
from sluice.streams.errors import HandlerSpec, StreamsError

__all__ = ["ProcessingGuarantee", "StreamsConfig"]

ProcessingGuarantee = Literal["at_least_once", "exactly_once_v2"]


@dataclass
class StreamsConfig:
    """``application_id`` is the consumer group id and the prefix of internal topics.

    ``consumer_config`` / ``producer_config`` / ``admin_config`` are librdkafka properties that
    win over Sluice's (for example ``{"security.protocol": "SSL"}``). ``metrics_listen``
    (``HOST:PORT``) serves Prometheus metrics at ``/metrics`` there while the application runs
    (:mod:`sluice.streams.runtime.metrics`).
    """

    application_id: str
    bootstrap_servers: str = "localhost:9092"
    processing_guarantee: ProcessingGuarantee = "at_least_once"
    commit_interval_ms: int | None = None
    num_standby_replicas: int = 0
    state_dir: Path | None = None
    replication_factor: int = 1
    deserialization_exception_handler: HandlerSpec = "fail"
    processing_exception_handler: HandlerSpec = "fail"
    dead_letter_topic: str | None = None
    poll_ms: int = 100
    max_poll_records: int = 1000
    transaction_timeout_ms: int = 10_000
    session_timeout_ms: int = 10_000
    consumer_config: dict[str, Any] = field(default_factory=dict)
    producer_config: dict[str, Any] = field(default_factory=dict)
    admin_config: dict[str, Any] = field(default_factory=dict)
    metrics_listen: str | None = None

    def __post_init__(self) -> None:
        if self.processing_guarantee not in ("at_least_once", "exactly_once_v2"):
            raise StreamsError(
                f"processing_guarantee must be 'at_least_once' or 'exactly_once_v2', "
                f"got {self.processing_guarantee!r}"
            )
        if not self.application_id or any(c in self.application_id for c in "/\\ "):
            raise StreamsError(f"application_id {self.application_id!r} cannot name topics")
        if self.commit_interval_ms is None:
            self.commit_interval_ms = 100 if self.exactly_once else 30_000
        if self.metrics_listen:
            try:
                parse_listen(self.metrics_listen, key="metrics_listen")
            except ConfigError as error:
                raise StreamsError(str(error)) from None
        if self.state_dir is None:
            self.state_dir = Path(".sluice") / "streams"
        self.state_dir = Path(self.state_dir)

    @property
    def exactly_once(self) -> bool:
        """Whether output, state and offsets commit together in transactions."""
        return self.processing_guarantee == "exactly_once_v2"

    @property
    def isolation_level(self) -> str:
        """What the app's consumers read: only committed transactions under exactly-once."""
        return "read_committed" if self.exactly_once else "read_uncommitted"
