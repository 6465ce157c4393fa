"""``sluice schema-registry start`` refuses a topic unfit for the registry, saying why."""

from __future__ import annotations

import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from tests.cli.conftest import run_sluice
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic, free_port


def start(bootstrap: str, topic: str) -> tuple[int, str]:
    done = run_sluice(
        "schema-registry", "start", "--listen", f"127.0.0.1:{free_port()}",
        "-b", bootstrap, "--topic", topic, "--group-id", f"sr-{topic}",
    )  # fmt: skip
    return done.code, done.err


def test_a_topic_of_several_partitions_is_refused(shared_broker: BrokerProcess) -> None:
    topic = create_topic(shared_broker.bootstrap, partitions=3)
    code, err = start(shared_broker.bootstrap, topic)
    assert code == 1
    assert f"error: cannot start the schema registry: {topic} has 3 partitions" in err


def test_a_topic_that_deletes_is_refused(shared_broker: BrokerProcess) -> None:
    topic = f"sr-deleting-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    futures = admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "delete"})])
    futures[topic].result(CLIENT_TIMEOUT)
    code, err = start(shared_broker.bootstrap, topic)
    assert code == 1
    assert "has cleanup.policy=delete; the schema registry's topic must be compacted" in err


def test_a_bad_listen_address_is_a_usage_error() -> None:
    done = run_sluice("schema-registry", "start", "--listen", "nowhere", "-b", "127.0.0.1:9")
    assert done.code == 2
    assert "expected HOST:PORT" in done.err
