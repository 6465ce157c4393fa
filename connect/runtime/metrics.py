"""A Connect worker's Prometheus metrics, named after Kafka Connect's JMX metrics in snake case.

Each task runner owns a :class:`TaskMetrics` of plain integers that its thread adds to once per
batch (a source batch, a consumed batch) — or once per record only on the record-by-record
paths, which do per-record work anyway — and :class:`WorkerCollector` reads them when
Prometheus scrapes, together with the worker's connectors and task states. Counters are per
task instance, as Kafka's are ("since the task was last restarted"): a restarted task starts
from 0, which Prometheus' ``rate()`` reads as a counter reset.

Names (the full table with Kafka's JMX names is in ``docs/connect.md``, "Metrics"):

- ``kafka_connect_source_task_metrics_source_record_{poll,write}_total{connector,task}``;
- ``kafka_connect_sink_task_metrics_sink_record_{read,send}_total``,
  ``…_offset_commit_completion_total``;
- ``kafka_connect_task_error_metrics_{total_record_errors,total_record_failures,
  total_records_skipped,total_errors_logged,deadletterqueue_produce_requests,
  deadletterqueue_produce_failures}``;
- ``kafka_connect_connect_worker_metrics_{connector_count,task_count}`` and
  ``…_connector_{running,paused,failed}_task_count{connector}`` (KIP-475).

Task metrics carry the labels ``connector`` and ``task`` (Kafka's tags). The task-error counters
are Kafka's cumulative gauges, so they keep Kafka's names (no ``_total`` suffix added).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

__all__ = ["TaskMetrics", "WorkerCollector", "worker_registry"]


class TaskMetrics:
    """The counters of one task (its runner's thread is the only writer)."""

    __slots__ = (
        "deadletterqueue_produce_failures",
        "deadletterqueue_produce_requests",
        "offset_commit_completion",
        "sink_record_read",
        "sink_record_send",
        "source_record_poll",
        "source_record_write",
        "total_errors_logged",
        "total_record_errors",
        "total_record_failures",
        "total_records_skipped",
    )

    def __init__(self) -> None:
        self.source_record_poll = 0
        self.source_record_write = 0
        self.sink_record_read = 0
        self.sink_record_send = 0
        self.offset_commit_completion = 0
        self.total_record_errors = 0
        self.total_record_failures = 0
        self.total_records_skipped = 0
        self.total_errors_logged = 0
        self.deadletterqueue_produce_requests = 0
        self.deadletterqueue_produce_failures = 0

    def record_error(self, *, skipped: bool, logged: bool) -> None:
        """A record failed in a stage (converter, transform, put) and tolerance decided."""
        self.total_record_errors += 1
        self.total_record_failures += 1
        if skipped:
            self.total_records_skipped += 1
        if logged:
            self.total_errors_logged += 1


class _Task(Protocol):
    """What the collector reads of a task runner."""

    connector: str
    task_id: int
    state: str
    metrics: TaskMetrics
    kind: str


_SOURCE = (
    ("source_record_poll", "Records polled from the source task (source-record-poll-total)."),
    ("source_record_write", "Records produced after transforms (source-record-write-total)."),
)
_SINK = (
    ("sink_record_read", "Records read from Kafka (sink-record-read-total)."),
    ("sink_record_send", "Records put to the sink task (sink-record-send-total)."),
    ("offset_commit_completion", "Offset commits completed (offset-commit-completion-total)."),
)
_ERRORS = (
    ("total_record_errors", "Records that failed in a stage (total-record-errors)."),
    ("total_record_failures", "Failed operations on records (total-record-failures)."),
    ("total_records_skipped", "Records skipped: errors.tolerance=all (total-records-skipped)."),
    ("total_errors_logged", "Errors logged (total-errors-logged)."),
    ("deadletterqueue_produce_requests", "Records sent to the dead-letter topic."),
    ("deadletterqueue_produce_failures", "Records the dead-letter topic refused."),
)


class WorkerCollector(Collector):
    """Reads the worker's tasks and connectors when scraped (see the module docstring).

    ``connectors`` and ``tasks`` return what runs on this worker now (snapshots: they are called
    from the HTTP server's thread).
    """

    def __init__(
        self, connectors: Callable[[], Iterable[str]], tasks: Callable[[], Iterable[_Task]]
    ) -> None:
        self.connectors = connectors
        self.tasks = tasks

    def collect(self) -> Iterator[Metric]:
        """Every Connect metric family."""
        tasks = sorted(self.tasks(), key=lambda t: (t.connector, t.task_id))
        connectors = sorted(self.connectors())
        labels = ["connector", "task"]
        families: list[tuple[str, str, str, str]] = [
            ("source_task_metrics", "source", attr, doc) for attr, doc in _SOURCE
        ]
        families += [("sink_task_metrics", "sink", attr, doc) for attr, doc in _SINK]
        for group, kind, attr, doc in families:
            counter = CounterMetricFamily(f"kafka_connect_{group}_{attr}", doc, labels=labels)
            for task in tasks:
                if task.kind == kind:
                    where = [task.connector, str(task.task_id)]
                    counter.add_metric(where, getattr(task.metrics, attr))
            yield counter
        for attr, doc in _ERRORS:
            gauge = GaugeMetricFamily(
                f"kafka_connect_task_error_metrics_{attr}", doc, labels=labels
            )
            for task in tasks:
                gauge.add_metric([task.connector, str(task.task_id)], getattr(task.metrics, attr))
            yield gauge
        yield from self._worker_families(connectors, tasks)

    @staticmethod
    def _worker_families(connectors: list[str], tasks: list[_Task]) -> Iterator[Metric]:
        prefix = "kafka_connect_connect_worker_metrics_"
        count = GaugeMetricFamily(prefix + "connector_count", "Connectors on this worker.")
        count.add_metric([], len(connectors))
        task_count = GaugeMetricFamily(prefix + "task_count", "Tasks on this worker.")
        task_count.add_metric([], len(tasks))
        yield count
        yield task_count
        for state in ("running", "paused", "failed"):
            gauge = GaugeMetricFamily(
                f"{prefix}connector_{state}_task_count",
                f"Tasks of the connector in state {state.upper()} on this worker.",
                labels=["connector"],
            )
            for connector in connectors:
                gauge.add_metric(
                    [connector],
                    sum(1 for t in tasks if t.connector == connector and t.state == state.upper()),
                )
            yield gauge


def worker_registry(
    connectors: Callable[[], Iterable[str]], tasks: Callable[[], Iterable[_Task]]
) -> CollectorRegistry:
    """A registry of its own holding a :class:`WorkerCollector` (what ``/metrics`` serves)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WorkerCollector(connectors, tasks))
    return registry
