"""Topic ids through kafka-python 3's admin client, which names topics by id (KIP-516): it
describes topics by name and by id (Metadata v12) and deletes them by id (DeleteTopics v6)."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable

import pytest

from sluice.broker.log.partition_metadata import parse_topic_id

# kafka-python 3.0.12 loads its protocol schemas with the deprecated importlib.resources
# read_text/open_text, at import time and whenever a schema module loads lazily.
READ_TEXT = "(read|open)_text is deprecated"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka.admin import KafkaAdminClient

pytestmark = pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning")


def topic_uuid(described: dict[str, object]) -> uuid.UUID:
    """kafka-python answers the id as a UUID, or its text in UUID or in Kafka's form."""
    value = described["topic_id"]
    if isinstance(value, uuid.UUID):
        return value
    text = str(value)
    return uuid.UUID(text) if len(text) == 36 else parse_topic_id(text)


def test_kafka_python_describes_by_name_and_id_and_deletes_by_id(
    bootstrap: str, create_topic: Callable[..., str]
) -> None:
    name = create_topic(partitions=2)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15_000)
    try:
        (by_name,) = admin.describe_topics([name])
        assert by_name["error_code"] == 0, by_name
        topic_id = topic_uuid(by_name)
        assert topic_id.int != 0, by_name
        (by_id,) = admin.describe_topics([topic_id])
        assert (by_id["error_code"], by_id["name"]) == (0, name), by_id
        assert len(by_id["partitions"]) == 2
        admin.delete_topics([topic_id])
        assert name not in admin.list_topics()
        missing = uuid.uuid4()
        (unknown,) = admin.delete_topics([missing], raise_errors=False)["topics"]
        assert (unknown["error_code"], topic_uuid(unknown)) == (100, missing), unknown
    finally:
        admin.close()
