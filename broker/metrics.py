"""The broker's Prometheus metrics, named after Kafka's JMX metrics in snake case.

What the request path does (and nothing more): the produce handler adds the batch's size and
record count (from the batch header) to integers on the :class:`~sluice.broker.topics.Partition`,
the fetch handler adds the bytes it returns, and the server adds each request's latency to a
fixed-bucket histogram (:class:`RequestMetrics`): a dictionary lookup and a few additions per
request or partition, never a loop over records. Everything else — log sizes and offsets, the
replica manager's counts, consumer-group lag — is computed when Prometheus scrapes, by
:class:`BrokerCollector`, on the broker's event loop (the ``/metrics`` endpoint is served there by
:func:`sluice.metrics.serve_metrics_async`), so that it reads the broker's state from the only
thread that changes it.

Names (the full table with Kafka's JMX names is in ``docs/broker.md``, "Metrics"; the
``request`` label is the metric name of the API's row in :data:`sluice.broker.handlers.APIS`):

- ``kafka_server_broker_topic_metrics_{bytes_in,bytes_out,messages_in}_total{topic}``,
  ``…_{total,failed}_produce_requests_total{topic}``,
  ``…_{replication,reassignment}_bytes_{in,out}_total{topic}`` (BrokerTopicMetrics: bytes out
  are consumers' fetches, replication bytes followers'; reassignment bytes are the replication
  bytes of partitions a reassignment is adding replicas to);
- ``kafka_server_{leader,follower}_replication_byte_rate`` and ``…_throttled_rate`` (the
  replication quotas, Kafka's ``LeaderReplication``/``FollowerReplication`` ``byte-rate``, and
  their bounds; a side without throttle measures nothing);
- ``kafka_server_{produce,fetch,request}_throttle_time_seconds_total`` and
  ``…_throttled_responses_total`` (the client quotas: ``producer_byte_rate``,
  ``consumer_byte_rate``, ``request_percentage``; Kafka's Produce/Fetch/Request
  ``throttle-time``);
- ``kafka_network_request_metrics_requests_total{request}`` and the histogram
  ``kafka_network_request_metrics_total_time_ms{request}`` (RequestMetrics);
- ``kafka_log_log_size{topic,partition}``, ``…_log_start_offset``, ``…_log_end_offset``,
  ``…_num_log_segments`` (Log);
- ``kafka_server_replica_manager_{partition_count,leader_count,under_replicated_partitions}``
  and ``…_{isr_shrinks,isr_expands}_total`` (ReplicaManager; on a single node every hosted
  partition is led and none is under-replicated);
- ``kafka_controller_kafka_controller_{active_controller_count,offline_partitions_count}``
  (KafkaController; 1 and 0 on a single node);
- ``kafka_server_socket_server_metrics_connection_count``;
- ``kafka_server_fetch_session_cache_{num_incremental_fetch_sessions,
  num_incremental_fetch_partitions_cached}`` and ``…_incremental_fetch_session_evictions_total``
  (FetchSessionCache);
- ``kafka_consumergroup_{lag,current_offset}{consumergroup,topic,partition}`` and
  ``kafka_consumergroup_members{consumergroup}`` (kafka_exporter's names: Kafka's broker has no
  lag metric, its consumers do).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from sluice.broker.cluster.metadata_cache import NO_LEADER
from sluice.broker.quotas.config import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
)

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from sluice.broker.broker import Broker
    from sluice.broker.server import Server

__all__ = ["LATENCY_BUCKETS_MS", "BrokerCollector", "RequestMetrics", "registry"]

_QUOTA_KINDS = {PRODUCER_BYTE_RATE: "produce", CONSUMER_BYTE_RATE: "fetch",
                REQUEST_PERCENTAGE: "request"}  # fmt: skip
"""Each client quota and Kafka's name of its sensor type."""


LATENCY_BUCKETS_MS: tuple[float, ...] = (
    0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000
)  # fmt: skip
"""Upper bounds of the request latency histogram, in milliseconds (``+Inf`` follows)."""


