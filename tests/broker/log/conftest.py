"""Fixtures of the partition-log tests: batch builders, a log factory, crash simulation.

Helpers reach the tests as fixtures (the suite runs with ``--import-mode=importlib``, where a
sibling helper module cannot be imported).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from sluice.broker.log import Log
from sluice.broker.records.batch import iter_headers, validate
from sluice.broker.records.codec import Record, decode_records, encode_batch

KeyValue = tuple[bytes | None, bytes | None]


class BatchFactory(Protocol):
    def __call__(
        self,
        *records: KeyValue | bytes,
        timestamp: int = ...,
        timestamps: Sequence[int] | None = ...,
        compression: int = ...,
        producer_id: int = ...,
        producer_epoch: int = ...,
        base_sequence: int = ...,
        transactional: bool = ...,
    ) -> bytearray: ...


def make_batch(
    *records: KeyValue | bytes,
    timestamp: int = 1_000,
    timestamps: Sequence[int] | None = None,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytearray:
    """One v2 batch as a producer sends it (base offset 0); a bare ``bytes`` is a value with key
    ``None``; ``timestamps`` gives each record's timestamp (default: all ``timestamp``)."""
    times = list(timestamps) if timestamps is not None else [timestamp] * len(records)
    built = [
        Record(i, times[i] - times[0], *(r if isinstance(r, tuple) else (None, r)))
        for i, r in enumerate(records)
    ]
    return bytearray(
        encode_batch(
            base_offset=0,
            records=built,
            compression=compression,
            base_timestamp=times[0],
            max_timestamp=max(times),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=transactional,
        )
    )


@dataclass(frozen=True)
class Stored:
    """One record as read back: offset, timestamp, key, value."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def records_of(data: bytes | memoryview) -> list[Stored]:
    """Decode whole batches as :meth:`Log.read` returns them (CRC checked)."""
    buf = bytes(data)
    out = []
    end = 0
    for header in iter_headers(buf):
        validate(buf, header)
        for r in decode_records(buf, header):
            ts = header.max_timestamp if header.log_append_time else header.base_timestamp
            ts += 0 if header.log_append_time else r.timestamp_delta
            out.append(Stored(header.base_offset + r.offset_delta, ts, r.key, r.value))
        end = header.position + header.size
    assert end == len(buf), f"expected whole batches, {len(buf) - end} bytes of a partial one"
    return out


def read_all(log: Log) -> list[Stored]:
    """Every record of the log, reading batch by batch from the log start."""
    out: list[Stored] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = bytes(log.read(offset, 1 << 30).data)
        if not data:
            break
        got = records_of(data)
        out += [r for r in got if r.offset >= offset]
        last = list(iter_headers(data))[-1]
        offset = last.next_offset
    return out


def crash(log: Log) -> None:
    """What kill -9 leaves: file descriptors gone, nothing flushed or marked clean."""
    for segment in log.segments:
        segment.close()


@pytest.fixture
def batch() -> BatchFactory:
    """Build a producer batch: ``batch((b"k", b"v"), b"value-without-key", timestamp=...)``."""
    return make_batch


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


@pytest.fixture
def open_log(log_dir: Path) -> Iterator[Callable[..., Log]]:
    """Open (or reopen) the log in ``log_dir`` with topic config keys as keyword arguments
    (``open_log(**{"segment.bytes": 1024})``). Logs left open are abandoned as by a crash."""
    opened: list[Log] = []

    def open_(config: dict[str, Any] | None = None, /, **kwargs: Any) -> Log:
        log = Log.open(log_dir, {**(config or {}), **kwargs})
        opened.append(log)
        return log

    yield open_
    for log in opened:
        crash(log)


@pytest.fixture(name="records_of")
def records_of_fixture() -> Callable[[bytes | memoryview], list[Stored]]:
    return records_of


@pytest.fixture(name="read_all")
def read_all_fixture() -> Callable[[Log], list[Stored]]:
    return read_all


@pytest.fixture(name="crash")
def crash_fixture() -> Callable[[Log], None]:
    return crash
