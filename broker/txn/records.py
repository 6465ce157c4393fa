"""The records of ``__transaction_state``: Kafka's ``TransactionLogKey``/``TransactionLogValue``.

Big-endian; ``string`` is an int16 length and UTF-8 bytes::

    key    version=0 | transactional_id string
    value  version=0 | producer_id int64 | producer_epoch int16 | transaction_timeout_ms int32
           | state int8 | partitions int32-count, each (topic string | int32-count, each int32)
           | last_update_timestamp int64 | start_timestamp int64

>>> from sluice.broker.txn.state import TxnMetadata, TxnState
>>> meta = TxnMetadata("t", 7, 2, 60000, TxnState.ONGOING, {("orders", 1)}, 5, 6)
>>> again = decode_value("t", encode_value(meta))
>>> (again.producer_id, again.producer_epoch, again.state.label, again.partitions)
(7, 2, 'Ongoing', {('orders', 1)})
"""

from __future__ import annotations

import struct
from collections import defaultdict

from sluice.broker.txn.state import TxnMetadata, TxnState

_H, _I, _Q, _B = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q"), struct.Struct(">b")


def _string(value: str) -> bytes:
    data = value.encode()
    return _H.pack(len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return _H.pack(0) + _string(transactional_id)


def decode_key(data: bytes) -> str:
    (length,) = _H.unpack_from(data, 2)
    return data[4 : 4 + length].decode()


def encode_value(meta: TxnMetadata) -> bytes:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, partition in sorted(meta.partitions):
        by_topic[topic].append(partition)
    parts = [
        _H.pack(0),
        _Q.pack(meta.producer_id),
        _H.pack(meta.producer_epoch),
        _I.pack(meta.timeout_ms),
        _B.pack(meta.state),
        _I.pack(len(by_topic)),
    ]
    for topic, partitions in by_topic.items():
        parts += [_string(topic), _I.pack(len(partitions)), *(_I.pack(p) for p in partitions)]
    parts += [_Q.pack(meta.last_update_timestamp), _Q.pack(meta.start_timestamp)]
    return b"".join(parts)


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    pos = 2
    (producer_id,) = _Q.unpack_from(data, pos)
    (epoch,) = _H.unpack_from(data, pos + 8)
    (timeout,) = _I.unpack_from(data, pos + 10)
    (state,) = _B.unpack_from(data, pos + 14)
    (topics,) = _I.unpack_from(data, pos + 15)
    pos += 19
    partitions: set[tuple[str, int]] = set()
    for _ in range(max(topics, 0)):
        (length,) = _H.unpack_from(data, pos)
        topic = data[pos + 2 : pos + 2 + length].decode()
        pos += 2 + length
        (count,) = _I.unpack_from(data, pos)
        pos += 4
        for _ in range(count):
            partitions.add((topic, _I.unpack_from(data, pos)[0]))
            pos += 4
    (updated,) = _Q.unpack_from(data, pos)
    (started,) = _Q.unpack_from(data, pos + 8)
    return TxnMetadata(
        transactional_id, producer_id, epoch, timeout, TxnState(state), partitions, started, updated
    )