class _Histogram:
    __slots__ = ("counts", "sum_ms")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS_MS) + 1)  # the last one is +Inf
        self.sum_ms = 0.0


class RequestMetrics:
    """Request counts and latencies per request name (what the server records for every
    request): Kafka's names, the ``request`` label — the API's name, except for Fetch, which
    Kafka counts as ``FetchConsumer`` or ``FetchFollower`` (:data:`sluice.broker.handlers.
    METRIC_NAMES`; the server tells the two apart).

    >>> m = RequestMetrics()
    >>> m.record("Produce", 0.003); m.record("Produce", 0.0001)
    >>> m.count("Produce"), round(m.sum_ms("Produce"), 1), m.count("FetchFollower")
    (2, 3.1, 0)
    """

    def __init__(self) -> None:
        self._by_name: dict[str, _Histogram] = {}

    def record(self, request: str, seconds: float) -> None:
        """One request named ``request`` answered in ``seconds``."""
        histogram = self._by_name.get(request)
        if histogram is None:
            histogram = self._by_name[request] = _Histogram()
        ms = seconds * 1000.0
        histogram.counts[bisect_left(LATENCY_BUCKETS_MS, ms)] += 1
        histogram.sum_ms += ms

    def count(self, request: str) -> int:
        """How many requests named ``request`` were recorded."""
        histogram = self._by_name.get(request)
        return 0 if histogram is None else sum(histogram.counts)

    def sum_ms(self, request: str) -> float:
        """Their total time, in milliseconds."""
        histogram = self._by_name.get(request)
        return 0.0 if histogram is None else histogram.sum_ms

    def families(self) -> Iterator[Metric]:
        """``requests_total`` and the ``total_time_ms`` histogram, labelled by request."""
        requests = CounterMetricFamily(
            "kafka_network_request_metrics_requests",
            "Requests answered, by request (RequestMetrics RequestsPerSec).",
            labels=["request"],
        )
        latency = HistogramMetricFamily(
            "kafka_network_request_metrics_total_time_ms",
            "Time from a request's arrival to its response, in ms (RequestMetrics TotalTimeMs).",
            labels=["request"],
        )
        for name, histogram in sorted(self._by_name.items()):
            cumulative, buckets = 0, []
            for bound, count in zip(LATENCY_BUCKETS_MS, histogram.counts, strict=False):
                cumulative += count
                buckets.append((_bound(bound), float(cumulative)))
            total = cumulative + histogram.counts[-1]
            buckets.append(("+Inf", float(total)))
            requests.add_metric([name], total)
            latency.add_metric([name], buckets, histogram.sum_ms)
        yield requests
        yield latency


def _bound(value: float) -> str:
    return str(float(value))


