"""Compacted topics read as shared maps (the groundwork of distributed workers)."""

from __future__ import annotations

import uuid

from sluice.connect.runtime.offsets import KafkaOffsetStore
from sluice.connect.runtime.topic_store import TopicMap
from tests.conftest import BrokerProcess


def test_two_readers_of_a_topic_converge(shared_broker: BrokerProcess) -> None:
    topic = f"connect-configs-{uuid.uuid4().hex[:8]}"
    first = TopicMap(shared_broker.bootstrap, topic)
    first.put("connector-a", {"properties": {"topic": "x"}})
    first.put("connector-b", {"properties": {"topic": "y"}})
    second = TopicMap(shared_broker.bootstrap, topic)  # reads what is already there
    try:
        assert second.items("connector-") == [
            ("connector-a", {"properties": {"topic": "x"}}),
            ("connector-b", {"properties": {"topic": "y"}}),
        ]
        second.put("connector-a", None)  # a tombstone deletes
        first.sync()
        assert first.get("connector-a") is None
        assert [k for k, _ in first.items()] == ["connector-b"]
    finally:
        first.close()
        second.close()


def test_source_offsets_in_a_topic_survive_a_new_reader(shared_broker: BrokerProcess) -> None:
    topic = f"connect-offsets-{uuid.uuid4().hex[:8]}"
    store = KafkaOffsetStore(TopicMap(shared_broker.bootstrap, topic))
    store.put("tail", {"file": "/var/log/a"}, {"position": 10})
    assert store.get("tail", {"file": "/var/log/a"}) == {"position": 10}  # staged
    store.flush()
    store.map.close()
    again = KafkaOffsetStore(TopicMap(shared_broker.bootstrap, topic))
    try:
        assert again.get("tail", {"file": "/var/log/a"}) == {"position": 10}
        assert again.connector_offsets("tail") == [({"file": "/var/log/a"}, {"position": 10})]
        assert again.connector_offsets("other") == []
    finally:
        again.map.close()
