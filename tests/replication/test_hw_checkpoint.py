"""The ``replication-offset-checkpoint``: Kafka's format, written atomically from the hosted
partitions' logs, read back; a damaged file is refused with its path and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.broker.log import Log
from sluice.broker.records.codec import Record, encode_batch
from sluice.broker.replication.hw_checkpoint import (
    REPLICATION_OFFSET_CHECKPOINT,
    HighWatermarkCheckpointError,
    checkpoint_high_watermarks,
    format_high_watermarks,
    parse_high_watermarks,
    read_high_watermarks,
    write_high_watermarks,
)
from sluice.broker.topics import Partition
from sluice.errors import StorageError


def _append(log: Log, count: int) -> None:
    records = [Record(i, 0, None, b"v") for i in range(count)]
    data = encode_batch(
        base_offset=0, records=records, compression=0, base_timestamp=1, max_timestamp=1
    )
    log.append(bytearray(data), now_ms=1_000)


def test_the_partitions_high_watermarks_round_trip(tmp_path: Path) -> None:
    logs = [
        Log.open(tmp_path / name, {}) for name in ("orders-0", "orders-1", "__consumer_offsets-7")
    ]
    try:
        for log, (count, hw) in zip(logs, [(5, 3), (2, 2), (9, 0)], strict=True):
            _append(log, count)
            log.set_high_watermark(hw)
        partitions = [
            Partition("orders", 0, logs[0]),
            Partition("orders", 1, logs[1]),
            Partition("__consumer_offsets", 7, logs[2]),
        ]
        checkpoint_high_watermarks(tmp_path, partitions)
    finally:
        for log in logs:
            log.close()
    text = (tmp_path / REPLICATION_OFFSET_CHECKPOINT).read_text()
    assert text == "0\n3\n__consumer_offsets 7 0\norders 0 3\norders 1 2\n", text
    assert read_high_watermarks(tmp_path) == {
        ("orders", 0): 3,
        ("orders", 1): 2,
        ("__consumer_offsets", 7): 0,
    }
    assert not list(tmp_path.glob("*.tmp")), "the temporary file was left behind"


def test_a_new_checkpoint_replaces_the_old(tmp_path: Path) -> None:
    write_high_watermarks(tmp_path, {("a", 0): 5, ("b", 1): 7})
    write_high_watermarks(tmp_path, {("a", 0): 9})
    assert read_high_watermarks(tmp_path) == {("a", 0): 9}


def test_no_checkpoint_yet_is_empty(tmp_path: Path) -> None:
    assert read_high_watermarks(tmp_path) == {}


@given(
    st.dictionaries(
        st.tuples(st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True), st.integers(0, 10_000)),
        st.integers(0, 2**63 - 1),
        max_size=20,
    )
)
def test_format_and_parse_round_trip(entries: dict[tuple[str, int], int]) -> None:
    text = format_high_watermarks(entries).decode()
    assert parse_high_watermarks(text, Path("checkpoint")) == entries


@pytest.mark.parametrize(
    ("content", "line", "said"),
    [
        ("", 1, "expected version 0, found an empty file"),
        ("1\n0\n", 1, "expected version 0, found '1'"),
        ("0\n", 2, "expected the number of entries"),
        ("0\n3\norders 0 5\norders 1 ", 2, "3 entries announced, 2 found"),  # torn
        ("0\n2\norders 0 5\norders 1\n", 4, "expected 'topic partition offset', found 'orders 1'"),
        ("0\n1\norders x 5\n", 3, "expected 'topic partition offset'"),
        ("0\n1\norders 0 -5\n", 3, "expected 'topic partition offset'"),
        ("0\n2\norders 0 5\norders 0 6\n", 4, "partition orders-0 listed twice"),
    ],
    ids=[
        "empty",
        "version",
        "no-count",
        "torn",
        "short-line",
        "bad-partition",
        "negative",
        "twice",
    ],
)
def test_a_damaged_checkpoint_is_refused_with_its_path_and_line(
    tmp_path: Path, content: str, line: int, said: str
) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    path.write_text(content)
    with pytest.raises(HighWatermarkCheckpointError) as caught:
        read_high_watermarks(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{path}: line {line}: "), message
    assert said in message, message
    assert "remove the file" in message, message
    assert path.read_text() == content, "the damaged file was changed"


def test_an_unreadable_checkpoint_is_refused(tmp_path: Path) -> None:
    (tmp_path / REPLICATION_OFFSET_CHECKPOINT).write_bytes(b"0\n1\n\xff\xfe 0 1\n")
    with pytest.raises(HighWatermarkCheckpointError, match="cannot read"):
        read_high_watermarks(tmp_path)


def test_a_refused_write_is_a_storage_error(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "data"
    not_a_directory.write_text("a file where the data directory should be")
    with pytest.raises(StorageError, match=f"cannot write {not_a_directory}/"):
        write_high_watermarks(not_a_directory, {("a", 0): 1})
