"""``partition.metadata``: Kafka's file of a partition's topic id, and Kafka's Uuid text."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.broker.log.partition_metadata import (
    PARTITION_METADATA,
    PartitionMetadataError,
    format_topic_id,
    parse_topic_id,
    random_topic_id,
    read_partition_metadata,
    write_partition_metadata,
)


@given(st.uuids(allow_nil=False))
def test_topic_id_text_round_trips_and_is_kafkas_base64url(topic_id: uuid.UUID) -> None:
    text = format_topic_id(topic_id)
    assert len(text) == 22 and "=" not in text, text
    # Kafka's Uuid.toString: Base64.getUrlEncoder().withoutPadding() of the 16 bytes
    assert base64.urlsafe_b64decode(text + "==") == topic_id.bytes
    assert parse_topic_id(text) == topic_id


def test_file_round_trip_has_kafkas_exact_bytes(tmp_path: Path) -> None:
    topic_id = uuid.UUID("8c9ea9d3-2b7c-4bd2-9a5d-2a4a3c3b5e1f")
    write_partition_metadata(tmp_path, topic_id)
    raw = (tmp_path / PARTITION_METADATA).read_bytes()
    assert raw == b"version: 0\ntopic_id: jJ6p0yt8S9KaXSpKPDteHw", raw
    assert read_partition_metadata(tmp_path) == topic_id
    assert not list(tmp_path.glob("*.tmp")), "the temporary file of the atomic write stayed"


def test_a_file_kafka_wrote_is_read(tmp_path: Path) -> None:
    """Kafka's reader splits on ':' and whitespace; a trailing newline is tolerated too."""
    (tmp_path / PARTITION_METADATA).write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAZA\n")
    assert read_partition_metadata(tmp_path) == uuid.UUID(int=100)


def test_a_missing_file_is_none_and_writing_replaces(tmp_path: Path) -> None:
    assert read_partition_metadata(tmp_path) is None
    first, second = random_topic_id(), random_topic_id()
    write_partition_metadata(tmp_path, first)
    write_partition_metadata(tmp_path, second)
    assert read_partition_metadata(tmp_path) == second


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("version: 1\ntopic_id: jJ6p0yt8S9KaXSpKPDteHw", "unrecognized version"),
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "zero topic id"),
        ("version: 0\ntopic_id: not-base64!", "not a topic id"),
        ("version: 0\nname: jJ6p0yt8S9KaXSpKPDteHw", "expected 'topic_id: <id>'"),
        ("version: 0", "expected 'version: 0' and 'topic_id: <id>' lines"),
        ("", "expected 'version: 0' and 'topic_id: <id>' lines"),
    ],
)
def test_a_damaged_file_is_refused_naming_it(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / PARTITION_METADATA).write_text(text)
    with pytest.raises(PartitionMetadataError) as caught:
        read_partition_metadata(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / PARTITION_METADATA) in message and expected in message, message
    assert (tmp_path / PARTITION_METADATA).read_text() == text, "a refused file was changed"


def test_random_topic_ids_are_never_reserved_and_never_dashed() -> None:
    ids = {random_topic_id() for _ in range(2000)}
    assert len(ids) == 2000
    for topic_id in ids:
        assert topic_id.int >= 100, topic_id  # Kafka reserves 0..99 (0 = no id)
        assert "-" not in format_topic_id(topic_id), format_topic_id(topic_id)
