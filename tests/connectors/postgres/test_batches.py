"""``poll_batch`` (what the runtime calls) gives exactly ``poll``'s records, in column form.

No database: recorded pgoutput messages are fed to the task in place of its replication stream.
"""

from __future__ import annotations

import struct
from typing import Any

from sluice.connect.api.data import SourceBatch, SourceRecord
from sluice.connectors.postgres import PostgresCdcTask
from sluice.connectors.postgres.catalog import CatalogColumn
from sluice.connectors.postgres.changes import ChangeStream
from sluice.connectors.postgres.config import Settings
from sluice.connectors.postgres.events import EventBuilder
from sluice.connectors.postgres.replication import RawMessage

CONFIG = {
    "database.hostname": "127.0.0.1",
    "database.user": "u",
    "database.dbname": "shop",
    "topic.prefix": "shop",
    "slot.name": "s",
    "snapshot.mode": "never",
}
KEYED, PLAIN = 16400, 16401
CATALOGS = {
    KEYED: [
        CatalogColumn("id", 23, -1, True, 1),
        CatalogColumn("name", 25, -1, False, None),
    ],
    PLAIN: [CatalogColumn("note", 25, -1, False, None)],
}


def _string(text: str) -> bytes:
    return text.encode() + b"\0"


def _tuple(values: list[str | None]) -> bytes:
    out = struct.pack(">h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        else:
            out += b"t" + struct.pack(">i", len(value.encode())) + value.encode()
    return out


def _relation(oid: int, name: str) -> bytes:
    columns = CATALOGS[oid]
    out = b"R" + struct.pack(">I", oid) + _string("public") + _string(name) + b"d"
    out += struct.pack(">h", len(columns))
    for c in columns:
        out += bytes([1 if c.key_position else 0]) + _string(c.name)
        out += struct.pack(">Ii", c.type_oid, c.modifier)
    return out


def _messages() -> list[RawMessage]:
    begin = b"B" + struct.pack(">QqI", 900, 1_000_000, 77)
    changes = [
        b"I" + struct.pack(">I", KEYED) + b"N" + _tuple(["1", "pen"]),
        b"I" + struct.pack(">I", KEYED) + b"N" + _tuple(["2", "ink"]),
        b"I" + struct.pack(">I", PLAIN) + b"N" + _tuple(["hello"]),
        b"I" + struct.pack(">I", PLAIN) + b"N" + _tuple([None]),
        # a primary key change: d, tombstone, c
        b"U" + struct.pack(">I", KEYED) + b"K" + _tuple(["1", None]) + b"N" + _tuple(["3", "pen"]),
        b"U" + struct.pack(">I", KEYED) + b"N" + _tuple(["2", "nib"]),
        b"D" + struct.pack(">I", KEYED) + b"K" + _tuple(["2", None]),
        b"I" + struct.pack(">I", KEYED) + b"N" + _tuple(["4", "cap"]),
        b"T" + struct.pack(">iB", 2, 0) + struct.pack(">II", KEYED, PLAIN),
    ]
    commit = b"C\0" + struct.pack(">QQq", 900, 950, 1_000_000)
    payloads = [_relation(KEYED, "items"), _relation(PLAIN, "notes"), begin, *changes, commit]
    return [RawMessage(100 + 10 * i, payload) for i, payload in enumerate(payloads)]


class Recorded:
    def __init__(self, messages: list[RawMessage]) -> None:
        self.messages = list(messages)
        self.wal_end = 0

    def read(self, timeout_s: float) -> RawMessage | None:
        return self.messages.pop(0) if self.messages else None

    def close(self) -> None:
        pass


def _task(heartbeats: bool) -> PostgresCdcTask:
    task = PostgresCdcTask(clock_ns=lambda: 1_700_000_000_123_456_789, monotonic=lambda: 1e6)
    config = dict(CONFIG, **({"heartbeat.interval.ms": "1"} if heartbeats else {}))
    settings = task.settings = Settings.parse(config)
    task.events = EventBuilder("shop", "shop", settings.heartbeat_topic, task.clock_ns)
    task._replication = Recorded(_messages())  # type: ignore[assignment]
    task._stream = ChangeStream(settings, task.events, CATALOGS.__getitem__, 0)
    return task


def _flat(items: Any) -> list[SourceRecord]:
    out: list[SourceRecord] = []
    for item in items:
        out.extend(item.records() if isinstance(item, SourceBatch) else [item])
    return out


def test_poll_batch_gives_polls_records_in_runs_of_one_table() -> None:
    for heartbeats in (False, True):
        records = _task(heartbeats).poll()
        items = _task(heartbeats).poll_batch()
        assert records is not None and items is not None
        assert _flat(items) == records
        kinds = [
            (len(i), i.topic, i.keys is not None) if isinstance(i, SourceBatch) else i.topic
            for i in items
        ]
        assert kinds == [
            (2, "shop.public.items", True),  # c 1, c 2
            (2, "shop.public.notes", False),  # no primary key: no keys
            (1, "shop.public.items", True),  # d 1 ...
            "shop.public.items",  # ... its tombstone
            (3, "shop.public.items", True),  # c 3, u 2, d 2 ...
            "shop.public.items",  # ... tombstone
            (1, "shop.public.items", True),  # c 4
            (1, "shop.public.items", False),  # truncate: no key
            (1, "shop.public.notes", False),
            *(["__debezium-heartbeat.shop"] if heartbeats else []),
        ]


def test_a_batch_carries_the_last_offset_and_each_records_own() -> None:
    items = _task(False).poll_batch()
    assert items is not None
    batch = items[0]
    assert isinstance(batch, SourceBatch)
    assert [r.source_offset["event"] for r in batch.records()] == [0, 1]
    assert batch.offset == batch.records()[-1].source_offset
    assert batch.records()[0].value.get("source").get("sequence") == '[null, "130"]'
