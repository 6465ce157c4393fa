"""What kio's native readers refuse and Kafka's readers accept: unknown tagged fields.

A flexible version of a message ends each (nested) structure with a tagged-fields section::

    count uvarint | count × (tag uvarint | size uvarint | size bytes)

kio 0.6.5's readers raise on a tag their schema does not know, but Kafka skips it (a newer
client or broker may send fields an older one does not know: librdkafka sends one in Metadata
v9). The broker's request codec (:mod:`sluice.broker.protocol.codec`) and the blocking client
(:mod:`sluice.wire`) both walk such messages field by field with kio's own field readers and
read the section with :func:`read_tagged_fields`. A shared leaf module: it imports nothing of
Sluice's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from kio._kio_native import get_field_reader
from kio.serial.readers import read_unsigned_varint

__all__ = ["Reader", "read_tagged_fields", "tagged_readers"]

Reader = Callable[[Any, int], tuple[Any, int]]
"""kio's reader protocol: ``(buffer, offset) -> (value, bytes read)``."""


def tagged_readers(schema: type[Any]) -> dict[int, tuple[str, Reader]]:
    """``tag -> (field name, kio's reader)`` for the tagged fields of a message class."""
    return {
        int(f.metadata["tag"]): (f.name, get_field_reader(schema, f, False, True))
        for f in fields(schema)
        if f.metadata.get("tag") is not None
    }


def read_tagged_fields(
    buffer: Any, offset: int, tagged: dict[int, tuple[str, Reader]], values: dict[str, Any]
) -> int:
    """Read the tagged-fields section at ``offset`` into ``values`` (by field name); fields
    whose tag is not in ``tagged`` are skipped, as Kafka does. Returns the offset after it.

    >>> read_tagged_fields(b"\\x02\\x00\\x01\\x07\\x05\\x02ab", 0, {}, {})  # two unknown tags
    8
    """
    count, size = read_unsigned_varint(buffer, offset)
    offset += size
    for _ in range(count):
        tag, size = read_unsigned_varint(buffer, offset)
        offset += size
        length, size = read_unsigned_varint(buffer, offset)
        offset += size
        if tag in tagged:
            name, reader = tagged[tag]
            values[name], _ = reader(buffer, offset)
        offset += length
    return offset
