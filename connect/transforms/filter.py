"""``Filter``: drop records, as Kafka's ``Filter`` does; useful only behind a predicate.

>>> from sluice.connect.transforms import TransformChain
>>> from sluice.connect.api.data import ConnectRecord
>>> chain = TransformChain.from_config({
...     "transforms": "dropTombstones",
...     "transforms.dropTombstones.type": "org.apache.kafka.connect.transforms.Filter",
...     "transforms.dropTombstones.predicate": "isTombstone",
...     "predicates": "isTombstone",
...     "predicates.isTombstone.type": "RecordIsTombstone",
... })
>>> chain.apply(ConnectRecord("t", 0, None, "k", None, None)) is None
True
>>> chain.apply(ConnectRecord("t", 0, None, "k", None, "v")).value
'v'
"""

from __future__ import annotations

from sluice.connect.api.transform import R, Transformation

__all__ = ["Filter"]


class Filter(Transformation):
    """Drop every record it sees (guard it with a predicate to drop only some)."""

    def apply(self, record: R) -> R | None:
        return None
