"""A Streams application's Prometheus metrics: Kafka Streams' JMX names in snake case.

The stream thread keeps plain integers — records processed (added per run of a partition's
records), punctuations, commits, polls — and, once a second, the consumer's lag per assigned
partition from cached watermarks (no request to the broker); restorations keep their position
once per restored batch. :class:`StreamsCollector` reads all of it when Prometheus scrapes.

Names (the full table with Kafka's JMX names is in ``docs/streams.md``, "Metrics"):

- ``kafka_streams_stream_thread_metrics_{process,punctuate,commit,poll}_total{thread_id}``;
- ``kafka_streams_stream_task_metrics_dropped_records_total{thread_id,task_id}``;
- ``kafka_streams_stream_state_metrics_restore_total{thread_id,task_id,store}`` and
  ``…_restore_remaining_records_total`` (KIP-869);
- ``kafka_consumer_fetch_manager_metrics_records_lag{client_id,topic,partition}``.

Restore metrics are kept per task and store (``task_id`` ``global`` for global stores): the
latest restoration of each task assigned now. A task restored again starts from 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from sluice.streams.runtime.streams import KafkaStreams

__all__ = ["StreamsCollector", "streams_registry"]

_THREAD = (
    ("process", "Records processed (process-total)."),
    ("punctuate", "Punctuator calls (punctuate-total)."),
    ("commit", "Commits (commit-total)."),
    ("poll", "Consumer polls (poll-total)."),
)


class StreamsCollector(Collector):
    """Reads a :class:`~sluice.streams.runtime.streams.KafkaStreams`' thread when scraped."""

    def __init__(self, streams: KafkaStreams) -> None:
        self.streams = streams

    def collect(self) -> Iterator[Metric]:
        """Every Streams metric family (empty before the application starts)."""
        thread = self.streams.thread
        prefix = "kafka_streams_stream_thread_metrics_"
        values = {}
        if thread is not None:
            values = {
                "process": thread.processed,
                "punctuate": thread.counters.punctuations,
                "commit": thread.commits,
                "poll": thread.polls,
            }
        for name, doc in _THREAD:
            counter = CounterMetricFamily(prefix + name, doc, labels=["thread_id"])
            if thread is not None:
                counter.add_metric([thread.thread_id], values[name])
            yield counter
        dropped = CounterMetricFamily(
            "kafka_streams_stream_task_metrics_dropped_records",
            "Records dropped by the task: unreadable, late, failed (dropped-records-total).",
            labels=["thread_id", "task_id"],
        )
        restored = CounterMetricFamily(
            "kafka_streams_stream_state_metrics_restore",
            "Records restored into the store from its changelog (restore-total).",
            labels=["thread_id", "task_id", "store"],
        )
        remaining = GaugeMetricFamily(
            "kafka_streams_stream_state_metrics_restore_remaining_records_total",
            "Records left to restore into the store (restore-remaining-records-total).",
            labels=["thread_id", "task_id", "store"],
        )
        lag = GaugeMetricFamily(
            "kafka_consumer_fetch_manager_metrics_records_lag",
            "High watermark minus the consumer's position (records-lag).",
            labels=["client_id", "topic", "partition"],
        )
        if thread is not None:
            me = thread.thread_id
            for task_id, task in sorted(list(thread.tasks.items())):
                dropped.add_metric([me, str(task_id)], task.dropped)
            for (task_label, store), items in sorted(thread.restorations.items()):
                where = [me, task_label, store]
                restored.add_metric(where, sum(item.restored for item in items))
                remaining.add_metric(where, sum(item.remaining for item in items))
            for (topic, partition), behind in sorted(thread.lag.items()):
                lag.add_metric([thread.consumer_client_id, topic, str(partition)], behind)
        yield from (dropped, restored, remaining, lag)


def streams_registry(streams: KafkaStreams) -> CollectorRegistry:
    """A registry of its own holding a :class:`StreamsCollector` (what ``/metrics`` serves)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StreamsCollector(streams))
    return registry
