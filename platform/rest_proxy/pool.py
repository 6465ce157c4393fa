"""The confluent-kafka clients a proxy shares among its requests.

One :class:`~confluent_kafka.Producer` serves every produce request (its delivery reports are
served by a thread of its own, so a request waits only for its own records); one
:class:`~confluent_kafka.admin.AdminClient` serves the v3 API; each v2 consumer instance gets a
:class:`~confluent_kafka.Consumer` of its own from :meth:`ClientPool.consumer`. Every client
gets the same connection settings (``--command-config``'s security, ``-X``'s properties).

The clients are thread-safe as librdkafka's are: the proxy calls the blocking ones (admin
futures, ``consume``) from worker threads, never on the event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from starlette.concurrency import run_in_threadpool

from sluice import clients
from sluice.rest_proxy.errors import KAFKA_RETRIABLE, RestError, from_kafka, topic_not_found

__all__ = ["ClientPool"]

log = logging.getLogger("sluice.rest_proxy")

T = TypeVar("T")

TOPIC_CACHE_S = 5.0
"""How long a topic's partition count is trusted before the broker is asked again."""
_UNKNOWN = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC)
_AUTH_ERRORS = (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED)
_CONNECTION_ERRORS = (
    KafkaError._SSL,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._TRANSPORT,
)

_PRODUCER_DEFAULTS = {
    "client.id": "sluice-rest-proxy",
    # a REST request carries a batch already: a short linger lets concurrent requests share
    # produce requests without delaying a lone one noticeably
    "linger.ms": 2,
}


class ClientPool:
    """The shared producer and admin client of a proxy, and a factory of consumers.

    ``config`` holds librdkafka properties for every client (security, timeouts); the
    producer's poll thread runs until :meth:`close`.
    """

    def __init__(
        self, bootstrap: str, config: Mapping[str, Any] | None = None, timeout_s: float = 10.0
    ) -> None:
        self.bootstrap = bootstrap
        self.config = dict(config or {})
        self.timeout_s = timeout_s
        self.admin: AdminClient = clients.admin(
            bootstrap, **{"client.id": "sluice-rest-proxy-admin", **self.config}
        )
        self._trouble: tuple[float, KafkaError] | None = None
        self._refused: tuple[float, KafkaError] | None = None
        self.producer: Producer = clients.producer(
            bootstrap, **{**_PRODUCER_DEFAULTS, **self.config, "error_cb": self._on_error}
        )
        self._cluster_id: str | None = None
        self._topics: dict[str, tuple[int, float]] = {}
        self._closed = threading.Event()
        self.loop_polls = False
        """Whether the event loop polls the producer now (records are awaited)."""
        self.in_flight = 0
        """Records produced whose batch has not completed (changed on the event loop only)."""
        self._poller = threading.Thread(target=self._poll, name="rest-proxy-producer", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        # serves delivery reports and errors while no request is waiting for reports; while
        # some are, the event loop polls (delivery.send), and this thread stays out of its way
        while not self._closed.is_set():
            if self.loop_polls:
                self._closed.wait(0.01)
            else:
                self.producer.poll(0.05)

    def _on_error(self, error: KafkaError) -> None:
        """librdkafka's connection-level errors (bad credentials, TLS, all brokers down),
        kept to explain a request that then times out."""
        if error.code() in _AUTH_ERRORS:
            self._refused = (time.monotonic(), error)
        elif error.code() in _CONNECTION_ERRORS:
            self._trouble = (time.monotonic(), error)

    def explain(self, error: RestError) -> RestError:
        """``error``, or for a retriable one (a timeout) what the clients saw lately that
        explains it: 40101 for credentials the broker refused."""
        if error.error_code != KAFKA_RETRIABLE:
            return error
        recent = time.monotonic() - 2 * self.timeout_s - 30
        if self._refused is not None and self._refused[0] > recent:
            return RestError(40101, f"Kafka authentication failed: {self._refused[1].str()}")
        if self._trouble is not None and self._trouble[0] > recent:
            return RestError(error.error_code, f"{error.message} ({self._trouble[1].str()})")
        return error

    def consumer(self, **overrides: Any) -> Consumer:
        """A new consumer with the pool's connection settings and ``overrides``."""
        return clients.consumer(self.bootstrap, **{**self.config, **overrides})

    def wait(self, future: Future[T], *, topic: str = "") -> T:
        """The result of an admin future, or the :class:`RestError` of its Kafka error."""
        try:
            return future.result(timeout=self.timeout_s + 5)
        except KafkaException as error:
            raise self.failure(error, topic=topic) from None
        except TimeoutError:
            raise self.explain(
                RestError(KAFKA_RETRIABLE, "Retriable Kafka error: the broker did not answer")
            ) from None

    def failure(self, error: BaseException, *, topic: str = "") -> RestError:
        """The REST error of a client's error, explained by what the clients saw lately."""
        return self.explain(from_kafka(error, topic=topic))

    @property
    def options(self) -> dict[str, float]:
        """The ``request_timeout`` every admin call gets."""
        return {"request_timeout": self.timeout_s}

    def cluster_id(self) -> str:
        """The cluster's id, as DescribeCluster tells it (asked once)."""
        if self._cluster_id is None:
            described = self.wait(self.admin.describe_cluster(**self.options))
            self._cluster_id = str(described.cluster_id)
        return self._cluster_id

    async def partitions_soon(self, topic: str) -> int:
        """:meth:`partitions` from the event loop: at once when the cache knows, else asked
        in a worker thread."""
        cached = self._topics.get(topic)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        return await run_in_threadpool(self.partitions, topic)

    async def cluster_id_soon(self) -> str:
        """:meth:`cluster_id` from the event loop (asked in a worker thread the first time)."""
        if self._cluster_id is not None:
            return self._cluster_id
        return await run_in_threadpool(self.cluster_id)

    def partitions(self, topic: str) -> int:
        """How many partitions ``topic`` has (40401 if it does not exist), from a cache of
        what the broker said in the last :data:`TOPIC_CACHE_S` seconds."""
        now = time.monotonic()
        cached = self._topics.get(topic)
        if cached is not None and cached[1] > now:
            return cached[0]
        try:
            metadata = self.admin.list_topics(topic=topic, timeout=self.timeout_s)
        except KafkaException as error:
            raise self.failure(error, topic=topic) from None
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            self._topics.pop(topic, None)
            if found is not None and found.error is not None and found.error.code() not in _UNKNOWN:
                raise from_kafka(found.error, topic=topic)
            raise topic_not_found(topic)
        count = len(found.partitions)
        self._topics[topic] = (count, now + TOPIC_CACHE_S)
        return count

    def forget(self, topic: str) -> None:
        """Drop ``topic`` from the cache (created, deleted or grown through the proxy)."""
        self._topics.pop(topic, None)

    def close(self, timeout_s: float = 10.0) -> None:
        """Deliver what is queued (up to ``timeout_s``), then stop the poll thread."""
        self._closed.set()
        self._poller.join(timeout_s)
        remaining = self.producer.flush(timeout_s)
        if remaining:
            log.warning("%d records were not delivered before the proxy stopped", remaining)
