"""Topic ids (KIP-516) on a real broker: given at creation, kept in each partition's
``partition.metadata`` across restarts, new after a delete and re-create, and used by Metadata
v10+, Fetch v13+, CreateTopics v7 and DeleteTopics v6 — by raw requests and by librdkafka."""

from __future__ import annotations

import datetime
import json
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicCollection
from confluent_kafka.admin import AdminClient
from kio.schema.create_topics.v7 import request as create_v7
from kio.schema.delete_topics.v6 import request as delete_v6
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v13 import request as fetch_v13
from kio.schema.fetch.v16 import request as fetch_v16
from kio.schema.metadata.v9 import request as metadata_v9
from kio.schema.metadata.v11 import request as metadata_v11
from kio.schema.metadata.v12 import request as metadata_v12

from sluice.broker.log.partition_metadata import (
    PARTITION_METADATA,
    format_topic_id,
    read_partition_metadata,
)
from tests.broker.conftest import Wire, create_topic, produce_values, watermarks
from tests.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(180)

TIMEOUT = 15.0


def metadata(conn: Wire, *topics: tuple[str | None, uuid.UUID | None]) -> Any:
    return conn.request(
        metadata_v12.MetadataRequest(
            topics=tuple(metadata_v12.MetadataRequestTopic(name=n, topic_id=i) for n, i in topics),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )


def topic_id_of(bootstrap: str, name: str) -> uuid.UUID:
    with Wire(bootstrap) as conn:
        (topic,) = metadata(conn, (name, None)).topics
    assert topic.error_code == ErrorCode.none, topic
    assert topic.topic_id is not None, f"Metadata v12 answered topic {name!r} without an id"
    return topic.topic_id


def fetch(conn: Wire, topic_id: uuid.UUID | None, partition: int = 0, version: int = 13) -> Any:
    module = fetch_v13 if version == 13 else fetch_v16
    return conn.request(
        module.FetchRequest(
            max_wait=datetime.timedelta(milliseconds=10),
            min_bytes=0,
            topics=(
                module.FetchTopic(
                    topic_id=topic_id,
                    partitions=(
                        module.FetchPartition(
                            partition=partition, fetch_offset=0, partition_max_bytes=1 << 20
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        )
    )


def create_v7_request(name: str) -> create_v7.CreateTopicsRequest:
    topic = create_v7.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=(), configs=()
    )
    return create_v7.CreateTopicsRequest(topics=(topic,), timeout=datetime.timedelta(seconds=10))


def partition_dir(broker: BrokerProcess, topic: str, partition: int = 0) -> Path:
    return broker.data_dir / f"{topic}-{partition}"


# --- Metadata -------------------------------------------------------------------------------


def test_metadata_v12_gives_every_topic_the_id_in_its_partition_metadata_files(
    broker: BrokerProcess,
) -> None:
    name = f"ids-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, name, partitions=3)
    topic_id = topic_id_of(broker.bootstrap, name)
    assert topic_id.int != 0
    for partition in range(3):
        path = partition_dir(broker, name, partition) / PARTITION_METADATA
        text = path.read_text()
        assert text == f"version: 0\ntopic_id: {format_topic_id(topic_id)}", text
    # the whole-cluster answer (topics null) carries the ids too, internal topics included
    with Wire(broker.bootstrap) as conn:
        every = conn.request(
            metadata_v12.MetadataRequest(
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        ).topics
    ids = {t.name: t.topic_id for t in every}
    assert ids[name] == topic_id, ids
    assert all(i is not None for i in ids.values()), f"a topic without an id: {ids}"
    assert len(set(ids.values())) == len(ids), f"two topics share an id: {ids}"


def test_metadata_v12_looks_topics_up_by_id(shared_broker: BrokerProcess) -> None:
    name = create_topic_named(shared_broker.bootstrap, partitions=2)
    topic_id = topic_id_of(shared_broker.bootstrap, name)
    unknown = uuid.uuid4()
    other = create_topic_named(shared_broker.bootstrap)
    with Wire(shared_broker.bootstrap) as conn:
        found, missing, inconsistent = metadata(
            conn, (None, topic_id), (None, unknown), (other, topic_id)
        ).topics
    assert (found.error_code, found.name, found.topic_id) == (ErrorCode.none, name, topic_id)
    assert [p.partition_index for p in found.partitions] == [0, 1]
    assert (missing.error_code, missing.name, missing.topic_id) == (
        ErrorCode.unknown_topic_id,
        None,
        unknown,
    ), missing
    assert inconsistent.error_code == ErrorCode.inconsistent_topic_id, inconsistent


def test_metadata_before_v12_cannot_name_topics_by_id(shared_broker: BrokerProcess) -> None:
    name = create_topic_named(shared_broker.bootstrap)
    topic_id = topic_id_of(shared_broker.bootstrap, name)
    with Wire(shared_broker.bootstrap) as conn:
        response = conn.request(
            metadata_v11.MetadataRequest(
                topics=(
                    metadata_v11.MetadataRequestTopic(name=None, topic_id=topic_id),
                    metadata_v11.MetadataRequestTopic(name=name, topic_id=None),
                ),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        by_id, by_name = response.topics
        assert by_id.error_code == ErrorCode.invalid_request, by_id
        assert (by_name.error_code, by_name.topic_id) == (ErrorCode.none, topic_id), by_name
        # v9 and older have no ids at all and still work
        old = conn.request(
            metadata_v9.MetadataRequest(
                topics=(metadata_v9.MetadataRequestTopic(name=name),),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
        )
        assert old.topics[0].error_code == ErrorCode.none


# --- persistence ------------------------------------------------------------------------------


def test_ids_survive_a_restart_and_a_missing_file_is_written_again(broker: BrokerProcess) -> None:
    name = f"restart-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, name, partitions=2)
    produce_values(broker.bootstrap, name, [b"a", b"b"])
    before = topic_id_of(broker.bootstrap, name)
    broker.stop()
    # a data directory written before topic ids: no partition.metadata anywhere
    for partition in range(2):
        (partition_dir(broker, name, partition) / PARTITION_METADATA).unlink()
    broker.start()
    assert topic_id_of(broker.bootstrap, name) == before
    for partition in range(2):
        assert read_partition_metadata(partition_dir(broker, name, partition)) == before
    broker.restart()  # kill -9 and start: the id is on disk, not in memory
    assert topic_id_of(broker.bootstrap, name) == before


def test_a_topic_file_without_an_id_takes_its_partitions_id(broker: BrokerProcess) -> None:
    name = f"noid-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, name)
    before = topic_id_of(broker.bootstrap, name)
    broker.stop()
    meta_path = broker.data_dir / "__topics" / f"{name}.json"
    meta = json.loads(meta_path.read_text())
    del meta["topic_id"]
    meta_path.write_text(json.dumps(meta))
    broker.start()
    assert topic_id_of(broker.bootstrap, name) == before
    assert json.loads(meta_path.read_text())["topic_id"] == str(before)


def test_a_partition_directory_of_another_topic_id_stops_the_start_and_is_kept(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    broker = broker_factory()
    name = f"clash-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, name)
    produce_values(broker.bootstrap, name, [b"kept"])
    broker.stop()
    path = partition_dir(broker, name) / PARTITION_METADATA
    stranger = uuid.uuid4()
    path.write_text(f"version: 0\ntopic_id: {format_topic_id(stranger)}")
    with pytest.raises(Exception):  # noqa: B017 - wait_for_port raises on an early exit
        broker.start()
    log = broker.log_text()
    assert "partition.metadata records topic id" in log and str(path.parent) in log, log[-2000:]
    assert read_partition_metadata(path.parent) == stranger, "the refused file was changed"
    assert any(path.parent.glob("*.log")), "the refused directory's data was removed"


def test_a_directory_left_by_a_deleted_topic_is_not_taken_for_the_new_one(
    broker: BrokerProcess,
) -> None:
    """A crash in the middle of a delete leaves the partition directory without its topic file;
    a topic created later under the same name must not inherit the old records."""
    name = f"left-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, name)
    produce_values(broker.bootstrap, name, [b"old-1", b"old-2"])
    old_id = topic_id_of(broker.bootstrap, name)
    broker.stop()
    (broker.data_dir / "__topics" / f"{name}.json").unlink()  # the delete's first step only
    broker.start()
    create_topic(broker.bootstrap, name)
    new_id = topic_id_of(broker.bootstrap, name)
    assert new_id != old_id
    assert watermarks(broker.bootstrap, name) == (0, 0), "the new topic holds the old records"
    assert read_partition_metadata(partition_dir(broker, name)) == new_id


# --- delete and re-create -------------------------------------------------------------------------


def test_delete_and_recreate_gives_a_new_id_that_clients_see(shared_broker: BrokerProcess) -> None:
    bootstrap = shared_broker.bootstrap
    name = create_topic_named(bootstrap)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    first = as_uuid(admin.describe_topics(TopicCollection([name]))[name].result(TIMEOUT).topic_id)
    assert first == topic_id_of(bootstrap, name)
    admin.delete_topics([name], operation_timeout=TIMEOUT)[name].result(TIMEOUT)
    with Wire(bootstrap) as conn:
        (gone,) = metadata(conn, (None, first)).topics
    assert gone.error_code == ErrorCode.unknown_topic_id, gone
    create_topic(bootstrap, name)
    second = as_uuid(admin.describe_topics(TopicCollection([name]))[name].result(TIMEOUT).topic_id)
    assert second != first, "a re-created topic kept the id of the deleted one"
    assert second == topic_id_of(bootstrap, name)


def test_create_topics_v7_answers_the_id_and_delete_topics_v6_deletes_by_id(
    shared_broker: BrokerProcess,
) -> None:
    name = f"byid-{uuid.uuid4().hex[:8]}"
    with Wire(shared_broker.bootstrap) as conn:
        created = conn.request(create_v7_request(name)).topics[0]
        assert created.error_code == ErrorCode.none, created
        assert created.topic_id == topic_id_of(shared_broker.bootstrap, name)
        again = conn.request(create_v7_request(name)).topics[0]
        assert (again.error_code, again.topic_id) == (ErrorCode.topic_already_exists, None), again
        unknown = uuid.uuid4()

        def delete(*states: tuple[str | None, uuid.UUID | None]) -> Any:
            return conn.request(
                delete_v6.DeleteTopicsRequest(
                    topics=tuple(delete_v6.DeleteTopicState(name=n, topic_id=i) for n, i in states),
                    timeout=datetime.timedelta(seconds=10),
                )
            ).responses

        both, missing = delete((name, created.topic_id), (None, unknown))
        assert both.error_code == ErrorCode.invalid_request, both
        assert (missing.error_code, missing.topic_id) == (ErrorCode.unknown_topic_id, unknown)
        assert format_topic_id(unknown) in (missing.error_message or ""), missing
        (deleted,) = delete((None, created.topic_id))
        assert (deleted.error_code, deleted.name, deleted.topic_id) == (
            ErrorCode.none,
            name,
            created.topic_id,
        ), deleted
        (after,) = metadata(conn, (name, None)).topics
        assert after.error_code == ErrorCode.unknown_topic_or_partition, after


# --- Fetch v13+ -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [13, 16])
def test_fetch_by_topic_id(shared_broker: BrokerProcess, version: int) -> None:
    bootstrap = shared_broker.bootstrap
    name = create_topic_named(bootstrap, partitions=2)
    produce_values(bootstrap, name, [b"one", b"two"])
    topic_id = topic_id_of(bootstrap, name)
    with Wire(bootstrap) as conn:
        (topic,) = fetch(conn, topic_id, version=version).responses
        assert topic.topic_id == topic_id
        (partition,) = topic.partitions
        assert partition.error_code == ErrorCode.none, partition
        assert partition.high_watermark == 2 and partition.records, partition
        # a partition the topic does not have, an unknown id, the zero id
        (beyond,) = fetch(conn, topic_id, partition=7, version=version).responses[0].partitions
        assert beyond.error_code == ErrorCode.unknown_topic_or_partition, beyond
        unknown = uuid.uuid4()
        (missing,) = fetch(conn, unknown, version=version).responses
        assert missing.topic_id == unknown
        assert [p.error_code for p in missing.partitions] == [ErrorCode.unknown_topic_id]
        (zero,) = fetch(conn, None, version=version).responses
        assert [p.error_code for p in zero.partitions] == [ErrorCode.unknown_topic_id]


def test_librdkafka_fetches_by_topic_id_and_follows_a_recreated_topic(
    shared_broker: BrokerProcess,
) -> None:
    """confluent-kafka negotiates Fetch v13+ (v16) and consumes by topic id; after the topic is
    deleted and re-created, its fetches by the old id are refused and it moves to the new id."""
    bootstrap = shared_broker.bootstrap
    name = create_topic_named(bootstrap)
    produce_values(bootstrap, name, [b"first"])
    sent: list[str] = []

    class Sent(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            sent.append(record.getMessage())

    logger = logging.getLogger(f"librdkafka-{name}")
    logger.propagate = False
    logger.addHandler(Sent())
    logger.setLevel(logging.DEBUG)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{name}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,  # no offset of the old topic to resume the new one at
            "topic.metadata.refresh.interval.ms": 500,
            "debug": "protocol",
            "logger": logger,
        }
    )
    try:
        consumer.subscribe([name])
        assert poll_value(consumer) == b"first"
        fetches = {
            line.split("(v", 1)[1].split(",")[0] for line in sent if "Sent FetchRequest" in line
        }
        assert fetches and all(int(v) >= 13 for v in fetches), fetches
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.delete_topics([name], operation_timeout=TIMEOUT)[name].result(TIMEOUT)
        # the consumer learns that the topic is gone (its fetches by the old id are refused)
        assert poll_error(consumer) == KafkaError.UNKNOWN_TOPIC_OR_PART
        create_topic(bootstrap, name)
        produce_values(bootstrap, name, [b"second"])
        assert poll_value(consumer, skip_errors=True) == b"second"
    finally:
        consumer.close()


# --- helpers ----------------------------------------------------------------------------------


def create_topic_named(bootstrap: str, partitions: int = 1) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    create_topic(bootstrap, name, partitions=partitions)
    return name


def as_uuid(client_id: Any) -> uuid.UUID:
    """confluent-kafka's Uuid as a UUID (its ``str`` is standard base64, not Kafka's URL-safe
    text)."""
    high, low = client_id.get_most_significant_bits(), client_id.get_least_significant_bits()
    return uuid.UUID(int=((high % 2**64) << 64) | (low % 2**64))


def poll_error(consumer: Consumer, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is not None:
            return int(msg.error().code())
        assert msg is None, f"consumed {msg.value()!r} from a deleted topic"
    raise AssertionError(f"no error within {timeout}s")


def poll_value(consumer: Consumer, *, skip_errors: bool = False, timeout: float = 30.0) -> bytes:
    deadline = time.monotonic() + timeout
    errors = []
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error() is not None:
            errors.append(str(msg.error()))
            if skip_errors:
                continue
            raise AssertionError(f"consuming failed: {msg.error()}")
        value = msg.value()
        assert isinstance(value, bytes)
        return value
    raise AssertionError(f"nothing consumed within {timeout}s (errors: {errors})")
