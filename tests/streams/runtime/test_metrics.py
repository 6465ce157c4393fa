"""A Streams app's ``/metrics`` (``App(metrics_listen=…)`` or ``SLUICE_METRICS_LISTEN``): records
processed, punctuations, commits, consumer lag, and the restore of a store from its changelog."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from sluice.dsl import App
from sluice.streams import STREAM_TIME, Processor, ProcessorContext, Record, StreamsError
from tests.conftest import BrokerProcess, create_topic, free_port
from tests.platform.scrape import Scraped, scrape, scrape_until
from tests.streams.runtime.fixtures import produce

THREAD = "kafka_streams_stream_thread_metrics_"
STATE = "kafka_streams_stream_state_metrics_"
LAG = "kafka_consumer_fetch_manager_metrics_records_lag"
RECORDS = 40


class Ticker(Processor):
    """Forwards every record; a stream-time punctuation every 10 s of event time."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        context.schedule(10_000, STREAM_TIME, lambda timestamp: None)

    def process(self, record: Record) -> None:
        self.context.forward(record)


def _app(app_id: str, bootstrap: str, topic: str, state_dir: Path, port: int) -> App:
    app = App(
        app_id,
        bootstrap,
        stores="memory",  # restored from the changelog at every start
        state_dir=state_dir,
        commit_interval_ms=200,
        metrics_listen=f"127.0.0.1:{port}",
    )
    app.stream(topic).process(Ticker).group_by_key().count(name="counts")
    return app


def _changelog_records(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "metrics-test-reader"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        total = 0
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            total += high - low
        return total
    finally:
        consumer.close()


def test_processing_punctuations_commits_lag_and_restore(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap, 2)
    app_id = f"metrics-{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, [(f"k{i % 10}", i, i * 1_000) for i in range(RECORDS)])
    port = free_port()
    app = _app(app_id, bootstrap, topic, tmp_path, port)
    app.start()
    try:
        m = scrape_until(
            port,
            lambda s: (
                # each record is processed twice: from the input, then from the repartition
                # topic that group_by_key after a processor goes through
                s.total(THREAD + "process_total") == 2 * RECORDS
                and s.all(LAG, topic=topic) == [0, 0]
                and s.total(THREAD + "commit_total") > 0
            ),
            what=f"{2 * RECORDS} records processed, no lag, a commit",
        )
        (thread_id,) = {
            labels["thread_id"] for name, labels, _ in m.samples if name.startswith(THREAD)
        }
        assert thread_id.startswith(f"{app_id}-") and thread_id.endswith("-StreamThread-1")
        assert (
            m.get(THREAD + "punctuate_total", thread_id=thread_id) >= 2
        )  # one per partition at least
        assert m.get(THREAD + "poll_total", thread_id=thread_id) > 0
        # nothing to restore the first time: empty changelogs
        assert m.total(STATE + "restore_total", store="counts") == 0
        assert m.total(STATE + "restore_remaining_records_total", store="counts") == 0
        assert len(m.all(STATE + "restore_total", store="counts")) == 2, "one per task"
        assert m.total("kafka_streams_stream_task_metrics_dropped_records_total") == 0
    finally:
        app.close()
    with pytest.raises(OSError):
        scrape(port)  # closed with the app

    changelog = _changelog_records(bootstrap, f"{app_id}-counts-changelog")
    assert changelog > 0
    port = free_port()
    again = _app(app_id, bootstrap, topic, tmp_path, port)
    again.start()
    try:

        def restored(s: Scraped) -> bool:
            return s.total(STATE + "restore_total", store="counts") == changelog

        m = scrape_until(port, restored, what=f"{changelog} records restored")
        assert m.total(STATE + "restore_remaining_records_total", store="counts") == 0
        assert m.total(THREAD + "process_total") == 0, "every input was committed before"
    finally:
        again.close()


def test_the_address_comes_from_the_environment_when_not_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLUICE_METRICS_LISTEN", "127.0.0.1:9464")
    assert App("a").config.metrics_listen == "127.0.0.1:9464"
    assert App("a", metrics_listen="127.0.0.1:1").config.metrics_listen == "127.0.0.1:1"
    assert App("a", metrics_listen="").config.metrics_listen is None  # "" turns it off
    monkeypatch.setenv("SLUICE_METRICS_LISTEN", "garbage")
    with pytest.raises(StreamsError, match="SLUICE_METRICS_LISTEN: expected HOST:PORT"):
        App("a")
    monkeypatch.delenv("SLUICE_METRICS_LISTEN")
    assert App("a").config.metrics_listen is None


def test_bad_addresses(shared_broker: BrokerProcess, tmp_path: Path) -> None:
    with pytest.raises(StreamsError, match="metrics_listen: expected HOST:PORT"):
        App("a", metrics_listen="no-port")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        topic = create_topic(shared_broker.bootstrap)
        app = _app(f"busy-{uuid.uuid4().hex[:8]}", shared_broker.bootstrap, topic, tmp_path, port)
        with pytest.raises(StreamsError, match="metrics_listen: cannot serve metrics on"):
            app.start()
        app.close()
