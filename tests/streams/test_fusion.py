"""The sink's fused function: which way a record reaches the collector (pure, no broker)."""

from __future__ import annotations

from typing import Any

from sluice.streams.fusion import Sink, sources_of
from sluice.streams.topology import Topology


class Collector:
    """Records what reaches it through send() and, when it has one, raw_produce()."""

    def __init__(self, *, producer: bool) -> None:
        self.sent: list[tuple[Any, ...]] = []
        self.produced: list[tuple[Any, ...]] = []
        if producer:
            self.raw_produce = lambda *args: self.produced.append(args)

    def send(self, *record: Any) -> None:
        self.sent.append(record)

    def partitions_of(self, topic: str) -> int:
        return 4


def _emit(collector: Collector, partitioner: Any = None) -> Any:
    topology = Topology()
    topology.add_source("in", ["words"])
    topology.add_sink("out", "counts", "in", partitioner=partitioner)
    sink = Sink(topology.nodes["out"], collector)
    return sources_of(topology, ["in", "out"], {"out": sink})["words"].emit


def test_a_producer_gets_records_without_headers_straight_from_the_sink():
    collector = Collector(producer=True)
    emit = _emit(collector)
    emit("k", 1, 7, ())
    emit("k", 2, 8, (("h", b"v"),))
    assert collector.produced == [("counts", b"1", b"k", -1, None, None, 7)]
    assert collector.sent == [("counts", b"k", b"2", 8, (("h", b"v"),), None)]


def test_a_custom_partitioner_chooses_the_partition_of_every_record():
    seen = []

    def partitioner(key: Any, value: Any, partitions: int) -> int:
        seen.append((key, value, partitions))
        return value % partitions

    for producer in (True, False):
        collector = Collector(producer=producer)
        emit = _emit(collector, partitioner)
        emit("a", 5, 1, ())
        emit(None, 2, 2, ())
        assert collector.produced == []
        assert collector.sent == [
            ("counts", b"a", b"5", 1, (), 1),
            ("counts", None, b"2", 2, (), 2),
        ]
    assert seen == [("a", 5, 4), (None, 2, 4)] * 2


def test_without_a_producer_or_partitioner_records_go_to_send_with_no_partition():
    collector = Collector(producer=False)
    _emit(collector)("k", None, 3, ())
    assert collector.sent == [("counts", b"k", None, 3, (), None)]
