"""Kafka's hashes of names as the JVM computes them (Java's ``String.hashCode``, Kafka's
``Utils.abs``), on which Kafka's placements depend: a group's or transactional id's partition of
its internal topic, a partition's replica fetcher."""

from __future__ import annotations

import struct

__all__ = ["java_string_hash", "kafka_abs"]


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (a signed 32-bit int over UTF-16 code units), on which
    Kafka's placements of keys depend.

    >>> java_string_hash("my-group"), java_string_hash("")
    (-1906497762, 0)
    """
    data = text.encode("utf-16-be")
    h = 0
    for unit in struct.unpack(f">{len(data) // 2}H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs`` of a 32-bit int: 0 for ``Integer.MIN_VALUE`` (which has no
    positive counterpart)."""
    return 0 if n == -(2**31) else abs(n)