class BrokerCollector(Collector):
    """Reads the broker's counters and state when scraped (see the module docstring)."""

    def __init__(self, broker: Broker, server: Server | None = None) -> None:
        self.broker = broker
        self.server = server

    def collect(self) -> Iterator[Metric]:
        """Every broker metric family."""
        yield from self._topic_families()
        if self.server is not None:
            yield from self.server.requests.families()
            connections = GaugeMetricFamily(
                "kafka_server_socket_server_metrics_connection_count",
                "Open client connections (socket-server-metrics connection-count).",
            )
            connections.add_metric([], self.server.connection_count)
            yield connections
        yield from self._log_families()
        yield from self._group_families()
        yield from self._fetch_session_families()
        yield from self._replication_quota_families()
        yield from self._client_quota_families()

    def _client_quota_families(self) -> Iterator[Metric]:
        quotas = self.broker.client_quotas
        for key, kind in _QUOTA_KINDS.items():
            seconds = CounterMetricFamily(
                f"kafka_server_{kind}_throttle_time_seconds",
                f"Throttle time given to clients over their {key} (Kafka's {kind.title()} "
                "throttle-time).",
            )
            seconds.add_metric([], quotas.throttle_time_s[key])
            throttled = CounterMetricFamily(
                f"kafka_server_{kind}_throttled_responses",
                f"Responses throttled for {key}.",
            )
            throttled.add_metric([], quotas.throttled[key])
            yield from (seconds, throttled)

    def _replication_quota_families(self) -> Iterator[Metric]:
        throttles = self.broker.replication_throttles
        for side, quota in (("leader", throttles.leader), ("follower", throttles.follower)):
            rate = GaugeMetricFamily(
                f"kafka_server_{side}_replication_byte_rate",
                f"Bytes/s of throttled partitions, {side} side (byte-rate).",
            )
            rate.add_metric([], quota.rate())
            bound = GaugeMetricFamily(
                f"kafka_server_{side}_replication_throttled_rate",
                f"{side}.replication.throttled.rate in force (bytes/s).",
            )
            bound.add_metric([], float(quota.bound))
            yield from (rate, bound)

    def _fetch_session_families(self) -> Iterator[Metric]:
        cache = self.broker.fetch_sessions
        prefix = "kafka_server_fetch_session_cache_"
        sessions = GaugeMetricFamily(
            f"{prefix}num_incremental_fetch_sessions",
            "Fetch sessions in the cache (NumIncrementalFetchSessions).",
        )
        sessions.add_metric([], len(cache))
        cached = GaugeMetricFamily(
            f"{prefix}num_incremental_fetch_partitions_cached",
            "Partitions of the cached fetch sessions (NumIncrementalFetchPartitionsCached).",
        )
        cached.add_metric([], cache.partitions_cached())
        evictions = CounterMetricFamily(
            f"{prefix}incremental_fetch_session_evictions",
            "Fetch sessions evicted for new ones (IncrementalFetchSessionEvictionsPerSec).",
        )
        evictions.add_metric([], cache.evictions)
        yield from (sessions, cached, evictions)

    def _topic_families(self) -> Iterator[Metric]:
        names = (
            ("bytes_in", "Bytes of record batches produced (BytesInPerSec)."),
            ("bytes_out", "Bytes of record batches fetched by consumers (BytesOutPerSec)."),
            ("replication_bytes_in", "Bytes fetched as a follower (ReplicationBytesInPerSec)."),
            ("replication_bytes_out", "Bytes sent to followers (ReplicationBytesOutPerSec)."),
            (
                "reassignment_bytes_in",
                "Bytes fetched by replicas being added (ReassignmentBytesInPerSec).",
            ),
            (
                "reassignment_bytes_out",
                "Bytes sent while replicas are added (ReassignmentBytesOutPerSec).",
            ),
            ("messages_in", "Records produced, counted per batch (MessagesInPerSec)."),
            ("total_produce_requests", "Partition appends asked for (TotalProduceRequestsPerSec)."),
            ("failed_produce_requests", "Partition appends refused (FailedProduceRequestsPerSec)."),
        )
        families = {
            attr: CounterMetricFamily(
                f"kafka_server_broker_topic_metrics_{attr}", doc, labels=["topic"]
            )
            for attr, doc in names
        }
        for topic in list(self.broker.topics.topics.values()):
            totals = dict.fromkeys(families, 0)
            for partition in topic.partitions.values():
                for attr in families:
                    totals[attr] += getattr(partition, attr)
            for attr, family in families.items():
                family.add_metric([topic.name], totals[attr])
        yield from families.values()

    def _log_families(self) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily(
            "kafka_log_log_size", "Bytes of the log (Log Size).", labels=labels
        )
        start = GaugeMetricFamily(
            "kafka_log_log_start_offset", "First offset of the log (LogStartOffset).", labels=labels
        )
        end = GaugeMetricFamily(
            "kafka_log_log_end_offset", "Offset of the next record (LogEndOffset).", labels=labels
        )
        segments = GaugeMetricFamily(
            "kafka_log_num_log_segments", "Segments of the log (NumLogSegments).", labels=labels
        )
        count = 0
        for partition in self.broker.topics.all_partitions():
            plog = partition.log
            where = [partition.topic, str(partition.index)]
            size.add_metric(where, plog.size_in_bytes)
            start.add_metric(where, plog.log_start_offset)
            end.add_metric(where, plog.log_end_offset)
            segments.add_metric(where, plog.segment_count)
            count += 1
        yield from (size, start, end, segments)
        yield from self._replica_families(count)

    def _replica_families(self, hosted: int) -> Iterator[Metric]:
        """The replica manager's and the controller's counts. On one node this broker leads
        every partition it hosts, is the controller, and nothing is ever under-replicated."""
        cluster = self.broker.cluster
        leaders, under_replicated, shrinks, expands, active, offline = hosted, 0, 0, 0, 1, 0
        if cluster is not None:
            partitions = self.broker.topics.all_partitions()
            led = [p.leadership for p in partitions if p.is_leader and p.leadership is not None]
            leaders = len(led)
            under_replicated = sum(leadership.under_replicated for leadership in led)
            shrinks, expands = cluster.replicas.isr_shrinks, cluster.replicas.isr_expands
            active = int(cluster.controller.active)
            offline = (
                sum(s.value.leader == NO_LEADER for s in cluster.cache.states.values())
                if active
                else 0  # as Kafka: only the active controller counts them
            )
        prefix = "kafka_server_replica_manager_"
        for name, value, doc in (
            ("partition_count", hosted, "Partitions on this broker (PartitionCount)."),
            ("leader_count", leaders, "Partitions this broker leads (LeaderCount)."),
            (
                "under_replicated_partitions",
                under_replicated,
                "Partitions led here whose ISR is smaller than their replicas "
                "(UnderReplicatedPartitions).",
            ),
        ):
            gauge = GaugeMetricFamily(prefix + name, doc)
            gauge.add_metric([], value)
            yield gauge
        for name, value, doc in (
            (
                "isr_shrinks",
                shrinks,
                "ISR changes written here that dropped followers (IsrShrinksPerSec).",
            ),
            (
                "isr_expands",
                expands,
                "ISR changes written here that added followers (IsrExpandsPerSec).",
            ),
        ):
            counter = CounterMetricFamily(prefix + name, doc)
            counter.add_metric([], value)
            yield counter
        prefix = "kafka_controller_kafka_controller_"
        for name, value, doc in (
            (
                "active_controller_count",
                active,
                "1 on the active controller (ActiveControllerCount).",
            ),
            (
                "offline_partitions_count",
                offline,
                "Partitions without a live leader, counted by the active controller "
                "(OfflinePartitionsCount).",
            ),
        ):
            gauge = GaugeMetricFamily(prefix + name, doc)
            gauge.add_metric([], value)
            yield gauge

    def _group_families(self) -> Iterator[Metric]:
        labels = ["consumergroup", "topic", "partition"]
        lag = GaugeMetricFamily(
            "kafka_consumergroup_lag",
            "High watermark minus the group's committed offset (kafka_exporter's name).",
            labels=labels,
        )
        current = GaugeMetricFamily(
            "kafka_consumergroup_current_offset",
            "The group's committed offset (kafka_exporter's name).",
            labels=labels,
        )
        members = GaugeMetricFamily(
            "kafka_consumergroup_members", "Members of the group.", labels=["consumergroup"]
        )
        topics = self.broker.topics
        for group_id, group in sorted(self.broker.groups.groups.items()):
            members.add_metric([group_id], len(group.members))
            for (topic, index), committed in sorted(group.offsets.items()):
                partition = topics.partition(topic, index)
                if partition is None or committed.offset < 0:
                    continue
                where = [group_id, topic, str(index)]
                current.add_metric(where, committed.offset)
                lag.add_metric(where, max(partition.log.high_watermark - committed.offset, 0))
        yield from (lag, current, members)


def registry(broker: Broker, server: Server | None = None) -> CollectorRegistry:
    """A registry of its own holding the broker's collector (what ``/metrics`` serves)."""
    result = CollectorRegistry(auto_describe=False)
    result.register(BrokerCollector(broker, server))
    return result
